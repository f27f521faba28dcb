//! Golden tests for the verdicts of issue #33's three cases, each with its severity and wording:
//! a virtio disk that says it is rotational (its default) answering flushes in 48 µs at the device; the
//! lab `nvme-consumer` disk (Samsung 960 PRO, 1.4 ms flush) measured at a median 1.7 ms per commit; tmpfs.

use super::*;
use crate::core::environment::Transport;
use crate::core::schema::LatencyNs;
use crate::core::schema::device::DeviceAccounting;
use crate::core::schema::device::DeviceReport;
use crate::core::schema::device::{KindReport, RequestReport};

/// `run`'s 8 KiB overwrite + fdatasync case at `ops_per_s`, a median of `p50_ns` per commit.
fn fdatasync(ops_per_s: f64, p50_ns: u64) -> CaseResult {
    CaseResult {
        section: crate::core::suite::Section::OneWrite,
        method: SyncMethod::Fdatasync,
        label: "fdatasync".into(),
        durable: true,
        supported: true,
        write_size_bytes: 8192,
        writes_per_commit: 1,
        file_state: crate::core::suite::FileState::Overwrite,
        ops: 1000,
        ops_per_s,
        latency_ns: LatencyNs { p50: p50_ns, ..Default::default() },
        ..CaseResult::default()
    }
}

/// What the block tracepoints counted at `disk` for 1000 commits: a write and a flush each, the flushes
/// completing in a median `flush_p50_ns`.
fn traced(disk: &str, flush_p50_ns: u64) -> DeviceAccounting {
    let kind = |p50: u64| KindReport {
        count: 1000,
        latency_ns: LatencyNs { p50, ..Default::default() },
        ..Default::default()
    };
    let requests = RequestReport { flushes: kind(flush_p50_ns), writes: kind(30_000), ..Default::default() };
    let stat = crate::core::schema::device::StatDelta {
        writes: 1000,
        write_bytes: 8192 * 1000,
        flushes: 1000,
        ..Default::default()
    };
    let report = DeviceReport {
        disk: disk.into(),
        dev: "254:0".into(),
        write_cache: "write back".into(),
        stat,
        requests: Some(requests),
    };
    DeviceAccounting { commits: 1000, devices: vec![report], ..Default::default() }
}

fn disk(name: &str, transport: Transport, rotational: bool) -> Device {
    Device {
        name: name.into(),
        kind: DeviceKind::Disk,
        transport: Some(transport),
        rotational: Some(rotational),
        write_cache: Some("write back".into()),
        fua: Some(false),
        ..Device::default()
    }
}

fn kvm(devices: Vec<Device>) -> Environment {
    let mut env = Environment {
        dir: "/work".into(),
        fs_type: "ext4".into(),
        fs_magic: 0xEF53,
        devices,
        ..Environment::default()
    };
    env.virtualization = crate::core::environment::Virtualization {
        virtual_machine: true,
        hypervisor: Some("KVM".into()),
        ..Default::default()
    };
    env
}

/// The verdicts' codes with their severities, and the text `run` and `probe` print.
fn judged(env: &Environment, results: &[CaseResult]) -> (Vec<(Severity, String)>, String) {
    let verdicts = all(env, results);
    let codes = verdicts.iter().map(|v| (v.severity, v.code.to_string())).collect();
    (codes, crate::observe::probe::render::verdict_list(&verdicts))
}

#[test]
fn virtio_rotational_at_48_us_is_a_warning_about_the_host_not_a_critical_about_a_platter() {
    let case = CaseResult { device: Some(traced("vda", 48_000)), ..fdatasync(5234.0, 152_000) };
    let (codes, text) = judged(&kvm(vec![disk("vda", Transport::Virtio, true)]), std::slice::from_ref(&case));
    assert_eq!(
        codes,
        [
            (Severity::Warning, "virtual_machine".to_string()),
            (Severity::Info, "volatile_cache_without_fua".to_string())
        ],
        "{text}"
    );
    assert!(text.contains("virtio's default") && text.contains("48.0 µs per flush at vda"), "{text}");
    assert_golden!("syncbench__probe__rules__goldens__virtio_rotational_48us", text);
    // The same 48 µs from a disk that spins as a fact: one verdict for the fact, a WARNING naming its
    // evidence (the device-side latency) and its limit (timing cannot tell a protected cache from a lying one).
    let sata = kvm(vec![disk("sda", Transport::Ata, true)]);
    let case = CaseResult { device: Some(traced("sda", 48_000)), ..case };
    let (codes, text) = judged(&sata, &[case]);
    let flush_facts: Vec<&(Severity, String)> =
        codes.iter().filter(|(_, c)| c == "flush_faster_than_device" || c == "implausible_flush_rate").collect();
    assert_eq!(flush_facts, [&(Severity::Warning, "flush_faster_than_device".to_string())], "{text}");
    assert!(codes.iter().all(|(s, _)| *s < Severity::Critical), "{text}");
    assert!(text.contains("block tracepoints") && text.contains("Timing cannot tell which"), "{text}");
}

fn lab(profile: &str, flush_us: u64) -> Environment {
    let loop0 = Device { name: "loop0".into(), kind: DeviceKind::Loop, ..Device::default() };
    let lab = crate::core::environment::EmulatedDisk {
        profile: profile.into(),
        honesty: "honest".into(),
        flush_us,
        write_us: 20,
        rotational: false,
        mount: "/mnt/lab".into(),
        untorn_unit_bytes: None,
    };
    Environment {
        dir: "/mnt/lab/fs".into(),
        fs_type: "ext4".into(),
        fs_magic: 0xEF53,
        devices: vec![loop0],
        emulated_disk: Some(lab),
        ..Environment::default()
    }
}

#[test]
fn lab_nvme_consumer_at_1_7_ms_is_not_suspicious() {
    let (codes, text) = judged(&lab("nvme-consumer", 1400), &[fdatasync(573.0, 1_746_000)]);
    assert_eq!(codes, [(Severity::Info, "emulated_disk".to_string())], "{text}");
    assert_golden!("syncbench__probe__rules__goldens__lab_nvme_consumer_1_7ms", text);
    // The consumer range's edges, measured: 0.6 ms is still a consumer drive, 0.3 ms needs power-loss
    // protection; and a profile that models a protected drive is named whatever the machine measured.
    assert_eq!(judged(&lab("nvme-consumer", 1400), &[fdatasync(1600.0, 600_000)]).0.len(), 1);
    let (codes, text) = judged(&lab("nvme-consumer", 1400), &[fdatasync(3300.0, 300_000)]);
    assert_eq!(codes[0], (Severity::Warning, "fast_flush_needs_plp".to_string()), "{text}");
    assert!(text.contains("consumer SSDs without it take 0.5-3 ms"), "{text}");
    let (codes, _) = judged(&lab("nvme-plp", 20), &[fdatasync(300.0, 3_000_000)]);
    assert_eq!(codes[0], (Severity::Warning, "fast_flush_needs_plp".to_string()));
}

#[test]
fn tmpfs_is_critical_and_alone() {
    let env = Environment {
        dir: "/dev/shm".into(),
        fs_type: "tmpfs".into(),
        fs_magic: 0x0102_1994,
        ..Environment::default()
    };
    let (codes, text) = judged(&env, &[fdatasync(281_156.0, 2_500)]);
    assert_eq!(codes, [(Severity::Critical, "not_durable_memory_fs".to_string())], "{text}");
    assert_golden!("syncbench__probe__rules__goldens__tmpfs", text);
}
