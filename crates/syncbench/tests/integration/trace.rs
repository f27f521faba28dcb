//! `syncbench trace` against a program of our own that makes every intercepted call a known number of
//! times (trace_data/durability_calls.c, compiled here with gcc; skipped without it).

use crate::skip;
use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

const SOURCE: &str = include_str!("trace_data/durability_calls.c");

/// Compile the test program into `dir`; `None` (test skipped) when gcc is missing or fails.
fn compile(dir: &Path, name: &str, extra: &[&str]) -> Option<PathBuf> {
    compile_source(dir, name, SOURCE, extra)
}

/// Compile `source` into `dir/name`; `None` (test skipped) when gcc is missing or fails.
fn compile_source(dir: &Path, name: &str, source: &str, extra: &[&str]) -> Option<PathBuf> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let out =
        std::process::Command::new("gcc").args(["-O1", "-pthread", "-o"]).arg(&exe).arg(&src).args(extra).output();
    match out {
        Ok(o) if o.status.success() => Some(exe),
        Ok(o) => {
            let why = if extra.contains(&"-static") { " (the static libc is in Debian package libc6-dev)" } else { "" };
            skip(format_args!("gcc {extra:?} failed{why}: {}", String::from_utf8_lossy(&o.stderr)));
            None
        }
        Err(e) => {
            skip(format_args!("gcc is not available (Debian package gcc): {e}"));
            None
        }
    }
}

/// Whether this machine lets us ptrace at all (containers may forbid it).
fn can_trace() -> bool {
    let ok = Command::cargo_bin("syncbench").unwrap().args(["trace", "--", "true"]).output().unwrap();
    if !ok.status.success() {
        skip(format_args!("syncbench trace cannot trace here: {}", String::from_utf8_lossy(&ok.stderr)));
    }
    ok.status.success()
}

/// The `calls` program compiled into `tmp` and traced with `args`, its files in `tmp/data`: the report, the
/// program's output, syncbench's stderr and the data directory (`None`: skipped, gcc or tracing missing).
fn trace_calls(args: &[&str], tmp: &Path) -> Option<(Value, String, String, PathBuf)> {
    let exe = compile(tmp, "calls", &[])?;
    if !can_trace() {
        return None;
    }
    let data = tmp.join("data");
    std::fs::create_dir(&data).unwrap();
    let (doc, program_out, stderr) = trace_json(args, &exe, &data);
    Some((doc, program_out, stderr, data))
}

fn trace_json(args: &[&str], exe: &Path, data_dir: &Path) -> (Value, String, String) {
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .arg("trace")
        .args(args)
        .args(["--json", "-", "--"])
        .arg(exe)
        .arg(data_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "trace failed: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // The program prints one line first; the JSON document follows.
    let json_start = stdout.find('{').expect("JSON on stdout");
    let doc: Value = serde_json::from_str(&stdout[json_start..]).expect("valid JSON");
    (doc, stdout[..json_start].to_string(), stderr)
}

fn call<'a>(doc: &'a Value, name: &str) -> Option<&'a Value> {
    doc["trace"]["calls"].as_array().unwrap().iter().find(|c| c["call"] == name)
}

fn count(doc: &Value, name: &str) -> u64 {
    call(doc, name).map_or(0, |c| c["count"].as_u64().unwrap())
}

fn file_stat<'a>(doc: &'a Value, file: &str, name: &str) -> &'a Value {
    doc["trace"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == file && f["call"] == name)
        .unwrap_or_else(|| panic!("no {name} on {file} in {:#}", doc["trace"]["files"]))
}

/// The counts the C program makes (see its comments).
const EXPECTED: [(&str, u64); 10] = [
    ("fsync", 6),
    ("fdatasync", 11),
    ("sync_file_range", 1),
    ("syncfs", 1),
    ("sync", 1),
    ("msync(MS_SYNC)", 1),
    ("write(O_DSYNC)", 5),
    ("write(O_SYNC)", 6),
    ("pwritev2(RWF_DSYNC)", 2),
    ("pwritev2(RWF_SYNC)", 1),
];

