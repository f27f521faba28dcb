//! Several short rounds per case instead of one block: the order of the cases changes every round, and a
//! case's uncertainty comes from the spread between its rounds as well as from its commits.
//!
//! Why: the confidence interval of one block of commits assumes they are independent draws from one
//! distribution. A device has phases (host cache destage, throttling, neighbours) lasting seconds: one
//! block measures one phase and claims ±2%, and a re-run in another phase lands 25% away. Rounds spread
//! each case over the whole run, so a phase shows as spread between rounds, and the interval — Student's t
//! over the round rates — widens to cover it. The project's bench scripts did this by hand (alternate,
//! repeat, quote the spread); `run` and `advise` now do it themselves.

use crate::runner::{Measurement, StopReason};
use crate::stats::{Samples, t95};

/// Rounds of `run` by default, and with `--quick`.
pub const DEFAULT_ROUNDS: u32 = 5;
/// `--quick` (fewer, since each round's share of 0.1 s is short).
pub const QUICK_ROUNDS: u32 = 3;

/// `--rounds N`: a whole number from 1 to 50, or a one-line usage error.
pub fn parse_flag(text: &str) -> anyhow::Result<u32> {
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=50).contains(&n) => Ok(n),
        _ => Err(crate::exit::usage(format!("invalid --rounds {text:?}: give a whole number of rounds from 1 to 50"))),
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
        state = crate::runner::splitmix64(state);
        let j = (state % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The rounds of one case, pooled: every commit counts once in the latency summary and the rate, and the
/// interval is the wider of the commits' own and the rounds'.
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
    /// Relative 95% half-width of the mean rate from the spread between rounds (None with one round).
    pub ci95_rel_between: Option<f64>,
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
        let round_rates: Vec<f64> = rounds.iter().map(|m| rate(m.samples.count(), m.duration_ns)).collect();
        let stop = if rounds.iter().any(|m| m.stop == StopReason::FileFull) {
            StopReason::FileFull
        } else if rounds.iter().all(|m| m.stop == StopReason::Converged) {
            StopReason::Converged
        } else {
            StopReason::Budget
        };
        let centre = rate(samples.count(), duration_ns);
        let within = samples.ci95_rel();
        let halves: Vec<f64> = rounds.iter().flat_map(|m| m.halves.map(|(n, ns)| rate(n, ns))).collect();
        Pooled {
            ci95_rel_between: between_rel(&round_rates, centre),
            drift: drift(&round_rates, &halves),
            samples,
            duration_ns,
            warmup_ops: rounds.iter().map(|m| m.warmup_ops).sum(),
            stop,
            round_rates,
            ci95_rel_within: within,
        }
    }

    /// The interval reported: the wider of within and between, ±100% when neither can be computed.
    pub fn ci95_rel(&self) -> f64 {
        let within = if self.ci95_rel_within.is_finite() { self.ci95_rel_within } else { 1.0 };
        self.ci95_rel_between.map_or(within, |b| b.max(within))
    }
}

fn rate(ops: u64, ns: u64) -> f64 {
    if ns == 0 { 0.0 } else { ops as f64 * 1e9 / ns as f64 }
}

/// Student's t interval of the mean of the round rates, relative to `centre`: with R rounds, t(R-1)·s/√R.
/// A round without a rate (no commit finished) counts as no information, not as zero.
pub fn between_rel(round_rates: &[f64], centre: f64) -> Option<f64> {
    let rates: Vec<f64> = round_rates.iter().copied().filter(|r| *r > 0.0 && r.is_finite()).collect();
    let n = rates.len();
    if n < 2 || centre <= 0.0 {
        return None;
    }
    let mean = rates.iter().sum::<f64>() / n as f64;
    let var = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some(t95(n as u64 - 1) * var.sqrt() / (n as f64).sqrt() / centre)
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
        assert_eq!(p.ci95_rel_between, Some(0.0));
        assert!(p.drift.is_none());
        assert_eq!(p.warmup_ops, 3);
    }

    #[test]
    fn spread_between_rounds_widens_the_interval_beyond_the_commits_own() {
        // Each round alone is perfectly steady (within-round CI 0), but they disagree by 2×.
        let p = Pooled::of(&[round(1000, 100), round(2000, 50), round(1000, 100), round(2000, 50)]);
        assert_eq!(p.ci95_rel_within, 0.0_f64.max(p.ci95_rel_within));
        let b = p.ci95_rel_between.unwrap();
        // rates 1e6, 5e5 (×2): mean 7.5e5, s = 2.887e5, t(3) = 3.182, /√4, centre = 300 commits / 0.4 ms.
        let expected = 3.182 * 288_675.13 / 2.0 / 750_000.0;
        assert!((b - expected).abs() < 1e-4, "{b} vs {expected}");
        assert!(p.ci95_rel() >= b);
    }

    #[test]
    fn one_round_falls_back_to_the_commits_interval() {
        let p = Pooled::of(&[round(1000, 10)]);
        assert_eq!(p.ci95_rel_between, None);
        assert_eq!(p.ci95_rel(), p.ci95_rel_within);
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
