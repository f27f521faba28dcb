//! The TPC-B workload on the page store under crashes: transfers are submitted and committed by several
//! simulated clients (one thread, interleaved), checkpoints and buffer-pool evictions write pages through
//! the torn-page protection (`fpw`, `dw`, or `none`), and after every crash recovery must give a bank
//! whose history is a gap-free prefix holding every acknowledged transfer, whose balances add up, and
//! whose every page passes its checksum (recovery refuses a torn page it cannot repair).

use super::Scenario;
use super::history::{History, UnitId};
use std::path::Path;
use std::sync::OnceLock;
use syncbench_engine::pages::{FaultSwitches, Mode, StoreConfig};
use syncbench_engine::wal::FaultSwitches as LogFaults;
use syncbench_engine::workload::{Bank, BankConfig, Transfer};
use syncbench_simfs::{SimConfig, SimFs, SimRng};

const DIR: &str = "/db/bank";
const PAGE_BYTES: usize = 8192;
/// Pages per double-write batch; the pool holds the minimum the store accepts (2 × batch + 16), fewer
/// than the bank's pages, so evictions write pages between checkpoints too.
const DW_BATCH_PAGES: usize = 4;
/// Log segment size: the log's minimum, so that runs create and retire segments (its default of 16 MiB
/// would dominate every crash point and never fill).
const WAL_SEGMENT_BYTES: u64 = 16 << 10;

/// The page-store crash scenario.
pub struct PagesScenario {
    /// Torn-page protection.
    pub mode: Mode,
    /// Workload seed.
    pub seed: u64,
    /// TPC-B scale (branches).
    pub scale: u32,
    /// Accounts per branch (TPC-B has 100,000; tests use fewer).
    pub accounts_per_branch: u32,
    /// Transfers per run.
    pub transfers: u32,
    /// Simulated clients.
    pub clients: u32,
    /// Deliberate bugs of the page store.
    pub faults: FaultSwitches,
    /// Deliberate bugs of its write-ahead log.
    pub log_faults: LogFaults,
    /// The freshly created bank, built once and forked for every run.
    base: OnceLock<Result<SimFs, String>>,
}

impl PagesScenario {
    /// TPC-B scale 1 (one branch) with `accounts_per_branch` accounts (the CLI's default is 2,000; TPC-B
    /// proper has 100,000), 48 transfers from 4 clients; 192 with `dw`, whose log holds no page images, so
    /// that it too fills a log segment and creates the next one (the directory operations under test).
    pub fn new(mode: Mode, seed: u64, accounts_per_branch: u32, faults: FaultSwitches) -> PagesScenario {
        PagesScenario {
            mode,
            seed,
            scale: 1,
            accounts_per_branch,
            transfers: if mode == Mode::Dw { 192 } else { 48 },
            clients: 4,
            faults,
            log_faults: LogFaults::default(),
            base: OnceLock::new(),
        }
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
        config.faults = self.faults;
        config.wal.faults = self.log_faults;
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
                let fs = SimFs::new(SimConfig::default());
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

    fn run_inner(&self, fs: &SimFs, history: &mut History) -> Result<(), String> {
        let bank = Bank::open(fs.clone(), Path::new(DIR), self.store_config(), self.bank_config())
            .map_err(|e| format!("cannot open the bank: {e}"))?;
        let mut rng = SimRng::new(self.seed);
        let mut done = 0;
        while done < self.transfers {
            // A few clients submit, then each waits for its commit (the first one's flush covers all).
            let joining = (1 + rng.below(u64::from(self.clients)) as u32).min(self.transfers - done);
            let mut batch = Vec::new();
            for _ in 0..joining {
                let transfer = bank.pick(|| rng.next_u64());
                let (txn_id, lsn) = bank.submit(transfer).map_err(|e| e.to_string())?;
                history.submit(txn_id, encode(transfer));
                batch.push((txn_id, lsn));
            }
            for (txn_id, lsn) in batch {
                bank.commit(lsn).map_err(|e| e.to_string())?;
                history.ack(txn_id, fs);
            }
            done += joining;
            if done % 16 < joining {
                fs.mark("checkpoint");
                bank.store().checkpoint().map_err(|e| e.to_string())?;
            }
        }
        Ok(())
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

    fn run(&self, _variant: usize, fs: &SimFs, history: &mut History) {
        if let Err(e) = self.base().and_then(|_| self.run_inner(fs, history)) {
            history.engine_failed(e);
        }
    }

    fn recover(&self, _variant: usize, fs: &SimFs) -> Result<Self::State, String> {
        let bank = Bank::open(fs.clone(), Path::new(DIR), self.store_config(), self.bank_config())
            .map_err(|e| e.to_string())?;
        bank.check_invariants()?;
        bank.history_txn_ids().map_err(|e| format!("cannot read the history: {e}"))
    }

    fn check(&self, history: &History, state: &Self::State) -> Result<(), String> {
        // Transfers are submitted in id order from one thread: the history must be ids 1..=n, no gap.
        if let Some((row, id)) = state.iter().enumerate().find(|(row, id)| **id != *row as u64 + 1) {
            return Err(format!("history row {row} holds transaction {id}, expected {}", row + 1));
        }
        let recovered = state.iter().map(|id| (*id, history.submitted.get(id).cloned().unwrap_or_default())).collect();
        history.check_units(&recovered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crashtest::{ExploreOptions, explore};
    use syncbench_simfs::Profile;

    fn opts(profile: Profile, fsync_errors: bool, points: u64) -> ExploreOptions {
        ExploreOptions { seed: 5, points, only_point: None, profile, fsync_errors, accounts_per_branch: 2000 }
    }

    #[test]
    fn fpw_and_dw_survive_crashes_and_fsync_errors() {
        for mode in [Mode::Fpw, Mode::Dw] {
            let scenario = PagesScenario::new(mode, 5, 2000, FaultSwitches::default());
            for (profile, errors) in [(Profile::Ext4, false), (Profile::Ext4, true)] {
                let summary = explore(&scenario, &opts(profile, errors, 60), |_| {}).unwrap();
                assert_eq!(summary.points, 60, "{mode:?}");
            }
        }
    }

    #[test]
    fn no_protection_is_caught_with_torn_pages() {
        let scenario = PagesScenario::new(Mode::None, 5, 2000, FaultSwitches::default());
        let failure = explore(&scenario, &opts(Profile::Ext4, false, 400), |_| {}).unwrap_err();
        assert!(failure.crash_op > 0 && failure.message.contains("fails its checksum"), "{failure:?}");
    }

    #[test]
    fn a_double_write_flush_that_skips_its_fsync_is_caught() {
        let faults = FaultSwitches { dw_skip_fsync: true, ..FaultSwitches::default() };
        let scenario = PagesScenario::new(Mode::Dw, 5, 2000, faults);
        let failure = explore(&scenario, &opts(Profile::Ext4, false, 400), |_| {}).unwrap_err();
        assert!(failure.crash_op > 0 && failure.message.contains("double-write area"), "{failure:?}");
    }
}
