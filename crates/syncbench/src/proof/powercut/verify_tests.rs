//! verify against planted damage: each kind of loss, a torn record, a stale record, another run's record;
//! and a clean run passes.

use super::*;
use crate::core::method::SyncMethod;
use crate::proof::powercut::acks::parse;
use crate::proof::powercut::record::encode;
use crate::proof::powercut::writer::{self, Witness, WritePlan};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Collects the lines and stops the writer after `limit` acks.
struct Collect<'a> {
    text: String,
    acks: usize,
    limit: usize,
    stop: &'a AtomicBool,
}

impl Witness for Collect<'_> {
    fn send(&mut self, line: &str) -> std::io::Result<()> {
        self.text.push_str(line);
        self.acks += 1;
        if self.acks >= self.limit {
            self.stop.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// A real run of the writer (fdatasync) in a temporary directory: its root and acks text.
fn written(records: usize) -> (tempfile::TempDir, PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    let plan = WritePlan {
        dir: tmp.path().canonicalize().unwrap(),
        method: SyncMethod::Fdatasync,
        duration: None,
        run: 0x5eed,
    };
    let stop = AtomicBool::new(false);
    let mut witness = Collect { text: String::new(), acks: 0, limit: records, stop: &stop };
    let root = writer::prepare(&plan, &mut witness).unwrap();
    let summary = writer::write(&plan, &root, &mut witness, &stop).unwrap();
    assert_eq!(summary.ended_by, "stopped");
    (tmp, root, witness.text)
}

fn check(root: &Path, text: &str) -> Verification {
    let (header, acks) = parse(text).unwrap();
    verify(root, &header, &acks).unwrap()
}

fn kind(v: &Verification, kind: Kind) -> &KindResult {
    v.kinds.iter().find(|k| k.kind == kind.name()).unwrap()
}

fn plant(path: &Path, offset: u64, bytes: &[u8]) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().write_all_at(bytes, offset).unwrap();
}

fn record(run: u64, kind: Kind, seq: u64, slot: u64) -> Vec<u8> {
    let mut buf = vec![0u8; RECORD_BYTES];
    encode(run, RecordId { kind, seq, slot }, &mut buf);
    buf
}

#[test]
fn an_undamaged_run_has_every_acknowledged_record() {
    let (_tmp, root, text) = written(200);
    let v = check(&root, &text);
    assert_eq!(v.failures(), 0, "{:?}", v.examples);
    assert!(v.acknowledged() >= 200 - 1);
    for k in Kind::ALL {
        let r = kind(&v, k);
        assert!(r.records.acknowledged > 0 && r.present == r.checked, "{r:?}");
    }
}

#[test]
fn planted_losses_are_found_per_kind() {
    let (_tmp, root, text) = written(200);
    // Slot 3's last acknowledged overwrite zeroed, append record 5 zeroed, new file 2 deleted.
    plant(&root.join("overwrite.dat"), 3 * RECORD_BYTES as u64, &[0u8; RECORD_BYTES]);
    plant(&root.join("append-0.dat"), 5 * RECORD_BYTES as u64, &[0u8; RECORD_BYTES]);
    std::fs::remove_file(root.join("new/2.rec")).unwrap();
    let v = check(&root, &text);
    assert_eq!(
        [
            kind(&v, Kind::Overwrite).records.lost,
            kind(&v, Kind::Append).records.lost,
            kind(&v, Kind::NewFile).records.lost
        ],
        [1, 1, 1]
    );
    assert!(v.examples.iter().any(|e| e.contains("new_file") && e.contains("missing")), "{:?}", v.examples);
}

#[test]
fn a_torn_record_is_torn_whichever_sectors_persisted() {
    let (_tmp, root, text) = written(200);
    // Append 7 keeps its first 3 sectors; append 8 loses its first sector only (its header).
    plant(&root.join("append-0.dat"), 7 * RECORD_BYTES as u64 + 3 * 512, &[0u8; 5 * 512]);
    plant(&root.join("append-0.dat"), 8 * RECORD_BYTES as u64, &[0u8; 512]);
    let v = check(&root, &text);
    assert_eq!(kind(&v, Kind::Append).records.torn, 2, "{:?}", v.examples);
    assert_eq!(kind(&v, Kind::Append).records.lost, 0);
}

#[test]
fn a_stale_overwrite_and_another_runs_record_are_lost() {
    let (_tmp, root, text) = written(200);
    let (header, acks) = parse(&text).unwrap();
    let last_in_slot_1 =
        acks.records.iter().filter(|r| r.kind == Kind::Overwrite && r.slot == 1).map(|r| r.seq).max().unwrap();
    // An older record of this run in slot 1 (the acknowledged overwrite never reached the disk).
    plant(
        &root.join("overwrite.dat"),
        RECORD_BYTES as u64,
        &record(header.run, Kind::Overwrite, last_in_slot_1 - 1, 1),
    );
    // Another run's new file 0.
    plant(&root.join("new/0.rec"), 0, &record(header.run + 1, Kind::NewFile, 2, 0));
    let v = check(&root, &text);
    assert_eq!(kind(&v, Kind::Overwrite).records.lost, 1);
    assert_eq!(kind(&v, Kind::NewFile).records.lost, 1);
    assert!(v.examples.iter().any(|e| e.contains("stale")), "{:?}", v.examples);
    assert!(v.examples.iter().any(|e| e.contains("another run")), "{:?}", v.examples);
}

#[test]
fn records_written_but_never_acknowledged_are_allowed_and_counted() {
    let (_tmp, root, text) = written(200);
    // The witness lost the last 20 acks (the power went before they left).
    let lines: Vec<&str> = text.lines().collect();
    let kept = lines[..lines.len() - 20].join("\n") + "\n";
    let v = check(&root, &kept);
    assert_eq!(v.failures(), 0, "{:?}", v.examples);
    assert!(v.kinds.iter().map(|k| k.records.unacknowledged_present).sum::<u64>() >= 19, "{:?}", v.kinds);
}

#[test]
fn a_disk_that_lost_the_whole_run_directory_lost_every_record() {
    let (_tmp, root, text) = written(100);
    std::fs::remove_dir_all(&root).unwrap();
    let v = check(&root, &text);
    assert!(v.kinds.iter().all(|k| k.checked > 0 && k.records.lost == k.checked && k.present == 0), "{:?}", v.kinds);
}

#[test]
fn an_overwrite_torn_by_the_next_write_to_its_slot_is_told_apart_from_a_torn_acknowledged_record() {
    let (_tmp, root, text) = written(200);
    let (header, acks) = parse(&text).unwrap();
    let last = |slot: u64| {
        acks.records.iter().filter(|r| r.kind == Kind::Overwrite && r.slot == slot).map(|r| r.seq).max().unwrap()
    };
    let round = writer::overwrite_round(last(4)).unwrap();
    assert_eq!(round % writer::OVERWRITE_SLOTS, 4);
    // Slot 4: the first 3 sectors of the next overwrite of slot 4 (never acknowledged) reached the disk.
    let next = record(header.run, Kind::Overwrite, writer::overwrite_seq(round + writer::OVERWRITE_SLOTS), 4);
    plant(&root.join("overwrite.dat"), 4 * RECORD_BYTES as u64, &next[..3 * 512]);
    // Slot 5: the first 3 sectors of some other record: a real tear.
    let other = record(header.run, Kind::Overwrite, last(5) + 1000, 5);
    plant(&root.join("overwrite.dat"), 5 * RECORD_BYTES as u64, &other[..3 * 512]);
    let v = check(&root, &text);
    let o = kind(&v, Kind::Overwrite);
    assert_eq!((o.records.torn_by_next_overwrite, o.records.torn, o.records.lost), (1, 1, 0), "{o:?}");
}

#[test]
fn overwrite_sequence_numbers_invert() {
    for n in 0..5000 {
        assert_eq!(writer::overwrite_round(writer::overwrite_seq(n)), Some(n));
    }
    assert_eq!(writer::overwrite_round(1), None, "seq 1 is round 0's append");
}
