//! Safety evidence: what `syncbench powercut db` recorded when it cut the power under a real database with
//! given settings, so that `advise` cites, for every setting it gives and for the unsafe values it warns
//! against, whether acknowledged commits survived ("kept every acknowledged commit in 300 cuts on lab disks
//! …", "lost acknowledged commits in 21 of 25 cuts"), the way [`super::evidence`] cites the speed
//! validations. A setting no recorded cut ran says "no power-cut evidence".
//!
//! # Adding a result
//!
//! One struct in [`POWERCUTS`] per recorded row of docs/benchmarks.md ("powercut db", "powercut db:
//! PostgreSQL, MariaDB, etcd"): the database, the version that ran, the `--set` settings (empty: the
//! server's defaults), the profiles and file systems, cuts, cuts damaged and what the table says about the
//! damage (`None`: the table does not break it down), the design, the date and the bench/results files.
//! Start from [`CLEAN`] (0 damaged) or [`DAMAGED`] and name only what differs, e.g.
//!
//! ```text
//! PowercutRecord { database: Postgres, ran: "15.18", cuts: 150, results: &["bench/results/…/x.json"], ..CLEAN },
//! ```
//!
//! A torn-page test (full_page_writes / innodb_doublewrite off against on, on the same seeds) goes in
//! [`TORN_PAGE_TESTS`] instead, one struct per pair. A key the server's defaults decide must be in
//! [`DEFAULTS`]. `tests::every_record_is_well_formed` checks every entry (profiles the lab knows, counts
//! that add up, keys with defaults, a known version, result files that exist). Only recorded results: a
//! number here must be in docs/benchmarks.md with its raw output.
//!
//! # How a record is matched to advice
//!
//! A record's *deviations* from a piece of advice are the keys (the database's durability keys in
//! [`DEFAULTS`], and every key the record set) where the value it ran differs from the value advise gives,
//! or the default where advise gives none. A record with no deviation ran advise's configuration: it is
//! evidence for each advised setting whose value it ran. A record whose deviations were all set on purpose
//! (`--set`) and include a setting's key is cited as another value of that setting ("synchronous=NORMAL lost
//! …"); one whose deviations are keys advise does not give is cited under the database ("other settings").
//! Records on a disk that lies about flushes (`cheating-ssd`) are never evidence for a setting; they are
//! cited once per database. Evidence applies to the release series that ran (PostgreSQL's major, the
//! others' major.minor); for another version it is named as such, never counted as its own.

use super::Database;

/// How the campaign cut the power.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// Every process frozen, the disk cut under the I/O in flight, then the processes killed.
    FreezeCutKill,
    /// The campaign's first design: the server killed, then the disk cut (a running fsync may finish: a
    /// weaker cut).
    KillFirst,
}

/// One recorded `syncbench powercut db` result: a row of docs/benchmarks.md's tables.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PowercutRecord {
    /// The database.
    pub database: Database,
    /// The version that ran, as the server said it (`15.18`).
    pub ran: &'static str,
    /// The `--set` settings, as given; empty for the server's defaults.
    pub settings: &'static [(&'static str, &'static str)],
    /// The lab profiles.
    pub profiles: &'static [&'static str],
    /// The file systems on them.
    pub file_systems: &'static [&'static str],
    /// The lab disk's untorn unit (512 B: the lab's default, tearing at sectors).
    pub untorn_bytes: u64,
    /// Power cuts, over every profile × file system.
    pub cuts: u32,
    /// Cuts with any damage: a lost acknowledged commit, a failed recovery or a failed integrity check.
    pub damaged: u32,
    /// Cuts that lost acknowledged commits (`None`: the table does not say).
    pub lost_ack_cuts: Option<u32>,
    /// Cuts after which the server did not recover (`None`: the table does not say).
    pub failed_recoveries: Option<u32>,
    /// Cuts after which the database's own integrity check failed (`None`: the table does not say).
    pub integrity_failures: Option<u32>,
    /// How the power was cut.
    pub design: Design,
    /// When (UTC date).
    pub date: &'static str,
    /// The raw output, under bench/results/.
    pub results: &'static [&'static str],
}

/// The honest lab disks every acceptance cell ran on.
const HONEST: &[&str] = &["hdd-7200", "nvme-consumer", "nvme-plp"];
const EXT4_XFS: &[&str] = &["ext4", "xfs"];
const NVME_CONSUMER: &[&str] = &["nvme-consumer"];
const EXT4: &[&str] = &["ext4"];
const CHEATING: &[&str] = &["cheating-ssd"];

