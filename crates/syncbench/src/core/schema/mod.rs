//! The JSON schema `syncbench/v1`: the envelope every command writes, and `run`'s results.
//!
//! Fields are added, never renamed, within v1. Units go at the end of names. Every payload type is
//! defined once, next to the code that measures it, and read back with the same type
//! ([`crate::core::export::read_any`]): a field an older file lacks takes its default (`#[serde(default)]`),
//! except the few that say what a record is (a case's `section`, `method` and `file_state`).

pub mod device;
pub mod regimes;

use self::device::DeviceAccounting;
use crate::core::environment::Environment;
use crate::core::method::SyncMethod;
use crate::core::suite::{FileState, Pattern, Section};
use crate::core::verdict::Verdict;
use serde::{Deserialize, Serialize};

/// Schema identifier written into every JSON document.
pub const SCHEMA: &str = "syncbench/v1";

/// The envelope shared by every command's JSON.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope<T> {
    /// Always `syncbench/v1`.
    pub schema: String,
    /// syncbench's version.
    #[serde(default)]
    pub version: String,
    /// When the command started (RFC 3339, UTC).
    #[serde(default)]
    pub started_at: String,
    /// The command line as typed (argv joined).
    #[serde(default)]
    pub command: String,
    /// What the target is: file system, mount, device chain, caches, virtualization.
    #[serde(default)]
    pub environment: Environment,
    /// Conclusions about durability and plausibility.
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
    /// The command's own payload, flattened into the document.
    #[serde(flatten)]
    pub payload: T,
}

impl<T> Envelope<T> {
    /// A new envelope stamped with the schema, version, start time and command line.
    pub fn new(started_at: String, environment: Environment, verdicts: Vec<Verdict>, payload: T) -> Self {
        let command = std::env::args().collect::<Vec<_>>().join(" ");
        Envelope {
            schema: SCHEMA.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            started_at,
            command,
            environment,
            verdicts,
            payload,
        }
    }
}

/// `run`'s payload.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunPayload {
    /// The directory measured.
    pub dir: String,
    /// Access pattern: `sequential` (advance through the file and wrap, like a WAL) or `rewrite` (offset 0).
    pub pattern: Pattern,
    /// One entry per measured case.
    pub results: Vec<CaseResult>,
    /// Interrupted (Ctrl-C, SIGTERM) before every round of every case ran: the results are what was
    /// finished, each case from the rounds it completed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// `--background-writes`: every case measured again under background writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_writes: Option<BackgroundRun>,
    /// Whether the device switched between latency regimes during the run, and how often (absent when no
    /// durable case had enough windows to tell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regimes: Option<regimes::RunRegimes>,
}

/// Latency percentiles of one case, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencyNs {
    /// Fastest commit.
    pub min: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Slowest commit.
    pub max: u64,
    /// Standard deviation.
    pub stddev: f64,
}

/// One log2 latency bucket: commits with `lower_ns <= latency < 2*lower_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log2Bucket {
    /// Lower bound of the bucket, in nanoseconds (a power of two).
    pub lower_ns: u64,
    /// Commits in the bucket.
    pub count: u64,
}

