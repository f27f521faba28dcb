//! `syncbench commit`'s measurement: N client threads each append a record to the reference write-ahead
//! log and wait until it is durable, in a loop; one point per client count (and commit delay). With group
//! commit off every commit syncs its own write instead: the naive log.
//!
//! `cmd/commit.rs` turns flags into a [`Plan`]; [`measure_all`] runs it; [`render`] draws the results.

pub mod background;
pub mod group;
mod measure;
pub mod render;

use crate::core::partial::Partial;
use crate::core::schema::LatencyNs;
use crate::core::verdict::{Severity, Verdict};
use crate::observe::blockdev::foreign::OurWork;
use crate::observe::disturbance::{CaseDisturbance, Monitor};
use crate::observe::probe;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use syncbench_engine::wal::SyncMethod;

/// `commit`'s JSON payload (inside the `syncbench/v1` envelope).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommitPayload {
    /// The directory measured.
    pub dir: String,
    /// The measurement.
    pub commit: CommitResults,
    /// `--background-writes`: every point measured again under background writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_writes: Option<background::BackgroundCommit>,
    /// Interrupted (Ctrl-C, SIGTERM) before every round of every point ran: the points are what was
    /// finished, each from the rounds it completed (as `run`'s `partial`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// `CommitResults::method` in JSON: the method's name, or `""` for none (as files from before it was
/// recorded have it).
mod method_or_empty {
    use super::SyncMethod;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(method: &Option<SyncMethod>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(method.map_or("", SyncMethod::name))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SyncMethod>, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        if name.is_empty() {
            return Ok(None);
        }
        SyncMethod::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&name)).map(Some)
    }
}

impl CommitResults {
    /// The log's sync method's name (`""` when the file did not record it).
    pub fn method_name(&self) -> &'static str {
        self.method.map_or("", SyncMethod::name)
    }
}

/// Every point of one `syncbench commit` run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommitResults {
    /// Sync method of the log (files from before it was recorded say `""`: `None`).
    #[serde(with = "method_or_empty")]
    pub method: Option<SyncMethod>,
    /// Whether an acknowledged commit is durable with this method (files that do not say were).
    #[serde(default = "crate::core::schema::yes")]
    pub durable: bool,
    /// Payload bytes per record.
    pub record_size_bytes: u64,
    /// Batches a leader may flush beyond its own (`--leader-extra-batches`).
    pub leader_extra_batches: u32,
    /// Bytes per record in the log (header and padding included).
    pub record_log_bytes: u64,
    /// One entry per (commit delay, client count, group commit on/off).
    pub points: Vec<CommitPoint>,
}

/// One measured point.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommitPoint {
    /// Client threads.
    pub clients: u32,
    /// Leader delay in microseconds.
    pub commit_delay_us: u64,
    /// The delay ended early once this many commits waited (0: never early).
    pub commit_delay_count: u32,
    /// Group commit (true) or the naive log (false).
    pub group_commit: bool,
    /// Commits acknowledged inside the timed window (the log's counter, read with the flush counters at the
    /// window's edges).
    pub commits: u64,
    /// Commits per second.
    pub commits_per_s: f64,
    /// Durable flushes per second (a leader's write + sync; one O_DSYNC write for write-through methods).
    pub syncs_per_s: f64,
    /// Mean commits per flush (mean group size).
    pub commits_per_sync: f64,
    /// Mean time of one flush (the leader's write + sync), in nanoseconds.
    pub sync_latency_ns_mean: f64,
    /// Commit latency (append + wait until durable).
    pub latency_ns: LatencyNs,
    /// Seconds timed.
    pub duration_s: f64,
    /// Share of the CPU time the hypervisor took from this machine during the timed window (steal time
    /// in /proc/stat), in percent; absent where the kernel does not report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_steal_pct: Option<f64>,
    /// Commits per second of each round, in the order they ran (every point is measured in [`ROUNDS`]
    /// short rounds, the points in a new order every round).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds_commits_per_s: Vec<f64>,
    /// Half-width of the 95% interval of `commits_per_s`, relative: Student's t over the round rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_rel: Option<f64>,
    /// What the window's commits made the devices under the directory do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::observe::blockdev::account::DeviceAccounting>,
    /// What else touched the device or the CPU during this point's rounds (as `run`'s cases).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbances: Vec<crate::core::schema::Disturbance>,
    /// Disturbed in too many rounds to leave them out (or CPU steal named): `commits_per_s` is a lower
    /// bound of the undisturbed rate, `ci95_rel` its interval's lower side only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// Where the commits went in the log's group commit (group points only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<group::GroupFlow>,
}

