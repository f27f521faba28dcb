//! The far tail of cases with many commits: p99.99 beside p99.9 (fio reports it for the etcd recipe, and
//! etcd's rule lives in the tail). Below [`crate::measure::runner::P9999_MIN_COMMITS`] commits it is not placed.

use crate::core::schema::CaseResult;
use std::fmt::Write;

/// The tail lines printed under the tables: one per case with a p99.99, empty when none has one.
pub fn notes(results: &[CaseResult]) -> String {
    let with: Vec<(&CaseResult, u64)> = results.iter().filter_map(|r| Some((r, r.latency_ns_p9999?))).collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out =
        format!("\ntails (cases with at least {} commits):\n", group(crate::measure::runner::P9999_MIN_COMMITS));
    for (r, p9999) in with {
        let name = format!("{} {}", r.section.name(), r.label.trim());
        let _ = writeln!(
            out,
            "  {name:<40} p99.9 {:>10}  p99.99 {:>10}  ({} commits)",
            crate::core::units::format_latency(r.latency_ns.p999),
            crate::core::units::format_latency(p9999),
            group(r.ops)
        );
    }
    out
}

/// `12,345`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cases_with_a_p9999_get_a_tail_line() {
        let mut many = CaseResult { label: "fdatasync".into(), ops: 12_345, ..CaseResult::default() };
        many.latency_ns.p999 = 1_230_000;
        many.latency_ns_p9999 = Some(3_400_000);
        let few = CaseResult { label: "fsync".into(), ops: 9_999, ..CaseResult::default() };
        let text = notes(&[many, few]);
        assert!(text.contains("tails (cases with at least 10,000 commits):"), "{text}");
        assert!(
            text.contains("fdatasync") && text.contains("p99.9     1.2 ms  p99.99     3.4 ms  (12,345 commits)"),
            "{text}"
        );
        assert!(!text.contains("fsync "), "{text}");
        assert_eq!(notes(&[CaseResult::default()]), "");
    }
}
