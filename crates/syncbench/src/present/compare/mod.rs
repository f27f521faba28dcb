//! `syncbench compare`: runs side by side. Cases are joined by what was measured (`join`), each candidate's
//! commits/s is divided by the baseline's with its uncertainty (`ratio`), environments are diffed
//! (`environment`), and the result is written as a table, Markdown or JSON (`render`).

pub mod changed;
pub mod environment;
pub mod export;
pub mod join;
pub mod ratio;
pub mod render;

use crate::present::report::chart::scale::format_bytes;
use crate::present::report::input::RunFile;
use environment::Difference;
use join::{CaseKey, JoinedCase};
use ratio::{Direction, Ratio};
use serde::Serialize;

/// Everything `compare` reports. The first file is the baseline; every other file is a candidate.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Always `syncbench/v1`.
    pub schema: &'static str,
    /// Always `compare`.
    pub command: &'static str,
    /// The files, baseline first.
    pub files: Vec<String>,
    /// Cases the baseline shares with at least one candidate.
    pub cases: Vec<ComparedCase>,
    /// Cases missing from at least one file.
    pub only_in_some: Vec<OnlyIn>,
    /// Environment properties that differ.
    pub environment_differences: Vec<Difference>,
    /// Why the environment changed between the runs beyond what differs on purpose (disturbances, reference
    /// cases), one sentence each; empty when there is no sign of it.
    pub environment_changed: Vec<String>,
    /// One summary per candidate.
    pub summaries: Vec<Summary>,
}

/// A joined case with each candidate's ratio to the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct ComparedCase {
    /// The case and its values in every file.
    #[serde(flatten)]
    pub case: JoinedCase,
    /// `ratios[i]`: file `i + 1` against the baseline (`None` when either side has no value).
    pub ratios: Vec<Option<DescribedRatio>>,
}

/// A ratio with its sentence.
#[derive(Clone, Debug, Serialize)]
pub struct DescribedRatio {
    /// The numbers.
    #[serde(flatten)]
    pub ratio: Ratio,
    /// `1.42 ± 0.05× faster`, `1.30 ± 0.04× slower` or `within noise (…)`.
    pub text: String,
}

/// A case that not every file has.
#[derive(Clone, Debug, Serialize)]
pub struct OnlyIn {
    /// What was measured.
    pub key: CaseKey,
    /// Human name of the case.
    pub name: String,
    /// The files that have it.
    pub present_in: Vec<String>,
}

/// How one candidate fares against the baseline overall.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The candidate file.
    pub candidate: String,
    /// Cases faster beyond noise.
    pub faster: usize,
    /// Cases slower beyond noise.
    pub slower: usize,
    /// Cases whose ratio's 95% interval includes 1.
    pub within_noise: usize,
    /// Cases not compared because one side measured a disturbed disk (a lower bound).
    pub disturbed: usize,
    /// Cases not decided because a side switched between latency regimes (see `regime_ratio`).
    #[serde(skip_serializing_if = "is_zero")]
    pub undecided_regimes: usize,
    /// Shared cases without a value on one side (unsupported, failed).
    pub not_comparable: usize,
    /// Geometric mean of the ratios of durable cases (a typical speed factor), when there are any.
    pub durable_geometric_mean_ratio: Option<f64>,
    /// The overall direction: the 95% interval of the geometric mean against 1.
    pub direction: Option<Direction>,
    /// Relative half-width of the geometric mean's 95% interval (from the cases' intervals).
    pub durable_geometric_mean_ci95_rel: Option<f64>,
    /// The summary in one sentence with its direction: "B is 1.52× faster than A over 14 durable cases …".
    pub headline: String,
    /// The durable case that gained most, beyond noise.
    pub largest_gain: Option<Extreme>,
    /// The durable case that lost most, beyond noise.
    pub largest_loss: Option<Extreme>,
}

/// A notable case in a summary.
#[derive(Clone, Debug, Serialize)]
pub struct Extreme {
    /// Human name of the case.
    pub case: String,
    /// Its ratio in words.
    pub text: String,
}

