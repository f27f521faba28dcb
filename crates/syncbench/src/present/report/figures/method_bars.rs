//! Commits per second, one bar per method, per suite section: durable bars solid, not-durable bars hatched.
//! With several runs, one more chart per section puts the runs side by side.

use super::{Figure, bar_sections, case_names, measured, missing_note, section_title, slug};
use crate::core::schema::CaseResult;
use crate::core::suite::Section;
use crate::present::report::chart::bar_chart::{Bar, BarChart, BarFill, BarGroup};
use crate::present::report::chart::scale::format_count;
use crate::present::report::chart::svg::{LegendEntry, Swatch, color};

const VALUE_LABEL: &str = "commits per second (higher is better; whisker: 95% confidence interval)";

/// One bar chart per section of `results`.
pub fn figures(stem: &str, context: &str, results: &[CaseResult]) -> Vec<Figure> {
    bar_sections(results)
        .iter()
        .map(|section| {
            let cases: Vec<&CaseResult> = results.iter().filter(|c| c.section == *section).collect();
            let names = case_names(&cases);
            let groups =
                cases.iter().zip(names).map(|(case, name)| BarGroup { label: name, bars: vec![bar(case)] }).collect();
            let id = format!("{stem}-commits-{}", slug(section.name()));
            let title = format!("{}: commits per second{context}", section_title(section.name()));
            let chart = BarChart {
                id: id.clone(),
                title: title.clone(),
                value_label: VALUE_LABEL.to_string(),
                groups,
                legend: durability_legend(&cases),
                format: format_count,
                axis_max: durable_focus(&cases),
            };
            Figure { stem: id, title, svg: chart.render() }
        })
        .collect()
}

/// When not-durable methods are far faster than every durable one (page-cache writes are often 50× faster),
/// end the axis a little above the fastest durable bar so the durable methods stay comparable.
fn durable_focus(cases: &[&CaseResult]) -> Option<f64> {
    let fastest = |durable: bool| {
        cases
            .iter()
            .filter(|c| c.durable == durable && measured(c))
            .map(|c| c.estimate().high.min(c.ops_per_s * crate::present::report::chart::bar_chart::WHISKER_AXIS_FACTOR))
            .fold(0.0, f64::max)
    };
    let (durable, not_durable) = (fastest(true), fastest(false));
    (durable > 0.0 && not_durable > 3.0 * durable).then_some(durable * 1.25)
}

fn bar(case: &CaseResult) -> Bar {
    Bar {
        series: if case.durable { "durable".into() } else { "not durable".into() },
        value: measured(case).then_some(case.ops_per_s),
        interval: Some(case.estimate()),
        fill: if case.durable { BarFill::Solid(color(0).into()) } else { BarFill::Hatch },
        note: (!measured(case)).then(|| missing_note(case)),
    }
}

fn durability_legend(cases: &[&CaseResult]) -> Vec<LegendEntry> {
    let mut legend = Vec::new();
    if cases.iter().any(|c| c.durable) {
        legend
            .push(LegendEntry { name: "durable when the call returns".into(), swatch: Swatch::Fill(color(0).into()) });
    }
    if cases.iter().any(|c| !c.durable) {
        legend.push(LegendEntry { name: "not durable".into(), swatch: Swatch::Hatch });
    }
    legend
}

/// With several runs: per section, one group per case and one bar per run (runs keep their colour).
pub fn across_runs(runs: &[(&str, &[CaseResult])]) -> Vec<Figure> {
    let mut sections: Vec<Section> = Vec::new();
    for (_, results) in runs {
        for section in bar_sections(results) {
            if !sections.contains(&section) {
                sections.push(section);
            }
        }
    }
    sections
        .iter()
        .map(|section| {
            let mut keys: Vec<(String, String)> = Vec::new();
            for (_, results) in runs {
                let cases: Vec<&CaseResult> = results.iter().filter(|c| c.section == *section).collect();
                for (case, name) in cases.iter().zip(case_names(&cases)) {
                    let key = (case.label.clone(), name);
                    if !keys.iter().any(|k| k.1 == key.1) {
                        keys.push(key);
                    }
                }
            }
            let groups = keys
                .iter()
                .map(|(_, name)| BarGroup {
                    label: name.clone(),
                    bars: runs
                        .iter()
                        .enumerate()
                        .map(|(index, (run_name, results))| run_bar(index, run_name, results, *section, name))
                        .collect(),
                })
                .collect();
            let all_cases: Vec<&CaseResult> =
                runs.iter().flat_map(|(_, results)| results.iter().filter(|c| c.section == *section)).collect();
            let mut legend: Vec<LegendEntry> = runs
                .iter()
                .enumerate()
                .map(|(i, (name, _))| LegendEntry { name: name.to_string(), swatch: Swatch::Fill(color(i).into()) })
                .collect();
            if all_cases.iter().any(|c| !c.durable) {
                legend.push(LegendEntry {
                    name: "pale, dashed: not durable".into(),
                    swatch: Swatch::Faded(color(8).into()),
                });
            }
            let id = format!("runs-commits-{}", slug(section.name()));
            let title = format!("{}: commits per second, runs side by side", section_title(section.name()));
            let chart = BarChart {
                id: id.clone(),
                title: title.clone(),
                value_label: VALUE_LABEL.to_string(),
                groups,
                legend,
                format: format_count,
                axis_max: durable_focus(&all_cases),
            };
            Figure { stem: id, title, svg: chart.render() }
        })
        .collect()
}

fn run_bar(index: usize, run_name: &str, results: &[CaseResult], section: Section, name: &str) -> Bar {
    let cases: Vec<&CaseResult> = results.iter().filter(|c| c.section == section).collect();
    let found = cases.iter().zip(case_names(&cases)).find(|(_, n)| n == name).map(|(c, _)| *c);
    match found {
        Some(case) => Bar {
            series: run_name.to_string(),
            value: measured(case).then_some(case.ops_per_s),
            interval: Some(case.estimate()),
            fill: if case.durable { BarFill::Solid(color(index).into()) } else { BarFill::Faded(color(index).into()) },
            note: (!measured(case)).then(|| format!("{run_name}: {}", missing_note(case))),
        },
        None => Bar {
            series: run_name.to_string(),
            value: None,
            interval: None,
            fill: BarFill::Solid(color(index).into()),
            note: Some(format!("{run_name}: not in this run")),
        },
    }
}
