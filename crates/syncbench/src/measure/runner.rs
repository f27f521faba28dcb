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
pub use disk::{PreparedDir, prepare_run_file};
pub use mock::MockTiming;
pub use offsets::OffsetPlan;

use crate::core::schema::CaseResult;
use crate::core::stats::Samples;
use crate::core::suite::Case;
use crate::measure::rounds::{Measurement, Pooled, StopReason};
use crate::observe::blockdev::account::{DeviceAccounting, Recorded};
use crate::observe::blockdev::foreign::OurWork;
use crate::observe::disturbance::{CaseDisturbance, Monitor};
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
    /// Timed commits at most (and a tenth of it for the warmup): bounds what a case writes (`watch`).
    pub max_samples: u64,
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
            max_samples: u64::MAX,
        }
    }
}

impl RunBudget {
    /// One round's share of this budget when a case runs in `rounds` rounds: the times divided, the
    /// minimum sample count too (at least 10, so a round's own interval means something).
    pub fn per_round(&self, rounds: u32) -> RunBudget {
        let r = f64::from(rounds.max(1));
        RunBudget {
            case_secs: self.case_secs / r,
            warmup_secs: self.warmup_secs / r,
            min_secs: self.min_secs / r,
            min_samples: (self.min_samples / u64::from(rounds.max(1))).max(10),
            ci95_target_rel: self.ci95_target_rel,
            max_samples: match self.max_samples {
                u64::MAX => u64::MAX,
                max => (max / u64::from(rounds.max(1))).max(1),
            },
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

/// Where a measurement failed.
#[derive(Debug)]
pub enum MeasureError {
    /// The very first commit failed: the method may simply be unsupported here (EINVAL, EOPNOTSUPP).
    FirstCommit(io::Error),
    /// A later commit failed: a real error (EIO, ENOSPC); the case reports no result.
    Later(io::Error),
}

/// What runs at the edges of the timed loop, outside it: device accounting reads its counters there.
pub trait LoopEdges {
    /// Right before the first timed commit (after the warmup).
    fn started(&mut self);
    /// Right after the last timed commit, with the number of timed commits.
    fn ended(&mut self, commits: u64);
}

/// Nothing at the edges.
pub struct NoEdges;

impl LoopEdges for NoEdges {
    fn started(&mut self) {}
    fn ended(&mut self, _commits: u64) {}
}

/// Warm up, then time commits until the CI target, the budget or the end of the file region.
pub fn measure<E: CommitExecutor, C: Clock>(
    exec: &mut E,
    clock: &mut C,
    budget: &RunBudget,
) -> Result<Measurement, MeasureError> {
    measure_with_edges(exec, clock, budget, &mut NoEdges)
}

/// [`measure`] with `edges` called right before the first timed commit and right after the last.
pub fn measure_with_edges<E: CommitExecutor, C: Clock>(
    exec: &mut E,
    clock: &mut C,
    budget: &RunBudget,
    edges: &mut dyn LoopEdges,
) -> Result<Measurement, MeasureError> {
    let warmup_ops = warm_up(exec, clock, budget)?;
    edges.started();
    let mut samples = Samples::new();
    let mut latencies_ns = crate::measure::series::reserve(warmup_ops, budget.warmup_secs, budget.case_secs);
    let started_ns = crate::measure::series::run_axis_ns();
    let start_ns = clock.now_ns();
    let deadline_ns = start_ns + secs_to_ns(budget.case_secs);
    let earliest_stop_ns = start_ns + secs_to_ns(budget.min_secs);
    // One clock read per commit: each sample runs from the previous commit's end to this one's. A second
    // read per commit would cost more (60-200 ns on this VM) than the bookkeeping it keeps out of the
    // interval (computing the next offsets and recording the previous sample: ~10-20 ns, no syscalls).
    let mut end_ns = start_ns;
    // Every 16th commit's (count, elapsed ns): a few hundred entries at most per round.
    let mut checkpoints: Vec<(u64, u64)> = Vec::new();
    let stop = loop {
        if !exec.prepare_next() {
            break StopReason::FileFull;
        }
        exec.commit().map_err(MeasureError::Later)?;
        let now_ns = clock.now_ns();
        samples.record(now_ns - end_ns);
        if latencies_ns.len() < crate::measure::series::MAX_SERIES_COMMITS {
            latencies_ns.push(now_ns - end_ns);
        }
        end_ns = now_ns;
        if now_ns >= deadline_ns || samples.count() >= budget.max_samples {
            break StopReason::Budget;
        }
        if samples.count().is_multiple_of(16) {
            checkpoints.push((samples.count(), now_ns - start_ns));
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
    edges.ended(samples.count());
    let halves = split_halves(&checkpoints, samples.count(), end_ns - start_ns);
    let windows = crate::measure::series::windows(&latencies_ns, 0);
    Ok(Measurement { samples, duration_ns: end_ns - start_ns, stop, warmup_ops, halves, started_ns, windows })
}

/// The checkpoint nearest half the duration splits the loop into two halves of (commits, ns); with no
/// checkpoint inside the loop, everything is the first half.
fn split_halves(checkpoints: &[(u64, u64)], ops: u64, duration_ns: u64) -> [(u64, u64); 2] {
    let half_ns = duration_ns / 2;
    let split = checkpoints
        .iter()
        .filter(|(n, t)| *n < ops && *t < duration_ns)
        .min_by_key(|(_, t)| t.abs_diff(half_ns))
        .copied()
        .unwrap_or((ops, duration_ns));
    [split, (ops - split.0, duration_ns - split.1)]
}

fn warm_up<E: CommitExecutor, C: Clock>(exec: &mut E, clock: &mut C, budget: &RunBudget) -> Result<u64, MeasureError> {
    let end_ns = clock.now_ns() + secs_to_ns(budget.warmup_secs);
    let mut ops = 0u64;
    while exec.prepare_next() {
        let result = exec.commit();
        result.map_err(|e| if ops == 0 { MeasureError::FirstCommit(e) } else { MeasureError::Later(e) })?;
        ops += 1;
        if clock.now_ns() >= end_ns || ops >= budget.max_samples.div_ceil(10) {
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
        Target::Mock(mock) => Ok((mock.run(case, budget), None)),
    };
    match outcome {
        Ok((m, device)) => CaseResult { device: device.map(|d| d.report()), ..result_from(case, &m) },
        Err(failure) => failed_result(case, failure),
    }
}

/// Measure one round of a case, with what it cost the devices on a disk. The mock gives every round its
/// own seed, deterministically.
fn measure_round(
    case: &Case,
    budget: &RunBudget,
    target: &Target<'_>,
    round: u32,
) -> Result<(Measurement, Option<Recorded>), CaseFailure> {
    match target {
        Target::Disk(dir) => disk::run(case, budget, dir),
        Target::Mock(mock) => {
            let seed = mock.seed ^ u64::from(round).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            Ok((MockTiming { seed }.run(case, budget), None))
        }
    }
}

/// Where a plan stands after one round of one case.
pub struct Progress<'a> {
    /// Case-rounds finished, of `total`.
    pub done: usize,
    /// Case-rounds in the plan.
    pub total: usize,
    /// The case that just ran a round, and its index in the plan.
    pub case: &'a Case,
    /// Index of `case` in the plan (and in `results`).
    pub index: usize,
    /// Every case's result so far, from the rounds it finished (`None` before its first).
    pub results: &'a [Option<CaseResult>],
}

/// A case being measured round by round.
#[derive(Default)]
struct CaseRounds {
    rounds: Vec<Measurement>,
    disturbance: CaseDisturbance,
    /// Each round's device counts (`None` where none were read), in round order.
    devices: Vec<Option<Recorded>>,
    /// A refused or failed round decides the case: a failed sync is never averaged away.
    failed: Option<CaseResult>,
}

/// Measure every case in short rounds, each case's `budget` split over `schedule.rounds`, the cases in a
/// new order every round (see [`crate::measure::rounds`]); on a disk, more rounds of the same size follow until the
/// schedule's spread has passed. `monitor` watches the device and CPU steal on real runs; `observe` sees
/// the results after every case-round (progress, and what Ctrl-C exports).
pub fn run_plan(
    cases: &[Case],
    schedule: crate::measure::rounds::Schedule,
    budget: &RunBudget,
    target: &Target<'_>,
    monitor: Option<&Monitor>,
    observe: &mut dyn FnMut(Progress<'_>),
) -> Vec<CaseResult> {
    // The mock has no phases to spread over, and its output must not depend on the machine's speed.
    let schedule = match target {
        Target::Disk(_) => schedule,
        Target::Mock(_) => crate::measure::rounds::Schedule::fixed(schedule.rounds),
    };
    let round_budget = budget.per_round(schedule.rounds.max(1));
    let mut state: Vec<CaseRounds> = cases.iter().map(|_| CaseRounds::default()).collect();
    let mut results: Vec<Option<CaseResult>> = vec![None; cases.len()];
    let mut done = 0;
    let started = std::time::Instant::now();
    let mut round = 0;
    // The mock's rounds sit one after another on a virtual time axis, so its windows are deterministic.
    let mut virtual_ns = 0u64;
    while schedule.runs_round(round, started.elapsed().as_secs_f64()) {
        let total = cases.len() * schedule.rounds.max(round + 1) as usize;
        for i in crate::measure::rounds::order(cases.len(), round) {
            let (case, st) = (&cases[i], &mut state[i]);
            done += 1;
            if st.failed.is_none() {
                let window = monitor.map(Monitor::start);
                match measure_round(case, &round_budget, target, round) {
                    Ok((mut m, device)) => {
                        if matches!(target, Target::Mock(_)) {
                            m.started_ns = virtual_ns;
                            virtual_ns += m.duration_ns;
                        }
                        if let (Some(mon), Some(w)) = (monitor, window) {
                            let commits = m.samples.count() + m.warmup_ops;
                            let ours = our_work(case, commits, target);
                            mon.finish(w, ours, round as usize + 1, &mut st.disturbance);
                        }
                        st.rounds.push(m);
                        st.devices.push(device);
                    }
                    Err(failure) => st.failed = Some(failed_result(case, failure)),
                }
                results[i] = Some(match &st.failed {
                    Some(f) => f.clone(),
                    None => CaseResult {
                        device: device_of_rounds(&st.devices, &RoundChoice::of(st.rounds.len(), &st.disturbance)),
                        ..result_from_rounds(case, &st.rounds, &st.disturbance)
                    },
                });
            }
            observe(Progress { done, total, case, index: i, results: &results });
        }
        round += 1;
    }
    results.into_iter().zip(cases).map(|(r, case)| r.unwrap_or_else(|| empty_result(case))).collect()
}

/// What a round of `case` that ran `commits` commits asked of the device. A method that does not sync
/// leaves its writes for the kernel's writeback (or the case's closing fsync): as much as the file region
/// it cycles through, whatever the number of commits.
fn our_work(case: &Case, commits: u64, target: &Target<'_>) -> OurWork {
    let bytes = commits * case.bytes_per_commit();
    let region_bytes = match target {
        Target::Disk(dir) => dir.file_size_bytes(),
        Target::Mock(_) => 0,
    };
    let writeback_bytes = if case.method.durable() { 0 } else { bytes.min(region_bytes) };
    OurWork { commits, bytes, writeback_bytes }
}

/// The device counts of the rounds the rate was taken from: a round left out for foreign I/O would add
/// its neighbour's requests to the commits' and make the whole case unattributable.
fn device_of_rounds(devices: &[Option<Recorded>], choice: &RoundChoice) -> Option<DeviceAccounting> {
    let mut sum: Option<Recorded> = None;
    for round in choice.used.iter().filter_map(|&i| devices.get(i).cloned().flatten()) {
        match sum.as_mut() {
            Some(s) => s.add(round),
            None => sum = Some(round),
        }
    }
    sum.as_ref().map(Recorded::report)
}

/// Which rounds a case's rate comes from. Rounds that saw foreign I/O on the device are left out when at
/// least two rounds and half of them were clean; otherwise (and whenever CPU steal was named) the case
/// measured a disturbed disk: its rate is a lower bound of the undisturbed one, since a disturbance only
/// slows syncs, and its interval is open upwards.
#[derive(Debug, PartialEq)]
pub struct RoundChoice {
    /// Indices (from 0) of the rounds the rate is taken from.
    pub used: Vec<usize>,
    /// Whether disturbed rounds were left out.
    pub left_out: bool,
    /// Whether the rate is only a lower bound.
    pub lower_bound: bool,
}

impl RoundChoice {
    /// The choice for `rounds` rounds with `disturbance` (whose round numbers count from 1).
    pub fn of(rounds: usize, disturbance: &CaseDisturbance) -> RoundChoice {
        let touched = disturbance.touched_rounds();
        let clean: Vec<usize> = (0..rounds).filter(|i| !touched.contains(&(i + 1))).collect();
        let enough_clean = clean.len() >= 2 && clean.len() * 2 >= rounds;
        let left_out = !touched.is_empty() && enough_clean;
        let lower_bound = disturbance.steal_pct().is_some() || (!touched.is_empty() && !enough_clean);
        let used = if left_out { clean } else { (0..rounds).collect() };
        RoundChoice { used, left_out, lower_bound }
    }
}

/// [`run_plan`] with a progress bar on stderr (when it is a terminal), every case's result so far kept in
/// `partial` for Ctrl-C.
pub fn run_plan_with_progress(
    cases: &[Case],
    schedule: crate::measure::rounds::Schedule,
    budget: &RunBudget,
    target: &Target<'_>,
    monitor: Option<&Monitor>,
    partial: &crate::core::partial::Partial<CaseResult>,
) -> Vec<CaseResult> {
    let bar = crate::core::output::stderr_is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new((cases.len() * schedule.rounds.max(1) as usize) as u64);
        let style = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar
    });
    let results = run_plan(cases, schedule, budget, target, monitor, &mut |p| {
        partial.update(p.index, p.results[p.index].as_ref());
        if let Some(bar) = &bar {
            bar.set_message(format!("{} {}", p.case.section.name(), p.case.label.trim()));
            bar.set_length(p.total as u64);
            bar.set_position(p.done as u64);
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    results
}

/// Commits a case needs before its p99.99 is reported: with fewer, the 99.99th percentile is the slowest
/// commit or next to it.
pub const P9999_MIN_COMMITS: u64 = 10_000;

/// A case's result from its rounds so far, the rate from the rounds [`RoundChoice`] keeps.
pub fn result_from_rounds(case: &Case, rounds: &[Measurement], disturbance: &CaseDisturbance) -> CaseResult {
    let RoundChoice { used, left_out, lower_bound } = RoundChoice::of(rounds.len(), disturbance);
    let used: Vec<Measurement> = used.iter().map(|&i| rounds[i].clone()).collect();
    let pooled = Pooled::of(&used);
    let m = Measurement {
        samples: pooled.samples.clone(),
        duration_ns: pooled.duration_ns,
        stop: pooled.stop,
        warmup_ops: pooled.warmup_ops,
        halves: [(0, 0); 2],
        started_ns: 0,
        windows: Vec::new(),
    };
    let mut r = result_from(case, &m);
    let interval = pooled.interval();
    r.ci95_rel = pooled.ci95_rel();
    r.ci95_rel_within = Some(if pooled.ci95_rel_within.is_finite() { pooled.ci95_rel_within } else { 1.0 });
    r.ops_per_s_low = Some(interval.low);
    r.ops_per_s_high = (!lower_bound).then_some(interval.high);
    r.lower_bound = lower_bound;
    // Every round's rate, the left-out ones too: the JSON shows what was measured.
    r.rounds_ops_per_s = rounds.iter().map(crate::measure::rounds::round_rate).collect();
    r.latency_ns_p10 = (pooled.samples.count() > 0).then(|| pooled.samples.quantile_ns(0.10));
    r.drift = crate::measure::rounds::drift_of(rounds);
    r.latency_ns_p9999 = (pooled.samples.count() >= P9999_MIN_COMMITS).then(|| pooled.samples.quantile_ns(0.9999));
    (r.regimes, r.latency_log) = crate::measure::regimes::of_rounds(rounds);
    r.disturbances = disturbance.named(rounds.len(), left_out);
    r
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
        section: case.section,
        method: case.method,
        label: case.label.clone(),
        durable: case.method.durable(),
        supported: true,
        write_size_bytes: case.write_size_bytes,
        writes_per_commit: case.writes_per_commit,
        file_state: case.file_state,
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
        stop_reason: Some(m.stop),
        warmup_ops: m.warmup_ops,
        ..empty_result(case)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_counts_come_from_the_rounds_the_rate_does() {
        let disturbance = CaseDisturbance::with_touched_rounds(3, &[2]);
        let choice = RoundChoice::of(3, &disturbance);
        assert_eq!(choice, RoundChoice { used: vec![0, 2], left_out: true, lower_bound: false });
        let devices = [
            Some(Recorded::with_commits(10, None)),
            Some(Recorded::with_commits(10, Some("vda served requests that were not ours"))),
            Some(Recorded::with_commits(12, None)),
        ];
        let d = device_of_rounds(&devices, &choice).unwrap();
        assert_eq!((d.commits, d.unattributable), (22, None));
        // All rounds disturbed: the rate is a bound from every round, and so are the counts.
        let all = RoundChoice::of(3, &CaseDisturbance::with_touched_rounds(3, &[1, 2, 3]));
        assert!(all.lower_bound && !all.left_out);
        assert_eq!(device_of_rounds(&devices, &all).unwrap().commits, 32);
    }
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
        let case = Case { writes_per_commit: 2, ..Case::one_write(crate::core::method::SyncMethod::Fsync, 8192) };
        let r = result_from(&case, &m);
        assert_eq!((r.method.name(), r.section.name(), r.file_state.name()), ("fsync", "one_write", "overwrite"));
        assert!(r.supported && r.durable && r.error.is_none());
        assert_eq!(r.ops, m.samples.count());
        let expected_ops_per_s = r.ops as f64 / r.duration_s;
        assert!((r.ops_per_s - expected_ops_per_s).abs() < 1e-9);
        assert!((r.bytes_per_s - r.ops_per_s * 16384.0).abs() < 1e-6);
        assert_eq!(r.histogram_log2.iter().map(|b| b.count).sum::<u64>(), r.ops);
    }
}
