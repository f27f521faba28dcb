//! What the block devices under a directory did for a case, as `run`, `commit` and `pages` record it:
//! plain data the result types embed. `observe::blockdev` fills it in (and holds the logic: pooling,
//! per-commit figures, the request recorder); its modules re-export these types under their old names.

use super::LatencyNs;
use serde::{Deserialize, Serialize};

/// What the commits of one window (or of a case's rounds together) cost the devices.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceAccounting {
    /// Commits timed in the window(s): every count below is divided by it for "per commit".
    pub commits: u64,
    /// Each block device under the directory: the file system's device first, the lowest disk last.
    pub devices: Vec<DeviceReport>,
    /// Set when requests that were not the commits' reached a device in the window (a sentence with the
    /// numbers): the counts then include them and are not the commits' cost alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unattributable: Option<String>,
    /// Tracepoint samples the kernel dropped (rings full) or skipped (eBPF programs' recursion misses,
    /// counted from Linux 6.7): the per-request figures are low when non-zero.
    #[serde(skip_serializing_if = "is_zero")]
    pub trace_lost_samples: u64,
    /// What read the block tracepoints: `bpf` (eBPF programs) or `perf` (perf events). Absent without
    /// the tracepoints, or when rounds were read by different ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_reader: Option<String>,
    /// Why the per-request counts (`requests`) may miss requests, when they may: read by perf events,
    /// records lost, skipped runs this kernel does not count, or fewer than `/sys/block` counted. The
    /// columns then take the kernel's counters and leave the device time out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_incomplete: Option<String>,
    /// Time the lowest traced device spent on the window's flushes and writes, per commit (ns; requests
    /// summed one after another). `None` without the tracepoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_ns_per_commit: Option<f64>,
    /// On a `syncbench lab` disk: what the emulated device itself received in the same window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulated: Option<EmulatedCounts>,
}

/// The lab device model's own counters over a window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EmulatedCounts {
    /// Writes it received.
    pub writes: u64,
    /// Bytes they carried.
    pub write_bytes: u64,
    /// Flushes it received.
    pub flushes: u64,
}

/// One disk over one window: the counters, and the per-request view when the tracepoints were on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    /// Kernel name (`vda`, `nvme0n1`, `dm-0`).
    pub disk: String,
    /// `MAJOR:MINOR`.
    pub dev: String,
    /// Whether the kernel sends it flushes at all (`queue/write_cache` is `write back`); with
    /// `write through` an fsync issues no flush and the device's own cache, if any, is trusted.
    pub write_cache: String,
    /// Counter deltas from `/sys/block/DISK/stat`.
    pub stat: StatDelta,
    /// Per-request figures from the block tracepoints (`None` when they were not recorded).
    pub requests: Option<RequestReport>,
}

/// What one disk did between two snapshots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatDelta {
    /// Reads completed.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Writes completed (merged requests count once).
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Total time of the writes, ms (summed over requests, so overlapping requests add up).
    pub write_ms: u64,
    /// Flush requests completed.
    pub flushes: u64,
    /// Time the device was busy (at least one request in flight), ms: wall time, overlaps counted once.
    #[serde(default)]
    pub busy_ms: u64,
    /// Total time of the flushes, ms.
    pub flush_ms: u64,
    /// Mean flush time, ms (`flush_ms / flushes`; the kernel counts whole milliseconds per request, so
    /// sub-millisecond flushes read low: the tracepoints give the real figure).
    pub flush_mean_ms: f64,
}

/// What one disk's request queue saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestReport {
    /// Cache flushes (`REQ_OP_FLUSH`, what an fsync's `REQ_PREFLUSH` becomes).
    pub flushes: KindReport,
    /// Writes.
    pub writes: KindReport,
    /// Of the writes, those with `REQ_FUA`.
    pub fua_writes: u64,
    /// Of the writes, those with `REQ_SYNC`.
    pub sync_writes: u64,
    /// Of the writes, those still carrying `REQ_PREFLUSH` at issue (a device that handles the flush itself).
    pub preflush_writes: u64,
    /// Reads.
    pub reads: KindReport,
    /// Requests that completed with an error.
    pub errors: u64,
    /// Completions whose issue was not seen (issued before the window) and issues never completed in it.
    pub unmatched: u64,
    /// Write completions of zero sectors, from the block layer's flush sequences: an fsync's empty
    /// `REQ_PREFLUSH` write (never issued to the device, the flush request above did the work;
    /// `/sys/block/*/stat` counts it as a write), and, on a device without FUA, the second, empty
    /// completion of a PREFLUSH/FUA data write such as a journal commit block (its data completed as a
    /// write request before; the stat counts that write once). So write requests + these >= the stat's
    /// writes, equal when no data write carried a flush. Absent (0) in files from before it was recorded.
    #[serde(default)]
    pub flush_carriers: u64,
}

/// Requests of one kind on one disk: how many, how many bytes, and how long the device took.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KindReport {
    /// Requests completed in the window, as the kernel's counters count them (the latency is of those whose
    /// issue was seen too).
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// Device-side latency, issue → completion.
    pub latency_ns: LatencyNs,
    /// Requests whose issue was seen too: the ones `latency_ns` is of (`count` also has completions whose
    /// issue came before the window). Absent (0) in files from before it was recorded.
    #[serde(default)]
    pub timed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
