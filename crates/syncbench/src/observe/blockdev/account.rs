//! Device accounting of a measurement window: what the commits timed in it made each block device under
//! the directory do (write requests, flush requests, bytes, busy time), per commit.
//!
//! The counters are read at the window's edges only — right before the first timed commit and right after
//! the last — never inside the timed loop. As root the block tracepoints record every request during the
//! window too (the kernel's cost per request is a ring write; nothing is read until the window closes):
//! flags (PREFLUSH, FUA, SYNC) and the device-side latency, so a commit splits into time at the device and
//! time in the kernel and file system. They are read by a private ftrace instance (its own rings; the
//! eBPF programs `trace` uses, [`super::inkernel`], miss the completions that interrupt the project VM's
//! agent, docs/trace.md "The disks"), else by those programs, else by perf events (or as
//! `SYNCBENCH_TRACER` asks): perf writes no sample for some completions, so request counts
//! read by perf, with records lost or skipped runs not counted, or short of the counters', are marked
//! incomplete (`DeviceAccounting::requests_incomplete`) and the columns then take the kernel's
//! counters. On a `syncbench lab` disk the emulated device's own counters are read
//! at the same edges: the truth the counts are checked against.
//!
//! Whether the counts are the commits' alone is decided by [`foreign::foreign`], the same test
//! that names foreign I/O on a case.

use super::foreign::{self, Foreign, OurWork};
use super::requests::{BlockTrace, DiskRequests, Lost, Mechanism};
use super::{DeviceReport, Disk, disk, stat};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syncbench_sys::tracefs::Tracefs;

pub use crate::core::schema::device::{DeviceAccounting, EmulatedCounts};

/// Pages per CPU ring of the perf fallback (4 MiB with 4 KiB pages): a window of ~10 000 commits fits
/// without reading during it.
const RING_PAGES: usize = 1024;
/// The eBPF programs' one ring (32 MiB: ~260,000 requests, an issue and a completion of 64 bytes each,
/// whichever CPU and disk they are on; nothing reads it until the window closes).
const RING_BYTES: u32 = 32 << 20;
/// KiB per CPU of the ftrace instance's rings (4 MiB: ~35,000 requests on one CPU, an issue and a completion
/// of ~60 bytes each; nothing reads them until the window closes).
pub const FTRACE_KB: u32 = 4096;
/// The environment variable that picks the block tracepoints' reader: `ftrace` an ftrace instance only,
/// `bpf` the eBPF programs only, `perf` the perf events, `bpf-then-perf` eBPF with perf when refused, `off`
/// none (the /sys/block counters only, as without root); anything else or unset: an ftrace instance, else
/// eBPF, else perf. The tracepoints cost the timed commits a little: with the ftrace instance, 2.4% of an
/// 8 KiB fdatasync's rate at ~12,000 commits/s (bench/run_vs_pg_test_fsync_tracing.sh, docs/benchmarks.md
/// "pg_test_fsync"), which `off` gives back.
pub const TRACER_ENV: &str = "SYNCBENCH_TRACER";

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
        let complete = device.requests.as_ref().filter(|_| self.requests_incomplete.is_none());
        let writes = complete.map_or(device.stat.writes, |r| r.writes.count);
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
            sum.trace_reader = sum.trace_reader.take().filter(|mine| r.trace_reader.as_ref() == Some(mine));
            sum.requests_incomplete = sum.requests_incomplete.take().or(r.requests_incomplete.clone());
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
    tracefs: Option<crate::core::registry::RecordedTracefs>,
    lab_mount: Option<PathBuf>,
}

/// One open window: the counters at its start, the tracepoints recording (and why eBPF could not).
pub struct Window {
    refused: Option<String>,
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
    lost: Lost,
    /// What read the tracepoints, and why eBPF did not when perf did.
    reader: Option<(Mechanism, Option<String>)>,
    foreign: Option<String>,
    emulated: Option<EmulatedCounts>,
}

impl Accountant {
    /// The devices holding `dir`; the tracepoints when `trace` is asked and they can be opened (root).
    pub fn for_dir(dir: &Path, trace: bool) -> Accountant {
        let disks = chain(dir);
        let tracefs = (trace && !disks.is_empty()).then(|| crate::core::registry::open_tracefs().ok()).flatten();
        // A signal ends the process without `Drop`: a tracefs we mounted must not outlive us.
        if let Some(root) = tracefs.as_deref().and_then(Tracefs::mounted_here) {
            let root = root.to_path_buf();
            crate::core::cleanup::on_signal(move || syncbench_sys::tracefs::detach(&root));
        }
        // Registered after the tracefs detach: hooks run last-registered first, so the instances go first.
        static INSTANCES_HOOK: std::sync::Once = std::sync::Once::new();
        if tracefs.is_some() {
            INSTANCES_HOOK.call_once(|| crate::core::cleanup::on_signal(super::requests::remove_live_instances));
        }
        Accountant { lab_mount: lab_mount_of(&disks), disks, tracefs }
    }

