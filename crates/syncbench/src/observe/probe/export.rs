//! `probe`'s exports: the flush burst as one row of `run`'s CSV (same columns), Markdown with the device
//! chain, the burst and the verdicts, and OpenMetrics with the burst's rate and latency and the number of
//! verdicts of each severity (what a fleet alerts on).

use crate::core::export::Exportable;
use crate::core::export::markdown::escape;
use crate::core::export::openmetrics::{Family, push_quantiles};
use crate::core::schema::Envelope;
use crate::core::verdict::Severity;
use crate::observe::probe::payload::ProbePayload;
use std::fmt::Write;

impl Exportable for ProbePayload {
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String> {
        crate::core::export::to_csv(doc.payload.probe.flush_burst.as_slice())
    }

    fn markdown(doc: &Envelope<Self>) -> String {
        let env = &doc.environment;
        let mut md = format!("## syncbench probe: {} ({})\n\n", escape(&env.dir), escape(&env.fs_type));
        let _ = writeln!(md, "```\n{}\n```\n", crate::observe::probe::render::environment_tree(env).trim_end());
        let section = &doc.payload.probe;
        let burst = match (&section.flush_burst, &section.flush_burst_skipped, &section.flush_burst_error) {
            (Some(r), _, _) => crate::observe::probe::render::flush_line(r),
            (_, Some(why), _) => format!("flush burst: skipped ({why})"),
            (_, _, Some(err)) => format!("flush burst: FAILED ({err})"),
            _ => "flush burst: not run".to_string(),
        };
        let _ = writeln!(md, "{}\n", escape(&burst));
        if doc.verdicts.is_empty() {
            md.push_str("No verdicts: nothing to report.\n");
            return md;
        }
        md.push_str("| Severity | Code | Verdict | Advice |\n|:---|:---|:---|:---|\n");
        for v in &doc.verdicts {
            let severity = serde_json::to_value(v.severity).ok().and_then(|s| s.as_str().map(str::to_string));
            let _ = writeln!(
                md,
                "| {} | `{}` | {} | {} |",
                severity.unwrap_or_default(),
                v.code,
                escape(&v.message),
                escape(&v.advice)
            );
        }
        md
    }

    fn metrics(doc: &Envelope<Self>) -> Vec<Family> {
        let mut rate =
            Family::new("syncbench_probe_flush_commits_per_second", "", "fdatasync burst: commits per second.");
        let mut latency = Family::new(
            "syncbench_probe_flush_latency_seconds",
            "seconds",
            "fdatasync burst: commit latency quantile.",
        );
        if let Some(r) = doc.payload.probe.flush_burst.as_ref().filter(|r| r.ops > 0) {
            let labels = vec![("method", r.method.to_string()), ("write_size_bytes", r.write_size_bytes.to_string())];
            rate.push(labels.clone(), r.ops_per_s);
            push_quantiles(&mut latency, &labels, &[("0.5", r.latency_ns.p50), ("0.99", r.latency_ns.p99)]);
        }
        let mut verdicts = Family::new("syncbench_probe_verdicts", "", "Verdicts about the storage, by severity.");
        for (severity, name) in
            [(Severity::Critical, "critical"), (Severity::Warning, "warning"), (Severity::Info, "info")]
        {
            let count = doc.verdicts.iter().filter(|v| v.severity == severity).count();
            verdicts.push(vec![("severity", name.to_string())], count as f64);
        }
        vec![rate, latency, verdicts]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::environment::Environment;
    use crate::core::schema::{CaseResult, LatencyNs};
    use crate::core::verdict::Verdict;
    use crate::observe::probe::payload::ProbeSection;

    /// A probe of a fixed directory whose burst and verdicts are given (nothing measured).
    fn doc(burst: Option<CaseResult>, verdicts: Vec<Verdict>) -> Envelope<ProbePayload> {
        let env = Environment { kernel: "6.18.0".into(), ..crate::core::export::ext4_at("/data") };
        let probe = ProbeSection {
            flush_burst_skipped: burst.is_none().then(|| "--no-burst".into()),
            flush_burst: burst,
            ..ProbeSection::default()
        };
        Envelope { verdicts, ..crate::core::export::golden_doc(env, "syncbench probe /data", ProbePayload { probe }) }
    }

    fn burst() -> CaseResult {
        let mut r = CaseResult {
            ops: 5000,
            ops_per_s: 4950.5,
            duration_s: 1.01,
            write_size_bytes: 8192,
            writes_per_commit: 1,
            supported: true,
            durable: true,
            ..CaseResult::default()
        };
        r.label = "fdatasync".into();
        r.latency_ns = LatencyNs {
            min: 90_000,
            mean: 202_000.0,
            p50: 180_000,
            p90: 250_000,
            p99: 410_000,
            p999: 900_000,
            max: 2_000_000,
            stddev: 40_000.0,
        };
        r
    }

    fn verdict() -> Vec<Verdict> {
        vec![Verdict {
            severity: Severity::Warning,
            code: "implausible_flush_rate".into(),
            message: "4950 flushes/s from a rotational | disk.".into(),
            advice: "Run a power-loss test.".into(),
        }]
    }

    #[test]
    fn exports_golden() {
        crate::core::export::assert_exports_golden!("probe", &doc(Some(burst()), verdict()));
    }

    /// What the JSON export writes reads back into the same payload (the one reader every command uses).
    #[test]
    fn json_round_trips_through_read_any() {
        let d = doc(Some(burst()), verdict());
        let back = crate::core::export::parse_any::<ProbePayload>("p.json", &crate::core::export::to_json(&d).unwrap())
            .unwrap();
        assert_eq!(back.payload.probe.flush_burst, d.payload.probe.flush_burst);
        assert_eq!(back.verdicts, d.verdicts);
    }

    /// Without a burst: no CSV row and no rate sample, but the verdict counts are still there (zeros too).
    #[test]
    fn a_skipped_burst_exports_no_numbers() {
        let d = doc(None, Vec::new());
        assert_eq!(ProbePayload::csv(&d).unwrap().lines().count(), 1, "the header only");
        let text = crate::core::export::openmetrics::render(&d, &ProbePayload::metrics(&d));
        assert!(!text.contains("syncbench_probe_flush_commits_per_second"), "{text}");
        assert!(
            text.contains("syncbench_probe_verdicts{dir=\"/data\",fs_type=\"ext4\",severity=\"critical\"} 0"),
            "{text}"
        );
        assert!(ProbePayload::markdown(&d).contains("flush burst: skipped (--no-burst)"));
    }
}
