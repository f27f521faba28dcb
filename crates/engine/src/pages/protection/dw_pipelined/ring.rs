//! The `pipelined` double-write design: what the 2012 thread (shared/seeds/003) said would fix the
//! prototype, and one step beyond it. Dirty pages the clock is coming to, and a running checkpoint's
//! pages, are spooled into a ring of batches in the double-write area ahead of their home write; a sync
//! thread of their own syncs the area while the spooler keeps writing (batches in flight); an eviction
//! prefers a dirty page whose copy is durable and then only writes it home, with no sync at all.
//!
//! The step beyond: **a copy protects its page for the rest of the checkpoint cycle**, as a full-page
//! image in the log does, not only the version it copied. Recovery restores a torn page from its newest
//! copy and then redoes the log after the checkpoint's redo LSN; a copy taken when the log ended at
//! `taken_at` (during redo: when redo had applied the log up to `taken_at`) holds every change to the
//! page up to `taken_at`, and every later change has a higher LSN.
//! So while `taken_at` ≥ the current redo LSN, the copy plus the log rebuild any later version of the
//! page, and the page can go home again and again without a new copy. A page is copied about once per
//! checkpoint cycle (as `fpw` logs one image), instead of at every eviction (the 2012 design), and home
//! writes stay in the page cache until the checkpoint's fsync (as `fpw`'s do).
//!
//! The invariants that make a home write safe:
//! 1. A page goes home without its own double-write only if it has a copy in a ring batch that is
//!    durable (its sync completed), not recycled, and either holds this very version (same page LSN) or
//!    was taken in the current checkpoint cycle (`taken_at` ≥ the redo LSN). Checked under the read side
//!    of `home_writes`, held until the write has been issued.
//! 2. A checkpoint raises the cycle's redo LSN under the pool lock, then, before its data-file fsync,
//!    takes the write side of `home_writes` once: every home write checked against the old cycle has
//!    been issued by then, so that fsync makes it durable.
//! 3. A ring batch is recycled only after every home write that relied on it is durable: recycling
//!    raises `recycled_seq` under the write side of `home_writes` (no such write is in progress or can
//!    start), then, if a write relied on the batch after the last completed data-file sync round began,
//!    runs a round (fsync of every data file written since). Home writes tag the batch they relied on
//!    with the current round number, so a ring holding a whole checkpoint cycle recycles batches the
//!    checkpoint's own fsync already covered, with no fsync of its own.
//!
//! Each is asserted where it must hold: 1 at every home write that relies on a copy
//! ([`HomeWrite::wrote_home`]), 2 at the checkpoint's sync round ([`Pipeline::checkpoint_round`]), 3
//! before a ring position is overwritten ([`Pipeline::position_to_overwrite`]).
//!
//! This file holds that state; its module ([`super`]) picks the pages and does the I/O.

use crate::pages::page::Lsn;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;

/// Batches in the ring by default (the library's; `syncbench pages --dw-ring` sizes it in bytes). A
/// small ring wraps within a checkpoint cycle: copies are recycled before their pages stop needing them
/// and each recycle syncs the data files.
pub const DEFAULT_RING_BATCHES: usize = 16;

/// The fewest batches a ring may have: [`recycle_batches`] is a quarter of it and must leave the batch
/// being written alone.
pub const MIN_RING_BATCHES: usize = 8;

/// The most batches a ring may have (with 1024-page batches of 16 KiB pages: 1 TiB; the limit is the
/// per-position bookkeeping, 16 bytes each).
pub const MAX_RING_BATCHES: usize = 1 << 16;

/// How far down the line of next evictions (the dirty pages the clock would take, in clock order from
/// the hand) the spooler copies pages, in batches: far enough for full batches, near enough that the
/// pages are not changed again before they go home (measured with a 16-batch ring: spooling every dirty
/// page recycled 9 in 10 copies unused; a window of most of the ring, 7 in 10; of 4 batches, 1 in 100).
pub const LINE_BATCHES: usize = 4;

/// The line of next evictions the spooler copies from, in pages.
pub fn spool_line_pages(batch_pages: usize) -> usize {
    LINE_BATCHES * batch_pages
}

/// Ring positions recycled together when the spooler must reuse one: a quarter of the ring, so the
/// data files are synced (when they must be) once per quarter ring written rather than once per batch.
pub fn recycle_batches(ring_batches: usize) -> u64 {
    (ring_batches / 4).max(1) as u64
}

/// The batches a spooler about to write batch `seq` recycles: `None` while the ring has room or the
/// position was recycled already; otherwise up to which batch (the position's previous batch and the
/// next [`recycle_batches`] − 1, never past the last batch written).
pub fn recycle_through(seq: u64, recycled: u64, ring_batches: usize) -> Option<u64> {
    let reused = seq.saturating_sub(ring_batches as u64);
    (reused > recycled).then(|| (reused + recycle_batches(ring_batches) - 1).min(seq - 1))
}

