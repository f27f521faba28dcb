//! A device that switches between distinct latency regimes (a virtual disk that is fast for a few seconds,
//! then 20× slower for a few more), told apart from a steady disk, from noise and from drift.
//!
//! Why: one multiplicative interval over such a disk (`±800%`) says that a re-run lands anywhere, not what
//! happens. fio's and ioping's per-second logs show the two levels; this module names them: each regime's
//! median, its share of the time and how often the device switches.
//!
//! Method, on one case's windows ([`crate::measure::series`], ≤ 100 ms of commits each, from every round):
//! 1. each window's median commit latency, on a log scale (regimes multiply: 170 µs and 3.8 ms);
//! 2. the split of those sorted log medians at their widest gap, with at least [`MIN_WINDOWS_PER_REGIME`]
//!    windows on each side (not the split of most variance between the sides, Otsu's: under load a slow
//!    regime is a spread of 4-200 ms, and Otsu cut that spread instead of the gap below it, in 4 of 10
//!    recorded lab runs);
//! 3. a separation test: an empty band of at least [`MIN_GAP_FACTOR`]× between the two sides, their
//!    medians at least [`MIN_RATIO`] apart, Ashman's D (the distance of the side means in units of their
//!    pooled spread) at least [`MIN_SEPARATION`], and each side at least [`MIN_TIME_SHARE`] of the time.
//!    Drift and noise leave no empty factor of two between many windows (the gaps of a continuum are its
//!    range over its count), and their D stays near 2.7 (normal) or 3.5 (uniform) whatever their width; a
//!    single stalled window cannot be a side. So noise and drift are refused, and so is a steady disk;
//! 4. the time a regime lasts, from the run's windows of every case in time order (some case is always
//!    running, so the timeline has no holes a case's own spaced-out rounds would have).

use crate::core::schema::regimes::Window;
pub use crate::core::schema::regimes::{Regime, Regimes, RunRegimes};

/// Windows needed before regimes are looked for.
pub const MIN_WINDOWS: usize = 5;
/// Commits a window needs for its median to count: one. In a slow regime under load a commit can take
/// longer than a whole round (a lab disk at 3.8 ms per flush on this VM with other builds running: many
/// windows of one or two commits of 20-200 ms); leaving them out left a case only its fast windows. One
/// such window alone is a stall, not a regime: a regime needs two windows and 5% of the time.
pub const MIN_WINDOW_COMMITS: u64 = 1;
/// Each regime holds at least this many windows...
pub const MIN_WINDOWS_PER_REGIME: usize = 2;
/// ...and this share of the measured time (less is a stall, not a regime).
pub const MIN_TIME_SHARE: f64 = 0.10;
/// The slow regime's median is at least this many times the fast one's.
pub const MIN_RATIO: f64 = 2.0;
/// No window lies within this factor between the slowest fast window and the fastest slow one.
pub const MIN_GAP_FACTOR: f64 = 2.0;
/// Ashman's D the split must reach.
pub const MIN_SEPARATION: f64 = 3.0;
/// In-cluster spread below this (on the natural log) counts as this: windows that agree exactly (the
/// mock, a perfectly steady emulated disk) must not give an infinite separation from a tiny difference.
const MIN_LOG_SPREAD: f64 = 0.02;
/// Adjacent windows further apart than this in the run's timeline do not tell whether the device switched
/// between them.
const MAX_GAP_NS: u64 = 2_000_000_000;

impl Regimes {
    /// Which regime (0 fast, 1 slow) a window with median `p50_ns` belongs to.
    pub fn regime_of(&self, p50_ns: u64) -> u8 {
        u8::from(p50_ns > self.threshold_ns)
    }

    /// `two regimes: 170 µs for 62% of the time, 3.8 ms for 38%`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .regimes
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let of_time = if i == 0 { " of the time" } else { "" };
                format!(
                    "{} for {:.0}%{of_time}",
                    crate::core::units::format_latency(r.latency_ns_p50),
                    r.time_share * 100.0
                )
            })
            .collect();
        format!("two regimes: {}", parts.join(", "))
    }
}