/// Compare `runs[1..]` against `runs[0]`.
pub fn compare(runs: &[RunFile]) -> Comparison {
    let files: Vec<String> = runs.iter().map(|r| r.name.clone()).collect();
    let joined = join::join(runs);
    let only_in_some = joined
        .iter()
        .filter(|c| c.cells.iter().any(|cell| !cell.present))
        .map(|c| OnlyIn {
            key: c.key.clone(),
            name: case_name(&c.key, c.durable),
            present_in: c.cells.iter().zip(&files).filter(|(cell, _)| cell.present).map(|(_, f)| f.clone()).collect(),
        })
        .collect();
    let cases: Vec<ComparedCase> = joined
        .into_iter()
        .filter(|c| c.cells[0].present && c.cells[1..].iter().any(|cell| cell.present))
        .map(|case| {
            let ratios = (1..case.cells.len()).map(|i| ratio_between(&case, 0, i)).collect();
            ComparedCase { case, ratios }
        })
        .collect();
    let summaries = (1..runs.len()).map(|i| summarize(&files[i], &cases, i - 1)).collect();
    let environment_changed = changed::changes(runs, &cases);
    Comparison {
        schema: crate::core::schema::SCHEMA,
        command: "compare",
        files,
        cases,
        only_in_some,
        environment_differences: environment::differences(runs),
        environment_changed,
        summaries,
    }
}

fn ratio_between(case: &JoinedCase, baseline: usize, candidate: usize) -> Option<DescribedRatio> {
    let (a, b) = (&case.cells[baseline], &case.cells[candidate]);
    let ratio = Ratio::of(a.ops_per_s?, a.ci95_rel.unwrap_or(0.0), b.ops_per_s?, b.ci95_rel.unwrap_or(0.0))?;
    // A disturbed side's number is a lower bound, not an estimate: neither a change nor "within noise" —
    // unless the bound alone decides it: a bound candidate above the baseline's whole interval is faster
    // (its true rate is higher still), a clean candidate whose whole interval lies below a bound baseline
    // is slower.
    let upper = |c: &join::Cell| c.ops_per_s.unwrap_or(0.0) * (1.0 + c.ci95_rel.unwrap_or(0.0));
    let ratio = match (a.lower_bound, b.lower_bound) {
        (false, false) => ratio,
        (false, true) if b.ops_per_s? > upper(a) => Ratio { direction: Direction::Faster, ..ratio },
        (true, false) if upper(b) < a.ops_per_s? => Ratio { direction: Direction::Slower, ..ratio },
        _ => ratio.disturbed(),
    };
    if ratio.direction != Direction::Disturbed
        && let Some(by_regime) = regime_ratio(a, b, ratio)
    {
        return Some(by_regime);
    }
    Some(DescribedRatio { text: ratio.describe(), ratio })
}

