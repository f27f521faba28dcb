//! Spooling: choosing the pages to copy into the next ring batch, writing the batch (after recycling its
//! position), and syncing the ring.

use super::DwPipelined;
use super::ring::{self, Pipeline, RingCopy};
use crate::pages::access::{DW_FLUSH_MARK, Inner, StoreAccess, lock, seal_checked};
use crate::pages::error::{PageError, PageResult};
use crate::pages::page::{self, Lsn, PageId};
use crate::pages::pool::Frame;
use crate::pages::stats::add;
use crate::storage::StorageFile;
use syncbench_sys::AlignedBuf;

/// Which pages a spool step takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::pages) enum Pick {
    /// The spooler thread: next evictions only as a full batch or when the hand is near; a checkpoint's
    /// pages only if not in use.
    FullBatch,
    /// Whatever there is to spool (the flusher has nothing safe to write home; the checkpoint).
    Any,
    /// A client's victim first, then whatever there is.
    Victim(usize),
}

/// Whether `frame` can be spooled and has no current copy in the ring.
fn needs_copy(p: &Pipeline, frame: &Frame) -> bool {
    let spoolable = frame.is_dirty() && !frame.pinned && !frame.io_busy && !frame.torn;
    spoolable && !p.is_current(frame.dw, page::lsn(frame.data.as_slice()))
}

/// The frames a spool step may take, in the order it takes them.
struct Candidates {
    /// A client's victim.
    victim: Vec<usize>,
    /// The line of next evictions, in clock order from the hand.
    line: Vec<usize>,
    /// The running checkpoint's pages.
    checkpoint: Vec<usize>,
}

/// The frames chosen for a batch, and what decides whether it is written now.
struct Picked {
    frames: Vec<usize>,
    /// A victim's or a checkpoint's page is among them: spooled whatever the batch's size.
    forced: bool,
    /// The nearest pick's place in the line of next evictions.
    nearest: usize,
}

