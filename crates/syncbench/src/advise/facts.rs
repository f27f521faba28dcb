//! Lookups over a run's cases that the rules share: find a case, score a method, pick the best.

use super::{Evidence, Input};
use crate::core::environment::Environment;
use crate::core::schema::CaseResult;
use crate::core::stats::{Decision, Estimate, decide};
use crate::core::suite::Section;
use crate::core::verdict::Verdict;

/// Size of a PostgreSQL WAL block and of the default `run` write.
pub const BLOCK_8K: u64 = 8192;

/// A method's measured commit rate with the cases behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct Rate {
    /// The method (run vocabulary).
    pub method: String,
    /// The score compared between methods: commits/s, or the geometric mean over several cases.
    pub ops_per_s: f64,
    /// Relative half-width of the score's 95% confidence interval (the worst of its cases).
    pub ci95_rel: f64,
    /// The cases behind the score.
    pub evidence: Vec<Evidence>,
    /// A case behind the score measured a disturbed disk: the score is only a lower bound of the
    /// undisturbed rate (other I/O or CPU steal only slows syncs).
    pub lower_bound: bool,
    /// Latency regimes behind the score: every case's fast and slow regime medians (ns, geometric mean
    /// over the cases), or `Mixed` when some of its cases switched and others did not.
    pub regimes: RateRegimes,
}

/// Whether a score's cases switched between latency regimes (`run`'s `regimes`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum RateRegimes {
    /// None did: the score is one regime's (or a steady device's).
    #[default]
    None,
    /// Every case did: the fast and the slow regime's median commit latency, ns.
    Both(f64, f64),
    /// Some did: the score mixes regimes and cannot be matched regime to regime.
    Mixed,
}

/// The input with lookups.
pub struct Facts<'a> {
    /// The environment.
    pub env: &'a Environment,
    /// The verdicts.
    pub verdicts: &'a [Verdict],
    /// The cases.
    pub results: &'a [CaseResult],
    /// The cases measured again under background writes, if they were.
    pub under_writes: Option<&'a crate::core::schema::BackgroundRun>,
    /// The cases are from an interrupted run.
    pub partial: bool,
}

/// Evidence from one case.
pub fn evidence(c: &CaseResult) -> Evidence {
    Evidence {
        case: format!("{}: {}", c.section, c.label),
        method: c.method.name().to_string(),
        ops_per_s: c.ops_per_s,
        latency_ns_p50: c.latency_ns.p50,
        latency_ns_p99: c.latency_ns.p99,
    }
}

impl<'a> Facts<'a> {
    /// Wrap an input.
    pub fn new(input: &Input<'a>) -> Facts<'a> {
        Facts {
            env: input.environment,
            verdicts: input.verdicts,
            results: input.results,
            under_writes: input.under_writes,
            partial: input.partial,
        }
    }

    /// The same lookups over the cases measured under background writes, and what the writer did; None
    /// when the measurement had no `--background-writes`.
    pub fn loaded(&self) -> Option<(Facts<'a>, &'a crate::core::schema::BackgroundStats)> {
        // A part under writes that failed has no results: the rules judge idle only.
        let u = self.under_writes.filter(|u| u.error().is_none())?;
        let facts = Facts { results: &u.results, under_writes: None, ..*self };
        Some((facts, &u.writer))
    }

    /// A measured (supported, error-free, non-empty) case.
    pub fn case(&self, section: &str, method: &str, size: u64, writes: u32) -> Option<&'a CaseResult> {
        self.results.iter().find(|c| {
            c.section.name() == section
                && c.method.name() == method
                && c.write_size_bytes == size
                && c.writes_per_commit == writes
                && measured(c)
        })
    }

