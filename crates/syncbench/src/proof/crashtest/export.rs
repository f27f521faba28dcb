//! `crashtest`'s exports and its closing line: one CSV row per series (settings, outcome, the summary and
//! every coverage counter), Markdown with the same, and OpenMetrics with what an alert watches: crash points
//! and crashes run, failed points (must be 0: a failing point lost an acknowledged commit or broke an
//! invariant, and the series stops at the first), and with `--engine-bug` whether the planted bug was caught.

use crate::core::export::Exportable;
use crate::core::export::markdown::escape;
use crate::core::export::openmetrics::Family;
use crate::core::schema::Envelope;
use crate::proof::crashtest::json::{CrashtestJson, Payload};
use std::fmt::Write;

/// The line printed when a series passes.
pub fn summary_line(ct: &CrashtestJson<'_>) -> String {
    let (s, c) = (ct.summary, &ct.summary.coverage);
    format!(
        "crashtest {} ({} profile{}): {} crash points passed, {} generations each ({} power losses, {} process \
         crashes, {} recoveries interrupted, {} media damage of which {} reported); {} commits overlapping a \
         flush, {} eviction writes, {} dw restores, {} torn tails zeroed; {:.1} s, {:.0} crash-and-recover \
         cycles/min",
        ct.mode,
        ct.profile,
        if ct.fsync_errors { ", fsync errors" } else { "" },
        s.points,
        ct.generations,
        c.power_losses,
        c.process_crashes,
        c.recoveries_interrupted,
        c.media_damage,
        c.media_damage_reported,
        c.commits_overlapping_flush,
        c.eviction_writes,
        c.dw_restored_pages,
        c.torn_tails_zeroed,
        s.duration.as_secs_f64(),
        s.cycles_per_min
    )
}

/// Settings and outcome, then the summary's own numbers, then the coverage counters (`coverage_` and their
/// names, as the JSON nests them).
fn fields(ct: &CrashtestJson<'_>) -> Vec<(String, String)> {
    let s = ct.summary;
    let opt = |v: Option<String>| v.unwrap_or_default();
    let f = ct.failure.as_ref();
    let named = [
        ("mode", ct.mode.clone()),
        ("profile", ct.profile.clone()),
        ("seed", ct.seed.to_string()),
        ("points_requested", ct.points_requested.to_string()),
        ("point", opt(ct.point.map(|p| p.to_string()))),
        ("fsync_errors", ct.fsync_errors.to_string()),
        ("generations", ct.generations.to_string()),
        ("accounts_per_branch", ct.accounts_per_branch.to_string()),
        ("engine_bug", opt(ct.engine_bug.clone())),
        ("passed", ct.passed.to_string()),
        ("points", s.points.to_string()),
        ("cycles", s.cycles.to_string()),
        ("writeback_errors", s.writeback_errors.to_string()),
        ("engine_stops_after_error", s.engine_errors.to_string()),
        ("duration_s", s.duration.as_secs_f64().to_string()),
        ("cycles_per_min", s.cycles_per_min.to_string()),
    ];
    let mut out: Vec<(String, String)> = Vec::new();
    out.extend(s.coverage.named().map(|(name, n)| (format!("coverage_{name}"), n.to_string())));
    out.extend(
        [
            ("failure_point", opt(f.map(|f| f.point.to_string()))),
            ("failure_variant", opt(f.map(|f| f.variant.clone()))),
            ("failure_message", opt(f.map(|f| f.message.clone()))),
            ("failure_reproducer", opt(f.map(|f| f.reproducer.clone()))),
        ]
        .map(|(name, value)| (name.to_string(), value)),
    );
    named.into_iter().map(|(name, value)| (name.to_string(), value)).chain(out).collect()
}

