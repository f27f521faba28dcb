//! Commit latency percentiles per method on a log axis, so tails that span decades stay visible.

use super::{Figure, bar_sections, case_names, measured, section_title, slug};
use crate::report::chart::line_chart::{Axis, LineChart, LineSeries};
use crate::report::chart::scale::{Scale, ScaleKind, format_ns};
use crate::report::chart::svg::color;
use crate::schema::{CaseResult, LatencyNs};

/// The percentiles drawn, left to right.
const PERCENTILES: [&str; 6] = ["min", "p50", "p90", "p99", "p99.9", "max"];

fn percentile_values(latency: &LatencyNs) -> [u64; 6] {
    [latency.min, latency.p50, latency.p90, latency.p99, latency.p999, latency.max]
}

/// One percentile chart per section of `results` that has measured cases.
pub fn figures(stem: &str, context: &str, results: &[CaseResult]) -> Vec<Figure> {
    bar_sections(results)
        .iter()
        .filter_map(|section| {
            let cases: Vec<&CaseResult> = results.iter().filter(|c| &c.section == section).collect();
            let names = case_names(&cases);
            let series: Vec<LineSeries> = cases
                .iter()
                .zip(names)
                .filter(|(case, _)| measured(case))
                .enumerate()
                .map(|(index, (case, name))| LineSeries {
                    name,
                    color: color(index).to_string(),
                    dashed: !case.durable,
                    points: percentile_values(&case.latency_ns)
                        .iter()
                        .enumerate()
                        .filter(|(_, ns)| **ns > 0)
                        .map(|(i, ns)| (i as f64, *ns as f64))
                        .collect(),
                })
                .collect();
            if series.is_empty() {
                return None;
            }
            let id = format!("{stem}-latency-{}", slug(section));
            let title = format!("{}: commit latency percentiles{context}", section_title(section));
            Some(Figure { stem: id.clone(), title: title.clone(), svg: chart(id, title, series).render() })
        })
        .collect()
}

fn chart(id: String, title: String, series: Vec<LineSeries>) -> LineChart {
    let values = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    LineChart {
        id,
        title,
        x: Axis {
            label: "percentile of commits (dashed: not durable)".into(),
            scale: Scale { kind: ScaleKind::Linear, min: -0.25, max: PERCENTILES.len() as f64 - 0.75 },
            ticks: Some(PERCENTILES.iter().enumerate().map(|(i, p)| (i as f64, p.to_string())).collect()),
            format: format_ns,
        },
        y: Axis {
            label: "commit latency (log scale, lower is better)".into(),
            scale: Scale::log10_covering(lo, hi),
            ticks: None,
            format: format_ns,
        },
        series,
    }
}