/// When a delaying leader stops waiting early (`--commit-delay-count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayCount {
    /// Once this many commits wait (0: never early).
    Fixed(u32),
    /// Once as many commits wait as the point has clients.
    Clients,
}

/// Parse `--commit-delay-count`: a number, or `clients`.
pub fn parse_delay_count(text: &str) -> Result<DelayCount, String> {
    match text {
        "clients" => Ok(DelayCount::Clients),
        n => n.parse().map(DelayCount::Fixed).map_err(|_| format!("'{text}' is not a number or `clients`")),
    }
}

impl DelayCount {
    /// A point's `commit_delay_count` (0 when there is no delay to end early).
    pub fn of_point(self, clients: u32, commit_delay_us: u64, group_commit: bool) -> u32 {
        match self {
            _ if commit_delay_us == 0 || !group_commit => 0,
            DelayCount::Fixed(n) => n,
            DelayCount::Clients => clients,
        }
    }
}

/// What to measure, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Directory to measure in.
    pub dir: PathBuf,
    /// How the log syncs.
    pub method: SyncMethod,
    /// Payload bytes per record.
    pub record_size: usize,
    /// `commit_siblings` of every point.
    pub commit_siblings: u32,
    /// `--leader-extra-batches`.
    pub leader_extra_batches: u32,
    /// `--rejoin-wait-pct`.
    pub rejoin_wait_pct: u32,
    /// Seconds timed per point.
    pub secs: f64,
    /// The points, in the order measured.
    pub points: Vec<PointSpec>,
}

/// One point to measure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointSpec {
    /// Client threads.
    pub clients: u32,
    /// Leader delay in microseconds.
    pub commit_delay_us: u64,
    /// Group commit (true) or the naive log (false).
    pub group_commit: bool,
    /// End the delay once this many commits wait (0: never early).
    pub commit_delay_count: u32,
}

impl PointSpec {
    /// `4 clients, group commit, commit_delay 0 µs`, for progress lines.
    pub fn describe(&self) -> String {
        let mode = if self.group_commit { "group commit" } else { "naive" };
        format!("{} clients, {mode}, commit_delay {} µs", self.clients, self.commit_delay_us)
    }
}

/// Log segment size of the measured log.
pub const SEGMENT_BYTES: u64 = 16 << 20;
/// Segments the measurement may hold at once (current, preallocated, spares): checked against free space.
pub const SEGMENTS_IN_USE: u64 = 8;

/// Bytes of free space a measurement in `dir` needs, the background writer's file included when
/// `--background-writes` runs one.
pub fn space_needed_bytes(background: Option<crate::measure::background::Rate>) -> u64 {
    SEGMENTS_IN_USE * SEGMENT_BYTES + background.map_or(0, |_| crate::measure::background::FILE_BYTES)
}

