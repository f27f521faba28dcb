//! `fpw`: full-page writes. The first change to a page after a checkpoint's redo LSN logs the page's whole
//! image, so recovery rebuilds a torn page from the log alone; the pages themselves go home with plain
//! writes, synced by the checkpoint (PostgreSQL's `full_page_writes`).

use crate::pages::access::{PageCopy, StoreAccess};
use crate::pages::error::PageResult;
use crate::pages::page::{self, Lsn, PageId};
use crate::pages::record;
use crate::pages::stats::add;

/// Log the image of page `id` (bytes `data`) if this is its first change since `redo_lsn` (its LSN is
/// not past it) and stamp the page with the image record's LSN. True if it logged one.
pub(super) fn log_image_if_first_change<A: StoreAccess>(
    store: &A,
    id: PageId,
    data: &mut [u8],
    redo_lsn: Lsn,
) -> PageResult<bool> {
    if page::lsn(data) > redo_lsn || store.config().faults.fpw_skip_image {
        return Ok(false);
    }
    let payload = record::encode_image(id, data);
    let lsn = store.page_log().append(record::KIND_IMAGE, &payload)?;
    let logged = store.page_log().record_bytes(payload.len());
    add(&store.counters().wal_bytes, logged);
    add(&store.counters().fpi_bytes, logged);
    page::set_lsn(data, lsn);
    Ok(true)
}

/// An evicted page goes home with a plain write: its image is in the log.
pub(super) fn write_one<A: StoreAccess>(store: &A, id: PageId, lsn: Lsn, data: &[u8]) -> PageResult<()> {
    super::none::write_one(store, id, lsn, data)
}

/// A batch goes home with plain writes.
pub(super) fn write_batch<A: StoreAccess>(store: &A, copies: &[&PageCopy], flushed: Lsn) -> PageResult<()> {
    super::none::write_batch(store, copies, flushed)
}