/// Whether the spooler writes a batch of `ahead` candidate pages for the next evictions now, the
/// nearest `nearest` places from the front of the line of next evictions: only a full batch — one ring write, one
/// sync and a share of a recycle per `batch_pages` pages (measured before: ~20 pages per batch, so
/// three times the syncs and recycle `fsync`s) — unless one is within half a batch of the front, when
/// waiting would leave it to the flusher's 2012 path or a client's eviction.
pub fn worth_spooling(ahead: usize, nearest: usize, batch_pages: usize) -> bool {
    ahead > 0 && (ahead >= batch_pages || nearest < batch_pages.div_ceil(2))
}

/// A page's copy in the ring (kept in its frame, and while the page is out of the pool, in the store's
/// table of copies): which batch, the page's LSN then, and where the log ended when it was taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingCopy {
    /// The ring batch's sequence number; 0: no copy.
    pub seq: u64,
    /// The page LSN of the copy.
    pub lsn: Lsn,
    /// The log's last LSN when the copy was taken (under the pool lock; during recovery's redo, the LSN
    /// of the last record redo had fully applied): every change to the page up to it is in the copy,
    /// every later one has a higher LSN.
    pub taken_at: Lsn,
}

impl RingCopy {
    /// Whether there is a copy at all.
    pub fn exists(&self) -> bool {
        self.seq != 0
    }
}

/// Deliberate bugs a crash test must catch (never set outside tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct PipelineBugs {
    /// A copy counts as safe before its sync completed.
    pub home_before_sync: bool,
    /// A ring batch is overwritten before the home writes that relied on it are synced.
    pub recycle_skips_home_sync: bool,
    /// A copy from an earlier checkpoint cycle protects a page changed since (the log before the
    /// checkpoint's redo LSN, which recovery would need, is gone).
    pub trust_earlier_cycle: bool,
}

/// The ring's bookkeeping (one per store in `pipelined` dw mode).
pub struct Pipeline {
    /// Batches in the ring.
    ring_batches: usize,
    /// Held by the spooler for a whole spool step: batches are numbered and written one at a time. Holds
    /// the spooler's batch buffer (made on first use).
    pub(crate) spool: Mutex<Option<syncbench_sys::AlignedBuf>>,
    /// Sequence number of the next batch (the first is 1; 0 means "no copy").
    next_seq: AtomicU64,
    /// Every batch up to this one is durable.
    durable_seq: AtomicU64,
    durable_lock: Mutex<()>,
    durable_changed: Condvar,
    /// Batches up to this one may be overwritten: their copies protect nothing any more.
    recycled_seq: AtomicU64,
    /// The current checkpoint cycle's redo LSN: a copy taken at or after it protects later versions of
    /// its page too (invariant 1).
    cycle_lsn: AtomicU64,
    /// Read side: a home write that relies on a ring copy, from the safety check until the write has been
    /// issued. Write side: raising `recycled_seq`, and draining those writes before a sync round.
    home_writes: RwLock<()>,
    /// Per data file: written home relying on the ring since the last sync round began.
    unsynced_home: Vec<AtomicBool>,
    /// The current sync round (starts at 1): home writes tag the ring position they relied on with it.
    round: AtomicU64,
    /// Every home write tagged with a round up to this one is durable.
    durable_round: AtomicU64,
    /// Per ring position: the latest round a home write relied on its batch in (0: none).
    relied_round: Vec<AtomicU64>,
    /// One sync round at a time (a round's file flags and its fsyncs belong together).
    rounds: Mutex<()>,
    /// A checkpoint is running: the spooler spools its pages too, ahead of its home writes.
    checkpointing: AtomicBool,
    /// The spooler found nothing worth spooling and sleeps until the clock hand has travelled this far
    /// ([`crate::pages::pool::Pool::hand_travel`]; `u64::MAX`: not sleeping), a checkpoint starts, or a timeout.
    wake_at_travel: AtomicU64,
    /// Set (under its lock) by whoever wakes the spooler, so a wake-up between the spooler's look and its
    /// wait is not lost.
    woken: Mutex<bool>,
    woken_changed: Condvar,
    bugs: PipelineBugs,
}

fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

