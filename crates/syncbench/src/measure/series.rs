//! The per-commit time series of one round, kept as short windows: the timed loop already reads the clock
//! once per commit, so each commit's end time is the round's start plus the sum of the latencies before it.
//! The loop only appends each latency to a buffer reserved before it starts; after the loop the buffer is
//! cut into [`WINDOW_NS`] windows (each one summarised by its median) and dropped, so a run's memory does
//! not grow with its commits.
//!
//! Windows give what a device's phases look like over time (a disk that switches between latency regimes
//! every few seconds: [`crate::measure::regimes`]), and the optional latency log of `run --log`.

use std::sync::OnceLock;
use std::time::Instant;

/// Length of one window: long enough for a stable median at a few ms per commit, short enough to see a
/// phase of a second. A round shorter than this is one window.
pub const WINDOW_NS: u64 = 100_000_000;
/// At most this many commits of a round are kept for the windows (16 MiB of buffer); commits past it still
/// count in every other number.
pub const MAX_SERIES_COMMITS: usize = 1 << 21;

pub use crate::core::schema::regimes::Window;

/// Nanoseconds on the run's time axis: since the first time anything asked in this process (the start of
/// the first timed round). Every round's windows sit on this one axis.
pub fn run_axis_ns() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// The buffer for one round's latencies, reserved from the warmup's pace so the timed loop never grows it
/// (a reallocation would copy inside one commit's interval): 1.5× the commits the warmup's rate gives over
/// the round's budget, plus a margin, at most [`MAX_SERIES_COMMITS`].
pub fn reserve(warmup_ops: u64, warmup_secs: f64, case_secs: f64) -> Vec<u64> {
    let rate = if warmup_secs > 0.0 { warmup_ops as f64 / warmup_secs } else { 0.0 };
    let expected = ((rate * case_secs * 1.5) as usize).saturating_add(1024);
    Vec::with_capacity(expected.min(MAX_SERIES_COMMITS))
}

/// Cut one round's latencies (in the order they ran, the first starting at `start_ns` on the run's axis)
/// into windows of [`WINDOW_NS`] by the commits' end times; a last window shorter than half a window joins
/// the one before, so no window is a stub.
pub fn windows(latencies_ns: &[u64], start_ns: u64) -> Vec<Window> {
    let mut out: Vec<Window> = Vec::new();
    let mut from = 0;
    let mut window_start = 0u64;
    let mut elapsed = 0u64;
    for (i, &ns) in latencies_ns.iter().enumerate() {
        elapsed += ns;
        let last = i + 1 == latencies_ns.len();
        if elapsed - window_start >= WINDOW_NS || last {
            let tail_is_stub = last && elapsed - window_start < WINDOW_NS / 2 && !out.is_empty();
            if tail_is_stub {
                let prev = out.pop().expect("checked non-empty");
                let merged_from = from - prev.commits as usize;
                out.push(summarise(&latencies_ns[merged_from..=i], prev.start_ns));
            } else {
                out.push(summarise(&latencies_ns[from..=i], start_ns + window_start));
            }
            from = i + 1;
            window_start = elapsed;
        }
    }
    out
}

fn summarise(latencies_ns: &[u64], start_ns: u64) -> Window {
    let mut sorted = latencies_ns.to_vec();
    sorted.sort_unstable();
    Window {
        start_ns,
        duration_ns: sorted.iter().sum(),
        commits: sorted.len() as u64,
        // The lower median: a window of two commits reports the faster, as a nearest-rank p50 does.
        p50_ns: sorted[(sorted.len() - 1) / 2],
        max_ns: *sorted.last().expect("a window has a commit"),
        regime: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_the_commits_end_times() {
        // 250 ms of 1 ms commits, then 30 ms of 10 ms commits: windows of 100, 100 and 80 ms (the last
        // 50 ms of fast commits and the slow ones together, 80 ms not being a stub).
        let mut lat = vec![1_000_000u64; 250];
        lat.extend([10_000_000; 3]);
        let w = windows(&lat, 5_000);
        assert_eq!(w.len(), 3, "{w:?}");
        assert_eq!((w[0].start_ns, w[0].commits, w[0].p50_ns), (5_000, 100, 1_000_000));
        assert_eq!((w[1].start_ns, w[1].duration_ns), (5_000 + 100_000_000, 100_000_000));
        assert_eq!((w[2].commits, w[2].duration_ns, w[2].max_ns), (53, 80_000_000, 10_000_000));
        assert_eq!(w.iter().map(|w| w.commits).sum::<u64>(), 253);
    }

    #[test]
    fn a_short_tail_joins_the_window_before_and_a_short_round_is_one_window() {
        let w = windows(&[1_000_000; 120], 0);
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].commits, w[0].duration_ns), (120, 120_000_000));
        let short = windows(&[3_000_000; 10], 7);
        assert_eq!(
            short,
            vec![Window {
                start_ns: 7,
                duration_ns: 30_000_000,
                commits: 10,
                p50_ns: 3_000_000,
                max_ns: 3_000_000,
                regime: None
            }]
        );
        assert!(windows(&[], 0).is_empty());
    }

    #[test]
    fn the_buffer_is_reserved_from_the_warmups_pace_and_capped() {
        assert!(reserve(100, 0.01, 0.1).capacity() >= 1500);
        assert!(reserve(0, 0.0, 0.1).capacity() >= 1024);
        assert!(reserve(u64::MAX / 2, 1.0, 10.0).capacity() <= MAX_SERIES_COMMITS);
    }
}