    /// A measured case by file state (section `file_state`).
    pub fn file_state_case(&self, method: &str, state: &str) -> Option<&'a CaseResult> {
        self.results.iter().find(|c| {
            c.section == Section::FileState && c.method.name() == method && c.file_state.name() == state && measured(c)
        })
    }

    /// A measured case of any section with this method and write size (first match).
    pub fn any_case(&self, method: &str, size: u64) -> Option<&'a CaseResult> {
        self.results.iter().find(|c| {
            c.method.name() == method && c.write_size_bytes == size && c.writes_per_commit == 1 && measured(c)
        })
    }

    /// Whether the method was tried and refused (unsupported) in any case.
    pub fn refused(&self, method: &str) -> Option<&'a CaseResult> {
        self.results.iter().find(|c| c.method.name() == method && !c.supported)
    }

    /// The WAL-like score of a method: the geometric mean of one 8 KiB write per commit and two 8 KiB
    /// writes per commit, because a WAL flush often spans several blocks and O_DSYNC methods pay a
    /// device round trip per write. Falls back to the one-write case alone.
    pub fn wal_score(&self, method: &str) -> Option<Rate> {
        let one = self.case("one_write", method, BLOCK_8K, 1)?;
        let Some(two) = self.case("two_writes", method, BLOCK_8K, 2) else {
            return Some(rate_of(method, &[one]));
        };
        Some(rate_of(method, &[one, two]))
    }

    /// One write of `size` per commit into an overwritten file on one descriptor, from whichever section
    /// measured it (`one_write` with `run --size`, `write_sizes`' single 16 KiB write, the size sweep).
    pub fn single_write(&self, method: &str, size: u64) -> Option<&'a CaseResult> {
        ["one_write", "write_sizes", "size_sweep"]
            .iter()
            .filter_map(|section| self.case(section, method, size, 1))
            .find(|c| c.file_state == crate::core::suite::FileState::Overwrite)
    }

    /// PostgreSQL's WAL score: the geometric mean of one 8 KiB and one 16 KiB write per commit. XLogWrite
    /// hands the kernel all contiguous dirty WAL blocks in one write (traced under pgbench: one write of
    /// 15 KiB on average per sync, docs/benchmarks.md), so a commit spanning two blocks is one 16 KiB
    /// write, not two 8 KiB ones. None when either case is missing.
    pub fn contiguous_wal_score(&self, method: &str) -> Option<Rate> {
        let one = self.single_write(method, BLOCK_8K)?;
        let two_blocks = self.single_write(method, 2 * BLOCK_8K)?;
        Some(rate_of(method, &[one, two_blocks]))
    }

    /// The single-case score of a method in a section.
    pub fn single(&self, section: &str, method: &str, size: u64) -> Option<Rate> {
        Some(rate_of(method, &[self.case(section, method, size, 1)?]))
    }

    /// Whether O_DIRECT really bypasses the page cache here: false on ext4 mounted `data=journal` (it
    /// accepts O_DIRECT but silently does buffered I/O, so `+direct` cases measure buffered writes; the
    /// probe's `data_journal` verdict), else whether any `+direct` or `direct` case was measured (None when
    /// none was tried).
    pub fn direct_supported(&self) -> Option<bool> {
        if self.data_journal() {
            return Some(false);
        }
        let direct: Vec<&CaseResult> = self.results.iter().filter(|c| c.method.is_direct()).collect();
        if direct.is_empty() {
            return None;
        }
        Some(direct.iter().any(|c| measured(c)))
    }

    /// ext4 (or ext3) mounted with `data=journal`, from the mount options or the probe's verdict.
    pub fn data_journal(&self) -> bool {
        self.env.mount_options.iter().any(|o| o == "data=journal")
            || self.verdicts.iter().any(|v| v.is(crate::core::verdict::VerdictCode::DataJournal))
    }

    /// Why O_DIRECT is not available, when [`Facts::direct_supported`] says so (a clause to continue).
    pub fn no_direct_reason(&self) -> &'static str {
        if self.data_journal() {
            "ext4 mounted with data=journal accepts O_DIRECT but silently does buffered I/O (the probe's \
             data_journal verdict; the +direct cases measured here were buffered too)"
        } else {
            "O_DIRECT is refused by this file system"
        }
    }

    /// A copy-on-write file system (never overwrites in place: torn pages cannot happen, preallocation
    /// and recycling buy nothing).
    pub fn copy_on_write(&self) -> bool {
        matches!(self.env.fs_type.as_str(), "btrfs" | "zfs" | "bcachefs")
    }

    /// Choose among `candidates` by score: the `default` stays unless another is faster by more than
    /// `margin` (relative) and beyond the measurement noise. Returns (choice, all scored candidates).
    pub fn choose(&self, candidates: &[Rate], default: &str, margin: f64) -> Option<Rate> {
        pick(candidates, default, margin)
    }
}

