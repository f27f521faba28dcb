//! The write-ahead log under crashes: several clients append and commit records; while a flush is
//! writing, other clients append and commit on their own threads (deterministically: see `clients`),
//! the log retires old segments at checkpoints, and after every crash recovery must return every
//! acknowledged record (and everything an earlier recovery returned), byte for byte, in order, with no
//! hole but the records earlier crashes lost, and nothing that was never appended or that was lost.

use super::Scenario;
use super::clients::{Committers, Injecting};
use super::coverage::Coverage;
use super::damage::Target;
use super::history::{History, UnitId};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use syncbench_engine::wal::{FaultSwitches, Lsn, SyncMethod, Wal, WalConfig, segment_file_name};
use syncbench_simfs::{OpKind, SimFs, SimRng};

const DIR: &str = "/db/wal";
const KIND_CLIENT: u8 = 1;
/// Small segments so a short run creates, fills, recycles and removes several of them.
const SEGMENT_BYTES: u64 = 16384;
/// A leader writes at most this much per flush, so one commit's flush often leaves records for the next
/// (flush horizons matter).
const MAX_GROUP_BYTES: usize = 2048;
/// Media damage stays this far below the last acknowledged record, so a later flush's records follow
/// it on disk (a damaged record with only its own batch behind it looks like a torn tail to any log).
pub const DAMAGE_MARGIN_BYTES: u64 = 8192;

/// The methods crashed, one per variant (`none` is not durable by design and is left out).
const METHODS: [SyncMethod; 6] = [
    SyncMethod::Fdatasync,
    SyncMethod::Fsync,
    SyncMethod::OpenDatasync,
    SyncMethod::OpenDatasyncDirect,
    SyncMethod::Pwritev2Dsync,
    SyncMethod::IoUringFdatasync,
];

/// The WAL crash scenario.
#[derive(Clone, Debug)]
pub struct WalScenario {
    /// Rounds of commits per generation.
    pub rounds: u32,
    /// Simulated clients.
    pub clients: u32,
    /// Rounds between checkpoints (each retires the log before a redo point).
    pub checkpoint_every_rounds: u32,
    /// The redo point trails the last commit by this many commits.
    pub redo_lag_commits: usize,
    /// Whether other clients append and commit while a flush is in flight.
    pub concurrent: bool,
    /// Whether, after the engine failed, the other clients go on appending and committing (each must be
    /// refused).
    pub clients_after_failure: bool,
    /// Size of the log's segments (small, so that runs cross segment ends often).
    pub segment_bytes: u64,
    /// Deliberate bugs.
    pub faults: FaultSwitches,
}

