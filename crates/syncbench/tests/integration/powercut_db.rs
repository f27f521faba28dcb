//! `syncbench powercut db` and `powercut run` as root on lab disks: SQLite keeps every acknowledged commit on
//! an honest disk, its negative control and a planted early ack are caught, the generic form finds a load
//! that does not sync; bad input is one line, exit 2, and leaves no mount, loop device or process; Ctrl-C
//! mid-cut prints and exports what finished, marked partial, and leaves nothing either.

#![cfg(feature = "fuse")]

use crate::skip;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// syncbench with this test's private registry: the loop devices it attaches are noted there.
fn syncbench() -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("syncbench"));
    crate::attached_loops::private(&mut command);
    command
}

fn missing_prerequisite() -> Option<String> {
    crate::missing_stack_prerequisite(&["losetup", "mkfs.ext4", "mount", "umount", "sqlite3"])
}

macro_rules! need_root_lab {
    () => {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("powercut db needs root, /dev/fuse, losetup, mkfs.ext4 and sqlite3 ({why})"));
        }
    };
}

/// What a process left that names its lab directory (`.syncbench-lab-<pid>-`): mounts, loop devices and
/// processes (a sqlite3 or shell on the mount); and any `.syncbench-*-<pid>-*` in TMPDIR (the lab's
/// directories, a driver's private one with the server's log and socket); and every loop device this test's
/// syncbench attached that is still attached, whatever its backing file reads.
pub(crate) fn leftovers(pid: u32) -> Vec<String> {
    let mut found = lab_leftovers(pid);
    found.extend(crate::attached_loops::still_attached());
    let ours = |name: &str| name.starts_with(".syncbench-") && name.contains(&format!("-{pid}-"));
    let tmp = std::fs::read_dir(std::env::temp_dir()).unwrap().flatten();
    found.extend(tmp.filter(|e| ours(&e.file_name().to_string_lossy())).map(|e| e.path().display().to_string()));
    found
}

