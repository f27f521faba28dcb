//! Latency over time (`run --log`): every window's median commit latency at its time in the run, one
//! colour per durable case, on a log axis. A disk that switches between regimes shows as two bands, with
//! every case jumping between them at the same moments; a steady disk as one band; drift as a slope.
//! Dots only: a case's windows are spread over the run between other cases' rounds, and a line between
//! them would draw what was not measured.

use super::{Figure, slug};
use crate::core::schema::CaseResult;
use crate::present::report::chart::scale::{Scale, format_ns, trim_number};
use crate::present::report::chart::svg::{self, FONT_SIZE, LegendEntry, Swatch, WIDTH, esc, px, text_width};
use std::fmt::Write;

const PLOT_HEIGHT: f64 = 260.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 24.0;

/// The strip of one run's durable cases with a latency log; none without one.
pub fn figures(stem: &str, context: &str, results: &[CaseResult]) -> Vec<Figure> {
    let cases: Vec<&CaseResult> = results.iter().filter(|c| c.durable && !c.latency_log.is_empty()).collect();
    if cases.is_empty() {
        return Vec::new();
    }
    let id = format!("{stem}-latency-over-time");
    let regimes = cases.iter().filter(|c| c.regimes.is_some()).count();
    let title = format!(
        "Commit latency over time: 100 ms window medians{context}{}",
        if regimes > 0 { format!(" — regimes in {regimes} of {} cases", cases.len()) } else { String::new() }
    );
    let svg = render(&id, &title, &cases);
    vec![Figure { stem: slug(&id), title, svg }]
}

fn render(id: &str, title: &str, cases: &[&CaseResult]) -> String {
    let points = || cases.iter().flat_map(|c| c.latency_log.iter());
    let t_max = points().map(|w| (w.start_ns + w.duration_ns) as f64 / 1e9).fold(0.0, f64::max);
    let (lo, hi) =
        points().fold((f64::INFINITY, 0.0f64), |(lo, hi), w| (lo.min(w.p50_ns as f64), hi.max(w.p50_ns as f64)));
    let x = Scale::linear_from_zero(t_max);
    let y = Scale::log10_covering(lo, hi);
    let legend: Vec<LegendEntry> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| LegendEntry {
            name: format!("{} {}", c.section.name(), c.label.trim()),
            swatch: Swatch::Dot(svg::color(i).to_string()),
        })
        .collect();
    let top = 36.0 + svg::legend_height(&legend) + 12.0;
    let mut out = String::new();
    svg::open(&mut out, id, top + PLOT_HEIGHT + 52.0, title);
    svg::legend(&mut out, id, 36.0, &legend);
    axes(&mut out, top, &x, &y);
    let to_px = |t: f64, ns: f64| {
        (LEFT + x.fraction(t) * (WIDTH - LEFT - RIGHT), top + PLOT_HEIGHT - y.fraction(ns) * PLOT_HEIGHT)
    };
    for (i, c) in cases.iter().enumerate() {
        let _ = writeln!(
            out,
            "<g class=\"series\" data-name=\"{}\">",
            esc(&format!("{} {}", c.section.name(), c.label.trim()))
        );
        for w in &c.latency_log {
            let t = (w.start_ns + w.duration_ns / 2) as f64 / 1e9;
            let (cx, cy) = to_px(t, w.p50_ns as f64);
            let regime = w.regime.map_or(String::new(), |r| format!(" data-regime=\"{r}\""));
            let _ = writeln!(
                out,
                "<circle class=\"point\" data-x=\"{t:.3}\" data-y=\"{}\"{regime} cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\" fill-opacity=\"0.8\"/>",
                w.p50_ns,
                px(cx),
                px(cy),
                svg::color(i)
            );
        }
        out.push_str("</g>\n");
    }
    svg::close(&mut out);
    out
}

fn axes(out: &mut String, top: f64, x: &Scale, y: &Scale) {
    let (bottom, right) = (top + PLOT_HEIGHT, WIDTH - RIGHT);
    let x_px = |t: f64| LEFT + x.fraction(t) * (right - LEFT);
    let y_px = |ns: f64| bottom - y.fraction(ns) * PLOT_HEIGHT;
    out.push_str("<g class=\"axis x\">\n");
    for t in x.ticks() {
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{v}\" y1=\"{}\" x2=\"{v}\" y2=\"{}\" stroke=\"#ececec\"/><text class=\"tick\" x=\"{v}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{}</text>",
            px(top),
            px(bottom),
            px(bottom + 17.0),
            esc(&trim_number(t)),
            v = px(x_px(t))
        );
    }
    let label = "seconds since the run began";
    let _ = writeln!(
        out,
        "<line x1=\"{}\" y1=\"{b}\" x2=\"{}\" y2=\"{b}\" stroke=\"#333\"/><text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{label}</text>\n</g>",
        px(LEFT),
        px(right),
        px(svg::centre_within((LEFT + right) / 2.0, text_width(label, FONT_SIZE))),
        px(bottom + 40.0),
        b = px(bottom),
    );
    out.push_str("<g class=\"axis y\">\n");
    for ns in y.ticks() {
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{}\" y1=\"{v}\" x2=\"{}\" y2=\"{v}\" stroke=\"#ececec\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#444\">{}</text>",
            px(LEFT),
            px(right),
            px(LEFT - 6.0),
            px(y_px(ns) + 4.0),
            esc(&format_ns(ns)),
            v = px(y_px(ns))
        );
    }
    let (mid, tx) = (px(top + PLOT_HEIGHT / 2.0), px(16.0));
    let _ = writeln!(
        out,
        "<line x1=\"{l}\" y1=\"{}\" x2=\"{l}\" y2=\"{}\" stroke=\"#333\"/><text class=\"axis-label\" x=\"{tx}\" y=\"{mid}\" text-anchor=\"middle\" transform=\"rotate(-90 {tx} {mid})\">window median, log scale</text>\n</g>",
        px(top),
        px(bottom),
        l = px(LEFT),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::regimes::Window;

    fn window(start_s: f64, p50_ns: u64, regime: Option<u8>) -> Window {
        let start_ns = (start_s * 1e9) as u64;
        Window { start_ns, duration_ns: 80_000_000, commits: 20, p50_ns, max_ns: p50_ns * 2, regime }
    }

    #[test]
    fn every_window_is_a_dot_at_its_time_and_median_and_cases_without_a_log_draw_nothing() {
        let mut fast_slow = CaseResult { label: "fdatasync".into(), durable: true, ..CaseResult::default() };
        fast_slow.latency_log =
            vec![window(0.0, 180_000, Some(0)), window(4.0, 3_800_000, Some(1)), window(8.0, 190_000, Some(0))];
        let no_log = CaseResult { label: "fsync".into(), durable: true, ..CaseResult::default() };
        let figs = figures("run", " — ext4", &[fast_slow, no_log.clone()]);
        assert_eq!(figs.len(), 1);
        let svg = &figs[0].svg;
        assert_eq!(svg.matches("<circle class=\"point\"").count(), 3, "{svg}");
        assert!(svg.contains("data-x=\"4.040\" data-y=\"3800000\" data-regime=\"1\""), "{svg}");
        assert!(svg.contains("seconds since the run began") && svg.contains("window median, log scale"));
        assert!(figures("run", "", &[no_log]).is_empty());
    }
}
