//! One interval of `watch`: the three canary cases measured with `run`'s own code (the same timing loop,
//! rounds, disturbance monitor and device accounting), the environment read again, the verdicts.

use super::detect::{Metric, Observation};
use crate::core::environment::Environment;
use crate::core::method::SyncMethod;
use crate::core::schema::CaseResult;
use crate::core::suite::{Case, KIB};
use crate::core::verdict::Verdict;
use crate::measure::runner::{PreparedDir, RunBudget, Target};
use crate::observe::blockdev::stat::Snapshot;
use crate::observe::cpu_wait::{Chain, Wait};
use crate::observe::disturbance::Monitor;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The canary's cases, by their stable names (the `case` label).
pub const CASE_NAMES: [&str; 3] = ["fdatasync_8k", "odsync_8k", "etcd_wal_2300"];

/// etcd's rule: the p99 of a 2300-byte write + fdatasync under 10 ms.
pub const ETCD_P99_LIMIT_NS: u64 = 10_000_000;

/// The cases, in [`CASE_NAMES`] order: one 8 KiB write + fdatasync (most WALs), the same with O_DSYNC, and
/// etcd's 2300-byte append + fdatasync into a preallocated segment (advise's etcd case).
pub fn cases() -> Vec<Case> {
    vec![
        Case::one_write(SyncMethod::Fdatasync, 8 * KIB),
        Case::one_write(SyncMethod::OpenDatasync, 8 * KIB),
        Case::etcd_wal(),
    ]
}

/// How much one interval measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalPlan {
    /// Seconds of timed commits per case (all rounds together).
    pub case_secs: f64,
    /// Rounds per case.
    pub rounds: u32,
    /// Commits per case at most (timed and warmup), which bounds the bytes written per interval.
    pub max_commits_per_case: u64,
}

/// How far before an interval's window watch reads the device counters once more: the other I/O of those
/// seconds is recorded with the interval ([`Before`]). Why: the disturbance monitor sees only the other I/O
/// inside the window, but a build's writes queued below the guest (a hypervisor's cache destaging them)
/// can slow the flushes of the window just after them. Five seconds: the kernel's writeback period
/// (`dirty_writeback_centisecs`, 500), so a writer's dirty pages reach the device at least once in it.
pub const LOOKBACK: Duration = Duration::from_secs(5);

/// The device counters read [`LOOKBACK`] before an interval (during the sleep before it).
#[derive(Clone, Debug)]
pub struct LookbackStart {
    snapshot: Snapshot,
    at: Instant,
}

impl LookbackStart {
    /// Read the counters of the disks under `dir` now.
    pub fn take(dir: &Path) -> LookbackStart {
        let disks = crate::observe::blockdev::disk::disks_of_path(dir);
        LookbackStart { snapshot: Snapshot::take(&disks), at: Instant::now() }
    }
}

/// What the lowest device did between the look-back reading and the window's start: nobody's I/O but
/// others' (watch itself only reads counters then; its state and textfile were synced before it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Before {
    /// Length of the look-back, seconds ([`LOOKBACK`], less when the sleep was shorter).
    pub secs: f64,
    /// Bytes written.
    pub written_bytes: u64,
    /// Write requests completed.
    pub writes: u64,
    /// Flush requests completed.
    pub flushes: u64,
    /// Milliseconds the device was busy (io_ticks).
    pub busy_ms: u64,
}

impl Before {
    /// The device's busy time ÷ the look-back's length.
    pub fn busy_share(&self) -> f64 {
        if self.secs > 0.0 { self.busy_ms as f64 / 1e3 / self.secs } else { 0.0 }
    }

    /// "before: 12.0 MiB written, busy 40% of 5 s".
    pub fn describe(&self) -> String {
        format!(
            "before: {} written, busy {:.0}% of {}",
            crate::core::units::format_size(self.written_bytes),
            self.busy_share() * 100.0,
            crate::core::units::format_duration(self.secs)
        )
    }
}

/// What one interval measured and saw.
#[derive(Clone, Debug)]
pub struct Interval {
    /// Wall time the measurement took, probe included.
    pub measure_secs: f64,
    /// The environment as read this interval.
    pub environment: Environment,
    /// The cases' results, in [`CASE_NAMES`] order.
    pub results: Vec<CaseResult>,
    /// The verdicts on them.
    pub verdicts: Vec<Verdict>,
    /// Milliseconds the lowest device was busy while the interval measured (ours and anyone else's).
    pub device_busy_ms: Option<u64>,
    /// How long the commit chain (our threads, the lab server's) waited on a run queue while the cases ran.
    pub cpu_wait: Option<Wait>,
    /// The other I/O on the lowest device in the seconds before the window (None without a look-back
    /// reading: the first interval, `--once`).
    pub before: Option<Before>,
}

