//! The textfile `watch` writes each interval: the metric families of docs/watch.md, for node_exporter's
//! textfile collector and the rules in deploy/prometheus/syncbench-rules.yml (whose names these must match:
//! the rules' unit test and the end-to-end test read them).

use super::detect::{Judgement, Metric};
use super::interval::{CASE_NAMES, Interval};
use super::state::State;
use crate::core::export::openmetrics::Family;

/// What the families are built from.
pub struct Inputs<'a> {
    /// This interval.
    pub interval: &'a Interval,
    /// Detection's conclusions about it.
    pub judgement: &'a Judgement,
    /// The state after it (duty, intervals).
    pub state: &'a State,
    /// `--every`, seconds.
    pub every_secs: f64,
    /// The bound on bytes written per hour printed at start.
    pub bytes_per_hour_max: u64,
    /// Unix time the interval finished.
    pub finished_unix_s: f64,
}

/// Every family, in the order of docs/watch.md's table.
pub fn families(inputs: &Inputs<'_>) -> Vec<Family> {
    let mut families = case_families(inputs);
    families.extend(judgement_families(inputs));
    families.extend(environment_families(inputs));
    families.extend(bookkeeping_families(inputs));
    families.extend(before_families(inputs.interval));
    families
}

/// The other I/O on the lowest device in the seconds before the interval's window (absent without a
/// look-back reading: the first interval, `--once`).
fn before_families(interval: &Interval) -> Vec<Family> {
    let mut busy = Family::new(
        "syncbench_watch_device_busy_before_ratio",
        "",
        "Time the lowest block device was busy (io_ticks) in the seconds before this interval's window (up to 5 s, while watch slept) divided by their length: other I/O just before the canary measured.",
    );
    let mut written = Family::new(
        "syncbench_watch_device_written_before_bytes",
        "bytes",
        "Bytes the lowest block device wrote in the seconds before this interval's window (up to 5 s, while watch slept).",
    );
    if let Some(before) = &interval.before {
        busy.push(Vec::new(), before.busy_share());
        written.push(Vec::new(), before.written_bytes as f64);
    }
    vec![busy, written]
}

fn case_label(name: &str) -> Vec<(&'static str, String)> {
    vec![("case", name.to_string())]
}

fn case_families(inputs: &Inputs<'_>) -> Vec<Family> {
    let mut latency = Family::new(
        "syncbench_watch_commit_latency_seconds",
        "seconds",
        "This interval's commit latency (one write + its sync), per canary case.",
    );
    let mut rate = Family::new("syncbench_watch_commits_per_second", "", "This interval's durable commits per second.");
    let mut flushes = Family::new(
        "syncbench_watch_device_flushes_per_commit",
        "",
        "Flush requests the lowest block device completed per commit (/sys/block stat).",
    );
    let mut writes = Family::new(
        "syncbench_watch_device_writes_per_commit",
        "",
        "Write requests the lowest block device completed per commit (/sys/block stat).",
    );
    for (name, r) in CASE_NAMES.iter().zip(&inputs.interval.results) {
        if !(r.supported && r.error.is_none() && r.ops > 0) {
            continue;
        }
        for (q, ns) in [("0.5", r.latency_ns.p50), ("0.99", r.latency_ns.p99)] {
            latency.push(vec![("case", name.to_string()), ("quantile", q.to_string())], ns as f64 / 1e9);
        }
        rate.push(case_label(name), r.ops_per_s);
        // Per-commit counts only when nothing else reached the device in the window: else they are not ours.
        let attributable = r.device.as_ref().filter(|d| d.unattributable.is_none());
        if let Some(per) = attributable.and_then(|d| d.lowest_per_commit()) {
            flushes.push(case_label(name), per.flushes);
            writes.push(case_label(name), per.writes);
        }
    }
    let mut flush_mean = Family::new(
        "syncbench_watch_device_flush_mean_seconds",
        "seconds",
        "Mean time of the lowest device's flush requests while the fdatasync case ran (/sys/block stat, whole milliseconds per request).",
    );
    let fdatasync_device = inputs.interval.results.first().and_then(|r| r.device.as_ref());
    if let Some(lowest) = fdatasync_device.and_then(|d| d.lowest()).filter(|l| l.stat.flushes > 0) {
        flush_mean.push(vec![("device", lowest.disk.clone())], lowest.stat.flush_mean_ms / 1e3);
    }
    vec![latency, rate, flushes, writes, flush_mean]
}

