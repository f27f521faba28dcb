//! The ratio of two measured rates with its uncertainty, and whether it is beyond noise.

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
}

/// `candidate / baseline` of commits per second, with the half-width of its 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Ratio {
    /// candidate ops/s ÷ baseline ops/s.
    pub ratio: f64,
    /// Half-width of the ratio's 95% confidence interval (absolute).
    pub ci95: f64,
    /// Faster, slower or within noise.
    pub direction: Direction,
}

impl Ratio {
    /// The ratio of two rates whose means have relative 95% half-widths `baseline_ci95_rel` and
    /// `candidate_ci95_rel`. Relative errors of independent quotients add in quadrature (first-order
    /// propagation; the rate is the inverse of the mean latency and has the same relative error).
    /// `None` when either rate is not positive.
    pub fn of(baseline: f64, baseline_ci95_rel: f64, candidate: f64, candidate_ci95_rel: f64) -> Option<Ratio> {
        if !(baseline > 0.0 && candidate > 0.0 && baseline.is_finite() && candidate.is_finite()) {
            return None;
        }
        let ratio = candidate / baseline;
        let rel = clean(baseline_ci95_rel).hypot(clean(candidate_ci95_rel));
        let ci95 = ratio * rel;
        let direction = if ratio - ci95 > 1.0 {
            Direction::Faster
        } else if ratio + ci95 < 1.0 {
            Direction::Slower
        } else {
            Direction::WithinNoise
        };
        Some(Ratio { ratio, ci95, direction })
    }

    /// This ratio with one side a lower bound (`which`: the file's letter): no direction.
    pub fn disturbed(self) -> Ratio {
        Ratio { direction: Direction::Disturbed, ..self }
    }

    /// How much faster or slower, as people say it: `1.42 ± 0.05× faster`, `1.30 ± 0.04× slower`
    /// (slower is the inverse ratio, so both read as "× the speed"), `within noise (1.01 ± 0.03×)`.
    pub fn describe(&self) -> String {
        let text = self.describe_ratio();
        if self.ci95 / self.ratio > WIDE_INTERVAL_REL { format!("{text}, wide interval") } else { text }
    }

    fn describe_ratio(&self) -> String {
        match self.direction {
            Direction::Faster => format!("{:.2} ± {:.2}× faster", self.ratio, self.ci95),
            Direction::Slower => {
                let inverse = 1.0 / self.ratio;
                // d(1/r) = dr / r², so the relative error stays the same.
                format!("{:.2} ± {:.2}× slower", inverse, inverse * self.ci95 / self.ratio)
            }
            Direction::WithinNoise => format!("within noise ({:.2} ± {:.2}×)", self.ratio, self.ci95),
            Direction::Disturbed => format!("not compared: a side was disturbed ({:.2}×, a bound)", self.ratio),
        }
    }
}

/// Beyond ±50 % relative, first-order propagation understates the interval: the text says so.
const WIDE_INTERVAL_REL: f64 = 0.5;

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
        assert!((r.ci95 - 1.42 * (0.02f64.hypot(0.03))).abs() < 1e-12);
        assert_eq!(r.describe(), "1.42 ± 0.05× faster");
    }

    #[test]
    fn slower_is_written_as_the_inverse() {
        let r = Ratio::of(1300.0, 0.02, 1000.0, 0.02).unwrap();
        assert_eq!(r.direction, Direction::Slower);
        assert_eq!(r.describe(), "1.30 ± 0.04× slower");
    }

    #[test]
    fn an_interval_that_includes_one_is_within_noise() {
        let r = Ratio::of(1000.0, 0.03, 1030.0, 0.03).unwrap();
        assert_eq!(r.direction, Direction::WithinNoise);
        assert_eq!(r.describe(), "within noise (1.03 ± 0.04×)");
    }

    #[test]
    fn very_noisy_sides_are_flagged() {
        let r = Ratio::of(2600.0, 0.18, 172.0, 1.76).unwrap();
        assert!(r.describe().ends_with("× slower, wide interval"), "{}", r.describe());
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
