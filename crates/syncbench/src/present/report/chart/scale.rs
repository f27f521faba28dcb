//! Axes: map a value to a position, and choose round tick values with labels in the axis's unit.

/// How values are spread along an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScaleKind {
    /// Equal distances for equal differences.
    Linear,
    /// Linear, with ticks at round numbers of a binary unit (KiB, MiB, GiB), for byte quantities.
    LinearBinary,
    /// Equal distances for equal ratios, ticks at powers of 10 (latency, where tails span decades).
    Log10,
    /// Equal distances for equal ratios, ticks at powers of 2 (sizes, client counts).
    Log2,
}

/// A value axis over `[min, max]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// Spacing.
    pub kind: ScaleKind,
    /// Lowest value shown.
    pub min: f64,
    /// Highest value shown.
    pub max: f64,
}

impl Scale {
    /// A linear axis from 0 to a round number at or above `max_value`.
    pub fn linear_from_zero(max_value: f64) -> Scale {
        let top = if max_value > 0.0 && max_value.is_finite() { nice_ceiling(max_value) } else { 1.0 };
        Scale { kind: ScaleKind::Linear, min: 0.0, max: top }
    }

    /// A linear axis from 0 to a round number of KiB/MiB/GiB at or above `max_value` bytes, so byte ticks
    /// read `256 MiB, 512 MiB` rather than `477 MiB, 954 MiB`.
    pub fn linear_from_zero_binary(max_value: f64) -> Scale {
        if !(max_value > 0.0 && max_value.is_finite()) {
            return Scale { kind: ScaleKind::LinearBinary, min: 0.0, max: 1.0 };
        }
        let unit = binary_unit(max_value);
        Scale { kind: ScaleKind::LinearBinary, min: 0.0, max: nice_ceiling(max_value / unit) * unit }
    }

    /// A log10 axis covering `[lo, hi]`, widened to whole decades.
    pub fn log10_covering(lo: f64, hi: f64) -> Scale {
        let (lo, hi) = positive_range(lo, hi);
        let min = 10f64.powf(lo.log10().floor());
        let mut max = 10f64.powf(hi.log10().ceil());
        if max <= min {
            max = min * 10.0;
        }
        Scale { kind: ScaleKind::Log10, min, max }
    }

    /// A log2 axis covering `[lo, hi]`, widened to powers of two.
    pub fn log2_covering(lo: f64, hi: f64) -> Scale {
        let (lo, hi) = positive_range(lo, hi);
        let min = 2f64.powf(lo.log2().floor());
        let mut max = 2f64.powf(hi.log2().ceil());
        if max <= min {
            max = min * 2.0;
        }
        Scale { kind: ScaleKind::Log2, min, max }
    }

    /// Where `value` falls, as a fraction of the axis length (0 at `min`, 1 at `max`), clamped to [0, 1].
    pub fn fraction(&self, value: f64) -> f64 {
        let f = match self.kind {
            ScaleKind::Linear | ScaleKind::LinearBinary => (value - self.min) / (self.max - self.min),
            ScaleKind::Log10 | ScaleKind::Log2 => {
                let v = value.max(self.min);
                (v.ln() - self.min.ln()) / (self.max.ln() - self.min.ln())
            }
        };
        if f.is_finite() { f.clamp(0.0, 1.0) } else { 0.0 }
    }

    /// Round values to put ticks at.
    pub fn ticks(&self) -> Vec<f64> {
        match self.kind {
            ScaleKind::Linear => linear_ticks(self.min, self.max),
            ScaleKind::LinearBinary => {
                let unit = binary_unit(self.max);
                linear_ticks(self.min / unit, self.max / unit).into_iter().map(|t| t * unit).collect()
            }
            ScaleKind::Log10 if self.max / self.min <= 100.0 => {
                // Two decades or less: also 2× and 5× so the axis has enough labels to read.
                let mut ticks: Vec<f64> = powers_between(self.min, self.max, 10.0, 1)
                    .into_iter()
                    .flat_map(|p| [p, 2.0 * p, 5.0 * p])
                    .filter(|t| *t <= self.max * 1.000_001)
                    .collect();
                ticks.dedup();
                ticks
            }
            ScaleKind::Log10 => powers_between(self.min, self.max, 10.0, 1),
            ScaleKind::Log2 => {
                // Every power of two up to 8 steps, then every second or fourth so labels do not collide.
                let steps = (self.max / self.min).log2().round().max(1.0) as usize;
                powers_between(self.min, self.max, 2.0, steps.div_ceil(8).max(1))
            }
        }
    }
}

/// The largest of 1, 1024, 1024², 1024³ not above `value` (so `value` is 1 to 1023 of it).
fn binary_unit(value: f64) -> f64 {
    let mut unit = 1.0;
    while unit < 1024f64.powi(3) && value >= unit * 1024.0 {
        unit *= 1024.0;
    }
    unit
}

