//! Ctrl-C (SIGINT) in `commit` and `pages`: what finished is printed and exported, marked partial, as
//! `run` does (tests/integration/run.rs), the exit code is 130 and nothing is left in DIR. Each test waits
//! until the first round of the first point or row has finished — seen in DIR, where every round makes a
//! directory of its own only after the previous round's result was kept — and then interrupts.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The names in `dir` (recursively one level into `.syncbench-*` directories) that start with `prefix`.
fn names_under(dir: &Path, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".syncbench-") && entry.path().is_dir() {
            for inner in std::fs::read_dir(entry.path()).into_iter().flatten().flatten() {
                let inner = inner.file_name().to_string_lossy().into_owned();
                if inner.starts_with(prefix) {
                    found.insert(inner);
                }
            }
        }
        if name.starts_with(prefix) {
            found.insert(name);
        }
    }
    found
}

/// Wait until `dir` has shown two different names starting with `prefix` (the second round's directory
/// was made, so the first round finished), at most 120 s; panics if the child ended first.
fn wait_for_second_round(child: &mut Child, dir: &Path, prefix: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = BTreeSet::new();
    while seen.len() < 2 {
        assert!(Instant::now() < deadline, "no second round in 120 s; seen {seen:?}");
        assert!(child.try_wait().unwrap().is_none(), "ended before its second round; seen {seen:?}");
        seen.extend(names_under(dir, prefix));
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn interrupt(child: &Child) {
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
}

/// Run `args` on `dir`, interrupt it once its second round started, and check what every partial result
/// shares: exit 130, the answer opening with the marker, the JSON at `json` marked partial, DIR empty of
/// ours. Returns the JSON.
fn interrupted(args: &[&str], dir: &Path, round_prefix: &str, json: &Path) -> Value {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(args)
        .arg("--json")
        .arg(json)
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_second_round(&mut child, dir, round_prefix);
    interrupt(&child);
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("answer:\n  PARTIAL: interrupted"), "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(doc["partial"], true);
    assert!(ours_left_in(dir).is_empty(), "left behind: {:?}", ours_left_in(dir));
    doc
}

fn ours_left_in(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
    names.filter(|n| n.starts_with(".syncbench-")).collect()
}

#[test]
fn ctrl_c_in_commit_prints_and_exports_the_finished_points_marked_partial() {
    let (dir, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (json, csv) = (out.path().join("commit.json"), out.path().join("commit.csv"));
    // Two points in 6 rounds of 3 s: when the second point's first round starts, the first point has one
    // finished round and the second none; all six rounds of both take 36 s.
    let csv_flag = csv.to_str().unwrap();
    let args = ["commit", "--clients", "1,2", "--secs", "18", "--method", "write", "--csv", csv_flag];
    let doc = interrupted(&args, dir.path(), "point-", &json);
    let points = doc["commit"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "only the point with a finished round: {points:?}");
    let rounds = points[0]["rounds_commits_per_s"].as_array().unwrap().len();
    assert!((1..6).contains(&rounds), "the finished rounds, not all six: {}", points[0]);
    assert!(points[0]["commits"].as_u64().unwrap() > 0);
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 2, "a header and the finished point: {csv}");
}

#[test]
fn ctrl_c_in_pages_prints_and_exports_the_finished_rows_marked_partial() {
    let (dir, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (json, markdown) = (out.path().join("pages.json"), out.path().join("pages.md"));
    // Two rows in 3 rounds of 4 s, each round on a store of its own, made and loaded as the round starts.
    let small = ["--accounts-per-branch", "2000", "--page-size", "4096", "--dw-batch", "8", "--buffer-pool", "160KiB"];
    let md_flag = markdown.to_str().unwrap();
    let args = [
        &["pages", "--mode", "none,fpw", "--secs", "12", "--checkpoint-secs", "1"][..],
        &small,
        &["--markdown", md_flag],
    ];
    let doc = interrupted(&args.concat(), dir.path(), ".syncbench-pages-", &json);
    let rows = doc["pages"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "only the row with a finished round: {rows:?}");
    let rounds = rows[0]["rounds_tps"].as_array().unwrap().len();
    assert!((1..3).contains(&rounds), "the finished rounds, not all three: {}", rows[0]);
    assert!(rows[0]["txns"].as_u64().unwrap() > 0, "{}", rows[0]);
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    assert!(markdown.starts_with("**PARTIAL: interrupted"), "{markdown}");
}
