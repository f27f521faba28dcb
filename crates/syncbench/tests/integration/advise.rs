//! `syncbench advise` driven as a user would: from a saved run, and with bad input.

use assert_cmd::Command;
use predicates::prelude::*;
use syncbench::core::environment::Environment;
use syncbench::core::schema::{CaseResult, Envelope, LatencyNs, RunPayload};

fn case(section: &str, method: &str, size: u64, writes: u32, state: &str, ops_per_s: f64) -> CaseResult {
    let mean = 1e9 / ops_per_s;
    CaseResult {
        section: section.parse().unwrap(),
        method: method.parse().unwrap(),
        label: method.into(),
        durable: true,
        supported: true,
        write_size_bytes: size,
        writes_per_commit: writes,
        file_state: state.parse().unwrap(),
        ops: 3000,
        ops_per_s,
        latency_ns: LatencyNs {
            mean,
            p50: mean as u64,
            p99: (2.0 * mean) as u64,
            max: (5.0 * mean) as u64,
            ..Default::default()
        },
        ci95_rel: 0.01,
        ..CaseResult::default()
    }
}

fn saved_run(dir: &std::path::Path, etcd_ops_per_s: f64) -> std::path::PathBuf {
    saved_run_with(dir, etcd_ops_per_s, vec![])
}

fn saved_run_with(
    dir: &std::path::Path,
    etcd_ops_per_s: f64,
    verdicts: Vec<syncbench::core::verdict::Verdict>,
) -> std::path::PathBuf {
    let results = vec![
        case("one_write", "fdatasync", 8192, 1, "overwrite", 5000.0),
        case("one_write", "fsync", 8192, 1, "overwrite", 2500.0),
        case("one_write", "open_datasync", 8192, 1, "overwrite", 4000.0),
        case("two_writes", "fdatasync", 8192, 2, "overwrite", 4800.0),
        case("two_writes", "open_datasync", 8192, 2, "overwrite", 2000.0),
        case("one_write", "fdatasync", 2300, 1, "fallocate", etcd_ops_per_s),
    ];
    let env = Environment { fs_type: "ext4".into(), kernel: "6.18".into(), ..Environment::default() };
    let payload = RunPayload {
        dir: "/data".into(),
        pattern: syncbench::core::suite::Pattern::Sequential,
        results,
        ..RunPayload::default()
    };
    let doc = Envelope::new("2026-11-21T00:00:00Z".into(), env, verdicts, payload);
    let path = dir.join("run.json");
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    path
}

/// `syncbench advise --for DATABASES --from RUN`, which must succeed.
fn advise_from(run: &std::path::Path, databases: &str) -> assert_cmd::assert::Assert {
    syncbench().args(["advise", "--for", databases, "--from"]).arg(run).assert().success()
}

/// syncbench with the installed-version lookup off: the versions below are the defaults or given.
fn syncbench() -> Command {
    let mut cmd = Command::cargo_bin("syncbench").unwrap();
    cmd.env("SYNCBENCH_NO_VERSION_DETECT", "1");
    cmd
}

#[test]
fn advises_from_a_saved_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = saved_run(dir.path(), 3000.0);
    advise_from(&run, "postgres:16,etcd")
        .stdout(predicate::str::contains("wal_sync_method = fdatasync"))
        .stdout(predicate::str::contains("etcd 3.5 — PASS"));
}

#[test]
fn a_measurement_the_hypervisor_disturbed_is_called_out_above_the_advice() {
    let dir = tempfile::tempdir().unwrap();
    let clean = saved_run(dir.path(), 3000.0);
    advise_from(&clean, "postgres")
        .stdout(predicate::str::starts_with("answer:\n  PostgreSQL 17.0: wal_sync_method = "));
    let steal = syncbench::observe::probe::steal::verdict(23.0, "the measurement").unwrap();
    let stolen_dir = tempfile::tempdir().unwrap();
    let stolen = saved_run_with(stolen_dir.path(), 3000.0, vec![steal]);
    advise_from(&stolen, "postgres")
        .stdout(predicate::str::starts_with("answer:\n"))
        .stdout(predicate::str::contains("\n\nMeasurement\n  !! The hypervisor took 23%"))
        .stdout(predicate::str::contains("PostgreSQL"));
}

