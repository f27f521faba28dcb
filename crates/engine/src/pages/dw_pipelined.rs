//! The `pipelined` double-write design: what the 2012 thread (shared/seeds/003) said would fix the
//! prototype. Dirty pages the clock is coming to, and a running checkpoint's pages, are spooled into a
//! ring of batches in the double-write area ahead of their home write; a sync thread of their own
//! syncs the area while the spooler keeps writing (up to [`RING_BATCHES`] batches in flight); an
//! eviction prefers a dirty page whose copy is durable and then only writes it home, with no sync at
//! all.
//!
//! The invariant that makes a home write safe: a page goes home without its own double-write only if
//! its copy with the same page LSN is in a ring batch that is durable (its sync completed) and has not
//! been recycled; and a ring batch is recycled only after every home write that relied on it is durable.
//! Recycling a batch therefore (1) raises `recycled_seq` under the write side of `home_writes`, so no
//! home write that relies on it is in progress or can start, then (2) fsyncs every data file written
//! since the last such fsync, then the spooler overwrites it. This file holds that state; the store
//! (store.rs) picks the pages and does the I/O.

use super::page::Lsn;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;

/// Batches in the ring: up to this many can be written and waiting for their sync at once.
pub const RING_BATCHES: usize = 16;

/// How far down the line of next evictions (the dirty pages the clock would take, in clock order from
/// the hand) the spooler copies pages: a quarter of the ring, so a copy is not recycled before its page
/// goes home (measured: spooling every dirty page recycled 9 in 10 copies unused; a window of most of
/// the ring, 7 in 10). Counted in dirty pages, not frames: the flusher keeps a quarter of the pool clean
/// ahead of the hand, and a window of frames from the hand saw mostly those.
pub fn spool_line_pages(batch_pages: usize) -> usize {
    RING_BATCHES / 4 * batch_pages
}

/// Ring positions recycled together when the spooler must reuse one: a quarter of the ring, so the
/// data files are `fsync`ed once per four batches written rather than once per batch. Recycling drops
/// the oldest copies, which the clock has used by then (a copy is taken within a quarter of the ring's
/// capacity ahead of the hand); one whose page has not gone home yet is spooled again.
pub const RECYCLE_BATCHES: u64 = (RING_BATCHES / 4) as u64;

/// The batches a spooler about to write batch `seq` recycles: `None` while the ring has room or the
/// position was recycled already; otherwise up to which batch (the position's previous batch and the
/// next [`RECYCLE_BATCHES`] − 1, never past the last batch written).
pub fn recycle_through(seq: u64, recycled: u64) -> Option<u64> {
    let reused = seq.saturating_sub(RING_BATCHES as u64);
    (reused > recycled).then(|| (reused + RECYCLE_BATCHES - 1).min(seq - 1))
}

/// Whether the spooler writes a batch of `ahead` candidate pages for the next evictions now, the
/// nearest `nearest` places from the front of the line of next evictions: only a full batch — one ring write, one
/// sync and a quarter of a recycle per `batch_pages` pages (measured before: ~20 pages per batch, so
/// three times the syncs and recycle `fsync`s) — unless one is within half a batch of the front, when
/// waiting would leave it to the flusher's 2012 path or a client's eviction.
pub fn worth_spooling(ahead: usize, nearest: usize, batch_pages: usize) -> bool {
    ahead > 0 && (ahead >= batch_pages || nearest < batch_pages.div_ceil(2))
}

/// The ring's bookkeeping (one per store in `pipelined` dw mode).
pub struct Pipeline {
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
    /// Read side: a home write that relies on a ring copy, from the safety check until the write has been
    /// issued. Write side: raising `recycled_seq`.
    home_writes: RwLock<()>,
    /// Per data file: written home since the last recycle fsync.
    unsynced_home: Vec<AtomicBool>,
    /// A checkpoint is running: the spooler spools its pages too, ahead of its home writes.
    checkpointing: AtomicBool,
    /// The spooler found nothing worth spooling and sleeps until the clock hand has travelled this far
    /// ([`super::pool::Pool::hand_travel`]; `u64::MAX`: not sleeping), a checkpoint starts, or a timeout.
    wake_at_travel: AtomicU64,
    /// Set (under its lock) by whoever wakes the spooler, so a wake-up between the spooler's look and its
    /// wait is not lost.
    woken: Mutex<bool>,
    woken_changed: Condvar,
    /// Test-only deliberate bug: a copy counts as safe before its sync completed.
    home_before_sync: bool,
    /// Test-only deliberate bug: a ring batch is overwritten before the home writes that relied on it
    /// are synced.
    recycle_skips_home_sync: bool,
}