/// Like with like when a side switched between latency regimes: the fast regime against the fast one and
/// the slow against the slow (commits/s go as 1 / the regime's median latency), a direction only when
/// both regimes say it by [`crate::measure::regimes::LEAD_FACTOR`] (no interval per regime exists);
/// otherwise, or when one side has no regimes to match, undecided. `None` when neither side has regimes.
fn regime_ratio(a: &join::Cell, b: &join::Cell, pooled: Ratio) -> Option<DescribedRatio> {
    use crate::core::units::format_latency as latency;
    use crate::measure::regimes::LEAD_FACTOR;
    let (ga, gb) = match (&a.regimes, &b.regimes) {
        (None, None) => return None,
        (Some(ga), Some(gb)) if ga.regimes.len() == 2 && gb.regimes.len() == 2 => (ga, gb),
        (which, _) => {
            let (has, lacks) = if which.is_some() { ("A", "the other") } else { ("the candidate", "A") };
            let text = format!(
                "cannot decide: {has} switched between latency regimes and {lacks} did not; pooled rates \
                 mix regimes ({:.2}× pooled)",
                pooled.ratio
            );
            return Some(DescribedRatio { text, ratio: Ratio { direction: Direction::Undecided, ..pooled } });
        }
    };
    let per = |i: usize| {
        let (la, lb) = (ga.regimes[i].latency_ns_p50, gb.regimes[i].latency_ns_p50);
        let r = la.max(1) as f64 / lb.max(1) as f64;
        let d = if r >= LEAD_FACTOR {
            Direction::Faster
        } else if r <= 1.0 / LEAD_FACTOR {
            Direction::Slower
        } else {
            Direction::WithinNoise
        };
        (d, format!("{} → {} ({r:.2}×)", latency(la), latency(lb)))
    };
    let ((fast, fast_text), (slow, slow_text)) = (per(0), per(1));
    let direction = if fast == slow { fast } else { Direction::Undecided };
    let verdict = match direction {
        Direction::Faster => "faster in both latency regimes",
        Direction::Slower => "slower in both latency regimes",
        Direction::WithinNoise => "within 1.2× in both latency regimes",
        _ => "cannot decide: the latency regimes disagree",
    };
    let text = format!("{verdict}: fast {fast_text}, slow {slow_text} (median commit latency, like with like)");
    Some(DescribedRatio { text, ratio: Ratio { direction, ..pooled } })
}

fn summarize(candidate: &str, cases: &[ComparedCase], index: usize) -> Summary {
    let shared: Vec<&ComparedCase> = cases.iter().filter(|c| c.case.cells[index + 1].present).collect();
    let count = |d: Direction| {
        shared.iter().filter(|c| c.ratios[index].as_ref().is_some_and(|r| r.ratio.direction == d)).count()
    };
    // The typical factor is over cases with an estimate on both sides: a lower bound would pull it anywhere.
    let durable: Vec<(&ComparedCase, &DescribedRatio)> = shared
        .iter()
        .filter(|c| c.case.durable)
        .filter_map(|c| Some((*c, c.ratios[index].as_ref()?)))
        .filter(|(_, r)| !matches!(r.ratio.direction, Direction::Disturbed | Direction::Undecided))
        // A pooled rate of a case with regimes mixes them: compared regime to regime, not averaged here.
        .filter(|(c, _)| c.case.cells[0].regimes.is_none() && c.case.cells[index + 1].regimes.is_none())
        .collect();
    let geometric_mean = (!durable.is_empty())
        .then(|| (durable.iter().map(|(_, r)| r.ratio.ratio.ln()).sum::<f64>() / durable.len() as f64).exp());
    // The mean of n log-ratios, each known to ±rel_i (95%): ±√Σrel_i² / n if the cases' noises were
    // independent — they are not when the device changed speed under all of them, so the interval is at
    // least Student's t over the spread of the log-ratios themselves.
    let gm_ci95_rel = (!durable.is_empty()).then(|| {
        let n = durable.len() as f64;
        let propagated = durable.iter().map(|(_, r)| (r.ratio.ci95 / r.ratio.ratio).powi(2)).sum::<f64>().sqrt() / n;
        let logs: Vec<f64> = durable.iter().map(|(_, r)| r.ratio.ratio.ln()).collect();
        let mean = logs.iter().sum::<f64>() / n;
        let spread = if logs.len() < 2 {
            0.0
        } else {
            let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            (crate::core::stats::t95(logs.len() as u64 - 1) * sd / n.sqrt()).exp_m1()
        };
        propagated.max(spread)
    });
    let extreme = |direction: Direction, pick_max: bool| {
        durable
            .iter()
            .filter(|(_, r)| r.ratio.direction == direction)
            .max_by(|a, b| {
                let order = a.1.ratio.ratio.total_cmp(&b.1.ratio.ratio);
                if pick_max { order } else { order.reverse() }
            })
            .map(|(c, r)| Extreme { case: case_name(&c.case.key, c.case.durable), text: r.text.clone() })
    };
    let direction =
        geometric_mean.zip(gm_ci95_rel).and_then(|(gm, rel)| Ratio::of(1.0, 0.0, gm, rel)).map(|r| r.direction);
    let headline = headline(index + 1, durable.len(), geometric_mean, gm_ci95_rel, direction) + &regimes_note(&shared);
    Summary {
        direction,
        durable_geometric_mean_ci95_rel: gm_ci95_rel,
        headline,
        candidate: candidate.to_string(),
        faster: count(Direction::Faster),
        slower: count(Direction::Slower),
        within_noise: count(Direction::WithinNoise),
        disturbed: count(Direction::Disturbed),
        undecided_regimes: count(Direction::Undecided),
        not_comparable: shared.iter().filter(|c| c.ratios[index].is_none()).count(),
        durable_geometric_mean_ratio: geometric_mean,
        largest_gain: extreme(Direction::Faster, true),
        largest_loss: extreme(Direction::Slower, false),
    }
}

