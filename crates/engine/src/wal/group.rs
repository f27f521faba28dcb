//! Where the group commit's commits go: counters kept under the log's lock (every update happens where the
//! lock is already held, so they cost a few additions per flush and one clock read per append).

use std::sync::OnceLock;
use std::time::Instant;

/// Commits per flush are counted exactly up to this many; larger groups share the last bucket.
pub const GROUP_SIZE_BUCKETS: usize = 129;

/// Group-commit counters since the log was opened (subtract two readings for a window, add windows to pool
/// them). Serialized as they are: `syncbench commit --json` carries a window's counters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GroupStats {
    /// Flushes led in group-commit mode (including empty ones that only synced).
    pub flushes: u64,
    /// Commits each flush released: `commits_per_flush[n]` flushes released `n` commits (the leader's
    /// own included; the last bucket is that many or more).
    pub commits_per_flush: Vec<u64>,
    /// Records (appends) the flushes took, summed.
    pub records_taken: u64,
    /// Commits asleep in the log when a flush took its batch (the leader not included), summed.
    pub sleepers_at_start: u64,
    /// Commits the previous flush released that had not come back with their next commit when this flush
    /// took its batch, summed: the clients a flush leaves behind because they are still on their way.
    pub released_away_at_start: u64,
    /// Records appended while a flush ran, not in it, waiting when it returned, summed.
    pub records_waiting_at_end: u64,
    /// Per record: from its append to the start of the flush that took it, summed, in nanoseconds.
    pub append_to_flush_start_ns: u64,
    /// Per record: from its append to the return of the flush that took it, summed, in nanoseconds.
    pub append_to_flush_return_ns: u64,
    /// From one flush's return to the next flush's start (the disk idle as far as the log is concerned),
    /// summed over flushes that followed another, in nanoseconds.
    pub gap_ns: u64,
    /// Flushes that followed another (the count behind `gap_ns`).
    pub gaps: u64,
    /// Sleeping commits woken: covered by a flush, handed the lead, or given the rejoin timer.
    pub wakeups: u64,
    /// From the wake-up call to the woken commit holding the log's lock again, summed, in nanoseconds (the
    /// relay: the leader wakes one, which wakes the rest).
    pub wake_to_running_ns: u64,
    /// Slowest such wake-up, in nanoseconds.
    pub wake_to_running_ns_max: u64,
    /// Sleeping commits woken only to lead the next flush or to hold the rejoin timer (not covered).
    pub lead_hand_offs: u64,
    /// Flushes started by the lead duty of a woken commit (nobody else had started one).
    pub lead_duty_flushes: u64,
    /// Flushes that waited for the commits the previous one released to come back.
    pub rejoin_waits: u64,
    /// Of those, waits that ended because the last released commit came back (it led the flush).
    pub rejoins_complete: u64,
    /// Of those, waits that ran out of time (`rejoin_wait_pct` of the recent flush time).
    pub rejoin_timeouts: u64,
}

impl Default for GroupStats {
    fn default() -> GroupStats {
        GroupStats {
            flushes: 0,
            commits_per_flush: vec![0; GROUP_SIZE_BUCKETS],
            records_taken: 0,
            sleepers_at_start: 0,
            released_away_at_start: 0,
            records_waiting_at_end: 0,
            append_to_flush_start_ns: 0,
            append_to_flush_return_ns: 0,
            gap_ns: 0,
            gaps: 0,
            wakeups: 0,
            wake_to_running_ns: 0,
            wake_to_running_ns_max: 0,
            lead_hand_offs: 0,
            lead_duty_flushes: 0,
            rejoin_waits: 0,
            rejoins_complete: 0,
            rejoin_timeouts: 0,
        }
    }
}