#[test]
fn counts_every_call_exactly_including_threads_and_children() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((doc, program_out, stderr, _)) = trace_calls(&[], tmp.path()) else { return };
    assert_eq!(doc["schema"], "syncbench/v1");
    assert_eq!(doc["trace"]["exit_code"], 0);
    assert_eq!(doc["trace"]["processes"], 2, "parent and forked child");
    assert_eq!(doc["trace"]["tasks"], 3, "main thread, one pthread, one child");
    for (name, n) in EXPECTED {
        assert_eq!(count(&doc, name), n, "{name}; report:\n{stderr}");
        assert_eq!(call(&doc, name).unwrap()["skipped"], 0);
    }
    assert_eq!(doc["trace"]["calls"].as_array().unwrap().len(), EXPECTED.len());
    assert!(program_out.contains("dsync_flag_kept=1"));
    // Per file, with the bytes written since the file's previous sync.
    let child = file_stat(&doc, "child", "fdatasync");
    assert_eq!(child["count"], 7);
    assert_eq!(child["bytes_between_syncs"]["max"], 100);
    let plain_fsync = file_stat(&doc, "plain", "fsync");
    assert_eq!(plain_fsync["count"], 3);
    assert_eq!(plain_fsync["bytes_between_syncs"]["total"], 3 * 8192);
    assert_eq!(file_stat(&doc, "plain", "fdatasync")["bytes_between_syncs"]["max"], 4096);
    assert_eq!(file_stat(&doc, "thread", "fsync")["bytes_between_syncs"]["total"], 2 * 600, "writev bytes");
    assert_eq!(file_stat(&doc, "dsync", "write(O_DSYNC)")["bytes_between_syncs"]["total"], 5 * 1024);
    let dir = file_stat(&doc, "child", "fdatasync")["dir"].as_str().unwrap().to_string();
    assert!(dir.ends_with("/data/"), "{dir}");
    let dir_fsync = file_stat(&doc, "", "fsync");
    assert_eq!((dir_fsync["dir"].as_str(), dir_fsync["count"].as_u64()), (Some(dir.as_str()), Some(1)), "directory");
    // Timed calls have latencies; the text report names the calls.
    let fdatasync = call(&doc, "fdatasync").unwrap();
    assert!(fdatasync["latency_ns"]["max"].as_u64().unwrap() > 0);
    assert!(fdatasync["latency_ns"]["p50"].as_u64().unwrap() <= fdatasync["latency_ns"]["max"].as_u64().unwrap());
    let buckets: u64 =
        fdatasync["histogram_log2"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(buckets, 11);
    assert!(stderr.contains("by file") && stderr.contains("write(O_DSYNC)"), "{stderr}");
    let opens = doc["trace"]["sync_opens"].as_array().unwrap();
    assert_eq!(opens.len(), 2, "dsync and osync opened with sync flags");
}

#[test]
fn no_sync_skips_and_counts_every_call_and_strips_o_dsync() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((doc, program_out, stderr, data)) = trace_calls(&["--no-sync"], tmp.path()) else { return };
    assert!(stderr.contains("NOTHING THIS COMMAND WRITES IS DURABLE"), "{stderr}");
    assert_eq!(doc["trace"]["no_sync"], true);
    for (name, n) in EXPECTED {
        assert_eq!(count(&doc, name), n, "{name}");
        let c = call(&doc, name).unwrap();
        assert_eq!(c["skipped"], n, "{name} skipped");
        assert_eq!(c["total_ns"], 0, "{name} not timed");
    }
    assert!(program_out.contains("dsync_flag_kept=0"), "O_DSYNC must be stripped: {program_out}");
    assert_eq!(std::fs::metadata(data.join("plain")).unwrap().len(), 3 * 8192, "the writes themselves still happen");
}

#[test]
fn syncs_only_leaves_writes_untraced() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((doc, _, _, _)) = trace_calls(&["--syncs-only"], tmp.path()) else { return };
    assert_eq!(doc["trace"]["writes_tracked"], false);
    assert_eq!(count(&doc, "fsync"), 6);
    assert_eq!(count(&doc, "fdatasync"), 11);
    assert_eq!(count(&doc, "pwritev2(RWF_DSYNC)"), 2, "caught by the filter's flag test");
    assert_eq!(count(&doc, "write(O_DSYNC)"), 0, "plain writes are not seen in this mode");
    assert_eq!(file_stat(&doc, "plain", "fsync")["bytes_between_syncs"]["samples"], 0, "no fake 0-byte samples");
    assert_eq!(doc["trace"]["sync_opens"].as_array().unwrap().len(), 2);
}

