//! The write-size sweep: commits/s and bytes/s against the size of one write, per method.

use super::{Figure, measured, section_title};
use crate::core::method::SyncMethod;
use crate::core::schema::CaseResult;
use crate::core::suite::Section;
use crate::present::report::chart::line_chart::{Axis, LineChart, LineSeries};
use crate::present::report::chart::scale::{Scale, format_bytes, format_count};
use crate::present::report::chart::svg::color;

/// The section this figure draws.
pub const SECTION: Section = Section::SizeSweep;

/// Two line charts (commits/s, MiB/s) when `results` has a size sweep.
pub fn figures(stem: &str, context: &str, results: &[CaseResult]) -> Vec<Figure> {
    let cases: Vec<&CaseResult> = results.iter().filter(|c| c.section == SECTION && measured(c)).collect();
    if cases.is_empty() {
        return Vec::new();
    }
    let mut methods: Vec<(SyncMethod, bool)> = Vec::new();
    for case in &cases {
        if !methods.iter().any(|(m, _)| *m == case.method) {
            methods.push((case.method, case.durable));
        }
    }
    let series_of = |value: fn(&CaseResult) -> f64| -> Vec<LineSeries> {
        methods
            .iter()
            .enumerate()
            .map(|(index, (method, durable))| {
                let mut points: Vec<(f64, f64)> = cases
                    .iter()
                    .filter(|c| c.method == *method)
                    .map(|c| (c.write_size_bytes as f64, value(c)))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                let name = if *durable { method.to_string() } else { format!("{method} (not durable)") };
                LineSeries { name, color: color(index).into(), dashed: !durable, points }
            })
            .collect()
    };
    let sizes = cases.iter().map(|c| c.write_size_bytes as f64).filter(|s| *s > 0.0);
    let (lo, hi) = sizes.fold((f64::INFINITY, 0.0f64), |(lo, hi), s| (lo.min(s), hi.max(s)));
    let x = Axis {
        label: "size of one write (log scale)".into(),
        scale: Scale::log2_covering(lo, hi),
        ticks: None,
        format: format_bytes,
    };
    let commits = series_of(|c| c.ops_per_s);
    let throughput = series_of(|c| c.bytes_per_s);
    let max_of = |series: &[LineSeries]| series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    let commits_scale = Scale::linear_from_zero(max_of(&commits));
    let throughput_scale = Scale::linear_from_zero_binary(max_of(&throughput));
    let charts = [
        (
            "commits",
            "commits per second",
            "commits per second (higher is better)",
            format_count as fn(f64) -> String,
            commits,
            commits_scale,
        ),
        (
            "throughput",
            "write throughput",
            "bytes written per second (higher is better)",
            format_bytes_per_s,
            throughput,
            throughput_scale,
        ),
    ];
    charts
        .into_iter()
        .map(|(kind, what, y_label, format, series, scale)| {
            let id = format!("{stem}-size-sweep-{kind}");
            let title = format!("{}: {what}{context}", section_title(SECTION.name()));
            let y = Axis { label: y_label.into(), scale, ticks: None, format };
            let chart = LineChart { id: id.clone(), title: title.clone(), x: x.clone(), y, series };
            Figure { stem: id, title, svg: chart.render() }
        })
        .collect()
}

fn format_bytes_per_s(bytes_per_s: f64) -> String {
    format!("{}/s", format_bytes(bytes_per_s))
}
