//! The verdict rules: pure functions of (environment, measurements), each returning at most a few
//! verdicts with what to do next. Every rule has a test that it fires and one that it stays silent.

use super::disks::{all_disks_rotational, disks, rotational_is_a_default};
use super::fs_type;
use crate::core::environment::{Device, DeviceKind, Environment};
use crate::core::method::SyncMethod;
use crate::core::schema::CaseResult;
use crate::core::verdict::{Severity, Verdict, VerdictCode};

/// A spinning disk completes at most one flush per rotation: 15 000 rpm is 250 per second. More than
/// that from a rotational device means a cache below absorbed the flushes.
pub const ROTATIONAL_FLUSHES_PER_S_MAX: f64 = 250.0;

/// Half a rotation at 15 000 rpm is 2 ms, the average wait for the sector to come round; a median flush
/// under 1 ms cannot have waited for a platter.
pub const ROTATIONAL_FLUSH_MEDIAN_NS_MIN: u64 = 1_000_000;

/// A flush faster than this (a log2 bucket wholly below it) did not wait for a platter.
pub const QUICK_FLUSH_NS_MAX: u64 = 524_288;

/// More than this share of quick flushes is implausible for a spinning disk.
pub const QUICK_FLUSH_FRACTION_MAX: f64 = 0.1;

/// A flush median under this is what a device with power-loss protection does (enterprise NVMe: 20-150 µs;
/// a RAID controller's battery-backed cache: ~40 µs); consumer SSDs without it take 0.5-3 ms (Samsung 960
/// PRO 1.4 ms, a consumer SATA SSD 3.0 ms: the lab's seed table, Percona 2018). Between the two a flush
/// is not suspicious.
pub const PLP_FLUSH_MEDIAN_NS_MAX: u64 = 500_000;

/// fsync this many times slower than fdatasync is worth a verdict (metadata journaling cost).
pub const FSYNC_SLOWDOWN_RATIO_MIN: f64 = 1.5;

/// How a user verifies durability for real.
const POWER_LOSS_TEST: &str = "verify with a power-loss test: `ssh HOST syncbench powercut write DIR > acks` \
     keeps the acknowledgements on another machine; cut the power at the wall while it writes, reboot, and \
     `syncbench powercut verify DIR --acks acks` checks that no acknowledged write is missing (docs/powercut.md)";

/// A rule: environment and measurements in, verdicts out.
pub type Rule = fn(&Environment, &[CaseResult]) -> Vec<Verdict>;

/// Every rule, most severe verdicts first (stable within a severity).
pub fn all(env: &Environment, results: &[CaseResult]) -> Vec<Verdict> {
    let rules: [Rule; 13] = [
        memory_fs,
        flushes_disabled,
        implausible_flush_rate,
        layered_storage,
        virtual_machine,
        volatile_cache_without_fua,
        sync_mount,
        data_journal,
        atomic_writes,
        fsync_slower_than_fdatasync,
        unknown_fs,
        device_unknown,
        emulated_disk,
    ];
    let mut found: Vec<Verdict> = rules.iter().flat_map(|rule| rule(env, results)).collect();
    // What reached the device (device accounting), when the cases have it.
    found.extend(crate::observe::probe::device_rules::all(env, results));
    one_verdict_per_fact(&mut found);
    found.sort_by_key(|v| std::cmp::Reverse(v.severity));
    found
}

/// Flushes faster than the device class allows is one fact however it was seen: the device-side latency
/// (`flush_faster_than_device`) is the stronger evidence and replaces what the commit timing said.
fn one_verdict_per_fact(found: &mut Vec<Verdict>) {
    if found.iter().any(|v| v.is(VerdictCode::FlushFasterThanDevice)) {
        found.retain(|v| !v.is(VerdictCode::ImplausibleFlushRate) && !v.is(VerdictCode::FastFlushNeedsPlp));
    }
}

fn verdict(severity: Severity, code: VerdictCode, message: String, advice: String) -> Vec<Verdict> {
    vec![Verdict::new(severity, code, message, advice)]
}

/// Successful fdatasync/fsync measurements.
fn flush_cases(results: &[CaseResult]) -> impl Iterator<Item = &CaseResult> {
    results
        .iter()
        .filter(|r| matches!(r.method, SyncMethod::Fdatasync | SyncMethod::Fsync))
        .filter(|r| r.supported && r.error.is_none() && r.ops > 0 && r.ops_per_s.is_finite())
}

/// Whether a flush measurement is impossible for a spinning disk: too many per second, or a median too
/// short. The median is the sturdier sign on a busy machine, where other I/O lowers the rate but cannot
/// make a platter turn faster; 0 means no latency was recorded.
fn too_fast_for_a_platter(r: &CaseResult) -> bool {
    let median_ns = r.latency_ns.p50;
    r.ops_per_s > ROTATIONAL_FLUSHES_PER_S_MAX
        || (median_ns > 0 && median_ns < ROTATIONAL_FLUSH_MEDIAN_NS_MIN)
        || fraction_of_quick_flushes(r) >= QUICK_FLUSH_FRACTION_MAX
}

/// Whether a solid-state flush measurement is faster than drives without power-loss protection go: a
/// median under [`PLP_FLUSH_MEDIAN_NS_MAX`], or with no latency recorded, a rate above its inverse.
fn too_fast_without_plp(r: &CaseResult) -> bool {
    match r.latency_ns.p50 {
        0 => r.ops_per_s > 1e9 / PLP_FLUSH_MEDIAN_NS_MAX as f64,
        median_ns => median_ns < PLP_FLUSH_MEDIAN_NS_MAX,
    }
}