#[test]
fn statically_linked_program_is_traced() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(exe) = compile(tmp.path(), "calls-static", &["-static"]) else { return };
    if !can_trace() {
        return;
    }
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let (doc, _, _) = trace_json(&[], &exe, &data);
    for (name, n) in EXPECTED {
        assert_eq!(count(&doc, name), n, "{name}");
    }
}

#[test]
fn exit_status_of_the_command_is_passed_through() {
    if !can_trace() {
        return;
    }
    let out = Command::cargo_bin("syncbench").unwrap().args(["trace", "--", "sh", "-c", "exit 7"]).output().unwrap();
    assert_eq!(out.status.code(), Some(7));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no durability calls"), "{stderr}");
}

#[test]
fn unknown_program_is_one_line_and_exit_2() {
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["trace", "--", "/nonexistent/syncbench-no-such-program"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no such program"), "{stderr}");
}

/// Every export target is checked before the command starts: one line naming the flag, exit 2, the command
/// never ran.
#[test]
fn an_unwritable_export_target_is_refused_before_the_command_runs() {
    for (flag, dest) in [
        ("--json", "/nonexistent-dir/x.json"),
        ("--csv", "/nonexistent-dir/t.csv"),
        ("--openmetrics", "/nonexistent-dir/t.prom"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let marker = tmp.path().join("ran");
        let out = Command::cargo_bin("syncbench")
            .unwrap()
            .args(["trace", flag, dest, "--", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}");
        assert!(!marker.exists(), "{flag}: the command must not run");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&format!("{flag} {dest}: directory /nonexistent-dir does not exist")), "{stderr}");
    }
}

/// dd's fdatasync as a CSV row and as OpenMetrics rate and latency samples.
#[test]
fn csv_and_openmetrics_of_a_started_command() {
    if !can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (csv, prom) = (tmp.path().join("t.csv"), tmp.path().join("t.prom"));
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .arg("trace")
        .arg("--csv")
        .arg(&csv)
        .arg("--openmetrics")
        .arg(&prom)
        .args(["--", "dd", "if=/dev/zero", "bs=4096", "count=4", "conv=fdatasync"])
        .arg(format!("of={}", tmp.path().join("f").display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(csv).unwrap();
    assert!(csv.starts_with("scope,dir,file,call,count,"), "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("all,,,fdatasync,1,")), "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("file,") && l.contains(",f,fdatasync,1,")), "{csv}");
    let prom = std::fs::read_to_string(prom).unwrap();
    assert!(
        prom.contains("syncbench_trace_calls_per_second{") && prom.contains("target=\"dd\",call=\"fdatasync\"}"),
        "{prom}"
    );
    assert!(prom.contains("call=\"fdatasync\",quantile=\"0.99\"}"), "{prom}");
}

#[test]
fn baseline_comparison_uses_the_run_fdatasync_case() {
    use syncbench::core::schema::{CaseResult, Envelope, LatencyNs, RunPayload};
    let tmp = tempfile::tempdir().unwrap();
    let Some(exe) = compile(tmp.path(), "calls", &[]) else { return };
    if !can_trace() {
        return;
    }
    let case = CaseResult {
        section: syncbench::core::suite::Section::OneWrite,
        method: syncbench::core::method::SyncMethod::Fdatasync,
        supported: true,
        ops: 100,
        write_size_bytes: 8192,
        file_state: syncbench::core::suite::FileState::Overwrite,
        latency_ns: LatencyNs { p50: 200_000, p99: 900_000, ..LatencyNs::default() },
        ..CaseResult::default()
    };
    let run = Envelope::new(
        "2026-11-21T00:00:00Z".into(),
        Default::default(),
        vec![],
        RunPayload { results: vec![case], ..RunPayload::default() },
    );
    let run_path = tmp.path().join("run.json");
    std::fs::write(&run_path, serde_json::to_string(&run).unwrap()).unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let (doc, _, stderr) = trace_json(&["--baseline", run_path.to_str().unwrap()], &exe, &data);
    let b = &doc["trace"]["baseline"];
    assert_eq!(b["run_p50_ns"], 200_000);
    assert_eq!(b["traced_call"], "fdatasync");
    assert_eq!(b["traced_p50_ns"], call(&doc, "fdatasync").unwrap()["latency_ns"]["p50"]);
    assert!(stderr.contains("your device did write+fdatasync in 200.0 µs"), "{stderr}");

    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["trace", "--baseline"])
        .arg(&bad)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn interrupt_passes_sigint_on_and_still_prints_the_report() {
    use std::io::BufRead;
    if !can_trace() {
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("syncbench");
    let mut child = std::process::Command::new(bin)
        .args(["trace", "--", "sh", "-c", "echo ready; exec sleep 60"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the traced shell runs, so the interrupt reaches a traced process.
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    syncbench_sys::ptrace::send_signal(child.id() as i32, libc::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("killed by signal 2"), "{stderr}");
}

#[test]
fn bad_attach_arguments_are_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 8] = [
        (&["trace", "--pid", "abc"], "is not a process id"),
        (&["trace", "--pid", "0"], "is not a process id"),
        (&["trace", "--pid", "999999999"], "no such process"),
        (&["trace", "--comm", "a-name-longer-than-15"], "1 to 15 characters"),
        (&["trace", "--comm", "no-such-process"], "no running process is named"),
        (&["trace", "--all", "--secs", "-1"], "positive number"),
        (&["trace", "--secs", "3", "--", "true"], "--secs applies to --pid, --comm or --all only"),
        (&["trace", "--pid", "1", "--per-task", "--tracer", "bpf"], "--per-task records with perf events"),
    ];
    for (args, expected) in cases {
        let out = Command::cargo_bin("syncbench").unwrap().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
    // Starting a program and attaching exclude each other, as do --no-sync and attaching (clap's own
    // usage error, also exit 2).
    for args in [
        &["trace", "--pid", "1", "--", "true"][..],
        &["trace", "--no-sync", "--all"],
        &["trace", "--all", "--per-task"],
        &["trace", "--all", "--tracer", "dtrace"],
        &["trace", "--tracer", "bpf", "--", "true"],
    ] {
        let out = Command::cargo_bin("syncbench").unwrap().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// Whether this machine lets us record kernel tracepoints (root, perf events, tracefs).
fn can_attach() -> bool {
    let out = Command::cargo_bin("syncbench").unwrap().args(["trace", "--all", "--secs", "0.2"]).output().unwrap();
    if !out.status.success() {
        skip(format_args!("syncbench trace --all cannot record here: {}", String::from_utf8_lossy(&out.stderr)));
    }
    out.status.success()
}

/// Run `attach_counts` and attach to it by PID after it started; it makes its calls only once the tracer
/// says it is tracing. Meanwhile another program, not followed, fsyncs a file in a loop: its calls must
/// not be counted (with events per CPU the kernel records them too). Returns the JSON report and the
/// text report.
fn attach_to_known_program(extra: &[&str]) -> Option<(Value, String)> {
    attach_to_program("attach_counts", include_str!("trace_data/attach_counts.c"), extra)
}

/// `attach_to_known_program` with the program `name` built from `source` (the same protocol: "ready",
/// a line on stdin, "done").
fn attach_to_program(name: &str, source: &str, extra: &[&str]) -> Option<(Value, String)> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_source(dir.path(), name, source, &[])?;
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let other = dir.path().join("other");
    let _beside = KillOnDrop(
        std::process::Command::new("sh")
            .args(["-c", "while :; do dd if=/dev/zero of=\"$1\" bs=4k count=1 conv=fsync status=none; done", "_"])
            .arg(&other)
            .spawn()
            .unwrap(),
    );
    let mut program =
        std::process::Command::new(&exe).arg(&data).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut program_out = BufReader::new(program.stdout.take().unwrap());
    let mut line = String::new();
    program_out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let mut tracer = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["trace", "--pid", &program.id().to_string(), "--json", "-"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut tracer_err = BufReader::new(tracer.stderr.take().unwrap());
    let mut first = String::new();
    tracer_err.read_line(&mut first).unwrap();
    assert!(first.starts_with("syncbench: tracing --pid "), "{first}");
    program.stdin.take().unwrap().write_all(b"go\n").unwrap();
    line.clear();
    program_out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "done");
    assert!(program.wait().unwrap().success());
    // The trace ends by itself once the program and its child are gone. Stderr is read beside stdout:
    // either can outgrow a pipe.
    let rest = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut tracer_err, &mut text).unwrap();
        text
    });
    let out = tracer.wait_with_output().unwrap();
    let text = rest.join().unwrap();
    assert!(other.exists(), "the program beside ran");
    assert!(out.status.success(), "{text}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    Some((doc, text))
}

const MECHANISM_BPF: &str = "eBPF programs on the syscall tracepoints";
const MECHANISM_PERF: &str = "perf_event syscall tracepoints";

/// The default backend, eBPF: the kernel keeps the followed processes' calls and pairs entries with exits.
/// The child and the second thread start after the trace attached, so every count depends on the
/// kernel's fork program adding children to the followed set before they run: a fork program that did
/// not (tried: its `update` left out) loses the child's 20 `O_DSYNC` writes and its process, and this
/// test fails.
#[test]
fn attached_by_pid_counts_every_call_of_threads_and_children_exactly() {
    if !can_attach() {
        return;
    }
    let Some((doc, text)) = attach_to_known_program(&[]) else { return };
    assert_known_counts(&doc, &text, MECHANISM_BPF);
    assert!(!text.contains("eBPF unavailable"), "the default is eBPF, without falling back: {text}");
}

#[test]
fn attached_by_pid_with_perf_events_counts_every_call_exactly() {
    if !can_attach() {
        return;
    }
    let Some((doc, text)) = attach_to_known_program(&["--tracer", "perf"]) else { return };
    assert_known_counts(&doc, &text, MECHANISM_PERF);
}

#[test]
fn attached_per_task_counts_every_call_of_threads_and_children_exactly() {
    if !can_attach() {
        return;
    }
    let Some((doc, text)) = attach_to_known_program(&["--per-task"]) else { return };
    assert_known_counts(&doc, &text, MECHANISM_PERF);
}

/// A child process killed (and reaped) when the test is done with it, even when an assertion failed.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `attach_counts`' calls, exactly, and nothing of the program beside.
fn assert_known_counts(doc: &Value, text: &str, mechanism: &str) {
    assert_eq!(doc["trace"]["mechanism"], mechanism, "{text}");
    assert_eq!(doc["trace"]["lost_events"], 0, "{text}");
    assert_eq!(count(doc, "fsync"), 50, "{text}");
    assert_eq!(count(doc, "fdatasync"), 30, "{text}");
    assert_eq!(count(doc, "write(O_DSYNC)"), 20, "{text}");
    assert_eq!(doc["trace"]["calls"].as_array().unwrap().len(), 3, "nothing else: {text}");
    assert_eq!(file_stat(doc, "a", "fsync")["count"], 50);
    assert_eq!(file_stat(doc, "b", "fdatasync")["count"], 30);
    let c = file_stat(doc, "c", "write(O_DSYNC)");
    assert_eq!((c["count"].as_u64(), c["bytes_between_syncs"]["total"].as_u64()), (Some(20), Some(160)));
    // 4 bytes written before each fsync of `a` (the pipe writes are not a file's).
    assert_eq!(file_stat(doc, "a", "fsync")["bytes_between_syncs"]["total"], 200);
    assert_eq!(doc["trace"]["processes"], 2, "the program and the child it forked: {text}");
    assert_eq!(doc["trace"]["tasks"], 3, "and its second thread: {text}");
    assert!(text.contains("attached to --pid"), "{text}");
}

/// A process whose main thread exits first (`pthread_exit`) while another thread goes on syncing: the
/// process is still followed (the kernel fires `sched_process_exit` per thread; only the last one,
/// `group_dead`, ends the process) and the trace does not end while it runs (its leader is a zombie).
#[test]
fn a_process_whose_leader_exits_first_is_still_followed() {
    if !can_attach() {
        return;
    }
    for tracer in ["bpf", "perf"] {
        let source = include_str!("trace_data/leader_exits.c");
        let Some((doc, text)) = attach_to_program("leader_exits", source, &["--tracer", tracer]) else { return };
        assert_eq!(doc["trace"]["lost_events"], 0, "{tracer}: {text}");
        assert_eq!(count(&doc, "fsync"), 40, "{tracer}: every fsync of the thread left: {text}");
        assert_eq!(file_stat(&doc, "a", "fsync")["count"], 40, "{tracer}: {text}");
    }
}

#[test]
fn attached_syncs_only_still_counts_the_syncs() {
    if !can_attach() {
        return;
    }
    for tracer in ["bpf", "perf"] {
        let Some((doc, text)) = attach_to_known_program(&["--syncs-only", "--tracer", tracer]) else { return };
        assert_eq!(count(&doc, "fsync"), 50, "{text}");
        assert_eq!(count(&doc, "fdatasync"), 30, "{text}");
        assert_eq!(count(&doc, "write(O_DSYNC)"), 0, "writes are not recorded: {text}");
        assert_eq!(doc["trace"]["writes_tracked"], false);
    }
}

#[test]
fn the_whole_machine_for_a_moment_and_the_disk_under_a_synced_file() {
    if !can_attach() {
        return;
    }
    for tracer in ["bpf", "perf"] {
        the_whole_machine_with(tracer);
    }
}

fn the_whole_machine_with(backend: &str) {
    use std::io::{BufRead, BufReader, Read};
    let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let file = dir.path().join("synced");
    let mut tracer = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["trace", "--all", "--secs", "3", "--json", "-", "--tracer", backend])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(tracer.stderr.take().unwrap());
    let mut text = String::new();
    err.read_line(&mut text).unwrap();
    assert!(text.contains("syncbench: tracing --all"), "{text}");
    let f = std::fs::File::create(&file).unwrap();
    for _ in 0..5 {
        std::io::Write::write_all(&mut &f, b"x").unwrap();
        f.sync_data().unwrap();
    }
    // The JSON (stdout) can outgrow a pipe: read it while the rest of stderr is read.
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        err.read_to_string(&mut rest).unwrap();
        rest
    });
    let out = tracer.wait_with_output().unwrap();
    text += &rest.join().unwrap();
    assert!(out.status.success(), "{text}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["trace"]["attached_to"], "--all");
    let mechanism = if backend == "bpf" { MECHANISM_BPF } else { MECHANISM_PERF };
    assert_eq!(doc["trace"]["mechanism"], mechanism, "{text}");
    // `--tracer` picks the block tracepoints' reader too.
    let blocks =
        if backend == "bpf" { "eBPF programs on the block tracepoints" } else { "perf_event block tracepoints" };
    assert_eq!(doc["trace"]["block_mechanism"], blocks, "{text}");
    // This test process is not syncbench: its fdatasyncs are seen like anybody's.
    let name = file.file_name().unwrap().to_str().unwrap();
    assert_eq!(file_stat(&doc, name, "fdatasync")["count"], 5, "{text}");
    let devices = doc["trace"]["devices"].as_array().unwrap();
    if !syncbench::observe::blockdev::disk::disks_of_path(dir.path()).is_empty() {
        let dir_name = format!("{}/", dir.path().display());
        let dev = devices.iter().find(|d| d["dirs"].as_array().unwrap().iter().any(|x| x == &dir_name));
        let dev = dev.unwrap_or_else(|| panic!("no device under {dir_name}: {text}"));
        assert!(dev["stat"]["writes"].as_u64().unwrap() > 0, "{text}");
        assert!(text.contains("of which the device's flush") || dev["requests"]["flushes"]["count"] == 0, "{text}");
    }
}

/// The smallest i386 ELF executable: one PT_LOAD segment whose code is `exit(0)` through `int 0x80`.
fn tiny_i386_elf() -> Vec<u8> {
    const BASE: u32 = 0x0804_8000;
    let code: [u8; 9] = [0xb8, 1, 0, 0, 0, 0x31, 0xdb, 0xcd, 0x80]; // mov eax,1; xor ebx,ebx; int 0x80
    let size = (52 + 32 + code.len()) as u32;
    let mut elf = b"\x7fELF\x01\x01\x01\0\0\0\0\0\0\0\0\0".to_vec();
    for half in [2u16, 3] {
        elf.extend(half.to_le_bytes()); // e_type EXEC, e_machine EM_386
    }
    for word in [1u32, BASE + 84, 52, 0, 0] {
        elf.extend(word.to_le_bytes()); // e_version, e_entry, e_phoff, e_shoff, e_flags
    }
    for half in [52u16, 32, 1, 0, 0, 0] {
        elf.extend(half.to_le_bytes()); // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
    }
    for word in [1u32, 0, BASE, BASE, size, size, 5, 0x1000] {
        elf.extend(word.to_le_bytes()); // PT_LOAD, offset, vaddr, paddr, filesz, memsz, R+X, align
    }
    elf.extend(code);
    elf
}

#[test]
fn a_32_bit_program_gets_one_warning_line_and_a_json_field() {
    if !can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("exit32");
    std::fs::write(&exe, tiny_i386_elf()).unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    if let Err(e) = std::process::Command::new(&exe).status() {
        return skip(format_args!("this kernel cannot run i386 programs (CONFIG_IA32_EMULATION): {e}"));
    }
    // sh runs the 32-bit program as a child: an exec after the start is checked too.
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["trace", "--json", "-", "--", "sh", "-c"])
        .arg(format!("{} && echo ran", exe.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("syncbench: warning:")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("exit32 (i386)") && warnings[0].contains("32-bit"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    let w = &doc["trace"]["coverage_warnings"];
    assert_eq!(w.as_array().unwrap().len(), 1, "{w}");
    assert_eq!(w[0]["kind"], "32-bit");
    assert!(w[0]["programs"][0].as_str().unwrap().ends_with("exit32 (i386)"), "{w}");

    // A 64-bit program gets no warning.
    let out = Command::cargo_bin("syncbench").unwrap().args(["trace", "--", "true"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}

#[test]
fn io_uring_setup_gets_one_warning_line_and_a_json_field() {
    const URING: &str = r#"
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    unsigned char params[120];
    memset(params, 0, sizeof params);
    long fd = syscall(SYS_io_uring_setup, 4, params);
    printf("io_uring_setup=%ld\n", fd);
    if (fd >= 0) close((int)fd);
    return 0;
}
"#;
    let tmp = tempfile::tempdir().unwrap();
    let Some(exe) = compile_source(tmp.path(), "uring", URING, &[]) else { return };
    if !can_trace() {
        return;
    }
    let out = Command::cargo_bin("syncbench").unwrap().args(["trace", "--json", "-", "--"]).arg(&exe).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Seen at the call's entry, so even a kernel with io_uring disabled (the call fails) gets the warning.
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("syncbench: warning:")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("io_uring_setup") && warnings[0].contains("/uring`"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("io_uring_setup="), "the call still ran: {stdout}");
    let doc: Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    assert_eq!(doc["trace"]["coverage_warnings"][0]["kind"], "io_uring");
    assert_eq!(doc["trace"]["coverage_warnings"].as_array().unwrap().len(), 1);
}

/// Writes and fsyncs one file whose name has a newline in it (`two\nlines.dat` in argv[1]).
const NEWLINE_NAME_SOURCE: &str = r#"
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char path[4096];
    snprintf(path, sizeof path, "%s/two\nlines.dat", argc > 1 ? argv[1] : ".");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "x", 1) != 1 || fsync(fd) != 0 || close(fd) != 0) return 1;
    return 0;
}
"#;

#[test]
fn a_file_name_with_a_newline_stays_on_one_line_of_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(exe) = compile_source(tmp.path(), "newline_name", NEWLINE_NAME_SOURCE, &[]) else { return };
    if !can_trace() {
        return;
    }
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let out = Command::cargo_bin("syncbench").unwrap().args(["trace", "--"]).arg(&exe).arg(&data).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(data.join("two\nlines.dat").exists(), "the traced program made the file");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr;
    assert!(text.contains("  two\\nlines.dat\n"), "the name on one line, escaped:\n{text}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with("lines.dat")), "no line starts inside the name:\n{text}");
    // The JSON keeps the real name (JSON escapes it itself).
    let (doc, _, _) = trace_json(&[], &exe, &data);
    assert_eq!(file_stat(&doc, "two\nlines.dat", "fsync")["count"], 1);
}

#[test]
fn an_attached_trace_stopped_by_ctrl_c_prints_what_it_has() {
    use std::io::{BufRead, BufReader, Read};
    if !can_attach() {
        return;
    }
    let mut tracer = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["trace", "--all"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(tracer.stderr.take().unwrap());
    let mut text = String::new();
    err.read_line(&mut text).unwrap();
    assert!(text.contains("until Ctrl-C"), "{text}");
    syncbench_sys::ptrace::send_signal(tracer.id() as i32, libc::SIGINT).unwrap();
    err.read_to_string(&mut text).unwrap();
    let mut report = String::new();
    tracer.stdout.take().unwrap().read_to_string(&mut report).unwrap();
    let status = tracer.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{text}");
    // Attached, the report is the answer: on stdout (`trace --all > f` keeps it), the progress on stderr.
    assert!(
        report.trim_start().starts_with("syncbench trace: attached to --all for "),
        "the report: {report}\nstderr: {text}"
    );
    assert!(!text.contains("attached to --all for"), "{text}");
}

/// A pipe whose buffer is already full: whoever writes to its write end blocks until someone reads, and
/// nobody will. Returns (read end, write end).
fn full_pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::{AsRawFd, FromRawFd};
    let mut fds = [0; 2];
    // SAFETY: a valid array of two descriptors to fill.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) }, 0);
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (read, write) =
        unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) };
    let page = [b'x'; 4096];
    // SAFETY: writes from a valid buffer to our own non-blocking pipe, until it is full (EAGAIN).
    while unsafe { libc::write(write.as_raw_fd(), page.as_ptr().cast(), page.len()) } > 0 {}
    // The child must block, not get EAGAIN: clear O_NONBLOCK (the flag belongs to the write end's file).
    // SAFETY: fcntl on our own descriptor.
    assert_eq!(unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETFL, 0) }, 0);
    (read, write)
}

