//! The answer first: a few lines that open a measuring command's output — the most severe verdict, the
//! fastest durable method for one and for two writes per commit with their intervals, how disturbed the
//! measurement was, and the next command to run — before the environment and the tables. And the notes on
//! individual cases (drift, disturbances) that follow the tables.

use crate::core::schema::CaseResult;
use crate::core::stats::{Decision, decide};
use crate::core::suite::Section;
use crate::core::suite::format_size;
use crate::core::verdict::{Severity, Verdict};
use syncbench_engine::pages::Mode;

/// What the summary of `run` needs besides the results.
pub struct RunContext<'a> {
    /// The verdicts, most severe first.
    pub verdicts: &'a [Verdict],
    /// The command to suggest next (e.g. `syncbench advise --from run.json`).
    pub next: String,
    /// Interrupted before every round ran.
    pub partial: bool,
    /// Leftovers of a killed run in the directory, in a sentence with the command to remove them.
    pub leftover: Option<String>,
}

/// The opening lines of `run`'s output.
pub fn run_summary(results: &[CaseResult], ctx: &RunContext<'_>) -> String {
    let mut out = String::from("answer:\n");
    if ctx.partial {
        out.push_str(&format!("  {}\n", crate::core::partial::MARKER));
    }
    out.push_str(&format!("  {}\n", verdict_line(ctx.verdicts)));
    match not_durable_target(ctx.verdicts) {
        // No method is durable here: naming the fastest one would read as a recommendation.
        Some(v) => out.push_str(&format!("  fastest durable: none — no write here is durable ({})\n", v.code)),
        None => {
            for (section, what) in [(Section::OneWrite, "one"), (Section::TwoWrites, "two")] {
                out.push_str(&format!("  {}\n", fastest_line(results, section, what)));
            }
        }
    }
    out.push_str(&format!("  {}\n", noise_line(results)));
    if let Some(note) = &ctx.leftover {
        out.push_str(&format!("  note: {note}\n"));
    }
    out.push_str(&format!("  next: {}\n", ctx.next));
    out
}

/// The verdict that makes every write on the target not durable, when one is known: a memory file system,
/// flushes turned off, or durable commits whose flushes never reached the device.
fn not_durable_target(verdicts: &[Verdict]) -> Option<&Verdict> {
    use crate::core::verdict::VerdictCode::{DurableCommitsWithoutFlush, FlushesDisabled, NotDurableMemoryFs};
    verdicts.iter().find(|v| {
        v.severity == Severity::Critical
            && (v.is(NotDurableMemoryFs) || v.is(FlushesDisabled) || v.is(DurableCommitsWithoutFlush))
    })
}

/// What to run after `run`: advice from the saved JSON, or how to save it.
pub fn next_command(json: Option<&std::path::Path>, dir: &std::path::Path) -> String {
    match json {
        Some(p) if p != std::path::Path::new("-") => format!("syncbench advise --from {}", p.display()),
        Some(_) => "save this JSON to a file, then: syncbench advise --from FILE".to_string(),
        None => format!(
            "syncbench advise {} (or add --json run.json here, then syncbench advise --from run.json)",
            dir.display()
        ),
    }
}

