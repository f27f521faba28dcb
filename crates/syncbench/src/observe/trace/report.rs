//! The trace report: the JSON payload and its text rendering (tables and DTrace-style log2 histograms).

use super::devices::{self, TracedDevice};
use super::fmt::split_target;
use super::stats::{BytesSummary, CallStats, Recorder};
use super::tracer::{Ending, Unseen};
use crate::core::escape::escape_name;
use crate::core::schema::{LatencyNs, Log2Bucket};
use crate::core::units::{format_bytes_fixed, format_ns_fixed};
use crate::observe::blockdev::requests::{Lost, Mechanism};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The JSON payload of `syncbench trace`: `{"trace": {...}}` inside the `syncbench/v1` envelope.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TracePayload {
    /// The report.
    pub trace: TraceReport,
}

/// Everything a trace found.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TraceReport {
    /// The traced command line (empty when attached).
    pub command: Vec<String>,
    /// What was attached to (`--pid 12`, `--comm postgres`, `--all`); `None` for a started command.
    #[serde(default)]
    pub attached_to: Option<String>,
    /// How calls were intercepted (`ptrace+seccomp`, or `perf_event syscall tracepoints` when attached).
    pub mechanism: String,
    /// What read the block tracepoints for the disks' request lines (`eBPF programs on the block
    /// tracepoints`, or `perf_event block tracepoints`); absent when they were not read (ptrace tracer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_mechanism: Option<String>,
    /// Block tracepoint hits not recorded (`block_dropped_events` plus the block programs' runs the kernel
    /// skipped: see docs/trace.md, "The disks"): each disk's request counts are low by up to this. `None`
    /// (null) when not known: eBPF programs on a kernel before Linux 6.7, which does not count skipped
    /// runs (or a count that could not be read); and when the block tracepoints were not read.
    #[serde(default)]
    pub block_lost_events: Option<u64>,
    /// Of those, block tracepoint records dropped (a ring buffer full; eBPF: or a record of the wrong
    /// length), known on every kernel: the request counts are low when it is not 0, and the text report
    /// says so in capitals. Absent (0) in files from before it was recorded.
    #[serde(default)]
    pub block_dropped_events: u64,
    /// Whether `--no-sync` skipped the durability calls (nothing the command wrote was durable).
    pub no_sync: bool,
    /// Whether writes, closes and dups were traced (bytes between syncs, O_SYNC/O_DSYNC writes).
    pub writes_tracked: bool,
    /// Exit status of the command, when it exited.
    pub exit_code: Option<i32>,
    /// Signal that killed the command, when one did.
    pub killed_by_signal: Option<i32>,
    /// Wall time of the whole command, seconds.
    pub duration_s: f64,
    /// Processes seen (the command and its descendants).
    pub processes: u64,
    /// Tasks (threads included) seen.
    pub tasks: u64,
    /// Per call type.
    pub calls: Vec<CallReport>,
    /// Per file and call type, files sorted by directory.
    pub files: Vec<FileReport>,
    /// Files opened with O_SYNC or O_DSYNC, with how often.
    pub sync_opens: Vec<SyncOpen>,
    /// The comparison with a saved `syncbench run`, when `--baseline` was given.
    pub baseline: Option<BaselineComparison>,
    /// Programs whose durability calls may not have been seen (io_uring, 32-bit); each is also printed as
    /// one warning line on stderr.
    #[serde(default)]
    pub coverage_warnings: Vec<CoverageWarning>,
    /// Samples the kernel dropped because a ring buffer was full (attached traces; counts are low when
    /// non-zero).
    #[serde(default)]
    pub lost_events: u64,
    /// The disks under the traced files over the window.
    #[serde(default)]
    pub devices: Vec<TracedDevice>,
}

/// Why some durability calls may be missing from the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CoverageWarning {
    /// `io_uring` (the program set up an io_uring) or `32-bit` (an i386 or x32 program ran).
    pub kind: String,
    /// The programs concerned (executable paths; for `32-bit` followed by the ABI in parentheses).
    pub programs: Vec<String>,
    /// The warning line printed on stderr (without the `syncbench: warning: ` prefix).
    pub message: String,
}