fn judgement_families(inputs: &Inputs<'_>) -> Vec<Family> {
    let j = inputs.judgement;
    let mut baseline = Family::new(
        "syncbench_watch_baseline_commit_latency_seconds",
        "seconds",
        "The baseline's 95% prediction interval (low, high) and median of the p99 commit latency, from the spread between recent intervals.",
    );
    let mut change = Family::new(
        "syncbench_watch_change",
        "",
        "1 while durable writes are confirmed slower than the baseline's interval (three intervals in a row, at least 1.5x, beyond the range the disk has shown), else 0.",
    );
    let mut faster = Family::new(
        "syncbench_watch_faster",
        "",
        "1 while durable writes are confirmed faster than the baseline's interval and the faster level is being re-learned (not a change: no alert), else 0.",
    );
    let mut ratio =
        Family::new("syncbench_watch_change_ratio", "", "This interval's value divided by the baseline's median.");
    for name in CASE_NAMES {
        let key = (name.to_string(), Metric::LatencyP99);
        if let Some(band) = j.bands.get(&key) {
            for (bound, v) in [("low", band.low), ("median", band.median), ("high", band.high)] {
                let labels = vec![("case", name.to_string()), ("quantile", "0.99".into()), ("bound", bound.into())];
                baseline.push(labels, v);
            }
        }
        for metric in Metric::ALL {
            let key = (name.to_string(), metric);
            let labels = vec![("case", name.to_string()), ("what", metric.name().into())];
            change.push(labels.clone(), f64::from(u8::from(j.changes.contains(&key))));
            faster.push(labels, f64::from(u8::from(j.faster.contains(&key))));
            if let Some(r) = j.ratios.get(&key) {
                ratio.push(vec![("case", name.to_string()), ("what", metric.name().into())], *r);
            }
        }
    }
    vec![baseline, change, faster, ratio]
}

fn environment_families(inputs: &Inputs<'_>) -> Vec<Family> {
    let (interval, j) = (inputs.interval, inputs.judgement);
    let mut verdict = Family::new("syncbench_watch_verdict", "", "1 for each verdict of this interval.");
    let mut appeared = Family::new(
        "syncbench_watch_verdict_appeared",
        "",
        "1 for a verdict present now and in none of the baseline's intervals.",
    );
    let mut disappeared = Family::new(
        "syncbench_watch_verdict_disappeared",
        "",
        "1 for a verdict of every baseline interval that is absent now.",
    );
    for v in &interval.verdicts {
        let labels = vec![("code", v.code.to_string()), ("severity", severity(v.severity).to_string())];
        verdict.push(labels.clone(), 1.0);
        appeared.push(labels, f64::from(u8::from(j.verdicts_appeared.contains(v.code.as_str()))));
    }
    for code in &j.verdicts_disappeared {
        disappeared.push(vec![("code", code.clone())], 1.0);
    }
    let mut changed = Family::new(
        "syncbench_watch_environment_changed",
        "",
        "1 when this environment fact differs from the baseline's (write_cache, fua, device_chain, mount_options, virtualization).",
    );
    for what in super::interval::facts(&interval.environment).keys() {
        changed.push(vec![("what", what.clone())], f64::from(u8::from(j.facts_changed.contains(what))));
    }
    vec![verdict, appeared, disappeared, changed, info(interval)]
}