fn lab_leftovers(pid: u32) -> Vec<String> {
    let tag = format!(".syncbench-lab-{pid}-");
    let mut found: Vec<String> = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&tag))
        .map(|l| format!("mount: {l}"))
        .collect();
    let loops = Command::new("losetup").arg("-a").output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    found.extend(loops.unwrap_or_default().lines().filter(|l| l.contains(&tag)).map(|l| format!("loop: {l}")));
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cwd = std::fs::read_link(entry.path().join("cwd")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(&tag) || cwd.to_string_lossy().contains(&tag) {
            found.push(format!("process {}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// Run `powercut` with `args` and `--json`: the output, the JSON's cells, and what it left behind.
pub(crate) fn run(args: &[&str], env: &[(&str, &str)]) -> (Output, Vec<serde_json::Value>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cells.json");
    let child = syncbench()
        .arg("powercut")
        .args(args)
        .args(["--json", json.to_str().unwrap()])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let cells = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map(|doc| doc["cells"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default();
    (out, cells, leftovers(pid))
}

pub(crate) fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Per cut: (acknowledged, lost, damaged in any way).
fn cuts(cell: &serde_json::Value) -> Vec<(u64, u64, bool)> {
    cell["cuts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let lost = c["verification"]["lost"].as_u64().unwrap_or(0);
            let broken = c["recovery_failure"].is_object()
                || c["read_error"].is_string()
                || c["integrity"]["ok"] == false
                || c["verification"]["balance_sum_off_by"].as_i64().unwrap_or(0) != 0;
            (c["acknowledged"].as_u64().unwrap(), lost, lost > 0 || broken)
        })
        .collect()
}

#[test]
fn sqlite_keeps_every_acknowledged_commit_on_an_honest_disk() {
    need_root_lab!();
    let args =
        ["db", "--db", "sqlite", "--set", "journal_mode=WAL", "--profile", "hdd-7200", "--fs", "ext4", "--cuts", "3"];
    let (out, cells, left) = run(&args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(cells.len(), 1);
    let per_cut = cuts(&cells[0]);
    assert_eq!(per_cut.len(), 3);
    assert!(per_cut.iter().all(|&(acked, _, damaged)| acked > 0 && !damaged), "{}", text(&out));
    assert!(cells[0]["version"].as_str().unwrap().starts_with("SQLite 3."));
    assert!(text(&out).contains("holds: every acknowledged write kept in 3 cuts"), "{}", text(&out));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn sqlite_synchronous_off_on_the_cheating_ssd_is_a_negative_control_that_loses() {
    need_root_lab!();
    let args = [
        "db",
        "--db",
        "sqlite",
        "--set",
        "synchronous=OFF",
        "--profile",
        "cheating-ssd",
        "--fs",
        "ext4",
        "--cuts",
        "2",
    ];
    let (out, cells, left) = run(&args, &[]);
    // Loss where it is expected does not fail the run.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(cuts(&cells[0]).iter().all(|&(_, _, damaged)| damaged), "every cut damaged: {}", text(&out));
    assert!(cells[0]["expected_loss"].as_str().unwrap().contains("synchronous=OFF"), "{}", text(&out));
    assert!(text(&out).contains("(negative control)") && text(&out).contains("loses as expected"), "{}", text(&out));
    assert!(left.is_empty(), "{left:?}");
}

/// The planted bug: the driver acknowledges before the COMMIT returns. The cut fails that COMMIT's fsync,
/// so the acknowledged transfer is missing unless the disk happened to destage it: 8 cuts, each catching it
/// about 2 times in 3 (a run on 2026-11-28 caught it in 4 of 6 and missed all 3 cuts of a third run).
#[test]
fn an_ack_sent_before_the_commit_returned_is_caught() {
    need_root_lab!();
    // The settings and disk of the test above, which keeps every ack without the plant.
    let args =
        ["db", "--db", "sqlite", "--set", "journal_mode=WAL", "--profile", "hdd-7200", "--fs", "ext4", "--cuts", "8"];
    let (out, cells, left) = run(&args, &[("SYNCBENCH_PLANT_EARLY_ACK", "1")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let lost: u64 = cuts(&cells[0]).iter().map(|c| c.1).sum();
    assert!(lost > 0, "{}", text(&out));
    assert!(text(&out).contains("FAILS") && text(&out).contains("was acknowledged but has no history row"));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn bad_input_is_one_line_exit_2_and_leaves_nothing() {
    need_root_lab!();
    let base = ["db", "--db", "sqlite", "--profile", "hdd-7200", "--fs", "ext4", "--cuts", "1"];
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 5] = [
        (&["--set", "journal_size=1"], &[], "no setting \"journal_size\""),
        (&["--set", "journal_mode=MEMORY"], &[], "refuses journal_mode=MEMORY"),
        (&["--set", "synchronous"], &[], "is not KEY=VALUE"),
        (&[], &[("SYNCBENCH_SQLITE3", "/nonexistent/sqlite3")], "is not a program"),
        (&["--profile", "no-such-disk"], &[], "no-such-disk"),
    ];
    for (extra, env, words) in cases {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let (out, _, left) = run(&args, env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(words), "{args:?}: {stderr}");
        assert!(left.is_empty(), "{args:?}: {left:?}");
    }
}

/// Not root: one line naming root, exit 2 (run as nobody through setpriv).
#[test]
fn not_root_is_refused_in_one_line() {
    need_root_lab!();
    let Some(setpriv) = syncbench::proof::lab::prereq::find_program("setpriv") else {
        return skip("setpriv is not installed (apt-get install util-linux)");
    };
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["powercut", "db", "--db", "sqlite", "--profile", "hdd-7200", "--fs", "ext4", "--cuts", "1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("root"), "{stderr}");
}

/// `powercut run` with a shell load of files: synced, every key survives; not synced (the planted loss),
/// the verify command's `lost` lines are counted and the run fails.
#[test]
fn the_generic_form_keeps_synced_keys_and_catches_a_load_that_does_not_sync() {
    need_root_lab!();
    let verify = "bad=0; while read k; do [ \"$(cat f.$k 2>/dev/null)\" = \"$k\" ] || { echo \"lost $k\"; bad=1; }; done; exit $bad";
    let synced = "i=0; while :; do i=$((i+1)); echo $i > f.$i; sync f.$i .; echo \"ack $i\"; done";
    let unsynced = "i=0; while :; do i=$((i+1)); echo $i > f.$i; echo \"ack $i\"; sleep 0.02; done";
    let base = ["run", "--profile", "hdd-7200", "--fs", "ext4", "--cuts", "2", "--verify", verify];
    let (out, cells, left) = run(&[&base[..], &["--load", synced]].concat(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(cuts(&cells[0]).iter().all(|&(acked, _, damaged)| acked > 0 && !damaged), "{}", text(&out));
    assert!(left.is_empty(), "{left:?}");

    let (out, cells, left) = run(&[&base[..], &["--load", unsynced]].concat(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(cuts(&cells[0]).iter().all(|&(_, lost, _)| lost > 0), "{}", text(&out));
    assert!(text(&out).contains("was acknowledged and is lost"), "{}", text(&out));
    assert!(left.is_empty(), "{left:?}");
}

/// SIGINT once the first cut is reported: exit 130, the table and the JSON marked partial, nothing left.
#[test]
fn ctrl_c_mid_campaign_reports_what_finished_as_partial_and_leaves_nothing() {
    need_root_lab!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cells.json");
    let mut child = syncbench()
        .args(["powercut", "db", "--db", "sqlite", "--profile", "hdd-7200", "--fs", "ext4", "--cuts", "50"])
        .args(["--json", json.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut line = String::new();
    while !line.contains(" cut 2:") {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() > 0, "ended before cut 2");
        assert!(Instant::now() < deadline, "no cut in time");
    }
    // Mid-cut: the second cut's load is running now.
    std::thread::sleep(Duration::from_millis(300));
    syncbench_sys::ptrace::send_signal(pid as i32, libc::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("(partial: interrupted"), "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["partial"], true);
    let done = doc["cells"][0]["cuts"].as_array().unwrap().len();
    assert!((2..50).contains(&done), "{done} cuts");
    let left = leftovers(pid);
    assert!(left.is_empty(), "{left:?}");
}
