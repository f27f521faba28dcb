//! Statistics of one case's commit latencies: exact mean/stddev/min/max, percentiles from an HDR
//! histogram, the 95% confidence interval of the mean, outliers, and exact log2 buckets.
//!
//! [`Samples`] is syncbench's one latency recorder and [`LatencyNs`] (from [`Samples::latency`]) its one
//! latency summary: `run`, `commit`, `pages`, `probe`, `trace`, `powercut`, the block-request accounting and
//! the lab's device model all record with it, so a `latency_ns` means the same in every payload.
//!
//! Recording a sample is O(1), allocation-free and division-free (integer sums of the samples shifted by
//! the first one: exact, and free of the cancellation of a naive sum of squares), because it runs once
//! per commit between two clock reads.

use crate::core::schema::{LatencyNs, Log2Bucket};
use hdrhistogram::Histogram;

/// Largest latency the histogram tracks exactly (one hour); slower commits are clamped for percentiles only.
const HIGHEST_TRACKABLE_NS: u64 = 3_600_000_000_000;

/// Latencies of one case (commits, calls, requests), in nanoseconds.
///
/// What the summary means, in every payload:
/// - `min`, `max`, `mean` and `stddev` are exact: the sample standard deviation (n − 1), 0 below two samples;
/// - a percentile `pQ` is the nearest rank: the ⌈Q/100 · n⌉-th smallest latency (at least the first),
///   reported as the upper edge of its HDR histogram bucket (3 significant digits: at most 0.1 % above the
///   sample) and clamped into `[min, max]`. A latency over an hour counts as one hour for percentiles only;
/// - every field is 0 when nothing was recorded.
#[derive(Clone, Debug)]
pub struct Samples {
    histogram: Histogram<u64>,
    count: u64,
    /// The first sample: every later one is summed as a deviation from it.
    shift_ns: u64,
    /// Σ (x - shift).
    sum_dev: i128,
    /// Σ (x - shift)².
    sum_dev_sq: u128,
    min_ns: u64,
    max_ns: u64,
    log2_counts: [u64; 64],
}

impl Default for Samples {
    fn default() -> Self {
        Samples::new()
    }
}

impl Samples {
    /// No samples yet. Percentiles keep 3 significant digits (0.1% error). The histogram grows to the
    /// largest latency recorded (16 KiB to start, 120 KiB for 10 ms, 264 KiB for an hour) rather than being
    /// allocated for an hour up front: `trace` keeps one per file and call. Growing happens outside the
    /// timed interval (after the clock read) and at most once per power of two.
    pub fn new() -> Samples {
        let mut histogram = Histogram::new_with_bounds(1, 2, 3).expect("static histogram bounds");
        histogram.auto(true);
        Samples {
            histogram,
            count: 0,
            shift_ns: 0,
            sum_dev: 0,
            sum_dev_sq: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            log2_counts: [0; 64],
        }
    }

    /// Add one commit latency.
    pub fn record(&mut self, latency_ns: u64) {
        let clamped = latency_ns.clamp(1, HIGHEST_TRACKABLE_NS);
        // Growing fails only when the counts would not fit in memory, which an hour cannot reach.
        if self.histogram.record(clamped).is_err() {
            self.histogram.saturating_record(clamped);
        }
        if self.count == 0 {
            self.shift_ns = latency_ns;
        }
        self.count += 1;
        // u64 × u64 → u128 is one multiply instruction (a full i128 square is several).
        let (dev_abs, below) = match latency_ns.checked_sub(self.shift_ns) {
            Some(d) => (d, false),
            None => (self.shift_ns - latency_ns, true),
        };
        self.sum_dev += if below { -i128::from(dev_abs) } else { i128::from(dev_abs) };
        self.sum_dev_sq += u128::from(dev_abs) * u128::from(dev_abs);
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
        self.log2_counts[log2_index(latency_ns)] += 1;
    }

