//! What the page store needs from a write-ahead log, and a small file log that provides it.
//!
//! [`PageLog`] is the seam to the reference WAL (crates/engine/src/wal): same shape — append returns an
//! LSN, `flush_to` is a group commit, recovery hands back the records in LSN order. [`FileLog`] is a
//! single-file log with leader/follower group commit and fail-stop on any write or sync error; it lets
//! the page store run (and be crash-tested) on any [`Storage`] on its own.

use super::page::Lsn;
use crate::storage::{FileOptions, Storage, StorageFile, WriteSync};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

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
}

/// A write-ahead log as the page store uses it.
pub trait PageLog: Send + Sync {
    /// Append a record to the in-memory tail; durable only after `flush_to` covers its LSN.
    fn append(&self, kind: u8, payload: &[u8]) -> io::Result<Lsn>;
    /// Return once every record up to `lsn` is durable (group commit: one sync covers many callers).
    fn flush_to(&self, lsn: Lsn) -> io::Result<()>;
    /// Highest LSN known durable.
    fn flushed_lsn(&self) -> Lsn;
    /// Highest LSN appended (0 when none).
    fn last_lsn(&self) -> Lsn;
    /// Records at or below `lsn` are no longer needed by recovery (a log may recycle their space).
    fn truncate_before(&self, lsn: Lsn) -> io::Result<()>;
    /// Counters.
    fn stats(&self) -> LogStats;
}

/// Bytes of record header: crc32c u32, payload length u32, lsn u64, kind u8.
pub const RECORD_HEADER_BYTES: usize = 17;

struct Tail {
    pending: Vec<u8>,
    pending_from_offset: u64,
    last_lsn: Lsn,
}

struct FlushState {
    flushing: bool,
    flushed_lsn: Lsn,
    poisoned: Option<String>,
}

/// A single append-only log file with group commit.
pub struct FileLog<F> {
    file: F,
    tail: Mutex<Tail>,
    flush: Mutex<FlushState>,
    flushed: Condvar,
    bytes: AtomicU64,
    syncs: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn encode(lsn: Lsn, kind: u8, payload: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.push(kind);
    out.extend_from_slice(payload);
    let sum = crc32c::crc32c(&out[start + 4..]);
    out[start..start + 4].copy_from_slice(&sum.to_le_bytes());
}

/// Decode records from the start of `bytes` while they validate and continue the LSN sequence; returns
/// the records and the byte length of the valid prefix (the end of the log).
fn decode_all(bytes: &[u8]) -> (Vec<LogRecord>, usize) {
    let mut records = Vec::new();
    let mut at = 0;
    while at + RECORD_HEADER_BYTES <= bytes.len() {
        let head = &bytes[at..at + RECORD_HEADER_BYTES];
        let len = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
        let end = at + RECORD_HEADER_BYTES + len;
        if end > bytes.len() {
            break;
        }
        let sum = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
        let lsn = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
        let expected_lsn = records.last().map_or(1, |r: &LogRecord| r.lsn + 1);
        if sum != crc32c::crc32c(&bytes[at + 4..end]) || lsn != expected_lsn {
            break;
        }
        records.push(LogRecord { lsn, kind: head[16], payload: bytes[at + RECORD_HEADER_BYTES..end].to_vec() });
        at = end;
    }
    (records, at)
}

impl<F: StorageFile> FileLog<F> {
    /// Create an empty log file at `path` (and fsync its directory).
    pub fn create<S: Storage<File = F>>(storage: &S, path: &Path) -> io::Result<Self> {
        let file = storage.create_new(path, FileOptions::default())?;
        file.sync_all()?;
        storage.sync_dir(path.parent().unwrap_or(Path::new(".")))?;
        Ok(Self::from_parts(file, 0, 0))
    }

    /// Open an existing log: read every valid record, cut off the torn or garbage tail (durably), and
    /// continue after the last valid record. Returns the log and the records in LSN order.
    pub fn open<S: Storage<File = F>>(storage: &S, path: &Path) -> io::Result<(Self, Vec<LogRecord>)> {
        let file = storage.open(path, FileOptions::default())?;
        let len = file.len()?;
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, 0)?;
        let (records, valid_len) = decode_all(&bytes);
        if valid_len as u64 != len {
            file.set_len(valid_len as u64)?;
            file.sync_all()?;
        }
        let last = records.last().map_or(0, |r| r.lsn);
        Ok((Self::from_parts(file, valid_len as u64, last), records))
    }

