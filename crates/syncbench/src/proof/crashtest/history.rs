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
    /// Units a completed recovery returned: durable from then on, whether or not they were acknowledged.
    pub recovered: BTreeSet<UnitId>,
    /// Units a completed recovery did not return (never acknowledged): they must never come back.
    pub lost: BTreeSet<UnitId>,
    /// Highest log position acknowledged durable in the current generation (media damage stays below it).
    pub acked_lsn_max: u64,
    /// Writeback errors the file system had already counted when this generation began.
    pub errors_at_start: u64,
}

impl History {
    /// The workload is about to hand `id` to the engine.
    pub fn submit(&mut self, id: UnitId, bytes: Vec<u8>) {
        self.submitted.insert(id, bytes);
    }

    /// The engine acknowledged `id` as durable.
    pub fn ack(&mut self, id: UnitId, fs: &SimFs) {
        self.acked.insert(id);
        if fs.stats().writeback_errors > self.errors_at_start {
            self.acked_after_error.push(id);
        }
        fs.after_ack();
    }

    /// The engine acknowledged `id` as durable in a commit that began when `errors_before` writebacks
    /// had already failed (a concurrent commit: only an error seen before it started may be held
    /// against it).
    pub fn ack_started_after(&mut self, id: UnitId, errors_before: u64, fs: &SimFs) {
        self.acked.insert(id);
        if errors_before > self.errors_at_start {
            self.acked_after_error.push(id);
        }
        fs.after_ack();
    }

    /// The next unit id to submit (ids are never reused across generations).
    pub fn next_id(&self) -> UnitId {
        self.submitted.keys().next_back().map_or(0, |last| last + 1)
    }

    /// A recovery completed and returned `units`: from now on they are required (unless a checkpoint
    /// retires them), and every other submitted unit is lost for good.
    pub fn settle(&mut self, units: &BTreeSet<UnitId>) {
        self.recovered.extend(units.iter().copied());
        let lost: Vec<UnitId> =
            self.submitted.keys().filter(|id| !units.contains(id) && !self.retired.contains(id)).copied().collect();
        self.lost.extend(lost);
        self.acked_lsn_max = 0;
    }

    /// Units whose ids a recovery gave back to the engine (a bank reuses the transaction ids of lost
    /// transfers): forget everything about ids above `last`.
    pub fn forget_above(&mut self, last: UnitId) {
        self.submitted.retain(|id, _| *id <= last);
        self.acked.retain(|id| *id <= last);
        self.recovered.retain(|id| *id <= last);
        self.lost.retain(|id| *id <= last);
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
        let returned_before = self.recovered.difference(&self.retired);
        if let Some(&id) = returned_before.into_iter().find(|id| !recovered.contains_key(id)) {
            return Err(format!("unit {id}, returned by an earlier recovery, is missing after a later one"));
        }
        if let Some(id) = recovered.keys().find(|id| self.lost.contains(id)) {
            return Err(format!(
                "unit {id} was lost by an earlier recovery but came back after a later crash (a stale log tail)"
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