/// A case's regimes from all its rounds (the left-out ones too: they are the device's time as well), and
/// its windows on the run's axis, each labelled with its regime when there are regimes.
pub fn of_rounds(rounds: &[crate::measure::rounds::Measurement]) -> (Option<Regimes>, Vec<Window>) {
    let mut windows: Vec<Window> = rounds
        .iter()
        .flat_map(|m| m.windows.iter().map(|w| Window { start_ns: m.started_ns + w.start_ns, ..w.clone() }))
        .collect();
    windows.sort_by_key(|w| w.start_ns);
    let regimes = detect(&windows);
    if let Some(r) = &regimes {
        windows.iter_mut().for_each(|w| w.regime = Some(r.regime_of(w.p50_ns)));
    }
    (regimes, windows)
}

/// The regimes of one case's windows, or `None` when they do not separate (steady, noisy, drifting, or too
/// few windows to tell).
pub fn detect(windows: &[Window]) -> Option<Regimes> {
    let mut points: Vec<(f64, u64, u64)> = windows
        .iter()
        .filter(|w| w.commits >= MIN_WINDOW_COMMITS && w.p50_ns > 0)
        .map(|w| ((w.p50_ns as f64).ln(), w.p50_ns, w.duration_ns))
        .collect();
    if points.len() < MIN_WINDOWS {
        return None;
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let logs: Vec<f64> = points.iter().map(|p| p.0).collect();
    let k = widest_gap(&logs)?;
    let (fast, slow) = points.split_at(k);
    let separation = ashman_d(&logs[..k], &logs[k..]);
    let (fast_p50, slow_p50) = (median(fast), median(slow));
    let total_ns: u64 = points.iter().map(|p| p.2).sum::<u64>().max(1);
    let share = |side: &[(f64, u64, u64)]| side.iter().map(|p| p.2).sum::<u64>() as f64 / total_ns as f64;
    let separated = logs[k] - logs[k - 1] >= MIN_GAP_FACTOR.ln()
        && slow_p50 as f64 >= MIN_RATIO * fast_p50 as f64
        && separation >= MIN_SEPARATION
        && share(fast) >= MIN_TIME_SHARE
        && share(slow) >= MIN_TIME_SHARE;
    separated.then(|| Regimes {
        regimes: vec![
            Regime { latency_ns_p50: fast_p50, time_share: share(fast), windows: fast.len() as u64 },
            Regime { latency_ns_p50: slow_p50, time_share: share(slow), windows: slow.len() as u64 },
        ],
        separation,
        // The geometric middle of the gap between the clusters.
        threshold_ns: ((logs[k - 1] + logs[k]) / 2.0).exp() as u64,
    })
}

/// The index that splits sorted `logs` at their widest gap, with at least [`MIN_WINDOWS_PER_REGIME`] on
/// each side (the first of equal gaps).
fn widest_gap(logs: &[f64]) -> Option<usize> {
    let n = logs.len();
    (MIN_WINDOWS_PER_REGIME..=n.checked_sub(MIN_WINDOWS_PER_REGIME)?)
        .max_by(|&a, &b| (logs[a] - logs[a - 1]).total_cmp(&(logs[b] - logs[b - 1])).then(b.cmp(&a)))
}

/// Ashman's D: √2·|μ₁ − μ₀| / √(σ₀² + σ₁²), each σ at least [`MIN_LOG_SPREAD`].
fn ashman_d(a: &[f64], b: &[f64]) -> f64 {
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let var = |s: &[f64], m: f64| {
        (s.iter().map(|x| (x - m).powi(2)).sum::<f64>() / s.len() as f64).max(MIN_LOG_SPREAD.powi(2))
    };
    let (ma, mb) = (mean(a), mean(b));
    std::f64::consts::SQRT_2 * (mb - ma).abs() / (var(a, ma) + var(b, mb)).sqrt()
}

fn median(side: &[(f64, u64, u64)]) -> u64 {
    // `side` is sorted by its log medians, so by the medians.
    side[(side.len() - 1) / 2].1
}

/// The run's regimes from its cases: `(case regimes, case windows on the run's axis)` of each durable case.
pub fn of_run(cases: &[(Option<&Regimes>, &[Window])]) -> Option<RunRegimes> {
    let analysed: Vec<&(Option<&Regimes>, &[Window])> = cases
        .iter()
        .filter(|(_, w)| w.iter().filter(|w| w.commits >= MIN_WINDOW_COMMITS).count() >= MIN_WINDOWS)
        .collect();
    if analysed.is_empty() {
        return None;
    }
    let with: Vec<(&Regimes, &[Window])> = analysed.iter().filter_map(|(r, w)| Some(((*r)?, *w))).collect();
    let switching = with.len() >= 2 && with.len() * 2 >= analysed.len();
    let mut timeline: Vec<(u64, u64, u8)> = with
        .iter()
        .flat_map(|(r, ws)| {
            ws.iter()
                .filter(|w| w.commits >= MIN_WINDOW_COMMITS)
                .map(|w| (w.start_ns, w.start_ns + w.duration_ns, r.regime_of(w.p50_ns)))
        })
        .collect();
    timeline.sort_unstable();
    let (switches, observed_ns) = switches_over(&timeline);
    Some(RunRegimes {
        cases_with_regimes: with.len() as u64,
        cases_analysed: analysed.len() as u64,
        switching,
        switch_every_s: (switches > 0).then(|| observed_ns as f64 / 1e9 / (switches + 1) as f64),
        switches,
    })
}

/// Switches between adjacent windows of `timeline` (start, end, regime), sorted by start, and the time
/// the timeline covers, gaps of up to [`MAX_GAP_NS`] included (longer ones are time nobody measured).
/// A window whose regime both neighbours contradict is taken as its neighbours' (a median filter over
/// three windows): one case's odd window, a stall or a window straddling a switch, is not two switches.
fn switches_over(timeline: &[(u64, u64, u8)]) -> (u64, u64) {
    let labels: Vec<u8> = (0..timeline.len())
        .map(|i| match (i.checked_sub(1).map(|p| timeline[p].2), timeline.get(i + 1).map(|n| n.2)) {
            (Some(a), Some(b)) if a == b => a,
            _ => timeline[i].2,
        })
        .collect();
    let (mut switches, mut observed) = (0u64, 0u64);
    let mut covered_to = timeline.first().map_or(0, |w| w.0);
    for (i, &(start, end, _)) in timeline.iter().enumerate() {
        if start > covered_to + MAX_GAP_NS {
            covered_to = start;
        }
        if end > covered_to {
            observed += end - covered_to;
            covered_to = end;
        }
        if i > 0 && labels[i - 1] != labels[i] && start <= timeline[i - 1].1 + MAX_GAP_NS {
            switches += 1;
        }
    }
    (switches, observed)
}

/// The run-level sentence, e.g. `the device switched between latency regimes in 12 of 14 cases
/// (one_write fdatasync: two regimes: 170 µs for 62% of the time, 3.8 ms for 38%), switching every ~4.1 s`.
pub fn sentence(run: &RunRegimes, example: Option<(&str, &Regimes)>) -> Option<String> {
    if !run.switching {
        return None;
    }
    let mut text = format!(
        "the device switched between latency regimes in {} of {} durable cases",
        run.cases_with_regimes, run.cases_analysed
    );
    if let Some((name, r)) = example {
        text += &format!(" ({name}: {})", r.describe());
    }
    if let Some(s) = run.switch_every_s {
        text += &format!(", switching every ~{}", seconds(s));
    }
    text += "; one interval over both regimes says only that a re-run lands anywhere between them";
    Some(text)
}

fn seconds(s: f64) -> String {
    if s >= 10.0 {
        format!("{s:.0} s")
    } else if s >= 1.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.0} ms", s * 1e3)
    }
}

