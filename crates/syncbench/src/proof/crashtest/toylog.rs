//! A ten-line durable log used only to test the crash loop itself: each commit appends a checksummed
//! record and syncs. Its bug switch (skip the sync) must be caught.

use super::coverage::Coverage;
use super::history::History;
use super::{ExploreOptions, Scenario, explore};
use std::collections::BTreeMap;
use std::path::Path;
use syncbench_engine::{FileOptions, Storage, StorageFile, WriteSync};
use syncbench_simfs::{Profile, SimFs};

const LOG: &str = "/db/log";

fn checksum(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811C_9DC5u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

pub struct ToyLog {
    pub skip_sync: bool,
    pub skip_dir_fsync: bool,
    pub retry_fsync_after_error: bool,
}

impl ToyLog {
    fn commit(&self, log: &impl StorageFile, id: u64, offset: &mut u64) -> std::io::Result<()> {
        let payload = format!("record {id:08}").into_bytes();
        let mut rec = (payload.len() as u32).to_le_bytes().to_vec();
        rec.extend_from_slice(&checksum(&payload).to_le_bytes());
        rec.extend_from_slice(&payload);
        log.write_at(&rec, *offset, WriteSync::None)?;
        if !self.skip_sync {
            let synced = log.sync_data();
            if synced.is_err() && self.retry_fsync_after_error {
                log.sync_data()?; // the bug: the retry returns 0 and the data is gone
            } else {
                synced?;
            }
        }
        *offset += rec.len() as u64;
        Ok(())
    }

    fn run_inner(&self, fs: &SimFs, history: &mut History) -> std::io::Result<()> {
        fs.create_dir_all(Path::new("/db"))?;
        let log = fs.create_new(Path::new(LOG), FileOptions::default())?;
        log.sync_all()?;
        if !self.skip_dir_fsync {
            fs.sync_dir(Path::new("/db"))?;
        }
        let mut offset = 0;
        for id in 0..20 {
            history.submit(id, format!("record {id:08}").into_bytes());
            self.commit(&log, id, &mut offset)?;
            history.ack(id, fs);
        }
        Ok(())
    }
}

impl Scenario for ToyLog {
    type State = BTreeMap<u64, Vec<u8>>;

    fn run(&self, _variant: usize, fs: &SimFs, history: &mut History, _seed: u64, _coverage: &mut Coverage) {
        if let Err(e) = self.run_inner(fs, history) {
            history.engine_failed(e);
        }
    }

    fn recover(&self, _variant: usize, fs: &SimFs, _coverage: &mut Coverage) -> Result<Self::State, String> {
        let mut out = BTreeMap::new();
        let Ok(bytes) = fs.read_file(Path::new(LOG)) else { return Ok(out) };
        let mut at = 0;
        while at + 8 <= bytes.len() {
            let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let sum = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
            let Some(payload) = bytes.get(at + 8..at + 8 + len) else { break };
            if len == 0 || checksum(payload) != sum {
                break;
            }
            let id: u64 =
                std::str::from_utf8(&payload[7..]).map_err(|e| e.to_string())?.parse().map_err(|e| format!("{e}"))?;
            out.insert(id, payload.to_vec());
            at += 8 + len;
        }
        Ok(out)
    }

    fn check(&self, history: &History, state: &Self::State) -> Result<(), String> {
        history.check_units(state)
    }

    fn settle(&self, history: &mut History, state: &Self::State) {
        history.settle(&state.keys().copied().collect());
    }
}

fn opts(profile: Profile, fsync_errors: bool) -> ExploreOptions {
    // One generation: the toy log starts over at each open.
    ExploreOptions { fsync_errors, generations: 1, ..ExploreOptions::new(7, 300, profile) }
}

#[test]
fn a_correct_log_passes_every_point() {
    let log = ToyLog { skip_sync: false, skip_dir_fsync: false, retry_fsync_after_error: false };
    for profile in [Profile::Strict, Profile::Ext4] {
        let summary = explore(&log, &opts(profile, false), |_| {}).unwrap();
        assert_eq!(summary.points, 300);
        assert!(summary.points_after_ack > 100);
        assert!(summary.sectors_old > 0 && summary.sectors_new > 0, "residue was exercised");
    }
}

#[test]
fn skipping_the_sync_is_caught() {
    let log = ToyLog { skip_sync: true, skip_dir_fsync: false, retry_fsync_after_error: false };
    let failure = explore(&log, &opts(Profile::Strict, false), |_| {}).unwrap_err();
    assert!(failure.message.contains("missing"), "{failure:?}");
}

#[test]
fn skipping_the_directory_fsync_is_caught_under_strict_only() {
    let log = ToyLog { skip_sync: false, skip_dir_fsync: true, retry_fsync_after_error: false };
    let failure = explore(&log, &opts(Profile::Strict, false), |_| {}).unwrap_err();
    assert!(failure.message.contains("missing"), "{failure:?}");
    // ext4 commits the create with the file's fsync: the same code is safe there.
    explore(&log, &opts(Profile::Ext4, false), |_| {}).unwrap();
}

#[test]
fn a_failure_reproduces_from_its_point_alone() {
    let log = ToyLog { skip_sync: true, skip_dir_fsync: false, retry_fsync_after_error: false };
    let failure = explore(&log, &opts(Profile::Strict, false), |_| {}).unwrap_err();
    let again = ExploreOptions { only_point: Some(failure.point), ..opts(Profile::Strict, false) };
    assert_eq!(explore(&log, &again, |_| {}).unwrap_err(), failure);
}

#[test]
fn a_fail_stop_log_survives_injected_fsync_errors() {
    let log = ToyLog { skip_sync: false, skip_dir_fsync: false, retry_fsync_after_error: false };
    let summary = explore(&log, &opts(Profile::Strict, true), |_| {}).unwrap();
    assert!(summary.writeback_errors > 0 && summary.engine_errors > 0);
}

#[test]
fn retrying_fsync_after_an_error_is_caught() {
    let log = ToyLog { skip_sync: false, skip_dir_fsync: false, retry_fsync_after_error: true };
    let failure = explore(&log, &opts(Profile::Strict, true), |_| {}).unwrap_err();
    assert!(failure.message.contains("after a sync had failed"), "{failure:?}");
}
