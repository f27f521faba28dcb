//! Segment files: naming, creation (zero-filled, then fsync file, then fsync directory), recycling by
//! rename, and the write + sync of one flush. Only the flush leader (and `truncate_before`) touch this,
//! one at a time, behind the log's writer lock.

use super::config::{FaultSwitches, LogMethod, SyncCall, SyncMethod};
use crate::storage::{FileOptions, Storage, StorageFile, WriteSync};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Alignment of direct I/O and of segment sizes.
pub const BLOCK_BYTES: u64 = 4096;
/// Suffix of a segment being created (removed by recovery if a crash left one behind).
const TMP_SUFFIX: &str = ".tmp";
/// Zero-fill chunk size. Small, as PostgreSQL's 8 KiB blocks: the page cache keeps the folio size a file was
/// written with, and on kernels with large folios appends into a segment filled in 1 MiB writes measured
/// 10-20% slower per write+fdatasync (docs/benchmarks.md, "run" section).
const FILL_CHUNK_BYTES: usize = 8 * 1024;

/// The file name of segment `n`: `wal-` + 16 hex digits + `.seg`, so names sort in log order.
pub fn file_name(n: u64) -> String {
    format!("wal-{n:016x}.seg")
}

/// The segment number of a file name made by [`file_name`].
pub fn parse_file_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("wal-")?.strip_suffix(".seg")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The segment files in `dir` by number, and leftovers of interrupted creations.
pub fn list<S: Storage>(storage: &S, dir: &Path) -> io::Result<(BTreeMap<u64, PathBuf>, Vec<PathBuf>)> {
    let mut segments = BTreeMap::new();
    let mut leftovers = Vec::new();
    for path in storage.list(dir)? {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        if let Some(n) = parse_file_name(name) {
            segments.insert(n, path);
        } else if name.strip_suffix(TMP_SUFFIX).and_then(parse_file_name).is_some() {
            leftovers.push(path);
        }
    }
    Ok((segments, leftovers))
}

/// A failed write or sync on the commit path: what failed, and the OS error.
#[derive(Debug)]
pub struct Failure {
    /// `write`, `fsync`, `fdatasync`, `segment create`...
    pub what: &'static str,
    /// The error.
    pub error: io::Error,
}

fn fail(what: &'static str) -> impl FnOnce(io::Error) -> Failure {
    move |error| Failure { what, error }
}

/// The segment files of one log and the files currently open for writing.
pub struct Segments<S: Storage> {
    storage: S,
    dir: PathBuf,
    segment_bytes: u64,
    method: SyncMethod,
    faults: FaultSwitches,
    max_spares: u32,
    open: BTreeMap<u64, S::File>,
}

impl<S: Storage> Segments<S> {
    /// Manage the segments of the log in `dir`.
    pub fn new(storage: S, dir: PathBuf, segment_bytes: u64, method: SyncMethod, faults: FaultSwitches) -> Self {
        Segments { storage, dir, segment_bytes, method, faults, max_spares: 0, open: BTreeMap::new() }
    }

    /// How many retired segments to keep as spares.
    pub fn set_max_spares(&mut self, max_spares: u32) {
        self.max_spares = max_spares;
    }

