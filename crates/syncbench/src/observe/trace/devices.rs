//! The disks under the traced files, over the trace's window: what they were asked to do (flushes,
//! writes, bytes) and how long they took, set beside the sync calls made on files on them.

use super::calls::SyncCall;
use super::fmt::split_target;
use super::stats::{CallStats, Recorder};
use crate::core::units::format_ns_fixed;
use crate::observe::blockdev::requests::RequestReport;
use crate::observe::blockdev::{DeviceReport, Disk, disk, stat::StatDelta};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;

/// One disk holding traced files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TracedDevice {
    /// The disk's counters and requests.
    #[serde(flatten)]
    pub device: DeviceReport,
    /// Directories of the traced files on it.
    pub dirs: Vec<String>,
    /// Each durability call made on files on this disk, beside the disk's flushes.
    pub calls: Vec<CallVsDevice>,
}

/// A durability call type on one disk's files, and the disk's own flush latency in the same window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallVsDevice {
    /// Call name.
    pub call: String,
    /// Timed calls.
    pub count: u64,
    /// The call's median, ns.
    pub p50_ns: u64,
    /// The call's p99, ns.
    pub p99_ns: u64,
    /// Median device-side flush latency in the window, ns (0 without the block tracepoints).
    pub device_flush_p50_ns: u64,
    /// p99 device-side flush latency, ns.
    pub device_flush_p99_ns: u64,
}

/// What the window saw on every disk, to be matched with the traced files.
#[derive(Debug, Default)]
pub struct DiskWindow {
    /// Counter deltas of every disk.
    pub stats: BTreeMap<Disk, StatDelta>,
    /// Requests per kernel dev_t (empty when the block tracepoints were not recorded).
    pub requests: BTreeMap<u64, RequestReport>,
    /// `st_dev` of traced files, when the tracer knew it from the descriptor (else the path is stat'ed).
    pub file_devs: HashMap<String, u64>,
    /// Also list disks that wrote or flushed with no traced file on them (`--all`: the system's own
    /// syncs, e.g. journal commits, make no system call).
    pub every_busy_disk: bool,
}

/// The disks under the files in `recorder`, with the calls made on them.
pub fn build(recorder: &Recorder, window: &DiskWindow) -> Vec<TracedDevice> {
    let mut by_dev: HashMap<u64, Vec<Disk>> = HashMap::new();
    let mut per_disk: BTreeMap<Disk, (BTreeSet<String>, BTreeMap<SyncCall, CallStats>)> = BTreeMap::new();
    for ((target, call), stats) in &recorder.by_file {
        if !target.starts_with('/') {
            continue; // `(all file systems)`, `(anonymous mapping)`
        }
        let disks = match window.file_devs.get(target).filter(|d| **d != 0) {
            Some(&dev) => by_dev.entry(dev).or_insert_with(|| disk::disks_of_dev(dev)).clone(),
            None => disk::disks_of_path(Path::new(target)),
        };
        let dir = split_target(target).0;
        for d in disks {
            let entry = per_disk.entry(d).or_default();
            entry.0.insert(dir.clone());
            entry.1.entry(*call).or_default().merge(stats);
        }
    }
    if window.every_busy_disk {
        for (d, delta) in &window.stats {
            if delta.writes + delta.flushes > 0 {
                per_disk.entry(d.clone()).or_default();
            }
        }
    }
    per_disk
        .into_iter()
        .map(|(d, (dirs, calls))| {
            let requests = window.requests.get(&d.kernel_devt()).cloned();
            let flush = requests.as_ref().map(|r| r.flushes.latency_ns).unwrap_or_default();
            let calls = calls
                .iter()
                .filter(|(_, s)| s.timed() > 0)
                .map(|(call, s)| {
                    let lat = s.latency_ns();
                    CallVsDevice {
                        call: call.name().to_string(),
                        count: s.timed(),
                        p50_ns: lat.p50,
                        p99_ns: lat.p99,
                        device_flush_p50_ns: flush.p50,
                        device_flush_p99_ns: flush.p99,
                    }
                })
                .collect();
            let stat = window.stats.get(&d).copied().unwrap_or_default();
            TracedDevice { device: DeviceReport::new(&d, stat, requests), dirs: dirs.into_iter().collect(), calls }
        })
        .collect()
}