/// The warnings for what the tracer could not see.
pub fn coverage_warnings(unseen: &Unseen, no_sync: bool) -> Vec<CoverageWarning> {
    let names = |programs: &[String]| {
        let shown: Vec<String> = programs.iter().take(3).map(|p| format!("`{p}`")).collect();
        match programs.len() {
            n if n > 3 => format!("{} and {} more", shown.join(", "), n - 3),
            _ => shown.join(", "),
        }
    };
    let skipped = if no_sync { " (nor made no-ops by --no-sync)" } else { "" };
    let mut out = Vec::new();
    if !unseen.io_uring.is_empty() {
        let programs: Vec<String> = unseen.io_uring.iter().cloned().collect();
        let message = format!(
            "{} called io_uring_setup: fsyncs and O_DSYNC/RWF_DSYNC writes submitted through io_uring make no \
             system call, so they are not seen{skipped} and its durability calls may be missing from this report",
            names(&programs)
        );
        out.push(CoverageWarning { kind: "io_uring".into(), programs, message });
    }
    if !unseen.not_x86_64.is_empty() {
        let programs: Vec<String> = unseen.not_x86_64.iter().map(|(p, abi)| format!("{p} ({abi})")).collect();
        let message = format!(
            "{} {} 32-bit: only x86_64 system calls are traced, so its durability calls are not seen{skipped} \
             and may be missing from this report",
            names(&programs),
            if programs.len() == 1 { "is" } else { "are" }
        );
        out.push(CoverageWarning { kind: "32-bit".into(), programs, message });
    }
    out
}

/// One call type, overall or on one file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallReport {
    /// Call name (`fdatasync`, `write(O_DSYNC)`, `pwritev2(RWF_DSYNC)`, ...).
    pub call: String,
    /// Calls seen (timed + skipped).
    pub count: u64,
    /// Calls skipped by `--no-sync` (not timed).
    pub skipped: u64,
    /// Timed calls that returned an error.
    pub errors: u64,
    /// count / duration of the command.
    pub calls_per_s: f64,
    /// Total time the program waited in the timed calls, ns.
    pub total_ns: u64,
    /// Latency of the timed calls, as seen by the tracer (includes two ptrace stops, see docs/trace.md).
    pub latency_ns: LatencyNs,
    /// Log2 latency histogram (non-empty buckets).
    pub histogram_log2: Vec<Log2Bucket>,
    /// Bytes written to the file since its previous sync, per sync (for durable writes: bytes per write).
    pub bytes_between_syncs: BytesSummary,
}

/// One call type on one file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileReport {
    /// Directory of the file (or the target's description, e.g. `(all file systems)`).
    pub dir: String,
    /// File name inside `dir` (empty for non-file targets).
    pub file: String,
    /// The numbers.
    #[serde(flatten)]
    pub stats: CallReport,
}

/// A file opened with O_SYNC/O_DSYNC.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncOpen {
    /// Path.
    pub path: String,
    /// Times opened.
    pub opens: u64,
}

/// "Your device did fdatasync in X µs in `syncbench run`; this program waited Y µs."
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BaselineComparison {
    /// The run file.
    pub file: String,
    /// The case compared with (`one_write` / `fdatasync`, its label).
    pub case_label: String,
    /// The run's median commit latency (write + fdatasync), ns.
    pub run_p50_ns: u64,
    /// The run's p99, ns.
    pub run_p99_ns: u64,
    /// The traced program's call compared (`fdatasync`, or the most frequent durability call).
    pub traced_call: String,
    /// Its median latency here, ns.
    pub traced_p50_ns: u64,
    /// Its p99 here, ns.
    pub traced_p99_ns: u64,
}

fn call_report(name: &str, stats: &CallStats, duration_s: f64) -> CallReport {
    CallReport {
        call: name.to_string(),
        count: stats.count(),
        skipped: stats.skipped,
        errors: stats.errors,
        calls_per_s: if duration_s > 0.0 { stats.count() as f64 / duration_s } else { 0.0 },
        total_ns: stats.total_ns(),
        latency_ns: stats.latency_ns(),
        histogram_log2: stats.histogram_log2(),
        bytes_between_syncs: stats.bytes_summary(),
    }
}

/// What a trace was and how it ended, whichever tracer ran it.
#[derive(Debug, Default)]
pub struct Meta {
    /// The started command (empty when attached).
    pub command: Vec<String>,
    /// What was attached to, when attached.
    pub attached_to: Option<String>,
    /// `ptrace+seccomp` or `perf_event syscall tracepoints`.
    pub mechanism: &'static str,
    /// What read the block tracepoints, when they were read.
    pub block_mechanism: Option<&'static str>,
    /// Block tracepoint hits not recorded (attached).
    pub block_lost: Lost,
    /// How the started command ended.
    pub ending: Option<Ending>,
    /// Length of the trace, seconds.
    pub duration_s: f64,
    /// Processes seen.
    pub processes: u64,
    /// Tasks seen.
    pub tasks: u64,
    /// What may have escaped the tracer.
    pub unseen: Unseen,
    /// `--no-sync`.
    pub no_sync: bool,
    /// Writes traced (not `--syncs-only`).
    pub writes_tracked: bool,
    /// Samples lost (attached).
    pub lost_events: u64,
}

