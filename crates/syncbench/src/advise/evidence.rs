//! How far each database's advice has been proven: which of its settings were held against the database's
//! own benchmark, on which disks (docs/benchmarks.md, "advise validation"). One entry per validation; a
//! database (or a version of it) with none says "not validated". Add an entry only with the benchmark's
//! recorded result: the bench/advise_*.sh script, its raw output in bench/results/ and the table in
//! docs/benchmarks.md.

use super::{Database, DatabaseAdvice, Version};
use serde::{Deserialize, Serialize};

/// One database's evidence level, as `advise --json` gives it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvidenceLevel {
    /// `mariadb`, …
    pub database: String,
    /// The version advised for.
    pub version: String,
    /// Whether the rules were held against the database's own benchmark.
    pub validated: bool,
    /// "validated against … on …" or "not validated …".
    pub level: String,
}

/// The evidence level of a piece of advice (from its database name and version).
pub fn of(advice: &DatabaseAdvice) -> EvidenceLevel {
    let target = Database::parse(&advice.database).zip(Version::parse(&advice.version));
    let (validated, level) = match target {
        Some((db, version)) => (validations(db, version).iter().any(|v| v.ran_on(version)), level(db, version)),
        None => (false, level_of_nothing()),
    };
    EvidenceLevel { database: advice.database.clone(), version: advice.version.clone(), validated, level }
}

fn level_of_nothing() -> String {
    "not validated against the database itself (rules from measurements of this disk only)".into()
}

/// One validation: a database's own benchmark against advise's picks, on these disks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validation {
    /// The database.
    pub database: Database,
    /// The versions the validated rule applies to (inclusive), and that the benchmark ran one of.
    pub versions: (Version, Version),
    /// The version the benchmark ran: only its release series counts as validated, the rest of
    /// `versions` as assumed.
    pub ran: Version,
    /// The benchmark, as the sentence names it: "sysbench oltp_insert and oltp_write_only".
    pub benchmark: &'static str,
    /// The settings whose picks were checked.
    pub settings: &'static str,
    /// Where: this machine's file systems, then the lab disk classes (`syncbench lab` profiles).
    pub file_systems: &'static [&'static str],
    /// `syncbench lab` profiles it ran on.
    pub lab_disks: &'static [&'static str],
}

/// Every validation recorded. MariaDB 10.8-10.11 share one redo-log path (traced on 10.11: O_DIRECT log,
/// one write per commit; docs/advise.md); MySQL's redo log is buffered and its O_DSYNC opens O_SYNC, so
/// MariaDB's evidence does not carry over to MySQL's innodb_flush_method.
#[rustfmt::skip] // a table: two lines per validation
pub const VALIDATIONS: &[Validation] = &[
    // bench/advise_pgbench.sh on PostgreSQL 15: ext4 and xfs 2026-11-23 (bench/results/advise_pgbench-*-10rounds.txt),
    // lab disks 2026-11-24 (bench/advise_pg_lab.sh, advise-pglab-*); 12-18 open WAL the same way by default
    // (open_* buffered with wal_level=replica).
    Validation { file_systems: &["ext4", "xfs"], ..on_ext4_and_lab(Database::Postgres, ((12, 0), (18, 99)), (15, 0),
        "pgbench TPC-B (1 and 8 clients)", "wal_sync_method") },
    // bench/advise_rocksdb.sh with Debian's RocksDB 7.8.3, 2026-11-24 (advise-rocksdb-*-v3.txt): 7.8's own
    // settings, and recycling's gain where 7.8 recycles (kSkipAnyCorruptedRecords) for the ≥ 9.1 rule.
    on_ext4_and_lab(Database::Rocksdb, ((6, 0), (10, 99)), (7, 8), "db_bench fillrandom and fillseq (sync=true, RocksDB 7.8.3)",
        "recycle_log_file_num, wal_bytes_per_sync, manual_wal_flush"),
    // bench/advise_etcd.sh with Debian's etcd 3.4.23, 2026-11-24 (advise-etcd-*); the rule times the disk,
    // which 3.4-3.6 use alike (fallocated WAL segments, fdatasync per batch).
    on_ext4_and_lab(Database::Etcd, ((3, 4), (3, 6)), (3, 4), "etcd 3.4's own WAL fsync p99 (/metrics) and etcdctl check perf",
        "the pass/fail verdict"),
    on_ext4_and_lab(Database::Mariadb, ((10, 8), (10, 11)), (10, 11), "sysbench oltp_insert and oltp_write_only (1 and 16 threads)",
        "innodb_flush_method"),
    on_ext4_and_lab(Database::Sqlite, ((3, 7), (3, 99)), (3, 40), "SQLite commits/s in WAL and rollback-journal mode",
        "journal_mode and the predicted cost of synchronous=FULL"),
];

/// A validation on ext4 and the three lab disks (bench/advise_*_lab.sh), the set every benchmark ran on;
/// versions as `(major, minor)`: the range the rule applies to, and the one the benchmark ran.
const fn on_ext4_and_lab(
    database: Database,
    ((lo_major, lo_minor), (hi_major, hi_minor)): ((u32, u32), (u32, u32)),
    (ran_major, ran_minor): (u32, u32),
    benchmark: &'static str,
    settings: &'static str,
) -> Validation {
    Validation {
        database,
        versions: (Version::new(lo_major, lo_minor), Version::new(hi_major, hi_minor)),
        ran: Version::new(ran_major, ran_minor),
        benchmark,
        settings,
        file_systems: &["ext4"],
        lab_disks: &["hdd-7200", "nvme-consumer", "nvme-plp"],
    }
}

