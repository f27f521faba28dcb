//! Horizontal bar charts, optionally grouped: one group per label (a method), one bar per series in it.
//! Horizontal, because method names are long and read best left of their bar.

use super::scale::Scale;
use super::svg::{self, FONT_SIZE, LegendEntry, WIDTH, esc, px, text_width};
use crate::core::stats::Estimate;
use std::fmt::Write;

/// How a bar is filled.
#[derive(Clone, Debug, PartialEq)]
pub enum BarFill {
    /// A solid colour (durable).
    Solid(String),
    /// Grey hatching (not durable).
    Hatch,
    /// A pale version of a series colour with a dashed outline (not durable, where colour means the run).
    Faded(String),
}

/// One bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// Which series it belongs to (the legend entry, or the durability class).
    pub series: String,
    /// Its length; `None` when there is nothing to draw (unsupported or failed).
    pub value: Option<f64>,
    /// Its 95% interval (drawn as a whisker when wider than the value itself).
    pub interval: Option<Estimate>,
    /// Its look.
    pub fill: BarFill,
    /// Text in place of the bar when `value` is `None`.
    pub note: Option<String>,
}

/// Bars that share a label.
#[derive(Clone, Debug, PartialEq)]
pub struct BarGroup {
    /// The label left of the group.
    pub label: String,
    /// The bars, top to bottom.
    pub bars: Vec<Bar>,
}

/// A whole bar chart.
#[derive(Clone, Debug)]
pub struct BarChart {
    /// Element id, unique within a page.
    pub id: String,
    /// Title above the chart.
    pub title: String,
    /// Label of the value axis, with its unit.
    pub value_label: String,
    /// Groups, top to bottom.
    pub groups: Vec<BarGroup>,
    /// Legend entries.
    pub legend: Vec<LegendEntry>,
    /// How values and ticks are written.
    pub format: fn(f64) -> String,
    /// End the value axis here instead of at the longest bar; longer bars are cut and marked "off scale".
    /// Used so a not-durable method 60× faster does not flatten every durable bar.
    pub axis_max: Option<f64>,
}

const BAR_HEIGHT: f64 = 16.0;
const BAR_GAP: f64 = 3.0;
const GROUP_GAP: f64 = 10.0;
const VALUE_LABEL_SPACE: f64 = 80.0;
/// Whiskers stretch the axis up to this multiple of the longest bar, no further: one interval of ×/÷ 1000
/// would otherwise put the axis at 0–100,000,000 and make every bar invisible. A whisker past the axis is
/// cut there and marked clipped.
pub const WHISKER_AXIS_FACTOR: f64 = 1.5;

impl BarChart {
    /// Render as a standalone SVG document.
    pub fn render(&self) -> String {
        let legend_top = 36.0;
        let plot_top = legend_top + svg::legend_height(&self.legend) + 10.0;
        let plot_height: f64 = self.groups.iter().map(group_height).sum::<f64>().max(30.0);
        let height = plot_top + plot_height + 48.0;
        let longest_label = self.groups.iter().map(|g| text_width(&g.label, FONT_SIZE)).fold(0.0, f64::max);
        let left = (longest_label + 16.0).clamp(80.0, WIDTH / 2.0);
        let plot_width = WIDTH - left - VALUE_LABEL_SPACE;
        let max_value = axis_top(self.groups.iter().flat_map(|g| &g.bars));
        let scale = Scale::linear_from_zero(self.axis_max.map_or(max_value, |cap| cap.min(max_value)));
        let frame = Frame { left, top: plot_top, width: plot_width, height: plot_height };

        let mut out = String::new();
        svg::open(&mut out, &self.id, height, &self.title);
        svg::legend(&mut out, &self.id, legend_top, &self.legend);
        self.value_axis(&mut out, &frame, &scale);
        let mut y = plot_top;
        for group in &self.groups {
            self.group(&mut out, &frame, &scale, group, y);
            y += group_height(group);
        }
        if self.groups.iter().all(|g| g.bars.iter().all(|b| b.value.is_none())) {
            svg::no_data(&mut out, plot_top, "no measured values");
        }
        svg::close(&mut out);
        out
    }

