//! Matching cases across files by what was measured, not by position or label.

use crate::core::method::SyncMethod;
use crate::core::schema::CaseResult;
use crate::core::suite::{FileState, Section};
use crate::present::report::input::RunFile;
use serde::Serialize;

/// What makes two cases comparable: the same section, method, write size, writes per commit and file state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct CaseKey {
    /// Suite section.
    pub section: Section,
    /// Sync method.
    pub method: SyncMethod,
    /// Bytes per write.
    pub write_size_bytes: u64,
    /// Writes per commit.
    pub writes_per_commit: u32,
    /// The file's state before the timed writes.
    pub file_state: FileState,
    /// 0 for the first case with these fields in a file, 1 for a second one, …; pairs the n-th with the n-th.
    #[serde(skip_serializing_if = "is_zero")]
    pub repeat: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One file's side of a joined case.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cell {
    /// Whether the file has this case at all.
    pub present: bool,
    /// Commits per second, when measured.
    pub ops_per_s: Option<f64>,
    /// Relative half-width of the 95% interval of the mean.
    pub ci95_rel: Option<f64>,
    /// Median commit latency.
    pub latency_ns_p50: Option<u64>,
    /// 99th percentile commit latency.
    pub latency_ns_p99: Option<u64>,
    /// Why there is no value: unsupported, an error, or not in the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The case measured a disturbed disk: `ops_per_s` bounds the undisturbed rate from below.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// The case's latency regimes, when its commits switched between two (run's `regimes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regimes: Option<crate::core::schema::regimes::Regimes>,
}

impl Cell {
    fn of(case: Option<&CaseResult>) -> Cell {
        let Some(case) = case else {
            return Cell { note: Some("not in this file".into()), ..Cell::default() };
        };
        if crate::present::report::figures::measured(case) {
            Cell {
                present: true,
                ops_per_s: Some(case.ops_per_s),
                ci95_rel: Some(case.ci95_rel),
                latency_ns_p50: Some(case.latency_ns.p50),
                latency_ns_p99: Some(case.latency_ns.p99),
                note: None,
                lower_bound: case.lower_bound,
                regimes: case.regimes.clone(),
            }
        } else {
            Cell { present: true, note: Some(crate::present::report::figures::missing_note(case)), ..Cell::default() }
        }
    }
}

/// A case and its cell in every file (in the order the files were given).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JoinedCase {
    /// What was measured.
    pub key: CaseKey,
    /// The label of the first file that has it.
    pub label: String,
    /// Durable when the call returns (from the first file that has it).
    pub durable: bool,
    /// One cell per file.
    pub cells: Vec<Cell>,
}

/// The key of every case of a file, numbering repeats of the same key.
fn keyed(results: &[CaseResult]) -> Vec<(CaseKey, &CaseResult)> {
    let mut out: Vec<(CaseKey, &CaseResult)> = Vec::new();
    for case in results {
        let mut key = CaseKey {
            section: case.section,
            method: case.method,
            write_size_bytes: case.write_size_bytes,
            writes_per_commit: case.writes_per_commit,
            file_state: case.file_state,
            repeat: 0,
        };
        key.repeat = out.iter().filter(|(k, _)| CaseKey { repeat: 0, ..k.clone() } == key).count() as u32;
        out.push((key, case));
    }
    out
}

/// Every case of every file, joined by key, in first-seen order (the first file's order first).
pub fn join(runs: &[RunFile]) -> Vec<JoinedCase> {
    let keyed_runs: Vec<Vec<(CaseKey, &CaseResult)>> = runs.iter().map(|r| keyed(&r.results)).collect();
    let mut order: Vec<(CaseKey, &CaseResult)> = Vec::new();
    for run in &keyed_runs {
        for (key, case) in run {
            if !order.iter().any(|(k, _)| k == key) {
                order.push((key.clone(), case));
            }
        }
    }
    order
        .into_iter()
        .map(|(key, first)| JoinedCase {
            cells: keyed_runs
                .iter()
                .map(|run| Cell::of(run.iter().find(|(k, _)| *k == key).map(|(_, c)| *c)))
                .collect(),
            label: first.label.clone(),
            durable: first.durable,
            key,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(method: &str, size: u64, ops: f64) -> CaseResult {
        CaseResult {
            section: crate::core::suite::Section::OneWrite,
            method: method.parse().unwrap(),
            write_size_bytes: size,
            writes_per_commit: 1,
            file_state: crate::core::suite::FileState::Overwrite,
            supported: true,
            durable: true,
            ops_per_s: ops,
            ..CaseResult::default()
        }
    }

    fn run(results: Vec<CaseResult>) -> RunFile {
        RunFile { results, ..RunFile::default() }
    }

    #[test]
    fn cases_join_by_key_not_by_position() {
        let a = run(vec![case("fsync", 8192, 100.0), case("fdatasync", 8192, 200.0)]);
        let b = run(vec![case("fdatasync", 8192, 210.0), case("fsync", 8192, 90.0)]);
        let joined = join(&[a, b]);
        assert_eq!(joined.len(), 2);
        assert_eq!(joined[0].key.method, SyncMethod::Fsync);
        assert_eq!(joined[0].cells[1].ops_per_s, Some(90.0));
        assert_eq!(joined[1].cells[1].ops_per_s, Some(210.0));
    }

    #[test]
    fn a_different_write_size_is_a_different_case() {
        let joined = join(&[run(vec![case("fsync", 8192, 1.0)]), run(vec![case("fsync", 4096, 1.0)])]);
        assert_eq!(joined.len(), 2);
        assert!(!joined[0].cells[1].present);
        assert_eq!(joined[0].cells[1].note.as_deref(), Some("not in this file"));
    }

    #[test]
    fn repeated_keys_pair_in_order() {
        let a = run(vec![case("fsync", 8192, 1.0), case("fsync", 8192, 2.0)]);
        let b = run(vec![case("fsync", 8192, 3.0), case("fsync", 8192, 4.0)]);
        let joined = join(&[a, b]);
        assert_eq!(joined.len(), 2);
        assert_eq!(joined[1].key.repeat, 1);
        assert_eq!((joined[1].cells[0].ops_per_s, joined[1].cells[1].ops_per_s), (Some(2.0), Some(4.0)));
    }

    #[test]
    fn unsupported_cases_are_present_with_a_note() {
        let mut unsupported = case("direct", 8192, 0.0);
        unsupported.supported = false;
        unsupported.error = Some("EINVAL: no O_DIRECT on tmpfs".into());
        let joined = join(&[run(vec![case("direct", 8192, 10.0)]), run(vec![unsupported])]);
        assert!(joined[0].cells[1].present);
        assert_eq!(joined[0].cells[1].ops_per_s, None);
        assert!(joined[0].cells[1].note.as_deref().unwrap().contains("EINVAL"));
    }
}