impl Rate {
    /// The score with its 95% interval, taken multiplicatively from `ci95_rel` (never below zero), open
    /// upwards for a lower bound.
    pub fn estimate(&self) -> Estimate {
        let estimate = Estimate::from_rel(self.ops_per_s, self.ci95_rel);
        if self.lower_bound { estimate.open_upwards() } else { estimate }
    }

    /// Whether this rate beats `other` by more than `margin` (relative) by [`decide`], the one rule that
    /// names a winner: the intervals apart, and the gain worth a change. A disturbed `other` may be faster
    /// than it measured (its interval is open upwards), so nothing beats it; a disturbed rate that wins
    /// anyway wins by at least as much undisturbed.
    pub fn beats(&self, other: &Rate, margin: f64) -> bool {
        if let Some(by_regime) = self.by_regime(other) {
            return by_regime.is_some_and(|f| f > 1.0 + margin);
        }
        matches!(decide(&self.estimate(), &other.estimate()), Decision::AFaster(f) if f > 1.0 + margin)
    }

    /// Whether [`decide`] can tell this rate from `other` at all (regime to regime when either switched).
    pub fn told_apart(&self, other: &Rate) -> bool {
        if let Some(by_regime) = self.by_regime(other) {
            return by_regime.is_some() || other.by_regime(self).is_some_and(|f| f.is_some());
        }
        decide(&self.estimate(), &other.estimate()) != Decision::Undecided
    }

    /// Like with like when either score comes from cases with latency regimes (`None` when neither
    /// does): `Some(Some(f))` when this one is faster by `f` (the smaller of the two regimes' latency
    /// ratios) in both the fast and the slow regime, by at least
    /// [`crate::measure::regimes::LEAD_FACTOR`] (there is no interval per regime); `Some(None)` when it is
    /// not, or a side's score mixes regimes or has none to match: the run cannot decide from it.
    pub fn by_regime(&self, other: &Rate) -> Option<Option<f64>> {
        use crate::measure::regimes::LEAD_FACTOR;
        match (self.regimes, other.regimes) {
            (RateRegimes::None, RateRegimes::None) => None,
            (RateRegimes::Both(fa, sa), RateRegimes::Both(fb, sb)) => {
                let f = (fb / fa.max(1.0)).min(sb / sa.max(1.0));
                Some((f >= LEAD_FACTOR).then_some(f))
            }
            _ => Some(None),
        }
    }
}

/// [`Facts::choose`]'s rule, which needs nothing of the facts.
fn pick(candidates: &[Rate], default: &str, margin: f64) -> Option<Rate> {
    let best = candidates.iter().max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))?;
    let Some(def) = candidates.iter().find(|r| r.method == default) else {
        return Some(best.clone());
    };
    // With regimes the pooled best is no candidate of its own: whichever beats the default in both.
    if candidates.iter().any(|r| r.regimes != RateRegimes::None) {
        let winner = candidates
            .iter()
            .filter(|r| r.method != default)
            .filter_map(|r| Some((r, r.by_regime(def)??)))
            .filter(|(_, f)| *f > 1.0 + margin)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        return Some(winner.map_or(def, |(r, _)| r).clone());
    }
    if best.beats(def, margin) { Some(best.clone()) } else { Some(def.clone()) }
}

fn measured(c: &CaseResult) -> bool {
    c.supported && c.error.is_none() && c.ops > 0 && c.ops_per_s.is_finite() && c.ops_per_s > 0.0
}

