//! One file's data: what is on disk, what is in the page cache, and which sectors are still dirty.
//!
//! Dirty state is tracked per sector (the device's atomic write unit, 512 or 4096 bytes), so a crash image
//! can keep any subset of the not-yet-synced sectors: that is how torn pages and torn log records appear.

use crate::errseq::ErrSeq;
use crate::rng::SimRng;
use std::collections::BTreeSet;

/// A file's content on disk and in memory.
#[derive(Clone, Debug, Default)]
pub struct Inode {
    /// Block contents on disk (may run past `disk_size_bytes`; missing bytes read as zeros).
    disk: Vec<u8>,
    /// The file size recorded in the on-disk inode.
    disk_size_bytes: u64,
    /// The page cache: the file as readers see it; its length is the live size.
    cache: Vec<u8>,
    /// Sectors whose cached content has not been written back.
    dirty: BTreeSet<u64>,
    /// Sectors marked clean after a failed writeback: the cache holds new data the disk never got.
    stale: BTreeSet<u64>,
    /// Whether the live size differs from the on-disk size in a way a sync must record.
    size_dirty: bool,
    /// Writeback error sequence, sampled by each open file description.
    pub wb_err: ErrSeq,
}

/// What a writeback attempt covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writeback {
    /// All dirty sectors and the size (fsync / fdatasync).
    Whole,
    /// Only the sectors of `offset..offset+len`, plus the size (an O_DSYNC / RWF_DSYNC write).
    Range { offset: u64, len: u64 },
}

/// What a crash image keeps of one file's volatile state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResidueCount {
    /// Dirty sectors that reached the disk in the image.
    pub sectors_new: u64,
    /// Dirty sectors that did not.
    pub sectors_old: u64,
    /// Whether a pending size change reached the disk.
    pub size_new: bool,
}

/// How a crash image treats dirty sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResiduePolicy {
    /// Each dirty sector independently old or new; pending sizes old or new.
    Random,
    /// Nothing volatile survives: the durable state only.
    None,
    /// Everything volatile survives (as if writeback finished just before the crash).
    All,
}

fn sector_range(offset: u64, len: u64, sector_bytes: u64) -> std::ops::Range<u64> {
    if len == 0 {
        return 0..0;
    }
    offset / sector_bytes..(offset + len).div_ceil(sector_bytes)
}

/// Fill `dest` with `src[from..from + dest.len()]`, zeros past the end of `src`.
fn copy_padded(dest: &mut [u8], src: &[u8], from: usize) {
    let available = src.len().saturating_sub(from).min(dest.len());
    if available > 0 {
        dest[..available].copy_from_slice(&src[from..from + available]);
    }
    dest[available..].fill(0);
}

/// Extend `v` with zeros to `len` bytes (a memcpy even in unoptimised test builds, unlike `resize`).
fn grow_zeroed(v: &mut Vec<u8>, len: usize) {
    if len > v.len() {
        v.extend_from_slice(&vec![0u8; len - v.len()]);
    }
}

impl Inode {
    /// The live size (what `len` returns).
    pub fn len(&self) -> u64 {
        self.cache.len() as u64
    }

    /// Read `buf.len()` bytes at `offset` from the page cache; false if that runs past the end.
    pub fn read(&self, buf: &mut [u8], offset: u64) -> bool {
        let end = offset.checked_add(buf.len() as u64);
        match end {
            Some(end) if end <= self.len() => {
                buf.copy_from_slice(&self.cache[offset as usize..end as usize]);
                true
            }
            _ => false,
        }
    }

    /// Write into the page cache, marking the touched sectors dirty.
    pub fn write(&mut self, buf: &[u8], offset: u64, sector_bytes: u64) {
        let end = offset as usize + buf.len();
        if end > self.cache.len() {
            self.grow_to(end as u64, sector_bytes);
        }
        self.cache[offset as usize..end].copy_from_slice(buf);
        self.dirty.extend(sector_range(offset, buf.len() as u64, sector_bytes));
    }

    /// `ftruncate`: the changed region is dirty (zeros when growing), the size change pending.
    pub fn set_len(&mut self, len: u64, sector_bytes: u64) {
        let old = self.len();
        if len > old {
            self.grow_to(len, sector_bytes);
        } else if len < old {
            self.cache.truncate(len as usize);
            self.size_dirty = true;
            // The sector holding the new end is rewritten with its tail zeroed; sectors past it are gone.
            let first_gone = len.div_ceil(sector_bytes);
            self.dirty.retain(|s| *s < first_gone);
            self.stale.retain(|s| *s < first_gone);
            if !len.is_multiple_of(sector_bytes) {
                self.dirty.insert(len / sector_bytes);
            }
        }
    }

    fn grow_to(&mut self, len: u64, sector_bytes: u64) {
        let old = self.len();
        grow_zeroed(&mut self.cache, len as usize);
        self.size_dirty = true;
        // The new region reads as zeros in memory; on disk it may still hold bytes from before a truncate.
        self.dirty.extend(sector_range(old, len - old, sector_bytes));
    }

