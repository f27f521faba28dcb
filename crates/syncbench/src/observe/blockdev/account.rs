//! Device accounting of a measurement window: what the commits timed in it made each block device under
//! the directory do (write requests, flush requests, bytes, busy time), per commit.
//!
//! The counters are read at the window's edges only — right before the first timed commit and right after
//! the last — never inside the timed loop. As root the block tracepoints record every request during the
//! window too (the kernel's cost per request is a ring write; nothing is read until the window closes):
//! flags (PREFLUSH, FUA, SYNC) and the device-side latency, so a commit splits into time at the device and
//! time in the kernel and file system. On a `syncbench lab` disk the emulated device's own counters are read
//! at the same edges: the truth the counts are checked against.
//!
//! Whether the counts are the commits' alone is decided by [`foreign::foreign`], the same test
//! that names foreign I/O on a case.

use super::foreign::{self, Foreign, OurWork};
use super::requests::{BlockTrace, DiskRequests};
use super::{DeviceReport, Disk, disk, stat};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syncbench_sys::tracefs::Tracefs;

pub use crate::core::schema::device::{DeviceAccounting, EmulatedCounts};

/// Pages per CPU ring of the block tracepoints (4 MiB with 4 KiB pages): a window of ~10 000 commits fits
/// without reading during it.
const RING_PAGES: usize = 1024;

/// Counts of one disk per commit.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerCommit {
    /// Write requests.
    pub writes: f64,
    /// Flush requests.
    pub flushes: f64,
    /// Bytes written.
    pub bytes: f64,
}

impl DeviceAccounting {
    /// The lowest device (the real disk under every layer).
    pub fn lowest(&self) -> Option<&DeviceReport> {
        self.devices.last()
    }

    /// Per-commit counts of `device`. Write requests are the tracepoints' count of writes carrying data
    /// when they ran; the kernel's counter otherwise, which also counts the empty write that carries an
    /// fsync's flush request (so it reads one more per flush-only sync).
    pub fn per_commit(&self, device: &DeviceReport) -> PerCommit {
        let n = self.commits.max(1) as f64;
        let writes = device.requests.as_ref().map_or(device.stat.writes, |r| r.writes.count);
        PerCommit {
            writes: writes as f64 / n,
            flushes: device.stat.flushes as f64 / n,
            bytes: device.stat.write_bytes as f64 / n,
        }
    }

    /// Per-commit counts of the lowest device.
    pub fn lowest_per_commit(&self) -> Option<PerCommit> {
        self.lowest().map(|d| self.per_commit(d))
    }

    /// Rounds pooled: counts, bytes and times summed exactly, request latency means weighted by count,
    /// min and max kept; the other percentiles are those of the round with the most requests of the kind.
    /// `None` when no round had accounting.
    pub fn pooled<'a>(rounds: impl IntoIterator<Item = &'a DeviceAccounting>) -> Option<DeviceAccounting> {
        let mut it = rounds.into_iter();
        let mut sum = it.next()?.clone();
        for r in it {
            let device_ns = sum.device_ns_per_commit.zip(r.device_ns_per_commit).map(|(a, b)| {
                (a * sum.commits as f64 + b * r.commits as f64) / (sum.commits + r.commits).max(1) as f64
            });
            sum.commits += r.commits;
            sum.device_ns_per_commit = device_ns;
            sum.trace_lost_samples += r.trace_lost_samples;
            sum.unattributable = sum.unattributable.take().or(r.unattributable.clone());
            sum.emulated = sum.emulated.zip(r.emulated).map(|(a, b)| EmulatedCounts {
                writes: a.writes + b.writes,
                write_bytes: a.write_bytes + b.write_bytes,
                flushes: a.flushes + b.flushes,
            });
            for (mine, theirs) in sum.devices.iter_mut().zip(&r.devices) {
                mine.stat.add(&theirs.stat);
                mine.requests = mine.requests.take().zip(theirs.requests.as_ref()).map(|(a, b)| a.pooled(b));
            }
        }
        Some(sum)
    }

    /// Of the device that has them, the per-request figures (the lowest traced one).
    pub fn traced(&self) -> Option<(&DeviceReport, &super::requests::RequestReport)> {
        self.devices.iter().rev().find_map(|d| Some((d, d.requests.as_ref()?)))
    }
}

