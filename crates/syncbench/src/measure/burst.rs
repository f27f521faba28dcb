//! A quick fdatasync burst, so the plausibility rule has a measurement when `probe` runs alone.
//!
//! It is one case of `run`'s suite, run by `run`'s runner: 8 KiB overwrites of a pre-written,
//! already-durable file (what a recycled WAL segment costs), each followed by fdatasync, for the whole
//! duration (no early stop: the rules look at the spread, not just the mean). A failed write or sync is an
//! error, never a fast result.

use crate::core::method::SyncMethod;
use crate::core::schema::CaseResult;
use crate::core::suite::Case;
use crate::measure::runner::{PreparedDir, RunBudget, Target, run_case};
use std::path::Path;
use std::time::Duration;

/// Bytes per write: a PostgreSQL WAL page.
pub const WRITE_SIZE_BYTES: u64 = 8192;
/// The burst cycles through this much of a pre-written file (overwrites only, no allocation).
const FILE_SIZE_BYTES: u64 = 2 << 20;

/// Why a burst did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum BurstError {
    /// The burst file could not be created or filled (read-only file system, no permission, no space):
    /// nothing was measured.
    #[error("cannot prepare a burst file in {dir}: {source}")]
    Prepare {
        /// The directory.
        dir: String,
        /// Why.
        source: std::io::Error,
    },
    /// A sync, or a write between syncs, failed: the storage reported an error.
    #[error("{0}")]
    Failed(String),
}

/// Time 8 KiB write + fdatasync commits on a new `.syncbench-run-*` file in `dir` for about `duration`.
pub fn fdatasync_burst(dir: &Path, duration: Duration) -> Result<CaseResult, BurstError> {
    let prepared = PreparedDir::prepare(dir, FILE_SIZE_BYTES, "").map_err(|source| classify(dir, source))?;
    let case = Case::one_write(SyncMethod::Fdatasync, WRITE_SIZE_BYTES);
    let result = run_case(&case, &budget(duration), &Target::Disk(&prepared));
    match &result.error {
        None => Ok(result),
        Some(error) => Err(BurstError::Failed(error.clone())),
    }
}

/// The whole `duration`, after a short warmup: the CI target of 0 never stops the loop early.
fn budget(duration: Duration) -> RunBudget {
    let secs = duration.as_secs_f64();
    RunBudget {
        case_secs: secs,
        warmup_secs: (secs * 0.05).min(0.05),
        min_secs: secs,
        min_samples: 0,
        ci95_target_rel: 0.0,
        max_samples: u64::MAX,
    }
}

/// Space and permission problems mean "cannot measure here"; anything else while preparing (EIO from the
/// preparation's fsync) is a storage error.
fn classify(dir: &Path, source: std::io::Error) -> BurstError {
    let skippable = [libc::EROFS, libc::EACCES, libc::EPERM, libc::ENOSPC, libc::EDQUOT, libc::EEXIST];
    match source.raw_os_error() {
        Some(errno) if skippable.contains(&errno) => BurstError::Prepare { dir: dir.display().to_string(), source },
        _ => BurstError::Failed(format!("preparing the burst file in {}: {source}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_on_a_real_dir_counts_commits_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let r = fdatasync_burst(dir.path(), Duration::from_millis(50)).unwrap();
        assert_eq!((r.method.name(), r.section.name(), r.file_state.name()), ("fdatasync", "one_write", "overwrite"));
        assert!(r.ops > 0 && r.ops_per_s > 0.0);
        assert_eq!(r.histogram_log2.iter().map(|b| b.count).sum::<u64>(), r.ops);
        assert!(r.latency_ns.min <= r.latency_ns.p50 && r.latency_ns.p50 <= r.latency_ns.max);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "burst file left behind");
    }

    #[test]
    fn burst_in_a_missing_dir_is_skipped_not_failed() {
        let dir = tempfile::tempdir().unwrap();
        let err = fdatasync_burst(&dir.path().join("absent"), Duration::from_millis(10)).unwrap_err();
        // ENOENT is not in the skippable list: a directory that vanished is reported, not hidden.
        assert!(matches!(err, BurstError::Failed(_)), "{err}");
    }

    #[test]
    fn permission_and_space_errors_are_skips() {
        let dir = Path::new("/d");
        for errno in [libc::EROFS, libc::EACCES, libc::ENOSPC] {
            let err = classify(dir, std::io::Error::from_raw_os_error(errno));
            assert!(matches!(err, BurstError::Prepare { .. }), "{err}");
        }
        assert!(matches!(classify(dir, std::io::Error::from_raw_os_error(libc::EIO)), BurstError::Failed(_)));
    }

    #[test]
    fn the_burst_runs_its_whole_duration_even_once_the_mean_is_known() {
        // On the mock's virtual clock (deterministic): run's ordinary budget stops this case as soon as the
        // mean is known; the burst's must not, because the rules read the spread over the whole burst.
        let case = Case::one_write(SyncMethod::Fdatasync, WRITE_SIZE_BYTES);
        let mock = Target::Mock(crate::measure::runner::MockTiming { seed: 1 });
        let ordinary = run_case(&case, &RunBudget::per_case(2.0), &mock);
        assert_eq!(
            ordinary.stop_reason,
            Some(crate::core::schema::StopReason::Converged),
            "the check below needs a case that converges early"
        );
        let burst = run_case(&case, &budget(Duration::from_secs(2)), &mock);
        assert_eq!(burst.stop_reason, Some(crate::core::schema::StopReason::Budget));
        assert!(burst.duration_s >= 2.0 && burst.ops > ordinary.ops, "{} s, {} ops", burst.duration_s, burst.ops);
    }
}
