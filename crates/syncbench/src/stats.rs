//! Statistics of one case's commit latencies: exact mean/stddev/min/max (Welford), percentiles from an
//! HDR histogram, the 95% confidence interval of the mean, outliers, and exact log2 buckets.
//!
//! Recording a sample is O(1) and allocation-free, so it can sit next to (never inside) the timed region.

use crate::schema::{LatencyNs, Log2Bucket};
use hdrhistogram::Histogram;

/// Largest latency the histogram tracks exactly (one hour); slower commits are clamped for percentiles only.
const HIGHEST_TRACKABLE_NS: u64 = 3_600_000_000_000;

/// Commit latencies of one case.
#[derive(Clone, Debug)]
pub struct Samples {
    histogram: Histogram<u64>,
    count: u64,
    mean_ns: f64,
    /// Sum of squared deviations from the running mean (Welford's M2).
    m2: f64,
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
    /// No samples yet. Percentiles keep 3 significant digits (0.1% error).
    pub fn new() -> Samples {
        let histogram = Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NS, 3).expect("static histogram bounds");
        Samples { histogram, count: 0, mean_ns: 0.0, m2: 0.0, min_ns: u64::MAX, max_ns: 0, log2_counts: [0; 64] }
    }

    /// Add one commit latency.
    pub fn record(&mut self, latency_ns: u64) {
        self.histogram.saturating_record(latency_ns.max(1));
        self.count += 1;
        let x = latency_ns as f64;
        let delta = x - self.mean_ns;
        self.mean_ns += delta / self.count as f64;
        self.m2 += delta * (x - self.mean_ns);
        self.min_ns = self.min_ns.min(latency_ns);
        self.max_ns = self.max_ns.max(latency_ns);
        self.log2_counts[log2_index(latency_ns)] += 1;
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Arithmetic mean in ns (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        self.mean_ns
    }

    /// Sample standard deviation (n-1) in ns; 0 with fewer than two samples.
    pub fn stddev_ns(&self) -> f64 {
        if self.count < 2 { 0.0 } else { (self.m2 / (self.count - 1) as f64).sqrt() }
    }

    /// Half-width of the 95% confidence interval of the mean, relative to the mean (Student's t).
    /// Infinite with fewer than two samples, so an adaptive stop can never trigger on too little data.
    pub fn ci95_rel(&self) -> f64 {
        if self.count < 2 || self.mean_ns <= 0.0 {
            return f64::INFINITY;
        }
        let half_width = t95(self.count - 1) * self.stddev_ns() / (self.count as f64).sqrt();
        half_width / self.mean_ns
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
            mean: self.mean_ns,
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

/// Two-sided 95% quantile of Student's t with `df` degrees of freedom (1.96 from 120 on).
pub fn t95(df: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df as usize - 1],
        31..=60 => 2.021,
        61..=119 => 2.000,
        _ => 1.960,
    }
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
        // t(4) = 2.776: 2.776 * 158.11 / sqrt(5) / 300
        assert!((s.ci95_rel() - 0.654_3).abs() < 1e-3, "{}", s.ci95_rel());
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

    #[test]
    fn t_table_decreases_to_normal() {
        assert!(t95(1) > t95(2) && t95(30) > t95(31) && t95(119) > t95(120));
        assert_eq!(t95(10_000), 1.96);
    }

    proptest! {
        #[test]
        fn matches_naive_computation(values in proptest::collection::vec(1u64..10_000_000, 2..300)) {
            let s = from(&values);
            let n = values.len() as f64;
            let mean = values.iter().map(|v| *v as f64).sum::<f64>() / n;
            let var = values.iter().map(|v| (*v as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
            prop_assert!((s.mean_ns() - mean).abs() <= mean * 1e-9);
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