/// The opening lines of `commit`'s output: the worst verdict, one client's ceiling and the best point with
/// their intervals.
pub fn commit_answer(results: &crate::measure::commit::CommitResults, verdicts: &[Verdict]) -> String {
    let mut out = format!("answer:\n  {}\n", verdict_line(verdicts));
    // A disturbed point's rate is a lower bound, not a measurement with an interval.
    let rate = |p: &crate::measure::commit::CommitPoint| match crate::measure::commit::render::estimate(p) {
        _ if p.lower_bound => format!("≥ {:.0} commits/s (disturbed: a lower bound)", p.commits_per_s),
        Some(e) => e.text(|x| format!("{x:.0}"), " commits/s", "re-run"),
        None => format!("{:.0} commits/s", p.commits_per_s),
    };
    let one =
        results.points.iter().filter(|p| p.clients == 1).max_by(|a, b| a.commits_per_s.total_cmp(&b.commits_per_s));
    if let Some(p) = one {
        out.push_str(&format!(
            "  one client: {} with {} (one sync per commit at best)\n",
            rate(p),
            results.method_name()
        ));
    }
    if let Some(best) = results.points.iter().max_by(|a, b| a.commits_per_s.total_cmp(&b.commits_per_s)) {
        let log = if best.group_commit { "group commit" } else { "one sync per commit" };
        out.push_str(&format!(
            "  best point: {} at {} clients, delay {} µs, {log} ({:.1} commits per sync)\n",
            rate(best),
            best.clients,
            best.commit_delay_us,
            best.commits_per_sync
        ));
    }
    let rounds = results.points.first().map_or(0, |p| p.rounds_commits_per_s.len());
    let min = crate::measure::commit::MIN_INTERVAL_ROUNDS;
    let without: usize =
        results.points.iter().filter(|p| p.ci95_rel.is_none() && !p.lower_bound && p.commits > 0).count();
    out.push_str(&if rounds >= min as usize && without > 0 {
        format!(
            "  noise: each point in {rounds} rounds, intervals from their spread; {without} point(s) with fewer than {min} rounds that acknowledged commits: no interval\n"
        )
    } else if rounds >= min as usize {
        format!("  noise: each point in {rounds} rounds, the points in a new order every round; intervals from their spread\n")
    } else if rounds == 0 {
        "  noise: no rounds recorded (a file from before them), no interval\n".to_string()
    } else {
        format!("  noise: {rounds} round(s) per point (--secs under 0.9 s), too few for an interval ({min} at least)\n")
    });
    out
}

/// The opening lines of `pages`' output: the worst verdict and each protection's cost against `none`.
pub fn pages_answer(table: &crate::measure::pages::PagesTable, verdicts: &[Verdict]) -> String {
    let mut out = format!("answer:\n  {}\n", verdict_line(verdicts));
    for r in table.rows.iter().filter(|r| r.supported && r.mode != Mode::None) {
        let versus = match crate::measure::pages::versus_none(table, r) {
            Some(v) => {
                let word = if v.pct < 0.0 { "slower" } else { "faster" };
                let noise = match v.beyond_noise {
                    Some(true) => ", beyond the noise",
                    Some(false) => ", inside the noise (the 95% intervals overlap)",
                    None => "",
                };
                format!("{:.0}% {word} than none{noise}", v.pct.abs())
            }
            None => "no none row to compare with".to_string(),
        };
        let caveat = if r.checkpoints == 0 { " — NO CHECKPOINT: the log only" } else { "" };
        let tps = match r.estimate() {
            _ if r.lower_bound => format!("≥ {:.0} tps (disturbed)", r.tps),
            Some(e) => e.text(|x| format!("{x:.0}"), " tps", "re-run"),
            None => format!("{:.0} tps", r.tps),
        };
        out.push_str(&format!("  {} ({}): {tps}, {versus}{caveat}\n", r.label(), format_size(r.buffer_pool_bytes)));
    }
    let rounds = table.rows.iter().map(|r| r.rounds_tps.len()).max().unwrap_or(0);
    if rounds < 2 {
        out.push_str("  noise: one run per mode, no interval — a difference of a few % is not established\n");
    } else {
        out.push_str(&format!(
            "  noise: intervals say where a re-run lands (95%), from {rounds} rounds per mode with the modes rotated\n"
        ));
    }
    out
}

/// `verdict: CRITICAL not_durable_tmpfs — tmpfs keeps everything in memory.` (first sentence only).
pub fn verdict_line(verdicts: &[Verdict]) -> String {
    let Some(worst) = verdicts.iter().max_by_key(|v| v.severity) else {
        return "verdict: none — no durability or plausibility problem found".to_string();
    };
    if worst.severity == Severity::Info {
        return "verdict: no warnings — no durability or plausibility problem found".to_string();
    }
    let severity = if worst.severity == Severity::Critical { "CRITICAL" } else { "WARNING" };
    format!("verdict: {severity} {} — {}", worst.code, first_sentence(&worst.message))
}

/// Up to the first ". " followed by a capital letter ("e.g. QEMU" continues the sentence only when
/// lower case follows; good enough for the verdicts' own wording).
fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    let end = (0..bytes.len().saturating_sub(2)).find(|&i| {
        bytes[i] == b'.' && bytes[i + 1] == b' ' && bytes[i + 2].is_ascii_uppercase() && !text[..i].ends_with("e.g")
    });
    end.map_or(text, |i| &text[..=i])
}