/// Whether some thread of `pid` is blocked in write(2) (`/proc/PID/task/TID/syscall` starts with its number).
fn blocked_in_write(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    tasks.flatten().any(|t| std::fs::read_to_string(t.path().join("syscall")).is_ok_and(|s| s.starts_with("1 ")))
}

#[test]
fn sigterm_ends_an_attached_trace_whose_output_nobody_reads() {
    // The reader of `syncbench trace --all --json - 2>&1 | ...` stopped reading: every write of syncbench
    // blocks, holding the standard library's lock on stderr or stdout. SIGTERM must still end it, with
    // 143, leaving nothing behind. (It once waited for that lock for an hour.) The bound is generous: it
    // only tells "exits" from "hangs".
    if !can_attach() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (read_end, write_end) = full_pipe();
    let mut tracer = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["trace", "--all", "--json", "-"])
        .env("TMPDIR", tmp.path())
        .stdout(write_end.try_clone().unwrap())
        .stderr(write_end)
        .spawn()
        .unwrap();
    let waited = std::time::Instant::now();
    while !blocked_in_write(tracer.id()) {
        assert!(waited.elapsed() < std::time::Duration::from_secs(60), "syncbench never wrote");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    syncbench_sys::ptrace::send_signal(tracer.id() as i32, libc::SIGTERM).unwrap();
    let signalled = std::time::Instant::now();
    let status = loop {
        if let Some(status) = tracer.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > std::time::Duration::from_secs(60) {
            let _ = tracer.kill();
            let _ = tracer.wait();
            panic!("syncbench trace still running 60 s after SIGTERM, its output pipe unread");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(143), "{status:?}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    drop(read_end);
}
