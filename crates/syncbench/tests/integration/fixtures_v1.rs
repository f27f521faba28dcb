//! Files written by the previous release (tests/fixtures/v1, see its README) are read with today's types
//! by the one reader, lose no field on the way, and `report` and `compare` still take them.

use assert_cmd::Command;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::{Path, PathBuf};
use syncbench::core::schema::{Envelope, RunPayload};
use syncbench::present::report::input::AnyPayload;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1").join(name)
}

/// Every value in `old` is in `new` at the same place (`new` may have more): a field the previous
/// release wrote was neither renamed nor dropped by today's type.
fn assert_contains(old: &Value, new: &Value, at: &str) {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            for (key, value) in o {
                let there = n.get(key).unwrap_or_else(|| panic!("{at}.{key} was dropped"));
                assert_contains(value, there, &format!("{at}.{key}"));
            }
        }
        (Value::Array(o), Value::Array(n)) => {
            assert_eq!(o.len(), n.len(), "{at}: length");
            for (i, (a, b)) in o.iter().zip(n).enumerate() {
                assert_contains(a, b, &format!("{at}[{i}]"));
            }
        }
        (Value::Number(a), Value::Number(b)) => assert_eq!(a.as_f64(), b.as_f64(), "{at}"),
        _ => assert_eq!(old, new, "{at}"),
    }
}

