//! The record `powercut write` writes and `verify` reads back: 4096 bytes (eight 512-byte sectors, so a
//! write torn at a sector boundary is visible), laid out byte by byte as docs/powercut.md says.
//!
//! | offset | bytes | field |
//! |---:|---:|---|
//! | 0 | 8 | magic `SBPCUT01` |
//! | 8 | 8 | run id (u64, little-endian) |
//! | 16 | 1 | kind: 1 overwrite, 2 append, 3 new file |
//! | 17 | 7 | zero |
//! | 24 | 8 | sequence number (u64 LE), unique in the run |
//! | 32 | 8 | slot (u64 LE): overwrite slot, append index, or new-file number |
//! | 40 | 4048 | payload: splitmix64 stream seeded with `run ^ seq`, 506 u64 LE |
//! | 4088 | 8 | checksum: FNV-1a 64 of bytes 0..4088 (u64 LE) |

/// Size of one record: one page, eight sectors.
pub const RECORD_BYTES: usize = 4096;
/// The first eight bytes of every record.
pub const MAGIC: &[u8; 8] = b"SBPCUT01";
const PAYLOAD_AT: usize = 40;
const CHECKSUM_AT: usize = RECORD_BYTES - 8;

/// How a record reaches the disk: the three ways a database writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// In place, in a preallocated file (a recycled WAL segment, a data page).
    Overwrite,
    /// At the end of a file that grows (a WAL being filled; the size change must be durable too).
    Append,
    /// In a new file made durable with a directory fsync (a new segment, an SSTable).
    NewFile,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 3] = [Kind::Overwrite, Kind::Append, Kind::NewFile];

    /// The name in acks files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Overwrite => "overwrite",
            Kind::Append => "append",
            Kind::NewFile => "new_file",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    fn code(self) -> u8 {
        match self {
            Kind::Overwrite => 1,
            Kind::Append => 2,
            Kind::NewFile => 3,
        }
    }

    fn from_code(code: u8) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// A record's identity: what the witness is told and what verify looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordId {
    /// How it was written.
    pub kind: Kind,
    /// Its sequence number in the run.
    pub seq: u64,
    /// Where it is: overwrite slot, append index or new-file number.
    pub slot: u64,
}

/// What 4096 bytes read back from the disk are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// A whole record of this run.
    Intact(RecordId),
    /// This run's magic and id but a wrong checksum or payload: a torn or half-written record.
    Torn,
    /// A whole record of another run (left by an earlier run).
    OtherRun(u64),
    /// Zeros or anything else: no record.
    Nothing,
}

/// splitmix64: the payload generator and the run-id mixer.
pub use crate::core::hash::splitmix64_next as splitmix64;

use crate::core::hash::fnv1a64;

fn fill_payload(run: u64, seq: u64, out: &mut [u8]) {
    let mut state = run ^ seq;
    for word in out.chunks_exact_mut(8) {
        word.copy_from_slice(&splitmix64(&mut state).to_le_bytes());
    }
}

