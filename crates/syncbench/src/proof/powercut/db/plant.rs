//! The planted bug every driver carries, hidden behind an environment variable: a client that acknowledges
//! a transfer before the server has committed it. The tests run a few cuts with it and require the campaign
//! to report lost acknowledged transfers, so a campaign that could not see a lost ack would fail them.

use super::{Client, Transfer};

/// With this variable set to 1 every client acknowledges a transfer before its COMMIT has returned.
pub const PLANT_EARLY_ACK: &str = "SYNCBENCH_PLANT_EARLY_ACK";

/// Whether the planted early ack is switched on in this process.
pub fn early_ack_planted() -> bool {
    std::env::var(PLANT_EARLY_ACK).is_ok_and(|v| v == "1")
}

/// `client` as the driver's `connect` returns it: itself, or wrapped in [`EarlyAck`] when the plant is on.
pub fn maybe_early_ack(client: Box<dyn Client>) -> Box<dyn Client> {
    if early_ack_planted() { Box::new(EarlyAck { inner: client, pending: None }) } else { client }
}

/// The planted bug for a driver whose client blocks until the server answers (PostgreSQL, MariaDB, etcd):
/// each transfer is acknowledged at once and only run, to its COMMIT, at the start of the next call. So
/// the last acknowledged transfer of every client is, at the cut, either committing or not begun — the
/// same window as SQLite's plant, which prints the ack before BEGIN — and its loss must be reported.
pub struct EarlyAck {
    inner: Box<dyn Client>,
    /// Acknowledged, not yet sent to the server.
    pending: Option<Transfer>,
}

impl Client for EarlyAck {
    fn transfer(&mut self, transfer: &Transfer) -> anyhow::Result<bool> {
        if let Some(acked) = self.pending.take() {
            // Rolled back (Ok(false)) or failed: an acknowledged transfer is gone, which is the bug planted.
            self.inner.transfer(&acked)?;
        }
        self.pending = Some(*transfer);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Records what reached the "server".
    struct Recorder(Arc<Mutex<Vec<u64>>>);

    impl Client for Recorder {
        fn transfer(&mut self, t: &Transfer) -> anyhow::Result<bool> {
            self.0.lock().unwrap().push(t.id);
            Ok(true)
        }
    }

    #[test]
    fn each_transfer_is_acknowledged_before_it_reaches_the_server() {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let mut client = EarlyAck { inner: Box::new(Recorder(Arc::clone(&sent))), pending: None };
        let t = |id| Transfer { id, from: 0, to: 1, amount: 1 };
        assert!(client.transfer(&t(1)).unwrap());
        assert!(sent.lock().unwrap().is_empty(), "transfer 1 acknowledged only after it was sent");
        assert!(client.transfer(&t(2)).unwrap());
        assert_eq!(*sent.lock().unwrap(), vec![1], "transfer 2 acknowledged after it was sent");
    }
}