impl Pipeline {
    /// State for a store with `data_files` data files and a ring of `ring_batches` batches.
    pub fn new(data_files: u32, ring_batches: usize, bugs: PipelineBugs) -> Pipeline {
        assert!(ring_batches >= MIN_RING_BATCHES, "a ring of {ring_batches} batches is too small");
        Pipeline {
            ring_batches,
            spool: Mutex::new(None),
            next_seq: AtomicU64::new(1),
            durable_seq: AtomicU64::new(0),
            durable_lock: Mutex::new(()),
            durable_changed: Condvar::new(),
            recycled_seq: AtomicU64::new(0),
            cycle_lsn: AtomicU64::new(0),
            home_writes: RwLock::new(()),
            unsynced_home: (0..data_files).map(|_| AtomicBool::new(false)).collect(),
            round: AtomicU64::new(1),
            durable_round: AtomicU64::new(0),
            relied_round: (0..ring_batches).map(|_| AtomicU64::new(0)).collect(),
            rounds: Mutex::new(()),
            checkpointing: AtomicBool::new(false),
            wake_at_travel: AtomicU64::new(u64::MAX),
            woken: Mutex::new(false),
            woken_changed: Condvar::new(),
            bugs,
        }
    }

    /// Batches in the ring.
    pub fn ring_batches(&self) -> usize {
        self.ring_batches
    }

    /// Ring position of batch `seq`.
    pub fn position(&self, seq: u64) -> usize {
        (seq % self.ring_batches as u64) as usize
    }

    /// The sequence number the next batch gets (taken by [`Pipeline::advance`]).
    pub fn next_seq(&self) -> u64 {
        self.next_seq.load(Ordering::Acquire)
    }

    /// Ring position of batch `seq`, the next batch, about to be written over the position's previous
    /// batch. Invariant 3: that batch is recycled, and every home write that relied on it is durable
    /// (its round tag is no later than the last completed sync round) — unless the deliberate bug skips
    /// the recycle's sync.
    pub fn position_to_overwrite(&self, seq: u64) -> usize {
        assert_eq!(seq, self.next_seq(), "ring batches are written one at a time, in order");
        let position = self.position(seq);
        let overwritten = seq.saturating_sub(self.ring_batches as u64);
        let recycled = self.recycled_seq();
        assert!(overwritten <= recycled, "invariant 3: batch {seq} overwrites batch {overwritten}, not recycled");
        let relied = self.relied_round[position].load(Ordering::Acquire);
        let durable = self.durable_round.load(Ordering::Acquire);
        assert!(
            relied <= durable || self.bugs.recycle_skips_home_sync,
            "invariant 3: batch {seq} overwrites batch {overwritten}, relied on by a home write of round \
             {relied}, while sync rounds are durable up to {durable}"
        );
        position
    }

    /// Batch `seq`, numbered [`Pipeline::next_seq`], has been written (its position's earlier batch was
    /// recycled first, so no home write relies on that position now).
    pub fn advance(&self, seq: u64) {
        assert_eq!(seq, self.next_seq(), "ring batches are written one at a time, in order");
        // The tag first: once the batch counts as written, a sync can make it durable and a home write
        // rely on it, and that write's tag must not be wiped.
        self.relied_round[self.position(seq)].store(0, Ordering::Release);
        self.next_seq.fetch_add(1, Ordering::AcqRel);
    }

    /// A new checkpoint cycle begins at `redo_lsn` (called under the pool lock, where copies are taken).
    pub fn start_cycle(&self, redo_lsn: Lsn) {
        self.cycle_lsn.fetch_max(redo_lsn, Ordering::AcqRel);
    }

    /// The current checkpoint cycle's redo LSN.
    pub fn cycle_lsn(&self) -> Lsn {
        self.cycle_lsn.load(Ordering::Acquire)
    }

    /// Whether `copy` rebuilds the page at `page_lsn` with the log that recovery would replay: it holds
    /// that very version, or it was taken in the current checkpoint cycle.
    fn covers(&self, copy: RingCopy, page_lsn: Lsn) -> bool {
        let this_version = copy.lsn == page_lsn;
        let this_cycle = copy.taken_at >= self.cycle_lsn() && copy.lsn <= page_lsn;
        let earlier_cycle = self.bugs.trust_earlier_cycle && copy.lsn <= page_lsn;
        this_version || this_cycle || earlier_cycle
    }

    /// Whether a page with LSN `page_lsn` may go home relying on `copy` without a double-write of its
    /// own (invariant 1). Call under [`Pipeline::home_write`].
    pub fn is_safe(&self, copy: RingCopy, page_lsn: Lsn) -> bool {
        let synced = self.bugs.home_before_sync || copy.seq <= self.durable_seq.load(Ordering::Acquire);
        self.is_current(copy, page_lsn) && synced
    }

    /// Whether `copy` is in the ring (written, maybe not yet synced) and covers the page at `page_lsn`:
    /// spooling the page again would be wasted.
    pub fn is_current(&self, copy: RingCopy, page_lsn: Lsn) -> bool {
        copy.exists() && copy.seq > self.recycled_seq.load(Ordering::Acquire) && self.covers(copy, page_lsn)
    }

