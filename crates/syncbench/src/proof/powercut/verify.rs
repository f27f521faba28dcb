//! `powercut verify`: after the reboot, is every acknowledged record present and intact?
//!
//! Per kind: an overwrite slot is checked for the last record acknowledged in it (a later record there,
//! acknowledged or not, supersedes it; an earlier one is *stale*: the acknowledged write was lost); an
//! append or a new file is checked at its own place. Records retired by the writer are not expected.
//! Records of this run that were never acknowledged may be present (a write can reach the disk before its
//! durable write returns, or the power can go before the ack leaves): counted, allowed.

use super::acks::{Acks, RunHeader};
use super::record::{Decoded, Kind, RECORD_BYTES, RecordId, decode, sectors_matching};
use super::writer::APPEND_SEGMENT_RECORDS;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The outcome for one kind of write.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct KindResult {
    /// overwrite, append or new_file.
    pub kind: String,
    /// Records checked: the last acknowledged per overwrite slot, every non-retired append and new file.
    pub checked: u64,
    /// Checked and found whole (or superseded by a later whole record in the same slot).
    pub present: u64,
    /// Acknowledged, lost, torn… (in the JSON as fields of the kind).
    #[serde(flatten)]
    pub records: RecordCounts,
}

/// Acknowledged records and what became of them: of one kind, of one cut (its kinds summed) or of a
/// `powercut lab` cell (its cuts summed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordCounts {
    /// Acknowledgements received.
    pub acknowledged: u64,
    /// Checked and not there: never written, an older record (stale), another run's, or zeros.
    pub lost: u64,
    /// Checked and partly there: some sectors new, some not.
    pub torn: u64,
    /// Overwrites only: the acknowledged record partly overwritten by the next overwrite of its slot, in
    /// flight at the cut (every sector is one of the two records'): the torn-page hazard an in-place
    /// overwrite always has on a disk that writes 512-byte sectors, not an acknowledgement broken. Not counted
    /// as lost or torn.
    pub torn_by_next_overwrite: u64,
    /// Whole records of this run that were never acknowledged (allowed).
    pub unacknowledged_present: u64,
}

impl std::iter::Sum for RecordCounts {
    fn sum<I: Iterator<Item = RecordCounts>>(iter: I) -> RecordCounts {
        iter.fold(RecordCounts::default(), |a, b| RecordCounts {
            acknowledged: a.acknowledged + b.acknowledged,
            lost: a.lost + b.lost,
            torn: a.torn + b.torn,
            torn_by_next_overwrite: a.torn_by_next_overwrite + b.torn_by_next_overwrite,
            unacknowledged_present: a.unacknowledged_present + b.unacknowledged_present,
        })
    }
}

/// What verify found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Verification {
    /// The run id.
    pub run: String,
    /// The method the writer used, and whether it promises durability.
    pub method: crate::core::method::SyncMethod,
    /// Whether that method is durable (losses with a not-durable method are expected).
    pub durable: bool,
    /// Per kind, in the order overwrite, append, new file.
    pub kinds: Vec<KindResult>,
    /// The first lost or torn records, described.
    pub examples: Vec<String>,
}

/// How many lost or torn records are described.
const EXAMPLES_MAX: usize = 10;

impl Verification {
    /// The counts of every kind, summed.
    pub fn records(&self) -> RecordCounts {
        self.kinds.iter().map(|k| k.records).sum()
    }

    /// Acknowledged records lost or torn, all kinds.
    pub fn failures(&self) -> u64 {
        let r = self.records();
        r.lost + r.torn
    }

    /// Acknowledgements, all kinds.
    pub fn acknowledged(&self) -> u64 {
        self.records().acknowledged
    }
}

struct Checker<'a> {
    run: u64,
    acks: &'a Acks,
    examples: Vec<String>,
}

/// Check the run's directory `root` against `acks` (already matched to it by the caller).
pub fn verify(root: &Path, header: &RunHeader, acks: &Acks) -> std::io::Result<Verification> {
    let mut checker = Checker { run: header.run, acks, examples: Vec::new() };
    let kinds = vec![checker.overwrites(root)?, checker.appends(root)?, checker.new_files(root)?];
    Ok(Verification {
        run: format!("{:016x}", header.run),
        method: header.method,
        durable: header.durable,
        kinds,
        examples: checker.examples,
    })
}

