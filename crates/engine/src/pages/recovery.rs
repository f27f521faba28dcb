//! Recovery after the protection has restored what it can ([`super::protection`]): redo of the log after
//! the checkpoint's redo LSN, and the checksum scan of every page that follows the end-of-recovery
//! checkpoint. Also the check that a store is opened with the settings it was created with.

use super::control::ControlRecord;
use super::error::{PageError, PageResult};
use super::log::LogRecord;
use super::page::{self, Lsn, PageCheck, PageId};
use super::record::{self, Edit};
use super::stats::add;
use super::store::{Inner, PageStore, corruption};
use super::{DwDesign, Mode, StoreConfig};
use crate::storage::{Storage, StorageFile};
use std::collections::BTreeSet;
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
