//! The crash loop: run a workload on the simulated file system, cut the power at a chosen operation,
//! recover (for half the points losing power again inside recovery), check the oracle's history against
//! what came back, lose power once more right after recovery, recover and check again, and require both
//! recoveries to agree.
//!
//! Every crash point is a pure function of (seed, point index, profile, fault mode), so a failure is
//! reproduced exactly by `--seed S --point K`.

pub mod history;
pub mod pages;
pub mod points;
pub mod wal;

#[cfg(test)]
mod toylog;

use history::History;
use points::{PointKind, Timeline};
use std::time::{Duration, Instant};
use syncbench_simfs::{CrashReport, Profile, SimConfig, SimFs, SimRng};

/// A workload plus its recovery and checker, generic over nothing but the simulated file system.
pub trait Scenario {
    /// What recovery hands back (compared between the two recoveries of one point).
    type State: PartialEq + std::fmt::Debug;
    /// Names of the configurations to cycle through (point K uses variant K mod len); at least one.
    fn variants(&self) -> Vec<String> {
        vec!["default".to_string()]
    }
    /// The file system a run starts from (default: empty). A scenario with an expensive setup builds it
    /// once and forks it here; the crash points are chosen among the operations after this state.
    fn start(&self, variant: usize, config: SimConfig) -> SimFs {
        let _ = variant;
        SimFs::new(config)
    }
    /// Run the workload from the start file system until it finishes or the engine fails; record every
    /// submission and acknowledgement in `history` (and `fs.mark` checkpoints or flushes).
    fn run(&self, variant: usize, fs: &SimFs, history: &mut History);
    /// Open the engine on a crashed file system (its recovery) and read back its state.
    fn recover(&self, variant: usize, fs: &SimFs) -> Result<Self::State, String>;
    /// Check a recovered state against the history.
    fn check(&self, history: &History, state: &Self::State) -> Result<(), String>;
}

/// What to explore.
#[derive(Clone, Copy, Debug)]
pub struct ExploreOptions {
    /// Seed of the whole series.
    pub seed: u64,
    /// How many crash points.
    pub points: u64,
    /// Run only this point index (a reproducer).
    pub only_point: Option<u64>,
    /// File-system profile.
    pub profile: Profile,
    /// Inject one writeback error per point.
    pub fsync_errors: bool,
    /// Accounts per branch of the TPC-B bank (page-store modes).
    pub accounts_per_branch: u32,
}

/// A failed crash point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The point index (for `--point`).
    pub point: u64,
    /// The operation the power failed at.
    pub crash_op: u64,
    /// Sector size of that point.
    pub sector_bytes: u64,
    /// The scenario variant of that point (e.g. the sync method).
    pub variant: String,
    /// What went wrong.
    pub message: String,
}

/// Totals over the points run.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Crash points run (each: crash, recover, crash, recover, check).
    pub points: u64,
    /// Points chosen right after an acknowledgement.
    pub points_after_ack: u64,
    /// Points near a checkpoint or flush mark.
    pub points_near_mark: u64,
    /// Points anywhere on the timeline.
    pub points_uniform: u64,
    /// Points that used 512-byte sectors (the rest used 4096).
    pub points_sector_512: u64,
    /// Points where the power failed during the run (the rest crashed after it finished).
    pub points_crashed_mid_run: u64,
    /// Points where the power failed a second time, during the first recovery.
    pub points_recovery_interrupted: u64,
    /// Storage operations in the uninterrupted run.
    pub ops_per_run: u64,
    /// Acknowledged units in the uninterrupted run.
    pub acks_per_run: u64,
    /// Dirty sectors that reached the disk in crash images.
    pub sectors_new: u64,
    /// Dirty sectors that did not.
    pub sectors_old: u64,
    /// Pending namespace operations at crashes.
    pub ns_ops_pending: u64,
    /// Of those, how many the images kept.
    pub ns_ops_kept: u64,
    /// Writeback errors injected and hit.
    pub writeback_errors: u64,
    /// Runs where the engine returned an error other than the power loss.
    pub engine_errors: u64,
    /// Wall time of the exploration.
    pub duration: Duration,
}

impl Summary {
    fn count(&mut self, kind: PointKind, sector_bytes: u64, crashed: bool, report: &CrashReport) {
        self.points += 1;
        match kind {
            PointKind::AfterAck => self.points_after_ack += 1,
            PointKind::NearMark => self.points_near_mark += 1,
            PointKind::Uniform => self.points_uniform += 1,
        }
        self.points_sector_512 += u64::from(sector_bytes == 512);
        self.points_crashed_mid_run += u64::from(crashed);
        self.sectors_new += report.sectors_new;
        self.sectors_old += report.sectors_old;
        self.ns_ops_pending += report.ns_ops_pending;
        self.ns_ops_kept += report.ns_ops_kept;
    }

    /// Crash-and-recover cycles per minute of wall time.
    pub fn cycles_per_min(&self) -> f64 {
        let secs = self.duration.as_secs_f64();
        if secs > 0.0 { self.points as f64 * 60.0 / secs } else { 0.0 }
    }
}

fn point_rng(seed: u64, point: u64) -> SimRng {
    SimRng::new(seed ^ point.wrapping_add(1).wrapping_mul(0xA24B_AED4_963E_E407))
}