/// One measured case: a method, a write pattern and a file state.
///
/// `section`, `method` and `file_state` say which case it is: every syncbench wrote them, so a file without
/// them is refused (naming the field) rather than filed as a one_write/fdatasync/overwrite case. Every
/// other field an older file lacks takes its default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// Which part of the suite (`one_write`, `two_writes`, `write_sizes`, `close_then_sync`, `no_sync`,
    /// `size_sweep`, `file_state`).
    pub section: Section,
    /// Method name (VISION.md vocabulary, e.g. `open_datasync+direct`).
    pub method: SyncMethod,
    /// Human-readable label of the case inside its section.
    #[serde(default)]
    pub label: String,
    /// Whether a commit by this method is durable when it returns.
    #[serde(default)]
    pub durable: bool,
    /// Whether the platform and file system accepted the method.
    #[serde(default)]
    pub supported: bool,
    /// Why not, when unsupported or failed: errno name and a plain sentence.
    #[serde(default)]
    pub error: Option<String>,
    /// Bytes per write.
    #[serde(default)]
    pub write_size_bytes: u64,
    /// Writes per commit.
    #[serde(default)]
    pub writes_per_commit: u32,
    /// `overwrite`, `append` or `fallocate`.
    pub file_state: FileState,
    /// Commits timed.
    #[serde(default)]
    pub ops: u64,
    /// Commits per second (ops / total timed seconds).
    #[serde(default)]
    pub ops_per_s: f64,
    /// Bytes written per second.
    #[serde(default)]
    pub bytes_per_s: f64,
    /// Commit latency percentiles.
    #[serde(default)]
    pub latency_ns: LatencyNs,
    /// Half-width of the 95% confidence interval of the mean, relative to the mean.
    #[serde(default)]
    pub ci95_rel: f64,
    /// Seconds spent timing (excluding warmup and preparation).
    #[serde(default)]
    pub duration_s: f64,
    /// Outliers: commits slower than p50 + 10×(p90-p50)... as a fraction of ops.
    #[serde(default)]
    pub outlier_fraction: f64,
    /// Log2 histogram of commit latency (non-empty buckets only).
    #[serde(default)]
    pub histogram_log2: Vec<Log2Bucket>,
    /// Why timing stopped; absent when the case did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Commits run before timing started (not counted in `ops`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_ops: u64,
    /// Commits per second of each round, in the order the rounds ran (the case is measured in several
    /// short rounds, the cases reordered every round; `ci95_rel` counts the spread between them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds_ops_per_s: Vec<f64>,
    /// The part of `ci95_rel` from the commits alone, as if they were independent draws (within rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_rel_within: Option<f64>,
    /// 10th percentile of commit latency, ns (the fast phase of a device that alternates between phases;
    /// absent in files from before rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_p10: Option<u64>,
    /// A change of speed during the case (between rounds or halves of them), in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
    /// What else touched the device or the CPU while this case ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbances: Vec<Disturbance>,
    /// Lower end of the 95% interval in which a re-run's `ops_per_s` is expected (prediction interval over
    /// the rounds; absent in files from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_s_low: Option<f64>,
    /// Upper end; absent when `lower_bound` (the interval is open upwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_s_high: Option<f64>,
    /// Disturbed in too many rounds to leave them out: `ops_per_s` is what a disturbed disk gave, and a
    /// disturbance only slows syncs, so it bounds the undisturbed rate from below (printed `≥ ops_per_s`);
    /// `ops_per_s_low` is where a re-run, disturbed again, may land (what comparisons use).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// What the timed commits made each block device under the directory do (real runs on a block device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceAccounting>,
    /// 99.99th percentile of commit latency, ns: only with at least 10,000 commits (fewer cannot place it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_p9999: Option<u64>,
    /// The commits switched between two distinct latency regimes (see `measure::regimes`): each one's
    /// median, share of the time and windows. Absent when they did not (steady, noisy, drifting, or too
    /// few windows to tell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regimes: Option<regimes::Regimes>,
    /// `--log`: the commits over time, one entry per window of up to 100 ms (start on the run's axis, its
    /// commits, median and slowest commit, and its regime when there are regimes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_log: Vec<regimes::Window>,
}

crate::core::named::named_enum! {
    /// Why a case's timed loop ended.
    pub enum StopReason ("stop reason") {
        /// The 95% CI of the mean was within the target.
        Converged = "converged",
        /// The time budget was spent.
        Budget = "budget",
        /// The file region (append or fallocate) was used up.
        FileFull = "file_full",
    }
}

crate::core::named::named_enum! {
    /// What disturbed a case. A kind a newer syncbench writes reads as `other`.
    #[derive(Default)]
    pub enum DisturbanceKind ("disturbance kind") else Other {
        /// Requests on the device that were not ours.
        #[default]
        DeviceIo = "device_io",
        /// The hypervisor took CPU time from this machine.
        CpuSteal = "cpu_steal",
        /// Another syncbench ran at the same time.
        OtherSyncbench = "other_syncbench",
        /// A kind this syncbench does not know.
        Other = "other",
    }
}

impl DisturbanceKind {
    /// The kind in a sentence.
    pub fn words(self) -> &'static str {
        match self {
            DisturbanceKind::DeviceIo => "device I/O not ours",
            DisturbanceKind::CpuSteal => "CPU steal",
            DisturbanceKind::OtherSyncbench => "another syncbench",
            DisturbanceKind::Other => "other",
        }
    }
}