/// A record with nothing damaged, on the three honest profiles × ext4, xfs: the base of a new entry.
pub const CLEAN: PowercutRecord = PowercutRecord {
    database: Database::Postgres,
    ran: "",
    settings: &[],
    profiles: HONEST,
    file_systems: EXT4_XFS,
    untorn_bytes: 512,
    cuts: 0,
    damaged: 0,
    lost_ack_cuts: Some(0),
    failed_recoveries: Some(0),
    integrity_failures: Some(0),
    design: Design::FreezeCutKill,
    date: "2026-11-28",
    results: &[],
};

/// A record with damage the table does not break down, on nvme-consumer × ext4 (the controls' cell).
pub const DAMAGED: PowercutRecord = PowercutRecord {
    profiles: NVME_CONSUMER,
    file_systems: EXT4,
    lost_ack_cuts: None,
    failed_recoveries: None,
    integrity_failures: None,
    ..CLEAN
};

const PG: &str = "15.18";
const MARIA: &str = "10.11.19";
const ETCD: &str = "3.4.23";
const SQLITE: &str = "3.40.1";

use Database::{Etcd, Mariadb, Postgres, Sqlite};
use Design::KillFirst;

/// Every recorded `powercut db` result (docs/benchmarks.md, 2026-11-28 and 2026-11-29; the 29th's
/// freeze-cut-kill re-runs replaced the first design's rows). Re-runs from the branch `torn` join these
/// rows: one struct each (see the module doc).
pub const POWERCUTS: &[PowercutRecord] = &[
    // PostgreSQL 15.18 (bench/powercut_db_postgres.sh; postgres-NOTES.txt).
    PowercutRecord {
        database: Postgres,
        ran: PG,
        cuts: 150,
        date: "2026-11-29",
        results: &[
            "bench/results/powercut-db-2026-11-29/postgres-safe-hdd-7200.json",
            "bench/results/powercut-db-2026-11-29/postgres-safe-nvme-consumer.json",
            "bench/results/powercut-db-2026-11-29/postgres-safe-nvme-plp.json",
        ],
        ..CLEAN
    },
    PowercutRecord {
        database: Postgres,
        ran: PG,
        settings: &[("wal_sync_method", "fdatasync")],
        profiles: NVME_CONSUMER,
        cuts: 50,
        date: "2026-11-29",
        results: &[
            "bench/results/powercut-db-2026-11-29/postgres-wal_sync_method-fdatasync-ext4.json",
            "bench/results/powercut-db-2026-11-29/postgres-wal_sync_method-fdatasync-xfs.json",
        ],
        ..CLEAN
    },
    PowercutRecord {
        database: Postgres,
        ran: PG,
        settings: &[("wal_sync_method", "open_datasync")],
        profiles: NVME_CONSUMER,
        cuts: 50,
        date: "2026-11-29",
        results: &[
            "bench/results/powercut-db-2026-11-29/postgres-wal_sync_method-open_datasync-ext4.json",
            "bench/results/powercut-db-2026-11-29/postgres-wal_sync_method-open_datasync-xfs.json",
        ],
        ..CLEAN
    },
    PowercutRecord {
        database: Postgres,
        ran: PG,
        settings: &[("wal_sync_method", "fsync")],
        profiles: NVME_CONSUMER,
        cuts: 50,
        date: "2026-11-29",
        results: &[
            "bench/results/powercut-db-2026-11-29/postgres-wal_sync_method-fsync-ext4.json",
            "bench/results/powercut-db-2026-11-29/postgres-wal_sync_method-fsync-xfs.json",
        ],
        ..CLEAN
    },
    PowercutRecord {
        database: Postgres,
        ran: PG,
        settings: &[("wal_sync_method", "open_sync")],
        profiles: NVME_CONSUMER,
        cuts: 50,
        date: "2026-11-29",
        results: &[
            "bench/results/powercut-db-2026-11-29/postgres-wal_sync_method-open_sync-ext4.json",
            "bench/results/powercut-db-2026-11-29/postgres-wal_sync_method-open_sync-xfs.json",
        ],
        ..CLEAN
    },
    PowercutRecord {
        database: Postgres,
        ran: PG,
        profiles: NVME_CONSUMER,
        file_systems: EXT4,
        cuts: 25,
        results: &["bench/results/powercut-db-2026-11-28/postgres-after-restack-defaults.json"],
        ..CLEAN
    },
    PowercutRecord {
        database: Postgres,
        ran: PG,
        settings: &[("recovery_init_sync_method", "syncfs")],
        profiles: &["hdd-7200"],
        file_systems: EXT4,
        cuts: 10,
        design: KillFirst,
        results: &["bench/results/powercut-db-2026-11-28/postgres-recovery_init_sync_method-syncfs-hdd.json"],
        ..CLEAN
    },
    PowercutRecord {
        database: Postgres,
        ran: PG,
        settings: &[("synchronous_commit", "off")],
        cuts: 25,
        damaged: 24,
        results: &["bench/results/powercut-db-2026-11-28/postgres-after-restack-synchronous_commit-off.json"],
        ..DAMAGED
    },
    PowercutRecord {
        database: Postgres,
        ran: PG,
        settings: &[("fsync", "off")],
        cuts: 25,
        damaged: 25,
        lost_ack_cuts: Some(24),
        failed_recoveries: Some(1),
        integrity_failures: Some(0),
        date: "2026-11-29",
        results: &["bench/results/powercut-db-2026-11-29/postgres-fsync-off.json"],
        ..DAMAGED
    },
    PowercutRecord {
        database: Postgres,
        ran: PG,
        profiles: CHEATING,
        cuts: 25,
        damaged: 25,
        lost_ack_cuts: Some(0),
        failed_recoveries: Some(25),
        integrity_failures: Some(0),
        date: "2026-11-29",
        results: &["bench/results/powercut-db-2026-11-29/postgres-cheating-ssd.json"],
        ..DAMAGED
    },
    // MariaDB 10.11.19 (bench/powercut_db_server.sh mariadb; README-mariadb-etcd.md, mariadb-summary.txt).
    PowercutRecord {
        database: Mariadb,
        ran: MARIA,
        cuts: 150,
        results: &["bench/results/powercut-db-2026-11-28/mariadb-defaults.json"],
        ..CLEAN
    },
    PowercutRecord {
        database: Mariadb,
        ran: MARIA,
        settings: &[("innodb_flush_method", "O_DSYNC")],
        cuts: 150,
        results: &["bench/results/powercut-db-2026-11-28/mariadb-o_dsync.json"],
        ..CLEAN
    },
    PowercutRecord {
        database: Mariadb,
        ran: MARIA,
        settings: &[("innodb_flush_log_at_trx_commit", "0")],
        cuts: 25,
        damaged: 20,
        lost_ack_cuts: Some(20),
        failed_recoveries: Some(0),
        integrity_failures: Some(0),
        date: "2026-11-29",
        results: &["bench/results/powercut-db-2026-11-29/mariadb-trx0.json"],
        ..DAMAGED
    },
    PowercutRecord {
        database: Mariadb,
        ran: MARIA,
        settings: &[("innodb_flush_log_at_trx_commit", "2")],
        cuts: 25,
        damaged: 21,
        lost_ack_cuts: Some(21),
        failed_recoveries: Some(0),
        integrity_failures: Some(0),
        date: "2026-11-29",
        results: &["bench/results/powercut-db-2026-11-29/mariadb-trx2.json"],
        ..DAMAGED
    },
    PowercutRecord {
        database: Mariadb,
        ran: MARIA,
        profiles: CHEATING,
        cuts: 25,
        damaged: 25,
        lost_ack_cuts: Some(0),
        failed_recoveries: Some(25),
        integrity_failures: Some(0),
        date: "2026-11-29",
        results: &["bench/results/powercut-db-2026-11-29/mariadb-cheating.json"],
        ..DAMAGED
    },
    // etcd 3.4.23 (bench/powercut_db_server.sh etcd; README-mariadb-etcd.md).
    PowercutRecord {
        database: Etcd,
        ran: ETCD,
        cuts: 150,
        results: &["bench/results/powercut-db-2026-11-28/etcd-defaults.json"],
        ..CLEAN
    },
    PowercutRecord {
        database: Etcd,
        ran: ETCD,
        settings: &[("unsafe-no-fsync", "true")],
        cuts: 25,
        damaged: 25,
        lost_ack_cuts: Some(25),
        failed_recoveries: Some(0),
        integrity_failures: Some(25),
        date: "2026-11-29",
        results: &["bench/results/powercut-db-2026-11-29/etcd-no_fsync.json"],
        ..DAMAGED
    },
    PowercutRecord {
        database: Etcd,
        ran: ETCD,
        profiles: CHEATING,
        cuts: 25,
        damaged: 25,
        lost_ack_cuts: Some(0),
        failed_recoveries: Some(1),
        integrity_failures: Some(24),
        date: "2026-11-29",
        results: &["bench/results/powercut-db-2026-11-29/etcd-cheating.json"],
        ..DAMAGED
    },
    // SQLite 3.40.1 (bench/powercut_db.sh; seeds 1 and 2 pooled where both ran).
    PowercutRecord {
        database: Sqlite,
        ran: SQLITE,
        settings: &[("journal_mode", "WAL"), ("synchronous", "FULL")],
        cuts: 450,
        results: &["bench/results/powercut-db-2026-11-28/main", "bench/results/powercut-db-2026-11-28/seed2"],
        ..CLEAN
    },
    PowercutRecord {
        database: Sqlite,
        ran: SQLITE,
        settings: &[("journal_mode", "DELETE"), ("synchronous", "EXTRA")],
        cuts: 150,
        results: &["bench/results/powercut-db-2026-11-28/extra"],
        ..CLEAN
    },
    PowercutRecord {
        database: Sqlite,
        ran: SQLITE,
        settings: &[("journal_mode", "DELETE"), ("synchronous", "FULL")],
        cuts: 450,
        damaged: 100,
        lost_ack_cuts: Some(100),
        results: &["bench/results/powercut-db-2026-11-28/main", "bench/results/powercut-db-2026-11-28/seed2"],
        ..CLEAN
    },
    PowercutRecord {
        database: Sqlite,
        ran: SQLITE,
        settings: &[("journal_mode", "DELETE"), ("synchronous", "OFF")],
        profiles: &["hdd-7200"],
        file_systems: EXT4,
        cuts: 25,
        damaged: 25,
        lost_ack_cuts: Some(25),
        results: &["bench/results/powercut-db-2026-11-28/main"],
        ..CLEAN
    },
    PowercutRecord {
        database: Sqlite,
        ran: SQLITE,
        settings: &[("journal_mode", "WAL"), ("synchronous", "NORMAL")],
        profiles: &["hdd-7200"],
        file_systems: EXT4,
        cuts: 25,
        damaged: 25,
        lost_ack_cuts: Some(25),
        results: &["bench/results/powercut-db-2026-11-28/main"],
        ..CLEAN
    },
    PowercutRecord {
        database: Sqlite,
        ran: SQLITE,
        settings: &[("journal_mode", "WAL"), ("synchronous", "FULL")],
        profiles: CHEATING,
        file_systems: EXT4,
        cuts: 25,
        damaged: 25,
        lost_ack_cuts: None,
        failed_recoveries: Some(25),
        results: &["bench/results/powercut-db-2026-11-28/main"],
        ..CLEAN
    },
    PowercutRecord {
        database: Sqlite,
        ran: SQLITE,
        settings: &[("journal_mode", "DELETE"), ("synchronous", "FULL")],
        profiles: CHEATING,
        file_systems: EXT4,
        cuts: 25,
        damaged: 25,
        lost_ack_cuts: None,
        failed_recoveries: Some(25),
        results: &["bench/results/powercut-db-2026-11-28/main"],
        ..CLEAN
    },
];

