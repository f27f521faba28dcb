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
use interval::{Interval, IntervalPlan, LookbackStart};
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
    let mut lookback = None;
    loop {
        let started = Instant::now();
        match one_interval(plan, &prepared, &mut state, setup.take(), lookback.take()) {
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
            lookback = Some(sleep_looking_back(&plan.dir, next_sleep(plan, &state, started.elapsed())));
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

/// Sleep `total`, reading the device counters [`interval::LOOKBACK`] before its end (at once when the
/// sleep is shorter): the other I/O just before the next window.
fn sleep_looking_back(dir: &Path, total: Duration) -> LookbackStart {
    sleep_interruptibly(total.saturating_sub(interval::LOOKBACK));
    let start = LookbackStart::take(dir);
    sleep_interruptibly(total.min(interval::LOOKBACK));
    start
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
    lookback: Option<LookbackStart>,
) -> anyhow::Result<String> {
    if let Some(share) = busy_share(&plan.dir).filter(|share| *share > BUSY_SHARE) {
        return Ok(format!(
            "{} device busy {:.0}% with other I/O: interval skipped (a canary does not add to a busy disk)",
            crate::core::schema::now_rfc3339(),
            share * 100.0
        ));
    }
    let started_unix_s = unix_now();
    let interval = interval::measure(&plan.dir, prepared, &plan.interval_plan(), lookback.as_ref());
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

/// One line per interval: the cases' p99 and rates, the evidence beside them (run-queue wait, the device's
/// own flush time, the other I/O just before), and what changed.
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
    let mut evidence = String::new();
    if let Some(w) = interval.cpu_wait {
        evidence += &format!(", cpu wait {:.0}% ({})", w.share() * 100.0, w.describe());
    }
    let fdatasync_device = interval.results.first().and_then(|r| r.device.as_ref()).and_then(|d| d.lowest());
    if let Some(lowest) = fdatasync_device.filter(|l| l.stat.flushes > 0) {
        evidence += &format!(", device flush {:.1} ms", lowest.stat.flush_mean_ms);
    }
    // The device's own time per commit of each case (block tracepoints: its flushes and writes, one after
    // another), when nothing else reached the device: a commit slower while this stays is slower above the
    // device (CPU, file system), not in the disk.
    let device_us: Vec<String> = interval
        .results
        .iter()
        .map(|r| {
            let own = r.device.as_ref().filter(|d| d.unattributable.is_none());
            own.and_then(|d| d.device_ns_per_commit).map_or("-".to_string(), |ns| format!("{:.0}", ns / 1e3))
        })
        .collect();
    if device_us.iter().any(|d| d != "-") {
        evidence += &format!(", device µs/commit {}", device_us.join("/"));
    }
    let rounds: usize = interval.results.iter().map(|r| r.rounds_ops_per_s.len()).sum();
    let touched: usize = interval
        .results
        .iter()
        .flat_map(|r| &r.disturbances)
        .filter(|d| d.kind.name() == "device_io")
        .map(|d| d.rounds.len())
        .sum();
    if touched > 0 {
        evidence += &format!(", other I/O in {touched} of {rounds} rounds");
    }
    if let Some(before) = &interval.before {
        evidence += &format!(", {}", before.describe());
    }
    let words = judgement_words(interval, judgement).join("; ");
    format!("{} {}{evidence} — {words}", crate::core::schema::now_rfc3339(), cases.join(", "))
}

/// What detection concluded, in words: disturbed, CHANGED (slower), faster (re-learning), verdicts, facts;
/// else "no change" (with the deviations not confirmed yet) or "learning".
fn judgement_words(interval: &Interval, judgement: &detect::Judgement) -> Vec<String> {
    let ratio =
        |key: &(String, detect::Metric)| judgement.ratios.get(key).map_or(String::new(), |r| format!(" ×{r:.2}"));
    let mut words = Vec::new();
    if judgement.disturbed {
        let mut causes: Vec<String> = interval.disturbance_causes().into_iter().map(|(_, words)| words).collect();
        if !judgement.above_device.is_empty() {
            let cases: Vec<&str> = judgement.above_device.iter().map(String::as_str).collect();
            causes.push(format!(
                "slower above the device ({}: the device's own time per commit did not rise with it)",
                cases.join(", ")
            ));
        }
        words.push(format!("disturbed: {} (not judged)", causes.join(", ")));
    }
    for key in &judgement.changes {
        words.push(format!("CHANGED {} {} slower{}", key.0, key.1.name(), ratio(key)));
    }
    if !judgement.faster.is_empty() {
        let which: Vec<String> =
            judgement.faster.iter().map(|k| format!("{} {}{}", k.0, k.1.name(), ratio(k))).collect();
        let progress = match judgement.deviating_len {
            0 => "re-learned".to_string(),
            n => format!("re-learning {n} of {}", detect::RELEARN),
        };
        words.push(format!("faster than baseline (not a change, {progress}): {}", which.join(", ")));
    }
    words.extend(judgement.verdicts_appeared.iter().map(|c| format!("verdict appeared: {c}")));
    words.extend(judgement.verdicts_disappeared.iter().map(|c| format!("verdict gone: {c}")));
    words.extend(judgement.facts_changed.iter().map(|w| format!("{w} changed")));
    if words.is_empty() && judgement.baseline_len < detect::MIN_BASELINE {
        words.push(format!("learning ({} of {})", judgement.baseline_len, detect::MIN_BASELINE));
    } else if words.is_empty() {
        let pending: Vec<String> = judgement
            .unconfirmed
            .iter()
            .map(|(k, direction)| format!("{} {} {}{}", k.0, k.1.name(), direction.name(), ratio(k)))
            .collect();
        words.push(if pending.is_empty() {
            "no change".to_string()
        } else {
            format!("no change (not confirmed yet: {})", pending.join(", "))
        });
    }
    words
}

#[cfg(test)]
mod tests {
    use super::detect::{Direction, Judgement, Metric};
    use super::*;

    fn interval() -> Interval {
        Interval {
            measure_secs: 0.5,
            environment: Default::default(),
            results: Vec::new(),
            verdicts: Vec::new(),
            device_busy_ms: None,
            cpu_wait: None,
            before: Some(interval::Before {
                secs: 5.0,
                written_bytes: 12 * 1024 * 1024,
                writes: 300,
                flushes: 4,
                busy_ms: 2000,
            }),
        }
    }

    /// The log says what the operator needs: a faster disk is not a change (and is re-learned), a slower
    /// one is CHANGED (the word the bench counts), a deviation not confirmed yet is still "no change".
    #[test]
    fn the_interval_line_tells_faster_from_changed_and_shows_the_lookback() {
        let key = ("fdatasync_8k".to_string(), Metric::LatencyP99);
        let faster = Judgement {
            faster: [key.clone()].into(),
            ratios: [(key.clone(), 0.06)].into(),
            deviating_len: 4,
            baseline_len: 24,
            ..Default::default()
        };
        let line = summary_line(&interval(), &faster);
        assert!(
            line.ends_with("faster than baseline (not a change, re-learning 4 of 12): fdatasync_8k latency_p99 ×0.06"),
            "{line}"
        );
        assert!(!line.contains("CHANGED") && line.contains(", before: 12 MiB written, busy 40% of 5 s"), "{line}");
        let slower = Judgement { changes: [key.clone()].into(), ratios: [(key.clone(), 2.5)].into(), ..faster };
        assert!(summary_line(&interval(), &slower).contains("CHANGED fdatasync_8k latency_p99 slower ×2.50"));
        let pending = Judgement {
            unconfirmed: [(key.clone(), Direction::Slower)].into(),
            ratios: [(key, 2.5)].into(),
            baseline_len: 24,
            ..Default::default()
        };
        let line = summary_line(&interval(), &pending);
        assert!(line.ends_with("no change (not confirmed yet: fdatasync_8k latency_p99 slower ×2.50)"), "{line}");
    }
}
