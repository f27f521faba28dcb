//! The deliberate engine bugs `crashtest --engine-bug` switches on (hidden from `--help`; for tests): one
//! per class of crash the tester models, each of which only that class can see, plus the log's classics.

use syncbench_engine::pages::FaultSwitches as PageFaults;
use syncbench_engine::wal::FaultSwitches as LogFaults;

/// A deliberate engine bug, to show the crash test catches it (test-only; the engine's fault switches).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineBug {
    /// The log does not fsync its directory after creating or renaming a segment.
    SkipDirFsync,
    /// The log acknowledges commits without syncing.
    SkipLogSync,
    /// A failed fsync is retried and the log carries on when the retry succeeds.
    RetryFsync,
    /// A commit whose record a running flush took returns before that flush's sync (concurrency).
    AckWhenWritten,
    /// A flush publishes what was appended during it as durable (concurrency).
    FlushHorizonAppended,
    /// Recovery leaves an interrupted flush's valid records behind the end (generations).
    KeepStaleTail,
    /// Recovery trusts log bytes only in the page cache (process crashes).
    TrustUnsyncedAtOpen,
    /// Recovery treats a damaged record followed by later flushes as the end (media damage).
    CorruptionAsEnd,
    /// A failed flush fails only its leader's commit and the log carries on (the clients after it).
    FailOnlyTheLeader,
    /// The double-write flush skips its fsync.
    DwSkipFsync,
    /// An evicted page's double-write slot is reused before its home write is synced.
    DwReuseSlotBeforeHomeSync,
    /// `pipelined` dw: a page goes home relying on a ring copy before the ring's sync completed.
    DwHomeBeforeSync,
    /// `pipelined` dw: a ring batch is overwritten before the home writes relying on it are synced.
    DwRecycleBeforeHomeSync,
    /// `pipelined` dw: a ring copy from an earlier checkpoint cycle protects a page changed since.
    DwTrustEarlierCycle,
    /// An evicted page is written without the write-ahead step (simfs's rule).
    EvictSkipWriteAhead,
    /// Redo starts one record after the checkpoint's redo point.
    RedoSkipsFirstRecord,
    /// `atomic` mode writes pages with plain, tearable writes.
    AtomicPlainWrite,
}

impl EngineBug {
    /// The `--mode` names a page-store bug applies to, and how to say so (None: every mode).
    pub fn needs(self) -> Option<(&'static [&'static str], &'static str)> {
        const PAGES: &[&str] = &["fpw", "dw", "atomic", "none"];
        match self {
            EngineBug::DwSkipFsync
            | EngineBug::DwReuseSlotBeforeHomeSync
            | EngineBug::DwHomeBeforeSync
            | EngineBug::DwRecycleBeforeHomeSync
            | EngineBug::DwTrustEarlierCycle => Some((&["dw"], "--mode dw")),
            EngineBug::AtomicPlainWrite => Some((&["atomic"], "--mode atomic")),
            EngineBug::EvictSkipWriteAhead | EngineBug::RedoSkipsFirstRecord => Some((PAGES, "a page-store mode")),
            _ => None,
        }
    }

    /// The engine's fault switches for `bug` (the log's break the log of every mode: the page store
    /// commits through the same log).
    pub fn switches(bug: Option<EngineBug>) -> (LogFaults, PageFaults) {
        let on = |b| bug == Some(b);
        let log = LogFaults {
            skip_dir_fsync: on(EngineBug::SkipDirFsync),
            skip_log_sync: on(EngineBug::SkipLogSync),
            retry_fsync_after_error: on(EngineBug::RetryFsync),
            ack_when_written: on(EngineBug::AckWhenWritten),
            flush_horizon_appended: on(EngineBug::FlushHorizonAppended),
            keep_stale_tail: on(EngineBug::KeepStaleTail),
            trust_unsynced_at_open: on(EngineBug::TrustUnsyncedAtOpen),
            corruption_as_end: on(EngineBug::CorruptionAsEnd),
            fail_only_the_leader: on(EngineBug::FailOnlyTheLeader),
        };
        let pages = PageFaults {
            dw_skip_fsync: on(EngineBug::DwSkipFsync),
            dw_reuse_slot_before_home_sync: on(EngineBug::DwReuseSlotBeforeHomeSync),
            dw_home_before_sync: on(EngineBug::DwHomeBeforeSync),
            dw_recycle_before_home_sync: on(EngineBug::DwRecycleBeforeHomeSync),
            dw_trust_earlier_cycle: on(EngineBug::DwTrustEarlierCycle),
            evict_skip_write_ahead: on(EngineBug::EvictSkipWriteAhead),
            redo_skips_first_record: on(EngineBug::RedoSkipsFirstRecord),
            atomic_plain_write: on(EngineBug::AtomicPlainWrite),
            ..PageFaults::default()
        };
        (log, pages)
    }
}