    /// Whether a writeback of `what` has anything to do.
    pub fn needs_writeback(&self, what: Writeback, sector_bytes: u64) -> bool {
        self.size_dirty || !self.sectors_of(what, sector_bytes).is_empty()
    }

    fn sectors_of(&self, what: Writeback, sector_bytes: u64) -> Vec<u64> {
        match what {
            Writeback::Whole => self.dirty.iter().copied().collect(),
            Writeback::Range { offset, len } => {
                self.dirty.range(sector_range(offset, len, sector_bytes)).copied().collect()
            }
        }
    }

    /// Write back `what` successfully: the disk gets the cached sectors and the live size.
    pub fn writeback_ok(&mut self, what: Writeback, sector_bytes: u64) {
        for s in self.sectors_of(what, sector_bytes) {
            self.copy_sector_to_disk(s, sector_bytes);
            self.dirty.remove(&s);
        }
        self.disk_size_bytes = self.len();
        self.size_dirty = false;
    }

    /// A writeback of `what` failed (Linux): the sectors are marked clean although the disk never got them,
    /// the cache keeps the new bytes until eviction, and the error is recorded for the fsync callers. The
    /// size update stays pending: a later successful sync records it and exposes the old bytes beneath.
    pub fn writeback_failed(&mut self, what: Writeback, sector_bytes: u64) {
        for s in self.sectors_of(what, sector_bytes) {
            self.dirty.remove(&s);
            self.stale.insert(s);
        }
        self.wb_err.record_error();
    }

    /// Memory pressure drops the clean pages: sectors that failed writeback now read the old disk bytes.
    pub fn evict(&mut self, sector_bytes: u64) {
        for s in std::mem::take(&mut self.stale) {
            let start = ((s * sector_bytes) as usize).min(self.cache.len());
            let end = (((s + 1) * sector_bytes) as usize).min(self.cache.len());
            copy_padded(&mut self.cache[start..end], &self.disk, start);
        }
    }

    fn copy_sector_to_disk(&mut self, sector: u64, sector_bytes: u64) {
        let start = (sector * sector_bytes) as usize;
        let end = start + sector_bytes as usize;
        grow_zeroed(&mut self.disk, end);
        copy_padded(&mut self.disk[start..end], &self.cache, start);
    }

    /// The bytes on disk at `offset..offset + len` (zeros where nothing was written).
    pub fn read_disk(&self, offset: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        copy_padded(&mut out, &self.disk, offset as usize);
        out
    }

    /// Media damage: the disk (and, as this is a crash image with nothing cached, the cache) now holds
    /// `bytes` at `offset`, inside the durable size.
    pub fn damage(&mut self, offset: u64, bytes: &[u8]) {
        let end = (offset as usize + bytes.len()).min(self.disk_size_bytes as usize);
        if end <= offset as usize {
            return;
        }
        let bytes = &bytes[..end - offset as usize];
        grow_zeroed(&mut self.disk, end);
        self.disk[offset as usize..end].copy_from_slice(bytes);
        if self.cache.len() >= end {
            self.cache[offset as usize..end].copy_from_slice(bytes);
        }
    }

    /// The size recorded on disk.
    pub fn disk_len(&self) -> u64 {
        self.disk_size_bytes
    }

    /// Whether the size changed since the last successful sync.
    pub fn size_dirty(&self) -> bool {
        self.size_dirty
    }

    /// Whether this file has anything volatile (dirty sectors or a pending size).
    pub fn has_residue(&self) -> bool {
        self.size_dirty || !self.dirty.is_empty()
    }

    /// The file as it is after a power loss: the disk plus a seeded choice of dirty sectors and size.
    pub fn crash(&self, policy: ResiduePolicy, sector_bytes: u64, rng: &mut SimRng) -> (Inode, ResidueCount) {
        let mut image = Inode { disk: self.disk.clone(), ..Inode::default() };
        let mut count = ResidueCount::default();
        for &s in &self.dirty {
            let keep = match policy {
                ResiduePolicy::Random => rng.coin(),
                ResiduePolicy::None => false,
                ResiduePolicy::All => true,
            };
            if keep {
                // Copy from the live file into the image's disk.
                let start = (s * sector_bytes) as usize;
                let end = start + sector_bytes as usize;
                grow_zeroed(&mut image.disk, end);
                copy_padded(&mut image.disk[start..end], &self.cache, start);
                count.sectors_new += 1;
            } else {
                count.sectors_old += 1;
            }
        }
        count.size_new = self.size_dirty
            && match policy {
                ResiduePolicy::Random => rng.coin(),
                ResiduePolicy::None => false,
                ResiduePolicy::All => true,
            };
        image.disk_size_bytes = if count.size_new { self.len() } else { self.disk_size_bytes };
        image.cache = image.disk_prefix();
        (image, count)
    }

    /// Apply an untorn write straight to the disk and the cache (an atomic in-flight write that made it).
    pub fn apply_untorn(&mut self, buf: &[u8], offset: u64) {
        let end = offset as usize + buf.len();
        grow_zeroed(&mut self.disk, end);
        self.disk[offset as usize..end].copy_from_slice(buf);
        if end as u64 > self.disk_size_bytes {
            self.disk_size_bytes = end as u64;
        }
        self.cache = self.disk_prefix();
    }

