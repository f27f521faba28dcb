//! Concurrent clients, deterministically. The workload runs on one thread; other clients' work is
//! injected while a storage operation is in flight (through simfs's operation hook), at moments the seed
//! chooses: an append while a group-commit flush is writing, a transaction submitted while a checkpoint
//! writes pages, and commits on real threads that find a flush in progress and go to sleep in the log's
//! group commit. Only one thread ever runs engine code at a time, so the schedule is the seed's alone:
//! after starting a committer, after every call of the workload, and before an injection decides
//! anything, the harness waits until every other committer has either returned or is asleep in the log
//! (the log's count of waiting commits says so). A flush's wake-ups release several threads at once; the
//! one woken to lead the next flush does its I/O, and its first storage operation waits there until the
//! others have returned, so what an injection sees (how many committers still run, what the log holds)
//! never depends on how the OS scheduled them. The log's rejoin wait, whose deadline is wall-clock time,
//! is off in the crash scenarios for the same reason (the engine's own threaded tests cover it).

use super::history::UnitId;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use syncbench_simfs::SimFs;

/// A commit that returned: its unit, its result, and the writeback errors seen before it started.
pub struct Completion {
    /// The unit committed.
    pub id: UnitId,
    /// What `commit` returned.
    pub result: Result<(), String>,
    /// Writeback errors already hit when the commit began.
    pub errors_before: u64,
}

type Job = Box<dyn FnOnce() + Send>;

/// Committers running on their own threads (a small pool, started on first use). Clones share them (the
/// operation hook starts committers while the workload waits for others).
#[derive(Clone, Default)]
pub struct Committers {
    pool: Arc<Mutex<Pool>>,
    started: Arc<AtomicU64>,
    finished: Arc<AtomicU64>,
    completions: Arc<Mutex<Vec<Completion>>>,
    overlapped_flush: Arc<AtomicU64>,
    jitter: Jitter,
}

