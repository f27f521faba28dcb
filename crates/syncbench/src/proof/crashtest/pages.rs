//! The TPC-B workload on the page store under crashes: several clients submit and commit transfers;
//! while the log flushes, other clients commit on their own threads, and while a checkpoint or the
//! background flusher writes pages, other clients submit transfers (deterministically: see `clients`).
//! Checkpoints run while transactions are open, the buffer pool is smaller than the pages the bank
//! dirties (evictions write pages through the protection path: `fpw`, `dw`, `atomic` or `none`), and
//! simfs checks the write-ahead rule at every page write. After every crash recovery must give a bank
//! whose history is a gap-free prefix holding every acknowledged transfer (and every transfer an earlier
//! recovery returned), whose balances add up, and whose every page passes its checksum.

use super::Scenario;
use super::clients::{Committers, Injecting};
use super::coverage::Coverage;
use super::damage::Target;
use super::history::{History, UnitId};
use super::wal::log_damage_targets;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use syncbench_engine::pages::control::ControlRecord;
use syncbench_engine::pages::{DwDesign, FaultSwitches, Lsn, Mode, StoreConfig, page};
use syncbench_engine::wal::FaultSwitches as LogFaults;
use syncbench_engine::workload::{Bank, BankConfig, Transfer};
use syncbench_simfs::{OpKind, SimConfig, SimFs, SimRng, WriteAheadRule};

const DIR: &str = "/db/bank";
const PAGE_BYTES: usize = 8192;
/// Pages per double-write batch; the pool holds the minimum the store accepts (2 × batch + 16 = 20
/// frames), fewer than the pages a generation dirties between checkpoints, so evictions write pages.
const DW_BATCH_PAGES: usize = 2;
/// Pages per read of recovery's double-write scan: the 2012 area has 2 batch slots and 4 single ones, so
/// a scan makes one full read and one partial one.
const DW_SCAN_READ_PAGES: usize = 4;
/// Log segment size: the log's minimum, so that runs create and retire segments (its default of 16 MiB
/// would dominate every crash point and never fill).
const WAL_SEGMENT_BYTES: u64 = 16 << 10;
/// A leader writes at most this much per flush: a few transfers' records, so one commit's flush often
/// leaves records for the next (flush horizons matter).
const MAX_GROUP_BYTES: usize = 512;

/// The page-store crash scenario.
pub struct PagesScenario {
    /// Torn-page protection.
    pub mode: Mode,
    /// TPC-B scale (branches).
    pub scale: u32,
    /// Accounts per branch (TPC-B has 100,000; tests use fewer).
    pub accounts_per_branch: u32,
    /// Transfers per generation.
    pub transfers: u32,
    /// Transfers between checkpoints.
    pub checkpoint_every: u32,
    /// Simulated clients.
    pub clients: u32,
    /// Whether other clients commit during flushes and submit during page writes.
    pub concurrent: bool,
    /// Deliberate bugs of the page store.
    pub faults: FaultSwitches,
    /// The double-write design (`dw` mode): with `pipelined` the workload also spools pages into the
    /// ring and syncs it, on its own schedule (a sync after every other spool on average, so batches are
    /// in flight at crash points).
    pub dw_design: DwDesign,
    /// Deliberate bugs of its write-ahead log.
    pub log_faults: LogFaults,
    /// The freshly created bank, built once and forked for every run.
    base: OnceLock<Result<SimFs, String>>,
}

/// What the workload is doing, for the hook.
#[derive(Default)]
struct Phase {
    /// A checkpoint or the flusher runs: page writes happen without the store's pool lock held.
    pages_unlocked: AtomicBool,
    /// The workload waits in a commit.
    committing: AtomicBool,
}

