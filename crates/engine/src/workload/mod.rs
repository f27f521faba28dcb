//! A TPC-B-like workload (pgbench's default script) on the page store, and its invariant.
//!
//! Tables are fixed-size rows in pages: branches (1 × scale), tellers (10 × scale), accounts
//! (`accounts_per_branch` × scale, 100,000 in TPC-B) and an append-only history. A transaction moves the
//! same delta into one account, one teller and one branch and appends a history row carrying its
//! transaction id, all as one log record; it is acknowledged once that record is durable.
//!
//! Invariant: sum(account balances) = sum(teller balances) = sum(branch balances) = sum(history deltas).

mod driver;

pub use driver::{RunReport, RunSpec};

use crate::pages::{PageError, PageId, PageResult, PageStore, StoreConfig, page};
use crate::storage::Storage;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Data file numbers of the tables.
const BRANCHES: u32 = 0;
const TELLERS: u32 = 1;
const ACCOUNTS: u32 = 2;
const HISTORY: u32 = 3;
/// Bytes per branch, teller and account row (pgbench's rows are about 100 bytes): id u64, balance i64,
/// filler.
const ROW_BYTES: usize = 100;
/// Bytes per history row: txn id u64, aid u32, tid u32, bid u32, pad u32, delta i64, filler.
const HISTORY_ROW_BYTES: usize = 48;
const BALANCE_AT: usize = 8;
const TELLERS_PER_BRANCH: u32 = 10;

/// Size of the bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BankConfig {
    /// Number of branches.
    pub scale: u32,
    /// Accounts per branch (100,000 in TPC-B; smaller for fast tests).
    pub accounts_per_branch: u32,
}

impl BankConfig {
    /// TPC-B sizes at `scale`.
    pub fn tpcb(scale: u32) -> BankConfig {
        BankConfig { scale, accounts_per_branch: 100_000 }
    }
}

/// Where one row lives.
#[derive(Clone, Copy, Debug)]
struct RowAt {
    page: PageId,
    offset: usize,
}

/// One transaction's choice of rows and amount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// Account (0-based).
    pub aid: u32,
    /// Teller (0-based).
    pub tid: u32,
    /// Branch (0-based).
    pub bid: u32,
    /// Amount added to all three balances.
    pub delta: i64,
}

/// The bank on a page store.
pub struct Bank<S: Storage> {
    store: std::sync::Arc<PageStore<S>>,
    config: BankConfig,
    rows_per_page: usize,
    history_rows_per_page: usize,
    /// Next history row and next transaction id (both advanced under the store's transaction lock).
    history_next: AtomicU64,
    txn_next: AtomicU64,
}

fn row_count(table: u32, c: BankConfig) -> u64 {
    match table {
        BRANCHES => c.scale as u64,
        TELLERS => (c.scale * TELLERS_PER_BRANCH) as u64,
        _ => c.scale as u64 * c.accounts_per_branch as u64,
    }
}

