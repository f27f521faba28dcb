//! Advice from fixture runs: golden snapshots for eight kinds of storage, and tests that each rule picks
//! the faster method (so they fail if a rule ever prefers a slower one).

use super::*;
use crate::probe::{Device, Environment};
use crate::schema::{CaseResult, LatencyNs};
use crate::verdict::{Severity, Verdict};

/// (section, method, write size, writes per commit, file state, commits/s)
type Row = (&'static str, &'static str, u64, u32, &'static str, f64);

fn case((section, method, size, writes, state, ops_per_s): Row) -> CaseResult {
    let mean = 1e9 / ops_per_s;
    CaseResult {
        section: section.into(),
        method: method.into(),
        label: format!("{writes} × {size} B {method} ({state})"),
        durable: !matches!(method, "write" | "direct" | "sync_file_range"),
        supported: ops_per_s > 0.0,
        error: (ops_per_s <= 0.0).then(|| "EINVAL: O_DIRECT is not supported by this file system".into()),
        write_size_bytes: size,
        writes_per_commit: writes,
        file_state: state.into(),
        ops: if ops_per_s > 0.0 { 5000 } else { 0 },
        ops_per_s: ops_per_s.max(0.0),
        bytes_per_s: ops_per_s.max(0.0) * (size * writes as u64) as f64,
        latency_ns: if ops_per_s > 0.0 {
            LatencyNs {
                min: (mean * 0.6) as u64,
                mean,
                p50: (mean * 0.95) as u64,
                p90: (mean * 1.3) as u64,
                p99: (mean * 2.0) as u64,
                p999: (mean * 4.0) as u64,
                max: (mean * 9.0) as u64,
                stddev: mean * 0.2,
            }
        } else {
            LatencyNs::default()
        },
        ci95_rel: 0.01,
        duration_s: 2.0,
        ..CaseResult::default()
    }
}

/// A run where fdatasync costs `flush` commits/s and the other methods relate to it by typical factors;
/// `dsync_factor` scales open_datasync, `direct` is None when O_DIRECT is refused.
fn standard_rows(flush: f64, fsync_factor: f64, dsync_factor: f64, direct: Option<f64>) -> Vec<CaseResult> {
    let d = direct.unwrap_or(-1.0);
    let rows: Vec<Row> = vec![
        ("one_write", "fdatasync", 8192, 1, "overwrite", flush),
        ("one_write", "fsync", 8192, 1, "overwrite", flush * fsync_factor),
        ("one_write", "open_datasync", 8192, 1, "overwrite", flush * dsync_factor),
        ("one_write", "open_sync", 8192, 1, "overwrite", flush * dsync_factor * fsync_factor),
        ("one_write", "fdatasync+direct", 8192, 1, "overwrite", flush * 1.02 * d.signum().max(0.0) + d.min(0.0)),
        (
            "one_write",
            "open_datasync+direct",
            8192,
            1,
            "overwrite",
            flush * dsync_factor * 1.04 * d.signum().max(0.0) + d.min(0.0),
        ),
        ("two_writes", "fdatasync", 8192, 2, "overwrite", flush * 0.97),
        ("two_writes", "fsync", 8192, 2, "overwrite", flush * 0.97 * fsync_factor),
        // Two O_DSYNC writes cost two device round trips.
        ("two_writes", "open_datasync", 8192, 2, "overwrite", flush * dsync_factor * 0.52),
        ("two_writes", "open_sync", 8192, 2, "overwrite", flush * dsync_factor * fsync_factor * 0.52),
        ("two_writes", "fdatasync+direct", 8192, 2, "overwrite", flush * 0.99 * d.signum().max(0.0) + d.min(0.0)),
        (
            "two_writes",
            "open_datasync+direct",
            8192,
            2,
            "overwrite",
            flush * dsync_factor * 0.53 * d.signum().max(0.0) + d.min(0.0),
        ),
        ("no_sync", "write", 8192, 1, "overwrite", 400_000.0),
        ("size_sweep", "fdatasync", 4096, 1, "overwrite", flush * 1.05),
        ("size_sweep", "write", 4096, 1, "overwrite", 600_000.0),
        ("file_state", "fdatasync", 8192, 1, "overwrite", flush),
        ("file_state", "fdatasync", 8192, 1, "append", flush * 0.55),
        ("file_state", "fdatasync", 8192, 1, "fallocate", flush * 0.6),
        ("etcd", "fdatasync", 2300, 1, "fallocate", flush * 0.6),
    ];
    rows.into_iter().map(case).collect()
}

struct Fixture {
    name: &'static str,
    env: Environment,
    verdicts: Vec<Verdict>,
    results: Vec<CaseResult>,
}

fn env(fs: &str, rotational: bool, cache: &str) -> Environment {
    Environment {
        kernel: "6.18.0".into(),
        dir: "/var/lib/db".into(),
        fs_type: fs.into(),
        mount_options: vec!["rw".into(), "relatime".into()],
        devices: vec![Device {
            name: "sda".into(),
            kind: "disk".into(),
            rotational: Some(rotational),
            write_cache: Some(cache.into()),
            ..Device::default()
        }],
        ..Environment::default()
    }
}

fn verdict(severity: Severity, code: &str, message: &str) -> Verdict {
    Verdict { severity, code: code.into(), message: message.into(), advice: "Verify with a power-loss test.".into() }
}

fn fixtures() -> Vec<Fixture> {
    let mut journal = env("ext4", false, "write back");
    journal.mount_options.push("data=journal".into());
    let mut atomic = env("xfs", false, "write back");
    atomic.atomic_write_unit_min_bytes = Some(4096);
    atomic.atomic_write_unit_max_bytes = Some(65536);
    let mut vm = env("ext4", true, "write back");
    vm.virtualization.virtual_machine = true;
    vm.virtualization.hypervisor = Some("KVM".into());
    vec![
        Fixture {
            name: "fast_nvme",
            env: env("ext4", false, "write through"),
            verdicts: vec![],
            results: standard_rows(40_000.0, 0.9, 1.15, Some(1.0)),
        },
        Fixture {
            name: "lying_ssd",
            env: env("ext4", false, "write back"),
            verdicts: vec![verdict(
                Severity::Critical,
                "implausible_flush_rate",
                "90000 flushes/s from a consumer SATA SSD without power-loss protection: the drive acknowledges flushes it has not done.",
            )],
            results: standard_rows(90_000.0, 0.95, 1.0, Some(1.0)),
        },
        Fixture {
            name: "disk_7200rpm",
            env: env("xfs", true, "write back"),
            verdicts: vec![],
            results: standard_rows(110.0, 0.5, 1.0, Some(1.0)),
        },
        Fixture {
            name: "vm",
            env: vm,
            verdicts: vec![verdict(
                Severity::Warning,
                "implausible_flush_rate",
                "5000 flushes/s from a rotational virtual disk: a cache below (the host) absorbs them.",
            )],
            results: standard_rows(5000.0, 0.5, 0.98, Some(1.0)),
        },
        Fixture {
            name: "tmpfs",
            env: env("tmpfs", false, "write through"),
            verdicts: vec![verdict(Severity::Critical, "not_durable_tmpfs", "tmpfs keeps data in memory only.")],
            results: standard_rows(900_000.0, 1.0, 1.0, None),
        },
        Fixture {
            name: "btrfs",
            env: env("btrfs", false, "write back"),
            verdicts: vec![],
            results: standard_rows(2500.0, 0.8, 0.9, Some(1.0)),
        },
        Fixture {
            name: "atomic_capable",
            env: atomic,
            verdicts: vec![],
            results: standard_rows(30_000.0, 0.85, 1.1, Some(1.0)),
        },
        Fixture {
            name: "data_journal",
            env: journal,
            verdicts: vec![],
            results: standard_rows(3000.0, 0.7, 1.0, None),
        },
    ]
}

fn all_targets() -> Vec<Target> {
    Database::ALL.iter().map(|&d| Target { database: d, version: d.default_version() }).collect()
}

fn run_fixture(f: &Fixture, targets: &[Target]) -> Vec<DatabaseAdvice> {
    advise(&Input { environment: &f.env, verdicts: &f.verdicts, results: &f.results }, targets)
}

fn setting<'a>(advice: &'a [DatabaseAdvice], db: &str, name: &str) -> &'a str {
    let a = advice.iter().find(|a| a.database == db).unwrap_or_else(|| panic!("no advice for {db}"));
    let s = a.settings.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("{db}: no {name}"));
    &s.value
}

