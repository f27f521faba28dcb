//! One voice (issue #37): every command that reads syncbench JSON refuses a file of the wrong kind with the
//! same one line — what was given, what is accepted — and exit code 2. Exact strings: a reworded message
//! must be reworded here too, on purpose.

use assert_cmd::Command;
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1").join(name);
    path.to_str().unwrap().to_string()
}

fn syncbench() -> Command {
    Command::cargo_bin("syncbench").unwrap()
}

/// Run `args`; it must exit 2 with exactly `line` on stderr (after the leftover report of a dead syncbench,
/// if the machine has one) and nothing on stdout.
fn refused(args: &[&str], line: &str) {
    let out = syncbench().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let own: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("syncbench: left by ") && !l.contains("`syncbench cleanup`"))
        .collect();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(own, [format!("syncbench: {line}")], "{args:?}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

const RUN_FILES: &str = "run files (syncbench run --json or advise --json)";

#[test]
fn compare_names_the_file_of_the_wrong_kind_and_what_it_accepts() {
    let (run, commit, probe) = (fixture("run.json"), fixture("commit.json"), fixture("probe.json"));
    let commit_refused =
        format!("{commit} is a commit file; compare accepts {RUN_FILES}; chart commit files with syncbench report");
    refused(&["compare", &run, &commit], &commit_refused);
    refused(&["compare", &commit, &commit], &commit_refused);
    refused(&["compare", &run, &probe], &format!("{probe} is a probe file; compare accepts {RUN_FILES}"));
    let trace = fixture("trace.json");
    refused(&["compare", &run, &trace], &format!("{trace} is a trace file; compare accepts {RUN_FILES}"));
}

#[test]
fn report_refuses_what_it_cannot_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path().join("bare.json");
    std::fs::write(&bare, r#"{"schema":"syncbench/v1"}"#).unwrap();
    let out = tmp.path().join("r.html");
    let out = out.to_str().unwrap();
    let accepted = "report accepts run, commit, pages and probe files (their --json)";
    for (file, given) in [
        (fixture("crashtest.json"), "a crashtest file"),
        (fixture("trace.json"), "a trace file"),
        (fixture("fsync_errors.json"), "an fsync-errors file"),
        (bare.to_str().unwrap().to_string(), "a syncbench/v1 file with no results"),
    ] {
        refused(&["report", &file, "-o", out], &format!("{file} is {given}; {accepted}"));
    }
    assert!(!std::path::Path::new(out).exists(), "nothing is written when a file is refused");
    syncbench().args(["report", &fixture("probe.json"), "-o", out]).assert().success();
}

#[test]
fn advise_from_and_trace_baseline_refuse_files_without_run_results_in_the_same_words() {
    let commit = fixture("commit.json");
    refused(
        &["advise", "--from", &commit, "--for", "postgres"],
        &format!("{commit} is a commit file; advise --from accepts {RUN_FILES}"),
    );
    let crashtest = fixture("crashtest.json");
    refused(
        &["trace", "--baseline", &crashtest, "--", "true"],
        &format!("{crashtest} is a crashtest file; trace --baseline accepts {RUN_FILES}"),
    );
}
