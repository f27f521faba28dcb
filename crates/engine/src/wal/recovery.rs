//! Recovery: read the segments in order while records validate and continue the sequence.
//!
//! - The first invalid record ends the log (a torn or unwritten tail).
//! - But if a valid record *written by a later flush* (its batch LSN is past the bad record) follows,
//!   the bad record had been durable: that is corruption, and recovery refuses to guess.
//! - Valid records after the end that belong to the same, interrupted flush (batch LSN at or before the
//!   bad record) were never acknowledged; they are reported in `stale_until` so the log can zero them
//!   before it writes again (otherwise a later crash could resurrect them behind new records).
//! - A read error aborts recovery: missing bytes are not the same thing as a torn tail.

use super::error::{WalError, WalResult};
use super::record::{self, HEADER_BYTES, KIND_PADDING, KIND_SEGMENT_HEADER, RECORD_ALIGN, SegmentHeader};
use super::segment::{self, BLOCK_BYTES};
use super::{Lsn, Record};
use crate::storage::{FileOptions, Storage, StorageFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a scan of the log directory found.
#[derive(Debug, Default)]
pub struct Scan {
    /// The caller's records, in LSN order.
    pub records: Vec<Record>,
    /// Where the next record goes.
    pub end_lsn: Lsn,
    /// Segment size of the existing log (None: no segment files).
    pub segment_bytes: Option<u64>,
    /// The log's identity, if any segment header was valid.
    pub log_id: Option<u64>,
    /// Bytes of the log from the start of `end_lsn`'s block up to `end_lsn` (direct I/O rewrites them).
    pub tail_block: Vec<u8>,
    /// Valid-looking records of an interrupted flush lie in `end_lsn..stale_until`; zero them.
    pub stale_until: Lsn,
    /// Every segment file, by number.
    pub files: BTreeMap<u64, PathBuf>,
    /// Leftover temporary files from an interrupted segment creation.
    pub leftovers: Vec<PathBuf>,
}

fn read_segment<S: Storage>(storage: &S, path: &Path) -> WalResult<Vec<u8>> {
    let what = || format!("cannot read log segment {}", path.display());
    let file = storage.open(path, FileOptions::default()).map_err(|e| WalError::io(what(), e))?;
    let len = file.len().map_err(|e| WalError::io(what(), e))?;
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, 0).map_err(|e| WalError::io(what(), e))?;
    Ok(buf)
}

/// The segment size of an existing log: every segment file is created at full size.
fn segment_size(storage: &impl Storage, files: &BTreeMap<u64, PathBuf>) -> WalResult<Option<u64>> {
    let mut size = None;
    for path in files.values() {
        let len = storage
            .open(path, FileOptions::default())
            .and_then(|f| f.len())
            .map_err(|e| WalError::io(format!("cannot read log segment {}", path.display()), e))?;
        if len == 0 || !len.is_multiple_of(BLOCK_BYTES) || size.is_some_and(|s| s != len) {
            return Err(WalError::Invalid(format!(
                "log segment {} has size {len}; every segment must be the same multiple of {BLOCK_BYTES} bytes",
                path.display()
            )));
        }
        size = Some(len);
    }
    Ok(size)
}

/// Why the scan stopped.
struct Stop {
    lsn: Lsn,
    reason: String,
}

/// Scan the log in `dir`. (`corruption_as_end` is a deliberate bug for crash tests: never set it.)
pub fn scan<S: Storage>(storage: &S, dir: &Path, corruption_as_end: bool) -> WalResult<Scan> {
    let (files, leftovers) =
        segment::list(storage, dir).map_err(|e| WalError::io(format!("cannot list {}", dir.display()), e))?;
    let Some(size) = segment_size(storage, &files)? else {
        return Ok(Scan { leftovers, ..Scan::default() });
    };
    let first = *files.keys().next().expect("non-empty");
    let mut scan = Scan { segment_bytes: Some(size), end_lsn: first * size, files, leftovers, ..Scan::default() };
    let mut n = first;
    let stop = loop {
        let Some(path) = scan.files.get(&n) else {
            break Stop { lsn: scan.end_lsn, reason: format!("segment {n} does not exist") };
        };
        let data = read_segment(storage, path)?;
        match scan_segment(&mut scan, n, size, &data) {
            Some(stop) => {
                let block_start = (stop.lsn - n * size) as usize / BLOCK_BYTES as usize * BLOCK_BYTES as usize;
                scan.tail_block = data[block_start..(stop.lsn - n * size) as usize].to_vec();
                break stop;
            }
            None => n += 1,
        }
    };
    scan.stale_until = check_after_end(storage, &scan, &stop, corruption_as_end)?;
    Ok(scan)
}

