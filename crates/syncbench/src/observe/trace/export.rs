//! `trace`'s exports: CSV with one row per call kind (scope `all`) and per call kind on each file (scope
//! `file`), Markdown with the same two tables, and OpenMetrics with each call kind's rate and latency
//! percentiles (what a fleet watches: a database whose fdatasync p99 grew).

use crate::core::export::Exportable;
use crate::core::export::markdown::escape;
use crate::core::export::openmetrics::{Family, push_quantiles};
use crate::core::schema::Envelope;
use crate::observe::trace::report::{CallReport, TracePayload, TraceReport};
use std::fmt::Write;

/// What was traced, for a label: `--pid 12`, `--comm postgres`, `--all`, or the started command's program.
fn target(t: &TraceReport) -> String {
    t.attached_to.clone().unwrap_or_else(|| t.command.first().cloned().unwrap_or_default())
}

const HEADER: [&str; 20] = [
    "scope",
    "dir",
    "file",
    "call",
    "count",
    "skipped",
    "errors",
    "calls_per_s",
    "total_ns",
    "latency_ns_min",
    "latency_ns_mean",
    "latency_ns_p50",
    "latency_ns_p90",
    "latency_ns_p99",
    "latency_ns_p999",
    "latency_ns_max",
    "bytes_between_syncs_samples",
    "bytes_between_syncs_mean",
    "bytes_between_syncs_p50",
    "bytes_between_syncs_max",
];

fn row(scope: &str, dir: &str, file: &str, c: &CallReport) -> Vec<String> {
    let (l, b) = (&c.latency_ns, &c.bytes_between_syncs);
    let head = [scope, dir, file, &c.call].map(str::to_string);
    let numbers = [
        c.count.to_string(),
        c.skipped.to_string(),
        c.errors.to_string(),
        c.calls_per_s.to_string(),
        c.total_ns.to_string(),
        l.min.to_string(),
        l.mean.to_string(),
        l.p50.to_string(),
        l.p90.to_string(),
        l.p99.to_string(),
        l.p999.to_string(),
        l.max.to_string(),
        b.samples.to_string(),
        b.mean.to_string(),
        b.p50.to_string(),
        b.max.to_string(),
    ];
    head.into_iter().chain(numbers).collect()
}

fn markdown_row(md: &mut String, first: &str, c: &CallReport) {
    let l = &c.latency_ns;
    let _ = writeln!(
        md,
        "| {first}`{}` | {} | {} | {:.1} | {} | {} | {} | {} |",
        escape(&c.call),
        c.count,
        c.errors,
        c.calls_per_s,
        crate::core::units::format_ns_fixed(l.p50),
        crate::core::units::format_ns_fixed(l.p99),
        crate::core::units::format_ns_fixed(l.max),
        c.bytes_between_syncs.p50
    );
}

