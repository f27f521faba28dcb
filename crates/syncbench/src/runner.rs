//! Run one case: prepare the file, warm up, time each commit with a monotonic clock, stop adaptively,
//! and turn the samples into a [`CaseResult`].
//!
//! The timing loop is generic over a [`Clock`] and a [`CommitExecutor`] (hyperfine's MockExecutor idea):
//! on a disk they are `Instant` and real syscalls; with `--mock-timing SEED` a virtual clock and a
//! deterministic latency model, so exports and advice rules can be tested with realistic results and no disk.

mod clock;
mod disk;
mod mock;
mod offsets;

pub use clock::{BestClock, MonotonicClock, TscClock};
pub use disk::PreparedDir;
pub use mock::MockTiming;
pub use offsets::OffsetPlan;

use crate::schema::CaseResult;
use crate::stats::Samples;
use crate::suite::Case;
use std::io;

/// How long a case may run and when it may stop early.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunBudget {
    /// Time budget of the timed loop, in seconds.
    pub case_secs: f64,
    /// Warmup before timing, in seconds (at least one commit always runs).
    pub warmup_secs: f64,
    /// The loop never stops early before this many seconds...
    pub min_secs: f64,
    /// ...or before this many commits.
    pub min_samples: u64,
    /// Stop early once the 95% CI half-width of the mean is within this fraction of the mean.
    pub ci95_target_rel: f64,
}

impl RunBudget {
    /// Per-case budget of the default suite (96 cases in well under 60 s).
    pub const DEFAULT_CASE_SECS: f64 = 0.4;
    /// Per-case budget of `--quick` (72 cases in well under 15 s).
    pub const QUICK_CASE_SECS: f64 = 0.1;

    /// A budget of `case_secs` per case; warmup and the minimum time scale with it.
    pub fn per_case(case_secs: f64) -> RunBudget {
        RunBudget {
            case_secs,
            warmup_secs: case_secs * 0.05,
            min_secs: case_secs * 0.2,
            min_samples: 30,
            ci95_target_rel: 0.02,
        }
    }
}

/// A monotonic clock in nanoseconds.
pub trait Clock {
    /// Nanoseconds since an arbitrary fixed point.
    fn now_ns(&mut self) -> u64;
}

/// Something that runs commits one at a time.
pub trait CommitExecutor {
    /// Set up the next commit outside the timed region (compute its offsets). `false` when the file
    /// region is used up (append and fallocate never wrap).
    fn prepare_next(&mut self) -> bool;
    /// Run one commit: its writes and its sync. This is the only thing inside the timed region.
    fn commit(&mut self) -> io::Result<()>;
}

/// Why the timed loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The 95% CI of the mean was within the target.
    Converged,
    /// The time budget was spent.
    Budget,
    /// The file region was used up.
    FileFull,
}

impl StopReason {
    /// JSON name.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Converged => "converged",
            StopReason::Budget => "budget",
            StopReason::FileFull => "file_full",
        }
    }
}

/// The outcome of the timed loop.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Commit latencies.
    pub samples: Samples,
    /// Wall time of the timed loop (first commit start to last commit end), in ns.
    pub duration_ns: u64,
    /// Why it stopped.
    pub stop: StopReason,
    /// Commits run during warmup.
    pub warmup_ops: u64,
}

/// Where a measurement failed.
#[derive(Debug)]
pub enum MeasureError {
    /// The very first commit failed: the method may simply be unsupported here (EINVAL, EOPNOTSUPP).
    FirstCommit(io::Error),
    /// A later commit failed: a real error (EIO, ENOSPC); the case reports no result.
    Later(io::Error),
}

