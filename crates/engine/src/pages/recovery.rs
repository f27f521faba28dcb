//! Recovery: [`PageStore::open`] (here, not in `store.rs`, so that the store never calls into recovery),
//! redo of the log after the checkpoint's redo LSN once the protection has restored what it can
//! ([`super::protection`]), and the checksum scan of every page that follows the end-of-recovery
//! checkpoint. Also the check that a store is opened with the settings it was created with.

use super::access::{Inner, PageAccess};
use super::control::{ControlFile, ControlRecord};
use super::error::{PageError, PageResult};
use super::log::{LogRecord, open_wal};
use super::page::{self, Lsn, PageCheck, PageId};
use super::protection::{self, Protection};
use super::record::{self, Edit};
use super::stats::add;
use super::store::{CONTROL_FILE_NAME, PageStore, corruption, data_file_path};
use super::{DwDesign, Mode, StoreConfig};
use crate::storage::{Storage, StorageFile};
use std::collections::BTreeSet;
use std::path::Path;
use syncbench_sys::AlignedBuf;

/// The store on disk was created with `on_disk`'s page size, mode and design; `config` must match.
pub(super) fn check_settings(on_disk: &ControlRecord, config: &StoreConfig) -> PageResult<()> {
    let design_differs = config.mode == Mode::Dw && DwDesign::from_code(on_disk.dw_design) != Some(config.dw_design);
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
    Ok(())
}

impl<S: Storage + Clone + 'static> PageStore<S> {
    /// Open an existing store and recover it: double-write restore, redo of the log after the last
    /// checkpoint, an end-of-recovery checkpoint, and a checksum scan of every page. Any page that is
    /// torn and cannot be repaired stops recovery with an error.
    pub fn open(storage: S, dir: &Path, config: StoreConfig) -> PageResult<Self> {
        config.validate().map_err(PageError::Invalid)?;
        let (wal_dir, dw_dir) = Self::paths(dir, &config);
        let control = ControlFile::open(&storage, &dir.join(CONTROL_FILE_NAME))?;
        check_settings(&control.current(), &config)?;
        let opts = protection::data_file_options(&config);
        let files = (0..config.data_files)
            .map(|n| storage.open(&data_file_path(dir, n), opts))
            .collect::<std::io::Result<Vec<_>>>()?;
        // Trust nothing still in a page cache from before the crash until it is synced (PostgreSQL's
        // SyncDataDirectory): an error here means the state is unknown, so stop.
        for f in &files {
            f.sync_all()?;
        }
        let (log, records) = open_wal(storage.clone(), &wal_dir, config.wal.clone())?;
        let protection = Protection::open(&storage, &dw_dir, &config, control.current().redo_lsn)?;
        let store = Self::assemble(storage, dir, config, files, Box::new(log), protection, control);
        store.protection.restore_torn_pages(&store)?;
        store.redo(&records)?;
        store.checkpoint()?;
        store.verify_all_pages()?;
        Ok(store)
    }

    pub(super) fn redo(&self, records: &[LogRecord]) -> PageResult<()> {
        let mut guard = self.lock_inner();
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
        let why = self.protection.why_unrepairable();
        corruption(format!(
            "recovery stopped: page {} of data-{} fails its checksum and cannot be repaired ({why})",
            id.page_no, id.file
        ))
    }

    pub(super) fn verify_all_pages(&self) -> PageResult<()> {
        let mut buf = AlignedBuf::new(self.config.page_size, self.config.page_size);
        for (n, file) in self.files.iter().enumerate() {
            let pages = file.len()? / self.config.page_size as u64;
            for page_no in 0..pages as u32 {
                let id = PageId { file: n as u32, page_no };
                if self.read_home(id, buf.as_mut_slice())? == PageCheck::Bad {
                    return Err(self.unrepairable(id));
                }
            }
        }
        Ok(())
    }
}
