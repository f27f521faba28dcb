//! The page store's log records: page edits, full-page images, checkpoints (byte layout in
//! docs/format-pages.md).

use super::page::{Lsn, PageId};
use std::io;

/// Bytes changed on one page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    /// The page.
    pub page: PageId,
    /// Byte offset inside the page.
    pub offset: u16,
    /// The new bytes (absolute, so redo is idempotent).
    pub bytes: Vec<u8>,
}

pub const KIND_EDITS: u8 = 1;
pub const KIND_IMAGE: u8 = 2;
pub const KIND_CHECKPOINT: u8 = 3;

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("malformed {what} log record"))
}

fn take<'a>(buf: &mut &'a [u8], n: usize, what: &str) -> io::Result<&'a [u8]> {
    if buf.len() < n {
        return Err(bad(what));
    }
    let (head, rest) = buf.split_at(n);
    *buf = rest;
    Ok(head)
}

fn take_u32(buf: &mut &[u8], what: &str) -> io::Result<u32> {
    Ok(u32::from_le_bytes(take(buf, 4, what)?.try_into().expect("4 bytes")))
}

fn take_u16(buf: &mut &[u8], what: &str) -> io::Result<u16> {
    Ok(u16::from_le_bytes(take(buf, 2, what)?.try_into().expect("2 bytes")))
}

/// `tag u64, count u16, then per edit: file u32, page_no u32, offset u16, len u16, bytes`.
pub fn encode_edits(tag: u64, edits: &[Edit]) -> Vec<u8> {
    let mut out = Vec::with_capacity(10 + edits.iter().map(|e| 12 + e.bytes.len()).sum::<usize>());
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&(edits.len() as u16).to_le_bytes());
    for e in edits {
        out.extend_from_slice(&e.page.file.to_le_bytes());
        out.extend_from_slice(&e.page.page_no.to_le_bytes());
        out.extend_from_slice(&e.offset.to_le_bytes());
        out.extend_from_slice(&(e.bytes.len() as u16).to_le_bytes());
        out.extend_from_slice(&e.bytes);
    }
    out
}

pub fn decode_edits(mut buf: &[u8]) -> io::Result<Vec<Edit>> {
    let what = "edits";
    take(&mut buf, 8, what)?;
    let count = take_u16(&mut buf, what)?;
    let mut edits = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let page = PageId { file: take_u32(&mut buf, what)?, page_no: take_u32(&mut buf, what)? };
        let offset = take_u16(&mut buf, what)?;
        let len = take_u16(&mut buf, what)? as usize;
        edits.push(Edit { page, offset, bytes: take(&mut buf, len, what)?.to_vec() });
    }
    if !buf.is_empty() {
        return Err(bad(what));
    }
    Ok(edits)
}

/// `file u32, page_no u32, the page bytes`.
pub fn encode_image(page: PageId, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + bytes.len());
    out.extend_from_slice(&page.file.to_le_bytes());
    out.extend_from_slice(&page.page_no.to_le_bytes());
    out.extend_from_slice(bytes);
    out
}

pub fn decode_image(mut buf: &[u8], page_size: usize) -> io::Result<(PageId, &[u8])> {
    let what = "full-page image";
    let page = PageId { file: take_u32(&mut buf, what)?, page_no: take_u32(&mut buf, what)? };
    if buf.len() != page_size {
        return Err(bad(what));
    }
    Ok((page, buf))
}

/// `redo_lsn u64`.
pub fn encode_checkpoint(redo_lsn: Lsn) -> Vec<u8> {
    redo_lsn.to_le_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_round_trip_and_truncation_is_rejected() {
        let edits = vec![
            Edit { page: PageId { file: 1, page_no: 9 }, offset: 40, bytes: vec![1, 2, 3] },
            Edit { page: PageId { file: 3, page_no: 0 }, offset: 4000, bytes: vec![9; 48] },
        ];
        let enc = encode_edits(77, &edits);
        assert_eq!(decode_edits(&enc).unwrap(), edits);
        assert!(decode_edits(&enc[..enc.len() - 1]).is_err());
        let img = encode_image(PageId { file: 2, page_no: 5 }, &[7u8; 4096]);
        assert_eq!(decode_image(&img, 4096).unwrap().0, PageId { file: 2, page_no: 5 });
        assert!(decode_image(&img, 8192).is_err());
    }
}
