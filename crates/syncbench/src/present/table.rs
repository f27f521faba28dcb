//! The terminal table: one block per section like pg_test_fsync's, the fastest durable method marked where a
//! section asks which method is fastest, (d)'s question answered in words, not-durable methods visibly
//! marked, a note where pg_test_fsync's names mean something else, and optional log2 histograms like
//! DTrace's quantize.

use crate::core::method::SyncMethod;
use crate::core::schema::{CaseResult, Log2Bucket};
use crate::core::suite::Section;
use std::fmt::Write;

/// Marker of the fastest durable case in a section.
pub const FASTEST_MARK: &str = "<- fastest durable";
/// Marker of the highest durable rate when another durable case's 95% interval overlaps it: no winner.
pub const TIE_MARK: &str = "<- highest, undecided (95% intervals overlap)";
/// Marker of a case whose commits are not durable.
pub const NOT_DURABLE_MARK: &str = "NOT DURABLE";

/// Under the first table with a buffered `open_datasync`/`open_sync`: pg_test_fsync's cases of those names
/// open with O_DIRECT, so its numbers compare with our `+direct` rows, not with these.
pub const PG_TEST_FSYNC_NOTE: &str = "note: pg_test_fsync's open_datasync and open_sync use O_DIRECT; here they are buffered. \
     Its open_datasync is open_datasync+direct here (its fdatasync and fsync are ours).";

/// Label of (d)'s question case: fsync on a new descriptor after the writing one was closed.
const SYNC_AFTER_CLOSE: &str = "write, close, fsync";

/// Render every section present in `results`, in order. `size_bytes` is the write size in the headings.
pub fn render(results: &[CaseResult], size_bytes: u64, histogram: bool) -> String {
    let mut out = String::new();
    let mut sections: Vec<Section> = Vec::new();
    for r in results {
        if !sections.contains(&r.section) {
            sections.push(r.section);
        }
    }
    let mut pg_note_due = true;
    for name in sections {
        let cases: Vec<&CaseResult> = results.iter().filter(|r| r.section == name).collect();
        render_section(&mut out, name, &cases, size_bytes, histogram);
        if name == Section::CloseThenSync {
            let all: Vec<&CaseResult> = results.iter().collect();
            let _ = writeln!(out, "  → {}", wrap(&honoured_answer(&all), 100, "    "));
        }
        if pg_note_due && cases.iter().any(|c| matches!(c.method, SyncMethod::OpenDatasync | SyncMethod::OpenSync)) {
            let _ = writeln!(out, "  {}", wrap(PG_TEST_FSYNC_NOTE, 100, "        "));
            pg_note_due = false;
        }
    }
    out
}

/// Whether a section asks "which method makes this commit durable fastest?". Only (a) and (b) do: the others
/// ask their own question (does splitting a write cost? is fsync after close honoured? how does cost grow
/// with size? does the file's state matter?), and a "fastest" row in each of them read as seven different
/// winners for one run.
fn asks_for_fastest(section: Option<Section>) -> bool {
    matches!(section, Some(Section::OneWrite | Section::TwoWrites))
}

fn render_section(out: &mut String, section: Section, cases: &[&CaseResult], size_bytes: u64, histogram: bool) {
    let heading = format!("({}) {}", section.letter(), section.title(size_bytes));
    let _ = writeln!(out, "\n{heading}:");
    let width = cases.iter().map(|c| c.label.chars().count()).max().unwrap_or(0).max(20);
    // Device accounting (real runs on a block device): compact per-commit columns.
    let device = cases.iter().any(|c| c.device.is_some());
    let device_heading = if device { format!(" {}", crate::observe::blockdev::render::HEADING) } else { String::new() };
    let _ = writeln!(
        out,
        "  {:<width$} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10}{device_heading}",
        "", "ops/s", "mean µs", "p50 µs", "p99 µs", "max µs", "95% re-run"
    );
    let fastest = if asks_for_fastest(Some(section)) { fastest_durable(cases) } else { None };
    let tie = fastest.is_some_and(|i| is_tie(cases, i));
    for (i, c) in cases.iter().enumerate() {
        let mut line = case_line(c, width, fastest == Some(i) && !tie, device);
        if tie && fastest == Some(i) {
            line = format!("{line}  {TIE_MARK}");
        }
        let _ = writeln!(out, "  {line}");
        if histogram && c.ops > 0 {
            out.push_str(&quantize(&c.histogram_log2));
        }
    }
    out.push_str(&crate::observe::blockdev::render::notes(cases.iter().map(|c| (c.label.as_str(), c.device.as_ref()))));
}