impl GroupStats {
    /// The counters accumulated between `earlier` and `self` (the maximum is kept as is).
    pub fn since(&self, earlier: &GroupStats) -> GroupStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        GroupStats {
            flushes: d(self.flushes, earlier.flushes),
            commits_per_flush: self
                .commits_per_flush
                .iter()
                .zip(&earlier.commits_per_flush)
                .map(|(a, b)| d(*a, *b))
                .collect(),
            records_taken: d(self.records_taken, earlier.records_taken),
            sleepers_at_start: d(self.sleepers_at_start, earlier.sleepers_at_start),
            released_away_at_start: d(self.released_away_at_start, earlier.released_away_at_start),
            records_waiting_at_end: d(self.records_waiting_at_end, earlier.records_waiting_at_end),
            append_to_flush_start_ns: d(self.append_to_flush_start_ns, earlier.append_to_flush_start_ns),
            append_to_flush_return_ns: d(self.append_to_flush_return_ns, earlier.append_to_flush_return_ns),
            gap_ns: d(self.gap_ns, earlier.gap_ns),
            gaps: d(self.gaps, earlier.gaps),
            wakeups: d(self.wakeups, earlier.wakeups),
            wake_to_running_ns: d(self.wake_to_running_ns, earlier.wake_to_running_ns),
            wake_to_running_ns_max: self.wake_to_running_ns_max,
            lead_hand_offs: d(self.lead_hand_offs, earlier.lead_hand_offs),
            lead_duty_flushes: d(self.lead_duty_flushes, earlier.lead_duty_flushes),
            rejoin_waits: d(self.rejoin_waits, earlier.rejoin_waits),
            rejoins_complete: d(self.rejoins_complete, earlier.rejoins_complete),
            rejoin_timeouts: d(self.rejoin_timeouts, earlier.rejoin_timeouts),
        }
    }

    /// Adds another window's counters to these (the maximum is the larger one): rounds pooled.
    pub fn add(&mut self, other: &GroupStats) {
        if self.commits_per_flush.len() < other.commits_per_flush.len() {
            self.commits_per_flush.resize(other.commits_per_flush.len(), 0);
        }
        for (total, n) in self.commits_per_flush.iter_mut().zip(&other.commits_per_flush) {
            *total += n;
        }
        let sums = [
            (&mut self.flushes, other.flushes),
            (&mut self.records_taken, other.records_taken),
            (&mut self.sleepers_at_start, other.sleepers_at_start),
            (&mut self.released_away_at_start, other.released_away_at_start),
            (&mut self.records_waiting_at_end, other.records_waiting_at_end),
            (&mut self.append_to_flush_start_ns, other.append_to_flush_start_ns),
            (&mut self.append_to_flush_return_ns, other.append_to_flush_return_ns),
            (&mut self.gap_ns, other.gap_ns),
            (&mut self.gaps, other.gaps),
            (&mut self.wakeups, other.wakeups),
            (&mut self.wake_to_running_ns, other.wake_to_running_ns),
            (&mut self.lead_hand_offs, other.lead_hand_offs),
            (&mut self.lead_duty_flushes, other.lead_duty_flushes),
            (&mut self.rejoin_waits, other.rejoin_waits),
            (&mut self.rejoins_complete, other.rejoins_complete),
            (&mut self.rejoin_timeouts, other.rejoin_timeouts),
        ];
        for (total, n) in sums {
            *total += n;
        }
        self.wake_to_running_ns_max = self.wake_to_running_ns_max.max(other.wake_to_running_ns_max);
    }

    /// The histogram without its empty top buckets (what an export keeps).
    pub fn trimmed(mut self) -> GroupStats {
        while self.commits_per_flush.last() == Some(&0) {
            self.commits_per_flush.pop();
        }
        self
    }

    /// The `q`-quantile (0..=1) of commits released per flush, from the histogram.
    pub fn commits_per_flush_quantile(&self, q: f64) -> Option<usize> {
        let total: u64 = self.commits_per_flush.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        self.commits_per_flush.iter().position(|n| {
            seen += n;
            seen >= rank
        })
    }

    /// Mean of a per-flush sum.
    pub fn per_flush(&self, total: u64) -> f64 {
        if self.flushes == 0 { 0.0 } else { total as f64 / self.flushes as f64 }
    }

    /// Mean of a per-record sum.
    pub fn per_record(&self, total_ns: u64) -> f64 {
        if self.records_taken == 0 { 0.0 } else { total_ns as f64 / self.records_taken as f64 }
    }

    pub(super) fn count_group(&mut self, commits: usize) {
        self.commits_per_flush[commits.min(GROUP_SIZE_BUCKETS - 1)] += 1;
    }

    pub(super) fn count_wake(&mut self, woken_at_ns: u64) {
        let ns = now_ns().saturating_sub(woken_at_ns);
        self.wake_to_running_ns += ns;
        self.wake_to_running_ns_max = self.wake_to_running_ns_max.max(ns);
    }
}

/// Nanoseconds since the first call in this process: an `Instant` that fits in an atomic and sums.
pub(super) fn now_ns() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    let base = *BASE.get_or_init(Instant::now);
    u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_the_group_sizes() {
        let mut s = GroupStats::default();
        for n in [1, 8, 8, 16, 300] {
            s.count_group(n);
        }
        assert_eq!(s.commits_per_flush_quantile(0.0), Some(1));
        assert_eq!(s.commits_per_flush_quantile(0.5), Some(8));
        assert_eq!(s.commits_per_flush_quantile(0.8), Some(16));
        assert_eq!(s.commits_per_flush_quantile(1.0), Some(GROUP_SIZE_BUCKETS - 1));
        assert_eq!(GroupStats::default().commits_per_flush_quantile(0.5), None);
    }

    #[test]
    fn a_window_is_the_difference() {
        let mut a = GroupStats::default();
        a.count_group(3);
        a.flushes = 1;
        let mut b = a.clone();
        b.count_group(3);
        b.count_group(5);
        b.flushes = 3;
        let w = b.since(&a);
        assert_eq!((w.flushes, w.commits_per_flush[3], w.commits_per_flush[5]), (2, 1, 1));
    }

    #[test]
    fn windows_add_up_to_their_sum_and_trimming_keeps_every_group() {
        let mut a = GroupStats::default();
        a.count_group(3);
        a.flushes = 1;
        a.wake_to_running_ns_max = 7;
        let mut b = GroupStats::default();
        b.count_group(5);
        b.count_group(5);
        b.flushes = 2;
        b.rejoin_waits = 4;
        b.wake_to_running_ns_max = 5;
        let mut total = a.clone().trimmed();
        total.add(&b.trimmed());
        assert_eq!(total.commits_per_flush, [0, 0, 0, 1, 0, 2]);
        assert_eq!((total.flushes, total.rejoin_waits, total.wake_to_running_ns_max), (3, 4, 7));
        assert_eq!(total.commits_per_flush_quantile(0.5), Some(5));
    }
}
