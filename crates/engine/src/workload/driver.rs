//! The driver: client threads running transfers for a time or a count, with a background flusher and
//! periodic checkpoints, timing each commit and reporting each acknowledged transaction.

use super::Bank;
use crate::storage::Storage;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct RunSpec {
    /// Client threads.
    pub clients: usize,
    /// Stop after this long (if set).
    pub duration: Option<Duration>,
    /// Stop after this many transactions in total (if set).
    pub max_txns: Option<u64>,
    /// Checkpoint interval.
    pub checkpoint_every: Duration,
    /// Seed of the transfer choices.
    pub seed: u64,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// Acknowledged (durable) transactions.
    pub acknowledged: u64,
    /// Highest transaction id handed out (acknowledged or not).
    pub max_submitted_txn_id: u64,
    /// Commit latencies (submit + durable), nanoseconds, sorted: raw, so the caller summarises them with
    /// the same summary as every other measurement (syncbench's `stats::Samples`).
    pub latencies_ns: Vec<u64>,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The first error a client hit (the store is then poisoned and the run stops).
    pub error: Option<String>,
}

/// splitmix64: a small deterministic generator, one per client.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl<S: Storage + Clone + 'static> Bank<S> {
    /// Run transfers from `spec.clients` threads; `on_ack(txn_id)` is called once per transaction
    /// after it is durable. Stops at the first error (reported, not panicked).
    pub fn run(&self, spec: RunSpec, on_ack: &(dyn Fn(u64) + Sync)) -> RunReport {
        let background = self.store().start_background(spec.checkpoint_every);
        let stop = AtomicBool::new(false);
        let started_txns = AtomicU64::new(0);
        let first_error = std::sync::Mutex::new(None::<String>);
        let start = Instant::now();
        let per_client: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..spec.clients.max(1))
                .map(|client| {
                    let (stop, started_txns, first_error) = (&stop, &started_txns, &first_error);
                    scope.spawn(move || {
                        let mut rng = spec.seed ^ (client as u64).wrapping_mul(0xA24B_AED4_963E_E407);
                        let mut latencies = Vec::new();
                        while !stop.load(Ordering::Relaxed) {
                            if spec.duration.is_some_and(|d| start.elapsed() >= d)
                                || spec.max_txns.is_some_and(|m| started_txns.fetch_add(1, Ordering::Relaxed) >= m)
                            {
                                break;
                            }
                            let t0 = Instant::now();
                            match self.one_transfer(&mut rng) {
                                Ok(txn_id) => {
                                    latencies.push(t0.elapsed().as_nanos() as u64);
                                    on_ack(txn_id);
                                }
                                Err(e) => {
                                    first_error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e.to_string());
                                    stop.store(true, Ordering::Relaxed);
                                }
                            }
                        }
                        latencies
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("client thread panicked")).collect()
        });
        let elapsed = start.elapsed();
        drop(background);
        let mut latencies_ns: Vec<u64> = per_client.into_iter().flatten().collect();
        latencies_ns.sort_unstable();
        RunReport {
            acknowledged: latencies_ns.len() as u64,
            max_submitted_txn_id: self.txn_next.load(Ordering::Relaxed).saturating_sub(1),
            latencies_ns,
            elapsed,
            error: first_error.into_inner().unwrap_or_else(|p| p.into_inner()),
        }
    }

    fn one_transfer(&self, rng: &mut u64) -> crate::pages::PageResult<u64> {
        let transfer = self.pick(|| splitmix(rng));
        let (txn_id, lsn) = self.submit(transfer)?;
        self.commit(lsn)?;
        Ok(txn_id)
    }
}
