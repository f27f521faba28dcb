//! `--baseline RUN.json`: compare the traced program's sync latency with what `syncbench run` measured.

use super::report::{BaselineComparison, TraceReport};
use crate::core::exit::usage;
use crate::core::schema::{CaseResult, Envelope, RunPayload};
use std::path::Path;

/// The run case to compare with: section `one_write`, method `fdatasync`, preferring an 8 KiB write
/// (PostgreSQL's WAL block) when several sizes were measured.
pub fn pick_case(results: &[CaseResult]) -> Option<&CaseResult> {
    let candidates = results.iter().filter(|c| {
        c.section == crate::core::suite::Section::OneWrite
            && c.method == crate::core::method::SyncMethod::Fdatasync
            && c.supported
            && c.ops > 0
    });
    candidates.min_by_key(|c| c.write_size_bytes.abs_diff(8192))
}

/// Load the run's JSON (read as every syncbench file is); a file without the case is a usage error.
pub fn load(path: &Path) -> anyhow::Result<CaseResult> {
    let run: Envelope<RunPayload> =
        crate::core::export::read_any(path).map_err(|e| usage(format!("--baseline: {e}")))?;
    if run.payload.results.is_empty() {
        let given = crate::core::input_kind::describe(None, &run.command);
        let file = path.display().to_string();
        return Err(crate::core::input_kind::refusal(
            &file,
            &given,
            "trace --baseline",
            crate::core::input_kind::RUN_FILES,
            "",
        ));
    }
    pick_case(&run.payload.results).cloned().ok_or_else(|| {
        usage(format!(
            "--baseline {} has no measured `one_write` fdatasync case; run `syncbench run` with it included",
            path.display()
        ))
    })
}

/// Compare: the traced fdatasync if any, else the most frequent timed durability call.
pub fn compare(report: &TraceReport, file: &Path, case: &CaseResult) -> Option<BaselineComparison> {
    let timed = |c: &&super::report::CallReport| c.count > c.skipped;
    let call = report
        .calls
        .iter()
        .filter(timed)
        .find(|c| c.call == "fdatasync")
        .or_else(|| report.calls.iter().filter(timed).max_by_key(|c| c.count - c.skipped))?;
    Some(BaselineComparison {
        file: file.display().to_string(),
        case_label: format!("{} {} B, {}", case.method, case.write_size_bytes, case.file_state),
        run_p50_ns: case.latency_ns.p50,
        run_p99_ns: case.latency_ns.p99,
        traced_call: call.call.clone(),
        traced_p50_ns: call.latency_ns.p50,
        traced_p99_ns: call.latency_ns.p99,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(section: &str, method: &str, size: u64) -> CaseResult {
        CaseResult {
            section: section.parse().unwrap(),
            method: method.parse().unwrap(),
            supported: true,
            ops: 10,
            write_size_bytes: size,
            ..CaseResult::default()
        }
    }

    #[test]
    fn picks_one_write_fdatasync_nearest_8k() {
        let results = vec![
            case("one_write", "fsync", 8192),
            case("one_write", "fdatasync", 4096),
            case("one_write", "fdatasync", 8192),
        ];
        assert_eq!(pick_case(&results).map(|c| c.write_size_bytes), Some(8192));
        assert!(pick_case(&[case("two_writes", "fdatasync", 8192)]).is_none());
    }
}
