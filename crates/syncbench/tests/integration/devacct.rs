//! Device accounting checked against a device whose truth is known: on a `syncbench lab` disk (zero
//! profile, ext4), the write requests, flushes and bytes `run --quick` reports for every case equal what
//! the lab's device model itself received in the same window (writes and flushes exactly, bytes within a
//! block). Root, /dev/fuse and the lab's programs are needed; CI runs it as root.
//!
//! And on the disk under the working directory (the project VM: vda, virtio), the request lines against
//! `/sys/block`: see [`request_lines`].

/// `run --quick`'s request counts (from the block tracepoints) against the disk's own counters, in every
/// case: at least 90 % of the flushes and writes `/sys/block/DISK/stat` counted in the case's window, the
/// hits the kernel reports lost or skipped (`trace_lost_samples`) excused and nothing else. This failed
/// when `run` read the tracepoints with perf events, which miss completions that interrupt an idle CPU
/// (`SYNCBENCH_TRACER=perf` forces them: bench/results/kevents-2026-11-28/).
mod request_lines {
    use crate::skip;
    use serde_json::{Value, json};
    use std::process::Command;

    /// A kind counted fewer times than this in a case is not held to the ratio: one request is then
    /// more than a tenth (the counters' and the tracepoints' windows differ by microseconds at each edge).
    const MIN_COUNTED: u64 = 10;

    /// The cases whose request lines count less than 90 % of the counters' flushes or writes (write
    /// requests with the empty write completions, which the counters count as writes), one line each.
    fn shortfalls(doc: &Value) -> Vec<String> {
        let mut out = Vec::new();
        for case in doc["results"].as_array().into_iter().flatten() {
            let Some(device) = case.get("device").filter(|d| d["devices"].is_array()) else { continue };
            let lowest = &device["devices"].as_array().unwrap().last().unwrap();
            let n = |v: &Value| v.as_u64().unwrap_or(0);
            let lost = n(&device["trace_lost_samples"]);
            let requests = &lowest["requests"];
            let traced = [
                ("flushes", n(&requests["flushes"]["count"]), n(&lowest["stat"]["flushes"])),
                (
                    "writes",
                    n(&requests["writes"]["count"]) + n(&requests["flush_carriers"]),
                    n(&lowest["stat"]["writes"]),
                ),
            ];
            for (kind, seen, counted) in traced {
                if counted >= MIN_COUNTED && (seen + lost) * 10 < counted * 9 {
                    let label = format!(
                        "{} {}",
                        case["section"].as_str().unwrap_or("?"),
                        case["label"].as_str().unwrap_or("?").trim()
                    );
                    out.push(format!(
                        "{label}: {seen} {kind} traced (+{lost} lost) of {counted} counted, reader {}",
                        device["trace_reader"]
                    ));
                }
            }
        }
        out
    }

    fn case(flushes: (u64, u64), writes: (u64, u64), carriers: u64, lost: u64) -> Value {
        json!({"section": "one_write", "label": "fdatasync", "device": {
            "trace_lost_samples": lost,
            "devices": [{"stat": {"flushes": flushes.1, "writes": writes.1},
                "requests": {"flushes": {"count": flushes.0}, "writes": {"count": writes.0}, "flush_carriers": carriers}}]}})
    }

    #[test]
    fn the_check_fails_below_90_percent_and_excuses_only_what_is_reported_lost() {
        let doc = |c: Value| json!({"results": [c]});
        assert!(shortfalls(&doc(case((200, 200), (200, 400), 200, 0))).is_empty());
        assert!(shortfalls(&doc(case((180, 200), (360, 400), 0, 0))).is_empty(), "90 % passes");
        // A planted loss: 179 of 200 flushes, as perf events read them on an idle CPU (and far worse).
        let short = shortfalls(&doc(case((179, 200), (200, 400), 200, 0)));
        assert_eq!(short.len(), 1, "{short:?}");
        assert!(short[0].contains("179 flushes traced (+0 lost) of 200"), "{short:?}");
        assert_eq!(shortfalls(&doc(case((179, 200), (200, 400), 200, 1))), Vec::<String>::new(), "lost excused");
        assert_eq!(shortfalls(&doc(case((100, 200), (200, 400), 200, 50))).len(), 1, "but only what was lost");
        assert_eq!(shortfalls(&doc(case((200, 200), (100, 400), 0, 0))).len(), 1, "writes too");
        assert!(shortfalls(&doc(case((5, 9), (5, 9), 0, 0))).is_empty(), "too few to hold to a ratio");
    }

