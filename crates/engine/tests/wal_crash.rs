//! A small crash model (the full simulator lives in syncbench-simfs): writes stay in a "page cache" until
//! their file is synced; at the crash a random subset of the unsynced 512-byte sectors reaches the disk,
//! in any order, and everything else is lost. After reopening, every acknowledged commit must be there,
//! and a torn group write must never be mistaken for corruption. With the `skip_log_sync` fault the same
//! test must catch lost commits, which shows it can fail.

mod wal_common;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use syncbench_engine::wal::{FaultSwitches, SyncMethod, Wal, WalConfig};
use syncbench_engine::{FileOptions, RealFile, RealStorage, Storage, StorageFile, WriteSync};
use wal_common::{payload, small};

const SECTOR: usize = 512;

/// Writes not yet synced: (offset, bytes) in write order.
type Unsynced = Vec<(u64, Vec<u8>)>;

/// Unsynced writes per file, and whether the machine has "crashed" (every call then fails).
#[derive(Default)]
struct Cache {
    pending: Mutex<HashMap<PathBuf, Unsynced>>,
    crashed: AtomicBool,
}

#[derive(Clone, Default)]
struct CrashStorage {
    cache: Arc<Cache>,
}

struct CrashFile {
    path: PathBuf,
    real: RealFile,
    dsync: bool,
    cache: Arc<Cache>,
}

fn crashed() -> io::Error {
    io::Error::from_raw_os_error(5)
}

impl CrashFile {
    fn alive(&self) -> io::Result<()> {
        if self.cache.crashed.load(Ordering::SeqCst) { Err(crashed()) } else { Ok(()) }
    }

    fn flush_pending(&self) -> io::Result<()> {
        self.alive()?;
        // A sync takes time: that is when a crash finds written but unsynced data.
        std::thread::sleep(std::time::Duration::from_micros(300));
        self.alive()?;
        let writes = self.cache.pending.lock().remove(&self.path).unwrap_or_default();
        for (offset, bytes) in writes {
            self.real.write_at(&bytes, offset, WriteSync::None)?;
        }
        Ok(())
    }
}

impl StorageFile for CrashFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.alive()?;
        assert!(self.cache.pending.lock().get(&self.path).is_none_or(|p| p.is_empty()), "read of unsynced data");
        self.real.read_exact_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64, sync: WriteSync) -> io::Result<()> {
        self.alive()?;
        if self.dsync || sync != WriteSync::None {
            // Durable on return: earlier cached writes to the file stay cached (as in Linux).
            return self.real.write_at(buf, offset, WriteSync::None);
        }
        self.cache.pending.lock().entry(self.path.clone()).or_default().push((offset, buf.to_vec()));
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        self.flush_pending()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.flush_pending()
    }
    fn len(&self) -> io::Result<u64> {
        self.real.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.real.set_len(len)
    }
}

impl Storage for CrashStorage {
    type File = CrashFile;
    fn create_new(&self, path: &Path, opts: FileOptions) -> io::Result<CrashFile> {
        let real = RealStorage.create_new(path, FileOptions::default())?;
        Ok(CrashFile { path: path.to_path_buf(), real, dsync: opts.dsync, cache: self.cache.clone() })
    }
    fn open(&self, path: &Path, opts: FileOptions) -> io::Result<CrashFile> {
        let real = RealStorage.open(path, FileOptions::default())?;
        Ok(CrashFile { path: path.to_path_buf(), real, dsync: opts.dsync, cache: self.cache.clone() })
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        // Directory operations are modelled as immediately durable; unsynced data moves with the file.
        let mut pending = self.cache.pending.lock();
        if let Some(w) = pending.remove(from) {
            pending.insert(to.to_path_buf(), w);
        }
        RealStorage.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.cache.pending.lock().remove(path);
        RealStorage.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.cache.crashed.load(Ordering::SeqCst) { Err(crashed()) } else { RealStorage.sync_dir(dir) }
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

/// xorshift64*: deterministic per seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl CrashStorage {
    /// Power fails: stop everything, then let a random subset of unsynced sectors reach the disk.
    fn crash(&self, rng: &mut Rng) -> usize {
        use std::os::unix::fs::FileExt;
        self.cache.crashed.store(true, Ordering::SeqCst);
        let pending = std::mem::take(&mut *self.cache.pending.lock());
        let count = pending.values().map(Vec::len).sum();
        for (path, writes) in pending {
            let Ok(file) = std::fs::OpenOptions::new().write(true).open(&path) else { continue };
            for (offset, bytes) in writes {
                for (i, sector) in bytes.chunks(SECTOR).enumerate() {
                    if rng.next().is_multiple_of(2) {
                        file.write_all_at(sector, offset + (i * SECTOR) as u64).unwrap();
                    }
                }
            }
        }
        count
    }
}

/// What recovery made of one crash.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Recovery opened the log; this many acknowledged commits are missing or different.
    Lost(usize),
    /// Recovery refused: it saw a damaged record followed by a later flush's record.
    Corruption,
}