fn rate_of(method: &str, cases: &[&CaseResult]) -> Rate {
    let log_mean = cases.iter().map(|c| c.ops_per_s.ln()).sum::<f64>() / cases.len() as f64;
    Rate {
        method: method.to_string(),
        ops_per_s: log_mean.exp(),
        ci95_rel: cases.iter().map(|c| c.ci95_rel).fold(0.0, f64::max),
        evidence: cases.iter().map(|c| evidence(c)).collect(),
        lower_bound: cases.iter().any(|c| c.lower_bound),
        regimes: regimes_of(cases),
    }
}

/// The regimes behind a score of `cases` (see [`RateRegimes`]).
fn regimes_of(cases: &[&CaseResult]) -> RateRegimes {
    let with: Vec<&crate::core::schema::regimes::Regimes> =
        cases.iter().filter_map(|c| c.regimes.as_ref()).filter(|g| g.regimes.len() == 2).collect();
    let geo = |i: usize| {
        (with.iter().map(|g| (g.regimes[i].latency_ns_p50.max(1) as f64).ln()).sum::<f64>() / with.len() as f64).exp()
    };
    match with.len() {
        0 => RateRegimes::None,
        n if n == cases.len() => RateRegimes::Both(geo(0), geo(1)),
        _ => RateRegimes::Mixed,
    }
}

/// Format commits/s for a sentence.
pub fn per_s(x: f64) -> String {
    if x >= 100.0 { format!("{x:.0}/s") } else { format!("{x:.1}/s") }
}

/// The chosen method against every other scored one, one sentence each, and, when the default was kept
/// although another measured faster, why — in words that agree with the numbers just given: below the
/// margin, or beyond it but inside the measurement's intervals. Each sentence starts with a space.
pub fn compare_with_rest(chosen: &Rate, scored: &[Rate], default: &str, margin: f64) -> String {
    let mut text = String::new();
    for other in scored.iter().filter(|r| r.method != chosen.method) {
        text.push_str(&format!(" {}.", compare(chosen, other)));
    }
    let faster = scored
        .iter()
        .filter(|r| r.method != default && r.ops_per_s > chosen.ops_per_s)
        .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    let undecided = scored.iter().any(|r| r.method != chosen.method && !chosen.told_apart(r));
    match (chosen.method == default, faster) {
        (true, Some(best)) => {
            text.push(' ');
            text.push_str(&kept_default(best, chosen, margin));
        }
        // Measured fastest, but not apart from every other: the numbers do not carry the choice.
        (true, None) if undecided => text.push_str(
            " This run cannot tell every method apart from the default, so the default stays on its mechanism, \
             not on a measured speed.",
        ),
        _ => {}
    }
    text
}

/// Why `default` stays although `faster` measured faster: "open_sync measured 4% faster, less than the 5%
/// a change must gain, so the default stays." or "… 25% faster, but within the intervals (±30%, ±12%) …".
pub fn kept_default(faster: &Rate, default: &Rate, margin: f64) -> String {
    let pct = (faster.ops_per_s / default.ops_per_s - 1.0) * 100.0;
    if faster.by_regime(default).is_some() {
        format!(
            "{} measured {pct:.0}% faster over the whole run, but the disk switched between latency regimes and \
             the same regime does not name it faster by 1.2×: the default stays.",
            faster.method
        )
    } else if default.lower_bound && pct > margin * 100.0 {
        format!(
            "{} measured {pct:.0}% faster, but other I/O or CPU steal slowed {}'s cases, so its rate is only a \
             lower bound: the default stays (measure again on a quiet machine to decide).",
            faster.method, default.method
        )
    } else if pct <= margin * 100.0 {
        format!(
            "{} measured {pct:.0}% faster, less than the {:.0}% a change must gain, so the default stays.",
            faster.method,
            margin * 100.0
        )
    } else {
        format!(
            "{} measured {pct:.0}% faster, but the two measurements' 95% intervals overlap ({} vs {}): \
             undecided, not a difference this run can vouch for, so the default stays on its mechanism.",
            faster.method,
            rate_text(faster),
            rate_text(default)
        )
    }
}

