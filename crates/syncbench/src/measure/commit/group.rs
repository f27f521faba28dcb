//! Where a point's commits went in the log's group commit (`syncbench_engine::wal::GroupStats` over the
//! timed window): sums in the JSON (so rounds pool by addition), means in the table under the main one.

use serde::{Deserialize, Serialize};
use syncbench_engine::wal::GroupStats;

/// The log's group-commit counters over a point's timed windows (sums; the table shows means).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupFlow {
    /// Flushes led in group-commit mode.
    pub flushes: u64,
    /// `commits_per_flush[n]`: flushes that released n commits (the last entry: that many or more).
    pub commits_per_flush: Vec<u64>,
    /// Median commits released per flush.
    pub commits_per_flush_p50: Option<usize>,
    /// Records the flushes took.
    pub records_taken: u64,
    /// Commits asleep in the log when a flush took its batch, summed over flushes.
    pub sleepers_at_start: u64,
    /// Commits released by the previous flush not yet back when a flush took its batch, summed.
    pub released_away_at_start: u64,
    /// Records appended during a flush, waiting when it returned, summed.
    pub records_waiting_at_end: u64,
    /// Per record, append to the start of the flush that took it, summed (ns).
    pub append_to_flush_start_ns: u64,
    /// Per record, append to the return of that flush, summed (ns).
    pub append_to_flush_return_ns: u64,
    /// Flush return to the next flush's start, summed (ns), over `gaps` flushes.
    pub gap_ns: u64,
    pub gaps: u64,
    /// Sleeping commits woken, and wake-up call to running again, summed and slowest (ns).
    pub wakeups: u64,
    pub wake_to_running_ns: u64,
    pub wake_to_running_ns_max: u64,
    /// Sleeping commits woken only to lead or to hold the rejoin timer.
    pub lead_hand_offs: u64,
    /// Flushes started by a woken commit's lead duty.
    pub lead_duty_flushes: u64,
    /// Flushes that waited for the previous flush's commits to come back: all back, or out of time.
    pub rejoins_complete: u64,
    pub rejoin_timeouts: u64,
}

impl From<&GroupStats> for GroupFlow {
    fn from(g: &GroupStats) -> GroupFlow {
        let mut histogram = g.commits_per_flush.clone();
        while histogram.last() == Some(&0) {
            histogram.pop();
        }
        GroupFlow {
            flushes: g.flushes,
            commits_per_flush_p50: g.commits_per_flush_quantile(0.5),
            commits_per_flush: histogram,
            records_taken: g.records_taken,
            sleepers_at_start: g.sleepers_at_start,
            released_away_at_start: g.released_away_at_start,
            records_waiting_at_end: g.records_waiting_at_end,
            append_to_flush_start_ns: g.append_to_flush_start_ns,
            append_to_flush_return_ns: g.append_to_flush_return_ns,
            gap_ns: g.gap_ns,
            gaps: g.gaps,
            wakeups: g.wakeups,
            wake_to_running_ns: g.wake_to_running_ns,
            wake_to_running_ns_max: g.wake_to_running_ns_max,
            lead_hand_offs: g.lead_hand_offs,
            lead_duty_flushes: g.lead_duty_flushes,
            rejoins_complete: g.rejoins_complete,
            rejoin_timeouts: g.rejoin_timeouts,
        }
    }
}

