//! Batch flushes: the background flusher's step and the checkpoint's batches take copies of idle dirty
//! frames under the pool lock and write them through the protection outside it.

use super::access::{BatchFlush, Inner, PageAccess, PageCopy, lock};
use super::error::PageResult;
use super::page;
use super::pool::Frame;
use super::store::PageStore;
use crate::storage::Storage;
use syncbench_sys::AlignedBuf;

impl<S: Storage + Clone + 'static> PageStore<S> {
    /// Background flusher step: keep clean frames ahead of the clock hand so client evictions rarely
    /// have to write. What it writes depends on the protection
    /// ([`super::protection::Protection::flush_ahead`]). Returns pages written.
    pub fn flush_ahead(&self) -> PageResult<usize> {
        self.protection.flush_ahead(self)
    }

    /// Copy frame `idx` for a flush if it is dirty, idle and `pick` takes it, marking it busy.
    fn take_for_flush(&self, frame: &mut Frame, idx: usize, pick: &impl Fn(&Frame) -> bool) -> Option<PageCopy> {
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

    fn flush_batch_of(&self, checkpoint_only: bool, pick: impl Fn(&Frame) -> bool) -> PageResult<usize> {
        self.check_poison()?;
        let _io = lock(&self.batch_io);
        let batch = self.config.dw_batch_pages;
        let mut copies = {
            let mut guard = self.lock_inner();
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
        let mut inner = self.lock_inner();
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
}

/// The batch flushes the protections drive (`super::access`).
impl<S: Storage + Clone + 'static> BatchFlush for PageStore<S> {
    /// The flusher step of every protection but `pipelined`: writes one batch when clean frames are below
    /// max(frames / 4, 2 × batch), or, with `ahead_of_victims` (2012 `dw`) and a full pool, when a dirty
    /// frame the clock would take is within one batch of the hand: a client that finds no clean victim
    /// pays two syncs under the pool lock, so those pages are double-written first (only unreferenced
    /// ones: pages in use are skipped by the clock and would only be written again and again — measured:
    /// docs/pages.md). Returns pages written.
    fn flush_ahead_of_clock(&self, ahead_of_victims: bool) -> PageResult<usize> {
        let batch = self.config.dw_batch_pages;
        let (clean, frames, victims_ahead) = {
            let inner = self.lock_inner();
            let pool = &inner.pool;
            let dw_full = ahead_of_victims && pool.is_full();
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

    /// Clean frames the flusher keeps available: max(frames / 4, 2 × batch).
    fn clean_target(&self, frames: usize) -> usize {
        (frames / 4).max(2 * self.config.dw_batch_pages)
    }

    /// Flush up to one batch of dirty pages chosen by `pick` (called on each idle dirty frame, in
    /// clock order from the hand). Returns how many were written.
    fn flush_batch(&self, pick: impl Fn(&Frame) -> bool) -> PageResult<usize> {
        self.flush_batch_of(false, pick)
    }

    /// [`BatchFlush::flush_batch`] among the running checkpoint's frames only.
    fn flush_checkpoint_batch(&self, pick: impl Fn(&Frame) -> bool) -> PageResult<usize> {
        self.flush_batch_of(true, |f| f.checkpoint_needed && pick(f))
    }
}