/// Commits/s with its interval: `4891/s ±3.0%`, `893/s, re-run 60–13,000/s`, `≥ 500/s (disturbed)`.
pub fn rate_text(r: &Rate) -> String {
    if r.lower_bound {
        return format!("≥ {} (disturbed)", per_s(r.ops_per_s));
    }
    r.estimate().text(|x| per_s(x).trim_end_matches("/s").to_string(), "/s", "re-run")
}

/// "a is 12% faster than b (5200/s ±3.0% vs 4600/s ±4.0%)", "within 1%", or when [`decide`] cannot tell
/// them apart, "a and b: undecided, their 95% intervals overlap (…)": no winner from noise.
pub fn compare(a: &Rate, b: &Rate) -> String {
    if let Some(text) = compare_by_regime(a, b) {
        return text;
    }
    let pct = (a.ops_per_s / b.ops_per_s - 1.0) * 100.0;
    let numbers = format!("({} vs {})", rate_text(a), rate_text(b));
    if !a.told_apart(b) {
        format!("{} and {}: undecided, their 95% intervals overlap {numbers}", a.method, b.method)
    } else if pct.abs() < 1.0 {
        format!("{} and {} are within 1% {numbers}", a.method, b.method)
    } else if pct > 0.0 {
        format!("{} is {pct:.0}% faster than {} {numbers}", a.method, b.method)
    } else {
        format!("{} is {:.0}% slower than {} {numbers}", a.method, -pct, b.method)
    }
}

