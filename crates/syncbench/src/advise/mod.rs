//! `advise`: per-database durability settings, each backed by the measurement that decided it.
//!
//! Every rule is a pure function of [`Input`] (environment, verdicts, `run` results, database version),
//! so the advice is testable from fixture runs without a disk. A rule that needs a number that was not
//! measured says so instead of guessing.

pub mod cases;
mod etcd;
pub mod evidence;
mod export;
mod facts;
pub mod measure;
mod mysql;
mod postgres;
mod render;
mod rocksdb;
pub mod safety;
mod sqlite;
mod untorn;
pub mod versions;

pub use etcd::{ETCD_P99_LIMIT_NS, ETCD_WRITE_BYTES};
pub use facts::{Facts, Rate};
pub use render::{answer, body, to_text};

use crate::core::environment::Environment;
use crate::core::schema::CaseResult;
use crate::core::verdict::{Severity, Verdict, VerdictCode};
use serde::{Deserialize, Serialize};

/// The databases syncbench advises on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Database {
    /// PostgreSQL.
    Postgres,
    /// MySQL (InnoDB).
    Mysql,
    /// MariaDB (InnoDB).
    Mariadb,
    /// SQLite in WAL mode.
    Sqlite,
    /// RocksDB.
    Rocksdb,
    /// etcd (bbolt + its WAL).
    Etcd,
}

impl Database {
    /// Every database, in output order.
    pub const ALL: [Database; 6] =
        [Database::Postgres, Database::Mysql, Database::Mariadb, Database::Sqlite, Database::Rocksdb, Database::Etcd];

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Database::Postgres => "postgres",
            Database::Mysql => "mysql",
            Database::Mariadb => "mariadb",
            Database::Sqlite => "sqlite",
            Database::Rocksdb => "rocksdb",
            Database::Etcd => "etcd",
        }
    }

    /// Parse a command-line name (with a few common aliases).
    pub fn parse(name: &str) -> Option<Database> {
        Some(match name.to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" | "pg" => Database::Postgres,
            "mysql" | "innodb" => Database::Mysql,
            "mariadb" => Database::Mariadb,
            "sqlite" | "sqlite3" => Database::Sqlite,
            "rocksdb" => Database::Rocksdb,
            "etcd" => Database::Etcd,
            _ => return None,
        })
    }

    /// The name in a sentence: `PostgreSQL`, `MariaDB`, …
    pub fn title(self) -> &'static str {
        match self {
            Database::Postgres => "PostgreSQL",
            Database::Mysql => "MySQL",
            Database::Mariadb => "MariaDB",
            Database::Sqlite => "SQLite",
            Database::Rocksdb => "RocksDB",
            Database::Etcd => "etcd",
        }
    }

    /// The version assumed when none is given: the current stable major.
    pub fn default_version(self) -> Version {
        match self {
            Database::Postgres => Version::new(17, 0),
            Database::Mysql => Version::new(8, 4),
            Database::Mariadb => Version::new(11, 4),
            Database::Sqlite => Version::new(3, 46),
            Database::Rocksdb => Version::new(10, 0),
            Database::Etcd => Version::new(3, 5),
        }
    }
}

/// A database version, major.minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Version {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl Version {
    /// `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Version {
        Version { major, minor }
    }

    /// Parse `16`, `8.0`, `8.0.36` (patch ignored).
    pub fn parse(text: &str) -> Option<Version> {
        let mut parts = text.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = match parts.next() {
            Some(m) => m.parse().ok()?,
            None => 0,
        };
        Some(Version { major, minor })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// One database to advise on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Which database.
    pub database: Database,
    /// Which version (the default when not given).
    pub version: Version,
}

/// Everything the rules may look at.
#[derive(Clone, Debug)]
pub struct Input<'a> {
    /// The storage under the directory.
    pub environment: &'a Environment,
    /// The probe's verdicts.
    pub verdicts: &'a [Verdict],
    /// The measured cases.
    pub results: &'a [CaseResult],
    /// The same cases measured again under background writes (`--background-writes`), if they were.
    pub under_writes: Option<&'a crate::core::schema::BackgroundRun>,
    /// The results are from a run interrupted before every round ran (`--from` a PARTIAL run).
    pub partial: bool,
}

