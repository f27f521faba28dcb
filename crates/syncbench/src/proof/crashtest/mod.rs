//! The crash loop. Each crash point runs several generations on one simulated machine: run the workload
//! (concurrent clients, checkpoints, evictions, background flushes), cut it at a chosen operation — a
//! power loss, or a process crash whose page cache survives — recover, check the oracle's history
//! against what came back, and let the next generation continue from the recovered state until it
//! crashes again. A power loss may hit the first recovery too; the last crash image may get media damage
//! (a flipped bit, a lost or misdirected write in durable sectors), after which recovery must report
//! corruption or return correct data. After the last generation the power fails once more right after
//! recovery, and both recoveries must agree.
//!
//! Every crash point is a pure function of (seed, point index, profile, fault mode), so a failure is
//! reproduced exactly by `--seed S --point K`.

pub mod bugs;
pub mod clients;
pub mod coverage;
pub mod damage;
pub mod export;
pub mod history;
pub mod json;
pub mod pages;
pub mod points;
pub mod wal;

#[cfg(test)]
mod determinism;
#[cfg(test)]
mod toylog;

use coverage::Coverage;
use history::History;
use points::{PointKind, Timeline};
use std::sync::Arc;
use std::time::{Duration, Instant};
use syncbench_simfs::{CrashKind, CrashReport, Profile, SimConfig, SimFs, SimRng, WriteAheadRule};

/// A workload plus its recovery and checker, generic over nothing but the simulated file system.
pub trait Scenario: Sync {
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
    /// Open the engine on `fs` (recovering whatever is there) and run one generation of the workload,
    /// seeded by `seed`, until it finishes or the engine fails; record every submission and
    /// acknowledgement in `history` (and `fs.mark` checkpoints or flushes) and what it exercised in
    /// `coverage`.
    fn run(&self, variant: usize, fs: &SimFs, history: &mut History, seed: u64, coverage: &mut Coverage);
    /// Open the engine on a crashed file system (its recovery) and read back its state.
    fn recover(&self, variant: usize, fs: &SimFs, coverage: &mut Coverage) -> Result<Self::State, String>;
    /// Check a recovered state against the history.
    fn check(&self, history: &History, state: &Self::State) -> Result<(), String>;
    /// A recovery completed with `state`: tell the history what is durable and what is gone for good.
    fn settle(&self, history: &mut History, state: &Self::State);
    /// The write-ahead rule the simulator enforces at every page write (None: no pages).
    fn write_ahead_rule(&self) -> Option<Arc<WriteAheadRule>> {
        None
    }
    /// Where media damage may strike on a crash image: (file, byte range) in durable sectors whose loss
    /// the engine can detect, and whether a lost write (an old, valid-looking version) is detectable there.
    fn damage_targets(&self, image: &SimFs, history: &History) -> Vec<damage::Target> {
        let _ = (image, history);
        Vec::new()
    }
    /// Coverage counters that must be non-zero after a series of enough points.
    fn required_coverage(&self) -> Vec<&'static str> {
        Vec::new()
    }
    /// The device's untorn-write unit the scenario declares (simfs refuses larger `RWF_ATOMIC` writes).
    fn atomic_write_max_bytes(&self) -> u64 {
        SimConfig::default().atomic_write_max_bytes
    }
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
    /// Generations per point: crash, recover, continue, crash again.
    pub generations: u32,
}

impl ExploreOptions {
    /// Defaults for tests: 3 generations, 2,000 accounts, no fsync errors.
    pub fn new(seed: u64, points: u64, profile: Profile) -> ExploreOptions {
        ExploreOptions {
            seed,
            points,
            only_point: None,
            profile,
            fsync_errors: false,
            accounts_per_branch: 2000,
            generations: 3,
        }
    }
}

/// Points a series needs before unreached coverage fails it (fewer may simply not have drawn a path).
pub const COVERAGE_MIN_POINTS: u64 = 200;

