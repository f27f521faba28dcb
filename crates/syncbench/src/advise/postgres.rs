//! PostgreSQL: wal_sync_method, commit_delay, full_page_writes, wal_init_zero / wal_recycle.

use super::facts::{BLOCK_8K, Facts, Rate, compare_with_rest};
use super::{DatabaseAdvice, Setting, Version};
use crate::core::schema::CaseResult;

/// A method must beat the default (fdatasync) by this much, beyond noise, to be recommended instead.
const MARGIN: f64 = 0.05;

/// PostgreSQL's `commit_siblings` default.
const COMMIT_SIBLINGS: u32 = 5;

pub fn advise(f: &Facts<'_>, version: Version) -> DatabaseAdvice {
    let mut settings = Vec::new();
    let mut caveats = Vec::new();
    let sync = wal_sync_method(f, version, &mut caveats);
    if let Some((setting, chosen)) = &sync {
        settings.push(setting.clone());
        settings.extend(commit_delay(f, chosen));
    } else {
        caveats.push(
            "No fdatasync/fsync/open_datasync/open_sync cases with 8 KiB writes were measured: run \
             `syncbench run` (or `syncbench advise DIR` without --from) to decide wal_sync_method."
                .to_string(),
        );
    }
    if let Some((_, chosen)) = &sync {
        settings.extend(wal_under_writes(f, chosen, version, &mut caveats));
    }
    settings.push(full_page_writes(f, version));
    settings.extend(wal_init_and_recycle(f));
    DatabaseAdvice {
        database: String::new(),
        version: String::new(),
        storage_warning: None,
        settings,
        caveats,
        pass: None,
    }
}

fn wal_sync_method(f: &Facts<'_>, version: Version, caveats: &mut Vec<String>) -> Option<(Setting, Rate)> {
    // The run methods of the same names measure what the server does: since 16, open_datasync/open_sync
    // are buffered unless debug_io_direct=wal; before 16 they used O_DIRECT only with wal_level=minimal and
    // no WAL senders, which the default wal_level=replica rules out. So the buffered variants compete.
    let names = ["fdatasync", "fsync", "open_datasync", "open_sync"];
    let (scored, basis) = postgres_scores(f, &names);
    let chosen = f.choose(&scored, "fdatasync", MARGIN)?;
    let mut reason = format!(
        "Scored by commits/s of {basis} (geometric mean), as the server does them (open_* buffered, as \
         PostgreSQL {version} opens WAL by default)."
    );
    if basis == CONTIGUOUS_WRITES {
        reason.push_str(
            " A commit spanning two WAL blocks is one 16 KiB write: PostgreSQL writes contiguous blocks in one call.",
        );
    } else {
        caveats.push(
            "The run has no single 16 KiB write per commit for every method, so wal_sync_method was scored on \
             two separate 8 KiB writes, which costs open_datasync/open_sync a device round trip more than \
             PostgreSQL pays (it writes contiguous WAL blocks in one call). Measure with `syncbench advise DIR` \
             or a current `syncbench run` for the server's pattern."
                .to_string(),
        );
    }
    reason.push_str(&compare_with_rest(&chosen, &scored, "fdatasync", MARGIN));
    if version.major < 16 {
        caveats.push(format!(
            "PostgreSQL {version} opens WAL with O_DIRECT for open_datasync/open_sync when wal_level=minimal and \
             max_wal_senders=0; this advice assumes the default wal_level=replica (buffered)."
        ));
    }
    if f.env.mount_options.iter().any(|o| o == "data=journal") {
        caveats.push("ext4 data=journal does not support O_DIRECT: never enable debug_io_direct=wal here.".to_string());
    }
    let evidence = scored.iter().flat_map(|r| r.evidence.clone()).collect();
    let setting = Setting { name: "wal_sync_method".into(), value: chosen.method.clone(), reason, evidence };
    Some((setting, chosen))
}

const CONTIGUOUS_WRITES: &str = "one 8 KiB and one 16 KiB write per commit";
const SEPARATE_WRITES: &str = "one and two 8 KiB writes per commit";

/// Every candidate on the same basis: one 8 KiB and one 16 KiB write when the run has both for every
/// method it measured with 8 KiB writes, else (older or partial runs) one and two separate 8 KiB writes.
fn postgres_scores(f: &Facts<'_>, names: &[&str]) -> (Vec<Rate>, &'static str) {
    let separate: Vec<Rate> = names.iter().filter_map(|m| f.wal_score(m)).collect();
    let contiguous: Vec<Rate> = names.iter().filter_map(|m| f.contiguous_wal_score(m)).collect();
    let covers_all = separate.iter().all(|s| contiguous.iter().any(|c| c.method == s.method));
    if !contiguous.is_empty() && covers_all { (contiguous, CONTIGUOUS_WRITES) } else { (separate, SEPARATE_WRITES) }
}

