//! Concurrent clients, deterministically. The workload runs on one thread; other clients' work is
//! injected while a storage operation is in flight (through simfs's operation hook), at moments the seed
//! chooses: an append while a group-commit flush is writing, a transaction submitted while a checkpoint
//! writes pages, and commits on real threads that find a flush in progress and go to sleep in the log's
//! group commit. Only one thread ever runs engine code at a time: after starting a committer, and after
//! every call of the workload, the harness waits until each committer has either returned or is asleep
//! in the log (the log's count of waiting commits says so), so a committer woken to lead the next
//! flush does its I/O while everyone else waits. Every run is a pure function of its seed.

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
        let job: Job = Box::new(move || {
            let result = commit();
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