    /// The storage.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    fn path(&self, n: u64) -> PathBuf {
        self.dir.join(file_name(n))
    }

    fn sync_dir(&self) -> io::Result<()> {
        if self.faults.skip_dir_fsync {
            return Ok(());
        }
        self.storage.sync_dir(&self.dir)
    }

    /// Open flags for writing. `skip_log_sync` also drops O_DSYNC, so the fault really skips durability.
    fn file_options(&self) -> FileOptions {
        let opts = self.method.file_options();
        if self.faults.skip_log_sync { FileOptions { dsync: false, ..opts } } else { opts }
    }

    fn write_sync(&self) -> WriteSync {
        if self.faults.skip_log_sync { WriteSync::None } else { self.method.write_sync() }
    }

    /// Create segment `n`: a temporary file created exclusively, zero-filled to full size (so later
    /// `fdatasync`s carry no size or allocation change), fsynced, renamed into place, directory fsynced.
    fn create(&self, n: u64) -> io::Result<()> {
        let final_path = self.path(n);
        let tmp = self.dir.join(format!("{}{TMP_SUFFIX}", file_name(n)));
        if self.storage.exists(&tmp)? {
            // Our own leftover from an interrupted creation.
            self.storage.remove(&tmp)?;
        }
        let file = self.storage.create_new(&tmp, FileOptions::default())?;
        let zeros = vec![0u8; FILL_CHUNK_BYTES];
        let mut at = 0u64;
        while at < self.segment_bytes {
            let len = (self.segment_bytes - at).min(FILL_CHUNK_BYTES as u64) as usize;
            file.write_at(&zeros[..len], at, WriteSync::None)?;
            at += len as u64;
        }
        file.sync_all()?;
        drop(file);
        self.storage.rename(&tmp, &final_path)?;
        self.sync_dir()
    }

    /// Make sure segment `n` exists (creating it zero-filled if not).
    pub fn ensure_exists(&mut self, n: u64) -> io::Result<()> {
        if self.open.contains_key(&n) || self.storage.exists(&self.path(n))? {
            return Ok(());
        }
        self.create(n)
    }

    /// Open segment `n` for writing now (creating it if needed).
    pub fn open_for_writing(&mut self, n: u64) -> Result<(), Failure> {
        self.file(n).map(|_| ())
    }

    fn file(&mut self, n: u64) -> Result<&S::File, Failure> {
        if !self.open.contains_key(&n) {
            self.ensure_exists(n).map_err(fail("segment create"))?;
            let mut file = self.storage.open(&self.path(n), self.file_options()).map_err(fail("segment open"))?;
            if self.write_sync() == WriteSync::LinkedFdatasync {
                file.enable_linked_sync().map_err(fail("io_uring setup"))?;
            }
            self.open.insert(n, file);
        }
        Ok(&self.open[&n])
    }

    /// Write `bytes` at log position `start_lsn` (split across segments as needed), then make them durable
    /// by the sync method. For direct I/O, `start_lsn`, the length and the memory must be block-aligned.
    pub fn write_durably(&mut self, start_lsn: u64, bytes: &[u8]) -> Result<SyncCount, Failure> {
        let mut touched = Vec::new();
        let mut done = 0usize;
        let write_sync = self.write_sync();
        while done < bytes.len() {
            let lsn = start_lsn + done as u64;
            let (n, offset) = (lsn / self.segment_bytes, lsn % self.segment_bytes);
            let len = ((self.segment_bytes - offset) as usize).min(bytes.len() - done);
            self.file(n)?.write_at(&bytes[done..done + len], offset, write_sync).map_err(fail("write"))?;
            touched.push(n);
            done += len;
        }
        let mut count = SyncCount { writes: touched.len() as u64, syncs: 0 };
        for n in touched {
            count.syncs += u64::from(self.sync(n)?);
        }
        Ok(count)
    }

    /// The separate sync call of the method (if it has one) on segment `n`. Returns whether it synced.
    pub fn sync(&mut self, n: u64) -> Result<bool, Failure> {
        let Some(call) = self.method.sync_after_write() else { return Ok(false) };
        if self.faults.skip_log_sync {
            return Ok(false);
        }
        let retry = self.faults.retry_fsync_after_error;
        let file = self.file(n)?;
        let (what, result) = match call {
            SyncCall::Fsync => ("fsync", file.sync_all()),
            SyncCall::Fdatasync => ("fdatasync", file.sync_data()),
        };
        match result {
            Ok(()) => Ok(true),
            // The deliberate bug: a second sync "succeeds" because the kernel already marked the pages clean.
            Err(_) if retry => match call {
                SyncCall::Fsync => file.sync_all().map(|()| true).map_err(fail(what)),
                SyncCall::Fdatasync => file.sync_data().map(|()| true).map_err(fail(what)),
            },
            Err(e) => Err(Failure { what, error: e }),
        }
    }

    /// fsync every open segment file.
    pub fn sync_all_open(&mut self) -> Result<(), Failure> {
        self.open.values().try_for_each(|f| f.sync_all().map_err(fail("fsync")))
    }

    /// Close the files of segments before `n` (all their bytes are durable already).
    pub fn close_below(&mut self, n: u64) {
        self.open.retain(|&k, _| k >= n);
    }

    /// Retire every segment numbered below `below`: renamed to the next free number as a spare while
    /// fewer than `max_spares` spares exist beyond `current`, removed otherwise; then the directory is
    /// fsynced. Stale bytes in a spare are rejected on recovery by their segment number and LSN.
    pub fn retire_below(&mut self, below: u64, current: u64) -> io::Result<u32> {
        let (files, _) = list(&self.storage, &self.dir)?;
        let mut highest = files.keys().next_back().copied().unwrap_or(0).max(current);
        let mut spares = files.keys().filter(|&&k| k > current).count() as u32;
        let mut retired = 0;
        for (&n, path) in files.range(..below) {
            self.open.remove(&n);
            if spares < self.max_spares {
                highest += 1;
                self.storage.rename(path, &self.path(highest))?;
                spares += 1;
            } else {
                self.storage.remove(path)?;
            }
            // One directory fsync per retirement, oldest first, so a crash keeps a prefix of the retirements:
            // recovery never finds a newer segment gone while an older one is still there (a gap it must
            // treat as lost log). The crash test found such a gap under the strict profile when one fsync
            // followed the whole batch.
            self.sync_dir()?;
            retired += 1;
        }
        Ok(retired)
    }
}

