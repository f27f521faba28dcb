//! The on-disk record: a 40-byte self-validating header followed by the payload, padded to 8 bytes.
//!
//! Byte layout (little endian; documented for users in docs/format.md):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `0x4C41_5753` ("SWAL") |
//! | 4 | 4 | CRC32C of the payload, continued over header bytes 8..40 |
//! | 8 | 8 | LSN: the record's own position in the log |
//! | 16 | 8 | batch LSN: where the write that carried this record began |
//! | 24 | 8 | segment number of the file the record lives in |
//! | 32 | 4 | payload length in bytes |
//! | 36 | 1 | kind (caller's 1..=239; 240..=255 belong to the log) |
//! | 37 | 1 | format version (1) |
//! | 38 | 2 | reserved, zero |
//!
//! The CRC is computed in two steps so that appenders can checksum their payload outside the log's lock
//! and the flush leader only finishes it over the 32 header bytes once it knows the batch LSN.

/// Bytes in a record header.
pub const HEADER_BYTES: usize = 40;
/// Records start at multiples of this (so a recovery scan only has to try aligned offsets).
pub const RECORD_ALIGN: usize = 8;
/// First four bytes of every record.
pub const MAGIC: u32 = 0x4C41_5753;
/// Format version written into every record.
pub const VERSION: u8 = 1;
/// Largest kind callers may use; larger values are reserved for the log itself.
pub const MAX_USER_KIND: u8 = 239;
/// The first record of every segment: [`SegmentHeader`].
pub const KIND_SEGMENT_HEADER: u8 = 250;
/// Filler from a record that did not fit to the end of its segment.
pub const KIND_PADDING: u8 = 251;

/// Size a record with `payload_len` payload bytes takes in the log, header and padding included.
pub fn encoded_len(payload_len: usize) -> usize {
    (HEADER_BYTES + payload_len).next_multiple_of(RECORD_ALIGN)
}

/// The header fields of one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// CRC32C as stored.
    pub crc: u32,
    /// The record's own position in the log.
    pub lsn: u64,
    /// Where the write that carried this record began (≤ `lsn`).
    pub batch_lsn: u64,
    /// The segment file the record belongs in.
    pub segment: u64,
    /// Payload bytes.
    pub payload_len: u32,
    /// Record kind.
    pub kind: u8,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Write a record at the start of `out` (which must hold `encoded_len(payload.len())` bytes) with a
/// provisional CRC (the payload's alone) and no batch LSN; [`seal`] completes it before it is written.
pub fn write_unsealed(out: &mut [u8], lsn: u64, segment: u64, kind: u8, payload: &[u8], payload_crc: u32) {
    let total = encoded_len(payload.len());
    let out = &mut out[..total];
    out[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    out[4..8].copy_from_slice(&payload_crc.to_le_bytes());
    out[8..16].copy_from_slice(&lsn.to_le_bytes());
    out[16..24].copy_from_slice(&0u64.to_le_bytes());
    out[24..32].copy_from_slice(&segment.to_le_bytes());
    let len = u32::try_from(payload.len()).expect("payload length checked by the caller");
    out[32..36].copy_from_slice(&len.to_le_bytes());
    out[36] = kind;
    out[37] = VERSION;
    out[38..40].fill(0);
    out[HEADER_BYTES..HEADER_BYTES + payload.len()].copy_from_slice(payload);
    out[HEADER_BYTES + payload.len()..].fill(0);
}

/// Stamp the batch LSN into an unsealed record and replace its provisional CRC with the final one.
pub fn seal(record: &mut [u8], batch_lsn: u64) {
    record[16..24].copy_from_slice(&batch_lsn.to_le_bytes());
    let payload_crc = u32_at(record, 4);
    let crc = crc32c::crc32c_append(payload_crc, &record[8..HEADER_BYTES]);
    record[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// Encode a complete, sealed record (for tests and tools; the log itself uses `write_unsealed` + `seal`).
pub fn encode(lsn: u64, batch_lsn: u64, segment: u64, kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; encoded_len(payload.len())];
    write_unsealed(&mut out, lsn, segment, kind, payload, crc32c::crc32c(payload));
    seal(&mut out, batch_lsn);
    out
}

/// Why bytes are not a valid record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// Fewer bytes than a header, or the payload runs past the end.
    Truncated,
    /// The magic number is wrong (zeros, garbage).
    Magic,
    /// Unknown version or reserved bits set.
    Version,
    /// The CRC does not match.
    Checksum,
    /// Checksum fine, but the record claims another position or segment (stale bytes of a recycled file).
    Position,
}

/// Decode the record at the start of `bytes`, expected at `lsn` in segment `segment`. Returns the header
/// and the payload.
pub fn decode(bytes: &[u8], lsn: u64, segment: u64) -> Result<(Header, &[u8]), Invalid> {
    if bytes.len() < HEADER_BYTES {
        return Err(Invalid::Truncated);
    }
    if u32_at(bytes, 0) != MAGIC {
        return Err(Invalid::Magic);
    }
    if bytes[37] != VERSION || bytes[38] != 0 || bytes[39] != 0 {
        return Err(Invalid::Version);
    }
    let header = Header {
        crc: u32_at(bytes, 4),
        lsn: u64_at(bytes, 8),
        batch_lsn: u64_at(bytes, 16),
        segment: u64_at(bytes, 24),
        payload_len: u32_at(bytes, 32),
        kind: bytes[36],
    };
    let end = HEADER_BYTES.checked_add(header.payload_len as usize).ok_or(Invalid::Truncated)?;
    if end > bytes.len() {
        return Err(Invalid::Truncated);
    }
    let payload = &bytes[HEADER_BYTES..end];
    let crc = crc32c::crc32c_append(crc32c::crc32c(payload), &bytes[8..HEADER_BYTES]);
    if crc != header.crc {
        return Err(Invalid::Checksum);
    }
    if header.lsn != lsn || header.segment != segment || header.batch_lsn > header.lsn || header.kind == 0 {
        return Err(Invalid::Position);
    }
    Ok((header, payload))
}

/// Payload of the [`KIND_SEGMENT_HEADER`] record that opens every segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    /// Size of every segment file of this log, in bytes.
    pub segment_bytes: u64,
    /// Random identity of the log, chosen when it was created: a segment from another log is rejected.
    pub log_id: u64,
}

