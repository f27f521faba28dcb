//! `none`: no torn-page protection, the unsafe baseline. Pages go home with plain writes, synced by the
//! checkpoint; a page torn by a crash fails its checksum and stops recovery.

use crate::pages::access::{PageCopy, StoreAccess};
use crate::pages::error::PageResult;
use crate::pages::page::{Lsn, PageId};
use crate::storage::WriteSync;

/// An evicted page: write-ahead, then a plain home write.
pub(super) fn write_one<A: StoreAccess>(store: &A, id: PageId, lsn: Lsn, data: &[u8]) -> PageResult<()> {
    let (copy, flushed) = store.single_copy(id, lsn, data)?;
    store.write_home(id, copy.as_slice(), WriteSync::None, flushed)
}

/// A batch: plain home writes.
pub(super) fn write_batch<A: StoreAccess>(store: &A, copies: &[&PageCopy], flushed: Lsn) -> PageResult<()> {
    store.write_home_batch(copies, WriteSync::None, flushed).map(drop)
}