/// One torn-page test: a torn-page protection off against on, on the same seeds, profile and file system.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TornPageTest {
    /// The database.
    pub database: Database,
    /// The version that ran.
    pub ran: &'static str,
    /// The protection (`full_page_writes`, `innodb_doublewrite`) and its off and on values.
    pub setting: &'static str,
    /// The value that turns it off.
    pub off: &'static str,
    /// The value that keeps it on.
    pub on: &'static str,
    /// The lab profile and file system.
    pub profile: &'static str,
    /// The file system.
    pub file_system: &'static str,
    /// The lab disk's untorn unit.
    pub untorn_bytes: u64,
    /// Whether the cuts were aimed at moments a data-page write was in flight (else seeded moments).
    pub aimed: bool,
    /// Cuts per side.
    pub cuts: u32,
    /// Cuts damaged with the protection off, and what the damage was.
    pub off_damaged: u32,
    /// Cuts damaged with it on.
    pub on_damaged: u32,
    /// What the damage was ("failed recovery", "failed its page checksums").
    pub damage: &'static str,
    /// How the power was cut.
    pub design: Design,
    /// When.
    pub date: &'static str,
    /// The raw output of both sides.
    pub results: &'static [&'static str],
}

/// Every recorded torn-page test.
pub const TORN_PAGE_TESTS: &[TornPageTest] = &[
    TornPageTest {
        database: Mariadb,
        ran: MARIA,
        setting: "innodb_doublewrite",
        off: "OFF",
        on: "ON",
        profile: "nvme-consumer",
        file_system: "ext4",
        untorn_bytes: 512,
        aimed: false,
        cuts: 25,
        off_damaged: 2,
        on_damaged: 0,
        damage: "failed recovery",
        design: Design::FreezeCutKill,
        date: "2026-11-28",
        results: &[
            "bench/results/powercut-db-2026-11-28/mariadb-dw_off.json",
            "bench/results/powercut-db-2026-11-28/mariadb-defaults.json",
        ],
    },
    // Aimed torn-page results (branch `torn`, docs/benchmarks.md "powercut db: torn pages"): `--aim
    // data-files`, 5 rounds of 10 cuts alternating off and on with the same seeds. Off on a 16 KiB-untorn
    // disk ran without an on side (4 of 50 and 5 of 50 damaged on ext4, 0 of 50 on ext4-bigalloc): not a
    // pair, so not here.
    TornPageTest {
        database: Postgres,
        ran: PG,
        setting: "full_page_writes",
        off: "off",
        on: "on",
        profile: "nvme-consumer",
        file_system: "ext4",
        untorn_bytes: 4096,
        aimed: true,
        cuts: 50,
        off_damaged: 26,
        on_damaged: 0,
        damage: "failed recovery (page checksum)",
        design: Design::FreezeCutKill,
        date: "2026-11-29",
        results: &[
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-off-4KiB-files-r0.json",
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-on-4KiB-files-r0.json",
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-off-4KiB-files-r1.json",
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-on-4KiB-files-r1.json",
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-off-4KiB-files-r2.json",
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-on-4KiB-files-r2.json",
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-off-4KiB-files-r3.json",
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-on-4KiB-files-r3.json",
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-off-4KiB-files-r4.json",
            "bench/results/powercut-db-torn-2026-11-29/postgres-full_page_writes-on-4KiB-files-r4.json",
        ],
    },
    TornPageTest {
        database: Mariadb,
        ran: MARIA,
        setting: "innodb_doublewrite",
        off: "OFF",
        on: "ON",
        profile: "nvme-consumer",
        file_system: "ext4",
        untorn_bytes: 4096,
        aimed: true,
        cuts: 50,
        off_damaged: 50,
        on_damaged: 0,
        damage: "failed recovery (corrupted page)",
        design: Design::FreezeCutKill,
        date: "2026-11-29",
        results: &[
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-OFF-4KiB-files-r0.json",
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-ON-4KiB-files-r0.json",
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-OFF-4KiB-files-r1.json",
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-ON-4KiB-files-r1.json",
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-OFF-4KiB-files-r2.json",
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-ON-4KiB-files-r2.json",
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-OFF-4KiB-files-r3.json",
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-ON-4KiB-files-r3.json",
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-OFF-4KiB-files-r4.json",
            "bench/results/powercut-db-torn-2026-11-29/mariadb-innodb_doublewrite-ON-4KiB-files-r4.json",
        ],
    },
];