/// "B is 1.52× faster than A over 14 durable cases (geometric mean of commits/s, 95% interval 1.40–1.65×)".
fn headline(index: usize, n: usize, gm: Option<f64>, rel: Option<f64>, direction: Option<Direction>) -> String {
    let b = char::from(b'A' + (index % 26) as u8);
    let (Some(gm), Some(rel), Some(direction)) = (gm, rel, direction) else {
        return format!("{b} and A share no durable case with a value on both sides");
    };
    // Multiplicative, as every ratio interval: `gm ×/÷ (1 + rel)` never reaches zero.
    let range = crate::core::stats::Estimate::from_rel(gm, rel);
    let digits = if gm * rel < 0.02 { 3 } else { 2 };
    let interval = if range.reads_as_plus_minus() {
        format!("95% interval {:.digits$}–{:.digits$}×", range.low, range.high)
    } else {
        format!("95% interval {}–{}×", crate::core::stats::sig2(range.low), crate::core::stats::sig2(range.high))
    };
    let cases = if n == 1 { "1 durable case".to_string() } else { format!("{n} durable cases") };
    match direction {
        Direction::Faster => {
            format!("{b} is {gm:.2}× faster than A over {cases} (geometric mean of commits/s, {interval})")
        }
        Direction::Slower => format!(
            "{b} is {:.2}× slower than A over {cases} (geometric mean of commits/s {gm:.2}×, {interval})",
            1.0 / gm
        ),
        Direction::WithinNoise | Direction::Disturbed | Direction::Undecided => {
            format!("{b} and A are within noise of each other over {cases} (geometric mean {gm:.2}×, {interval})")
        }
    }
}

/// The typical factor leaves out cases that switched regimes: say so, rather than let it speak for them.
fn regimes_note(shared: &[&ComparedCase]) -> String {
    let n = shared.iter().filter(|c| c.case.durable && c.case.cells.iter().any(|cell| cell.regimes.is_some())).count();
    if n == 0 {
        return String::new();
    }
    format!("; {n} durable case(s) with latency regimes compared regime to regime, not in it")
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Refuse, before comparing, a file that holds no run results (one line, see [`crate::core::input_kind`]).
pub fn check_inputs(runs: &[RunFile]) -> anyhow::Result<()> {
    use crate::core::input_kind::{RUN_FILES, describe, refusal};
    for run in runs {
        match kind(run) {
            Some("run") => {}
            Some(other) => {
                let hint = format!("chart {other} files with syncbench report");
                return Err(refusal(&run.name, &describe(Some(other), ""), "compare", RUN_FILES, &hint));
            }
            None => return Err(refusal(&run.name, &describe(None, &run.command), "compare", RUN_FILES, "")),
        }
    }
    Ok(())
}

/// `run` when the file has run cases (advise's measured cases are run cases too; a file may carry a commit
/// payload besides), else `commit` or `pages`; `None` when nothing is there.
pub fn kind(run: &RunFile) -> Option<&'static str> {
    if !run.results.is_empty() {
        Some("run")
    } else if run.commit.as_ref().is_some_and(|c| !c.points.is_empty()) {
        Some("commit")
    } else if run.pages.as_ref().is_some_and(|p| !p.rows.is_empty()) {
        Some("pages")
    } else {
        None
    }
}

