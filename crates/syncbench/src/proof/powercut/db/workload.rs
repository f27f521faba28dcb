//! The workload of `powercut db`: TPC-B-like transfers from a seed, driven by several client threads, each
//! acknowledging to the witness every transfer whose COMMIT the server answered, until the power goes.

use super::{Client, Transfer};
use crate::core::hash::splitmix64_next as splitmix64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Accounts by default: few enough that the clients contend for them (locks, group commit).
pub const DEFAULT_ACCOUNTS: u32 = 64;
/// Client threads by default.
pub const DEFAULT_CLIENTS: u32 = 8;
/// The largest amount one transfer moves.
const AMOUNT_MAX: i64 = 1000;

/// The id of the `seq`-th transfer of `client` in cut `cut` of cell `cell`: unique over a campaign of up to
/// 2^15 cells × 2^16 cuts × 2^8 clients × 2^24 transfers, and below 2^63 (SQL's signed 64-bit integers).
pub fn transfer_id(cell: u32, cut: u32, client: u32, seq: u32) -> u64 {
    (u64::from(cell & 0x7fff) << 48)
        | (u64::from(cut & 0xffff) << 32)
        | (u64::from(client & 0xff) << 24)
        | u64::from(seq & 0xff_ffff)
}

/// The transfers one client issues in one cut, from a seed.
#[derive(Clone, Debug)]
pub struct TransferSource {
    cell: u32,
    cut: u32,
    client: u32,
    seq: u32,
    rng: u64,
    accounts: u32,
}

impl TransferSource {
    /// Client `client`'s transfers in cut `cut` of cell `cell`, over `accounts` accounts.
    pub fn new(cell: u32, cut: u32, client: u32, accounts: u32, seed: u64) -> TransferSource {
        let mut rng = seed ^ transfer_id(cell, cut, client, 0);
        splitmix64(&mut rng);
        TransferSource { cell, cut, client, seq: 0, rng, accounts: accounts.max(1) }
    }
}

impl Iterator for TransferSource {
    type Item = Transfer;
    fn next(&mut self) -> Option<Transfer> {
        if self.seq > 0xff_ffff {
            return None;
        }
        let id = transfer_id(self.cell, self.cut, self.client, self.seq);
        self.seq += 1;
        let from = (splitmix64(&mut self.rng) % u64::from(self.accounts)) as u32;
        let to = (splitmix64(&mut self.rng) % u64::from(self.accounts)) as u32;
        let amount = 1 + (splitmix64(&mut self.rng) % AMOUNT_MAX as u64) as i64;
        Some(Transfer { id, from, to, amount })
    }
}

/// The witness of one cut: the ids acknowledged, in memory, refused from the instant the power is cut.
#[derive(Clone, Default)]
pub struct AckWitness(Arc<Mutex<(Vec<u64>, bool)>>);

impl AckWitness {
    /// Record `id` as acknowledged; `false` (and nothing recorded) once the power is off.
    pub fn ack(&self, id: u64) -> bool {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if guard.1 {
            return false;
        }
        guard.0.push(id);
        true
    }
    /// The power went: refuse every later ack.
    pub fn power_off(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
    }
    /// The acknowledged ids, in the order they came.
    pub fn acks(&self) -> Vec<u64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).0.clone()
    }
}

/// How one client's load ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientEnd {
    /// Transfers rolled back by the server (busy, serialization, deadlock) and not acknowledged.
    pub rolled_back: u64,
    /// The error that ended it while the power was still on (the server failed under load), if any.
    pub error_before_cut: Option<String>,
}

/// Drive `client` with `source` until the witness refuses an ack (the power went), `stop` is set, or the
/// client fails. Every transfer is recorded in `issued` before it is sent, so a transfer that reached the
/// disk without its ack is still known as ours.
pub fn drive(
    client: &mut dyn Client,
    source: TransferSource,
    witness: &AckWitness,
    issued: &Mutex<Vec<Transfer>>,
    stop: &AtomicBool,
) -> ClientEnd {
    let mut end = ClientEnd::default();
    for transfer in source {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        issued.lock().unwrap_or_else(|p| p.into_inner()).push(transfer);
        match client.transfer(&transfer) {
            Ok(true) => {
                if !witness.ack(transfer.id) {
                    break;
                }
            }
            Ok(false) => end.rolled_back += 1,
            Err(e) => {
                // After the cut every client fails (its server was killed); only a failure while the
                // power was on is news.
                if witness.ack_refused_now() {
                    break;
                }
                end.error_before_cut = Some(format!("{e:#}"));
                break;
            }
        }
    }
    end
}

impl AckWitness {
    /// Whether the power is off now.
    fn ack_refused_now(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_over_cells_cuts_clients_and_sequence_and_fit_in_a_signed_integer() {
        let mut seen = HashSet::new();
        for cell in [0, 1, 0x7fff] {
            for cut in [0, 1, 0xffff] {
                for client in [0, 7, 255] {
                    for t in TransferSource::new(cell, cut, client, 64, 9).take(3) {
                        assert!(seen.insert(t.id), "{t:?}");
                        assert!(t.id < 1 << 63);
                    }
                }
            }
        }
    }

    #[test]
    fn transfers_stay_in_range_and_repeat_from_the_seed() {
        let a: Vec<Transfer> = TransferSource::new(2, 3, 1, 5, 77).take(200).collect();
        let b: Vec<Transfer> = TransferSource::new(2, 3, 1, 5, 77).take(200).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|t| t.from < 5 && t.to < 5 && (1..=AMOUNT_MAX).contains(&t.amount)));
        let c: Vec<Transfer> = TransferSource::new(2, 3, 1, 5, 78).take(200).collect();
        assert_ne!(a, c);
    }

    /// A client that acknowledges everything, and fails at its `fail_at`-th transfer.
    struct Fake {
        calls: u32,
        fail_at: u32,
    }
    impl Client for Fake {
        fn transfer(&mut self, _t: &Transfer) -> anyhow::Result<bool> {
            self.calls += 1;
            if self.calls == self.fail_at {
                anyhow::bail!("server gone");
            }
            Ok(!self.calls.is_multiple_of(5))
        }
    }

    #[test]
    fn a_client_stops_at_the_refused_ack_and_reports_a_failure_only_while_the_power_was_on() {
        let (witness, issued, stop) = (AckWitness::default(), Mutex::new(Vec::new()), AtomicBool::new(false));
        let end =
            drive(&mut Fake { calls: 0, fail_at: 12 }, TransferSource::new(0, 0, 0, 8, 1), &witness, &issued, &stop);
        assert_eq!(end.rolled_back, 2);
        assert_eq!(end.error_before_cut.as_deref(), Some("server gone"));
        assert_eq!(witness.acks().len(), 9);
        assert_eq!(issued.lock().unwrap().len(), 12);

        witness.power_off();
        let end =
            drive(&mut Fake { calls: 0, fail_at: 3 }, TransferSource::new(0, 1, 0, 8, 1), &witness, &issued, &stop);
        assert_eq!(end.error_before_cut, None);
        assert_eq!(witness.acks().len(), 9, "no ack after the power went");
    }
}
