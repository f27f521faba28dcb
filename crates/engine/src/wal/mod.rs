//! A reference write-ahead log with group commit and fail-stop on sync errors, generic over [`Storage`].
//!
//! # Using it
//! ```no_run
//! use syncbench_engine::RealStorage;
//! use syncbench_engine::wal::{Wal, WalConfig};
//! let (wal, recovered) = Wal::open(RealStorage, "/tmp/log".as_ref(), WalConfig::default())?;
//! for r in &recovered { /* redo r.kind, r.payload, in LSN order */ }
//! let lsn = wal.append(1, b"insert k=v")?; // reserved and copied; not durable yet
//! wal.commit(lsn)?;                          // returns once durable (group commit)
//! # Ok::<(), syncbench_engine::wal::WalError>(())
//! ```
//! Share one `Wal` between threads with an `Arc`.
//!
//! # LSNs
//! An [`Lsn`] is a byte position in the log. [`Wal::append`] returns the END of the new record: the
//! record is durable exactly when [`Wal::flushed_lsn`] ≥ that value. Recovered [`Record`]s carry both
//! their start (`lsn`) and end (`end_lsn`). A page store stamps pages with the end LSN and calls
//! [`Wal::flush_to`] before writing a page (the write-ahead rule).
//!
//! # Group commit
//! Appenders reserve a range and copy their record into the log buffer under a short lock. A committer
//! whose record is not yet durable and finds no flush in progress becomes the leader: it optionally
//! sleeps `commit_delay` (only if at least `commit_siblings` other commits are waiting), seals and takes
//! every record appended so far (up to `max_group_bytes`), writes and syncs them, publishes the new
//! flushed LSN and wakes the commits it covered — only the first itself, which wakes the rest (a leader
//! that woke 16 threads would start the next flush that much later).
//!
//! Who leads the next flush: the commits a flush released are usually back with their next record a
//! few hundred microseconds later, and the leader, the one thread already running, is back first. Had it
//! flushed at once it would take its own record alone while the others were still being woken, and a
//! closed loop of N clients would alternate flushes of 1 and N commits (a mean of (N+1)/2, every commit
//! waiting two flushes: issue #36). So the next flush waits for the released commits to come back: the
//! last of them to return leads it, taking everyone's record; the first to wait holds a timer and leads
//! if they are not all back within `rejoin_wait_pct` of the recent flush time (a client that went away
//! costs the others at most that). No thread is woken just to lead: a sleeping commit is woken only to
//! hold that timer when some already wait uncovered (without the rejoin wait, the first woken commit
//! leads for them if nobody has). With `group_commit: false` every commit does its own write and sync,
//! one at a time (the naive baseline). [`Wal::group_stats`] counts where the commits went.
//!
//! The log's invariants are asserted where a flush's write becomes the durable horizon: appends get
//! strictly increasing LSNs, the flushed LSN never moves back, and a group never covers an LSN that was
//! not yet copied into the log buffer. A broken one stops the process rather than acknowledge a commit.
//!
//! # Failure
//! Any failed write or sync poisons the log: the waiting commits and all later appends and commits fail
//! with [`WalError::Poisoned`], whose outcome is unknown (the bytes may or may not be durable). A sync is
//! never retried; reopen the log and let recovery decide what survived.
//!
//! The on-disk format is documented byte by byte in `docs/format.md` and in [`record`].
//!
//! # For a crash simulator
//! The log touches storage only through [`Storage`]: `create_new` (segment `.tmp`), `write_at`,
//! `sync_all` (new segment, recovery), `rename` + `sync_dir` (segment creation and recycling),
//! `remove`, `list`, `exists`, `open`, `read_exact_at`, `len`, the sync method's `sync_data`/`sync_all` or
//! `WriteSync`/`FileOptions::dsync`, and `enable_linked_sync` for io_uring. The invariant to check after
//! a crash and [`Wal::open`]: every record whose `commit` returned Ok is recovered, in LSN order, with
//! its kind and payload; records whose commit failed (poisoned) may or may not be. `WalConfig::faults`
//! ([`FaultSwitches`], hidden from docs) breaks the log on purpose, so a crash test can show it
//! catches a missing directory fsync, a missing log sync, or a retried fsync.

mod config;
mod error;
mod group;
pub mod record;
mod recovery;
mod segment;

use config::LogMethod;
pub use config::{FaultSwitches, LOG_METHODS, SyncMethod, WalConfig};
pub use error::{WalError, WalResult};
pub use group::{GROUP_SIZE_BUCKETS, GroupStats};
pub use segment::{BLOCK_BYTES, file_name as segment_file_name};

use crate::storage::Storage;
use group::now_ns;
use parking_lot::{Condvar, Mutex, MutexGuard};
use record::{HEADER_BYTES, KIND_PADDING, KIND_SEGMENT_HEADER, SegmentHeader};
use segment::{Failure, Segments};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;
use syncbench_sys::AlignedBuf;

/// A position in the log, in bytes from the start of the log's first segment ever.
pub type Lsn = u64;

/// A record recovered from the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Where the record starts.
    pub lsn: Lsn,
    /// Where it ends: the value `append` returned for it.
    pub end_lsn: Lsn,
    /// The caller's kind (1..=239).
    pub kind: u8,
    /// The caller's bytes.
    pub payload: Vec<u8>,
}

