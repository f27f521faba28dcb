//! Rules changed by the validation against the databases themselves: RocksDB's recycle_log_file_num by
//! version (bench/advise_rocksdb.sh: a release that turns recycling off under the default recovery mode is
//! never told to turn it on), and etcd's note when a pass is too narrow for etcd's own p99
//! (bench/advise_etcd.sh). Included from rocksdb.rs.

use super::super::facts::Facts;
use super::{RECYCLE_WITH_POINT_IN_TIME, advise};
use crate::advise::Version;
use crate::core::environment::Environment;
use crate::core::schema::{CaseResult, LatencyNs};

fn file_state(state: &str, ops_per_s: f64, ci95_rel: f64) -> CaseResult {
    let mean = 1e9 / ops_per_s;
    CaseResult {
        section: "file_state".parse().unwrap(),
        method: "fdatasync".parse().unwrap(),
        label: format!("{state} fdatasync"),
        durable: true,
        supported: true,
        write_size_bytes: 8192,
        writes_per_commit: 1,
        file_state: state.parse().unwrap(),
        ops: 3000,
        ops_per_s,
        latency_ns: LatencyNs { mean, p50: mean as u64, p99: (2.0 * mean) as u64, ..LatencyNs::default() },
        ci95_rel,
        ..CaseResult::default()
    }
}

/// recycle_log_file_num's value and reason for overwrite/append rates on ext4.
fn recycle(overwrite: f64, append: f64, ci95_rel: f64, version: Version) -> (String, String) {
    let env = Environment { fs_type: "ext4".into(), ..Environment::default() };
    let results = [file_state("overwrite", overwrite, ci95_rel), file_state("append", append, ci95_rel)];
    let facts = Facts { env: &env, verdicts: &[], results: &results, under_writes: None, partial: false };
    let advice = advise(&facts, version);
    let s = advice.settings.iter().find(|s| s.name == "recycle_log_file_num").unwrap();
    (s.value.clone(), s.reason.clone())
}

#[test]
fn recycling_is_advised_only_where_the_default_recovery_mode_keeps_it() {
    // The hdd-7200 lab disk: an appending fdatasync commits ext4's journal (three device flushes without
    // FUA), an overwrite one flush.
    let (value, reason) = recycle(110.0, 40.0, 0.05, RECYCLE_WITH_POINT_IN_TIME);
    assert_eq!(value, "4", "{reason}");
    let (value, reason) = recycle(110.0, 40.0, 0.05, Version::new(10, 0));
    assert_eq!(value, "4", "{reason}");
    // 7.8 (Debian 12) and 9.0 set it to 0 themselves: advising 4 there would change nothing.
    for old in [Version::new(7, 8), Version::new(9, 0), Version::new(6, 29)] {
        let (value, reason) = recycle(110.0, 40.0, 0.05, old);
        assert_eq!(value, "0", "{old}: {reason}");
        assert!(reason.contains("175% faster"), "the gain is still reported: {reason}");
        assert!(reason.contains("kPointInTimeRecovery") && reason.contains("kSkipAnyCorruptedRecords"), "{reason}");
    }
}

#[test]
fn recycling_stays_off_without_a_clear_gain_in_any_version() {
    for version in [Version::new(7, 8), RECYCLE_WITH_POINT_IN_TIME] {
        // Within the intervals (a device in and out of slow phases).
        let (value, reason) = recycle(1700.0, 591.0, 1.0, version);
        assert_eq!(value, "0", "{reason}");
        assert!(reason.contains("the two measurements' 95% intervals overlap: undecided"), "{reason}");
        assert!(!reason.contains("kSkipAnyCorruptedRecords"), "{reason}");
        // No gain at all.
        let (value, _) = recycle(600.0, 590.0, 0.02, version);
        assert_eq!(value, "0");
    }
}

/// etcd's verdict and caveats for a 2300-byte fdatasync case with this p99.
fn etcd(p99_ms: f64) -> (Option<bool>, Vec<String>) {
    let mean = p99_ms * 1e6 / 3.0;
    let c = CaseResult {
        section: "file_state".parse().unwrap(),
        method: "fdatasync".parse().unwrap(),
        label: "etcd: 2300 B + fdatasync".into(),
        durable: true,
        supported: true,
        write_size_bytes: crate::advise::ETCD_WRITE_BYTES,
        writes_per_commit: 1,
        file_state: "fallocate".parse().unwrap(),
        ops: 5000,
        ops_per_s: 1e9 / mean,
        latency_ns: LatencyNs { mean, p50: mean as u64, p99: (p99_ms * 1e6) as u64, ..LatencyNs::default() },
        ..CaseResult::default()
    };
    let env = Environment { fs_type: "ext4".into(), ..Environment::default() };
    let results = [c];
    let advice = super::super::etcd::advise(&Facts {
        env: &env,
        verdicts: &[],
        results: &results,
        under_writes: None,
        partial: false,
    });
    // Measured idle only: every verdict carries the idle-disk note (tests_background.rs); not this test's subject.
    let caveats = advice.caveats.into_iter().filter(|c| c != crate::advise::IDLE_DISK_NOTE).collect();
    (advice.pass, caveats)
}

#[test]
fn etcd_pass_close_to_the_limit_warns_that_etcds_own_p99_runs_higher() {
    let (pass, caveats) = etcd(7.0);
    assert_eq!(pass, Some(true));
    assert!(caveats.iter().any(|c| c.contains("etcd_disk_wal_fsync_duration_seconds")), "{caveats:?}");
    // A clear pass and a fail carry no such note.
    let (pass, caveats) = etcd(2.0);
    assert_eq!(pass, Some(true));
    assert!(caveats.is_empty(), "{caveats:?}");
    let (pass, caveats) = etcd(31.0);
    assert_eq!(pass, Some(false));
    assert!(caveats.is_empty(), "{caveats:?}");
}
