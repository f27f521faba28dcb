//! The durable-write methods, one vocabulary for the benchmark and the engine: their names (VISION.md,
//! PostgreSQL's `wal_sync_method`), whether each is durable, the flags a file is opened with and which
//! write and sync calls a commit makes. `syncbench` runs all of them against a file; the engine's log
//! implements the subset it lists (`syncbench_engine::wal::LOG_METHODS`).

use syncbench_sys::{OpenFlags, OpenSync as SyncFlag, RwFlag};

/// One way to make a write durable (or, for `write`, `direct` and `sync_file_range`, not). Its JSON name is
/// [`SyncMethod::name`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, strum::IntoStaticStr)]
pub enum SyncMethod {
    /// `O_DSYNC`, buffered (what PostgreSQL's `open_datasync` really does by default).
    #[strum(serialize = "open_datasync")]
    OpenDatasync,
    /// write, then `fdatasync`.
    #[default]
    #[strum(serialize = "fdatasync")]
    Fdatasync,
    /// write, then `fsync`.
    #[strum(serialize = "fsync")]
    Fsync,
    /// `O_SYNC`, buffered.
    #[strum(serialize = "open_sync")]
    OpenSync,
    /// `O_DSYNC | O_DIRECT` (what pg_test_fsync calls open_datasync).
    #[strum(serialize = "open_datasync+direct")]
    OpenDatasyncDirect,
    /// `O_DIRECT`, write, then `fdatasync`.
    #[strum(serialize = "fdatasync+direct")]
    FdatasyncDirect,
    /// `O_DIRECT`, write, then `fsync`.
    #[strum(serialize = "fsync+direct")]
    FsyncDirect,
    /// `O_SYNC | O_DIRECT`.
    #[strum(serialize = "open_sync+direct")]
    OpenSyncDirect,
    /// `pwritev2(RWF_DSYNC)`: O_DSYNC for one write.
    #[strum(serialize = "pwritev2_dsync")]
    Pwritev2Dsync,
    /// `pwritev2(RWF_SYNC)`: O_SYNC for one write.
    #[strum(serialize = "pwritev2_sync")]
    Pwritev2Sync,
    /// io_uring write linked (IOSQE_IO_LINK) to an fdatasync.
    #[strum(serialize = "io_uring_fdatasync")]
    IoUringFdatasync,
    /// write, then `sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER)`: NOT durable (no cache flush, no metadata).
    #[strum(serialize = "sync_file_range")]
    SyncFileRange,
    /// `O_DIRECT` alone: NOT durable (the device's volatile cache is not flushed).
    #[strum(serialize = "direct")]
    Direct,
    /// write alone: NOT durable (lands in the page cache).
    #[strum(serialize = "write")]
    Write,
    /// write, close, then `fsync` on a new descriptor: the name files from before section (d) was
    /// measured as `fsync` with a descriptor shape gave that case. Read back and shown as written; not in
    /// [`SyncMethod::ALL`], so never planned or accepted on the command line.
    #[strum(serialize = "fsync_after_close")]
    FsyncAfterClose,
}

impl serde::Serialize for SyncMethod {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for SyncMethod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        let legacy = SyncMethod::FsyncAfterClose;
        let known = if name == legacy.name() { Some(legacy) } else { SyncMethod::from_name(&name) };
        known.ok_or_else(|| serde::de::Error::custom(format!("unknown sync method '{name}'")))
    }
}

/// How the data reaches the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteCall {
    /// `pwrite(2)`.
    Pwrite,
    /// `pwritev2(2)` with a per-write flag.
    Pwritev2(RwFlag),
    /// io_uring write linked to fdatasync (the sync is part of the write call).
    UringLinkedFdatasync,
}

/// What runs after the writes of a commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncCall {
    /// Nothing (the open flag, the write flag or the ring did it, or nothing does).
    None,
    /// `fsync(2)`.
    Fsync,
    /// `fdatasync(2)`.
    Fdatasync,
    /// `sync_file_range` over the bytes the commit wrote.
    SyncFileRange,
}

/// `FromStr` by name (the error: `unknown WHAT 'text'`) and `Display` as the name (padded as a width
/// asks) for an enum of named values with `fn name(self) -> &'static str` and
/// `fn from_name(&str) -> Option<Self>`: one way for every such enum to be typed, parsed and printed.
#[macro_export]
macro_rules! name_traits {
    ($type:ident, $what:literal) => {
        impl ::std::str::FromStr for $type {
            type Err = String;

            /// By JSON name.
            fn from_str(text: &str) -> Result<Self, String> {
                $type::from_name(text).ok_or_else(|| format!("unknown {} '{text}'", $what))
            }
        }

        impl ::std::fmt::Display for $type {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.pad(self.name())
            }
        }
    };
}

