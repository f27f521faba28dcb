//! What the page store needs from a write-ahead log: [`PageLog`], implemented by the reference WAL
//! ([`crate::wal::Wal`]).
//!
//! LSNs are whatever the log says, as long as they increase with every record: the page store stamps a
//! page with the LSN `append` returned and treats a record as durable once `flushed_lsn` reaches it.

use super::error::{PageError, PageResult};
use super::page::Lsn;
use crate::storage::Storage;
use std::path::Path;

/// One recovered log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// Its LSN (increasing).
    pub lsn: Lsn,
    /// Record type, owned by the caller.
    pub kind: u8,
    /// Record body.
    pub payload: Vec<u8>,
}

/// Counters a log keeps about itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Bytes written to the log (headers included).
    pub bytes: u64,
    /// Syncs issued (one per group commit).
    pub syncs: u64,
    /// Bytes of an interrupted flush that opening the log zeroed behind the recovered end.
    pub stale_tail_bytes_zeroed: u64,
    /// The log's size boundaries crossed: segment ends (exact, padded, skipped) and batches cut at the
    /// group's byte limit (see `WalStats`).
    pub boundaries: [u64; 4],
}

/// A write-ahead log as the page store uses it.
pub trait PageLog: Send + Sync {
    /// Append a record to the in-memory tail; durable only after `flush_to` covers its LSN.
    fn append(&self, kind: u8, payload: &[u8]) -> PageResult<Lsn>;
    /// A transaction's commit: return once `lsn` is durable (group commit).
    fn commit(&self, lsn: Lsn) -> PageResult<()> {
        self.flush_to(lsn)
    }
    /// Return once every record up to `lsn` is durable (the write-ahead rule before a page write).
    fn flush_to(&self, lsn: Lsn) -> PageResult<()>;
    /// Highest LSN known durable.
    fn flushed_lsn(&self) -> Lsn;
    /// Highest LSN appended (0 when none).
    fn last_lsn(&self) -> Lsn;
    /// Records at or below `lsn` are no longer needed by recovery (a log may recycle their space).
    fn truncate_before(&self, lsn: Lsn) -> PageResult<()>;
    /// Counters.
    fn stats(&self) -> LogStats;
    /// Bytes a record with this payload takes in the log, header included.
    fn record_bytes(&self, payload_len: usize) -> u64;
    /// Commits asleep waiting for a flush (for a deterministic crash-test scheduler).
    fn waiting_commits(&self) -> usize {
        0
    }
}

/// The reference WAL. Its LSNs are byte positions and `append` returns a record's END, so a page stamped
/// with it is covered exactly when `flushed_lsn` reaches it; recovered records are handed to the page
/// store by their end LSN.
impl<S: Storage> PageLog for crate::wal::Wal<S> {
    fn append(&self, kind: u8, payload: &[u8]) -> PageResult<Lsn> {
        crate::wal::Wal::append(self, kind, payload).map_err(PageError::Wal)
    }

    fn commit(&self, lsn: Lsn) -> PageResult<()> {
        crate::wal::Wal::commit(self, lsn).map_err(PageError::Wal)
    }

    fn flush_to(&self, lsn: Lsn) -> PageResult<()> {
        crate::wal::Wal::flush_to(self, lsn).map_err(PageError::Wal)
    }

    fn flushed_lsn(&self) -> Lsn {
        crate::wal::Wal::flushed_lsn(self)
    }

    fn last_lsn(&self) -> Lsn {
        self.appended_lsn()
    }

    fn truncate_before(&self, lsn: Lsn) -> PageResult<()> {
        crate::wal::Wal::truncate_before(self, lsn).map(|_retired| ()).map_err(PageError::Wal)
    }

    fn stats(&self) -> LogStats {
        let s = crate::wal::Wal::stats(self);
        LogStats {
            bytes: s.bytes_written,
            syncs: s.flushes,
            stale_tail_bytes_zeroed: s.stale_tail_bytes_zeroed,
            boundaries: s.boundaries(),
        }
    }

    fn record_bytes(&self, payload_len: usize) -> u64 {
        crate::wal::record::encoded_len(payload_len) as u64
    }

    fn waiting_commits(&self) -> usize {
        crate::wal::Wal::waiting_commits(self)
    }
}

/// Open (or create) the reference WAL in `dir` for a page store; records come back by end LSN.
pub fn open_wal<S: Storage>(
    storage: S,
    dir: &Path,
    config: crate::wal::WalConfig,
) -> PageResult<(crate::wal::Wal<S>, Vec<LogRecord>)> {
    let (wal, records) = crate::wal::Wal::open(storage, dir, config).map_err(PageError::Wal)?;
    let records = records.into_iter().map(|r| LogRecord { lsn: r.end_lsn, kind: r.kind, payload: r.payload }).collect();
    Ok((wal, records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RealStorage;

    #[test]
    fn wal_as_page_log_stamps_end_lsns_and_recovers_them() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::wal::WalConfig { segment_bytes: 1 << 20, ..Default::default() };
        let (log, old) = open_wal(RealStorage, dir.path(), config.clone()).unwrap();
        assert!(old.is_empty());
        let a = PageLog::append(&log, 1, b"first").unwrap();
        let b = PageLog::append(&log, 2, &[9u8; 300]).unwrap();
        assert!(b > a && PageLog::last_lsn(&log) == b);
        assert!(PageLog::flushed_lsn(&log) < a, "appended, not yet durable");
        PageLog::flush_to(&log, a).unwrap();
        assert!(PageLog::flushed_lsn(&log) >= a);
        PageLog::commit(&log, b).unwrap();
        assert!(PageLog::record_bytes(&log, 300) >= 300);
        drop(log);
        let (_log, records) = open_wal(RealStorage, dir.path(), config).unwrap();
        assert_eq!(records.iter().map(|r| (r.lsn, r.kind)).collect::<Vec<_>>(), vec![(a, 1), (b, 2)]);
        assert_eq!(records[1].payload, vec![9u8; 300]);
    }
}