/// A measured number behind a setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Which case (section and label).
    pub case: String,
    /// Method measured.
    pub method: String,
    /// Commits per second.
    pub ops_per_s: f64,
    /// Median commit latency, ns.
    pub latency_ns_p50: u64,
    /// 99th percentile commit latency, ns.
    pub latency_ns_p99: u64,
}

/// One recommended setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    /// The setting's name as the database spells it.
    pub name: String,
    /// The recommended value.
    pub value: String,
    /// Why, in a sentence or two, citing the numbers.
    pub reason: String,
    /// The measurements that decided it.
    pub evidence: Vec<Evidence>,
}

/// All advice for one database.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatabaseAdvice {
    /// `postgres`, `mysql`, …
    pub database: String,
    /// The version the advice is for.
    pub version: String,
    /// When the storage itself is the problem (not durable, or too fast to be honest): said first,
    /// because no setting fixes it.
    pub storage_warning: Option<String>,
    /// The settings.
    pub settings: Vec<Setting>,
    /// What to keep in mind.
    pub caveats: Vec<String>,
    /// For pass/fail rules (etcd): whether the storage passes.
    pub pass: Option<bool>,
}

/// `advise`'s JSON payload.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AdvisePayload {
    /// The directory advised on.
    pub dir: String,
    /// Where the measurements came from (`measured` or the `--from` path).
    pub source: String,
    /// One entry per requested database.
    pub advice: Vec<DatabaseAdvice>,
    /// How far each database's advice was validated against the database itself, in `advice`'s order.
    #[serde(default)]
    pub evidence: Vec<evidence::EvidenceLevel>,
    /// What power cuts of each database showed for its settings (`syncbench powercut db`), in `advice`'s
    /// order.
    #[serde(default)]
    pub power_cuts: Vec<safety::PowerCutEvidence>,
    /// The cases the advice was computed from.
    pub results: Vec<CaseResult>,
    /// PostgreSQL's and etcd's cases measured again under background writes (`--background-writes`, or
    /// the `--from` run's), with what the writer did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_writes: Option<crate::core::schema::BackgroundRun>,
}

/// Said by the rules whose answer changes when the disk is busy (etcd's p99, PostgreSQL's WAL on a shared
/// file system) when the measurement had no background writes; the same words, so the text says it once.
pub const IDLE_DISK_NOTE: &str = "Measured on an idle disk: in use, a commit's sync also waits behind the write-back of \
     the database's own checkpoints and of other tenants' writes to the same disk. To measure that too: \
     `syncbench advise DIR --background-writes 50MiB/s` (or `--from` a `syncbench run --background-writes 50MiB/s \
     --json FILE`).";

/// [`IDLE_DISK_NOTE`], unless other writes reached the disk while the cases ran: then it says how much
/// instead of calling the disk idle.
pub fn idle_disk_note(results: &[CaseResult]) -> String {
    let other_bytes: u64 = results.iter().flat_map(|r| &r.disturbances).map(|d| d.foreign_write_bytes).sum();
    if other_bytes == 0 {
        return IDLE_DISK_NOTE.to_string();
    }
    format!(
        "Measured without background writes of syncbench's own, but not on an idle disk: {} of other writes \
         reached it while the cases ran (see the note on disturbed cases). In use, a commit's sync also waits \
         behind the write-back of the database's own checkpoints and of other tenants' writes. To measure that \
         on purpose: `syncbench advise DIR --background-writes 50MiB/s`.",
        crate::core::units::format_mib(other_bytes)
    )
}

/// Said when the results are from an interrupted run.
pub const PARTIAL_NOTE: &str = "From a PARTIAL run (interrupted before every round ran): each case's numbers come \
     from the rounds it finished, and cases it never reached are missing, so a choice between methods rests on \
     less than a full run. Run `syncbench run` to the end before applying this advice.";

