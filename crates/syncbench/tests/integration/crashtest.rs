//! `syncbench crashtest` through the real binary: every mode passes hundreds of crash points (three
//! generations each: power losses, process crashes, media damage, concurrent clients) under both profiles
//! with and without fsync errors, with every key path's coverage counter non-zero (a series of 200
//! points or more fails otherwise); every deliberate engine bug fails with exit code 1 and a reproducer
//! that fails again on its own; bad input exits 2. Point counts are sized for CI's budget (debug build).

use assert_cmd::Command;

fn crashtest(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("syncbench").unwrap().arg("crashtest").args(args).assert()
}

fn stderr_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

/// Run `points` crash points of `mode` under each (profile, fsync errors) pair; all must pass.
fn assert_passes(mode: &str, runs: &[(&str, bool, &str)]) {
    for (profile, errors, points) in runs {
        let mut args = vec!["--mode", mode, "--points", points, "--seed", "1", "--profile", profile];
        if *errors {
            args.push("--fsync-errors");
        }
        let out = crashtest(&args).success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(stdout.contains(&format!("{points} crash points passed")), "{mode} {profile} {errors}: {stdout}");
    }
}

#[test]
fn wal_passes_2000_points_over_both_profiles_with_and_without_fsync_errors() {
    assert_passes(
        "wal",
        &[("strict", false, "500"), ("ext4", false, "500"), ("strict", true, "500"), ("ext4", true, "500")],
    );
}

/// 300 points (900 crash-and-recover cycles) for each profile, with and without fsync errors.
const EVERY_PROFILE_300_POINTS: [(&str, bool, &str); 4] =
    [("strict", false, "300"), ("ext4", false, "300"), ("strict", true, "300"), ("ext4", true, "300")];

/// The strict profile once caught the log retiring several segments under one directory fsync (see
/// `crashtest::wal::tests::retiring_many_segments_at_once_survives_out_of_order_namespace_crashes`).
#[test]
fn fpw_passes_300_points_per_profile_with_and_without_fsync_errors() {
    assert_passes("fpw", &EVERY_PROFILE_300_POINTS);
}

#[test]
fn dw_passes_300_points_per_profile_with_and_without_fsync_errors() {
    assert_passes("dw", &EVERY_PROFILE_300_POINTS);
}

#[test]
fn atomic_passes_300_points_per_profile() {
    assert_passes("atomic", &[("strict", true, "300"), ("ext4", false, "300")]);
}

#[test]
fn no_torn_page_protection_is_caught() {
    let failed = crashtest(&["--mode", "none", "--profile", "ext4", "--points", "2000", "--seed", "1"]).code(1);
    let stderr = stderr_of(&failed);
    assert!(stderr.contains("fails its checksum"), "{stderr}");
    assert!(stderr.contains("reproduce: syncbench crashtest --mode none"), "{stderr}");
}

#[test]
fn json_payload_counts_points_and_injected_errors() {
    let out = crashtest(&["--points", "300", "--seed", "5", "--fsync-errors", "--json", "-"]).success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["schema"], "syncbench/v1");
    assert_eq!(doc["environment"]["fs_type"], "simfs");
    let ct = &doc["crashtest"];
    assert_eq!(ct["passed"], true);
    assert_eq!(ct["points"], 300);
    assert_eq!(ct["cycles"], 900, "three generations per point");
    let coverage = ct["coverage"].as_object().unwrap();
    for required in ct["coverage_required"].as_array().unwrap() {
        assert!(coverage[required.as_str().unwrap()].as_u64().unwrap() > 0, "{required}: {ct}");
    }
    assert!(ct["points_after_ack"].as_u64().unwrap() > 100);
    assert!(ct["writeback_errors"].as_u64().unwrap() > 0, "errors were injected: {ct}");
    assert!(ct["engine_stops_after_error"].as_u64().unwrap() > 0, "the log stopped on them: {ct}");
    assert!(ct["failure"].is_null());
}

/// Run a deliberately broken engine: exit 1, a one-line reproducer, and the reproducer fails alone.
fn assert_caught(mode: &str, extra: &[&str]) {
    let mut args = vec!["--mode", mode, "--points", "2000", "--seed", "3"];
    args.extend_from_slice(extra);
    let failed = crashtest(&args).code(1);
    let stderr = stderr_of(&failed);
    let line = stderr.lines().find(|l| l.contains("reproduce: ")).unwrap_or_else(|| panic!("no reproducer: {stderr}"));
    let reproducer = line.split("reproduce: ").nth(1).unwrap();
    let argv: Vec<&str> = reproducer.split_whitespace().collect();
    assert_eq!(&argv[..2], ["syncbench", "crashtest"], "{reproducer}");
    let again = Command::cargo_bin("syncbench").unwrap().args(&argv[1..]).assert().code(1);
    assert_eq!(stderr_of(&again), stderr, "the reproducer finds the same failure");
}

#[test]
fn skipping_the_log_sync_is_caught() {
    assert_caught("wal", &["--engine-bug", "skip-log-sync"]);
}