/// The run's regimes from its measured durable cases (their `latency_log` holds the windows).
pub fn of_results(results: &[crate::core::schema::CaseResult]) -> Option<RunRegimes> {
    let cases: Vec<(Option<&Regimes>, &[Window])> = results
        .iter()
        .filter(|r| r.durable && r.error.is_none() && r.ops > 0)
        .map(|r| (r.regimes.as_ref(), &r.latency_log[..]))
        .collect();
    of_run(&cases)
}

/// The answer's regime lines (empty unless the device switched): the sentence, and which method leads
/// within each regime among the one-write cases, or that the run cannot decide.
pub fn answer_line(results: &[crate::core::schema::CaseResult], run: Option<&RunRegimes>) -> String {
    use crate::core::suite::Section;
    let Some(run) = run.filter(|r| r.switching) else { return String::new() };
    let one: Vec<&crate::core::schema::CaseResult> = results
        .iter()
        .filter(|r| r.section == Section::OneWrite && r.durable && r.error.is_none() && r.ops > 0)
        .collect();
    let example = one.iter().chain(results.iter().collect::<Vec<_>>().iter()).find_map(|r| {
        let name = format!("{} {}", r.section.name(), r.label.trim());
        r.regimes.as_ref().map(|g| (name, g))
    });
    let Some(text) = sentence(run, example.as_ref().map(|(n, g)| (n.as_str(), *g))) else { return String::new() };
    format!(
        "  regimes: {text}
  {}
",
        within_regimes(&one)
    )
}