/// Measure one interval on `prepared` (a directory whose file was created once for the whole watch);
/// `lookback`: the device counters read [`LOOKBACK`] before.
pub fn measure(dir: &Path, prepared: &PreparedDir, plan: &IntervalPlan, lookback: Option<&LookbackStart>) -> Interval {
    let started = Instant::now();
    let environment = crate::observe::probe::collect(dir);
    let disks = crate::observe::blockdev::disk::disks_of_path(dir);
    let before = Snapshot::take(&disks);
    let other_before = lookback.and_then(|start| {
        let delta = before.since(&start.snapshot).remove(disks.last()?)?;
        let secs = start.at.elapsed().as_secs_f64();
        Some(Before {
            secs,
            written_bytes: delta.write_bytes,
            writes: delta.writes,
            flushes: delta.flushes,
            busy_ms: delta.busy_ms,
        })
    });
    let monitor = Monitor::new(&environment);
    let budget = RunBudget { max_samples: plan.max_commits_per_case, ..RunBudget::per_case(plan.case_secs) };
    let schedule = crate::measure::rounds::Schedule::fixed(plan.rounds);
    let chain = Chain::of(environment.mount_point.as_deref());
    let cpu_start = chain.start();
    let results = crate::measure::runner::run_plan(
        &cases(),
        schedule,
        &budget,
        &Target::Disk(prepared),
        Some(&monitor),
        &mut |_| {},
    );
    let cpu_wait = chain.finish(&cpu_start);
    let busy = Snapshot::take(&disks).since(&before);
    let device_busy_ms = disks.last().and_then(|d| busy.get(d)).map(|delta| delta.busy_ms);
    let verdicts = crate::observe::probe::verdicts(&environment, &results);
    let measure_secs = started.elapsed().as_secs_f64();
    Interval { measure_secs, environment, results, verdicts, device_busy_ms, cpu_wait, before: other_before }
}

impl Interval {
    /// Whether something else dominated: other I/O or the hypervisor (a case measured only as a lower
    /// bound, disturbed in most of its rounds), or the CPU queue (the commit chain starved of CPU).
    pub fn disturbed(&self) -> bool {
        !self.disturbance_causes().is_empty()
    }

    /// Why the interval is disturbed, per cause (empty when it is not): the `cause` label (`device_io`,
    /// `cpu_steal`, `other_syncbench`, `cpu_starved`) and the cause in words, with its number for a starved CPU.
    pub fn disturbance_causes(&self) -> Vec<(&'static str, String)> {
        let mut causes: Vec<(&'static str, String)> = Vec::new();
        for d in self.results.iter().filter(|r| r.lower_bound).flat_map(|r| &r.disturbances) {
            if !causes.iter().any(|(label, _)| *label == d.kind.name()) {
                causes.push((d.kind.name(), d.kind.words().to_string()));
            }
        }
        if causes.is_empty() && self.results.iter().any(|r| r.lower_bound) {
            causes.push(("device_io", "device I/O not ours".to_string()));
        }
        if let Some(wait) = self.cpu_wait.filter(Wait::starved) {
            let words =
                format!("cpu starved (waited {:.0}% on a run queue: {})", wait.share() * 100.0, wait.describe());
            causes.push(("cpu_starved", words));
        }
        causes
    }

    /// What detection judges: per case the p99 and the rate (failed cases have none), the verdict codes,
    /// the environment facts.
    pub fn observation(&self) -> Observation {
        let mut values = BTreeMap::new();
        for (name, r) in CASE_NAMES.iter().zip(&self.results) {
            if r.supported && r.error.is_none() && r.ops > 0 {
                let metrics =
                    BTreeMap::from([(Metric::LatencyP99, r.latency_ns.p99 as f64 / 1e9), (Metric::Rate, r.ops_per_s)]);
                values.insert(name.to_string(), metrics);
            }
        }
        Observation {
            values,
            verdicts: self.verdicts.iter().map(|v| v.code.to_string()).collect(),
            facts: facts(&self.environment),
            disturbed: self.disturbed(),
            device_ms: self.device_ms(),
        }
    }

    /// Per case, the lowest device's own time per commit in ms (block tracepoints), when the device served
    /// only our commits in the window.
    pub fn device_ms(&self) -> BTreeMap<String, f64> {
        CASE_NAMES
            .iter()
            .zip(&self.results)
            .filter_map(|(name, r)| {
                let own = r.device.as_ref().filter(|d| d.unattributable.is_none())?;
                Some((name.to_string(), own.device_ns_per_commit? / 1e6))
            })
            .collect()
    }

    /// The etcd case's p99 under the limit; None when it did not run.
    pub fn etcd_rule_pass(&self) -> Option<bool> {
        let r = self.results.get(2).filter(|r| r.supported && r.error.is_none() && r.ops > 0)?;
        Some(r.latency_ns.p99 < ETCD_P99_LIMIT_NS)
    }
}

/// The longest fact value kept: longer ones (a long mount option list, a deep device chain) keep their
/// start and a hash of the whole, so they still compare, and the state file keeps its bound.
pub const FACT_BYTES_MAX: usize = 256;

/// The environment facts watched for change: every device's write cache and FUA, the device chain, the
/// mount options and the virtualization, each as one comparable string of at most [`FACT_BYTES_MAX`].
pub fn facts(env: &Environment) -> BTreeMap<String, String> {
    let mut facts = full_facts(env);
    for value in facts.values_mut() {
        *value = bounded(value);
    }
    facts
}

/// `value` itself when short enough, else its first bytes and a hash of all of it, [`FACT_BYTES_MAX`] at most.
pub fn bounded(value: &str) -> String {
    if value.len() <= FACT_BYTES_MAX {
        return value.to_string();
    }
    // FNV-1a: stable across runs and builds (the std hasher is not), which a state file needs.
    let hash = value.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let suffix = format!("…#{hash:016x}");
    let mut cut = FACT_BYTES_MAX - suffix.len();
    while !value.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &value[..cut])
}

