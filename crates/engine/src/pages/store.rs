//! The page store: page access through the buffer pool, the write paths of each protection mode,
//! checkpoints and recovery.
//!
//! Locking: `inner` (pool + redo LSN) is held for every page access and for a whole transaction, so log
//! order equals page-change order. `batch_io` serialises batch flushes (flusher and checkpoint share the
//! double-write batch region); lock order is `checkpoint_lock` → `batch_io` → `inner`. Evictions write
//! synchronously under `inner` through the single-page region. In the `pipelined` double-write design
//! ([`super::dw_pipelined`]) a spooler and a sync thread fill and sync a ring of batches ahead of the
//! clock; `Pipeline::spool` is taken before `inner`, and the read side of its home-write lock after.

use super::control::{ControlFile, ControlRecord};
use super::dw::{self, DoubleWrite, Region};
use super::dw_pipelined::{self, Pipeline, PipelineBugs, RingCopy};
use super::error::{PageError, PageResult};
use super::log::{PageLog, open_wal};
use super::page::{self, Lsn, PageCheck, PageId};
use super::pool::Pool;
use super::record::{self, Edit};
use super::{DwDesign, Mode, StoreConfig};
use crate::storage::{FileOptions, Storage, StorageFile, WriteSync};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use syncbench_sys::AlignedBuf;

const CONTROL_FILE_NAME: &str = "control";
const WAL_SUBDIR: &str = "wal";
/// The [`Storage::mark`] tag put on the timeline right before each write to the double-write area
/// (a batch, or one evicted page).
pub const DW_FLUSH_MARK: &str = "dw_flush";

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
}

#[derive(Default)]
struct Counters {
    wal_bytes: AtomicU64,
    fpi_bytes: AtomicU64,
    home_bytes: AtomicU64,
    dw_bytes: AtomicU64,
    data_syncs: AtomicU64,
    eviction_writes: AtomicU64,
    evictions_waited_for_dw: AtomicU64,
    dw_syncs: AtomicU64,
    dw_pages_spooled: AtomicU64,
    dw_pages_respooled: AtomicU64,
    checkpoints: AtomicU64,
    checkpoint_ns_total: AtomicU64,
    dw_restored_pages: AtomicU64,
    redo_records: AtomicU64,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

struct Inner {
    pool: Pool,
    /// The frames the running checkpoint marked (`checkpoint_needed`), so its flushes and spools look
    /// at those rather than walk the whole pool for each batch under the pool lock (at 256 MiB, 32,768
    /// frames per batch); pruned as they are written.
    checkpoint_frames: Vec<usize>,
    /// Changes after this LSN need a full-page image in `fpw` mode (the current checkpoint's redo LSN).
    redo_lsn: Lsn,
    /// `pipelined`: the ring copies of pages not in the pool (a copy outlives its page's stay in a
    /// frame: it protects the page for the rest of its checkpoint cycle). Pruned of recycled copies when
    /// it holds more than twice the ring's pages.
    copies: HashMap<PageId, RingCopy>,
    /// While recovery's redo runs: the LSN up to which every record has been applied (the pages do not
    /// yet hold the rest of the log, so a copy taken now holds the changes up to here only).
    redo_applied: Option<Lsn>,
}

/// Which pages a spool step takes (`pipelined`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// The spooler thread: next evictions only as a full batch or when the hand is near; a checkpoint's
    /// pages only if not in use.
    FullBatch,
    /// Whatever there is to spool (the flusher has nothing safe to write home; the checkpoint).
    Any,
    /// A client's victim first, then whatever there is.
    Victim(usize),
}

/// Seal a private copy of page `id` in place and validate it before it may be written (InnoDB's
/// "croak"): a page that does not check out is a bug, never something to write.
fn seal_checked(id: PageId, copy: &mut [u8]) {
    page::seal(copy);
    let check = page::check(copy, id);
    assert!(matches!(check, PageCheck::Valid { .. }), "refusing to write page {id:?}: {check:?}");
}

/// `pipelined`: whether `frame`'s page may go home relying on its ring copy ([`Pipeline::is_safe`]); the
/// page's bytes (its LSN, a cache miss) are read only for a frame that has a copy.
fn copy_is_safe(p: &Pipeline, f: &super::pool::Frame) -> bool {
    f.dw.exists() && p.is_safe(f.dw, page::lsn(f.data.as_slice()))
}

/// `pipelined`: whether `frame` can be spooled and has no current copy in the ring.
fn needs_copy(p: &Pipeline, frame: &super::pool::Frame) -> bool {
    let spoolable = frame.is_dirty() && !frame.pinned && !frame.io_busy && !frame.torn;
    spoolable && !p.is_current(frame.dw, page::lsn(frame.data.as_slice()))
}

/// A page copy on its way to disk.
struct PageCopy {
    frame: usize,
    id: PageId,
    lsn: Lsn,
    /// The frame was marked for the running checkpoint when this copy was taken.
    for_checkpoint: bool,
    /// `pipelined`: the frame's ring copy when this copy was taken.
    dw: RingCopy,
    bytes: AlignedBuf,
}

/// The page store.
pub struct PageStore<S: Storage> {
    storage: S,
    dir: PathBuf,
    config: StoreConfig,
    files: Vec<S::File>,
    log: Box<dyn PageLog>,
    dw: Option<DoubleWrite<S::File>>,
    pipeline: Option<Pipeline>,
    control: Mutex<ControlFile<S::File>>,
    inner: Mutex<Inner>,
    batch_io: Mutex<()>,
    checkpoint_lock: Mutex<()>,
    poisoned: Mutex<Option<String>>,
    /// Held across a sync and the poisoning of its failure: a sync that starts after another failed sees the
    /// poison and refuses, instead of succeeding on data the failed one lost (fsync reports an error once).
    data_sync: Mutex<()>,
    /// The same for the double-write ring's syncs: a ring batch is marked durable only by a sync that began
    /// on an unpoisoned store and succeeded.
    ring_sync: Mutex<()>,
    counters: Counters,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn corruption(msg: String) -> PageError {
    PageError::Corruption(msg)
}

/// A transaction's view of the pages: reads and writes go to the buffer pool under the store lock.
pub struct Tx<'a, S: Storage> {
    store: &'a PageStore<S>,
    inner: &'a mut Inner,
    edits: Vec<Edit>,
    pinned: Vec<usize>,
}

impl<S: Storage + Clone + 'static> Tx<'_, S> {
    /// Copy `out.len()` bytes at `offset` of `page` (its latest version, including this transaction's
    /// writes).
    pub fn read(&mut self, page: PageId, offset: usize, out: &mut [u8]) -> PageResult<()> {
        let idx = self.store.fetch(self.inner, page, false)?;
        out.copy_from_slice(&self.inner.pool.frames[idx].data.as_slice()[offset..offset + out.len()]);
        Ok(())
    }

    /// Change `bytes.len()` bytes at `offset` of `page`. In `fpw` mode the first change after the
    /// checkpoint's redo LSN logs the page's full image first.
    pub fn write(&mut self, page: PageId, offset: usize, bytes: &[u8]) -> PageResult<()> {
        let body = page::body_range(self.store.config.page_size);
        assert!(offset >= body.start && offset + bytes.len() <= body.end, "write outside the page body");
        let idx = self.store.fetch(self.inner, page, false)?;
        let frame = &mut self.inner.pool.frames[idx];
        if !frame.pinned {
            frame.pinned = true;
            self.pinned.push(idx);
        }
        let needs_image = self.store.config.mode == Mode::Fpw
            && page::lsn(frame.data.as_slice()) <= self.inner.redo_lsn
            && !self.store.config.faults.fpw_skip_image;
        if needs_image {
            let payload = record::encode_image(page, frame.data.as_slice());
            let lsn = self.store.log.append(record::KIND_IMAGE, &payload)?;
            let logged = self.store.log.record_bytes(payload.len());
            add(&self.store.counters.wal_bytes, logged);
            add(&self.store.counters.fpi_bytes, logged);
            page::set_lsn(frame.data.as_mut_slice(), lsn);
        }
        frame.data.as_mut_slice()[offset..offset + bytes.len()].copy_from_slice(bytes);
        if needs_image {
            self.inner.pool.set_dirty(idx, true);
        }
        self.edits.push(Edit { page, offset: offset as u16, bytes: bytes.to_vec() });
        Ok(())
    }

