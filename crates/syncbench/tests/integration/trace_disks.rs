//! `syncbench trace --pid`'s request lines ("The disks" in docs/trace.md) against the disk's own counters:
//! every flush the disk completed while a program fdatasynced in a loop must be a flush request.
//!
//! This failed before the block tracepoints were read by eBPF programs: perf samples of
//! `block:block_rq_complete` missed every completion that interrupted an idle CPU, and on an otherwise
//! idle machine a 200-fdatasync loop showed 0 flush requests against 200 flushes in
//! `/sys/block/vda/stat` (docs/trace.md, "The disks").

use crate::skip;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use syncbench::observe::blockdev::{Disk, disk, stat};

/// fdatasyncs made in the window: enough that a mechanism losing most completions cannot pass by luck.
const SYNCS: u32 = 300;

/// (flushes, writes) the disk completed so far, from `/sys/block/DISK/stat`.
fn counters(disk: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/sys/block/{disk}/stat")).unwrap();
    let c = stat::parse(&text).unwrap();
    (c.flushes, c.writes)
}

/// The disk of `chain` (a path's devices, top first) whose requests the block tracepoints see: a
/// request-based one (`/sys/block/NAME/mq`), not a bio-based device-mapper (LVM, dm-crypt) or md device
/// on top, for which `block_rq_*` never fire; else the bottom of the chain.
fn request_based(chain: &[Disk], has_queue: impl Fn(&Disk) -> bool) -> Option<&Disk> {
    chain.iter().find(|d| has_queue(d)).or(chain.last())
}

#[test]
fn the_disk_compared_is_the_one_requests_are_issued_to() {
    let disk = |name: &str| Disk { name: name.into(), major: 254, minor: 0 };
    let lvm_on_crypt = [disk("dm-1"), disk("dm-0"), disk("nvme0n1")];
    assert_eq!(request_based(&lvm_on_crypt, |d| d.name == "nvme0n1").unwrap().name, "nvme0n1");
    assert_eq!(request_based(&lvm_on_crypt, |_| false).unwrap().name, "nvme0n1", "the bottom");
    assert_eq!(request_based(&[disk("vda")], |_| true).unwrap().name, "vda");
    assert!(request_based(&[], |_| true).is_none());
}

#[test]
fn flush_requests_count_every_flush_the_disk_completed_in_the_window() {
    let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let chain = disk::disks_of_path(dir.path());
    let has_queue = |d: &Disk| std::path::Path::new(&format!("/sys/block/{}/mq", d.name)).exists();
    let Some(disk) = request_based(&chain, has_queue).cloned() else {
        return skip(format_args!("{} is on no block device", dir.path().display()));
    };
    if !syncbench_sys::test_support::is_root_or_skip() {
        return;
    }
    let src = dir.path().join("fdatasync_loop.c");
    std::fs::write(&src, include_str!("trace_data/fdatasync_loop.c")).unwrap();
    let exe = dir.path().join("fdatasync_loop");
    match Command::new("gcc").args(["-O1", "-o"]).arg(&exe).arg(&src).output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => return skip(format_args!("gcc failed: {}", String::from_utf8_lossy(&o.stderr))),
        Err(e) => return skip(format_args!("gcc is not available (Debian package gcc): {e}")),
    }
    let mut program = Command::new(&exe)
        .arg(dir.path().join("data"))
        .arg(SYNCS.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut program_out = BufReader::new(program.stdout.take().unwrap());
    let mut line = String::new();
    program_out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let mut tracer = Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["trace", "--pid", &program.id().to_string(), "--json", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut tracer_err = BufReader::new(tracer.stderr.take().unwrap());
    let mut text = String::new();
    tracer_err.read_line(&mut text).unwrap();
    assert!(text.starts_with("syncbench: tracing --pid "), "{text}");
    // The counters' window is inside the tracer's: from after it started to before the program exits.
    let before = counters(&disk.name);
    let mut stdin = program.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    line.clear();
    program_out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "done");
    let after = counters(&disk.name);
    drop(stdin);
    assert!(program.wait().unwrap().success());
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        tracer_err.read_to_string(&mut rest).unwrap();
        rest
    });
    let out = tracer.wait_with_output().unwrap();
    text += &rest.join().unwrap();
    assert!(out.status.success(), "{text}");
    let (flushes, writes) = (after.0 - before.0, after.1 - before.1);
    if flushes == 0 {
        let cache = disk.write_cache();
        return skip(format_args!("{} completed no flush for {SYNCS} fdatasyncs (cache: {cache})", disk.name));
    }
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let devices = doc["trace"]["devices"].as_array().unwrap();
    let device = devices.iter().find(|d| d["disk"] == disk.name.as_str());
    let requests = &device.unwrap_or_else(|| panic!("no device {} in the report: {text}", disk.name))["requests"];
    let count = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("not a count: {v} in {text}"));
    // The default reader is an ftrace instance: on this VM no eBPF program runs for a completion that
    // interrupts the VM agent's threads, and nothing counts those misses (docs/trace.md, "The disks").
    assert_eq!(doc["trace"]["block_mechanism"], "an ftrace instance on the block tracepoints", "{text}");
    assert_eq!(doc["trace"]["lost_events"], 0, "{text}");
    // At least: other programs' requests in the tracer's wider window count too. The kernel skips a block
    // program when its tracepoint fires in an interrupt while another eBPF program runs on that CPU (the
    // syscall programs, anybody's): such hits are reported as lost, with the records a full ring dropped.
    // They are every disk's and every process's (another program's heavy I/O made hundreds), so they are
    // bounded against every hit the programs recorded, not by a constant. Before Linux 6.7 the kernel
    // does not count the skips (null): then nothing may be short.
    let dropped = count(&doc["trace"]["block_dropped_events"]);
    let (lost, known) = match &doc["trace"]["block_lost_events"] {
        Value::Null => (dropped, " (the skipped runs unknown on this kernel: none allowed)"),
        lost => (count(lost), ""),
    };
    assert!(dropped <= lost, "dropped records are part of the lost hits: {text}");
    // An issue and a completion per request; one completion per empty write completion. (The devices
    // listed: those under the traced file; other disks' hits are not counted, so the bound is tighter.)
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let recorded_hits: u64 = devices
        .iter()
        .map(|d| &d["requests"])
        .map(|r| {
            2 * (n(&r["flushes"]["count"]) + n(&r["writes"]["count"]) + n(&r["reads"]["count"]))
                + n(&r["flush_carriers"])
        })
        .sum();
    assert!(
        lost * 10 <= recorded_hits + lost,
        "{lost} block hits lost of {} (more than 10 %): {text}",
        recorded_hits + lost
    );
    let flush_requests = count(&requests["flushes"]["count"]);
    assert!(
        flush_requests + lost >= flushes,
        "{flush_requests} flush requests + {lost} lost{known}, the disk completed {flushes}: {text}"
    );
    // The counters count an fsync's empty PREFLUSH write as a write: the report says how many empty write
    // completions it saw (more than those, on a disk without FUA: then > the stat's).
    let write_requests = count(&requests["writes"]["count"]) + count(&requests["flush_carriers"]);
    assert!(
        write_requests + lost >= writes,
        "{write_requests} write requests and empty completions + {lost} lost{known}, the disk {writes}: {text}"
    );
}