/// Read `name` as `T` with the one reader and check nothing the old file held is lost.
fn read_back<T: DeserializeOwned + Serialize>(name: &str) -> Envelope<T> {
    let path = fixture(name);
    let doc: Envelope<T> = syncbench::core::export::read_any(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let old: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_contains(&old, &serde_json::to_value(&doc).unwrap(), name);
    doc
}

#[test]
fn every_command_s_v1_file_reads_into_today_s_type_without_losing_a_field() {
    let run = read_back::<RunPayload>("run.json");
    assert!(run.payload.results.len() > 20);
    // Every section of the suite was read by name (a missing name would default to one_write).
    let sections: std::collections::BTreeSet<_> = run.payload.results.iter().map(|c| c.section).collect();
    assert_eq!(sections.len(), syncbench::core::suite::Section::ALL.len(), "{sections:?}");
    let commit = read_back::<syncbench::measure::commit::CommitPayload>("commit.json");
    assert_eq!(commit.payload.commit.points.len(), 4, "clients 1,4 with and without group commit");
    let pages = read_back::<syncbench::measure::pages::PagesPayload>("pages.json");
    let modes: Vec<&str> = pages.payload.pages.rows.iter().map(|r| r.mode.name()).collect();
    assert_eq!(modes, ["none", "fpw", "dw", "atomic"]);
    read_back::<syncbench::observe::probe::payload::ProbePayload>("probe.json");
    let advise = read_back::<syncbench::advise::AdvisePayload>("advise.json");
    assert!(!advise.payload.advice.is_empty());
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    read_back::<syncbench::observe::trace::report::TracePayload>("trace.json");
    // crashtest, fsync-errors and compare: the envelope every reader shares.
    for name in ["crashtest.json", "fsync_errors.json", "compare.json"] {
        syncbench::core::export::read_any::<AnyPayload>(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn report_and_compare_take_every_v1_file() {
    let out = tempfile::tempdir().unwrap();
    for name in ["run", "commit", "pages", "probe", "advise"] {
        let html = out.path().join(format!("{name}.html"));
        Command::cargo_bin("syncbench")
            .unwrap()
            .args(["report", "-o"])
            .arg(&html)
            .arg(fixture(&format!("{name}.json")))
            .assert()
            .success();
        assert!(std::fs::read_to_string(&html).unwrap().contains("<html"), "{name}");
    }
    // Kinds with nothing to chart are read, named and refused in one line (exit 2), and no page is written.
    for name in ["trace", "crashtest", "fsync_errors", "compare"] {
        let html = out.path().join(format!("{name}.html"));
        Command::cargo_bin("syncbench")
            .unwrap()
            .args(["report", "-o"])
            .arg(&html)
            .arg(fixture(&format!("{name}.json")))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("report accepts"));
        assert!(!html.exists(), "{name}");
    }
    let compare = Command::cargo_bin("syncbench")
        .unwrap()
        .args(["compare", "--markdown", "-"])
        .arg(fixture("run.json"))
        .arg(fixture("advise.json"))
        .output()
        .unwrap();
    assert!(compare.status.success(), "{}", String::from_utf8_lossy(&compare.stderr));
    assert!(String::from_utf8_lossy(&compare.stdout).contains("fdatasync"));
}

/// Parse an OpenMetrics file with the Prometheus project's Python client (Debian's
/// python3-prometheus-client): the OpenMetrics parser, and the Prometheus text parser the node_exporter
/// textfile collector's format follows. Prints `family sample-count` lines.
fn parse_openmetrics(path: &Path) -> Option<String> {
    let script = r#"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
from prometheus_client.parser import text_string_to_metric_families as prom
text = open(sys.argv[1]).read()
families = list(om(text))
assert len(list(prom(text))) == len(families)
for f in families:
    keys = [tuple(sorted(s.labels.items())) for s in f.samples]
    assert len(keys) == len(set(keys)), f"duplicate label set in {f.name}"
    print(f.name, f.type, len(f.samples))
"#;
    let out = std::process::Command::new("/usr/bin/python3").args(["-c", script]).arg(path).output().ok()?;
    if String::from_utf8_lossy(&out.stderr).contains("No module named 'prometheus_client'") {
        return None;
    }
    assert!(out.status.success(), "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn openmetrics_exports_parse_with_the_prometheus_client() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("run.prom");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    Command::cargo_bin("syncbench")
        .unwrap()
        .args(["run", "--mock-timing", "7", "--quick", "--openmetrics"])
        .arg(&prom)
        .arg(&work)
        .assert()
        .success();
    let Some(families) = parse_openmetrics(&prom) else {
        return crate::skip("python3-prometheus-client is not installed (.ci/deps/report.txt)");
    };
    assert!(families.contains("syncbench_run_commits_per_second gauge"), "{families}");
    assert!(families.contains("syncbench_run_commit_latency_seconds gauge"), "{families}");
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(text.contains("method=\"open_datasync+direct\"") && text.contains("quantile=\"0.99\""), "{text}");

    let commit = dir.path().join("commit.prom");
    Command::cargo_bin("syncbench")
        .unwrap()
        .args(["commit", "--clients", "1,2", "--secs", "0.1", "--with-baseline", "--openmetrics"])
        .arg(&commit)
        .arg(&work)
        .assert()
        .success();
    let families = parse_openmetrics(&commit).unwrap();
    assert!(families.contains("syncbench_commit_commits_per_second gauge 4"), "{families}");

    let pages = dir.path().join("pages.prom");
    Command::cargo_bin("syncbench")
        .unwrap()
        .args(["pages", "--mode", "none,dw", "--secs", "0.2", "--accounts-per-branch", "2000", "--openmetrics"])
        .arg(&pages)
        .arg(&work)
        .assert()
        .success();
    let families = parse_openmetrics(&pages).unwrap();
    assert!(families.contains("syncbench_pages_transactions_per_second gauge 2"), "{families}");
    assert!(families.contains("syncbench_pages_commit_latency_seconds gauge 4"), "{families}");
}

#[test]
fn a_broken_openmetrics_file_is_refused_by_the_parser_used_above() {
    // The check above would pass anything if the parser accepted anything.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.prom");
    std::fs::write(&bad, "# TYPE a gauge\na{x=\"1} 2\n# EOF\n").unwrap();
    let script = "import sys\nfrom prometheus_client.openmetrics.parser import text_string_to_metric_families as om\nlist(om(open(sys.argv[1]).read()))";
    let out = std::process::Command::new("/usr/bin/python3").args(["-c", script]).arg(&bad).output().unwrap();
    if String::from_utf8_lossy(&out.stderr).contains("No module named 'prometheus_client'") {
        return crate::skip("python3-prometheus-client is not installed (.ci/deps/report.txt)");
    }
    assert!(!out.status.success());
}

/// A case in a run file that does not say its section, method or file state (a foreign or hand-edited
/// file: every syncbench wrote all three) is refused by every reader with one line naming the file and
/// the field, exit 2, and no report written; the v1 file it was cut from reads.
#[test]
fn a_case_missing_what_identifies_it_is_refused_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(fixture("run.json")).unwrap()).unwrap();
    let case = doc["results"][3].as_object_mut().unwrap();
    assert!(case.remove("method").is_some(), "the v1 file has the field");
    let planted = dir.path().join("no-method.json");
    std::fs::write(&planted, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let html = dir.path().join("r.html");
    let readers: [Vec<std::ffi::OsString>; 3] = [
        vec!["report".into(), "-o".into(), html.clone().into(), planted.clone().into()],
        vec!["compare".into(), fixture("run.json").into(), planted.clone().into()],
        vec!["advise".into(), "--for".into(), "postgres".into(), "--from".into(), planted.clone().into()],
    ];
    for args in readers {
        let out = Command::cargo_bin("syncbench").unwrap().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("no-method.json") && stderr.contains("missing field `method`"), "{args:?}: {stderr}");
    }
    assert!(!html.exists(), "no report from a refused file");
}
