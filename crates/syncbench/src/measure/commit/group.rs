//! Where a point's commits went in the log's group commit (`syncbench_engine::wal::GroupStats` over the
//! timed window): sums in the JSON (so rounds pool by addition), means in the table under the main one.

use serde::{Deserialize, Serialize};
use syncbench_engine::wal::GroupStats;

/// The log's group-commit counters over a point's timed windows (sums; the table shows means). The counters
/// are the engine's own, serialized flat beside the median group size.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupFlow {
    #[serde(flatten)]
    pub counters: GroupStats,
    /// Median commits released per flush.
    pub commits_per_flush_p50: Option<usize>,
}

impl From<&GroupStats> for GroupFlow {
    fn from(g: &GroupStats) -> GroupFlow {
        GroupFlow { commits_per_flush_p50: g.commits_per_flush_quantile(0.5), counters: g.clone().trimmed() }
    }
}

impl GroupFlow {
    /// The rounds' windows together (sums add; the slowest wake-up is the slowest of all).
    pub fn pooled<'a>(rounds: impl Iterator<Item = &'a GroupFlow>) -> Option<GroupFlow> {
        let mut total: Option<GroupStats> = None;
        for r in rounds {
            total.get_or_insert_with(GroupStats::default).add(&r.counters);
        }
        total.map(|t| GroupFlow::from(&t))
    }

    /// The table row's cells after the point's label (see [`HEADINGS`]).
    pub fn cells(&self) -> Vec<String> {
        let g = &self.counters;
        let mean_us = |ns: u64, n: u64| if n == 0 { 0.0 } else { ns as f64 / n as f64 / 1000.0 };
        vec![
            self.commits_per_flush_p50.map_or("—".to_string(), |n| n.to_string()),
            format!("{:.1}", g.per_flush(g.records_taken)),
            format!("{:.1}", g.per_flush(g.sleepers_at_start)),
            format!("{:.1}", g.per_flush(g.released_away_at_start)),
            format!("{:.1}", g.per_flush(g.records_waiting_at_end)),
            format!("{:.0}", g.per_record(g.append_to_flush_start_ns) / 1000.0),
            format!("{:.0}", g.per_record(g.append_to_flush_return_ns) / 1000.0),
            format!("{:.0}", mean_us(g.gap_ns, g.gaps)),
            format!(
                "{:.0} / {:.0}",
                mean_us(g.wake_to_running_ns, g.wakeups),
                g.wake_to_running_ns_max as f64 / 1000.0
            ),
            format!("{:.2}", g.per_flush(g.lead_hand_offs)),
            format!("{} / {}", g.rejoins_complete, g.rejoin_timeouts),
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
        assert_eq!(one.counters.commits_per_flush.len(), 16, "trailing empty buckets are dropped");
        g.wake_to_running_ns_max = 9;
        g.commits_per_flush[15] = 0;
        g.commits_per_flush[3] = 2;
        let pooled = GroupFlow::pooled([one, GroupFlow::from(&g)].iter()).unwrap();
        let p = &pooled.counters;
        assert_eq!((p.flushes, p.records_taken, p.wake_to_running_ns_max), (4, 60, 9));
        assert_eq!(p.commits_per_flush[3] + p.commits_per_flush[15], 4);
        assert_eq!(pooled.cells()[1], "15.0");
        assert_eq!(GroupFlow::pooled(std::iter::empty()), None);
    }

    #[test]
    fn the_json_is_flat_and_reads_back() {
        let mut g = GroupStats { flushes: 2, records_taken: 30, ..GroupStats::default() };
        g.commits_per_flush[15] = 2;
        let flow = GroupFlow::from(&g);
        let json = serde_json::to_value(&flow).unwrap();
        assert_eq!((json["flushes"].as_u64(), json["commits_per_flush_p50"].as_u64()), (Some(2), Some(15)));
        assert_eq!(json["commits_per_flush"].as_array().map(Vec::len), Some(16));
        assert_eq!(serde_json::from_value::<GroupFlow>(json).unwrap(), flow);
    }
}