/// The text section: per disk, its requests and one line per call type.
pub fn render(out: &mut String, devices: &[TracedDevice]) {
    for t in devices {
        let d = &t.device;
        let under = if t.dirs.is_empty() { "no traced file".to_string() } else { t.dirs.join(", ") };
        let _ = writeln!(out, "\ndevice {} ({}, cache: {}) under {under}", d.disk, d.dev, d.write_cache);
        let s = &d.stat;
        let _ = writeln!(
            out,
            "  /sys/block/{}/stat: {} flushes ({:.2} ms mean), {} writes ({}), {} reads ({})",
            d.disk,
            s.flushes,
            s.flush_mean_ms,
            s.writes,
            crate::core::units::format_mib(s.write_bytes),
            s.reads,
            crate::core::units::format_mib(s.read_bytes)
        );
        let Some(r) = &d.requests else { continue };
        let lat = |l: &crate::core::schema::LatencyNs| {
            format!("p50 {}, p99 {}, max {}", format_ns_fixed(l.p50), format_ns_fixed(l.p99), format_ns_fixed(l.max))
        };
        let _ =
            writeln!(out, "  flush requests   {:>7}  device latency {}", r.flushes.count, lat(&r.flushes.latency_ns));
        let _ = writeln!(
            out,
            "  write requests   {:>7}  device latency {}; {} ({} FUA, {} sync){}",
            r.writes.count,
            lat(&r.writes.latency_ns),
            crate::core::units::format_mib(r.writes.bytes),
            r.fua_writes,
            r.sync_writes,
            // Zero-sector write completions of the flush machinery (see `RequestReport::flush_carriers`):
            // said, so the line can be checked against the stat's writes (write requests + these >= them).
            if r.flush_carriers > 0 {
                format!(", + {} empty write completions (flush sequences)", r.flush_carriers)
            } else {
                String::new()
            }
        );
        if r.errors > 0 {
            let _ = writeln!(out, "  {} requests FAILED", r.errors);
        }
        for c in t.calls.iter().filter(|_| r.flushes.count > 0) {
            let _ = writeln!(
                out,
                "  {} p99 {} (p50 {}), of which the device's flush p99 {} (p50 {})",
                c.call,
                format_ns_fixed(c.p99_ns),
                format_ns_fixed(c.p50_ns),
                format_ns_fixed(c.device_flush_p99_ns),
                format_ns_fixed(c.device_flush_p50_ns)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_without_a_disk_and_descriptions_are_left_out() {
        let mut r = Recorder::new(true);
        r.call(SyncCall::Sync, "(all file systems)", Some(10), false, 0);
        r.call(SyncCall::Fsync, "/proc/self/status", Some(10), false, 0);
        assert!(build(&r, &DiskWindow::default()).is_empty());
    }

    #[test]
    fn busy_disks_without_traced_files_are_listed_only_when_asked() {
        let disk = Disk { name: "vdz".into(), major: 254, minor: 16 };
        let mut window = DiskWindow::default();
        window.stats.insert(disk.clone(), StatDelta { flushes: 3, ..StatDelta::default() });
        window.stats.insert(Disk { name: "idle".into(), major: 7, minor: 0 }, StatDelta::default());
        let r = Recorder::new(true);
        assert!(build(&r, &window).is_empty());
        window.every_busy_disk = true;
        let devices = build(&r, &window);
        assert_eq!(devices.len(), 1, "the idle disk is left out");
        assert_eq!((devices[0].device.disk.as_str(), devices[0].device.stat.flushes), ("vdz", 3));
        let mut text = String::new();
        render(&mut text, &devices);
        assert!(text.contains("under no traced file"), "{text}");
    }

    #[test]
    fn calls_on_one_disk_are_merged_beside_its_flushes() {
        let Some(root_disk) = disk::disks_of_path(Path::new("/")).into_iter().next() else { return };
        let mut r = Recorder::new(true);
        r.call(SyncCall::Fdatasync, "/a/x", Some(1_000), false, 0);
        r.call(SyncCall::Fdatasync, "/b/y", Some(3_000), false, 0);
        let root_dev = {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata("/").unwrap().dev()
        };
        let mut window = DiskWindow::default();
        window.file_devs.insert("/a/x".into(), root_dev);
        window.file_devs.insert("/b/y".into(), root_dev);
        let mut req = RequestReport::default();
        req.flushes.count = 2;
        req.flushes.latency_ns.p99 = 900;
        window.requests.insert(root_disk.kernel_devt(), req);
        let devices = build(&r, &window);
        assert_eq!(devices[0].dirs, ["/a/", "/b/"]);
        assert_eq!(devices[0].calls[0].count, 2);
        assert_eq!(devices[0].calls[0].device_flush_p99_ns, 900);
        let mut text = String::new();
        render(&mut text, &devices);
        assert!(text.contains("fdatasync p99 3.0 µs (p50 1.0 µs), of which the device's flush p99 900 ns"), "{text}");
    }
}
