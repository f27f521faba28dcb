//! `atomic`: the device writes each page untorn. Data files are opened with O_DIRECT and every page goes
//! home with `RWF_ATOMIC | RWF_DSYNC` (durable on return), so no copy of it is needed anywhere. Also
//! whether a file can take such writes: O_DIRECT works and `statx(STATX_WRITE_ATOMIC)` reports
//! `unit_min ≤ page size ≤ unit_max` (Linux ≥ 6.11, and the device and file system must support it).

use crate::pages::access::{PageCopy, StoreAccess};
use crate::pages::error::PageResult;
use crate::pages::page::{Lsn, PageId};
use crate::storage::WriteSync;
use std::path::Path;

/// How a page is written (plain only under a deliberate test bug).
fn page_write<A: StoreAccess>(store: &A) -> WriteSync {
    if store.config().faults.atomic_plain_write { WriteSync::None } else { WriteSync::AtomicDsync }
}

/// An evicted page: write-ahead, then one untorn, durable home write.
pub(super) fn write_one<A: StoreAccess>(store: &A, id: PageId, lsn: Lsn, data: &[u8]) -> PageResult<()> {
    let (copy, flushed) = store.single_copy(id, lsn, data)?;
    store.write_home(id, copy.as_slice(), page_write(store), flushed)
}

/// A batch: untorn, durable home writes.
pub(super) fn write_batch<A: StoreAccess>(store: &A, copies: &[&PageCopy], flushed: Lsn) -> PageResult<()> {
    store.write_home_batch(copies, page_write(store), flushed).map(drop)
}

/// `Ok(())` if `file` (an existing file) accepts `page_size`-byte RWF_ATOMIC writes, otherwise the reason.
pub fn support(file: &Path, page_size: usize) -> Result<(), String> {
    let flags = syncbench_sys::OpenFlags { sync: syncbench_sys::OpenSync::None, direct: true };
    let fd = syncbench_sys::open_existing(file, flags).map_err(|e| format!("O_DIRECT open failed: {e}"))?;
    let io = syncbench_sys::statx_io(&fd).map_err(|e| format!("statx failed: {e}"))?;
    if io.dio.is_none() {
        return Err("the file system does not report direct I/O support (STATX_DIOALIGN)".to_string());
    }
    let Some(units) = io.atomic else {
        return Err("statx reports no untorn-write support (STATX_WRITE_ATOMIC unit_max = 0) for this \
                    file system and device"
            .to_string());
    };
    let (min, max) = (units.unit_min_bytes as usize, units.unit_max_bytes as usize);
    if page_size < min || page_size > max {
        return Err(format!("untorn writes span {min}..={max} bytes here; a {page_size}-byte page does not fit"));
    }
    Ok(())
}