/// The run's directory in `dir` (canonical) if the acks' header belongs there; `Err`: why these acks do
/// not match this directory, in one line.
pub fn run_root(dir: &Path, header: &RunHeader) -> Result<std::path::PathBuf, String> {
    if header.dir != dir {
        return Err(format!(
            "these are the acks of a run in {}, not in {}; give the matching directory or acks",
            header.dir.display(),
            dir.display()
        ));
    }
    let root = super::writer::run_dir(dir, header.run);
    if !root.is_dir() {
        return Err(format!(
            "{} has no files of run {:016x} (no {}): the acks are from another run, or its files were removed (or the disk lost the directory `write` had made durable: then every record is lost)",
            dir.display(),
            header.run,
            root.display()
        ));
    }
    Ok(root)
}

/// Read one record's worth at `offset` of `path`; a missing file or a short one gives fewer bytes.
fn read_record(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    let fd = match syncbench_sys::open_read_only(path) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut buf = vec![0u8; RECORD_BYTES];
    let n = syncbench_sys::pread_upto(&fd, &mut buf, offset)?;
    buf.truncate(n);
    Ok(buf)
}

enum Found {
    Present,
    TornByNext,
    Lost(String),
    Torn,
}

impl Checker<'_> {
    fn acked(&self, kind: Kind) -> impl Iterator<Item = RecordId> + '_ {
        self.acks.records.iter().copied().filter(move |r| r.kind == kind)
    }

    /// Judge the bytes where acknowledged record `id` should be; `later_ok`: a later record of the same slot
    /// supersedes it (overwrites).
    fn judge(&self, id: RecordId, bytes: &[u8], later_ok: bool) -> Found {
        match decode(self.run, bytes) {
            Decoded::Intact(found) if found.kind == id.kind && found.slot == id.slot && found.seq == id.seq => {
                Found::Present
            }
            Decoded::Intact(found)
                if later_ok && found.kind == id.kind && found.slot == id.slot && found.seq > id.seq =>
            {
                Found::Present
            }
            Decoded::Intact(found) if found.seq < id.seq => {
                Found::Lost(format!("stale: holds record {} of this run", found.seq))
            }
            Decoded::Intact(found) => Found::Lost(format!("holds record {} of this run", found.seq)),
            Decoded::Torn => Found::Torn,
            Decoded::OtherRun(run) => Found::Lost(format!("holds a record of another run ({run:016x})")),
            Decoded::Nothing if bytes.is_empty() => Found::Lost("missing".into()),
            Decoded::Nothing if sectors_matching(self.run, id, bytes) > 0 => Found::Torn,
            Decoded::Nothing => Found::Lost("no record there".into()),
        }
    }

    fn tally(&mut self, result: &mut KindResult, id: RecordId, found: Found) {
        result.checked += 1;
        let what = match found {
            Found::Present => {
                result.present += 1;
                return;
            }
            Found::TornByNext => {
                result.records.torn_by_next_overwrite += 1;
                return;
            }
            Found::Lost(why) => {
                result.records.lost += 1;
                format!("lost ({why})")
            }
            Found::Torn => {
                result.records.torn += 1;
                "torn".to_string()
            }
        };
        if self.examples.len() < EXAMPLES_MAX {
            self.examples.push(format!("{} record {} (slot {}): {what}", id.kind.name(), id.seq, id.slot));
        }
    }

    fn overwrites(&mut self, root: &Path) -> std::io::Result<KindResult> {
        let mut result = KindResult { kind: Kind::Overwrite.name().into(), ..KindResult::default() };
        let mut last: HashMap<u64, RecordId> = HashMap::new();
        for id in self.acked(Kind::Overwrite) {
            result.records.acknowledged += 1;
            last.entry(id.slot).and_modify(|l| *l = if id.seq > l.seq { id } else { *l }).or_insert(id);
        }
        let path = root.join("overwrite.dat");
        // A disk that lost even the file (or the run's directory) lost every record in it.
        let slots = match std::fs::metadata(&path) {
            Ok(m) => m.len() / RECORD_BYTES as u64,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        for slot in 0..slots {
            let bytes = read_record(&path, slot * RECORD_BYTES as u64)?;
            let found = match (last.get(&slot), decode(self.run, &bytes)) {
                (Some(&id), decoded) => {
                    if matches!(decoded, Decoded::Intact(f) if f.seq > id.seq) {
                        result.records.unacknowledged_present += 1;
                    }
                    match self.judge(id, &bytes, true) {
                        Found::Torn if torn_by_next_overwrite(self.run, id, &bytes) => Found::TornByNext,
                        found => found,
                    }
                }
                (None, Decoded::Intact(_)) => {
                    result.records.unacknowledged_present += 1;
                    continue;
                }
                (None, _) => continue,
            };
            self.tally(&mut result, last[&slot], found);
        }
        // Acknowledged slots beyond the file's end (it shrank?) are lost too.
        for (&slot, &id) in last.iter().filter(|(s, _)| **s >= slots) {
            let found = Found::Lost(format!("overwrite.dat missing or shorter than slot {slot}"));
            self.tally(&mut result, id, found);
        }
        Ok(result)
    }

    fn appends(&mut self, root: &Path) -> std::io::Result<KindResult> {
        let mut result = KindResult { kind: Kind::Append.name().into(), ..KindResult::default() };
        let segment = |slot: u64| root.join(format!("append-{}.dat", slot / APPEND_SEGMENT_RECORDS));
        let offset = |slot: u64| slot % APPEND_SEGMENT_RECORDS * RECORD_BYTES as u64;
        let mut acked = HashSet::new();
        let ids: Vec<RecordId> = self.acked(Kind::Append).collect();
        for id in ids {
            result.records.acknowledged += 1;
            acked.insert(id.slot);
            if self.acks.is_retired(Kind::Append, id.slot) {
                continue;
            }
            let bytes = read_record(&segment(id.slot), offset(id.slot))?;
            let found = self.judge(id, &bytes, false);
            self.tally(&mut result, id, found);
        }
        for (name, n) in numbered_files(root, "append-", ".dat")? {
            let records = std::fs::metadata(root.join(&name))?.len().div_ceil(RECORD_BYTES as u64);
            for i in 0..records {
                let slot = n * APPEND_SEGMENT_RECORDS + i;
                if !acked.contains(&slot)
                    && matches!(decode(self.run, &read_record(&segment(slot), offset(slot))?), Decoded::Intact(_))
                {
                    result.records.unacknowledged_present += 1;
                }
            }
        }
        Ok(result)
    }

    fn new_files(&mut self, root: &Path) -> std::io::Result<KindResult> {
        let mut result = KindResult { kind: Kind::NewFile.name().into(), ..KindResult::default() };
        let dir = root.join("new");
        let mut acked = HashSet::new();
        let ids: Vec<RecordId> = self.acked(Kind::NewFile).collect();
        for id in ids {
            result.records.acknowledged += 1;
            acked.insert(id.slot);
            if self.acks.is_retired(Kind::NewFile, id.slot) {
                continue;
            }
            let bytes = read_record(&dir.join(format!("{}.rec", id.slot)), 0)?;
            let found = self.judge(id, &bytes, false);
            self.tally(&mut result, id, found);
        }
        for (name, slot) in numbered_files(&dir, "", ".rec")? {
            if !acked.contains(&slot)
                && matches!(decode(self.run, &read_record(&dir.join(name), 0)?), Decoded::Intact(_))
            {
                result.records.unacknowledged_present += 1;
            }
        }
        Ok(result)
    }
}

