//! Several short rounds per case instead of one block: the order of the cases changes every round, and a
//! case's uncertainty comes from the spread between its rounds as well as from its commits.
//!
//! Why: the confidence interval of one block of commits assumes they are independent draws from one
//! distribution. A device has phases (host cache destage, throttling, neighbours) lasting seconds to
//! minutes: one block measures one phase and claims ±2%, and a re-run in another phase lands 25% away.
//! Rounds spread each case over the whole run, so a phase shows as spread between rounds.
//!
//! The interval printed answers "where will a re-run land?", not "how precisely is this run's mean
//! known?": a 95% *prediction* interval for one more round, Student's t over the logarithms of the round
//! rates, `t(n-1)·s·√(1 + 1/n)`. One more round, not the mean of n more: a re-run minutes later may sit in
//! one phase throughout (recorded: five rounds of one run within ±10% while the other runs were 20% away),
//! so its mean can land wherever a single round can. Log scale because rates are positive and their
//! phases multiply (a slow phase is ×0.3, not −5000/s): the interval is `[g/f, g·f]` around the geometric
//! mean `g`, never below zero. The t interval of the mean (`t·s/√n`, the formula before) covered a re-run
//! in 60–77% of calibration runs; this one is what bench/calibrate_uncertainty.sh measures.
//!
//! A run shorter than the disk's phases cannot see them: on a disk, a small plan runs more rounds of the
//! same size until its rounds have spread over [`SPREAD_SECS`] ([`QUICK_SPREAD_SECS`] with `--quick`).

pub use crate::core::schema::StopReason;
use crate::core::stats::{Samples, t95};

/// The outcome of the timed loop.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Commit latencies.
    pub samples: Samples,
    /// Wall time of the timed loop (first commit start to last commit end), in ns.
    pub duration_ns: u64,
    /// Why it stopped.
    pub stop: StopReason,
    /// Commits run during warmup.
    pub warmup_ops: u64,
    /// (commits, ns) of the first and the second half of the timed loop, split at the 16-commit
    /// checkpoint nearest half its time: drift inside the round shows as two different rates.
    pub halves: [(u64, u64); 2],
    /// Where the timed loop began on the run's time axis ([`crate::measure::series::run_axis_ns`];
    /// the mock's is virtual).
    pub started_ns: u64,
    /// The commits over time, in windows of [`crate::measure::series::WINDOW_NS`].
    pub windows: Vec<crate::core::schema::regimes::Window>,
}

/// Rounds of `run` by default, and with `--quick`.
pub const DEFAULT_ROUNDS: u32 = 5;
/// `--quick` (fewer, since each round's share of 0.1 s is short).
pub const QUICK_ROUNDS: u32 = 3;
/// The most rounds a case runs (also the limit of `--rounds`).
pub const MAX_ROUNDS: u32 = 50;
/// On a disk, rounds continue until they have spread over this many seconds (the default suite of 96
/// cases takes longer than this in its 5 rounds and is not extended; `--sections a` is).
pub const SPREAD_SECS: f64 = 20.0;
/// [`SPREAD_SECS`] with `--quick` (its whole suite stays under 15 s).
pub const QUICK_SPREAD_SECS: f64 = 8.0;

/// How many rounds a plan runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Rounds at least; each case's budget is split over these (a round's size).
    pub rounds: u32,
    /// On a disk, more rounds of the same size start while fewer than this many seconds have passed since
    /// the first began, up to [`MAX_ROUNDS`]. 0: exactly `rounds`.
    pub spread_secs: f64,
}

impl Schedule {
    /// Exactly `rounds` (what `--rounds N` asks for).
    pub fn fixed(rounds: u32) -> Schedule {
        Schedule { rounds: rounds.clamp(1, MAX_ROUNDS), spread_secs: 0.0 }
    }

    /// The default of `run` and `advise`: 5 rounds (3 with `--quick`), spread over 20 s (8 s).
    pub fn default_for(quick: bool) -> Schedule {
        if quick {
            Schedule { rounds: QUICK_ROUNDS, spread_secs: QUICK_SPREAD_SECS }
        } else {
            Schedule { rounds: DEFAULT_ROUNDS, spread_secs: SPREAD_SECS }
        }
    }

