//! Golden tests: the whole probe (readers → environment → rules → text) over fixture trees of /proc and
//! /sys in `tests/fixtures/probe/<scenario>/` (regenerate them with `make-fixtures.sh` there).
//! Each scenario checks the exact set of verdict codes, then snapshots the rendered text.

use super::{DirFacts, render, sysfs::Root};
use crate::core::schema::CaseResult;
use serde::Deserialize;
use std::path::PathBuf;

/// `facts.json`: what the syscalls on DIR would have returned, and measured flush rates.
#[derive(Debug, Deserialize)]
struct FixtureFacts {
    dir: String,
    fs_magic: u64,
    dev: Option<(u32, u32)>,
    /// `(offset alignment, memory alignment)`.
    #[serde(default)]
    dio: Option<(u32, u32)>,
    /// `(unit min, unit max)`.
    #[serde(default)]
    atomic: Option<(u32, u32)>,
    #[serde(default)]
    fdatasync_per_s: Option<f64>,
    #[serde(default)]
    fsync_per_s: Option<f64>,
}

fn fixture_dir(scenario: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/probe").join(scenario)
}

fn measured(method: &str, ops_per_s: f64) -> CaseResult {
    CaseResult {
        section: crate::core::suite::Section::OneWrite,
        method: method.parse().unwrap(),
        label: format!("8 KiB overwrite + {method}"),
        durable: true,
        supported: true,
        write_size_bytes: 8192,
        writes_per_commit: 1,
        file_state: crate::core::suite::FileState::Overwrite,
        ops: 1000,
        ops_per_s,
        // One commit at a time, so the median is close to the mean, 1/rate.
        latency_ns: crate::core::schema::LatencyNs { p50: (1e9 / ops_per_s) as u64, ..Default::default() },
        ..CaseResult::default()
    }
}

/// Probe a scenario: returns the verdict codes and the rendered text.
fn probe(scenario: &str) -> (Vec<String>, String) {
    let dir = fixture_dir(scenario);
    let text = std::fs::read_to_string(dir.join("facts.json")).expect("facts.json");
    let f: FixtureFacts = serde_json::from_str(&text).expect("valid facts.json");
    let statx = syncbench_sys::StatxIo {
        dio: f.dio.map(|(offset, mem)| syncbench_sys::DioAlign { offset_align_bytes: offset, mem_align_bytes: mem }),
        atomic: f.atomic.map(|(min, max)| syncbench_sys::AtomicUnits { unit_min_bytes: min, unit_max_bytes: max }),
    };
    let facts =
        DirFacts { dir: f.dir.into(), fs_magic: Some(f.fs_magic), dev: f.dev, statx: Some(statx), notes: vec![] };
    let env = super::collect_from(&facts, &Root::at(dir.join("root")));
    let mut results = Vec::new();
    results.extend(f.fdatasync_per_s.map(|r| measured("fdatasync", r)));
    results.extend(f.fsync_per_s.map(|r| measured("fsync", r)));
    let verdicts = super::verdicts(&env, &results);
    let mut out = render::environment_tree(&env);
    for r in &results {
        out.push_str(&format!("measured: {:.0} {}/s\n", r.ops_per_s, r.method));
    }
    out.push('\n');
    out.push_str(&render::verdict_list(&verdicts));
    let mut codes: Vec<String> = verdicts.into_iter().map(|v| v.code.to_string()).collect();
    codes.sort();
    (codes, out)
}

fn golden(scenario: &str, expected_codes: &[&str]) {
    let (codes, text) = probe(scenario);
    let mut expected: Vec<&str> = expected_codes.to_vec();
    expected.sort();
    assert_eq!(codes, expected, "verdict codes of {scenario}:\n{text}");
    assert_golden!(format!("syncbench__probe__golden_tests__{scenario}"), text);
}

#[test]
fn nvme_volatile_cache() {
    golden("nvme_volatile_cache", &[]);
}

#[test]
fn nvme_no_volatile_cache() {
    golden("nvme_no_volatile_cache", &[]);
}

#[test]
fn sata_ssd() {
    golden("sata_ssd", &["volatile_cache_without_fua", "fsync_slower_than_fdatasync"]);
}

#[test]
fn hdd_honest() {
    golden("hdd_honest", &["volatile_cache_without_fua"]);
}

#[test]
fn hdd_lying() {
    golden("hdd_lying", &["implausible_flush_rate", "volatile_cache_without_fua"]);
}

#[test]
fn raid_protected_cache() {
    golden("raid_protected_cache", &["implausible_flush_rate"]);
}

#[test]
fn vm_kvm_virtio() {
    // vda says it is rotational, virtio's default: no verdict is built on a platter it may not have.
    golden("vm_kvm_virtio", &["virtual_machine", "volatile_cache_without_fua"]);
}

#[test]
fn tmpfs() {
    golden("tmpfs", &["not_durable_memory_fs"]);
}

#[test]
fn overlay() {
    golden("overlay", &["layered_overlay"]);
}

#[test]
fn loop_xfs() {
    golden("loop_xfs", &["layered_loop", "virtual_machine", "volatile_cache_without_fua"]);
}

#[test]
fn nobarrier() {
    golden("nobarrier", &["flushes_disabled", "volatile_cache_without_fua"]);
}

#[test]
fn data_journal() {
    golden("data_journal", &["data_journal", "fsync_slower_than_fdatasync"]);
}

#[test]
fn atomic_write_nvme() {
    golden("atomic_write_nvme", &["atomic_writes_available"]);
}

#[test]
fn lvm_on_md_raid1() {
    golden("lvm_on_md_raid1", &["volatile_cache_without_fua"]);
}

#[test]
fn nfs() {
    golden("nfs", &["layered_network"]);
}

#[test]
fn unknown_everything() {
    golden("unknown_everything", &["unknown_fs", "device_unknown"]);
}

#[test]
fn btrfs_unreadable_sysfs() {
    golden("btrfs_unreadable_sysfs", &[]);
}

#[test]
fn fuse_sshfs() {
    golden("fuse_sshfs", &["layered_fuse"]);
}