    /// Hold while checking [`Pipeline::is_safe`] and issuing the home writes that rely on it.
    pub fn home_write(&self) -> HomeWrite<'_> {
        HomeWrite { ring: self, _no_recycle: read(&self.home_writes) }
    }

    /// Whether a checkpoint is running (its pages are spooled first).
    pub fn checkpointing(&self) -> bool {
        self.checkpointing.load(Ordering::Acquire)
    }

    /// A checkpoint starts (`true`, waking the spooler for its pages) or ends.
    pub fn set_checkpointing(&self, running: bool) {
        self.checkpointing.store(running, Ordering::Release);
        if running {
            self.wake_spooler();
        }
    }

    /// The spooler found nothing worth spooling with the clock hand at `travel` (called under the pool
    /// lock, so a client that moves the hand later sees it): wake it once the hand has passed
    /// `frames` more frames — only then can new pages join the front of the line of next evictions.
    pub fn sleep_until_travel(&self, travel: u64, frames: u64) {
        self.wake_at_travel.store(travel.saturating_add(frames), Ordering::Release);
    }

    /// Called by a client that moved the clock hand to `travel` (under the pool lock): wakes the
    /// spooler if it waits for that. One atomic load otherwise.
    pub fn hand_moved(&self, travel: u64) {
        if travel >= self.wake_at_travel.load(Ordering::Acquire) {
            self.wake_spooler();
        }
    }

    /// Wake the spooler (the lock is a leaf: taken after the pool lock, never before it).
    pub fn wake_spooler(&self) {
        self.wake_at_travel.store(u64::MAX, Ordering::Release);
        let mut woken = self.woken.lock().unwrap_or_else(|p| p.into_inner());
        *woken = true;
        self.woken_changed.notify_one();
    }

    /// The spooler, before it looks for pages: forget earlier wake-ups (what they announced is seen by
    /// the look that follows).
    pub fn spooler_looking(&self) {
        *self.woken.lock().unwrap_or_else(|p| p.into_inner()) = false;
    }

    /// The spooler, after a look found nothing: wait for a wake-up since [`Pipeline::spooler_looking`],
    /// at most `timeout`. Returns whether it was woken (false: the timeout passed first).
    pub fn spooler_wait(&self, timeout: Duration) -> bool {
        let woken = self.woken.lock().unwrap_or_else(|p| p.into_inner());
        let (mut woken, _) =
            self.woken_changed.wait_timeout_while(woken, timeout, |w| !*w).unwrap_or_else(|p| p.into_inner());
        let was_woken = *woken;
        *woken = false;
        was_woken
    }

    /// The newest batch whose write has completed (0: none yet): a sync now makes it durable.
    pub fn written_seq(&self) -> u64 {
        self.next_seq() - 1
    }

    /// Every batch up to `seq` is durable (called by the sync thread after its sync returned).
    pub fn mark_durable(&self, seq: u64) {
        let _g = self.durable_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.durable_seq.fetch_max(seq, Ordering::AcqRel);
        self.durable_changed.notify_all();
    }

    /// Batches up to this one have been recycled.
    pub fn recycled_seq(&self) -> u64 {
        self.recycled_seq.load(Ordering::Acquire)
    }

    /// Batches up to this one are durable.
    pub fn durable_seq(&self) -> u64 {
        self.durable_seq.load(Ordering::Acquire)
    }

    /// Wait (in short steps, so `give_up` can end it) until batch `seq` is durable. False if `give_up`
    /// said so first.
    pub fn wait_durable(&self, seq: u64, give_up: impl Fn() -> bool) -> bool {
        let mut g = self.durable_lock.lock().unwrap_or_else(|p| p.into_inner());
        while self.durable_seq.load(Ordering::Acquire) < seq {
            if give_up() {
                return false;
            }
            g = self.durable_changed.wait_timeout(g, Duration::from_millis(5)).unwrap_or_else(|p| p.into_inner()).0;
        }
        true
    }

    /// Stop relying on batches up to `seq` and make every home write that relied on them durable: if one
    /// relied on them after the last completed sync round began, run a round (`sync_file` for each data
    /// file written home relying on the ring since the round before).
    pub fn recycle<E>(&self, seq: u64, sync_file: impl FnMut(u32) -> Result<(), E>) -> Result<(), E> {
        let _one_round = self.rounds.lock().unwrap_or_else(|p| p.into_inner());
        let round = {
            let _no_home_writes = self.home_writes.write().unwrap_or_else(|p| p.into_inner());
            self.raise_recycled(seq).then(|| self.begin_round())
        };
        round.map_or(Ok(()), |r| self.finish_round(r, false, sync_file))
    }

    /// [`Pipeline::recycle`] for a caller that holds the pool lock (a client spooling for its
    /// eviction): it does not wait for home writes in progress (a flush or a checkpoint writing pages
    /// home relying on the ring) or for a sync round in progress — false, nothing done, if there is one.
    pub fn try_recycle<E>(&self, seq: u64, sync_file: impl FnMut(u32) -> Result<(), E>) -> Result<bool, E> {
        if self.recycled_seq.load(Ordering::Acquire) >= seq {
            return Ok(true);
        }
        let Some(_one_round) = try_lock(&self.rounds) else { return Ok(false) };
        let round = {
            let _no_home_writes = match self.home_writes.try_write() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return Ok(false),
            };
            self.raise_recycled(seq).then(|| self.begin_round())
        };
        round.map_or(Ok(()), |r| self.finish_round(r, false, sync_file)).map(|()| true)
    }

    /// Under the write side of `home_writes`: batches up to `seq` protect nothing from now on. Returns
    /// whether a home write relied on one of them after the last completed sync round began (its
    /// write may not be durable yet).
    fn raise_recycled(&self, seq: u64) -> bool {
        let before = self.recycled_seq.fetch_max(seq, Ordering::AcqRel);
        let durable = self.durable_round.load(Ordering::Acquire);
        let relied_since =
            (before + 1..=seq).any(|s| self.relied_round[self.position(s)].load(Ordering::Acquire) > durable);
        relied_since && !self.bugs.recycle_skips_home_sync
    }

    /// The checkpoint at `redo_lsn`'s sync round, syncing every data file. Invariant 2: the cycle was
    /// raised to `redo_lsn` before this round drains the home writes, so every write checked against
    /// the old cycle is issued before this round's fsync, which makes it durable.
    pub fn checkpoint_round<E>(&self, redo_lsn: Lsn, sync_file: impl FnMut(u32) -> Result<(), E>) -> Result<(), E> {
        let cycle = self.cycle_lsn();
        assert!(cycle >= redo_lsn, "invariant 2: checkpoint at redo LSN {redo_lsn} syncs before raising cycle {cycle}");
        self.sync_round(true, sync_file)
    }

    /// A sync round: wait for the home writes relying on the ring that are in progress, start a new
    /// round number, then sync every data file written home relying on the ring since the last round
    /// began (`all`: every data file, for a checkpoint). When it returns Ok, every home write tagged
    /// with an earlier round is durable.
    pub fn sync_round<E>(&self, all: bool, sync_file: impl FnMut(u32) -> Result<(), E>) -> Result<(), E> {
        let _one_round = self.rounds.lock().unwrap_or_else(|p| p.into_inner());
        let round = {
            let _drain = self.home_writes.write().unwrap_or_else(|p| p.into_inner());
            self.begin_round()
        };
        self.finish_round(round, all, sync_file)
    }

    /// Under the write side of `home_writes` (every home write tagged with the current round has been
    /// issued and has flagged its file; none is in progress): end the current round and take the files
    /// its writes flagged. Taken here, not after the lock is released, so a write of the next round
    /// cannot have its flag cleared by a round whose fsync may come before that write.
    fn begin_round(&self) -> Round {
        let ended = self.round.fetch_add(1, Ordering::AcqRel);
        let files = self.unsynced_home.iter().map(|f| f.swap(false, Ordering::AcqRel)).collect();
        Round { ended, files }
    }

    /// Sync the round's files (every data file with `all`); then every write tagged with it is durable.
    fn finish_round<E>(
        &self,
        round: Round,
        all: bool,
        mut sync_file: impl FnMut(u32) -> Result<(), E>,
    ) -> Result<(), E> {
        for (file, &flagged) in round.files.iter().enumerate() {
            if (flagged || all)
                && let Err(e) = sync_file(file as u32)
            {
                // Still unsynced, this file and the ones after it: a later round must try again (the
                // store is poisoned anyway).
                for (unsynced, &flagged) in self.unsynced_home.iter().zip(&round.files).skip(file) {
                    if flagged {
                        unsynced.store(true, Ordering::Release);
                    }
                }
                return Err(e);
            }
        }
        self.durable_round.fetch_max(round.ended, Ordering::AcqRel);
        Ok(())
    }
}

