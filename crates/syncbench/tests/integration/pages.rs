//! `syncbench pages`: usage errors, a short run's JSON and CSV, cleanup, and a real kill -9 of a running
//! workload followed by recovery with every acknowledged transaction present.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Small and fast: 2,000 accounts, 4 KiB pages, a pool that forces evictions, a 32-batch ring.
const SMALL: [&str; 10] = [
    "--accounts-per-branch",
    "2000",
    "--page-size",
    "4096",
    "--dw-batch",
    "8",
    "--buffer-pool",
    "160KiB",
    "--dw-ring",
    "1MiB",
];

fn leftovers(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect()
}

#[test]
fn unknown_mode_is_a_usage_error_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--mode", "none,raid"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("raid") && stderr.contains("none, fpw, dw, atomic"), "{stderr}");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn too_small_buffer_pool_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--buffer-pool", "64KiB", "--page-size", "8192"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--buffer-pool"));
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn short_run_reports_every_mode_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--mode", "none,fpw,dw,atomic", "--secs", "0.4", "--checkpoint-secs", "0.1", "--json", "-"])
        .args(SMALL)
        .arg("--csv")
        .arg(&csv)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["schema"], "syncbench/v1");
    let rows = json["pages"]["rows"].as_array().unwrap();
    assert_eq!(rows.iter().map(|r| r["mode"].as_str().unwrap()).collect::<Vec<_>>(), ["none", "fpw", "dw", "atomic"]);
    for r in &rows[..3] {
        assert_eq!(r["supported"], true);
        assert!(r["tps"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["latency_ns"]["p99"].as_u64().unwrap() >= r["latency_ns"]["p50"].as_u64().unwrap());
        assert!(r["wal_bytes_per_txn"].as_f64().unwrap() > 0.0);
        for key in ["fpi_share", "data_bytes_per_txn", "fsyncs_per_txn", "checkpoint_duration_s_mean"] {
            assert!(r[key].is_number(), "{key} in {r}");
        }
    }
    assert_eq!(rows[0]["fpi_share"], 0.0);
    assert!(rows[1]["fpi_share"].as_f64().unwrap() > 0.0, "fpw logs page images");
    // atomic: either it ran, or it says why not.
    assert!(rows[3]["supported"] == true || rows[3]["error"].as_str().is_some_and(|e| !e.is_empty()));
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv_text.lines().count(), 5);
    assert!(csv_text.starts_with("mode,supported,error,buffer_pool_bytes,tps"));
    assert_eq!(leftovers(dir.path()), vec![csv], "only the CSV the user asked for remains");
}

/// `syncbench pages DIR --mode dw` with its log and double-write area in `wal` and `dw`.
fn dw_with_dirs(dir: &Path, wal: &Path, dw: &Path, secs: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"));
    cmd.args(["pages", "--mode", "dw", "--secs", secs]).args(SMALL);
    cmd.arg("--wal-dir").arg(wal).arg("--dw-dir").arg(dw).arg(dir);
    cmd
}

