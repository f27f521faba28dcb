//! `syncbench watch`: the textfile and state it writes, its refusals, SIGTERM, and the Prometheus rules it
//! ships, tested with Prometheus' own `promtool` (Debian's `prometheus` package, .ci/deps/watch.txt).

use assert_cmd::Command;
use predicates::str::contains;
use std::path::{Path, PathBuf};

fn syncbench() -> Command {
    Command::cargo_bin("syncbench").unwrap()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The value of the first sample of `metric` whose line contains every one of `labels`.
fn sample(text: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")) || l.starts_with(&format!("{metric} ")))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn once(dir: &Path, state: &Path, textfile: &Path) -> assert_cmd::assert::Assert {
    let d = dir.to_str().unwrap();
    let (s, t) = (state.to_str().unwrap(), textfile.to_str().unwrap());
    syncbench()
        .args(["watch", d, "--once", "--every", "4s", "--duty", "10%", "--state", s, "--openmetrics", t])
        .assert()
}

#[test]
fn once_writes_the_textfile_and_the_state_and_leaves_nothing_in_dir() {
    let (tmp, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (state, textfile) = (out.path().join("state.json"), out.path().join("syncbench.prom"));
    for round in 1..=2 {
        once(tmp.path(), &state, &textfile).success().stdout(contains("fdatasync_8k p99"));
        let text = std::fs::read_to_string(&textfile).unwrap();
        assert!(text.ends_with("# EOF\n"), "{text}");
        let latency =
            sample(&text, "syncbench_watch_commit_latency_seconds", &["case=\"fdatasync_8k\"", "quantile=\"0.99\""]);
        assert!(latency.is_some_and(|s| s > 0.0), "{text}");
        for metric in [
            "syncbench_watch_interval_seconds",
            "syncbench_watch_last_success_timestamp_seconds",
            "syncbench_watch_info",
        ] {
            assert!(sample(&text, metric, &[]).is_some(), "{metric} missing:\n{text}");
        }
        assert_eq!(sample(&text, "syncbench_watch_interval_seconds", &[]), Some(4.0));
        let state_json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        assert_eq!(state_json["intervals"], round);
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left in DIR: {left:?}");
    let beside: Vec<_> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(beside.len(), 2, "only the state and the textfile: {beside:?}");
}

#[test]
fn bad_flags_and_foreign_files_are_refused_with_one_line_and_nothing_written() {
    let (tmp, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let d = tmp.path().to_str().unwrap();
    for (args, says) in [
        (vec!["--every", "5 parsecs"], "invalid --every"),
        (vec!["--duty", "90%"], "invalid --duty"),
        (vec!["--every", "2s", "--duty", "1%"], "a canary needs at least"),
        (vec!["--once"], "--once needs --state"),
    ] {
        let mut cmd = syncbench();
        cmd.args(["watch", d]).args(&args);
        let assert = cmd.assert().code(2).stderr(contains(says));
        assert_eq!(String::from_utf8_lossy(&assert.get_output().stderr).lines().count(), 1, "{args:?}");
    }
    let (state, textfile) = (out.path().join("state.json"), out.path().join("other.prom"));
    std::fs::write(&textfile, "node_load1 0.5\n").unwrap();
    once(tmp.path(), &state, &textfile).code(2).stderr(contains("holds metrics syncbench did not write"));
    assert_eq!(std::fs::read_to_string(&textfile).unwrap(), "node_load1 0.5\n");
    std::fs::write(&state, "{\"not\": \"ours\"}").unwrap();
    once(tmp.path(), &state, &out.path().join("new.prom")).code(2).stderr(contains("not a syncbench watch state"));
    assert_eq!(std::fs::read_to_string(&state).unwrap(), "{\"not\": \"ours\"}");
    assert!(!out.path().join("new.prom").exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn a_second_watch_on_the_same_directory_is_refused_and_sigterm_leaves_whole_files() {
    let (tmp, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (d, textfile) = (tmp.path().to_str().unwrap(), out.path().join("s.prom"));
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["watch", d, "--every", "1s", "--duty", "50%", "--openmetrics", textfile.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !textfile.exists() {
        assert!(std::time::Instant::now() < deadline, "no textfile after 120 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    syncbench()
        .args(["watch", d, "--every", "1s", "--duty", "50%"])
        .assert()
        .code(2)
        .stderr(contains("another syncbench"));
    // SIGTERM at once, whatever the first is doing: a whole textfile, nothing left in DIR or beside it.
    std::process::Command::new("kill").args(["-TERM", &first.id().to_string()]).status().unwrap();
    let status = first.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(std::fs::read_to_string(&textfile).unwrap().ends_with("# EOF\n"));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "left in DIR");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1, "a temporary textfile was left");
}

fn promtool() -> Option<PathBuf> {
    syncbench::proof::fsync_errors::prereq::find_program("promtool")
}

fn promtool_run(args: &[&str], dir: &Path) -> std::process::Output {
    std::process::Command::new(promtool().unwrap()).args(args).current_dir(dir).output().unwrap()
}

#[test]
fn the_shipped_rules_pass_promtool_and_their_test_catches_a_planted_bug() {
    if promtool().is_none() {
        return crate::skip("promtool is not installed (Debian package prometheus)");
    }
    let rules_dir = repo_root().join("deploy/prometheus");
    let check = promtool_run(&["check", "rules", "syncbench-rules.yml"], &rules_dir);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
    let test = promtool_run(&["test", "rules", "syncbench-rules.test.yml"], &rules_dir);
    assert!(
        test.status.success(),
        "{}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
    // The planted bug: the regression alert watches the wrong direction. Its unit test must fail.
    let planted = tempfile::tempdir().unwrap();
    let rules = std::fs::read_to_string(rules_dir.join("syncbench-rules.yml")).unwrap();
    let wrong =
        rules.replacen("what=\"latency_p99\", direction=\"slower\"", "what=\"latency_p99\", direction=\"faster\"", 1);
    assert_ne!(rules, wrong);
    std::fs::write(planted.path().join("syncbench-rules.yml"), wrong).unwrap();
    std::fs::copy(rules_dir.join("syncbench-rules.test.yml"), planted.path().join("syncbench-rules.test.yml")).unwrap();
    let caught = promtool_run(&["test", "rules", "syncbench-rules.test.yml"], planted.path());
    assert!(!caught.status.success(), "the rules' test passed a regression alert on the wrong direction");
}

#[test]
fn every_dashboard_query_is_valid_promql_and_names_metrics_watch_writes() {
    if promtool().is_none() {
        return crate::skip("promtool is not installed (Debian package prometheus)");
    }
    let path = repo_root().join("deploy/grafana/syncbench-watch-dashboard.json");
    let dashboard: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter().map(|t| t["expr"].as_str().unwrap().to_string()))
        .collect();
    assert!(exprs.len() >= 9, "{exprs:?}");
    // promtool checks PromQL inside rule files: one recording rule per query, Grafana's variables filled in.
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, e) in exprs.iter().enumerate() {
        let e = e.replace("$instance", ".*").replace("$dir", ".*");
        rules +=
            &format!("      - record: dashboard_query_{i}\n        expr: {}\n", serde_json::to_string(&e).unwrap());
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("q.yml"), rules).unwrap();
    let check = promtool_run(&["check", "rules", "q.yml"], tmp.path());
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let doc = std::fs::read_to_string(repo_root().join("docs/watch.md")).unwrap();
    for e in &exprs {
        for name in e
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .filter(|w| w.starts_with("syncbench_watch_"))
        {
            assert!(doc.contains(&format!("`{name}`")), "{name} is not in docs/watch.md's metric table");
        }
    }
}
