//! The ratio of two measured rates with its uncertainty, and whether it is beyond noise.

use crate::core::stats::{Decision, Estimate, decide};
use serde::Serialize;

/// How a candidate compares to the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// More commits per second than the baseline, beyond the 95% interval.
    Faster,
    /// Fewer commits per second than the baseline, beyond the 95% interval.
    Slower,
    /// The 95% interval of the ratio includes 1.
    WithinNoise,
    /// One side measured a disturbed disk (a lower bound, its interval open upwards): no direction can be
    /// claimed, whatever the numbers.
    Disturbed,
    /// A side switched between latency regimes: its pooled rate mixes them, and the same regime on both
    /// sides does not say one direction (or the other side has no regimes to match).
    Undecided,
}

/// `candidate / baseline` of commits per second, with its 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Ratio {
    /// candidate ops/s ÷ baseline ops/s.
    pub ratio: f64,
    /// Half-width of the ratio's 95% confidence interval (absolute): the wider side, so `ratio ± ci95`
    /// contains `[ci95_low, ci95_high]`.
    pub ci95: f64,
    /// Lower end of the ratio's 95% confidence interval (multiplicative: always above zero).
    pub ci95_low: f64,
    /// Upper end.
    pub ci95_high: f64,
    /// Faster, slower or within noise.
    pub direction: Direction,
}

impl Ratio {
    /// The ratio of two rates whose intervals have relative 95% half-widths `baseline_ci95_rel` and
    /// `candidate_ci95_rel`, in log space: each side is `×/÷ (1 + rel)` (as [`Estimate::from_rel`]), the
    /// log half-widths of independent sides add in quadrature, and the interval is `ratio ×/÷ e^h`, never
    /// below zero (a linear `ratio ± ratio·rel` gave "-3.62–7.47×"). The direction is
    /// [`crate::core::stats::decide`] between the ratio and 1. `None` when either rate is not positive.
    pub fn of(baseline: f64, baseline_ci95_rel: f64, candidate: f64, candidate_ci95_rel: f64) -> Option<Ratio> {
        if !(baseline > 0.0 && candidate > 0.0 && baseline.is_finite() && candidate.is_finite()) {
            return None;
        }
        let ratio = candidate / baseline;
        let half = clean(baseline_ci95_rel).ln_1p().hypot(clean(candidate_ci95_rel).ln_1p());
        let (ci95_low, ci95_high) = (ratio / half.exp(), ratio * half.exp());
        let ci95 = (ratio - ci95_low).max(ci95_high - ratio);
        let direction = match decide(&Estimate::new(ratio, ci95_low, ci95_high), &Estimate::new(1.0, 1.0, 1.0)) {
            Decision::AFaster(_) => Direction::Faster,
            Decision::BFaster(_) => Direction::Slower,
            Decision::Undecided => Direction::WithinNoise,
        };
        Some(Ratio { ratio, ci95, ci95_low, ci95_high, direction })
    }

    /// The ratio with its interval, as [`Estimate`] prints it.
    pub fn estimate(&self) -> Estimate {
        Estimate::new(self.ratio, self.ci95_low, self.ci95_high)
    }

    /// This ratio with one side a lower bound (`which`: the file's letter): no direction.
    pub fn disturbed(self) -> Ratio {
        Ratio { direction: Direction::Disturbed, ..self }
    }

