//! Writing SVG by hand: escaping, the shared look (fonts, colours, the not-durable hatch), title and legend.
//!
//! Every chart is a standalone `<svg>` document that renders the same inline in HTML and as a file. Elements
//! carry `class` and `data-*` attributes (`series`, `bar`, `axis`, `legend-entry`) so tests and scripts can
//! read the structure back.

use std::fmt::Write;

/// Width of every chart, in CSS pixels.
pub const WIDTH: f64 = 760.0;
/// Font size of chart text other than the title, in CSS pixels.
pub const FONT_SIZE: f64 = 12.0;

/// Width of `text` at `font_size` px, from the advance widths of DejaVu Sans (what `system-ui` and
/// `sans-serif` resolve to on Debian, and among the widest common sans fonts, so layouts sized by it fit the
/// narrower ones too). Margins, legend rows and label room are sized by this, so labels do not run into each
/// other or off the chart.
pub fn text_width(text: &str, font_size: f64) -> f64 {
    text.chars().map(char_em).sum::<f64>() * font_size
}

/// Width of bold `text` (titles): DejaVu Sans Bold is about 10% wider than Book.
pub fn bold_text_width(text: &str, font_size: f64) -> f64 {
    text_width(text, font_size) * 1.1
}

/// Advance of one character of DejaVu Sans Book, in em (units per em 2048; rounded up).
fn char_em(c: char) -> f64 {
    match c {
        'i' | 'j' | 'l' | 'I' | '\'' | '|' | '!' => 0.30,
        ' ' | '.' | ',' | ':' | ';' | '/' | 'f' | 't' => 0.40,
        '(' | ')' | '[' | ']' | '-' | 'r' => 0.42,
        'm' | 'w' | '%' | '—' | '…' | 'M' | 'W' | '@' => 1.0,
        '0'..='9' | 'a'..='z' | '_' | '$' | '#' | '?' => 0.64,
        '+' | '×' | '±' | '=' | '<' | '>' | '~' => 0.84,
        'A'..='Z' => 0.80,
        _ => 0.80,
    }
}

/// Series colours: Okabe–Ito first (distinguishable with common colour-vision deficiencies), then enough
/// extras that a full `one_write` section (14 methods) repeats no colour.
pub const PALETTE: [&str; 16] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#8c564b", "#7f7f7f", "#bcbd22",
    "#6a3d9a", "#b15928", "#1b9e77", "#e7298a", "#66a61e", "#a6761d",
];

/// Colour of bars that are not durable (drawn hatched as well, so it survives greyscale printing).
pub const NOT_DURABLE_COLOR: &str = "#9a9a9a";

/// The colour of series number `index`.
pub fn color(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// Escape text for SVG/HTML content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A number for an SVG coordinate: one decimal, so output is stable and short.
pub fn px(value: f64) -> String {
    // Values that round to zero print as "0", never "-0".
    let value = if value.abs() < 0.05 { 0.0 } else { value };
    let text = format!("{value:.1}");
    text.strip_suffix(".0").map(str::to_string).unwrap_or(text)
}

/// The opening of a chart document: `<svg>`, styles, the hatch pattern (ids prefixed by `id` so several charts
/// can sit inline in one page), a white background and the title.
pub fn open(out: &mut String, id: &str, height: f64, title: &str) {
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif" font-size="12">
<title>{t}</title>
<defs><pattern id="{id}-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="#e6e6e6"/><line x1="0" y1="0" x2="0" y2="6" stroke="{nd}" stroke-width="3"/></pattern></defs>
<rect width="{w}" height="{h}" fill="#ffffff"/>
<text class="title" x="{cx}" y="22" text-anchor="middle" font-size="{fs}" font-weight="600">{t}</text>
"##,
        w = px(WIDTH),
        h = px(height),
        t = esc(title),
        nd = NOT_DURABLE_COLOR,
        cx = px(WIDTH / 2.0),
        fs = px(title_font_size(title)),
    );
}

/// 15 px, or smaller so a long title still fits the chart width.
fn title_font_size(title: &str) -> f64 {
    let fits = 15.0 * (WIDTH - 24.0) / bold_text_width(title, 15.0).max(1.0);
    fits.clamp(9.0, 15.0)
}

/// `text` cut so it is at most `max_width` px wide at the chart font size, with an ellipsis when cut.
pub fn truncate_to_width(text: &str, max_width: f64) -> String {
    if text_width(text, FONT_SIZE) <= max_width {
        return text.to_string();
    }
    let mut kept = String::new();
    for c in text.chars() {
        if text_width(&kept, FONT_SIZE) + text_width(&format!("{c}…"), FONT_SIZE) > max_width {
            break;
        }
        kept.push(c);
    }
    format!("{kept}…")
}

/// Where to centre a label `width` px wide near `centre` so it stays inside the chart (4 px margins).
pub fn centre_within(centre: f64, width: f64) -> f64 {
    let half = width / 2.0;
    if half * 2.0 >= WIDTH - 8.0 { WIDTH / 2.0 } else { centre.clamp(4.0 + half, WIDTH - 4.0 - half) }
}

/// The end of a chart document.
pub fn close(out: &mut String) {
    out.push_str("</svg>\n");
}