    /// Add every sample of `other` (the per-thread samples of one measurement, merged): the same result as
    /// recording them all here.
    pub fn merge(&mut self, other: &Samples) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        self.histogram.add(&other.histogram).expect("both grow to what they hold: one hour at most");
        // Re-centre the other's sums on this shift: Σ(x - s) = Σ(x - s') + n·d and
        // Σ(x - s)² = Σ(x - s')² + 2d·Σ(x - s') + n·d², with d = s' - s.
        let d = i128::from(other.shift_ns) - i128::from(self.shift_ns);
        let n = i128::from(other.count);
        self.sum_dev += other.sum_dev + n * d;
        let sq = other.sum_dev_sq as i128 + 2 * d * other.sum_dev + n * d * d;
        self.sum_dev_sq += sq as u128;
        self.count += other.count;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        for (mine, theirs) in self.log2_counts.iter_mut().zip(other.log2_counts) {
            *mine += theirs;
        }
    }

    /// Samples of the given latencies.
    pub fn of(latencies_ns: &[u64]) -> Samples {
        let mut samples = Samples::new();
        latencies_ns.iter().for_each(|&ns| samples.record(ns));
        samples
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact sum of the samples in ns (saturating at `u64::MAX`, some 584 years).
    pub fn sum_ns(&self) -> u64 {
        let sum = i128::from(self.count) * i128::from(self.shift_ns) + self.sum_dev;
        u64::try_from(sum).unwrap_or(u64::MAX)
    }

    /// Arithmetic mean in ns (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 { 0.0 } else { self.shift_ns as f64 + self.sum_dev as f64 / self.count as f64 }
    }

    /// Sample standard deviation (n-1) in ns; 0 with fewer than two samples.
    pub fn stddev_ns(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let sum = self.sum_dev as f64;
        ((self.sum_dev_sq as f64 - sum * sum / n) / (n - 1.0)).max(0.0).sqrt()
    }

    /// Half-width of the 95% confidence interval of the mean, relative to the mean (Student's t).
    /// Infinite with fewer than two samples, so an adaptive stop can never trigger on too little data.
    pub fn ci95_rel(&self) -> f64 {
        let mean = self.mean_ns();
        if self.count < 2 || mean <= 0.0 {
            return f64::INFINITY;
        }
        let half_width = t95(self.count - 1) * self.stddev_ns() / (self.count as f64).sqrt();
        half_width / mean
    }

    /// The latency at quantile `q` (0..=1), in ns; 0 when empty.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        // Clamp into [min, max]: the histogram reports bucket edges that can lie just outside them.
        self.histogram.value_at_quantile(q).clamp(self.min_ns, self.max_ns)
    }

    /// min/mean/p50/p90/p99/p99.9/max/stddev.
    pub fn latency(&self) -> LatencyNs {
        if self.count == 0 {
            return LatencyNs::default();
        }
        LatencyNs {
            min: self.min_ns,
            mean: self.mean_ns(),
            p50: self.quantile_ns(0.50),
            p90: self.quantile_ns(0.90),
            p99: self.quantile_ns(0.99),
            p999: self.quantile_ns(0.999),
            max: self.max_ns,
            stddev: self.stddev_ns(),
        }
    }

    /// Fraction of commits slower than `p50 + 10 × (p90 - p50)`: stalls far outside the usual spread
    /// (a robust fence that, unlike mean+3σ, the stalls themselves cannot widen).
    pub fn outlier_fraction(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let p50 = self.quantile_ns(0.50);
        let p90 = self.quantile_ns(0.90);
        let fence = p50 + 10 * (p90 - p50).max(p50 / 100);
        let above: u64 =
            self.histogram.iter_recorded().filter(|v| v.value_iterated_to() > fence).map(|v| v.count_at_value()).sum();
        above as f64 / self.count as f64
    }

    /// Non-empty log2 buckets, fastest first: `lower_ns <= latency < 2 * lower_ns` (bucket 0 holds 0 and 1 ns).
    pub fn log2_buckets(&self) -> Vec<Log2Bucket> {
        self.log2_counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| Log2Bucket { lower_ns: if i == 0 { 0 } else { 1u64 << i }, count: *c })
            .collect()
    }
}