/// The share of commits that finished in under 0.5 ms, from the log2 histogram (0 if there is none).
/// Even when other I/O queues in front of most flushes, the ones that find the queue empty show the
/// device's own speed.
fn fraction_of_quick_flushes(r: &CaseResult) -> f64 {
    let total: u64 = r.histogram_log2.iter().map(|b| b.count).sum();
    let quick: u64 =
        r.histogram_log2.iter().filter(|b| b.lower_ns.saturating_mul(2) <= QUICK_FLUSH_NS_MAX).map(|b| b.count).sum();
    if total == 0 { 0.0 } else { quick as f64 / total as f64 }
}

fn has_option(env: &Environment, opt: &str) -> bool {
    env.mount_options.iter().any(|o| o == opt)
}

/// tmpfs/ramfs: nothing survives a reboot, whatever the sync call says.
pub fn memory_fs(env: &Environment, _: &[CaseResult]) -> Vec<Verdict> {
    if !fs_type::is_memory_fs(&env.fs_type) {
        return Vec::new();
    }
    verdict(
        Severity::Critical,
        VerdictCode::NotDurableMemoryFs,
        format!("{} is on {}: it lives in memory, so nothing written there survives a reboot or power loss; sync calls return at once.", env.dir, env.fs_type),
        "Measure on the file system that will hold the database (e.g. `syncbench probe /var/lib/postgresql`); numbers from here say nothing about durable writes.".into(),
    )
}

/// `nobarrier` / `barrier=0`: the file system sends no cache flushes.
pub fn flushes_disabled(env: &Environment, _: &[CaseResult]) -> Vec<Verdict> {
    let Some(opt) = env.mount_options.iter().find(|o| matches!(o.as_str(), "nobarrier" | "barrier=0")) else {
        return Vec::new();
    };
    verdict(
        Severity::Critical,
        VerdictCode::FlushesDisabled,
        format!(
            "{} is mounted with `{opt}`: the file system never asks the device to flush its write cache, so fsync returns once data reaches a volatile cache.",
            env.mount_point.as_deref().unwrap_or(&env.dir)
        ),
        format!(
            "Remount without `{opt}` (barriers are the default) unless every device below has a power-loss-protected cache; then {POWER_LOSS_TEST}."
        ),
    )
}

/// A device that claims to spin but completes more flushes per second than any spinning disk can.
pub fn implausible_flush_rate(env: &Environment, results: &[CaseResult]) -> Vec<Verdict> {
    if !all_disks_rotational(env) {
        return Vec::new();
    }
    let Some(r) =
        flush_cases(results).filter(|r| too_fast_for_a_platter(r)).max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
    else {
        return Vec::new();
    };
    let names = disks(env).map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ");
    let quick_percent = 100.0 * fraction_of_quick_flushes(r);
    let median = match (r.latency_ns.p50, quick_percent) {
        (0, _) => String::new(),
        (p50, q) if q > 0.0 => format!(" (median {:.0} µs, {q:.0}% under 0.5 ms)", p50 as f64 / 1e3),
        (p50, _) => format!(" (median {:.0} µs)", p50 as f64 / 1e3),
    };
    let (absorber, severity) = flush_absorber(env);
    verdict(
        severity,
        VerdictCode::ImplausibleFlushRate,
        format!(
            "{:.0} {}/s{median} from {names}, which reports itself as rotational: a spinning disk completes at most one flush per rotation (≤ 120/s at 7200 rpm, ≤ {ROTATIONAL_FLUSHES_PER_S_MAX:.0}/s at 15k rpm) and waits about half a rotation for each (≥ 2 ms at 15k rpm), so a cache below absorbs the flushes — most likely {absorber}. Writes are durable only if that cache survives power loss.",
            r.ops_per_s, r.method
        ),
        format!(
            "Find out what protects that cache (hypervisor cache mode, RAID battery/flash module, drive model), and {POWER_LOSS_TEST}."
        ),
    )
}

/// The likeliest cache that swallowed the flushes, and how much that matters.
fn flush_absorber(env: &Environment) -> (String, Severity) {
    let v = &env.virtualization;
    if v.virtual_machine {
        let name = v.hypervisor.as_deref().unwrap_or("unknown hypervisor");
        return (format!("the hypervisor's cache ({name}) on the host"), Severity::Warning);
    }
    if let Some(raid) = disks(env).find_map(raid_controller) {
        // A RAID controller with a protected cache is the normal, safe way to get this result.
        return (format!("the RAID controller's cache ({raid})"), Severity::Info);
    }
    ("the drive's own volatile cache acknowledging flushes it has not done (a lying drive)".into(), Severity::Warning)
}

fn raid_controller(d: &Device) -> Option<String> {
    let vendor = d.vendor.as_deref().unwrap_or("");
    let model = d.model.as_deref().unwrap_or("");
    let both = format!("{vendor} {model}").to_ascii_uppercase();
    let markers = ["LSI", "AVAGO", "MEGARAID", "PERC", "ADAPTEC", "SMART ARRAY", "LOGICAL VOLUME", "HPE", "AACRAID"];
    markers.iter().any(|m| both.contains(m)).then(|| format!("{vendor} {model}").trim().to_string())
}

