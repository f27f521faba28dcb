//! The on-disk page format: a 32-byte header, a body, and a 4-byte trailer (layout in docs/format-pages.md).
//!
//! The checksum (CRC32C) covers every byte after the checksum field. It is computed on a private copy of
//! the page taken under the buffer-pool lock, so nothing can change the bytes between checksum and write.

/// Identifies a page: which data file, and which page in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageId {
    /// Data file number.
    pub file: u32,
    /// Page number inside the file.
    pub page_no: u32,
}

/// Log sequence number: position of a record in the log; 0 means "never logged".
pub type Lsn = u64;

/// Format version written into every page.
pub const PAGE_FORMAT_VERSION: u16 = 1;
/// Bytes of header before the body.
pub const HEADER_BYTES: usize = 32;
/// Bytes of trailer after the body (low 32 bits of the page LSN, a cheap torn-write tell).
pub const TRAILER_BYTES: usize = 4;
/// Page sizes the store accepts.
pub const PAGE_SIZES: [usize; 3] = [4096, 8192, 16384];

const CHECKSUM_END: usize = 4;
const VERSION_AT: usize = 4;
const FILE_AT: usize = 8;
const PAGE_NO_AT: usize = 12;
const LSN_AT: usize = 16;

/// What reading a page's bytes found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageCheck {
    /// Checksum, version, trailer and id all good.
    Valid { lsn: Lsn },
    /// Every byte is zero: never written (or the file was extended and not yet written).
    Zero,
    /// Anything else: torn, corrupt, or a different page's image.
    Bad,
}

fn crc(page: &[u8]) -> u32 {
    crc32c::crc32c(&page[CHECKSUM_END..])
}

fn u32_at(page: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(page[at..at + 4].try_into().expect("4 bytes"))
}

/// The page LSN stored in the header.
pub fn lsn(page: &[u8]) -> Lsn {
    u64::from_le_bytes(page[LSN_AT..LSN_AT + 8].try_into().expect("8 bytes"))
}

/// The page id stored in the header.
pub fn id(page: &[u8]) -> PageId {
    PageId { file: u32_at(page, FILE_AT), page_no: u32_at(page, PAGE_NO_AT) }
}

/// Set the page LSN (header and trailer). The checksum is stale until [`seal`].
pub fn set_lsn(page: &mut [u8], lsn: Lsn) {
    page[LSN_AT..LSN_AT + 8].copy_from_slice(&lsn.to_le_bytes());
    let end = page.len();
    page[end - TRAILER_BYTES..].copy_from_slice(&(lsn as u32).to_le_bytes());
}

/// Turn a buffer into an empty page with this id and LSN 0 (body zeroed).
pub fn format(page: &mut [u8], page_id: PageId) {
    page.fill(0);
    page[VERSION_AT..VERSION_AT + 2].copy_from_slice(&PAGE_FORMAT_VERSION.to_le_bytes());
    page[FILE_AT..FILE_AT + 4].copy_from_slice(&page_id.file.to_le_bytes());
    page[PAGE_NO_AT..PAGE_NO_AT + 4].copy_from_slice(&page_id.page_no.to_le_bytes());
    set_lsn(page, 0);
}

/// Compute and store the checksum. Call only on a private copy that nobody else can change.
pub fn seal(page: &mut [u8]) {
    let sum = crc(page);
    page[..CHECKSUM_END].copy_from_slice(&sum.to_le_bytes());
}

/// Check a page read from disk (or about to be written) against the id it must carry.
pub fn check(page: &[u8], expected: PageId) -> PageCheck {
    match check_any(page) {
        PageCheck::Valid { lsn } if id(page) == expected => PageCheck::Valid { lsn },
        PageCheck::Valid { .. } => PageCheck::Bad,
        other => other,
    }
}

/// Check a page's own consistency without knowing which page it should be (double-write slots).
pub fn check_any(page: &[u8]) -> PageCheck {
    if page.iter().all(|&b| b == 0) {
        return PageCheck::Zero;
    }
    let version = u16::from_le_bytes([page[VERSION_AT], page[VERSION_AT + 1]]);
    let trailer = u32_at(page, page.len() - TRAILER_BYTES);
    let lsn = lsn(page);
    if u32_at(page, 0) != crc(page) || version != PAGE_FORMAT_VERSION || trailer != lsn as u32 {
        return PageCheck::Bad;
    }
    PageCheck::Valid { lsn }
}

/// The byte range of the body (rows live here).
pub fn body_range(page_size: usize) -> std::ops::Range<usize> {
    HEADER_BYTES..page_size - TRAILER_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: PageId = PageId { file: 2, page_no: 7 };

    fn sealed(size: usize, lsn: Lsn) -> Vec<u8> {
        let mut p = vec![0u8; size];
        format(&mut p, ID);
        p[HEADER_BYTES] = 0xAB;
        set_lsn(&mut p, lsn);
        seal(&mut p);
        p
    }

    #[test]
    fn sealed_page_is_valid_for_its_id_only() {
        for size in PAGE_SIZES {
            let p = sealed(size, 42);
            assert_eq!(check(&p, ID), PageCheck::Valid { lsn: 42 });
            assert_eq!(check(&p, PageId { file: 2, page_no: 8 }), PageCheck::Bad);
            assert_eq!(id(&p), ID);
        }
    }

    #[test]
    fn any_flipped_bit_is_detected() {
        let p = sealed(4096, 9);
        for at in [0, 3, 4, 8, 16, 40, 2000, 4095] {
            let mut q = p.clone();
            q[at] ^= 0x10;
            assert_eq!(check(&q, ID), PageCheck::Bad, "flip at {at}");
        }
    }

    #[test]
    fn torn_page_half_new_half_old_is_bad() {
        let old = sealed(8192, 5);
        let mut new = old.clone();
        new[HEADER_BYTES + 100] = 0x77;
        set_lsn(&mut new, 6);
        seal(&mut new);
        let mut torn = new.clone();
        torn[4096..].copy_from_slice(&old[4096..]);
        assert_eq!(check(&torn, ID), PageCheck::Bad);
        let mut torn_zero = new.clone();
        torn_zero[4096..].fill(0);
        assert_eq!(check(&torn_zero, ID), PageCheck::Bad);
    }

    #[test]
    fn zero_page_is_reported_as_zero() {
        assert_eq!(check(&[0u8; 4096], ID), PageCheck::Zero);
    }

    #[test]
    fn unsealed_change_is_bad() {
        let mut p = sealed(4096, 1);
        p[HEADER_BYTES + 1] = 1;
        assert_eq!(check(&p, ID), PageCheck::Bad);
    }
}