    /// The file as stored on disk: `disk_size_bytes` bytes, zeros where no block was written.
    fn disk_prefix(&self) -> Vec<u8> {
        let mut out = vec![0; self.disk_size_bytes as usize];
        copy_padded(&mut out, &self.disk, 0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synced(bytes: &[u8], sector: u64) -> Inode {
        let mut ino = Inode::default();
        ino.write(bytes, 0, sector);
        ino.writeback_ok(Writeback::Whole, sector);
        ino
    }

    fn content(ino: &Inode) -> Vec<u8> {
        let mut buf = vec![0; ino.len() as usize];
        assert!(ino.read(&mut buf, 0));
        buf
    }

    #[test]
    fn sector_residue_mixes_old_and_new_at_sector_granularity() {
        for sector in [512u64, 4096] {
            let mut ino = synced(&vec![b'o'; 16384], sector);
            ino.write(&vec![b'n'; 16384], 0, sector);
            let mut mixed = 0;
            for seed in 0..20 {
                let (image, count) = ino.crash(ResiduePolicy::Random, sector, &mut SimRng::new(seed));
                let data = content(&image);
                assert_eq!(data.len(), 16384, "size was durable");
                for chunk in data.chunks(sector as usize) {
                    assert!(chunk.iter().all(|b| *b == chunk[0]), "a sector is never torn inside");
                }
                assert_eq!(count.sectors_new + count.sectors_old, 16384 / sector);
                if count.sectors_new > 0 && count.sectors_old > 0 {
                    mixed += 1;
                }
            }
            assert!(mixed > 0, "some image tears the page between sectors ({sector})");
        }
    }

    #[test]
    fn policies_none_and_all_give_the_durable_and_the_live_file() {
        let mut ino = synced(b"old!", 512);
        ino.write(b"new!", 0, 512);
        let (none, _) = ino.crash(ResiduePolicy::None, 512, &mut SimRng::new(0));
        let (all, _) = ino.crash(ResiduePolicy::All, 512, &mut SimRng::new(0));
        assert_eq!(content(&none), b"old!");
        assert_eq!(content(&all), b"new!");
    }

    #[test]
    fn a_pending_size_exposes_zeros_when_the_data_did_not_make_it() {
        let mut ino = synced(b"abc", 512);
        ino.write(&[b'x'; 600], 3, 512);
        let mut saw_zeros = false;
        for seed in 0..40 {
            let (image, count) = ino.crash(ResiduePolicy::Random, 512, &mut SimRng::new(seed));
            let data = content(&image);
            if count.size_new {
                assert_eq!(data.len(), 603);
                saw_zeros |= data[3..].iter().all(|b| *b == 0);
            } else {
                assert_eq!(data.len(), 3);
            }
        }
        assert!(saw_zeros, "a grown size without its data reads as zeros");
    }

    #[test]
    fn failed_writeback_marks_clean_keeps_cache_until_eviction() {
        let mut ino = synced(b"old!", 512);
        ino.write(b"new!", 0, 512);
        ino.writeback_failed(Writeback::Whole, 512);
        assert!(!ino.has_residue(), "failed sectors are clean: never retried");
        assert_eq!(content(&ino), b"new!", "the cache still shows the new bytes");
        let (image, _) = ino.crash(ResiduePolicy::All, 512, &mut SimRng::new(0));
        assert_eq!(content(&image), b"old!", "the disk never got them");
        ino.evict(512);
        assert_eq!(content(&ino), b"old!", "after eviction reads return the old disk bytes");
    }

    #[test]
    fn a_failed_first_writeback_of_a_new_file_evicts_to_zeros() {
        let mut ino = Inode::default();
        ino.write(b"new!", 4096, 512);
        ino.writeback_failed(Writeback::Whole, 512);
        ino.evict(512);
        assert_eq!(content(&ino), vec![0u8; 4100], "no block ever reached the disk");
    }

    #[test]
    fn range_writeback_leaves_other_dirty_sectors_volatile() {
        let mut ino = synced(&[0u8; 1024], 512);
        ino.write(&[1u8; 512], 0, 512);
        ino.write(&[2u8; 512], 512, 512);
        ino.writeback_ok(Writeback::Range { offset: 512, len: 512 }, 512);
        let (image, _) = ino.crash(ResiduePolicy::None, 512, &mut SimRng::new(0));
        let data = content(&image);
        assert!(data[..512].iter().all(|b| *b == 0));
        assert!(data[512..].iter().all(|b| *b == 2));
    }

    #[test]
    fn truncate_then_grow_rewrites_zeros() {
        let mut ino = synced(&[7u8; 1024], 512);
        ino.set_len(0, 512);
        ino.set_len(1024, 512);
        assert_eq!(content(&ino), vec![0u8; 1024]);
        ino.writeback_ok(Writeback::Whole, 512);
        let (image, _) = ino.crash(ResiduePolicy::None, 512, &mut SimRng::new(0));
        assert_eq!(content(&image), vec![0u8; 1024]);
    }
}