/// Write the record `id` of run `run` into `out` (exactly [`RECORD_BYTES`]).
pub fn encode(run: u64, id: RecordId, out: &mut [u8]) {
    assert_eq!(out.len(), RECORD_BYTES, "a record is {RECORD_BYTES} bytes");
    out[..8].copy_from_slice(MAGIC);
    out[8..16].copy_from_slice(&run.to_le_bytes());
    out[16..24].fill(0);
    out[16] = id.kind.code();
    out[24..32].copy_from_slice(&id.seq.to_le_bytes());
    out[32..40].copy_from_slice(&id.slot.to_le_bytes());
    fill_payload(run, id.seq, &mut out[PAYLOAD_AT..CHECKSUM_AT]);
    let sum = fnv1a64(&out[..CHECKSUM_AT]);
    out[CHECKSUM_AT..].copy_from_slice(&sum.to_le_bytes());
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// What `bytes` (one record's worth read from the disk; shorter means the file ended) hold, for run `run`.
pub fn decode(run: u64, bytes: &[u8]) -> Decoded {
    if bytes.len() < RECORD_BYTES || &bytes[..8] != MAGIC {
        return Decoded::Nothing;
    }
    let record_run = u64_at(bytes, 8);
    let sum_ok = fnv1a64(&bytes[..CHECKSUM_AT]) == u64_at(bytes, CHECKSUM_AT);
    let kind = Kind::from_code(bytes[16]);
    match (record_run == run, sum_ok, kind) {
        (false, true, Some(_)) => Decoded::OtherRun(record_run),
        (false, _, _) => Decoded::Nothing,
        (true, true, Some(kind)) => {
            let id = RecordId { kind, seq: u64_at(bytes, 24), slot: u64_at(bytes, 32) };
            let mut expected = vec![0u8; CHECKSUM_AT - PAYLOAD_AT];
            fill_payload(run, id.seq, &mut expected);
            if expected == bytes[PAYLOAD_AT..CHECKSUM_AT] { Decoded::Intact(id) } else { Decoded::Torn }
        }
        (true, _, _) => Decoded::Torn,
    }
}

/// How many of the record `id`'s eight sectors `bytes` hold exactly: a record whose first sector did not
/// persist but some later one did is torn, not absent (its header alone cannot say so).
pub fn sectors_matching(run: u64, id: RecordId, bytes: &[u8]) -> usize {
    let mut expected = vec![0u8; RECORD_BYTES];
    encode(run, id, &mut expected);
    expected.chunks(512).zip(bytes.chunks(512)).filter(|(e, b)| e == b).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(run: u64, kind: Kind, seq: u64, slot: u64) -> Vec<u8> {
        let mut buf = vec![0u8; RECORD_BYTES];
        encode(run, RecordId { kind, seq, slot }, &mut buf);
        buf
    }

    #[test]
    fn a_record_round_trips_with_its_identity() {
        let buf = record(7, Kind::Append, 42, 3);
        assert_eq!(&buf[..8], MAGIC);
        assert_eq!(decode(7, &buf), Decoded::Intact(RecordId { kind: Kind::Append, seq: 42, slot: 3 }));
    }

    #[test]
    fn a_record_torn_at_any_sector_boundary_is_torn() {
        let old = record(7, Kind::Overwrite, 1, 0);
        let new = record(7, Kind::Overwrite, 2, 0);
        for k in 1..8 {
            let mut torn = new.clone();
            torn[k * 512..].copy_from_slice(&old[k * 512..]);
            assert_eq!(decode(7, &torn), Decoded::Torn, "first {k} sectors new");
            let mut torn = old.clone();
            torn[k * 512..].copy_from_slice(&new[k * 512..]);
            assert_eq!(decode(7, &torn), Decoded::Torn, "first {k} sectors old");
        }
    }

    #[test]
    fn another_runs_record_zeros_and_a_short_read_are_recognised() {
        assert_eq!(decode(7, &record(8, Kind::NewFile, 5, 5)), Decoded::OtherRun(8));
        assert_eq!(decode(7, &vec![0u8; RECORD_BYTES]), Decoded::Nothing);
        assert_eq!(decode(7, &record(7, Kind::NewFile, 5, 5)[..100]), Decoded::Nothing);
    }

    #[test]
    fn a_payload_that_does_not_match_its_sequence_number_is_torn() {
        // A checksum recomputed over a wrong payload (a record of another seq relabelled) is still caught.
        let mut buf = record(7, Kind::Append, 1, 1);
        buf[24..32].copy_from_slice(&2u64.to_le_bytes());
        let sum = fnv1a64(&buf[..CHECKSUM_AT]);
        buf[CHECKSUM_AT..].copy_from_slice(&sum.to_le_bytes());
        assert_eq!(decode(7, &buf), Decoded::Torn);
    }
}