/// The cases measured while something else used the disk or the CPU, named with what was seen, if any.
fn disturbed_inputs_note(results: &[CaseResult]) -> Option<String> {
    let disturbed: Vec<&CaseResult> = results.iter().filter(|r| r.lower_bound || !r.disturbances.is_empty()).collect();
    let first = disturbed.first()?;
    let what = first.disturbances.first().map_or("its rate is a lower bound".to_string(), |d| d.detail.clone());
    let more = match disturbed.len() - 1 {
        0 => String::new(),
        n => format!(", and {n} more"),
    };
    Some(format!(
        "{} of {} cases were disturbed while measured — {} {}: {what}{more}. Other I/O and CPU steal only slow \
         syncs: a disturbed rate is a lower bound, or comes from the rounds left after the disturbed ones were \
         dropped; re-run on a quieter disk to confirm a choice that rests on one.",
        disturbed.len(),
        results.len(),
        first.section,
        first.label.trim(),
    ))
}

/// A rate as MiB/s with one decimal.
fn mib_per_s(bytes_per_s: f64) -> String {
    format!("{:.1} MiB/s", bytes_per_s / (1u64 << 20) as f64)
}

/// Advise on every target.
pub fn advise(input: &Input<'_>, targets: &[Target]) -> Vec<DatabaseAdvice> {
    let facts = Facts::new(input);
    targets.iter().map(|t| advise_one(&facts, *t)).collect()
}

fn advise_one(facts: &Facts<'_>, target: Target) -> DatabaseAdvice {
    let mut advice = match target.database {
        Database::Postgres => postgres::advise(facts, target.version),
        Database::Mysql => mysql::advise_mysql(facts, target.version),
        Database::Mariadb => mysql::advise_mariadb(facts, target.version),
        Database::Sqlite => sqlite::advise(facts),
        Database::Rocksdb => rocksdb::advise(facts, target.version),
        Database::Etcd => etcd::advise(facts),
    };
    advice.database = target.database.name().to_string();
    advice.version = target.version.to_string();
    advice.storage_warning = storage_warning(facts);
    safety::annotate(&mut advice);
    // What the inputs were, before what the rules say about them.
    let inputs =
        facts.partial.then(|| PARTIAL_NOTE.to_string()).into_iter().chain(disturbed_inputs_note(facts.results));
    advice.caveats.splice(0..0, inputs);
    advice
}

/// The storage-level problem no database setting fixes, if any.
fn storage_warning(facts: &Facts<'_>) -> Option<String> {
    let fs = facts.env.fs_type.as_str();
    if matches!(fs, "tmpfs" | "ramfs") {
        return Some(format!(
            "{fs} keeps everything in memory: nothing written here survives a reboot, whatever the settings below."
        ));
    }
    let serious: Vec<&Verdict> = facts
        .verdicts
        .iter()
        .filter(|v| {
            v.severity == Severity::Critical || (v.severity == Severity::Warning && is_honesty_code(v.code.as_str()))
        })
        .collect();
    if serious.is_empty() {
        return None;
    }
    let what: Vec<String> = serious.iter().map(|v| v.message.clone()).collect();
    Some(format!(
        "{} No database setting fixes this: the settings below only choose the fastest way to ask for durability.",
        what.join(" ")
    ))
}

/// Verdict codes that mean "acknowledged flushes may not be durable", and the retired `not_durable_tmpfs`
/// that older files carry. Listed by code, not by fragments of it: a fragment list once named codes that
/// never existed ("nobarrier", "lying") and missed `flush_faster_than_device`.
fn is_honesty_code(code: &str) -> bool {
    use VerdictCode::*;
    const DOUBT_DURABILITY: [VerdictCode; 5] =
        [NotDurableMemoryFs, FlushesDisabled, ImplausibleFlushRate, DurableCommitsWithoutFlush, FlushFasterThanDevice];
    code == "not_durable_tmpfs" || DOUBT_DURABILITY.iter().any(|c| c.name() == code)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_background;