    /// Log the edits as one record, stamp the pages with its LSN, unpin them.
    fn finish(self, tag: u64) -> PageResult<Lsn> {
        if self.edits.is_empty() {
            return Ok(self.store.log.last_lsn());
        }
        let payload = record::encode_edits(tag, &self.edits);
        let lsn = self.store.log.append(record::KIND_EDITS, &payload)?;
        add(&self.store.counters.wal_bytes, self.store.log.record_bytes(payload.len()));
        for idx in self.pinned {
            let frame = &mut self.inner.pool.frames[idx];
            page::set_lsn(frame.data.as_mut_slice(), lsn);
            frame.pinned = false;
            self.inner.pool.set_dirty(idx, true);
        }
        Ok(lsn)
    }
}

impl<S: Storage + Clone + 'static> PageStore<S> {
    fn paths(dir: &Path, config: &StoreConfig) -> (PathBuf, PathBuf) {
        let wal_dir = config.wal_dir.clone().unwrap_or_else(|| dir.join(WAL_SUBDIR));
        let dw_dir = config.dw_dir.clone().unwrap_or_else(|| dir.to_path_buf());
        (wal_dir, dw_dir)
    }

    fn file_options(config: &StoreConfig) -> FileOptions {
        FileOptions { dsync: false, direct: config.mode == Mode::Atomic }
    }

    fn data_path(dir: &Path, n: u32) -> PathBuf {
        dir.join(format!("data-{n}"))
    }

    /// Create an empty store in `dir` (created if missing). Load pages with [`PageStore::load_page`], then
    /// call [`PageStore::finish_load`] before using it.
    pub fn create(storage: S, dir: &Path, config: StoreConfig) -> PageResult<Self> {
        config.validate().map_err(PageError::Invalid)?;
        let (wal_dir, dw_dir) = Self::paths(dir, &config);
        for d in [dir, &wal_dir, &dw_dir] {
            crate::storage::create_dir_durably(&storage, d)?;
        }
        let opts = Self::file_options(&config);
        let files = (0..config.data_files)
            .map(|n| storage.create_new(&Self::data_path(dir, n), opts))
            .collect::<std::io::Result<Vec<_>>>()?;
        let (log, old) = open_wal(storage.clone(), &wal_dir, config.wal.clone())?;
        if !old.is_empty() {
            return Err(PageError::Invalid("the log directory already holds a log".into()));
        }
        let dw = Self::open_dw(&storage, &dw_dir, &config)?;
        let first = ControlRecord {
            seq: 1,
            redo_lsn: 0,
            checkpoint_lsn: 0,
            page_size: config.page_size as u32,
            mode: config.mode.code(),
            dw_design: config.dw_design.code(),
            clean_shutdown: false,
        };
        // The control file is written last by `finish_load`; until then a crash leaves no valid store.
        let control = ControlFile::create(&storage, &dir.join(format!("{CONTROL_FILE_NAME}.loading")), first)?;
        Ok(Self::assemble(storage, dir, config, files, Box::new(log), dw, control))
    }

    fn open_dw(storage: &S, dw_dir: &Path, config: &StoreConfig) -> PageResult<Option<DoubleWrite<S::File>>> {
        if config.mode != Mode::Dw {
            return Ok(None);
        }
        let opts = FileOptions::default();
        let ring = if config.dw_design == DwDesign::Pipelined { config.dw_ring_batches } else { 0 };
        let dw = DoubleWrite::create_or_open(storage, dw_dir, config.page_size, config.dw_batch_pages, ring, opts)?;
        Ok(Some(dw))
    }

    fn assemble(
        storage: S,
        dir: &Path,
        config: StoreConfig,
        files: Vec<S::File>,
        log: Box<dyn PageLog>,
        dw: Option<DoubleWrite<S::File>>,
        control: ControlFile<S::File>,
    ) -> Self {
        let pool = Pool::new(config.pool_frames(), config.page_size);
        let redo_lsn = control.current().redo_lsn;
        let pipelined = config.mode == Mode::Dw && config.dw_design == DwDesign::Pipelined;
        let faults = &config.faults;
        let bugs = PipelineBugs {
            home_before_sync: faults.dw_home_before_sync,
            recycle_skips_home_sync: faults.dw_recycle_before_home_sync,
            trust_earlier_cycle: faults.dw_trust_earlier_cycle,
        };
        let pipeline = pipelined.then(|| Pipeline::new(config.data_files, config.dw_ring_batches, bugs));
        // The cycle recovery starts in (copies taken during redo are bounded by `redo_applied` too).
        if let Some(p) = &pipeline {
            p.start_cycle(redo_lsn);
        }
        PageStore {
            pipeline,
            storage,
            dir: dir.to_path_buf(),
            config,
            files,
            log,
            dw,
            control: Mutex::new(control),
            inner: Mutex::new(Inner {
                pool,
                redo_lsn,
                checkpoint_frames: Vec::new(),
                copies: HashMap::new(),
                redo_applied: None,
            }),
            batch_io: Mutex::new(()),
            checkpoint_lock: Mutex::new(()),
            poisoned: Mutex::new(None),
            data_sync: Mutex::new(()),
            ring_sync: Mutex::new(()),
            counters: Counters::default(),
        }
    }

    /// Bulk-load one page during creation (written straight home with LSN 0; not logged).
    pub fn load_page(&self, id: PageId, body: impl FnOnce(&mut [u8])) -> PageResult<()> {
        let mut buf = AlignedBuf::new(self.config.page_size, self.config.page_size);
        page::format(buf.as_mut_slice(), id);
        body(buf.as_mut_slice());
        page::seal(buf.as_mut_slice());
        self.write_home(id, buf.as_slice(), WriteSync::None)
    }

    /// Make the loaded pages durable and publish the control file (rename + directory fsync).
    pub fn finish_load(&self) -> PageResult<()> {
        for f in &self.files {
            f.sync_all()?;
        }
        let loading = self.dir.join(format!("{CONTROL_FILE_NAME}.loading"));
        self.storage.rename(&loading, &self.dir.join(CONTROL_FILE_NAME))?;
        Ok(self.storage.sync_dir(&self.dir)?)
    }

    /// Open an existing store and recover it: double-write restore, redo of the log after the last
    /// checkpoint, an end-of-recovery checkpoint, and a checksum scan of every page. Any page that is
    /// torn and cannot be repaired stops recovery with an error.
    pub fn open(storage: S, dir: &Path, config: StoreConfig) -> PageResult<Self> {
        config.validate().map_err(PageError::Invalid)?;
        let (wal_dir, dw_dir) = Self::paths(dir, &config);
        let control = ControlFile::open(&storage, &dir.join(CONTROL_FILE_NAME))?;
        let on_disk = control.current();
        let design_differs =
            config.mode == Mode::Dw && DwDesign::from_code(on_disk.dw_design) != Some(config.dw_design);
        if design_differs {
            return Err(PageError::Invalid(format!(
                "store was created with double-write design {}; open it with the same design",
                DwDesign::from_code(on_disk.dw_design).map_or("unknown", DwDesign::name)
            )));
        }
        if on_disk.page_size as usize != config.page_size || Mode::from_code(on_disk.mode) != Some(config.mode) {
            return Err(PageError::Invalid(format!(
                "store was created with {}-byte pages and mode {:?}; open it with the same settings",
                on_disk.page_size,
                Mode::from_code(on_disk.mode).map(Mode::name)
            )));
        }
        let opts = Self::file_options(&config);
        let files = (0..config.data_files)
            .map(|n| storage.open(&Self::data_path(dir, n), opts))
            .collect::<std::io::Result<Vec<_>>>()?;
        // Trust nothing still in a page cache from before the crash until it is synced (PostgreSQL's
        // SyncDataDirectory): an error here means the state is unknown, so stop.
        for f in &files {
            f.sync_all()?;
        }
        let (log, records) = open_wal(storage.clone(), &wal_dir, config.wal.clone())?;
        let dw = Self::open_dw(&storage, &dw_dir, &config)?;
        let store = Self::assemble(storage, dir, config, files, Box::new(log), dw, control);
        store.restore_from_dw()?;
        store.redo(&records)?;
        store.checkpoint()?;
        store.verify_all_pages()?;
        Ok(store)
    }

    fn read_home(&self, id: PageId, buf: &mut [u8]) -> PageResult<bool> {
        let file = &self.files[id.file as usize];
        let offset = id.page_no as u64 * self.config.page_size as u64;
        if offset + self.config.page_size as u64 > file.len()? {
            buf.fill(0);
            return Ok(false);
        }
        file.read_exact_at(buf, offset)?;
        Ok(true)
    }

    fn write_home(&self, id: PageId, bytes: &[u8], sync: WriteSync) -> PageResult<()> {
        let offset = id.page_no as u64 * self.config.page_size as u64;
        self.files[id.file as usize].write_at(bytes, offset, sync)?;
        add(&self.counters.home_bytes, bytes.len() as u64);
        Ok(())
    }

    /// Fail-stop: never syncs after a failed sync (of any file: a retried fsync can succeed with the data
    /// lost), and poisons the store on its own failure before another sync can start.
    fn sync_data_file(&self, file: u32) -> PageResult<()> {
        let _one_at_a_time = lock(&self.data_sync);
        self.check_poison()?;
        self.poison(self.files[file as usize].sync_all().map_err(PageError::from))?;
        add(&self.counters.data_syncs, 1);
        Ok(())
    }

    fn restore_from_dw(&self) -> PageResult<()> {
        let Some(dw) = &self.dw else { return Ok(()) };
        let mut touched = BTreeSet::new();
        let mut home = AlignedBuf::new(self.config.page_size, self.config.page_size);
        for (id, (copy_lsn, slot)) in dw.newest_copies()? {
            if id.file as usize >= self.files.len() {
                continue; // not a page of this store
            }
            self.read_home(id, home.as_mut_slice())?;
            if dw::decide(page::check(home.as_slice(), id), Some(copy_lsn)) == dw::Decision::Restore {
                dw.read_slot(slot, id, home.as_mut_slice())?;
                self.write_home(id, home.as_slice(), WriteSync::None)?;
                touched.insert(id.file);
                add(&self.counters.dw_restored_pages, 1);
            }
        }
        for file in touched {
            self.sync_data_file(file)?;
        }
        Ok(())
    }

    fn redo(&self, records: &[super::LogRecord]) -> PageResult<()> {
        let mut guard = lock(&self.inner);
        let inner = &mut *guard;
        let redo_lsn = inner.redo_lsn;
        inner.redo_applied = Some(redo_lsn);
        let skip = usize::from(self.config.faults.redo_skips_first_record);
        for rec in records.iter().filter(|r| r.lsn > redo_lsn).skip(skip) {
            add(&self.counters.redo_records, 1);
            match rec.kind {
                record::KIND_IMAGE => {
                    let (id, image) = record::decode_image(&rec.payload, self.config.page_size)?;
                    let idx = self.fetch(inner, id, true)?;
                    let frame = &mut inner.pool.frames[idx];
                    frame.data.as_mut_slice().copy_from_slice(image);
                    page::set_lsn(frame.data.as_mut_slice(), rec.lsn);
                    frame.torn = false;
                    inner.pool.set_dirty(idx, true);
                }
                record::KIND_EDITS => self.redo_edits(inner, rec.lsn, &record::decode_edits(&rec.payload)?)?,
                _ => {}
            }
            inner.redo_applied = Some(rec.lsn);
        }
        inner.redo_applied = None;
        Ok(())
    }

    fn redo_edits(&self, inner: &mut Inner, lsn: Lsn, edits: &[Edit]) -> PageResult<()> {
        let pages: BTreeSet<PageId> = edits.iter().map(|e| e.page).collect();
        for id in pages {
            let idx = self.fetch(inner, id, true)?;
            let frame = &mut inner.pool.frames[idx];
            if frame.torn {
                return Err(self.unrepairable(id));
            }
            if page::lsn(frame.data.as_slice()) >= lsn {
                continue; // already on disk
            }
            for e in edits.iter().filter(|e| e.page == id) {
                let at = e.offset as usize;
                frame.data.as_mut_slice()[at..at + e.bytes.len()].copy_from_slice(&e.bytes);
            }
            page::set_lsn(frame.data.as_mut_slice(), lsn);
            inner.pool.set_dirty(idx, true);
        }
        Ok(())
    }

    fn unrepairable(&self, id: PageId) -> PageError {
        let why = match self.config.mode {
            Mode::None => "mode none has no torn-page protection",
            Mode::Fpw => "no full-page image of it was logged after the checkpoint",
            Mode::Dw => "the double-write area has no valid copy of it",
            Mode::Atomic => "atomic writes should have prevented this: the device tore a write",
        };
        corruption(format!(
            "recovery stopped: page {} of data-{} fails its checksum and cannot be repaired ({why})",
            id.page_no, id.file
        ))
    }

    fn verify_all_pages(&self) -> PageResult<()> {
        let mut buf = AlignedBuf::new(self.config.page_size, self.config.page_size);
        for (n, file) in self.files.iter().enumerate() {
            let pages = file.len()? / self.config.page_size as u64;
            for page_no in 0..pages as u32 {
                let id = PageId { file: n as u32, page_no };
                self.read_home(id, buf.as_mut_slice())?;
                if page::check(buf.as_slice(), id) == PageCheck::Bad {
                    return Err(self.unrepairable(id));
                }
            }
        }
        Ok(())
    }

    fn check_poison(&self) -> PageResult<()> {
        match &*lock(&self.poisoned) {
            Some(why) => Err(PageError::Poisoned { cause: why.clone() }),
            None => Ok(()),
        }
    }

    fn poison<T>(&self, result: PageResult<T>) -> PageResult<T> {
        if let Err(e) = &result {
            lock(&self.poisoned).get_or_insert_with(|| e.to_string());
        }
        result
    }

    /// The frame holding `id`, reading it (and evicting a victim) if needed. During recovery a page that
    /// fails its checksum is kept and flagged torn; otherwise it is an error.
    fn fetch(&self, inner: &mut Inner, id: PageId, recovering: bool) -> PageResult<usize> {
        if id.file as usize >= self.files.len() {
            return Err(corruption(format!("page id names data file {} which does not exist", id.file)));
        }
        if let Some(idx) = inner.pool.lookup(id) {
            return Ok(idx);
        }
        let idx = match &self.pipeline {
            Some(p) => {
                let idx = inner.pool.victim_preferring(|f| copy_is_safe(p, f));
                p.hand_moved(inner.pool.hand_travel());
                idx
            }
            None => inner.pool.victim(),
        };
        let idx = idx.ok_or(PageError::PoolExhausted)?;
        if inner.pool.frames[idx].is_dirty() {
            self.evict(inner, idx)?;
        }
        let frame = &mut inner.pool.frames[idx];
        let leaving = (frame.id, frame.dw);
        self.read_home(id, frame.data.as_mut_slice())?;
        let torn = match page::check(frame.data.as_slice(), id) {
            PageCheck::Valid { .. } => false,
            PageCheck::Zero => {
                page::format(frame.data.as_mut_slice(), id);
                false
            }
            PageCheck::Bad if recovering => true,
            PageCheck::Bad => {
                return Err(corruption(format!(
                    "page {} of data-{} failed its checksum on read; the store is corrupt",
                    id.page_no, id.file
                )));
            }
        };
        inner.pool.install(idx, id, torn);
        if let Some(p) = &self.pipeline {
            self.keep_ring_copy(inner, p, leaving);
            inner.pool.frames[idx].dw = inner.copies.remove(&id).unwrap_or_default();
        }
        Ok(idx)
    }

    /// `pipelined`: remember the ring copy of a page leaving the pool (it still protects the page if the
    /// page comes back in the same checkpoint cycle).
    fn keep_ring_copy(&self, inner: &mut Inner, p: &Pipeline, (id, copy): (Option<PageId>, RingCopy)) {
        let (Some(id), true) = (id, copy.exists()) else { return };
        inner.copies.insert(id, copy);
        if inner.copies.len() > 2 * p.ring_batches() * self.config.dw_batch_pages {
            let recycled = p.recycled_seq();
            inner.copies.retain(|_, c| c.seq > recycled);
        }
    }

    /// The write-ahead rule: the log is durable up to the page's LSN before the page is written.
    fn write_ahead(&self, lsn: Lsn) -> PageResult<()> {
        if !self.config.faults.wal_rule_skip_flush {
            self.log.flush_to(lsn)?;
        }
        let flushed = self.log.flushed_lsn();
        assert!(flushed >= lsn, "write-ahead rule violated: page LSN {lsn} is past the flushed log LSN {flushed}");
        Ok(())
    }

    /// Seal a private copy and validate it before it may be written (InnoDB's "croak"): a page that does
    /// not check out is a bug, never something to write.
    fn sealed_copy(&self, id: PageId, data: &[u8]) -> AlignedBuf {
        let mut copy = AlignedBuf::new(self.config.page_size, self.config.page_size);
        copy.as_mut_slice().copy_from_slice(data);
        seal_checked(id, copy.as_mut_slice());
        copy
    }

    /// A client needs frame `idx`: write its dirty page now, through the single-page path.
    fn evict(&self, inner: &mut Inner, idx: usize) -> PageResult<()> {
        let frame = &inner.pool.frames[idx];
        let id = frame.id.expect("a dirty frame holds a page");
        assert!(!frame.torn, "a torn frame is never dirty");
        let lsn = page::lsn(frame.data.as_slice());
        let result = match &self.pipeline {
            Some(p) => {
                // Its copy is written but not yet synced: one sync of the ring (which makes every batch
                // written so far durable) instead of a double-write of its own and two syncs.
                if p.is_current(frame.dw, lsn) {
                    // Only a batch already written can be made durable by a sync; one still being written
                    // (a spool in progress) leaves this page to the 2012 path below, counted there once.
                    let written = frame.dw.seq <= p.written_seq();
                    if !p.is_safe(frame.dw, lsn) && written && self.poison(self.dw_sync_ring_now())? {
                        add(&self.counters.evictions_waited_for_dw, 1);
                    }
                } else if self.poison(self.spool_for_eviction(inner, idx))? {
                    add(&self.counters.evictions_waited_for_dw, 1);
                }
                let frame = &inner.pool.frames[idx];
                let home_write = p.home_write();
                if p.is_safe(frame.dw, lsn) {
                    // Its copy is durable in the ring and stays there until this write is synced.
                    self.write_home_relying_on_ring(p, id, lsn, frame.dw.seq, frame.data.as_slice())
                } else {
                    drop(home_write);
                    self.write_one(id, lsn, frame.data.as_slice())
                }
            }
            None => self.write_one(id, lsn, frame.data.as_slice()),
        };
        self.poison(result)?;
        add(&self.counters.eviction_writes, 1);
        inner.pool.set_dirty(idx, false);
        inner.pool.frames[idx].checkpoint_needed = false;
        Ok(())
    }

    /// `pipelined`: write a page home whose durable ring copy has its LSN (checked by the caller under
    /// `Pipeline::home_write`, still held): no double-write, no sync; the ring batch is recycled only
    /// after the data file is synced.
    fn write_home_relying_on_ring(&self, p: &Pipeline, id: PageId, lsn: Lsn, seq: u64, data: &[u8]) -> PageResult<()> {
        self.write_ahead(lsn)?;
        let copy = self.sealed_copy(id, data);
        p.wrote_home(id.file, seq);
        self.write_home(id, copy.as_slice(), WriteSync::None)
    }

    fn write_one(&self, id: PageId, lsn: Lsn, data: &[u8]) -> PageResult<()> {
        if !self.config.faults.evict_skip_write_ahead {
            self.write_ahead(lsn)?;
        }
        let copy = self.sealed_copy(id, data);
        match self.config.mode {
            Mode::None | Mode::Fpw => self.write_home(id, copy.as_slice(), WriteSync::None),
            Mode::Atomic => self.write_home(id, copy.as_slice(), self.atomic_write()),
            Mode::Dw => {
                let dw = self.dw.as_ref().expect("dw mode has a double-write area");
                self.storage.mark(DW_FLUSH_MARK);
                dw.write(Region::Single, copy.as_slice(), self.config.faults.dw_skip_fsync)?;
                add(&self.counters.dw_bytes, copy.len() as u64);
                add(&self.counters.data_syncs, u64::from(!self.config.faults.dw_skip_fsync));
                add(&self.counters.dw_syncs, u64::from(!self.config.faults.dw_skip_fsync));
                add(&self.counters.evictions_waited_for_dw, 1);
                self.write_home(id, copy.as_slice(), WriteSync::None)?;
                // The single-page slots are reused a few evictions later: the home copy must be durable.
                if self.config.faults.dw_reuse_slot_before_home_sync {
                    return Ok(());
                }
                self.sync_data_file(id.file)
            }
        }
    }

    /// How `atomic` mode writes a page (plain only under a deliberate test bug).
    fn atomic_write(&self) -> WriteSync {
        if self.config.faults.atomic_plain_write { WriteSync::None } else { WriteSync::AtomicDsync }
    }

    /// Write a batch of page copies through the mode's protection path, sorted by file and offset.
    /// `pipelined`: the pages whose ring copy is durable go home first, with no double-write of their own;
    /// the rest take the 2012 path.
    fn write_batch(&self, copies: &mut [PageCopy]) -> PageResult<()> {
        copies.sort_by_key(|c| c.id);
        let max_lsn = copies.iter().map(|c| c.lsn).max().unwrap_or(0);
        self.write_ahead(max_lsn)?;
        for c in copies.iter_mut() {
            c.bytes = self.sealed_copy(c.id, c.bytes.as_slice());
        }
        let Some(p) = &self.pipeline else { return self.write_batch_2012(copies) };
        let mut unsafe_copies = Vec::new();
        {
            let _home_writes = p.home_write();
            for c in copies.iter_mut() {
                if p.is_safe(c.dw, c.lsn) {
                    p.wrote_home(c.id.file, c.dw.seq);
                    self.write_home(c.id, c.bytes.as_slice(), WriteSync::None)?;
                } else {
                    let mut bytes = AlignedBuf::new(self.config.page_size, self.config.page_size);
                    bytes.as_mut_slice().copy_from_slice(c.bytes.as_slice());
                    unsafe_copies.push((c.id, bytes));
                }
            }
        }
        if unsafe_copies.is_empty() {
            return Ok(());
        }
        let mut rest: Vec<PageCopy> = unsafe_copies
            .into_iter()
            .map(|(id, bytes)| PageCopy { frame: 0, id, lsn: 0, for_checkpoint: false, dw: RingCopy::default(), bytes })
            .collect();
        self.write_batch_2012(&mut rest)
    }

    /// The 2012 batch path: sealed copies, sorted, through the double-write batch region (in `dw` mode).
    fn write_batch_2012(&self, copies: &mut [PageCopy]) -> PageResult<()> {
        if let Some(dw) = &self.dw {
            let mut images = AlignedBuf::new(copies.len() * self.config.page_size, self.config.page_size);
            for (slot, c) in images.as_mut_slice().chunks_exact_mut(self.config.page_size).zip(copies.iter()) {
                slot.copy_from_slice(c.bytes.as_slice());
            }
            self.storage.mark(DW_FLUSH_MARK);
            dw.write(Region::Batch, images.as_slice(), self.config.faults.dw_skip_fsync)?;
            add(&self.counters.dw_bytes, images.len() as u64);
            add(&self.counters.data_syncs, u64::from(!self.config.faults.dw_skip_fsync));
            add(&self.counters.dw_syncs, u64::from(!self.config.faults.dw_skip_fsync));
        }
        let sync = if self.config.mode == Mode::Atomic { self.atomic_write() } else { WriteSync::None };
        let mut touched = BTreeSet::new();
        for c in copies.iter() {
            self.write_home(c.id, c.bytes.as_slice(), sync)?;
            touched.insert(c.id.file);
        }
        // The double-write batch region is reused by the next batch: these pages must be durable first.
        if self.dw.is_some() {
            for file in touched {
                self.sync_data_file(file)?;
            }
        }
        Ok(())
    }

    /// Flush up to one batch of dirty pages chosen by `pick` (called on each idle dirty frame, in
    /// clock order from the hand). Returns how many were written.
    fn flush_batch(&self, pick: impl Fn(&super::pool::Frame) -> bool) -> PageResult<usize> {
        self.flush_batch_of(false, pick)
    }

    /// [`PageStore::flush_batch`] among the running checkpoint's frames only.
    fn flush_checkpoint_batch(&self, pick: impl Fn(&super::pool::Frame) -> bool) -> PageResult<usize> {
        self.flush_batch_of(true, |f| f.checkpoint_needed && pick(f))
    }

    /// Copy frame `idx` for a flush if it is dirty, idle and `pick` takes it, marking it busy.
    fn take_for_flush(
        &self,
        frame: &mut super::pool::Frame,
        idx: usize,
        pick: &impl Fn(&super::pool::Frame) -> bool,
    ) -> Option<PageCopy> {
        // The flags first: reading the page's LSN touches its bytes, a cache miss per frame (measured at
        // 256 MiB: 6% of the CPU samples, under the pool lock).
        if !frame.is_dirty() || frame.pinned || frame.io_busy || !pick(frame) {
            return None;
        }
        frame.io_busy = true;
        let mut bytes = AlignedBuf::new(self.config.page_size, self.config.page_size);
        bytes.as_mut_slice().copy_from_slice(frame.data.as_slice());
        Some(PageCopy {
            frame: idx,
            id: frame.id.expect("dirty frame has a page"),
            lsn: page::lsn(frame.data.as_slice()),
            for_checkpoint: frame.checkpoint_needed,
            dw: frame.dw,
            bytes,
        })
    }

    fn flush_batch_of(&self, checkpoint_only: bool, pick: impl Fn(&super::pool::Frame) -> bool) -> PageResult<usize> {
        self.check_poison()?;
        let _io = lock(&self.batch_io);
        let batch = self.config.dw_batch_pages;
        let mut copies = {
            let mut guard = lock(&self.inner);
            let Inner { pool, checkpoint_frames, .. } = &mut *guard;
            let mut copies = Vec::new();
            if checkpoint_only {
                checkpoint_frames.retain(|&idx| pool.frames[idx].checkpoint_needed);
                for &idx in checkpoint_frames.iter() {
                    if copies.len() == batch {
                        break;
                    }
                    copies.extend(self.take_for_flush(&mut pool.frames[idx], idx, &pick));
                }
            } else {
                let (n, start) = (pool.frames.len(), pool.hand());
                for step in 0..n {
                    if copies.len() == batch {
                        break;
                    }
                    let idx = (start + step) % n;
                    copies.extend(self.take_for_flush(&mut pool.frames[idx], idx, &pick));
                }
            }
            copies
        };
        if copies.is_empty() {
            return Ok(0);
        }
        let result = self.write_batch(&mut copies);
        let mut inner = lock(&self.inner);
        for c in &copies {
            let frame = &mut inner.pool.frames[c.frame];
            frame.io_busy = false;
            if result.is_err() || frame.id != Some(c.id) {
                continue;
            }
            // A copy taken after the checkpoint marked the frame holds every change up to its redo LSN.
            if c.for_checkpoint {
                frame.checkpoint_needed = false;
            }
            // Changed again while being written: it stays dirty.
            if page::lsn(frame.data.as_slice()) == c.lsn {
                inner.pool.set_dirty(c.frame, false);
            }
        }
        drop(inner);
        self.poison(result)?;
        Ok(copies.len())
    }

    /// Background flusher step: keep clean frames ahead of the clock hand so client evictions rarely
    /// have to write. Writes one batch when clean frames are below max(frames / 4, 2 × batch), or, in
    /// `dw` mode with a full pool, when a dirty frame the clock would take is within one batch of the
    /// hand: a client that finds no clean victim pays two syncs under the pool lock, so those pages are
    /// double-written first (only unreferenced ones: pages in use are skipped by the clock and would
    /// only be written again and again — measured: docs/pages.md). Returns pages written.
    pub fn flush_ahead(&self) -> PageResult<usize> {
        let batch = self.config.dw_batch_pages;
        if let Some(p) = &self.pipeline {
            return self.flush_ahead_pipelined(p);
        }
        let (clean, frames, victims_ahead) = {
            let inner = lock(&self.inner);
            let pool = &inner.pool;
            let dw_full = self.config.mode == Mode::Dw && pool.is_full();
            (pool.clean_frames(), pool.frames.len(), if dw_full { pool.dirty_victims_ahead(batch) } else { 0 })
        };
        if clean < self.clean_target(frames) {
            return self.flush_batch(|_| true);
        }
        if victims_ahead > 0 {
            return self.flush_batch(|frame| !frame.referenced);
        }
        Ok(0)
    }

    /// `pipelined`: the spooler makes pages safe ahead of the clock, so the flusher keeps clean frames
    /// available by writing home pages whose ring copy is durable (no sync of their own); when there are
    /// none it writes a batch the 2012 way rather than let clients find no clean frame (measured: without
    /// it, a sixth of evictions found none and waited for two syncs under the pool lock).
    fn flush_ahead_pipelined(&self, p: &Pipeline) -> PageResult<usize> {
        let (clean, frames) = {
            let inner = lock(&self.inner);
            (inner.pool.clean_frames(), inner.pool.frames.len())
        };
        if clean >= self.clean_target(frames) {
            return Ok(0);
        }
        let safe = |f: &super::pool::Frame| copy_is_safe(p, f);
        let written = self.flush_batch(safe)?;
        if written > 0 {
            return Ok(written);
        }
        // Copies written but not yet synced: sync them now (a group sync) rather than double-write the
        // same pages again the 2012 way. None: spool what there is (even less than a batch), then sync.
        let synced = self.dw_sync_ring_now()?;
        let spooled = !synced && self.spool_step(Pick::Any)?.is_some() && self.dw_sync_ring_now()?;
        if synced || spooled {
            let written = self.flush_batch(safe)?;
            if written > 0 {
                return Ok(written);
            }
        }
        self.flush_batch(|_| true)
    }

    /// Clean frames the flusher keeps available: max(frames / 4, 2 × batch).
    fn clean_target(&self, frames: usize) -> usize {
        (frames / 4).max(2 * self.config.dw_batch_pages)
    }

    /// `pipelined`: sync the ring now if a batch is written and not yet durable (a client or the
    /// checkpoint needs a copy before the sync thread gets to it). True if it synced.
    fn dw_sync_ring_now(&self) -> PageResult<bool> {
        let Some(p) = &self.pipeline else { return Ok(false) };
        let written = p.written_seq();
        if written <= p.durable_seq() {
            return Ok(false);
        }
        self.dw_sync_ring(written)?;
        Ok(true)
    }

    /// `pipelined`: spool one batch of dirty pages the clock is coming to (unreferenced ones on the line of
    /// next evictions, in clock order from the hand) that have no current copy in the ring, into the next ring
    /// position, without syncing; [`PageStore::dw_sync_ring`] makes it durable. Returns the batch's
    /// sequence number, or `None` when there is nothing to spool, the store is not `pipelined`, or the
    /// ring position's previous batch is not yet durable (several batches in flight, never more than the
    /// ring holds).
    pub fn dw_spool(&self) -> PageResult<Option<u64>> {
        self.spool_step(Pick::FullBatch)
    }

    /// [`PageStore::dw_spool`] taking the pages `how` says ([`Pick::FullBatch`] or [`Pick::Any`]).
    fn spool_step(&self, how: Pick) -> PageResult<Option<u64>> {
        let (Some(p), Some(dw)) = (&self.pipeline, &self.dw) else { return Ok(None) };
        self.check_poison()?;
        let mut spool = lock(&p.spool);
        let seq = p.next_seq();
        let reused = seq.saturating_sub(p.ring_batches() as u64);
        if p.durable_seq() < reused {
            return Ok(None);
        }
        let images = self.spool_buffer(&mut spool);
        let picks = self.pick_for_spool(&mut lock(&self.inner), p, seq, how, images);
        if picks.is_empty() {
            return Ok(None);
        }
        self.write_spooled(p, dw, seq, &picks, images)?;
        Ok(Some(seq))
    }

    /// The spooler's batch buffer (one, reused: page copies go straight into it under the pool lock and
    /// are sealed there, with no allocation or copy per page).
    fn spool_buffer<'a>(&self, spool: &'a mut Option<AlignedBuf>) -> &'a mut AlignedBuf {
        let (batch, page_size) = (self.config.dw_batch_pages, self.config.page_size);
        spool.get_or_insert_with(|| AlignedBuf::new(batch * page_size, page_size))
    }

    /// Write the picked pages' copies (the first `picks.len()` pages of `images`, in order) as ring batch
    /// `seq` (the spool lock held): recycle the position's previous batch, then seal and write (no sync:
    /// [`PageStore::dw_sync_ring`] does that).
    fn write_spooled(
        &self,
        p: &Pipeline,
        dw: &DoubleWrite<S::File>,
        seq: u64,
        picks: &[(PageId, Lsn)],
        images: &mut AlignedBuf,
    ) -> PageResult<()> {
        // Under `p.spool`: a spooler that waited for the lock while another's recycle fsync failed must not
        // overwrite the position that fsync was to free (its `recycled_seq` already moved on).
        self.check_poison()?;
        // The copies in this position (and the next few) protect nothing from now on: the home writes
        // that relied on them are made durable before they are overwritten.
        if let Some(through) = dw_pipelined::recycle_through(seq, p.recycled_seq(), p.ring_batches()) {
            let recycled = p.recycle(through, |file| self.sync_data_file(file));
            self.poison(recycled)?;
        }
        let max_lsn = picks.iter().map(|(_, lsn)| *lsn).max().unwrap_or(0);
        let written = self.write_ahead(max_lsn).and_then(|()| {
            let images = &mut images.as_mut_slice()[..picks.len() * self.config.page_size];
            for (slot, (id, _)) in images.chunks_exact_mut(self.config.page_size).zip(picks) {
                seal_checked(*id, slot);
            }
            self.storage.mark(DW_FLUSH_MARK);
            dw.write_ring(p.position(seq), images)?;
            add(&self.counters.dw_bytes, images.len() as u64);
            Ok(())
        });
        self.poison(written)?;
        p.advance();
        Ok(())
    }

    /// `pipelined`: a client must evict dirty frame `idx` that has no copy in the ring. Rather than a
    /// double-write of its own and two syncs, it spools a batch — this page and the next evictions ahead
    /// of the hand — and syncs the ring once, so the following evictions find their copies durable.
    /// False (nothing done) when the spooler is busy or the ring position is not yet free: the caller
    /// takes the 2012 path. The spool lock is only tried: its order is before `inner`, which the caller
    /// holds.
    fn spool_for_eviction(&self, inner: &mut Inner, idx: usize) -> PageResult<bool> {
        let (Some(p), Some(dw)) = (&self.pipeline, &self.dw) else { return Ok(false) };
        let Ok(mut spool) = p.spool.try_lock() else { return Ok(false) };
        let seq = p.next_seq();
        let reused = seq.saturating_sub(p.ring_batches() as u64);
        if p.durable_seq() < reused {
            return Ok(false);
        }
        // Recycle here, without waiting for a flush's or checkpoint's home writes in progress: this
        // client holds the pool lock, which everyone waits for (and crashtest, which runs a client's
        // transaction inside the flusher's page write on the same thread, deadlocked on it). Then
        // `write_spooled`'s recycle has nothing left to do.
        if let Some(through) = dw_pipelined::recycle_through(seq, p.recycled_seq(), p.ring_batches())
            && !self.poison(p.try_recycle(through, |file| self.sync_data_file(file)))?
        {
            return Ok(false);
        }
        let images = self.spool_buffer(&mut spool);
        let picks = self.pick_for_spool(inner, p, seq, Pick::Victim(idx), images);
        self.write_spooled(p, dw, seq, &picks, images)?;
        self.dw_sync_ring(seq)?;
        Ok(true)
    }

    /// Copy up to one batch of frames to spool as ring batch `seq` and note the copy in each frame. In
    /// order: a client's victim; the next evictions — the first [`dw_pipelined::spool_line_pages`]
    /// dirty pages the clock would take (unreferenced, idle), in clock order from the hand, which is
    /// also the order the flusher writes them home in; a running checkpoint's pages (so its home writes
    /// find their copies durable); and, when clean frames run low, as many again further down that
    /// line. Farther on, a copy would be recycled or the page changed before it goes home. `how`: with
    /// [`Pick::FullBatch`] (the spooler thread) next evictions alone are spooled only as a full batch
    /// or when one is near the front of the line ([`dw_pipelined::worth_spooling`]); nothing is picked
    /// otherwise.
    fn pick_for_spool(
        &self,
        inner: &mut Inner,
        p: &Pipeline,
        seq: u64,
        how: Pick,
        images: &mut AlignedBuf,
    ) -> Vec<(PageId, Lsn)> {
        let batch = self.config.dw_batch_pages;
        let window = dw_pipelined::spool_line_pages(batch);
        let clean_target = self.clean_target(inner.pool.frames.len());
        let low_clean = inner.pool.clean_frames() < clean_target;
        let wanted_line = if low_clean { 2 * window } else { window };
        // Only the frames the hand reaches soon (the clean ones the flusher keeps ahead of it, then the
        // line) are looked at, under the pool lock: a walk over the whole pool every spool was 6% of the
        // CPU samples at 256 MiB.
        let line = inner.pool.dirty_victims_in_order(wanted_line, clean_target + 4 * wanted_line);
        let victim = if let Pick::Victim(idx) = how { vec![idx] } else { Vec::new() };
        // The spooler thread leaves a checkpoint's pages in use (referenced) to the checkpoint itself, which
        // writes them home right after its own spool and sync: spooled early, they changed again before
        // their home write (measured at 256 MiB, where the hand never clears the bits: 19,775 of 58,375
        // pages spooled again).
        let checkpoint: Vec<usize> = if p.checkpointing() {
            let frames = &inner.pool.frames;
            let wanted = |f: &super::pool::Frame| f.checkpoint_needed && (how != Pick::FullBatch || !f.referenced);
            inner.checkpoint_frames.iter().copied().filter(|&idx| wanted(&frames[idx])).collect()
        } else {
            Vec::new()
        };
        // The picks, and the nearest pick's place in the line; chosen before any frame is marked, so a
        // look that decides to wait changes nothing.
        let mut picked: Vec<usize> = Vec::with_capacity(batch);
        // A victim's or a checkpoint's page is spooled whatever the batch's size.
        let (mut forced, mut nearest) = (false, usize::MAX);
        // (frames, their first place in the line of next evictions; None: a victim's or a checkpoint's)
        let (near, far) = line.split_at(line.len().min(window));
        let passes = [(&victim[..], None), (near, Some(0)), (&checkpoint[..], None), (far, Some(window))];
        for (frames, line_rank) in passes {
            for (rank, &idx) in frames.iter().enumerate() {
                if picked.len() == batch {
                    break;
                }
                if picked.contains(&idx) || !needs_copy(p, &inner.pool.frames[idx]) {
                    continue;
                }
                picked.push(idx);
                match line_rank {
                    Some(first) => nearest = nearest.min(first + rank),
                    None => forced = true,
                }
            }
        }
        let wait = how == Pick::FullBatch && !forced && !dw_pipelined::worth_spooling(picked.len(), nearest, batch);
        if wait || picked.is_empty() {
            if how == Pick::FullBatch {
                // Nothing changes at the front of the line until the hand moves (a page is referenced when
                // it is dirtied, and joins the line only when the hand clears that): sleep till then.
                p.sleep_until_travel(inner.pool.hand_travel(), batch.div_ceil(2) as u64);
            }
            return Vec::new();
        }
        let mut copies = Vec::with_capacity(picked.len());
        // Every change to these pages up to here is in the copies (the pool lock is held): see
        // `RingCopy::taken_at`. During redo the log already ends where redo will end: the pages hold only
        // what has been replayed so far.
        let taken_at = inner.redo_applied.unwrap_or_else(|| self.log.last_lsn());
        let cycle = p.cycle_lsn();
        for (idx, slot) in picked.into_iter().zip(images.as_mut_slice().chunks_exact_mut(self.config.page_size)) {
            let frame = &mut inner.pool.frames[idx];
            // A copy taken earlier in this cycle would have covered the page: it was recycled first
            // (or, taken before the page's last change, it was of an earlier cycle's version): wasted work.
            if frame.dw.exists() && frame.dw.taken_at >= cycle {
                add(&self.counters.dw_pages_respooled, 1);
            }
            frame.dw = RingCopy { seq, lsn: page::lsn(frame.data.as_slice()), taken_at };
            slot.copy_from_slice(frame.data.as_slice());
            copies.push((frame.id.expect("dirty frame has a page"), frame.dw.lsn));
        }
        add(&self.counters.dw_pages_spooled, copies.len() as u64);
        copies
    }

    /// `pipelined`: sync the double-write area, making every ring batch up to `seq` durable (all batches
    /// written before this call: the spooler hands them over in order).
    pub fn dw_sync_ring(&self, seq: u64) -> PageResult<()> {
        let (Some(p), Some(dw)) = (&self.pipeline, &self.dw) else { return Ok(()) };
        // A ring sync after a failed one could succeed on copies the failed one lost: refuse once poisoned,
        // and poison before another ring sync can start.
        let _one_at_a_time = lock(&self.ring_sync);
        self.check_poison()?;
        if p.durable_seq() >= seq {
            return Ok(()); // the sync this one waited behind covered it
        }
        if !self.config.faults.dw_skip_fsync {
            self.poison(dw.sync().map_err(PageError::from))?;
            add(&self.counters.data_syncs, 1);
            add(&self.counters.dw_syncs, 1);
        }
        p.mark_durable(seq);
        Ok(())
    }

    /// A checkpoint, in the order of docs/format-pages.md: note the redo LSN, flush every page dirtied at
    /// or before it through the protection path, fsync the data files, log and flush the checkpoint
    /// record, update the control file, then let the log drop what is below the redo LSN.
    pub fn checkpoint(&self) -> PageResult<()> {
        self.check_poison()?;
        let _one_at_a_time = lock(&self.checkpoint_lock);
        let started = Instant::now();
        // Every page dirty at this moment holds changes at or below the redo LSN, whatever its page LSN
        // becomes later: mark them all, and write each marked page from a copy taken after this point.
        let redo_lsn = {
            let mut inner = lock(&self.inner);
            inner.redo_lsn = self.log.last_lsn();
            if let Some(p) = &self.pipeline {
                // Copies taken before this point protect only the version they hold from now on.
                p.start_cycle(inner.redo_lsn);
            }
            let Inner { pool, checkpoint_frames, .. } = &mut *inner;
            checkpoint_frames.clear();
            for (idx, frame) in pool.frames.iter_mut().enumerate() {
                frame.checkpoint_needed = frame.is_dirty();
                if frame.checkpoint_needed {
                    checkpoint_frames.push(idx);
                }
            }
            inner.redo_lsn
        };
        match &self.pipeline {
            Some(p) => {
                p.set_checkpointing(true);
                let flushed = self.checkpoint_flush_pipelined(p);
                p.set_checkpointing(false);
                flushed?;
            }
            None => while self.flush_checkpoint_batch(|_| true)? > 0 {},
        }
        if !self.config.faults.checkpoint_skip_data_fsync {
            match &self.pipeline {
                // A sync round: it first waits for home writes that checked their copy against the
                // cycle before this one, so they are durable when the checkpoint is recorded.
                Some(p) => self.poison(p.sync_round(true, |n| self.sync_data_file(n)))?,
                None => {
                    for n in 0..self.files.len() as u32 {
                        let synced = self.sync_data_file(n);
                        self.poison(synced)?;
                    }
                }
            }
        }
        let result = self.record_checkpoint(redo_lsn);
        self.poison(result)?;
        add(&self.counters.checkpoints, 1);
        add(&self.counters.checkpoint_ns_total, started.elapsed().as_nanos() as u64);
        Ok(())
    }

    /// `pipelined`: write the checkpoint's pages home relying on ring copies — spooled ahead by the
    /// spooler thread while this one writes (or by this thread, one batch at a time), synced by whichever
    /// gets there first — with no double-write sync and no data-file sync per batch (the ring's recycle
    /// and the checkpoint's own fsync make them durable). A page changed after its copy was taken goes
    /// the 2012 way. Each round writes at least one page or ends the loop.
    fn checkpoint_flush_pipelined(&self, p: &Pipeline) -> PageResult<()> {
        let safe = |f: &super::pool::Frame| copy_is_safe(p, f);
        loop {
            if self.flush_checkpoint_batch(safe)? > 0 {
                continue;
            }
            // Several batches, then one sync for all of them (at most half the ring, so the spooler
            // thread keeps room).
            let mut spooled = false;
            for _ in 0..p.ring_batches() / 2 {
                if self.spool_step(Pick::Any)?.is_none() {
                    break;
                }
                spooled = true;
            }
            let synced = self.dw_sync_ring_now()?;
            if (spooled || synced) && self.flush_checkpoint_batch(safe)? > 0 {
                continue;
            }
            if self.flush_checkpoint_batch(|_| true)? == 0 {
                return Ok(());
            }
        }
    }

    fn record_checkpoint(&self, redo_lsn: Lsn) -> PageResult<()> {
        let payload = record::encode_checkpoint(redo_lsn);
        let checkpoint_lsn = self.log.append(record::KIND_CHECKPOINT, &payload)?;
        add(&self.counters.wal_bytes, self.log.record_bytes(payload.len()));
        self.log.flush_to(checkpoint_lsn)?;
        let mut control = lock(&self.control);
        let next = ControlRecord { redo_lsn, checkpoint_lsn, clean_shutdown: false, ..control.current() };
        control.update(next)?;
        drop(control);
        self.log.truncate_before(redo_lsn)
    }

    /// Run `body` as one transaction: its page writes are applied and logged as one record (all or
    /// nothing after a crash). Returns the record's LSN; the change is durable after [`Self::commit`].
    pub fn update<T>(&self, tag: u64, body: impl FnOnce(&mut Tx<'_, S>) -> PageResult<T>) -> PageResult<(T, Lsn)> {
        self.check_poison()?;
        let mut guard = lock(&self.inner);
        let mut tx = Tx { store: self, inner: &mut guard, edits: Vec::new(), pinned: Vec::new() };
        let result = body(&mut tx).and_then(|value| Ok((value, tx.finish(tag)?)));
        // Pages may have changed in memory without a log record: nothing can be trusted any more.
        self.poison(result)
    }

    /// Wait until the record at `lsn` is durable (group commit).
    pub fn commit(&self, lsn: Lsn) -> PageResult<()> {
        // Fail-stop: after any failure (a data-file sync in another client's eviction, say) nothing more
        // is acknowledged. Found by crashtest's concurrent clients.
        self.check_poison()?;
        let flushed = self.log.commit(lsn);
        self.poison(flushed)
    }

    /// Read bytes of a page (through the buffer pool).
    pub fn read(&self, page: PageId, offset: usize, out: &mut [u8]) -> PageResult<()> {
        self.check_poison()?;
        let mut inner = lock(&self.inner);
        let idx = self.fetch(&mut inner, page, false)?;
        out.copy_from_slice(&inner.pool.frames[idx].data.as_slice()[offset..offset + out.len()]);
        Ok(())
    }

    /// Pages currently in data file `file` on disk or in the pool.
    pub fn page_count(&self, file: u32) -> PageResult<u32> {
        let on_disk = (self.files[file as usize].len()? / self.config.page_size as u64) as u32;
        let inner = lock(&self.inner);
        let in_pool = inner.pool.frames.iter().filter_map(|f| f.id).filter(|id| id.file == file);
        Ok(in_pool.map(|id| id.page_no + 1).max().unwrap_or(0).max(on_disk))
    }

    /// Clean shutdown: a final checkpoint, recorded as clean.
    pub fn close(&self) -> PageResult<()> {
        self.checkpoint()?;
        let mut control = lock(&self.control);
        let next = ControlRecord { clean_shutdown: true, ..control.current() };
        Ok(control.update(next)?)
    }

    /// The write-ahead log underneath.
    pub fn log(&self) -> &dyn PageLog {
        self.log.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Counters since open.
    pub fn stats(&self) -> StoreStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StoreStats {
            wal_bytes: get(&c.wal_bytes),
            fpi_bytes: get(&c.fpi_bytes),
            wal_syncs: self.log.stats().syncs,
            home_bytes: get(&c.home_bytes),
            dw_bytes: get(&c.dw_bytes),
            data_syncs: get(&c.data_syncs),
            eviction_writes: get(&c.eviction_writes),
            evictions_waited_for_dw: get(&c.evictions_waited_for_dw),
            dw_syncs: get(&c.dw_syncs),
            dw_pages_spooled: get(&c.dw_pages_spooled),
            dw_pages_respooled: get(&c.dw_pages_respooled),
            checkpoints: get(&c.checkpoints),
            checkpoint_secs_total: get(&c.checkpoint_ns_total) as f64 / 1e9,
            dw_restored_pages: get(&c.dw_restored_pages),
            redo_records: get(&c.redo_records),
        }
    }
}

