//! What a torn-page protection may use of the store, defined below both so that neither imports the
//! other: the store ([`super::store::PageStore`]) owns its protection and calls it, and each protection
//! calls back through these traits, which the store implements (the home I/O and poisoning in
//! `store.rs`, the batch flushes in `flush.rs`). Also the state the pool lock guards ([`Inner`]) and a
//! page copy on its way to disk ([`PageCopy`]), which both sides handle.

use super::StoreConfig;
use super::error::PageResult;
use super::log::PageLog;
use super::page::{self, Lsn, PageCheck, PageId};
use super::pool::{Frame, Pool};
use super::protection::dw_pipelined::ring::RingCopy;
use super::stats::Counters;
use crate::storage::{StorageFile, WriteSync};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use syncbench_sys::AlignedBuf;

/// The [`crate::storage::Storage::mark`] tag put on the timeline right before each write to the
/// double-write area (a batch, or one evicted page).
pub const DW_FLUSH_MARK: &str = "dw_flush";

/// What the pool lock guards.
pub(super) struct Inner {
    pub(super) pool: Pool,
    /// The frames the running checkpoint marked (`checkpoint_needed`), so its flushes and spools look
    /// at those rather than walk the whole pool for each batch under the pool lock (at 256 MiB, 32,768
    /// frames per batch); pruned as they are written.
    pub(super) checkpoint_frames: Vec<usize>,
    /// Changes after this LSN need a full-page image in `fpw` mode (the current checkpoint's redo LSN).
    pub(super) redo_lsn: Lsn,
    /// `pipelined`: the ring copies of pages not in the pool (a copy outlives its page's stay in a
    /// frame: it protects the page for the rest of its checkpoint cycle). Pruned of recycled copies when
    /// it holds more than twice the ring's pages. Under the pool lock because it changes with the frames.
    pub(super) copies: HashMap<PageId, RingCopy>,
    /// While recovery's redo runs: the LSN up to which every record has been applied (the pages do not
    /// yet hold the rest of the log, so a copy taken now holds the changes up to here only).
    pub(super) redo_applied: Option<Lsn>,
}

/// Seal a private copy of page `id` in place and validate it before it may be written (InnoDB's
/// "croak"): a page that does not check out is a bug, never something to write.
pub(super) fn seal_checked(id: PageId, copy: &mut [u8]) {
    page::seal(copy);
    let check = page::check(copy, id);
    assert!(matches!(check, PageCheck::Valid { .. }), "refusing to write page {id:?}: {check:?}");
}

/// A page copy on its way to disk.
pub(super) struct PageCopy {
    pub(super) frame: usize,
    pub(super) id: PageId,
    pub(super) lsn: Lsn,
    /// The frame was marked for the running checkpoint when this copy was taken.
    pub(super) for_checkpoint: bool,
    /// `pipelined`: the frame's ring copy when this copy was taken.
    pub(super) dw: RingCopy,
    pub(super) bytes: AlignedBuf,
}

/// A lock whose holder panicked is still the lock: the data it guards is checked by its users.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The store's pages on disk, its log, counters and fail-stop state, as the protections use them.
pub(super) trait PageAccess {
    /// The data files' and double-write area's file type.
    type File: StorageFile;
    /// The store's configuration.
    fn config(&self) -> &StoreConfig;
    /// The write-ahead log.
    fn page_log(&self) -> &dyn PageLog;
    /// The store's counters.
    fn counters(&self) -> &Counters;
    /// Put `tag` on the storage's timeline ([`crate::storage::Storage::mark`]).
    fn mark(&self, tag: &'static str);
    /// How many data files the store has.
    fn data_files(&self) -> usize;
    /// The pool lock.
    fn lock_inner(&self) -> MutexGuard<'_, Inner>;
    /// `Err` once the store is poisoned.
    fn check_poison(&self) -> PageResult<()>;
    /// Poison the store if `result` is an error (fail-stop); `result` unchanged.
    fn poison<T>(&self, result: PageResult<T>) -> PageResult<T>;
    /// The write-ahead rule for a page at `lsn`; the log's flushed LSN.
    fn write_ahead(&self, lsn: Lsn) -> PageResult<Lsn>;
    /// A sealed, validated copy of page `id`'s bytes `data`.
    fn sealed_copy(&self, id: PageId, data: &[u8]) -> AlignedBuf;
    /// An evicted page's write-ahead step and sealed copy, with the flushed LSN to check it against.
    fn single_copy(&self, id: PageId, lsn: Lsn, data: &[u8]) -> PageResult<(AlignedBuf, Lsn)>;
    /// Read page `id` from its data file and check it.
    fn read_home(&self, id: PageId, buf: &mut [u8]) -> PageResult<PageCheck>;
    /// Write a sealed copy of page `id` home, the log flushed to `flushed`.
    fn write_home(&self, id: PageId, bytes: &[u8], sync: WriteSync, flushed: Lsn) -> PageResult<()>;
    /// Recovery: write home a page restored from a double-write copy.
    fn write_restored(&self, id: PageId, bytes: &[u8]) -> PageResult<()>;
    /// Write sealed copies home in order; the data files written.
    fn write_home_batch(&self, copies: &[&PageCopy], sync: WriteSync, flushed: Lsn) -> PageResult<BTreeSet<u32>>;
    /// Sync data file `file`, fail-stop.
    fn sync_data_file(&self, file: u32) -> PageResult<()>;
}

/// The store's batch flushes, which some protections drive (`flush.rs`).
pub(super) trait BatchFlush {
    /// The flusher step of every protection but `pipelined`.
    fn flush_ahead_of_clock(&self, ahead_of_victims: bool) -> PageResult<usize>;
    /// Clean frames the flusher keeps available among `frames`.
    fn clean_target(&self, frames: usize) -> usize;
    /// Flush up to one batch of idle dirty pages chosen by `pick`; how many were written.
    fn flush_batch(&self, pick: impl Fn(&Frame) -> bool) -> PageResult<usize>;
    /// [`BatchFlush::flush_batch`] among the running checkpoint's frames only.
    fn flush_checkpoint_batch(&self, pick: impl Fn(&Frame) -> bool) -> PageResult<usize>;
}

/// Everything a protection's hooks take: the store, seen through the two traits above.
pub(super) trait StoreAccess: PageAccess + BatchFlush {}

impl<T: PageAccess + BatchFlush> StoreAccess for T {}
