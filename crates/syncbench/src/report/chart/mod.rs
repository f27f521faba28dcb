//! Chart drawing, independent of what is charted: scales, SVG helpers, bar and line charts.

pub mod bar_chart;
pub mod line_chart;
pub mod scale;
pub mod svg;
