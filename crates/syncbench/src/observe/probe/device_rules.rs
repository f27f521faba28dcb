//! Verdicts from device accounting: what the block layer saw, not what timing suggests.
//!
//! * `durable_commits_without_flush`: a durable method's commits wrote to a device with a volatile
//!   (write-back) cache and no flush reached it, and no FUA write either.
//! * `flush_faster_than_device`: the device completed its flushes faster than its class can (a platter
//!   under 1 ms, when spinning is a fact; any device under 10 µs with data to write). A WARNING: what
//!   answers the flushes may or may not keep the data.
//! * `fsync_costs_more_at_device`: fsync made the device do more (flushes, write requests, bytes) than
//!   fdatasync for the same commit, and why (the inode's timestamps through the journal).
//! * `dsync_write_became_write_plus_flush`: O_DSYNC direct writes became a write plus a flush each
//!   because the device offers no FUA.
//!
//! Counts that other I/O made unattributable give no verdict.

use crate::core::environment::Environment;
use crate::core::method::SyncMethod;
use crate::core::schema::CaseResult;
use crate::core::schema::device::DeviceAccounting;
use crate::core::verdict::{Severity, Verdict};

/// Fewer commits than this in a case say too little about what reaches the device.
const MIN_COMMITS: u64 = 3;

/// A flush that waits for a platter takes at least this long (half a rotation at 15 000 rpm is 2 ms).
const PLATTER_FLUSH_NS_MIN: u64 = 1_000_000;

/// A flush with data to make durable takes at least this long on any device class that writes it
/// somewhere non-volatile (a power-loss-protected NVMe drive answers in ~20 µs).
const ANY_FLUSH_NS_MIN: u64 = 10_000;

/// fsync's extra device work over fdatasync worth naming: this many more flushes or write requests per commit.
const EXTRA_PER_COMMIT_MIN: f64 = 0.1;

/// Every device-accounting verdict for `results`.
pub fn all(env: &Environment, results: &[CaseResult]) -> Vec<Verdict> {
    let mut out = Vec::new();
    out.extend(durable_commits_without_flush(results));
    out.extend(flush_faster_than_device(env, results));
    out.extend(fsync_costs_more_at_device(results));
    out.extend(dsync_write_became_write_plus_flush(env, results));
    out
}

/// A measured case's accounting, when it can be attributed to its commits.
fn attributable(r: &CaseResult) -> Option<&DeviceAccounting> {
    let d = r.device.as_ref()?;
    (r.supported && r.error.is_none() && d.commits >= MIN_COMMITS && d.unattributable.is_none()).then_some(d)
}

fn method(r: &CaseResult) -> Option<SyncMethod> {
    Some(r.method)
}

fn case_name(r: &CaseResult) -> String {
    format!("{} ({})", r.label.trim(), r.section)
}

/// Durable cases whose commits wrote to a write-back device and no flush nor FUA write reached it.
pub fn durable_commits_without_flush(results: &[CaseResult]) -> Vec<Verdict> {
    let found: Vec<(String, String)> = results
        .iter()
        .filter(|r| method(r).is_some_and(SyncMethod::durable))
        .filter_map(|r| {
            // The file system's own device: the one it sends its writes and flushes to (a layer below may
            // serve other users' flushes too).
            let d = attributable(r)?;
            let top = d.devices.first()?;
            // A FUA write is durable without a flush. Any traced layer counts: a bio-based layer (LVM,
            // dm) emits no request events of its own, so the FUA shows on the disk below it. Untraced,
            // /sys/block stat cannot tell a FUA write from a plain one, and an O_DIRECT write opened with
            // O_DSYNC/O_SYNC is exactly what a FUA device serves with no flush: no verdict for those.
            let traced = d.devices.iter().any(|x| x.requests.is_some());
            let fua: u64 = d.devices.iter().filter_map(|x| x.requests.as_ref()).map(|q| q.fua_writes).sum();
            let flags = r.method.open_flags();
            let maybe_fua = !traced && flags.direct && flags.sync != syncbench_sys::OpenSync::None;
            let unflushed = top.stat.write_bytes > 0 && top.stat.flushes == 0 && fua == 0 && !maybe_fua;
            (unflushed && super::sysfs::is_write_back(&top.write_cache)).then(|| (case_name(r), top.disk.clone()))
        })
        .collect();
    let Some((_, disk)) = found.first() else { return Vec::new() };
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    vec![Verdict {
        severity: Severity::Critical,
        code: crate::core::verdict::VerdictCode::DurableCommitsWithoutFlush.name().into(),
        message: format!(
            "{} commit(s) of durable methods wrote to {disk} and no flush reached it (nor a FUA write), though its cache is \
             write-back: {}. The data was acknowledged from a volatile cache.",
            found.len(),
            names.join(", ")
        ),
        advice:
            "Look for what drops the flush: a `nobarrier` mount, a device-mapper or virtual-disk layer with flushes \
                 off (cache=unsafe in QEMU), a RAID controller; fix it, or prove the cache survives power loss with \
                 `syncbench powercut`."
                .into(),
    }]
}