    fn from_parts(file: F, end_offset: u64, last_lsn: Lsn) -> Self {
        FileLog {
            file,
            tail: Mutex::new(Tail { pending: Vec::new(), pending_from_offset: end_offset, last_lsn }),
            flush: Mutex::new(FlushState { flushing: false, flushed_lsn: last_lsn, poisoned: None }),
            flushed: Condvar::new(),
            bytes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
        }
    }

    /// As the leader: write everything pending and sync it. Returns the LSN now durable.
    fn write_pending(&self) -> io::Result<Lsn> {
        let (bytes, offset, upto) = {
            let mut tail = lock(&self.tail);
            let bytes = std::mem::take(&mut tail.pending);
            let offset = tail.pending_from_offset;
            tail.pending_from_offset += bytes.len() as u64;
            (bytes, offset, tail.last_lsn)
        };
        if !bytes.is_empty() {
            self.file.write_at(&bytes, offset, WriteSync::None)?;
            self.file.sync_data()?;
            self.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            self.syncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(upto)
    }
}

fn poisoned_error(why: &str) -> io::Error {
    io::Error::other(format!("log is poisoned after an earlier failure ({why}); restart and recover"))
}

impl<F: StorageFile> PageLog for FileLog<F> {
    fn append(&self, kind: u8, payload: &[u8]) -> io::Result<Lsn> {
        if let Some(why) = &lock(&self.flush).poisoned {
            return Err(poisoned_error(why));
        }
        let mut tail = lock(&self.tail);
        let lsn = tail.last_lsn + 1;
        encode(lsn, kind, payload, &mut tail.pending);
        tail.last_lsn = lsn;
        Ok(lsn)
    }

    fn flush_to(&self, lsn: Lsn) -> io::Result<()> {
        let mut state = lock(&self.flush);
        loop {
            if let Some(why) = &state.poisoned {
                return Err(poisoned_error(why));
            }
            if state.flushed_lsn >= lsn {
                return Ok(());
            }
            if state.flushing {
                state = self.flushed.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            state.flushing = true;
            drop(state);
            let result = self.write_pending();
            state = lock(&self.flush);
            state.flushing = false;
            match result {
                Ok(upto) => state.flushed_lsn = state.flushed_lsn.max(upto),
                // Fail-stop: never retry a failed write or sync; every waiter and later caller fails.
                Err(e) => state.poisoned = Some(e.to_string()),
            }
            self.flushed.notify_all();
        }
    }

    fn flushed_lsn(&self) -> Lsn {
        lock(&self.flush).flushed_lsn
    }

    fn last_lsn(&self) -> Lsn {
        lock(&self.tail).last_lsn
    }

    fn truncate_before(&self, _lsn: Lsn) -> io::Result<()> {
        // One append-only file: space is not recycled; recovery skips records at or below the redo LSN.
        Ok(())
    }

    fn stats(&self) -> LogStats {
        LogStats { bytes: self.bytes.load(Ordering::Relaxed), syncs: self.syncs.load(Ordering::Relaxed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::RealStorage;

    #[test]
    fn records_survive_reopen_and_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let log = FileLog::create(&RealStorage, &path).unwrap();
        let a = log.append(1, b"first").unwrap();
        let b = log.append(2, b"second").unwrap();
        log.flush_to(b).unwrap();
        assert_eq!((a, b, log.flushed_lsn()), (1, 2, 2));
        let c = log.append(3, b"never flushed").unwrap();
        assert_eq!(c, 3);
        drop(log);
        // A torn third record on disk: garbage after the valid prefix.
        let f = RealStorage.open(&path, FileOptions::default()).unwrap();
        let end = f.len().unwrap();
        f.write_at(&[7u8; 30], end, WriteSync::None).unwrap();
        let (log, records) = FileLog::open(&RealStorage, &path).unwrap();
        assert_eq!(records.iter().map(|r| (r.lsn, r.kind)).collect::<Vec<_>>(), vec![(1, 1), (2, 2)]);
        assert_eq!(records[1].payload, b"second");
        assert_eq!(f.len().unwrap(), end);
        assert_eq!(log.append(9, b"next").unwrap(), 3);
    }

    #[test]
    fn group_commit_from_many_threads() {
        let dir = tempfile::tempdir().unwrap();
        let log = std::sync::Arc::new(FileLog::create(&RealStorage, &dir.path().join("log")).unwrap());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let lsn = log.append(1, &[0u8; 40]).unwrap();
                        log.flush_to(lsn).unwrap();
                        assert!(log.flushed_lsn() >= lsn);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(log.last_lsn(), 200);
        assert!(log.stats().syncs <= 200);
    }
}