impl<S: Storage + Clone + 'static> Bank<S> {
    /// The store configuration a bank needs (four data files) for `mode`.
    pub fn store_config(mode: crate::pages::Mode) -> StoreConfig {
        StoreConfig::new(mode, 4)
    }

    fn new(store: PageStore<S>, config: BankConfig) -> Bank<S> {
        let body = page::body_range(store.config().page_size).len();
        Bank {
            store: std::sync::Arc::new(store),
            config,
            rows_per_page: body / ROW_BYTES,
            history_rows_per_page: body / HISTORY_ROW_BYTES,
            history_next: AtomicU64::new(0),
            txn_next: AtomicU64::new(1),
        }
    }

    /// Create and load a new bank in `dir` (all balances 0).
    pub fn create(storage: S, dir: &Path, store_config: StoreConfig, config: BankConfig) -> PageResult<Bank<S>> {
        if config.scale == 0 || config.accounts_per_branch == 0 {
            return Err(PageError::Invalid("scale and accounts per branch must be ≥ 1".into()));
        }
        let bank = Bank::new(PageStore::create(storage, dir, store_config)?, config);
        for table in [BRANCHES, TELLERS, ACCOUNTS] {
            let rows = row_count(table, config);
            let pages = rows.div_ceil(bank.rows_per_page as u64) as u32;
            for page_no in 0..pages {
                let first = page_no as u64 * bank.rows_per_page as u64;
                bank.store.load_page(PageId { file: table, page_no }, |p| {
                    for (slot, id) in (first..rows.min(first + bank.rows_per_page as u64)).enumerate() {
                        let at = page::HEADER_BYTES + slot * ROW_BYTES;
                        p[at..at + 8].copy_from_slice(&(id + 1).to_le_bytes());
                    }
                })?;
            }
        }
        bank.store.finish_load()?;
        Ok(bank)
    }

    /// Open (and recover) an existing bank. The history is scanned to find where it ends and the next
    /// transaction id.
    pub fn open(storage: S, dir: &Path, store_config: StoreConfig, config: BankConfig) -> PageResult<Bank<S>> {
        let bank = Bank::new(PageStore::open(storage, dir, store_config)?, config);
        let ids = bank.history_txn_ids()?;
        bank.history_next.store(ids.len() as u64, Ordering::Relaxed);
        bank.txn_next.store(ids.iter().max().map_or(1, |m| m + 1), Ordering::Relaxed);
        Ok(bank)
    }

    /// The page store underneath.
    pub fn store(&self) -> &std::sync::Arc<PageStore<S>> {
        &self.store
    }

    /// The bank's size.
    pub fn config(&self) -> BankConfig {
        self.config
    }

    fn row(&self, table: u32, index: u64) -> RowAt {
        let per_page = if table == HISTORY { self.history_rows_per_page } else { self.rows_per_page } as u64;
        let row_bytes = if table == HISTORY { HISTORY_ROW_BYTES } else { ROW_BYTES };
        let page = PageId { file: table, page_no: (index / per_page) as u32 };
        RowAt { page, offset: page::HEADER_BYTES + (index % per_page) as usize * row_bytes }
    }

    /// Pick a transfer from a random 64-bit value stream (pgbench: uniform aid, tid, bid; delta in
    /// -5000..=5000).
    pub fn pick(&self, mut next_u64: impl FnMut() -> u64) -> Transfer {
        let c = self.config;
        Transfer {
            aid: (next_u64() % row_count(ACCOUNTS, c)) as u32,
            tid: (next_u64() % row_count(TELLERS, c)) as u32,
            bid: (next_u64() % row_count(BRANCHES, c)) as u32,
            delta: (next_u64() % 10_001) as i64 - 5000,
        }
    }

    /// Apply a transfer and log it; returns its transaction id and LSN. Not durable until
    /// [`Bank::commit`].
    pub fn submit(&self, t: Transfer) -> PageResult<(u64, crate::pages::Lsn)> {
        self.store.update(0, |tx| {
            for (table, index) in [(ACCOUNTS, t.aid as u64), (TELLERS, t.tid as u64), (BRANCHES, t.bid as u64)] {
                let at = self.row(table, index);
                let mut balance = [0u8; 8];
                tx.read(at.page, at.offset + BALANCE_AT, &mut balance)?;
                let new = i64::from_le_bytes(balance).wrapping_add(t.delta);
                tx.write(at.page, at.offset + BALANCE_AT, &new.to_le_bytes())?;
            }
            // Both counters advance under the store's transaction lock, so history rows fill in log order.
            let txn_id = self.txn_next.fetch_add(1, Ordering::Relaxed);
            let at = self.row(HISTORY, self.history_next.fetch_add(1, Ordering::Relaxed));
            let mut row = [0u8; HISTORY_ROW_BYTES];
            row[0..8].copy_from_slice(&txn_id.to_le_bytes());
            row[8..12].copy_from_slice(&t.aid.to_le_bytes());
            row[12..16].copy_from_slice(&t.tid.to_le_bytes());
            row[16..20].copy_from_slice(&t.bid.to_le_bytes());
            row[24..32].copy_from_slice(&t.delta.to_le_bytes());
            tx.write(at.page, at.offset, &row)?;
            Ok(txn_id)
        })
    }

    /// Wait until the transaction at `lsn` is durable.
    pub fn commit(&self, lsn: crate::pages::Lsn) -> PageResult<()> {
        self.store.commit(lsn)
    }

    fn read_i64(&self, at: RowAt, field: usize) -> PageResult<i64> {
        let mut buf = [0u8; 8];
        self.store.read(at.page, at.offset + field, &mut buf)?;
        Ok(i64::from_le_bytes(buf))
    }

    fn table_sum(&self, table: u32) -> PageResult<i64> {
        (0..row_count(table, self.config))
            .try_fold(0i64, |sum, i| Ok(sum.wrapping_add(self.read_i64(self.row(table, i), BALANCE_AT)?)))
    }

    /// Transaction ids in the history, in row order (rows fill from the start; the first empty row ends
    /// the history).
    pub fn history_txn_ids(&self) -> PageResult<Vec<u64>> {
        let pages = self.store.page_count(HISTORY)? as u64;
        let mut ids = Vec::new();
        for index in 0..pages * self.history_rows_per_page as u64 {
            match self.read_i64(self.row(HISTORY, index), 0)? as u64 {
                0 => break,
                id => ids.push(id),
            }
        }
        Ok(ids)
    }

    fn history_delta_sum(&self) -> PageResult<i64> {
        let n = self.history_txn_ids()?.len() as u64;
        (0..n).try_fold(0i64, |sum, i| Ok(sum.wrapping_add(self.read_i64(self.row(HISTORY, i), 24)?)))
    }

    /// The invariant: the four sums are equal and no transaction id appears twice.
    pub fn check_invariants(&self) -> Result<(), String> {
        let err = |e: PageError| format!("reading the bank failed: {e}");
        let accounts = self.table_sum(ACCOUNTS).map_err(err)?;
        let tellers = self.table_sum(TELLERS).map_err(err)?;
        let branches = self.table_sum(BRANCHES).map_err(err)?;
        let history = self.history_delta_sum().map_err(err)?;
        if !(accounts == tellers && tellers == branches && branches == history) {
            return Err(format!(
                "balance invariant broken: accounts {accounts}, tellers {tellers}, branches {branches}, \
                 history {history}"
            ));
        }
        let mut ids = self.history_txn_ids().map_err(err)?;
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("transaction {} appears twice in the history", w[0]));
        }
        Ok(())
    }

    /// Clean shutdown.
    pub fn close(&self) -> PageResult<()> {
        self.store.close()
    }
}
