//! The log crashed on the simulated file system (`syncbench-simfs`), deterministically: one seeded run of
//! interleaved clients is cut at EVERY storage operation in turn, each crash image (a seeded subset of
//! the unsynced sectors and directory operations, and the image that keeps none of them) is reopened,
//! and every acknowledged commit must come back with its bytes, in LSN order. A log that skips its sync
//! must lose exactly the commit acknowledged right before each crash that keeps nothing volatile.
//!
//! (`syncbench crashtest` runs the same simulator with many more shapes; this test keeps the log's own
//! crate honest without the CLI.)

mod wal_common;

use std::path::Path;
use syncbench_engine::wal::{FaultSwitches, Lsn, SyncMethod, Wal, WalConfig};
use syncbench_simfs::{ResiduePolicy, SimConfig, SimFs, SimRng};
use wal_common::{payload, small};

const DIR: &str = "/log";

/// What one run acknowledged: (storage op count when the commit returned, end LSN, payload).
type Acked = Vec<(u64, Lsn, Vec<u8>)>;

/// Three clients append records of 20..720 bytes; each round some of them commit (group commit: the
/// first commit's flush covers the others). Stops at the first error (the power loss).
fn run(fs: &SimFs, config: &WalConfig, seed: u64) -> Acked {
    let mut acked = Vec::new();
    let Ok((wal, _)) = Wal::open(fs.clone(), Path::new(DIR), config.clone()) else { return acked };
    let mut rng = SimRng::new(seed);
    for round in 0..40u32 {
        let mut batch = Vec::new();
        for client in 0..1 + rng.below(3) as u32 {
            let p = payload(client, round, 20 + rng.below(700) as usize);
            let Ok(lsn) = wal.append(1, &p) else { return acked };
            batch.push((lsn, p));
        }
        for (lsn, p) in batch {
            if wal.commit(lsn).is_err() {
                return acked;
            }
            acked.push((fs.stats().ops, lsn, p));
        }
    }
    acked
}

/// Crash a run at storage op `crash_op`, reopen the image, and return the acknowledged commits that are
/// missing or changed (by end LSN).
fn lost_after_crash(config: &WalConfig, seed: u64, crash_op: u64, image_seed: Option<u64>) -> Vec<Lsn> {
    let fs = SimFs::new(SimConfig::default());
    fs.set_crash_at_op(Some(crash_op));
    let acked = run(&fs, config, seed);
    let (image, _) = match image_seed {
        Some(s) => fs.crash_image(s),
        None => fs.crash_image_with(0, ResiduePolicy::None),
    };
    let (_, records) = Wal::open(image, Path::new(DIR), config.clone())
        .unwrap_or_else(|e| panic!("op {crash_op}, image {image_seed:?}: recovery failed: {e}"));
    assert!(records.windows(2).all(|w| w[0].end_lsn <= w[1].lsn), "op {crash_op}: LSN order");
    acked
        .iter()
        .filter(|(_, lsn, p)| !records.iter().any(|r| r.end_lsn == *lsn && &r.payload == p))
        .map(|(_, lsn, _)| *lsn)
        .collect()
}

fn ops_of_full_run(config: &WalConfig, seed: u64) -> (u64, Acked) {
    let fs = SimFs::new(SimConfig::default());
    let acked = run(&fs, config, seed);
    (fs.stats().ops, acked)
}

#[test]
fn acknowledged_commits_survive_a_crash_at_every_storage_operation() {
    for method in [SyncMethod::Fdatasync, SyncMethod::OpenDatasync, SyncMethod::Pwritev2Dsync] {
        let config = small(method);
        let (ops, acked) = ops_of_full_run(&config, 7);
        assert!(acked.len() > 60 && ops > 60, "{method:?}: a run of {ops} ops acknowledged {}", acked.len());
        for crash_op in 1..=ops + 1 {
            for image in [None, Some(crash_op), Some(crash_op ^ 0x5555)] {
                let lost = lost_after_crash(&config, 7, crash_op, image);
                assert!(lost.is_empty(), "{method:?}, crash at op {crash_op}, image {image:?}: lost {lost:?}");
            }
        }
    }
}

#[test]
fn a_log_that_skips_its_sync_loses_the_commit_acknowledged_before_each_crash() {
    let faults = FaultSwitches { skip_log_sync: true, ..FaultSwitches::default() };
    let config = WalConfig { faults, ..small(SyncMethod::Fdatasync) };
    let (_, acked) = ops_of_full_run(&config, 7);
    assert!(acked.len() > 60, "the run acknowledged {} commits", acked.len());
    // Crash right after each acknowledgement, keeping nothing that was not synced: with no log sync the
    // commit just acknowledged was only in the page cache, so it must be reported lost, every time.
    let mut caught = 0;
    for (op, lsn, _) in &acked {
        let lost = lost_after_crash(&config, 7, op + 1, None);
        assert!(lost.contains(lsn), "crash after the ack of LSN {lsn} (op {op}) kept it: lost {lost:?}");
        caught += 1;
    }
    assert_eq!(caught, acked.len());
}
