//! A transaction's view of the pages: reads and writes in the buffer pool under the store lock, logged as
//! one record when it finishes. [`PageStore::update`], which runs one, is here rather than in the store so
//! that the store never names a transaction (one direction of use: tx.rs → store.rs).

use super::access::{Inner, PageAccess};
use super::error::PageResult;
use super::page::{self, Lsn, PageId};
use super::record::{self, Edit};
use super::stats::add;
use super::store::PageStore;
use crate::storage::Storage;

impl<S: Storage + Clone + 'static> PageStore<S> {
    /// Run `body` as one transaction: its page writes are applied and logged as one record (all or
    /// nothing after a crash). Returns the record's LSN; the change is durable after [`Self::commit`].
    pub fn update<T>(&self, tag: u64, body: impl FnOnce(&mut Tx<'_, S>) -> PageResult<T>) -> PageResult<(T, Lsn)> {
        self.check_poison()?;
        let mut guard = self.lock_inner();
        let mut tx = Tx { store: self, inner: &mut guard, edits: Vec::new(), pinned: Vec::new() };
        let result = body(&mut tx).and_then(|value| Ok((value, tx.finish(tag)?)));
        // Pages may have changed in memory without a log record: nothing can be trusted any more.
        self.poison(result)
    }
}

/// A transaction's view of the pages: reads and writes go to the buffer pool under the store lock.
pub struct Tx<'a, S: Storage> {
    pub(super) store: &'a PageStore<S>,
    pub(super) inner: &'a mut Inner,
    pub(super) edits: Vec<Edit>,
    pub(super) pinned: Vec<usize>,
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
        let redo_lsn = self.inner.redo_lsn;
        let imaged =
            self.store.protection.image_on_first_change(self.store, page, frame.data.as_mut_slice(), redo_lsn)?;
        frame.data.as_mut_slice()[offset..offset + bytes.len()].copy_from_slice(bytes);
        if imaged {
            self.inner.pool.set_dirty(idx, true);
        }
        self.edits.push(Edit { page, offset: offset as u16, bytes: bytes.to_vec() });
        Ok(())
    }

    /// Log the edits as one record, stamp the pages with its LSN, unpin them.
    pub(super) fn finish(self, tag: u64) -> PageResult<Lsn> {
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
