//! `syncbench crashtest` through the real binary: thousands of crash points pass on the reference log,
//! deliberate engine bugs fail with exit code 1 and a reproducer that fails again on its own, bad input
//! exits 2.

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
fn wal_passes_4000_points_over_both_profiles_with_and_without_fsync_errors() {
    assert_passes(
        "wal",
        &[("strict", false, "1000"), ("ext4", false, "1000"), ("strict", true, "1000"), ("ext4", true, "1000")],
    );
}

/// The bar: at least 2,000 crash points for each profile, with and without fsync errors.
const EVERY_PROFILE_2000_POINTS: [(&str, bool, &str); 4] =
    [("strict", false, "2000"), ("ext4", false, "2000"), ("strict", true, "2000"), ("ext4", true, "2000")];

/// The strict profile once caught the log retiring several segments under one directory fsync (see
/// `crashtest::wal::tests::retiring_many_segments_at_once_survives_out_of_order_namespace_crashes`).
#[test]
fn fpw_passes_2000_points_per_profile_with_and_without_fsync_errors() {
    assert_passes("fpw", &EVERY_PROFILE_2000_POINTS);
}

#[test]
fn dw_passes_2000_points_per_profile_with_and_without_fsync_errors() {
    assert_passes("dw", &EVERY_PROFILE_2000_POINTS);
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

#[test]
fn a_double_write_flush_that_skips_its_fsync_is_caught() {
    assert_caught("dw", &["--engine-bug", "dw-skip-fsync", "--profile", "ext4"]);
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
}