#[test]
fn json_advice_has_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let run = saved_run(dir.path(), 3000.0);
    let out = syncbench().args(["advise", "--json", "-", "--for", "mysql", "--from"]).arg(&run).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "syncbench/v1");
    let mysql = &v["advice"][0];
    assert_eq!(mysql["database"], "mysql");
    assert!(mysql["settings"].as_array().unwrap().iter().any(|s| s["name"] == "innodb_flush_method"));
    assert!(v["results"].as_array().unwrap().len() >= 5);
}

/// `--json` carries each database's power-cut evidence (`power_cuts`, in `advice`'s order) and each
/// setting's citation in its reason; a database no cut ran says so.
#[test]
fn json_advice_carries_the_power_cut_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let run = saved_run(dir.path(), 3000.0);
    let out = syncbench()
        .args(["advise", "--json", "-", "--for", "postgres:15.18,mariadb:10.11,mysql:8.4", "--from"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("PostgreSQL 15.18\n  evidence: "), "{text}");
    assert!(text.contains("  power cuts: advise's settings kept every acknowledged commit in "), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cuts = v["power_cuts"].as_array().unwrap();
    let names: Vec<&str> = cuts.iter().map(|c| c["database"].as_str().unwrap()).collect();
    assert_eq!(names, ["postgres", "mariadb", "mysql"]);
    let maria = &cuts[1];
    assert_eq!(maria["applies"], true);
    let trx =
        maria["settings"].as_array().unwrap().iter().find(|s| s["name"] == "innodb_flush_log_at_trx_commit").unwrap();
    assert_eq!(trx["value"], "1");
    assert_eq!(trx["advised"]["damaged"], 0);
    assert!(trx["advised"]["cuts"].as_u64().unwrap() >= 150, "{trx}");
    let lost: Vec<(&str, u64)> = trx["other_values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["settings"][0].as_str().unwrap(), o["lost_ack_cuts"].as_u64().unwrap()))
        .collect();
    assert_eq!(lost, [("innodb_flush_log_at_trx_commit=0", 20), ("innodb_flush_log_at_trx_commit=2", 21)]);
    assert!(trx["advised"]["results"][0].as_str().unwrap().starts_with("bench/results/"), "{trx}");
    let reason =
        v["advice"][1]["settings"].as_array().unwrap().iter().find(|s| s["name"] == trx["name"]).unwrap()["reason"]
            .as_str()
            .unwrap();
    assert!(reason.contains(trx["text"].as_str().unwrap()), "{reason}");
    assert_eq!(cuts[2]["summary"], "no power-cut evidence for MySQL");
    assert_eq!(cuts[2]["settings"][0]["advised"], serde_json::Value::Null);
}

#[test]
fn failing_etcd_rule_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    // 60 syncs/s → p99 33 ms: over etcd's 10 ms limit.
    let run = saved_run(dir.path(), 60.0);
    syncbench()
        .args(["advise", "--for", "etcd", "--from"])
        .arg(&run)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL"));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let run = saved_run(dir.path(), 3000.0);
    let bad: [(&[&str], &str); 4] = [
        (&["--for", "oracle"], "unknown database"),
        (&["--for", "postgres:sixteen"], "is not a number"),
        (&["--for", "postgres", "--json", "/nonexistent/dir/x.json"], "does not exist"),
        (&["--for", "postgres", "--from", "/nonexistent.json"], "cannot read"),
    ];
    for (args, want) in bad {
        let mut cmd = syncbench();
        cmd.arg("advise").args(args);
        if !args.contains(&"--from") {
            cmd.arg("--from").arg(&run);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn mariadb_10_11_is_advised_with_its_evidence_and_unknown_versions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = saved_run(dir.path(), 3000.0);
    let out =
        syncbench().args(["advise", "--for", "mariadb:10.11", "--json", "-", "--from"]).arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("MariaDB 10.11\n  evidence: validated against sysbench"), "{text}");
    assert!(text.contains("  innodb_flush_method = "), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["evidence"][0]["database"], "mariadb");
    assert_eq!(v["evidence"][0]["validated"], true);
    for version in ["10.2", "10.12", "13.0"] {
        let out =
            syncbench().args(["advise", "--for", &format!("mariadb:{version}"), "--from"]).arg(&run).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{version}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                "mariadb {version} is not a version these rules know; known: 10.3-10.11, 11.0-11.8, 12.0-12.1"
            )),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn measures_a_directory_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), b"the user's file").unwrap();
    let out = syncbench()
        .args(["advise", "--quick", "--for", "postgres,sqlite"])
        .arg(dir.path())
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // Both databases, each with a value decided by this measurement.
    assert!(stdout.contains("PostgreSQL 17.0\n"), "{stdout}");
    assert!(stdout.contains("  wal_sync_method = "), "{stdout}");
    assert!(stdout.contains("SQLite 3.46\n"), "{stdout}");
    assert!(stdout.contains("  synchronous = FULL"), "{stdout}");
    assert!(
        stdout.contains("Measured here: a FULL commit costs at least one 4 KiB write + fdatasync, about"),
        "{stdout}"
    );
    assert!(!stdout.contains("MySQL") && !stdout.contains("etcd"), "{stdout}");
    let mut left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["keep.txt"], "syncbench left files behind");
}

