//! Each verdict fires on a recorded run where it should and stays silent on one where it should not.
//!
//! The fixtures are `run --quick --sections a --json` recorded as root on this project's CI machine by
//! `bench/devacct_fixtures.sh` (ext4; lab disks are a FUSE-served image under a loop device):
//! `lab-zero-ext4` (honest, no FUA), `lab-hdd-ignores-flush` (a spinning profile that answers flushes
//! without doing them), `lab-hdd-honest`, `loop-ext4-nobarrier` (a loop device with a write-back cache,
//! ext4 mounted `-o nobarrier`: no flush reaches it). No device with FUA exists on that machine (virtio and
//! loop devices offer none), so the FUA fixture is `lab-zero-ext4` with its O_DSYNC direct case rewritten
//! as a FUA device reports it: one FUA write per commit and no flush ([`with_fua`]).

use super::*;
use crate::core::schema::{Envelope, RunPayload};

fn fixture(name: &str) -> Envelope<RunPayload> {
    let text = match name {
        "lab-zero-ext4" => include_str!("../fixtures/lab-zero-ext4.json"),
        "lab-hdd-ignores-flush" => include_str!("../fixtures/lab-hdd-ignores-flush.json"),
        "lab-hdd-honest" => include_str!("../fixtures/lab-hdd-honest.json"),
        "loop-ext4-nobarrier" => include_str!("../fixtures/loop-ext4-nobarrier.json"),
        _ => unreachable!("no fixture {name}"),
    };
    serde_json::from_str(text).unwrap()
}

fn codes(doc: &Envelope<RunPayload>) -> Vec<String> {
    all(&doc.environment, &doc.payload.results).into_iter().map(|v| v.code.to_string()).collect()
}

fn fires(doc: &Envelope<RunPayload>, code: &str) -> bool {
    codes(doc).iter().any(|c| c == code)
}

/// `lab-zero-ext4` as a device with FUA would have counted its O_DSYNC direct commits.
fn with_fua() -> Envelope<RunPayload> {
    let mut doc = fixture("lab-zero-ext4");
    for r in doc.payload.results.iter_mut().filter(|r| r.method == SyncMethod::OpenDatasyncDirect) {
        let d = r.device.as_mut().unwrap();
        let commits = d.commits;
        let lowest = d.devices.last_mut().unwrap();
        lowest.stat.flushes = 0;
        let q = lowest.requests.as_mut().unwrap();
        q.flushes.count = 0;
        q.fua_writes = commits;
    }
    for dev in &mut doc.environment.devices {
        dev.fua = Some(true);
    }
    doc
}

#[test]
fn the_fixtures_have_accounting_with_the_tracepoints() {
    for name in ["lab-zero-ext4", "lab-hdd-ignores-flush", "lab-hdd-honest", "loop-ext4-nobarrier"] {
        let doc = fixture(name);
        let counted = doc.payload.results.iter().filter(|r| r.device.as_ref().is_some_and(|d| d.traced().is_some()));
        assert!(counted.count() >= 10, "{name}");
    }
}

#[test]
fn commits_without_a_flush_are_critical_and_fua_or_flushes_are_not() {
    let nobarrier = fixture("loop-ext4-nobarrier");
    assert!(fires(&nobarrier, "durable_commits_without_flush"), "{:?}", codes(&nobarrier));
    let v = durable_commits_without_flush(&nobarrier.payload.results);
    assert_eq!(v[0].severity, Severity::Critical);
    assert!(v[0].message.contains("fdatasync (one_write)"), "{}", v[0].message);
    assert!(!fires(&fixture("lab-zero-ext4"), "durable_commits_without_flush"));
    assert!(!fires(&with_fua(), "durable_commits_without_flush"), "FUA writes are durable without a flush");
}

#[test]
fn flushes_faster_than_a_platter_fire_only_on_the_lying_disk() {
    let lying = fixture("lab-hdd-ignores-flush");
    assert!(fires(&lying, "flush_faster_than_device"), "{:?}", codes(&lying));
    assert!(!fires(&fixture("lab-hdd-honest"), "flush_faster_than_device"));
}