/// Index of the log2 bucket holding `ns` (0 and 1 share bucket 0).
fn log2_index(ns: u64) -> usize {
    if ns <= 1 { 0 } else { 63 - ns.leading_zeros() as usize }
}

/// Two-sided 95% quantile of Student's t with `df` degrees of freedom: tabulated to 30, then the
/// Cornish-Fisher expansion around the normal quantile (within 0.0005 of the exact value from 30 on; the
/// steps used before were up to 1% off, e.g. 2.021 for df 60 where the quantile is 2.000).
pub fn t95(df: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    const Z: f64 = 1.959_963_985; // the normal distribution's two-sided 95% quantile
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df as usize - 1],
        _ => {
            let v = df as f64;
            let (z3, z5, z7) = (Z.powi(3), Z.powi(5), Z.powi(7));
            Z + (z3 + Z) / (4.0 * v)
                + (5.0 * z5 + 16.0 * z3 + 3.0 * Z) / (96.0 * v * v)
                + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * Z) / (384.0 * v * v * v)
        }
    }
}

/// Up to this relative half-width an interval is printed as `±N%`. Wider, it is printed as a range or a
/// factor: the intervals are multiplicative (`[g/f, g·f]`), so a ± above 100% would reach below zero,
/// and one of 50–100% hides how lopsided the interval is.
pub const PLUS_MINUS_MAX: f64 = 0.5;
/// A factor beyond which the compact form stops counting (`×/÷ >1000`): the interval says nothing more.
pub const FACTOR_SHOWN_MAX: f64 = 1000.0;

/// A positive quantity (a rate, a ratio of rates) with its 95% interval, as every command prints it:
/// [`Estimate::text`] in sentences, [`Estimate::column`] in tables, [`decide`] to name a winner. The
/// interval's values are what the measurement computed; only how they are shown is decided here.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The value printed (a pooled rate, a ratio).
    pub value: f64,
    /// Lower end of the interval (≥ 0).
    pub low: f64,
    /// Upper end (infinite when the interval is open upwards: a disturbed lower bound).
    pub high: f64,
}

/// Which of two estimates is larger, or that their intervals cannot say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    /// The first is larger by this factor of the values (> 1).
    AFaster(f64),
    /// The second is larger by this factor of the values (> 1).
    BFaster(f64),
    /// The intervals overlap (or a value is missing): no winner can be named.
    Undecided,
}

impl Estimate {
    /// `value` with the interval `[low, high]`, put in order around `value` and never below zero.
    pub fn new(value: f64, low: f64, high: f64) -> Estimate {
        let value = if value.is_finite() { value.max(0.0) } else { 0.0 };
        let low = if low.is_nan() { 0.0 } else { low.clamp(0.0, value) };
        let high = if high.is_nan() { f64::INFINITY } else { high.max(value) };
        Estimate { value, low, high }
    }

    /// `value` known to a relative half-width `rel`, taken multiplicatively: `[value/(1+rel), value·(1+rel)]`.
    /// For quantities recorded with a relative half-width only (files from before `ops_per_s_low`,
    /// compare's ratios): the upper end is the recorded one, and the lower never reaches zero or below.
    pub fn from_rel(value: f64, rel: f64) -> Estimate {
        let rel = if rel.is_finite() { rel.max(0.0) } else { f64::INFINITY };
        Estimate::new(value, value / (1.0 + rel), value * (1.0 + rel))
    }

    /// The same estimate, open upwards (a disturbed lower bound: a disturbance only slows syncs).
    pub fn open_upwards(self) -> Estimate {
        Estimate { high: f64::INFINITY, ..self }
    }

