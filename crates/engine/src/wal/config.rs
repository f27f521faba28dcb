//! How a log is opened: sync method, segment size, group commit knobs, and test-only fault switches.

use crate::storage::{FileOptions, WriteSync};
use std::time::Duration;

pub use crate::storage::method::SyncMethod;

/// The methods the log implements, in the order syncbench lists them: every durable method whose sync is
/// one open flag, one write flag, the ring's linked fdatasync or one sync call after a buffered write, and
/// `write` (no sync at all, NOT durable: for comparison only). `open_sync` and the `+direct` variants
/// other than `open_datasync+direct` are benchmark methods the log does not offer; `Wal::open` refuses them.
pub const LOG_METHODS: [SyncMethod; 7] = [
    SyncMethod::Fsync,
    SyncMethod::Fdatasync,
    SyncMethod::OpenDatasync,
    SyncMethod::OpenDatasyncDirect,
    SyncMethod::Pwritev2Dsync,
    SyncMethod::IoUringFdatasync,
    SyncMethod::Write,
];

/// What the log does for each of its methods (the benchmark's flags and calls, in the storage API's terms).
pub(crate) trait LogMethod: Copy {
    /// Whether the log implements the method.
    fn supported_by_log(self) -> bool;
    /// Open flags of the segment files.
    fn file_options(self) -> FileOptions;
    /// How each write is issued.
    fn write_sync(self) -> WriteSync;
    /// The sync call after the writes, if any.
    fn sync_after_write(self) -> Option<SyncCall>;
}

impl LogMethod for SyncMethod {
    fn supported_by_log(self) -> bool {
        LOG_METHODS.contains(&self)
    }

    fn file_options(self) -> FileOptions {
        match self {
            SyncMethod::OpenDatasync => FileOptions { dsync: true, direct: false },
            SyncMethod::OpenDatasyncDirect => FileOptions { dsync: true, direct: true },
            _ => FileOptions::default(),
        }
    }

    fn write_sync(self) -> WriteSync {
        match self {
            SyncMethod::Pwritev2Dsync => WriteSync::Dsync,
            SyncMethod::IoUringFdatasync => WriteSync::LinkedFdatasync,
            _ => WriteSync::None,
        }
    }

    fn sync_after_write(self) -> Option<SyncCall> {
        match self {
            SyncMethod::Fsync => Some(SyncCall::Fsync),
            SyncMethod::Fdatasync => Some(SyncCall::Fdatasync),
            _ => None,
        }
    }
}

/// A separate sync system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncCall {
    /// `fsync`.
    Fsync,
    /// `fdatasync`.
    Fdatasync,
}

/// Ways to break the log on purpose, so the crash simulator can prove it catches each bug.
/// Never set outside tests.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultSwitches {
    /// Do not fsync the directory after creating or renaming a segment.
    pub skip_dir_fsync: bool,
    /// Do not sync the log after writing (commits are acknowledged while only in the page cache).
    pub skip_log_sync: bool,
    /// After a failed sync, sync again and carry on if that succeeds (the pre-2018 PostgreSQL bug).
    pub retry_fsync_after_error: bool,
    /// A commit whose record a running flush has taken returns at once, before that flush's sync
    /// (an acknowledgement a step too early; only a commit that overlaps a flush can see it).
    pub ack_when_written: bool,
    /// A finished flush publishes everything appended so far as durable, not just its own batch (the
    /// flush horizon off by a batch; only appends made during a flush can see it).
    pub flush_horizon_appended: bool,
    /// Recovery leaves the valid-looking records of an interrupted flush behind the end of the log (a
    /// stale tail; only a crash after the log has written again past the old end can see it).
    pub keep_stale_tail: bool,
    /// Recovery trusts log bytes that are only in the page cache (no fsync of what it read: only a
    /// process crash, whose page cache survives, followed by a power loss can see it).
    pub trust_unsynced_at_open: bool,
    /// Recovery treats a damaged record followed by a later flush's records as the end of the log (silent
    /// truncation instead of a corruption report; only media damage can see it).
    pub corruption_as_end: bool,
    /// A failed flush fails only its leader's call and the log carries on (the error reported once: only
    /// the clients that commit after the failure can see it).
    pub fail_only_the_leader: bool,
}

