//! `dw`, the `pipelined` design: pages are spooled into a ring of batches in the double-write area ahead
//! of their home write and synced by a thread of their own; a page whose ring copy is durable goes home
//! with no double-write and no sync of its own. The ring's state and its invariants are in [`ring`]; this
//! module does its I/O at the store's hooks (eviction, batch, flusher, checkpoint), the spooling in
//! [`spool`], and runs the spooler and sync threads.

pub(crate) mod ring;
mod spool;

pub use ring::{
    DEFAULT_RING_BATCHES, LINE_BATCHES, MAX_RING_BATCHES, MIN_RING_BATCHES, Pipeline, PipelineBugs, RingCopy,
    recycle_batches, recycle_through, spool_line_pages, worth_spooling,
};
pub(in crate::pages) use spool::Pick;

use crate::pages::StoreConfig;
use crate::pages::access::{Inner, PageCopy, StoreAccess};
use crate::pages::dw::DoubleWrite;
use crate::pages::error::PageResult;
use crate::pages::page::{self, Lsn, PageId};
use crate::pages::pool::{Frame, Pool};
use crate::pages::protection::{Leaving, dw_2012};
use crate::pages::stats::add;
use crate::storage::{StorageFile, WriteSync};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The pipelined double-write buffer: its area (with the ring) and the ring's bookkeeping.
pub struct DwPipelined<F> {
    area: DoubleWrite<F>,
    ring: Pipeline,
    /// Pages per batch.
    batch_pages: usize,
    /// Held across a ring sync and the poisoning of its failure: a ring batch is marked durable only by
    /// a sync that began on an unpoisoned store and succeeded.
    ring_sync: Mutex<()>,
}

/// Whether `frame`'s page may go home relying on its ring copy ([`Pipeline::is_safe`]); the page's bytes
/// (its LSN, a cache miss) are read only for a frame that has a copy.
fn copy_is_safe(p: &Pipeline, f: &Frame) -> bool {
    f.dw.exists() && p.is_safe(f.dw, page::lsn(f.data.as_slice()))
}

impl<F: StorageFile> DwPipelined<F> {
    /// The ring for a store configured by `config`, starting in the checkpoint cycle of `redo_lsn`.
    pub(super) fn new(area: DoubleWrite<F>, config: &StoreConfig, redo_lsn: Lsn) -> Self {
        let faults = &config.faults;
        let bugs = PipelineBugs {
            home_before_sync: faults.dw_home_before_sync,
            recycle_skips_home_sync: faults.dw_recycle_before_home_sync,
            trust_earlier_cycle: faults.dw_trust_earlier_cycle,
        };
        let ring = Pipeline::new(config.data_files, config.dw_ring_batches, bugs);
        // The cycle recovery starts in (copies taken during redo are bounded by `redo_applied` too).
        ring.start_cycle(redo_lsn);
        DwPipelined { area, ring, batch_pages: config.dw_batch_pages, ring_sync: Mutex::new(()) }
    }

    /// The double-write area.
    pub(super) fn area(&self) -> &DoubleWrite<F> {
        &self.area
    }

    /// A victim for a fetch: a dirty page whose copy is durable is the next best thing to a clean one.
    pub(super) fn victim(&self, pool: &mut Pool) -> Option<usize> {
        let idx = pool.victim_preferring(|f| copy_is_safe(&self.ring, f));
        self.ring.hand_moved(pool.hand_travel());
        idx
    }

    /// Page `id` fills frame `idx`: remember the ring copy of the page leaving (it still protects that
    /// page if it comes back in the same checkpoint cycle) and give `id` its own, if it has one.
    pub(super) fn page_installed(&self, inner: &mut Inner, idx: usize, id: PageId, (left, copy): Leaving) {
        if let (Some(left), true) = (left, copy.exists()) {
            inner.copies.insert(left, copy);
            if inner.copies.len() > 2 * self.ring.ring_batches() * self.batch_pages {
                let recycled = self.ring.recycled_seq();
                inner.copies.retain(|_, c| c.seq > recycled);
            }
        }
        inner.pool.frames[idx].dw = inner.copies.remove(&id).unwrap_or_default();
    }