fn measured(c: &CaseResult) -> bool {
    c.supported && c.error.is_none() && c.ops > 0 && c.ops_per_s > 0.0
}

/// `fastest durable, one 8 KiB write per commit: fdatasync 5030/s ±3.0%`, or when [`crate::core::stats::decide`]
/// cannot put the highest above every other durable case, no winner:
/// `…: undecided, the 95% intervals overlap: fdatasync 5030/s ±3.0%; open_datasync 4900/s ±4.0%`.
pub fn fastest_line(results: &[CaseResult], section: Section, how_many: &str) -> String {
    let mut durable: Vec<&CaseResult> =
        results.iter().filter(|c| c.section == section && c.durable && measured(c)).collect();
    let plural = if how_many == "one" { "write" } else { "writes" };
    durable.sort_by(|a, b| b.ops_per_s.total_cmp(&a.ops_per_s));
    let Some(best) = durable.first() else {
        let letter = section.letter();
        return format!("fastest durable, {how_many} {plural} per commit: not measured (section {letter})");
    };
    let head = format!("fastest durable, {how_many} {} {plural} per commit:", format_size(best.write_size_bytes));
    // A lower bound's interval is open upwards: it may be the fastest, so it is never beaten.
    let tied: Vec<&&CaseResult> = durable[1..]
        .iter()
        .filter(|c| !matches!(decide(&best.estimate(), &c.estimate()), Decision::AFaster(_)))
        .collect();
    if tied.is_empty() {
        return format!("{head} {} {}", best.method, best.rate_text());
    }
    let named: Vec<String> =
        std::iter::once(best).chain(tied).map(|c| format!("{} {}", c.method, c.rate_text())).collect();
    format!("{head} undecided, the 95% intervals overlap: {}", shorten(&named, 3))
}

fn shorten(items: &[String], keep: usize) -> String {
    if items.len() <= keep {
        items.join("; ")
    } else {
        format!("{} and {} more", items[..keep].join("; "), items.len() - keep)
    }
}

/// How many cases drifted or were disturbed, and by what.
pub fn noise_line(results: &[CaseResult]) -> String {
    let ran: Vec<&CaseResult> = results.iter().filter(|c| measured(c)).collect();
    let rounds = ran.iter().map(|c| c.rounds_ops_per_s.len()).max().unwrap_or(0);
    let disturbed = ran.iter().filter(|c| !c.disturbances.is_empty()).count();
    let bounds = ran.iter().filter(|c| c.lower_bound).count();
    let drifted = ran.iter().filter(|c| c.drift.is_some()).count();
    let mut kinds: Vec<&str> = ran.iter().flat_map(|c| c.disturbances.iter().map(|d| d.kind.words())).collect();
    kinds.sort();
    kinds.dedup();
    let base = if rounds > 1 {
        format!(
            "noise: each case in {rounds} rounds, intervals say where a re-run lands (from the spread between rounds)"
        )
    } else {
        "noise: one round per case, intervals from the commits alone".to_string()
    };
    match (disturbed, drifted) {
        (0, 0) => format!("{base}; nothing else seen on the device or CPU"),
        _ => format!(
            "{base}; {disturbed} of {} cases disturbed{}{}, {drifted} drifted (notes below the tables)",
            ran.len(),
            if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) },
            if bounds == 0 { String::new() } else { format!(", {bounds} of them only lower bounds (≥)") }
        ),
    }
}

