//! Verdicts: what syncbench concludes about the storage, each with advice. Produced by `probe`'s rules,
//! carried in every command's JSON.

use serde::{Deserialize, Serialize};

/// How much a verdict matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Results or durability may not be what they seem.
    Warning,
    /// Writes here are not durable, or the numbers cannot be trusted.
    Critical,
}

crate::core::named::named_enum! {
    /// The verdicts this syncbench concludes, by their stable code: the one table of codes its rules write
    /// and its readers look for. A file keeps the code as a string ([`Verdict::code`]): older files carry
    /// codes since retired (`not_durable_tmpfs`), newer ones codes added since, and both render as written.
    pub enum VerdictCode ("verdict code") {
        /// DIR is on a memory file system (tmpfs, ramfs).
        NotDurableMemoryFs = "not_durable_memory_fs",
        /// Mounted `nobarrier`/`barrier=0`: no cache flushes are sent.
        FlushesDisabled = "flushes_disabled",
        /// Flushes faster than a disk that says it spins can do.
        ImplausibleFlushRate = "implausible_flush_rate",
        /// A spinning disk's flush rate is what a platter can do.
        FlushRatePlausible = "flush_rate_plausible",
        /// Flushes this fast are durable only with power-loss protection.
        FastFlushNeedsPlp = "fast_flush_needs_plp",
        /// DIR is on a loop device: flushes go through a file on another file system.
        LayeredLoop = "layered_loop",
        /// DIR is on overlayfs: writes go to the upper directory's file system.
        LayeredOverlay = "layered_overlay",
        /// DIR is on FUSE: durability is whatever the server does.
        LayeredFuse = "layered_fuse",
        /// DIR is on a network file system.
        LayeredNetwork = "layered_network",
        /// A hypervisor sits between the file system and the disk.
        VirtualMachine = "virtual_machine",
        /// A volatile write cache without FUA: every durable write needs a flush.
        VolatileCacheWithoutFua = "volatile_cache_without_fua",
        /// Mounted `sync`: every write is synchronous.
        SyncMount = "sync_mount",
        /// ext4 `data=journal`: data goes through the journal.
        DataJournal = "data_journal",
        /// Untorn (atomic) writes are available to DIR's files.
        AtomicWritesAvailable = "atomic_writes_available",
        /// The device can write untorn, the file system does not offer it.
        AtomicWritesDeviceOnly = "atomic_writes_device_only",
        /// fsync costs much more than fdatasync here (metadata journaling).
        FsyncSlowerThanFdatasync = "fsync_slower_than_fdatasync",
        /// A file system syncbench does not name.
        UnknownFs = "unknown_fs",
        /// The block device under DIR could not be found.
        DeviceUnknown = "device_unknown",
        /// DIR is on a `syncbench lab` emulated disk.
        EmulatedDisk = "emulated_disk",
        /// The hypervisor took CPU time while measuring.
        CpuSteal = "cpu_steal",
        /// Durable commits that sent no flush to a volatile cache.
        DurableCommitsWithoutFlush = "durable_commits_without_flush",
        /// Flushes completed faster than the device can have done them.
        FlushFasterThanDevice = "flush_faster_than_device",
        /// fsync made the device do more than fdatasync.
        FsyncCostsMoreAtDevice = "fsync_costs_more_at_device",
        /// A dsync write reached the device as a write and a flush (no FUA).
        DsyncWriteBecameWritePlusFlush = "dsync_write_became_write_plus_flush",
        /// A retried fsync returned ok after a failed one lost the data.
        FsyncRetrySucceedsAfterDataLoss = "fsync_retry_succeeds_after_data_loss",
        /// After a failed fsync, reads returned data that was not on disk.
        PageCacheServesLostData = "page_cache_serves_lost_data",
        /// A descriptor opened after the error saw no error.
        FsyncErrorUnseenByLaterDescriptors = "fsync_error_unseen_by_later_descriptors",
        /// `commit` measured a method that is not durable.
        CommitNotDurable = "commit_not_durable",
        /// `pages` ran the mode that does not protect against torn pages.
        PagesNoneUnsafe = "pages_none_unsafe",
        /// Untorn writes are not available for `pages`'s atomic mode.
        PagesAtomicUnsupported = "pages_atomic_unsupported",
        /// The flush burst's sync failed.
        FlushFailed = "flush_failed",
    }
}

/// One conclusion with what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// How much it matters.
    pub severity: Severity,
    /// A stable machine-readable code, e.g. `not_durable_memory_fs` (see [`VerdictCode`]).
    pub code: Code,
    /// What was found, in one or two sentences.
    pub message: String,
    /// What the user can do next.
    pub advice: String,
}

impl Verdict {
    /// A verdict this syncbench concludes.
    pub fn new(
        severity: Severity,
        code: VerdictCode,
        message: impl Into<String>,
        advice: impl Into<String>,
    ) -> Verdict {
        Verdict { severity, code: Code::Known(code), message: message.into(), advice: advice.into() }
    }

    /// Whether this is the verdict `code` (a code this syncbench does not know is none of them).
    pub fn is(&self, code: VerdictCode) -> bool {
        self.code == Code::Known(code)
    }
}

/// A verdict's code as a file holds it: one this syncbench concludes, or one it no longer concludes (an
/// older file's retired code, a newer file's new one), kept as written so that the file reads and writes
/// back unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// A code of this syncbench.
    Known(VerdictCode),
    /// A code this syncbench does not conclude, as written.
    Other(String),
}

impl Code {
    /// The code's name, as in JSON.
    pub fn as_str(&self) -> &str {
        match self {
            Code::Known(code) => code.name(),
            Code::Other(name) => name,
        }
    }

    /// The code of a name.
    pub fn from_name(name: &str) -> Code {
        VerdictCode::from_name(name).map_or_else(|| Code::Other(name.to_string()), Code::Known)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Code {
    fn from(name: &str) -> Code {
        Code::from_name(name)
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Code, D::Error> {
        Ok(Code::from_name(&String::deserialize(deserializer)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_has_its_own_name() {
        let names: std::collections::BTreeSet<&str> = VerdictCode::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), VerdictCode::ALL.len(), "two codes share a name");
        assert!(names.iter().all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())));
    }

    #[test]
    fn a_verdict_is_its_code_and_a_retired_code_still_reads_as_written() {
        let v = Verdict::new(Severity::Warning, VerdictCode::CpuSteal, "m", "a");
        assert_eq!(serde_json::to_value(&v).unwrap()["code"], "cpu_steal");
        assert!(v.is(VerdictCode::CpuSteal) && !v.is(VerdictCode::DataJournal));
        // Written by an older syncbench (tests/fixtures/runs): read, shown as written, none of today's codes.
        let old: Verdict =
            serde_json::from_str(r#"{"severity":"critical","code":"not_durable_tmpfs","message":"m","advice":"a"}"#)
                .unwrap();
        assert_eq!(old.code, "not_durable_tmpfs");
        assert!(VerdictCode::ALL.iter().all(|c| !old.is(*c)));
        assert_eq!(old.code, Code::Other("not_durable_tmpfs".into()));
        let back = serde_json::to_string(&old).unwrap();
        assert!(back.contains(r#""code":"not_durable_tmpfs""#), "{back}");
        // A known code read from a file is the enum, not a string that happens to match.
        let known: Verdict =
            serde_json::from_str(r#"{"severity":"warning","code":"cpu_steal","message":"m","advice":"a"}"#).unwrap();
        assert_eq!(known.code, Code::Known(VerdictCode::CpuSteal));
    }
}