/// A virtual machine: the host's cache mode decides what a guest's flush means. A virtio disk's
/// "rotational" is a default, so the flush speed measured here is named as evidence, not judged against a
/// platter.
pub fn virtual_machine(env: &Environment, results: &[CaseResult]) -> Vec<Verdict> {
    let v = &env.virtualization;
    if !v.virtual_machine {
        return Vec::new();
    }
    let name = v.hypervisor.as_deref().unwrap_or("hypervisor not named");
    let defaulted: Vec<&str> = disks(env)
        .filter(|d| d.rotational == Some(true) && rotational_is_a_default(d))
        .map(|d| d.name.as_str())
        .collect();
    let rotational = match defaulted.as_slice() {
        [] => String::new(),
        names => format!(
            " {} {} itself as rotational: that is virtio's default (the host does not tell the guest what the disk is stored on), not a fact about a platter, so flush times are not judged against one.",
            names.join(", "),
            if names.len() > 1 { "report" } else { "reports" }
        ),
    };
    verdict(
        Severity::Warning,
        VerdictCode::VirtualMachine,
        format!(
            "This is a virtual machine ({name}): a flush from the guest is durable only if the host passes it to stable storage (e.g. QEMU cache=none, directsync or writethrough honour flushes; cache=unsafe drops them).{rotational}{}",
            vm_flush_evidence(results)
        ),
        format!(
            "Ask the host's administrator (or your cloud's documentation) how this disk is cached on the host, and {POWER_LOSS_TEST} — cutting the host's power, not just the guest's."
        ),
    )
}

/// The fastest flush measured in a VM and what it can and cannot say: " Measured: …" or nothing.
fn vm_flush_evidence(results: &[CaseResult]) -> String {
    let Some(r) = flush_cases(results).max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s)) else {
        return String::new();
    };
    let mut seen = format!("{:.0} {}/s", r.ops_per_s, r.method);
    if r.latency_ns.p50 > 0 {
        seen.push_str(&format!(", a median {:.0} µs per commit", r.latency_ns.p50 as f64 / 1e3));
    }
    let device = r.device.as_ref().and_then(|d| d.traced()).filter(|(_, q)| q.flushes.count > 0);
    if let Some((disk, q)) = device {
        seen.push_str(&format!(", {:.1} µs per flush at {}", q.flushes.latency_ns.p50 as f64 / 1e3, disk.disk));
    }
    let fast =
        too_fast_without_plp(r) || device.is_some_and(|(_, q)| q.flushes.latency_ns.p50 < PLP_FLUSH_MEDIAN_NS_MAX);
    let both = if fast {
        "A host's write cache and a power-loss-protected NVMe drive on the host both answer that fast, and timing"
    } else {
        "Timing"
    };
    format!(" Measured here: {seen}. {both} cannot tell a cache that survives power loss from one that does not.")
}

/// A volatile write cache without Force Unit Access: each O_DSYNC write turns into write + full flush.
pub fn volatile_cache_without_fua(env: &Environment, _: &[CaseResult]) -> Vec<Verdict> {
    let names: Vec<&str> = disks(env)
        .filter(|d| d.write_cache.as_deref().is_some_and(super::sysfs::is_write_back) && d.fua == Some(false))
        .map(|d| d.name.as_str())
        .collect();
    if names.is_empty() {
        return Vec::new();
    }
    verdict(
        Severity::Info,
        VerdictCode::VolatileCacheWithoutFua,
        format!("{} {} a volatile write cache (write back) and no FUA: every O_DSYNC/O_SYNC write costs a full cache flush, so several writes per commit are cheaper with one fdatasync at the end.", names.join(", "), if names.len() > 1 { "have" } else { "has" }),
        "Prefer write + fdatasync over open_datasync for multi-write commits; `syncbench run` shows the difference on this device.".into(),
    )
}

/// The `sync` mount option: every write is synchronous, whatever the application asks for.
pub fn sync_mount(env: &Environment, _: &[CaseResult]) -> Vec<Verdict> {
    if !has_option(env, "sync") {
        return Vec::new();
    }
    verdict(
        Severity::Info,
        VerdictCode::SyncMount,
        "The file system is mounted with `sync`: every write waits for the device, so buffered writes cost as much as O_SYNC ones.".into(),
        "Remove `sync` from the mount options and let the database sync what it needs; keep it only if applications here cannot sync for themselves.".into(),
    )
}

/// ext4 `data=journal`: all data goes through the journal, and O_DIRECT is not available.
pub fn data_journal(env: &Environment, _: &[CaseResult]) -> Vec<Verdict> {
    if !has_option(env, "data=journal") {
        return Vec::new();
    }
    verdict(
        Severity::Info,
        VerdictCode::DataJournal,
        "Mounted with data=journal: every data block is written twice (journal, then home), and O_DIRECT is unavailable (ext4 falls back to buffered I/O), so `+direct` methods cannot be measured as such.".into(),
        "Expect journal-bound sync rates; for a database, data=ordered (the default) with the database's own WAL is the usual choice.".into(),
    )
}