#[test]
fn wal_and_dw_dirs_get_their_own_subdirectories() {
    let (dir, wal, dw) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = dw_with_dirs(dir.path(), wal.path(), dw.path(), "0.2").args(["--json", "-"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for d in [&dir, &wal, &dw] {
        assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
    }
}

fn ack_lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn both_dw_designs_run_side_by_side_and_an_unknown_one_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--mode", "dw", "--dw-design", "pipelined,2012", "--secs", "0.3", "--json", "-"])
        .args(SMALL)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["pages"]["rows"].as_array().unwrap();
    let designs: Vec<_> = rows.iter().map(|r| r["dw_design"].as_str().unwrap()).collect();
    assert_eq!(designs, ["pipelined", "2012"]);
    for r in rows {
        assert!(r["tps"].as_f64().unwrap() > 0.0, "{r}");
        for key in ["evictions_waited_for_dw", "dw_syncs_per_txn", "dw_pages_written_ahead"] {
            assert!(r[key].is_number(), "{key} in {r}");
        }
    }
    assert!(leftovers(dir.path()).is_empty());
    assert_eq!(json["pages"]["dw_ring_batches"], 32, "1 MiB of 8-page batches of 4 KiB");
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--mode", "dw", "--dw-design", "pipelined", "--dw-ring", "128KiB"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--dw-ring 128KiB holds 0 batches of 64 8192-byte pages; it needs 8"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(leftovers(dir.path()).is_empty());
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--mode", "dw", "--dw-design", "2013"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("invalid value '2013' for --dw-design") && stderr.contains("2012, pipelined"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn kill_9_then_recovery_keeps_every_acknowledged_transaction_dw_pipelined() {
    kill_then_recover_in("dw", &["--dw-design".as_ref(), "pipelined".as_ref()]);
}

fn kill_then_recover(mode: &str) {
    kill_then_recover_in(mode, &[]);
}

/// Run `mode` with `extra` flags, kill -9 it once 500 transactions are acknowledged, recover with
/// `--recover` and check every acknowledged transaction is present.
fn kill_then_recover_in(mode: &str, extra: &[&std::ffi::OsStr]) {
    let dir = tempfile::tempdir().unwrap();
    let acks = tempfile::tempdir().unwrap();
    let ack_log = acks.path().join("acks");
    let bin = assert_cmd::cargo::cargo_bin("syncbench");
    let mut child = std::process::Command::new(bin)
        .args(["pages", "--mode", mode, "--secs", "60", "--checkpoint-secs", "0.1", "--clients", "3"])
        .args(SMALL)
        .args(extra)
        .arg("--ack-log")
        .arg(&ack_log)
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while ack_lines(&ack_log) < 500 {
        assert!(Instant::now() < deadline, "{mode}: the workload acknowledged too little in 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no cleanup, no checkpoint, no flush
    child.wait().unwrap();
    // The killed run leaves its store and its directory lock (reported by the next run in DIR).
    let (locks, stores): (Vec<PathBuf>, Vec<PathBuf>) = leftovers(dir.path())
        .into_iter()
        .partition(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".syncbench-lock-")));
    assert_eq!((stores.len(), locks.len()), (1, 1), "the killed run leaves its store: {stores:?} {locks:?}");
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--recover"])
        .arg(&stores[0])
        .arg("--ack-log")
        .arg(&ack_log)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{mode}: {stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("invariant holds") && stdout.contains("acknowledged present"), "{stdout}");
    assert_eq!(leftovers(dir.path()), locks, "--recover removes the store it checked (the lock is not its)");
}

#[test]
fn kill_9_then_recovery_keeps_every_acknowledged_transaction_dw() {
    kill_then_recover("dw");
}

#[test]
fn kill_9_then_recovery_keeps_every_acknowledged_transaction_fpw() {
    kill_then_recover("fpw");
}

#[test]
fn kill_9_then_recovery_keeps_every_acknowledged_transaction_none() {
    kill_then_recover("none");
}

/// The log and the double-write area live elsewhere: the settings file records where, and --recover
/// finds them there (and removes them with the store).
#[test]
fn kill_9_then_recovery_with_wal_dir_and_dw_dir() {
    let (wal, dw) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let flags = [
        std::ffi::OsStr::new("--wal-dir"),
        wal.path().as_os_str(),
        std::ffi::OsStr::new("--dw-dir"),
        dw.path().as_os_str(),
    ];
    kill_then_recover_in("dw", &flags);
    for d in [&wal, &dw] {
        assert!(leftovers(d.path()).is_empty(), "--recover removes what the run left: {:?}", leftovers(d.path()));
    }
}

/// A store whose settings name a --wal-dir directory that is gone: one line, exit 2, nothing removed.
#[test]
fn recover_with_a_missing_wal_dir_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join(".syncbench-pages-1-0");
    std::fs::create_dir(&store).unwrap();
    let gone = dir.path().join(".syncbench-pages-wal-1-1");
    let settings = serde_json::json!({
        "mode": "dw", "page_size": 4096, "dw_batch": 8, "buffer_pool_bytes": 163840, "scale": 1,
        "accounts_per_branch": 2000, "wal_dir": gone, "dw_dir": null,
    });
    std::fs::write(store.join("syncbench-pages.json"), settings.to_string()).unwrap();
    let out = Command::cargo_bin("syncbench").unwrap().args(["pages", "--recover"]).arg(&store).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--wal-dir") && stderr.contains("missing"), "{stderr}");
    assert!(store.is_dir(), "the store is kept for another try");
}

