//! The double-write area: page images are written here sequentially and synced before they are written
//! to their home location, so a torn home page can be restored after a crash.
//!
//! One file, two regions: `batch_pages` slots for the background flusher and checkpoints, and a few
//! single-page slots for evictions, so an eviction never waits for a batch (the 2012 patch and InnoDB
//! both keep them separate). The `pipelined` design adds a third: a ring of `ring_batches` batches that
//! pages are spooled into ahead of eviction ([`super::dw_pipelined`]). Each slot holds a whole page; the page's own header (id, LSN, checksum)
//! says what it is, so no separate directory is needed.

use super::page::{self, Lsn, PageCheck, PageId};
use crate::storage::{FileOptions, Storage, StorageFile, WriteSync};
use std::collections::HashMap;
use std::io;
use std::path::Path;

/// File name of the double-write area inside its directory.
pub const DW_FILE_NAME: &str = "doublewrite";
/// Single-page slots for evictions.
pub const SINGLE_SLOTS: usize = 4;

/// Which region of the area a write uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// Batches from the flusher and checkpoints.
    Batch,
    /// One page evicted by a client.
    Single,
}

/// What recovery does with a home page that has a valid double-write copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The home page is valid: leave it (redo brings it forward). Never overwrite a valid page.
    KeepHome,
    /// The home page is torn or all zeros: write the copy home.
    Restore,
    /// Neither copy is usable: recovery must stop.
    Stop,
}

/// The double-write recovery rule (InnoDB's, see docs/format-pages.md). `copy` is the highest-LSN valid
/// double-write image of this page, if any.
pub fn decide(home: PageCheck, copy: Option<Lsn>) -> Decision {
    match (home, copy) {
        (PageCheck::Valid { .. }, _) => Decision::KeepHome,
        (PageCheck::Bad | PageCheck::Zero, Some(_)) => Decision::Restore,
        (PageCheck::Zero, None) => Decision::KeepHome,
        (PageCheck::Bad, None) => Decision::Stop,
    }
}

/// The open double-write file.
pub struct DoubleWrite<F> {
    file: F,
    page_size: usize,
    batch_pages: usize,
    ring_batches: usize,
    /// Slots in the area (its length in pages).
    slots: usize,
    single_next: std::sync::atomic::AtomicUsize,
    /// Pages per read of `newest_copies`.
    scan_read_pages: usize,
    /// Reads `newest_copies` made, summed.
    scan_reads: std::sync::atomic::AtomicU64,
}

