//! Torn-page protection: one module per protection, behind [`Protection`], which the store calls at the
//! points where they differ — the first change to a page after a checkpoint ([`fpw`] logs its image),
//! the choice of a victim and a page entering the pool ([`dw_pipelined`] prefers pages whose ring copy
//! is durable and keeps copies of pages that leave), an evicted page's and a batch's home write (none
//! and fpw write home; [`atomic`] writes untorn; [`dw_2012`] writes the double-write area, syncs it,
//! writes home; [`dw_pipelined`] relies on a durable ring copy), the checkpoint (its flush and its
//! data-file sync) and recovery (restore torn pages from the double-write area).
//!
//! An enum, not a trait object: the set is closed (the control file's mode and design codes name it),
//! every hook is generic over the store it is given, which a `dyn` trait could not be without boxing
//! each call's store, and a `match` at each hook shows all five side by side where they differ. What
//! is common to all of them (write-ahead, sealing, the home write and its assertions, the flush of a
//! batch) stays in the store, which each hook reaches through [`super::access::StoreAccess`], never
//! `PageStore`: the store owns its protection, and a protection that imported the store back would close
//! an import circle (ARCHITECTURE.md).

pub mod atomic;
pub mod dw_2012;
pub mod dw_pipelined;
pub mod fpw;
pub mod none;

use super::access::{Inner, PageCopy, StoreAccess};
use super::dw::DoubleWrite;
use super::error::PageResult;
use super::page::{Lsn, PageId};
use super::pool::Pool;
use super::{DwDesign, Mode, StoreConfig};
use crate::storage::{FileOptions, Storage, StorageFile};
use dw_2012::Dw2012;
use dw_pipelined::DwPipelined;
use std::path::Path;

/// The store's torn-page protection, with its state.
pub(super) enum Protection<F> {
    /// No protection (unsafe baseline).
    None,
    /// Full-page images in the log.
    Fpw,
    /// Untorn O_DIRECT + RWF_ATOMIC writes.
    Atomic,
    /// The 2012 double-write buffer.
    Dw2012(Dw2012<F>),
    /// The pipelined double-write ring (boxed: its bookkeeping is most of the enum's size).
    DwPipelined(Box<DwPipelined<F>>),
}

/// How data files are opened: `atomic` needs O_DIRECT for RWF_ATOMIC.
pub(super) fn data_file_options(config: &StoreConfig) -> FileOptions {
    FileOptions { dsync: false, direct: config.mode == Mode::Atomic }
}

impl<F: StorageFile> Protection<F> {
    /// The protection `config` asks for, opening (or creating) the double-write area in `dw_dir` for
    /// `dw`. `redo_lsn`: the checkpoint cycle the store starts in.
    pub(super) fn open<S: Storage<File = F>>(
        storage: &S,
        dw_dir: &Path,
        config: &StoreConfig,
        redo_lsn: Lsn,
    ) -> PageResult<Self> {
        let area = |ring| {
            let (page_size, batch) = (config.page_size, config.dw_batch_pages);
            DoubleWrite::create_or_open(storage, dw_dir, page_size, batch, ring, FileOptions::default())
                .map(|area| area.with_scan_read_bytes(config.dw_scan_read_bytes))
        };
        Ok(match (config.mode, config.dw_design) {
            (Mode::None, _) => Protection::None,
            (Mode::Fpw, _) => Protection::Fpw,
            (Mode::Atomic, _) => Protection::Atomic,
            (Mode::Dw, DwDesign::V2012) => Protection::Dw2012(Dw2012::new(area(0)?)),
            (Mode::Dw, DwDesign::Pipelined) => {
                let area = area(config.dw_ring_batches)?;
                Protection::DwPipelined(Box::new(DwPipelined::new(area, config, redo_lsn)))
            }
        })
    }

    /// The pipelined ring, if this is the `pipelined` design.
    pub(super) fn pipelined(&self) -> Option<&DwPipelined<F>> {
        match self {
            Protection::DwPipelined(p) => Some(p),
            _ => None,
        }
    }

