//! What the crash test remembers outside the simulated disk: every record handed to the engine, which of
//! them were acknowledged durable, and whether an acknowledgement came after a failed sync.

use std::collections::{BTreeMap, BTreeSet};
use syncbench_simfs::SimFs;

/// Identifies one submitted unit (a log record, a transaction) across crashes.
pub type UnitId = u64;

/// The oracle's memory of one run.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Everything the workload handed to the engine, with its exact bytes.
    pub submitted: BTreeMap<UnitId, Vec<u8>>,
    /// Units the engine acknowledged as durable.
    pub acked: BTreeSet<UnitId>,
    /// Units acknowledged after a writeback had already failed (a fail-stop engine never does this).
    pub acked_after_error: Vec<UnitId>,
    /// Units the engine was allowed to discard (a checkpoint made them unnecessary for recovery).
    pub retired: BTreeSet<UnitId>,
    /// The first error the engine returned to the workload, if any.
    pub engine_error: Option<String>,
}

impl History {
    /// The workload is about to hand `id` to the engine.
    pub fn submit(&mut self, id: UnitId, bytes: Vec<u8>) {
        self.submitted.insert(id, bytes);
    }

    /// The engine acknowledged `id` as durable.
    pub fn ack(&mut self, id: UnitId, fs: &SimFs) {
        self.acked.insert(id);
        if fs.stats().writeback_errors > 0 {
            self.acked_after_error.push(id);
        }
        fs.after_ack();
    }

    /// A checkpoint made `ids` unnecessary: recovery may or may not still return them.
    pub fn retire(&mut self, ids: impl IntoIterator<Item = UnitId>) {
        self.retired.extend(ids);
    }

    /// The engine returned an error: the workload stops.
    pub fn engine_failed(&mut self, err: impl std::fmt::Display) {
        if self.engine_error.is_none() {
            self.engine_error = Some(err.to_string());
        }
    }

    /// Check recovered units against the history: every acknowledged unit is present with its exact bytes,
    /// and nothing appears that was never submitted (or with different bytes).
    pub fn check_units(&self, recovered: &BTreeMap<UnitId, Vec<u8>>) -> Result<(), String> {
        let required = self.acked.difference(&self.retired);
        if let Some(&id) = required.into_iter().find(|id| !recovered.contains_key(id)) {
            return Err(format!(
                "acknowledged unit {id} is missing after recovery ({} acknowledged)",
                self.acked.len()
            ));
        }
        for (id, bytes) in recovered {
            match self.submitted.get(id) {
                None => return Err(format!("unit {id} was never submitted but appears after recovery")),
                Some(sent) if sent != bytes => return Err(format!("unit {id} came back with different bytes")),
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Check the fail-stop rule: after a failed sync nothing is acknowledged.
    pub fn check_fail_stop(&self) -> Result<(), String> {
        match self.acked_after_error.first() {
            Some(id) => Err(format!("unit {id} was acknowledged after a sync had failed (the engine must stop)")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history() -> History {
        let mut h = History::default();
        let fs = SimFs::default();
        h.submit(1, b"a".to_vec());
        h.submit(2, b"b".to_vec());
        h.ack(1, &fs);
        h
    }

    #[test]
    fn a_missing_acknowledged_unit_fails() {
        let err = history().check_units(&BTreeMap::new()).unwrap_err();
        assert!(err.contains("acknowledged unit 1 is missing"), "{err}");
    }

    #[test]
    fn an_unacknowledged_unit_may_or_may_not_survive() {
        let h = history();
        let only_acked = BTreeMap::from([(1, b"a".to_vec())]);
        let both = BTreeMap::from([(1, b"a".to_vec()), (2, b"b".to_vec())]);
        assert!(h.check_units(&only_acked).is_ok());
        assert!(h.check_units(&both).is_ok());
    }

    #[test]
    fn a_retired_unit_may_be_gone() {
        let mut h = history();
        h.retire([1]);
        assert!(h.check_units(&BTreeMap::new()).is_ok());
    }

    #[test]
    fn phantoms_and_changed_bytes_fail() {
        let h = history();
        let phantom = BTreeMap::from([(1, b"a".to_vec()), (9, b"z".to_vec())]);
        assert!(h.check_units(&phantom).unwrap_err().contains("never submitted"));
        let changed = BTreeMap::from([(1, b"A".to_vec())]);
        assert!(h.check_units(&changed).unwrap_err().contains("different bytes"));
    }
}