/// A failed crash point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// A durability failure at a crash point, or a coverage failure (a key path never reached).
    pub kind: FailureKind,
    /// The point index (for `--point`).
    pub point: u64,
    /// The operation the power failed at (in the failing generation; 0 for a coverage failure).
    pub crash_op: u64,
    /// Sector size of that point.
    pub sector_bytes: u64,
    /// The scenario variant of that point (e.g. the sync method).
    pub variant: String,
    /// What went wrong.
    pub message: String,
}

/// What kind of failure a crashtest found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// An acknowledged commit lost, an invariant broken, or recovery failing (at a crash point, or the
    /// scenario failing its dry run).
    Durability,
    /// The run never reached a path it must cover (its JSON `variant` is `coverage`).
    Coverage,
}

/// Totals over the points run (serialised as they are into `crashtest`'s JSON).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    /// Crash points run.
    pub points: u64,
    /// Crash-and-recover cycles (generations) run.
    pub cycles: u64,
    /// Points whose first crash was chosen right after an acknowledgement.
    pub points_after_ack: u64,
    /// Points whose first crash was near a checkpoint or flush mark.
    pub points_near_mark: u64,
    /// Points whose first crash was anywhere on the timeline.
    pub points_uniform: u64,
    /// Points that used 512-byte sectors (the rest used 4096).
    pub points_sector_512: u64,
    /// Generations where the crash came during the run (the rest crashed after it finished).
    pub points_crashed_mid_run: u64,
    /// Storage operations in the uninterrupted first generation.
    pub ops_per_run: u64,
    /// Acknowledged units in the uninterrupted first generation.
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
    /// Runs where the engine stopped on an injected writeback error.
    #[serde(rename = "engine_stops_after_error")]
    pub engine_errors: u64,
    /// What the points exercised.
    pub coverage: Coverage,
    /// Coverage counters the scenario requires to be non-zero (checked from `COVERAGE_MIN_POINTS` on).
    pub coverage_required: Vec<&'static str>,
    /// Wall time of the exploration.
    #[serde(rename = "duration_s", serialize_with = "as_secs")]
    pub duration: Duration,
    /// Crash-and-recover cycles (generations) per minute of wall time.
    pub cycles_per_min: f64,
}

fn as_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Summary {
    fn count_image(&mut self, report: &CrashReport) {
        self.sectors_new += report.sectors_new;
        self.sectors_old += report.sectors_old;
        self.ns_ops_pending += report.ns_ops_pending;
        self.ns_ops_kept += report.ns_ops_kept;
    }

    fn finish(&mut self, duration: Duration) {
        self.duration = duration;
        let secs = duration.as_secs_f64();
        self.cycles_per_min = if secs > 0.0 { self.cycles as f64 * 60.0 / secs } else { 0.0 };
    }
}

fn point_rng(seed: u64, point: u64) -> SimRng {
    SimRng::new(seed ^ point.wrapping_add(1).wrapping_mul(0xA24B_AED4_963E_E407))
}

/// The workload seed of generation `generation` (the first is the same for every point, so that its
/// timeline, learnt once without a crash, holds for all of them).
fn generation_seed(seed: u64, point: u64, generation: u32) -> u64 {
    if generation == 0 { seed } else { point_rng(seed, point).next_u64() ^ u64::from(generation) }
}