/// Read the records of segment `n` from `scan.end_lsn` on. None: the segment is complete, go on.
fn scan_segment(scan: &mut Scan, n: u64, size: u64, data: &[u8]) -> Option<Stop> {
    let base = n * size;
    loop {
        let offset = (scan.end_lsn - base) as usize;
        if size as usize - offset < HEADER_BYTES {
            // Too little room left for a record: the log continues in the next segment.
            scan.end_lsn = base + size;
            return None;
        }
        let lsn = scan.end_lsn;
        let (header, payload) = match record::decode(&data[offset..], lsn, n) {
            Ok(found) => found,
            Err(why) => return Some(Stop { lsn, reason: format!("{why:?}") }),
        };
        if let Err(reason) = check_kind_at(scan, header.kind, payload, offset, size) {
            return Some(Stop { lsn, reason });
        }
        let end_lsn = lsn + record::encoded_len(payload.len()) as u64;
        if header.kind <= record::MAX_USER_KIND {
            scan.records.push(Record { lsn, end_lsn, kind: header.kind, payload: payload.to_vec() });
        }
        scan.end_lsn = end_lsn;
    }
}

/// A checksummed record can still be out of place: a segment must open with its header, and the header
/// must describe this log.
fn check_kind_at(scan: &mut Scan, kind: u8, payload: &[u8], offset: usize, size: u64) -> Result<(), String> {
    match (offset == 0, kind) {
        (true, KIND_SEGMENT_HEADER) => {
            let header = SegmentHeader::from_bytes(payload).ok_or("segment header has a bad payload")?;
            if header.segment_bytes != size {
                return Err(format!("segment header says {} bytes, file has {size}", header.segment_bytes));
            }
            if scan.log_id.is_some_and(|id| id != header.log_id) {
                return Err("segment belongs to another log".to_string());
            }
            scan.log_id = Some(header.log_id);
            Ok(())
        }
        (true, _) => Err("segment does not start with its header".to_string()),
        (false, KIND_SEGMENT_HEADER) => Err("segment header in the middle of a segment".to_string()),
        (false, KIND_PADDING) if offset + record::encoded_len(payload.len()) != size as usize => {
            Err("padding does not reach the end of the segment".to_string())
        }
        _ => Ok(()),
    }
}

/// Look past the end for valid records. One from a later flush means corruption; ones from the same
/// interrupted flush are returned as the end of the range to zero.
fn check_after_end<S: Storage>(storage: &S, scan: &Scan, stop: &Stop, corruption_as_end: bool) -> WalResult<Lsn> {
    let size = scan.segment_bytes.expect("scan has a segment size");
    let mut stale_until = stop.lsn;
    for (&n, path) in scan.files.range(stop.lsn / size..) {
        let data = read_segment(storage, path)?;
        let base = n * size;
        // Start just past the bad record in its own segment, at the beginning of later ones.
        let mut offset = if base >= stop.lsn { 0 } else { (stop.lsn - base) as usize + RECORD_ALIGN };
        while offset + HEADER_BYTES <= data.len() {
            let lsn = base + offset as u64;
            match record::decode(&data[offset..], lsn, n) {
                Ok((h, _)) if h.batch_lsn > stop.lsn && !corruption_as_end => {
                    return Err(WalError::Corruption {
                        bad_lsn: stop.lsn,
                        reason: stop.reason.clone(),
                        later_lsn: lsn,
                    });
                }
                Ok((h, _)) => stale_until = stale_until.max(lsn + record::encoded_len(h.payload_len as usize) as u64),
                Err(_) => {}
            }
            offset += RECORD_ALIGN;
        }
    }
    Ok(stale_until)
}
