//! The control file: where recovery starts. Two 512-byte slots, each with a sequence number and a CRC32C;
//! an update overwrites the older slot and fsyncs, so a torn update leaves the other slot intact (the
//! LMDB/redb scheme). 512 bytes is the unit a disk is assumed to write untorn (PostgreSQL's pg_control).

use super::page::Lsn;
use crate::storage::{FileOptions, Storage, StorageFile, WriteSync};
use std::io;
use std::path::Path;

/// Bytes per slot.
pub const SLOT_BYTES: usize = 512;
const MAGIC: &[u8; 4] = b"SBPC";
const VERSION: u32 = 1;

/// What the last completed checkpoint recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlRecord {
    /// Increases by one per update; the slot with the highest valid sequence wins.
    pub seq: u64,
    /// Redo starts after this LSN: every change at or below it is in the data files.
    pub redo_lsn: Lsn,
    /// LSN of the checkpoint record itself.
    pub checkpoint_lsn: Lsn,
    /// Page size the data files were created with.
    pub page_size: u32,
    /// Torn-page protection the store was created with (a [`super::Mode`] code).
    pub mode: u8,
    /// Double-write design (a [`super::DwDesign`] code; 0, the 2012 design, in older files).
    pub dw_design: u8,
    /// Whether the store was shut down cleanly after this checkpoint.
    pub clean_shutdown: bool,
}

impl ControlRecord {
    fn encode(&self) -> [u8; SLOT_BYTES] {
        let mut slot = [0u8; SLOT_BYTES];
        slot[4..8].copy_from_slice(MAGIC);
        slot[8..12].copy_from_slice(&VERSION.to_le_bytes());
        slot[12..20].copy_from_slice(&self.seq.to_le_bytes());
        slot[20..28].copy_from_slice(&self.redo_lsn.to_le_bytes());
        slot[28..36].copy_from_slice(&self.checkpoint_lsn.to_le_bytes());
        slot[36..40].copy_from_slice(&self.page_size.to_le_bytes());
        slot[40] = self.mode;
        slot[41] = u8::from(self.clean_shutdown);
        slot[42] = self.dw_design;
        let sum = crc32c::crc32c(&slot[4..]);
        slot[..4].copy_from_slice(&sum.to_le_bytes());
        slot
    }

    /// The record recovery would start from in a control file's bytes (both slots): the valid one with
    /// the highest sequence, if any.
    pub fn newest_in(both: &[u8]) -> Option<ControlRecord> {
        both.chunks_exact(SLOT_BYTES).take(2).filter_map(ControlRecord::decode).max_by_key(|r| r.seq)
    }

    fn decode(slot: &[u8]) -> Option<ControlRecord> {
        let u32_at = |at: usize| u32::from_le_bytes(slot[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(slot[at..at + 8].try_into().expect("8 bytes"));
        if u32_at(0) != crc32c::crc32c(&slot[4..SLOT_BYTES]) || &slot[4..8] != MAGIC || u32_at(8) != VERSION {
            return None;
        }
        Some(ControlRecord {
            seq: u64_at(12),
            redo_lsn: u64_at(20),
            checkpoint_lsn: u64_at(28),
            page_size: u32_at(36),
            mode: slot[40],
            clean_shutdown: slot[41] == 1,
            dw_design: slot[42],
        })
    }
}

/// The open control file.
pub struct ControlFile<F> {
    file: F,
    last: ControlRecord,
}

impl<F: StorageFile> ControlFile<F> {
    /// Create the file with `first` in slot 0 (and an invalid slot 1), fsync it and its directory.
    pub fn create<S: Storage<File = F>>(storage: &S, path: &Path, first: ControlRecord) -> io::Result<Self> {
        let file = storage.create_new(path, FileOptions::default())?;
        let mut both = [0u8; 2 * SLOT_BYTES];
        both[..SLOT_BYTES].copy_from_slice(&first.encode());
        file.write_at(&both, 0, WriteSync::None)?;
        file.sync_all()?;
        storage.sync_dir(path.parent().unwrap_or(Path::new(".")))?;
        Ok(ControlFile { file, last: first })
    }

    /// Open and pick the valid slot with the highest sequence; an error if neither slot is valid.
    pub fn open<S: Storage<File = F>>(storage: &S, path: &Path) -> io::Result<Self> {
        let file = storage.open(path, FileOptions::default())?;
        let mut both = [0u8; 2 * SLOT_BYTES];
        file.read_exact_at(&mut both, 0)?;
        let last = ControlRecord::newest_in(&both)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "control file: both slots are invalid"))?;
        Ok(ControlFile { file, last })
    }

    /// The current record.
    pub fn current(&self) -> ControlRecord {
        self.last
    }

    /// Write `next` (its `seq` is set to current + 1) into the older slot and fsync.
    pub fn update(&mut self, mut next: ControlRecord) -> io::Result<()> {
        next.seq = self.last.seq + 1;
        assert!(next.checkpoint_lsn >= next.redo_lsn, "a checkpoint record comes after its redo point: {next:?}");
        let slot_at = (next.seq % 2) * SLOT_BYTES as u64;
        let slot = next.encode();
        assert_eq!(ControlRecord::decode(&slot), Some(next), "a control slot reads back as written");
        self.file.write_at(&slot, slot_at, WriteSync::None)?;
        self.file.sync_all()?;
        self.last = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::RealStorage;

    fn record(redo: Lsn) -> ControlRecord {
        ControlRecord {
            seq: 1,
            redo_lsn: redo,
            checkpoint_lsn: redo + 1,
            page_size: 8192,
            mode: 2,
            dw_design: 1,
            clean_shutdown: false,
        }
    }

    #[test]
    fn newest_valid_slot_wins_and_torn_slot_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control");
        let mut c = ControlFile::create(&RealStorage, &path, record(0)).unwrap();
        c.update(record(10)).unwrap();
        c.update(record(20)).unwrap();
        let reopened = ControlFile::open(&RealStorage, &path).unwrap();
        assert_eq!(reopened.current().redo_lsn, 20);
        assert_eq!(reopened.current().seq, 3);
        assert_eq!(reopened.current().dw_design, 1);
        // Tear the newest slot (seq 3 lives in slot 1): the older one (seq 2, redo 10) is used.
        let f = RealStorage.open(&path, FileOptions::default()).unwrap();
        f.write_at(&[0xFF; 100], SLOT_BYTES as u64 + 200, WriteSync::None).unwrap();
        let fallback = ControlFile::open(&RealStorage, &path).unwrap();
        assert_eq!(fallback.current().redo_lsn, 10);
        // Both torn: an error, never a guess.
        f.write_at(&[0xFF; 100], 200, WriteSync::None).unwrap();
        assert!(ControlFile::open(&RealStorage, &path).is_err());
    }
}