/// One crash: 12 threads commit until the crash, then the log is reopened on the crash image.
fn crash_once(seed: u64, config: WalConfig) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let storage = CrashStorage::default();
    let (wal, _) = Wal::open(storage.clone(), dir.path(), config.clone()).unwrap();
    let wal = Arc::new(wal);
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let handles: Vec<_> = (0..12u32)
        .map(|t| {
            let (wal, acked) = (wal.clone(), acked.clone());
            std::thread::spawn(move || {
                for s in 0.. {
                    let p = payload(t, s, 20 + ((s * 97 + t * 13) % 700) as usize);
                    let Ok(lsn) = wal.append(1, &p) else { return };
                    if wal.commit(lsn).is_err() {
                        return;
                    }
                    acked.lock().push((lsn, p));
                }
            })
        })
        .collect();
    // Let commits get going (threads start slowly on a loaded machine), then crash at a random moment.
    while acked.lock().len() < 20 && !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    std::thread::sleep(std::time::Duration::from_micros(rng.next() % 5_000));
    let torn = storage.crash(&mut rng);
    eprintln!("seed {seed}: {torn} unsynced writes at the crash");
    handles.into_iter().for_each(|h| h.join().unwrap());
    drop(wal);

    let recovered = match Wal::open(RealStorage, dir.path(), config) {
        Ok((_, recovered)) => recovered,
        Err(syncbench_engine::wal::WalError::Corruption { .. }) => return Outcome::Corruption,
        Err(e) => panic!("seed {seed}: recovery failed: {e}"),
    };
    assert!(recovered.windows(2).all(|w| w[0].end_lsn <= w[1].lsn), "LSN order");
    let by_end: HashMap<u64, &Vec<u8>> = recovered.iter().map(|r| (r.end_lsn, &r.payload)).collect();
    let acked = acked.lock();
    assert!(!acked.is_empty(), "seed {seed}: nothing was committed before the crash");
    Outcome::Lost(acked.iter().filter(|(lsn, p)| by_end.get(lsn) != Some(&p)).count())
}

#[test]
fn acknowledged_commits_survive_crashes_with_torn_unsynced_sectors() {
    for seed in 0..12 {
        for method in [SyncMethod::Fdatasync, SyncMethod::OpenDatasync] {
            let outcome = crash_once(seed, WalConfig { segment_bytes: 32 * 1024, ..small(method) });
            assert_eq!(outcome, Outcome::Lost(0), "seed {seed}, {method:?}");
        }
    }
}

#[test]
fn the_crash_model_catches_a_log_that_skips_its_sync() {
    let faults = FaultSwitches { skip_log_sync: true, ..FaultSwitches::default() };
    let config = WalConfig { faults, segment_bytes: 32 * 1024, ..small(SyncMethod::Fdatasync) };
    let caught = (0..6).filter(|&seed| crash_once(seed, config.clone()) != Outcome::Lost(0)).count();
    assert!(caught > 0, "skipping the log sync must lose commits (or show corruption) in some crash");
}