fn full_facts(env: &Environment) -> BTreeMap<String, String> {
    let per_device = |f: &dyn Fn(&crate::core::environment::Device) -> String| {
        env.devices.iter().map(|d| format!("{}={}", d.name, f(d))).collect::<Vec<_>>().join(",")
    };
    BTreeMap::from([
        ("write_cache".to_string(), per_device(&|d| d.write_cache.clone().unwrap_or_else(|| "unknown".into()))),
        ("fua".to_string(), per_device(&|d| d.fua.map_or("unknown".into(), |f| f.to_string()))),
        ("device_chain".to_string(), env.devices.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(" > ")),
        ("mount_options".to_string(), env.mount_options.join(",")),
        ("virtualization".to_string(), virtualization(&env.virtualization)),
    ])
}

/// The hypervisor or container as one string (`none` on bare metal).
pub fn virtualization(v: &crate::core::environment::Virtualization) -> String {
    let vm = match (&v.hypervisor, v.virtual_machine) {
        (Some(name), _) => name.clone(),
        (None, true) => "vm".to_string(),
        (None, false) => "none".to_string(),
    };
    match &v.container {
        Some(c) => format!("{vm}+{c}"),
        None => vm,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::watch::detect::Memory;

    /// An interval whose three cases ran at `rate` commits/s, p99 1.5× the mean, with this run-queue wait.
    fn interval_at(rate: f64, cpu_wait: Option<Wait>) -> Interval {
        let result = |_: &str| CaseResult {
            supported: true,
            ops: 500,
            ops_per_s: rate,
            latency_ns: crate::core::schema::LatencyNs { p99: (1.5e9 / rate) as u64, ..Default::default() },
            ..Default::default()
        };
        Interval {
            measure_secs: 0.5,
            environment: Environment::default(),
            results: CASE_NAMES.iter().map(|n| result(n)).collect(),
            verdicts: Vec::new(),
            device_busy_ms: None,
            cpu_wait,
            before: None,
        }
    }

    /// A lab disk whose server is starved of CPU: its commits run at a third of the rate for a while. With
    /// the run-queue wait read, those intervals are disturbed ("cpu starved"), never a change; with the
    /// signal ignored (the planted bug: no wait read), the same intervals are reported as a change.
    #[test]
    fn a_starved_interval_is_disturbed_not_changed_and_ignoring_the_signal_would_report_a_change() {
        let quiet = Wait { own_share: 0.02, server_share: Some(0.03) };
        let starved = Wait { own_share: 0.05, server_share: Some(0.40) };
        let judge = |signal: bool| {
            let mut memory = Memory::default();
            for i in 0..12 {
                memory.judge_and_learn(interval_at(110.0 + f64::from(i % 3), Some(quiet)).observation());
            }
            (0..6)
                .map(|_| {
                    let interval = interval_at(35.0, signal.then_some(starved));
                    (interval.disturbance_causes(), memory.judge_and_learn(interval.observation()))
                })
                .collect::<Vec<_>>()
        };
        for (causes, judgement) in judge(true) {
            assert!(judgement.disturbed && judgement.changes.is_empty(), "{judgement:?}");
            assert_eq!(causes.len(), 1);
            assert_eq!(causes[0].0, "cpu_starved");
            assert_eq!(causes[0].1, "cpu starved (waited 45% on a run queue: ours 5%, lab server 40%)");
        }
        let ignored = judge(false);
        assert!(ignored.iter().any(|(_, j)| !j.changes.is_empty()), "the planted bug must show: {ignored:?}");
    }

    #[test]
    fn a_quiet_cpu_wait_disturbs_nothing() {
        let interval = interval_at(100.0, Some(Wait { own_share: 0.1, server_share: Some(0.1) }));
        assert!(!interval.disturbed() && interval.disturbance_causes().is_empty());
        assert!(!interval_at(100.0, None).disturbed());
    }

    #[test]
    fn a_long_fact_is_cut_to_the_bound_and_still_compares() {
        assert_eq!(bounded("rw,relatime"), "rw,relatime");
        let long_a = format!("{}a", "rw,".repeat(200));
        let long_b = format!("{}b", "rw,".repeat(200));
        let (a, b) = (bounded(&long_a), bounded(&long_b));
        assert!(a.len() <= FACT_BYTES_MAX && b.len() <= FACT_BYTES_MAX, "{a}");
        assert_ne!(a, b, "two values that differ only past the cut must still differ");
        assert_eq!(a, bounded(&long_a));
        let wide = "é".repeat(300);
        assert!(bounded(&wide).len() <= FACT_BYTES_MAX);
    }
}