/// Untorn (atomic) writes: torn-page protection could move from software to hardware.
pub fn atomic_writes(env: &Environment, _: &[CaseResult]) -> Vec<Verdict> {
    if let (Some(min), Some(max)) = (env.atomic_write_unit_min_bytes, env.atomic_write_unit_max_bytes) {
        return verdict(
            Severity::Info,
            VerdictCode::AtomicWritesAvailable,
            format!("Files in {} support untorn writes (RWF_ATOMIC) from {min} to {max} bytes.", env.dir),
            format!(
                "A database whose page size is a power of two between {min} and {max} bytes, written with RWF_ATOMIC and O_DIRECT, no longer needs torn-page protection: PostgreSQL full_page_writes or InnoDB doublewrite could be turned off — `syncbench pages --mode atomic` shows the gain."
            ),
        );
    }
    // Every device writes one logical block untorn; only larger units change what a database can drop.
    let beyond_one_block = |d: &&Device| {
        d.atomic_write_unit_max_bytes.is_some_and(|max| max > d.logical_block_size_bytes.unwrap_or(512).max(512))
    };
    let Some(d) = disks(env).find(beyond_one_block) else {
        return Vec::new();
    };
    verdict(
        Severity::Info,
        VerdictCode::AtomicWritesDeviceOnly,
        format!("{} supports untorn writes up to {} bytes, but the file system does not offer them for files in {}.", d.name, d.atomic_write_unit_max_bytes.unwrap_or(0), env.dir),
        "Untorn writes through a file system need Linux ≥ 6.11 and a supporting file system (xfs or ext4, formatted for it); until then keep full_page_writes / doublewrite on.".into(),
    )
}

/// fsync much slower than fdatasync on the same workload: the metadata journal costs extra flushes.
pub fn fsync_slower_than_fdatasync(_: &Environment, results: &[CaseResult]) -> Vec<Verdict> {
    let ok = |r: &&CaseResult| {
        r.section == crate::core::suite::Section::OneWrite && r.supported && r.error.is_none() && r.ops > 0
    };
    let found = results.iter().filter(ok).filter(|r| r.method == crate::core::method::SyncMethod::Fdatasync).find_map(
        |fdatasync| {
            let fsync = results.iter().filter(ok).find(|r| {
                r.method == crate::core::method::SyncMethod::Fsync
                    && r.write_size_bytes == fdatasync.write_size_bytes
                    && r.file_state == fdatasync.file_state
            })?;
            let ratio = fdatasync.ops_per_s / fsync.ops_per_s;
            (ratio >= FSYNC_SLOWDOWN_RATIO_MIN).then_some((fdatasync, fsync, ratio))
        },
    );
    let Some((fdatasync, fsync, ratio)) = found else { return Vec::new() };
    verdict(
        Severity::Info,
        VerdictCode::FsyncSlowerThanFdatasync,
        format!("fsync ({:.0}/s) is {ratio:.1}× slower than fdatasync ({:.0}/s) for {} B {} writes: fsync also commits metadata (timestamps) through the journal.", fsync.ops_per_s, fdatasync.ops_per_s, fdatasync.write_size_bytes, fdatasync.file_state),
        "Use fdatasync (PostgreSQL wal_sync_method=fdatasync, InnoDB innodb_flush_method=O_DIRECT or fsync on data files) on pre-allocated, zero-filled log files; it is just as durable for the data.".into(),
    )
}

/// Loop devices, overlay, FUSE and network file systems: durability is decided by the layer below.
pub fn layered_storage(env: &Environment, _: &[CaseResult]) -> Vec<Verdict> {
    let mut found = Vec::new();
    // A lab disk's loop device is the emulated disk itself: the emulated_disk verdict describes it.
    if let Some(b) = env.loop_backing.as_ref().filter(|_| env.emulated_disk.is_none()) {
        let dev =
            env.devices.iter().find(|d| d.kind == DeviceKind::Loop).map(|d| d.name.as_str()).unwrap_or("a loop device");
        let on = b.mount_point.as_deref().map(|m| format!(" mounted on {m}")).unwrap_or_default();
        let dio = match b.direct_io {
            Some(true) => "with direct I/O",
            Some(false) => "through the page cache (dio=0)",
            None => "(direct I/O unknown)",
        };
        found.extend(verdict(
            Severity::Warning,
            VerdictCode::LayeredLoop,
            format!("{} is on {dev}, backed by the file {} on {}{on}, {dio}: a flush reaches stable storage only if the backing file system and its device honour it.", env.dir, b.file, b.fs_type),
            format!("Probe the layer below too: `syncbench probe {}`; measure there for production numbers.", parent_dir(&b.file)),
        ));
    }
    if env.fs_type == "overlay" {
        let below = match (&env.overlay_upper_dir, &env.overlay_upper_fs_type) {
            (Some(dir), Some(fs)) => format!("the upper directory {dir} on {fs}"),
            (Some(dir), None) => format!("the upper directory {dir} (file system unknown)"),
            _ => "its upper directory (not found in the mount options)".into(),
        };
        found.extend(verdict(
            Severity::Warning,
            VerdictCode::LayeredOverlay,
            format!("{} is on overlayfs: writes go to {below}, and fsync is passed down to it.", env.dir),
            "Put database files on a volume (bind mount) instead of the container's overlay, and probe that volume."
                .into(),
        ));
    }
    if fs_type::is_fuse(&env.fs_type) {
        let daemon = env.mount_source.as_deref().unwrap_or("unknown");
        found.extend(verdict(
            Severity::Warning,
            VerdictCode::LayeredFuse,
            format!("{} is on a FUSE file system ({}, source {daemon}): the user-space daemon decides whether fsync reaches stable storage, and some ignore it.", env.dir, env.fs_type),
            format!("Check the daemon's documentation for fsync handling, probe the storage it writes to, and {POWER_LOSS_TEST}."),
        ));
    }
    if fs_type::is_network_fs(&env.fs_type) {
        let server = env.mount_source.as_deref().unwrap_or("unknown");
        found.extend(verdict(
            Severity::Warning,
            VerdictCode::LayeredNetwork,
            format!("{} is on a network file system ({}, {server}): fsync is durable only if the server commits to stable storage before replying (NFS: exported with `sync`, not `async`).", env.dir, env.fs_type),
            "Check the server's export options and its own storage; latency here includes the network round trip.".into(),
        ));
    }
    found
}