impl Exportable for Payload<'_> {
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String> {
        let fields = fields(&doc.payload.crashtest);
        let mut w = ::csv::Writer::from_writer(Vec::new());
        w.write_record(fields.iter().map(|(name, _)| name))?;
        w.write_record(fields.iter().map(|(_, value)| value))?;
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    fn markdown(doc: &Envelope<Self>) -> String {
        let ct = &doc.payload.crashtest;
        let outcome = if ct.passed { "passed" } else { "FAILED" };
        let mut md = format!("## syncbench crashtest: {} ({} profile) — {outcome}\n\n", ct.mode, ct.profile);
        if let Some(f) = &ct.failure {
            let _ = writeln!(md, "**Failure** at point {} ({}): {}\n", f.point, escape(&f.variant), escape(&f.message));
            let _ = writeln!(md, "Reproduce: `{}`\n", f.reproducer);
        } else {
            let _ = writeln!(md, "{}\n", escape(&summary_line(ct)));
        }
        md.push_str("| Field | Value |\n|:---|--:|\n");
        for (name, value) in fields(ct).into_iter().filter(|(n, _)| !n.starts_with("failure_")) {
            let _ = writeln!(md, "| `{name}` | {} |", escape(&value));
        }
        md
    }

    fn metrics(doc: &Envelope<Self>) -> Vec<Family> {
        let ct = &doc.payload.crashtest;
        let labels = vec![
            ("mode", ct.mode.clone()),
            ("profile", ct.profile.clone()),
            ("fsync_errors", ct.fsync_errors.to_string()),
        ];
        let mut points = Family::new("syncbench_crashtest_crash_points", "", "Crash points run.");
        points.push(labels.clone(), ct.summary.points as f64);
        let mut crashes = Family::new(
            "syncbench_crashtest_crashes",
            "",
            "Crashes run, by kind, over every generation of every point.",
        );
        let c = &ct.summary.coverage;
        for (kind, n) in [("power_loss", c.power_losses), ("process_crash", c.process_crashes)] {
            let mut l = labels.clone();
            l.push(("kind", kind.to_string()));
            crashes.push(l, n as f64);
        }
        let mut failed = Family::new(
            "syncbench_crashtest_failed_points",
            "",
            "Crash points that lost an acknowledged commit or broke an invariant; must be 0 (the series stops at the first).",
        );
        let durability_failure = ct.failure.as_ref().is_some_and(|f| f.kind != super::FailureKind::Coverage);
        failed.push(labels.clone(), f64::from(u8::from(durability_failure)));
        let mut coverage = Family::new(
            "syncbench_crashtest_coverage_failed",
            "",
            "1 when the series never reached a path the scenario requires (its crash points proved less than asked).",
        );
        let coverage_failure = ct.failure.as_ref().is_some_and(|f| f.kind == super::FailureKind::Coverage);
        coverage.push(labels.clone(), f64::from(u8::from(coverage_failure)));
        let mut caught = Family::new(
            "syncbench_crashtest_engine_bug_caught",
            "",
            "With --engine-bug: 1 when the planted bug was caught.",
        );
        if let Some(bug) = &ct.engine_bug {
            let mut l = labels;
            l.push(("engine_bug", bug.clone()));
            caught.push(l, f64::from(u8::from(!ct.passed)));
        }
        vec![points, crashes, failed, coverage, caught]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::environment::Environment;
    use crate::proof::crashtest::json::FailureJson;
    use crate::proof::crashtest::{FailureKind, Summary};
    use std::time::Duration;

    fn summary() -> Summary {
        let mut s = Summary { points: 500, cycles: 1500, cycles_per_min: 45000.0, ..Summary::default() };
        s.duration = Duration::from_secs(2);
        s.coverage.power_losses = 1200;
        s.coverage.process_crashes = 300;
        s.coverage.commits_overlapping_flush = 77;
        s
    }

    fn doc<'a>(summary: &'a Summary, bug: Option<&str>, failure: Option<FailureJson>) -> Envelope<Payload<'a>> {
        let crashtest = CrashtestJson {
            mode: "wal".into(),
            profile: "strict".into(),
            seed: 3,
            points_requested: 500,
            point: None,
            fsync_errors: false,
            generations: 3,
            accounts_per_branch: 2000,
            engine_bug: bug.map(String::from),
            passed: failure.is_none(),
            summary,
            failure,
        };
        let env = Environment { fs_type: "simfs".into(), ..Environment::default() };
        crate::core::export::golden_doc(env, "syncbench crashtest --seed 3 --points 500", Payload { crashtest })
    }

    fn lost_commit() -> FailureJson {
        FailureJson {
            kind: FailureKind::Durability,
            point: 17,
            crash_op: 412,
            sector_bytes: 512,
            variant: "fdatasync".into(),
            message: "unit 121 was acknowledged | and is missing".into(),
            reproducer: "syncbench crashtest --mode wal --profile strict --seed 3 --point 17".into(),
        }
    }

    #[test]
    fn exports_golden() {
        let s = summary();
        crate::core::export::assert_exports_golden!("crashtest", &doc(&s, None, None));
        let caught = doc(&s, Some("flush-horizon-appended"), Some(lost_commit()));
        assert_golden!("syncbench__export__crashtest__tests__crashtest_caught_markdown", Payload::markdown(&caught));
        assert_golden!(
            "syncbench__export__crashtest__tests__crashtest_caught_openmetrics",
            crate::core::export::openmetrics::render(&caught, &Payload::metrics(&caught))
        );
    }

    /// What the JSON export writes passes the one reader's checks and keeps every field.
    #[test]
    fn json_round_trips_through_parse_any() {
        let s = summary();
        let d = doc(&s, None, Some(lost_commit()));
        let back =
            crate::core::export::parse_any::<serde_json::Value>("c.json", &crate::core::export::to_json(&d).unwrap())
                .unwrap();
        assert_eq!(back.payload, serde_json::to_value(&d.payload).unwrap());
        assert_eq!(back.payload["crashtest"]["failure"]["point"], 17);
        assert_eq!(back.environment.fs_type, "simfs");
    }

    /// A coverage failure is not a lost commit: the two gauges say which.
    #[test]
    fn a_coverage_failure_is_not_counted_as_a_failed_point() {
        let s = summary();
        let failure = FailureJson { kind: FailureKind::Coverage, variant: "coverage".into(), ..lost_commit() };
        let d = doc(&s, None, Some(failure));
        let text = crate::core::export::openmetrics::render(&d, &Payload::metrics(&d));
        assert!(text.contains("syncbench_crashtest_failed_points{dir=\"\",fs_type=\"simfs\",mode=\"wal\",profile=\"strict\",fsync_errors=\"false\"} 0"), "{text}");
        assert!(text.contains("syncbench_crashtest_coverage_failed{dir=\"\",fs_type=\"simfs\",mode=\"wal\",profile=\"strict\",fsync_errors=\"false\"} 1"), "{text}");
        assert!(!text.contains("engine_bug_caught"), "{text}");
    }
}