/// What one generation's clients share with the operation hook.
struct Shared {
    rng: SimRng,
    /// Submitted, not yet committed by anyone: (txn id, LSN).
    pending: Vec<(UnitId, Lsn)>,
    submitted: Vec<(UnitId, Vec<u8>)>,
    submits_during_page_writes: u64,
    error: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl PagesScenario {
    /// TPC-B scale 1 (one branch) with `accounts_per_branch` accounts (the CLI's default is 2,000; TPC-B
    /// proper has 100,000), 48 transfers per generation from 4 clients, a checkpoint every 24; 96 with
    /// `dw` and `atomic`, whose logs hold no page images, so that they too fill log segments and create
    /// new ones.
    pub fn new(mode: Mode, accounts_per_branch: u32, faults: FaultSwitches) -> PagesScenario {
        PagesScenario {
            mode,
            scale: 1,
            accounts_per_branch,
            transfers: if matches!(mode, Mode::Dw | Mode::Atomic) { 96 } else { 48 },
            checkpoint_every: 24,
            clients: 4,
            concurrent: true,
            faults,
            dw_design: DwDesign::default(),
            log_faults: LogFaults::default(),
            base: OnceLock::new(),
        }
    }

    /// The same scenario with another double-write design (`--dw-design`).
    pub fn with_dw_design(self, dw_design: DwDesign) -> PagesScenario {
        PagesScenario { dw_design, ..self }
    }

    /// The same scenario with deliberate bugs in its log (`--engine-bug skip-log-sync` and the like).
    pub fn with_log_faults(self, log_faults: LogFaults) -> PagesScenario {
        PagesScenario { log_faults, ..self }
    }

    fn store_config(&self) -> StoreConfig {
        let mut config = Bank::<SimFs>::store_config(self.mode);
        config.page_size = PAGE_BYTES;
        config.dw_batch_pages = DW_BATCH_PAGES;
        config.buffer_pool_bytes = (2 * DW_BATCH_PAGES + 16) * PAGE_BYTES;
        // Small log segments: every run and recovery creates and zero-fills them on the simulated disk.
        config.wal.segment_bytes = WAL_SEGMENT_BYTES;
        config.wal.max_group_bytes = MAX_GROUP_BYTES;
        // The rejoin wait's deadline is wall-clock time: off, so that a seed fixes the schedule.
        config.wal.rejoin_wait_pct = 0;
        // Recovery reads the double-write area a few pages at a time, so that its scan crosses from one
        // read to the next and ends on a partial one (the default megabyte holds the whole small area).
        config.dw_scan_read_bytes = DW_SCAN_READ_PAGES * PAGE_BYTES;
        config.faults = self.faults;
        config.wal.faults = self.log_faults;
        config.dw_design = self.dw_design;
        config
    }

    fn bank_config(&self) -> BankConfig {
        BankConfig { scale: self.scale, accounts_per_branch: self.accounts_per_branch }
    }

    /// Create and load the bank once (not crashed, and without the deliberate bugs: loading is not what is
    /// under test).
    fn base(&self) -> Result<&SimFs, String> {
        self.base
            .get_or_init(|| {
                let fs = SimFs::new(SimConfig {
                    atomic_write_max_bytes: self.atomic_write_max_bytes(),
                    ..SimConfig::default()
                });
                syncbench_engine::Storage::create_dir_all(&fs, Path::new(DIR)).map_err(|e| e.to_string())?;
                let mut config = self.store_config();
                config.faults = FaultSwitches::default();
                config.wal.faults = LogFaults::default();
                let bank = Bank::create(fs.clone(), Path::new(DIR), config, self.bank_config())
                    .map_err(|e| format!("cannot create the bank: {e}"))?;
                bank.close().map_err(|e| format!("cannot close the new bank: {e}"))?;
                Ok(fs)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The hook: while the log writes or syncs, another client commits a pending transfer on its own
    /// thread; while a checkpoint or the flusher writes a page (`pages_unlocked`: the store's pool lock
    /// is not held), another client submits a transfer.
    fn hook(
        &self,
        bank: &Arc<Bank<SimFs>>,
        fs: &SimFs,
        shared: &Arc<Mutex<Shared>>,
        committers: &Committers,
        phase: &Arc<Phase>,
    ) -> syncbench_simfs::OpHook {
        let (bank, fs, shared) = (Arc::clone(bank), fs.clone(), Arc::clone(shared));
        let (committers, phase) = (committers.clone(), Arc::clone(phase));
        let injecting = Arc::new(Injecting::default());
        let clients = u64::from(self.clients);
        let wal_dir = PathBuf::from(DIR).join("wal");
        Arc::new(move |kind: OpKind, path: &Path| {
            let in_log = path.starts_with(&wal_dir);
            // Committers only while the workload itself commits: it waits for them as soon as its commit
            // returns, so one woken to lead the next flush never runs beside the workload.
            let flushing =
                in_log && matches!(kind, OpKind::Write | OpKind::Sync) && phase.committing.load(Ordering::SeqCst);
            let page_write = !in_log && kind == OpKind::Write && phase.pages_unlocked.load(Ordering::SeqCst);
            if !flushing && !page_write {
                return;
            }
            injecting.run(|| {
                committers.quiesce_others(&|| bank.store().log().waiting_commits());
                let mut sh = lock(&shared);
                if page_write && sh.rng.chance(1, 2) {
                    let transfer = bank.pick(|| sh.rng.next_u64());
                    match bank.submit(transfer) {
                        Ok((id, lsn)) => {
                            sh.submitted.push((id, encode(transfer)));
                            sh.pending.push((id, lsn));
                            sh.submits_during_page_writes += 1;
                        }
                        Err(e) => {
                            sh.error.get_or_insert(e.to_string());
                        }
                    }
                }
                if flushing && !sh.pending.is_empty() && committers.running() < clients && sh.rng.chance(1, 2) {
                    let n = sh.pending.len() as u64;
                    let pick = sh.rng.below(n) as usize;
                    let (id, lsn) = sh.pending.remove(pick);
                    drop(sh);
                    let b = Arc::clone(&bank);
                    let waiting = || bank.store().log().waiting_commits();
                    committers.spawn(id, &fs, move || b.commit(lsn).map_err(|e| e.to_string()), &waiting);
                }
            });
        })
    }

    fn run_inner(&self, fs: &SimFs, history: &mut History, seed: u64, coverage: &mut Coverage) -> Result<(), String> {
        let bank = Bank::open(fs.clone(), Path::new(DIR), self.store_config(), self.bank_config())
            .map_err(|e| format!("cannot open the bank: {e}"))?;
        let bank = Arc::new(bank);
        let shared = Arc::new(Mutex::new(Shared {
            rng: SimRng::new(seed ^ 0x5EED),
            pending: Vec::new(),
            submitted: Vec::new(),
            submits_during_page_writes: 0,
            error: None,
        }));
        let committers = Committers::default();
        let phase = Arc::new(Phase::default());
        if self.concurrent {
            fs.set_op_hook(Some(self.hook(&bank, fs, &shared, &committers, &phase)));
        }
        let before = bank.store().stats();
        let log_before = bank.store().log().stats();
        let result = self.transfers(&bank, fs, history, seed, &shared, &committers, &phase, coverage);
        fs.set_op_hook(None);
        let _ = bank.store().log().flush_to(bank.store().log().last_lsn());
        committers.join_all();
        let mut sh = lock(&shared);
        for (id, bytes) in std::mem::take(&mut sh.submitted) {
            history.submit(id, bytes);
        }
        record_completions(&committers, history, fs);
        let after = bank.store().stats();
        coverage.eviction_writes += after.eviction_writes - before.eviction_writes;
        coverage.submits_during_page_writes += sh.submits_during_page_writes;
        coverage.commits_overlapping_flush += committers.overlapped_flush();
        coverage.add_log_boundaries(bank.store().log().stats().boundaries, log_before.boundaries);
        let result = result.and(sh.error.take().map_or(Ok(()), Err));
        if result.is_err() && !fs.crashed() {
            self.keep_committing(&bank, fs, history, seed, coverage);
        }
        result
    }

    /// After the engine failed, every client goes on as a database's other backends would: submits a
    /// transfer and commits it. Each must be refused; an acknowledgement counts as one after the failure,
    /// which `History::check_fail_stop` rejects.
    fn keep_committing(
        &self,
        bank: &Bank<SimFs>,
        fs: &SimFs,
        history: &mut History,
        seed: u64,
        coverage: &mut Coverage,
    ) {
        let mut rng = SimRng::new(seed ^ 0xFA11);
        for _ in 0..self.clients {
            let transfer = bank.pick(|| rng.next_u64());
            let errors_before = fs.stats().writeback_errors;
            let acked = bank.submit(transfer).ok().filter(|&(id, lsn)| {
                history.submit(id, encode(transfer));
                bank.commit(lsn).is_ok()
            });
            match acked {
                Some((id, _)) => history.ack_started_after(id, errors_before, fs),
                None => coverage.commits_refused_after_failure += 1,
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // the generation's shared pieces, passed once
    fn transfers(
        &self,
        bank: &Arc<Bank<SimFs>>,
        fs: &SimFs,
        history: &mut History,
        seed: u64,
        shared: &Arc<Mutex<Shared>>,
        committers: &Committers,
        phase: &Phase,
        coverage: &mut Coverage,
    ) -> Result<(), String> {
        let store = bank.store();
        let waiting = || store.log().waiting_commits();
        let pages_io = |f: &dyn Fn() -> syncbench_engine::pages::PageResult<usize>| {
            phase.pages_unlocked.store(true, Ordering::SeqCst);
            let r = f();
            phase.pages_unlocked.store(false, Ordering::SeqCst);
            committers.quiesce(&waiting);
            r.map_err(|e| e.to_string())
        };
        let mut rng = SimRng::new(seed);
        let mut done = 0;
        let mut unsynced = 0u64;
        while done < self.transfers {
            // A few clients submit, then each waits for its commit (the first one's flush covers all).
            let joining = (1 + rng.below(u64::from(self.clients)) as u32).min(self.transfers - done);
            for _ in 0..joining {
                let transfer = bank.pick(|| rng.next_u64());
                let (id, lsn) = bank.submit(transfer).map_err(|e| e.to_string())?;
                let mut sh = lock(shared);
                sh.submitted.push((id, encode(transfer)));
                sh.pending.push((id, lsn));
            }
            committers.quiesce(&waiting);
            done += joining;
            let checkpoint_due = done % self.checkpoint_every < joining;
            // Now and then the checkpoint comes while these transfers are still uncommitted.
            if checkpoint_due && rng.coin() {
                coverage.checkpoints_with_open_transactions += 1;
                fs.mark("checkpoint");
                pages_io(&|| store.checkpoint().map(|_| 0))?;
            }
            if rng.chance(1, 3) {
                let written = pages_io(&|| store.flush_ahead())?;
                coverage.background_flush_pages += written as u64;
            }
            if self.mode == Mode::Dw && self.dw_design == DwDesign::Pipelined {
                // The spooler and the sync thread's steps, interleaved with the clients.
                let spooled = pages_io(&|| store.dw_spool().map(|seq| seq.unwrap_or(0) as usize))?;
                unsynced = unsynced.max(spooled as u64);
                if unsynced > 0 && rng.coin() {
                    fs.mark("dw_ring_sync");
                    store.dw_sync_ring(unsynced).map_err(|e| e.to_string())?;
                    unsynced = 0;
                }
            }
            commit_pending(bank, fs, history, shared, committers, phase)?;
            if checkpoint_due {
                fs.mark("checkpoint");
                pages_io(&|| store.checkpoint().map(|_| 0))?;
            }
        }
        Ok(())
    }
}

/// Waits for each submitted transfer's commit, oldest first, and records the acks (a failed commit is the
/// engine's error).
fn commit_pending(
    bank: &Bank<SimFs>,
    fs: &SimFs,
    history: &mut History,
    shared: &Mutex<Shared>,
    committers: &Committers,
    phase: &Phase,
) -> Result<(), String> {
    let waiting = || bank.store().log().waiting_commits();
    loop {
        let Some((id, lsn)) = lock(shared).pending.first().copied() else { break };
        lock(shared).pending.retain(|p| p.0 != id);
        let errors_before = fs.stats().writeback_errors;
        phase.committing.store(true, Ordering::SeqCst);
        let result = bank.commit(lsn);
        committers.quiesce(&waiting);
        phase.committing.store(false, Ordering::SeqCst);
        record_completions(committers, history, fs);
        result.map_err(|e| e.to_string())?;
        history.ack_started_after(id, errors_before, fs);
        history.acked_lsn_max = history.acked_lsn_max.max(lsn);
    }
    Ok(())
}

/// Record the commits other clients' threads finished (in transaction order).
fn record_completions(committers: &Committers, history: &mut History, fs: &SimFs) {
    for done in committers.take_completions() {
        match done.result {
            Ok(()) => history.ack_started_after(done.id, done.errors_before, fs),
            Err(e) => history.engine_failed(e),
        }
    }
}

fn encode(t: Transfer) -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    out.extend_from_slice(&t.aid.to_le_bytes());
    out.extend_from_slice(&t.tid.to_le_bytes());
    out.extend_from_slice(&t.bid.to_le_bytes());
    out.extend_from_slice(&t.delta.to_le_bytes());
    out
}

fn is_page_file(path: &Path) -> bool {
    path.parent() == Some(Path::new(DIR))
        && path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("data-") || n == "doublewrite")
}

impl Scenario for PagesScenario {
    /// Transaction ids in the recovered history, in row order.
    type State = Vec<UnitId>;

    fn variants(&self) -> Vec<String> {
        vec![self.mode.name().to_string()]
    }

    fn start(&self, _variant: usize, config: SimConfig) -> SimFs {
        match self.base() {
            Ok(base) => base.fork_with(config),
            // `run` reports the setup error through the history.
            Err(_) => SimFs::new(config),
        }
    }

    fn run(&self, _variant: usize, fs: &SimFs, history: &mut History, seed: u64, coverage: &mut Coverage) {
        if let Err(e) = self.base().and_then(|_| self.run_inner(fs, history, seed, coverage)) {
            history.engine_failed(e);
        }
    }

    fn recover(&self, _variant: usize, fs: &SimFs, coverage: &mut Coverage) -> Result<Self::State, String> {
        let bank = Bank::open(fs.clone(), Path::new(DIR), self.store_config(), self.bank_config())
            .map_err(|e| e.to_string())?;
        let stats = bank.store().stats();
        coverage.dw_restored_pages += stats.dw_restored_pages;
        coverage.dw_scans_past_one_read += u64::from(stats.dw_scan_reads > 1);
        coverage.redo_records += stats.redo_records;
        coverage.torn_tails_zeroed += u64::from(bank.store().log().stats().stale_tail_bytes_zeroed > 0);
        let (wal_dir, end) = (PathBuf::from(DIR).join("wal"), bank.store().log().last_lsn());
        if let Some(lsn) = super::wal::stale_record_after(fs, &wal_dir, WAL_SEGMENT_BYTES, end) {
            return Err(format!(
                "recovery ended the log at LSN {end} but left a valid record of an interrupted flush at LSN \
                 {lsn} (a stale tail a later crash can bring back)"
            ));
        }
        bank.check_invariants()?;
        bank.history_txn_ids().map_err(|e| format!("cannot read the history: {e}"))
    }

    fn check(&self, history: &History, state: &Self::State) -> Result<(), String> {
        // The bank numbers transactions 1, 2, ... in history order: the history must be ids 1..=n, no gap.
        if let Some((row, id)) = state.iter().enumerate().find(|(row, id)| **id != *row as u64 + 1) {
            return Err(format!("history row {row} holds transaction {id}, expected {}", row + 1));
        }
        let recovered = state.iter().map(|id| (*id, history.submitted.get(id).cloned().unwrap_or_default())).collect();
        history.check_units(&recovered)
    }

    fn settle(&self, history: &mut History, state: &Self::State) {
        let units: BTreeSet<UnitId> = state.iter().copied().collect();
        history.settle(&units);
        // The bank gives the ids of lost transfers to the next ones.
        history.forget_above(state.len() as u64);
    }

    fn write_ahead_rule(&self) -> Option<Arc<WriteAheadRule>> {
        Some(Arc::new(WriteAheadRule {
            is_page_file: Box::new(is_page_file),
            page_bytes: PAGE_BYTES,
            page_lsn: Box::new(page::lsn),
            log_durable_to: Box::new(|durable, lsn| {
                let dir = PathBuf::from(DIR).join("wal");
                let segment = dir.join(syncbench_engine::wal::segment_file_name((lsn - 1) / WAL_SEGMENT_BYTES));
                if durable(&segment).is_none() {
                    // The segment is gone: fine if it lies at or below the redo LSN of a durable
                    // checkpoint (the log was durable past it when that checkpoint was recorded, and
                    // the log dropped it since). A double-write copy restored by recovery can carry such
                    // an LSN: a copy protects its page for a whole checkpoint cycle, whatever the page's
                    // last change.
                    let control = durable(&PathBuf::from(DIR).join("control"));
                    return control.and_then(|c| ControlRecord::newest_in(&c)).is_some_and(|r| lsn <= r.redo_lsn);
                }
                super::wal::durable_to(durable, &dir, WAL_SEGMENT_BYTES, lsn)
            }),
        }))
    }

    fn damage_targets(&self, image: &SimFs, history: &History) -> Vec<Target> {
        let end = history.acked_lsn_max.saturating_sub(super::wal::DAMAGE_MARGIN_BYTES);
        let mut targets = log_damage_targets(&PathBuf::from(DIR).join("wal"), WAL_SEGMENT_BYTES, end);
        // Pages: a flipped bit or a misdirected sector breaks a checksum; a lost write of a whole valid
        // page does not, so it is not aimed at pages.
        for (path, len) in image.durable_files() {
            let dw = path.file_name().is_some_and(|n| n == "doublewrite");
            if is_page_file(&path) && (dw == (self.mode == Mode::Dw)) {
                targets.push(Target { path, start: 0, end: len, lost_write_detectable: false });
            }
        }
        targets
    }

    fn required_coverage(&self) -> Vec<&'static str> {
        let mut required = vec![
            "process_crashes",
            "recoveries_of_recoveries",
            "recoveries_interrupted",
            "redo_records",
            "eviction_writes",
            "checkpoints_with_open_transactions",
            "wal_rule_checks",
            "media_damage",
            "media_damage_reported",
        ];
        if self.concurrent {
            required.extend(["commits_overlapping_flush", "submits_during_page_writes"]);
        }
        required.extend(["log_segment_ends_padded", "log_batches_capped"]);
        match self.mode {
            Mode::Dw => required.extend(["dw_restored_pages", "dw_scans_past_one_read"]),
            Mode::Atomic => required.push("atomic_writes_in_flight_at_crash"),
            _ => {}
        }
        required
    }

    fn atomic_write_max_bytes(&self) -> u64 {
        PAGE_BYTES as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::crashtest::{ExploreOptions, Failure, explore};
    use syncbench_simfs::Profile;

    fn opts(profile: Profile, fsync_errors: bool, points: u64) -> ExploreOptions {
        ExploreOptions { fsync_errors, ..ExploreOptions::new(5, points, profile) }
    }

    fn caught(mode: Mode, faults: FaultSwitches, points: u64) -> Failure {
        let scenario = PagesScenario::new(mode, 2000, faults);
        let failure = explore(&scenario, &opts(Profile::Strict, false, points), |_| {}).unwrap_err();
        // Caught at a crash point, or by simfs's write-ahead rule at the page write itself (which needs
        // no crash at all).
        let at_a_crash = failure.crash_op > 0 && !failure.message.contains("without any fault");
        assert!(at_a_crash || failure.message.contains("write-ahead rule broken"), "{failure:?}");
        failure
    }

    #[test]
    fn every_protected_mode_survives_crashes_and_fsync_errors_and_reaches_its_key_paths() {
        for mode in [Mode::Fpw, Mode::Dw, Mode::Atomic] {
            let scenario = PagesScenario::new(mode, 2000, FaultSwitches::default());
            for (profile, errors) in [(Profile::Ext4, false), (Profile::Strict, true)] {
                let summary = explore(&scenario, &opts(profile, errors, 200), |_| {}).unwrap();
                assert_eq!(summary.points, 200, "{mode:?}");
                let missing = summary.coverage.missing(&scenario.required_coverage());
                assert!(missing.is_empty(), "{mode:?}: {missing:?}");
            }
        }
    }

    #[test]
    fn pipelined_dw_survives_crashes_and_fsync_errors() {
        let scenario = PagesScenario::new(Mode::Dw, 2000, FaultSwitches::default()).with_dw_design(DwDesign::Pipelined);
        // Strict without errors, 400 points: the options the deliberate bugs below are caught with.
        let runs = [
            (Profile::Ext4, false, 200),
            (Profile::Ext4, true, 200),
            (Profile::Strict, true, 200),
            (Profile::Strict, false, 400),
        ];
        for (profile, errors, points) in runs {
            let summary = explore(&scenario, &opts(profile, errors, points), |_| {}).unwrap();
            assert_eq!(summary.points, points);
            let missing = summary.coverage.missing(&scenario.required_coverage());
            assert!(missing.is_empty(), "{missing:?}");
        }
    }

    /// `pipelined`: a page written home relying on a ring copy whose sync has not completed.
    #[test]
    fn a_home_write_before_the_ring_sync_is_caught() {
        let faults = FaultSwitches { dw_home_before_sync: true, ..FaultSwitches::default() };
        let scenario = PagesScenario::new(Mode::Dw, 2000, faults).with_dw_design(DwDesign::Pipelined);
        let failure = explore(&scenario, &opts(Profile::Strict, false, 400), |_| {}).unwrap_err();
        assert!(failure.crash_op > 0 && failure.message.contains("double-write area has no valid copy"), "{failure:?}");
    }

    /// `pipelined`: a ring batch overwritten before the home writes that relied on its copies (a
    /// checkpoint's, an eviction's) were synced.
    #[test]
    fn a_ring_batch_recycled_before_the_home_sync_is_caught() {
        let faults = FaultSwitches { dw_recycle_before_home_sync: true, ..FaultSwitches::default() };
        let scenario = PagesScenario::new(Mode::Dw, 2000, faults).with_dw_design(DwDesign::Pipelined);
        let failure = explore(&scenario, &opts(Profile::Strict, false, 400), |_| {}).unwrap_err();
        assert!(failure.crash_op > 0 && failure.message.contains("double-write area has no valid copy"), "{failure:?}");
    }

    /// `pipelined`: a page changed since its ring copy was taken goes home relying on that copy after a
    /// checkpoint began (recovery restores the copy and redoes the log from the checkpoint, missing the
    /// changes in between).
    #[test]
    fn a_copy_from_an_earlier_checkpoint_cycle_is_caught() {
        let faults = FaultSwitches { dw_trust_earlier_cycle: true, ..FaultSwitches::default() };
        let scenario = PagesScenario::new(Mode::Dw, 2000, faults).with_dw_design(DwDesign::Pipelined);
        let failure = explore(&scenario, &opts(Profile::Strict, false, 400), |_| {}).unwrap_err();
        assert!(failure.message.contains("balance invariant broken"), "{failure:?}");
    }

    #[test]
    fn no_protection_is_caught_with_torn_pages() {
        let failure = caught(Mode::None, FaultSwitches::default(), 400);
        assert!(failure.message.contains("fails its checksum"), "{failure:?}");
    }

    #[test]
    fn a_double_write_flush_that_skips_its_fsync_is_caught() {
        let failure = caught(Mode::Dw, FaultSwitches { dw_skip_fsync: true, ..FaultSwitches::default() }, 400);
        assert!(failure.message.contains("double-write area"), "{failure:?}");
    }

    /// Evictions: a double-write slot reused before the page it protected was synced at home.
    #[test]
    fn a_double_write_slot_reused_before_the_home_sync_is_caught() {
        let faults = FaultSwitches { dw_reuse_slot_before_home_sync: true, ..FaultSwitches::default() };
        let failure = caught(Mode::Dw, faults, 400);
        assert!(failure.message.contains("double-write area has no valid copy"), "{failure:?}");
    }

    /// The write-ahead rule, checked by simfs at the page write itself (the engine's own assertion is
    /// skipped too, so only the simulator can see it).
    #[test]
    fn a_page_written_before_its_log_record_is_durable_is_caught_when_written() {
        let faults = FaultSwitches { evict_skip_write_ahead: true, ..FaultSwitches::default() };
        for mode in [Mode::Fpw, Mode::Dw] {
            let failure = caught(mode, faults, 400);
            assert!(failure.message.contains("write-ahead rule broken at storage op"), "{mode:?}: {failure:?}");
        }
    }

    /// Atomic mode: pages written with plain writes tear.
    #[test]
    fn atomic_mode_with_tearable_writes_is_caught() {
        let failure = caught(Mode::Atomic, FaultSwitches { atomic_plain_write: true, ..FaultSwitches::default() }, 400);
        assert!(failure.message.contains("fails its checksum"), "{failure:?}");
    }

    /// Recovery: redo that starts one record after the checkpoint's redo point.
    #[test]
    fn a_recovery_start_point_off_by_one_record_is_caught() {
        let faults = FaultSwitches { redo_skips_first_record: true, ..FaultSwitches::default() };
        caught(Mode::Fpw, faults, 400);
        // In `dw` mode even a clean shutdown's recovery shows it (the log carries no page images).
        let scenario = PagesScenario::new(Mode::Dw, 2000, faults);
        let failure = explore(&scenario, &opts(Profile::Strict, false, 10), |_| {}).unwrap_err();
        assert!(failure.message.contains("balance invariant broken"), "{failure:?}");
    }
}