/// Whether every sector of `bytes` is the acknowledged overwrite `id`'s or the next overwrite of its slot's
/// (256 rounds later), with some of each: that next write was in flight when the power went.
fn torn_by_next_overwrite(run: u64, id: RecordId, bytes: &[u8]) -> bool {
    let Some(round) = super::writer::overwrite_round(id.seq) else { return false };
    let next = RecordId { seq: super::writer::overwrite_seq(round + super::writer::OVERWRITE_SLOTS), ..id };
    let (mut a, mut b) = (vec![0u8; RECORD_BYTES], vec![0u8; RECORD_BYTES]);
    super::record::encode(run, id, &mut a);
    super::record::encode(run, next, &mut b);
    if bytes.len() != RECORD_BYTES {
        return false;
    }
    let sectors = bytes.chunks(512).zip(a.chunks(512).zip(b.chunks(512)));
    let (mut from_a, mut from_b) = (false, false);
    for (got, (sa, sb)) in sectors {
        match (got == sa, got == sb) {
            (true, _) => from_a = true,
            (false, true) => from_b = true,
            (false, false) => return false,
        }
    }
    from_a && from_b
}

/// Files in `dir` named `<prefix><n><suffix>`, with their n.
fn numbered_files(dir: &Path, prefix: &str, suffix: &str) -> std::io::Result<Vec<(String, u64)>> {
    let mut found = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(n) = name.strip_prefix(prefix).and_then(|r| r.strip_suffix(suffix)).and_then(|n| n.parse().ok()) {
            found.push((name, n));
        }
    }
    Ok(found)
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
