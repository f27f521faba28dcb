//! `dw`, the 2012 design (shared/seeds/003): a page goes home only after its image is written and synced
//! to the double-write area ([`crate::pages::dw`]) — a batch through the batch region, an evicted page
//! through a single-page slot — and the home writes are synced before the region is reused. Recovery
//! restores a torn home page from its newest valid copy in the area ([`restore_from_area`], which the
//! `pipelined` design shares).

use crate::pages::access::{DW_FLUSH_MARK, PageCopy, StoreAccess};
use crate::pages::dw::{self, DoubleWrite, Region};
use crate::pages::error::PageResult;
use crate::pages::page::{self, Lsn, PageCheck, PageId};
use crate::pages::stats::add;
use crate::storage::{StorageFile, WriteSync};
use std::collections::BTreeSet;
use syncbench_sys::AlignedBuf;

/// The 2012 double-write buffer: its area.
pub struct Dw2012<F> {
    area: DoubleWrite<F>,
}

impl<F: StorageFile> Dw2012<F> {
    pub(super) fn new(area: DoubleWrite<F>) -> Self {
        Dw2012 { area }
    }

    /// The double-write area.
    pub(super) fn area(&self) -> &DoubleWrite<F> {
        &self.area
    }

    /// An evicted page, through a single-page slot.
    pub(super) fn write_one<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        id: PageId,
        lsn: Lsn,
        data: &[u8],
    ) -> PageResult<()> {
        write_one_through(store, &self.area, id, lsn, data)
    }

    /// A batch, through the batch region.
    pub(super) fn write_batch<A: StoreAccess<File = F>>(
        &self,
        store: &A,
        copies: &[&PageCopy],
        flushed: Lsn,
    ) -> PageResult<()> {
        write_batch_through(store, &self.area, copies, flushed)
    }
}

/// Write one page through a single-page slot of `area`: write-ahead, the copy written and synced, the
/// home write, and its sync (the slots are reused a few evictions later).
pub(super) fn write_one_through<A: StoreAccess>(
    store: &A,
    area: &DoubleWrite<A::File>,
    id: PageId,
    lsn: Lsn,
    data: &[u8],
) -> PageResult<()> {
    let (copy, flushed) = store.single_copy(id, lsn, data)?;
    let skip_sync = store.config().faults.dw_skip_fsync;
    store.mark(DW_FLUSH_MARK);
    area.write(Region::Single, copy.as_slice(), skip_sync)?;
    count_area_write(store, copy.len(), skip_sync);
    add(&store.counters().evictions_waited_for_dw, 1);
    store.write_home(id, copy.as_slice(), WriteSync::None, flushed)?;
    // The single-page slots are reused a few evictions later: the home copy must be durable.
    if store.config().faults.dw_reuse_slot_before_home_sync {
        return Ok(());
    }
    store.sync_data_file(id.file)
}

/// Write sealed copies (write-ahead done up to `flushed`) through the batch region of `area`: the
/// images in one write and a sync, then home, then the data files synced before the region is reused.
pub(super) fn write_batch_through<A: StoreAccess>(
    store: &A,
    area: &DoubleWrite<A::File>,
    copies: &[&PageCopy],
    flushed: Lsn,
) -> PageResult<()> {
    let page_size = store.config().page_size;
    let mut images = AlignedBuf::new(copies.len() * page_size, page_size);
    for (slot, c) in images.as_mut_slice().chunks_exact_mut(page_size).zip(copies) {
        slot.copy_from_slice(c.bytes.as_slice());
    }
    let skip_sync = store.config().faults.dw_skip_fsync;
    store.mark(DW_FLUSH_MARK);
    area.write(Region::Batch, images.as_slice(), skip_sync)?;
    count_area_write(store, images.len(), skip_sync);
    let touched = store.write_home_batch(copies, WriteSync::None, flushed)?;
    // The double-write batch region is reused by the next batch: these pages must be durable first.
    for file in touched {
        store.sync_data_file(file)?;
    }
    Ok(())
}

fn count_area_write<A: StoreAccess>(store: &A, bytes: usize, skip_sync: bool) {
    add(&store.counters().dw_bytes, bytes as u64);
    add(&store.counters().data_syncs, u64::from(!skip_sync));
    add(&store.counters().dw_syncs, u64::from(!skip_sync));
}

/// Recovery: restore every page whose home copy is torn or zero from its newest valid copy in `area`,
/// then sync the data files written.
pub(super) fn restore_from_area<A: StoreAccess>(store: &A, area: &DoubleWrite<A::File>) -> PageResult<()> {
    let mut touched = BTreeSet::new();
    let page_size = store.config().page_size;
    let mut home = AlignedBuf::new(page_size, page_size);
    // In slot order, not the map's: a HashMap's order changes from one map to the next, and a recovery
    // cut by a crash must restore the same pages whatever the process (crashtest replays it by seed).
    let reads_before = area.scan_reads();
    let mut copies: Vec<_> = area.newest_copies()?.into_iter().collect();
    add(&store.counters().dw_scan_reads, area.scan_reads() - reads_before);
    copies.sort_unstable_by_key(|&(_, (_, slot))| slot);
    for (id, (copy_lsn, slot)) in copies {
        if id.file as usize >= store.data_files() {
            continue; // not a page of this store
        }
        let check = store.read_home(id, home.as_mut_slice())?;
        if dw::decide(check, Some(copy_lsn)) == dw::Decision::Restore {
            area.read_slot(slot, id, home.as_mut_slice())?;
            assert_eq!(page::check(home.as_slice(), id), PageCheck::Valid { lsn: copy_lsn }, "restored copy");
            store.write_restored(id, home.as_slice())?;
            touched.insert(id.file);
            add(&store.counters().dw_restored_pages, 1);
        }
    }
    for file in touched {
        store.sync_data_file(file)?;
    }
    Ok(())
}