impl<F: StorageFile> DwPipelined<F> {
    /// Spool one batch of the pages `how` says into the next ring position, without syncing. `None` when
    /// there is nothing to spool or the ring position's previous batch is not yet durable.
    pub(in crate::pages) fn spool_step<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        how: Pick,
    ) -> PageResult<Option<u64>> {
        store.check_poison()?;
        let p = &self.ring;
        let mut spool = lock(&p.spool);
        let seq = p.next_seq();
        let reused = seq.saturating_sub(p.ring_batches() as u64);
        if p.durable_seq() < reused {
            return Ok(None);
        }
        let images = self.spool_buffer(&mut spool);
        let picks = self.pick_for_spool(store, &mut store.lock_inner(), seq, how, images);
        if picks.is_empty() {
            return Ok(None);
        }
        self.write_spooled(store, seq, &picks, images)?;
        Ok(Some(seq))
    }

    /// The spooler's batch buffer (one, reused: page copies go straight into it under the pool lock and
    /// are sealed there, with no allocation or copy per page).
    fn spool_buffer<'a>(&self, spool: &'a mut Option<AlignedBuf>) -> &'a mut AlignedBuf {
        let page_size = self.area.page_size();
        spool.get_or_insert_with(|| AlignedBuf::new(self.batch_pages * page_size, page_size))
    }

    /// Write the picked pages' copies (the first `picks.len()` pages of `images`, in order) as ring batch
    /// `seq` (the spool lock held): recycle the position's previous batch, then seal and write (no sync:
    /// [`DwPipelined::sync_ring`] does that).
    fn write_spooled<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        seq: u64,
        picks: &[(PageId, Lsn)],
        images: &mut AlignedBuf,
    ) -> PageResult<()> {
        let p = &self.ring;
        // Under `p.spool`: a spooler that waited for the lock while another's recycle fsync failed must not
        // overwrite the position that fsync was to free (its `recycled_seq` already moved on).
        store.check_poison()?;
        // The copies in this position (and the next few) protect nothing from now on: the home writes
        // that relied on them are made durable before they are overwritten.
        if let Some(through) = ring::recycle_through(seq, p.recycled_seq(), p.ring_batches()) {
            let recycled = p.recycle(through, |file| store.sync_data_file(file));
            store.poison(recycled)?;
        }
        let max_lsn = picks.iter().map(|(_, lsn)| *lsn).max().unwrap_or(0);
        let written = store.write_ahead(max_lsn).and_then(|flushed| {
            let page_size = store.config().page_size;
            let images = &mut images.as_mut_slice()[..picks.len() * page_size];
            for (slot, (id, lsn)) in images.chunks_exact_mut(page_size).zip(picks) {
                assert!(*lsn <= flushed, "write-ahead rule violated: ring copy of {id:?} at LSN {lsn} > {flushed}");
                seal_checked(*id, slot);
            }
            store.mark(DW_FLUSH_MARK);
            self.area.write_ring(p.position_to_overwrite(seq), images)?;
            add(&store.counters().dw_bytes, images.len() as u64);
            Ok(())
        });
        store.poison(written)?;
        p.advance(seq);
        Ok(())
    }

    /// A client must evict dirty frame `idx` that has no copy in the ring. Rather than a double-write of
    /// its own and two syncs, it spools a batch — this page and the next evictions ahead of the hand — and
    /// syncs the ring once, so the following evictions find their copies durable. False (nothing done)
    /// when the spooler is busy or the ring position is not yet free: the caller takes the 2012 path. The
    /// spool lock is only tried: its order is before `inner`, which the caller holds.
    pub(super) fn spool_for_eviction<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        inner: &mut Inner,
        idx: usize,
    ) -> PageResult<bool> {
        let p = &self.ring;
        let Ok(mut spool) = p.spool.try_lock() else { return Ok(false) };
        let seq = p.next_seq();
        let reused = seq.saturating_sub(p.ring_batches() as u64);
        if p.durable_seq() < reused {
            return Ok(false);
        }
        // Recycle here, without waiting for a flush's or checkpoint's home writes in progress: this client
        // holds the pool lock, which everyone waits for (and crashtest, which runs a client's transaction
        // inside the flusher's page write on the same thread, deadlocked on it). Then `write_spooled`'s
        // recycle has nothing left to do.
        if let Some(through) = ring::recycle_through(seq, p.recycled_seq(), p.ring_batches())
            && !store.poison(p.try_recycle(through, |file| store.sync_data_file(file)))?
        {
            return Ok(false);
        }
        let images = self.spool_buffer(&mut spool);
        let picks = self.pick_for_spool(store, inner, seq, Pick::Victim(idx), images);
        self.write_spooled(store, seq, &picks, images)?;
        self.sync_ring(store, seq)?;
        Ok(true)
    }

    /// Copy up to one batch of frames to spool as ring batch `seq` and note the copy in each frame. In
    /// order: a client's victim; the next evictions — the first [`ring::spool_line_pages`] dirty pages
    /// the clock would take (unreferenced, idle), in clock order from the hand, which is also the order
    /// the flusher writes them home in; a running checkpoint's pages (so its home writes find their
    /// copies durable); and, when clean frames run low, as many again further down that line. Farther
    /// on, a copy would be recycled or the page changed before it goes home. `how`: with
    /// [`Pick::FullBatch`] (the spooler thread) next evictions alone are spooled only as a full batch or
    /// when one is near the front of the line ([`ring::worth_spooling`]); nothing is picked otherwise.
    fn pick_for_spool<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        inner: &mut Inner,
        seq: u64,
        how: Pick,
        images: &mut AlignedBuf,
    ) -> Vec<(PageId, Lsn)> {
        let batch = self.batch_pages;
        let candidates = self.spool_candidates(store, inner, how);
        let picked = self.choose(inner, &candidates);
        let wait = how == Pick::FullBatch
            && !picked.forced
            && !ring::worth_spooling(picked.frames.len(), picked.nearest, batch);
        if wait || picked.frames.is_empty() {
            if how == Pick::FullBatch {
                // Nothing changes at the front of the line until the hand moves (a page is referenced when
                // it is dirtied, and joins the line only when the hand clears that): sleep till then.
                self.ring.sleep_until_travel(inner.pool.hand_travel(), batch.div_ceil(2) as u64);
            }
            return Vec::new();
        }
        self.take_copies(store, inner, seq, picked.frames, images)
    }

    /// The frames [`DwPipelined::pick_for_spool`] looks at.
    fn spool_candidates<A: StoreAccess<File = F>>(&self, store: &A, inner: &Inner, how: Pick) -> Candidates {
        let window = ring::spool_line_pages(self.batch_pages);
        let clean_target = store.clean_target(inner.pool.frames.len());
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
        let checkpoint: Vec<usize> = if self.ring.checkpointing() {
            let frames = &inner.pool.frames;
            let wanted = |f: &Frame| f.checkpoint_needed && (how != Pick::FullBatch || !f.referenced);
            inner.checkpoint_frames.iter().copied().filter(|&idx| wanted(&frames[idx])).collect()
        } else {
            Vec::new()
        };
        Candidates { victim, line, checkpoint }
    }

    /// The picks, and the nearest pick's place in the line; chosen before any frame is marked, so a look
    /// that decides to wait changes nothing.
    fn choose(&self, inner: &Inner, c: &Candidates) -> Picked {
        let batch = self.batch_pages;
        let window = ring::spool_line_pages(batch);
        let mut picked = Picked { frames: Vec::with_capacity(batch), forced: false, nearest: usize::MAX };
        // (frames, their first place in the line of next evictions; None: a victim's or a checkpoint's)
        let (near, far) = c.line.split_at(c.line.len().min(window));
        let passes = [(&c.victim[..], None), (near, Some(0)), (&c.checkpoint[..], None), (far, Some(window))];
        for (frames, line_rank) in passes {
            for (rank, &idx) in frames.iter().enumerate() {
                if picked.frames.len() == batch {
                    break;
                }
                if picked.frames.contains(&idx) || !needs_copy(&self.ring, &inner.pool.frames[idx]) {
                    continue;
                }
                picked.frames.push(idx);
                match line_rank {
                    Some(first) => picked.nearest = picked.nearest.min(first + rank),
                    None => picked.forced = true,
                }
            }
        }
        picked
    }

    /// Copy the picked frames into `images` (in order) and note each copy in its frame as batch `seq`.
    fn take_copies<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        inner: &mut Inner,
        seq: u64,
        picked: Vec<usize>,
        images: &mut AlignedBuf,
    ) -> Vec<(PageId, Lsn)> {
        let mut copies = Vec::with_capacity(picked.len());
        // Every change to these pages up to here is in the copies (the pool lock is held): see
        // `RingCopy::taken_at`. During redo the log already ends where redo will end: the pages hold only
        // what has been replayed so far.
        let taken_at = inner.redo_applied.unwrap_or_else(|| store.page_log().last_lsn());
        let cycle = self.ring.cycle_lsn();
        let page_size = store.config().page_size;
        assert!(picked.len() * page_size <= images.len(), "a spool batch fits its buffer");
        for (idx, slot) in picked.into_iter().zip(images.as_mut_slice().chunks_exact_mut(page_size)) {
            let frame = &mut inner.pool.frames[idx];
            // A copy taken earlier in this cycle would have covered the page: it was recycled first (or,
            // taken before the page's last change, it was of an earlier cycle's version): wasted work.
            if frame.dw.exists() && frame.dw.taken_at >= cycle {
                add(&store.counters().dw_pages_respooled, 1);
            }
            frame.dw = RingCopy { seq, lsn: page::lsn(frame.data.as_slice()), taken_at };
            slot.copy_from_slice(frame.data.as_slice());
            copies.push((frame.id.expect("dirty frame has a page"), frame.dw.lsn));
        }
        add(&store.counters().dw_pages_spooled, copies.len() as u64);
        copies
    }

    /// Sync the ring now if a batch is written and not yet durable (a client or the checkpoint needs a
    /// copy before the sync thread gets to it). True if it synced.
    pub(super) fn sync_ring_now<A: StoreAccess<File = F>>(&self, store: &A) -> PageResult<bool> {
        let written = self.ring.written_seq();
        if written <= self.ring.durable_seq() {
            return Ok(false);
        }
        self.sync_ring(store, written)?;
        Ok(true)
    }

    /// Sync the double-write area, making every ring batch up to `seq` durable (all batches written before
    /// this call: the spooler hands them over in order).
    pub(in crate::pages) fn sync_ring<A: StoreAccess<File = F>>(&self, store: &A, seq: u64) -> PageResult<()> {
        // A ring sync after a failed one could succeed on copies the failed one lost: refuse once poisoned,
        // and poison before another ring sync can start.
        let _one_at_a_time = lock(&self.ring_sync);
        store.check_poison()?;
        if self.ring.durable_seq() >= seq {
            return Ok(()); // the sync this one waited behind covered it
        }
        if !store.config().faults.dw_skip_fsync {
            store.poison(self.area.sync().map_err(PageError::from))?;
            add(&store.counters().data_syncs, 1);
            add(&store.counters().dw_syncs, 1);
        }
        self.ring.mark_durable(seq);
        Ok(())
    }
}
