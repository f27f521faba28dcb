//! Aggregates of what the tracer saw: per call and per (file, call), the latencies in `run`'s recorder
//! ([`Samples`]) and the bytes written between syncs.

use super::calls::SyncCall;
use crate::core::schema::{LatencyNs, Log2Bucket};
use crate::core::stats::Samples;
use std::collections::{BTreeMap, HashMap};

/// Latencies and counts of one call type (on one file, or overall).
#[derive(Debug, Default)]
pub struct CallStats {
    /// Calls `--no-sync` skipped (or made non-durable).
    pub skipped: u64,
    /// Timed calls that returned an error.
    pub errors: u64,
    /// The timed calls' latencies: `run`'s recorder, so `latency_ns` means what it means there.
    latency: Samples,
    /// Bytes written to the file since its previous sync, one sample per sync (or the bytes of a durable
    /// write itself).
    bytes: Vec<u64>,
}

/// Summary of the bytes-between-syncs samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BytesSummary {
    /// Samples (syncs, or durable writes).
    pub samples: u64,
    /// Sum, bytes.
    pub total: u64,
    /// Mean per sample, bytes.
    pub mean: f64,
    /// Median, bytes.
    pub p50: u64,
    /// Largest, bytes.
    pub max: u64,
}

impl CallStats {
    /// A call that ran and took `ns`.
    pub fn record(&mut self, ns: u64, failed: bool) {
        self.latency.record(ns);
        self.errors += u64::from(failed);
    }

    /// Add another's calls to these (the same call type on several files of one disk).
    pub fn merge(&mut self, other: &CallStats) {
        self.skipped += other.skipped;
        self.errors += other.errors;
        self.latency.merge(&other.latency);
        self.bytes.extend_from_slice(&other.bytes);
    }

    /// A bytes-between-syncs sample.
    pub fn record_bytes(&mut self, bytes: u64) {
        self.bytes.push(bytes);
    }

    /// All calls seen, timed or skipped.
    pub fn count(&self) -> u64 {
        self.timed() + self.skipped
    }

    /// Calls that ran and were timed.
    pub fn timed(&self) -> u64 {
        self.latency.count()
    }

    /// Sum of the timed latencies, ns.
    pub fn total_ns(&self) -> u64 {
        self.latency.sum_ns()
    }

    /// The timed calls' latency summary (all zero when none were timed); see [`Samples`] for its meaning.
    pub fn latency_ns(&self) -> LatencyNs {
        self.latency.latency()
    }

    /// Non-empty log2 buckets, fastest first.
    pub fn histogram_log2(&self) -> Vec<Log2Bucket> {
        self.latency.log2_buckets()
    }

    /// Summary of the bytes samples.
    pub fn bytes_summary(&self) -> BytesSummary {
        if self.bytes.is_empty() {
            return BytesSummary::default();
        }
        let mut sorted = self.bytes.clone();
        sorted.sort_unstable();
        let total: u64 = sorted.iter().sum();
        BytesSummary {
            samples: sorted.len() as u64,
            total,
            mean: total as f64 / sorted.len() as f64,
            p50: sorted[sorted.len() / 2],
            max: *sorted.last().unwrap_or(&0),
        }
    }
}

/// Where a call went: a file path, or a description (`(all file systems)` for sync).
pub type Target = String;

/// Everything the tracer recorded.
#[derive(Debug, Default)]
pub struct Recorder {
    /// Per call type.
    pub by_call: BTreeMap<SyncCall, CallStats>,
    /// Per (target, call type).
    pub by_file: BTreeMap<(Target, SyncCall), CallStats>,
    /// Files opened with O_SYNC/O_DSYNC: path → opens.
    pub sync_opens: BTreeMap<String, u64>,
    /// Bytes written to each file since its last sync.
    pending_bytes: HashMap<String, u64>,
    /// Whether plain writes are seen at all (not with `--syncs-only`): without them a sync has no
    /// bytes-between-syncs sample rather than a wrong 0.
    pub writes_seen: bool,
}

impl Recorder {
    /// An empty recorder; `writes_seen` says whether plain writes will be reported.
    pub fn new(writes_seen: bool) -> Recorder {
        Recorder { writes_seen, ..Recorder::default() }
    }

    /// A plain (buffered) write of `bytes` to `path`.
    pub fn wrote(&mut self, path: &str, bytes: u64) {
        *self.pending_bytes.entry(path.to_string()).or_default() += bytes;
    }