/// Everything `Wal::open` needs besides the storage and directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalConfig {
    /// How writes are made durable.
    pub sync_method: SyncMethod,
    /// Size of each segment file (a multiple of 4096). An existing log keeps the size it was created with.
    pub segment_bytes: u64,
    /// Segment files created ahead of the write position when the log is opened, so the first commits
    /// after open do not pay for zero-filling.
    pub preallocate_segments: u32,
    /// Segments retired by `truncate_before` are renamed to future segment numbers (up to this many
    /// spare files) instead of being removed.
    pub max_spare_segments: u32,
    /// Group commit on (a leader syncs for everyone waiting) or off (every commit does its own sync).
    pub group_commit: bool,
    /// How long a leader waits for more commits to join before it flushes (PostgreSQL `commit_delay`).
    pub commit_delay: Duration,
    /// The leader waits only when at least this many other commits are in progress (`commit_siblings`).
    pub commit_siblings: u32,
    /// A waiting leader stops waiting as soon as this many commits, the leader included, wait for the next
    /// flush (MySQL's `binlog_group_commit_sync_no_delay_count`); 0 = always wait the whole `commit_delay`
    /// (PostgreSQL). The wait then costs only the time the group needs to form, not a fixed sleep.
    pub commit_delay_count: u32,
    /// After its own record is durable, a leader may flush up to this many more batches itself when
    /// records are waiting, instead of handing the lead to a sleeping thread (whose wake-up, on a
    /// virtual machine, can cost as much as a fast flush). 0 = PostgreSQL's behaviour.
    pub leader_extra_batches: u32,
    /// Most bytes one leader writes per flush (RocksDB caps a group at 1 MiB), to bound latency.
    pub max_group_bytes: usize,
    /// After a flush, the next one waits for the commits that flush released to come back with their next
    /// record, at most this percentage of the recent flush time; it starts the moment the last of them is
    /// back (that commit leads it). Without the wait a closed loop of N clients splits into two halves that
    /// alternate flushes (N/2 commits per flush, each commit waiting two flushes). 0 = start at once.
    pub rejoin_wait_pct: u32,
    /// Test-only switches that break the log on purpose.
    #[doc(hidden)]
    pub faults: FaultSwitches,
}

impl Default for WalConfig {
    fn default() -> WalConfig {
        WalConfig {
            sync_method: SyncMethod::Fdatasync,
            segment_bytes: 16 << 20,
            preallocate_segments: 1,
            max_spare_segments: 4,
            group_commit: true,
            commit_delay: Duration::ZERO,
            commit_siblings: 5,
            commit_delay_count: 0,
            leader_extra_batches: 0,
            max_group_bytes: 1 << 20,
            rejoin_wait_pct: 25,
            faults: FaultSwitches::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_write_is_unsafe_among_the_log_methods() {
        for m in LOG_METHODS {
            assert_eq!(m.durable(), m != SyncMethod::Write, "{m}");
        }
        assert!(!SyncMethod::OpenSync.supported_by_log() && SyncMethod::Write.supported_by_log());
    }

    /// The log's flags and calls are the benchmark's for every method it shares (one vocabulary, so
    /// `commit --method X` and `run`'s X make the same system calls).
    #[test]
    fn every_log_method_makes_the_benchmarks_calls() {
        use crate::storage::method::{SyncCall as BenchSync, WriteCall};
        use syncbench_sys::OpenSync;
        for m in LOG_METHODS {
            let flags = m.open_flags();
            assert_eq!(m.file_options().dsync, flags.sync == OpenSync::Dsync, "{m}");
            assert_eq!(m.file_options().direct, flags.direct, "{m}");
            let write = match m.write_call() {
                WriteCall::Pwrite => WriteSync::None,
                WriteCall::Pwritev2(_) => WriteSync::Dsync,
                WriteCall::UringLinkedFdatasync => WriteSync::LinkedFdatasync,
            };
            assert_eq!(m.write_sync(), write, "{m}");
            let sync = match m.sync_call() {
                BenchSync::Fsync => Some(SyncCall::Fsync),
                BenchSync::Fdatasync => Some(SyncCall::Fdatasync),
                BenchSync::None | BenchSync::SyncFileRange => None,
            };
            assert_eq!(m.sync_after_write(), sync, "{m}");
        }
    }

    #[test]
    fn every_durable_method_has_exactly_one_way_to_be_durable() {
        for m in LOG_METHODS {
            let ways = usize::from(m.file_options().dsync)
                + usize::from(m.write_sync() != WriteSync::None)
                + usize::from(m.sync_after_write().is_some());
            assert_eq!(ways, usize::from(m.durable()), "{m:?}");
        }
    }
}
