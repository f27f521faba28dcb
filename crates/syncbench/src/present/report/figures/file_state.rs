//! File state: the same method on an overwritten, an appended and a fallocated file, side by side.

use super::{Figure, measured, missing_note, section_title};
use crate::core::schema::CaseResult;
use crate::core::suite::Section;
use crate::present::report::chart::bar_chart::{Bar, BarChart, BarFill, BarGroup};
use crate::present::report::chart::scale::format_count;
use crate::present::report::chart::svg::{LegendEntry, Swatch, color};

/// The section this figure draws.
pub const SECTION: Section = Section::FileState;

/// A grouped bar chart (one group per method, one bar per file state) when `results` has the section.
pub fn figures(stem: &str, context: &str, results: &[CaseResult]) -> Vec<Figure> {
    let cases: Vec<&CaseResult> = results.iter().filter(|c| c.section == SECTION).collect();
    if cases.is_empty() {
        return Vec::new();
    }
    let states = first_seen(cases.iter().map(|c| c.file_state.name()));
    let methods = first_seen(cases.iter().map(|c| c.method.name()));
    let groups = methods
        .iter()
        .map(|method| BarGroup {
            label: method.clone(),
            bars: states
                .iter()
                .enumerate()
                .filter_map(|(index, state)| {
                    let case = cases.iter().find(|c| c.method.name() == method && c.file_state.name() == state)?;
                    Some(Bar {
                        series: state.clone(),
                        value: measured(case).then_some(case.ops_per_s),
                        interval: Some(case.estimate()),
                        fill: if case.durable { BarFill::Solid(color(index).into()) } else { BarFill::Hatch },
                        note: (!measured(case)).then(|| format!("{state}: {}", missing_note(case))),
                    })
                })
                .collect(),
        })
        .collect();
    let mut legend: Vec<LegendEntry> = states
        .iter()
        .enumerate()
        .map(|(index, state)| LegendEntry { name: state.clone(), swatch: Swatch::Fill(color(index).into()) })
        .collect();
    if cases.iter().any(|c| !c.durable) {
        legend.push(LegendEntry { name: "not durable".into(), swatch: Swatch::Hatch });
    }
    let id = format!("{stem}-file-state");
    let title = format!("{}{context}", section_title(SECTION.name()));
    let chart = BarChart {
        id: id.clone(),
        title: title.clone(),
        value_label: "commits per second (higher is better; whisker: 95% confidence interval)".into(),
        groups,
        legend,
        format: format_count,
        axis_max: None,
    };
    vec![Figure { stem: id, title, svg: chart.render() }]
}

fn first_seen<'a>(items: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for item in items {
        if !seen.iter().any(|s| s == item) {
            seen.push(item.to_string());
        }
    }
    seen
}