/// Counters since the log was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalStats {
    /// Flushes: one leader's write(s) plus sync, or one naive commit's.
    pub flushes: u64,
    /// Write calls issued by flushes.
    pub writes: u64,
    /// Separate fsync/fdatasync calls (zero for write-through methods).
    pub syncs: u64,
    /// Bytes written by flushes (direct I/O rewrites partial blocks, so this can exceed what was appended).
    pub bytes_written: u64,
    /// Commits (`commit` calls) that returned Ok.
    pub commits: u64,
    /// Time spent in flushes (write + sync, the leader's I/O only), summed, in nanoseconds.
    pub flush_ns_total: u64,
    /// Slowest flush, in nanoseconds.
    pub flush_ns_max: u64,
    /// Bytes of an interrupted flush's valid-looking records that `open` zeroed behind the recovered end.
    pub stale_tail_bytes_zeroed: u64,
    /// Segment ends the appends crossed, by how: the previous record ended exactly at the segment's end,
    /// a padding record filled the rest, or the rest was too short for a record header and was skipped
    /// (the size boundaries of `reserve`; a crash tester shows it reached each).
    pub segment_ends_exact: u64,
    /// See `segment_ends_exact`.
    pub segment_ends_padded: u64,
    /// See `segment_ends_exact`.
    pub segment_ends_skipped: u64,
    /// Batches a leader cut at `max_group_bytes` with records left for the next flush.
    pub batches_capped: u64,
}

impl WalStats {
    /// The size boundaries crossed: segment ends exact, padded and skipped, then batches capped.
    pub fn boundaries(&self) -> [u64; 4] {
        [self.segment_ends_exact, self.segment_ends_padded, self.segment_ends_skipped, self.batches_capped]
    }
}

#[derive(Default)]
struct Counters {
    flushes: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
    bytes_written: AtomicU64,
    commits: AtomicU64,
    flush_ns_total: AtomicU64,
    flush_ns_max: AtomicU64,
    stale_tail_bytes_zeroed: AtomicU64,
    segment_ends_exact: AtomicU64,
    segment_ends_padded: AtomicU64,
    segment_ends_skipped: AtomicU64,
    batches_capped: AtomicU64,
}

/// Everything behind the log's short lock.
struct State {
    /// Log bytes `buf_start_lsn..appended_lsn`.
    buf: Vec<u8>,
    /// Block-aligned, ≤ `written_lsn`: direct I/O rewrites the partial block before `written_lsn`.
    buf_start_lsn: Lsn,
    /// End of the last reserved record.
    appended_lsn: Lsn,
    /// Everything before this has been sealed and handed to a leader.
    written_lsn: Lsn,
    /// Everything before this is durable.
    flushed_lsn: Lsn,
    /// A leader is writing.
    flush_in_progress: bool,
    /// Batches taken so far: the in-flight batch (if any) is number `batches_taken`.
    batches_taken: u64,
    /// The first failure; the log is dead.
    poisoned: Option<(&'static str, String)>,
    /// `fail_only_the_leader`: the failure its leader reports instead of poisoning the log.
    failed_once: Option<(&'static str, String)>,
    /// Commits currently inside `commit` (for `commit_siblings`).
    active_commits: u32,
    /// A leader in its `commit_delay` wait wants a wake-up once this many sleeping commits wait for the
    /// next group (records not yet taken by a batch); 0 = no leader is waiting for a count.
    delay_wants_waiters: u32,
    /// Commits sleeping until a flush covers their record or the lead passes to them.
    waiters: Vec<Waiter>,
    /// Commits the last flush released that have not come back with their next commit yet.
    released_away: u32,
    /// Flushes published so far: tags the commits a flush released (`WakeSlot::released_epoch`).
    release_epoch: u64,
    /// While no flush runs: the next flush waits for `released_away` to reach 0 until this time.
    rejoin_deadline: Option<Instant>,
    /// A sleeping commit holds the rejoin timer: it wakes at the deadline and leads if nobody has.
    rejoin_timer_held: bool,
    /// Moving average of the flush time, in nanoseconds: bounds the rejoin wait.
    flush_ns_recent: u64,
    /// When the last flush returned (`now_ns`), for the gap before the next.
    last_flush_end_ns: Option<u64>,
    /// End LSN and append time (`now_ns`) of every caller's record no batch has taken yet.
    append_times: VecDeque<(Lsn, u64)>,
    /// Where the commits go (see [`GroupStats`]).
    group: GroupStats,
}

/// A sleeping commit. It is woken directly (`unpark`), not through a condition variable: parking_lot
/// requeues a condvar's waiters onto the mutex, so a finished flush of N commits woke them one after
/// another, each waiting for the previous one to be scheduled and unlock (about 20 µs per hand-off on
/// the project VM, longer than the flush itself for large groups). Woken directly, they run in parallel.
struct Waiter {
    target: Lsn,
    /// A `commit` (expected back with its next record), not a `flush_to`.
    commit: bool,
    thread: std::thread::Thread,
    slot: Arc<WakeSlot>,
}

/// Where a sleeping commit learns it was woken, and receives the others it must wake in turn.
#[derive(Default)]
struct WakeSlot {
    woken: AtomicBool,
    relay: Mutex<Vec<Waiter>>,
    /// Set for the commit that relays a finished batch's wake-ups while other commits still wait: it
    /// must lead their flush if nobody else has started it by the time it runs (see `lead_one_flush`).
    lead_duty: AtomicBool,
    /// It holds the rejoin timer: it will lead a flush itself at the deadline, so it is not a commit
    /// waiting for a flush (`Wal::waiting_commits`).
    timed: AtomicBool,
    /// When the waker woke it (`now_ns`), for `GroupStats::wake_to_running_ns`.
    woken_at_ns: AtomicU64,
    /// The log instance and flush (`State::release_epoch`) that last released this thread's commit.
    released_by: AtomicU64,
    released_epoch: AtomicU64,
}

impl Waiter {
    fn wake(self) {
        self.slot.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }

    fn stamp(&self, at_ns: u64) {
        self.slot.woken_at_ns.store(at_ns, Ordering::Relaxed);
    }

    /// Wake every commit of a finished batch. The leader wakes only the first and hands it the rest:
    /// each wake-up is a system call and, on a virtual machine, an interrupt to another vCPU (a few
    /// microseconds each), and a leader that wakes 16 threads itself starts its next flush that much
    /// later. The first woken commit wakes the others off the disk's critical path.
    fn wake_all(waiters: Vec<Waiter>, lead_duty: bool) {
        let at_ns = now_ns();
        waiters.iter().for_each(|w| w.stamp(at_ns));
        let mut rest = waiters.into_iter();
        if let Some(first) = rest.next() {
            *first.slot.relay.lock() = rest.collect();
            first.slot.lead_duty.store(lead_duty, Ordering::Relaxed);
            first.wake();
        }
    }
}

thread_local! {
    /// This thread's wake-up slot, reused for every wait.
    static WAKE_SLOT: Arc<WakeSlot> = Arc::new(WakeSlot::default());
}

/// One leader's work: bytes to write at `write_lsn`, after which the log is durable to `end_lsn`.
struct Batch {
    start_lsn: Lsn,
    write_lsn: Lsn,
    end_lsn: Lsn,
    bytes: AlignedBuf,
    len: usize,
    /// Callers' records in the batch, and the sum of their append times (`now_ns`).
    records: u64,
    appended_ns_sum: u128,
}

/// Tells log instances apart in the thread-local wake slots (a reopened log has the same `log_id`).
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// The write-ahead log. See the module documentation.
pub struct Wal<S: Storage> {
    state: Mutex<State>,
    /// Wakes a leader in its `commit_delay` wait once enough commits are waiting.
    delay_wakeup: Condvar,
    segments: Mutex<Segments<S>>,
    config: WalConfig,
    segment_bytes: u64,
    log_id: u64,
    instance: u64,
    counters: Counters,
}

/// A fresh random log identity (no extra dependency: the std hasher is randomly seeded).
fn new_log_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    h.write_u32(std::process::id());
    h.finish()
}

impl<S: Storage> Wal<S> {
    /// Open (or create) the log in `dir`: recover, make what was read durable, zero the remains of an
    /// interrupted flush, and preallocate segments. Returns the log and the caller's records in LSN order.
    /// An existing log keeps its segment size; `config.segment_bytes` applies to new logs.
    pub fn open(storage: S, dir: &Path, config: WalConfig) -> WalResult<(Wal<S>, Vec<Record>)> {
        validate(&config)?;
        crate::storage::create_dir_durably(&storage, dir)
            .map_err(|e| WalError::io(format!("cannot create {}", dir.display()), e))?;
        let mut scan = recovery::scan(&storage, dir, config.faults.corruption_as_end)?;
        let segment_bytes = scan.segment_bytes.unwrap_or(config.segment_bytes);
        for leftover in &scan.leftovers {
            storage.remove(leftover).map_err(|e| WalError::io(format!("cannot remove {}", leftover.display()), e))?;
        }
        let mut segments = Segments::new(storage, dir.to_path_buf(), segment_bytes, config.sync_method, config.faults);
        segments.set_max_spares(config.max_spare_segments);
        if !config.faults.trust_unsynced_at_open {
            make_durable_before_trusting(&segments, &scan, dir)?;
        }
        let records = std::mem::take(&mut scan.records);
        let wal = Wal {
            state: Mutex::new(State {
                buf_start_lsn: scan.end_lsn - scan.tail_block.len() as u64,
                buf: std::mem::take(&mut scan.tail_block),
                appended_lsn: scan.end_lsn,
                written_lsn: scan.end_lsn,
                flushed_lsn: scan.end_lsn,
                flush_in_progress: false,
                batches_taken: 0,
                poisoned: None,
                failed_once: None,
                active_commits: 0,
                delay_wants_waiters: 0,
                waiters: Vec::new(),
                released_away: 0,
                release_epoch: 0,
                rejoin_deadline: None,
                rejoin_timer_held: false,
                flush_ns_recent: 0,
                last_flush_end_ns: None,
                append_times: VecDeque::new(),
                group: GroupStats::default(),
            }),
            delay_wakeup: Condvar::new(),
            segments: Mutex::new(segments),
            segment_bytes,
            log_id: scan.log_id.unwrap_or_else(new_log_id),
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            config,
            counters: Counters::default(),
        };
        if !wal.config.faults.keep_stale_tail {
            wal.zero_stale_tail(scan.end_lsn, scan.stale_until)?;
        }
        let zeroed = if wal.config.faults.keep_stale_tail { 0 } else { scan.stale_until.saturating_sub(scan.end_lsn) };
        wal.counters.stale_tail_bytes_zeroed.store(zeroed, Ordering::Relaxed);
        wal.preallocate(scan.end_lsn)?;
        Ok((wal, records))
    }

