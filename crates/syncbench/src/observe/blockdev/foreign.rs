//! Requests on a device beyond what our own commits explain: the one test both the disturbance monitor
//! (`observe::disturbance`, per round) and the device accounting (`account`, per window) apply.

use super::stat::Counters as DeviceCounters;

/// Bytes per sector in /sys/block/*/stat (always 512, whatever the device's block size).
pub(crate) const SECTOR_BYTES: u64 = 512;

/// What our own commits may cost the device: their bytes, and per commit a journal transaction (fsync,
/// append: descriptor, inode and bitmap blocks, commit block) and a flush, measured on ext4 and xfs at up
/// to ~20 KiB and 2 flushes; twice that is allowed, plus a fixed slack for the case's own setup (creating
/// and syncing its file) and for the kernel's periodic writeback of anything.
pub(crate) const ALLOWED_BYTES_PER_COMMIT: u64 = 48 * 1024;
pub(crate) const ALLOWED_FLUSHES_PER_COMMIT: u64 = 4;
pub(crate) const SLACK_BYTES: u64 = 1024 * 1024;
pub(crate) const SLACK_FLUSHES: u64 = 16;
/// Reads: syncbench reads nothing during a case; a little slack for page-cache misses of the process.
pub(crate) const SLACK_READ_BYTES: u64 = 256 * 1024;

/// What our case did during a window, to subtract from the device's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OurWork {
    /// Commits run (warmup and timed).
    pub commits: u64,
    /// Bytes written by them.
    pub bytes: u64,
    /// Of those, the distinct bytes left dirty in the page cache (writes with no sync: at most the file
    /// region they cycle through), which the kernel writes back when it chooses, or the case's closing
    /// fsync does: the case's own I/O, whichever round it lands in, and not proportional to its commits.
    pub writeback_bytes: u64,
}

/// Device requests beyond what our work can explain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Foreign {
    /// Bytes written that were not ours.
    pub write_bytes: u64,
    /// Bytes read (we read nothing).
    pub read_bytes: u64,
    /// Flushes that were not ours.
    pub flushes: u64,
}

impl Foreign {
    /// Whether anything was beyond the allowance.
    pub fn any(&self) -> bool {
        self.write_bytes > 0 || self.read_bytes > 0 || self.flushes > 0
    }

    /// Add another window's.
    pub fn add(&mut self, other: Foreign) {
        self.write_bytes += other.write_bytes;
        self.read_bytes += other.read_bytes;
        self.flushes += other.flushes;
    }
}

/// The device's requests between two readings that our work does not explain.
pub fn foreign(before: DeviceCounters, after: DeviceCounters, ours: OurWork) -> Foreign {
    let delta = |a: u64, b: u64| b.saturating_sub(a);
    let counts = Foreign {
        write_bytes: delta(before.write_sectors, after.write_sectors) * SECTOR_BYTES,
        read_bytes: delta(before.read_sectors, after.read_sectors) * SECTOR_BYTES,
        flushes: delta(before.flushes, after.flushes),
    };
    foreign_of(counts, ours)
}

/// What of the device's `counts` in a window (written, read, flushes) our work cannot explain.
pub(crate) fn foreign_of(counts: Foreign, ours: OurWork) -> Foreign {
    let (written, read, flushes) = (counts.write_bytes, counts.read_bytes, counts.flushes);
    let allowed_bytes = ours.bytes + ours.commits * ALLOWED_BYTES_PER_COMMIT + SLACK_BYTES;
    let allowed_flushes = ours.commits * ALLOWED_FLUSHES_PER_COMMIT + SLACK_FLUSHES;
    Foreign {
        write_bytes: written.saturating_sub(allowed_bytes),
        read_bytes: read.saturating_sub(SLACK_READ_BYTES),
        flushes: flushes.saturating_sub(allowed_flushes),
    }
}
