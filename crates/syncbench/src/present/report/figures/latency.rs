//! Commit latency percentiles per case on a log axis, so tails that span decades stay visible: one row per
//! case (its label names it), one colour per percentile.

use super::{Figure, bar_sections, case_names, measured, missing_note, section_title, slug};
use crate::core::schema::{CaseResult, LatencyNs};
use crate::present::report::chart::scale::{Scale, format_ns};
use crate::present::report::chart::strip_chart::{Marker, StripChart, StripRow};

/// The percentiles drawn, lowest first, with their colours (Okabe–Ito, distinct for colour-blind readers).
const PERCENTILES: [(&str, &str); 6] = [
    ("min", "#56b4e9"),
    ("p50", "#0072b2"),
    ("p90", "#009e73"),
    ("p99", "#e69f00"),
    ("p99.9", "#d55e00"),
    ("max", "#000000"),
];

fn value_label(cases: &[&CaseResult]) -> &'static str {
    if cases.iter().any(|c| !c.durable) {
        "commit latency, log scale (lower is better; dashed: not durable)"
    } else {
        "commit latency, log scale (lower is better)"
    }
}

fn percentile_values(latency: &LatencyNs) -> [u64; 6] {
    [latency.min, latency.p50, latency.p90, latency.p99, latency.p999, latency.max]
}

/// One percentile chart per section of `results` that has measured cases.
pub fn figures(stem: &str, context: &str, results: &[CaseResult]) -> Vec<Figure> {
    bar_sections(results)
        .iter()
        .filter_map(|section| {
            let cases: Vec<&CaseResult> = results.iter().filter(|c| c.section == *section).collect();
            if !cases.iter().any(|c| measured(c)) {
                return None;
            }
            let rows: Vec<StripRow> = cases
                .iter()
                .zip(case_names(&cases))
                .map(|(case, label)| StripRow {
                    label,
                    dashed: !case.durable,
                    values: if measured(case) {
                        percentile_values(&case.latency_ns)
                            .iter()
                            .enumerate()
                            .filter(|(_, ns)| **ns > 0)
                            .map(|(i, ns)| (i, *ns as f64))
                            .collect()
                    } else {
                        Vec::new()
                    },
                    note: (!measured(case)).then(|| missing_note(case)),
                })
                .collect();
            let values = rows.iter().flat_map(|r| r.values.iter().map(|v| v.1));
            let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
            let id = format!("{stem}-latency-{}", slug(section.name()));
            let title = format!("{}: commit latency percentiles{context}", section_title(section.name()));
            let chart = StripChart {
                id: id.clone(),
                title: title.clone(),
                value_label: value_label(&cases).into(),
                markers: PERCENTILES
                    .iter()
                    .map(|(name, color)| Marker { name: name.to_string(), color: color.to_string() })
                    .collect(),
                rows,
                scale: Scale::log10_covering(lo, hi),
                format: format_ns,
            };
            Some(Figure { stem: id, title, svg: chart.render() })
        })
        .collect()
}