/// `one_write fdatasync, 1 × 8 KiB, overwrite` (+ `(not durable)`).
pub fn case_name(key: &CaseKey, durable: bool) -> String {
    let repeat = if key.repeat > 0 { format!(" #{}", key.repeat + 1) } else { String::new() };
    let not_durable = if durable { "" } else { " (not durable)" };
    format!(
        "{} {}{not_durable}, {}, {}{repeat}",
        key.section,
        key.method,
        writes(key.writes_per_commit, key.write_size_bytes),
        key.file_state
    )
}

/// `2 × 8 KiB`.
pub fn writes(writes_per_commit: u32, write_size_bytes: u64) -> String {
    format!("{writes_per_commit} × {}", format_bytes(write_size_bytes as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::CaseResult;

    fn case(method: &str, ops: f64, durable: bool) -> CaseResult {
        CaseResult {
            section: crate::core::suite::Section::OneWrite,
            method: method.parse().unwrap(),
            write_size_bytes: 8192,
            writes_per_commit: 1,
            file_state: crate::core::suite::FileState::Overwrite,
            supported: true,
            durable,
            ops_per_s: ops,
            ci95_rel: 0.01,
            ..CaseResult::default()
        }
    }

    fn run(name: &str, results: Vec<CaseResult>) -> RunFile {
        RunFile { name: name.into(), results, ..RunFile::default() }
    }

    fn regimes(fast_ns: u64, slow_ns: u64) -> crate::core::schema::regimes::Regimes {
        use crate::core::schema::regimes::{Regime, Regimes};
        let regime = |ns, share| Regime { latency_ns_p50: ns, time_share: share, windows: 10 };
        Regimes { regimes: vec![regime(fast_ns, 0.6), regime(slow_ns, 0.4)], separation: 5.0, threshold_ns: 1_000_000 }
    }

    /// Golden: where a side switched between latency regimes, compare matches regime to regime and names a
    /// direction only when both agree; a pooled rate that mixes regimes names none — even a pooled 4× that
    /// the intervals would call faster (the planted trap: B's pooled rate is high because B spent more of
    /// its time in the fast regime, not because it is faster in either).
    #[test]
    fn regimes_are_compared_like_with_like_or_undecided() {
        let with = |method: &str, ops: f64, g: Option<crate::core::schema::regimes::Regimes>| CaseResult {
            regimes: g,
            ..case(method, ops, true)
        };
        let a = run(
            "a",
            vec![
                with("fdatasync", 1000.0, Some(regimes(200_000, 4_000_000))),
                with("fsync", 1000.0, Some(regimes(200_000, 4_000_000))),
                with("open_sync", 1000.0, Some(regimes(200_000, 4_000_000))),
                with("pwritev2_dsync", 1000.0, None),
            ],
        );
        let b = run(
            "b",
            vec![
                with("fdatasync", 4000.0, Some(regimes(200_000, 4_000_000))),
                with("fsync", 1500.0, Some(regimes(150_000, 3_000_000))),
                with("open_sync", 1500.0, Some(regimes(150_000, 5_000_000))),
                with("pwritev2_dsync", 1500.0, Some(regimes(150_000, 3_000_000))),
            ],
        );
        let cmp = compare(&[a, b]);
        let direction = |i: usize| cmp.cases[i].ratios[0].as_ref().unwrap().ratio.direction;
        assert_eq!(direction(0), Direction::WithinNoise, "same regimes: the pooled 4× is not a difference");
        assert_eq!(direction(1), Direction::Faster);
        assert_eq!(direction(2), Direction::Undecided, "the regimes disagree");
        assert_eq!(direction(3), Direction::Undecided, "A's side has no regimes to match");
        assert_eq!(cmp.summaries[0].undecided_regimes, 2);
        assert_golden!("syncbench__compare__regimes_text", render::text(&cmp));
    }

    #[test]
    fn a_lower_bound_is_never_a_change_and_the_environment_changed() {
        let a = run("a", vec![case("fsync", 8000.0, true), case("fdatasync", 8000.0, true)]);
        // B's fdatasync measured a disturbed disk: 500/s, 16× below A, but only a bound.
        let mut bound = case("fdatasync", 500.0, true);
        bound.lower_bound = true;
        bound.disturbances = vec![crate::core::schema::Disturbance {
            kind: crate::core::schema::DisturbanceKind::DeviceIo,
            detail: "vda served …".into(),
            foreign_write_bytes: 300 << 20,
            foreign_flushes: 4000,
            rounds: vec![1, 2, 3],
            ..Default::default()
        }];
        let b = run("b", vec![case("fsync", 8000.0, true), bound]);
        let cmp = compare(&[a, b]);
        let s = &cmp.summaries[0];
        assert_eq!((s.faster, s.slower, s.within_noise, s.disturbed), (0, 0, 1, 1));
        assert!(s.largest_loss.is_none());
        assert!(s.headline.starts_with("B and A are within noise of each other over 1 durable case"), "{}", s.headline);
        let text = cmp.cases[1].ratios[0].as_ref().unwrap().text.clone();
        assert!(text.starts_with("not compared: a side was disturbed"), "{text}");
        let changed = cmp.environment_changed.join(" | ");
        assert!(changed.contains("A undisturbed; B disturbed in 1 case(s) (device_io: 300.0 MiB written"), "{changed}");
        assert!(changed.contains("lower bounds and not compared: B 1 case(s)"), "{changed}");
    }

    #[test]
    fn a_lower_bound_decides_when_it_is_beyond_the_other_sides_interval() {
        let bound = |method: &str, ops: f64| {
            let mut c = case(method, ops, true);
            c.lower_bound = true;
            c
        };
        // B's fsync is at least 20000/s, above all of A's 8000/s interval: faster, bound or not. B's
        // fdatasync is at least 8050/s: inside what A's interval and a bound allow, so not compared.
        let a =
            run("a", vec![case("fsync", 8000.0, true), case("fdatasync", 8000.0, true), bound("open_sync", 8000.0)]);
        let b = run("b", vec![bound("fsync", 20000.0), bound("fdatasync", 8050.0), case("open_sync", 500.0, true)]);
        let cmp = compare(&[a, b]);
        let direction = |i: usize| cmp.cases[i].ratios[0].as_ref().unwrap().ratio.direction;
        let by_method = |m: &str| cmp.cases.iter().position(|c| c.case.key.method.name() == m).unwrap();
        assert_eq!(direction(by_method("fsync")), Direction::Faster);
        assert_eq!(direction(by_method("fdatasync")), Direction::Disturbed);
        // A's open_sync is at least 8000/s; B's clean 500/s is below it: slower.
        assert_eq!(direction(by_method("open_sync")), Direction::Slower);
    }

    #[test]
    fn a_run_disturbed_in_most_cases_is_not_the_same_environment_as_one_with_a_stray_case() {
        let methods = ["fsync", "fdatasync", "open_sync", "open_datasync", "fsync+direct", "fdatasync+direct"];
        let with = |disturbed: usize| {
            let results = methods
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let mut c = case(m, 8000.0, true);
                    if i < disturbed {
                        c.disturbances = vec![crate::core::schema::Disturbance {
                            kind: crate::core::schema::DisturbanceKind::DeviceIo,
                            foreign_write_bytes: 1 << 20,
                            ..Default::default()
                        }];
                    }
                    c
                })
                .collect();
            run("r", results)
        };
        let changed = |a: usize, b: usize| !compare(&[with(a), with(b)]).environment_changed.is_empty();
        assert!(changed(1, 6), "a stray case against a writer beside every case");
        assert!(!changed(1, 2), "two quiet runs, each with the system's own stray writes");
        assert!(!changed(6, 6));
    }

    #[test]
    fn summary_counts_directions_and_names_extremes() {
        let a =
            run("a", vec![case("fsync", 1000.0, true), case("fdatasync", 1000.0, true), case("write", 1000.0, false)]);
        let b = run(
            "b",
            vec![
                case("fsync", 2000.0, true),
                case("fdatasync", 500.0, true),
                case("write", 1005.0, false),
                case("open_sync", 1.0, true),
            ],
        );
        let cmp = compare(&[a, b]);
        assert_eq!(cmp.cases.len(), 3);
        let s = &cmp.summaries[0];
        assert_eq!((s.faster, s.slower, s.within_noise, s.not_comparable), (1, 1, 1, 0));
        assert!((s.durable_geometric_mean_ratio.unwrap() - 1.0).abs() < 1e-12, "2× and 0.5× average to 1×");
        assert_eq!(s.direction, Some(Direction::WithinNoise));
        assert!(
            s.headline.starts_with("B and A are within noise of each other over 2 durable cases"),
            "{}",
            s.headline
        );
        assert_eq!(s.largest_gain.as_ref().unwrap().text, "faster: 2.00× ±1.4%");
        assert_eq!(s.largest_loss.as_ref().unwrap().text, "slower: 2.00× ±1.4%");
        assert_eq!(cmp.only_in_some.len(), 1);
        assert_eq!(cmp.only_in_some[0].present_in, vec!["b".to_string()]);
    }

    #[test]
    fn the_headline_says_the_direction_over_the_cases() {
        let a = run(
            "a",
            vec![case("fsync", 1000.0, true), case("fdatasync", 2000.0, true), case("open_sync", 800.0, true)],
        );
        let b = run(
            "b",
            vec![case("fsync", 1500.0, true), case("fdatasync", 3100.0, true), case("open_sync", 1150.0, true)],
        );
        let s = &compare(&[a.clone(), b.clone()]).summaries[0];
        assert_eq!(s.direction, Some(Direction::Faster));
        assert!(
            s.headline.starts_with("B is 1.50× faster than A over 3 durable cases (geometric mean"),
            "{}",
            s.headline
        );
        let back = &compare(&[b, a]).summaries[0];
        assert!(back.headline.starts_with("B is 1.50× slower than A over 3 durable cases"), "{}", back.headline);
    }

    #[test]
    fn files_of_different_kinds_or_with_nothing_to_compare_are_refused() {
        let runs = run("r.json", vec![case("fsync", 1.0, true)]);
        let commit = RunFile {
            name: "c.json".into(),
            commit: Some(crate::measure::commit::CommitResults {
                method: Some(syncbench_engine::wal::SyncMethod::Fdatasync),
                durable: true,
                record_size_bytes: 256,
                leader_extra_batches: 0,
                record_log_bytes: 296,
                points: vec![crate::measure::commit::CommitPoint::default()],
            }),
            ..RunFile::default()
        };
        let empty = RunFile { name: "p.json".into(), ..RunFile::default() };
        let message = |files: &[RunFile]| check_inputs(files).unwrap_err().to_string();
        let commit_refused = "c.json is a commit file; compare accepts run files (syncbench run --json or advise \
                              --json); chart commit files with syncbench report";
        assert_eq!(message(&[runs.clone(), commit.clone()]), commit_refused);
        assert_eq!(message(&[commit.clone(), commit]), commit_refused);
        assert_eq!(
            message(&[runs.clone(), empty]),
            "p.json is a syncbench/v1 file with no results; compare accepts run files (syncbench run --json or \
             advise --json)"
        );
        assert!(check_inputs(&[runs.clone(), runs]).is_ok());
    }

    #[test]
    fn case_names_say_what_was_measured() {
        let key = CaseKey {
            section: crate::core::suite::Section::TwoWrites,
            method: crate::core::method::SyncMethod::Fsync,
            write_size_bytes: 8192,
            writes_per_commit: 2,
            file_state: crate::core::suite::FileState::Append,
            repeat: 0,
        };
        assert_eq!(case_name(&key, true), "two_writes fsync, 2 × 8 KiB, append");
        assert_eq!(case_name(&key, false), "two_writes fsync (not durable), 2 × 8 KiB, append");
    }
}
