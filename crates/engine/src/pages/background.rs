//! The store's background threads: the flusher, the checkpointer and, in the `pipelined` double-write
//! design, the spooler and the ring's sync thread; and the steps those two take, public so tests and
//! crashtest can drive them one at a time.

use super::dw_pipelined::{DwPipelined, Pick};
use super::error::PageResult;
use super::store::PageStore;
use crate::storage::Storage;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

impl<S: Storage + Clone + 'static> PageStore<S> {
    /// `pipelined`: spool one batch of dirty pages the clock is coming to (unreferenced ones on the line of
    /// next evictions, in clock order from the hand) that have no current copy in the ring, into the next
    /// ring position, without syncing; [`PageStore::dw_sync_ring`] makes it durable. Returns the batch's
    /// sequence number, or `None` when there is nothing to spool, the store is not `pipelined`, or the
    /// ring position's previous batch is not yet durable (several batches in flight, never more than the
    /// ring holds).
    pub fn dw_spool(&self) -> PageResult<Option<u64>> {
        match self.protection.pipelined() {
            Some(p) => p.spool_step(self, Pick::FullBatch),
            None => Ok(None),
        }
    }

    /// `pipelined`: sync the double-write area, making every ring batch up to `seq` durable (all batches
    /// written before this call: the spooler hands them over in order).
    pub fn dw_sync_ring(&self, seq: u64) -> PageResult<()> {
        match self.protection.pipelined() {
            Some(p) => p.sync_ring(self, seq),
            None => Ok(()),
        }
    }
}

/// The flusher and checkpointer threads of a running store; stopped (and joined) on drop.
pub struct Background {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl<S: Storage + Clone + 'static> PageStore<S> {
    /// Start the background flusher (every few ms) and a checkpoint every `checkpoint_every`.
    /// A failure in either poisons the store; clients see it on their next call.
    pub fn start_background(self: &Arc<Self>, checkpoint_every: Duration) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let flusher = {
            let (store, stop) = (self.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match store.flush_ahead() {
                        Ok(0) => std::thread::sleep(Duration::from_millis(2)),
                        Ok(_) => {}
                        Err(_) => return,
                    }
                }
            })
        };
        let checkpointer = {
            let (store, stop) = (self.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                    if last.elapsed() >= checkpoint_every {
                        if store.checkpoint().is_err() {
                            return;
                        }
                        last = Instant::now();
                    }
                }
            })
        };
        let mut threads = vec![flusher, checkpointer];
        if self.protection.pipelined().is_some() {
            threads.extend(DwPipelined::start_threads(self, &stop, pipelined::<S>));
        }
        Background { stop, threads }
    }
}

/// The ring of a `pipelined` store, for its threads.
fn pipelined<S: Storage + Clone + 'static>(store: &PageStore<S>) -> &DwPipelined<S::File> {
    store.protection.pipelined().expect("pipelined")
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