/// What one generation's clients share with the operation hook.
struct Shared {
    rng: SimRng,
    next_id: UnitId,
    /// Appended, not yet committed by anyone: (unit, end LSN).
    pending: Vec<(UnitId, Lsn)>,
    /// Every append: (unit, payload), for the history.
    submitted: Vec<(UnitId, Vec<u8>)>,
    lsn_of: BTreeMap<UnitId, Lsn>,
    appends_during_flush: u64,
    error: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl WalScenario {
    /// The scale used by the CLI and CI: 24 rounds of up to 4 clients per generation.
    pub fn new(faults: FaultSwitches) -> WalScenario {
        WalScenario {
            rounds: 24,
            clients: 4,
            checkpoint_every_rounds: 8,
            redo_lag_commits: 6,
            concurrent: true,
            clients_after_failure: true,
            segment_bytes: SEGMENT_BYTES,
            faults,
        }
    }

    fn config(&self, variant: usize) -> WalConfig {
        WalConfig {
            sync_method: METHODS[variant],
            segment_bytes: self.segment_bytes,
            preallocate_segments: 1,
            max_spare_segments: 1,
            group_commit: true,
            max_group_bytes: MAX_GROUP_BYTES,
            // The rejoin wait's deadline is wall-clock time: off, so that a seed fixes the schedule.
            rejoin_wait_pct: 0,
            faults: self.faults,
            ..WalConfig::default()
        }
    }

    /// The hook: while the log writes or syncs (a flush is in progress), another client may append a
    /// record, and another may commit a pending one on its own thread (it sleeps in the group commit).
    fn hook(
        &self,
        wal: &Arc<Wal<SimFs>>,
        fs: &SimFs,
        shared: &Arc<Mutex<Shared>>,
        committers: &Committers,
    ) -> syncbench_simfs::OpHook {
        let (wal, fs, shared, committers) = (Arc::clone(wal), fs.clone(), Arc::clone(shared), committers.clone());
        let injecting = Arc::new(Injecting::default());
        let clients = u64::from(self.clients);
        Arc::new(move |kind: OpKind, path: &Path| {
            if !matches!(kind, OpKind::Write | OpKind::Sync) || !path.starts_with(DIR) {
                return;
            }
            injecting.run(|| {
                committers.quiesce_others(&|| wal.waiting_commits());
                let mut sh = lock(&shared);
                if sh.rng.chance(1, 3) {
                    let id = sh.next_id;
                    let payload = client_payload(id, &mut sh.rng);
                    match wal.append(KIND_CLIENT, &payload) {
                        Ok(lsn) => {
                            sh.next_id += 1;
                            sh.submitted.push((id, payload));
                            sh.pending.push((id, lsn));
                            sh.lsn_of.insert(id, lsn);
                            sh.appends_during_flush += 1;
                        }
                        Err(e) => {
                            sh.error.get_or_insert(e.to_string());
                        }
                    }
                }
                if !sh.pending.is_empty() && committers.running() < clients && sh.rng.chance(1, 2) {
                    let n = sh.pending.len() as u64;
                    let pick = sh.rng.below(n) as usize;
                    let (id, lsn) = sh.pending.remove(pick);
                    drop(sh);
                    let w = Arc::clone(&wal);
                    let waiting = || wal.waiting_commits();
                    committers.spawn(id, &fs, move || w.commit(lsn).map_err(|e| e.to_string()), &waiting);
                }
            });
        })
    }

    fn run_inner(
        &self,
        variant: usize,
        fs: &SimFs,
        history: &mut History,
        seed: u64,
        coverage: &mut Coverage,
    ) -> Result<(), String> {
        let (wal, _) = Wal::open(fs.clone(), Path::new(DIR), self.config(variant)).map_err(|e| e.to_string())?;
        let wal = Arc::new(wal);
        let opened = wal.stats();
        let shared = Arc::new(Mutex::new(Shared {
            rng: SimRng::new(seed ^ 0x5EED),
            next_id: history.next_id(),
            pending: Vec::new(),
            submitted: Vec::new(),
            lsn_of: BTreeMap::new(),
            appends_during_flush: 0,
            error: None,
        }));
        let committers = Committers::default();
        if self.concurrent {
            fs.set_op_hook(Some(self.hook(&wal, fs, &shared, &committers)));
        }
        let result = self.rounds(&wal, fs, history, seed, &shared, &committers);
        fs.set_op_hook(None);
        // Sleeping committers are woken by the last flush or by the log's poisoning: wait for them.
        let _ = wal.flush_to(wal.appended_lsn());
        committers.join_all();
        let mut sh = lock(&shared);
        for (id, payload) in std::mem::take(&mut sh.submitted) {
            history.submit(id, payload);
        }
        let lsn_of = sh.lsn_of.clone();
        record_completions(&committers, &lsn_of, history, fs);
        coverage.appends_during_flush += sh.appends_during_flush;
        coverage.commits_overlapping_flush += committers.overlapped_flush();
        coverage.add_log_boundaries(wal.stats().boundaries(), opened.boundaries());
        let result = result.and(sh.error.take().map_or(Ok(()), Err));
        if result.is_err() && self.clients_after_failure && !fs.crashed() {
            self.keep_committing(&wal, fs, history, coverage);
        }
        result
    }

    /// After the engine failed, every client goes on as a database's other backends would: appends a
    /// record and commits it. Each must be refused; an acknowledgement counts as one after the failure,
    /// which `History::check_fail_stop` rejects.
    fn keep_committing(&self, wal: &Wal<SimFs>, fs: &SimFs, history: &mut History, coverage: &mut Coverage) {
        for _ in 0..self.clients {
            let id = history.next_id();
            let payload = client_payload(id, &mut SimRng::new(id));
            let errors_before = fs.stats().writeback_errors;
            let acked = wal.append(KIND_CLIENT, &payload).is_ok_and(|lsn| {
                history.submit(id, payload);
                wal.commit(lsn).is_ok()
            });
            match acked {
                true => history.ack_started_after(id, errors_before, fs),
                false => coverage.commits_refused_after_failure += 1,
            }
        }
    }

    fn rounds(
        &self,
        wal: &Arc<Wal<SimFs>>,
        fs: &SimFs,
        history: &mut History,
        seed: u64,
        shared: &Arc<Mutex<Shared>>,
        committers: &Committers,
    ) -> Result<(), String> {
        let mut rng = SimRng::new(seed);
        let mut committed: Vec<(UnitId, Lsn)> = Vec::new();
        let waiting = || wal.waiting_commits();
        for round in 0..self.rounds {
            // Up to `clients` clients append one record each, then each waits for its commit: the first
            // commit leads a group that makes the others durable too.
            for _ in 0..1 + rng.below(u64::from(self.clients)) {
                let mut sh = lock(shared);
                let id = sh.next_id;
                let payload = client_payload(id, &mut rng);
                let lsn = wal.append(KIND_CLIENT, &payload).map_err(|e| e.to_string())?;
                sh.next_id += 1;
                sh.submitted.push((id, payload));
                sh.pending.push((id, lsn));
                sh.lsn_of.insert(id, lsn);
            }
            loop {
                let Some((id, lsn)) = lock(shared).pending.first().copied() else { break };
                lock(shared).pending.retain(|p| p.0 != id);
                let errors_before = fs.stats().writeback_errors;
                let result = wal.commit(lsn);
                committers.quiesce(&waiting);
                let lsn_of = lock(shared).lsn_of.clone();
                committed.extend(record_completions(committers, &lsn_of, history, fs));
                result.map_err(|e| e.to_string())?;
                history.ack_started_after(id, errors_before, fs);
                history.acked_lsn_max = history.acked_lsn_max.max(lsn);
                committed.push((id, lsn));
            }
            if round % self.checkpoint_every_rounds == self.checkpoint_every_rounds - 1 {
                committed.sort_unstable();
                self.checkpoint(wal, fs, history, &committed)?;
            }
        }
        Ok(())
    }

    /// Retire the log before the record committed a few groups ago (a checkpoint's redo LSN).
    fn checkpoint(
        &self,
        wal: &Wal<SimFs>,
        fs: &SimFs,
        history: &mut History,
        committed: &[(UnitId, Lsn)],
    ) -> Result<(), String> {
        let Some(&(_, redo_lsn)) = committed.get(committed.len().saturating_sub(self.redo_lag_commits)) else {
            return Ok(());
        };
        fs.mark("checkpoint");
        // Records ending at or before the redo LSN are no longer needed by recovery: every record before
        // it, from this generation or an earlier one.
        let retired: Vec<UnitId> = committed.iter().filter(|(_, lsn)| *lsn <= redo_lsn).map(|(id, _)| *id).collect();
        if let Some(&newest) = retired.iter().max() {
            history.retire(history.recovered.iter().copied().filter(|id| *id <= newest).collect::<Vec<_>>());
        }
        history.retire(retired);
        wal.truncate_before(redo_lsn).map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// Record the commits other clients' threads finished (in unit order); returns the acknowledged ones.
fn record_completions(
    committers: &Committers,
    lsn_of: &BTreeMap<UnitId, Lsn>,
    history: &mut History,
    fs: &SimFs,
) -> Vec<(UnitId, Lsn)> {
    let mut acked = Vec::new();
    for done in committers.take_completions() {
        match done.result {
            Ok(()) => {
                history.ack_started_after(done.id, done.errors_before, fs);
                let lsn = lsn_of[&done.id];
                history.acked_lsn_max = history.acked_lsn_max.max(lsn);
                acked.push((done.id, lsn));
            }
            Err(e) => history.engine_failed(e),
        }
    }
    acked
}

/// A record's bytes: its unit id, then seeded filler of 16..=700 bytes so records straddle sectors. Half
/// the records take one of three fixed sizes: a record written after a recovery then often ends exactly
/// where a record of the interrupted flush before the crash began, which is what lets a stale tail that
/// recovery did not zero chain on to the new records and come back.
fn client_payload(id: UnitId, rng: &mut SimRng) -> Vec<u8> {
    const SIZES: [usize; 3] = [16, 200, 684];
    let len = if rng.coin() { SIZES[rng.below(3) as usize] } else { 16 + rng.below(685) as usize };
    let mut payload = id.to_le_bytes().to_vec();
    payload.extend((0..len).map(|i| (id as usize * 31 + i * 7) as u8));
    payload
}

fn unit_of(payload: &[u8]) -> Result<UnitId, String> {
    let bytes: [u8; 8] = payload.get(..8).and_then(|b| b.try_into().ok()).ok_or("a record too short to be ours")?;
    Ok(UnitId::from_le_bytes(bytes))
}

/// A record that still validates behind the end a completed recovery found (`end`): the remains of an
/// interrupted flush that recovery should have zeroed. Left there, a later crash can chain them on to new
/// records and bring back what this recovery declared lost. Returns its LSN.
pub fn stale_record_after(fs: &SimFs, dir: &Path, segment_bytes: u64, end: Lsn) -> Option<Lsn> {
    use syncbench_engine::wal::record;
    for n in end / segment_bytes.. {
        let Ok(data) = fs.read_file(&dir.join(segment_file_name(n))) else { break };
        let base = n * segment_bytes;
        let mut at = end.saturating_sub(base).next_multiple_of(record::RECORD_ALIGN as u64) as usize;
        while at + record::HEADER_BYTES <= data.len() {
            if record::decode(&data[at..], base + at as u64, n).is_ok() {
                return Some(base + at as u64);
            }
            at += record::RECORD_ALIGN;
        }
    }
    None
}

/// Whether the log in `dir` holds, in what a power loss now would keep (`durable` reads that), a
/// chain of valid records from the start of the segment of `lsn - 1` that reaches `lsn` (the end of
/// the record a page carrying `lsn` depends on). Earlier segments are taken as durable.
pub fn durable_to(durable: &dyn Fn(&Path) -> Option<Vec<u8>>, dir: &Path, segment_bytes: u64, lsn: Lsn) -> bool {
    use syncbench_engine::wal::record;
    let n = (lsn - 1) / segment_bytes;
    let Some(data) = durable(&dir.join(segment_file_name(n))) else { return false };
    let base = n * segment_bytes;
    let mut at = 0usize;
    while base + (at as u64) < lsn {
        if segment_bytes as usize - at < record::HEADER_BYTES {
            return true; // the rest of the segment is too short for a record: the log continues after it
        }
        match data.get(at..).map(|rest| record::decode(rest, base + at as u64, n)) {
            Some(Ok((_, payload))) => at += record::encoded_len(payload.len()),
            _ => return false,
        }
    }
    true
}

/// The log files a damaged sector may be in: every byte of the log up to `end` (exclusive).
pub fn log_damage_targets(dir: &Path, segment_bytes: u64, end: u64) -> Vec<Target> {
    (0..end.div_ceil(segment_bytes))
        .map(|n| Target {
            path: dir.join(segment_file_name(n)),
            start: 0,
            end: (end - n * segment_bytes).min(segment_bytes),
            lost_write_detectable: true,
        })
        .collect()
}

impl Scenario for WalScenario {
    /// The recovered records: (LSN, payload), in log order.
    type State = Vec<(Lsn, Vec<u8>)>;

    fn variants(&self) -> Vec<String> {
        METHODS.iter().map(|m| m.name().to_string()).collect()
    }

    fn run(&self, variant: usize, fs: &SimFs, history: &mut History, seed: u64, coverage: &mut Coverage) {
        if let Err(e) = self.run_inner(variant, fs, history, seed, coverage) {
            history.engine_failed(e);
        }
    }

    fn recover(&self, variant: usize, fs: &SimFs, coverage: &mut Coverage) -> Result<Self::State, String> {
        let (wal, records) = Wal::open(fs.clone(), Path::new(DIR), self.config(variant)).map_err(|e| e.to_string())?;
        coverage.torn_tails_zeroed += u64::from(wal.stats().stale_tail_bytes_zeroed > 0);
        if let Some(lsn) = stale_record_after(fs, Path::new(DIR), self.segment_bytes, wal.appended_lsn()) {
            return Err(format!(
                "recovery ended the log at LSN {} but left a valid record of an interrupted flush at LSN {lsn} \
                 (a stale tail a later crash can bring back)",
                wal.appended_lsn()
            ));
        }
        coverage.redo_records += records.len() as u64;
        if let Some(r) = records.iter().find(|r| r.kind != KIND_CLIENT) {
            return Err(format!("recovery returned a record of kind {} at LSN {}", r.kind, r.lsn));
        }
        Ok(records.into_iter().map(|r| (r.lsn, r.payload)).collect())
    }

    fn check(&self, history: &History, state: &Self::State) -> Result<(), String> {
        let mut units = BTreeMap::new();
        let mut previous: Option<UnitId> = None;
        for (lsn, payload) in state {
            let id = unit_of(payload)?;
            // Appends are serialised in id order: the log holds an increasing run of them, whose only
            // gaps are records that earlier crashes lost for good.
            if let Some(prev) = previous
                && (id <= prev || (prev + 1..id).any(|gap| !history.lost.contains(&gap)))
            {
                return Err(format!("hole in the log: record {prev} is followed by record {id} (LSN {lsn})"));
            }
            previous = Some(id);
            units.insert(id, payload.clone());
        }
        history.check_units(&units)
    }

    fn settle(&self, history: &mut History, state: &Self::State) {
        let units: BTreeSet<UnitId> = state.iter().filter_map(|(_, p)| unit_of(p).ok()).collect();
        history.settle(&units);
    }

    fn damage_targets(&self, _image: &SimFs, history: &History) -> Vec<Target> {
        let end = history.acked_lsn_max.saturating_sub(DAMAGE_MARGIN_BYTES);
        log_damage_targets(&PathBuf::from(DIR), self.segment_bytes, end)
    }

    fn required_coverage(&self) -> Vec<&'static str> {
        let mut required = vec![
            "process_crashes",
            "recoveries_of_recoveries",
            "recoveries_interrupted",
            "torn_tails_zeroed",
            "media_damage",
            "media_damage_reported",
            "log_segment_ends_exact",
            "log_segment_ends_padded",
            "log_segment_ends_skipped",
            "log_batches_capped",
        ];
        if self.concurrent {
            required.extend(["commits_overlapping_flush", "appends_during_flush"]);
        }
        required
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::crashtest::{ExploreOptions, Failure, explore};
    use syncbench_simfs::Profile;

    fn opts(profile: Profile, fsync_errors: bool, points: u64) -> ExploreOptions {
        ExploreOptions { fsync_errors, ..ExploreOptions::new(11, points, profile) }
    }

    /// A failure found at a crash point (not a workload that could not even run without faults, nor a
    /// coverage shortfall).
    fn assert_caught_by_a_crash(failure: &Failure) {
        assert!(failure.crash_op > 0, "{failure:?}");
        assert!(!failure.message.contains("without any fault injected"), "{failure:?}");
    }

    fn caught(faults: FaultSwitches, profile: Profile, fsync_errors: bool, points: u64) -> Failure {
        let failure = explore(&WalScenario::new(faults), &opts(profile, fsync_errors, points), |_| {}).unwrap_err();
        assert_caught_by_a_crash(&failure);
        failure
    }

    /// `caught` under the strict profile without fsync errors, the failure saying `says`.
    fn caught_saying(faults: FaultSwitches, points: u64, says: &str) {
        let failure = caught(faults, Profile::Strict, false, points);
        assert!(failure.message.contains(says), "{failure:?}");
    }

    #[test]
    fn the_log_survives_crashes_under_both_profiles_and_fsync_errors_and_reaches_every_key_path() {
        let wal = WalScenario::new(FaultSwitches::default());
        for (profile, errors) in [(Profile::Strict, false), (Profile::Ext4, false), (Profile::Strict, true)] {
            let summary = explore(&wal, &opts(profile, errors, 200), |_| {}).unwrap();
            assert_eq!(summary.points, 200);
            assert_eq!(summary.cycles, 600, "three generations per point");
            assert!(summary.acks_per_run > 30);
            // Coverage is enforced by explore itself from 200 points on; check the enforcement ran.
            assert!(summary.coverage.missing(&wal.required_coverage()).is_empty(), "{:?}", summary.coverage);
        }
    }

    /// Fail-stop from every client: after an injected fsync failure the other clients go on committing
    /// and every one is refused.
    #[test]
    fn after_a_failed_sync_every_client_that_comes_after_is_refused() {
        let wal = WalScenario::new(FaultSwitches::default());
        let summary = explore(&wal, &opts(Profile::Strict, true, 60), |_| {}).unwrap();
        assert!(summary.engine_errors > 0, "{summary:?}");
        assert!(summary.coverage.commits_refused_after_failure >= summary.engine_errors, "{:?}", summary.coverage);
    }

    /// A log that fails only the leader of the failed flush and carries on: with one client, only the
    /// clients that keep committing after the failure can see it.
    #[test]
    fn a_failure_reported_only_to_its_leader_is_caught_by_the_clients_after_it() {
        let faults = FaultSwitches { fail_only_the_leader: true, ..FaultSwitches::default() };
        let serial = WalScenario { concurrent: false, ..WalScenario::new(faults) };
        let failure = explore(&serial, &opts(Profile::Strict, true, 60), |_| {}).unwrap_err();
        assert!(failure.message.contains("after a sync had failed"), "{failure:?}");
        let blind = WalScenario { clients_after_failure: false, ..serial };
        explore(&blind, &opts(Profile::Strict, true, 60), |_| {}).unwrap();
    }

    /// Segments so large that no run fills one: the series fails on the boundary counters it never moved.
    #[test]
    fn a_series_that_never_crosses_a_segment_end_fails() {
        let big = WalScenario { segment_bytes: 512 << 10, ..WalScenario::new(FaultSwitches::default()) };
        let failure = explore(&big, &opts(Profile::Strict, false, 200), |_| {}).unwrap_err();
        assert_eq!(
            (failure.kind, failure.variant.as_str()),
            (crate::proof::crashtest::FailureKind::Coverage, "coverage")
        );
        for counter in ["log_segment_ends_exact", "log_segment_ends_padded", "log_segment_ends_skipped"] {
            assert!(failure.message.contains(counter), "{failure:?}");
        }
        assert!(!failure.message.contains("log_batches_capped"), "{failure:?}");
    }

    #[test]
    fn a_series_that_never_reaches_a_key_path_fails() {
        // Without concurrent clients no commit overlaps a flush: requiring it must fail the series.
        let serial = WalScenario { concurrent: false, ..WalScenario::new(FaultSwitches::default()) };
        struct Demanding(WalScenario);
        impl Scenario for Demanding {
            type State = <WalScenario as Scenario>::State;
            fn variants(&self) -> Vec<String> {
                self.0.variants()
            }
            fn run(&self, v: usize, fs: &SimFs, h: &mut History, seed: u64, c: &mut Coverage) {
                self.0.run(v, fs, h, seed, c)
            }
            fn recover(&self, v: usize, fs: &SimFs, c: &mut Coverage) -> Result<Self::State, String> {
                self.0.recover(v, fs, c)
            }
            fn check(&self, h: &History, s: &Self::State) -> Result<(), String> {
                self.0.check(h, s)
            }
            fn settle(&self, h: &mut History, s: &Self::State) {
                self.0.settle(h, s)
            }
            fn required_coverage(&self) -> Vec<&'static str> {
                vec!["commits_overlapping_flush"]
            }
        }
        let failure = explore(&Demanding(serial), &opts(Profile::Strict, false, 200), |_| {}).unwrap_err();
        assert_eq!(
            (failure.kind, failure.variant.as_str()),
            (crate::proof::crashtest::FailureKind::Coverage, "coverage")
        );
        assert!(failure.message.contains("commits_overlapping_flush"), "{failure:?}");
    }

    /// Regression, found by this simulator: `truncate_before` used to rename or remove several segments and
    /// then fsync the directory once. Under the strict (POSIX-minimum) profile a crash in between could keep
    /// the removal of a newer segment but not of an older one; recovery, which scans from the oldest file,
    /// then saw a missing segment followed by valid records and refused to open the log. The log now
    /// fsyncs the directory after each retirement.
    #[test]
    fn retiring_many_segments_at_once_survives_out_of_order_namespace_crashes() {
        let wal = WalScenario {
            rounds: 64,
            checkpoint_every_rounds: 32,
            redo_lag_commits: 1,
            ..WalScenario::new(FaultSwitches::default())
        };
        explore(&wal, &opts(Profile::Strict, false, 400), |_| {}).unwrap();
    }

    #[test]
    fn skipping_the_log_sync_is_caught() {
        caught(FaultSwitches { skip_log_sync: true, ..FaultSwitches::default() }, Profile::Strict, false, 300);
    }

    #[test]
    fn skipping_the_directory_fsync_is_caught() {
        caught(FaultSwitches { skip_dir_fsync: true, ..FaultSwitches::default() }, Profile::Strict, false, 300);
    }

    #[test]
    fn retrying_fsync_after_an_error_is_caught() {
        let faults = FaultSwitches { retry_fsync_after_error: true, ..FaultSwitches::default() };
        let failure = caught(faults, Profile::Strict, true, 300);
        assert!(failure.message.contains("after a sync had failed"), "{failure:?}");
    }

    /// Concurrency: a commit that arrives while its record's flush is writing returns before the sync.
    #[test]
    fn an_acknowledgement_a_step_too_early_is_caught_by_overlapping_commits() {
        let faults = FaultSwitches { ack_when_written: true, ..FaultSwitches::default() };
        caught_saying(faults, 200, "missing");
        // Without the concurrent clients the bug is invisible: the series passes.
        let serial = WalScenario { concurrent: false, ..WalScenario::new(faults) };
        explore(&serial, &ExploreOptions { points: 100, ..opts(Profile::Strict, false, 100) }, |_| {}).unwrap();
    }

    /// Concurrency: a flush that publishes what was appended during it as durable.
    #[test]
    fn a_flush_horizon_off_by_a_batch_is_caught() {
        caught_saying(FaultSwitches { flush_horizon_appended: true, ..FaultSwitches::default() }, 200, "missing");
    }

    /// Generations: recovery that leaves an interrupted flush's valid records behind the end.
    #[test]
    fn a_stale_tail_left_behind_is_caught() {
        caught_saying(FaultSwitches { keep_stale_tail: true, ..FaultSwitches::default() }, 300, "stale tail");
    }

    /// Process crashes: recovery that trusts log bytes found only in the surviving page cache.
    #[test]
    fn trusting_unsynced_data_at_open_is_caught_after_a_process_crash() {
        let faults = FaultSwitches { trust_unsynced_at_open: true, ..FaultSwitches::default() };
        let failure = caught(faults, Profile::Strict, false, 300);
        assert!(failure.message.contains("generation 1") || failure.message.contains("generation 2"), "{failure:?}");
        let one = ExploreOptions { generations: 1, ..opts(Profile::Strict, false, 150) };
        explore(&WalScenario::new(faults), &one, |_| {}).unwrap();
    }

    /// Media damage: recovery that treats a damaged record with later flushes behind it as the end.
    #[test]
    fn silent_truncation_at_a_damaged_record_is_caught() {
        caught_saying(FaultSwitches { corruption_as_end: true, ..FaultSwitches::default() }, 300, "media damage");
    }
}