#[test]
fn golden_advice_for_each_fixture() {
    for f in fixtures() {
        let advice = run_fixture(&f, &all_targets());
        insta::assert_snapshot!(format!("advice_{}", f.name), to_text(&advice));
    }
}

#[test]
fn storage_problems_lead_the_advice() {
    for f in fixtures() {
        let advice = run_fixture(&f, &all_targets());
        let warned = advice.iter().all(|a| a.storage_warning.is_some());
        let expect = matches!(f.name, "lying_ssd" | "vm" | "tmpfs");
        assert_eq!(warned, expect, "{}: storage warning {warned}", f.name);
    }
}

fn with_rate(mut results: Vec<CaseResult>, method: &str, factor: f64) -> Vec<CaseResult> {
    for c in results.iter_mut().filter(|c| c.method == method) {
        c.ops_per_s *= factor;
    }
    results
}

#[test]
fn postgres_picks_the_fastest_wal_sync_method() {
    let base = fixtures().remove(0);
    // fdatasync is the default and wins ties; a clearly faster method must win.
    for (method, expect) in [("fsync", "fsync"), ("open_sync", "open_sync"), ("open_datasync", "open_datasync")] {
        let results = with_rate(base.results.clone(), method, 3.0);
        let f = Fixture { results, ..fixtures().remove(0) };
        let advice = run_fixture(&f, &[Target { database: Database::Postgres, version: Version::new(17, 0) }]);
        assert_eq!(setting(&advice, "postgres", "wal_sync_method"), expect);
    }
    // open_datasync is 15% faster for one write but pays two round trips for two writes: fdatasync wins.
    let advice = run_fixture(&base, &[Target { database: Database::Postgres, version: Version::new(17, 0) }]);
    assert_eq!(setting(&advice, "postgres", "wal_sync_method"), "fdatasync");
}

