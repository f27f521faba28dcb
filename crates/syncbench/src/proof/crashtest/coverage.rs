//! What a series of crash points actually exercised. A crash test that never reaches a code path cannot
//! catch its bugs, so every scenario names the counters its key paths must move, and a series of enough
//! points that leaves one at zero fails (`Coverage::missing`).

use serde::Serialize;

/// Counters summed over every generation of every point.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// Generations run (a point runs several: recover, continue, crash again).
    pub generations: u64,
    /// Power losses (crash images built).
    pub power_losses: u64,
    /// Process crashes (the page cache survived into the next generation).
    pub process_crashes: u64,
    /// Recoveries of a file system that an earlier recovery had already recovered and written to.
    pub recoveries_of_recoveries: u64,
    /// Recoveries cut by a second power loss.
    pub recoveries_interrupted: u64,
    /// Commits that found a flush in progress and slept in the log's group commit.
    pub commits_overlapping_flush: u64,
    /// Records appended while a flush was writing.
    pub appends_during_flush: u64,
    /// Transactions submitted while a checkpoint or the background flusher was writing pages.
    pub submits_during_page_writes: u64,
    /// Checkpoints that ran while transactions were submitted and not yet committed.
    pub checkpoints_with_open_transactions: u64,
    /// Pages written by evictions (a client needed a frame and the victim was dirty).
    pub eviction_writes: u64,
    /// Pages written by the background flusher.
    pub background_flush_pages: u64,
    /// Pages restored from the double-write area by recoveries.
    pub dw_restored_pages: u64,
    /// Recoveries that zeroed the valid-looking records of an interrupted flush behind the log's end.
    pub torn_tails_zeroed: u64,
    /// Log records replayed by recoveries.
    pub redo_records: u64,
    /// Page writes checked by the simulator against the write-ahead rule.
    pub wal_rule_checks: u64,
    /// `RWF_ATOMIC` page writes in flight at a power loss (all or nothing).
    pub atomic_writes_in_flight_at_crash: u64,
    /// Crash images given media damage (bit flip, lost or misdirected write in durable sectors).
    pub media_damage: u64,
    /// Of those, recoveries that reported the damage (refused to open).
    pub media_damage_reported: u64,
    /// Size boundaries of the log: appends that crossed a segment's end exactly (the previous record
    /// filled it), with a padding record, or over a rest too short for a record header.
    pub log_segment_ends_exact: u64,
    /// See `log_segment_ends_exact`.
    pub log_segment_ends_padded: u64,
    /// See `log_segment_ends_exact`.
    pub log_segment_ends_skipped: u64,
    /// Flushes whose batch was cut at the group's byte limit, leaving records for the next.
    pub log_batches_capped: u64,
    /// Recoveries whose scan of the double-write area took more than one read (a full read, then a
    /// partial one: the crash scenarios read it a few pages at a time).
    pub dw_scans_past_one_read: u64,
    /// Commits other clients tried after the engine had failed (a failed sync), each refused: fail-stop
    /// seen from every client, not only the one that saw the failure.
    pub commits_refused_after_failure: u64,
}

impl Coverage {
    /// Every counter with its name (the names `required` lists use).
    pub fn named(&self) -> [(&'static str, u64); 24] {
        [
            ("generations", self.generations),
            ("power_losses", self.power_losses),
            ("process_crashes", self.process_crashes),
            ("recoveries_of_recoveries", self.recoveries_of_recoveries),
            ("recoveries_interrupted", self.recoveries_interrupted),
            ("commits_overlapping_flush", self.commits_overlapping_flush),
            ("appends_during_flush", self.appends_during_flush),
            ("submits_during_page_writes", self.submits_during_page_writes),
            ("checkpoints_with_open_transactions", self.checkpoints_with_open_transactions),
            ("eviction_writes", self.eviction_writes),
            ("background_flush_pages", self.background_flush_pages),
            ("dw_restored_pages", self.dw_restored_pages),
            ("torn_tails_zeroed", self.torn_tails_zeroed),
            ("redo_records", self.redo_records),
            ("wal_rule_checks", self.wal_rule_checks),
            ("atomic_writes_in_flight_at_crash", self.atomic_writes_in_flight_at_crash),
            ("media_damage", self.media_damage),
            ("media_damage_reported", self.media_damage_reported),
            ("log_segment_ends_exact", self.log_segment_ends_exact),
            ("log_segment_ends_padded", self.log_segment_ends_padded),
            ("log_segment_ends_skipped", self.log_segment_ends_skipped),
            ("log_batches_capped", self.log_batches_capped),
            ("dw_scans_past_one_read", self.dw_scans_past_one_read),
            ("commits_refused_after_failure", self.commits_refused_after_failure),
        ]
    }

    /// Add another point's counters.
    pub fn add(&mut self, other: &Coverage) {
        macro_rules! sum {
            ($($f:ident),*) => { $(self.$f += other.$f;)* };
        }
        sum!(
            generations,
            power_losses,
            process_crashes,
            recoveries_of_recoveries,
            recoveries_interrupted,
            commits_overlapping_flush,
            appends_during_flush,
            submits_during_page_writes,
            checkpoints_with_open_transactions,
            eviction_writes,
            background_flush_pages,
            dw_restored_pages,
            torn_tails_zeroed,
            redo_records,
            wal_rule_checks,
            atomic_writes_in_flight_at_crash,
            media_damage,
            media_damage_reported,
            log_segment_ends_exact,
            log_segment_ends_padded,
            log_segment_ends_skipped,
            log_batches_capped,
            dw_scans_past_one_read,
            commits_refused_after_failure
        );
    }

    /// Count the log's size boundaries a run crossed (`WalStats::boundaries` at its end and its start).
    pub fn add_log_boundaries(&mut self, now: [u64; 4], since: [u64; 4]) {
        let d = |i: usize| now[i] - since[i];
        self.log_segment_ends_exact += d(0);
        self.log_segment_ends_padded += d(1);
        self.log_segment_ends_skipped += d(2);
        self.log_batches_capped += d(3);
    }

    /// The `required` counters that are still zero.
    pub fn missing(&self, required: &[&'static str]) -> Vec<&'static str> {
        let named = self.named();
        required.iter().copied().filter(|name| named.iter().any(|(n, v)| n == name && *v == 0)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_names_the_zero_counters_only() {
        let mut c = Coverage { eviction_writes: 3, ..Coverage::default() };
        assert_eq!(c.missing(&["eviction_writes", "dw_restored_pages"]), vec!["dw_restored_pages"]);
        c.add(&Coverage { dw_restored_pages: 1, ..Coverage::default() });
        assert!(c.missing(&["eviction_writes", "dw_restored_pages"]).is_empty());
        assert_eq!(c.eviction_writes, 3);
    }
}
