//! Percentile strips: one row per case on a shared horizontal axis, a line from the lowest to the highest
//! value and one marker per percentile. Colour means the percentile (a handful, all distinct), the row's
//! label names the case, so a section of 22 cases needs no 22-colour legend.

use super::scale::Scale;
use super::svg::{self, FONT_SIZE, LegendEntry, Swatch, WIDTH, esc, px, text_width};
use std::fmt::Write;

/// One kind of marker (a percentile): its legend name and colour.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// Legend text, e.g. `p99`.
    pub name: String,
    /// Fill colour.
    pub color: String,
}

/// One row: a case.
#[derive(Clone, Debug, PartialEq)]
pub struct StripRow {
    /// The label left of the row.
    pub label: String,
    /// Drawn dashed and grey (not durable).
    pub dashed: bool,
    /// (marker index, value) pairs; empty when the case has no values.
    pub values: Vec<(usize, f64)>,
    /// Text in place of the strip when `values` is empty.
    pub note: Option<String>,
}

/// A whole strip chart.
#[derive(Clone, Debug)]
pub struct StripChart {
    /// Element id, unique within a page.
    pub id: String,
    /// Title above the chart.
    pub title: String,
    /// Label of the value axis, with its unit.
    pub value_label: String,
    /// The markers, in legend order.
    pub markers: Vec<Marker>,
    /// The rows, top to bottom.
    pub rows: Vec<StripRow>,
    /// The value axis.
    pub scale: Scale,
    /// How tick values are written.
    pub format: fn(f64) -> String,
}

const ROW_HEIGHT: f64 = 20.0;
const RIGHT: f64 = 28.0;
const MARKER_RADIUS: f64 = 4.0;

impl StripChart {
    /// Render as a standalone SVG document.
    pub fn render(&self) -> String {
        let legend: Vec<LegendEntry> = self
            .markers
            .iter()
            .map(|m| LegendEntry { name: m.name.clone(), swatch: Swatch::Dot(m.color.clone()) })
            .collect();
        let legend_top = 36.0;
        let top = legend_top + svg::legend_height(&legend) + 10.0;
        let plot_height = (self.rows.len().max(1) as f64 * ROW_HEIGHT).max(40.0);
        let height = top + plot_height + 50.0;
        let widest = self.rows.iter().map(|r| text_width(&r.label, FONT_SIZE)).fold(0.0, f64::max);
        let left = (widest + 16.0).clamp(80.0, WIDTH / 2.0);
        let width = WIDTH - left - RIGHT;
        let mut out = String::new();
        svg::open(&mut out, &self.id, height, &self.title);
        svg::legend(&mut out, &self.id, legend_top, &legend);
        self.axis(&mut out, left, width, top, plot_height);
        for (index, row) in self.rows.iter().enumerate() {
            self.row(&mut out, left, width, top + index as f64 * ROW_HEIGHT, row);
        }
        if self.rows.iter().all(|r| r.values.is_empty()) {
            svg::no_data(&mut out, top, "no measured values");
        }
        svg::close(&mut out);
        out
    }

    fn x(&self, left: f64, width: f64, value: f64) -> f64 {
        left + self.scale.fraction(value) * width
    }

    fn axis(&self, out: &mut String, left: f64, width: f64, top: f64, plot_height: f64) {
        let bottom = top + plot_height;
        out.push_str("<g class=\"axis x\">\n");
        for tick in self.scale.ticks() {
            let _ = writeln!(
                out,
                "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#e3e3e3\"/><text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{}</text>",
                px(top),
                px(bottom),
                px(bottom + 17.0),
                esc(&(self.format)(tick)),
                x = px(self.x(left, width, tick)),
            );
        }
        let _ = writeln!(
            out,
            "<line x1=\"{l}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#333\"/><line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{b}\" stroke=\"#333\"/>\n<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n</g>",
            px(svg::centre_within(left + width / 2.0, text_width(&self.value_label, FONT_SIZE))),
            px(bottom + 40.0),
            esc(&self.value_label),
            l = px(left),
            r = px(left + width),
            t = px(top),
            b = px(bottom),
        );
    }

    fn row(&self, out: &mut String, left: f64, width: f64, top: f64, row: &StripRow) {
        let mid = top + ROW_HEIGHT / 2.0;
        // A row without values is no series (nothing drawn), just its label and why.
        let class = if row.values.is_empty() { "row-missing" } else { "series" };
        let _ = writeln!(
            out,
            "<g class=\"{class}\" data-name=\"{name}\" data-dashed=\"{}\"><text class=\"row-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\"{}>{name}</text>",
            row.dashed,
            px(left - 8.0),
            px(mid + 4.0),
            if row.dashed { " fill=\"#666\"" } else { "" },
            name = esc(&row.label),
        );
        if row.values.is_empty() {
            let note = svg::truncate_to_width(row.note.as_deref().unwrap_or("no value"), width - 12.0);
            let _ = writeln!(
                out,
                "<text class=\"row-note\" x=\"{}\" y=\"{}\" fill=\"#888\" font-style=\"italic\">{}</text></g>",
                px(left + 6.0),
                px(mid + 4.0),
                esc(&note)
            );
            return;
        }
        let xs = row.values.iter().map(|(_, v)| self.x(left, width, *v));
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
        let (stroke, dash) = if row.dashed { ("#9a9a9a", " stroke-dasharray=\"5 3\"") } else { ("#555", "") };
        let _ = writeln!(
            out,
            "<path class=\"range\" d=\"M{} {m}H{}\" stroke=\"{stroke}\" stroke-width=\"1.5\"{dash}/>",
            px(lo),
            px(hi.max(lo + 1.0)),
            m = px(mid),
        );
        // Highest percentile first, so the lower ones (drawn later, on top) stay visible where they meet.
        for &(marker, value) in row.values.iter().rev() {
            let Some(m) = self.markers.get(marker) else { continue };
            let _ = writeln!(
                out,
                "<circle class=\"point\" data-x=\"{}\" data-y=\"{value}\" cx=\"{}\" cy=\"{}\" r=\"{MARKER_RADIUS}\" fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.8\"/>",
                esc(&m.name),
                px(self.x(left, width, value)),
                px(mid),
                m.color
            );
        }
        out.push_str("</g>\n");
    }
}