/// `syncbench_watch_info`: the environment as labels, for the fleet's joins.
fn info(interval: &Interval) -> Family {
    let env = &interval.environment;
    let lowest = env.devices.last();
    let mut info = Family::new(
        "syncbench_watch_info",
        "",
        "1; the lowest device, its model, the kernel, the virtualization and the write cache as labels.",
    );
    info.push(
        vec![
            ("device", lowest.map(|d| d.name.clone()).unwrap_or_default()),
            ("model", lowest.and_then(|d| d.model.clone()).unwrap_or_default()),
            ("kernel", env.kernel.clone()),
            ("virtualization", super::interval::virtualization(&env.virtualization)),
            ("write_cache", lowest.and_then(|d| d.write_cache.clone()).unwrap_or_default()),
        ],
        1.0,
    );
    info
}

fn bookkeeping_families(inputs: &Inputs<'_>) -> Vec<Family> {
    let (interval, j, state) = (inputs.interval, inputs.judgement, inputs.state);
    let gauge = |name, unit, help, value: Option<f64>| {
        let mut f = Family::new(name, unit, help);
        if let Some(v) = value {
            f.push(Vec::new(), v);
        }
        f
    };
    let yes = |b: bool| f64::from(u8::from(b));
    vec![
        gauge(
            "syncbench_watch_etcd_rule_pass",
            "",
            "1 when the etcd case's p99 is under 10 ms this interval, 0 when not.",
            interval.etcd_rule_pass().map(yes),
        ),
        gauge(
            "syncbench_watch_disturbed",
            "",
            "1 when something else dominated this interval: other I/O, CPU steal, or the commit chain starved of CPU (not a change).",
            Some(yes(j.disturbed)),
        ),
        disturbed_causes(interval, j),
        gauge(
            "syncbench_watch_cpu_wait_ratio",
            "",
            "Time the commit chain (watch's threads, a lab disk's server) waited on a CPU run queue while the cases ran, divided by that wall time; at 0.25 or more the interval is disturbed (cpu_starved).",
            interval.cpu_wait.map(|w| w.share()),
        ),
        gauge(
            "syncbench_watch_baseline_intervals",
            "",
            "Intervals in the baseline (fewer than 8: still learning, no change is judged).",
            Some(j.baseline_len as f64),
        ),
        gauge("syncbench_watch_interval_seconds", "seconds", "The --every setting.", Some(inputs.every_secs)),
        gauge(
            "syncbench_watch_last_success_timestamp_seconds",
            "seconds",
            "Unix time this interval finished.",
            Some(inputs.finished_unix_s),
        ),
        gauge(
            "syncbench_watch_measure_seconds",
            "seconds",
            "Time spent measuring in this interval.",
            Some(interval.measure_secs),
        ),
        gauge(
            "syncbench_watch_duty_ratio",
            "",
            "Time spent measuring divided by wall time, over the recent intervals.",
            state.duty_ratio(),
        ),
        gauge(
            "syncbench_watch_device_busy_ratio",
            "",
            "Time the lowest block device was busy (io_ticks) while watch measured divided by wall time, over the recent intervals; other I/O in those windows counts too.",
            state.device_busy_ratio(),
        ),
        gauge(
            "syncbench_watch_bytes_written_per_hour",
            "",
            "The most the canary writes per hour (its bound, printed at start).",
            Some(inputs.bytes_per_hour_max as f64),
        ),
    ]
}

/// `syncbench_watch_disturbed_cause`: 1 for each cause that disturbed this interval.
fn disturbed_causes(interval: &Interval, j: &Judgement) -> Family {
    let mut family = Family::new(
        "syncbench_watch_disturbed_cause",
        "",
        "1 for each cause that disturbed this interval: device_io, cpu_steal, other_syncbench, cpu_starved, above_device (slower while the device's own time per commit was not).",
    );
    for (cause, _) in interval.disturbance_causes() {
        family.push(vec![("cause", cause.to_string())], 1.0);
    }
    if j.disturbed && !j.above_device.is_empty() {
        family.push(vec![("cause", "above_device".to_string())], 1.0);
    }
    family
}

/// The severity as the JSON spells it.
fn severity(s: crate::core::verdict::Severity) -> &'static str {
    match s {
        crate::core::verdict::Severity::Info => "info",
        crate::core::verdict::Severity::Warning => "warning",
        crate::core::verdict::Severity::Critical => "critical",
    }
}