/// Run the workload once without a crash to learn its timeline.
pub fn dry_run<S: Scenario>(scenario: &S, variant: usize, opts: &ExploreOptions) -> Result<(Timeline, u64), String> {
    let config = SimConfig {
        profile: opts.profile,
        atomic_write_max_bytes: scenario.atomic_write_max_bytes(),
        ..SimConfig::default()
    };
    let fs = scenario.start(variant, config);
    fs.set_write_ahead_rule(scenario.write_ahead_rule());
    let before = fs.stats();
    let mut history = History::default();
    scenario.run(variant, &fs, &mut history, opts.seed, &mut Coverage::default());
    if let Some(err) = &history.engine_error {
        return Err(format!("the workload failed without any fault injected: {err}"));
    }
    if let Some(v) = fs.write_ahead_violations().first() {
        return Err(format!("without any crash: {v}"));
    }
    let stats = fs.stats();
    // How many storage operations a recovery takes, to place crashes inside recovery.
    let (image, _) = fs.crash_image_with(0, syncbench_simfs::ResiduePolicy::All);
    let image_ops = image.stats().ops;
    scenario
        .recover(variant, &image, &mut Coverage::default())
        .map_err(|e| format!("recovery after a clean run failed: {e}"))?;
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
        match dry_run(scenario, variant, opts) {
            Ok(found) => timelines.push(found),
            Err(message) => {
                let failure = Failure {
                    kind: FailureKind::Durability,
                    point: 0,
                    crash_op: 0,
                    sector_bytes: 0,
                    variant: name.clone(),
                    message,
                };
                return (Summary::default(), Some(failure));
            }
        }
    }
    let mut summary = Summary {
        ops_per_run: timelines.iter().map(|t| t.0.ops - t.0.ops_before).max().unwrap_or(0),
        acks_per_run: timelines.iter().map(|t| t.1).max().unwrap_or(0),
        coverage_required: scenario.required_coverage(),
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
        let mut coverage = Coverage::default();
        let result = run_point(scenario, opts, &at, point, &mut summary, &mut coverage);
        summary.coverage.add(&coverage);
        summary.points += 1;
        if let Err(f) = result {
            failure = Some(f);
            break;
        }
        progress(point);
    }
    summary.finish(start.elapsed());
    if failure.is_none() && opts.only_point.is_none() && summary.points >= COVERAGE_MIN_POINTS {
        let missing = summary.coverage.missing(&summary.coverage_required);
        if !missing.is_empty() {
            let message = format!(
                "coverage: {} point(s) never reached {} (a key path of this mode went untested)",
                summary.points,
                missing.join(", ")
            );
            failure = Some(Failure {
                kind: FailureKind::Coverage,
                point: 0,
                crash_op: 0,
                sector_bytes: 0,
                variant: "coverage".into(),
                message,
            });
        }
    }
    (summary, failure)
}

/// One configuration of a scenario and its uninterrupted timeline.
struct Variant<'a> {
    index: usize,
    name: &'a str,
    timeline: &'a Timeline,
}

/// How a generation ends.
struct Crash {
    kind: CrashKind,
    /// Give the crash image media damage (last generation only).
    damage: bool,
}