/// Warm up, then time commits until the CI target, the budget or the end of the file region.
pub fn measure<E: CommitExecutor, C: Clock>(
    exec: &mut E,
    clock: &mut C,
    budget: &RunBudget,
) -> Result<Measurement, MeasureError> {
    let warmup_ops = warm_up(exec, clock, budget)?;
    let mut samples = Samples::new();
    let start_ns = clock.now_ns();
    let deadline_ns = start_ns + secs_to_ns(budget.case_secs);
    let earliest_stop_ns = start_ns + secs_to_ns(budget.min_secs);
    // One clock read per commit: each sample runs from the previous commit's end to this one's. A second
    // read per commit would cost more (60-200 ns on this VM) than the bookkeeping it keeps out of the
    // interval (computing the next offsets and recording the previous sample: ~10-20 ns, no syscalls).
    let mut end_ns = start_ns;
    let stop = loop {
        if !exec.prepare_next() {
            break StopReason::FileFull;
        }
        exec.commit().map_err(MeasureError::Later)?;
        let now_ns = clock.now_ns();
        samples.record(now_ns - end_ns);
        end_ns = now_ns;
        if now_ns >= deadline_ns {
            break StopReason::Budget;
        }
        // The CI needs a square root: check it every 16 commits, once the minimums are met.
        if samples.count().is_multiple_of(16)
            && samples.count() >= budget.min_samples
            && now_ns >= earliest_stop_ns
            && samples.ci95_rel() <= budget.ci95_target_rel
        {
            break StopReason::Converged;
        }
    };
    Ok(Measurement { samples, duration_ns: end_ns - start_ns, stop, warmup_ops })
}

fn warm_up<E: CommitExecutor, C: Clock>(exec: &mut E, clock: &mut C, budget: &RunBudget) -> Result<u64, MeasureError> {
    let end_ns = clock.now_ns() + secs_to_ns(budget.warmup_secs);
    let mut ops = 0u64;
    while exec.prepare_next() {
        let result = exec.commit();
        result.map_err(|e| if ops == 0 { MeasureError::FirstCommit(e) } else { MeasureError::Later(e) })?;
        ops += 1;
        if clock.now_ns() >= end_ns {
            break;
        }
    }
    Ok(ops)
}

fn secs_to_ns(secs: f64) -> u64 {
    (secs * 1e9) as u64
}

/// Where cases run.
pub enum Target<'a> {
    /// A real directory with its prepared overwrite file.
    Disk(&'a PreparedDir),
    /// The deterministic latency model (no I/O).
    Mock(MockTiming),
}

/// Measure one case. Never panics on I/O: an unsupported method gives `supported: false` with the reason,
/// a failure while running gives `supported: true` with `error` set and no ops.
pub fn run_case(case: &Case, budget: &RunBudget, target: &Target<'_>) -> CaseResult {
    let outcome = match target {
        Target::Disk(dir) => disk::run(case, budget, dir),
        Target::Mock(mock) => Ok(mock.run(case, budget)),
    };
    match outcome {
        Ok(m) => result_from(case, &m),
        Err(failure) => failed_result(case, failure),
    }
}

/// Why a case produced no numbers.
#[derive(Debug, PartialEq, Eq)]
pub enum CaseFailure {
    /// The platform or file system refused the method: errno name and a plain sentence.
    Unsupported(String),
    /// The method was set up but failed while running (errno name and what failed).
    Failed(String),
}

/// A result with identification only: the case did not produce numbers.
fn empty_result(case: &Case) -> CaseResult {
    CaseResult {
        section: case.section.name().to_string(),
        method: case.method.name().to_string(),
        label: case.label.clone(),
        durable: case.method.durable(),
        supported: true,
        write_size_bytes: case.write_size_bytes,
        writes_per_commit: case.writes_per_commit,
        file_state: case.file_state.name().to_string(),
        ..CaseResult::default()
    }
}

fn failed_result(case: &Case, failure: CaseFailure) -> CaseResult {
    let (supported, error) = match failure {
        CaseFailure::Unsupported(why) => (false, why),
        CaseFailure::Failed(why) => (true, why),
    };
    CaseResult { supported, error: Some(error), ..empty_result(case) }
}