    /// `--rounds N` when given (exactly N), else the default for `--quick` or not.
    pub fn from_flag(flag: Option<&str>, quick: bool) -> anyhow::Result<Schedule> {
        Ok(match flag {
            Some(text) => Schedule::fixed(parse_flag(text)?),
            None => Schedule::default_for(quick),
        })
    }

    /// Whether round `round` (0-based) runs, `elapsed_secs` after the first round began.
    pub fn runs_round(&self, round: u32, elapsed_secs: f64) -> bool {
        round < self.rounds || (round < MAX_ROUNDS && elapsed_secs < self.spread_secs)
    }
}

/// The rounds a plan ran, from its results: more than `planned` when a small plan spread over time.
pub fn rounds_run(results: &[crate::core::schema::CaseResult], planned: u32) -> u32 {
    results.iter().map(|r| r.rounds_ops_per_s.len() as u32).max().unwrap_or(planned).max(planned)
}

/// `--rounds N`: a whole number from 1 to 50, or a one-line usage error.
pub fn parse_flag(text: &str) -> anyhow::Result<u32> {
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_ROUNDS).contains(&n) => Ok(n),
        _ => Err(crate::core::exit::usage(format!(
            "invalid --rounds {text:?}: give a whole number of rounds from 1 to 50"
        ))),
    }
}