/// The notes after the tables: one line per drifted or disturbed case (empty when none).
pub fn case_notes(results: &[CaseResult]) -> String {
    let mut out = String::new();
    for c in results.iter().filter(|c| measured(c)) {
        let mut what: Vec<String> = c.disturbances.iter().map(|d| format!("{}: {}", d.kind, d.detail)).collect();
        what.extend(c.drift.iter().map(|d| format!("drift: {d}")));
        if what.is_empty() {
            continue;
        }
        out.push_str(&format!("  {} {}: {}\n", c.section, c.label.trim(), what.join("; ")));
    }
    if out.is_empty() { out } else { format!("\nnotes on cases:\n{out}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::{Disturbance, DisturbanceKind};

    fn case(section: &str, method: &str, ops: f64, ci: f64) -> CaseResult {
        CaseResult {
            section: section.parse().unwrap(),
            method: method.parse().unwrap(),
            label: method.into(),
            durable: method != "write",
            supported: true,
            write_size_bytes: 8192,
            writes_per_commit: if section == "two_writes" { 2 } else { 1 },
            ops: 100,
            ops_per_s: ops,
            ci95_rel: ci,
            rounds_ops_per_s: vec![ops; 5],
            ..CaseResult::default()
        }
    }

    #[test]
    fn the_answer_names_the_fastest_durable_methods_with_intervals_and_ties() {
        let results = vec![
            case("one_write", "write", 300_000.0, 0.05),
            case("one_write", "fdatasync", 5000.0, 0.04),
            case("one_write", "open_datasync", 4900.0, 0.03),
            case("one_write", "fsync", 3000.0, 0.02),
            case("two_writes", "fdatasync", 2600.0, 0.10),
        ];
        let line = fastest_line(&results, Section::OneWrite, "one");
        assert_eq!(
            line,
            "fastest durable, one 8 KiB write per commit: undecided, the 95% intervals overlap: fdatasync 5000/s \
             ±4.0%; open_datasync 4900/s ±3.0%"
        );
        assert_eq!(
            fastest_line(&results, Section::TwoWrites, "two"),
            "fastest durable, two 8 KiB writes per commit: fdatasync 2600/s ±10%"
        );
        assert!(fastest_line(&results[..1], Section::TwoWrites, "two").ends_with("not measured (section b)"));
    }

    #[test]
    fn a_not_durable_target_names_no_fastest_durable_method() {
        let results =
            vec![case("one_write", "fdatasync", 281_156.0, 0.05), case("two_writes", "fsync", 200_000.0, 0.05)];
        let ctx = |verdicts| RunContext { verdicts, next: "next".into(), partial: false, leftover: None };
        let tmpfs = crate::core::environment::Environment {
            dir: "/dev/shm".into(),
            fs_type: "tmpfs".into(),
            ..Default::default()
        };
        let verdicts = crate::observe::probe::verdicts(&tmpfs, &results);
        let text = run_summary(&results, &ctx(&verdicts));
        assert!(!text.contains("281156") && !text.contains("fastest durable,"), "{text}");
        assert!(text.contains("fastest durable: none — no write here is durable (not_durable_memory_fs)"), "{text}");
        // On ext4 the same results name their fastest.
        let ext4 = crate::core::environment::Environment { fs_type: "ext4".into(), ..tmpfs };
        let verdicts = crate::observe::probe::verdicts(&ext4, &results);
        assert!(
            run_summary(&results, &ctx(&verdicts)).contains("fastest durable, one 8 KiB write per commit: fdatasync")
        );
    }

    #[test]
    fn commit_and_pages_answers_say_their_point_and_their_noise() {
        use crate::measure::commit::{CommitPoint, CommitResults};
        let point = |clients, rate, group| CommitPoint {
            clients,
            commits_per_s: rate,
            group_commit: group,
            commits_per_sync: 2.0,
            ..Default::default()
        };
        let results = CommitResults {
            method: Some(syncbench_engine::wal::SyncMethod::Fdatasync),
            durable: true,
            record_size_bytes: 256,
            leader_extra_batches: 0,
            record_log_bytes: 296,
            points: vec![point(1, 156.0, true), point(64, 30010.0, true)],
        };
        let text = commit_answer(&results, &[]);
        assert!(text.contains("one client: 156 commits/s with fdatasync"), "{text}");
        assert!(text.contains("best point: 30010 commits/s at 64 clients, delay 0 µs, group commit"), "{text}");
        let mut two = results.clone();
        two.points.iter_mut().for_each(|p| p.rounds_commits_per_s = vec![p.commits_per_s; 2]);
        let text = commit_answer(&two, &[]);
        assert!(
            text.contains("noise: 2 round(s) per point (--secs under 0.9 s), too few for an interval (3 at least)")
        );
        assert!(text.contains("one client: 156 commits/s with"), "no ± without an interval: {text}");
        // Three rounds recorded, but one point's interval could not be computed (rounds that acknowledged
        // nothing): the noise line says so instead of claiming ± for every point.
        let mut three = results.clone();
        three.points.iter_mut().for_each(|p| {
            p.rounds_commits_per_s = vec![p.commits_per_s; 3];
            p.commits = 100;
            p.ci95_rel = Some(0.1);
        });
        three.points[1].ci95_rel = None;
        let text = commit_answer(&three, &[]);
        assert!(text.contains("1 point(s) with fewer than 3 rounds that acknowledged commits: no interval"), "{text}");
        let row = |mode: &str, tps, checkpoints| crate::measure::pages::PagesRow {
            mode: Mode::from_name(mode).expect("a mode name"),
            supported: true,
            buffer_pool_bytes: 128 << 20,
            tps,
            checkpoints,
            ..Default::default()
        };
        let table = crate::measure::pages::PagesTable {
            rows: vec![row("none", 4000.0, 1), row("dw", 3400.0, 0)],
            ..Default::default()
        };
        let text = pages_answer(&table, &[]);
        assert!(
            text.contains("  dw (128 MiB): 3400 tps, 15% slower than none — NO CHECKPOINT: the log only\n"),
            "{text}"
        );
        // With rounds: a difference inside both intervals is said to be inside the noise.
        let mut table = table;
        for (r, (low, high)) in table.rows.iter_mut().zip([(3000.0, 5000.0), (2900.0, 3900.0)]) {
            (r.tps_low, r.tps_high, r.rounds_tps) = (Some(low), Some(high), vec![r.tps; 3]);
        }
        let text = pages_answer(&table, &[]);
        assert!(text.contains("15% slower than none, inside the noise (the 95% intervals overlap)"), "{text}");
        assert!(text.contains("from 3 rounds per mode"), "{text}");
        (table.rows[1].tps_high, table.rows[0].tps_low) = (Some(3450.0), Some(3500.0));
        assert!(pages_answer(&table, &[]).contains("15% slower than none, beyond the noise"));
    }

    #[test]
    fn next_command_uses_the_saved_json() {
        let dir = std::path::Path::new("/data");
        assert_eq!(next_command(Some(std::path::Path::new("r.json")), dir), "syncbench advise --from r.json");
        assert!(next_command(None, dir).starts_with("syncbench advise /data (or add --json run.json"));
    }

    #[test]
    fn the_worst_verdict_comes_first_in_one_sentence() {
        let v = |severity, code: &str| Verdict {
            severity,
            code: code.into(),
            message: "First. Second.".into(),
            advice: String::new(),
        };
        assert_eq!(
            verdict_line(&[v(Severity::Warning, "w"), v(Severity::Critical, "c")]),
            "verdict: CRITICAL c — First."
        );
        assert!(verdict_line(&[]).starts_with("verdict: none"));
    }

    #[test]
    fn disturbed_and_drifting_cases_are_counted_and_noted() {
        let mut a = case("one_write", "fsync", 3000.0, 0.2);
        a.disturbances =
            vec![Disturbance {
                kind: DisturbanceKind::DeviceIo, detail: "vda served …".into(), ..Default::default()
            }];
        let mut b = case("one_write", "fdatasync", 3000.0, 0.2);
        b.drift = Some("the rate changed".into());
        let results = vec![a, b, case("one_write", "open_sync", 1.0, 0.0)];
        assert_eq!(
            noise_line(&results),
            "noise: each case in 5 rounds, intervals say where a re-run lands (from the spread between rounds); \
             1 of 3 cases disturbed (device I/O not ours), 1 drifted (notes below the tables)"
        );
        // A case disturbed in most rounds is a lower bound, said as one, and counted.
        let mut bound = results[0].clone();
        bound.lower_bound = true;
        bound.ops_per_s_low = Some(2100.4);
        // The rate measured (the table's number, which it marks `≥`), not the re-run interval's low end.
        assert_eq!(bound.rate_text(), "≥ 3000/s (disturbed)");
        assert!(
            noise_line(&[bound])
                .contains("1 of 1 cases disturbed (device I/O not ours), 1 of them only lower bounds (≥)")
        );
        let notes = case_notes(&results);
        assert!(notes.contains("one_write fsync: device_io: vda served …\n"), "{notes}");
        assert!(notes.contains("one_write fdatasync: drift: the rate changed\n"), "{notes}");
        assert_eq!(case_notes(&results[2..]), "");
    }
}