/// Rounds per point at most: each point's `--secs` is split over them, and the points run in a new order
/// every round, so a device that changes speed for a while shows as spread (`ci95_rel`, the prediction
/// interval of [`crate::measure::rounds::prediction`]), not as a difference between points (issue #16). Six rounds
/// of [`ROUND_SECS`] for the default 3 s: with three, Student's t(2) = 4.3 made every interval ±100% or more.
pub const ROUNDS: u32 = 6;
/// The length of a round when `--secs` allows [`MIN_INTERVAL_ROUNDS`] of them or more.
pub const ROUND_SECS: f64 = 0.5;
/// The fewest rounds an interval is given for. From two, t(1) = 12.7 (× √1.5) made ±1000% intervals:
/// a number that says nothing. `--quick`'s 1 s is therefore 3 rounds of 1/3 s, not 2 of 0.5 s.
pub const MIN_INTERVAL_ROUNDS: u32 = 3;
/// A round shorter than this measures mostly its edges (a flush that ends after the window, a late wake-up
/// under load): `--secs` under 3 × this get fewer rounds than [`MIN_INTERVAL_ROUNDS`], and no interval.
pub const MIN_ROUND_SECS: f64 = 0.3;

/// Rounds for `secs` per point: [`ROUND_SECS`] each, at least [`MIN_INTERVAL_ROUNDS`] while a round stays
/// [`MIN_ROUND_SECS`] or longer, at most [`ROUNDS`].
pub fn rounds_for(secs: f64) -> u32 {
    // The tolerance keeps 0.9 s at three rounds of 0.3 s despite 0.9 / 0.3 = 2.999… in binary.
    let fit = (secs / MIN_ROUND_SECS + 1e-9) as u32;
    ((secs / ROUND_SECS) as u32).max(MIN_INTERVAL_ROUNDS).min(fit).clamp(1, ROUNDS)
}

/// Measure every point of `plan` in a fresh directory under `root` (which the caller created and owns), in
/// [`ROUNDS`] rounds. `progress` is called before each point's round. Stops with an error at the first
/// point that fails.
pub fn measure_all(plan: &Plan, root: &Path, progress: impl Fn(usize, &PointSpec)) -> anyhow::Result<CommitResults> {
    measure_rounds(plan, root, Watch::default(), progress)
}

/// [`measure_all`] with a [`Monitor`] of `environment`'s devices and the CPU watching each round: rounds
/// with foreign I/O are left out of a point, or the point becomes a lower bound, by `run`'s rule
/// ([`from_rounds`]). Each point, as its rounds finish, is kept in `partial` for a Ctrl-C report.
pub fn measure_watched(
    plan: &Plan,
    root: &Path,
    environment: &crate::core::environment::Environment,
    progress: impl Fn(usize, &PointSpec),
    partial: &Partial<CommitPoint>,
) -> anyhow::Result<CommitResults> {
    let watch = Watch { monitor: Some(&Monitor::new(environment)), partial: Some(partial) };
    measure_rounds(plan, root, watch, progress)
}

/// What watches the rounds of [`measure_rounds`] besides the caller's progress.
#[derive(Clone, Copy, Default)]
struct Watch<'a> {
    monitor: Option<&'a Monitor>,
    partial: Option<&'a Partial<CommitPoint>>,
}

/// The results of `plan` with only the points that have finished rounds (for a Ctrl-C report).
pub fn results_of(plan: &Plan, points: Vec<CommitPoint>) -> CommitResults {
    CommitResults {
        method: Some(plan.method),
        durable: plan.method.durable(),
        record_size_bytes: plan.record_size as u64,
        leader_extra_batches: plan.leader_extra_batches,
        record_log_bytes: syncbench_engine::wal::record::encoded_len(plan.record_size) as u64,
        points,
    }
}