/// [`compare`] when either score has latency regimes: the same regime against the same regime, or that
/// the run cannot decide (a pooled rate mixes regimes: never a winner from it).
fn compare_by_regime(a: &Rate, b: &Rate) -> Option<String> {
    use crate::core::units::format_latency as latency;
    a.by_regime(b)?;
    let pair = |r: &Rate| match r.regimes {
        RateRegimes::Both(f, s) => format!("{} / {}", latency(f as u64), latency(s as u64)),
        RateRegimes::Mixed => "some cases switched, some did not".to_string(),
        RateRegimes::None => "no regimes".to_string(),
    };
    let numbers = format!("(fast / slow regime median commit latency: {} vs {})", pair(a), pair(b));
    Some(match (a.by_regime(b).flatten(), b.by_regime(a).flatten()) {
        (Some(f), _) => format!("{} is {f:.2}× faster than {} in both latency regimes {numbers}", a.method, b.method),
        (_, Some(f)) => format!("{} is {f:.2}× slower than {} in both latency regimes {numbers}", a.method, b.method),
        _ => format!(
            "{} and {}: cannot decide, the disk switched between latency regimes and the same regime does not \
             name a winner by 1.2× {numbers}",
            a.method, b.method
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(method: &str, ops_per_s: f64, ci95_rel: f64) -> Rate {
        Rate {
            method: method.into(),
            ops_per_s,
            ci95_rel,
            evidence: Vec::new(),
            lower_bound: false,
            regimes: RateRegimes::None,
        }
    }

    /// Golden: scores from cases with latency regimes are compared regime to regime — a pooled 3× that
    /// the intervals call apart names no winner when the regimes match (the planted trap), a lead in both
    /// regimes does, and a score that mixes regimes never does.
    #[test]
    fn regimes_are_compared_like_with_like_or_undecided() {
        let with = |m: &str, ops, regimes| Rate { regimes, ..rate(m, ops, 0.05) };
        let same = (
            with("fdatasync", 3000.0, RateRegimes::Both(200e3, 4e6)),
            with("fsync", 1000.0, RateRegimes::Both(200e3, 4e6)),
        );
        let lead = with("open_datasync", 1500.0, RateRegimes::Both(150e3, 3e6));
        let mixed = with("pwritev2_dsync", 9000.0, RateRegimes::Mixed);
        assert!(!same.0.beats(&same.1, 0.05) && !same.0.told_apart(&same.1), "pooled 3× from the same regimes");
        assert!(lead.beats(&same.1, 0.05) && lead.told_apart(&same.1) && same.1.told_apart(&lead));
        assert!(!mixed.beats(&same.1, 0.05) && !mixed.told_apart(&same.1));
        let text =
            [compare(&same.0, &same.1), compare(&lead, &same.1), compare(&same.1, &lead), compare(&mixed, &same.1)]
                .join("\n");
        insta::assert_snapshot!("advise_regimes", text);
        let choice = pick(&[same.1.clone(), same.0.clone(), mixed.clone()], "fsync", 0.05).unwrap();
        assert_eq!(choice.method, "fsync", "no winner over the default from pooled rates that mix regimes");
        let choice = pick(&[same.1.clone(), same.0.clone(), lead.clone()], "fsync", 0.05).unwrap();
        assert_eq!(choice.method, "open_datasync", "the lead in both regimes, not the pooled best");
        let kept = kept_default(&same.0, &same.1, 0.05);
        assert!(kept.contains("latency regimes") && kept.ends_with("the default stays."), "{kept}");
    }

    #[test]
    fn a_disturbed_default_is_not_beaten_and_a_disturbed_winner_still_wins() {
        let facts_free = |candidates: &[Rate], default: &str| pick(candidates, default, 0.05).unwrap().method;
        let slow_default = Rate { lower_bound: true, ..rate("fdatasync", 500.0, 0.05) };
        let clean = rate("open_datasync", 1000.0, 0.05);
        // Someone else's I/O slowed the default: a clean rival's lead proves nothing.
        assert_eq!(facts_free(&[slow_default.clone(), clean.clone()], "fdatasync"), "fdatasync");
        let text = kept_default(&clean, &slow_default, 0.05);
        assert!(text.contains("only a lower bound") && text.contains("default stays"), "{text}");
        assert!(rate_text(&slow_default).starts_with("≥ 500/s (disturbed)"));
        // A disturbed rival that still wins beyond the noise wins by at least as much undisturbed.
        let disturbed_rival = Rate { lower_bound: true, ..clean };
        assert_eq!(facts_free(&[rate("fdatasync", 500.0, 0.05), disturbed_rival], "fdatasync"), "open_datasync");
    }

    #[test]
    fn a_kept_default_is_worded_by_the_numbers_it_gives() {
        // Issue #16: "fdatasync is 25% slower than open_sync … within 5% or the noise" contradicted itself.
        let (default, faster) = (rate("fdatasync", 1000.0, 0.20), rate("open_sync", 1250.0, 0.15));
        let text = compare_with_rest(&default, &[default.clone(), faster.clone()], "fdatasync", 0.05);
        // 1000/s ×/÷ 1.2 reaches 1200/s, 1250/s ×/÷ 1.15 down to 1087/s: no winner named from that.
        assert!(
            text.contains(
                "fdatasync and open_sync: undecided, their 95% intervals overlap (1000/s ±20% vs 1250/s ±15%)"
            ),
            "{text}"
        );
        assert!(
            text.contains("open_sync measured 25% faster, but the two measurements' 95% intervals overlap (1250/s ±15% vs 1000/s ±20%): undecided"),
            "{text}"
        );
        // Apart, the same gap is a difference.
        let (default, faster) = (rate("fdatasync", 1000.0, 0.05), rate("open_sync", 1250.0, 0.05));
        let text = compare_with_rest(&default, &[default.clone(), faster.clone()], "fdatasync", 0.05);
        assert!(text.contains("fdatasync is 20% slower than open_sync (1000/s ±5.0% vs 1250/s ±5.0%)"), "{text}");
        assert!(!text.contains("within 5%"), "{text}");
        let close = rate("open_sync", 1030.0, 0.01);
        let text = compare_with_rest(&default, &[default.clone(), close], "fdatasync", 0.05);
        assert!(
            text.ends_with("open_sync measured 3% faster, less than the 5% a change must gain, so the default stays."),
            "{text}"
        );
        // A chosen method that is not the default needs no excuse.
        let text = compare_with_rest(&faster, &[default, faster.clone()], "fdatasync", 0.05);
        assert!(!text.contains("stays"), "{text}");
    }
}