    /// Append a record of `kind` (1..=239; larger values belong to the log). The bytes are copied into the
    /// log buffer; they are NOT durable until a `commit`/`flush_to` at or past the returned LSN returns Ok.
    /// Returns the end LSN of the record.
    pub fn append(&self, kind: u8, payload: &[u8]) -> WalResult<Lsn> {
        if kind == 0 || kind > record::MAX_USER_KIND {
            return Err(WalError::Invalid(format!(
                "record kind {kind} is reserved; use 1..={}",
                record::MAX_USER_KIND
            )));
        }
        if payload.len() > self.max_payload_bytes() {
            return Err(WalError::Invalid(format!(
                "record of {} bytes does not fit in a {}-byte segment (at most {})",
                payload.len(),
                self.segment_bytes,
                self.max_payload_bytes()
            )));
        }
        let payload_crc = crc32c::crc32c(payload); // outside the lock
        let mut st = self.state.lock();
        check_poison(&st)?;
        let lsn = self.reserve(&mut st, kind, payload, payload_crc);
        st.append_times.push_back((lsn, now_ns()));
        Ok(lsn)
    }

    /// Largest payload `append` accepts.
    pub fn max_payload_bytes(&self) -> usize {
        let header_record = record::encoded_len(record::SEGMENT_HEADER_PAYLOAD_BYTES);
        (self.segment_bytes as usize - header_record - HEADER_BYTES).min(u32::MAX as usize)
    }