fn measure_rounds(
    plan: &Plan,
    root: &Path,
    Watch { monitor, partial }: Watch<'_>,
    progress: impl Fn(usize, &PointSpec),
) -> anyhow::Result<CommitResults> {
    let n_rounds = rounds_for(plan.secs);
    let round_plan = Plan { secs: plan.secs / f64::from(n_rounds), ..plan.clone() };
    let mut rounds: Vec<Vec<CommitPoint>> = vec![Vec::new(); plan.points.len()];
    let mut disturbances: Vec<CaseDisturbance> = vec![CaseDisturbance::default(); plan.points.len()];
    let record_bytes = syncbench_engine::wal::record::encoded_len(plan.record_size) as u64;
    for round in 0..n_rounds {
        for i in crate::measure::rounds::order(plan.points.len(), round) {
            let spec = &plan.points[i];
            progress(i, spec);
            let watch = monitor.map(Monitor::start);
            let point = measure::point(&round_plan, spec, &root.join(format!("point-{i}-{round}")));
            // Ctrl-C: the signal thread is removing our files (which may have failed this point).
            crate::core::cleanup::stop_if_interrupted();
            let point = point?;
            if let (Some(monitor), Some(watch)) = (monitor, watch) {
                // Ours: the segments the log zero-fills at open (the window spans the whole round) and,
                // as the log fills, its records plus the segment zero-filled ahead of them.
                let zero_filled = u64::from(1 + measure::PREALLOCATE_SEGMENTS) * SEGMENT_BYTES;
                let ours = OurWork {
                    commits: point.commits,
                    bytes: zero_filled + 2 * point.commits * record_bytes,
                    writeback_bytes: 0,
                };
                monitor.finish(watch, ours, rounds[i].len() + 1, &mut disturbances[i]);
            }
            rounds[i].push(point);
            if let Some(partial) = partial {
                partial.update(i, Some(&from_rounds(&rounds[i], &disturbances[i])));
            }
        }
    }
    Ok(results_of(plan, rounds.iter().zip(&disturbances).map(|(r, d)| from_rounds(r, d)).collect()))
}

/// A point from its rounds and what disturbed them: rounds that saw foreign I/O are left out when at
/// least two rounds and half of them were clean; otherwise (and whenever CPU steal was named) the point
/// is a lower bound — `run`'s rule ([`crate::measure::runner::result_from_rounds`]).
fn from_rounds(rounds: &[CommitPoint], disturbance: &CaseDisturbance) -> CommitPoint {
    let crate::measure::runner::RoundChoice { used, left_out, lower_bound } =
        crate::measure::runner::RoundChoice::of(rounds.len(), disturbance);
    let used: Vec<CommitPoint> = used.iter().map(|&i| rounds[i].clone()).collect();
    let mut point = pool(&used);
    point.rounds_commits_per_s = rounds.iter().map(|p| p.commits_per_s).collect();
    point.lower_bound = lower_bound;
    point.disturbances = disturbance.named(rounds.len(), left_out);
    point
}

/// One point from its rounds: commits, syncs and time summed; the latency summary of the round with the
/// median rate (the rounds' histograms are not kept); steal weighted by time; the interval from the
/// spread of the round rates, when there are [`MIN_INTERVAL_ROUNDS`] or more.
fn pool(rounds: &[CommitPoint]) -> CommitPoint {
    let duration_s: f64 = rounds.iter().map(|p| p.duration_s).sum();
    let commits: u64 = rounds.iter().map(|p| p.commits).sum();
    let syncs: f64 = rounds.iter().map(|p| p.syncs_per_s * p.duration_s).sum();
    let sync_ns: f64 = rounds.iter().map(|p| p.sync_latency_ns_mean * p.syncs_per_s * p.duration_s).sum();
    let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
    let rates: Vec<f64> = rounds.iter().map(|p| p.commits_per_s).collect();
    let mut by_rate: Vec<&CommitPoint> = rounds.iter().collect();
    by_rate.sort_by(|a, b| a.commits_per_s.total_cmp(&b.commits_per_s));
    let steal: Vec<(f64, f64)> = rounds.iter().filter_map(|p| Some((p.cpu_steal_pct?, p.duration_s))).collect();
    let steal_time: f64 = steal.iter().map(|(_, d)| d).sum();
    let commits_per_s = per_s(commits as f64);
    CommitPoint {
        commits,
        commits_per_s,
        syncs_per_s: per_s(syncs),
        commits_per_sync: if syncs > 0.0 { commits as f64 / syncs } else { 0.0 },
        sync_latency_ns_mean: if syncs > 0.0 { sync_ns / syncs } else { 0.0 },
        latency_ns: by_rate[by_rate.len() / 2].latency_ns,
        duration_s,
        cpu_steal_pct: (steal_time > 0.0).then(|| steal.iter().map(|(s, d)| s * d).sum::<f64>() / steal_time),
        // Rounds without a rate (no commit acknowledged in a short window) carry no information: the
        // interval needs three rounds with one, or t(1) gives ±1000% again.
        ci95_rel: (rates.iter().filter(|r| **r > 0.0 && r.is_finite()).count() >= MIN_INTERVAL_ROUNDS as usize)
            .then(|| crate::measure::rounds::prediction_rel(&rates, commits_per_s))
            .flatten(),
        rounds_commits_per_s: rates,
        device: crate::observe::blockdev::account::DeviceAccounting::pooled(
            rounds.iter().filter_map(|p| p.device.as_ref()),
        ),
        group: group::GroupFlow::pooled(rounds.iter().filter_map(|p| p.group.as_ref())),
        ..rounds[0].clone()
    }
}