fn run_point<S: Scenario>(
    scenario: &S,
    opts: &ExploreOptions,
    at: &Variant<'_>,
    point: u64,
    summary: &mut Summary,
    coverage: &mut Coverage,
) -> Result<(), Failure> {
    let timeline = at.timeline;
    let mut rng = point_rng(opts.seed, point);
    let (config, first_op) = choose_point(scenario, opts, timeline, &mut rng, summary);
    let sector_bytes = config.sector_bytes;
    let fail = |crash_op: u64, message: String| Failure {
        kind: FailureKind::Durability,
        point,
        crash_op,
        sector_bytes,
        variant: at.name.to_string(),
        message,
    };

    let run = PointRun { scenario, at, rule: scenario.write_ahead_rule() };
    let mut fs = scenario.start(at.index, config);
    let mut history = History::default();
    let generations = opts.generations.max(1);
    for generation in 0..generations {
        let last = generation + 1 == generations;
        // Some generations end in a process crash (the page cache survives); the last always loses power.
        let crash = Crash {
            kind: if !last && rng.chance(1, 3) { CrashKind::Process } else { CrashKind::Power },
            damage: last && rng.chance(1, 3),
        };
        fs.set_write_ahead_rule(run.rule.clone());
        fs.set_crash_kind(crash.kind);
        arm_generation(&fs, opts, timeline, first_op, generation, &mut rng);
        history.errors_at_start = fs.stats().writeback_errors;
        // Media damage may restore a sector's content from the start of this generation (a lost write).
        let before = crash.damage.then(|| fs.crash_image_with(0, syncbench_simfs::ResiduePolicy::None).0);
        coverage.generations += 1;
        summary.cycles += 1;
        scenario.run(at.index, &fs, &mut history, generation_seed(opts.seed, point, generation), coverage);
        let crash_op = fs.stats().ops + u64::from(!fs.crashed());
        check_generation(&fs, &history, summary, coverage).map_err(|m| fail(crash_op, m))?;
        let what = |message: String| fail(crash_op, format!("generation {generation}: {message}"));

        // After a failed writeback the page cache no longer tells the truth (Linux marks the failed pages
        // clean and a new process's fsync reports nothing once the error was seen): the machine is
        // rebooted, not just the process restarted.
        let kind = if fs.stats().writeback_errors > 0 { CrashKind::Power } else { crash.kind };
        let image = run.crash(fs, kind, summary, coverage, &mut rng).map_err(what)?;
        let damaged = match &before {
            Some(before) => damage::strike(&image, before, &scenario.damage_targets(&image, &history), &mut rng),
            None => None,
        };
        coverage.media_damage += u64::from(damaged.is_some());
        coverage.recoveries_of_recoveries += u64::from(generation > 0);
        image.set_write_ahead_rule(run.rule.clone());
        let recovered = run.recover_checked(&image, &history, damaged, last, &mut rng, coverage).map_err(what)?;
        let Some(state) = recovered else {
            return Ok(()); // the damage was reported: nothing more to recover on this machine
        };
        scenario.settle(&mut history, &state);
        history.engine_error = None;
        fs = image;
    }
    Ok(())
}

/// A point's machine (sector size, eviction after a writeback error) and the operation its first crash
/// comes at, drawn from its own random stream; counted in the summary.
fn choose_point<S: Scenario>(
    scenario: &S,
    opts: &ExploreOptions,
    timeline: &Timeline,
    rng: &mut SimRng,
    summary: &mut Summary,
) -> (SimConfig, u64) {
    let sector_bytes = if rng.coin() { 512 } else { 4096 };
    let evict_after_error = opts.fsync_errors && rng.coin();
    let config = SimConfig {
        profile: opts.profile,
        sector_bytes,
        evict_after_error,
        atomic_write_max_bytes: scenario.atomic_write_max_bytes(),
    };
    let (first_op, kind) = points::choose(timeline, rng);
    match kind {
        PointKind::AfterAck => summary.points_after_ack += 1,
        PointKind::NearMark => summary.points_near_mark += 1,
        PointKind::Uniform => summary.points_uniform += 1,
    }
    summary.points_sector_512 += u64::from(sector_bytes == 512);
    (config, first_op)
}

/// Arms a generation's crash: the first at the point's chosen operation (and, with `--fsync-errors`, one
/// failed writeback within it), later ones where `points::arm_later` picks.
fn arm_generation(
    fs: &SimFs,
    opts: &ExploreOptions,
    timeline: &Timeline,
    first_op: u64,
    generation: u32,
    rng: &mut SimRng,
) {
    if generation == 0 {
        fs.set_crash_at_op(Some(first_op));
        let writebacks = timeline.writebacks - timeline.writebacks_before;
        if opts.fsync_errors && writebacks > 0 {
            fs.fail_writeback_number(timeline.writebacks_before + 1 + rng.below(writebacks));
        }
    } else {
        points::arm_later(fs, timeline, rng);
    }
}