/// Reads the devices under one directory at the edges of measurement windows.
#[derive(Debug)]
pub struct Accountant {
    disks: Vec<Disk>,
    tracefs: Option<Tracefs>,
    lab_mount: Option<PathBuf>,
}

/// One open window: the counters at its start, and the tracepoints recording.
pub struct Window {
    before: stat::Snapshot,
    trace: Option<BlockTrace>,
    lab_before: Option<EmulatedCounts>,
}

/// What one window recorded, before it is reported: rounds of a case add up.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    disks: Vec<Disk>,
    commits: u64,
    stats: BTreeMap<Disk, stat::StatDelta>,
    requests: Option<BTreeMap<u64, DiskRequests>>,
    lost: u64,
    foreign: Option<String>,
    emulated: Option<EmulatedCounts>,
}

impl Accountant {
    /// The devices holding `dir`; the tracepoints when `trace` is asked and they can be opened (root).
    pub fn for_dir(dir: &Path, trace: bool) -> Accountant {
        let disks = chain(dir);
        let tracefs = (trace && !disks.is_empty()).then(|| Tracefs::open(&std::env::temp_dir()).ok()).flatten();
        // A signal ends the process without `Drop`: a tracefs we mounted must not outlive us.
        if let Some(root) = tracefs.as_ref().and_then(Tracefs::mounted_here) {
            let root = root.to_path_buf();
            crate::core::cleanup::on_signal(move || syncbench_sys::tracefs::detach(&root));
        }
        Accountant { lab_mount: lab_mount_of(&disks), disks, tracefs }
    }

    /// Whether there is anything to account (no block device under tmpfs, overlay, NFS).
    pub fn is_empty(&self) -> bool {
        self.disks.is_empty()
    }

    /// Open a window: read the counters, start the tracepoints.
    pub fn open(&self) -> Window {
        // The tracepoints start last and stop first: they see nothing the counters did not.
        let lab_before = self.lab_counts();
        let before = stat::Snapshot::take(&self.disks);
        let trace = self.tracefs.as_ref().and_then(|t| BlockTrace::start_with_pages(t, RING_PAGES).ok());
        Window { before, trace, lab_before }
    }

    /// Close `window` in which `commits` commits of `bytes_per_commit` each ran.
    pub fn close(&self, window: Window, commits: u64, bytes_per_commit: u64) -> Recorded {
        let mut trace = window.trace;
        let stopped = trace.as_mut().is_none_or(|t| t.stop().is_ok());
        let after = stat::Snapshot::take(&self.disks);
        let lab_after = self.lab_counts();
        let (requests, lost) = match trace.map(BlockTrace::finish_raw) {
            Some(Ok((requests, lost))) if stopped => (Some(requests), lost),
            _ => (None, 0),
        };
        let ours = OurWork { commits, bytes: commits * bytes_per_commit };
        let foreign = self.disks.iter().find_map(|d| {
            let f = foreign::foreign(window.before.get(d)?, after.get(d)?, ours);
            f.any().then(|| foreign_sentence(&d.name, &f))
        });
        let emulated = match (window.lab_before, lab_after) {
            (Some(a), Some(b)) => Some(EmulatedCounts {
                writes: b.writes.saturating_sub(a.writes),
                write_bytes: b.write_bytes.saturating_sub(a.write_bytes),
                flushes: b.flushes.saturating_sub(a.flushes),
            }),
            _ => None,
        };
        let (disks, stats) = (self.disks.clone(), after.since(&window.before));
        Recorded { disks, commits, stats, requests, lost, foreign, emulated }
    }

    fn lab_counts(&self) -> Option<EmulatedCounts> {
        lab_counts(self.lab_mount.as_deref()?)
    }
}

