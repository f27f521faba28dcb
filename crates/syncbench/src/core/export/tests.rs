//! Golden and property tests of the exports, from fixed fixture cases (no disk, no clock).

use super::*;
use crate::core::environment::Environment;
use crate::core::schema::{CaseResult, LatencyNs, Log2Bucket};
use crate::core::verdict::{Severity, Verdict};
use proptest::prelude::*;

fn case(section: &str, method: &str, durable: bool, p50_ns: u64) -> CaseResult {
    let ops = 1000;
    let mean = p50_ns as f64 * 1.1;
    CaseResult {
        section: section.parse().unwrap(),
        method: method.parse().unwrap(),
        label: format!("1 × 8 KiB, {method}"),
        durable,
        supported: true,
        error: None,
        write_size_bytes: 8192,
        writes_per_commit: 1,
        file_state: crate::core::suite::FileState::Overwrite,
        ops,
        ops_per_s: 1e9 / mean,
        bytes_per_s: 8192.0 * 1e9 / mean,
        latency_ns: LatencyNs {
            min: p50_ns / 2,
            mean,
            p50: p50_ns,
            p90: p50_ns * 3 / 2,
            p99: p50_ns * 3,
            p999: p50_ns * 5,
            max: p50_ns * 9,
            stddev: p50_ns as f64 / 4.0,
        },
        ci95_rel: 0.0123,
        duration_s: ops as f64 * mean / 1e9,
        outlier_fraction: 0.002,
        histogram_log2: vec![Log2Bucket { lower_ns: 131072, count: 990 }, Log2Bucket { lower_ns: 262144, count: 10 }],
        ..CaseResult::default()
    }
}

fn fixture() -> Envelope<RunPayload> {
    let mut unsupported = case("one_write", "open_datasync+direct", true, 0);
    unsupported.supported = false;
    unsupported.ops = 0;
    unsupported.ops_per_s = 0.0;
    unsupported.bytes_per_s = 0.0;
    unsupported.duration_s = 0.0;
    unsupported.latency_ns = LatencyNs::default();
    unsupported.histogram_log2.clear();
    unsupported.error = Some("EINVAL: O_DIRECT is not supported by this file system".to_string());
    let results = vec![
        case("one_write", "fdatasync", true, 180_000),
        case("one_write", "fsync", true, 390_000),
        unsupported,
        case("no_sync", "write", false, 2_500),
    ];
    let env = Environment {
        kernel: "6.18.0".into(),
        dir: "/data|wal".into(),
        fs_type: "ext4".into(),
        ..Environment::default()
    };
    let verdicts = vec![Verdict {
        severity: Severity::Warning,
        code: "implausible_flush_rate".into(),
        message: "5000 flushes/s from a rotational disk.".into(),
        advice: "Run a power-loss test.".into(),
    }];
    let mut doc = Envelope::new(
        "2026-11-21T00:00:00Z".into(),
        env,
        verdicts,
        RunPayload {
            dir: "/data|wal".into(),
            pattern: crate::core::suite::Pattern::Sequential,
            results,
            ..RunPayload::default()
        },
    );
    doc.command = "syncbench run --json out.json /data".into();
    doc
}

#[test]
fn markdown_golden() {
    assert_golden!("syncbench__export__tests__markdown_golden", to_markdown(&fixture()));
}

/// A section where one case has ≥ 10,000 commits gets the p99.99 column (empty for the others), as the
/// text and JSON have it; a section without one keeps its table as before (the golden above).
#[test]
fn markdown_golden_with_a_p9999_column() {
    let mut doc = fixture();
    doc.payload.results[0].latency_ns_p9999 = Some(3_456_700);
    let md = to_markdown(&doc);
    assert!(md.contains("| p99.9 µs | p99.99 µs | 95% re-run |") && md.contains(" 3456.7 |"), "{md}");
    assert_golden!("syncbench__export__tests__markdown_golden_p9999", md);
}

#[test]
fn csv_golden() {
    assert_golden!("syncbench__export__tests__csv_golden", to_csv(&fixture().payload.results).unwrap());
}

#[test]
fn json_golden() {
    assert_golden!("syncbench__export__tests__json_golden", to_json(&fixture()).unwrap());
}

