//! The clock of the timed loop. `clock_gettime(CLOCK_MONOTONIC)` costs ~60 ns per read on the project VM
//! (~2.5% of an 8 KiB tmpfs write); the invariant TSC costs ~10 ns. The TSC is used only when the CPU says
//! it is invariant, and is scaled by a rate calibrated once against the monotonic clock.

use super::Clock;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// `std::time::Instant` (CLOCK_MONOTONIC).
#[derive(Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock { origin: Instant::now() }
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn now_ns(&mut self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
}

/// The invariant TSC, in nanoseconds.
#[derive(Debug)]
pub struct TscClock {
    origin_ticks: u64,
    ns_per_tick: f64,
}

impl TscClock {
    /// A TSC clock, if this CPU has an invariant TSC (calibrated once per process, ~20 ms).
    pub fn calibrated() -> Option<TscClock> {
        static NS_PER_TICK: OnceLock<Option<f64>> = OnceLock::new();
        let ns_per_tick = (*NS_PER_TICK.get_or_init(calibrate))?;
        Some(TscClock { origin_ticks: syncbench_sys::read_tsc()?, ns_per_tick })
    }
}

impl Clock for TscClock {
    #[inline]
    fn now_ns(&mut self) -> u64 {
        let ticks = syncbench_sys::read_tsc().unwrap_or(self.origin_ticks);
        (ticks.saturating_sub(self.origin_ticks) as f64 * self.ns_per_tick) as u64
    }
}

fn tsc_is_invariant() -> bool {
    let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else { return false };
    let Some(flags) = cpuinfo.lines().find(|l| l.starts_with("flags")) else { return false };
    let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
    has("constant_tsc") && has("nonstop_tsc")
}

/// Nanoseconds per TSC tick, measured over 20 ms of the monotonic clock (error ~1e-5); `None` when the TSC
/// is not invariant or the rate is implausible (outside 0.1-10 GHz).
fn calibrate() -> Option<f64> {
    if !tsc_is_invariant() {
        return None;
    }
    let (t0, ticks0) = (Instant::now(), syncbench_sys::read_tsc()?);
    std::thread::sleep(Duration::from_millis(20));
    let (t1, ticks1) = (Instant::now(), syncbench_sys::read_tsc()?);
    let ns_per_tick = (t1 - t0).as_nanos() as f64 / ticks1.checked_sub(ticks0)? as f64;
    (0.1..=10.0).contains(&ns_per_tick).then_some(ns_per_tick)
}

/// The cheapest trustworthy clock here: the TSC when invariant, otherwise CLOCK_MONOTONIC.
#[derive(Debug)]
pub enum BestClock {
    /// Invariant TSC.
    Tsc(TscClock),
    /// CLOCK_MONOTONIC.
    Monotonic(MonotonicClock),
}

impl BestClock {
    /// Pick the clock (calibrating the TSC on first use).
    pub fn new() -> BestClock {
        TscClock::calibrated().map_or_else(|| BestClock::Monotonic(MonotonicClock::default()), BestClock::Tsc)
    }
}

impl Default for BestClock {
    fn default() -> Self {
        BestClock::new()
    }
}

impl Clock for BestClock {
    #[inline]
    fn now_ns(&mut self) -> u64 {
        match self {
            BestClock::Tsc(c) => c.now_ns(),
            BestClock::Monotonic(c) => c.now_ns(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_agrees_with_the_monotonic_clock() {
        let Some(mut tsc) = TscClock::calibrated() else {
            eprintln!("skipping: no invariant TSC here");
            return;
        };
        let mut mono = MonotonicClock::default();
        // A pair of readings counts only if nothing (a preempted vCPU, another test) came between them:
        // bracket the TSC read by two monotonic reads less than 20 µs apart, retrying until they are.
        let mut pair = || {
            for _ in 0..1000 {
                let (before, t, after) = (mono.now_ns(), tsc.now_ns(), mono.now_ns());
                if after - before < 20_000 {
                    return (t, (before + after) / 2);
                }
            }
            panic!("never two monotonic readings within 20 µs");
        };
        let (a_tsc, a_mono) = pair();
        std::thread::sleep(Duration::from_millis(100));
        let (b_tsc, b_mono) = pair();
        let ratio = (b_tsc - a_tsc) as f64 / (b_mono - a_mono) as f64;
        assert!((0.99..1.01).contains(&ratio), "TSC vs monotonic over 100 ms: {ratio}");
    }

    #[test]
    fn best_clock_is_monotonic() {
        let mut clock = BestClock::new();
        let mut last = clock.now_ns();
        for _ in 0..10_000 {
            let now = clock.now_ns();
            assert!(now >= last);
            last = now;
        }
    }
}