#[test]
fn fsync_costing_more_than_fdatasync_is_explained() {
    let doc = fixture("lab-zero-ext4");
    let v = fsync_costs_more_at_device(&doc.payload.results);
    assert_eq!(v.len(), 1, "{:?}", codes(&doc));
    assert!(v[0].message.contains("modification time"), "{}", v[0].message);
    // The same counts for both: nothing to say.
    let mut same = doc;
    let fdatasync = same.payload.results.iter().find(|r| r.method == SyncMethod::Fdatasync).unwrap().device.clone();
    for r in same.payload.results.iter_mut().filter(|r| r.method == SyncMethod::Fsync) {
        r.device = fdatasync.clone();
    }
    assert!(fsync_costs_more_at_device(&same.payload.results).is_empty());
}

#[test]
fn dsync_without_fua_becomes_write_plus_flush_and_with_fua_does_not() {
    let doc = fixture("lab-zero-ext4");
    let v = dsync_write_became_write_plus_flush(&doc.environment, &doc.payload.results);
    assert_eq!(v.len(), 1, "{:?}", codes(&doc));
    assert!(v[0].message.contains("does not offer FUA"), "{}", v[0].message);
    assert!(!fires(&with_fua(), "dsync_write_became_write_plus_flush"));
    assert!(!fires(&fixture("loop-ext4-nobarrier"), "dsync_write_became_write_plus_flush"));
}

#[test]
fn unattributable_counts_give_no_verdict() {
    let mut doc = fixture("loop-ext4-nobarrier");
    for r in &mut doc.payload.results {
        if let Some(d) = r.device.as_mut() {
            d.unattributable = Some("vda served requests that were not the commits'".into());
        }
    }
    assert!(codes(&doc).is_empty(), "{:?}", codes(&doc));
}

/// `doc`'s cases of `method` as a device would have counted them had no flush reached any layer.
fn without_flushes(doc: &mut Envelope<RunPayload>, method: SyncMethod, traced: bool) {
    for r in doc.payload.results.iter_mut().filter(|r| r.method == method) {
        for dev in &mut r.device.as_mut().unwrap().devices {
            dev.stat.flushes = 0;
            match (traced, dev.requests.as_mut()) {
                (false, _) => dev.requests = None,
                (true, Some(q)) => q.flushes.count = 0,
                (true, None) => {}
            }
        }
    }
}

#[test]
fn a_fua_write_seen_only_on_a_lower_layer_is_durable() {
    // The file system's device (a bio-based layer, say) saw no flush; the disk below received FUA writes.
    let mut doc = with_fua();
    without_flushes(&mut doc, SyncMethod::OpenDatasyncDirect, true);
    assert!(!fires(&doc, "durable_commits_without_flush"), "{:?}", codes(&doc));
    // The same counts with the FUA writes gone: nothing made those commits durable.
    for r in doc.payload.results.iter_mut().filter(|r| r.method == SyncMethod::OpenDatasyncDirect) {
        for dev in &mut r.device.as_mut().unwrap().devices {
            if let Some(q) = dev.requests.as_mut() {
                q.fua_writes = 0;
            }
        }
    }
    assert!(fires(&doc, "durable_commits_without_flush"));
}

#[test]
fn untraced_counts_cannot_accuse_a_direct_dsync_write_but_can_accuse_fdatasync() {
    // Without the tracepoints a FUA write is a plain write in /sys/block stat.
    let mut doc = fixture("lab-zero-ext4");
    without_flushes(&mut doc, SyncMethod::OpenDatasyncDirect, false);
    assert!(!fires(&doc, "durable_commits_without_flush"), "{:?}", codes(&doc));
    without_flushes(&mut doc, SyncMethod::Fdatasync, false);
    let v = durable_commits_without_flush(&doc.payload.results);
    assert_eq!(v.len(), 1, "{:?}", codes(&doc));
    assert!(
        v[0].message.contains("fdatasync (one_write)") && !v[0].message.contains("open_datasync"),
        "{}",
        v[0].message
    );
}