    /// A transaction is about to change page `id` (bytes `data`): `fpw` logs the page's image first if
    /// this is its first change since the checkpoint's redo LSN. True if it did (the page's LSN is now
    /// the image record's).
    pub(super) fn image_on_first_change<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        id: PageId,
        data: &mut [u8],
        redo_lsn: Lsn,
    ) -> PageResult<bool> {
        match self {
            Protection::Fpw => fpw::log_image_if_first_change(store, id, data, redo_lsn),
            _ => Ok(false),
        }
    }

    /// Which frame a fetch reuses.
    pub(super) fn victim(&self, pool: &mut Pool) -> Option<usize> {
        match self {
            Protection::DwPipelined(p) => p.victim(pool),
            _ => pool.victim(),
        }
    }

    /// Page `id` now fills frame `idx`; `leaving` is the page that frame held and its ring copy.
    pub(super) fn page_installed(&self, inner: &mut Inner, idx: usize, id: PageId, leaving: Leaving) {
        if let Protection::DwPipelined(p) = self {
            p.page_installed(inner, idx, id, leaving);
        }
    }

    /// Write evicted dirty frame `idx` (page `id` at `lsn`) home through the protection, under the pool
    /// lock.
    pub(super) fn write_evicted<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        inner: &mut Inner,
        idx: usize,
        (id, lsn): (PageId, Lsn),
    ) -> PageResult<()> {
        let data = inner.pool.frames[idx].data.as_slice();
        match self {
            Protection::None => none::write_one(store, id, lsn, data),
            Protection::Fpw => fpw::write_one(store, id, lsn, data),
            Protection::Atomic => atomic::write_one(store, id, lsn, data),
            Protection::Dw2012(d) => d.write_one(store, id, lsn, data),
            Protection::DwPipelined(p) => p.write_evicted(store, inner, idx, (id, lsn)),
        }
    }

    /// Write a batch of sealed page copies (sorted by page, write-ahead done: the log is flushed to
    /// `flushed`) home through the protection.
    pub(super) fn write_batch<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        copies: &[&PageCopy],
        flushed: Lsn,
    ) -> PageResult<()> {
        match self {
            Protection::None => none::write_batch(store, copies, flushed),
            Protection::Fpw => fpw::write_batch(store, copies, flushed),
            Protection::Atomic => atomic::write_batch(store, copies, flushed),
            Protection::Dw2012(d) => d.write_batch(store, copies, flushed),
            Protection::DwPipelined(p) => p.write_batch(store, copies, flushed),
        }
    }

    /// The background flusher's step: pages written.
    pub(super) fn flush_ahead<A: StoreAccess<File = F>>(&self, store: &A) -> PageResult<usize> {
        match self {
            Protection::DwPipelined(p) => p.flush_ahead(store),
            // A 2012 client that finds no clean victim pays two syncs under the pool lock: write its
            // victims ahead.
            Protection::Dw2012(_) => store.flush_ahead_of_clock(true),
            _ => store.flush_ahead_of_clock(false),
        }
    }

    /// A checkpoint chose `redo_lsn` (under the pool lock).
    pub(super) fn checkpoint_began(&self, redo_lsn: Lsn) {
        if let Protection::DwPipelined(p) = self {
            p.checkpoint_began(redo_lsn);
        }
    }

    /// Write every page the checkpoint marked.
    pub(super) fn checkpoint_flush<A: StoreAccess<File = F>>(&self, store: &A) -> PageResult<()> {
        match self {
            Protection::DwPipelined(p) => p.checkpoint_flush(store),
            _ => {
                while store.flush_checkpoint_batch(|_| true)? > 0 {}
                Ok(())
            }
        }
    }

    /// Make the checkpoint's home writes durable before it is recorded at `redo_lsn`.
    pub(super) fn checkpoint_sync<A: StoreAccess<File = F>>(&self, store: &A, redo_lsn: Lsn) -> PageResult<()> {
        match self {
            Protection::DwPipelined(p) => p.checkpoint_sync(store, redo_lsn),
            _ => {
                for n in 0..store.data_files() as u32 {
                    let synced = store.sync_data_file(n);
                    store.poison(synced)?;
                }
                Ok(())
            }
        }
    }

    /// Recovery, before redo: repair what the protection can repair from outside the log.
    pub(super) fn restore_torn_pages<A: StoreAccess<File = F>>(&self, store: &A) -> PageResult<()> {
        match self {
            Protection::Dw2012(d) => dw_2012::restore_from_area(store, d.area()),
            Protection::DwPipelined(p) => dw_2012::restore_from_area(store, p.area()),
            _ => Ok(()),
        }
    }

    /// Why a torn page could not be repaired, for recovery's error.
    pub(super) fn why_unrepairable(&self) -> &'static str {
        match self {
            Protection::None => "mode none has no torn-page protection",
            Protection::Fpw => "no full-page image of it was logged after the checkpoint",
            Protection::Dw2012(_) | Protection::DwPipelined(_) => "the double-write area has no valid copy of it",
            Protection::Atomic => "atomic writes should have prevented this: the device tore a write",
        }
    }
}

/// The page a frame held before a fetch reused it, and its ring copy.
pub(super) type Leaving = (Option<PageId>, dw_pipelined::RingCopy);