#[test]
fn postgres_copy_on_write_turns_off_zeroing_and_recycling() {
    let f = fixtures().into_iter().find(|f| f.name == "btrfs").unwrap();
    let advice = run_fixture(&f, &[Target { database: Database::Postgres, version: Version::new(16, 0) }]);
    assert_eq!(setting(&advice, "postgres", "wal_init_zero"), "off");
    assert_eq!(setting(&advice, "postgres", "wal_recycle"), "off");
    assert_eq!(setting(&advice, "postgres", "full_page_writes"), "on");
}

#[test]
fn mysql_picks_the_faster_log_path() {
    let base = fixtures().remove(0);
    let t = [Target { database: Database::Mysql, version: Version::new(8, 4) }];
    assert_eq!(setting(&run_fixture(&base, &t), "mysql", "innodb_flush_method"), "O_DIRECT");
    let f = Fixture { results: with_rate(base.results.clone(), "open_sync", 4.0), ..fixtures().remove(0) };
    assert_eq!(setting(&run_fixture(&f, &t), "mysql", "innodb_flush_method"), "O_DSYNC");
    let journal = fixtures().into_iter().find(|f| f.name == "data_journal").unwrap();
    assert_eq!(setting(&run_fixture(&journal, &t), "mysql", "innodb_flush_method"), "fsync");
    // fdatasync beats fsync by 10% in the base fixture.
    assert_eq!(setting(&run_fixture(&base, &t), "mysql", "innodb_use_fdatasync"), "ON");
    let f = Fixture { results: with_rate(base.results.clone(), "fsync", 1.2), ..fixtures().remove(0) };
    assert_eq!(setting(&run_fixture(&f, &t), "mysql", "innodb_use_fdatasync"), "OFF");
}