impl Recorded {
    /// A window of `commits` commits with no device read, foreign I/O named when `foreign`.
    #[cfg(test)]
    pub(crate) fn with_commits(commits: u64, foreign: Option<&str>) -> Recorded {
        Recorded { commits, foreign: foreign.map(str::to_string), ..Default::default() }
    }

    /// Turn what was recorded into the report, the devices in chain order.
    pub fn report(&self) -> DeviceAccounting {
        let r = self;
        let devices: Vec<DeviceReport> = r
            .disks
            .iter()
            .map(|d| {
                let requests =
                    r.requests.as_ref().map(|m| m.get(&d.kernel_devt()).map(DiskRequests::report).unwrap_or_default());
                DeviceReport::new(d, r.stats.get(d).copied().unwrap_or_default(), requests)
            })
            .collect();
        let mut acct = DeviceAccounting {
            commits: r.commits,
            devices,
            unattributable: r.foreign.clone(),
            trace_lost_samples: r.lost,
            device_ns_per_commit: None,
            emulated: r.emulated,
        };
        acct.device_ns_per_commit = acct.traced().map(|(_, q)| {
            // Only requests with a measured latency: a completion whose issue came before the window has none.
            (q.flushes.busy_ns() + q.writes.busy_ns()) / r.commits.max(1) as f64
        });
        acct
    }

    /// Add another window's (a later round of the same case).
    pub fn add(&mut self, other: Recorded) {
        if self.disks.is_empty() {
            self.disks = other.disks;
        }
        self.commits += other.commits;
        for (disk, delta) in other.stats {
            self.stats.entry(disk).or_default().add(&delta);
        }
        self.requests = match (self.requests.take(), other.requests) {
            (Some(mut mine), Some(theirs)) => {
                for (dev, d) in theirs {
                    mine.entry(dev).or_default().merge(&d);
                }
                Some(mine)
            }
            // One round traced and another not: per-commit figures would divide one round's requests by
            // every round's commits. Say nothing rather than something too low.
            _ => None,
        };
        self.lost += other.lost;
        self.foreign = self.foreign.take().or(other.foreign);
        self.emulated = match (self.emulated, other.emulated) {
            (Some(a), Some(b)) => Some(EmulatedCounts {
                writes: a.writes + b.writes,
                write_bytes: a.write_bytes + b.write_bytes,
                flushes: a.flushes + b.flushes,
            }),
            _ => None,
        };
    }
}

fn foreign_sentence(name: &str, f: &Foreign) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    format!(
        "{name} served requests that were not the commits' ({:.1} MiB written, {:.1} MiB read, {} flushes beyond them): \
         the counts include them",
        mib(f.write_bytes),
        mib(f.read_bytes),
        f.flushes
    )
}

/// Whether we run as root (the effective uid in `/proc/self/status`): the tracepoints need it.
pub fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .is_some_and(|euid| euid == "0")
}

/// The devices under `dir`: the file system's device, the devices it is built on, and for a loop device
/// the disk holding its backing file (the lowest real disk last).
fn chain(dir: &Path) -> Vec<Disk> {
    let mut disks = disk::disks_of_path(dir);
    if disks.is_empty() {
        disks = mount_source_disks(dir);
    }
    let mut i = 0;
    while i < disks.len() && disks.len() < 8 {
        let backing = std::fs::read_to_string(format!("/sys/block/{}/loop/backing_file", disks[i].name));
        if let Ok(file) = backing {
            for d in disk::disks_of_path(Path::new(file.trim())) {
                if !disks.contains(&d) {
                    disks.push(d);
                }
            }
        }
        i += 1;
    }
    disks
}