/// Run the workload once without a crash to learn its timeline.
pub fn dry_run<S: Scenario>(scenario: &S, variant: usize, profile: Profile) -> Result<(Timeline, u64), String> {
    let fs = scenario.start(variant, SimConfig { profile, ..SimConfig::default() });
    let before = fs.stats();
    let mut history = History::default();
    scenario.run(variant, &fs, &mut history);
    if let Some(err) = &history.engine_error {
        return Err(format!("the workload failed without any fault injected: {err}"));
    }
    let stats = fs.stats();
    // How many storage operations a recovery takes, to place crashes inside recovery.
    let (image, _) = fs.crash_image_with(0, syncbench_simfs::ResiduePolicy::All);
    let image_ops = image.stats().ops;
    scenario.recover(variant, &image).map_err(|e| format!("recovery after a clean run failed: {e}"))?;
    let timeline = Timeline {
        recovery_ops: image.stats().ops - image_ops,
        ops_before: before.ops,
        ops: stats.ops,
        writebacks_before: before.writebacks,
        writebacks: stats.writebacks,
        marks: points::run_marks(fs.marks(), before.ops),
    };
    Ok((timeline, history.acked.len() as u64))
}

/// Explore crash points; stop at the first failure. `progress` is told each finished point.
pub fn explore<S: Scenario>(
    scenario: &S,
    opts: &ExploreOptions,
    progress: impl FnMut(u64),
) -> Result<Summary, Failure> {
    match explore_all(scenario, opts, progress) {
        (summary, None) => Ok(summary),
        (_, Some(failure)) => Err(failure),
    }
}

/// Like [`explore`], returning the totals up to the failure as well.
pub fn explore_all<S: Scenario>(
    scenario: &S,
    opts: &ExploreOptions,
    mut progress: impl FnMut(u64),
) -> (Summary, Option<Failure>) {
    let start = Instant::now();
    let variants = scenario.variants();
    let mut timelines = Vec::new();
    for (variant, name) in variants.iter().enumerate() {
        match dry_run(scenario, variant, opts.profile) {
            Ok(found) => timelines.push(found),
            Err(message) => {
                let failure = Failure { point: 0, crash_op: 0, sector_bytes: 0, variant: name.clone(), message };
                return (Summary::default(), Some(failure));
            }
        }
    }
    let mut summary = Summary {
        ops_per_run: timelines.iter().map(|t| t.0.ops - t.0.ops_before).max().unwrap_or(0),
        acks_per_run: timelines.iter().map(|t| t.1).max().unwrap_or(0),
        ..Summary::default()
    };
    let range = match opts.only_point {
        Some(p) => p..p + 1,
        None => 0..opts.points,
    };
    let mut failure = None;
    for point in range {
        let variant = (point % variants.len() as u64) as usize;
        let at = Variant { index: variant, name: &variants[variant], timeline: &timelines[variant].0 };
        if let Err(f) = run_point(scenario, opts, &at, point, &mut summary) {
            failure = Some(f);
            break;
        }
        progress(point);
    }
    summary.duration = start.elapsed();
    (summary, failure)
}

/// One configuration of a scenario and its uninterrupted timeline.
struct Variant<'a> {
    index: usize,
    name: &'a str,
    timeline: &'a Timeline,
}

fn run_point<S: Scenario>(
    scenario: &S,
    opts: &ExploreOptions,
    at: &Variant<'_>,
    point: u64,
    summary: &mut Summary,
) -> Result<(), Failure> {
    let timeline = at.timeline;
    let mut rng = point_rng(opts.seed, point);
    let sector_bytes = if rng.coin() { 512 } else { 4096 };
    let evict_after_error = opts.fsync_errors && rng.coin();
    let (crash_op, kind) = points::choose(timeline, &mut rng);
    let fail = |message: String| Failure { point, crash_op, sector_bytes, variant: at.name.to_string(), message };

    let fs = scenario.start(at.index, SimConfig { profile: opts.profile, sector_bytes, evict_after_error });
    fs.set_crash_at_op(Some(crash_op));
    let writebacks = timeline.writebacks - timeline.writebacks_before;
    if opts.fsync_errors && writebacks > 0 {
        fs.fail_writeback_number(timeline.writebacks_before + 1 + rng.below(writebacks));
    }
    let mut history = History::default();
    scenario.run(at.index, &fs, &mut history);
    history.check_fail_stop().map_err(fail)?;
    let stats = fs.stats();
    if let (Some(err), false, 0) = (&history.engine_error, fs.crashed(), stats.writeback_errors) {
        return Err(fail(format!("the engine failed with no crash and no injected fault: {err}")));
    }
    summary.writeback_errors += stats.writeback_errors;
    summary.engine_errors += u64::from(history.engine_error.is_some() && stats.writeback_errors > 0);

    let (mut image, report) = fs.crash_image(rng.next_u64());
    summary.count(kind, sector_bytes, fs.crashed(), &report);
    if rng.coin() {
        // Half the points lose power again during the first recovery.
        let window = timeline.recovery_ops.max(1);
        image.set_crash_at_op(Some(image.stats().ops + 1 + rng.below(window)));
        let interrupted = scenario.recover(at.index, &image);
        summary.points_recovery_interrupted += u64::from(image.crashed());
        if let (Err(e), false) = (&interrupted, image.crashed()) {
            return Err(fail(format!("recovery failed: {e}")));
        }
        image = image.crash_image(rng.next_u64()).0;
    }
    let first = scenario.recover(at.index, &image).map_err(|e| fail(format!("recovery failed: {e}")))?;
    scenario.check(&history, &first).map_err(|e| fail(format!("after recovery: {e}")))?;
    // Power fails again right after recovery: recovery must have left a state it can recover from.
    let (image, _) = image.crash_image(rng.next_u64());
    let second = scenario.recover(at.index, &image).map_err(|e| fail(format!("second recovery failed: {e}")))?;
    scenario.check(&history, &second).map_err(|e| fail(format!("after the second recovery: {e}")))?;
    if first != second {
        return Err(fail(format!("recovery is not idempotent: {first:?} then {second:?}")));
    }
    Ok(())
}