/// The read side of `home_writes`, held from the check that a page may go home relying on its ring copy
/// until that home write has been issued: no batch is recycled meanwhile.
pub struct HomeWrite<'a> {
    ring: &'a Pipeline,
    _no_recycle: RwLockReadGuard<'a, ()>,
}

impl HomeWrite<'_> {
    /// Note a home write to data file `file` of a page at `page_lsn` relying on `copy`, checked safe
    /// under this guard. Invariant 1, the parts that cannot change while it is held: the copy's batch
    /// is not recycled, its sync completed (durability only grows), and it is not newer than the page.
    /// (Whether it covers the page may change: a checkpoint can raise the cycle meanwhile, which
    /// invariant 2 allows for.)
    pub fn wrote_home(&self, file: u32, copy: RingCopy, page_lsn: Lsn) {
        let p = self.ring;
        assert!(copy.seq > p.recycled_seq(), "invariant 1: a home write relies on recycled batch {}", copy.seq);
        let durable = p.durable_seq();
        assert!(
            copy.seq <= durable || p.bugs.home_before_sync,
            "invariant 1: a home write relies on batch {} before its sync (durable: {durable})",
            copy.seq
        );
        assert!(copy.lsn <= page_lsn, "invariant 1: copy at LSN {} is newer than its page at {page_lsn}", copy.lsn);
        p.unsynced_home[file as usize].store(true, Ordering::Release);
        let round = p.round.load(Ordering::Acquire);
        p.relied_round[p.position(copy.seq)].fetch_max(round, Ordering::AcqRel);
    }
}