/// (d) answered in words, from all of `results`. An honoured fsync after close must wait for what the closed
/// descriptor wrote to reach stable storage: it takes at least about as long as the fastest durable commit
/// of one write of the same size measured in this run (the flush floor here); one that skipped the flush costs about a plain write — on a
/// device that really flushes, many times less. The two (d) cases are not compared with each other: they
/// run one after the other, and on a disk whose flush rate swings 10× their ratio says more about the
/// moment than about fsync (a run here once gave 5.6 ms then 0.57 ms). So: "yes" when the 95% interval of
/// fsync-after-close's mean lies above half the floor, "NO" when it lies below and the floor rests on at
/// least three durable cases (so one slow moment cannot fake it), otherwise "cannot tell".
pub fn honoured_answer(results: &[&CaseResult]) -> String {
    let Some(after) = results.iter().find(|c| c.label.trim() == SYNC_AFTER_CLOSE && measured(c)) else {
        return "cannot tell: \"write, close, fsync\" was not measured".to_string();
    };
    // Commits of the same shape: one write of the same size.
    let references: Vec<&&CaseResult> = results
        .iter()
        .filter(|c| c.durable && measured(c) && c.label.trim() != SYNC_AFTER_CLOSE)
        .filter(|c| c.write_size_bytes == after.write_size_bytes && c.writes_per_commit <= 1)
        .collect();
    let Some(floor) = references.iter().min_by(|a, b| a.latency_ns.mean.total_cmp(&b.latency_ns.mean)) else {
        return "cannot tell: no other durable case was measured to compare with".to_string();
    };
    let us = |ns: f64| format!("{:.0} µs", ns / 1000.0);
    // The interval is a rate's, multiplicative: the mean time divided or multiplied by the same factor.
    let time = crate::core::stats::Estimate::from_rel(after.latency_ns.mean, after.ci95_rel);
    let (low, high) = (time.low, time.high);
    let half = floor.latency_ns.mean / 2.0;
    let facts = format!(
        "fsync on a descriptor that did not write took {}; the fastest durable commit \
         of one {} write in this run took {} ({} in ({}))",
        time.text(|ns| format!("{:.0}", ns / 1000.0), " µs", "95% interval"),
        crate::core::suite::format_size(after.write_size_bytes),
        us(floor.latency_ns.mean),
        floor.label.trim(),
        floor.section.letter()
    );
    if low >= half {
        format!("yes: {facts}: it waited for a flush like any durable commit.")
    } else if high < half && references.len() >= 3 {
        format!(
            "NO: {facts}: less than half of that, too fast to have flushed what the closed descriptor wrote. \
             Sync before closing on this file system."
        )
    } else {
        format!("cannot tell from this run: {facts}. Rerun with --sections a,d --secs 2.")
    }
}

fn measured(c: &CaseResult) -> bool {
    c.supported && c.error.is_none() && c.ops > 0 && c.latency_ns.mean > 0.0
}

/// `text` broken at spaces into lines of at most `width` characters, continuation lines after `indent`.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line_len = 0;
    for word in text.split(' ') {
        if line_len > 0 && line_len + 1 + word.chars().count() > width {
            out.push('\n');
            out.push_str(indent);
            line_len = indent.len();
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(word);
        line_len += word.chars().count();
    }
    out
}