/// Why a database without a validation of its own cannot borrow a neighbour's (said after "not validated").
const NOT_SHARED: &[(Database, &str)] = &[(
    Database::Mysql,
    "MariaDB 10.11's sysbench validation does not carry over: MySQL writes its redo log buffered, opens O_DSYNC \
     as O_SYNC and has innodb_use_fdatasync, where MariaDB 10.8+ writes it O_DIRECT under every flush method",
)];

impl Validation {
    /// Whether `version` is of the release series the benchmark ran (PostgreSQL's series is its major
    /// version; the others' their major.minor).
    pub fn ran_on(&self, version: Version) -> bool {
        let same_minor = self.database == Database::Postgres || self.ran.minor == version.minor;
        self.ran.major == version.major && same_minor
    }

    /// "PostgreSQL 15" as the sentence names the version that ran.
    fn ran_name(&self) -> String {
        match self.database {
            Database::Postgres => format!("{} {}", self.database.name(), self.ran.major),
            _ => format!("{} {}", self.database.name(), self.ran),
        }
    }
}

/// The validations of this database at this version.
pub fn validations(database: Database, version: Version) -> Vec<&'static Validation> {
    VALIDATIONS
        .iter()
        .filter(|v| v.database == database && v.versions.0 <= version && version <= v.versions.1)
        .collect()
}

/// The evidence level in one phrase: "validated against sysbench … for innodb_flush_method on ext4 and lab
/// disks hdd-7200, …" or "not validated against the database itself …".
pub fn level(database: Database, version: Version) -> String {
    let found = validations(database, version);
    if found.is_empty() {
        return match NOT_SHARED.iter().find(|(db, _)| *db == database) {
            Some((_, why)) => format!("{}; {why}", level_of_nothing()),
            None => level_of_nothing(),
        };
    }
    let each: Vec<String> = found
        .iter()
        .map(|v| {
            let what = format!("{} for {} on {}", v.benchmark, v.settings, places(v));
            if v.ran_on(version) {
                format!("validated against {what}")
            } else {
                format!("not validated on {version} itself: the rule was validated on {} against {what}, and is assumed to hold for {version}", v.ran_name())
            }
        })
        .collect();
    each.join("; ")
}

/// "ext4 and lab disks hdd-7200, nvme-consumer, nvme-plp".
fn places(v: &Validation) -> String {
    let fs = v.file_systems.join(", ");
    match v.lab_disks {
        [] => fs,
        disks => format!("{fs} and lab disks {}", disks.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_database_says_how_far_it_was_validated() {
        let maria = level(Database::Mariadb, Version::new(10, 11));
        assert_eq!(
            maria,
            "validated against sysbench oltp_insert and oltp_write_only (1 and 16 threads) for innodb_flush_method \
             on ext4 and lab disks hdd-7200, nvme-consumer, nvme-plp"
        );
        // 11.x replaced innodb_flush_method: its rule was not held against the server.
        assert!(level(Database::Mariadb, Version::new(11, 4)).starts_with("not validated"));
        let mysql = level(Database::Mysql, Version::new(8, 4));
        assert!(mysql.starts_with("not validated") && mysql.contains("does not carry over"), "{mysql}");
        assert!(level(Database::Sqlite, Version::new(3, 40)).starts_with("validated against SQLite commits/s"));
        assert_eq!(
            level(Database::Postgres, Version::new(15, 0)),
            "validated against pgbench TPC-B (1 and 8 clients) for wal_sync_method on ext4, xfs and lab disks \
             hdd-7200, nvme-consumer, nvme-plp"
        );
    }

    #[test]
    fn a_version_the_benchmark_did_not_run_is_assumed_not_validated() {
        let rocks = level(Database::Rocksdb, Version::new(10, 0));
        assert!(rocks.starts_with("not validated on 10.0 itself: the rule was validated on rocksdb 7.8"), "{rocks}");
        assert!(rocks.ends_with("assumed to hold for 10.0"), "{rocks}");
        let etcd = level(Database::Etcd, Version::new(3, 5));
        assert!(etcd.starts_with("not validated on 3.5 itself"), "{etcd}");
        // PostgreSQL's series is its major version: 15.18 is 15.
        assert!(level(Database::Postgres, Version::new(15, 18)).starts_with("validated against pgbench"));
        assert!(level(Database::Postgres, Version::new(16, 0)).starts_with("not validated on 16.0 itself"));
    }

    #[test]
    fn every_validation_covers_a_version_the_rules_know() {
        for v in VALIDATIONS {
            assert!(super::super::versions::is_known(v.database, v.versions.0), "{v:?}");
            assert!(v.versions.0 <= v.versions.1, "{v:?}");
            assert!(!v.file_systems.is_empty() || !v.lab_disks.is_empty(), "{v:?}");
        }
    }
}
