//! The buffer pool: a fixed set of page frames, a page table, and clock (second-chance) eviction.
//!
//! The pool only keeps frames; deciding how a dirty victim is written (and the write-ahead rule) is the
//! store's job. Frames that are pinned by a running transaction or being written by a flush are never
//! chosen as victims.

use super::page::PageId;
use super::protection::dw_pipelined::ring::RingCopy;
use std::collections::HashMap;
use syncbench_sys::AlignedBuf;

/// How many frames past the first cheap victim the clock looks for a clean one
/// ([`Pool::victim_preferring`]): a batch's worth, the flusher's unit of keeping frames clean.
pub const CLEAN_AFTER_CHEAP: usize = 64;

/// One frame.
pub struct Frame {
    /// Which page it holds, if any.
    pub id: Option<PageId>,
    /// The page bytes (aligned, so O_DIRECT reads can land here directly).
    pub data: AlignedBuf,
    /// Changed since it was last written home (set through [`Pool::set_dirty`], which keeps count).
    dirty: bool,
    /// Clock reference bit: used since the hand last passed.
    pub referenced: bool,
    /// A flush is writing a copy of it; it must stay in the pool until that ends.
    pub io_busy: bool,
    /// A transaction is changing it; its LSN is not final yet.
    pub pinned: bool,
    /// Recovery read it and its checksum failed: only a full-page image may overwrite it.
    pub torn: bool,
    /// It was dirty when the running checkpoint chose its redo LSN: the checkpoint must write a copy of
    /// it taken after that moment, even if it has been changed again since.
    pub checkpoint_needed: bool,
    /// `pipelined` double-write: the page's newest copy in the ring (none: `seq` 0). Whether it still
    /// protects the page is [`super::dw_pipelined::Pipeline::is_safe`]'s question.
    pub dw: RingCopy,
}

impl Frame {
    /// Changed since it was last written home.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }
}

/// The frames, the page table and the clock hand.
pub struct Pool {
    /// All frames.
    pub frames: Vec<Frame>,
    map: HashMap<PageId, usize>,
    hand: usize,
    /// Frames with `dirty` set: the flusher and the spooler ask for the clean count every few
    /// milliseconds, and counting it meant a walk over every frame under the pool lock (measured with
    /// `perf` at 256 MiB: 6% of the process's CPU samples, with clients waiting for the lock).
    dirty_frames: usize,
    /// Frames the clock hand has passed since the pool was made (the `pipelined` spooler wakes when it
    /// has moved: only then can new pages join the line of next evictions).
    hand_travel: u64,
}

impl Pool {
    /// A pool of `n_frames` empty frames of `page_size` bytes.
    pub fn new(n_frames: usize, page_size: usize) -> Pool {
        let frames = (0..n_frames)
            .map(|_| Frame {
                id: None,
                data: AlignedBuf::new(page_size, page_size),
                dirty: false,
                referenced: false,
                io_busy: false,
                pinned: false,
                torn: false,
                checkpoint_needed: false,
                dw: RingCopy::default(),
            })
            .collect();
        Pool { frames, map: HashMap::new(), hand: 0, dirty_frames: 0, hand_travel: 0 }
    }

    /// The frame holding `id`, marking it recently used.
    pub fn lookup(&mut self, id: PageId) -> Option<usize> {
        let idx = *self.map.get(&id)?;
        self.frames[idx].referenced = true;
        Some(idx)
    }

    /// Choose a frame to reuse: an empty one, or an unreferenced, unpinned, idle frame the clock hand
    /// reaches (clearing reference bits as it passes). Clean frames are preferred: a dirty victim costs
    /// the client a synchronous write (through the double-write area in dw mode), so it is returned
    /// only when two sweeps find no clean one. `None` if nothing is evictable.
    pub fn victim(&mut self) -> Option<usize> {
        self.victim_preferring(|_| false)
    }