/// System calls one durable write took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncCount {
    /// Write calls.
    pub writes: u64,
    /// Separate sync calls (fsync/fdatasync); write-through methods make none.
    pub syncs: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::RealStorage;

    #[test]
    fn names_sort_in_log_order_and_parse_back() {
        assert_eq!(file_name(26), "wal-000000000000001a.seg");
        assert!(file_name(9) < file_name(10));
        for n in [0, 1, 255, u64::MAX] {
            assert_eq!(parse_file_name(&file_name(n)), Some(n));
        }
        assert_eq!(parse_file_name("wal-1.seg"), None);
        assert_eq!(parse_file_name("other"), None);
    }

    #[test]
    fn create_is_full_size_and_write_splits_at_segment_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut segs =
            Segments::new(RealStorage, dir.path().to_path_buf(), 8192, SyncMethod::Fdatasync, Default::default());
        let count = segs.write_durably(8000, &[7u8; 300]).unwrap();
        assert_eq!(count, SyncCount { writes: 2, syncs: 2 });
        let (files, tmp) = list(&RealStorage, dir.path()).unwrap();
        assert_eq!(files.keys().copied().collect::<Vec<_>>(), vec![0, 1]);
        assert!(tmp.is_empty());
        for p in files.values() {
            assert_eq!(std::fs::metadata(p).unwrap().len(), 8192);
        }
        let one = std::fs::read(&files[&1]).unwrap();
        assert_eq!(&one[..108], &[7u8; 108][..]);
        assert_eq!(one[108], 0);
    }

    #[test]
    fn retire_keeps_spares_then_removes() {
        let dir = tempfile::tempdir().unwrap();
        let mut segs =
            Segments::new(RealStorage, dir.path().to_path_buf(), 4096, SyncMethod::Fsync, Default::default());
        segs.set_max_spares(1);
        for n in 0..4 {
            segs.ensure_exists(n).unwrap();
        }
        assert_eq!(segs.retire_below(3, 3).unwrap(), 3);
        let (files, _) = list(&RealStorage, dir.path()).unwrap();
        assert_eq!(files.keys().copied().collect::<Vec<_>>(), vec![3, 4]);
    }
}
