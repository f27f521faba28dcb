//! One interval of `watch`: the three canary cases measured with `run`'s own code (the same timing loop,
//! rounds, disturbance monitor and device accounting), the environment read again, the verdicts.

use super::detect::{Metric, Observation};
use crate::core::environment::Environment;
use crate::core::method::SyncMethod;
use crate::core::schema::CaseResult;
use crate::core::suite::{Case, KIB};
use crate::core::verdict::Verdict;
use crate::measure::runner::{PreparedDir, RunBudget, Target};
use crate::observe::disturbance::Monitor;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

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
}

/// Measure one interval on `prepared` (a directory whose file was created once for the whole watch).
pub fn measure(dir: &Path, prepared: &PreparedDir, plan: &IntervalPlan) -> Interval {
    let started = Instant::now();
    let environment = crate::observe::probe::collect(dir);
    let disks = crate::observe::blockdev::disk::disks_of_path(dir);
    let before = crate::observe::blockdev::stat::Snapshot::take(&disks);
    let monitor = Monitor::new(&environment);
    let budget = RunBudget { max_samples: plan.max_commits_per_case, ..RunBudget::per_case(plan.case_secs) };
    let schedule = crate::measure::rounds::Schedule::fixed(plan.rounds);
    let results = crate::measure::runner::run_plan(
        &cases(),
        schedule,
        &budget,
        &Target::Disk(prepared),
        Some(&monitor),
        &mut |_| {},
    );
    let busy = crate::observe::blockdev::stat::Snapshot::take(&disks).since(&before);
    let device_busy_ms = disks.last().and_then(|d| busy.get(d)).map(|delta| delta.busy_ms);
    let verdicts = crate::observe::probe::verdicts(&environment, &results);
    Interval { measure_secs: started.elapsed().as_secs_f64(), environment, results, verdicts, device_busy_ms }
}

impl Interval {
    /// Whether other I/O (or the hypervisor) dominated: a case measured only as a lower bound, disturbed in
    /// most of its rounds.
    pub fn disturbed(&self) -> bool {
        self.results.iter().any(|r| r.lower_bound)
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
        }
    }

    /// The etcd case's p99 under the limit; None when it did not run.
    pub fn etcd_rule_pass(&self) -> Option<bool> {
        let r = self.results.get(2).filter(|r| r.supported && r.error.is_none() && r.ops > 0)?;
        Some(r.latency_ns.p99 < ETCD_P99_LIMIT_NS)
    }
}

/// The environment facts watched for change: every device's write cache and FUA, the device chain, the
/// mount options and the virtualization, each as one comparable string.
pub fn facts(env: &Environment) -> BTreeMap<String, String> {
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