    /// [`Pool::victim`] where a dirty frame `cheap` accepts is the next best thing to a clean one (in
    /// `pipelined` dw: its double-write copy is durable, so evicting it costs only a home write, no sync):
    /// the hand takes the first clean frame it reaches, or, when none comes within
    /// [`CLEAN_AFTER_CHEAP`] frames of the first cheap one, that cheap one; a dirty one only when two
    /// sweeps find neither. The client writes a cheap victim home itself under the pool lock, which every
    /// transaction waits for, while the flusher writes pages home outside it: measured at 16 MiB, taking
    /// the first cheap frame like a clean one made clients write 128,015 pages home in 18 s (one round,
    /// bench/results/dw-cycle-2026-11-24/; 1,280–2,163 after, 5 quiet rounds).
    pub fn victim_preferring(&mut self, cheap: impl Fn(&Frame) -> bool) -> Option<usize> {
        let (mut cheap_fallback, mut dirty_fallback) = (None, None);
        let mut since_cheap = 0;
        for _ in 0..2 * self.frames.len() {
            if cheap_fallback.is_some() {
                if since_cheap == CLEAN_AFTER_CHEAP {
                    break;
                }
                since_cheap += 1;
            }
            let idx = self.hand;
            self.hand = (self.hand + 1) % self.frames.len();
            self.hand_travel += 1;
            let f = &mut self.frames[idx];
            if f.pinned || f.io_busy {
                continue;
            }
            if f.id.is_none() {
                return Some(idx);
            }
            if f.referenced {
                f.referenced = false;
                continue;
            }
            if !f.dirty {
                return Some(idx);
            }
            if cheap(f) {
                cheap_fallback.get_or_insert(idx);
            } else {
                dirty_fallback.get_or_insert(idx);
            }
        }
        // The hand stays where the look ahead left it, as if it had passed the frames it looked at
        // (their reference bits are cleared); putting it back, or only peeking, was not measured.
        cheap_fallback.or(dirty_fallback)
    }

    /// Make frame `idx` hold `id` (its bytes already loaded), dropping whatever it held.
    pub fn install(&mut self, idx: usize, id: PageId, torn: bool) {
        if let Some(old) = self.frames[idx].id.take() {
            self.map.remove(&old);
        }
        self.set_dirty(idx, false);
        let f = &mut self.frames[idx];
        f.id = Some(id);
        f.referenced = true;
        f.torn = torn;
        f.checkpoint_needed = false;
        f.dw = RingCopy::default();
        self.map.insert(id, idx);
    }

    /// Mark frame `idx` changed since its last home write (or written home), keeping count.
    pub fn set_dirty(&mut self, idx: usize, dirty: bool) {
        let f = &mut self.frames[idx];
        if f.dirty != dirty {
            f.dirty = dirty;
            if dirty {
                self.dirty_frames += 1;
            } else {
                self.dirty_frames -= 1;
            }
        }
    }

    /// The clock hand's position (the flusher cleans ahead of it).
    pub fn hand(&self) -> usize {
        self.hand
    }

    /// Frames the clock hand has passed so far (monotonic).
    pub fn hand_travel(&self) -> u64 {
        self.hand_travel
    }

    /// How many frames are empty or clean (reusable without a write).
    pub fn clean_frames(&self) -> usize {
        self.frames.len() - self.dirty_frames
    }

    /// Every frame holds a page. Frames never become empty again, so from then on every new page
    /// evicts one.
    pub fn is_full(&self) -> bool {
        self.map.len() == self.frames.len()
    }

    /// The first `count` dirty frames the clock would take (unreferenced, unpinned, idle) among the next
    /// `scan` frames, in clock order from the hand: the next evictions, and the order the flusher writes
    /// pages home in. `scan` bounds the walk (under the pool lock) to the frames the hand reaches soon.
    pub fn dirty_victims_in_order(&self, count: usize, scan: usize) -> Vec<usize> {
        let n = self.frames.len();
        (0..scan.min(n))
            .map(|step| (self.hand + step) % n)
            .filter(|&idx| {
                let f = &self.frames[idx];
                f.dirty && !f.referenced && !f.pinned && !f.io_busy
            })
            .take(count)
            .collect()
    }

