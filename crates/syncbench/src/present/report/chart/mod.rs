//! Chart drawing, independent of what is charted: scales, SVG helpers, bar, line and percentile-strip charts.

pub mod bar_chart;
pub mod line_chart;
pub mod scale;
pub mod strip_chart;
pub mod svg;