#[test]
fn mariadb_picks_the_fastest_log_combination() {
    let t = [Target { database: Database::Mariadb, version: Version::new(11, 4) }];
    let base = fixtures().remove(0);
    let cases = [
        ("fdatasync+direct", "OFF", "OFF"),
        ("open_datasync+direct", "OFF", "ON"),
        ("fdatasync", "ON", "OFF"),
        ("open_datasync", "ON", "ON"),
    ];
    for (method, buffering, write_through) in cases {
        let f = Fixture { results: with_rate(base.results.clone(), method, 3.0), ..fixtures().remove(0) };
        let advice = run_fixture(&f, &t);
        assert_eq!(setting(&advice, "mariadb", "innodb_log_file_buffering"), buffering, "{method}");
        assert_eq!(setting(&advice, "mariadb", "innodb_log_file_write_through"), write_through, "{method}");
    }
    let atomic = fixtures().into_iter().find(|f| f.name == "atomic_capable").unwrap();
    assert_eq!(setting(&run_fixture(&atomic, &t), "mariadb", "innodb_doublewrite"), "OFF");
    assert_eq!(setting(&run_fixture(&base, &t), "mariadb", "innodb_doublewrite"), "ON");
}

#[test]
fn rocksdb_recycles_only_when_overwrite_is_clearly_faster() {
    let t = [Target { database: Database::Rocksdb, version: Version::new(9, 0) }];
    let base = fixtures().remove(0);
    assert_eq!(setting(&run_fixture(&base, &t), "rocksdb", "recycle_log_file_num"), "4");
    let mut results = base.results.clone();
    for c in results.iter_mut().filter(|c| c.section == "file_state" && c.file_state == "append") {
        c.ops_per_s = base.results.iter().find(|c| c.section == "file_state").unwrap().ops_per_s;
    }
    let f = Fixture { results, ..fixtures().remove(0) };
    assert_eq!(setting(&run_fixture(&f, &t), "rocksdb", "recycle_log_file_num"), "0");
}

#[test]
fn etcd_passes_and_fails_on_the_measured_p99() {
    let t = [Target { database: Database::Etcd, version: Version::new(3, 5) }];
    let fast = fixtures().remove(0);
    assert_eq!(run_fixture(&fast, &t)[0].pass, Some(true));
    let slow = fixtures().into_iter().find(|f| f.name == "disk_7200rpm").unwrap();
    // 110 flushes/s × 0.6 → mean 15 ms, p99 30 ms: fails.
    assert_eq!(run_fixture(&slow, &t)[0].pass, Some(false));
    let none = Fixture { results: vec![], ..fixtures().remove(0) };
    assert_eq!(run_fixture(&none, &t)[0].pass, None);
}

#[test]
fn sqlite_states_the_cost_of_full() {
    let t = [Target { database: Database::Sqlite, version: Version::new(3, 46) }];
    let a = run_fixture(&fixtures().remove(0), &t);
    assert_eq!(setting(&a, "sqlite", "synchronous"), "FULL");
    let reason = &a[0].settings.iter().find(|s| s.name == "synchronous").unwrap().reason;
    assert!(reason.contains("Measured here"), "{reason}");
}

#[test]
fn versions_and_names_parse() {
    assert_eq!(Version::parse("8.0.36"), Some(Version::new(8, 0)));
    assert_eq!(Version::parse("16"), Some(Version::new(16, 0)));
    assert_eq!(Version::parse("x"), None);
    assert_eq!(Database::parse("PostgreSQL"), Some(Database::Postgres));
    assert_eq!(Database::parse("oracle"), None);
}
