//! `syncbench run` end to end: the quick suite on a temp dir, tmpfs and an xfs loop device; mock timing;
//! every bad input; Ctrl-C; broken pipe.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const SECTIONS: [&str; 7] =
    ["one_write", "two_writes", "write_sizes", "close_then_sync", "no_sync", "size_sweep", "file_state"];
const METHODS: [&str; 14] = [
    "open_datasync",
    "fdatasync",
    "fsync",
    "open_sync",
    "open_datasync+direct",
    "fdatasync+direct",
    "fsync+direct",
    "open_sync+direct",
    "pwritev2_dsync",
    "pwritev2_sync",
    "io_uring_fdatasync",
    "sync_file_range",
    "direct",
    "write",
];

fn syncbench() -> Command {
    Command::cargo_bin("syncbench").unwrap()
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".syncbench-"))
        .collect()
}

/// `run --quick` with a tiny budget; returns the JSON document.
fn quick_run(dir: &Path, secs: &str) -> Value {
    let out_dir = tempfile::tempdir().unwrap();
    let json = out_dir.path().join("out.json");
    let output = syncbench()
        .args(["run", "--quick", "--secs", secs, "--json"])
        .arg(&json)
        .arg(dir)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("(a) Compare sync methods using one 8 KiB write per commit"), "{stdout}");
    assert!(stdout.contains("NOT DURABLE"), "{stdout}");
    assert!(leftovers(dir).is_empty(), "left behind: {:?}", leftovers(dir));
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// Every section is present, every method of section a is there, each case has numbers or a reason.
fn assert_complete(doc: &Value) {
    assert_eq!(doc["schema"], "syncbench/v1");
    let results = doc["results"].as_array().unwrap();
    for section in SECTIONS {
        assert!(results.iter().any(|r| r["section"] == section), "section {section} missing");
    }
    for method in METHODS {
        assert!(results.iter().any(|r| r["section"] == "one_write" && r["method"] == method), "{method} missing");
    }
    for r in results {
        let measured = r["supported"] == true && r["error"].is_null();
        if measured {
            assert!(r["ops"].as_u64().unwrap() > 0 && r["ops_per_s"].as_f64().unwrap() > 0.0, "{r}");
        } else {
            let why = r["error"].as_str().unwrap_or_default();
            assert!(why.starts_with('E') && why.contains(": "), "no errno and sentence: {r}");
            assert_eq!(r["ops"], 0, "{r}");
        }
    }
}

#[test]
fn quick_suite_on_a_temp_dir_covers_everything_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let doc = quick_run(dir.path(), "0.005");
    assert_complete(&doc);
    // On a local disk file system every method is supported except, possibly, io_uring (sysctl/seccomp).
    let results = doc["results"].as_array().unwrap();
    let fdatasync = results.iter().find(|r| r["section"] == "one_write" && r["method"] == "fdatasync").unwrap();
    assert_eq!(fdatasync["supported"], true);
    assert!(fdatasync["latency_ns"]["p50"].as_u64().unwrap() > 0);
}