/// Half the flush of the device's fast phase, not the mean: on a device with slow phases the mean is decided
/// by the phases (six runs on one disk gave 108-1987 µs from a mean), and so is the median when a slow phase
/// covers most of the commits (5 advise runs here: 59-77 µs from four, 1410 µs from the fifth). The 10th
/// percentile is the fast phase's flush whenever the device had one that held for a while (fast commits
/// outnumber slow ones per second), and a delay fitted to it is harmlessly short in the slow phases.
///
/// Whether the run pinned the fast flush: its 10th percentile within [`PINNED_FACTOR`] of the fastest
/// flush seen. Recorded on this project's VM: in the 10 of 15 advise runs whose p10 was within 1.4× of the
/// minimum, p10 was 84-141 µs; in the other five it was 0.34-2.1 ms, 3.6-14× the fastest flush — the run
/// saw the fast phase for a few commits at most, and no statistic of it gives the fast flush. Then the
/// advice says so and keeps PostgreSQL's default 0 (no delay), the pick that never adds latency: a delay
/// fitted to a slow phase would wait 20× the flush when the device is fast. Files without p10 (before
/// rounds) use the median.
fn commit_delay(f: &Facts<'_>, chosen: &Rate) -> Option<Setting> {
    let one = f.case("one_write", &chosen.method, BLOCK_8K, 1)?;
    let p50 = one.latency_ns.p50 as f64;
    let (basis_ns, basis) = match one.latency_ns_p10 {
        Some(p10) if p10 > 0 => (p10 as f64, "10th percentile"),
        _ => (p50, "median"),
    };
    let fastest_ns = one.latency_ns.min as f64;
    let verify = "Verify with `syncbench commit --clients 1,16,64 --commit-delay-us 0,";
    if one.latency_ns_p10.is_some() && fastest_ns > 0.0 && basis_ns > fastest_ns * PINNED_FACTOR {
        let guess_us = (fastest_ns / 2.0 / 1e3).round().max(1.0) as u64;
        return Some(Setting {
            name: "commit_delay".into(),
            value: "0".into(),
            reason: format!(
                "The fast flush time is not pinned by this measurement: the 10th percentile of one 8 KiB {} flush \
                 ({}) is {:.1}× the fastest flush seen ({}) — the device was slow for almost all of it (median \
                 {}). Half the flush (the PostgreSQL docs' starting point) cannot be computed from that, so \
                 commit_delay stays at the default 0, which never adds latency; run advise again when the \
                 device is fast, or {verify}{guess_us}`.",
                chosen.method,
                crate::core::units::format_ms_or_us(basis_ns),
                basis_ns / fastest_ns,
                crate::core::units::format_ms_or_us(fastest_ns),
                crate::core::units::format_ms_or_us(p50)
            ),
            evidence: vec![super::facts::evidence(one)],
        });
    }
    let half_us = (basis_ns / 2.0 / 1e3).round().max(1.0) as u64;
    let mut why = String::new();
    if one.latency_ns.mean > basis_ns * 1.2 {
        why = format!(
            " Not the mean ({}) or the median ({}): slow phases of the device pull them up, and commit_delay \
             should fit the flush when the device is fast (in a slow phase a short delay costs nothing).",
            crate::core::units::format_ms_or_us(one.latency_ns.mean),
            crate::core::units::format_ms_or_us(p50)
        );
    }
    Some(Setting {
        name: "commit_delay".into(),
        value: format!("{half_us}"),
        reason: format!(
            "Half of one 8 KiB {} flush ({} {basis}, p99 {}), the PostgreSQL docs' starting point.{why} It \
             only acts when at least commit_siblings={COMMIT_SIBLINGS} other transactions are active, so it costs \
             nothing at low concurrency; with many concurrent committers it lets one flush cover more commits. \
             {verify}{half_us}`.",
            chosen.method,
            crate::core::units::format_ms_or_us(basis_ns),
            crate::core::units::format_ms_or_us(one.latency_ns.p99 as f64)
        ),
        evidence: vec![super::facts::evidence(one)],
    })
}

