//! `commit`'s table, CSV and Markdown.

use super::{CommitPayload, CommitPoint, CommitResults};
use crate::core::export::Exportable;
use crate::core::export::openmetrics::{Family, push_quantiles};
use crate::core::schema::Envelope;

impl Exportable for CommitPayload {
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String> {
        to_csv(&doc.payload.commit)
    }
    fn markdown(doc: &Envelope<Self>) -> String {
        to_markdown(&doc.payload.commit)
    }
    fn metrics(doc: &Envelope<Self>) -> Vec<Family> {
        metrics(&doc.payload.commit)
    }
    fn partial(&self) -> bool {
        self.partial
    }
}

/// Commits and syncs per second and the commit latency quantiles of every point.
fn metrics(results: &CommitResults) -> Vec<Family> {
    let mut commits = Family::new("syncbench_commit_commits_per_second", "", "Commits per second at one point.");
    let mut syncs = Family::new("syncbench_commit_syncs_per_second", "", "Log flushes per second at one point.");
    let mut latency = Family::new("syncbench_commit_latency_seconds", "seconds", "Commit latency quantile.");
    for p in results.points.iter().filter(|p| p.commits > 0) {
        let labels = vec![
            ("method", results.method_name().to_string()),
            ("durable", results.durable.to_string()),
            ("clients", p.clients.to_string()),
            ("group_commit", p.group_commit.to_string()),
            ("commit_delay_us", p.commit_delay_us.to_string()),
            ("commit_delay_count", p.commit_delay_count.to_string()),
        ];
        commits.push(labels.clone(), p.commits_per_s);
        syncs.push(labels.clone(), p.syncs_per_s);
        push_quantiles(&mut latency, &labels, &[("0.5", p.latency_ns.p50), ("0.99", p.latency_ns.p99)]);
    }
    vec![commits, syncs, latency]
}

pub fn to_markdown(results: &CommitResults) -> String {
    let durability = if results.durable { "" } else { " (NOT durable: no sync at all)" };
    let mut md = format!(
        "## syncbench commit: {}, {}-byte records{durability}\n\n\
         | clients | commit_delay µs | log | commits/s | 95% re-run | syncs/s | commits/sync | sync µs | p50 µs | p99 µs | p99.9 µs | max µs | steal % |\n\
         |---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        results.method_name(),
        results.record_size_bytes
    );
    for p in &results.points {
        let l = &p.latency_ns;
        md += &format!(
            "| {} | {} | {} | {:.0} | {} | {:.0} | {:.2} | {:.0} | {} | {} | {} | {} | {} |\n",
            p.clients,
            delay_cell(p),
            if p.group_commit { "group" } else { "naive" },
            p.commits_per_s,
            interval_cell(p),
            p.syncs_per_s,
            p.commits_per_sync,
            p.sync_latency_ns_mean / 1000.0,
            crate::core::units::format_us_number(l.p50),
            crate::core::units::format_us_number(l.p99),
            crate::core::units::format_us_number(l.p999),
            crate::core::units::format_us_number(l.max),
            steal_cell(p),
        );
    }
    md
}

/// The interval column of the table and the Markdown: `±N%` or the factor `×/÷ N` (never a ± above
/// 100%), `≥ (disturbed)` for a lower bound.
fn interval_cell(p: &CommitPoint) -> String {
    match estimate(p) {
        _ if p.lower_bound => "≥ (disturbed)".to_string(),
        Some(e) => e.column(),
        // Rounds recorded but fewer than three used: t(1) would give ±1000%, a number that says nothing.
        None if !p.rounds_commits_per_s.is_empty() => "n/a <3 rounds".to_string(),
        None => "—".to_string(),
    }
}

/// The steal column: the share of CPU time the hypervisor took during the point, `-` where unknown.
fn steal_cell(p: &CommitPoint) -> String {
    p.cpu_steal_pct.map_or_else(|| "-".to_string(), |s| format!("{s:.1}"))
}

/// The delay column: microseconds, and the count that ends it early when there is one.
fn delay_cell(p: &CommitPoint) -> String {
    match p.commit_delay_count {
        0 => p.commit_delay_us.to_string(),
        n => format!("{} until {n}", p.commit_delay_us),
    }
}