/// The order in which round `round` (0-based) runs `len` cases: the plan's order first, then a different
/// deterministic shuffle every round, so no case always follows the same neighbour or runs at the same
/// point of the run.
pub fn order(len: usize, round: u32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    if round == 0 {
        return order;
    }
    let mut state = 0x5eed_0000_u64 + u64::from(round);
    for i in (1..len).rev() {
        state = crate::core::hash::splitmix64(state);
        let j = (state % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The rounds of one case, pooled: every commit counts once in the latency summary and the rate; the
/// interval is the prediction interval over the round rates, widened to the commits' own when that is wider.
#[derive(Clone, Debug)]
pub struct Pooled {
    /// All commits of all rounds.
    pub samples: Samples,
    /// Timed ns of all rounds.
    pub duration_ns: u64,
    /// Warmup commits of all rounds.
    pub warmup_ops: u64,
    /// Why the rounds stopped: file_full if any did, converged if all did, else budget.
    pub stop: StopReason,
    /// Commits/s of each round in the order they ran.
    pub round_rates: Vec<f64>,
    /// Relative 95% half-width from the commits as independent draws.
    pub ci95_rel_within: f64,
    /// 95% prediction interval of a re-run's rate from the rounds (None with fewer than two rounds).
    pub predicted: Option<Interval>,
    /// A sentence when the speed changed during the case.
    pub drift: Option<String>,
}

impl Pooled {
    /// Pool the measured rounds of one case (at least one).
    pub fn of(rounds: &[Measurement]) -> Pooled {
        let mut samples = Samples::new();
        for m in rounds {
            samples.merge(&m.samples);
        }
        let duration_ns = rounds.iter().map(|m| m.duration_ns).sum();
        let round_rates: Vec<f64> = rounds.iter().map(round_rate).collect();
        let stop = if rounds.iter().any(|m| m.stop == StopReason::FileFull) {
            StopReason::FileFull
        } else if rounds.iter().all(|m| m.stop == StopReason::Converged) {
            StopReason::Converged
        } else {
            StopReason::Budget
        };
        let within = samples.ci95_rel();
        Pooled {
            predicted: prediction(&round_rates),
            drift: drift_of(rounds),
            samples,
            duration_ns,
            warmup_ops: rounds.iter().map(|m| m.warmup_ops).sum(),
            stop,
            round_rates,
            ci95_rel_within: within,
        }
    }

    /// The pooled rate: all commits over all timed time.
    pub fn rate(&self) -> f64 {
        rate(self.samples.count(), self.duration_ns)
    }

    /// The interval reported, in ops/s: the rounds' prediction interval, widened to the commits' own
    /// interval around the pooled rate when that is wider (one round, or rounds that agree exactly);
    /// `[0, 2·rate]` when neither can be computed.
    pub fn interval(&self) -> Interval {
        let centre = self.rate();
        let within = if self.ci95_rel_within.is_finite() { self.ci95_rel_within } else { 1.0 };
        let own = Interval { low: (centre * (1.0 - within)).max(0.0), high: centre * (1.0 + within) };
        match self.predicted {
            Some(p) => Interval { low: p.low.min(own.low), high: p.high.max(own.high) },
            None => own,
        }
    }

    /// [`Pooled::interval`] as one relative half-width around the pooled rate: the wider side, so
    /// `rate × (1 ± ci95_rel)` contains the whole interval (what readers of `ci95_rel` compute).
    pub fn ci95_rel(&self) -> f64 {
        self.interval().rel_to(self.rate())
    }
}

/// A 95% interval of a rate, in the rate's unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

impl Interval {
    /// The wider side relative to `centre`: `centre × (1 ± result)` contains the interval (1 when `centre`
    /// is not positive).
    pub fn rel_to(&self, centre: f64) -> f64 {
        if centre.is_nan() || centre <= 0.0 {
            return 1.0;
        }
        (1.0 - self.low / centre).max(self.high / centre - 1.0).max(0.0)
    }
}

/// Commits per second of one round.
pub fn round_rate(m: &Measurement) -> f64 {
    rate(m.samples.count(), m.duration_ns)
}

/// [`drift`] of rounds in the order they ran, from their rates and the rates of their halves.
pub fn drift_of(rounds: &[Measurement]) -> Option<String> {
    let halves: Vec<f64> = rounds.iter().flat_map(|m| m.halves.map(|(n, ns)| rate(n, ns))).collect();
    let round_rates: Vec<f64> = rounds.iter().map(round_rate).collect();
    drift(&round_rates, &halves)
}

fn rate(ops: u64, ns: u64) -> f64 {
    if ns == 0 { 0.0 } else { ops as f64 * 1e9 / ns as f64 }
}

/// The 95% prediction interval of one more round's rate from the round rates so far: on the logarithms,
/// mean ± t(n-1)·s·√(1 + 1/n), back-transformed (see the module doc for why one round and why logs). A
/// round without a rate (no commit finished) counts as no information, not as zero. None with fewer than
/// two rates.
pub fn prediction(round_rates: &[f64]) -> Option<Interval> {
    let logs: Vec<f64> = round_rates.iter().copied().filter(|r| *r > 0.0 && r.is_finite()).map(f64::ln).collect();
    let n = logs.len();
    if n < 2 {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t95(n as u64 - 1) * var.sqrt() * (1.0 + 1.0 / n as f64).sqrt();
    Some(Interval { low: (mean - half).exp(), high: (mean + half).exp() })
}

/// [`prediction`] as a relative half-width around `centre` (the wider side), for the points of `commit`.
pub fn prediction_rel(round_rates: &[f64], centre: f64) -> Option<f64> {
    Some(prediction(round_rates)?.rel_to(centre))
}

/// Rates that differ by this factor between the two sides of a change point are drift.
const DRIFT_FACTOR: f64 = 1.3;

/// Drift: the half-round rates, in time order, split at the point that separates them most; said when
/// every rate on one side is beyond every rate on the other and the sides' means differ by
/// [`DRIFT_FACTOR`] or more (each side at least three halves, so one slow round is not a change of phase).
pub fn drift(round_rates: &[f64], halves: &[f64]) -> Option<String> {
    let points: Vec<f64> = halves.iter().copied().filter(|r| *r > 0.0 && r.is_finite()).collect();
    if points.len() < 6 {
        return None;
    }
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let range = |s: &[f64]| (s.iter().copied().fold(f64::INFINITY, f64::min), s.iter().copied().fold(0.0, f64::max));
    let best = (3..=points.len() - 3)
        .filter_map(|k| {
            let (a, b) = points.split_at(k);
            let ((a_lo, a_hi), (b_lo, b_hi)) = (range(a), range(b));
            let separated = a_lo > b_hi || b_lo > a_hi;
            let factor = (mean(a) / mean(b)).max(mean(b) / mean(a));
            (separated && factor >= DRIFT_FACTOR).then_some((k, factor, mean(a), mean(b)))
        })
        .max_by(|x, y| x.1.total_cmp(&y.1))?;
    let (k, _, before, after) = best;
    let rounds = round_rates.len().max(1);
    let at = k as f64 / points.len() as f64 * rounds as f64;
    Some(format!(
        "the rate changed from {} to {} after {at:.1} of {rounds} rounds: the device changed speed during the run",
        per_s(before),
        per_s(after)
    ))
}

fn per_s(x: f64) -> String {
    if x >= 100.0 { format!("{x:.0}/s") } else { format!("{x:.1}/s") }
}

/// Results as a noisy VM gives them, for goldens: each case's rounds switch between a fast and a ~10× slower
/// regime (the 170 µs / 3.8 ms disk), and its interval is the rounds' prediction interval as `run`
/// computes it (widened to contain the pooled rate). Deterministic.
#[cfg(test)]
pub(crate) fn as_on_a_noisy_vm(results: &mut [crate::core::schema::CaseResult]) {
    const REGIMES: [f64; 5] = [1.0, 0.08, 1.3, 0.1, 0.9];
    for (k, c) in results.iter_mut().enumerate().filter(|(_, c)| c.ops_per_s > 0.0) {
        c.rounds_ops_per_s = (0..5).map(|i| c.ops_per_s * REGIMES[(k + i) % REGIMES.len()]).collect();
        let p = prediction(&c.rounds_ops_per_s).expect("five rounds");
        let interval = Interval { low: p.low.min(c.ops_per_s), high: p.high.max(c.ops_per_s) };
        (c.ops_per_s_low, c.ops_per_s_high) = (Some(interval.low), Some(interval.high));
        c.ci95_rel = interval.rel_to(c.ops_per_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(latency_ns: u64, n: u64) -> Measurement {
        let mut samples = Samples::new();
        (0..n).for_each(|_| samples.record(latency_ns));
        let half = n / 2;
        Measurement {
            samples,
            duration_ns: latency_ns * n,
            stop: StopReason::Budget,
            warmup_ops: 1,
            halves: [(half, latency_ns * half), (n - half, latency_ns * (n - half))],
            started_ns: 0,
            windows: Vec::new(),
        }
    }

    #[test]
    fn the_flag_takes_1_to_50() {
        assert_eq!(parse_flag(" 7 ").unwrap(), 7);
        for bad in ["0", "51", "-1", "x", ""] {
            assert!(parse_flag(bad).unwrap_err().to_string().contains("--rounds"), "{bad}");
        }
    }

    #[test]
    fn orders_start_with_the_plan_and_then_differ() {
        assert_eq!(order(5, 0), vec![0, 1, 2, 3, 4]);
        let orders: Vec<Vec<usize>> = (1..5).map(|r| order(12, r)).collect();
        for o in &orders {
            let mut sorted = o.clone();
            sorted.sort();
            assert_eq!(sorted, (0..12).collect::<Vec<_>>());
        }
        assert!(orders.windows(2).all(|w| w[0] != w[1]));
        assert_eq!(order(12, 3), order(12, 3), "deterministic");
        assert!(order(0, 2).is_empty());
    }

    #[test]
    fn agreeing_rounds_keep_a_narrow_interval() {
        let p = Pooled::of(&[round(1000, 100), round(1000, 100), round(1000, 100)]);
        assert_eq!(p.samples.count(), 300);
        assert_eq!(p.round_rates, vec![1e6, 1e6, 1e6]);
        let predicted = p.predicted.unwrap();
        assert!((predicted.low - 1e6).abs() < 1e-6 && (predicted.high - 1e6).abs() < 1e-6, "{predicted:?}");
        assert!(p.drift.is_none());
        assert_eq!(p.warmup_ops, 3);
    }

    #[test]
    fn spread_between_rounds_widens_the_interval_beyond_the_commits_own() {
        // Each round alone is perfectly steady (within-round CI 0), but they disagree by 2×.
        let p = Pooled::of(&[round(1000, 100), round(2000, 50), round(1000, 100), round(2000, 50)]);
        assert!(p.ci95_rel_within < 0.05, "the commits alone look precise: {}", p.ci95_rel_within);
        // ln rates: ln 1e6, ln 5e5 twice each: s = ln 2 / 2 · √(4/3), t(3) = 3.182, × √(1 + 1/4).
        let half = 3.182 * (2f64.ln() / 2.0 * (4.0f64 / 3.0).sqrt()) * 1.25f64.sqrt();
        let g = (1e6f64 * 5e5).sqrt();
        let i = p.interval();
        assert!((i.low - g / half.exp()).abs() < 1.0 && (i.high - g * half.exp()).abs() < 1.0, "{i:?}");
        // ci95_rel is the wider (upper) side around the pooled rate 300 commits / 0.4 ms = 750 000/s.
        assert!((p.rate() - 750_000.0).abs() < 1e-6);
        assert!((p.ci95_rel() - (g * half.exp() / 750_000.0 - 1.0)).abs() < 1e-9);
    }

    #[test]
    fn the_interval_covers_a_rerun_where_the_interval_of_the_mean_did_not() {
        // Recorded on the project VM (bench calibration of 2026-11-24, quiet run 2, one_write fdatasync):
        // five rounds, pooled 7091/s. Quiet re-runs of the same command minutes later measured 8356/s
        // (run 1) and 8842/s (run 5), and 7509/s, 7778/s.
        let rounds = [6921.0, 6345.0, 8331.0, 7619.0, 7547.0];
        let centre = 7091.0;
        let reruns = [8356.0, 8842.0, 7509.0, 7778.0];
        // The formula before: t(n-1)·s/√n of the rates, ±13.1%: [6160, 8020] misses 8356 and 8842.
        let n = rounds.len() as f64;
        let mean = rounds.iter().sum::<f64>() / n;
        let s = (rounds.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let old = t95(4) * s / n.sqrt() / centre;
        assert!((old - 0.131).abs() < 0.002, "{old}");
        assert!(reruns.iter().filter(|r| **r > centre * (1.0 + old)).count() == 2);
        // The prediction interval contains every re-run.
        let p = prediction(&rounds).unwrap();
        assert!(reruns.iter().all(|r| (p.low..=p.high).contains(r)), "{p:?}");
        assert!(p.low > 5000.0 && p.high < 10_500.0, "not vacuous: {p:?}");
    }

    #[test]
    fn one_round_falls_back_to_the_commits_interval() {
        let p = Pooled::of(&[round(1000, 10)]);
        assert_eq!(p.predicted, None);
        assert_eq!(p.ci95_rel(), p.ci95_rel_within);
        assert!(prediction(&[0.0, 5.0]).is_none(), "a round without commits is no information");
    }

    #[test]
    fn schedules_spread_small_plans_and_keep_fixed_ones() {
        let spread = Schedule::default_for(false);
        assert!(spread.runs_round(4, 100.0) && !spread.runs_round(5, 20.0));
        assert!(spread.runs_round(5, 19.9) && spread.runs_round(49, 0.0) && !spread.runs_round(50, 0.0));
        let fixed = Schedule::fixed(2);
        assert!(fixed.runs_round(1, 0.0) && !fixed.runs_round(2, 0.0));
        assert_eq!(Schedule::fixed(0).rounds, 1);
    }

    #[test]
    fn a_change_of_phase_is_drift_and_noise_is_not() {
        let fast_then_slow = [5000.0, 5100.0, 4900.0, 5050.0, 1900.0, 2000.0, 1950.0, 2100.0];
        let text = drift(&[5050.0, 4975.0, 1950.0, 2025.0], &fast_then_slow).unwrap();
        assert!(text.starts_with("the rate changed from 5012/s to 1988/s after 2.0 of 4 rounds"), "{text}");
        // Alternating noise of ±20%: no split separates the sides.
        assert!(drift(&[1.0; 4], &[5000.0, 4000.0, 5000.0, 4000.0, 5000.0, 4000.0, 5000.0, 4000.0]).is_none());
        // A single slow half is a stall, not a phase.
        assert!(drift(&[1.0; 3], &[5000.0, 5000.0, 5000.0, 5000.0, 5000.0, 1000.0]).is_none());
        assert!(drift(&[1.0], &[5000.0, 1000.0]).is_none());
    }
}
