//! `syncbench fsync-errors` against the real kernel: the ext4 case as root, and input errors anywhere.

use assert_cmd::Command;
use predicates::str::contains;

#[test]
fn unknown_file_system_is_a_usage_error() {
    Command::cargo_bin("syncbench")
        .unwrap()
        .args(["fsync-errors", "--fs", "ext4,zfs"])
        .assert()
        .code(2)
        .stderr(contains("invalid value 'zfs' for --fs"));
}

/// An export target that cannot be written is refused before anything is mounted, in one line.
#[test]
fn an_unwritable_export_target_is_refused_before_anything_runs() {
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["fsync-errors", "--fs", "ext4", "--csv", "/nonexistent-dir/x.csv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--csv /nonexistent-dir/x.csv: directory /nonexistent-dir does not exist"), "{stderr}");
}

#[cfg(not(feature = "fuse"))]
#[test]
fn without_the_fuse_feature_it_says_how_to_build_it() {
    Command::cargo_bin("syncbench")
        .unwrap()
        .args(["fsync-errors", "--fs", "ext4"])
        .assert()
        .code(2)
        .stderr(contains("--features fuse"));
}

/// The environment variable that marks every process a test run starts: syncbench inherits it and passes it
/// on to whatever it runs (losetup, mkfs, mount, a FUSE helper), so a leftover process of that run carries it
/// even after syncbench has exited and the process was reparented.
const RUN_TAG_VAR: &str = "SYNCBENCH_TEST_RUN_TAG";

/// A tag no other run (of this or any concurrent test process) uses.
fn new_run_tag(label: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    format!("{label}-{}-{n}-{nanos}", std::process::id())
}

/// Live processes tied to one test run: those whose environment holds `RUN_TAG_VAR=tag`, or whose command
/// line names the run's private directory (`dir_tag`), as `pid: command line`. Processes that vanish or
/// cannot be read while scanning are not the run's (a process started by the run is readable by the test).
fn processes_of_run(tag: &str, dir_tag: &str) -> Vec<String> {
    let marker = format!("{RUN_TAG_VAR}={tag}");
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let tagged = environ.split(|&b| b == 0).any(|var| var == marker.as_bytes());
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if tagged || (!dir_tag.is_empty() && cmdline.contains(dir_tag)) {
            found.push(format!("{name}: {}", cmdline.trim()));
        }
    }
    found
}

/// The process check itself must be able to fail: a tagged process is found, and is gone once killed.
#[test]
fn leftover_process_check_finds_a_process_of_the_run() {
    let tag = new_run_tag("self-check");
    let mut sleeper = std::process::Command::new("sleep").arg("30").env(RUN_TAG_VAR, &tag).spawn().unwrap();
    // Right after exec the kernel may not have set up the new environment yet (it reads as empty): poll.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut found = processes_of_run(&tag, "");
    while found.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
        found = processes_of_run(&tag, "");
    }
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with(&format!("{}: sleep 30", sleeper.id())), "{found:?}");
    assert!(processes_of_run(&tag, "").is_empty());
    assert!(processes_of_run(&new_run_tag("other"), "").is_empty(), "untagged processes are not counted");
}

#[cfg(feature = "fuse")]
mod as_root {
    use super::{RUN_TAG_VAR, new_run_tag, processes_of_run};
    use crate::skip;
    use std::process::Command;

    /// Why the real experiment cannot run here, if it cannot.
    fn missing_prerequisite() -> Option<String> {
        crate::missing_stack_prerequisite(&["losetup", "mkfs.ext4", "mount", "umount"])
    }