/// A commit's p99 under background writes at least this many times idle's (and [`STALL_MIN_NS`] longer)
/// is a stall: the write-back of data on the same file system reaches the WAL's flushes.
const STALL_FACTOR: f64 = 3.0;

/// Below this much added p99 a ratio is not worth moving the WAL for (an idle p99 of 50 µs tripled).
const STALL_MIN_NS: u64 = 1_000_000;

/// What write-back does to a commit of the chosen method: its one 8 KiB write per commit measured idle and
/// under background writes (a second file dirtied at a fixed rate and written back by the kernel, as a
/// checkpoint's writes are). A stall moves pg_wal to its own device and spreads checkpoints; no stall says
/// the shared file system is fine at that rate. Without the measurement, the idle-disk note.
fn wal_under_writes(f: &Facts<'_>, chosen: &Rate, version: Version, caveats: &mut Vec<String>) -> Vec<Setting> {
    let Some((loaded, writer)) = f.loaded() else {
        caveats.push(super::idle_disk_note(f.results));
        return Vec::new();
    };
    let method = chosen.method.as_str();
    let (Some(idle), Some(under)) =
        (f.case("one_write", method, BLOCK_8K, 1), loaded.case("one_write", method, BLOCK_8K, 1))
    else {
        caveats.push(format!(
            "One 8 KiB {method} write per commit was not measured both idle and under background writes, so \
             what checkpoints' write-back does to commits here is not known."
        ));
        return Vec::new();
    };
    let (i, u) = (&idle.latency_ns, &under.latency_ns);
    let ratio = u.p99 as f64 / i.p99.max(1) as f64;
    let numbers = format!(
        "Under background writes at {} (achieved {}: a second file dirtied and left to the kernel's write-back, \
         as a checkpoint's writes are), one 8 KiB {method} commit took p50 {} and p99 {}, against p50 {} and \
         p99 {} on the idle disk ({ratio:.1}× at p99).",
        writer.rate,
        super::mib_per_s(writer.bytes_per_s),
        crate::core::units::format_ms_or_us(u.p50 as f64),
        crate::core::units::format_ms_or_us(u.p99 as f64),
        crate::core::units::format_ms_or_us(i.p50 as f64),
        crate::core::units::format_ms_or_us(i.p99 as f64),
    );
    let mut under_evidence = super::facts::evidence(under);
    under_evidence.case = format!("{} (under background writes at {})", under_evidence.case, writer.rate);
    let evidence = vec![super::facts::evidence(idle), under_evidence];
    if ratio < STALL_FACTOR || u.p99 < i.p99 + STALL_MIN_NS {
        return vec![Setting {
            name: "pg_wal".into(),
            value: "same file system is fine".into(),
            reason: format!(
                "{numbers} Write-back at this rate barely reaches the WAL's flushes here (a stall is p99 {STALL_FACTOR:.0}× \
                 idle's and at least {} longer), so the WAL need not move for checkpoints this fast.",
                crate::core::units::format_ms_or_us(STALL_MIN_NS as f64)
            ),
            evidence,
        }];
    }
    caveats.push(
        "Not measured here: a lower vm.dirty_background_bytes makes the kernel start write-back earlier and in \
         smaller pieces, which may shorten these stalls where pg_wal cannot move; measure again with the same \
         --background-writes after changing it."
            .to_string(),
    );
    let default = if version.major >= 14 {
        " (the default since PostgreSQL 14)"
    } else {
        " (the default is 0.5 before PostgreSQL 14)"
    };
    vec![
        Setting {
            name: "pg_wal".into(),
            value: "its own device".into(),
            reason: format!(
                "{numbers} The WAL's flushes wait behind the write-back of data on the same file system, so \
                 checkpoints will stretch commits like this. Put pg_wal on a device nothing else writes to \
                 (initdb --waldir, or move it and leave a symlink)."
            ),
            evidence: evidence.clone(),
        },
        Setting {
            name: "checkpoint_completion_target".into(),
            value: "0.9".into(),
            reason: format!(
                "0.9{default} spreads a checkpoint's writes over 90% of the checkpoint interval, so it dirties data \
                 at the lowest rate: the stall above was measured with data dirtied at {}, and a checkpoint that \
                 writes faster leaves more for the kernel to write back ahead of the WAL's flush.",
                super::mib_per_s(writer.bytes_per_s)
            ),
            evidence,
        },
    ]
}

/// The 10th percentile of the flush within this factor of the fastest flush: the run pinned the fast phase.
const PINNED_FACTOR: f64 = 2.0;