#[derive(Default)]
struct Pool {
    jobs: Option<std::sync::mpsc::Sender<Job>>,
    receiver: Option<Arc<Mutex<std::sync::mpsc::Receiver<Job>>>>,
    threads: Vec<JoinHandle<()>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

thread_local! {
    /// Set on a pool thread while it runs a committer's commit.
    static IN_COMMITTER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Committers created on this thread get a `Jitter` (tests).
    static JITTER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Tests only: committers and injections that pause at random moments, from a source the seed does not
/// control, to show that how the OS schedules the threads cannot change a run.
#[derive(Clone, Copy)]
struct Jitter(bool);

impl Default for Jitter {
    fn default() -> Jitter {
        Jitter(JITTER.with(std::cell::Cell::get))
    }
}

impl Jitter {
    /// Half the time nothing, else a yield or a sleep of up to 100 µs.
    fn pause(self) {
        use std::hash::{BuildHasher, Hasher};
        if !self.0 {
            return;
        }
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(std::time::SystemTime::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos()));
        let r = h.finish();
        match r % 4 {
            0 | 1 => {}
            2 => std::thread::yield_now(),
            _ => std::thread::sleep(std::time::Duration::from_micros((r >> 8) % 100)),
        }
    }
}

/// Committers created on the calling thread from now on pause at random moments (see `Jitter`).
#[cfg(test)]
pub fn jitter_schedules_on_this_thread() {
    JITTER.with(|j| j.set(true));
}

impl Committers {
    /// Start `commit` on a pool thread and wait until it returned or sleeps in the log (`waiting` is the
    /// log's count of sleeping commits). A new thread joins the pool when every one is busy.
    pub fn spawn(
        &self,
        id: UnitId,
        fs: &SimFs,
        commit: impl FnOnce() -> Result<(), String> + Send + 'static,
        waiting: &dyn Fn() -> usize,
    ) {
        let (finished, completions) = (Arc::clone(&self.finished), Arc::clone(&self.completions));
        let errors_before = fs.stats().writeback_errors;
        let asleep_before = waiting();
        let returned = Arc::new(AtomicBool::new(false));
        let busy = self.running();
        self.started.fetch_add(1, Ordering::SeqCst);
        let done = Arc::clone(&returned);
        let jitter = self.jitter;
        let job: Job = Box::new(move || {
            IN_COMMITTER.with(|c| c.set(true));
            jitter.pause();
            let result = commit();
            jitter.pause();
            IN_COMMITTER.with(|c| c.set(false));
            lock(&completions).push(Completion { id, result, errors_before });
            done.store(true, Ordering::SeqCst);
            finished.fetch_add(1, Ordering::SeqCst);
        });
        {
            let mut pool = lock(&self.pool);
            if pool.jobs.is_none() {
                let (tx, rx) = std::sync::mpsc::channel::<Job>();
                pool.jobs = Some(tx);
                pool.receiver = Some(Arc::new(Mutex::new(rx)));
            }
            // Every committer asleep or running holds a thread: add one when none is idle.
            if pool.threads.len() as u64 <= busy {
                let rx = Arc::clone(pool.receiver.as_ref().expect("set above"));
                pool.threads.push(std::thread::spawn(move || {
                    loop {
                        let next = lock(&rx).recv();
                        match next {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                }));
            }
            let _ = pool.jobs.as_ref().expect("set above").send(job);
        }
        // The caller may itself be a committer leading a flush: wait for the new commit alone. Nobody
        // else can fall asleep or wake meanwhile (the caller's flush is in progress).
        loop {
            if returned.load(Ordering::SeqCst) {
                break;
            }
            if waiting() > asleep_before {
                self.overlapped_flush.fetch_add(1, Ordering::SeqCst);
                break;
            }
            std::thread::yield_now();
        }
    }

    /// Wait until every committer has returned or sleeps in the log.
    pub fn quiesce(&self, waiting: &dyn Fn() -> usize) {
        while self.finished.load(Ordering::SeqCst) + (waiting() as u64) < self.started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }

    /// Wait until every committer but the calling thread (when it is one) has returned or sleeps in the
    /// log: called before an injection decides anything, from the thread doing a storage operation.
    pub fn quiesce_others(&self, waiting: &dyn Fn() -> usize) {
        self.jitter.pause();
        let me = u64::from(IN_COMMITTER.with(std::cell::Cell::get));
        while self.running() > me
            && self.finished.load(Ordering::SeqCst) + (waiting() as u64) + me < self.started.load(Ordering::SeqCst)
        {
            std::thread::yield_now();
        }
    }

    /// The commits that returned since the last call, in unit order (a deterministic order to record
    /// them in, whatever order the threads finished in).
    pub fn take_completions(&self) -> Vec<Completion> {
        let mut done = std::mem::take(&mut *lock(&self.completions));
        done.sort_by_key(|c| c.id);
        done
    }

    /// Wait for every committer to return (the caller has made sure a flush covers them or the log is
    /// dead) and stop the pool.
    pub fn join_all(&self) {
        let (jobs, threads) = {
            let mut pool = lock(&self.pool);
            pool.receiver = None;
            (pool.jobs.take(), std::mem::take(&mut pool.threads))
        };
        drop(jobs);
        for t in threads {
            let _ = t.join();
        }
    }

    /// Commits so far that found a flush in progress and slept.
    pub fn overlapped_flush(&self) -> u64 {
        self.overlapped_flush.load(Ordering::SeqCst)
    }

    /// Committers started and not yet returned.
    pub fn running(&self) -> u64 {
        self.started.load(Ordering::SeqCst) - self.finished.load(Ordering::SeqCst)
    }
}

/// Set while injected work runs, so that its own storage operations inject nothing more.
#[derive(Default)]
pub struct Injecting(AtomicBool);

impl Injecting {
    /// Run `f` unless an injection is already running.
    pub fn run(&self, f: impl FnOnce()) {
        if self.0.swap(true, Ordering::SeqCst) {
            return;
        }
        f();
        self.0.store(false, Ordering::SeqCst);
    }
}
