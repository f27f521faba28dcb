//! `syncbench powercut db`: real databases (PostgreSQL, MariaDB, SQLite, etcd) power-cut on lab disks.
//!
//! The loop per cell (database × settings × lab profile × file system): make a fresh database on the lab
//! mount, start the installed server, run a TPC-B-like workload (transfers between accounts plus an
//! insert-only history) from several clients, tell the witness every transaction the server acknowledged,
//! cut the power at a seeded moment, kill the server, reboot the disk (journal replay), start the server
//! again (its own crash recovery), read everything back and verify: every acknowledged transfer present,
//! the balance invariant, the database's own integrity check. Then load again, cut again.
//!
//! This file is the contract between the campaign (which knows the lab and the witness) and the drivers
//! (which know one database each): [`Server`] and [`Client`]. A driver never sees the lab; the campaign
//! never speaks a database's protocol.

pub mod aim;
pub mod etcd;
pub mod mariadb;

use std::path::Path;

#[cfg(feature = "fuse")]
pub mod campaign;
pub mod cell;
#[cfg(feature = "fuse")]
pub mod command;
pub mod controls;
pub mod plant;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod process;
pub mod render;
pub mod sqlite;
pub mod verify;
pub mod workload;

/// The driver for `kind` with `settings` (`--set` pairs, in order): `Err` names an unknown key, a refused
/// value or a missing server program, in one line (exit 2).
pub fn server_for(kind: DbKind, settings: &[(String, String)]) -> Result<Box<dyn Server>, String> {
    match kind {
        DbKind::Sqlite => Ok(Box::new(sqlite::SqliteServer::new(settings)?)),
        DbKind::Mariadb => Ok(Box::new(mariadb::MariaDb::new(settings).map_err(|e| format!("{e:#}"))?)),
        DbKind::Etcd => Ok(Box::new(etcd::Etcd::new(settings).map_err(|e| format!("{e:#}"))?)),
        #[cfg(feature = "postgres")]
        DbKind::Postgres => Ok(Box::new(postgres::PostgresServer::new(settings).map_err(|e| format!("{e:#}"))?)),
        // Every database has its driver once postgres is built in.
        #[cfg(not(feature = "postgres"))]
        other => Err(format!("the {} driver is not in this build of syncbench", other.name())),
    }
}

/// The databases `powercut db` can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum DbKind {
    /// PostgreSQL (`initdb`, `postgres`; the Debian packages' version under /usr/lib/postgresql/*/bin).
    Postgres,
    /// MariaDB / MySQL with InnoDB (`mariadbd` or `mysqld`).
    Mariadb,
    /// SQLite (the `sqlite3` program; one process per client, no server).
    Sqlite,
    /// etcd (`etcd`; clients over its v3 JSON gateway).
    Etcd,
}

/// Every account starts with this balance; the sum over all accounts never changes.
pub const INITIAL_BALANCE: i64 = 1_000_000;

/// One transaction of the workload: move `amount` from account `from` to account `to` and insert a history
/// row `id` recording it, atomically, in one committed transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Transfer {
    /// Unique over the whole campaign (all cells and cuts); also names the history row.
    pub id: u64,
    /// Account debited (0-based, `< accounts`).
    pub from: u32,
    /// Account credited (0-based, `< accounts`, may equal `from`).
    pub to: u32,
    /// Amount moved (positive).
    pub amount: i64,
}

/// What the database holds, read back after recovery.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DbState {
    /// Balance of every account, indexed by account number. An account row that is missing is an error of
    /// the read (the campaign made them all), reported by the driver as `Err`.
    pub balances: Vec<i64>,
    /// Every history row, in any order.
    pub history: Vec<Transfer>,
}

/// The database's own integrity check (`pg_amcheck`, `CHECK TABLE`, `PRAGMA integrity_check`, etcd's
/// revision and key reads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Integrity {
    /// The check passed.
    pub ok: bool,
    /// The check's words (its first lines when it failed; what it checked when it passed).
    pub detail: String,
}

/// The server would not start, or not finish its recovery, in time: a failed recovery (after a cut) or a
/// refused setting (before the first cut).
#[derive(Debug)]
pub struct StartFailure {
    /// One line: what failed.
    pub summary: String,
    /// The last lines of the server's log.
    pub log_excerpt: String,
}

/// One database server (or, for SQLite, the database file and the program that opens it), with its data
/// directory on the lab mount. Dropping it kills every process it started.
pub trait Server: Send {
    /// The version that ran, as the server reports it ("PostgreSQL 15.8").
    fn version(&self) -> String;
    /// Make a fresh database in `data_dir` (an empty directory on the lab mount) with the driver's
    /// settings, start it, create `accounts` accounts of [`INITIAL_BALANCE`] and an empty history, durably.
    /// A setting the server refuses is an `Err` whose message names it (the campaign turns it into exit 2).
    fn create(&mut self, data_dir: &Path, accounts: u32) -> anyhow::Result<()>;
    /// Start the server on its existing data directory (after a cut: its own crash recovery) and wait until
    /// it accepts clients.
    fn start(&mut self) -> Result<(), StartFailure>;
    /// A new client connection (one per client thread).
    fn connect(&self) -> anyhow::Result<Box<dyn Client>>;
    /// Read every balance and history row.
    fn read_state(&mut self) -> anyhow::Result<DbState>;
    /// Run the database's own integrity check.
    fn check_integrity(&mut self) -> anyhow::Result<Integrity>;
    /// The power went: SIGKILL every process the server runs, at once, no shutdown; wait until they are gone.
    fn kill(&mut self);
    /// Stop the server cleanly (end of a cell); kill it if it does not stop in time.
    fn stop(&mut self);
}

/// One client connection.
pub trait Client: Send {
    /// Run `transfer` as one transaction (debit, credit, history insert). `Ok` only once the server has
    /// answered the COMMIT with success: the campaign acknowledges the transfer to the witness right after.
    /// A serialization or deadlock failure that rolled back is `Ok(false)` (nothing to acknowledge; the
    /// campaign may retry with a new id); any other error is `Err`.
    fn transfer(&mut self, transfer: &Transfer) -> anyhow::Result<bool>;
}