/// Index of the durable, measured case with the highest ops/s.
pub fn fastest_durable(cases: &[&CaseResult]) -> Option<usize> {
    cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.durable && c.supported && c.error.is_none() && c.ops > 0)
        .max_by(|(_, a), (_, b)| a.ops_per_s.total_cmp(&b.ops_per_s))
        .map(|(i, _)| i)
}

/// Whether [`crate::core::stats::decide`] cannot put the fastest above every other durable case (their intervals
/// overlap): then "fastest" is not established by this run and no winner is named.
fn is_tie(cases: &[&CaseResult], fastest: usize) -> bool {
    let best = cases[fastest].estimate();
    cases.iter().enumerate().any(|(i, c)| {
        i != fastest
            && c.durable
            && c.supported
            && c.error.is_none()
            && c.ops > 0
            && !matches!(crate::core::stats::decide(&best, &c.estimate()), crate::core::stats::Decision::AFaster(_))
    })
}

fn case_line(c: &CaseResult, width: usize, fastest: bool, device: bool) -> String {
    let label = format!("{:<width$}", c.label);
    if let Some(error) = &c.error {
        let what = if c.supported { "failed" } else { "n/a" };
        return format!("{label} {what:>12}   {error}");
    }
    let us = |ns: f64| format!("{:.1}", ns / 1000.0);
    let l = &c.latency_ns;
    let mark = match (c.durable, fastest) {
        (false, _) => format!("  {NOT_DURABLE_MARK}"),
        (true, true) => format!("  {FASTEST_MARK}"),
        _ => String::new(),
    };
    // A disturbed disk's rate is a lower bound: its ± does not hold upwards.
    let mark = if c.lower_bound { format!("{mark}  ≥ disturbed: a lower bound") } else { mark };
    let columns = if device {
        format!(" {}", crate::observe::blockdev::render::columns(c.device.as_ref()))
    } else {
        String::new()
    };
    format!(
        "{label} {:>12.1} {:>10} {:>10} {:>10} {:>10} {:>10}{columns}{mark}",
        c.ops_per_s,
        us(l.mean),
        us(l.p50 as f64),
        us(l.p99 as f64),
        us(l.max as f64),
        c.estimate().column()
    )
}