    fn value_axis(&self, out: &mut String, frame: &Frame, scale: &Scale) {
        let bottom = frame.top + frame.height;
        out.push_str("<g class=\"axis x\">\n");
        for tick in scale.ticks() {
            let x = frame.left + scale.fraction(tick) * frame.width;
            let _ = writeln!(
                out,
                "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#e3e3e3\"/><text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{}</text>",
                px(frame.top),
                px(bottom),
                px(bottom + 15.0),
                esc(&(self.format)(tick)),
                x = px(x),
            );
        }
        let _ = writeln!(
            out,
            "<line x1=\"{l}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#333\"/><line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{b}\" stroke=\"#333\"/>",
            l = px(frame.left),
            r = px(frame.left + frame.width),
            t = px(frame.top),
            b = px(bottom),
        );
        let _ = writeln!(
            out,
            "<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n</g>",
            px(svg::centre_within(frame.left + frame.width / 2.0, text_width(&self.value_label, FONT_SIZE))),
            px(bottom + 36.0),
            esc(&self.value_label)
        );
    }

    fn group(&self, out: &mut String, frame: &Frame, scale: &Scale, group: &BarGroup, top: f64) {
        let bars_height = group.bars.len() as f64 * (BAR_HEIGHT + BAR_GAP) - BAR_GAP;
        let _ = writeln!(
            out,
            "<g class=\"group\" data-label=\"{label}\"><text class=\"group-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{label}</text>",
            px(frame.left - 8.0),
            px(top + GROUP_GAP / 2.0 + bars_height / 2.0 + 4.0),
            label = esc(&group.label),
        );
        let mut y = top + GROUP_GAP / 2.0;
        for bar in &group.bars {
            self.bar(out, frame, scale, bar, y);
            y += BAR_HEIGHT + BAR_GAP;
        }
        out.push_str("</g>\n");
    }

    /// A bar's `fill` attribute value and its extra stroke attributes.
    fn paint(&self, fill: &BarFill) -> (String, String) {
        match fill {
            BarFill::Solid(color) => (color.clone(), String::new()),
            BarFill::Hatch => (
                format!("url(#{}-hatch)", self.id),
                format!(" stroke=\"{}\" stroke-dasharray=\"4 2\"", svg::NOT_DURABLE_COLOR),
            ),
            BarFill::Faded(color) => {
                (format!("{color}\" fill-opacity=\"0.35"), format!(" stroke=\"{color}\" stroke-dasharray=\"4 2\""))
            }
        }
    }

    fn bar(&self, out: &mut String, frame: &Frame, scale: &Scale, bar: &Bar, y: f64) {
        let Some(value) = bar.value else {
            let note = svg::truncate_to_width(bar.note.as_deref().unwrap_or("no value"), WIDTH - frame.left - 16.0);
            let _ = writeln!(
                out,
                "<text class=\"bar-note\" data-series=\"{}\" x=\"{}\" y=\"{}\" fill=\"#888\" font-style=\"italic\">{}</text>",
                esc(&bar.series),
                px(frame.left + 6.0),
                px(y + BAR_HEIGHT - 4.0),
                esc(&note)
            );
            return;
        };
        let off_scale = value > scale.max;
        let width = scale.fraction(value) * frame.width;
        let (fill, stroke) = self.paint(&bar.fill);
        let _ = write!(
            out,
            "<rect class=\"bar\" data-series=\"{}\" data-value=\"{value}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{BAR_HEIGHT}\" fill=\"{fill}\"{stroke}/>",
            esc(&bar.series),
            px(frame.left),
            px(y),
            px(width.max(1.0)),
        );
        let mut end = frame.left + width;
        if off_scale {
            // A white zig-zag through the bar's end says "cut here".
            let _ = write!(
                out,
                "<path class=\"cut\" d=\"M{a} {top}L{b} {m1}L{a} {m2}L{b} {bottom}\" stroke=\"#fff\" stroke-width=\"3\" fill=\"none\"/>",
                a = px(end - 14.0),
                b = px(end - 8.0),
                top = px(y - 1.0),
                m1 = px(y + BAR_HEIGHT / 3.0),
                m2 = px(y + 2.0 * BAR_HEIGHT / 3.0),
                bottom = px(y + BAR_HEIGHT + 1.0),
            );
        } else if let Some(interval) = bar.interval.filter(|i| i.high > i.low) {
            end = end.max(whisker(out, frame, scale, &interval, y));
        }
        let _ = writeln!(
            out,
            "<text class=\"value\" x=\"{}\" y=\"{}\" fill=\"#222\">{}</text>",
            px(end + 5.0),
            px(y + BAR_HEIGHT - 4.0),
            esc(&(self.format)(value)),
        );
        if off_scale {
            let _ = writeln!(
                out,
                "<text class=\"off-scale\" x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#333\" font-size=\"11\">off scale ▸</text>",
                px(end - 18.0),
                px(y + BAR_HEIGHT - 4.0),
            );
        }
    }
}

