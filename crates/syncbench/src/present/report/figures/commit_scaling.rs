//! Group commit: commits/s, mean group size and p99 latency as clients grow (from `syncbench commit`).

use super::Figure;
use crate::measure::commit::{CommitPoint, CommitResults};
use crate::present::report::chart::line_chart::{Axis, LineChart, LineSeries};
use crate::present::report::chart::scale::{Scale, format_count, format_ns, trim_number};
use crate::present::report::chart::svg::color;

/// Three line charts over clients, one series per (group commit, commit delay) setting.
pub fn figures(stem: &str, context: &str, commit: &CommitResults) -> Vec<Figure> {
    let points: Vec<&CommitPoint> = commit.points.iter().filter(|p| p.clients > 0).collect();
    if points.is_empty() {
        return Vec::new();
    }
    let settings = settings(&points);
    let not_durable = !commit.durable;
    let series_of = |value: fn(&CommitPoint) -> f64| -> Vec<LineSeries> {
        settings
            .iter()
            .enumerate()
            .map(|(index, (group_commit, delay_us))| {
                let mut line: Vec<(f64, f64)> = points
                    .iter()
                    .filter(|p| p.group_commit == *group_commit && p.commit_delay_us == *delay_us)
                    .map(|p| (f64::from(p.clients), value(p)))
                    .filter(|(_, v)| *v > 0.0)
                    .collect();
                line.sort_by(|a, b| a.0.total_cmp(&b.0));
                LineSeries {
                    name: setting_name(*group_commit, *delay_us),
                    color: color(index).into(),
                    dashed: not_durable,
                    points: line,
                }
            })
            .collect()
    };
    let clients = points.iter().map(|p| f64::from(p.clients));
    let (lo, hi) = clients.fold((f64::INFINITY, 0.0f64), |(lo, hi), c| (lo.min(c), hi.max(c)));
    let x = Axis {
        label: "concurrent clients (log scale)".into(),
        scale: Scale::log2_covering(lo, hi),
        ticks: None,
        format: trim_number,
    };
    let method = match (commit.method_name(), not_durable) {
        ("", false) => String::new(),
        ("", true) => " (not durable)".to_string(),
        (method, false) => format!(" with {method}"),
        (method, true) => format!(" with {method} (not durable)"),
    };
    specs()
        .into_iter()
        .filter_map(|spec| {
            let series = series_of(spec.value);
            let values: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
            if values.is_empty() {
                return None;
            }
            let hi = values.iter().copied().fold(0.0, f64::max);
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let scale = if spec.log { Scale::log10_covering(lo, hi) } else { Scale::linear_from_zero(hi) };
            let id = format!("{stem}-commit-{}", spec.kind);
            let title = format!("Group commit{method}: {}{context}", spec.what);
            let y = Axis { label: spec.y_label.into(), scale, ticks: None, format: spec.format };
            let chart = LineChart { id: id.clone(), title: title.clone(), x: x.clone(), y, series };
            Some(Figure { stem: id, title, svg: chart.render() })
        })
        .collect()
}

/// The three charts: commits per second, group size and p99 latency.
fn specs() -> [Spec; 3] {
    [
        Spec {
            kind: "commits",
            what: "commits per second",
            y_label: "commits per second (higher is better)",
            value: |p| p.commits_per_s,
            format: format_count,
            log: false,
        },
        Spec {
            kind: "group-size",
            what: "commits per sync",
            y_label: "mean commits per sync (group size)",
            value: |p| p.commits_per_sync,
            format: trim_number,
            log: false,
        },
        Spec {
            kind: "latency-p99",
            what: "p99 commit latency",
            y_label: "p99 commit latency (log scale, lower is better)",
            value: |p| p.latency_ns.p99 as f64,
            format: format_ns,
            log: true,
        },
    ]
}

/// One of the three charts: what it plots and how.
struct Spec {
    kind: &'static str,
    what: &'static str,
    y_label: &'static str,
    value: fn(&CommitPoint) -> f64,
    format: fn(f64) -> String,
    log: bool,
}

fn settings(points: &[&CommitPoint]) -> Vec<(bool, u64)> {
    let mut settings: Vec<(bool, u64)> = Vec::new();
    for p in points {
        if !settings.contains(&(p.group_commit, p.commit_delay_us)) {
            settings.push((p.group_commit, p.commit_delay_us));
        }
    }
    settings
}

fn setting_name(group_commit: bool, delay_us: u64) -> String {
    let base = if group_commit { "group commit" } else { "one sync per commit" };
    if delay_us > 0 { format!("{base}, commit_delay {delay_us} µs") } else { base.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(clients: u32, group_commit: bool, commits_per_s: f64) -> CommitPoint {
        CommitPoint { clients, group_commit, commits_per_s, commits_per_sync: 1.0, ..CommitPoint::default() }
    }

    #[test]
    fn one_line_per_setting_sorted_by_clients() {
        let commit = CommitResults {
            method: Some(syncbench_engine::wal::SyncMethod::Fdatasync),
            durable: true,
            points: vec![point(4, true, 900.0), point(1, true, 300.0), point(1, false, 290.0)],
            ..CommitResults::default()
        };
        let figures = figures("c", "", &commit);
        assert_eq!(figures.len(), 2, "no p99 chart without latencies");
        let svg = &figures[0].svg;
        assert!(svg.contains("data-name=\"group commit\" data-dashed=\"false\""));
        assert!(svg.contains("data-name=\"one sync per commit\""));
        let group = &svg[svg.find("data-name=\"group commit\"").unwrap()..];
        let first_x = group.find("data-x=\"1\"").unwrap();
        assert!(first_x < group.find("data-x=\"4\"").unwrap(), "points in client order");
    }

    #[test]
    fn a_log_that_is_not_durable_says_so_and_is_dashed() {
        let commit = CommitResults {
            method: Some(syncbench_engine::wal::SyncMethod::Write),
            durable: false,
            points: vec![point(1, true, 300_000.0)],
            ..CommitResults::default()
        };
        let figures = figures("c", "", &commit);
        assert!(figures[0].title.contains("with write (not durable)"), "{}", figures[0].title);
        assert!(figures[0].svg.contains("data-dashed=\"true\""));
    }
}