/// Build the report from a finished trace (either tracer): one report for both.
pub fn build(meta: Meta, r: &Recorder, disks: &devices::DiskWindow) -> TraceReport {
    let d = meta.duration_s;
    let mut calls: Vec<CallReport> = r.by_call.iter().map(|(c, s)| call_report(c.name(), s, d)).collect();
    calls.sort_by(|a, b| b.count.cmp(&a.count).then(a.call.cmp(&b.call)));
    let mut files: Vec<FileReport> = r
        .by_file
        .iter()
        .map(|((target, call), s)| {
            let (dir, file) = split_target(target);
            FileReport { dir, file, stats: call_report(call.name(), s, d) }
        })
        .collect();
    files.sort_by(|a, b| (&a.dir, &a.file, &a.stats.call).cmp(&(&b.dir, &b.file, &b.stats.call)));
    let (exit_code, killed_by_signal) = match meta.ending {
        Some(Ending::Exited(code)) => (Some(code), None),
        Some(Ending::Killed(sig)) => (None, Some(sig)),
        None => (None, None),
    };
    TraceReport {
        command: meta.command,
        attached_to: meta.attached_to,
        mechanism: meta.mechanism.to_string(),
        block_mechanism: meta.block_mechanism.map(str::to_string),
        block_lost_events: meta.block_lost.total(),
        block_dropped_events: meta.block_lost.dropped,
        no_sync: meta.no_sync,
        writes_tracked: meta.writes_tracked,
        exit_code,
        killed_by_signal,
        duration_s: d,
        processes: meta.processes,
        tasks: meta.tasks,
        calls,
        files,
        sync_opens: r.sync_opens.iter().map(|(p, n)| SyncOpen { path: p.clone(), opens: *n }).collect(),
        baseline: None,
        coverage_warnings: coverage_warnings(&meta.unseen, meta.no_sync),
        lost_events: meta.lost_events,
        devices: devices::build(r, disks),
    }
}

const HEADER: &str = "count   calls/s      total        p50        p99        max   bytes/sync";

fn row(name: &str, c: &CallReport) -> String {
    let timed = c.count - c.skipped;
    let lat = |ns: u64| if timed == 0 { "-".to_string() } else { format_ns_fixed(ns) };
    let bytes =
        if c.bytes_between_syncs.samples == 0 { "-".into() } else { format_bytes_fixed(c.bytes_between_syncs.mean) };
    let mut line = format!(
        "{name:<24} {:>7} {:>9.1} {:>10} {:>10} {:>10} {:>10} {:>12}",
        c.count,
        c.calls_per_s,
        lat(c.total_ns),
        lat(c.latency_ns.p50),
        lat(c.latency_ns.p99),
        lat(c.latency_ns.max),
        bytes
    );
    if c.skipped > 0 {
        let _ = write!(line, "  ({} skipped)", c.skipped);
    }
    if c.errors > 0 {
        let _ = write!(line, "  ({} FAILED)", c.errors);
    }
    line
}

/// DTrace `quantize`-style rendering: one line per power of two, from one empty bucket below the fastest
/// to one above the slowest, a 40-character bar, and the count.
pub fn quantize(buckets: &[Log2Bucket]) -> String {
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else {
        return String::new();
    };
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    let counts: BTreeMap<u64, u64> = buckets.iter().map(|b| (b.lower_ns, b.count)).collect();
    let mut out = format!("{:>16}  {:-^42} count\n", "value (ns)", " Distribution ");
    let mut value = (first.lower_ns / 2).max(1);
    let end = last.lower_ns.saturating_mul(2);
    loop {
        let count = counts.get(&value).copied().unwrap_or(0);
        let bar = "@".repeat(((count * 40 + total / 2) / total.max(1)) as usize);
        let _ = writeln!(out, "{value:>16} |{bar:<41} {count}");
        if value >= end {
            break;
        }
        value *= 2;
    }
    out
}