/// Turn a measurement into the reported numbers.
pub fn result_from(case: &Case, m: &Measurement) -> CaseResult {
    let ops = m.samples.count();
    let duration_s = m.duration_ns as f64 / 1e9;
    let ops_per_s = if duration_s > 0.0 { ops as f64 / duration_s } else { 0.0 };
    let ci = m.samples.ci95_rel();
    CaseResult {
        ops,
        ops_per_s,
        bytes_per_s: ops_per_s * case.bytes_per_commit() as f64,
        latency_ns: m.samples.latency(),
        // Fewer than two commits: no interval can be computed; report ±100% rather than a fake precision.
        ci95_rel: if ci.is_finite() { ci } else { 1.0 },
        duration_s,
        outlier_fraction: m.samples.outlier_fraction(),
        histogram_log2: m.samples.log2_buckets(),
        stop_reason: m.stop.name().to_string(),
        warmup_ops: m.warmup_ops,
        ..empty_result(case)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A fake disk: each commit takes `latency_ns` of virtual time, and fails at commit `fail_at`.
    struct Fake {
        now: Rc<Cell<u64>>,
        latency_ns: u64,
        commits: u64,
        fail_at: Option<u64>,
        capacity: Option<u64>,
    }

    impl CommitExecutor for Fake {
        fn prepare_next(&mut self) -> bool {
            self.capacity.is_none_or(|c| self.commits < c)
        }
        fn commit(&mut self) -> io::Result<()> {
            self.commits += 1;
            if self.fail_at == Some(self.commits) {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            // Alternate ±10% so the CI narrows as commits accumulate.
            let jitter = if self.commits.is_multiple_of(2) { self.latency_ns / 10 } else { 0 };
            self.now.set(self.now.get() + self.latency_ns + jitter);
            Ok(())
        }
    }

    struct FakeClock(Rc<Cell<u64>>);
    impl Clock for FakeClock {
        fn now_ns(&mut self) -> u64 {
            self.0.get()
        }
    }

    fn fake(latency_ns: u64) -> (Fake, FakeClock) {
        let now = Rc::new(Cell::new(0));
        (Fake { now: now.clone(), latency_ns, commits: 0, fail_at: None, capacity: None }, FakeClock(now))
    }

    #[test]
    fn stable_latencies_converge_early() {
        let (mut exec, mut clock) = fake(100_000);
        let m = measure(&mut exec, &mut clock, &RunBudget::per_case(10.0)).unwrap();
        assert_eq!(m.stop, StopReason::Converged);
        // Not before the minimum time (2 s of virtual time at ~105 µs per commit).
        assert!(m.duration_ns >= 2_000_000_000 && m.duration_ns < 2_100_000_000, "{}", m.duration_ns);
        assert!(m.samples.ci95_rel() <= 0.02);
        assert!(m.warmup_ops > 0);
    }

    #[test]
    fn slow_commits_stop_at_the_budget() {
        let (mut exec, mut clock) = fake(300_000_000);
        let m = measure(&mut exec, &mut clock, &RunBudget::per_case(1.0)).unwrap();
        assert_eq!(m.stop, StopReason::Budget);
        assert!(m.samples.count() <= 4, "{}", m.samples.count());
    }

    #[test]
    fn a_full_file_ends_the_case() {
        let (mut exec, mut clock) = fake(1000);
        exec.capacity = Some(50);
        let m = measure(&mut exec, &mut clock, &RunBudget::per_case(10.0)).unwrap();
        assert_eq!(m.stop, StopReason::FileFull);
        assert_eq!(m.samples.count() + m.warmup_ops, 50);
    }

    #[test]
    fn first_commit_error_is_distinguished_from_a_later_one() {
        let (mut exec, mut clock) = fake(1000);
        exec.fail_at = Some(1);
        assert!(matches!(measure(&mut exec, &mut clock, &RunBudget::per_case(1.0)), Err(MeasureError::FirstCommit(_))));
        let (mut exec, mut clock) = fake(1000);
        exec.fail_at = Some(5000);
        assert!(matches!(measure(&mut exec, &mut clock, &RunBudget::per_case(1.0)), Err(MeasureError::Later(_))));
    }

    #[test]
    fn results_carry_rates_and_identity() {
        let (mut exec, mut clock) = fake(1_000_000);
        let m = measure(&mut exec, &mut clock, &RunBudget::per_case(0.5)).unwrap();
        let case = Case { writes_per_commit: 2, ..Case::one_write(crate::method::SyncMethod::Fsync, 8192) };
        let r = result_from(&case, &m);
        assert_eq!((r.method.as_str(), r.section.as_str(), r.file_state.as_str()), ("fsync", "one_write", "overwrite"));
        assert!(r.supported && r.durable && r.error.is_none());
        assert_eq!(r.ops, m.samples.count());
        let expected_ops_per_s = r.ops as f64 / r.duration_s;
        assert!((r.ops_per_s - expected_ops_per_s).abs() < 1e-9);
        assert!((r.bytes_per_s - r.ops_per_s * 16384.0).abs() < 1e-6);
        assert_eq!(r.histogram_log2.iter().map(|b| b.count).sum::<u64>(), r.ops);
    }
}