/// Flushes the device completed faster than its class allows (device-side latency from the tracepoints).
/// A WARNING at most: timing shows that something below answers flushes faster than the medium can
/// write, not whether what answers keeps the data. A spinning class only when it is a fact (a lab profile,
/// a disk that says so and is not virtio, whose "rotational" is a default).
pub fn flush_faster_than_device(env: &Environment, results: &[CaseResult]) -> Vec<Verdict> {
    let spins = crate::observe::probe::disks::spins(env);
    let floor_ns = if spins { PLATTER_FLUSH_NS_MIN } else { ANY_FLUSH_NS_MIN };
    let fastest = results
        .iter()
        .filter_map(|r| {
            let d = attributable(r)?;
            let (disk, q) = d.traced()?;
            // Only flushes that had data to write: the case's own writes reached the disk before them.
            (q.flushes.count >= MIN_COMMITS && q.writes.count > 0 && super::sysfs::is_write_back(&disk.write_cache))
                .then(|| (r, disk.disk.clone(), q.flushes.latency_ns.p50))
        })
        .filter(|(_, _, p50)| *p50 < floor_ns)
        .min_by_key(|(_, _, p50)| *p50);
    let Some((r, disk, p50)) = fastest else { return Vec::new() };
    let class = if spins {
        "a spinning disk can complete one: it waits for the platter"
    } else {
        "any device can complete one that writes its cache somewhere durable (a power-loss-protected NVMe drive takes ~20 µs)"
    };
    vec![Verdict {
        severity: Severity::Warning,
        code: crate::core::verdict::VerdictCode::FlushFasterThanDevice.name().into(),
        message: format!(
            "{disk} completed the flushes of {} in a median {:.1} µs at the device (block tracepoints, issue to \
             completion), faster than {class} ({} µs at least). So something below answers the flushes: a cache \
             that survives power loss (a battery-backed controller, a host's protected storage) or one that does \
             not. Timing cannot tell which.",
            case_name(r),
            p50 as f64 / 1000.0,
            floor_ns / 1000
        ),
        advice: "Find out what answers the flushes (controller, hypervisor cache mode, drive model), and verify with \
                 `syncbench powercut` before trusting the writes to survive a power cut."
            .into(),
    }]
}

/// fsync costing the device more than fdatasync for the same commit: more flushes, write requests, bytes.
pub fn fsync_costs_more_at_device(results: &[CaseResult]) -> Vec<Verdict> {
    let pair = results.iter().filter(|r| method(r) == Some(SyncMethod::Fdatasync)).find_map(|fdatasync| {
        let fsync = results.iter().find(|r| {
            method(r) == Some(SyncMethod::Fsync)
                && r.section == fdatasync.section
                && r.write_size_bytes == fdatasync.write_size_bytes
                && r.file_state == fdatasync.file_state
        })?;
        let (a, b) = (attributable(fdatasync)?, attributable(fsync)?);
        Some((fdatasync, a.lowest_per_commit()?, b.lowest_per_commit()?))
    });
    let Some((r, data, full)) = pair else { return Vec::new() };
    let (flushes, writes) = (full.flushes - data.flushes, full.writes - data.writes);
    if flushes < EXTRA_PER_COMMIT_MIN && writes < EXTRA_PER_COMMIT_MIN {
        return Vec::new();
    }
    vec![Verdict {
        severity: Severity::Info,
        code: crate::core::verdict::VerdictCode::FsyncCostsMoreAtDevice.name().into(),
        message: format!(
            "Per commit of {} {} writes ({}), fsync made the device do {:.2} flushes, {:.2} write requests and {:.1} KiB; \
             fdatasync {:.2}, {:.2} and {:.1} KiB. Why: every write changes the file's modification time; fdatasync \
             skips that (the data is readable without it), fsync commits it through the journal — a transaction of \
             journal blocks and a commit block written with a flush before it and, without FUA, a flush after it.",
            r.write_size_bytes,
            r.file_state,
            r.section,
            full.flushes,
            full.writes,
            full.bytes / 1024.0,
            data.flushes,
            data.writes,
            data.bytes / 1024.0
        ),
        advice: "Log writers that preallocate their files should sync with fdatasync (PostgreSQL wal_sync_method=fdatasync): \
                 the same durability for the data, less work for the device."
            .into(),
    }]
}

/// O_DSYNC direct writes that became a write plus a flush each, the device offering no FUA.
pub fn dsync_write_became_write_plus_flush(env: &Environment, results: &[CaseResult]) -> Vec<Verdict> {
    let device_fua = env.devices.iter().rev().find_map(|d| d.fua);
    let found = results.iter().find_map(|r| {
        let m = method(r)?;
        let dsync_direct = m.is_direct() && m.open_flags().sync == syncbench_sys::OpenSync::Dsync;
        let d = attributable(r).filter(|_| dsync_direct)?;
        let (disk, q) = d.traced()?;
        let flushes_per_commit = disk.stat.flushes as f64 / d.commits as f64;
        (q.fua_writes == 0 && flushes_per_commit >= 0.9).then(|| (r, disk.disk.clone(), flushes_per_commit))
    });
    let Some((r, disk, flushes)) = found else { return Vec::new() };
    let why = match device_fua {
        Some(false) => format!("{disk} does not offer FUA (queue/fua is 0)"),
        _ => format!("no write reached {disk} with FUA"),
    };
    vec![Verdict {
        severity: Severity::Info,
        code: crate::core::verdict::VerdictCode::DsyncWriteBecameWritePlusFlush.name().into(),
        message: format!(
            "{}: each O_DSYNC write became a write plus {flushes:.2} flush requests at the device, because {why}: \
             the block layer emulates Force Unit Access with a flush of the whole cache after the write.",
            case_name(r)
        ),
        advice:
            "On this device O_DSYNC costs what write+fdatasync costs; a device (or virtual disk) with FUA makes it \
                 one write. For QEMU/KVM virtio disks FUA is not exposed; NVMe and SAS drives usually have it."
                .into(),
    }]
}

#[cfg(test)]
mod tests;