    /// The ± around the value that contains the interval (its wider side, relative).
    pub fn plus_minus(&self) -> f64 {
        if self.value <= 0.0 {
            return f64::INFINITY;
        }
        (1.0 - self.low / self.value).max(self.high / self.value - 1.0)
    }

    /// The factor `f` for which `[value/f, value·f]` contains the interval (infinite with a zero end).
    pub fn factor(&self) -> f64 {
        if self.value <= 0.0 || self.low <= 0.0 {
            return f64::INFINITY;
        }
        (self.value / self.low).max(self.high / self.value)
    }

    /// Narrow enough to print as `±N%` ([`PLUS_MINUS_MAX`]).
    pub fn reads_as_plus_minus(&self) -> bool {
        self.plus_minus() <= PLUS_MINUS_MAX
    }

    /// For a table column: `±3.2%`, `±34%`, or wider, the factor `×/÷ 16` (`×/÷ >1000` beyond that).
    pub fn column(&self) -> String {
        if self.reads_as_plus_minus() {
            return format!("±{}", percent(self.plus_minus()));
        }
        let f = self.factor();
        if f > FACTOR_SHOWN_MAX {
            format!("×/÷ >{}", grouped(FACTOR_SHOWN_MAX))
        } else {
            format!("×/÷ {}", sig2(f))
        }
    }

    /// For a sentence: `893/s ±3.2%`, or wider, `893/s, re-run 60–13,000/s` (`what` = "re-run"), and past
    /// [`FACTOR_SHOWN_MAX`] `893/s, re-run ×/÷ >1,000` (ends like 0.00000000027–2,100,000,000,000,000/s
    /// say nothing more). `number` formats the value; `unit` follows the value and the range (`/s`, `×`).
    pub fn text(&self, number: impl Fn(f64) -> String, unit: &str, what: &str) -> String {
        let value = format!("{}{unit}", number(self.value));
        if self.reads_as_plus_minus() {
            return format!("{value} ±{}", percent(self.plus_minus()));
        }
        // Past ×/÷ 1000 on either side (a zero lower end counts when the upper one is that far too).
        let beyond = self.high / self.value > FACTOR_SHOWN_MAX || (self.low > 0.0 && self.factor() > FACTOR_SHOWN_MAX);
        if self.high.is_finite() && beyond {
            return format!("{value}, {what} ×/÷ >{}", grouped(FACTOR_SHOWN_MAX));
        }
        let high = if self.high.is_finite() { sig2(self.high) } else { "unbounded".to_string() };
        format!("{value}, {what} {}–{high}{unit}", sig2(self.low))
    }
}

/// The one rule for naming a winner: `a` is faster when its whole interval lies above `b`'s, and the
/// other way round; intervals that overlap decide nothing, however far apart the values are.
pub fn decide(a: &Estimate, b: &Estimate) -> Decision {
    if !(a.value > 0.0 && b.value > 0.0) {
        Decision::Undecided
    } else if a.low > b.high {
        Decision::AFaster(a.value / b.value)
    } else if b.low > a.high {
        Decision::BFaster(b.value / a.value)
    } else {
        Decision::Undecided
    }
}

impl crate::core::schema::CaseResult {
    /// The case's commits/s with the interval in which a re-run is expected: `ops_per_s_low`/`_high` when
    /// recorded, else `ci95_rel` taken multiplicatively; open upwards when the case is a lower bound.
    pub fn estimate(&self) -> Estimate {
        let estimate = match (self.ops_per_s_low, self.ops_per_s_high) {
            (Some(low), Some(high)) => Estimate::new(self.ops_per_s, low, high),
            (Some(low), None) => Estimate::new(self.ops_per_s, low, f64::INFINITY),
            _ => Estimate::from_rel(self.ops_per_s, self.ci95_rel),
        };
        if self.lower_bound { estimate.open_upwards() } else { estimate }
    }