/// Settings written by the run name the directories by absolute path.
#[test]
fn settings_record_wal_and_dw_dirs() {
    let (dir, wal, dw) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut child = dw_with_dirs(dir.path(), wal.path(), dw.path(), "60")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let settings = loop {
        // The store, not the directory lock next to it.
        let found = leftovers(dir.path()).into_iter().find(|s| s.is_dir()).map(|s| s.join("syncbench-pages.json"));
        if let Some(text) = found.and_then(|p| std::fs::read_to_string(p).ok()).filter(|t| !t.is_empty()) {
            break serde_json::from_str::<serde_json::Value>(&text).unwrap();
        }
        assert!(Instant::now() < deadline, "the run never wrote its settings");
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    for (key, parent) in [("wal_dir", &wal), ("dw_dir", &dw)] {
        let recorded = PathBuf::from(settings[key].as_str().unwrap());
        assert!(recorded.is_absolute(), "{settings}");
        assert_eq!(recorded.parent().unwrap(), parent.path().canonicalize().unwrap(), "{settings}");
    }
}

#[test]
fn recover_refuses_a_directory_syncbench_did_not_create() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("syncbench").unwrap().args(["pages", "--recover"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(dir.path().exists());
}

#[test]
fn ctrl_c_removes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["pages", "--mode", "dw", "--secs", "60"])
        .args(SMALL)
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !leftovers(dir.path()).iter().any(|p| p.is_dir()) {
        assert!(Instant::now() < deadline, "the run never created its store");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300)); // mid-run
    let sent = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
}

#[test]
fn too_small_a_file_system_is_refused_up_front_in_one_line() {
    // 24 MiB holds the tables of scale 1 (about 10 MiB) but not the log's segments as well.
    let mount = crate::run::mount_or_skip("a 24 MiB tmpfs", &["-t", "tmpfs", "-o", "size=24m", "tmpfs"]);
    let Some(m) = mount else { return };
    let out = Command::cargo_bin("syncbench").unwrap().args(["pages", "--quick"]).arg(&m.point).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("free but syncbench pages needs") && stderr.contains("--scale"), "{stderr}");
    assert_eq!(stderr.matches("os error").count(), 0, "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(leftovers(&m.point).is_empty(), "{:?}", leftovers(&m.point));
    // The same file system is enough for a small bank with the log elsewhere.
    let wal = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--mode", "none", "--secs", "0.2"])
        .args(SMALL)
        .arg("--wal-dir")
        .arg(wal.path())
        .arg(&m.point)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn quick_json_carries_each_modes_rounds_and_interval() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--quick", "--mode", "none,dw", "--json", "-"])
        .args(SMALL)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["pages"]["checkpoint_secs"], 1.0, "--quick checkpoints every second");
    for r in json["pages"]["rows"].as_array().unwrap() {
        let rounds: Vec<f64> = r["rounds_tps"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(rounds.len(), 3, "{r}");
        assert!(rounds.iter().all(|x| *x > 0.0), "{r}");
        let (tps, low) = (r["tps"].as_f64().unwrap(), r["tps_low"].as_f64().unwrap());
        assert!(low > 0.0 && low <= tps, "{r}");
        if r["lower_bound"] != true {
            assert!(r["tps_high"].as_f64().unwrap() >= tps, "{r}");
        }
        assert!(r["checkpoints"].as_u64().unwrap() >= 1, "every mode checkpoints with --quick: {r}");
    }
    assert!(leftovers(dir.path()).is_empty());
}
