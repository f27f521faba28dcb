//! `syncbench watch DIR`: a low-duty durability canary. Every interval it measures three durable-write
//! cases with `run`'s own code, reads the environment and the verdicts again, judges them against a
//! baseline of recent intervals ([`detect`]) and writes an OpenMetrics textfile atomically for
//! node_exporter's textfile collector ([`metrics`]); the baseline lives in a state file ([`state`]).
//!
//! Why low duty and back-off: a canary runs beside the database it protects. Time spent measuring stays
//! at or under `--duty` of wall time (the sleep stretches when an interval measured longer than planned),
//! commits per case are capped (so bytes written per hour have a bound, printed at start), and an interval
//! waits while the device is busy with other I/O rather than adding to it.

pub mod detect;
pub mod interval;
pub mod metrics;
pub mod state;

use crate::measure::runner::PreparedDir;
use interval::{Interval, IntervalPlan};
use state::State;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Commits per case per interval at most (warmup included): enough for a p99 from 1,000 samples.
pub const MAX_COMMITS_PER_CASE: u64 = 1_000;
/// Rounds per case in an interval.
pub const ROUNDS: u32 = 3;
/// Measuring time per interval below which a p99 means nothing (3 cases × 3 rounds of ~20 ms).
pub const MIN_MEASURE_SECS: f64 = 0.2;
/// The size of the file the overwrite cases write through (and the etcd case's preallocated segment).
pub const FILE_BYTES: u64 = 4 * crate::core::suite::MIB;
/// A device busier than this share of the back-off probe's window is left alone for now.
pub const BUSY_SHARE: f64 = 0.5;
/// The back-off probe's window.
const BUSY_PROBE: Duration = Duration::from_millis(200);

/// A planted bug for the end-to-end test's negative control (hidden flag): the test must fail with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    /// The baseline never takes an interval in.
    FrozenBaseline,
}

/// Validated options of one watch.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The watched directory (absolute).
    pub dir: PathBuf,
    /// Time between interval starts.
    pub every: Duration,
    /// Share of wall time spent measuring, at most.
    pub duty: f64,
    /// The textfile.
    pub openmetrics: Option<PathBuf>,
    /// The state file.
    pub state: Option<PathBuf>,
    /// One interval, then exit.
    pub once: bool,
    /// Stop after this many intervals (tests and accelerated runs).
    pub max_intervals: Option<u64>,
    /// The negative control's bug.
    pub planted: Option<PlantedBug>,
    /// No sleep between intervals ([`NO_SLEEP_ENV`]): the memory and state-size bench runs a day's intervals
    /// in minutes. The duty is then not kept.
    pub no_sleep: bool,
}

/// The hidden environment variable that sets [`Plan::no_sleep`] (`1`): for the accelerated memory bench
/// (bench/watch_memory.sh) and tests only.
pub const NO_SLEEP_ENV: &str = "SYNCBENCH_WATCH_NO_SLEEP";

impl Plan {
    /// Seconds of timed commits per case per interval: the duty's share of the interval, less a fifth
    /// for the probe and the files.
    pub fn interval_plan(&self) -> IntervalPlan {
        let measure = self.every.as_secs_f64() * self.duty;
        IntervalPlan { case_secs: measure * 0.8 / 3.0, rounds: ROUNDS, max_commits_per_case: MAX_COMMITS_PER_CASE }
    }

    /// The most bytes the canary writes per hour: every case at its commit cap in every interval, plus the
    /// file prepared at each start with `--once`.
    pub fn bytes_per_hour_max(&self) -> u64 {
        let per_interval: u64 = interval::cases()
            .iter()
            .map(|c| c.bytes_per_commit() * (MAX_COMMITS_PER_CASE + MAX_COMMITS_PER_CASE / 10))
            .sum::<u64>()
            + if self.once { FILE_BYTES } else { 0 };
        let per_hour = 3600.0 / self.every.as_secs_f64();
        (per_interval as f64 * per_hour).ceil() as u64
    }
}