#[test]
fn skipping_the_directory_fsync_is_caught_under_strict() {
    assert_caught("wal", &["--engine-bug", "skip-dir-fsync", "--profile", "strict"]);
}

#[test]
fn retrying_fsync_after_an_error_is_caught() {
    assert_caught("wal", &["--engine-bug", "retry-fsync", "--fsync-errors"]);
}

/// Fail-stop from every client: a log that fails only the failed flush's leader and carries on.
#[test]
fn a_failure_reported_only_to_its_leader_is_caught() {
    assert_caught("wal", &["--engine-bug", "fail-only-the-leader", "--fsync-errors"]);
}

#[test]
fn a_double_write_flush_that_skips_its_fsync_is_caught() {
    assert_caught("dw", &["--engine-bug", "dw-skip-fsync", "--profile", "ext4"]);
}

/// Concurrency: an acknowledgement before the flush's sync, a flush horizon past its batch.
#[test]
fn log_bugs_only_concurrent_commits_can_see_are_caught() {
    assert_caught("wal", &["--engine-bug", "ack-when-written"]);
    assert_caught("wal", &["--engine-bug", "flush-horizon-appended"]);
    assert_caught("fpw", &["--engine-bug", "ack-when-written"]);
}

/// Generations, process crashes and media damage.
#[test]
fn recovery_bugs_only_later_generations_process_crashes_or_media_damage_can_see_are_caught() {
    assert_caught("wal", &["--engine-bug", "keep-stale-tail"]);
    assert_caught("wal", &["--engine-bug", "trust-unsynced-at-open"]);
    assert_caught("wal", &["--engine-bug", "corruption-as-end"]);
    assert_caught("fpw", &["--engine-bug", "redo-skips-first-record"]);
}

/// Evictions, the write-ahead rule at the page write, double-write slots, untorn writes.
#[test]
fn page_store_bugs_are_caught() {
    assert_caught("fpw", &["--engine-bug", "evict-skip-write-ahead"]);
    assert_caught("dw", &["--engine-bug", "evict-skip-write-ahead"]);
    assert_caught("dw", &["--engine-bug", "dw-reuse-slot-before-home-sync"]);
    assert_caught("atomic", &["--engine-bug", "atomic-plain-write"]);
}

/// The page store commits through the same log: the log's bugs must be caught under the page workload.
#[test]
fn log_bugs_are_caught_under_the_page_workload_too() {
    for mode in ["fpw", "dw"] {
        assert_caught(mode, &["--engine-bug", "skip-log-sync"]);
        assert_caught(mode, &["--engine-bug", "skip-dir-fsync", "--profile", "strict"]);
        assert_caught(mode, &["--engine-bug", "retry-fsync", "--fsync-errors"]);
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let out = crashtest(&["--points", "0"]).code(2);
    let stderr = stderr_of(&out);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--points"), "{stderr}");
    crashtest(&["--profile", "zfs"]).code(2);
    let out = crashtest(&["--mode", "fpw", "--engine-bug", "dw-skip-fsync"]).code(2);
    assert!(stderr_of(&out).contains("needs --mode dw"));
    let out = crashtest(&["--mode", "wal", "--engine-bug", "evict-skip-write-ahead"]).code(2);
    assert!(stderr_of(&out).contains("needs a page-store mode"));
    let out = crashtest(&["--generations", "0"]).code(2);
    assert!(stderr_of(&out).contains("--generations"));
}

/// An export target that cannot be written is refused in one line before any crash point runs (a billion
/// points would take hours; the refusal takes no time).
#[test]
fn an_unwritable_export_target_is_refused_before_anything_runs() {
    let out = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["crashtest", "--points", "1000000000", "--markdown", "/nonexistent-dir/c.md"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--markdown /nonexistent-dir/c.md: directory /nonexistent-dir does not exist"), "{stderr}");
    assert!(out.stdout.is_empty());
}

/// CSV on stdout (the closing line moves to stderr) and OpenMetrics in a file, from one short series.
#[test]
fn csv_to_stdout_and_openmetrics_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("crashtest.prom");
    let out =
        crashtest(&["--points", "50", "--seed", "2", "--csv", "-", "--openmetrics", prom.to_str().unwrap()]).success();
    let csv = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let header = rows.headers().unwrap().clone();
    let row = rows.records().next().unwrap().unwrap();
    let field = |name: &str| row.get(header.iter().position(|h| h == name).unwrap()).unwrap().to_string();
    assert_eq!((field("mode"), field("passed"), field("points")), ("wal".into(), "true".into(), "50".into()));
    assert!(stderr_of(&out).contains("crash points passed"));
    let prom = std::fs::read_to_string(prom).unwrap();
    assert!(prom.contains("syncbench_crashtest_crash_points{dir=\"\",fs_type=\"simfs\",mode=\"wal\""), "{prom}");
    assert!(prom.contains("syncbench_crashtest_failed_points{") && prom.contains("} 0\n"), "{prom}");
}
