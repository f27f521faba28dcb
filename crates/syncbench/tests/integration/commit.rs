//! `syncbench commit` end to end: JSON shape, CSV, cleanup, and bad input.

use assert_cmd::Command;
use std::path::Path;

fn syncbench() -> Command {
    Command::cargo_bin("syncbench").unwrap()
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn commit_json_has_one_point_per_client_count_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = syncbench()
        .args(["commit", dir.path().to_str().unwrap(), "--clients", "1,3", "--with-baseline", "--secs", "1"])
        .args(["--record-size", "100", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "syncbench/v1");
    assert!(doc["environment"].is_object());
    assert_eq!(doc["commit"]["method"], "fdatasync");
    assert_eq!(doc["commit"]["record_size_bytes"], 100);
    let points = doc["commit"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    let modes: Vec<(u64, bool)> =
        points.iter().map(|p| (p["clients"].as_u64().unwrap(), p["group_commit"].as_bool().unwrap())).collect();
    assert_eq!(modes, vec![(1, false), (1, true), (3, false), (3, true)]);
    for p in points {
        assert!(p["commits"].as_u64().unwrap() > 0, "{p}");
        assert!(p["commits_per_s"].as_f64().unwrap() > 0.0);
        assert!(p["syncs_per_s"].as_f64().unwrap() > 0.0);
        assert!(p["sync_latency_ns_mean"].as_f64().unwrap() > 0.0);
        assert!(p["commits_per_sync"].as_f64().unwrap() >= 0.8, "{p}"); // window edges: a flush may end after t1
        for key in ["p50", "p99", "p999", "max", "mean"] {
            assert!(p["latency_ns"][key].as_f64().unwrap() > 0.0, "{key}");
        }
        assert!(p["duration_s"].as_f64().unwrap() > 0.1);
        if !p["group_commit"].as_bool().unwrap() {
            // One flush per commit, but the point is measured in rounds and each round's window can cut a
            // sync off at either edge: allow two syncs per round, not a ratio (short rounds on a slow disk
            // hold only a few commits).
            let commits = p["commits"].as_f64().unwrap();
            let syncs = p["syncs_per_s"].as_f64().unwrap() * p["duration_s"].as_f64().unwrap();
            let edges = 2.0 * p["rounds_commits_per_s"].as_array().map_or(6, |r| r.len()) as f64;
            assert!((commits - syncs).abs() <= edges.max(0.25 * commits), "naive log: one flush per commit: {p}");
        }
    }
    assert!(leftovers(dir.path()).is_empty(), "left behind: {:?}", leftovers(dir.path()));
}

#[test]
fn commit_csv_markdown_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("out.csv");
    let out = syncbench()
        .args(["commit", dir.path().to_str().unwrap(), "--clients", "2", "--secs", "0.1", "--method", "none"])
        .arg("--csv")
        .arg(&csv_path)
        .arg("--markdown")
        .arg(dir.path().join("out.md"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("NOT durable"), "{table}");
    assert!(table.contains("commits/s"));
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("method,record_size_bytes,clients,commit_delay_us,commit_delay_count,group_commit"));
    assert!(lines[1].starts_with("write,256,2,0,0,true,"));
    std::fs::remove_file(csv_path).unwrap();
    let md = std::fs::read_to_string(dir.path().join("out.md")).unwrap();
    assert!(md.contains("| 2 | 0 | group |"), "{md}");
    std::fs::remove_file(dir.path().join("out.md")).unwrap();
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn commit_bad_input_is_one_line_and_exit_2_leaving_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let missing = dir.path().join("nope");
    let bad_json = dir.path().join("no-such-dir").join("out.json");
    for args in [
        vec!["commit", d, "--json", bad_json.to_str().unwrap()],
        vec!["commit", d, "--json", "-", "--csv", "-"],
        vec!["commit", d, "--method", "open_sync"],
        vec!["commit", d, "--clients", "0"],
        vec!["commit", d, "--secs", "0"],
        vec!["commit", missing.to_str().unwrap()],
    ] {
        let out = syncbench().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn commit_ctrl_c_removes_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("syncbench");
    let child = std::process::Command::new(bin)
        .args(["commit", dir.path().to_str().unwrap(), "--clients", "4", "--secs", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the log directory exists, i.e. the measurement is running.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while leftovers(dir.path()).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!leftovers(dir.path()).is_empty(), "syncbench commit never created its directory");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let sent = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(leftovers(dir.path()).is_empty(), "left behind: {:?}", leftovers(dir.path()));
}

/// `commit --background-writes` whose writer fails mid-run: the idle points are printed and exported.
#[test]
fn commit_keeps_its_idle_points_when_the_background_writer_fails() {
    let (dir, out_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let json = out_dir.path().join("commit.json");
    let out = crate::run::syncbench_with_file_size_limit(20 << 20)
        .args(["commit", "--clients", "1", "--secs", "0.5", "--background-writes", "max", "--json"])
        .arg(&json)
        .arg(dir.path())
        .output()
        .unwrap();
    crate::run::assert_failed_under_writes(&out, dir.path());
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let points = doc["commit"]["points"].as_array().unwrap();
    assert!(points.len() == 1 && points[0]["commits"].as_u64().unwrap() > 0, "{points:?}");
    let under = &doc["background_writes"];
    assert!(under["writer"]["error"].as_str().unwrap().contains("File too large"), "{under}");
    assert_eq!(under["points"].as_array().unwrap().len(), 0);
}