/// DTrace-quantize-style histogram: one row per power of two, empty rows inside the range shown as 0,
/// one empty row before and after.
pub fn quantize(buckets: &[Log2Bucket]) -> String {
    let Some(total) = Some(buckets.iter().map(|b| b.count).sum::<u64>()).filter(|t| *t > 0) else {
        return String::new();
    };
    let index = |b: &Log2Bucket| if b.lower_ns == 0 { 0 } else { b.lower_ns.trailing_zeros() };
    let first = buckets.iter().map(index).min().unwrap_or(0).saturating_sub(1);
    let last = (buckets.iter().map(index).max().unwrap_or(0) + 1).min(63);
    let mut out = format!("      {:>16}  {:-^42} count\n", "value (ns)", " Distribution ");
    for i in first..=last {
        let lower = if i == 0 { 0 } else { 1u64 << i };
        let count = buckets.iter().find(|b| index(b) == i).map_or(0, |b| b.count);
        let bar = ((count as f64 / total as f64) * 40.0).round() as usize;
        let _ = writeln!(out, "      {lower:>16} |{:<40} {count}", "@".repeat(bar));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(label: &str, durable: bool, ops_per_s: f64) -> CaseResult {
        CaseResult {
            section: crate::core::suite::Section::OneWrite,
            method: label.parse().unwrap_or_default(),
            label: label.into(),
            durable,
            supported: true,
            ops: 10,
            ops_per_s,
            ..CaseResult::default()
        }
    }

    #[test]
    fn marks_fastest_durable_and_not_durable() {
        let results = vec![
            case("fdatasync", true, 5000.0),
            case("fsync", true, 4000.0),
            case("write", false, 900_000.0),
            CaseResult {
                supported: false,
                error: Some("EINVAL: O_DIRECT is not supported by tmpfs".into()),
                ..case("open_sync+direct", true, 0.0)
            },
        ];
        let text = render(&results, 8192, false);
        let line = |name: &str| text.lines().find(|l| l.trim_start().starts_with(name)).unwrap().to_string();
        assert!(text.contains("(a) Compare sync methods using one 8 KiB write per commit:"), "{text}");
        assert!(line("fdatasync").ends_with(FASTEST_MARK), "{text}");
        assert!(!line("fsync").contains(FASTEST_MARK));
        assert!(line("write").ends_with(NOT_DURABLE_MARK));
        assert!(line("open_sync+direct").contains("n/a   EINVAL: O_DIRECT is not supported by tmpfs"));
    }

    #[test]
    fn overlapping_intervals_are_a_tie() {
        let wide = |label: &str, ops: f64| CaseResult { ci95_rel: 0.2, ..case(label, true, ops) };
        let text = render(&[wide("fdatasync", 5000.0), wide("fsync", 4500.0)], 8192, false);
        // No winner named: the highest is marked undecided, never "fastest".
        assert!(text.contains(TIE_MARK) && !text.contains(FASTEST_MARK), "{text}");
        let narrow = |label: &str, ops: f64| CaseResult { ci95_rel: 0.01, ..case(label, true, ops) };
        let text = render(&[narrow("fdatasync", 5000.0), narrow("fsync", 4500.0)], 8192, false);
        assert!(!text.contains(TIE_MARK), "{text}");
    }

    fn in_section(section: &str, label: &str, ops_per_s: f64) -> CaseResult {
        CaseResult { section: section.parse().unwrap(), ..case(label, true, ops_per_s) }
    }

    #[test]
    fn fastest_is_marked_only_where_the_section_asks_which_method_is_fastest() {
        let results = vec![
            in_section("one_write", "fdatasync", 5000.0),
            in_section("one_write", "fsync", 100.0),
            in_section("two_writes", "fdatasync", 3000.0),
            in_section("two_writes", "fsync", 100.0),
            in_section("write_sizes", "1 x 16 KiB open_sync", 4000.0),
            in_section("write_sizes", "2 x 8 KiB open_sync", 100.0),
            in_section("size_sweep", "4 KiB fdatasync", 4000.0),
            in_section("file_state", "overwrite fsync", 4000.0),
            in_section("file_state", "append fsync", 100.0),
        ];
        let text = render(&results, 8192, false);
        assert_eq!(text.matches(FASTEST_MARK).count(), 2, "{text}");
        let marked: Vec<&str> = text.lines().filter(|l| l.contains(FASTEST_MARK)).collect();
        assert!(marked.iter().all(|l| l.trim_start().starts_with("fdatasync")), "{text}");
    }

    fn close_case(label: &str, mean_ns: f64, ci95_rel: f64) -> CaseResult {
        CaseResult {
            section: crate::core::suite::Section::CloseThenSync,
            method: crate::core::method::SyncMethod::Fsync,
            latency_ns: crate::core::schema::LatencyNs { mean: mean_ns, ..Default::default() },
            ci95_rel,
            ..case(label, true, 1e9 / mean_ns)
        }
    }

    fn one_write(label: &str, mean_ns: f64) -> CaseResult {
        CaseResult { section: crate::core::suite::Section::OneWrite, ..close_case(label, mean_ns, 0.05) }
    }

    /// (d)'s answer line, whitespace collapsed.
    fn answer_of(results: &[CaseResult]) -> String {
        let text = render(results, 8192, false);
        assert!(!text.lines().filter(|l| l.contains("write, ")).any(|l| l.contains(FASTEST_MARK)), "{text}");
        let at = text.find('→').unwrap_or_else(|| panic!("{text}"));
        text[at..].split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn fsync_after_close_is_answered_against_the_fastest_durable_commit_of_the_run() {
        let floor = || {
            vec![one_write("fdatasync", 200_000.0), one_write("fsync", 250_000.0), one_write("open_sync", 300_000.0)]
        };
        let with = |before_ns: f64, after_ns: f64, rel: f64| {
            let mut results = floor();
            results.push(close_case("write, fsync, close", before_ns, rel));
            results.push(close_case(SYNC_AFTER_CLOSE, after_ns, rel));
            answer_of(&results)
        };
        let yes = with(600_000.0, 575_000.0, 0.3);
        assert!(yes.starts_with("→ yes:") && yes.contains("took 575 µs ±30%;"), "{yes}");
        assert!(yes.contains("in this run took 200 µs (fdatasync in (a))"), "{yes}");
        // A slow moment during the reference case (5.6 ms, then 0.57 ms: seen on this machine) is no "no".
        assert!(with(5_572_000.0, 575_000.0, 0.3).starts_with("→ yes:"));
        let no = with(600_000.0, 12_000.0, 0.2);
        assert!(no.starts_with("→ NO:") && no.contains("took 12 µs"), "{no}");
        let unclear = with(600_000.0, 90_000.0, 0.3);
        assert!(unclear.starts_with("→ cannot tell from this run"), "{unclear}");
        // A wide interval reads as a factor, never as "0 µs–10547224 µs".
        let wide = with(600_000.0, 130_000.0, 80_000.0);
        assert!(wide.contains("took 130 µs, 95% interval ×/÷ >1,000;"), "{wide}");
        // With (d) alone, the floor is one case: too little to say no.
        let alone = answer_of(&[
            close_case("write, fsync, close", 600_000.0, 0.1),
            close_case(SYNC_AFTER_CLOSE, 12_000.0, 0.1),
        ]);
        assert!(alone.starts_with("→ cannot tell from this run"), "{alone}");
        let missing = answer_of(&[close_case("write, fsync, close", 500_000.0, 0.1)]);
        assert!(missing.starts_with("→ cannot tell: \"write, close, fsync\" was not measured"), "{missing}");
    }

    #[test]
    fn the_pg_test_fsync_note_follows_the_first_table_with_buffered_open_datasync_once() {
        let open = |section: &str| CaseResult {
            method: crate::core::method::SyncMethod::OpenDatasync,
            ..in_section(section, "open_datasync", 1.0)
        };
        let text = render(&[in_section("no_sync", "write", 1.0), open("one_write"), open("two_writes")], 8192, false);
        assert_eq!(text.matches("pg_test_fsync's open_datasync").count(), 1, "{text}");
        let note = text.find("pg_test_fsync's").unwrap();
        assert!(text.find("(a) ").unwrap() < note && note < text.find("(b) ").unwrap(), "{text}");
        assert!(text.contains("open_datasync+direct here"), "{text}");
        let without = render(&[in_section("one_write", "fdatasync", 1.0)], 8192, false);
        assert!(!without.contains("pg_test_fsync"), "{without}");
    }

    #[test]
    fn failed_cases_are_never_fastest() {
        let results =
            [CaseResult { error: Some("EIO".into()), ..case("fsync", true, 1e9) }, case("fdatasync", true, 1.0)];
        let refs: Vec<&CaseResult> = results.iter().collect();
        assert_eq!(fastest_durable(&refs), Some(1));
    }

    #[test]
    fn quantize_fills_gaps_and_pads() {
        let text = quantize(&[Log2Bucket { lower_ns: 1024, count: 3 }, Log2Bucket { lower_ns: 4096, count: 1 }]);
        let rows: Vec<(u64, u64)> = text
            .lines()
            .skip(1)
            .map(|l| {
                let (value, rest) = l.split_once('|').unwrap();
                (value.trim().parse().unwrap(), rest.split_whitespace().last().unwrap().parse().unwrap())
            })
            .collect();
        assert_eq!(rows, vec![(512, 0), (1024, 3), (2048, 0), (4096, 1), (8192, 0)]);
        assert!(text.contains(&format!("|{}", "@".repeat(30))));
        assert!(quantize(&[]).is_empty());
    }
}