    /// A durability call on `target` that ran and took `ns` (`None` when skipped by `--no-sync`).
    /// For syncs of one file, the bytes written to it since its last sync become a sample; for durable
    /// writes, `written` (the write's own bytes) is the sample.
    pub fn call(&mut self, call: SyncCall, target: &str, ns: Option<u64>, failed: bool, written: u64) {
        let bytes = match call {
            _ if call.is_durable_write() => Some(written),
            // sync_file_range makes nothing durable: the bytes stay pending for the next real sync.
            SyncCall::SyncFileRange if self.writes_seen => Some(self.pending_bytes.get(target).copied().unwrap_or(0)),
            SyncCall::Fsync | SyncCall::Fdatasync | SyncCall::Msync if self.writes_seen => {
                Some(self.pending_bytes.remove(target).unwrap_or(0))
            }
            // syncfs and sync flush many files: the per-file counters are reset, no sample is taken.
            _ => {
                self.pending_bytes.clear();
                None
            }
        };
        for stats in
            [self.by_call.entry(call).or_default(), self.by_file.entry((target.to_string(), call)).or_default()]
        {
            match ns {
                Some(ns) => stats.record(ns, failed),
                None => stats.skipped += 1,
            }
            if let Some(b) = bytes {
                stats.record_bytes(b);
            }
        }
    }

    /// A file with pending bytes was renamed (seen at its next sync): the bytes follow it.
    pub fn renamed(&mut self, old: &str, new: &str) {
        if let Some(bytes) = self.pending_bytes.remove(old) {
            *self.pending_bytes.entry(new.to_string()).or_default() += bytes;
        }
    }

    /// A file opened with O_SYNC or O_DSYNC.
    pub fn opened_sync(&mut self, path: &str) {
        *self.sync_opens.entry(path.to_string()).or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_between_syncs_are_per_file() {
        let mut r = Recorder::new(true);
        r.wrote("/a", 8192);
        r.wrote("/a", 8192);
        r.wrote("/b", 100);
        r.call(SyncCall::Fdatasync, "/a", Some(1000), false, 0);
        r.call(SyncCall::Fdatasync, "/a", Some(3000), false, 0);
        let a = &r.by_file[&("/a".to_string(), SyncCall::Fdatasync)];
        assert_eq!(a.bytes_summary().total, 16384);
        assert_eq!(a.bytes_summary().max, 16384);
        assert_eq!(a.bytes_summary().samples, 2);
        assert_eq!(a.latency_ns().max, 3000);
        assert_eq!(
            a.histogram_log2(),
            vec![Log2Bucket { lower_ns: 512, count: 1 }, Log2Bucket { lower_ns: 2048, count: 1 }]
        );
    }

    #[test]
    fn sync_file_range_keeps_bytes_pending_for_the_next_sync() {
        let mut r = Recorder::new(true);
        r.wrote("/b", 100);
        r.call(SyncCall::SyncFileRange, "/b", Some(10), false, 0);
        r.wrote("/b", 50);
        r.call(SyncCall::Fsync, "/b", Some(10), false, 0);
        assert_eq!(r.by_file[&("/b".to_string(), SyncCall::SyncFileRange)].bytes_summary().total, 100);
        assert_eq!(r.by_file[&("/b".to_string(), SyncCall::Fsync)].bytes_summary().total, 150);
    }

    #[test]
    fn pending_bytes_follow_a_rename() {
        let mut r = Recorder::new(true);
        r.wrote("/d.tmp/wal", 96);
        r.renamed("/d.tmp/wal", "/d/wal");
        r.call(SyncCall::Fdatasync, "/d/wal", Some(10), false, 0);
        assert_eq!(r.by_file[&("/d/wal".to_string(), SyncCall::Fdatasync)].bytes_summary().total, 96);
    }

    #[test]
    fn merged_stats_hold_both_sides() {
        let (mut a, mut b) = (CallStats::default(), CallStats::default());
        a.record(1_000, false);
        b.record(9_000, true);
        b.record(5_000, false);
        a.merge(&b);
        let lat = a.latency_ns();
        assert_eq!((a.timed(), a.errors, a.total_ns(), lat.min, lat.max), (3, 1, 15_000, 1_000, 9_000));
        assert!((5_000..=5_005).contains(&lat.p50), "{lat:?}");
        assert_eq!(a.histogram_log2().iter().map(|b| b.count).sum::<u64>(), 3);
    }

    #[test]
    fn skipped_calls_are_counted_not_timed() {
        let mut r = Recorder::new(true);
        r.call(SyncCall::Fsync, "/a", None, false, 0);
        r.call(SyncCall::WriteOdsync, "/w", None, false, 512);
        let fsync = &r.by_call[&SyncCall::Fsync];
        assert_eq!((fsync.count(), fsync.timed(), fsync.skipped), (1, 0, 1));
        assert_eq!(fsync.latency_ns(), LatencyNs::default());
        assert_eq!(r.by_call[&SyncCall::WriteOdsync].bytes_summary().total, 512);
    }
}