/// A run file from today's `run` has a single 16 KiB write for each of PostgreSQL's methods, so
/// wal_sync_method is scored the way the server writes WAL, with no caveat about the basis.
#[test]
fn a_current_run_file_scores_postgres_on_its_multi_block_write() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let data = tempfile::tempdir().unwrap();
    syncbench().args(["run", "--mock-timing", "7", "--quick", "--json"]).arg(&run).arg(data.path()).assert().success();
    advise_from(&run, "postgres:16")
        .stdout(predicate::str::contains("Scored by commits/s of one 8 KiB and one 16 KiB write per commit"))
        .stdout(predicate::str::contains("no single 16 KiB write").not());
    // The older basis, with its caveat, for a run file without those cases.
    let old = saved_run(dir.path(), 3000.0);
    advise_from(&old, "postgres:16")
        .stdout(predicate::str::contains("one and two 8 KiB writes per commit"))
        .stdout(predicate::str::contains("no single 16 KiB write"));
}

/// An export target that cannot be written is refused in one line before anything is measured: the
/// directory to measure is left as it was.
#[test]
fn an_unwritable_export_target_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let out = syncbench()
        .args(["advise", "--quick", "--for", "postgres", "--openmetrics", "/nonexistent-dir/x.prom"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--openmetrics /nonexistent-dir/x.prom: directory /nonexistent-dir does not exist"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "advise measured anyway");
}

/// CSV on stdout (the advice text moves to stderr) and OpenMetrics to a file, from one saved run.
#[test]
fn csv_to_stdout_and_openmetrics_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = saved_run(dir.path(), 3000.0);
    let prom = dir.path().join("syncbench.prom");
    let out = syncbench()
        .args(["advise", "--for", "mysql,etcd", "--csv", "-", "--openmetrics"])
        .arg(&prom)
        .arg("--from")
        .arg(&run)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("database,version,pass,evidence,setting,value,"), "{stdout}");
    assert!(stdout.contains("\nmysql,"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("answer:"));
    let prom = std::fs::read_to_string(prom).unwrap();
    assert!(prom.contains("syncbench_advise_setting_info{"), "{prom}");
    assert!(prom.contains("setting=\"innodb_flush_method\""), "{prom}");
    assert!(prom.contains("syncbench_advise_pass{") && prom.ends_with("# EOF\n"), "{prom}");
}

/// `advise --background-writes` whose writer fails mid-run: the advice from the idle measurement is
/// printed and exported, the part under writes marked failed, exit 1.
#[test]
fn advise_keeps_its_idle_advice_when_the_background_writer_fails() {
    let (dir, out_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let json = out_dir.path().join("advise.json");
    let out = crate::run::syncbench_with_file_size_limit(20 << 20)
        .env("SYNCBENCH_NO_VERSION_DETECT", "1")
        .args(["advise", "--quick", "--for", "postgres:16", "--background-writes", "max", "--json"])
        .arg(&json)
        .arg(dir.path())
        .output()
        .unwrap();
    crate::run::assert_failed_under_writes(&out, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wal_sync_method = ") && stdout.contains("from the idle measurement only"), "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(!doc["results"].as_array().unwrap().is_empty());
    assert!(doc["background_writes"]["writer"]["error"].as_str().unwrap().contains("File too large"));
}