fn positive_range(lo: f64, hi: f64) -> (f64, f64) {
    let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1.0 };
    let hi = if hi.is_finite() && hi > lo { hi } else { lo };
    (lo, hi)
}

fn powers_between(min: f64, max: f64, base: f64, every: usize) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut v = min;
    let mut i = 0usize;
    while v <= max * 1.000_001 {
        if i.is_multiple_of(every) {
            ticks.push(v);
        }
        v *= base;
        i += 1;
    }
    ticks
}

/// The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k that is ≥ `value`: an axis end that wastes
/// little space.
fn nice_ceiling(value: f64) -> f64 {
    nice_from(value, &[1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0])
}

/// The smallest of 1, 2, 2.5, 5 × 10^k that is ≥ `value`: a tick step that gives round labels.
fn nice_step(value: f64) -> f64 {
    nice_from(value, &[1.0, 2.0, 2.5, 5.0, 10.0])
}

fn nice_from(value: f64, steps: &[f64]) -> f64 {
    let decade = 10f64.powf(value.log10().floor());
    for &step in steps {
        if step * decade >= value * 0.999_999 {
            return step * decade;
        }
    }
    10.0 * decade
}

/// 4–10 evenly spaced round ticks from `min` to `max`.
fn linear_ticks(min: f64, max: f64) -> Vec<f64> {
    let span = max - min;
    if span <= 0.0 || !span.is_finite() {
        return vec![min];
    }
    let step = nice_step(span / 6.0);
    let first = (min / step).ceil() as i64;
    let last = (max / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

pub use crate::core::units::{format_bytes, format_ns, trim_number};

/// A count with a k/M suffix: `5k`, `12.5k`, `1.2M`.
pub fn format_count(value: f64) -> String {
    let (scaled, suffix) = match value.abs() {
        v if v >= 1e6 => (value / 1e6, "M"),
        v if v >= 1e3 => (value / 1e3, "k"),
        _ => (value, ""),
    };
    format!("{}{suffix}", trim_number(scaled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_axis_ends_on_a_round_number_above_the_data() {
        let s = Scale::linear_from_zero(4878.0);
        assert_eq!(s.max, 5000.0);
        assert_eq!(s.ticks(), vec![0.0, 1000.0, 2000.0, 3000.0, 4000.0, 5000.0]);
        let s = Scale::linear_from_zero(262_000.0);
        assert_eq!(s.max, 300_000.0);
        assert_eq!(s.ticks(), vec![0.0, 50_000.0, 100_000.0, 150_000.0, 200_000.0, 250_000.0, 300_000.0]);
    }

    #[test]
    fn byte_axes_tick_at_round_binary_units() {
        let s = Scale::linear_from_zero_binary(1.4 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(s.max, 1.5 * 1024.0 * 1024.0 * 1024.0);
        let labels: Vec<String> = s.ticks().into_iter().map(format_bytes).collect();
        assert_eq!(labels, ["0 B", "256 MiB", "512 MiB", "768 MiB", "1 GiB", "1.25 GiB", "1.5 GiB"]);
    }

    #[test]
    fn log10_axis_covers_whole_decades_and_maps_them_evenly() {
        let s = Scale::log10_covering(127_100.0, 5_125_000.0);
        assert_eq!((s.min, s.max), (100_000.0, 10_000_000.0));
        assert_eq!(s.ticks(), vec![1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7]);
        let wide = Scale::log10_covering(1_500.0, 5_125_000.0);
        assert_eq!(wide.ticks(), vec![1e3, 1e4, 1e5, 1e6, 1e7]);
        assert!((s.fraction(1e6) - 0.5).abs() < 1e-12);
        assert_eq!(s.fraction(1.0), 0.0, "values below the axis are clamped");
        let narrow = Scale::log10_covering(1_500.0, 40_000.0);
        assert_eq!(narrow.ticks(), vec![1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5]);
    }

    #[test]
    fn log2_axis_thins_ticks_on_wide_ranges() {
        let s = Scale::log2_covering(512.0, 1_048_576.0);
        assert_eq!(s.ticks(), vec![512.0, 2048.0, 8192.0, 32768.0, 131072.0, 524288.0]);
        let narrow = Scale::log2_covering(1.0, 64.0);
        assert_eq!(narrow.ticks(), vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
    }

    #[test]
    fn labels_carry_their_unit_from_core_units() {
        assert_eq!(format_ns(201_000.0), "201 µs");
        assert_eq!(format_ns(1_500.0), "1.5 µs");
        assert_eq!(format_ns(12_000_000.0), "12 ms");
        assert_eq!(format_bytes(8192.0), "8 KiB");
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(1_048_576.0), "1 MiB");
        assert_eq!(format_count(4878.0), "4.88k");
        assert_eq!(format_count(12_500.0), "12.5k");
        assert_eq!(format_count(650_000.0), "650k");
        assert_eq!(format_count(0.0), "0");
    }
}