fn parent_dir(file: &str) -> String {
    std::path::Path::new(file).parent().map(|p| p.display().to_string()).unwrap_or_else(|| file.to_string())
}

/// A `syncbench lab` disk: say so and which profile, then whether its flush speed is plausible — for a
/// spinning profile against the platter's limits, for a fast one that only power-loss protection makes a
/// fast flush honest and that a power cut is the proof.
pub fn emulated_disk(env: &Environment, results: &[CaseResult]) -> Vec<Verdict> {
    let Some(d) = &env.emulated_disk else { return Vec::new() };
    let cut = format!("`syncbench lab cut {}`", d.mount);
    let mut found = verdict(
        Severity::Info,
        VerdictCode::EmulatedDisk,
        format!(
            "{} is on a syncbench lab disk, profile {} ({}, flush {} µs, write {} µs): its timing and honesty are the lab's device model, not hardware.",
            env.dir, d.profile, d.honesty, d.flush_us, d.write_us
        ),
        format!(
            "Cut its power with {cut}, or many times with `syncbench powercut lab --profile {}`, to see what such a disk loses; `syncbench lab profiles` lists the numbers and their sources.",
            d.profile
        ),
    );
    let fastest = flush_cases(results).max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    let measured = fastest.map(|r| {
        let median = if r.latency_ns.p50 > 0 {
            format!(", median {:.0} µs", r.latency_ns.p50 as f64 / 1e3)
        } else {
            String::new()
        };
        format!("{:.0} {}/s{median}", r.ops_per_s, r.method)
    });
    let what = measured.clone().unwrap_or_else(|| format!("a modelled flush of {} µs", d.flush_us));
    // The profile's own flush cost decides what the disk is; a measurement can only add that it is faster
    // than it should be (a loaded machine makes fast flushes look slow, never the reverse).
    // The bar is the class's: a platter's for a spinning profile, power-loss protection's for a solid-state
    // one (a consumer NVMe drive's 1.4 ms flush is neither a platter's nor suspicious).
    let (bar_ns, too_fast): (u64, fn(&CaseResult) -> bool) = if d.rotational {
        (ROTATIONAL_FLUSH_MEDIAN_NS_MIN, too_fast_for_a_platter)
    } else {
        (PLP_FLUSH_MEDIAN_NS_MAX, too_fast_without_plp)
    };
    let fast = d.flush_us * 1000 < bar_ns || fastest.is_some_and(too_fast);
    found.extend(match (d.rotational, fast) {
        (true, false) => verdict(
            Severity::Info,
            VerdictCode::FlushRatePlausible,
            format!("{what} on the emulated {}: plausible for a rotating disk, which completes at most one flush per rotation (≤ 120/s at 7200 rpm) and waits for the platter each time.", d.profile),
            "Nothing to fix: this is what honest durability costs on a spinning disk. Group commit (several commits per flush, see `syncbench commit`) is how a database goes faster.".into(),
        ),
        (true, true) => verdict(
            Severity::Warning,
            VerdictCode::ImplausibleFlushRate,
            format!("{what} on the emulated {}, a spinning disk: faster than any platter turns, so flushes are not reaching it (this lab disk is {}).", d.profile, d.honesty),
            format!("A power-cut test is the proof: {cut}."),
        ),
        (false, true) => verdict(
            Severity::Warning,
            VerdictCode::FastFlushNeedsPlp,
            format!("{what} on the emulated {}: a median flush under {} µs is what drives with power-loss protection do (capacitors, or a battery-backed controller cache, make the device's cache durable: enterprise NVMe 20-150 µs); consumer SSDs without it take 0.5-3 ms. A drive without it that is this fast acknowledges flushes it has not done, and timing cannot tell the two apart (this lab disk is {}).", d.profile, PLP_FLUSH_MEDIAN_NS_MAX / 1000, d.honesty),
            format!("A power-cut test is the proof: {cut} here; on real hardware, {POWER_LOSS_TEST}."),
        ),
        (false, false) => Vec::new(),
    });
    found
}

/// A file-system magic syncbench does not know: the rules about it may be missing.
pub fn unknown_fs(env: &Environment, _: &[CaseResult]) -> Vec<Verdict> {
    if fs_type::name_of_magic(env.fs_magic).is_some() {
        return Vec::new();
    }
    verdict(
        Severity::Info,
        VerdictCode::UnknownFs,
        format!(
            "syncbench does not know this file system (magic {:#x}, mount type {}): rules about it are skipped.",
            env.fs_magic,
            env.mount_fs_type.as_deref().unwrap_or("unknown")
        ),
        format!("Check how it implements fsync before trusting the numbers, and {POWER_LOSS_TEST}."),
    )
}