/// One thing that disturbed a case.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Disturbance {
    /// What kind of disturbance.
    pub kind: DisturbanceKind,
    /// What was seen, in a sentence with the numbers.
    pub detail: String,
    /// `device_io`: bytes written on the device that were not ours, summed over the disturbed rounds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub foreign_write_bytes: u64,
    /// `device_io`: bytes read on the device (we read nothing).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub foreign_read_bytes: u64,
    /// `device_io`: flushes that were not ours.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub foreign_flushes: u64,
    /// `device_io`: the rounds (1-based) that saw them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<usize>,
    /// `cpu_steal`: the share of CPU time the hypervisor took while the case ran, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_pct: Option<f64>,
}

/// `run`'s cases measured again under background writes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackgroundRun {
    /// What the background writer did.
    pub writer: BackgroundStats,
    /// Every case again, in the plan's order, measured while the writer ran (the idle results are the
    /// document's `results`). Device counts include the writer's write-back: they say so.
    pub results: Vec<CaseResult>,
}

/// What the background writer did while it ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackgroundStats {
    /// The rate asked for (`50 MiB/s`, `max`).
    pub rate: String,
    /// Bytes it wrote (dirtied in the page cache).
    pub bytes_written: u64,
    /// Seconds it ran.
    pub duration_s: f64,
    /// `bytes_written / duration_s`: below the rate asked when the kernel throttled it.
    pub bytes_per_s: f64,
    /// Why the part under writes failed (the writer could not start, a write of it failed, or the
    /// measurement under it did): its results are then left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// For `#[serde(default = "yes")]`: a flag an older file did not write that was true when it was written.
pub fn yes() -> bool {
    true
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The current time as RFC 3339 UTC (`2026-11-21T23:49:50Z`), for `started_at`.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    rfc3339_from_unix(secs)
}

/// Format seconds since the Unix epoch as RFC 3339 UTC (civil-from-days, Howard Hinnant's algorithm).
pub fn rfc3339_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_from_unix(1_795_219_200 + 3_723), "2026-11-21T01:02:03Z");
    }

    /// Every serde struct in the crate's source, with its field names.
    fn serde_structs() -> Vec<(String, std::collections::BTreeSet<String>)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let (mut dirs, mut found) = (vec![root.clone()], Vec::new());
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()) {
                if entry.is_dir() {
                    dirs.push(entry);
                } else if entry.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&entry).unwrap();
                    let lines: Vec<&str> = text.lines().collect();
                    for (i, line) in lines.iter().enumerate() {
                        let Some(rest) =
                            line.trim_start().strip_prefix("pub struct ").or(line.trim_start().strip_prefix("struct "))
                        else {
                            continue;
                        };
                        let derives = lines[i.saturating_sub(4)..i].join(" ");
                        if !rest.ends_with('{') || !(derives.contains("Serialize") || derives.contains("Deserialize")) {
                            continue;
                        }
                        let indent = line.len() - line.trim_start().len();
                        let fields = lines[i + 1..]
                            .iter()
                            .take_while(|l| !(l.trim() == "}" && l.len() - l.trim_start().len() == indent))
                            .filter_map(|l| l.trim().trim_start_matches("pub ").split_once(':').map(|(name, _)| name))
                            .filter(|name| {
                                name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                            })
                            .map(str::to_string)
                            .collect();
                        let name = rest.split([' ', '<']).next().unwrap_or_default();
                        found.push((format!("{}: {name}", entry.strip_prefix(&root).unwrap().display()), fields));
                    }
                }
            }
        }
        found
    }

    #[test]
    fn each_payload_type_is_defined_once() {
        // A reader's own copy of a writer's type (the same fields under the same or another name) is how a
        // file one command accepts came to be refused by another. Two serde structs where one's four or
        // more fields are all fields of the other are such a copy.
        let structs = serde_structs();
        assert!(structs.len() > 30, "the scan found {} serde structs", structs.len());
        let mut copies = Vec::new();
        for (i, (a, fa)) in structs.iter().enumerate() {
            for (b, fb) in &structs[i + 1..] {
                let (small, big) = if fa.len() <= fb.len() { (fa, fb) } else { (fb, fa) };
                if small.len() >= 4 && small.is_subset(big) {
                    copies.push(format!("{a} ~ {b}"));
                }
            }
        }
        assert!(copies.is_empty(), "payload types defined twice: {copies:?}");
    }
}