struct Frame {
    left: f64,
    top: f64,
    width: f64,
    height: f64,
}

fn group_height(group: &BarGroup) -> f64 {
    group.bars.len().max(1) as f64 * (BAR_HEIGHT + BAR_GAP) - BAR_GAP + GROUP_GAP
}

/// The value axis' end before rounding: the longest bar, or the highest whisker end, but a whisker at most
/// [`WHISKER_AXIS_FACTOR`] × the longest bar.
fn axis_top<'a>(bars: impl Iterator<Item = &'a Bar> + Clone) -> f64 {
    let longest = bars.clone().filter_map(|b| b.value).fold(0.0, f64::max);
    let whiskers = bars.filter_map(|b| Some(b.interval?.high)).fold(0.0, f64::max);
    whiskers.min(longest * WHISKER_AXIS_FACTOR).max(longest)
}

/// Draw `interval` as a whisker; past the axis end it is cut there, left without its end cap, and marked
/// with an arrow and the class `ci clipped` (its title gives the real end). Returns its right end in px.
fn whisker(out: &mut String, frame: &Frame, scale: &Scale, interval: &Estimate, y: f64) -> f64 {
    let lo = frame.left + scale.fraction(interval.low) * frame.width;
    let clipped = interval.high > scale.max;
    let hi = frame.left + scale.fraction(interval.high.min(scale.max)) * frame.width;
    let mid = y + BAR_HEIGHT / 2.0;
    let (a, b) = (px(mid - 4.0), px(mid + 4.0));
    let (lo, hi_px, mid) = (px(lo), px(hi), px(mid));
    if clipped {
        let high = if interval.high.is_finite() { crate::core::stats::sig2(interval.high) } else { "unbounded".into() };
        let _ = write!(
            out,
            "<path class=\"ci clipped\" d=\"M{lo} {mid}H{hi_px}M{lo} {a}V{b}M{tip} {a}L{hi_px} {mid}L{tip} {b}\" stroke=\"#222\" fill=\"none\"><title>95% interval clipped at the axis: it reaches {high}</title></path>",
            tip = px(hi - 5.0),
        );
    } else {
        let _ = write!(
            out,
            "<path class=\"ci\" d=\"M{lo} {mid}H{hi_px}M{lo} {a}V{b}M{hi_px} {a}V{b}\" stroke=\"#222\" fill=\"none\"/>"
        );
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(bars: Vec<Bar>) -> BarChart {
        BarChart {
            id: "t".into(),
            title: "t".into(),
            value_label: "commits/s".into(),
            groups: vec![BarGroup { label: "m".into(), bars }],
            legend: Vec::new(),
            format: super::super::scale::format_count,
            axis_max: None,
        }
    }

    fn bar(value: f64, low: f64, high: f64) -> Bar {
        Bar {
            series: "durable".into(),
            value: Some(value),
            interval: Some(Estimate::new(value, low, high)),
            fill: BarFill::Solid("#000".into()),
            note: None,
        }
    }

    /// Issue #33: one whisker of ×/÷ 1000 put the axis at 0–100,000,000. Now the axis ends near the longest
    /// bar, the wide whisker is cut there and marked clipped, and a narrow one is drawn whole.
    #[test]
    fn an_unbounded_whisker_is_clipped_not_stretching_the_axis() {
        let bars = vec![bar(5237.0, 5.0, 100_000_000.0), bar(4000.0, 3800.0, 4200.0)];
        assert_eq!(axis_top(bars.iter()), 5237.0 * WHISKER_AXIS_FACTOR);
        // The axis a whisker-driven top would give: the planted bug.
        let stretched = bars.iter().filter_map(|b| Some(b.interval?.high)).fold(0.0, f64::max);
        assert!(Scale::linear_from_zero(stretched).max >= 1e8);
        let svg = chart(bars).render();
        assert_eq!(svg.matches("class=\"ci clipped\"").count(), 1, "{svg}");
        assert_eq!(svg.matches("class=\"ci\"").count(), 1, "{svg}");
        assert!(svg.contains("clipped at the axis: it reaches 100,000,000"), "{svg}");
        assert!(!svg.contains(">100M<") && !svg.contains(">50M<"), "an axis stretched to the whisker: {svg}");
        // An open upper end (a disturbed lower bound) is clipped too.
        let open = Bar { interval: Some(Estimate::new(100.0, 90.0, f64::INFINITY)), ..bar(100.0, 90.0, 110.0) };
        assert!(chart(vec![open]).render().contains("it reaches unbounded"));
    }
}