/// The first line: what was traced, for how long, and how it ended.
fn render_header(out: &mut String, report: &TraceReport) {
    let ending = match (report.exit_code, report.killed_by_signal) {
        (Some(code), _) => format!("exit status {code}"),
        (_, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown ending".into(),
    };
    let _ = match &report.attached_to {
        Some(target) => writeln!(
            out,
            "\nsyncbench trace: attached to {target} for {:.2} s; {} process(es), {} task(s) made durability calls",
            report.duration_s, report.processes, report.tasks
        ),
        None => writeln!(
            out,
            "\nsyncbench trace: `{}` ran {:.2} s, {ending}; {} process(es), {} task(s)",
            report.command.join(" "),
            report.duration_s,
            report.processes,
            report.tasks
        ),
    };
}

/// The text report (stderr by default).
pub fn render(report: &TraceReport, histograms: bool) -> String {
    let mut out = String::new();
    render_header(&mut out, report);
    if report.lost_events > 0 {
        let _ = writeln!(
            out,
            "INCOMPLETE: the kernel dropped {} trace samples (ring buffers full): counts below are low",
            report.lost_events
        );
    }
    for line in block_loss_lines(report) {
        let _ = writeln!(out, "{line}");
    }
    if report.no_sync {
        let _ = writeln!(out, "NOTHING WAS DURABLE: --no-sync skipped every durability call below.");
    }
    if report.calls.is_empty() {
        let _ = writeln!(out, "no durability calls (fsync, fdatasync, O_SYNC/O_DSYNC writes, ...) were made");
    } else {
        let _ = writeln!(out, "\nby call\n{:<24} {HEADER}", "call");
        for c in &report.calls {
            let _ = writeln!(out, "{}", row(&c.call, c));
        }
        render_files(&mut out, &report.files);
    }
    if !report.sync_opens.is_empty() {
        let _ = writeln!(out, "\nopened with O_SYNC/O_DSYNC");
        for o in &report.sync_opens {
            let _ = writeln!(out, "  {} ({}×)", escape_name(&o.path), o.opens);
        }
    }
    if histograms {
        for c in report.calls.iter().filter(|c| !c.histogram_log2.is_empty()) {
            let _ = write!(out, "\n  {}\n{}", c.call, quantize(&c.histogram_log2));
        }
    }
    if let Some(b) = &report.baseline {
        let _ = writeln!(
            out,
            "\nyour device did write+fdatasync in {} (p50; p99 {}) in `syncbench run` ({}); this program waited {} \
             (p50; p99 {}) in {}",
            format_ns_fixed(b.run_p50_ns),
            format_ns_fixed(b.run_p99_ns),
            b.case_label,
            format_ns_fixed(b.traced_p50_ns),
            format_ns_fixed(b.traced_p99_ns),
            b.traced_call
        );
    }
    devices::render(&mut out, &report.devices);
    if !report.writes_tracked {
        let _ = writeln!(out, "(--syncs-only: writes not traced, so no bytes between syncs and no O_DSYNC writes)");
    }
    out
}

/// What the block tracepoints' reader missed, in words: dropped records make the request counts low
/// (INCOMPLETE, as for the calls); the eBPF programs' skipped runs, counted or not, may.
fn block_loss_lines(report: &TraceReport) -> Vec<String> {
    let Some(mechanism) = report.block_mechanism.as_deref() else { return Vec::new() };
    let bpf = mechanism == Mechanism::Bpf.describe();
    let dropped = report.block_dropped_events;
    let mut lines = Vec::new();
    if dropped > 0 {
        let why = if bpf { "the eBPF ring buffer full, or a malformed record" } else { "perf ring buffers full" };
        lines.push(format!(
            "INCOMPLETE: the kernel dropped {dropped} block tracepoint records ({why}): the disks' request counts \
             below are low"
        ));
    }
    if !bpf {
        return lines; // perf's recursion guard is per context: nothing is skipped this way
    }
    match report.block_lost_events.map(|lost| lost.saturating_sub(dropped)) {
        Some(0) => {}
        Some(skipped) => lines.push(format!(
            "the disks' request counts below may be low by up to {skipped}: the kernel skipped the block programs \
             {skipped} times (a block tracepoint fired in an interrupt while another eBPF program ran on that CPU)"
        )),
        None => lines.push(
            "the disks' request counts below may be low: the kernel skips the block programs when a block \
             tracepoint fires in an interrupt while another eBPF program runs on that CPU, and these skips are \
             not known here (Linux counts them from 6.7): the /sys/block line is the count to trust"
                .to_string(),
        ),
    }
    lines
}

fn render_files(out: &mut String, files: &[FileReport]) {
    let _ = writeln!(out, "\nby file\n{:<24} {HEADER}", "file / call");
    let mut last: Option<(&str, &str)> = None;
    for f in files {
        // Names escaped: a newline in a file name must not break the table.
        if last.map(|(dir, _)| dir) != Some(f.dir.as_str()) {
            let _ = writeln!(out, "{}", escape_name(&f.dir));
        }
        if last != Some((f.dir.as_str(), f.file.as_str())) && !f.file.is_empty() {
            let _ = writeln!(out, "  {}", escape_name(&f.file));
        }
        last = Some((f.dir.as_str(), f.file.as_str()));
        let _ = writeln!(out, "{}", row(&format!("    {}", f.stats.call), &f.stats));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_pads_one_empty_bucket_each_side() {
        let text = quantize(&[
            Log2Bucket { lower_ns: 67_108_864, count: 1520 },
            Log2Bucket { lower_ns: 134_217_728, count: 80 },
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[1].trim_start().starts_with("33554432 |"));
        assert!(lines[1].ends_with(" 0"));
        assert!(lines[2].contains(&"@".repeat(38)) && lines[2].ends_with("1520"));
        assert!(lines[4].trim_start().starts_with("268435456 |"));
    }

    #[test]
    fn targets_split_into_directory_and_file() {
        assert_eq!(split_target("/db/pg_wal/0001"), ("/db/pg_wal/".into(), "0001".into()));
        assert_eq!(split_target("/db/pg_wal/"), ("/db/pg_wal/".into(), String::new()));
        assert_eq!(split_target("(all file systems)"), ("(all file systems)".into(), String::new()));
    }

    #[test]
    fn coverage_warnings_are_one_line_each_and_empty_when_all_was_seen() {
        assert!(coverage_warnings(&Unseen::default(), false).is_empty());
        let mut unseen = Unseen::default();
        unseen.io_uring.insert("/usr/bin/db".into());
        unseen.not_x86_64.insert(("/opt/old".into(), "i386"));
        let w = coverage_warnings(&unseen, true);
        assert_eq!(w.iter().map(|w| w.kind.as_str()).collect::<Vec<_>>(), ["io_uring", "32-bit"]);
        assert_eq!(w[1].programs, ["/opt/old (i386)"]);
        for w in &w {
            assert!(!w.message.contains('\n') && w.message.contains("may be missing"), "{}", w.message);
            assert!(w.message.contains("--no-sync"), "{}", w.message);
        }
    }

    #[test]
    fn block_losses_are_worded_per_mechanism_and_dropped_records_make_the_report_incomplete() {
        let bpf = Some(Mechanism::Bpf.describe().to_string());
        let perf = Some(Mechanism::Perf.describe().to_string());
        let text = |block_mechanism: &Option<String>, lost: Option<u64>, dropped: u64| {
            let r = TraceReport {
                block_mechanism: block_mechanism.clone(),
                block_lost_events: lost,
                block_dropped_events: dropped,
                ..TraceReport::default()
            };
            render(&r, false)
        };
        // eBPF, ring full and skipped runs: both said, apart.
        let t = text(&bpf, Some(12), 5);
        assert!(t.contains("INCOMPLETE: the kernel dropped 5 block tracepoint records (the eBPF ring"), "{t}");
        assert!(t.contains("may be low by up to 7: the kernel skipped the block programs 7 times"), "{t}");
        // eBPF before Linux 6.7: the skips are unknown, the stat line is what to trust.
        let t = text(&bpf, None, 0);
        assert!(!t.contains("INCOMPLETE"), "{t}");
        assert!(t.contains("not known here (Linux counts them from 6.7): the /sys/block line is the count to trust"));
        let t = text(&bpf, Some(0), 0);
        assert!(!t.contains("request counts"), "nothing lost, nothing said: {t}");
        // perf: its dropped samples make it incomplete; no eBPF program is blamed.
        let t = text(&perf, Some(3), 3);
        assert!(t.contains("INCOMPLETE: the kernel dropped 3 block tracepoint records (perf ring buffers full)"));
        assert!(!t.contains("eBPF"), "{t}");
        // Not read (ptrace): nothing.
        assert!(!text(&None, None, 0).contains("request counts"));
    }

    #[test]
    fn a_lost_count_not_known_is_null_in_the_json() {
        let meta = Meta { block_lost: Lost { dropped: 2, skipped: None }, ..Meta::default() };
        let r = build(meta, &Recorder::new(true), &devices::DiskWindow::default());
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!((json["block_lost_events"].is_null(), &json["block_dropped_events"]), (true, &serde_json::json!(2)));
        let meta = Meta { block_lost: Lost { dropped: 2, skipped: Some(5) }, ..Meta::default() };
        let json = serde_json::to_value(build(meta, &Recorder::new(true), &devices::DiskWindow::default())).unwrap();
        assert_eq!(json["block_lost_events"], 7);
    }

    #[test]
    fn units_scale() {
        assert_eq!(format_ns_fixed(950), "950 ns");
        assert_eq!(format_ns_fixed(1_500), "1.5 µs");
        assert_eq!(format_ns_fixed(67_000_000), "67.00 ms");
    }
}