    /// Issue #33's acceptance for the device columns: every case's request lines count at least 90 % of
    /// what `/sys/block` counted. On the project VM no BPF program runs for a block completion whose softirq
    /// lands while PID 1's threads (the VM's agent) are current, and the kernel reports those neither as lost
    /// nor as skipped; the default reader, an ftrace instance, records them (docs/benchmarks.md, "Device
    /// columns"). The check itself is proven above; that it fails on a reader that drops every 8th
    /// completion is recorded in bench/results/firstscreen-2026-11-29/.
    #[test]
    fn every_quick_case_traces_at_least_90_percent_of_what_the_disk_counted() {
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        if syncbench::observe::blockdev::disk::disks_of_path(dir.path()).is_empty() {
            return skip(format_args!("{} is on no block device", dir.path().display()));
        }
        if !syncbench_sys::test_support::is_root_or_skip() {
            return;
        }
        let json = dir.path().join("run.json");
        let bin = assert_cmd::cargo::cargo_bin("syncbench");
        let out = Command::new(bin).arg("run").arg(dir.path()).args(["--quick", "--json"]).arg(&json).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "run: {}\n{text}", String::from_utf8_lossy(&out.stderr));
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let cases = doc["results"].as_array().unwrap();
        let traced: Vec<&Value> = cases.iter().filter(|c| c["device"]["trace_reader"].is_string()).collect();
        assert!(traced.len() >= 60, "only {} of {} cases traced:\n{text}", traced.len(), cases.len());
        let flushes: u64 =
            traced.iter().filter_map(|c| c["device"]["devices"].as_array()?.last()?["stat"]["flushes"].as_u64()).sum();
        assert!(flushes >= 500, "not enough flushes to tell ({flushes})");
        let short = shortfalls(&doc);
        assert!(short.is_empty(), "{} cases traced under 90 %:\n{}", short.len(), short.join("\n"));
        // Counts that cannot be complete say so: perf events (the fallback) always.
        for c in &traced {
            let device = &c["device"];
            if device["trace_reader"] == "perf" {
                assert!(device["requests_incomplete"].as_str().is_some_and(|w| w.contains("perf events")), "{device}");
                assert!(device["device_ns_per_commit"].is_null(), "{device}");
            }
        }
    }
}

#[cfg(feature = "fuse")]
mod as_root {
    use crate::skip;
    use serde_json::Value;
    use std::process::Command;