/// What a generation's run must have kept (fail-stop, the write-ahead rule, no engine error without a
/// cause), and its counts.
fn check_generation(
    fs: &SimFs,
    history: &History,
    summary: &mut Summary,
    coverage: &mut Coverage,
) -> Result<(), String> {
    history.check_fail_stop()?;
    if let Some(v) = fs.write_ahead_violations().first() {
        return Err(v.clone());
    }
    let stats = fs.stats();
    coverage.wal_rule_checks += stats.wal_rule_checks;
    coverage.atomic_writes_in_flight_at_crash += stats.atomic_writes_in_flight_at_crash;
    if let (Some(err), false, 0) = (&history.engine_error, fs.crashed(), stats.writeback_errors) {
        return Err(format!("the engine failed with no crash and no injected fault: {err}"));
    }
    summary.writeback_errors += stats.writeback_errors;
    summary.engine_errors += u64::from(history.engine_error.is_some() && stats.writeback_errors > 0);
    summary.points_crashed_mid_run += u64::from(fs.crashed());
    Ok(())
}

/// One point's scenario, variant and write-ahead rule: what each generation's crash and recovery use.
struct PointRun<'a, S> {
    scenario: &'a S,
    at: &'a Variant<'a>,
    rule: Option<Arc<WriteAheadRule>>,
}

impl<S: Scenario> PointRun<'_, S> {
    /// Ends a generation with `kind`: the process restarts on the same machine, or the power fails and the
    /// crash image is the next machine (half the time power fails again during its first recovery).
    fn crash(
        &self,
        fs: SimFs,
        kind: CrashKind,
        summary: &mut Summary,
        coverage: &mut Coverage,
        rng: &mut SimRng,
    ) -> Result<SimFs, String> {
        if kind == CrashKind::Process {
            coverage.process_crashes += 1;
            fs.restart_process();
            return Ok(fs);
        }
        coverage.power_losses += 1;
        let (mut image, report) = fs.crash_image(rng.next_u64());
        summary.count_image(&report);
        if rng.coin() {
            // Half the power losses hit again during the first recovery.
            image.set_write_ahead_rule(self.rule.clone());
            let window = self.at.timeline.recovery_ops.max(1);
            image.set_crash_at_op(Some(image.stats().ops + 1 + rng.below(window)));
            let interrupted = self.scenario.recover(self.at.index, &image, coverage);
            coverage.recoveries_interrupted += u64::from(image.crashed());
            if let (Err(e), false) = (&interrupted, image.crashed()) {
                return Err(format!("recovery failed: {e}"));
            }
            if let Some(v) = image.write_ahead_violations().first() {
                return Err(format!("during an interrupted recovery: {v}"));
            }
            image = image.crash_image(rng.next_u64()).0;
        }
        Ok(image)
    }

    /// Recovers `image` and checks the state against the history; in the last generation power fails again
    /// right after, and the second recovery must find the same state. None: media damage was reported.
    fn recover_checked(
        &self,
        image: &SimFs,
        history: &History,
        damaged: Option<String>,
        last: bool,
        rng: &mut SimRng,
        coverage: &mut Coverage,
    ) -> Result<Option<S::State>, String> {
        let (scenario, index) = (self.scenario, self.at.index);
        let state = match (scenario.recover(index, image, coverage), &damaged) {
            (Ok(state), _) => state,
            (Err(_), Some(_)) => {
                coverage.media_damage_reported += 1;
                return Ok(None);
            }
            (Err(e), None) => return Err(format!("recovery failed: {e}")),
        };
        let after = match &damaged {
            Some(d) => format!("after recovery from media damage ({d}) that was not reported"),
            None => "after recovery".to_string(),
        };
        scenario.check(history, &state).map_err(|e| format!("{after}: {e}"))?;
        if let Some(v) = image.write_ahead_violations().first() {
            return Err(format!("during recovery: {v}"));
        }
        if last {
            // Power fails again right after recovery: recovery must have left a state it can recover from.
            let (again, _) = image.crash_image(rng.next_u64());
            let second =
                scenario.recover(index, &again, coverage).map_err(|e| format!("second recovery failed: {e}"))?;
            scenario.check(history, &second).map_err(|e| format!("after the second recovery: {e}"))?;
            if state != second {
                return Err(format!("recovery is not idempotent: {state:?} then {second:?}"));
            }
        }
        Ok(Some(state))
    }
}