    /// Dirty frames among the next `window` frames from the clock hand that the hand would take:
    /// unreferenced (not used since it last passed), unpinned and idle. The clock only moves when
    /// clients evict, so these are the writes the next evictions would make clients pay.
    pub fn dirty_victims_ahead(&self, window: usize) -> usize {
        let n = self.frames.len();
        (0..window.min(n))
            .map(|step| &self.frames[(self.hand + step) % n])
            .filter(|f| f.dirty && !f.referenced && !f.pinned && !f.io_busy)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> PageId {
        PageId { file: 0, page_no: n }
    }

    #[test]
    fn clock_gives_second_chance_and_skips_pinned_and_busy() {
        let mut pool = Pool::new(3, 4096);
        for n in 0..3 {
            let v = pool.victim().unwrap();
            pool.install(v, id(n), false);
        }
        // All referenced: the hand clears bits and comes back to frame 0.
        assert_eq!(pool.victim(), Some(0));
        // A clean frame is preferred over a dirty one further ahead of the hand.
        pool.set_dirty(1, true);
        assert_eq!(pool.victim(), Some(2));
        pool.set_dirty(1, false);
        pool.install(0, id(10), false);
        pool.frames[1].pinned = true;
        pool.frames[2].io_busy = true;
        pool.frames[0].referenced = false;
        assert_eq!(pool.victim(), Some(0));
        pool.frames[0].pinned = true;
        assert_eq!(pool.victim(), None, "nothing evictable");
        assert_eq!(pool.lookup(id(10)), Some(0));
        assert_eq!(pool.lookup(id(0)), None);
    }

    #[test]
    fn a_clean_frame_comes_first_then_a_cheap_one_then_a_dirty_one() {
        let mut pool = Pool::new(4, 4096);
        for n in 0..4 {
            let v = pool.victim().unwrap();
            pool.install(v, id(n), false);
            pool.frames[v].referenced = false;
            pool.set_dirty(v, true);
        }
        pool.frames[2].dw.seq = 7;
        assert_eq!(pool.victim(), Some(0), "without a preference the first dirty frame");
        assert_eq!(pool.victim_preferring(|f| f.dw.exists()), Some(2), "the cheap one, further on");
        pool.set_dirty(3, false);
        assert_eq!(pool.victim_preferring(|f| f.dw.exists()), Some(3), "a clean one beyond the cheap one");
        pool.frames[1].dw.seq = 7;
        pool.set_dirty(3, true);
        assert_eq!(pool.victim_preferring(|f| f.dw.exists()), Some(1), "the first cheap one the hand reaches");
    }

    #[test]
    fn the_clock_looks_for_a_clean_frame_only_a_batch_past_a_cheap_one() {
        let frames = CLEAN_AFTER_CHEAP + 3;
        // Every frame dirty and unreferenced, the hand at 0, frame 0 cheap, frame `clean` clean.
        let pool_with_clean_at = |clean: usize| {
            let mut pool = Pool::new(frames, 4096);
            for n in 0..frames as u32 {
                let v = pool.victim().unwrap();
                pool.install(v, id(n), false);
                pool.frames[v].referenced = false;
                pool.set_dirty(v, v != clean);
            }
            assert_eq!(pool.hand(), 0);
            pool.frames[0].dw.seq = 7;
            pool
        };
        let mut far = pool_with_clean_at(CLEAN_AFTER_CHEAP + 1);
        assert_eq!(far.victim_preferring(|f| f.dw.exists()), Some(0), "the clean frame is too far on");
        let mut near = pool_with_clean_at(CLEAN_AFTER_CHEAP);
        assert_eq!(near.victim_preferring(|f| f.dw.exists()), Some(CLEAN_AFTER_CHEAP), "within a batch");
    }

    #[test]
    fn full_and_dirty_victims_ahead_of_the_hand() {
        let mut pool = Pool::new(6, 4096);
        for n in 0..5 {
            let v = pool.victim().unwrap();
            pool.install(v, id(n), false);
            assert!(!pool.is_full());
        }
        let v = pool.victim().unwrap();
        pool.install(v, id(5), false);
        assert!(pool.is_full());
        assert_eq!(pool.hand(), 0);
        // Dirty but referenced (in use): the clock would pass them, so they are not victims.
        pool.set_dirty(1, true);
        pool.set_dirty(4, true);
        assert_eq!(pool.clean_frames(), 4);
        assert_eq!(pool.dirty_victims_ahead(6), 0);
        pool.frames[1].referenced = false;
        pool.frames[4].referenced = false;
        assert_eq!(pool.dirty_victims_ahead(2), 1, "only frame 1 is within two of the hand");
        assert_eq!(pool.dirty_victims_ahead(6), 2);
        assert_eq!(pool.dirty_victims_ahead(100), 2, "the window never wraps twice");
        assert_eq!(pool.dirty_victims_in_order(6, 6), vec![1, 4]);
        assert_eq!(pool.dirty_victims_in_order(1, 6), vec![1], "the first in clock order");
        assert_eq!(pool.dirty_victims_in_order(6, 4), vec![1], "only the next four frames");
        pool.frames[4].io_busy = true;
        pool.frames[1].pinned = true;
        assert!(pool.dirty_victims_in_order(6, 6).is_empty());
        assert_eq!(pool.dirty_victims_ahead(6), 0, "pages being written or changed are not victims");
        // Replacing a page keeps the pool full.
        pool.install(3, id(9), false);
        assert!(pool.is_full());
        pool.install(4, id(10), false);
        assert_eq!(pool.clean_frames(), 5, "a frame given a new page is clean");
    }
}
