//! Helpers shared by the WAL tests: a storage that fails syncs on demand and counts them.
#![allow(dead_code)] // each test binary uses a different subset

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use syncbench_engine::wal::{Record, SyncMethod, Wal, WalConfig};
use syncbench_engine::{FileOptions, RealFile, RealStorage, Storage, StorageFile, WriteSync};

/// What the faulty storage does; shared by every file it opens.
#[derive(Default)]
pub struct Faults {
    /// Every sync_data/sync_all from now on fails with EIO.
    pub fail_syncs: AtomicBool,
    /// Sync calls seen (successful or not).
    pub sync_calls: AtomicU64,
    /// Sync calls that failed.
    pub failed_syncs: AtomicU64,
    /// Fail only one sync, then succeed again (like a kernel that reported the error once).
    pub fail_once: AtomicBool,
    /// Sleep this many ms inside each sync (lets commits pile up behind a leader).
    pub sync_delay_ms: AtomicU64,
}

/// Real files whose syncs can be made to fail.
#[derive(Clone, Default)]
pub struct FaultyStorage {
    pub faults: Arc<Faults>,
}

pub struct FaultyFile {
    inner: RealFile,
    faults: Arc<Faults>,
}

impl FaultyFile {
    fn sync(&self, real: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let f = &self.faults;
        f.sync_calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(f.sync_delay_ms.load(Ordering::SeqCst)));
        if f.fail_syncs.load(Ordering::SeqCst) {
            if f.fail_once.load(Ordering::SeqCst) {
                f.fail_syncs.store(false, Ordering::SeqCst);
            }
            f.failed_syncs.fetch_add(1, Ordering::SeqCst);
            return Err(io::Error::from_raw_os_error(libc_eio()));
        }
        real()
    }
}

fn libc_eio() -> i32 {
    5
}

impl StorageFile for FaultyFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64, sync: WriteSync) -> io::Result<()> {
        self.inner.write_at(buf, offset, sync)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.sync(|| self.inner.sync_data())
    }
    fn sync_all(&self) -> io::Result<()> {
        self.sync(|| self.inner.sync_all())
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
}

impl Storage for FaultyStorage {
    type File = FaultyFile;
    fn create_new(&self, path: &Path, opts: FileOptions) -> io::Result<FaultyFile> {
        Ok(FaultyFile { inner: RealStorage.create_new(path, opts)?, faults: self.faults.clone() })
    }
    fn open(&self, path: &Path, opts: FileOptions) -> io::Result<FaultyFile> {
        Ok(FaultyFile { inner: RealStorage.open(path, opts)?, faults: self.faults.clone() })
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealStorage.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        RealStorage.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        RealStorage.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        RealStorage.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        RealStorage.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        RealStorage.exists(path)
    }
}

/// A small-segment config so tests cross segment boundaries quickly.
pub fn small(method: SyncMethod) -> WalConfig {
    WalConfig { sync_method: method, segment_bytes: 16 * 1024, preallocate_segments: 1, ..WalConfig::default() }
}

/// Open the log in `dir` on real storage.
pub fn open(dir: &Path, config: WalConfig) -> (Wal<RealStorage>, Vec<Record>) {
    Wal::open(RealStorage, dir, config).expect("open log")
}

/// A payload that names its writer and sequence number, so order and completeness can be checked.
pub fn payload(thread: u32, seq: u32, size: usize) -> Vec<u8> {
    let mut p = format!("t{thread:03}-s{seq:06}-").into_bytes();
    p.resize(size.max(p.len()), b'x');
    p
}

/// The segment files in `dir`.
pub fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    v.sort();
    v
}

/// Overwrite `bytes` at the absolute LSN `lsn` of the log in `dir`.
pub fn poke(dir: &Path, segment_bytes: u64, lsn: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let path = dir.join(syncbench_engine::wal::segment_file_name(lsn / segment_bytes));
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, lsn % segment_bytes).unwrap();
    f.sync_all().unwrap();
}
