//! `/sys/block/DISK/stat`: the kernel's per-disk counters (Documentation/block/stat.rst), as deltas over
//! a window.

use super::Disk;
use std::collections::BTreeMap;

pub use crate::core::schema::device::StatDelta;

/// The counters of one disk at one moment (fields 1–17 of the stat file; flushes exist since Linux 5.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Completed reads.
    pub reads: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Completed writes.
    pub writes: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent on writes (summed over requests).
    pub write_ms: u64,
    /// Milliseconds the device had at least one request in flight (`io_ticks`).
    pub busy_ms: u64,
    /// Completed flush requests.
    pub flushes: u64,
    /// Milliseconds spent on flushes.
    pub flush_ms: u64,
}

/// Parse the stat file (11, 15 or 17 numbers).
pub fn parse(text: &str) -> Option<Counters> {
    let f: Vec<u64> = text.split_whitespace().map(|v| v.parse().ok()).collect::<Option<_>>()?;
    if f.len() < 11 {
        return None;
    }
    Some(Counters {
        reads: f[0],
        read_sectors: f[2],
        writes: f[4],
        write_sectors: f[6],
        write_ms: f[7],
        busy_ms: f[9],
        flushes: f.get(15).copied().unwrap_or(0),
        flush_ms: f.get(16).copied().unwrap_or(0),
    })
}

impl StatDelta {
    /// `after - before` (counters that went backwards, a disk re-attached, count as 0).
    pub fn between(before: &Counters, after: &Counters) -> StatDelta {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let flushes = d(after.flushes, before.flushes);
        let flush_ms = d(after.flush_ms, before.flush_ms);
        StatDelta {
            reads: d(after.reads, before.reads),
            read_bytes: d(after.read_sectors, before.read_sectors) * 512,
            writes: d(after.writes, before.writes),
            write_bytes: d(after.write_sectors, before.write_sectors) * 512,
            write_ms: d(after.write_ms, before.write_ms),
            flushes,
            busy_ms: d(after.busy_ms, before.busy_ms),
            flush_ms,
            flush_mean_ms: if flushes > 0 { flush_ms as f64 / flushes as f64 } else { 0.0 },
        }
    }

    /// Add another window's delta to this one.
    pub fn add(&mut self, other: &StatDelta) {
        self.reads += other.reads;
        self.read_bytes += other.read_bytes;
        self.writes += other.writes;
        self.write_bytes += other.write_bytes;
        self.write_ms += other.write_ms;
        self.flushes += other.flushes;
        self.busy_ms += other.busy_ms;
        self.flush_ms += other.flush_ms;
        self.flush_mean_ms = if self.flushes > 0 { self.flush_ms as f64 / self.flushes as f64 } else { 0.0 };
    }
}

/// The counters of several disks at one moment.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    counters: BTreeMap<Disk, Counters>,
}

impl Snapshot {
    /// Read the counters of `disks` now (a disk whose file cannot be read is left out).
    pub fn take(disks: &[Disk]) -> Snapshot {
        let counters = disks
            .iter()
            .filter_map(|d| {
                let text = std::fs::read_to_string(format!("/sys/block/{}/stat", d.name)).ok()?;
                Some((d.clone(), parse(&text)?))
            })
            .collect();
        Snapshot { counters }
    }

    /// The counters of `disk` in this snapshot.
    pub fn get(&self, disk: &Disk) -> Option<Counters> {
        self.counters.get(disk).copied()
    }

    /// Per disk, what happened since `before` (disks present in both).
    pub fn since(&self, before: &Snapshot) -> BTreeMap<Disk, StatDelta> {
        self.counters
            .iter()
            .filter_map(|(disk, after)| Some((disk.clone(), StatDelta::between(before.counters.get(disk)?, after))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "   50832    16142  5312010    35961   631613    60551 40450430   173763        1    42228   \
                          223034     9878       11  3800792     2572   231586    10736\n";

    #[test]
    fn parses_the_seventeen_fields() {
        let c = parse(BEFORE).unwrap();
        assert_eq!(
            (c.reads, c.writes, c.write_sectors, c.flushes, c.flush_ms),
            (50832, 631613, 40450430, 231586, 10736)
        );
        let old_kernel = parse("1 2 3 4 5 6 7 8 9 10 11").unwrap();
        assert_eq!((old_kernel.writes, old_kernel.flushes), (5, 0));
        assert!(parse("1 2 3").is_none());
        // Before 5.5 there is no flush column: flushes unknown, read as 0; anything else is refused.
        assert_eq!(parse("1 2 3 4 5 6 7 8 9 10 11").unwrap().flushes, 0);
        assert_eq!(parse("1 2 3 4 5 6 7 8 9 10"), None);
        assert_eq!(parse("1 2 x"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn deltas_are_bytes_and_means() {
        let before = parse(BEFORE).unwrap();
        let after = Counters {
            writes: before.writes + 10,
            write_sectors: before.write_sectors + 16,
            flushes: before.flushes + 4,
            flush_ms: before.flush_ms + 6,
            ..before
        };
        let d = StatDelta::between(&before, &after);
        assert_eq!((d.writes, d.write_bytes, d.flushes, d.flush_ms), (10, 8192, 4, 6));
        assert!((d.flush_mean_ms - 1.5).abs() < 1e-9);
        assert_eq!(StatDelta::between(&after, &before).writes, 0, "a counter going backwards is 0");
    }

    #[test]
    fn snapshots_of_a_real_disk_move_forward() {
        let Some(disk) = std::fs::read_dir("/sys/block")
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| Disk::by_name(e.ok()?.file_name().to_str()?))
        else {
            return; // no block devices (a container without /sys/block): nothing to check
        };
        let a = Snapshot::take(std::slice::from_ref(&disk));
        let b = Snapshot::take(std::slice::from_ref(&disk));
        assert_eq!(b.since(&a).len(), 1);
    }
}