    /// Mounts, loop devices, directories and processes a run with this pid and run tag may have left behind,
    /// and the loop devices this test's syncbench attached that are still attached, whatever their backing
    /// files read.
    /// A process of the run that is still exiting gets up to 2 s to go.
    fn leftovers(pid: u32, run_tag: &str) -> Vec<String> {
        let tag = format!(".syncbench-fsync-errors-{pid}-");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut processes = processes_of_run(run_tag, &tag);
        while !processes.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            processes = processes_of_run(run_tag, &tag);
        }
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let loops =
            Command::new(syncbench::proof::lab::prereq::find_program("losetup").unwrap()).arg("-a").output().unwrap();
        let dirs: Vec<String> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|name| name.starts_with(&tag))
            .collect();
        let mut found: Vec<String> =
            mounts.lines().filter(|l| l.contains(&tag)).map(|l| format!("mount: {l}")).collect();
        found.extend(
            String::from_utf8_lossy(&loops.stdout).lines().filter(|l| l.contains(&tag)).map(|l| format!("loop: {l}")),
        );
        found.extend(dirs.into_iter().map(|d| format!("dir: {d}")));
        found.extend(processes.into_iter().map(|p| format!("process: {p}")));
        found.extend(crate::attached_loops::still_attached());
        found
    }

    /// Poll the mount table until a mount of the run with this pid shows up (or 60 s pass).
    fn wait_for_first_mount(pid: u32) {
        let tag = format!(".syncbench-fsync-errors-{pid}-");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            if std::fs::read_to_string("/proc/self/mountinfo").unwrap().contains(&tag) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("no mount of run {pid} appeared within 60 s");
    }

    #[test]
    fn ext4_first_fsync_after_injected_failure_is_eio_and_runs_leave_nothing_behind() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("fsync-errors ext4 case needs root, /dev/fuse, losetup and mkfs.ext4 ({why})"));
        }
        // Twice: the second run must find the machine as clean as the first did.
        for run in 1..=2 {
            let run_tag = new_run_tag("ext4");
            let child = crate::attached_loops::private(&mut Command::new(assert_cmd::cargo::cargo_bin("syncbench")))
                .args(["fsync-errors", "--fs", "ext4", "--json", "-"])
                .env(RUN_TAG_VAR, &run_tag)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            let output = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "run {run}: {:?}\n{stderr}", output.status);
            let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(json["schema"], "syncbench/v1");
            let result = &json["fsync_errors"]["results"][0];
            assert_eq!(result["fs"], "ext4");
            assert_eq!(result["error"], serde_json::Value::Null, "run {run}: {result}");
            let seen = &result["observed"];
            assert!(seen["injected_write_errors_at_first_fsync"].as_u64().unwrap() >= 1, "{seen}");
            assert_eq!(seen["fsync_first"], "EIO", "run {run}: {seen}");
            let left = leftovers(pid, &run_tag);
            assert!(left.is_empty(), "run {run} left behind: {left:#?}");
        }
    }

    #[test]
    fn a_failing_setup_is_reported_and_torn_down() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("fsync-errors setup-failure case needs root, /dev/fuse and losetup ({why})"));
        }
        // A mkfs.ext4 that formats nothing: FUSE and the loop device are up, then the mount fails.
        let fake_bin = tempfile::tempdir().unwrap();
        let fake_mkfs = fake_bin.path().join("mkfs.ext4");
        std::fs::write(&fake_mkfs, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&fake_mkfs, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", fake_bin.path().display(), std::env::var("PATH").unwrap_or_default());
        let run_tag = new_run_tag("setup-failure");
        let child = crate::attached_loops::private(&mut Command::new(assert_cmd::cargo::cargo_bin("syncbench")))
            .args(["fsync-errors", "--fs", "ext4"])
            .env("PATH", path)
            .env(RUN_TAG_VAR, &run_tag)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("no file system could be tested") && stderr.contains("mount"), "{stderr}");
        let left = leftovers(pid, &run_tag);
        assert!(left.is_empty(), "a failed setup left behind: {left:#?}");
    }

    #[test]
    fn ctrl_c_mid_run_tears_everything_down() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("fsync-errors interrupt case needs root, /dev/fuse and losetup ({why})"));
        }
        // A quiet machine runs all five cases in about 0.3 s, so a fixed delay could miss the run: signal as soon
        // as the first case has mounted something, with four more cases still to go.
        let run_tag = new_run_tag("interrupt");
        let child = crate::attached_loops::private(&mut Command::new(assert_cmd::cargo::cargo_bin("syncbench")))
            .args(["fsync-errors", "--fs", "ext4,ext4-journal,ext4-journal-write,xfs,btrfs"])
            .env(RUN_TAG_VAR, &run_tag)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        wait_for_first_mount(pid);
        let killed = Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap();
        assert!(killed.success());
        let output = child.wait_with_output().unwrap();
        // 130 from our handler; on a machine so loaded that the signal beat the handler's installation, the
        // default action killed it before anything was set up, and the leftover check below still applies.
        let killed_early = std::os::unix::process::ExitStatusExt::signal(&output.status) == Some(2);
        assert!(
            output.status.code() == Some(130) || killed_early,
            "{:?}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let left = leftovers(pid, &run_tag);
        assert!(left.is_empty(), "Ctrl-C left behind: {left:#?}");
    }
}