    /// Wait until the record ending at `lsn` is durable, by group commit (or by its own sync when group
    /// commit is off). Errors: [`WalError::Poisoned`] — the outcome is unknown.
    pub fn commit(&self, lsn: Lsn) -> WalResult<()> {
        let mut st = self.state.lock();
        st.active_commits += 1;
        let result = if self.config.group_commit {
            self.flush_locked(&mut st, lsn, true)
        } else {
            self.flush_alone(&mut st, lsn)
        };
        st.active_commits -= 1;
        if result.is_ok() {
            self.counters.commits.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Make everything up to `lsn` durable (joining or leading a group, never delaying). For the
    /// write-ahead rule: call with a page's LSN before writing the page.
    pub fn flush_to(&self, lsn: Lsn) -> WalResult<()> {
        let mut st = self.state.lock();
        self.flush_locked(&mut st, lsn, false)
    }

    /// Everything before this LSN is durable.
    pub fn flushed_lsn(&self) -> Lsn {
        self.state.lock().flushed_lsn
    }

    /// End of the last appended record (where the next one goes, unless it starts a segment).
    pub fn appended_lsn(&self) -> Lsn {
        self.state.lock().appended_lsn
    }

    /// Commits asleep waiting for a flush (a deterministic test harness waits for this before it lets
    /// the flush go on). The commit holding the rejoin timer is not counted: it will lead one itself.
    pub fn waiting_commits(&self) -> usize {
        self.state.lock().waiters.iter().filter(|w| !w.slot.timed.load(Ordering::Relaxed)).count()
    }

    /// Whether a write or sync failed (the log accepts nothing more).
    pub fn is_poisoned(&self) -> bool {
        self.state.lock().poisoned.is_some()
    }

    /// Size of each segment file.
    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }

    /// The configuration the log was opened with.
    pub fn config(&self) -> &WalConfig {
        &self.config
    }

    /// Counters since open.
    pub fn stats(&self) -> WalStats {
        let c = &self.counters;
        WalStats {
            flushes: c.flushes.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            syncs: c.syncs.load(Ordering::Relaxed),
            bytes_written: c.bytes_written.load(Ordering::Relaxed),
            commits: c.commits.load(Ordering::Relaxed),
            flush_ns_total: c.flush_ns_total.load(Ordering::Relaxed),
            flush_ns_max: c.flush_ns_max.load(Ordering::Relaxed),
            stale_tail_bytes_zeroed: c.stale_tail_bytes_zeroed.load(Ordering::Relaxed),
            segment_ends_exact: c.segment_ends_exact.load(Ordering::Relaxed),
            segment_ends_padded: c.segment_ends_padded.load(Ordering::Relaxed),
            segment_ends_skipped: c.segment_ends_skipped.load(Ordering::Relaxed),
            batches_capped: c.batches_capped.load(Ordering::Relaxed),
        }
    }

    /// Where the group commit's commits went since open (see [`GroupStats`]).
    pub fn group_stats(&self) -> GroupStats {
        self.state.lock().group.clone()
    }

    /// Retire the segments that hold only records before `lsn` (a checkpoint's redo LSN): recycled as
    /// spares (renamed) or removed, then the directory is fsynced. Only durable segments are retired, and
    /// the segment holding the flushed LSN always stays. Returns how many segments were retired.
    pub fn truncate_before(&self, lsn: Lsn) -> WalResult<u32> {
        let (flushed, appended) = {
            let st = self.state.lock();
            check_poison(&st)?;
            (st.flushed_lsn, st.appended_lsn)
        };
        // Keep the segment that holds the last durable byte: recovery starts from the oldest file.
        let below = lsn.min(flushed.saturating_sub(1)) / self.segment_bytes;
        let mut segments = self.segments.lock();
        segments
            .retire_below(below, appended / self.segment_bytes)
            .map_err(|e| WalError::io("cannot retire log segments", e))
    }

    fn reserve(&self, st: &mut State, kind: u8, payload: &[u8], payload_crc: u32) -> Lsn {
        let need = record::encoded_len(payload.len()) as u64;
        let count = |c: &AtomicU64| c.fetch_add(1, Ordering::Relaxed);
        let mut first = true;
        loop {
            let offset = st.appended_lsn % self.segment_bytes;
            if offset == 0 {
                if first && st.appended_lsn > 0 {
                    count(&self.counters.segment_ends_exact);
                }
                first = false;
                let header = SegmentHeader { segment_bytes: self.segment_bytes, log_id: self.log_id }.to_bytes();
                put(st, self.segment_bytes, KIND_SEGMENT_HEADER, &header, crc32c::crc32c(&header));
                continue;
            }
            let room = self.segment_bytes - offset;
            if need <= room {
                let before = st.appended_lsn;
                put(st, self.segment_bytes, kind, payload, payload_crc);
                assert!(st.appended_lsn > before, "appends get strictly increasing LSNs");
                return st.appended_lsn;
            }
            first = false;
            if room >= HEADER_BYTES as u64 {
                count(&self.counters.segment_ends_padded);
                let filler = vec![0u8; room as usize - HEADER_BYTES];
                put(st, self.segment_bytes, KIND_PADDING, &filler, crc32c::crc32c(&filler));
            } else {
                count(&self.counters.segment_ends_skipped);
                // Too small for a header: recovery skips to the next segment.
                st.buf.resize(st.buf.len() + room as usize, 0);
                st.appended_lsn += room;
            }
        }
    }

    /// Group commit: return when `flushed_lsn ≥ target`, leading flushes as needed. A commit
    /// (`may_delay`) that finds no flush running while commits the last flush released are still on their
    /// way back sleeps until the last of them leads, or until the rejoin deadline (see `rejoin_wait_pct`).
    fn flush_locked(&self, st: &mut MutexGuard<'_, State>, target: Lsn, may_delay: bool) -> WalResult<()> {
        check_target(st, target)?;
        if may_delay {
            self.note_rejoin(st);
        }
        let mut lead_duty = false;
        loop {
            check_poison(st)?;
            if st.flushed_lsn >= target || self.config.faults.ack_when_written && st.written_lsn >= target {
                if lead_duty {
                    self.lead_if_nobody_has(st);
                }
                return Ok(());
            }
            if st.flush_in_progress {
                lead_duty = self.wait_for_batch(st, target, may_delay, None);
                continue;
            }
            if may_delay && rejoin_pending(st) {
                lead_duty = self.wait_for_rejoin(st, target);
                continue;
            }
            end_rejoin_wait(st);
            st.flush_in_progress = true;
            self.lead_flushes(st, target, may_delay);
            if let Some((what, cause)) = st.failed_once.take() {
                return Err(WalError::Poisoned { what, cause });
            }
        }
    }

    /// As leader: flush (after the `commit_delay` if due), and with `leader_extra_batches` keep the lead
    /// for more batches while records wait.
    fn lead_flushes(&self, st: &mut MutexGuard<'_, State>, target: Lsn, may_delay: bool) {
        let mut extra_batches = self.config.leader_extra_batches;
        let own_commit = may_delay.then_some(target);
        loop {
            if may_delay && self.should_delay(st) {
                self.delay_for_siblings(st);
            }
            let limit = st.appended_lsn;
            // Keep the lead (no hand-off to a sleeping thread) only once our own record is durable.
            let keep = (extra_batches > 0).then_some(target);
            let keep_lead = self.lead_one_flush(st, limit, self.config.max_group_bytes, None, (keep, own_commit));
            if !keep_lead {
                return;
            }
            extra_batches -= 1;
        }
    }

    /// This thread is back with a commit: if the last flush released its previous one, one fewer
    /// released commit is on its way back.
    fn note_rejoin(&self, st: &mut State) {
        WAKE_SLOT.with(|slot| {
            let by = slot.released_by.swap(0, Ordering::Relaxed);
            if by == self.instance && slot.released_epoch.load(Ordering::Relaxed) == st.release_epoch {
                st.released_away = st.released_away.saturating_sub(1);
            }
        });
    }

    /// No flush runs and released commits are on their way back: sleep until one of them leads. The
    /// first to sleep holds the timer and leads at the deadline if none has (`wait_for_batch` returns
    /// without a wake-up then).
    fn wait_for_rejoin(&self, st: &mut MutexGuard<'_, State>, target: Lsn) -> bool {
        if st.rejoin_timer_held {
            return self.wait_for_batch(st, target, true, None);
        }
        st.rejoin_timer_held = true;
        let deadline = st.rejoin_deadline;
        self.wait_for_batch(st, target, true, deadline)
    }

    /// No group commit: wait for the writer, then write up to `target` and sync, alone.
    fn flush_alone(&self, st: &mut MutexGuard<'_, State>, target: Lsn) -> WalResult<()> {
        check_target(st, target)?;
        loop {
            check_poison(st)?;
            if !st.flush_in_progress {
                break;
            }
            self.wait_for_batch(st, target, true, None);
        }
        st.flush_in_progress = true;
        // Sync the segment of our record even when another commit already wrote it.
        let own_segment = target.saturating_sub(1) / self.segment_bytes;
        self.lead_one_flush(st, target, usize::MAX, Some(own_segment), (None, Some(target)));
        check_poison(st)
    }

    /// The leader's `commit_delay`: a plain sleep (PostgreSQL), or, with `commit_delay_count`, a wait that
    /// ends as soon as that many commits are waiting (MySQL's no-delay count).
    /// The group counted is the leader and the sleeping commits whose records no batch has taken yet.
    /// Commits that were just woken by the last flush are not counted: they are leaving.
    fn delay_for_siblings(&self, st: &mut MutexGuard<'_, State>) {
        let count = self.config.commit_delay_count;
        if count == 0 {
            MutexGuard::unlocked(st, || std::thread::sleep(self.config.commit_delay));
            return;
        }
        let wanted = count - 1; // besides the leader
        if wanted == 0 {
            return;
        }
        let deadline = std::time::Instant::now() + self.config.commit_delay;
        st.delay_wants_waiters = wanted;
        while queued_for_next_group(st) < wanted && st.poisoned.is_none() {
            if self.delay_wakeup.wait_until(st, deadline).timed_out() {
                break;
            }
        }
        st.delay_wants_waiters = 0;
    }

    /// PostgreSQL's rule: the leader sleeps only if enough other commits are in progress to join it.
    fn should_delay(&self, st: &State) -> bool {
        !self.config.commit_delay.is_zero() && st.active_commits.saturating_sub(1) >= self.config.commit_siblings
    }

    /// As leader (`flush_in_progress` set by the caller): take a batch, write and sync it without the
    /// lock, then publish the result (or the poison) and wake the commits it covered. Returns true if
    /// the caller keeps the lead for another batch: allowed by `keep_lead_past` (the caller's own
    /// target, which this batch must have made durable) and records are waiting. Otherwise the lead
    /// passes to one waiter. `own_commit` is the leader's own commit, if it is one.
    fn lead_one_flush(
        &self,
        st: &mut MutexGuard<'_, State>,
        limit: Lsn,
        cap: usize,
        also_sync: Option<u64>,
        (keep_lead_past, own_commit): (Option<Lsn>, Option<Lsn>),
    ) -> bool {
        assert!(st.flush_in_progress, "a flush is led only by the holder of the lead");
        let started_ns = note_flush_start(st);
        let batch = self.take_batch(st, limit, cap);
        st.batches_taken += 1;
        let result = MutexGuard::unlocked(st, || self.write_batch(&batch, also_sync));
        match result {
            Ok(flush_ns) => {
                self.publish_flush(st, &batch, started_ns, flush_ns);
                self.release_covered(st, keep_lead_past, own_commit)
            }
            Err(failure) => {
                st.flush_in_progress = false;
                let failed =
                    if self.config.faults.fail_only_the_leader { &mut st.failed_once } else { &mut st.poisoned };
                failed.get_or_insert((failure.what, failure.error.to_string()));
                let at_ns = now_ns();
                std::mem::take(&mut st.waiters).into_iter().for_each(|w| {
                    w.stamp(at_ns);
                    w.wake();
                });
                false
            }
        }
    }

    /// A flush returned: check the log's invariants where its disk write becomes the durable horizon
    /// (TigerBeetle style: a broken invariant stops the process rather than acknowledging a commit that
    /// is not on disk), publish the new flushed LSN, and count it.
    fn publish_flush(&self, st: &mut State, batch: &Batch, started_ns: u64, flush_ns: u64) {
        if !self.config.faults.flush_horizon_appended {
            assert!(batch.start_lsn >= st.flushed_lsn, "a group starts at or after the durable horizon");
            assert!(batch.end_lsn <= st.written_lsn, "a group covers only what its leader took");
            assert!(st.written_lsn <= st.appended_lsn, "a group never covers an LSN not yet copied");
        }
        let end = if self.config.faults.flush_horizon_appended { st.appended_lsn } else { batch.end_lsn };
        let before = st.flushed_lsn;
        st.flushed_lsn = st.flushed_lsn.max(end);
        assert!(st.flushed_lsn >= before, "the flushed LSN never moves back");
        let now = now_ns();
        let g = &mut st.group;
        g.records_taken += batch.records;
        let taken_sum = u128::from(batch.records) * u128::from(started_ns);
        let returned_sum = u128::from(batch.records) * u128::from(now);
        g.append_to_flush_start_ns += u64::try_from(taken_sum.saturating_sub(batch.appended_ns_sum)).unwrap_or(0);
        g.append_to_flush_return_ns += u64::try_from(returned_sum.saturating_sub(batch.appended_ns_sum)).unwrap_or(0);
        g.records_waiting_at_end += st.append_times.len() as u64;
        st.flush_ns_recent =
            if st.flush_ns_recent == 0 { flush_ns } else { st.flush_ns_recent - st.flush_ns_recent / 8 + flush_ns / 8 };
        st.last_flush_end_ns = Some(now);
    }

    /// Wake the commits the flush made durable and decide who leads next: the leader again (returns
    /// true, `leader_extra_batches`), the commits it released once they are back (the rejoin wait), or
    /// whoever waits (the lead duty of the first woken commit, or one sleeping commit woken for it).
    fn release_covered(
        &self,
        st: &mut MutexGuard<'_, State>,
        keep_lead_past: Option<Lsn>,
        own_commit: Option<Lsn>,
    ) -> bool {
        let keep_lead = keep_lead_past.is_some_and(|own| st.flushed_lsn >= own) && st.appended_lsn > st.written_lsn;
        let (covered, mut waiting): (Vec<Waiter>, Vec<Waiter>) =
            std::mem::take(&mut st.waiters).into_iter().partition(|w| w.target <= st.flushed_lsn);
        let leader_released = own_commit.is_some_and(|t| t <= st.flushed_lsn);
        self.mark_released(st, &covered, leader_released);
        let rejoin = !keep_lead && self.config.group_commit && self.config.rejoin_wait_pct > 0 && st.released_away > 0;
        // Who leads the next flush: no sleeping thread is woken for it while this batch's commits are
        // being woken anyway. With the rejoin wait, the last released commit to come back leads; a
        // sleeping commit is woken only to hold the timer when some already wait. Otherwise the thread
        // returning from here usually comes back with its next commit within microseconds and leads;
        // failing that, the first woken commit does (its lead duty).
        let hand_off = !keep_lead && !waiting.is_empty();
        if !keep_lead {
            st.flush_in_progress = false;
            if rejoin {
                let wait_ns = st.flush_ns_recent / 100 * u64::from(self.config.rejoin_wait_pct);
                st.rejoin_deadline = Some(Instant::now() + std::time::Duration::from_nanos(wait_ns));
                st.rejoin_timer_held = false;
            }
            if hand_off && (covered.is_empty() || rejoin) {
                let first = waiting.remove(0);
                first.stamp(now_ns());
                first.wake();
                st.group.lead_hand_offs += 1;
                st.group.wakeups += 1;
            }
        }
        st.waiters = waiting;
        st.group.wakeups += covered.len() as u64;
        Waiter::wake_all(covered, hand_off && !rejoin); // every commit in this batch is done
        keep_lead
    }

    /// Tag the commits this flush released (a new epoch) so their next commits count as back.
    fn mark_released(&self, st: &mut State, covered: &[Waiter], leader_released: bool) {
        st.release_epoch += 1;
        let epoch = st.release_epoch;
        let tag = |slot: &WakeSlot| {
            slot.released_by.store(self.instance, Ordering::Relaxed);
            slot.released_epoch.store(epoch, Ordering::Relaxed);
        };
        let commits =
            covered.iter().filter(|w| w.commit).inspect(|w| tag(&w.slot)).count() + usize::from(leader_released);
        if leader_released {
            WAKE_SLOT.with(|slot| tag(slot));
        }
        st.released_away = commits as u32;
        st.group.count_group(commits);
    }

    /// Lead one flush for the commits still waiting if no flush has started since ours (the lead duty of
    /// the commit that relayed the wake-ups; see `lead_one_flush`).
    fn lead_if_nobody_has(&self, st: &mut MutexGuard<'_, State>) {
        if st.flush_in_progress || st.poisoned.is_some() || st.waiters.is_empty() {
            return;
        }
        st.flush_in_progress = true;
        st.group.lead_duty_flushes += 1;
        let limit = st.appended_lsn;
        self.lead_one_flush(st, limit, self.config.max_group_bytes, None, (None, None));
    }

    /// Sleep until a leader wakes us: our record is durable, the lead is ours, or the log is poisoned.
    /// Returns whether we were given the lead duty for the commits still waiting. With a `deadline` (the
    /// rejoin timer) it also returns, unwoken and no longer waiting, once the deadline has passed with
    /// no flush started: the caller then leads.
    fn wait_for_batch(
        &self,
        st: &mut MutexGuard<'_, State>,
        target: Lsn,
        commit: bool,
        deadline: Option<Instant>,
    ) -> bool {
        let slot = WAKE_SLOT.with(Arc::clone);
        slot.woken.store(false, Ordering::Relaxed);
        st.waiters.push(Waiter { target, commit, thread: std::thread::current(), slot: Arc::clone(&slot) });
        if st.delay_wants_waiters > 0 && queued_for_next_group(st) >= st.delay_wants_waiters {
            self.delay_wakeup.notify_one();
        }
        let mut deadline = deadline;
        slot.timed.store(deadline.is_some(), Ordering::Relaxed);
        while !MutexGuard::unlocked(st, || park_until(&slot, deadline)) {
            let now = Instant::now();
            let expired = !st.flush_in_progress && st.rejoin_deadline.is_some_and(|d| d <= now);
            if let Some(i) = st.waiters.iter().position(|w| expired && Arc::ptr_eq(&w.slot, &slot)) {
                st.waiters.remove(i);
                slot.timed.store(false, Ordering::Relaxed);
                return false;
            }
            // A flush started (or a leader took us): wait for its wake-up; or a new rejoin wait began.
            deadline = st.rejoin_deadline.filter(|d| !st.flush_in_progress && *d > now);
            slot.timed.store(deadline.is_some(), Ordering::Relaxed);
        }
        slot.timed.store(false, Ordering::Relaxed);
        st.group.count_wake(slot.woken_at_ns.load(Ordering::Relaxed));
        slot.lead_duty.swap(false, Ordering::Relaxed)
    }

    /// Seal the records from `written_lsn` up to `limit` (whole records, at most `cap` bytes unless one
    /// record is larger) and copy them out, block-aligned, for the leader to write.
    fn take_batch(&self, st: &mut State, limit: Lsn, cap: usize) -> Batch {
        let start = st.written_lsn;
        let mut end = start;
        while end < limit {
            let offset = end % self.segment_bytes;
            if self.segment_bytes - offset < HEADER_BYTES as u64 {
                end += self.segment_bytes - offset;
                continue;
            }
            let at = (end - st.buf_start_lsn) as usize;
            let len_field: [u8; 4] = st.buf[at + 32..at + 36].try_into().expect("4 bytes");
            let len = record::encoded_len(u32::from_le_bytes(len_field) as usize);
            if end > start && (end - start) as usize + len > cap {
                self.counters.batches_capped.fetch_add(1, Ordering::Relaxed);
                break;
            }
            record::seal(&mut st.buf[at..at + len], start);
            end += len as u64;
        }
        assert!(end <= st.appended_lsn, "a group never covers an LSN not yet copied");
        let (records, appended_ns_sum) = take_append_times(st, end);
        if end == start {
            let bytes = AlignedBuf::new(1, 1);
            return Batch { start_lsn: start, write_lsn: start, end_lsn: end, bytes, len: 0, records, appended_ns_sum };
        }
        let direct = self.config.sync_method.file_options().direct;
        let write_lsn = if direct { start / BLOCK_BYTES * BLOCK_BYTES } else { start };
        let len = (end - write_lsn) as usize;
        let padded = if direct { len.next_multiple_of(BLOCK_BYTES as usize) } else { len };
        let mut bytes = AlignedBuf::new(padded.max(1), BLOCK_BYTES as usize);
        let from = (write_lsn - st.buf_start_lsn) as usize;
        bytes.as_mut_slice()[..len].copy_from_slice(&st.buf[from..from + len]);
        st.written_lsn = end;
        // Keep the partial block at the end: direct I/O will write it again with the next records.
        let keep_from = end / BLOCK_BYTES * BLOCK_BYTES;
        st.buf.drain(..(keep_from - st.buf_start_lsn) as usize);
        st.buf_start_lsn = keep_from;
        Batch { start_lsn: start, write_lsn, end_lsn: end, bytes, len: padded, records, appended_ns_sum }
    }

    /// Write and sync a batch; returns how long that took, in nanoseconds.
    fn write_batch(&self, batch: &Batch, also_sync: Option<u64>) -> Result<u64, Failure> {
        let started = std::time::Instant::now();
        let mut segments = self.segments.lock();
        segments.close_below(batch.write_lsn / self.segment_bytes);
        let mut count = if batch.end_lsn > batch.start_lsn {
            segments.write_durably(batch.write_lsn, &batch.bytes.as_slice()[..batch.len])?
        } else {
            Default::default()
        };
        if let Some(n) = also_sync.filter(|_| count.writes == 0) {
            count.syncs += u64::from(segments.sync(n)?);
        }
        let c = &self.counters;
        c.flushes.fetch_add(1, Ordering::Relaxed);
        c.writes.fetch_add(count.writes, Ordering::Relaxed);
        c.syncs.fetch_add(count.syncs, Ordering::Relaxed);
        c.bytes_written.fetch_add(if count.writes > 0 { batch.len as u64 } else { 0 }, Ordering::Relaxed);
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        c.flush_ns_total.fetch_add(ns, Ordering::Relaxed);
        c.flush_ns_max.fetch_max(ns, Ordering::Relaxed);
        Ok(ns)
    }

    /// Zero `from..until` (valid-looking records of an interrupted flush) and fsync, before anything new
    /// is written there. The kept tail block goes first so direct I/O stays aligned.
    fn zero_stale_tail(&self, from: Lsn, until: Lsn) -> WalResult<()> {
        if until <= from {
            return Ok(());
        }
        let st = self.state.lock();
        let len = ((until - st.buf_start_lsn) as usize).next_multiple_of(BLOCK_BYTES as usize);
        let mut bytes = AlignedBuf::new(len, BLOCK_BYTES as usize);
        bytes.as_mut_slice()[..st.buf.len()].copy_from_slice(&st.buf);
        let mut segments = self.segments.lock();
        let io = |f: Failure| WalError::io(format!("cannot zero the torn tail of the log ({})", f.what), f.error);
        segments.write_durably(st.buf_start_lsn, bytes.as_slice()).map_err(io)?;
        // Durable whatever the method (even `none`): this is recovery, not a measured commit.
        segments.sync_all_open().map_err(io)
    }

    /// Create the segments ahead, and open the current one the way the sync method writes it, so an
    /// unusable method (O_DIRECT on a file system without it, no io_uring) fails `open`, not a commit.
    fn preallocate(&self, from: Lsn) -> WalResult<()> {
        let first = from / self.segment_bytes;
        let mut segments = self.segments.lock();
        for n in first..=first + u64::from(self.config.preallocate_segments) {
            segments.ensure_exists(n).map_err(|e| WalError::io("cannot create log segment", e))?;
        }
        segments.open_for_writing(first).map_err(|f| {
            WalError::io(
                format!("sync method {} is not usable here ({})", self.config.sync_method.name(), f.what),
                f.error,
            )
        })
    }
}

/// Append a record at `appended_lsn` into the buffer, unsealed.
fn put(st: &mut State, segment_bytes: u64, kind: u8, payload: &[u8], payload_crc: u32) {
    let len = record::encoded_len(payload.len());
    let at = st.buf.len();
    st.buf.resize(at + len, 0);
    let segment = st.appended_lsn / segment_bytes;
    record::write_unsealed(&mut st.buf[at..], st.appended_lsn, segment, kind, payload, payload_crc);
    st.appended_lsn += len as u64;
}

/// A flush takes its batch: count who is asleep, who is still on the way back, and the idle gap since the
/// last flush returned. Returns the start time (`now_ns`).
fn note_flush_start(st: &mut State) -> u64 {
    let now = now_ns();
    let g = &mut st.group;
    g.flushes += 1;
    g.sleepers_at_start += st.waiters.len() as u64;
    g.released_away_at_start += u64::from(st.released_away);
    if let Some(end) = st.last_flush_end_ns.take() {
        g.gap_ns += now.saturating_sub(end);
        g.gaps += 1;
    }
    now
}

/// Pop the append times of the records up to `end` (taken by a batch): their count and sum.
fn take_append_times(st: &mut State, end: Lsn) -> (u64, u128) {
    let (mut records, mut sum) = (0, 0u128);
    while let Some(&(lsn, at)) = st.append_times.front() {
        if lsn > end {
            break;
        }
        st.append_times.pop_front();
        records += 1;
        sum += u128::from(at);
    }
    (records, sum)
}

/// Released commits are still on their way back and the rejoin deadline has not passed.
fn rejoin_pending(st: &State) -> bool {
    st.released_away > 0 && st.rejoin_deadline.is_some_and(|d| Instant::now() < d)
}

/// A flush is about to start: the rejoin wait (if any) is over; count how it ended.
fn end_rejoin_wait(st: &mut State) {
    if let Some(deadline) = st.rejoin_deadline.take() {
        if st.released_away == 0 {
            st.group.rejoin_waits += 1;
            st.group.rejoins_complete += 1;
        } else if deadline <= Instant::now() {
            st.group.rejoin_waits += 1;
            st.group.rejoin_timeouts += 1;
        }
    }
    st.rejoin_timer_held = false;
}

/// Park until woken (then relay the wake-ups handed to us and return true) or until `deadline` (false).
fn park_until(slot: &WakeSlot, deadline: Option<Instant>) -> bool {
    loop {
        if slot.woken.load(Ordering::Acquire) {
            let relay = std::mem::take(&mut *slot.relay.lock());
            relay.into_iter().for_each(Waiter::wake);
            return true;
        }
        match deadline {
            None => std::thread::park(),
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => std::thread::park_timeout(left),
                _ => return false,
            },
        }
    }
}

/// Sleeping commits whose records no batch has taken yet: the next group.
fn queued_for_next_group(st: &State) -> u32 {
    st.waiters.iter().filter(|w| w.target > st.written_lsn).count() as u32
}

fn check_poison(st: &State) -> WalResult<()> {
    match &st.poisoned {
        Some((what, cause)) => Err(WalError::Poisoned { what, cause: cause.clone() }),
        None => Ok(()),
    }
}

fn check_target(st: &State, target: Lsn) -> WalResult<()> {
    if target > st.appended_lsn {
        return Err(WalError::Invalid(format!(
            "cannot flush to LSN {target}: only {} bytes were appended",
            st.appended_lsn
        )));
    }
    Ok(())
}

fn validate(config: &WalConfig) -> WalResult<()> {
    let min = 4 * BLOCK_BYTES;
    if config.segment_bytes < min || !config.segment_bytes.is_multiple_of(BLOCK_BYTES) {
        return Err(WalError::Invalid(format!(
            "segment size {} must be a multiple of {BLOCK_BYTES} and at least {min} bytes",
            config.segment_bytes
        )));
    }
    if config.max_group_bytes == 0 {
        return Err(WalError::Invalid("max_group_bytes must be at least 1".to_string()));
    }
    if !config.sync_method.supported_by_log() {
        let names: Vec<&str> = LOG_METHODS.iter().map(|m| m.name()).collect();
        return Err(WalError::Invalid(format!(
            "the log does not implement sync method {}; use one of {}",
            config.sync_method,
            names.join(", ")
        )));
    }
    Ok(())
}

/// Before trusting what recovery read, make it durable: a previous process may have died with those
/// bytes only in the page cache (PostgreSQL's SyncDataDirectory). Failure here is fatal.
fn make_durable_before_trusting<S: Storage>(
    segments: &Segments<S>,
    scan: &recovery::Scan,
    dir: &Path,
) -> WalResult<()> {
    use crate::storage::{FileOptions, StorageFile};
    let storage = segments.storage();
    for path in scan.files.values() {
        let what = || format!("cannot fsync log segment {}", path.display());
        let file = storage.open(path, FileOptions::default()).map_err(|e| WalError::io(what(), e))?;
        file.sync_all().map_err(|e| WalError::io(what(), e))?;
    }
    storage.sync_dir(dir).map_err(|e| WalError::io(format!("cannot fsync {}", dir.display()), e))
}