/// A local file system whose block device could not be found: device rules could not run.
pub fn device_unknown(env: &Environment, _: &[CaseResult]) -> Vec<Verdict> {
    let layered = fs_type::is_memory_fs(&env.fs_type)
        || fs_type::is_network_fs(&env.fs_type)
        || fs_type::is_fuse(&env.fs_type)
        || env.fs_type == "overlay";
    if layered || !env.devices.is_empty() {
        return Vec::new();
    }
    verdict(
        Severity::Info,
        VerdictCode::DeviceUnknown,
        format!("No block device was found under {} ({}): write cache, FUA and rotational checks were skipped.", env.dir, env.fs_type),
        "Run as a user that can read /sys, or look the device up by hand (`lsblk -o NAME,ROTA,DISC-GRAN,MODEL`, /sys/block/*/queue/write_cache).".into(),
    )
}

#[cfg(test)]
mod goldens;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::environment::{LoopBacking, Virtualization};
    use crate::core::schema::Log2Bucket;

    fn disk(rotational: bool, write_cache: &str, fua: bool) -> Device {
        Device {
            name: "sda".into(),
            kind: DeviceKind::Disk,
            rotational: Some(rotational),
            write_cache: Some(write_cache.into()),
            fua: Some(fua),
            ..Device::default()
        }
    }

    fn env_on(fs_type: &str, magic: u64, devices: Vec<Device>) -> Environment {
        Environment { dir: "/data".into(), fs_type: fs_type.into(), fs_magic: magic, devices, ..Environment::default() }
    }

    fn ext4(devices: Vec<Device>) -> Environment {
        env_on("ext4", 0xEF53, devices)
    }

    fn case(method: &str, ops_per_s: f64) -> CaseResult {
        CaseResult {
            section: crate::core::suite::Section::OneWrite,
            method: method.parse().unwrap(),
            durable: true,
            supported: true,
            write_size_bytes: 8192,
            writes_per_commit: 1,
            file_state: crate::core::suite::FileState::Overwrite,
            ops: 100,
            ops_per_s,
            ..CaseResult::default()
        }
    }

    fn codes(
        rule: fn(&Environment, &[CaseResult]) -> Vec<Verdict>,
        env: &Environment,
        r: &[CaseResult],
    ) -> Vec<String> {
        rule(env, r).into_iter().map(|v| v.code.to_string()).collect()
    }

    #[test]
    fn memory_fs_fires_on_tmpfs_only() {
        assert_eq!(codes(memory_fs, &env_on("tmpfs", 0x0102_1994, vec![]), &[]), ["not_durable_memory_fs"]);
        assert!(codes(memory_fs, &ext4(vec![]), &[]).is_empty());
    }

    #[test]
    fn flushes_disabled_fires_on_nobarrier_and_barrier0() {
        for opt in ["nobarrier", "barrier=0"] {
            let env = Environment { mount_options: vec!["rw".into(), opt.into()], ..ext4(vec![]) };
            assert_eq!(codes(flushes_disabled, &env, &[]), ["flushes_disabled"]);
        }
        let env = Environment { mount_options: vec!["rw".into(), "barrier=1".into()], ..ext4(vec![]) };
        assert!(codes(flushes_disabled, &env, &[]).is_empty());
    }

    #[test]
    fn implausible_flush_rate_needs_a_rotational_disk_and_a_fast_flush() {
        let hdd = ext4(vec![disk(true, "write back", false)]);
        assert_eq!(codes(implausible_flush_rate, &hdd, &[case("fdatasync", 3000.0)]), ["implausible_flush_rate"]);
        assert!(codes(implausible_flush_rate, &hdd, &[case("fdatasync", 110.0)]).is_empty());
        assert!(codes(implausible_flush_rate, &hdd, &[]).is_empty());
        let ssd = ext4(vec![disk(false, "write back", true)]);
        assert!(codes(implausible_flush_rate, &ssd, &[case("fdatasync", 3000.0)]).is_empty());
        // A failed case is never a fast result.
        let failed = CaseResult { error: Some("EIO".into()), ..case("fdatasync", 1e6) };
        assert!(codes(implausible_flush_rate, &hdd, &[failed]).is_empty());
        // Non-flush methods do not count.
        assert!(codes(implausible_flush_rate, &hdd, &[case("write", 1e6)]).is_empty());
        // On a busy machine the rate drops, but a 150 µs median flush still cannot come from a platter.
        let busy = |p50: u64| CaseResult {
            latency_ns: crate::core::schema::LatencyNs { p50, ..Default::default() },
            ..case("fdatasync", 180.0)
        };
        assert_eq!(codes(implausible_flush_rate, &hdd, &[busy(150_000)]), ["implausible_flush_rate"]);
        assert!(codes(implausible_flush_rate, &hdd, &[busy(5_500_000)]).is_empty());
        // Even with a slow median, a fifth of flushes in 64–128 µs did not wait for a platter.
        let buckets = vec![Log2Bucket { lower_ns: 65_536, count: 20 }, Log2Bucket { lower_ns: 4_194_304, count: 80 }];
        let mixed = CaseResult { histogram_log2: buckets, ..busy(5_500_000) };
        let v = implausible_flush_rate(&hdd, &[mixed]);
        assert!(v[0].message.contains("20% under 0.5 ms"), "{}", v[0].message);
        let honest = vec![Log2Bucket { lower_ns: 262_144, count: 5 }, Log2Bucket { lower_ns: 4_194_304, count: 95 }];
        assert!(
            codes(implausible_flush_rate, &hdd, &[CaseResult { histogram_log2: honest, ..busy(5_500_000) }]).is_empty()
        );
    }

    #[test]
    fn implausible_flush_rate_names_the_absorber() {
        let mut vm = ext4(vec![disk(true, "write back", false)]);
        vm.virtualization =
            Virtualization { virtual_machine: true, hypervisor: Some("KVM".into()), ..Default::default() };
        let v = &implausible_flush_rate(&vm, &[case("fdatasync", 5000.0)])[0];
        assert!(v.message.contains("hypervisor") && v.message.contains("KVM"), "{}", v.message);
        assert_eq!(v.severity, Severity::Warning);
        let raid = Device {
            vendor: Some("AVAGO".into()),
            model: Some("MR9361-8i".into()),
            ..disk(true, "write through", false)
        };
        let v = &implausible_flush_rate(&ext4(vec![raid]), &[case("fsync", 4000.0)])[0];
        assert!(v.message.contains("RAID controller") && v.message.contains("AVAGO"), "{}", v.message);
        assert_eq!(v.severity, Severity::Info);
        let lying =
            &implausible_flush_rate(&ext4(vec![disk(true, "write back", false)]), &[case("fdatasync", 900.0)])[0];
        assert!(lying.message.contains("lying drive"), "{}", lying.message);
    }

    #[test]
    fn virtual_machine_fires_only_in_a_vm() {
        let mut env = ext4(vec![]);
        assert!(codes(virtual_machine, &env, &[]).is_empty());
        env.virtualization.virtual_machine = true;
        assert_eq!(codes(virtual_machine, &env, &[]), ["virtual_machine"]);
    }

    #[test]
    fn volatile_cache_without_fua_needs_write_back_and_no_fua() {
        assert_eq!(
            codes(volatile_cache_without_fua, &ext4(vec![disk(false, "write back", false)]), &[]),
            ["volatile_cache_without_fua"]
        );
        assert!(codes(volatile_cache_without_fua, &ext4(vec![disk(false, "write back", true)]), &[]).is_empty());
        assert!(codes(volatile_cache_without_fua, &ext4(vec![disk(false, "write through", false)]), &[]).is_empty());
        let unknown = Device { fua: None, ..disk(false, "write back", false) };
        assert!(codes(volatile_cache_without_fua, &ext4(vec![unknown]), &[]).is_empty());
    }

    #[test]
    fn sync_mount_and_data_journal_follow_options() {
        let env = Environment { mount_options: vec!["sync".into(), "data=journal".into()], ..ext4(vec![]) };
        assert_eq!(codes(sync_mount, &env, &[]), ["sync_mount"]);
        assert_eq!(codes(data_journal, &env, &[]), ["data_journal"]);
        let plain = Environment { mount_options: vec!["rw".into(), "data=ordered".into()], ..ext4(vec![]) };
        assert!(codes(sync_mount, &plain, &[]).is_empty());
        assert!(codes(data_journal, &plain, &[]).is_empty());
    }

    #[test]
    fn atomic_writes_from_statx_or_device() {
        let env = Environment {
            atomic_write_unit_min_bytes: Some(4096),
            atomic_write_unit_max_bytes: Some(16384),
            ..ext4(vec![])
        };
        let v = atomic_writes(&env, &[]);
        assert_eq!(v[0].code, "atomic_writes_available");
        assert!(v[0].message.contains("4096 to 16384"));
        let dev = Device { atomic_write_unit_max_bytes: Some(65536), ..disk(false, "write back", true) };
        assert_eq!(codes(atomic_writes, &ext4(vec![dev]), &[]), ["atomic_writes_device_only"]);
        let none = Device { atomic_write_unit_max_bytes: Some(0), ..disk(false, "write back", true) };
        assert!(codes(atomic_writes, &ext4(vec![none]), &[]).is_empty());
        let one_block = Device {
            atomic_write_unit_max_bytes: Some(4096),
            logical_block_size_bytes: Some(4096),
            ..disk(false, "write back", true)
        };
        assert!(codes(atomic_writes, &ext4(vec![one_block]), &[]).is_empty());
    }

    #[test]
    fn fsync_slower_than_fdatasync_compares_like_with_like() {
        let env = ext4(vec![]);
        let slow = [case("fdatasync", 900.0), case("fsync", 300.0)];
        assert_eq!(codes(fsync_slower_than_fdatasync, &env, &slow), ["fsync_slower_than_fdatasync"]);
        let close = [case("fdatasync", 900.0), case("fsync", 800.0)];
        assert!(codes(fsync_slower_than_fdatasync, &env, &close).is_empty());
        let other_size = CaseResult { write_size_bytes: 4096, ..case("fsync", 300.0) };
        assert!(codes(fsync_slower_than_fdatasync, &env, &[case("fdatasync", 900.0), other_size]).is_empty());
        assert!(codes(fsync_slower_than_fdatasync, &env, &[case("fdatasync", 900.0)]).is_empty());
    }

    #[test]
    fn layered_storage_names_the_layer_below() {
        let mut env = env_on(
            "xfs",
            0x5846_5342,
            vec![Device { name: "loop0".into(), kind: DeviceKind::Loop, ..Device::default() }],
        );
        assert!(codes(layered_storage, &env, &[]).is_empty());
        env.loop_backing = Some(LoopBacking {
            file: "/var/tmp/disk.img".into(),
            fs_type: "ext4".into(),
            direct_io: Some(false),
            mount_point: Some("/".into()),
            mount_source: Some("/dev/vda".into()),
        });
        let v = &layered_storage(&env, &[])[0];
        assert_eq!(v.code, "layered_loop");
        assert!(v.message.contains("loop0") && v.message.contains("/var/tmp/disk.img on ext4"), "{}", v.message);
        let overlay = Environment {
            overlay_upper_dir: Some("/var/lib/docker/overlay2/x/diff".into()),
            overlay_upper_fs_type: Some("ext4".into()),
            ..env_on("overlay", 0x794C_7630, vec![])
        };
        let v = &layered_storage(&overlay, &[])[0];
        assert!(v.message.contains("/var/lib/docker/overlay2/x/diff on ext4"), "{}", v.message);
        assert_eq!(codes(layered_storage, &env_on("fuse.sshfs", 0x6573_5546, vec![]), &[]), ["layered_fuse"]);
        assert_eq!(codes(layered_storage, &env_on("nfs4", 0x6969, vec![]), &[]), ["layered_network"]);
    }

    #[test]
    fn unknown_fs_and_device_unknown() {
        let weird = env_on("unknown", 0x1234, vec![]);
        assert_eq!(codes(unknown_fs, &weird, &[]), ["unknown_fs"]);
        assert_eq!(codes(device_unknown, &weird, &[]), ["device_unknown"]);
        let good = ext4(vec![disk(false, "write back", true)]);
        assert!(codes(unknown_fs, &good, &[]).is_empty());
        assert!(codes(device_unknown, &good, &[]).is_empty());
        assert!(codes(device_unknown, &env_on("tmpfs", 0x0102_1994, vec![]), &[]).is_empty());
    }

    #[test]
    fn all_puts_critical_first() {
        let mut env =
            Environment { mount_options: vec!["nobarrier".into()], ..ext4(vec![disk(true, "write back", false)]) };
        env.virtualization.virtual_machine = true;
        let v = all(&env, &[case("fdatasync", 5000.0)]);
        assert_eq!(v[0].severity, Severity::Critical);
        assert!(v.windows(2).all(|w| w[0].severity >= w[1].severity));
    }

    fn lab_disk(profile: &str, flush_us: u64, rotational: bool) -> Environment {
        let disk = crate::core::environment::EmulatedDisk {
            profile: profile.into(),
            honesty: "honest".into(),
            flush_us,
            write_us: 20,
            rotational,
            mount: "/mnt/lab".into(),
            untorn_unit_bytes: None,
        };
        Environment { emulated_disk: Some(disk), ..ext4(vec![]) }
    }

    #[test]
    fn emulated_disk_is_named_and_silent_on_real_disks() {
        assert!(codes(emulated_disk, &ext4(vec![disk(true, "write back", false)]), &[]).is_empty());
        let v = emulated_disk(&lab_disk("hdd-7200", 8500, true), &[]);
        assert_eq!(v[0].code, "emulated_disk");
        let mut on_loop = lab_disk("hdd-7200", 8500, true);
        on_loop.loop_backing = Some(LoopBacking { file: "/tmp/x/fuse/image".into(), ..LoopBacking::default() });
        assert!(codes(layered_storage, &on_loop, &[]).is_empty(), "the lab's loop device is not a layer to probe");
        assert!(v[0].message.contains("hdd-7200") && v[0].advice.contains("syncbench lab cut /mnt/lab"));
    }

    #[test]
    fn emulated_hdd_flushes_are_plausible_unless_faster_than_a_platter() {
        let hdd = lab_disk("hdd-7200", 8500, true);
        let slow = CaseResult {
            latency_ns: crate::core::schema::LatencyNs { p50: 8_600_000, ..Default::default() },
            ..case("fdatasync", 110.0)
        };
        assert_eq!(codes(emulated_disk, &hdd, &[slow]), ["emulated_disk", "flush_rate_plausible"]);
        assert_eq!(codes(emulated_disk, &hdd, &[]), ["emulated_disk", "flush_rate_plausible"]);
        assert_eq!(
            codes(emulated_disk, &hdd, &[case("fdatasync", 3000.0)]),
            ["emulated_disk", "implausible_flush_rate"]
        );
    }

    #[test]
    fn fast_emulated_flushes_need_power_loss_protection_and_a_cut_proves_it() {
        let ssd = lab_disk("ssd-200us", 200, false);
        let v = emulated_disk(&ssd, &[case("fdatasync", 2500.0)]);
        assert_eq!(v.iter().map(|v| v.code.as_str()).collect::<Vec<_>>(), ["emulated_disk", "fast_flush_needs_plp"]);
        assert!(v[1].message.contains("power-loss protection") && v[1].advice.contains("power-cut test is the proof"));
        assert_eq!(codes(emulated_disk, &ssd, &[]), ["emulated_disk", "fast_flush_needs_plp"]);
        // Slowed down by a loaded machine, it is still the fast profile.
        let slowed = CaseResult {
            latency_ns: crate::core::schema::LatencyNs { p50: 3_000_000, ..Default::default() },
            ..case("fdatasync", 200.0)
        };
        assert_eq!(codes(emulated_disk, &ssd, &[slowed]), ["emulated_disk", "fast_flush_needs_plp"]);
        // A consumer SSD's 3 ms flush is neither a platter's nor suspiciously fast.
        assert_eq!(codes(emulated_disk, &lab_disk("sata-ssd-consumer", 3000, false), &[]), ["emulated_disk"]);
    }
}
