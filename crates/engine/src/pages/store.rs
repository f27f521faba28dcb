//! The page store: page access through the buffer pool, the log, the home writes every protection shares
//! (write-ahead, sealing, the asserted disk reads and writes: the store's side of [`super::access`]), and
//! checkpoints. What differs between the torn-page protections is in [`super::protection`], which reaches
//! the store only through `access`. The files above this one add to `PageStore` and are never called from
//! here (no import circle, see ARCHITECTURE.md): opening and recovery in `recovery.rs`, transactions in
//! `tx.rs`, batch flushes in `flush.rs`, the background threads in `background.rs`.
//!
//! Locking: `inner` (pool + redo LSN) is held for every page access and for a whole transaction, so log
//! order equals page-change order. `batch_io` serialises batch flushes (flusher and checkpoint share the
//! double-write batch region); lock order is `checkpoint_lock` → `batch_io` → `inner`. Evictions write
//! synchronously under `inner` through the single-page region. In the `pipelined` double-write design
//! ([`super::dw_pipelined`]) a spooler and a sync thread fill and sync a ring of batches ahead of the
//! clock; `Pipeline::spool` is taken before `inner`, and the read side of its home-write lock after.

use super::StoreConfig;
use super::access::{Inner, PageAccess, PageCopy, lock, seal_checked};
use super::control::{ControlFile, ControlRecord};
use super::error::{PageError, PageResult};
use super::log::{PageLog, open_wal};
use super::page::{self, Lsn, PageCheck, PageId};
use super::pool::Pool;
use super::protection::{self, Protection};
use super::record;
use super::stats::{Counters, StoreStats, add};
use crate::storage::{Storage, StorageFile, WriteSync};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;
use syncbench_sys::AlignedBuf;

pub(super) const CONTROL_FILE_NAME: &str = "control";
const WAL_SUBDIR: &str = "wal";
/// The page store.
pub struct PageStore<S: Storage> {
    pub(super) storage: S,
    dir: PathBuf,
    pub(super) config: StoreConfig,
    pub(super) files: Vec<S::File>,
    pub(super) log: Box<dyn PageLog>,
    /// The torn-page protection, with its state and its double-write area.
    pub(super) protection: Protection<S::File>,
    control: Mutex<ControlFile<S::File>>,
    inner: Mutex<Inner>,
    pub(super) batch_io: Mutex<()>,
    checkpoint_lock: Mutex<()>,
    poisoned: Mutex<Option<String>>,
    /// Held across a sync and the poisoning of its failure: a sync that starts after another failed sees the
    /// poison and refuses, instead of succeeding on data the failed one lost (fsync reports an error once).
    data_sync: Mutex<()>,
    pub(super) counters: Counters,
}

pub(super) fn corruption(msg: String) -> PageError {
    PageError::Corruption(msg)
}

