//! CSV export: one row per case, every statistic in its own column, units at the end of the names.

use crate::core::schema::CaseResult;

const HEADER: [&str; 25] = [
    "section",
    "method",
    "label",
    "durable",
    "supported",
    "error",
    "write_size_bytes",
    "writes_per_commit",
    "file_state",
    "ops",
    "ops_per_s",
    "bytes_per_s",
    "latency_ns_min",
    "latency_ns_mean",
    "latency_ns_p50",
    "latency_ns_p90",
    "latency_ns_p99",
    "latency_ns_p999",
    "latency_ns_p9999",
    "latency_ns_max",
    "latency_ns_stddev",
    "ci95_rel",
    "duration_s",
    "ops_per_s_low",
    "ops_per_s_high",
];

/// The cases as CSV.
pub fn to_csv(cases: &[CaseResult]) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER)?;
    for c in cases {
        w.write_record(row(c))?;
    }
    Ok(String::from_utf8(w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?)?)
}

fn row(c: &CaseResult) -> Vec<String> {
    let l = &c.latency_ns;
    vec![
        c.section.name().to_string(),
        c.method.name().to_string(),
        c.label.clone(),
        c.durable.to_string(),
        c.supported.to_string(),
        c.error.clone().unwrap_or_default(),
        c.write_size_bytes.to_string(),
        c.writes_per_commit.to_string(),
        c.file_state.name().to_string(),
        c.ops.to_string(),
        format!("{:.3}", c.ops_per_s),
        format!("{:.1}", c.bytes_per_s),
        l.min.to_string(),
        format!("{:.1}", l.mean),
        l.p50.to_string(),
        l.p90.to_string(),
        l.p99.to_string(),
        l.p999.to_string(),
        // Empty below 10,000 commits: the 99.99th percentile would be the slowest commit.
        c.latency_ns_p9999.map_or(String::new(), |ns| ns.to_string()),
        l.max.to_string(),
        format!("{:.1}", l.stddev),
        format!("{:.5}", c.ci95_rel),
        format!("{:.3}", c.duration_s),
        // The interval itself: ci95_rel is its wider side, and above 1 says little as a ±.
        c.ops_per_s_low.map(|x| format!("{x:.1}")).unwrap_or_default(),
        c.ops_per_s_high.map(|x| format!("{x:.1}")).unwrap_or_default(),
    ]
}