const CSV_HEADER: [&str; 21] = [
    "method",
    "record_size_bytes",
    "clients",
    "commit_delay_us",
    "commit_delay_count",
    "group_commit",
    "commits",
    "commits_per_s",
    "syncs_per_s",
    "commits_per_sync",
    "sync_latency_ns_mean",
    "latency_ns_p50",
    "latency_ns_p90",
    "latency_ns_p99",
    "latency_ns_p999",
    "latency_ns_max",
    "latency_ns_mean",
    "duration_s",
    "cpu_steal_pct",
    "commits_per_s_low",
    "commits_per_s_high",
];

pub fn to_csv(results: &CommitResults) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER)?;
    for p in &results.points {
        let l = &p.latency_ns;
        // The interval itself, as run's CSV has it: empty without one, the upper end empty when open
        // (a disturbed lower bound).
        let e = estimate(p);
        let end = |x: f64| if x.is_finite() { format!("{x:.1}") } else { String::new() };
        w.write_record([
            results.method_name().to_string(),
            results.record_size_bytes.to_string(),
            p.clients.to_string(),
            p.commit_delay_us.to_string(),
            p.commit_delay_count.to_string(),
            p.group_commit.to_string(),
            p.commits.to_string(),
            format!("{:.1}", p.commits_per_s),
            format!("{:.1}", p.syncs_per_s),
            format!("{:.2}", p.commits_per_sync),
            format!("{:.0}", p.sync_latency_ns_mean),
            l.p50.to_string(),
            l.p90.to_string(),
            l.p99.to_string(),
            l.p999.to_string(),
            l.max.to_string(),
            format!("{:.0}", l.mean),
            format!("{:.3}", p.duration_s),
            p.cpu_steal_pct.map(|s| format!("{s:.1}")).unwrap_or_default(),
            e.map(|e| end(e.low)).unwrap_or_default(),
            e.map(|e| end(e.high)).unwrap_or_default(),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// A point's commits/s with the interval in which a re-run is expected (the rounds' prediction interval
/// that `ci95_rel` is the wider side of); None without one, open upwards for a disturbed lower bound.
pub fn estimate(p: &CommitPoint) -> Option<crate::core::stats::Estimate> {
    let rel = p.ci95_rel?;
    let estimate = match crate::measure::rounds::prediction(&p.rounds_commits_per_s) {
        Some(i) => crate::core::stats::Estimate::new(p.commits_per_s, i.low, i.high),
        None => crate::core::stats::Estimate::from_rel(p.commits_per_s, rel),
    };
    Some(if p.lower_bound { estimate.open_upwards() } else { estimate })
}

pub fn to_table(results: &CommitResults) -> String {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    let device = results.points.iter().any(|p| p.device.is_some());
    let mut header = vec![
        "clients",
        "delay µs",
        "log",
        "commits/s",
        "95% re-run",
        "syncs/s",
        "commits/sync",
        "sync µs",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "steal %",
    ];
    if device {
        header.extend(crate::observe::blockdev::render::CELL_HEADINGS);
    }
    table.set_header(header);
    for p in &results.points {
        let l = &p.latency_ns;
        let mut row = vec![
            p.clients.to_string(),
            delay_cell(p),
            if p.group_commit { "group" } else { "naive" }.to_string(),
            format!("{:.0}", p.commits_per_s),
            interval_cell(p),
            format!("{:.0}", p.syncs_per_s),
            format!("{:.2}", p.commits_per_sync),
            format!("{:.0}", p.sync_latency_ns_mean / 1000.0),
            crate::core::units::format_us_number(l.p50),
            crate::core::units::format_us_number(l.p99),
            crate::core::units::format_us_number(l.p999),
            crate::core::units::format_us_number(l.max),
            steal_cell(p),
        ];
        if device {
            row.extend(crate::observe::blockdev::render::cells(p.device.as_ref()));
        }
        table.add_row(row);
    }
    let durability = if results.durable { "" } else { "  (NOT durable: no sync at all)" };
    let labels: Vec<String> = results.points.iter().map(point_label).collect();
    let mut notes = crate::observe::blockdev::render::notes(
        labels.iter().map(String::as_str).zip(results.points.iter().map(|p| p.device.as_ref())),
    );
    for (label, p) in labels.iter().zip(&results.points) {
        for d in &p.disturbances {
            notes += &format!("{label}: {}: {}\n", d.kind, d.detail);
        }
    }
    format!(
        "syncbench commit: method {}, {}-byte records ({} bytes in the log){durability}\n{table}\n{notes}{}",
        results.method_name(),
        results.record_size_bytes,
        results.record_log_bytes,
        flow_table(results, &labels)
    )
}

/// Where the commits went, one row per group point (means per flush; the waits per record).
fn flow_table(results: &CommitResults, labels: &[String]) -> String {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header(super::group::HEADINGS);
    let mut rows = 0;
    for (label, p) in labels.iter().zip(&results.points) {
        if let Some(flow) = &p.group {
            let mut row = vec![label.clone()];
            row.extend(flow.cells());
            table.add_row(row);
            rows += 1;
        }
    }
    if rows == 0 {
        return String::new();
    }
    format!("where the commits go (the log's group commit, docs/commit.md):\n{table}\n")
}

/// A point named in a note under the table.
fn point_label(p: &CommitPoint) -> String {
    format!("{} clients, delay {} µs, {}", p.clients, delay_cell(p), if p.group_commit { "group" } else { "naive" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_one_row_per_point_with_units_in_the_header() {
        let p = CommitPoint { clients: 2, duration_s: 2.0, cpu_steal_pct: Some(12.5), ..CommitPoint::default() };
        let csv = to_csv(&CommitResults {
            method: Some(crate::measure::commit::SyncMethod::Fdatasync),
            durable: true,
            record_size_bytes: 256,
            leader_extra_batches: 0,
            record_log_bytes: 296,
            points: vec![p],
        })
        .unwrap();
        assert_eq!(csv.lines().count(), 2);
        assert!(csv.starts_with("method,record_size_bytes,clients"));
        assert!(
            csv.lines().next().unwrap().ends_with(",duration_s,cpu_steal_pct,commits_per_s_low,commits_per_s_high")
        );
        assert!(csv.lines().nth(1).unwrap().ends_with(",2.000,12.5,,"), "{csv}");
    }

    /// Golden: the Markdown and CSV carry each point's interval as the table does — a ±, a factor past
    /// 100% (never a ± above it), open upwards for a disturbed lower bound.
    #[test]
    fn markdown_and_csv_carry_the_interval_as_a_plus_minus_or_a_factor() {
        let point = |clients, rate, rounds: Vec<f64>, lower_bound| CommitPoint {
            clients,
            group_commit: true,
            commits: 1000,
            commits_per_s: rate,
            ci95_rel: Some(0.5),
            rounds_commits_per_s: rounds,
            lower_bound,
            ..CommitPoint::default()
        };
        let results = CommitResults {
            method: Some(crate::measure::commit::SyncMethod::Fdatasync),
            durable: true,
            record_size_bytes: 256,
            points: vec![
                point(1, 115.0, vec![110.0, 120.0, 115.0], false),
                point(4, 400.0, vec![40.0, 4000.0, 400.0], false),
                point(16, 900.0, vec![800.0, 1000.0, 900.0], true),
            ],
            ..CommitResults::default()
        };
        let md = to_markdown(&results);
        let csv = to_csv(&results).unwrap();
        assert!(md.contains(" ×/÷ ") && md.contains("≥ (disturbed)"), "{md}");
        insta::assert_snapshot!("commit_markdown_intervals", md);
        insta::assert_snapshot!("commit_csv_intervals", csv);
    }

    #[test]
    fn the_interval_cell_says_when_there_were_too_few_rounds_for_one() {
        let point = |rounds: Vec<f64>, ci95_rel| CommitPoint {
            rounds_commits_per_s: rounds,
            ci95_rel,
            ..CommitPoint::default()
        };
        let table = |p: CommitPoint| {
            to_table(&CommitResults {
                method: Some(crate::measure::commit::SyncMethod::Fdatasync),
                points: vec![p],
                ..CommitResults::default()
            })
        };
        assert!(table(point(vec![100.0, 130.0], None)).contains("n/a <3 rounds"));
        let three = table(CommitPoint { commits_per_s: 115.0, ..point(vec![110.0, 120.0, 115.0], Some(0.24)) });
        assert!(three.contains(" ±24% ") && !three.contains("n/a"), "{three}");
        // A wide interval is a factor, never a ± above 100%.
        let wide = table(CommitPoint { commits_per_s: 115.0, ..point(vec![10.0, 1300.0, 115.0], Some(9.0)) });
        assert!(wide.contains(" ×/÷ ") && !wide.contains('±'), "{wide}");
        assert!(!table(point(Vec::new(), None)).contains("n/a"), "a file from before rounds: no claim about them");
    }
}