/// A leader in a regime needs this margin over the next case: without an interval per regime, closer
/// medians are not a difference.
pub const LEAD_FACTOR: f64 = 1.2;

/// Like with like: which one-write case is fastest within the fast regime and within the slow one.
fn within_regimes(cases: &[&crate::core::schema::CaseResult]) -> String {
    let with: Vec<(&str, &Regimes)> =
        cases.iter().filter_map(|c| Some((c.label.trim(), c.regimes.as_ref()?))).collect();
    let lacking = cases.len() - with.len();
    if with.len() < 2 {
        return format!(
            "within a regime: cannot decide which one-write method is fastest: {} of {} cases showed both regimes, \
             and rates over both regimes do not compare like with like",
            with.len(),
            cases.len()
        );
    }
    let leader = |regime: usize| -> (String, Option<&str>) {
        let mut ranked: Vec<(&str, u64)> = with.iter().map(|(n, g)| (*n, g.regimes[regime].latency_ns_p50)).collect();
        ranked.sort_by_key(|r| r.1);
        let clear = ranked[1].1 as f64 >= LEAD_FACTOR * ranked[0].1 as f64;
        let text = format!(
            "{} {} (next {} {})",
            ranked[0].0,
            crate::core::units::format_latency(ranked[0].1),
            ranked[1].0,
            crate::core::units::format_latency(ranked[1].1)
        );
        (text, clear.then_some(ranked[0].0))
    };
    let ((fast_text, fast), (slow_text, slow)) = (leader(0), leader(1));
    let verdict = match (fast, slow) {
        (Some(a), Some(b)) if a == b => format!("{a} is fastest in both"),
        (Some(a), Some(b)) => format!("cannot decide: {a} leads in the fast regime, {b} in the slow one"),
        _ => "undecided: no method leads by 1.2× within a regime".to_string(),
    };
    let missing =
        if lacking > 0 { format!("; {lacking} case(s) without both regimes are not compared") } else { String::new() };
    format!("within a regime (one write per commit): fast {fast_text}, slow {slow_text}: {verdict}{missing}")
}

/// The cases with regimes, under the tables (at most [`NOTES_SHOWN`]; the JSON has every one).
pub fn notes(results: &[crate::core::schema::CaseResult]) -> String {
    let with: Vec<&crate::core::schema::CaseResult> = results.iter().filter(|r| r.regimes.is_some()).collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("\nlatency regimes (100 ms windows' medians; JSON `regimes`, `--log` for the windows):\n");
    for r in with.iter().take(NOTES_SHOWN) {
        let g = r.regimes.as_ref().expect("filtered");
        out += &format!("  {} {}: {}\n", r.section.name(), r.label.trim(), g.describe());
    }
    if with.len() > NOTES_SHOWN {
        out += &format!("  … and {} more cases\n", with.len() - NOTES_SHOWN);
    }
    out
}

/// Cases listed by [`notes`].
const NOTES_SHOWN: usize = 8;

#[cfg(test)]
#[path = "regimes_tests.rs"]
mod tests;