impl Exportable for TracePayload {
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String> {
        let t = &doc.payload.trace;
        let mut w = ::csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER)?;
        for c in &t.calls {
            w.write_record(row("all", "", "", c))?;
        }
        for f in &t.files {
            w.write_record(row("file", &f.dir, &f.file, &f.stats))?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    fn markdown(doc: &Envelope<Self>) -> String {
        let t = &doc.payload.trace;
        let mut md = format!("## syncbench trace: {}\n\n", escape(&target(t)));
        let _ = writeln!(
            md,
            "Processes: {}, tasks: {}, {:.1} s, traced with {}{}\n",
            t.processes,
            t.tasks,
            t.duration_s,
            escape(&t.mechanism),
            if t.no_sync { "; --no-sync: NOTHING WAS DURABLE" } else { "" }
        );
        let head = "| Call | Count | Errors | Calls/s | p50 | p99 | max | Bytes between syncs (p50) |\n\
                    |:---|--:|--:|--:|--:|--:|--:|--:|\n";
        md.push_str(head);
        for c in &t.calls {
            markdown_row(&mut md, "", c);
        }
        if !t.files.is_empty() {
            let _ = writeln!(md, "\n### Per file\n\n{}", head.replacen("| Call |", "| File: call |", 1).trim_end());
            for f in &t.files {
                markdown_row(&mut md, &format!("{}{}: ", escape(&f.dir), escape(&f.file)), &f.stats);
            }
        }
        for w in &t.coverage_warnings {
            let _ = writeln!(md, "\n> **Warning:** {}", escape(&w.message));
        }
        md
    }

    fn metrics(doc: &Envelope<Self>) -> Vec<Family> {
        let t = &doc.payload.trace;
        let mut rate =
            Family::new("syncbench_trace_calls_per_second", "", "Durability calls per second, by call kind.");
        let mut latency = Family::new(
            "syncbench_trace_call_latency_seconds",
            "seconds",
            "Durability call latency quantile as the tracer saw it, by call kind.",
        );
        let mut errors = Family::new("syncbench_trace_call_errors", "", "Durability calls that returned an error.");
        for c in &t.calls {
            let labels = vec![("target", target(t)), ("call", c.call.clone())];
            rate.push(labels.clone(), c.calls_per_s);
            errors.push(labels.clone(), c.errors as f64);
            // Calls --no-sync skipped were not timed: no latency to report.
            if c.count > c.skipped {
                let l = &c.latency_ns;
                push_quantiles(&mut latency, &labels, &[("0.5", l.p50), ("0.99", l.p99), ("0.999", l.p999)]);
            }
        }
        vec![rate, latency, errors]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::LatencyNs;
    use crate::observe::trace::report::FileReport;

    fn call(name: &str, count: u64, p50: u64, p99: u64) -> CallReport {
        CallReport {
            call: name.into(),
            count,
            calls_per_s: count as f64 / 2.0,
            total_ns: count * p50,
            latency_ns: LatencyNs {
                min: p50 / 2,
                mean: p50 as f64 + 5000.0,
                p50,
                p90: p99 / 2,
                p99,
                p999: p99 * 2,
                max: p99 * 3,
                stddev: 1.0,
            },
            ..CallReport::default()
        }
    }

    /// A started `sqlite3` making fdatasync and O_DSYNC writes on one file over 2 s.
    fn doc() -> Envelope<TracePayload> {
        let fdatasync = call("fdatasync", 400, 900_000, 8_400_000);
        let dsync = call("write(O_DSYNC)", 20, 300_000, 1_000_000);
        let trace = TraceReport {
            command: vec!["sqlite3".into(), "test.db".into()],
            mechanism: "ptrace+seccomp".into(),
            writes_tracked: true,
            exit_code: Some(0),
            duration_s: 2.0,
            processes: 1,
            tasks: 1,
            calls: vec![fdatasync.clone(), dsync],
            files: vec![FileReport { dir: "/data/".into(), file: "test.db-wal".into(), stats: fdatasync }],
            ..TraceReport::default()
        };
        crate::core::export::golden_doc(
            crate::core::export::ext4_at("/data"),
            "syncbench trace -- sqlite3 test.db",
            TracePayload { trace },
        )
    }

    #[test]
    fn exports_golden() {
        crate::core::export::assert_exports_golden!("trace", &doc());
    }

    /// What the JSON export writes reads back into the same report (the one reader every command uses).
    #[test]
    fn json_round_trips_through_parse_any() {
        let d = doc();
        let back = crate::core::export::parse_any::<TracePayload>("t.json", &crate::core::export::to_json(&d).unwrap())
            .unwrap();
        assert_eq!(back.payload.trace.calls, d.payload.trace.calls);
        assert_eq!(back.payload.trace.files, d.payload.trace.files);
    }

    /// Calls that --no-sync skipped have a rate but no latency (they were not timed).
    #[test]
    fn skipped_calls_have_no_latency() {
        let mut d = doc();
        d.payload.trace.no_sync = true;
        for c in &mut d.payload.trace.calls {
            c.skipped = c.count;
        }
        let text = crate::core::export::openmetrics::render(&d, &TracePayload::metrics(&d));
        assert!(text.contains("syncbench_trace_calls_per_second{"), "{text}");
        assert!(!text.contains("syncbench_trace_call_latency_seconds"), "{text}");
        assert!(TracePayload::markdown(&d).contains("NOTHING WAS DURABLE"));
    }
}