/// The disks of the device the mount holding `dir` names as its source: Btrfs reports an anonymous
/// device number (`0:N`) in `st_dev`, not its block device's.
fn mount_source_disks(dir: &Path) -> Vec<Disk> {
    use std::os::unix::fs::MetadataExt;
    let (Ok(text), Ok(dir)) = (std::fs::read_to_string("/proc/self/mountinfo"), std::fs::canonicalize(dir)) else {
        return Vec::new();
    };
    let mounts = crate::observe::probe::mountinfo::parse(&text);
    let Some(mount) = crate::observe::probe::mountinfo::find(&mounts, &dir, None) else { return Vec::new() };
    match std::fs::metadata(&mount.source) {
        Ok(meta) if mount.source.starts_with("/dev/") => disk::disks_of_dev(meta.rdev()),
        _ => Vec::new(),
    }
}

/// What an emulated disk itself received, from the device under test rather than the kernel: the
/// `syncbench lab` model counts it. The lab sits above this layer, so the binary hands its answer in at
/// start-up ([`install_device_truth`]); without it (the library alone, a build without `fuse`) there is none.
pub trait DeviceTruth: Send + Sync {
    /// The mount of the lab disk whose loop device is one of `disks`, if any.
    fn mount_of(&self, disks: &[Disk]) -> Option<PathBuf>;
    /// What that disk's model has received so far.
    fn counts(&self, mount: &Path) -> Option<EmulatedCounts>;
}

static DEVICE_TRUTH: std::sync::OnceLock<Box<dyn DeviceTruth>> = std::sync::OnceLock::new();

/// Hand in the lab's device truth: once, at start-up (a second call is ignored).
pub fn install_device_truth(truth: Box<dyn DeviceTruth>) {
    let _ = DEVICE_TRUTH.set(truth);
}

fn lab_mount_of(disks: &[Disk]) -> Option<PathBuf> {
    DEVICE_TRUTH.get()?.mount_of(disks)
}

fn lab_counts(mount: &Path) -> Option<EmulatedCounts> {
    DEVICE_TRUTH.get()?.counts(mount)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_add_up_and_foreign_io_is_kept() {
        let vda = Disk { name: "vda".into(), major: 254, minor: 0 };
        let delta =
            |writes, flushes| stat::StatDelta { writes, flushes, write_bytes: writes * 4096, ..Default::default() };
        let mut a = Recorded {
            disks: vec![vda.clone()],
            commits: 10,
            stats: [(vda.clone(), delta(20, 10))].into(),
            emulated: Some(EmulatedCounts { writes: 20, write_bytes: 1, flushes: 10 }),
            ..Default::default()
        };
        let b = Recorded {
            commits: 30,
            stats: [(vda.clone(), delta(60, 30))].into(),
            foreign: Some("vda served requests".into()),
            emulated: Some(EmulatedCounts { writes: 60, write_bytes: 1, flushes: 30 }),
            ..Default::default()
        };
        a.add(b);
        let r = a.report();
        assert_eq!(r.commits, 40);
        let pc = r.lowest_per_commit().unwrap();
        assert_eq!((pc.writes, pc.flushes, pc.bytes), (2.0, 1.0, 8192.0));
        assert!(r.unattributable.is_some());
        assert_eq!(r.emulated.map(|e| e.flushes), Some(40));
        assert_eq!(r.device_ns_per_commit, None, "no tracepoints, no device time");
        // A round without the lab's counters: per commit they would be one round's over all rounds' commits.
        a.add(Recorded { commits: 5, ..Default::default() });
        assert_eq!(a.report().emulated, None);
    }

    #[test]
    fn a_real_window_on_the_temp_dir_counts_a_sync() {
        let dir = tempfile::tempdir().unwrap();
        let acct = Accountant::for_dir(dir.path(), false);
        if acct.is_empty() {
            // tmpfs: no block device to count. CI sets SYNCBENCH_REQUIRE_ALL_TESTS, and there it must run.
            assert!(
                !syncbench_sys::test_support::all_tests_required(),
                "the temp dir {} has no block device to count",
                dir.path().display()
            );
            return;
        }
        let w = acct.open();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        std::fs::File::open(&path).unwrap().sync_all().unwrap();
        let r = acct.close(w, 1, 8192).report();
        let lowest = r.lowest().unwrap();
        assert!(lowest.stat.write_bytes >= 8192, "{r:?}");
    }
}