/// A `cpu_steal` warning for the point that lost the most CPU time to the hypervisor, if it lost enough.
pub fn steal_verdict(points: &[CommitPoint]) -> Option<Verdict> {
    let (pct, worst) = points.iter().filter_map(|p| Some((p.cpu_steal_pct?, p))).max_by(|a, b| a.0.total_cmp(&b.0))?;
    let which = if points.len() > 1 { ", the worst of this run" } else { "" };
    probe::steal::verdict(pct, &format!("the {}-client point{which}", worst.clients))
}

/// The probe's verdicts about DIR, plus one if the method itself is not durable and one if the hypervisor
/// took CPU time from the measurement (for the worst point).
pub fn verdicts(
    plan: &Plan,
    environment: &crate::core::environment::Environment,
    points: &[CommitPoint],
) -> Vec<Verdict> {
    let mut verdicts = probe::verdicts(environment, &[]);
    verdicts.extend(steal_verdict(points));
    if !plan.method.durable() {
        verdicts.push(Verdict {
            severity: Severity::Critical,
            code: crate::core::verdict::VerdictCode::CommitNotDurable.name().into(),
            message: "--method write never syncs: these commits would be lost on a power failure.".to_string(),
            advice: "Use it only as the upper bound; measure a durable method (e.g. fdatasync) for real numbers."
                .to_string(),
        });
    }
    verdicts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_reads_and_writes_as_its_name_and_an_old_files_empty_one_as_none() {
        let with = CommitResults { method: Some(SyncMethod::OpenDatasync), ..CommitResults::default() };
        let json = serde_json::to_string(&with).unwrap();
        assert!(json.contains(r#""method":"open_datasync""#), "{json}");
        assert_eq!(serde_json::from_str::<CommitResults>(&json).unwrap().method, Some(SyncMethod::OpenDatasync));
        let old: CommitResults = serde_json::from_str(r#"{"method":""}"#).unwrap();
        assert_eq!((old.method, old.method_name()), (None, ""));
        assert!(serde_json::to_string(&old).unwrap().contains(r#""method":"""#));
        assert!(serde_json::from_str::<CommitResults>(r#"{"method":"fdatasink"}"#).is_err());
    }

    #[test]
    fn undisturbed_rounds_pool_as_before() {
        let round = |commits: u64| CommitPoint {
            commits,
            commits_per_s: commits as f64,
            duration_s: 1.0,
            ..CommitPoint::default()
        };
        let rounds = [round(100), round(300), round(200)];
        let p = from_rounds(&rounds, &CaseDisturbance::default());
        assert_eq!((p.commits, p.lower_bound, p.disturbances.len()), (600, false, 0));
        assert_eq!(p.rounds_commits_per_s, vec![100.0, 300.0, 200.0]);
    }

    #[test]
    fn short_points_get_fewer_rounds() {
        assert_eq!(
            (rounds_for(0.2), rounds_for(0.5), rounds_for(0.6), rounds_for(0.9), rounds_for(1.0)),
            (1, 1, 2, 3, 3),
            "--quick's 1 s: three rounds, the fewest with an interval"
        );
        assert_eq!((rounds_for(1.5), rounds_for(2.0), rounds_for(3.0), rounds_for(60.0)), (3, 4, 6, 6));
    }

    #[test]
    fn fewer_rounds_than_three_give_no_interval_rather_than_a_meaningless_one() {
        let round = |commits: u64| CommitPoint {
            commits,
            commits_per_s: commits as f64,
            duration_s: 0.5,
            ..CommitPoint::default()
        };
        // Two rounds (short --secs, or three with one left out as disturbed: `pool` sees the two used).
        let two = pool(&[round(100), round(130)]);
        assert_eq!(
            two.ci95_rel,
            None,
            "t(1) would make it ±{:.0}%",
            100.0 * crate::measure::rounds::prediction_rel(&[100.0, 130.0], 230.0).unwrap()
        );
        assert_eq!(two.rounds_commits_per_s, vec![100.0, 130.0]);
        let three = pool(&[round(100), round(130), round(115)]);
        assert!(three.ci95_rel.is_some_and(|c| c > 0.0 && c < 1.0), "{:?}", three.ci95_rel);
        // Three rounds, one of which acknowledged nothing: two rates, so no interval either.
        let one_empty = pool(&[round(100), round(0), round(130)]);
        assert_eq!(one_empty.ci95_rel, None, "a round without a rate is no information");
    }

    #[test]
    fn rounds_pool_into_one_point_with_their_spread_as_the_interval() {
        let round = |commits: u64, syncs_per_s: f64, p50: u64, steal| CommitPoint {
            clients: 1,
            commits,
            commits_per_s: commits as f64,
            syncs_per_s,
            sync_latency_ns_mean: 1000.0,
            latency_ns: LatencyNs { p50, ..LatencyNs::default() },
            duration_s: 1.0,
            cpu_steal_pct: steal,
            ..CommitPoint::default()
        };
        let p =
            pool(&[round(100, 100.0, 10, Some(0.0)), round(300, 150.0, 30, None), round(200, 200.0, 20, Some(30.0))]);
        assert_eq!((p.clients, p.commits, p.duration_s), (1, 600, 3.0));
        assert_eq!(p.commits_per_s, 200.0);
        assert_eq!(p.syncs_per_s, 150.0);
        assert!((p.commits_per_sync - 600.0 / 450.0).abs() < 1e-12);
        assert_eq!(p.latency_ns.p50, 20, "the median round's summary");
        assert_eq!(p.cpu_steal_pct, Some(15.0));
        assert_eq!(p.rounds_commits_per_s, vec![100.0, 300.0, 200.0]);
        // The prediction interval of the rounds (ln 100, ln 300, ln 200): its wider side around 200/s.
        let expected = crate::measure::rounds::prediction(&[100.0, 300.0, 200.0]).unwrap().rel_to(200.0);
        assert!((p.ci95_rel.unwrap() - expected).abs() < 1e-12 && expected > 1.0, "{expected}");
    }

    #[test]
    fn steal_is_reported_for_the_worst_point_only_past_the_threshold() {
        let point = |clients, steal| CommitPoint { clients, cpu_steal_pct: steal, ..CommitPoint::default() };
        assert!(steal_verdict(&[point(1, Some(1.0)), point(16, Some(4.0))]).is_none());
        assert!(steal_verdict(&[point(1, None)]).is_none());
        let v = steal_verdict(&[point(1, Some(6.0)), point(16, Some(21.0)), point(64, None)]).unwrap();
        assert_eq!(v.code, "cpu_steal");
        assert!(
            v.message.contains("21%") && v.message.contains("the 16-client point, the worst of this run (steal"),
            "{}",
            v.message
        );
    }
}