impl<F: StorageFile> DoubleWrite<F> {
    /// Create the area (zero-filled, synced, directory synced) or open an existing one. `ring_batches`
    /// is 0 for the 2012 design.
    pub fn create_or_open<S: Storage<File = F>>(
        storage: &S,
        dir: &Path,
        page_size: usize,
        batch_pages: usize,
        ring_batches: usize,
        opts: FileOptions,
    ) -> io::Result<Self> {
        let path = dir.join(DW_FILE_NAME);
        let slots = batch_pages + SINGLE_SLOTS + ring_batches * batch_pages;
        let file = if storage.exists(&path)? {
            let file = storage.open(&path, opts)?;
            let (have, want) = (file.len()?, (slots * page_size) as u64);
            if have != want {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is {have} bytes; this store's double-write settings make it {want}", path.display()),
                ));
            }
            file
        } else {
            let file = storage.create_new(&path, opts)?;
            // Zero-filled a megabyte at a time: a `pipelined` ring can be gigabytes (`--dw-ring`), and
            // one buffer of that size would not fit in memory.
            let per_write = ((1 << 20) / page_size).max(1);
            let zeros = syncbench_sys::AlignedBuf::new(per_write.min(slots) * page_size, page_size);
            for first in (0..slots).step_by(per_write) {
                let n = per_write.min(slots - first);
                file.write_at(&zeros.as_slice()[..n * page_size], (first * page_size) as u64, WriteSync::None)?;
            }
            file.sync_all()?;
            storage.sync_dir(dir)?;
            file
        };
        let scan_read_pages = ((1 << 20) / page_size).max(1);
        let (single_next, scan_reads) = Default::default();
        Ok(DoubleWrite { file, page_size, batch_pages, ring_batches, slots, single_next, scan_read_pages, scan_reads })
    }

    /// Bytes per page.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Write whole pages `images` at slot `first_slot`: asserted to be whole pages inside the area.
    fn write_slots(&self, first_slot: usize, images: &[u8]) -> io::Result<()> {
        let pages = images.len() / self.page_size;
        assert!(pages > 0 && images.len().is_multiple_of(self.page_size), "double-write I/O is whole pages");
        assert!(
            first_slot + pages <= self.slots,
            "slots {first_slot}+{pages} are outside the {}-slot area",
            self.slots
        );
        self.file.write_at(images, (first_slot * self.page_size) as u64, WriteSync::None)
    }

    /// Write sealed page images into ring batch `position` (0-based, below `ring_batches`) without
    /// syncing: the pipelined design's sync thread calls [`DoubleWrite::sync`] for several batches at once.
    pub fn write_ring(&self, position: usize, images: &[u8]) -> io::Result<()> {
        assert!(position < self.ring_batches, "ring position {position} is outside the ring");
        assert!(images.len() <= self.batch_pages * self.page_size, "a ring batch is at most one batch");
        let first_slot = self.batch_pages + SINGLE_SLOTS + position * self.batch_pages;
        self.write_slots(first_slot, images)
    }

    /// Make every completed write to the area durable.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Write sealed page images into a region in one sequential write, then sync (unless a test fault
    /// switch says not to). `images` is the pages back to back.
    pub fn write(&self, region: Region, images: &[u8], skip_sync: bool) -> io::Result<()> {
        let pages = images.len() / self.page_size;
        let first_slot = match region {
            Region::Batch => {
                assert!(pages <= self.batch_pages, "batch of {pages} pages exceeds the double-write region");
                0
            }
            Region::Single => {
                assert_eq!(pages, 1, "the single-page region takes one page at a time");
                let n = self.single_next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.batch_pages + n % SINGLE_SLOTS
            }
        };
        self.write_slots(first_slot, images)?;
        if !skip_sync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// The same area read `bytes` at a time by `newest_copies` (whole pages, at least one).
    pub fn with_scan_read_bytes(self, bytes: usize) -> Self {
        DoubleWrite { scan_read_pages: (bytes / self.page_size).max(1), ..self }
    }

    /// Reads `newest_copies` has made so far.
    pub fn scan_reads(&self) -> u64 {
        self.scan_reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Where the valid image with the highest LSN of each page is: (its LSN, its slot). The area is read
    /// a megabyte at a time by default (a `pipelined` ring holding a checkpoint cycle's copies is
    /// hundreds of them).
    pub fn newest_copies(&self) -> io::Result<HashMap<PageId, (Lsn, usize)>> {
        let slots = (self.file.len()? as usize) / self.page_size;
        assert_eq!(slots, self.slots, "the double-write area changed size while open");
        let per_read = self.scan_read_pages;
        let mut buf = syncbench_sys::AlignedBuf::new(per_read * self.page_size, self.page_size);
        let mut newest: HashMap<PageId, (Lsn, usize)> = HashMap::new();
        for first in (0..slots).step_by(per_read) {
            let n = per_read.min(slots - first);
            let chunk = &mut buf.as_mut_slice()[..n * self.page_size];
            self.file.read_exact_at(chunk, (first * self.page_size) as u64)?;
            self.scan_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            for (i, image) in chunk.chunks_exact(self.page_size).enumerate() {
                let PageCheck::Valid { lsn } = page::check_any(image) else { continue };
                let id = page::id(image);
                if newest.get(&id).is_none_or(|&(have, _)| have < lsn) {
                    newest.insert(id, (lsn, first + i));
                }
            }
        }
        Ok(newest)
    }

    /// Read slot `slot`'s image into `out` (one page) and check it is still the valid image of `id`.
    pub fn read_slot(&self, slot: usize, id: PageId, out: &mut [u8]) -> io::Result<()> {
        assert_eq!(out.len(), self.page_size, "one page at a time");
        assert!(slot < self.slots, "slot {slot} is outside the {}-slot area", self.slots);
        self.file.read_exact_at(out, (slot * self.page_size) as u64)?;
        match page::check(out, id) {
            PageCheck::Valid { .. } => Ok(()),
            other => Err(io::Error::other(format!("double-write slot {slot} changed while recovering: {other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions() {
        let valid = PageCheck::Valid { lsn: 7 };
        assert_eq!(decide(PageCheck::Bad, Some(5)), Decision::Restore, "torn home + valid copy");
        assert_eq!(decide(PageCheck::Zero, Some(5)), Decision::Restore, "zero home + valid copy");
        assert_eq!(decide(PageCheck::Bad, None), Decision::Stop, "both bad");
        assert_eq!(decide(valid, Some(5)), Decision::KeepHome, "copy older than home");
        assert_eq!(decide(valid, Some(9)), Decision::KeepHome, "valid home is never overwritten");
        assert_eq!(decide(PageCheck::Zero, None), Decision::KeepHome, "never written");
    }

    #[test]
    fn an_area_larger_than_one_write_is_created_whole() {
        let dir = tempfile::tempdir().unwrap();
        // 4 + 4 + 300 × 4 = 1,208 slots of 4 KiB: 4.7 MiB, five writes of at most 1 MiB.
        let dw =
            DoubleWrite::create_or_open(&crate::RealStorage, dir.path(), 4096, 4, 300, FileOptions::default()).unwrap();
        assert_eq!(std::fs::metadata(dir.path().join(DW_FILE_NAME)).unwrap().len(), 1208 * 4096);
        assert!(dw.newest_copies().unwrap().is_empty(), "all zero");
        let reopened =
            DoubleWrite::create_or_open(&crate::RealStorage, dir.path(), 4096, 4, 299, FileOptions::default());
        assert!(reopened.err().unwrap().to_string().contains("double-write settings make it"), "another ring size");
    }

    #[test]
    fn newest_copy_per_page_wins_and_torn_slots_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let dw =
            DoubleWrite::create_or_open(&crate::RealStorage, dir.path(), 4096, 4, 2, FileOptions::default()).unwrap();
        let id = PageId { file: 1, page_no: 3 };
        let image = |lsn: Lsn| {
            let mut p = vec![0u8; 4096];
            page::format(&mut p, id);
            page::set_lsn(&mut p, lsn);
            page::seal(&mut p);
            p
        };
        let mut batch = image(4);
        batch.extend(image(9));
        let mut torn = image(12);
        torn[100] ^= 1;
        batch.extend(torn);
        dw.write(Region::Batch, &batch, false).unwrap();
        dw.write(Region::Single, &image(6), false).unwrap();
        let copies = dw.newest_copies().unwrap();
        assert_eq!(copies.len(), 1);
        assert_eq!(copies[&id], (9, 1), "the second slot of the batch region");
        let mut read = vec![0u8; 4096];
        dw.read_slot(1, id, &mut read).unwrap();
        assert_eq!(read, image(9));
        assert!(dw.read_slot(2, id, &mut read).is_err(), "the torn slot");
        // A copy in the ring counts like any other.
        dw.write_ring(1, &image(11)).unwrap();
        dw.sync().unwrap();
        let ring_slot = 4 + SINGLE_SLOTS + 4;
        assert_eq!(dw.newest_copies().unwrap()[&id], (11, ring_slot));
    }
}