/// Bytes in an encoded [`SegmentHeader`].
pub const SEGMENT_HEADER_PAYLOAD_BYTES: usize = 16;

impl SegmentHeader {
    /// Encode as a record payload.
    pub fn to_bytes(self) -> [u8; SEGMENT_HEADER_PAYLOAD_BYTES] {
        let mut out = [0u8; SEGMENT_HEADER_PAYLOAD_BYTES];
        out[0..8].copy_from_slice(&self.segment_bytes.to_le_bytes());
        out[8..16].copy_from_slice(&self.log_id.to_le_bytes());
        out
    }

    /// Decode a record payload.
    pub fn from_bytes(payload: &[u8]) -> Option<SegmentHeader> {
        if payload.len() != SEGMENT_HEADER_PAYLOAD_BYTES {
            return None;
        }
        Some(SegmentHeader { segment_bytes: u64_at(payload, 0), log_id: u64_at(payload, 8) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(lsn8 in 0u64..1 << 40, back in 0u64..1 << 20, seg in 0u64..1000, kind in 1u8..=255,
                      payload in proptest::collection::vec(any::<u8>(), 0..600)) {
            let lsn = lsn8 * 8;
            let batch = lsn.saturating_sub(back * 8);
            let rec = encode(lsn, batch, seg, kind, &payload);
            prop_assert_eq!(rec.len(), encoded_len(payload.len()));
            prop_assert_eq!(rec.len() % RECORD_ALIGN, 0);
            let (h, p) = decode(&rec, lsn, seg).unwrap();
            prop_assert_eq!(p, &payload[..]);
            prop_assert_eq!((h.lsn, h.batch_lsn, h.segment, h.kind), (lsn, batch, seg, kind));
            prop_assert_eq!(h.payload_len as usize, payload.len());
        }

        #[test]
        fn any_single_bit_flip_is_rejected(payload in proptest::collection::vec(any::<u8>(), 0..100),
                                           bit in 0usize..(140 * 8)) {
            let rec = encode(4096, 4000, 0, 7, &payload);
            let used = (HEADER_BYTES + payload.len()) * 8;
            let bit = bit % used;
            let mut bad = rec.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(decode(&bad, 4096, 0).is_err());
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), lsn in any::<u64>()) {
            let _ = decode(&bytes, lsn, 3);
        }
    }

    #[test]
    fn stale_position_is_rejected_even_with_a_good_checksum() {
        let rec = encode(800, 800, 2, 9, b"hello");
        assert_eq!(decode(&rec, 808, 2).unwrap_err(), Invalid::Position);
        assert_eq!(decode(&rec, 800, 3).unwrap_err(), Invalid::Position);
        assert_eq!(decode(&rec[..rec.len() - 8], 800, 2).unwrap_err(), Invalid::Truncated);
        assert_eq!(decode(&[0u8; 64], 0, 0).unwrap_err(), Invalid::Magic);
    }

    #[test]
    fn segment_header_round_trip() {
        let h = SegmentHeader { segment_bytes: 1 << 24, log_id: 0xdead_beef };
        assert_eq!(SegmentHeader::from_bytes(&h.to_bytes()), Some(h));
        assert_eq!(SegmentHeader::from_bytes(&[0u8; 3]), None);
    }
}