fn full_page_writes(f: &Facts<'_>, version: Version) -> Setting {
    let untorn = super::untorn::sentence(f.env, BLOCK_8K);
    let reason = if f.copy_on_write() {
        format!(
            "PostgreSQL has no atomic-write support. On a copy-on-write file system ({}) pages are never \
             overwritten in place, so torn pages cannot occur and off may be safe (the PostgreSQL docs name \
             ZFS); keep on unless you have verified that. {untorn}.",
            f.env.fs_type
        )
    } else {
        format!(
            "PostgreSQL has no atomic-write support, so a power cut can tear an 8 KiB page and only the full-page \
             image in WAL repairs it. {untorn}{}. {}",
            if super::untorn::file_promises(f.env, BLOCK_8K) {
                " — a future PostgreSQL could use this; today it cannot"
            } else {
                ""
            },
            super::safety::torn_page_tests(super::Database::Postgres, version, "full_page_writes")
        )
    };
    Setting { name: "full_page_writes".into(), value: "on".into(), reason, evidence: Vec::new() }
}

fn wal_init_and_recycle(f: &Facts<'_>) -> Vec<Setting> {
    let setting = |name: &str, value: &str, reason: String| Setting {
        name: name.into(),
        value: value.into(),
        reason,
        evidence: Vec::new(),
    };
    if f.copy_on_write() {
        let fs = &f.env.fs_type;
        return vec![
            setting(
                "wal_init_zero",
                "off",
                format!(
                    "{fs} is copy-on-write: every WAL write goes to newly allocated blocks whatever the segment \
                     held, so zeroes written in advance are never overwritten in place and only add 16 MiB of \
                     writes per new segment."
                ),
            ),
            setting(
                "wal_recycle",
                "off",
                format!(
                    "{fs} is copy-on-write: a recycled segment's old blocks are not reused by the writes that \
                     follow, so keeping old segments to rename saves nothing over creating new files."
                ),
            ),
        ];
    }
    let over_append = f.file_state_case("fdatasync", "overwrite").zip(f.file_state_case("fdatasync", "append"));
    vec![
        setting("wal_init_zero", "on", wal_init_zero_reason(over_append)),
        setting(
            "wal_recycle",
            "on",
            "Recycling renames a used segment instead of creating a new one, so each new segment costs no file \
             creation, no directory sync and no 16 MiB zero-fill (with wal_init_zero=on) in the middle of \
             committing."
                .into(),
        ),
    ]
}

/// Overwriting must beat appending by this much, beyond both intervals, to be called a gain.
const OVERWRITE_GAIN_MIN: f64 = 0.05;

/// wal_init_zero stays on (the default); its reason follows what fdatasync of an overwrite and of an
/// append measured here: a gain for zero-filled segments, none within the intervals, or the other way.
fn wal_init_zero_reason(over_append: Option<(&CaseResult, &CaseResult)>) -> String {
    let what = "Zero-filling a new segment allocates its blocks before WAL is written to it, so a commit's \
                fdatasync overwrites allocated blocks instead of also committing their allocation";
    let reserve = "on also reserves the segment's space when it is created, so a full disk fails there rather \
                   than in the middle of a commit";
    let Some((o, a)) = over_append else {
        return format!("{what}. Not measured here (no overwrite and append cases, section g); {reserve}.");
    };
    let numbers = format!("fdatasync of an overwrite did {}, of an append {}", o.rate_text(), a.rate_text());
    // The one rule for a winner (intervals apart, stats::decide), and a gain worth a sentence.
    let beyond = |x: &CaseResult, y: &CaseResult| match crate::core::stats::decide(&x.estimate(), &y.estimate()) {
        crate::core::stats::Decision::AFaster(ratio) => ratio > 1.0 + OVERWRITE_GAIN_MIN,
        _ => false,
    };
    if beyond(o, a) {
        let gain = (o.ops_per_s / a.ops_per_s - 1.0) * 100.0;
        format!("{what}: measured here, {numbers} ({gain:.0}% faster). The cost is one 16 MiB write per new segment.")
    } else if beyond(a, o) {
        format!(
            "On for what it reserves, not for speed: measured here, {numbers}, so zero-filled segments bring no \
             flush-speed gain on this disk (an append is not expected to win on a file system that overwrites in \
             place: the disk's phases may have decided it, and a re-run will tell). {}.",
            upper_first(reserve)
        )
    } else {
        format!(
            "{what}; measured here, {numbers}: no difference this run can vouch for, either way. The default \
             stays: {reserve}."
        )
    }
}

fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::Input;
    use crate::core::schema::{CaseResult, LatencyNs};

    fn fdatasync(p10: Option<u64>) -> CaseResult {
        CaseResult {
            section: crate::core::suite::Section::OneWrite,
            method: crate::core::method::SyncMethod::Fdatasync,
            supported: true,
            write_size_bytes: BLOCK_8K,
            writes_per_commit: 1,
            ops: 1000,
            ops_per_s: 330.0,
            latency_ns: LatencyNs { p50: 2_820_000, mean: 3_000_000.0, p99: 9_000_000, ..LatencyNs::default() },
            latency_ns_p10: p10,
            ..CaseResult::default()
        }
    }

    fn delay(results: &[CaseResult]) -> Setting {
        let env = crate::core::environment::Environment::default();
        let facts =
            Facts::new(&Input { environment: &env, verdicts: &[], results, under_writes: None, partial: false });
        let chosen = Rate {
            method: "fdatasync".into(),
            ops_per_s: 330.0,
            ci95_rel: 0.5,
            evidence: Vec::new(),
            lower_bound: false,
            regimes: Default::default(),
        };
        commit_delay(&facts, &chosen).unwrap()
    }

    fn file_state(state: &str, ops_per_s: f64, ci95_rel: f64) -> CaseResult {
        CaseResult { file_state: state.parse().unwrap(), ops_per_s, ci95_rel, ..fdatasync(None) }
    }

    #[test]
    fn wal_init_zero_says_what_its_numbers_say_in_both_directions() {
        // Overwrite clearly faster: the gain is the reason.
        let (o, a) = (file_state("overwrite", 1583.0, 0.05), file_state("append", 764.0, 0.05));
        let gain = wal_init_zero_reason(Some((&o, &a)));
        assert!(gain.contains("overwrites allocated blocks") && gain.contains("(107% faster)"), "{gain}");
        // Recorded on this VM: the append faster (764/s overwrite, 1583/s append). The number must not be
        // offered as evidence of a gain: on stays for the space it reserves, and the sentence says so.
        let (o, a) = (file_state("overwrite", 764.0, 0.05), file_state("append", 1583.0, 0.05));
        let other_way = wal_init_zero_reason(Some((&o, &a)));
        assert!(other_way.starts_with("On for what it reserves, not for speed"), "{other_way}");
        assert!(other_way.contains("overwrite did 764/s") && other_way.contains("of an append 1583/s"), "{other_way}");
        assert!(!other_way.contains("faster)"), "{other_way}");
        // Within the intervals: neither.
        let (o, a) = (file_state("overwrite", 1200.0, 0.5), file_state("append", 900.0, 0.5));
        let unclear = wal_init_zero_reason(Some((&o, &a)));
        assert!(unclear.contains("no difference this run can vouch for, either way"), "{unclear}");
        assert!(wal_init_zero_reason(None).contains("Not measured here"));
    }

    #[test]
    fn commit_delay_fits_the_fast_phase_not_a_slow_majority() {
        // A slow phase covered most commits (median 2.82 ms) but the device was fast for a while (p10 124 µs).
        let s = delay(&[fdatasync(Some(124_000))]);
        assert_eq!(s.value, "62");
        assert!(s.reason.contains("(124 µs 10th percentile, p99 9.00 ms)"), "{}", s.reason);
        assert!(s.reason.contains("Not the mean (3.00 ms) or the median (2.82 ms)"), "{}", s.reason);
        // Files from before rounds have no p10: the median.
        assert_eq!(delay(&[fdatasync(None)]).value, "1410");
    }

    #[test]
    fn a_fast_flush_the_run_did_not_pin_keeps_the_default() {
        // Recorded (advise 3 of the 2026-11-23 final set): fastest flush 146 µs, p10 2.00 ms, median 4.00 ms.
        let mut slow = fdatasync(Some(1_996_799));
        slow.latency_ns.min = 145_526;
        slow.latency_ns.p50 = 4_001_791;
        let s = delay(&[slow]);
        assert_eq!(s.value, "0");
        assert!(s.reason.starts_with("The fast flush time is not pinned by this measurement"), "{}", s.reason);
        assert!(s.reason.contains("13.7× the fastest flush seen (146 µs)"), "{}", s.reason);
        // Pinned (advise 2 of the p10 set: fastest 77 µs, p10 84 µs): half the p10.
        let mut fast = fdatasync(Some(84_031));
        fast.latency_ns.min = 77_175;
        assert_eq!(delay(&[fast]).value, "42");
    }
}