/// How one legend entry is drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum Swatch {
    /// A filled square.
    Fill(String),
    /// The hatch of not-durable bars.
    Hatch,
    /// A pale square with a dashed outline (not-durable bars in charts where colour means the run).
    Faded(String),
    /// A round marker (a percentile in a strip chart).
    Dot(String),
    /// A line, dashed or solid, with a point marker.
    Line {
        /// Stroke colour.
        color: String,
        /// Dashed (not durable) or solid.
        dashed: bool,
    },
}

/// One legend entry.
#[derive(Clone, Debug, PartialEq)]
pub struct LegendEntry {
    /// The text.
    pub name: String,
    /// The symbol.
    pub swatch: Swatch,
}

/// Height a legend needs when wrapped into rows across the chart width.
pub fn legend_height(entries: &[LegendEntry]) -> f64 {
    legend_rows(entries).len() as f64 * 18.0
}

fn entry_width(entry: &LegendEntry) -> f64 {
    28.0 + text_width(&entry.name, FONT_SIZE) + 14.0
}

fn legend_rows(entries: &[LegendEntry]) -> Vec<Vec<&LegendEntry>> {
    let mut rows: Vec<Vec<&LegendEntry>> = Vec::new();
    let mut used = f64::INFINITY;
    for entry in entries {
        if used + entry_width(entry) > WIDTH - 40.0 {
            rows.push(Vec::new());
            used = 0.0;
        }
        used += entry_width(entry);
        if let Some(row) = rows.last_mut() {
            row.push(entry);
        }
    }
    rows
}

/// Draw the legend with its top edge at `top`, rows centred.
pub fn legend(out: &mut String, id: &str, top: f64, entries: &[LegendEntry]) {
    out.push_str("<g class=\"legend\">\n");
    for (row_index, row) in legend_rows(entries).iter().enumerate() {
        let row_width: f64 = row.iter().map(|e| entry_width(e)).sum();
        let mut x = (WIDTH - row_width) / 2.0;
        let y = top + row_index as f64 * 18.0 + 9.0;
        for entry in row {
            let _ = write!(out, "<g class=\"legend-entry\" data-name=\"{}\">", esc(&entry.name));
            swatch(out, id, x, y, &entry.swatch);
            let _ = writeln!(out, "<text x=\"{}\" y=\"{}\">{}</text></g>", px(x + 28.0), px(y + 4.0), esc(&entry.name));
            x += entry_width(entry);
        }
    }
    out.push_str("</g>\n");
}

fn swatch(out: &mut String, id: &str, x: f64, y: f64, swatch: &Swatch) {
    match swatch {
        Swatch::Fill(color) => {
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"20\" height=\"10\" fill=\"{color}\"/>",
                px(x),
                px(y - 5.0)
            );
        }
        Swatch::Hatch => {
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"20\" height=\"10\" fill=\"url(#{id}-hatch)\" stroke=\"{NOT_DURABLE_COLOR}\"/>",
                px(x),
                px(y - 5.0)
            );
        }
        Swatch::Faded(color) => {
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"20\" height=\"10\" fill=\"{color}\" fill-opacity=\"0.35\" stroke=\"{color}\" stroke-dasharray=\"4 2\"/>",
                px(x),
                px(y - 5.0)
            );
        }
        Swatch::Dot(color) => {
            let _ = write!(out, "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{color}\"/>", px(x + 10.0), px(y));
        }
        Swatch::Line { color, dashed } => {
            let dash = if *dashed { " stroke-dasharray=\"5 3\"" } else { "" };
            let _ = write!(
                out,
                "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/><circle cx=\"{}\" cy=\"{y}\" r=\"3\" fill=\"{color}\"/>",
                px(x),
                px(x + 22.0),
                px(x + 11.0),
                y = px(y)
            );
        }
    }
}

/// A short message in place of a chart's plot area when it has nothing to draw.
pub fn no_data(out: &mut String, top: f64, message: &str) {
    let _ = writeln!(
        out,
        "<text class=\"no-data\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#666\">{}</text>",
        px(WIDTH / 2.0),
        px(top + 20.0),
        esc(message)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(esc(r#"<a href="x">&'"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }

    #[test]
    fn coordinates_are_short_and_stable() {
        assert_eq!(px(12.0), "12");
        assert_eq!(px(12.345), "12.3");
        assert_eq!(px(-0.04), "0");
    }

    #[test]
    fn long_titles_get_a_smaller_font_and_long_notes_an_ellipsis() {
        assert_eq!(title_font_size("short"), 15.0);
        assert!(title_font_size(&"x".repeat(100)) < 13.0);
        assert_eq!(truncate_to_width("abcdef", text_width("abc…", FONT_SIZE)), "abc…");
        assert_eq!(truncate_to_width("abc", 100.0), "abc");
    }

    #[test]
    fn long_legends_wrap_into_rows() {
        let entries: Vec<LegendEntry> = (0..12)
            .map(|i| LegendEntry { name: format!("open_datasync+direct {i}"), swatch: Swatch::Fill(color(i).into()) })
            .collect();
        assert!(legend_rows(&entries).len() > 1);
        assert_eq!(legend_rows(&entries).iter().map(Vec::len).sum::<usize>(), 12);
    }
}
