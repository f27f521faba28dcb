//! The terminal table: one block per section like pg_test_fsync's, the fastest durable method of each
//! section marked, not-durable methods visibly marked, and optional log2 histograms like DTrace's quantize.

use crate::schema::{CaseResult, Log2Bucket};
use crate::suite::Section;
use std::fmt::Write;

/// Marker of the fastest durable case in a section.
pub const FASTEST_MARK: &str = "<- fastest durable";
/// Marker of a case whose commits are not durable.
pub const NOT_DURABLE_MARK: &str = "NOT DURABLE";

/// Render every section present in `results`, in order. `size_bytes` is the write size in the headings.
pub fn render(results: &[CaseResult], size_bytes: u64, histogram: bool) -> String {
    let mut out = String::new();
    let mut sections: Vec<&str> = Vec::new();
    for r in results {
        if !sections.contains(&r.section.as_str()) {
            sections.push(&r.section);
        }
    }
    for name in sections {
        let cases: Vec<&CaseResult> = results.iter().filter(|r| r.section == name).collect();
        render_section(&mut out, name, &cases, size_bytes, histogram);
    }
    out
}

fn render_section(out: &mut String, name: &str, cases: &[&CaseResult], size_bytes: u64, histogram: bool) {
    let heading = match Section::parse(name) {
        Some(s) => format!("({}) {}", s.letter(), s.title(size_bytes)),
        None => name.to_string(),
    };
    let _ = writeln!(out, "\n{heading}:");
    let width = cases.iter().map(|c| c.label.chars().count()).max().unwrap_or(0).max(20);
    let _ = writeln!(
        out,
        "  {:<width$} {:>12} {:>10} {:>10} {:>10} {:>10} {:>7}",
        "", "ops/s", "mean µs", "p50 µs", "p99 µs", "max µs", "±95%"
    );
    let fastest = fastest_durable(cases);
    for (i, c) in cases.iter().enumerate() {
        let _ = writeln!(out, "  {}", case_line(c, width, fastest == Some(i)));
        if histogram && c.ops > 0 {
            out.push_str(&quantize(&c.histogram_log2));
        }
    }
}

/// Index of the durable, measured case with the highest ops/s.
pub fn fastest_durable(cases: &[&CaseResult]) -> Option<usize> {
    cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.durable && c.supported && c.error.is_none() && c.ops > 0)
        .max_by(|(_, a), (_, b)| a.ops_per_s.total_cmp(&b.ops_per_s))
        .map(|(i, _)| i)
}

fn case_line(c: &CaseResult, width: usize, fastest: bool) -> String {
    let label = format!("{:<width$}", c.label);
    if let Some(error) = &c.error {
        let what = if c.supported { "failed" } else { "n/a" };
        return format!("{label} {what:>12}   {error}");
    }
    let us = |ns: f64| format!("{:.1}", ns / 1000.0);
    let l = &c.latency_ns;
    let mark = match (c.durable, fastest) {
        (false, _) => format!("  {NOT_DURABLE_MARK}"),
        (true, true) => format!("  {FASTEST_MARK}"),
        _ => String::new(),
    };
    format!(
        "{label} {:>12.1} {:>10} {:>10} {:>10} {:>10} {:>6.1}%{mark}",
        c.ops_per_s,
        us(l.mean),
        us(l.p50 as f64),
        us(l.p99 as f64),
        us(l.max as f64),
        c.ci95_rel * 100.0
    )
}

/// DTrace-quantize-style histogram: one row per power of two, empty rows inside the range shown as 0,
/// one empty row before and after.
pub fn quantize(buckets: &[Log2Bucket]) -> String {
    let Some(total) = Some(buckets.iter().map(|b| b.count).sum::<u64>()).filter(|t| *t > 0) else {
        return String::new();
    };
    let index = |b: &Log2Bucket| if b.lower_ns == 0 { 0 } else { b.lower_ns.trailing_zeros() };
    let first = buckets.iter().map(index).min().unwrap_or(0).saturating_sub(1);
    let last = (buckets.iter().map(index).max().unwrap_or(0) + 1).min(63);
    let mut out = format!("      {:>16}  {:-^42} count\n", "value (ns)", " Distribution ");
    for i in first..=last {
        let lower = if i == 0 { 0 } else { 1u64 << i };
        let count = buckets.iter().find(|b| index(b) == i).map_or(0, |b| b.count);
        let bar = ((count as f64 / total as f64) * 40.0).round() as usize;
        let _ = writeln!(out, "      {lower:>16} |{:<40} {count}", "@".repeat(bar));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(label: &str, durable: bool, ops_per_s: f64) -> CaseResult {
        CaseResult {
            section: "one_write".into(),
            method: label.into(),
            label: label.into(),
            durable,
            supported: true,
            ops: 10,
            ops_per_s,
            ..CaseResult::default()
        }
    }

    #[test]
    fn marks_fastest_durable_and_not_durable() {
        let results = vec![
            case("fdatasync", true, 5000.0),
            case("fsync", true, 4000.0),
            case("write", false, 900_000.0),
            CaseResult {
                supported: false,
                error: Some("EINVAL: O_DIRECT is not supported by tmpfs".into()),
                ..case("open_sync+direct", true, 0.0)
            },
        ];
        let text = render(&results, 8192, false);
        let line = |name: &str| text.lines().find(|l| l.trim_start().starts_with(name)).unwrap().to_string();
        assert!(text.contains("(a) Compare sync methods using one 8 KiB write per commit:"), "{text}");
        assert!(line("fdatasync").ends_with(FASTEST_MARK));
        assert!(!line("fsync").contains(FASTEST_MARK));
        assert!(line("write").ends_with(NOT_DURABLE_MARK));
        assert!(line("open_sync+direct").contains("n/a   EINVAL: O_DIRECT is not supported by tmpfs"));
    }

    #[test]
    fn failed_cases_are_never_fastest() {
        let results =
            [CaseResult { error: Some("EIO".into()), ..case("fsync", true, 1e9) }, case("fdatasync", true, 1.0)];
        let refs: Vec<&CaseResult> = results.iter().collect();
        assert_eq!(fastest_durable(&refs), Some(1));
    }

    #[test]
    fn quantize_fills_gaps_and_pads() {
        let text = quantize(&[Log2Bucket { lower_ns: 1024, count: 3 }, Log2Bucket { lower_ns: 4096, count: 1 }]);
        let rows: Vec<(u64, u64)> = text
            .lines()
            .skip(1)
            .map(|l| {
                let (value, rest) = l.split_once('|').unwrap();
                (value.trim().parse().unwrap(), rest.split_whitespace().last().unwrap().parse().unwrap())
            })
            .collect();
        assert_eq!(rows, vec![(512, 0), (1024, 3), (2048, 0), (4096, 1), (8192, 0)]);
        assert!(text.contains(&format!("|{}", "@".repeat(30))));
        assert!(quantize(&[]).is_empty());
    }
}