    /// How much faster or slower, as people say it: `faster: 1.42× ±3.6%`, `slower: 1.30× ±2.9%` (slower is
    /// the inverse ratio, so both read as "× the speed"), `within noise: 1.03× ±4.3%`, and wide ones as a
    /// range: `within noise: 1.9×, 95% interval 0.31–12×`.
    pub fn describe(&self) -> String {
        let two = |x: f64| format!("{x:.2}");
        match self.direction {
            Direction::Faster => format!("faster: {}", self.estimate().text(two, "×", "95% interval")),
            Direction::Slower => {
                let inverse = Estimate::new(1.0 / self.ratio, 1.0 / self.ci95_high, 1.0 / self.ci95_low);
                format!("slower: {}", inverse.text(two, "×", "95% interval"))
            }
            Direction::WithinNoise => format!("within noise: {}", self.estimate().text(two, "×", "95% interval")),
            Direction::Disturbed => format!("not compared: a side was disturbed ({:.2}×, a bound)", self.ratio),
            Direction::Undecided => format!("cannot decide: latency regimes ({:.2}× pooled, mixing them)", self.ratio),
        }
    }
}

/// A missing or nonsensical interval counts as zero: the comparison then shows the bare ratio.
fn clean(ci95_rel: f64) -> f64 {
    if ci95_rel.is_finite() && ci95_rel > 0.0 { ci95_rel } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faster_beyond_noise() {
        let r = Ratio::of(1000.0, 0.02, 1420.0, 0.03).unwrap();
        assert_eq!(r.direction, Direction::Faster);
        assert!((r.ratio - 1.42).abs() < 1e-12);
        let half = 0.02f64.ln_1p().hypot(0.03f64.ln_1p());
        assert!((r.ci95_high - 1.42 * half.exp()).abs() < 1e-12 && (r.ci95_low - 1.42 / half.exp()).abs() < 1e-12);
        assert!((r.ci95 - (r.ci95_high - 1.42)).abs() < 1e-12);
        assert_eq!(r.describe(), "faster: 1.42× ±3.6%");
    }

    #[test]
    fn slower_is_written_as_the_inverse() {
        let r = Ratio::of(1300.0, 0.02, 1000.0, 0.02).unwrap();
        assert_eq!(r.direction, Direction::Slower);
        assert_eq!(r.describe(), "slower: 1.30× ±2.8%");
    }

    #[test]
    fn an_interval_that_includes_one_is_within_noise() {
        let r = Ratio::of(1000.0, 0.03, 1030.0, 0.03).unwrap();
        assert_eq!(r.direction, Direction::WithinNoise);
        assert_eq!(r.describe(), "within noise: 1.03× ±4.3%");
    }

    #[test]
    fn very_noisy_sides_read_as_a_range() {
        let r = Ratio::of(2600.0, 0.18, 172.0, 1.76).unwrap();
        assert_eq!(r.describe(), "slower: 15.12×, 95% interval 5.4–42×");
    }

    /// Issue #33: "95% interval -3.62–7.47×". Wide sides widen the interval multiplicatively: it never
    /// reaches zero, and it includes 1, so no direction is claimed.
    #[test]
    fn a_ratio_interval_never_goes_negative() {
        for (a_rel, b_rel) in [(2.0, 1.5), (100.0, 0.01), (1e6, 1e6)] {
            let r = Ratio::of(1000.0, a_rel, 1925.0, b_rel).unwrap();
            assert!(r.ci95_low > 0.0 && r.ci95_low < r.ratio && r.ci95_high > r.ratio, "{r:?}");
            assert_eq!(r.direction, Direction::WithinNoise);
            assert!(!r.describe().contains('-') && !r.describe().contains('±'), "{}", r.describe());
        }
        // The linear interval it replaces went below zero: the planted bug this test catches.
        let linear_low = 1.925 * (1.0 - 2.0f64.hypot(1.5));
        assert!(linear_low < 0.0);
    }

    #[test]
    fn without_intervals_any_difference_counts() {
        let r = Ratio::of(1000.0, f64::NAN, 1001.0, -1.0).unwrap();
        assert_eq!(r.ci95, 0.0);
        assert_eq!(r.direction, Direction::Faster);
    }

    #[test]
    fn nothing_to_divide_gives_none() {
        assert!(Ratio::of(0.0, 0.01, 10.0, 0.01).is_none());
        assert!(Ratio::of(10.0, 0.01, 0.0, 0.01).is_none());
    }
}