/// A sync round begun: its number and, per data file, whether a home write relying on the ring flagged it.
struct Round {
    ended: u64,
    files: Vec<bool>,
}

fn try_lock<T>(m: &Mutex<T>) -> Option<std::sync::MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(seq: u64, lsn: Lsn, taken_at: Lsn) -> RingCopy {
        RingCopy { seq, lsn, taken_at }
    }

    fn ok(_: u32) -> Result<(), ()> {
        Ok(())
    }

    #[test]
    fn a_copy_is_safe_only_while_durable_current_and_not_recycled() {
        let p = Pipeline::new(2, 16, PipelineBugs::default());
        assert!(!p.is_safe(RingCopy::default(), 0), "no copy");
        assert!(!p.is_safe(copy(1, 5, 5), 5), "written but not synced");
        assert!(p.is_current(copy(1, 5, 5), 5));
        p.mark_durable(1);
        assert!(p.is_safe(copy(1, 5, 5), 5));
        p.home_write().wrote_home(1, copy(1, 5, 5), 5);
        let mut synced = Vec::new();
        p.recycle(1, |f| {
            synced.push(f);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(synced, vec![1], "only the file written home is synced");
        assert!(!p.is_safe(copy(1, 5, 5), 5) && !p.is_current(copy(1, 5, 5), 5), "recycled");
        p.recycle(1, |_| Err(())).unwrap();
    }

    #[test]
    fn a_copy_covers_later_versions_only_within_its_checkpoint_cycle() {
        let p = Pipeline::new(1, 16, PipelineBugs::default());
        p.mark_durable(1);
        p.start_cycle(10);
        // Taken when the log ended at 12 (page LSN 7): changes after it have LSNs above 12 > 10.
        assert!(p.is_safe(copy(1, 7, 12), 20), "changed since, same cycle");
        assert!(!p.is_safe(copy(1, 7, 12), 6), "a copy newer than the page is not this page");
        // Taken before the cycle began: only that very version.
        assert!(!p.is_safe(copy(1, 7, 9), 20), "changed since, earlier cycle");
        assert!(p.is_safe(copy(1, 7, 9), 7), "unchanged since, earlier cycle");
        p.start_cycle(15);
        assert!(!p.is_safe(copy(1, 7, 12), 20) && !p.is_current(copy(1, 7, 12), 20), "the next cycle");
        p.start_cycle(3);
        assert_eq!(p.cycle_lsn(), 15, "a cycle never goes back");
        let buggy = Pipeline::new(1, 16, PipelineBugs { trust_earlier_cycle: true, ..Default::default() });
        buggy.mark_durable(1);
        buggy.start_cycle(15);
        assert!(buggy.is_safe(copy(1, 7, 12), 20), "the deliberate bug trusts an earlier cycle's copy");
    }

    #[test]
    fn a_recycle_syncs_only_for_home_writes_no_sync_round_covered() {
        let p = Pipeline::new(2, 16, PipelineBugs::default());
        p.mark_durable(3);
        p.home_write().wrote_home(0, copy(1, 5, 5), 5);
        p.home_write().wrote_home(1, copy(2, 5, 5), 5);
        // The checkpoint's round syncs every file and covers both writes.
        let mut synced = Vec::new();
        p.sync_round(true, |f| {
            synced.push(f);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(synced, vec![0, 1]);
        p.recycle(2, |_| Err(())).expect("batches 1 and 2 need no sync of their own");
        // A write relying on batch 3 after that round: recycling 3 syncs its file.
        p.home_write().wrote_home(1, copy(3, 5, 5), 5);
        let mut synced = Vec::new();
        p.recycle(3, |f| {
            synced.push(f);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(synced, vec![1]);
        // The deliberate bug skips that sync.
        let buggy = Pipeline::new(1, 16, PipelineBugs { recycle_skips_home_sync: true, ..Default::default() });
        buggy.mark_durable(1);
        buggy.home_write().wrote_home(0, copy(1, 5, 5), 5);
        buggy.recycle(1, |_| Err(())).expect("the bug does not sync");
    }

    #[test]
    fn a_write_of_the_next_round_keeps_its_file_flagged() {
        let p = Pipeline::new(1, 16, PipelineBugs::default());
        p.mark_durable(2);
        p.home_write().wrote_home(0, copy(1, 5, 5), 5);
        let round = p.begin_round();
        // A home write that checked its copy after the round's drain, before the round's fsync.
        p.home_write().wrote_home(0, copy(2, 5, 5), 5);
        p.finish_round(round, false, ok).unwrap();
        let mut synced = Vec::new();
        p.recycle(2, |f| {
            synced.push(f);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(synced, vec![0], "the write of the next round is synced before its batch is recycled");
    }

    #[test]
    fn a_recycle_under_the_pool_lock_does_not_wait_for_home_writes_in_progress() {
        let p = Pipeline::new(1, 16, PipelineBugs::default());
        p.mark_durable(2);
        let home_write = p.home_write();
        assert_eq!(p.try_recycle(1, ok), Ok(false));
        assert!(p.is_safe(copy(1, 5, 5), 5), "not recycled");
        drop(home_write);
        let round = p.rounds.lock().unwrap();
        assert_eq!(p.try_recycle(1, ok), Ok(false), "a sync round in progress");
        drop(round);
        assert_eq!(p.try_recycle(1, ok), Ok(true));
        assert!(!p.is_safe(copy(1, 5, 5), 5), "recycled");
        // Already recycled: no lock needed, even with a home write in progress.
        let _home_write = p.home_write();
        assert_eq!(p.try_recycle(1, ok), Ok(true));
    }

    #[test]
    fn a_quarter_of_the_ring_is_recycled_at_once_and_only_when_needed() {
        for ring in [MIN_RING_BATCHES, 16, 512] {
            let (r, quarter) = (ring as u64, recycle_batches(ring));
            assert_eq!(quarter, r / 4);
            assert_eq!(recycle_through(1, 0, ring), None, "an empty ring");
            assert_eq!(recycle_through(r, 0, ring), None, "the last free position");
            assert_eq!(recycle_through(r + 1, 0, ring), Some(quarter), "batch 1 and the next ones");
            assert_eq!(recycle_through(r + 2, quarter, ring), None, "recycled with batch 1");
            assert_eq!(recycle_through(r + 1 + quarter, quarter, ring), Some(2 * quarter));
            assert!(quarter < r, "never the batch about to be written");
        }
    }

    #[test]
    fn only_full_batches_are_spooled_unless_the_hand_is_near() {
        assert!(!worth_spooling(0, 0, 64), "nothing to spool");
        assert!(!worth_spooling(20, 40, 64), "a partial batch far from the hand waits");
        assert!(worth_spooling(64, 40, 64), "a full batch");
        assert!(worth_spooling(1, 31, 64), "the hand is about to take a page without a copy");
        assert!(!worth_spooling(1, 32, 64));
        assert!(worth_spooling(1, 0, 1), "batches of one page");
    }

    #[test]
    fn the_spooler_sleeps_until_the_hand_has_moved_or_a_checkpoint_starts() {
        let p = std::sync::Arc::new(Pipeline::new(1, 16, PipelineBugs::default()));
        p.spooler_looking();
        p.sleep_until_travel(100, 32);
        p.hand_moved(131);
        assert!(!*p.woken.lock().unwrap(), "31 frames on: not yet");
        p.hand_moved(132);
        assert!(*p.woken.lock().unwrap());
        assert!(p.spooler_wait(Duration::from_secs(30)), "a wake-up before the wait is not lost");
        // Once woken it no longer waits for the hand: no wake-up per eviction.
        p.hand_moved(1000);
        assert!(!*p.woken.lock().unwrap());
        p.spooler_looking();
        let q = p.clone();
        let t = std::thread::spawn(move || q.set_checkpointing(true));
        // Without the wake-up in set_checkpointing this wait would time out and return false.
        assert!(p.spooler_wait(Duration::from_secs(30)), "a checkpoint start wakes the spooler");
        t.join().unwrap();
        assert!(p.checkpointing());
    }

    #[test]
    fn the_deliberate_bug_trusts_an_unsynced_copy() {
        let p = Pipeline::new(1, 16, PipelineBugs { home_before_sync: true, ..Default::default() });
        assert!(p.is_safe(copy(1, 5, 5), 5));
    }

    #[test]
    fn a_failed_sync_round_leaves_the_file_for_the_next_round() {
        let p = Pipeline::new(1, 16, PipelineBugs::default());
        p.mark_durable(1);
        p.home_write().wrote_home(0, copy(1, 5, 5), 5);
        assert!(p.recycle(1, |_| Err(())).is_err());
        let mut called = false;
        p.sync_round(false, |_| {
            called = true;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert!(called);
    }

    /// A ring of the smallest size with its first `batches` batches written (ready to overwrite).
    fn written(batches: u64, bugs: PipelineBugs) -> Pipeline {
        let p = Pipeline::new(1, MIN_RING_BATCHES, bugs);
        for seq in 1..=batches {
            p.position_to_overwrite(seq);
            p.advance(seq);
        }
        p
    }

    #[test]
    #[should_panic(expected = "invariant 1: a home write relies on batch 1 before its sync")]
    fn invariant_1_a_home_write_relying_on_an_unsynced_copy_is_a_bug() {
        let p = written(1, PipelineBugs::default());
        p.home_write().wrote_home(0, copy(1, 5, 5), 5);
    }

    #[test]
    #[should_panic(expected = "invariant 1: a home write relies on recycled batch 1")]
    fn invariant_1_a_home_write_relying_on_a_recycled_copy_is_a_bug() {
        let p = written(2, PipelineBugs::default());
        p.mark_durable(2);
        p.recycle(1, ok).unwrap();
        p.home_write().wrote_home(0, copy(1, 5, 5), 5);
    }

    #[test]
    fn invariant_1_holds_for_a_durable_current_copy_and_under_the_deliberate_bug() {
        let p = written(1, PipelineBugs::default());
        p.mark_durable(1);
        p.home_write().wrote_home(0, copy(1, 5, 5), 9);
        let buggy = written(1, PipelineBugs { home_before_sync: true, ..Default::default() });
        buggy.home_write().wrote_home(0, copy(1, 5, 5), 5);
    }

    #[test]
    #[should_panic(expected = "invariant 2: checkpoint at redo LSN 20 syncs before raising cycle 10")]
    fn invariant_2_a_checkpoint_round_before_its_cycle_is_raised_is_a_bug() {
        let p = Pipeline::new(1, 16, PipelineBugs::default());
        p.start_cycle(10);
        let _ = p.checkpoint_round(20, ok);
    }

    #[test]
    fn invariant_2_holds_once_the_cycle_is_raised() {
        let p = Pipeline::new(1, 16, PipelineBugs::default());
        p.start_cycle(20);
        p.checkpoint_round(20, ok).unwrap();
    }

    #[test]
    #[should_panic(expected = "invariant 3: batch 9 overwrites batch 1, not recycled")]
    fn invariant_3_overwriting_a_batch_not_recycled_is_a_bug() {
        let p = written(8, PipelineBugs::default());
        p.position_to_overwrite(9);
    }

    #[test]
    #[should_panic(expected = "invariant 3: batch 9 overwrites batch 1, relied on by a home write of round 1")]
    fn invariant_3_overwriting_a_batch_whose_home_writes_are_not_durable_is_a_bug() {
        let p = written(8, PipelineBugs::default());
        p.mark_durable(8);
        p.home_write().wrote_home(0, copy(1, 5, 5), 5);
        // A recycle that skipped its sync round.
        p.recycled_seq.store(2, Ordering::Release);
        p.position_to_overwrite(9);
    }

    #[test]
    fn invariant_3_holds_after_a_recycle_and_under_the_deliberate_bug() {
        let p = written(8, PipelineBugs::default());
        p.mark_durable(8);
        p.home_write().wrote_home(0, copy(1, 5, 5), 5);
        p.recycle(2, ok).unwrap();
        assert_eq!(p.position_to_overwrite(9), 1);
        let buggy = written(8, PipelineBugs { recycle_skips_home_sync: true, ..Default::default() });
        buggy.mark_durable(8);
        buggy.home_write().wrote_home(0, copy(1, 5, 5), 5);
        buggy.recycle(2, ok).unwrap();
        assert_eq!(buggy.position_to_overwrite(9), 1);
    }

    #[test]
    fn waiting_for_a_batch_ends_when_it_is_durable_or_on_give_up() {
        let p = std::sync::Arc::new(Pipeline::new(1, 16, PipelineBugs::default()));
        assert!(!p.wait_durable(1, || true));
        let q = p.clone();
        let t = std::thread::spawn(move || q.mark_durable(3));
        assert!(p.wait_durable(2, || false));
        t.join().unwrap();
        assert_eq!(p.durable_seq(), 3);
    }
}