impl<S: Storage + Clone + 'static> PageStore<S> {
    pub(super) fn paths(dir: &Path, config: &StoreConfig) -> (PathBuf, PathBuf) {
        let wal_dir = config.wal_dir.clone().unwrap_or_else(|| dir.join(WAL_SUBDIR));
        let dw_dir = config.dw_dir.clone().unwrap_or_else(|| dir.to_path_buf());
        (wal_dir, dw_dir)
    }

    /// Create an empty store in `dir` (created if missing). Load pages with [`PageStore::load_page`], then
    /// call [`PageStore::finish_load`] before using it.
    pub fn create(storage: S, dir: &Path, config: StoreConfig) -> PageResult<Self> {
        config.validate().map_err(PageError::Invalid)?;
        let (wal_dir, dw_dir) = Self::paths(dir, &config);
        for d in [dir, &wal_dir, &dw_dir] {
            crate::storage::create_dir_durably(&storage, d)?;
        }
        let opts = protection::data_file_options(&config);
        let files = (0..config.data_files)
            .map(|n| storage.create_new(&data_file_path(dir, n), opts))
            .collect::<std::io::Result<Vec<_>>>()?;
        let (log, old) = open_wal(storage.clone(), &wal_dir, config.wal.clone())?;
        if !old.is_empty() {
            return Err(PageError::Invalid("the log directory already holds a log".into()));
        }
        let protection = Protection::open(&storage, &dw_dir, &config, 0)?;
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
        Ok(Self::assemble(storage, dir, config, files, Box::new(log), protection, control))
    }

    pub(super) fn assemble(
        storage: S,
        dir: &Path,
        config: StoreConfig,
        files: Vec<S::File>,
        log: Box<dyn PageLog>,
        protection: Protection<S::File>,
        control: ControlFile<S::File>,
    ) -> Self {
        let pool = Pool::new(config.pool_frames(), config.page_size);
        let redo_lsn = control.current().redo_lsn;
        PageStore {
            storage,
            dir: dir.to_path_buf(),
            config,
            files,
            log,
            protection,
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
            counters: Counters::default(),
        }
    }

    /// Bulk-load one page during creation (written straight home with LSN 0; not logged).
    pub fn load_page(&self, id: PageId, body: impl FnOnce(&mut [u8])) -> PageResult<()> {
        let mut buf = AlignedBuf::new(self.config.page_size, self.config.page_size);
        page::format(buf.as_mut_slice(), id);
        body(buf.as_mut_slice());
        seal_checked(id, buf.as_mut_slice());
        // LSN 0: nothing to be ahead of.
        self.write_home(id, buf.as_slice(), WriteSync::None, 0)
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

    /// Where page `id` lives in its data file, for I/O of `buf`: asserted to be a page of this store, one
    /// whole page, from a page-aligned buffer (O_DIRECT in `atomic` mode needs it; every page buffer is
    /// an `AlignedBuf`).
    fn home_offset(&self, id: PageId, buf: &[u8]) -> u64 {
        let page_size = self.config.page_size;
        assert!((id.file as usize) < self.files.len(), "page {id:?} names a data file this store does not have");
        assert_eq!(buf.len(), page_size, "home I/O of page {id:?} is one whole page");
        assert!((buf.as_ptr() as usize).is_multiple_of(page_size), "home I/O of page {id:?} from an unaligned buffer");
        id.page_no as u64 * page_size as u64
    }

    fn write_page_home(&self, id: PageId, bytes: &[u8], sync: WriteSync) -> PageResult<()> {
        let offset = self.home_offset(id, bytes);
        assert_eq!(page::id(bytes), id, "a copy of another page is never written as page {id:?}");
        self.files[id.file as usize].write_at(bytes, offset, sync)?;
        add(&self.counters.home_bytes, bytes.len() as u64);
        Ok(())
    }

    /// The frame holding `id`, reading it (and evicting a victim) if needed. During recovery a page that
    /// fails its checksum is kept and flagged torn; otherwise it is an error.
    pub(super) fn fetch(&self, inner: &mut Inner, id: PageId, recovering: bool) -> PageResult<usize> {
        if id.file as usize >= self.files.len() {
            return Err(corruption(format!("page id names data file {} which does not exist", id.file)));
        }
        if let Some(idx) = inner.pool.lookup(id) {
            return Ok(idx);
        }
        let idx = self.protection.victim(&mut inner.pool).ok_or(PageError::PoolExhausted)?;
        if inner.pool.frames[idx].is_dirty() {
            self.evict(inner, idx)?;
        }
        let frame = &mut inner.pool.frames[idx];
        let leaving = (frame.id, frame.dw);
        let torn = match self.read_home(id, frame.data.as_mut_slice())? {
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
        self.protection.page_installed(inner, idx, id, leaving);
        Ok(idx)
    }

    /// A client needs frame `idx`: write its dirty page now, through the protection's single-page path.
    fn evict(&self, inner: &mut Inner, idx: usize) -> PageResult<()> {
        let frame = &inner.pool.frames[idx];
        let id = frame.id.expect("a dirty frame holds a page");
        assert!(!frame.torn, "a torn frame is never dirty");
        let lsn = page::lsn(frame.data.as_slice());
        let result = self.protection.write_evicted(self, inner, idx, (id, lsn));
        self.poison(result)?;
        add(&self.counters.eviction_writes, 1);
        inner.pool.set_dirty(idx, false);
        inner.pool.frames[idx].checkpoint_needed = false;
        Ok(())
    }

    /// Write a batch of page copies through the protection, sorted by file and offset, sealed, after the
    /// write-ahead step for the newest of them.
    pub(super) fn write_batch(&self, copies: &mut [PageCopy]) -> PageResult<()> {
        copies.sort_by_key(|c| c.id);
        let max_lsn = copies.iter().map(|c| c.lsn).max().unwrap_or(0);
        let flushed = self.write_ahead(max_lsn)?;
        for c in copies.iter_mut() {
            c.bytes = self.sealed_copy(c.id, c.bytes.as_slice());
        }
        let copies: Vec<&PageCopy> = copies.iter().collect();
        self.protection.write_batch(self, &copies, flushed)
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
            self.protection.checkpoint_began(inner.redo_lsn);
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
        self.protection.checkpoint_flush(self)?;
        if !self.config.faults.checkpoint_skip_data_fsync {
            self.protection.checkpoint_sync(self, redo_lsn)?;
        }
        let result = self.record_checkpoint(redo_lsn);
        self.poison(result)?;
        add(&self.counters.checkpoints, 1);
        add(&self.counters.checkpoint_ns_total, started.elapsed().as_nanos() as u64);
        Ok(())
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
        self.counters.snapshot(self.log.stats().syncs)
    }
}

/// What the protections use of the store (`super::access`): the home I/O, its assertions and the
/// fail-stop state live here, with the store's files and locks.
impl<S: Storage + Clone + 'static> PageAccess for PageStore<S> {
    type File = S::File;

    fn config(&self) -> &StoreConfig {
        &self.config
    }

    fn page_log(&self) -> &dyn PageLog {
        self.log.as_ref()
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn mark(&self, tag: &'static str) {
        self.storage.mark(tag);
    }

    fn data_files(&self) -> usize {
        self.files.len()
    }

    /// Read page `id` from its data file into `buf` (zeros past the end of the file) and check it: the
    /// checksum after every read.
    fn read_home(&self, id: PageId, buf: &mut [u8]) -> PageResult<PageCheck> {
        let offset = self.home_offset(id, buf);
        let file = &self.files[id.file as usize];
        if offset + self.config.page_size as u64 > file.len()? {
            buf.fill(0);
            return Ok(PageCheck::Zero);
        }
        file.read_exact_at(buf, offset)?;
        Ok(page::check(buf, id))
    }

    /// Write a sealed copy of page `id` home. The write-ahead rule: the log is durable up to the page's
    /// LSN (`flushed` is what [`Self::write_ahead`] saw; the flushed LSN never goes back).
    fn write_home(&self, id: PageId, bytes: &[u8], sync: WriteSync, flushed: Lsn) -> PageResult<()> {
        let lsn = page::lsn(bytes);
        // The deliberate bug writes evicted pages with no write-ahead step at all; only the simulator's own
        // rule check may see that.
        assert!(
            lsn <= flushed || self.config.faults.evict_skip_write_ahead,
            "write-ahead rule violated: page {id:?} at LSN {lsn} goes home with the log flushed to {flushed}"
        );
        self.write_page_home(id, bytes, sync)
    }

    /// Recovery: write home a page restored from a double-write copy. No write-ahead check: the copy was
    /// written under the rule before the crash, and the log recovered may end before it (media damage
    /// cut its tail), which verification after redo judges, not this write.
    fn write_restored(&self, id: PageId, bytes: &[u8]) -> PageResult<()> {
        self.write_page_home(id, bytes, WriteSync::None)
    }

    /// Write sealed copies home in order with `sync`; the data files written.
    fn write_home_batch(&self, copies: &[&PageCopy], sync: WriteSync, flushed: Lsn) -> PageResult<BTreeSet<u32>> {
        let mut touched = BTreeSet::new();
        for c in copies {
            self.write_home(c.id, c.bytes.as_slice(), sync, flushed)?;
            touched.insert(c.id.file);
        }
        Ok(touched)
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

    fn lock_inner(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// The write-ahead rule: the log is durable up to the page's LSN before the page is written. Returns
    /// the log's flushed LSN, which the home writes check their pages against.
    fn write_ahead(&self, lsn: Lsn) -> PageResult<Lsn> {
        if !self.config.faults.wal_rule_skip_flush {
            self.log.flush_to(lsn)?;
        }
        let flushed = self.log.flushed_lsn();
        assert!(flushed >= lsn, "write-ahead rule violated: page LSN {lsn} is past the flushed log LSN {flushed}");
        Ok(flushed)
    }

    /// Seal a private copy and validate it before it may be written (InnoDB's "croak"): a page that does
    /// not check out is a bug, never something to write.
    fn sealed_copy(&self, id: PageId, data: &[u8]) -> AlignedBuf {
        let mut copy = AlignedBuf::new(self.config.page_size, self.config.page_size);
        copy.as_mut_slice().copy_from_slice(data);
        seal_checked(id, copy.as_mut_slice());
        copy
    }

    /// One page on its way out of the pool (an eviction): write-ahead (skipped only by a deliberate bug),
    /// then a sealed copy. Returns the copy and the flushed LSN to check its home write against.
    fn single_copy(&self, id: PageId, lsn: Lsn, data: &[u8]) -> PageResult<(AlignedBuf, Lsn)> {
        let flushed =
            if self.config.faults.evict_skip_write_ahead { self.log.flushed_lsn() } else { self.write_ahead(lsn)? };
        Ok((self.sealed_copy(id, data), flushed))
    }
}

/// For tests: where each on-disk piece lives.
#[doc(hidden)]
pub fn data_file_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("data-{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RealStorage;
    use crate::pages::Mode;

    const PAGE: usize = 4096;

    fn store(dir: &Path) -> PageStore<RealStorage> {
        let mut config = StoreConfig::new(Mode::None, 1);
        config.page_size = PAGE;
        config.wal.segment_bytes = 1 << 20;
        PageStore::create(RealStorage, dir, config).unwrap()
    }

    fn sealed(id: PageId, lsn: Lsn) -> AlignedBuf {
        let mut buf = AlignedBuf::new(PAGE, PAGE);
        page::format(buf.as_mut_slice(), id);
        page::set_lsn(buf.as_mut_slice(), lsn);
        seal_checked(id, buf.as_mut_slice());
        buf
    }

    const ID: PageId = PageId { file: 0, page_no: 3 };

    #[test]
    fn a_home_write_within_the_flushed_log_is_read_back_valid() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        s.write_home(ID, sealed(ID, 10).as_slice(), WriteSync::None, 10).unwrap();
        let mut back = AlignedBuf::new(PAGE, PAGE);
        assert_eq!(s.read_home(ID, back.as_mut_slice()).unwrap(), PageCheck::Valid { lsn: 10 });
        let past_the_end = PageId { file: 0, page_no: 9 };
        assert_eq!(s.read_home(past_the_end, back.as_mut_slice()).unwrap(), PageCheck::Zero);
    }

    #[test]
    #[should_panic(expected = "write-ahead rule violated: page PageId { file: 0, page_no: 3 } at LSN 10")]
    fn a_home_write_ahead_of_the_flushed_log_is_a_bug() {
        let dir = tempfile::tempdir().unwrap();
        let _ = store(dir.path()).write_home(ID, sealed(ID, 10).as_slice(), WriteSync::None, 9);
    }

    #[test]
    #[should_panic(expected = "a copy of another page is never written")]
    fn a_home_write_of_another_pages_bytes_is_a_bug() {
        let dir = tempfile::tempdir().unwrap();
        let other = PageId { file: 0, page_no: 4 };
        let _ = store(dir.path()).write_home(ID, sealed(other, 1).as_slice(), WriteSync::None, 1);
    }

    #[test]
    #[should_panic(expected = "names a data file this store does not have")]
    fn home_io_outside_the_stores_files_is_a_bug() {
        let dir = tempfile::tempdir().unwrap();
        let mut buf = AlignedBuf::new(PAGE, PAGE);
        let _ = store(dir.path()).read_home(PageId { file: 1, page_no: 0 }, buf.as_mut_slice());
    }

    #[test]
    #[should_panic(expected = "from an unaligned buffer")]
    fn home_io_from_an_unaligned_buffer_is_a_bug() {
        let dir = tempfile::tempdir().unwrap();
        let mut buf = AlignedBuf::new(2 * PAGE, PAGE);
        let _ = store(dir.path()).read_home(ID, &mut buf.as_mut_slice()[8..PAGE + 8]);
    }

    #[test]
    #[should_panic(expected = "is one whole page")]
    fn home_io_of_part_of_a_page_is_a_bug() {
        let dir = tempfile::tempdir().unwrap();
        let mut buf = AlignedBuf::new(2 * PAGE, PAGE);
        let _ = store(dir.path()).read_home(ID, buf.as_mut_slice());
    }
}
