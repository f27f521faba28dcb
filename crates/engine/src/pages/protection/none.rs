//! `none`: no torn-page protection, the unsafe baseline. Pages go home with plain writes, synced by the
//! checkpoint; a page torn by a crash fails its checksum and stops recovery.

use crate::pages::error::PageResult;
use crate::pages::page::{Lsn, PageId};
use crate::pages::store::{PageCopy, PageStore};
use crate::storage::{Storage, WriteSync};

/// An evicted page: write-ahead, then a plain home write.
pub(super) fn write_one<S: Storage + Clone + 'static>(
    store: &PageStore<S>,
    id: PageId,
    lsn: Lsn,
    data: &[u8],
) -> PageResult<()> {
    let (copy, flushed) = store.single_copy(id, lsn, data)?;
    store.write_home(id, copy.as_slice(), WriteSync::None, flushed)
}

/// A batch: plain home writes.
pub(super) fn write_batch<S: Storage + Clone + 'static>(
    store: &PageStore<S>,
    copies: &[&PageCopy],
    flushed: Lsn,
) -> PageResult<()> {
    store.write_home_batch(copies, WriteSync::None, flushed).map(drop)
}