/// Run the watch until SIGTERM (or once). Returns when done; per-interval problems (a full file system,
/// a vanished textfile directory) are one line on stderr each, and the watch goes on.
pub fn run(plan: &Plan, out: &mut dyn FnMut(&str)) -> anyhow::Result<()> {
    let mut state = match &plan.state {
        Some(path) => State::load(path, &plan.dir)?,
        None => State::new(&plan.dir),
    };
    if let Some(path) = &plan.openmetrics {
        state::check_textfile(path)?;
    }
    let _lock = crate::observe::disturbance::DirLock::take(&plan.dir)?;
    let (prepared, mut setup) = prepare(&plan.dir)?;
    out(&start_line(plan, &state));
    let mut done = 0u64;
    loop {
        let started = Instant::now();
        match one_interval(plan, &prepared, &mut state, setup.take()) {
            Ok(line) => out(&line),
            // One line, and the watch goes on: a full file system or a textfile directory removed while
            // a package is reinstalled is the operator's to fix, and the next interval writes again when it
            // can (the stale-textfile alert fires meanwhile). Nothing half-written is left behind.
            Err(e) => eprintln!(
                "syncbench watch: {} interval not recorded: {e:#}; watching on, the next interval tries again",
                crate::core::schema::now_rfc3339()
            ),
        }
        done += 1;
        if plan.once || plan.max_intervals.is_some_and(|max| done >= max) {
            return Ok(());
        }
        if !plan.no_sleep {
            sleep_interruptibly(next_sleep(plan, &state, started.elapsed()));
        }
        crate::core::cleanup::stop_if_interrupted();
    }
}

/// The time and device busy time the watch's setup cost, charged to its first interval.
#[derive(Clone, Copy, Debug)]
struct Setup {
    secs: f64,
    device_busy_ms: Option<u64>,
}

/// Create the file the cases write through (4 MiB, once per watch: with `--once` once per interval, so it
/// counts in the duty).
fn prepare(dir: &Path) -> anyhow::Result<(PreparedDir, Option<Setup>)> {
    let started = Instant::now();
    let disks = crate::observe::blockdev::disk::disks_of_path(dir);
    let before = crate::observe::blockdev::stat::Snapshot::take(&disks);
    let fs_type = crate::observe::probe::collect(dir).fs_type;
    let prepared = PreparedDir::prepare(dir, FILE_BYTES, &fs_type).map_err(|e| {
        crate::core::exit::usage(format!("cannot prepare {}: {}", dir.display(), crate::core::workdir::reason(&e)))
    })?;
    let delta = crate::observe::blockdev::stat::Snapshot::take(&disks).since(&before);
    let device_busy_ms = disks.last().and_then(|d| delta.get(d)).map(|d| d.busy_ms);
    Ok((prepared, Some(Setup { secs: started.elapsed().as_secs_f64(), device_busy_ms })))
}

/// How long to sleep before the next interval: until `--every` after this one started, stretched so
/// the recent measuring time stays within the duty.
fn next_sleep(plan: &Plan, state: &State, elapsed: Duration) -> Duration {
    let regular = plan.every.saturating_sub(elapsed);
    let measured = state.pending.as_ref().map_or(0.0, |p| p.measure_secs);
    // Wall time this interval must account for so that measuring / wall <= duty.
    let needed = Duration::from_secs_f64(measured / plan.duty).saturating_sub(elapsed);
    regular.max(needed)
}

fn sleep_interruptibly(total: Duration) {
    let end = Instant::now() + total;
    while Instant::now() < end {
        crate::core::cleanup::stop_if_interrupted();
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(100)));
    }
}

/// One interval: wait out a busy device, measure, judge, write the textfile and the state.
fn one_interval(
    plan: &Plan,
    prepared: &PreparedDir,
    state: &mut State,
    setup: Option<Setup>,
) -> anyhow::Result<String> {
    if let Some(share) = busy_share(&plan.dir).filter(|share| *share > BUSY_SHARE) {
        return Ok(format!(
            "{} device busy {:.0}% with other I/O: interval skipped (a canary does not add to a busy disk)",
            crate::core::schema::now_rfc3339(),
            share * 100.0
        ));
    }
    let started_unix_s = unix_now();
    let interval = interval::measure(&plan.dir, prepared, &plan.interval_plan());
    let observation = interval.observation();
    let judgement = state.memory.judge_and_learn(observation);
    if plan.planted == Some(PlantedBug::FrozenBaseline) {
        state.memory.baseline.clear();
    }
    state.intervals += 1;
    let setup_secs = setup.map_or(0.0, |s| s.secs);
    let busy_ms = interval.device_busy_ms.map(|ms| ms + setup.and_then(|s| s.device_busy_ms).unwrap_or(0));
    state.measured(interval.measure_secs + setup_secs, busy_ms.map(|ms| ms as f64 / 1e3), started_unix_s);
    let finished_unix_s = unix_now();
    state.last_finished_unix_s = finished_unix_s;
    if let Some(path) = &plan.openmetrics {
        let inputs = metrics::Inputs {
            interval: &interval,
            judgement: &judgement,
            state,
            every_secs: plan.every.as_secs_f64(),
            bytes_per_hour_max: plan.bytes_per_hour_max(),
            finished_unix_s,
        };
        let doc = crate::core::schema::Envelope::new(
            crate::core::schema::now_rfc3339(),
            interval.environment.clone(),
            Vec::new(),
            (),
        );
        let text = crate::core::export::openmetrics::render(&doc, &metrics::families(&inputs));
        state::write_atomically(path, text.as_bytes())?;
    }
    if let Some(path) = &plan.state {
        state.save(path)?;
    }
    Ok(summary_line(&interval, &judgement))
}