    /// The case's commits/s as every answer quotes it: `5030/s ±3.0%`, `893/s, re-run 60–13,000/s`, or
    /// for a disturbed lower bound `≥ 2100/s (disturbed)`: the rate it measured, which a disturbance only
    /// lowers, so the disk does at least that — the number the tables show with their `≥`, not the low end
    /// of where a re-run under other disturbances may land (which comparisons use).
    pub fn rate_text(&self) -> String {
        let number = |x: f64| if x >= 100.0 { format!("{x:.0}") } else { format!("{x:.1}") };
        if self.lower_bound {
            return format!("≥ {}/s (disturbed)", number(self.ops_per_s));
        }
        self.estimate().text(number, "/s", "re-run")
    }
}

/// `3.2%` below 10%, `34%` above.
fn percent(rel: f64) -> String {
    let pct = rel.max(0.0) * 100.0;
    if pct < 9.95 { format!("{pct:.1}%") } else { format!("{pct:.0}%") }
}

/// Two significant digits, thousands grouped: `0.31`, `4.1`, `60`, `13,000`.
pub fn sig2(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        return if x == 0.0 { "0".to_string() } else { format!("{x}") };
    }
    let digits = x.log10().floor() as i32;
    let step = 10f64.powi(digits - 1);
    let rounded = (x / step).round() * step;
    if rounded >= 100.0 {
        grouped(rounded)
    } else {
        let decimals = (1 - rounded.log10().floor() as i32).max(0) as usize;
        format!("{rounded:.decimals$}")
    }
}