#[test]
fn json_has_the_documented_top_level_fields() {
    let v: serde_json::Value = serde_json::from_str(&to_json(&fixture()).unwrap()).unwrap();
    for key in ["schema", "version", "started_at", "command", "environment", "verdicts", "results"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let case = &v["results"][0];
    for key in ["section", "method", "durable", "supported", "error", "write_size_bytes", "writes_per_commit"] {
        assert!(case.get(key).is_some(), "missing results[0].{key}");
    }
    for key in ["file_state", "ops", "ops_per_s", "bytes_per_s", "latency_ns", "ci95_rel", "duration_s"] {
        assert!(case.get(key).is_some(), "missing results[0].{key}");
    }
    for key in ["min", "mean", "p50", "p90", "p99", "p999", "max"] {
        assert!(case["latency_ns"].get(key).is_some(), "missing latency_ns.{key}");
    }
}

#[test]
fn read_run_round_trips_and_rejects_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, to_json(&fixture()).unwrap()).unwrap();
    assert_eq!(read_run(&good, "advise --from").unwrap().payload.results, fixture().payload.results);

    let cases = [
        ("missing.json", None, "cannot read"),
        ("garbage.json", Some("not json"), "is not JSON"),
        ("other.json", Some(r#"{"schema":"other/v9","results":[]}"#), "reads \"syncbench/v1\""),
        ("probe.json", Some(r#"{"schema":"syncbench/v1"}"#), "is a syncbench/v1 file with no results; advise --from"),
    ];
    for (name, contents, want) in cases {
        let p = dir.path().join(name);
        if let Some(text) = contents {
            std::fs::write(&p, text).unwrap();
        }
        let err = read_run(&p, "advise --from").unwrap_err();
        assert!(err.downcast_ref::<crate::core::exit::UsageError>().is_some(), "{name}: not a usage error");
        assert!(err.to_string().contains(want), "{name}: {err}");
    }
}

#[test]
fn export_targets_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let two_stdout = ExportArgs { json: Some("-".into()), csv: Some("-".into()), ..ExportArgs::default() };
    assert!(two_stdout.validate().is_err());
    let into_dir = ExportArgs { json: Some(dir.path().to_path_buf()), ..ExportArgs::default() };
    assert!(into_dir.validate().unwrap_err().to_string().contains("is a directory"));
    let no_parent = ExportArgs { csv: Some(dir.path().join("nope/out.csv")), ..ExportArgs::default() };
    assert!(no_parent.validate().unwrap_err().to_string().contains("does not exist"));
    let ok = ExportArgs { json: Some(dir.path().join("a.json")), csv: Some("-".into()), ..ExportArgs::default() };
    ok.validate().unwrap();
    assert!(ok.uses_stdout());
}

#[test]
fn write_all_writes_every_requested_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = ExportArgs {
        json: Some(dir.path().join("r.json")),
        csv: Some(dir.path().join("r.csv")),
        markdown: Some(dir.path().join("r.md")),
        openmetrics: Some(dir.path().join("r.prom")),
    };
    write_all(&fixture(), &t).unwrap();
    assert!(read_run(&dir.path().join("r.json"), "advise --from").is_ok());
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + fixture().payload.results.len());
    assert!(std::fs::read_to_string(dir.path().join("r.md")).unwrap().contains("## one_write"));
    let prom = std::fs::read_to_string(dir.path().join("r.prom")).unwrap();
    assert!(prom.contains("# TYPE syncbench_run_commits_per_second gauge") && prom.ends_with("# EOF\n"), "{prom}");
}

/// An interrupted command's Markdown opens with the partial marker (the JSON says `"partial": true`); a
/// finished one's does not.
#[test]
fn a_partial_document_s_markdown_opens_with_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let t = ExportArgs {
        markdown: Some(dir.path().join("r.md")),
        json: Some(dir.path().join("r.json")),
        ..ExportArgs::default()
    };
    let mut doc = fixture();
    write_all(&doc, &t).unwrap();
    assert!(std::fs::read_to_string(dir.path().join("r.md")).unwrap().starts_with("# syncbench run"));
    doc.payload.partial = true;
    write_all(&doc, &t).unwrap();
    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    let marker = "**PARTIAL: interrupted — only the rounds finished so far are counted below**\n\n# syncbench run";
    assert!(md.starts_with(marker), "{md}");
    assert!(std::fs::read_to_string(dir.path().join("r.json")).unwrap().contains("\"partial\": true"));
}

fn arb_case() -> impl Strategy<Value = CaseResult> {
    let method = 0..crate::core::method::SyncMethod::ALL.len();
    (
        any::<bool>(),
        any::<bool>(),
        1u64..1 << 20,
        1u32..16,
        0u64..1_000_000,
        1u64..u32::MAX as u64,
        "[a-z_+|,\"]{1,12}",
        method,
    )
        .prop_map(|(durable, supported, size, writes, ops, p50, label, method)| {
            let mut c = case("one_write", crate::core::method::SyncMethod::ALL[method].name(), durable, p50);
            // The free text of a case (label, error) is what CSV must quote.
            c.label = label.clone();
            c.supported = supported;
            c.write_size_bytes = size;
            c.writes_per_commit = writes;
            c.ops = ops;
            c.error = (!supported).then(|| format!("EINVAL: {label}"));
            c
        })
}

proptest! {
    #[test]
    fn csv_has_one_parseable_row_per_case(cases in proptest::collection::vec(arb_case(), 0..6)) {
        let text = to_csv(&cases).unwrap();
        let mut r = ::csv::Reader::from_reader(text.as_bytes());
        let rows: Vec<_> = r.records().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(rows.len(), cases.len());
        for (row, c) in rows.iter().zip(&cases) {
            prop_assert_eq!(&row[1], c.method.name());
            prop_assert_eq!(row[6].parse::<u64>().unwrap(), c.write_size_bytes);
        }
    }
}