    /// syncbench with this test's private registry: the loop devices it attaches are noted there.
    fn syncbench() -> Command {
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("syncbench"));
        crate::attached_loops::private(&mut command);
        command
    }

    fn missing_prerequisite() -> Option<String> {
        crate::missing_stack_prerequisite(&["losetup", "mkfs.ext4", "mount", "umount"])
    }

    /// Takes the lab down however the test ends; then, unless the test failed already, fails it if a loop
    /// device its syncbench attached is still attached.
    struct Lab(std::path::PathBuf);

    impl Drop for Lab {
        fn drop(&mut self) {
            let _ = syncbench().args(["lab", "down"]).arg(&self.0).output();
            if !std::thread::panicking() {
                let left = crate::attached_loops::still_attached();
                assert!(left.is_empty(), "loop devices left attached: {left:#?}");
            }
        }
    }

    /// One case's counts: (label, traced write requests, flushes, bytes) and the lab's (writes, flushes, bytes).
    type Counts = (String, u64, u64, u64, (u64, u64, u64));

    fn counts(case: &Value) -> Option<Counts> {
        let device = case.get("device")?;
        let lowest = device["devices"].as_array()?.last()?;
        let lab = &device["emulated"];
        let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("not a count: {v} in {device}"));
        Some((
            format!("{} {}", case["section"].as_str()?, case["label"].as_str()?.trim()),
            n(&lowest["requests"]["writes"]["count"]),
            n(&lowest["stat"]["flushes"]),
            n(&lowest["stat"]["write_bytes"]),
            (n(&lab["writes"]), n(&lab["flushes"]), n(&lab["write_bytes"])),
        ))
    }

    /// The cases whose counts differ from the lab's (one line each): flushes and bytes (the kernel's
    /// counters) exactly and within a block, write requests (the tracepoints) within `writes_slack`.
    fn mismatches(all: &[Counts], writes_slack: u64) -> Vec<String> {
        all.iter()
            .filter(|(_, w, f, b, (lw, lf, lb))| w.abs_diff(*lw) > writes_slack || f != lf || b.abs_diff(*lb) > 4096)
            .map(|(l, w, f, b, lab)| format!("{l}: writes {w} flushes {f} bytes {b}, the lab saw {lab:?}"))
            .collect()
    }

    #[test]
    fn every_quick_case_counts_what_the_lab_device_received() {
        if let Some(why) = missing_prerequisite() {
            return skip(why);
        }
        let tmp = tempfile::tempdir().unwrap();
        let mount = std::fs::canonicalize(tmp.path()).unwrap().join("mnt");
        std::fs::create_dir(&mount).unwrap();
        let up = syncbench().args(["lab", "up", "--profile", "zero", "--size", "512MiB"]).arg(&mount).output().unwrap();
        assert!(up.status.success(), "lab up: {}", String::from_utf8_lossy(&up.stderr));
        let _lab = Lab(mount.clone());
        // I/O that is not a case's is counted by the kernel (at completion) and the lab (at receipt) at
        // different moments when it straddles a window's edge; only the cases' own I/O may reach this disk.
        // So no background zeroing of a fresh ext4's inode tables (ext4lazyinit), timestamps that only a
        // sync writes (lazytime: fdatasync leaves mtime dirty, which jbd2 would commit every 5 s), and a
        // periodic journal commit longer than the run.
        let options = "remount,noinit_itable,lazytime,commit=600";
        let remount = Command::new("mount").args(["-o", options]).arg(&mount).status().unwrap();
        assert!(remount.success(), "remount noinit_itable");
        let json = tmp.path().join("run.json");
        let out = syncbench().arg("run").arg(&mount).args(["--quick", "--json"]).arg(&json).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "run: {}\n{text}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("flush/c write/c KiB/c dev µs"), "no device columns in:\n{text}");
        assert!(text.contains("write requests and device time from the block tracepoints"), "{text}");

        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let cases = doc["results"].as_array().unwrap();
        let measured: Vec<&Value> = cases.iter().filter(|c| c["ops"].as_u64().unwrap_or(0) > 0).collect();
        let all: Vec<Counts> =
            measured.iter().map(|c| counts(c).unwrap_or_else(|| panic!("no device counts: {c}"))).collect();
        assert!(all.len() >= 60, "only {} cases measured of {}", all.len(), cases.len());
        // Not vacuous: the durable cases flushed, and the lab saw writes.
        assert!(all.iter().filter(|c| c.2 > 0).count() >= 30, "{all:?}");
        assert!(all.iter().map(|c| c.4.0).sum::<u64>() > 1000, "{all:?}");
        // Every case's flushes exactly, and writes and bytes within one request and one block, but for at most
        // one case in which the lab saw a small burst more than the kernel counted: I/O straddling the
        // window's edge (the lab counts at receipt, the kernel at completion, see above). Seen once in CI on
        // 2026-11-24: 4 writes and 5 blocks more at the lab in one of 72 cases; where they came from was not
        // established. A burst the kernel counted and the lab did not, or any flush off, still fails.
        let straddles = |(_, writes, flushes, bytes, (lab_writes, lab_flushes, lab_bytes)): &Counts| {
            flushes == lab_flushes
                && (*writes..=writes + 8).contains(lab_writes)
                && (*bytes..=bytes + 64 * 1024).contains(lab_bytes)
        };
        let differ: Vec<&Counts> = all.iter().filter(|c| !mismatches(std::slice::from_ref(*c), 1).is_empty()).collect();
        let wrong = mismatches(&all, 1);
        assert!(
            differ.len() <= 1 && differ.iter().all(|c| straddles(c)),
            "{} of {} cases differ from the lab:\n{}",
            wrong.len(),
            all.len(),
            wrong.join("\n")
        );
        // Write requests exactly in all but a few cases: in about one run in four the tracepoints miss one
        // write of one case (flushes and bytes still equal the lab's; not yet explained, see docs/benchmarks.md).
        let inexact = mismatches(&all, 0);
        assert!(inexact.len() <= 2, "write requests differ in {} cases:\n{}", inexact.len(), inexact.join("\n"));

        // The check catches counts that are not the window's own: each case against its neighbour's truth.
        let shifted: Vec<Counts> =
            all.iter().zip(all.iter().cycle().skip(1)).map(|(a, b)| (a.0.clone(), a.1, a.2, a.3, b.4)).collect();
        assert!(mismatches(&shifted, 1).len() > all.len() / 2, "a planted shift went unnoticed");
    }
}