/// An integer with thousands separators: `13,000`.
fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Every `±N%` printed in `text`, as N: none may exceed 100.
#[cfg(test)]
pub(crate) fn printed_plus_minus(text: &str) -> Vec<f64> {
    text.split('±').skip(1).filter_map(|rest| rest.split('%').next()?.trim().parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn from(values: &[u64]) -> Samples {
        let mut s = Samples::new();
        values.iter().for_each(|v| s.record(*v));
        s
    }

    #[test]
    fn empty_is_all_zero_and_never_converged() {
        let s = Samples::new();
        assert_eq!(s.latency(), LatencyNs::default());
        assert!(s.ci95_rel().is_infinite());
        assert!(s.log2_buckets().is_empty());
        assert_eq!(s.outlier_fraction(), 0.0);
    }

    #[test]
    fn known_values() {
        let s = from(&[100, 200, 300, 400, 500]);
        let l = s.latency();
        assert_eq!((l.min, l.max), (100, 500));
        assert!((l.mean - 300.0).abs() < 1e-9);
        assert!((l.stddev - 158.113_883).abs() < 1e-3);
        assert_eq!(l.p50, 300);
        assert_eq!(s.sum_ns(), 1500);
        // t(4) = 2.776: 2.776 * 158.11 / sqrt(5) / 300
        assert!((s.ci95_rel() - 0.654_3).abs() < 1e-3, "{}", s.ci95_rel());
    }

    /// The documented definition: the ⌈q·n⌉-th smallest sample (values under 2048 are exact in the
    /// histogram), not an interpolation (which would give 5.5 for the median of 1..=10).
    #[test]
    fn percentiles_are_nearest_rank() {
        let l = from(&(1..=10).collect::<Vec<_>>()).latency();
        assert_eq!((l.p50, l.p90, l.p99, l.p999), (5, 9, 10, 10));
        let l = from(&(1..=1000).rev().collect::<Vec<_>>()).latency();
        assert_eq!((l.min, l.p50, l.p90, l.p99, l.p999, l.max), (1, 500, 900, 990, 999, 1000));
        // Above 2048 the bucket's upper edge, within 0.1 %, never past the exact max.
        let l = from(&[3_000_000, 3_000_000, 5_000_000]).latency();
        assert!(l.p50 > 3_000_000 && l.p50 <= 3_003_000, "{l:?}");
        assert_eq!(l.p99, 5_000_000);
    }

    /// Past an hour a latency counts as an hour for percentiles only: min, max and mean stay exact.
    #[test]
    fn an_hour_long_stall_is_clamped_for_percentiles_only() {
        const HOUR: u64 = 3_600_000_000_000;
        let l = from(&[1000, 2 * HOUR, 2 * HOUR]).latency();
        assert!(l.p99 >= HOUR && l.p99 <= HOUR + HOUR / 1000, "{l:?}");
        assert_eq!((l.min, l.max), (1000, 2 * HOUR));
        assert!((l.mean - (1000 + 4 * HOUR) as f64 / 3.0).abs() < 1.0, "{l:?}");
    }

    #[test]
    fn log2_buckets_like_quantize() {
        let s = from(&[0, 1, 2, 3, 4, 7, 8, 1000]);
        let b = s.log2_buckets();
        let pairs: Vec<(u64, u64)> = b.iter().map(|b| (b.lower_ns, b.count)).collect();
        assert_eq!(pairs, vec![(0, 2), (2, 2), (4, 2), (8, 1), (512, 1)]);
    }

    #[test]
    fn a_stall_is_an_outlier() {
        let mut values = vec![1000u64; 999];
        values.extend([1100, 1_000_000]);
        let s = from(&values);
        let f = s.outlier_fraction();
        assert!(f > 0.0 && f < 0.002, "{f}");
        assert_eq!(from(&[1000; 100]).outlier_fraction(), 0.0);
    }

    /// P(|T| < x) for Student's t with `df` degrees of freedom, by Simpson's rule on θ = atan(x / √df),
    /// where the density becomes cos^(df-1) θ (no gamma function needed): an independent check of the table.
    fn t_two_sided_coverage(x: f64, df: u64) -> f64 {
        let integral = |upper: f64| {
            let n = 20_000;
            let h = upper / n as f64;
            let f = |theta: f64| theta.cos().powi(df as i32 - 1);
            let inner: f64 = (1..n).map(|i| f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 }).sum();
            (f(0.0) + inner + f(upper)) * h / 3.0
        };
        integral((x / (df as f64).sqrt()).atan()) / integral(std::f64::consts::FRAC_PI_2)
    }

    /// The exact two-sided 95% quantile, by bisection on the coverage.
    fn t95_exact(df: u64) -> f64 {
        let (mut lo, mut hi) = (1.0, 20.0);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if t_two_sided_coverage(mid, df) < 0.95 { lo = mid } else { hi = mid }
        }
        (lo + hi) / 2.0
    }

    #[test]
    fn t95_is_the_exact_quantile_for_every_df() {
        // Every tabulated value to its three printed decimals: a mistyped digit fails here.
        for df in 1..=30 {
            let exact = t95_exact(df);
            assert!((t95(df) - exact).abs() < 0.0006, "df {df}: table {} exact {exact:.4}", t95(df));
        }
        // Past the table, the expansion.
        for df in [31, 40, 45, 60, 61, 90, 119, 120, 200, 1000, 100_000] {
            let exact = t95_exact(df);
            assert!((t95(df) - exact).abs() < 0.0005, "df {df}: {} vs exact {exact:.4}", t95(df));
        }
        assert!(t95(0).is_infinite());
    }

    #[test]
    fn merged_samples_equal_samples_recorded_in_one_place() {
        let (a, b) = ([5_000u64, 7_000, 1_000_000, 3], [40u64, 90_000, 12, 6_000_000, 7_000]);
        let mut merged = from(&a);
        merged.merge(&from(&b));
        merged.merge(&Samples::new());
        let all = from(&[&a[..], &b[..]].concat());
        assert_eq!(merged.latency(), all.latency());
        assert_eq!(merged.count(), 9);
        assert_eq!(merged.sum_ns(), a.iter().chain(&b).sum::<u64>());
        assert_eq!(merged.log2_buckets(), all.log2_buckets());
        assert!((merged.stddev_ns() - all.stddev_ns()).abs() < 1e-6);
        let mut empty = Samples::new();
        empty.merge(&from(&b));
        assert_eq!(empty.latency(), from(&b).latency());
    }

    fn per_s(x: f64) -> String {
        format!("{x:.0}")
    }

    #[test]
    fn narrow_intervals_read_as_plus_minus_and_wide_ones_as_a_range_or_a_factor() {
        let narrow = Estimate::new(5030.0, 4870.0, 5190.0);
        assert_eq!(narrow.column(), "±3.2%");
        assert_eq!(narrow.text(per_s, "/s", "re-run"), "5030/s ±3.2%");
        // Exactly at the threshold still a ±; just past it a factor.
        assert_eq!(Estimate::new(100.0, 80.0, 150.0).column(), "±50%");
        assert_eq!(Estimate::new(100.0, 80.0, 151.0).column(), "×/÷ 1.5");
        // The run: 893/s, re-run 60–13,000/s, never "±1532%".
        let wide = Estimate::new(893.0, 60.0, 13_000.0);
        assert_eq!(wide.text(per_s, "/s", "re-run"), "893/s, re-run 60–13,000/s");
        assert_eq!(wide.column(), "×/÷ 15");
        // ±84,946,912% as a factor: beyond counting.
        let absurd = Estimate::from_rel(43.7, 849_469.121);
        assert_eq!(absurd.column(), "×/÷ >1,000");
        assert_eq!(absurd.text(|x| format!("{x:.1}"), "/s", "re-run"), "43.7/s, re-run ×/÷ >1,000");
        // A zero lower end is still a readable range, unless the upper end is beyond counting too (seen under
        // load: "158/s, re-run 0–860,000,000,000,000,099,388,227,584/s").
        assert_eq!(Estimate::new(10.0, 0.0, 25.0).text(per_s, "/s", "re-run"), "10/s, re-run 0–25/s");
        assert_eq!(Estimate::new(158.0, 0.0, 8.6e26).text(per_s, "/s", "re-run"), "158/s, re-run ×/÷ >1,000");
        // A zero lower end (the within-round interval of a handful of commits) and an open upper end.
        assert_eq!(Estimate::new(10.0, 0.0, 25.0).column(), "×/÷ >1,000");
        assert_eq!(
            Estimate::new(10.0, 4.0, 25.0).open_upwards().text(per_s, "/s", "re-run"),
            "10/s, re-run 4.0–unbounded/s"
        );
    }

    #[test]
    fn significant_digits_and_grouping() {
        let shown: Vec<String> = [0.31234, 4.14, 59.7, 893.0, 12_960.0, 1_234_567.0, 0.0].map(sig2).to_vec();
        assert_eq!(shown, ["0.31", "4.1", "60", "890", "13,000", "1,200,000", "0"]);
    }

    #[test]
    fn a_relative_half_width_never_makes_a_negative_end() {
        for rel in [0.0, 0.5, 1.0, 3.62, 1e6, f64::INFINITY, f64::NAN] {
            let e = Estimate::from_rel(2.0, rel);
            assert!(e.low >= 0.0 && e.low <= e.value && e.high >= e.value, "{rel}: {e:?}");
            assert!(!e.text(|x| format!("{x:.2}"), "×", "95% interval").contains('-'), "{rel}: {e:?}");
        }
    }

    #[test]
    fn overlapping_intervals_decide_nothing() {
        let a = Estimate::new(1362.0, 2.0, 970_000.0);
        let b = Estimate::new(396.0, 43.0, 3600.0);
        assert_eq!(decide(&a, &b), Decision::Undecided);
        let (fast, slow) = (Estimate::new(1000.0, 900.0, 1100.0), Estimate::new(500.0, 450.0, 550.0));
        assert_eq!(decide(&fast, &slow), Decision::AFaster(2.0));
        assert_eq!(decide(&slow, &fast), Decision::BFaster(2.0));
        // Touching ends decide nothing; an open upper end can always be the faster one.
        assert_eq!(decide(&Estimate::new(1000.0, 550.0, 1100.0), &slow), Decision::Undecided);
        assert_eq!(decide(&fast, &slow.open_upwards()), Decision::Undecided);
        assert_eq!(decide(&fast, &Estimate::new(0.0, 0.0, 0.0)), Decision::Undecided);
    }

    /// A planted bug for the decision's test: deciding by the values alone names the winner the rule refuses.
    #[test]
    fn deciding_by_values_alone_would_fail_the_overlap_test() {
        let by_value = |a: &Estimate, b: &Estimate| {
            if a.value > b.value { Decision::AFaster(a.value / b.value) } else { Decision::Undecided }
        };
        let (a, b) = (Estimate::new(1362.0, 2.0, 970_000.0), Estimate::new(396.0, 43.0, 3600.0));
        assert_ne!(by_value(&a, &b), decide(&a, &b));
    }

    proptest! {
        /// Wider intervals never print narrower: the shown ± or factor grows with the interval, and no
        /// ± above 100% is ever printed.
        #[test]
        fn shown_width_grows_with_the_interval(value in 1.0f64..1e6, a in 0.0f64..20.0, b in 0.0f64..20.0) {
            let (small, large) = (a.min(b), a.max(b));
            let shown = |rel: f64| {
                let e = Estimate::from_rel(value, rel);
                let column = e.column();
                if let Some(pct) = column.strip_prefix('±') {
                    pct.trim_end_matches('%').parse::<f64>().unwrap() / 100.0
                } else if column.ends_with(">1,000") {
                    f64::INFINITY
                } else {
                    let factor: f64 = column.trim_start_matches("×/÷ ").replace(',', "").parse().unwrap();
                    factor - 1.0
                }
            };
            prop_assert!(shown(small) <= shown(large) + 0.0005, "{small} {large}");
            for rel in [small, large] {
                let column = Estimate::from_rel(value, rel).column();
                if let Some(pct) = column.strip_prefix('±') {
                    prop_assert!(pct.trim_end_matches('%').parse::<f64>().unwrap() <= 100.0, "{column}");
                }
            }
        }

        #[test]
        fn matches_naive_computation(values in proptest::collection::vec(1u64..10_000_000, 2..300)) {
            let s = from(&values);
            let n = values.len() as f64;
            let mean = values.iter().map(|v| *v as f64).sum::<f64>() / n;
            let var = values.iter().map(|v| (*v as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
            prop_assert!((s.mean_ns() - mean).abs() <= mean * 1e-9);
            prop_assert_eq!(s.sum_ns(), values.iter().sum::<u64>());
            prop_assert!((s.stddev_ns() - var.sqrt()).abs() <= var.sqrt() * 1e-6 + 1e-6);
            let l = s.latency();
            prop_assert_eq!(l.min, *values.iter().min().unwrap());
            prop_assert_eq!(l.max, *values.iter().max().unwrap());
            prop_assert!(l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max);
            // The median is within the histogram's 0.1% precision of a true order statistic.
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let lo = sorted[(values.len() - 1) / 2] as f64;
            let hi = sorted[values.len() / 2] as f64;
            prop_assert!(l.p50 as f64 >= lo * 0.998 && l.p50 as f64 <= hi * 1.002, "p50 {} not in [{lo}, {hi}]", l.p50);
            let buckets = s.log2_buckets();
            prop_assert_eq!(buckets.iter().map(|b| b.count).sum::<u64>(), values.len() as u64);
            for v in &values {
                let b = buckets.iter().rev().find(|b| b.lower_ns <= *v).unwrap();
                prop_assert!(*v < b.lower_ns.max(1) * 2);
            }
        }
    }
}
