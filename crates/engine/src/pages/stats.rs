//! The page store's counters for the benchmark.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters for the benchmark (monotonic since open).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StoreStats {
    /// Log bytes appended (record headers included).
    pub wal_bytes: u64,
    /// Of which full-page images.
    pub fpi_bytes: u64,
    /// Log syncs.
    pub wal_syncs: u64,
    /// Page bytes written to data files.
    pub home_bytes: u64,
    /// Page bytes written to the double-write area.
    pub dw_bytes: u64,
    /// fsync/fdatasync calls on data files and the double-write area.
    pub data_syncs: u64,
    /// Pages written by client evictions (synchronously).
    pub eviction_writes: u64,
    /// Of which waited for their own double-write and its sync (every dirty eviction in the 2012
    /// design; in `pipelined`, those with no durable copy in the ring).
    pub evictions_waited_for_dw: u64,
    /// Syncs of the double-write area (included in `data_syncs`).
    pub dw_syncs: u64,
    /// `pipelined`: pages spooled into the ring ahead of being written home.
    pub dw_pages_spooled: u64,
    /// `pipelined`: of which copies of a page spooled again within the checkpoint cycle of its previous
    /// copy (which would have covered it, but its ring batch was recycled first): wasted work.
    pub dw_pages_respooled: u64,
    /// Completed checkpoints.
    pub checkpoints: u64,
    /// Their total duration.
    pub checkpoint_secs_total: f64,
    /// Pages restored from the double-write area by the last recovery.
    pub dw_restored_pages: u64,
    /// Log records replayed by the last recovery.
    pub redo_records: u64,
    /// Reads the last recovery's scan of the double-write area took (`dw_scan_read_bytes` each).
    pub dw_scan_reads: u64,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) wal_bytes: AtomicU64,
    pub(super) fpi_bytes: AtomicU64,
    pub(super) home_bytes: AtomicU64,
    pub(super) dw_bytes: AtomicU64,
    pub(super) data_syncs: AtomicU64,
    pub(super) eviction_writes: AtomicU64,
    pub(super) evictions_waited_for_dw: AtomicU64,
    pub(super) dw_syncs: AtomicU64,
    pub(super) dw_pages_spooled: AtomicU64,
    pub(super) dw_pages_respooled: AtomicU64,
    pub(super) checkpoints: AtomicU64,
    pub(super) checkpoint_ns_total: AtomicU64,
    pub(super) dw_restored_pages: AtomicU64,
    pub(super) redo_records: AtomicU64,
    pub(super) dw_scan_reads: AtomicU64,
}

pub(super) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    /// The counters as a snapshot; `wal_syncs` comes from the log.
    pub(super) fn snapshot(&self, wal_syncs: u64) -> StoreStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StoreStats {
            wal_bytes: get(&self.wal_bytes),
            fpi_bytes: get(&self.fpi_bytes),
            wal_syncs,
            home_bytes: get(&self.home_bytes),
            dw_bytes: get(&self.dw_bytes),
            data_syncs: get(&self.data_syncs),
            eviction_writes: get(&self.eviction_writes),
            evictions_waited_for_dw: get(&self.evictions_waited_for_dw),
            dw_syncs: get(&self.dw_syncs),
            dw_pages_spooled: get(&self.dw_pages_spooled),
            dw_pages_respooled: get(&self.dw_pages_respooled),
            checkpoints: get(&self.checkpoints),
            checkpoint_secs_total: get(&self.checkpoint_ns_total) as f64 / 1e9,
            dw_restored_pages: get(&self.dw_restored_pages),
            redo_records: get(&self.redo_records),
            dw_scan_reads: get(&self.dw_scan_reads),
        }
    }
}
