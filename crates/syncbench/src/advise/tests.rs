//! Advice from fixture runs: golden snapshots for eight kinds of storage, and tests that each rule picks
//! the faster method (so they fail if a rule ever prefers a slower one).

use super::*;
use crate::core::environment::{Device, Environment};
use crate::core::schema::{CaseResult, LatencyNs};
use crate::core::verdict::{Severity, Verdict};

/// (section, method, write size, writes per commit, file state, commits/s)
type Row = (&'static str, &'static str, u64, u32, &'static str, f64);

fn case((section, method, size, writes, state, ops_per_s): Row) -> CaseResult {
    let mean = 1e9 / ops_per_s;
    CaseResult {
        section: section.parse().unwrap(),
        method: method.parse().unwrap(),
        label: format!("{writes} × {size} B {method} ({state})"),
        durable: !matches!(method, "write" | "direct" | "sync_file_range"),
        supported: ops_per_s > 0.0,
        error: (ops_per_s <= 0.0).then(|| "EINVAL: O_DIRECT is not supported by this file system".into()),
        write_size_bytes: size,
        writes_per_commit: writes,
        file_state: state.parse().unwrap(),
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
    // Per section: the factors of fdatasync, open_datasync, fdatasync+direct and open_datasync+direct
    // (two O_DSYNC writes cost two device round trips).
    let per_section = [("one_write", 1, [1.0, 1.0, 1.02, 1.04]), ("two_writes", 2, [0.97, 0.52, 0.99, 0.53])];
    let mut rows: Vec<Row> = Vec::new();
    for (section, writes, [sync, dsync, sync_direct, dsync_direct]) in per_section {
        let direct = |rate: f64| rate * d.signum().max(0.0) + d.min(0.0);
        rows.extend([
            (section, "fdatasync", 8192, writes, "overwrite", flush * sync),
            (section, "fsync", 8192, writes, "overwrite", flush * sync * fsync_factor),
            (section, "open_datasync", 8192, writes, "overwrite", flush * dsync_factor * dsync),
            (section, "open_sync", 8192, writes, "overwrite", flush * dsync_factor * fsync_factor * dsync),
            (section, "fdatasync+direct", 8192, writes, "overwrite", direct(flush * sync_direct)),
            (section, "open_datasync+direct", 8192, writes, "overwrite", direct(flush * dsync_factor * dsync_direct)),
        ]);
    }
    rows.extend([
        // One 16 KiB write per commit costs about as much as one 8 KiB write for every method.
        ("write_sizes", "fdatasync", 16384, 1, "overwrite", flush * 0.95),
        ("write_sizes", "fsync", 16384, 1, "overwrite", flush * 0.95 * fsync_factor),
        ("write_sizes", "open_datasync", 16384, 1, "overwrite", flush * dsync_factor * 0.95),
        ("write_sizes", "open_sync", 16384, 1, "overwrite", flush * dsync_factor * fsync_factor * 0.95),
        ("no_sync", "write", 8192, 1, "overwrite", 400_000.0),
        ("size_sweep", "fdatasync", 4096, 1, "overwrite", flush * 1.05),
        ("size_sweep", "write", 4096, 1, "overwrite", 600_000.0),
        ("file_state", "fdatasync", 8192, 1, "overwrite", flush),
        ("file_state", "fdatasync", 8192, 1, "append", flush * 0.55),
        ("file_state", "fdatasync", 8192, 1, "fallocate", flush * 0.6),
        ("one_write", "fdatasync", 2300, 1, "fallocate", flush * 0.6),
    ]);
    rows.into_iter().map(case).collect()
}

struct Fixture {
    name: &'static str,
    env: Environment,
    verdicts: Vec<Verdict>,
    results: Vec<CaseResult>,
}

impl Fixture {
    /// A fixture whose verdicts are what the probe's own rules say about its environment and results,
    /// as `advise` gets them from a real measurement.
    fn probed(name: &'static str, env: Environment, results: Vec<CaseResult>) -> Fixture {
        let verdicts = crate::observe::probe::verdicts(&env, &results);
        Fixture { name, env, verdicts, results }
    }
}

fn disk(name: &str, rotational: bool, cache: &str, fua: bool) -> Device {
    Device {
        name: name.into(),
        kind: crate::core::environment::DeviceKind::Disk,
        rotational: Some(rotational),
        write_cache: Some(cache.into()),
        fua: Some(fua),
        ..Device::default()
    }
}

fn env(fs: &str, devices: Vec<Device>) -> Environment {
    let magic = match fs {
        "ext4" => 0xEF53,
        "xfs" => 0x5846_5342,
        "btrfs" => 0x9123_683E,
        "tmpfs" => 0x0102_1994,
        other => panic!("no magic for {other}"),
    };
    Environment {
        kernel: "6.18.0".into(),
        dir: "/var/lib/db".into(),
        fs_type: fs.into(),
        fs_magic: magic,
        mount_options: vec!["rw".into(), "relatime".into()],
        devices,
        ..Environment::default()
    }
}

fn fixtures() -> Vec<Fixture> {
    let nvme = |cache: &str| disk("nvme0n1", false, cache, true);
    // SATA disks behind libata: FUA off (libata.fua=0, the default).
    let sata_ssd = disk("sda", false, "write back", false);
    let mut journal = env("ext4", vec![sata_ssd.clone()]);
    journal.mount_options.push("data=journal".into());
    let mut atomic = env("xfs", vec![Device { atomic_write_unit_max_bytes: Some(65536), ..nvme("write back") }]);
    atomic.atomic_write_unit_min_bytes = Some(4096);
    atomic.atomic_write_unit_max_bytes = Some(65536);
    // A virtio disk reports itself rotational, with a volatile cache and no FUA (issue 3's machine).
    let mut vm = env("ext4", vec![disk("vda", true, "write back", false)]);
    vm.virtualization.virtual_machine = true;
    vm.virtualization.hypervisor = Some("KVM".into());
    vec![
        Fixture::probed(
            "fast_nvme",
            env("ext4", vec![nvme("write through")]),
            standard_rows(40_000.0, 0.9, 1.15, Some(1.0)),
        ),
        // A consumer SATA SSD that acknowledges flushes it has not done. Nothing in /sys or in the rates
        // gives it away (no physical floor for a flush on flash, unlike a platter), so the probe only notes
        // the volatile cache without FUA and the advice cannot warn: a power-loss test is the only check.
        Fixture::probed(
            "lying_ssd",
            env("ext4", vec![sata_ssd.clone()]),
            standard_rows(90_000.0, 0.95, 1.0, Some(1.0)),
        ),
        Fixture::probed(
            "disk_7200rpm",
            env("xfs", vec![disk("sda", true, "write back", false)]),
            standard_rows(110.0, 0.5, 1.0, Some(1.0)),
        ),
        // 5000 flushes/s from a "rotational" virtio disk: the probe flags the implausible rate and the VM.
        Fixture::probed("vm", vm, standard_rows(5000.0, 0.5, 0.98, Some(1.0))),
        // No block device; O_DIRECT refused (tmpfs before Linux 6.6).
        Fixture::probed(
            "tmpfs",
            Environment { kernel: "6.1.0".into(), ..env("tmpfs", vec![]) },
            standard_rows(900_000.0, 1.0, 1.0, None),
        ),
        Fixture::probed("btrfs", env("btrfs", vec![nvme("write back")]), standard_rows(2500.0, 0.8, 0.9, Some(1.0))),
        Fixture::probed("atomic_capable", atomic, standard_rows(30_000.0, 0.85, 1.1, Some(1.0))),
        // ext4 data=journal accepts O_DIRECT and silently does buffered I/O, so the +direct cases are measured
        // (at buffered speed) although direct I/O is not honoured.
        Fixture::probed("data_journal", journal, standard_rows(3000.0, 0.7, 1.0, Some(1.0))),
    ]
}

fn fixture(name: &str) -> Fixture {
    fixtures().into_iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no fixture {name}"))
}

fn all_targets() -> Vec<Target> {
    Database::ALL.iter().map(|&d| Target { database: d, version: d.default_version() }).collect()
}

fn run_fixture(f: &Fixture, targets: &[Target]) -> Vec<DatabaseAdvice> {
    advise(
        &Input { environment: &f.env, verdicts: &f.verdicts, results: &f.results, under_writes: None, partial: false },
        targets,
    )
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
        // Not lying_ssd: nothing the probe can see gives a lying flash drive away, and the advice only
        // warns about what the probe found.
        let expect = matches!(f.name, "vm" | "tmpfs");
        assert_eq!(warned, expect, "{}: storage warning {warned}", f.name);
    }
}

#[test]
fn fixture_verdicts_are_the_probes_own() {
    let expect: [(&str, &[&str]); 8] = [
        ("fast_nvme", &[]),
        ("lying_ssd", &["volatile_cache_without_fua"]),
        ("disk_7200rpm", &["volatile_cache_without_fua", "fsync_slower_than_fdatasync"]),
        (
            "vm",
            &["implausible_flush_rate", "virtual_machine", "volatile_cache_without_fua", "fsync_slower_than_fdatasync"],
        ),
        ("tmpfs", &["not_durable_memory_fs"]),
        ("btrfs", &[]),
        ("atomic_capable", &["atomic_writes_available"]),
        ("data_journal", &["volatile_cache_without_fua", "data_journal"]),
    ];
    for (name, codes) in expect {
        let f = fixture(name);
        let found: Vec<&str> = f.verdicts.iter().map(|v| v.code.as_str()).collect();
        assert_eq!(found, codes, "{name}");
    }
    assert_eq!(fixture("tmpfs").verdicts[0].severity, Severity::Critical);
    assert_eq!(fixture("vm").verdicts[0].severity, Severity::Warning);
}

#[test]
fn data_journal_never_advises_direct_io() {
    let base = fixture("data_journal");
    // The realistic run: ext4 accepted O_DIRECT and fell back to buffered I/O, so +direct cases have numbers.
    assert!(base.results.iter().any(|c| c.method.name().ends_with("+direct") && c.supported && c.ops_per_s > 0.0));
    let targets = [
        Target { database: Database::Postgres, version: Version::new(17, 0) },
        Target { database: Database::Postgres, version: Version::new(15, 0) },
        Target { database: Database::Mysql, version: Version::new(8, 4) },
        Target { database: Database::Mariadb, version: Version::new(11, 4) },
        Target { database: Database::Mariadb, version: Version::new(10, 11) },
    ];
    // Even when the (buffered) +direct cases happen to measure fastest.
    for factor in [1.0, 3.0] {
        let results =
            with_rate(with_rate(base.results.clone(), "fdatasync+direct", factor), "open_datasync+direct", factor);
        let f = Fixture { results, ..fixture("data_journal") };
        for t in targets {
            let advice = run_fixture(&f, &[t]);
            for s in &advice[0].settings {
                let direct = s.value.to_ascii_lowercase().contains("direct")
                    || (s.name.ends_with("_file_buffering") && s.value == "OFF");
                assert!(!direct, "{:?} {}: {} = {} on data=journal", t.database, t.version, s.name, s.value);
            }
        }
        let advice = run_fixture(&f, &all_targets());
        assert_eq!(setting(&advice, "mysql", "innodb_flush_method"), "fsync");
        assert_eq!(setting(&advice, "mariadb", "innodb_log_file_buffering"), "ON");
        assert_eq!(setting(&advice, "mariadb", "innodb_data_file_buffering"), "ON");
    }
}

fn with_rate(mut results: Vec<CaseResult>, method: &str, factor: f64) -> Vec<CaseResult> {
    for c in results.iter_mut().filter(|c| c.method.name() == method) {
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
    let pg17 = [Target { database: Database::Postgres, version: Version::new(17, 0) }];
    // open_datasync is 15% faster for one 8 KiB and for one 16 KiB write, the way PostgreSQL writes WAL;
    // that it pays two round trips for two separate writes does not count against it.
    let advice = run_fixture(&base, &pg17);
    assert_eq!(setting(&advice, "postgres", "wal_sync_method"), "open_datasync");
    assert!(advice[0].caveats.iter().all(|c| !c.contains("no single 16 KiB write")));
    // When its 16 KiB write is slow (a device that splits it), fdatasync stays.
    let mut results = base.results.clone();
    for c in results
        .iter_mut()
        .filter(|c| c.method == crate::core::method::SyncMethod::OpenDatasync && c.write_size_bytes == 16384)
    {
        c.ops_per_s *= 0.6;
    }
    let advice = run_fixture(&Fixture { results, ..fixtures().remove(0) }, &pg17);
    assert_eq!(setting(&advice, "postgres", "wal_sync_method"), "fdatasync");
}

#[test]
fn postgres_without_16k_cases_scores_separate_writes_and_says_so() {
    let mut f = fixtures().remove(0);
    f.results.retain(|c| c.section != crate::core::suite::Section::WriteSizes);
    let advice = run_fixture(&f, &[Target { database: Database::Postgres, version: Version::new(17, 0) }]);
    // On two separate 8 KiB writes open_datasync pays two round trips and fdatasync wins.
    assert_eq!(setting(&advice, "postgres", "wal_sync_method"), "fdatasync");
    assert!(advice[0].caveats.iter().any(|c| c.contains("no single 16 KiB write")), "{:?}", advice[0].caveats);
    // One method without its 16 KiB case puts every method back on the separate-writes basis.
    let mut f = fixtures().remove(0);
    f.results.retain(|c| {
        !(c.section == crate::core::suite::Section::WriteSizes && c.method == crate::core::method::SyncMethod::Fsync)
    });
    let advice = run_fixture(&f, &[Target { database: Database::Postgres, version: Version::new(17, 0) }]);
    assert!(advice[0].caveats.iter().any(|c| c.contains("no single 16 KiB write")), "{:?}", advice[0].caveats);
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
    let journal = fixture("data_journal");
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
    // Buffered fdatasync 3% ahead of the default (fdatasync+direct): inside the margin, so the default stays,
    // and the reason must not call the default the fastest.
    let f = Fixture { results: with_rate(base.results.clone(), "fdatasync", 1.05), ..fixtures().remove(0) };
    let advice = run_fixture(&f, &t);
    assert_eq!(setting(&advice, "mariadb", "innodb_log_file_buffering"), "OFF");
    let reason = |name: &str| advice[0].settings.iter().find(|s| s.name == name).unwrap().reason.clone();
    // One reason per setting: buffering's compares buffered with O_DIRECT, write_through's O_DSYNC with
    // write + fdatasync; the pair's choice (and why the default stays) is said once, with buffering.
    let (buffering, write_through) = (reason("innodb_log_file_buffering"), reason("innodb_log_file_write_through"));
    assert_ne!(buffering, write_through);
    assert!(buffering.contains("with write_through=OFF, fdatasync+direct is 3% slower than fdatasync"), "{buffering}");
    assert!(
        buffering.contains("fdatasync measured 3% faster, less than the 5% a change must gain, so the default stays"),
        "{buffering}"
    );
    assert!(write_through.contains("with buffering=OFF, fdatasync+direct is"), "{write_through}");
    assert!(write_through.contains("than open_datasync+direct"), "{write_through}");
    assert!(!write_through.contains("buffered") && !buffering.contains("fastest"), "{write_through}");
    let atomic = fixture("atomic_capable");
    assert_eq!(setting(&run_fixture(&atomic, &t), "mariadb", "innodb_doublewrite"), "OFF");
    assert_eq!(setting(&run_fixture(&base, &t), "mariadb", "innodb_doublewrite"), "ON");
}

#[test]
fn mariadb_10_11_scores_flush_method_on_one_direct_write_per_commit() {
    let t = [Target { database: Database::Mariadb, version: Version::new(10, 11) }];
    let base = fixture("vm");
    assert_eq!(setting(&run_fixture(&base, &t), "mariadb", "innodb_flush_method"), "O_DIRECT");
    // A fixture whose O_DSYNC write is 17% faster (fast NVMe with FUA) gets O_DSYNC.
    assert_eq!(setting(&run_fixture(&fixtures().remove(0), &t), "mariadb", "innodb_flush_method"), "O_DSYNC");
    // Buffered O_SYNC far ahead decides MySQL's flush method, not MariaDB 10.11's: its redo log is O_DIRECT
    // in every mode.
    let f = Fixture { results: with_rate(base.results.clone(), "open_sync", 3.0), ..fixture("vm") };
    assert_eq!(setting(&run_fixture(&f, &t), "mariadb", "innodb_flush_method"), "O_DIRECT");
    assert_eq!(
        setting(&run_fixture(&f, &[Target { database: Database::Mysql, ..t[0] }]), "mysql", "innodb_flush_method"),
        "O_DSYNC"
    );
    // One O_DSYNC write per commit 40% faster wins, although two O_DSYNC writes per commit (which MariaDB
    // never does) would be slower than write + fdatasync: the MySQL score's geometric mean would refuse it.
    let mut results = base.results.clone();
    let direct = results
        .iter()
        .find(|c| {
            c.section == crate::core::suite::Section::OneWrite
                && c.method == crate::core::method::SyncMethod::FdatasyncDirect
        })
        .unwrap()
        .ops_per_s;
    for c in results.iter_mut().filter(|c| c.method == crate::core::method::SyncMethod::OpenDatasyncDirect) {
        c.ops_per_s = if c.section == crate::core::suite::Section::OneWrite { direct * 1.4 } else { direct * 0.6 };
    }
    let f = Fixture { results, ..fixture("vm") };
    let advice = run_fixture(&f, &t);
    assert_eq!(setting(&advice, "mariadb", "innodb_flush_method"), "O_DSYNC");
    let reason = &advice[0].settings.iter().find(|s| s.name == "innodb_flush_method").unwrap().reason;
    assert!(reason.contains("open_datasync+direct is 40% faster than fdatasync+direct"), "{reason}");
    // Inside the margin: the default stays.
    let mut results = base.results.clone();
    for c in results.iter_mut().filter(|c| {
        c.method == crate::core::method::SyncMethod::OpenDatasyncDirect
            && c.section == crate::core::suite::Section::OneWrite
    }) {
        c.ops_per_s = direct * 1.03;
    }
    let f = Fixture { results, ..fixture("vm") };
    assert_eq!(setting(&run_fixture(&f, &t), "mariadb", "innodb_flush_method"), "O_DIRECT");
    // Before 10.8 the MySQL-shaped rule stays; from 11.0 the flush method is gone.
    let old = run_fixture(&base, &[Target { database: Database::Mariadb, version: Version::new(10, 6) }]);
    assert!(old[0].caveats.iter().any(|c| c.contains("still uses innodb_flush_method")), "{:?}", old[0].caveats);
    let new = run_fixture(&base, &[Target { database: Database::Mariadb, version: Version::new(11, 4) }]);
    assert!(new[0].settings.iter().all(|s| s.name != "innodb_flush_method"));
}

#[test]
fn each_database_prints_its_evidence_level() {
    let f = fixture("disk_7200rpm");
    let t = [
        Target { database: Database::Mariadb, version: Version::new(10, 11) },
        Target { database: Database::Mysql, version: Version::new(8, 4) },
    ];
    let text = to_text(&run_fixture(&f, &t));
    assert!(text.contains("MariaDB 10.11\n  evidence: validated against sysbench"), "{text}");
    assert!(text.contains("MySQL/InnoDB 8.4\n  evidence: not validated"), "{text}");
    insta::assert_snapshot!("advice_mariadb_10_11_disk_7200rpm", text);
}

#[test]
fn rocksdb_recycles_only_when_overwrite_is_clearly_faster() {
    let t = [Target { database: Database::Rocksdb, version: Version::new(9, 1) }];
    let base = fixtures().remove(0);
    assert_eq!(setting(&run_fixture(&base, &t), "rocksdb", "recycle_log_file_num"), "4");
    let mut results = base.results.clone();
    for c in results.iter_mut().filter(|c| {
        c.section == crate::core::suite::Section::FileState && c.file_state == crate::core::suite::FileState::Append
    }) {
        c.ops_per_s =
            base.results.iter().find(|c| c.section == crate::core::suite::Section::FileState).unwrap().ops_per_s;
    }
    let f = Fixture { results, ..fixtures().remove(0) };
    assert_eq!(setting(&run_fixture(&f, &t), "rocksdb", "recycle_log_file_num"), "0");
    // Faster by more than the 10% but within wide intervals (a device in and out of slow phases): the
    // default stays, and the reason says why in those words.
    let mut noisy = base.results.clone();
    noisy.iter_mut().filter(|c| c.section == crate::core::suite::Section::FileState).for_each(|c| c.ci95_rel = 0.6);
    let advice = run_fixture(&Fixture { results: noisy, ..fixtures().remove(0) }, &t);
    assert_eq!(setting(&advice, "rocksdb", "recycle_log_file_num"), "0");
    let reason = &advice[0].settings.iter().find(|s| s.name == "recycle_log_file_num").unwrap().reason;
    assert!(reason.contains("but the two measurements' 95% intervals overlap: undecided"), "{reason}");
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
    // NORMAL's rate is SQLite's own work, not the write: no number is claimed for it (issue 21: the write
    // alone predicted 161404/s on a lab hdd where SQLite did 2631/s).
    assert!(reason.contains("SQLite's own work per commit"), "{reason}");
    assert!(!reason.contains("(the write alone)"), "{reason}");
    // The rollback journal's four syncs per commit (three with NORMAL), from the fdatasync case.
    let fdatasync = fixtures()
        .remove(0)
        .results
        .iter()
        .find(|c| c.method == crate::core::method::SyncMethod::Fdatasync && c.write_size_bytes == 4096)
        .unwrap()
        .ops_per_s;
    let journal = &a[0].settings.iter().find(|s| s.name == "journal_mode").unwrap().reason;
    let want = format!(
        "caps a rollback-journal commit at about {} with FULL and {} with NORMAL",
        super::facts::per_s(fdatasync / 4.0),
        super::facts::per_s(fdatasync / 3.0)
    );
    assert!(journal.contains(&want), "{journal}");
}

#[test]
fn versions_and_names_parse() {
    assert_eq!(Version::parse("8.0.36"), Some(Version::new(8, 0)));
    assert_eq!(Version::parse("16"), Some(Version::new(16, 0)));
    assert_eq!(Version::parse("x"), None);
    assert_eq!(Database::parse("PostgreSQL"), Some(Database::Postgres));
    assert_eq!(Database::parse("oracle"), None);
}

#[test]
fn only_verdicts_that_doubt_durability_raise_the_storage_warning() {
    let doubts = |code: &str| is_honesty_code(code);
    for code in ["flush_faster_than_device", "flushes_disabled", "implausible_flush_rate", "not_durable_tmpfs"] {
        assert!(doubts(code), "{code} says acknowledged writes may not be durable");
    }
    for code in ["virtual_machine", "cpu_steal", "layered_loop", "fast_flush_needs_plp", "fsync_slower_than_fdatasync"]
    {
        assert!(!doubts(code), "{code} is about speed or layering, not honesty");
    }
}

/// Issue #33: on a noisy VM advise said "fsync is 244% faster than open_sync (1362/s ±71148% vs 396/s
/// ±815%)". With the intervals as a noisy VM gives them, no comparison names a winner, none prints a ±
/// above 100%, and where a setting cannot be decided by the numbers it says it rests on the mechanism.
#[test]
fn advice_from_a_noisy_vm_decides_nothing_from_noise_golden() {
    let mut f = fixture("vm");
    crate::measure::rounds::as_on_a_noisy_vm(&mut f.results);
    let t = [
        Target { database: Database::Postgres, version: Version::new(17, 0) },
        Target { database: Database::Mysql, version: Version::new(8, 4) },
    ];
    let text = to_text(&run_fixture(&f, &t));
    assert!(crate::core::stats::printed_plus_minus(&text).iter().all(|pct| *pct <= 100.0), "{text}");
    assert!(!text.contains("% faster than") && !text.contains("% slower than"), "a winner from noise: {text}");
    assert!(text.contains("undecided, their 95% intervals overlap"), "{text}");
    assert!(text.contains("the choice rests on the mechanism"), "{text}");
    insta::assert_snapshot!("advice_noisy_vm", text);
}

#[test]
fn a_partial_run_and_disturbed_cases_are_named_first() {
    let f = fixtures().remove(0);
    let t = [Target { database: Database::Postgres, version: Version::new(15, 0) }];
    let whole = run_fixture(&f, &t);
    assert!(
        !whole[0].caveats.iter().any(|c| c == PARTIAL_NOTE || c.contains("were disturbed")),
        "{:?}",
        whole[0].caveats
    );
    let input =
        Input { environment: &f.env, verdicts: &f.verdicts, results: &f.results, under_writes: None, partial: true };
    assert_eq!(advise(&input, &t)[0].caveats[0], PARTIAL_NOTE);
    // One case measured beside 150 MiB of other writes: named, and the disk is not called idle.
    let mut results = f.results.clone();
    results[0].disturbances = vec![crate::core::schema::Disturbance {
        kind: crate::core::schema::DisturbanceKind::DeviceIo,
        detail: "vda served requests that were not this case's (150.0 MiB written) in rounds 1, 2 of 5".into(),
        foreign_write_bytes: 150 << 20,
        ..Default::default()
    }];
    let input = Input { results: &results, partial: false, ..input };
    let caveats = &advise(&input, &t)[0].caveats;
    assert!(
        caveats[0].starts_with(&format!("1 of {} cases were disturbed while measured", results.len())),
        "{caveats:?}"
    );
    assert!(caveats[0].contains("(150.0 MiB written)"), "{caveats:?}");
    assert!(!caveats.iter().any(|c| c.contains("Measured on an idle disk")), "{caveats:?}");
    assert!(caveats.iter().any(|c| c.contains("not on an idle disk: 150.0 MiB of other writes")), "{caveats:?}");
}

/// The versions the power cuts ran (PostgreSQL 15.18, MariaDB 10.11, SQLite 3.40, etcd 3.4): every setting
/// cites the cuts that ran it, and the unsafe values theirs.
#[test]
fn advice_cites_the_power_cuts_of_the_versions_that_ran_golden() {
    let f = fixture("disk_7200rpm");
    let t = [
        Target { database: Database::Postgres, version: Version::new(15, 18) },
        Target { database: Database::Mariadb, version: Version::new(10, 11) },
        Target { database: Database::Sqlite, version: Version::new(3, 40) },
        Target { database: Database::Etcd, version: Version::new(3, 4) },
    ];
    let text = to_text(&run_fixture(&f, &t));
    assert!(text.contains("PostgreSQL 15.18\n  evidence: validated against pgbench"), "{text}");
    assert!(text.contains("  power cuts: advise's settings kept every acknowledged commit in 225 cuts"), "{text}");
    assert!(text.contains("innodb_flush_log_at_trx_commit=2 lost acknowledged commits in 21 of 25 cuts"), "{text}");
    assert!(text.contains("innodb_doublewrite=OFF failed recovery in 2 of 25 cuts, ON in 0 of 25"), "{text}");
    assert!(text.contains("journal_mode=WAL,synchronous=NORMAL lost acknowledged commits in 25 of 25 cuts"), "{text}");
    assert!(text.contains("unsafe-no-fsync=true lost acknowledged commits in 25 of 25 cuts"), "{text}");
    assert!(!text.contains("no power-cut evidence for PostgreSQL"), "{text}");
    insta::assert_snapshot!("advice_power_cuts_disk_7200rpm", text);
}

/// A lab disk's untorn unit (from the lab's state, via the probe) is stated against the page, and never
/// turns a torn-page protection off: the device's unit is not the file system's promise.
#[test]
fn a_lab_disk_states_its_untorn_unit_and_keeps_torn_page_protection_on() {
    let t = [
        Target { database: Database::Postgres, version: Version::new(15, 18) },
        Target { database: Database::Mariadb, version: Version::new(10, 11) },
    ];
    for (untorn, said) in [
        (512, "(profile nvme-plp) tears at 512 B boundaries, inside a 8 KiB page"),
        (4096, "(profile nvme-plp) tears at 4 KiB boundaries, inside a 16 KiB page"),
        (16384, "(profile nvme-plp) writes 16 KiB units untorn, at least the 16 KiB page"),
        (65536, "(profile nvme-plp) writes 64 KiB units untorn, at least the 8 KiB page"),
    ] {
        let mut f = fixture("disk_7200rpm");
        f.env.emulated_disk = Some(crate::core::environment::EmulatedDisk {
            profile: "nvme-plp".into(),
            untorn_unit_bytes: Some(untorn),
            ..Default::default()
        });
        let advice = run_fixture(&f, &t);
        assert_eq!(setting(&advice, "postgres", "full_page_writes"), "on");
        assert_eq!(setting(&advice, "mariadb", "innodb_doublewrite"), "ON");
        let reasons: Vec<&str> = advice.iter().flat_map(|a| &a.settings).map(|s| s.reason.as_str()).collect();
        assert!(reasons.iter().any(|r| r.contains(said)), "{untorn}: {reasons:#?}");
    }
}