/// The share of the last [`BUSY_PROBE`] the lowest device under `dir` was busy (None when unknown).
fn busy_share(dir: &Path) -> Option<f64> {
    let disks = crate::observe::blockdev::disk::disks_of_path(dir);
    let lowest = disks.last()?.clone();
    let before = crate::observe::blockdev::stat::Snapshot::take(&disks);
    std::thread::sleep(BUSY_PROBE);
    let delta = crate::observe::blockdev::stat::Snapshot::take(&disks).since(&before);
    Some(delta.get(&lowest)?.busy_ms as f64 / BUSY_PROBE.as_millis() as f64)
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

fn start_line(plan: &Plan, state: &State) -> String {
    let learned = state.memory.baseline.len();
    format!(
        "watching {} every {} at {:.1}% duty: at most {} written per hour; baseline {}",
        plan.dir.display(),
        crate::core::units::format_duration(plan.every.as_secs_f64()),
        plan.duty * 100.0,
        crate::core::units::format_size(plan.bytes_per_hour_max()),
        if learned >= detect::MIN_BASELINE {
            format!("of {learned} intervals")
        } else {
            format!("learning ({learned} of {} intervals)", detect::MIN_BASELINE)
        }
    )
}

/// One line per interval: the cases' p99 and rates, and what changed.
fn summary_line(interval: &Interval, judgement: &detect::Judgement) -> String {
    let cases: Vec<String> = interval::CASE_NAMES
        .iter()
        .zip(&interval.results)
        .map(|(name, r)| match &r.error {
            Some(e) => format!("{name} failed: {e}"),
            None => format!(
                "{name} p99 {} {:.0}/s",
                crate::core::units::format_duration(r.latency_ns.p99 as f64 / 1e9),
                r.ops_per_s
            ),
        })
        .collect();
    let mut verdict = Vec::new();
    if judgement.disturbed {
        let causes: Vec<String> = interval.disturbance_causes().into_iter().map(|(_, words)| words).collect();
        verdict.push(format!("disturbed: {} (not judged)", causes.join(", ")));
    }
    for ((case, metric), direction) in &judgement.changes {
        let ratio = judgement.ratios.get(&(case.clone(), *metric)).map_or(String::new(), |r| format!(" ×{r:.2}"));
        verdict.push(format!("CHANGED {case} {} {}{ratio}", metric.name(), direction.name()));
    }
    verdict.extend(judgement.verdicts_appeared.iter().map(|c| format!("verdict appeared: {c}")));
    verdict.extend(judgement.verdicts_disappeared.iter().map(|c| format!("verdict gone: {c}")));
    verdict.extend(judgement.facts_changed.iter().map(|w| format!("{w} changed")));
    if verdict.is_empty() {
        verdict.push(if judgement.baseline_len >= detect::MIN_BASELINE {
            "no change".to_string()
        } else {
            format!("learning ({} of {})", judgement.baseline_len, detect::MIN_BASELINE)
        });
    }
    let cpu_wait =
        interval.cpu_wait.map_or(String::new(), |w| format!(", cpu wait {:.0}% ({})", w.share() * 100.0, w.describe()));
    format!("{} {}{cpu_wait} — {}", crate::core::schema::now_rfc3339(), cases.join(", "), verdict.join("; "))
}