    /// Whether there is anything to account (no block device under tmpfs, overlay, NFS).
    pub fn is_empty(&self) -> bool {
        self.disks.is_empty()
    }

    /// Open a window: read the counters, start the tracepoints.
    pub fn open(&self) -> Window {
        // The counters' window inside the tracepoints' (switched on before the counters are read, off
        // after), as `trace` does: every request the counters count is seen, so the request counts can be
        // checked against them. Loading the programs is outside both.
        let (trace, refused) = match &self.tracefs {
            Some(t) => open_trace(t),
            None => (None, None),
        };
        // The lab's window holds the kernel's too, tightly: taken after the reader is prepared (creating an
        // ftrace instance allocates its rings), so a previous case's late I/O does not land between.
        let lab_before = self.lab_counts();
        let trace = trace.and_then(|mut t| t.resume().is_ok().then_some(t));
        let before = stat::Snapshot::take(&self.disks);
        Window { refused, before, trace, lab_before }
    }

    /// Close `window` in which `commits` commits of `bytes_per_commit` each ran.
    pub fn close(&self, window: Window, commits: u64, bytes_per_commit: u64) -> Recorded {
        let after = stat::Snapshot::take(&self.disks);
        let mut trace = window.trace;
        let stopped = trace.as_mut().is_none_or(|t| t.stop().is_ok());
        let lab_after = self.lab_counts();
        let reader = trace.as_ref().map(|t| (t.mechanism(), window.refused.clone()));
        let (requests, lost, reader) = match trace.map(BlockTrace::finish_raw) {
            Some(Ok((requests, lost))) if stopped => (Some(requests), lost, reader),
            _ => (None, Lost::default(), None),
        };
        let ours = OurWork { commits, bytes: commits * bytes_per_commit, writeback_bytes: 0 };
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
        Recorded { disks, commits, stats, requests, lost, reader, foreign, emulated }
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
            trace_lost_samples: r.lost.dropped + r.lost.skipped.unwrap_or(0),
            trace_reader: r.reader.as_ref().map(|(m, _)| m.token().to_string()),
            requests_incomplete: r.reader.as_ref().and_then(|reader| incompleteness(reader, r.lost)),
            device_ns_per_commit: None,
            emulated: r.emulated,
        };
        // Both reasons when both hold: a few skipped runs do not explain a larger shortfall.
        let short = acct.traced().and_then(|(d, q)| shortfall(d, q));
        acct.requests_incomplete = match (acct.requests_incomplete.take(), short) {
            (Some(why), Some(short)) => Some(format!("{why}; {short}")),
            (why, short) => why.or(short),
        };
        // Device time summed from the requests traced: low when some were missed, so left out then.
        let traced = acct.traced().filter(|_| acct.requests_incomplete.is_none());
        acct.device_ns_per_commit = traced.map(|(_, q)| {
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
        self.lost = Lost {
            dropped: self.lost.dropped + other.lost.dropped,
            skipped: self.lost.skipped.zip(other.lost.skipped).map(|(a, b)| a + b),
        };
        // A perf round makes the whole case's counts incomplete: it is the reader kept.
        self.reader = match (self.reader.take(), other.reader) {
            (Some(mine), Some(theirs)) => Some(if theirs.0 == Mechanism::Perf { theirs } else { mine }),
            _ => None,
        };
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

/// The block tracepoints' reader for a window, loaded but not recording: an ftrace instance (the only
/// reader that sees every completion on the project VM: docs/trace.md, "The disks"), the eBPF programs, or perf
/// events when the kernel refuses them (with why) or [`TRACER_ENV`] asks; `None` when neither opens.
fn open_trace(tracefs: &Tracefs) -> (Option<BlockTrace>, Option<String>) {
    open_trace_as(tracefs, std::env::var(TRACER_ENV).ok().as_deref())
}

/// [`open_trace`] with [`TRACER_ENV`] read as `choice`.
fn open_trace_as(tracefs: &Tracefs, choice: Option<&str>) -> (Option<BlockTrace>, Option<String>) {
    let perf = || BlockTrace::prepare_perf(tracefs, RING_PAGES).ok();
    let bpf_or_perf = || match BlockTrace::prepare_bpf(tracefs, RING_BYTES) {
        Ok(t) => (Some(t), None),
        Err(e) => (perf(), Some(e.to_string())),
    };
    match choice {
        Some("off") => (None, None),
        Some("perf") => (perf(), Some(format!("{TRACER_ENV}=perf"))),
        Some("bpf") => (BlockTrace::prepare_bpf(tracefs, RING_BYTES).ok(), None),
        Some("ftrace") => (BlockTrace::prepare_ftrace(tracefs, FTRACE_KB).ok(), None),
        Some("bpf-then-perf") => bpf_or_perf(),
        _ => match BlockTrace::prepare_ftrace(tracefs, FTRACE_KB) {
            Ok(t) => (Some(t), None),
            Err(_) => bpf_or_perf(),
        },
    }
}

/// Why request counts read by `reader` with `lost` hits not recorded may be incomplete; `None` when
/// they are complete.
fn incompleteness(reader: &(Mechanism, Option<String>), lost: Lost) -> Option<String> {
    let mut why = Vec::new();
    if let (Mechanism::Perf, refused) = reader {
        let because = refused.as_ref().map_or(String::new(), |r| format!(" (eBPF not used: {r})"));
        why.push(format!("read by perf events{because}, which miss completions on some machines"));
    }
    if lost.dropped > 0 {
        why.push(format!("{} records dropped", lost.dropped));
    }
    match lost.skipped {
        Some(0) => {}
        Some(n) => why.push(format!("{n} runs of the eBPF programs skipped by the kernel")),
        None => {
            why.push("runs of the eBPF programs the kernel may have skipped are not counted before Linux 6.7".into())
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// The requests `/sys/block` counted that the tracepoints did not see, if any: their window holds the
/// counters' (switched on before the counters are read, off after), so every request the counters
/// count should be there; one missing is a hit the kernel neither ran the programs for nor reported.
fn shortfall(device: &DeviceReport, q: &super::requests::RequestReport) -> Option<String> {
    let flushes = device.stat.flushes.saturating_sub(q.flushes.count);
    let writes = device.stat.writes.saturating_sub(q.writes.count + q.flush_carriers);
    (flushes + writes > 0).then(|| {
        format!(
            "the block tracepoints saw {} of the {} flushes and {} of the {} writes {} completed (/sys/block)",
            q.flushes.count,
            device.stat.flushes,
            q.writes.count + q.flush_carriers,
            device.stat.writes,
            device.disk
        )
    })
}

/// `vda served requests that were not the commits' (12 KiB written, 3 flushes beyond them): …`: only
/// what there was, each in a unit it reads in (a few KiB are not "0.0 MiB").
fn foreign_sentence(name: &str, f: &Foreign) -> String {
    use crate::core::units::format_bytes;
    let parts: Vec<String> = [
        (f.write_bytes > 0).then(|| format!("{} written", format_bytes(f.write_bytes as f64))),
        (f.read_bytes > 0).then(|| format!("{} read", format_bytes(f.read_bytes as f64))),
        (f.flushes > 0).then(|| format!("{} flush{}", f.flushes, if f.flushes == 1 { "" } else { "es" })),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!(
        "{name} served requests that were not the commits' ({} beyond them): the counts include them",
        parts.join(", ")
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
    fn foreign_io_is_said_in_units_it_reads_in_and_only_what_there_was() {
        let few = Foreign { write_bytes: 12 * 1024, read_bytes: 0, flushes: 1 };
        assert_eq!(
            foreign_sentence("vda", &few),
            "vda served requests that were not the commits' (12 KiB written, 1 flush beyond them): the counts include them"
        );
        let many = Foreign { write_bytes: 0, read_bytes: 17_300_000, flushes: 3 };
        assert!(foreign_sentence("vda", &many).contains("(16.5 MiB read, 3 flushes beyond them)"));
    }

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
    fn request_counts_that_cannot_be_complete_say_why() {
        let bpf = (Mechanism::Bpf, None);
        let counted = Lost { dropped: 0, skipped: Some(0) };
        assert_eq!(incompleteness(&bpf, counted), None);
        let perf = incompleteness(&(Mechanism::Perf, Some("SYNCBENCH_TRACER=perf".into())), counted).unwrap();
        assert!(perf.contains("read by perf events (eBPF not used: SYNCBENCH_TRACER=perf)"), "{perf}");
        let dropped = incompleteness(&bpf, Lost { dropped: 3, skipped: Some(2) }).unwrap();
        assert!(dropped.contains("3 records dropped; 2 runs of the eBPF programs skipped"), "{dropped}");
        assert!(incompleteness(&bpf, Lost { dropped: 0, skipped: None }).unwrap().contains("before Linux 6.7"));
        // Fewer requests traced than /sys/block counted: one flush missing is enough.
        let vda = Disk { name: "vda".into(), major: 254, minor: 0 };
        let stat = stat::StatDelta { flushes: 45, writes: 90, ..Default::default() };
        let device = DeviceReport::new(&vda, stat, None);
        let mut q = super::super::requests::RequestReport::default();
        (q.flushes.count, q.writes.count, q.flush_carriers) = (45, 45, 45);
        assert_eq!(shortfall(&device, &q), None);
        q.flushes.count = 44;
        let short = shortfall(&device, &q).unwrap();
        assert!(short.contains("saw 44 of the 45 flushes and 90 of the 90 writes vda completed"), "{short}");
        // In the report: marked, the write column from the counter, no device time.
        let mut requests = BTreeMap::new();
        let mut d = DiskRequests::default();
        d.merge(&DiskRequests::default());
        requests.insert(vda.kernel_devt(), d);
        let r = Recorded {
            disks: vec![vda.clone()],
            commits: 45,
            stats: [(vda.clone(), stat)].into(),
            requests: Some(requests),
            lost: counted,
            reader: Some(bpf),
            ..Default::default()
        }
        .report();
        assert!(r.requests_incomplete.as_deref().is_some_and(|w| w.contains("saw 0 of the 45 flushes")), "{r:?}");
        assert_eq!((r.device_ns_per_commit, r.lowest_per_commit().unwrap().writes), (None, 2.0));
        assert_eq!(r.trace_reader.as_deref(), Some("bpf"));
        // A few skipped runs reported do not hide a larger shortfall: both are said.
        let mut skipped = Recorded {
            disks: vec![vda.clone()],
            commits: 45,
            stats: [(vda.clone(), stat)].into(),
            requests: Some(BTreeMap::from([(vda.kernel_devt(), DiskRequests::default())])),
            lost: Lost { dropped: 0, skipped: Some(2) },
            reader: Some((Mechanism::Bpf, None)),
            ..Default::default()
        };
        let why = skipped.report().requests_incomplete.unwrap();
        assert!(
            why.contains("2 runs of the eBPF programs skipped") && why.contains("saw 0 of the 45 flushes"),
            "{why}"
        );
        skipped.lost.skipped = Some(0);
        assert!(!skipped.report().requests_incomplete.unwrap().contains("skipped"));
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

    #[test]
    fn a_traced_window_is_read_by_an_ftrace_instance_that_is_gone_after_it() {
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        if !syncbench_sys::test_support::is_root_or_skip() || std::env::var_os(TRACER_ENV).is_some() {
            return;
        }
        let acct = Accountant::for_dir(dir.path(), true);
        let Some(tracefs) = acct.tracefs.as_deref() else { return assert!(acct.is_empty(), "no tracefs") };
        let w = acct.open();
        let instance = w.trace.as_ref().and_then(|t| t.ftrace_dir()).expect("an ftrace instance").to_path_buf();
        assert!(instance.starts_with(tracefs.root().join("instances")) && instance.is_dir(), "{instance:?}");
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        std::fs::File::open(&path).unwrap().sync_all().unwrap();
        let r = acct.close(w, 1, 8192).report();
        assert_eq!(r.trace_reader.as_deref(), Some("ftrace"), "{r:?}");
        let (device, q) = r.traced().expect("request lines");
        assert!(q.writes.count + q.flush_carriers >= device.stat.writes, "{r:?}");
        assert!(q.flushes.count >= device.stat.flushes, "{r:?}");
        assert!(!instance.exists(), "the instance outlived its window: {instance:?}");
    }

    #[test]
    fn tracer_off_opens_no_reader() {
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        if !syncbench_sys::test_support::is_root_or_skip() {
            return;
        }
        let acct = Accountant::for_dir(dir.path(), true);
        let Some(tracefs) = acct.tracefs.as_deref() else { return assert!(acct.is_empty(), "no tracefs") };
        let (reader, refused) = open_trace_as(tracefs, Some("off"));
        assert!(reader.is_none() && refused.is_none());
        let (reader, _) = open_trace_as(tracefs, Some("ftrace"));
        assert_eq!(reader.map(|r| r.mechanism()), Some(Mechanism::Ftrace), "the planted contrast: ftrace traces");
    }
}