/// The server's defaults for the keys the records and the advice name, of the versions that ran; `true`
/// marks a durability key (one whose value decides whether acknowledged commits survive): a record that
/// ran another value of one is not evidence for advice that gives this one.
pub const DEFAULTS: &[(Database, &str, &str, bool)] = &[
    (Postgres, "wal_sync_method", "fdatasync", true),
    (Postgres, "full_page_writes", "on", true),
    (Postgres, "synchronous_commit", "on", true),
    (Postgres, "fsync", "on", true),
    (Postgres, "commit_delay", "0", false),
    (Postgres, "wal_init_zero", "on", false),
    (Postgres, "wal_recycle", "on", false),
    (Postgres, "recovery_init_sync_method", "fsync", false),
    (Mariadb, "innodb_flush_log_at_trx_commit", "1", true),
    (Mariadb, "innodb_flush_method", "O_DIRECT", true),
    (Mariadb, "innodb_doublewrite", "ON", true),
    (Sqlite, "journal_mode", "DELETE", true),
    (Sqlite, "synchronous", "FULL", true),
    (Etcd, "unsafe-no-fsync", "false", true),
];

mod cite;
pub use cite::{Cited, PowerCutEvidence, SettingPowerCuts, annotate, of, torn_page_tests};

#[cfg(test)]
mod tests;