    /// A client evicts dirty frame `idx` (page `id` at `lsn`): home relying on a durable ring copy —
    /// synced now if only written, or spooled with the next evictions and synced — else the 2012 way.
    pub(super) fn write_evicted<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        inner: &mut Inner,
        idx: usize,
        (id, lsn): (PageId, Lsn),
    ) -> PageResult<()> {
        let p = &self.ring;
        let copy = inner.pool.frames[idx].dw;
        // Its copy is written but not yet synced: one sync of the ring (which makes every batch written so
        // far durable) instead of a double-write of its own and two syncs.
        if p.is_current(copy, lsn) {
            // Only a batch already written can be made durable by a sync; one still being written (a spool
            // in progress) leaves this page to the 2012 path below, counted there once.
            let written = copy.seq <= p.written_seq();
            if !p.is_safe(copy, lsn) && written && store.poison(self.sync_ring_now(store))? {
                add(&store.counters().evictions_waited_for_dw, 1);
            }
        } else if store.poison(self.spool_for_eviction(store, inner, idx))? {
            add(&store.counters().evictions_waited_for_dw, 1);
        }
        let frame = &inner.pool.frames[idx];
        let home_write = p.home_write();
        if p.is_safe(frame.dw, lsn) {
            // Its copy is durable in the ring and stays there until this write is synced.
            let flushed = store.write_ahead(lsn)?;
            let sealed = store.sealed_copy(id, frame.data.as_slice());
            home_write.wrote_home(id.file, frame.dw, lsn);
            store.write_home(id, sealed.as_slice(), WriteSync::None, flushed)
        } else {
            drop(home_write);
            dw_2012::write_one_through(store, &self.area, id, lsn, frame.data.as_slice())
        }
    }

    /// A batch (sealed, sorted, write-ahead done up to `flushed`): the pages whose ring copy is durable go
    /// home first, with no double-write of their own; the rest take the 2012 path.
    pub(super) fn write_batch<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        copies: &[&PageCopy],
        flushed: Lsn,
    ) -> PageResult<()> {
        let mut rest = Vec::new();
        {
            let home_write = self.ring.home_write();
            for &c in copies {
                if self.ring.is_safe(c.dw, c.lsn) {
                    home_write.wrote_home(c.id.file, c.dw, c.lsn);
                    store.write_home(c.id, c.bytes.as_slice(), WriteSync::None, flushed)?;
                } else {
                    rest.push(c);
                }
            }
        }
        if rest.is_empty() {
            return Ok(());
        }
        dw_2012::write_batch_through(store, &self.area, &rest, flushed)
    }

    /// The flusher: the spooler makes pages safe ahead of the clock, so the flusher keeps clean frames
    /// available by writing home pages whose ring copy is durable (no sync of their own); when there are
    /// none it writes a batch the 2012 way rather than let clients find no clean frame (measured: without
    /// it, a sixth of evictions found none and waited for two syncs under the pool lock).
    pub(super) fn flush_ahead<A: StoreAccess<File = F>>(&self, store: &A) -> PageResult<usize> {
        let (clean, frames) = {
            let inner = store.lock_inner();
            (inner.pool.clean_frames(), inner.pool.frames.len())
        };
        if clean >= store.clean_target(frames) {
            return Ok(0);
        }
        let safe = |f: &Frame| copy_is_safe(&self.ring, f);
        let written = store.flush_batch(safe)?;
        if written > 0 {
            return Ok(written);
        }
        // Copies written but not yet synced: sync them now (a group sync) rather than double-write the
        // same pages again the 2012 way. None: spool what there is (even less than a batch), then sync.
        let synced = self.sync_ring_now(store)?;
        let spooled = !synced && self.spool_step(store, Pick::Any)?.is_some() && self.sync_ring_now(store)?;
        if synced || spooled {
            let written = store.flush_batch(safe)?;
            if written > 0 {
                return Ok(written);
            }
        }
        store.flush_batch(|_| true)
    }

    /// A checkpoint chose `redo_lsn`, under the pool lock: copies taken before this point protect only
    /// the version they hold from now on.
    pub(super) fn checkpoint_began(&self, redo_lsn: Lsn) {
        self.ring.start_cycle(redo_lsn);
    }

    /// Write the checkpoint's pages home relying on ring copies — spooled ahead by the spooler thread
    /// while this one writes (or by this thread, one batch at a time), synced by whichever gets there
    /// first — with no double-write sync and no data-file sync per batch (the ring's recycle and the
    /// checkpoint's own fsync make them durable). A page changed after its copy was taken goes the 2012
    /// way. Each round writes at least one page or ends the loop.
    pub(super) fn checkpoint_flush<A: StoreAccess<File = F>>(&self, store: &A) -> PageResult<()> {
        self.ring.set_checkpointing(true);
        let flushed = self.checkpoint_flush_rounds(store);
        self.ring.set_checkpointing(false);
        flushed
    }

    fn checkpoint_flush_rounds<A: StoreAccess<File = F>>(&self, store: &A) -> PageResult<()> {
        let safe = |f: &Frame| copy_is_safe(&self.ring, f);
        loop {
            if store.flush_checkpoint_batch(safe)? > 0 {
                continue;
            }
            // Several batches, then one sync for all of them (at most half the ring, so the spooler thread
            // keeps room).
            let mut spooled = false;
            for _ in 0..self.ring.ring_batches() / 2 {
                if self.spool_step(store, Pick::Any)?.is_none() {
                    break;
                }
                spooled = true;
            }
            let synced = self.sync_ring_now(store)?;
            if (spooled || synced) && store.flush_checkpoint_batch(safe)? > 0 {
                continue;
            }
            if store.flush_checkpoint_batch(|_| true)? == 0 {
                return Ok(());
            }
        }
    }

    /// The checkpoint's data-file sync: a sync round. It first waits for home writes that checked their
    /// copy against the cycle before this one, so they are durable when the checkpoint is recorded.
    pub(super) fn checkpoint_sync<A: StoreAccess<File = F>>(&self, store: &A, redo_lsn: Lsn) -> PageResult<()> {
        store.poison(self.ring.checkpoint_round(redo_lsn, |n| store.sync_data_file(n)))
    }

    /// The spooler, and the sync thread it hands written batches to. The sync thread syncs once for every
    /// batch waiting (group sync) while the spooler goes on writing the next ones. `pipelined` finds the
    /// ring in `store` (a function, not a borrow: each thread holds its own `Arc` of the store).
    pub(in crate::pages) fn start_threads<A: StoreAccess<File = F> + Send + Sync + 'static>(
        store: &Arc<A>,
        stop: &Arc<AtomicBool>,
        pipelined: fn(&A) -> &DwPipelined<F>,
    ) -> Vec<JoinHandle<()>>
    where
        F: 'static,
    {
        let ring = pipelined(store).ring.ring_batches();
        let (written, to_sync) = std::sync::mpsc::sync_channel::<u64>(ring);
        let spooler = {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let d = pipelined(&store);
                d.run_spooler(&*store, &stop, &written);
            })
        };
        let syncer = {
            let store = store.clone();
            std::thread::spawn(move || {
                let d = pipelined(&store);
                while let Ok(mut seq) = to_sync.recv() {
                    while let Ok(later) = to_sync.try_recv() {
                        seq = later;
                    }
                    if d.sync_ring(&*store, seq).is_err() {
                        return;
                    }
                }
            })
        };
        vec![spooler, syncer]
    }

    fn run_spooler<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        stop: &AtomicBool,
        written: &std::sync::mpsc::SyncSender<u64>,
    ) {
        let p = &self.ring;
        while !stop.load(Ordering::Relaxed) {
            // Wait for the ring position's previous batch to be durable before spooling into it.
            let reused = p.next_seq().saturating_sub(p.ring_batches() as u64);
            if !p.wait_durable(reused, || stop.load(Ordering::Relaxed) || store.check_poison().is_err()) {
                return;
            }
            p.spooler_looking();
            match self.spool_step(store, Pick::FullBatch) {
                Ok(Some(seq)) => {
                    if written.send(seq).is_err() {
                        return;
                    }
                }
                // Until the clock hand has moved or a checkpoint starts (a look every millisecond walked the
                // pool under its lock for nothing); the timeout bounds how long `stop` goes unseen and paces
                // what no wake-up covers (a ring position waiting for its sync, pages dirtied without the hand
                // moving): pacing only, never safety.
                Ok(None) => {
                    p.spooler_wait(Duration::from_millis(20));
                }
                Err(_) => return,
            }
        }
    }
}
