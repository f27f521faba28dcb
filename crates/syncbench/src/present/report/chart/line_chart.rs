//! Line charts: one polyline with point markers per series over a linear or logarithmic plane.

use super::scale::Scale;
use super::svg::{self, FONT_SIZE, LegendEntry, Swatch, WIDTH, esc, px, text_width};
use std::fmt::Write;

/// One line.
#[derive(Clone, Debug, PartialEq)]
pub struct LineSeries {
    /// Legend text.
    pub name: String,
    /// Stroke colour.
    pub color: String,
    /// Dashed lines mark what is not durable.
    pub dashed: bool,
    /// (x, y) points in data units, in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// An axis of a line chart.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Label with its unit.
    pub label: String,
    /// Value range and spacing.
    pub scale: Scale,
    /// Ticks at given positions with given labels (categories); `None`: the scale's ticks with `format`.
    pub ticks: Option<Vec<(f64, String)>>,
    /// How tick values are written.
    pub format: fn(f64) -> String,
}

impl Axis {
    fn tick_list(&self) -> Vec<(f64, String)> {
        match &self.ticks {
            Some(ticks) => ticks.clone(),
            None => self.scale.ticks().into_iter().map(|t| (t, (self.format)(t))).collect(),
        }
    }
}

/// A whole line chart.
#[derive(Clone, Debug)]
pub struct LineChart {
    /// Element id, unique within a page.
    pub id: String,
    /// Title above the chart.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The lines.
    pub series: Vec<LineSeries>,
}

const PLOT_HEIGHT: f64 = 300.0;
const RIGHT: f64 = 24.0;
/// Centre line of the rotated y-axis title.
const Y_TITLE_X: f64 = 16.0;
/// Gap between a y tick label and the axis line.
const TICK_GAP: f64 = 6.0;

impl LineChart {
    /// Render as a standalone SVG document.
    pub fn render(&self) -> String {
        let legend: Vec<LegendEntry> = self
            .series
            .iter()
            .map(|s| LegendEntry {
                name: s.name.clone(),
                swatch: Swatch::Line { color: s.color.clone(), dashed: s.dashed },
            })
            .collect();
        let legend_top = 36.0;
        let top = legend_top + svg::legend_height(&legend) + 12.0;
        let height = top + PLOT_HEIGHT + 52.0;
        let mut out = String::new();
        svg::open(&mut out, &self.id, height, &self.title);
        svg::legend(&mut out, &self.id, legend_top, &legend);
        self.axes(&mut out, top);
        for series in &self.series {
            self.line(&mut out, top, series);
        }
        if self.series.iter().all(|s| s.points.is_empty()) {
            svg::no_data(&mut out, top + PLOT_HEIGHT / 2.0 - 20.0, "no measured values");
        }
        svg::close(&mut out);
        out
    }

    /// Left edge of the plot: room for the widest y tick label and, left of it, the rotated axis title
    /// (its glyphs reach about 9 px left and 3 px right of its centre line).
    fn left(&self) -> f64 {
        let widest = self.y.tick_list().iter().map(|(_, label)| text_width(label, FONT_SIZE)).fold(0.0, f64::max);
        (Y_TITLE_X + 4.0 + 8.0 + widest + TICK_GAP).max(60.0)
    }

    fn to_px(&self, top: f64, x: f64, y: f64) -> (f64, f64) {
        let left = self.left();
        let width = WIDTH - left - RIGHT;
        (left + self.x.scale.fraction(x) * width, top + PLOT_HEIGHT - self.y.scale.fraction(y) * PLOT_HEIGHT)
    }

    fn axes(&self, out: &mut String, top: f64) {
        let left = self.left();
        let bottom = top + PLOT_HEIGHT;
        let right = WIDTH - RIGHT;
        out.push_str("<g class=\"axis x\">\n");
        for (value, label) in self.x.tick_list() {
            let (x, _) = self.to_px(top, value, self.y.scale.min);
            let _ = writeln!(
                out,
                "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#ececec\"/><text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{}</text>",
                px(top),
                px(bottom),
                px(bottom + 17.0),
                esc(&label),
                x = px(x)
            );
        }
        let _ = writeln!(
            out,
            "<line x1=\"{}\" y1=\"{b}\" x2=\"{}\" y2=\"{b}\" stroke=\"#333\"/><text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n</g>",
            px(left),
            px(right),
            px(svg::centre_within((left + right) / 2.0, text_width(&self.x.label, FONT_SIZE))),
            px(bottom + 40.0),
            esc(&self.x.label),
            b = px(bottom),
        );
        out.push_str("<g class=\"axis y\">\n");
        for (value, label) in self.y.tick_list() {
            let (_, y) = self.to_px(top, self.x.scale.min, value);
            let _ = writeln!(
                out,
                "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#ececec\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#444\">{}</text>",
                px(left),
                px(right),
                px(left - TICK_GAP),
                px(y + 4.0),
                esc(&label),
                y = px(y)
            );
        }
        let mid = top + PLOT_HEIGHT / 2.0;
        let _ = writeln!(
            out,
            "<line x1=\"{l}\" y1=\"{}\" x2=\"{l}\" y2=\"{}\" stroke=\"#333\"/><text class=\"axis-label\" x=\"{tx}\" y=\"{mid}\" text-anchor=\"middle\" transform=\"rotate(-90 {tx} {mid})\">{}</text>\n</g>",
            px(top),
            px(bottom),
            esc(&self.y.label),
            tx = px(Y_TITLE_X),
            l = px(left),
            mid = px(mid),
        );
    }

    fn line(&self, out: &mut String, top: f64, series: &LineSeries) {
        let dash = if series.dashed { " stroke-dasharray=\"6 4\"" } else { "" };
        let _ =
            writeln!(out, "<g class=\"series\" data-name=\"{}\" data-dashed=\"{}\">", esc(&series.name), series.dashed);
        let path: Vec<String> = series
            .points
            .iter()
            .map(|&(x, y)| {
                let (px_x, px_y) = self.to_px(top, x, y);
                format!("{},{}", px(px_x), px(px_y))
            })
            .collect();
        if path.len() > 1 {
            let _ = writeln!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{dash}/>",
                path.join(" "),
                series.color
            );
        }
        for &(x, y) in &series.points {
            let (cx, cy) = self.to_px(top, x, y);
            let _ = writeln!(
                out,
                "<circle class=\"point\" data-x=\"{x}\" data-y=\"{y}\" cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>",
                px(cx),
                px(cy),
                series.color
            );
        }
        out.push_str("</g>\n");
    }
}
