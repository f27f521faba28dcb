//! Files written by the previous release (tests/fixtures/v1, see its README) are read with today's types
//! by the one reader, lose no field on the way, and `report` and `compare` still take them.

use assert_cmd::Command;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::{Path, PathBuf};
use syncbench::schema::{AnyPayload, Envelope, RunPayload};

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
    let doc: Envelope<T> = syncbench::export::read_any(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let old: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_contains(&old, &serde_json::to_value(&doc).unwrap(), name);
    doc
}

#[test]
fn every_command_s_v1_file_reads_into_today_s_type_without_losing_a_field() {
    let run = read_back::<RunPayload>("run.json");
    assert!(run.payload.results.len() > 20 && run.payload.results.iter().all(|c| !c.section.is_empty()));
    let commit = read_back::<syncbench::commit::CommitPayload>("commit.json");
    assert_eq!(commit.payload.commit.points.len(), 4, "clients 1,4 with and without group commit");
    let pages = read_back::<syncbench::pages::PagesPayload>("pages.json");
    let modes: Vec<&str> = pages.payload.pages.rows.iter().map(|r| r.mode.as_str()).collect();
    assert_eq!(modes, ["none", "fpw", "dw", "atomic"]);
    read_back::<syncbench::cmd::probe::ProbePayload>("probe.json");
    let advise = read_back::<syncbench::advise::AdvisePayload>("advise.json");
    assert!(!advise.payload.advice.is_empty());
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    read_back::<syncbench::trace::report::TracePayload>("trace.json");
    // crashtest, fsync-errors and compare: the envelope every reader shares.
    for name in ["crashtest.json", "fsync_errors.json", "compare.json"] {
        syncbench::export::read_any::<AnyPayload>(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn report_and_compare_take_every_v1_file() {
    let out = tempfile::tempdir().unwrap();
    for name in ["run", "commit", "pages", "probe", "advise", "trace", "crashtest", "fsync_errors", "compare"] {
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