#[test]
fn mock_timing_is_deterministic_and_touches_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = || {
        let out = syncbench()
            .args(["run", "--mock-timing", "42", "--sections", "a,c,g", "--json", "-"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // The table goes to stderr when JSON takes stdout.
        assert!(String::from_utf8_lossy(&out.stderr).contains("MOCK TIMING"));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["results"].clone()
    };
    let first = run();
    assert_eq!(first, run());
    assert_eq!(first.as_array().unwrap().len(), 14 + 22 + 6);
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn log_keeps_every_commit_in_windows_and_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let run = |log: bool| {
        let mut cmd = syncbench();
        cmd.args(["run", "--mock-timing", "7", "--sections", "a", "--json", "-"]).arg(dir.path());
        if log {
            cmd.arg("--log");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let with = run(true);
    for case in with["results"].as_array().unwrap() {
        let windows = case["latency_log"].as_array().unwrap();
        // The mock's 5 rounds of 80 ms: one window each, one after another on its virtual time axis.
        assert_eq!(windows.len(), 5, "{case}");
        let commits: u64 = windows.iter().map(|w| w["commits"].as_u64().unwrap()).sum();
        assert_eq!(commits, case["ops"].as_u64().unwrap(), "every timed commit is in a window: {case}");
        let starts: Vec<u64> = windows.iter().map(|w| w["start_ns"].as_u64().unwrap()).collect();
        assert!(starts.windows(2).all(|p| p[0] < p[1]), "{starts:?}");
    }
    assert!(with.get("regimes").is_some(), "the run says whether it saw regimes");
    let without = run(false);
    assert!(without["results"].as_array().unwrap().iter().all(|c| c.get("latency_log").is_none()));
}

/// Exit code 2, one line on stderr naming the problem, nothing on stdout, nothing left behind.
fn assert_usage_error(args: &[&str], dir: &Path, expect: &str) {
    assert_usage_error_from(syncbench(), args, dir, expect);
}

fn assert_usage_error_from(mut cmd: Command, args: &[&str], dir: &Path, expect: &str) {
    let out = cmd.arg("run").args(args).arg(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(expect), "{args:?}: expected {expect:?} in {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
    if dir.is_dir() {
        assert!(leftovers(dir).is_empty(), "{args:?}");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    assert_usage_error(&[], &dir.join("missing"), "existing directory");
    let file = dir.join("plain-file");
    std::fs::write(&file, b"keep me").unwrap();
    assert_usage_error(&[], &file, "not a directory");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    assert_usage_error(&["--secs", "0"], dir, "--secs");
    assert_usage_error(&["--secs", "abc"], dir, "--secs");
    assert_usage_error(&["--size", "3x"], dir, "--size");
    assert_usage_error(&["--size", "100"], dir, "--size");
    assert_usage_error(&["--methods", "fsync,fsnyc"], dir, "fsnyc");
    assert_usage_error(&["--sections", "z"], dir, "--sections");
    assert_usage_error(&["--pattern", "random"], dir, "--pattern");
    assert_usage_error(&["--json", "/nonexistent-dir/x.json"], dir, "--json");
}

fn is_root() -> bool {
    std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// A mount made for one test, unmounted (and its loop device detached) on drop.
pub(crate) struct Mount {
    pub(crate) point: PathBuf,
    _parent: tempfile::TempDir,
}

impl Mount {
    fn new(args: &[&str]) -> Option<Mount> {
        let parent = tempfile::tempdir().unwrap();
        let point = parent.path().join("mnt");
        std::fs::create_dir(&point).unwrap();
        let status = std::process::Command::new("mount").args(args).arg(&point).stderr(Stdio::null()).status();
        match status {
            Ok(s) if s.success() => Some(Mount { point, _parent: parent }),
            _ => None,
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.point).status();
    }
}

pub(crate) fn mount_or_skip(what: &str, args: &[&str]) -> Option<Mount> {
    if !is_root() {
        crate::skip(format!("mounting {what} needs root"));
        return None;
    }
    let mount = Mount::new(args);
    if mount.is_none() {
        crate::skip(format!("could not mount {what} (no mount permission in this container?)"));
    }
    mount
}

#[test]
fn read_only_file_system_is_refused() {
    let Some(m) = mount_or_skip("a read-only tmpfs", &["-t", "tmpfs", "-o", "ro,size=64m", "tmpfs"]) else { return };
    assert_usage_error(&[], &m.point, "read-only file system");
}

#[test]
fn too_little_free_space_is_refused_before_any_file_is_made() {
    let Some(m) = mount_or_skip("a 4 MiB tmpfs", &["-t", "tmpfs", "-o", "size=4m", "tmpfs"]) else { return };
    assert_usage_error(&[], &m.point, "free");
}

#[test]
fn unwritable_directory_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ro");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    if !is_root() {
        assert_usage_error(&["--sections", "a"], &dir, "not writable");
        return;
    }
    // Root may write anywhere, so run a copy of the binary as `nobody` (the copy because the build
    // directory's parents need not be open to other users).
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = tmp.path().join("syncbench");
    std::fs::copy(assert_cmd::cargo::cargo_bin("syncbench"), &binary).unwrap();
    let mut as_nobody = std::process::Command::new(&binary);
    std::os::unix::process::CommandExt::uid(&mut as_nobody, 65534);
    std::os::unix::process::CommandExt::gid(&mut as_nobody, 65534);
    assert_usage_error_from(Command::from_std(as_nobody), &["--sections", "a"], &dir, "not writable");
}

#[test]
fn quick_suite_on_tmpfs() {
    let Some(m) = mount_or_skip("tmpfs", &["-t", "tmpfs", "-o", "size=128m", "tmpfs"]) else { return };
    let doc = quick_run(&m.point, "0.002");
    assert_complete(&doc);
}

#[test]
fn quick_suite_on_an_xfs_loop_device() {
    let have_mkfs = std::process::Command::new("mkfs.xfs").arg("-V").output().is_ok_and(|o| o.status.success());
    if !have_mkfs {
        crate::skip("mkfs.xfs not installed (Debian package xfsprogs)");
        return;
    }
    if !is_root() {
        crate::skip("a loop mount needs root");
        return;
    }
    let image_dir = tempfile::tempdir().unwrap();
    let image = image_dir.path().join("xfs.img");
    // 320 MiB sparse: mkfs.xfs refuses file systems below 300 MiB.
    std::fs::File::create(&image).unwrap().set_len(320 << 20).unwrap();
    let mkfs = std::process::Command::new("mkfs.xfs").args(["-q", "-f"]).arg(&image).output().unwrap();
    assert!(mkfs.status.success(), "{}", String::from_utf8_lossy(&mkfs.stderr));
    let image_arg = image.to_str().unwrap().to_string();
    let Some(m) = mount_or_skip("an xfs loop device", &["-o", "loop", &image_arg]) else { return };
    let doc = quick_run(&m.point, "0.002");
    assert_complete(&doc);
}

#[test]
fn ctrl_c_removes_the_test_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start_long_run(dir.path());
    assert!(!leftovers(dir.path()).is_empty(), "the run never created its file");
    interrupt(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(leftovers(dir.path()).is_empty(), "left behind: {:?}", leftovers(dir.path()));
}

#[test]
fn broken_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("syncbench");
    let mut child = std::process::Command::new(bin)
        .args(["run", "--mock-timing", "1", "--histogram"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end at once: every write to stdout fails with EPIPE.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Wait until `dir` holds the run's own files (it has started measuring), at most 20 s.
fn wait_for_start(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while leftovers(dir).iter().all(|n| n.contains("lock")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `syncbench run` of plain writes for 30 s in `dir`, in the background, once it has made its files.
fn start_long_run(dir: &Path) -> std::process::Child {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["run", "--secs", "30", "--sections", "e", "--methods", "write"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_start(dir);
    child
}

/// SIGINT, as Ctrl-C sends it.
fn interrupt(child: &std::process::Child) {
    let kill = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
}

#[test]
fn ctrl_c_prints_and_exports_the_finished_rounds_marked_partial() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("partial.json");
    let bin = assert_cmd::cargo::cargo_bin("syncbench");
    // One case in 10 rounds of 0.75 to 3.15 s each (warmup 0.15 s, then at least 0.6 s, at most the
    // round's 3 s): 6 s after the test file appears (its preparation takes a second or two) at least one
    // round has finished, and all ten cannot have (at least 7.5 s).
    let child = std::process::Command::new(bin)
        .args(["run", "--secs", "30", "--rounds", "10", "--sections", "e", "--methods", "write", "--json"])
        .arg(&json)
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_start(dir.path());
    std::thread::sleep(Duration::from_secs(6));
    interrupt(&child);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("PARTIAL: interrupted"), "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["partial"], true);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    for r in results {
        let rounds = r["rounds_ops_per_s"].as_array().unwrap().len();
        assert!((1..10).contains(&rounds), "the finished rounds, not all ten: {r}");
        assert!(r["ops"].as_u64().unwrap() > 0);
    }
    assert!(leftovers(dir.path()).is_empty(), "left behind: {:?}", leftovers(dir.path()));
}

#[test]
fn a_second_syncbench_in_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = start_long_run(dir.path());
    let second = syncbench().args(["run", "--sections", "a"]).arg(dir.path()).output().unwrap();
    // commit and pages take the same lock.
    let commit = syncbench().args(["commit", "--clients", "1", "--secs", "0.5"]).arg(dir.path()).output().unwrap();
    let pages = syncbench().args(["pages", "--quick"]).arg(dir.path()).output().unwrap();
    interrupt(&first);
    let _ = first.wait();
    for (what, out) in [("commit", &commit), ("pages", &pages)] {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains("another syncbench"), "{what}: {err}");
    }
    assert_eq!(second.status.code(), Some(2));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("another syncbench") && err.contains(&format!("pid {}", first.id())), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(leftovers(dir.path()).is_empty(), "left behind: {:?}", leftovers(dir.path()));
}

#[test]
fn leftovers_of_a_killed_run_are_reported_with_the_command_to_remove_them() {
    let dir = tempfile::tempdir().unwrap();
    // pid 999999999 cannot exist (pid_max is at most 2^22): a run killed with SIGKILL left this.
    let stale = dir.path().join(".syncbench-run-999999999-0");
    std::fs::write(&stale, b"left by a killed run").unwrap();
    let out = syncbench()
        .args(["run", "--secs", "0.05", "--rounds", "1", "--sections", "e", "--methods", "write"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let (stderr, stdout) = (String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    let rm = format!("rm -rf -- {}", stale.display());
    assert!(stderr.contains("1 leftover .syncbench-* file(s)") && stderr.contains(&rm), "{stderr}");
    assert!(stdout.contains(&rm), "the answer repeats it: {stdout}");
    assert_eq!(std::fs::read(&stale).unwrap(), b"left by a killed run", "reported, never touched");
}

#[test]
fn an_unwritable_export_destination_is_refused_before_measuring() {
    let Some(m) = mount_or_skip("a read-only tmpfs", &["-t", "tmpfs", "-o", "ro,size=4m", "tmpfs"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let json = m.point.join("out.json");
    let out = syncbench().args(["run", "--json"]).arg(&json).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--json") && err.contains("read-only file system"), "{err}");
    assert!(leftovers(dir.path()).is_empty());
}

/// syncbench under a file size limit of `bytes` (prlimit's RLIMIT_FSIZE), with SIGXFSZ ignored so that a
/// write beyond the limit fails with EFBIG instead of killing the process: the test files (16 MiB each)
/// fit, the `--background-writes` writer's 256 MiB file fails mid-run at the limit, for real.
pub(crate) fn syncbench_with_file_size_limit(bytes: u64) -> std::process::Command {
    let mut cmd = std::process::Command::new("sh");
    // An ignored signal stays ignored across exec (POSIX), through prlimit into syncbench.
    cmd.args(["-c", r#"trap "" XFSZ; exec prlimit --fsize="$0" -- "$@""#, &bytes.to_string()])
        .arg(assert_cmd::cargo::cargo_bin("syncbench"));
    cmd
}

/// What a run whose background writer failed must show: exit 1, one line on stderr naming the writer's
/// error, the part under writes marked failed in the text, and nothing left behind in `dir`.
pub(crate) fn assert_failed_under_writes(out: &std::process::Output, dir: &Path) {
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "stdout: {stdout}\nstderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("the background writer failed after 20 MiB: File too large"), "{stderr}");
    assert!(stderr.contains("the idle results are reported in full"), "{stderr}");
    assert!(stdout.contains("under background writes") && stdout.contains("FAILED, not measured"), "{stdout}");
    assert!(std::fs::read_dir(dir).unwrap().next().is_none(), "left behind in {}", dir.display());
}

/// A background writer that fails mid-run (here: its file reaches the file size limit) does not take the
/// idle results with it: they are printed and exported whole, the part under writes is marked failed.
#[test]
fn a_background_writer_failing_mid_run_leaves_the_idle_results_whole() {
    let (dir, out_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let json = out_dir.path().join("run.json");
    let out = syncbench_with_file_size_limit(20 << 20)
        .args(["run", "--sections", "a", "--methods", "fdatasync", "--secs", "1", "--rounds", "1"])
        .args(["--background-writes", "max", "--json"])
        .arg(&json)
        .arg(dir.path())
        .output()
        .unwrap();
    assert_failed_under_writes(&out, dir.path());
    assert!(String::from_utf8_lossy(&out.stdout).contains("fdatasync"));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert!(results[0]["ops"].as_u64().unwrap() > 0 && results[0]["error"].is_null(), "{}", results[0]);
    let under = &doc["background_writes"];
    assert!(under["writer"]["error"].as_str().unwrap().contains("File too large"), "{under}");
    assert_eq!(under["results"].as_array().unwrap().len(), 0, "nothing is labelled as measured under writes");
}