/// The flusher and checkpointer threads of a running store; stopped (and joined) on drop.
pub struct Background {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl<S: Storage + Clone + 'static> PageStore<S> {
    /// Start the background flusher (every few ms) and a checkpoint every `checkpoint_every`.
    /// A failure in either poisons the store; clients see it on their next call.
    pub fn start_background(self: &Arc<Self>, checkpoint_every: Duration) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let flusher = {
            let (store, stop) = (self.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match store.flush_ahead() {
                        Ok(0) => std::thread::sleep(Duration::from_millis(2)),
                        Ok(_) => {}
                        Err(_) => return,
                    }
                }
            })
        };
        let checkpointer = {
            let (store, stop) = (self.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                    if last.elapsed() >= checkpoint_every {
                        if store.checkpoint().is_err() {
                            return;
                        }
                        last = Instant::now();
                    }
                }
            })
        };
        let mut threads = vec![flusher, checkpointer];
        if self.pipeline.is_some() {
            threads.extend(self.start_dw_pipeline(&stop));
        }
        Background { stop, threads }
    }

    /// `pipelined`: the spooler, and the sync thread it hands written batches to. The sync thread syncs
    /// once for every batch waiting (group sync) while the spooler goes on writing the next ones.
    fn start_dw_pipeline(self: &Arc<Self>, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
        let ring = self.pipeline.as_ref().map_or(1, Pipeline::ring_batches);
        let (written, to_sync) = std::sync::mpsc::sync_channel::<u64>(ring);
        let spooler = {
            let (store, stop) = (self.clone(), stop.clone());
            std::thread::spawn(move || {
                let p = store.pipeline.as_ref().expect("pipelined");
                while !stop.load(Ordering::Relaxed) {
                    // Wait for the ring position's previous batch to be durable before spooling into it.
                    let reused = p.next_seq().saturating_sub(p.ring_batches() as u64);
                    if !p.wait_durable(reused, || stop.load(Ordering::Relaxed) || store.check_poison().is_err()) {
                        return;
                    }
                    p.spooler_looking();
                    match store.dw_spool() {
                        Ok(Some(seq)) => {
                            if written.send(seq).is_err() {
                                return;
                            }
                        }
                        // Until the clock hand has moved or a checkpoint starts (a look every millisecond
                        // walked the pool under its lock for nothing); the timeout bounds how long `stop`
                        // goes unseen and paces what no wake-up covers (a ring position waiting for its
                        // sync, pages dirtied without the hand moving): pacing only, never safety.
                        Ok(None) => {
                            p.spooler_wait(Duration::from_millis(20));
                        }
                        Err(_) => return,
                    }
                }
            })
        };
        let syncer = {
            let store = self.clone();
            std::thread::spawn(move || {
                while let Ok(mut seq) = to_sync.recv() {
                    while let Ok(later) = to_sync.try_recv() {
                        seq = later;
                    }
                    if store.dw_sync_ring(seq).is_err() {
                        return;
                    }
                }
            })
        };
        vec![spooler, syncer]
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// For tests: where each on-disk piece lives.
#[doc(hidden)]
pub fn data_file_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("data-{n}"))
}