impl GroupFlow {
    /// The rounds' windows together (sums add; the slowest wake-up is the slowest of all).
    pub fn pooled<'a>(rounds: impl Iterator<Item = &'a GroupFlow>) -> Option<GroupFlow> {
        let mut total = GroupStats::default();
        let mut any = false;
        for r in rounds {
            any = true;
            for (t, n) in total.commits_per_flush.iter_mut().zip(&r.commits_per_flush) {
                *t += n;
            }
            total.flushes += r.flushes;
            total.records_taken += r.records_taken;
            total.sleepers_at_start += r.sleepers_at_start;
            total.released_away_at_start += r.released_away_at_start;
            total.records_waiting_at_end += r.records_waiting_at_end;
            total.append_to_flush_start_ns += r.append_to_flush_start_ns;
            total.append_to_flush_return_ns += r.append_to_flush_return_ns;
            total.gap_ns += r.gap_ns;
            total.gaps += r.gaps;
            total.wakeups += r.wakeups;
            total.wake_to_running_ns += r.wake_to_running_ns;
            total.wake_to_running_ns_max = total.wake_to_running_ns_max.max(r.wake_to_running_ns_max);
            total.lead_hand_offs += r.lead_hand_offs;
            total.lead_duty_flushes += r.lead_duty_flushes;
            total.rejoins_complete += r.rejoins_complete;
            total.rejoin_timeouts += r.rejoin_timeouts;
        }
        any.then(|| GroupFlow::from(&total))
    }

    fn per_flush(&self, total: u64) -> f64 {
        if self.flushes == 0 { 0.0 } else { total as f64 / self.flushes as f64 }
    }

    fn per_record_us(&self, total_ns: u64) -> f64 {
        if self.records_taken == 0 { 0.0 } else { total_ns as f64 / self.records_taken as f64 / 1000.0 }
    }

    /// The table row's cells after the point's label (see [`HEADINGS`]).
    pub fn cells(&self) -> Vec<String> {
        let mean_us = |ns: u64, n: u64| if n == 0 { 0.0 } else { ns as f64 / n as f64 / 1000.0 };
        vec![
            self.commits_per_flush_p50.map_or("—".to_string(), |n| n.to_string()),
            format!("{:.1}", self.per_flush(self.records_taken)),
            format!("{:.1}", self.per_flush(self.sleepers_at_start)),
            format!("{:.1}", self.per_flush(self.released_away_at_start)),
            format!("{:.1}", self.per_flush(self.records_waiting_at_end)),
            format!("{:.0}", self.per_record_us(self.append_to_flush_start_ns)),
            format!("{:.0}", self.per_record_us(self.append_to_flush_return_ns)),
            format!("{:.0}", mean_us(self.gap_ns, self.gaps)),
            format!(
                "{:.0} / {:.0}",
                mean_us(self.wake_to_running_ns, self.wakeups),
                self.wake_to_running_ns_max as f64 / 1000.0
            ),
            format!("{:.2}", self.per_flush(self.lead_hand_offs)),
            format!("{} / {}", self.rejoins_complete, self.rejoin_timeouts),
        ]
    }
}

/// Column headings of the "where the commits go" table (means per flush, or per record for the waits).
pub const HEADINGS: [&str; 12] = [
    "point",
    "commits/flush p50",
    "records/flush",
    "asleep at start",
    "away at start",
    "waiting at end",
    "append→start µs",
    "append→return µs",
    "gap µs",
    "wake µs mean / max",
    "hand-offs/flush",
    "rejoin all / timeout",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_pool_by_adding_their_sums() {
        let mut g = GroupStats { flushes: 2, records_taken: 30, ..GroupStats::default() };
        g.commits_per_flush[15] = 2;
        g.wake_to_running_ns_max = 7;
        let one = GroupFlow::from(&g);
        assert_eq!(one.commits_per_flush.len(), 16, "trailing empty buckets are dropped");
        g.wake_to_running_ns_max = 9;
        g.commits_per_flush[15] = 0;
        g.commits_per_flush[3] = 2;
        let pooled = GroupFlow::pooled([one, GroupFlow::from(&g)].iter()).unwrap();
        assert_eq!((pooled.flushes, pooled.records_taken, pooled.wake_to_running_ns_max), (4, 60, 9));
        assert_eq!(pooled.commits_per_flush[3] + pooled.commits_per_flush[15], 4);
        assert_eq!(pooled.cells()[1], "15.0");
        assert_eq!(GroupFlow::pooled(std::iter::empty()), None);
    }
}