name_traits!(SyncMethod, "sync method");

impl SyncMethod {
    /// Every method, in the order the table lists them (pg_test_fsync's order first).
    pub const ALL: [SyncMethod; 14] = [
        SyncMethod::OpenDatasync,
        SyncMethod::Fdatasync,
        SyncMethod::Fsync,
        SyncMethod::OpenSync,
        SyncMethod::OpenDatasyncDirect,
        SyncMethod::FdatasyncDirect,
        SyncMethod::FsyncDirect,
        SyncMethod::OpenSyncDirect,
        SyncMethod::Pwritev2Dsync,
        SyncMethod::Pwritev2Sync,
        SyncMethod::IoUringFdatasync,
        SyncMethod::SyncFileRange,
        SyncMethod::Direct,
        SyncMethod::Write,
    ];

    /// The name users type and see (VISION.md vocabulary; the table is the variants' `strum` names).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The method called `name`, if any.
    pub fn from_name(name: &str) -> Option<SyncMethod> {
        SyncMethod::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether data is on stable storage when a commit by this method returns (on an honest device).
    pub fn durable(self) -> bool {
        !matches!(self, SyncMethod::Write | SyncMethod::Direct | SyncMethod::SyncFileRange)
    }

    /// The flags the file is opened with.
    pub fn open_flags(self) -> OpenFlags {
        use SyncMethod::*;
        let sync = match self {
            OpenDatasync | OpenDatasyncDirect => SyncFlag::Dsync,
            OpenSync | OpenSyncDirect => SyncFlag::Sync,
            _ => SyncFlag::None,
        };
        let direct = matches!(self, OpenDatasyncDirect | FdatasyncDirect | FsyncDirect | OpenSyncDirect | Direct);
        OpenFlags { sync, direct }
    }

    /// Whether the method uses O_DIRECT (aligned buffers, offsets and sizes).
    pub fn is_direct(self) -> bool {
        self.open_flags().direct
    }

    /// How each write is issued.
    pub fn write_call(self) -> WriteCall {
        match self {
            SyncMethod::Pwritev2Dsync => WriteCall::Pwritev2(RwFlag::Dsync),
            SyncMethod::Pwritev2Sync => WriteCall::Pwritev2(RwFlag::Sync),
            SyncMethod::IoUringFdatasync => WriteCall::UringLinkedFdatasync,
            _ => WriteCall::Pwrite,
        }
    }

    /// What follows the writes.
    pub fn sync_call(self) -> SyncCall {
        match self {
            SyncMethod::Fsync | SyncMethod::FsyncDirect | SyncMethod::FsyncAfterClose => SyncCall::Fsync,
            SyncMethod::Fdatasync | SyncMethod::FdatasyncDirect => SyncCall::Fdatasync,
            SyncMethod::SyncFileRange => SyncCall::SyncFileRange,
            _ => SyncCall::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for m in SyncMethod::ALL {
            assert_eq!(SyncMethod::from_name(m.name()), Some(m));
        }
        let mut names: Vec<_> = SyncMethod::ALL.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SyncMethod::ALL.len());
        assert_eq!(SyncMethod::from_name("fsync_writethrough"), None);
        let err = "fsync_writethrough".parse::<SyncMethod>().unwrap_err();
        assert_eq!(err, "unknown sync method 'fsync_writethrough'");
        assert_eq!(format!("[{:>7}]", SyncMethod::Fsync), "[  fsync]");
    }

    /// JSON carries the same names users type; a file from before (d) measured plain fsync still reads, and
    /// a name nobody defined is refused by name.
    #[test]
    fn json_names_are_the_user_facing_names() {
        for m in SyncMethod::ALL {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<SyncMethod>(&json).unwrap(), m);
        }
        let old: SyncMethod = serde_json::from_str("\"fsync_after_close\"").unwrap();
        assert_eq!(
            (old, serde_json::to_string(&old).unwrap().as_str()),
            (SyncMethod::FsyncAfterClose, "\"fsync_after_close\"")
        );
        assert_eq!(SyncMethod::from_name("fsync_after_close"), None, "not planned or typed");
        let err = serde_json::from_str::<SyncMethod>("\"fsync_writethrough\"").unwrap_err().to_string();
        assert!(err.contains("unknown sync method 'fsync_writethrough'"), "{err}");
    }

    #[test]
    fn exactly_three_methods_are_not_durable() {
        let not: Vec<_> = SyncMethod::ALL.iter().filter(|m| !m.durable()).map(|m| m.name()).collect();
        assert_eq!(not, ["sync_file_range", "direct", "write"]);
    }
}