impl Pipeline {
    /// State for a store with `data_files` data files.
    pub fn new(data_files: u32, home_before_sync: bool, recycle_skips_home_sync: bool) -> Pipeline {
        Pipeline {
            spool: Mutex::new(None),
            next_seq: AtomicU64::new(1),
            durable_seq: AtomicU64::new(0),
            durable_lock: Mutex::new(()),
            durable_changed: Condvar::new(),
            recycled_seq: AtomicU64::new(0),
            home_writes: RwLock::new(()),
            unsynced_home: (0..data_files).map(|_| AtomicBool::new(false)).collect(),
            checkpointing: AtomicBool::new(false),
            wake_at_travel: AtomicU64::new(u64::MAX),
            woken: Mutex::new(false),
            woken_changed: Condvar::new(),
            home_before_sync,
            recycle_skips_home_sync,
        }
    }

    /// Ring position of batch `seq`.
    pub fn position(seq: u64) -> usize {
        (seq % RING_BATCHES as u64) as usize
    }

    /// The sequence number the next batch gets (taken by [`Pipeline::advance`]).
    pub fn next_seq(&self) -> u64 {
        self.next_seq.load(Ordering::Acquire)
    }

    /// The batch numbered [`Pipeline::next_seq`] has been written.
    pub fn advance(&self) {
        self.next_seq.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether a frame whose copy is in batch `copy_seq` with LSN `copy_lsn` may go home without its own
    /// double-write, its page LSN being `page_lsn`. Call under [`Pipeline::home_write`].
    pub fn is_safe(&self, copy_seq: u64, copy_lsn: Lsn, page_lsn: Lsn) -> bool {
        let synced = self.home_before_sync || copy_seq <= self.durable_seq.load(Ordering::Acquire);
        copy_seq != 0 && copy_lsn == page_lsn && copy_seq > self.recycled_seq.load(Ordering::Acquire) && synced
    }

    /// Whether the copy is still in the ring (written, maybe not yet synced): spooling it again would be
    /// wasted.
    pub fn is_current(&self, copy_seq: u64, copy_lsn: Lsn, page_lsn: Lsn) -> bool {
        copy_seq != 0 && copy_lsn == page_lsn && copy_seq > self.recycled_seq.load(Ordering::Acquire)
    }

    /// Hold while checking [`Pipeline::is_safe`] and issuing the home writes that rely on it.
    pub fn home_write(&self) -> RwLockReadGuard<'_, ()> {
        self.home_writes.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Note a home write to data file `file` (under [`Pipeline::home_write`] or before its own sync).
    pub fn wrote_home(&self, file: u32) {
        self.unsynced_home[file as usize].store(true, Ordering::Release);
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

    /// Stop relying on batches up to `seq` and make every home write that relied on them durable:
    /// `sync_file` is called for each data file written home since the last recycle.
    pub fn recycle<E>(&self, seq: u64, sync_file: impl FnMut(u32) -> Result<(), E>) -> Result<(), E> {
        if self.recycled_seq.load(Ordering::Acquire) < seq {
            let _no_home_writes = self.home_writes.write().unwrap_or_else(|p| p.into_inner());
            self.recycled_seq.fetch_max(seq, Ordering::AcqRel);
        }
        self.sync_home(sync_file)
    }

    /// [`Pipeline::recycle`] for a caller that holds the pool lock (a client spooling for its
    /// eviction): it does not wait for home writes in progress (a flush or a checkpoint writing pages
    /// home relying on the ring) — false, nothing done, if there is one.
    pub fn try_recycle<E>(&self, seq: u64, sync_file: impl FnMut(u32) -> Result<(), E>) -> Result<bool, E> {
        if self.recycled_seq.load(Ordering::Acquire) < seq {
            let _no_home_writes = match self.home_writes.try_write() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return Ok(false),
            };
            self.recycled_seq.fetch_max(seq, Ordering::AcqRel);
        }
        self.sync_home(sync_file).map(|()| true)
    }

    /// Sync every data file written home since the last recycle.
    fn sync_home<E>(&self, mut sync_file: impl FnMut(u32) -> Result<(), E>) -> Result<(), E> {
        if self.recycle_skips_home_sync {
            return Ok(());
        }
        for (file, unsynced) in self.unsynced_home.iter().enumerate() {
            if unsynced.swap(false, Ordering::AcqRel)
                && let Err(e) = sync_file(file as u32)
            {
                // Still unsynced: the next recycle must try again (the store is poisoned anyway).
                unsynced.store(true, Ordering::Release);
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_safe_only_while_durable_current_and_not_recycled() {
        let p = Pipeline::new(2, false, false);
        assert!(!p.is_safe(0, 0, 0), "no copy");
        assert!(!p.is_safe(1, 5, 5), "written but not synced");
        assert!(p.is_current(1, 5, 5));
        p.mark_durable(1);
        assert!(p.is_safe(1, 5, 5));
        assert!(!p.is_safe(1, 5, 6), "the page changed after it was copied");
        p.wrote_home(1);
        let mut synced = Vec::new();
        p.recycle(1, |f| {
            synced.push(f);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(synced, vec![1], "only the file written home is synced");
        assert!(!p.is_safe(1, 5, 5) && !p.is_current(1, 5, 5), "recycled");
        p.recycle(1, |_| Err(())).unwrap();
    }

    #[test]
    fn a_recycle_under_the_pool_lock_does_not_wait_for_home_writes_in_progress() {
        let p = Pipeline::new(1, false, false);
        p.mark_durable(2);
        let home_write = p.home_write();
        assert_eq!(p.try_recycle(1, |_| Ok::<(), ()>(())), Ok(false));
        assert!(p.is_safe(1, 5, 5), "not recycled");
        drop(home_write);
        assert_eq!(p.try_recycle(1, |_| Ok::<(), ()>(())), Ok(true));
        assert!(!p.is_safe(1, 5, 5), "recycled");
        // Already recycled: no lock needed, even with a home write in progress.
        let _home_write = p.home_write();
        assert_eq!(p.try_recycle(1, |_| Ok::<(), ()>(())), Ok(true));
    }

    #[test]
    fn a_quarter_of_the_ring_is_recycled_at_once_and_only_when_needed() {
        let ring = RING_BATCHES as u64;
        assert_eq!(recycle_through(1, 0), None, "an empty ring");
        assert_eq!(recycle_through(ring, 0), None, "the last free position");
        assert_eq!(recycle_through(ring + 1, 0), Some(RECYCLE_BATCHES), "batch 1 and the next ones");
        assert_eq!(recycle_through(ring + 2, RECYCLE_BATCHES), None, "recycled with batch 1");
        assert_eq!(recycle_through(ring + 1 + RECYCLE_BATCHES, RECYCLE_BATCHES), Some(2 * RECYCLE_BATCHES));
        assert!(RECYCLE_BATCHES < ring, "never the batch about to be written");
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
        let p = std::sync::Arc::new(Pipeline::new(1, false, false));
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
        let p = Pipeline::new(1, true, false);
        assert!(p.is_safe(1, 5, 5));
    }

    #[test]
    fn a_failed_recycle_sync_is_retried_next_time() {
        let p = Pipeline::new(1, false, false);
        p.wrote_home(0);
        assert!(p.recycle(1, |_| Err(())).is_err());
        let mut called = false;
        p.recycle(2, |_| {
            called = true;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert!(called);
    }

    #[test]
    fn waiting_for_a_batch_ends_when_it_is_durable_or_on_give_up() {
        let p = std::sync::Arc::new(Pipeline::new(1, false, false));
        assert!(!p.wait_durable(1, || true));
        let q = p.clone();
        let t = std::thread::spawn(move || q.mark_durable(3));
        assert!(p.wait_durable(2, || false));
        t.join().unwrap();
        assert_eq!(p.durable_seq(), 3);
    }
}
