//! The file-system configurations the experiment runs on, and how each is made and mounted.

use serde::{Deserialize, Serialize};

/// One file system (and journalling mode) to test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FsCase {
    /// ext4 with the default `data=ordered`.
    Ext4,
    /// ext4 with `data=journal`: file data goes through the journal first; the block's in-place write fails.
    Ext4Journal,
    /// ext4 with `data=journal`, failing the journal's copy of the block instead (a journal write error).
    Ext4JournalWrite,
    /// XFS.
    Xfs,
    /// Btrfs (copy-on-write: an overwrite goes to a new location).
    Btrfs,
    /// ext4 (`data=ordered`) with 16 KiB clusters (`bigalloc`): a 16 KiB-aligned range of a file lies at a
    /// 16 KiB-aligned device offset, so a 16 KiB untorn unit covers every 8 or 16 KiB database page. Made
    /// for `powercut db`'s torn-page cells only (not one of [`FsCase::ALL`]).
    Ext4Bigalloc,
}

/// How the failing write is recognised by the image server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Targeting {
    /// Writes overlapping the block's location on the image (found with FIEMAP) fail.
    BlockRange,
    /// Writes carrying the new block's contents fail, wherever they go: needed for copy-on-write file
    /// systems, whose overwrite goes to a location unknown before writeback.
    Content,
}

impl FsCase {
    /// Every case, in the order they run by default.
    pub const ALL: [FsCase; 5] =
        [FsCase::Ext4, FsCase::Ext4Journal, FsCase::Ext4JournalWrite, FsCase::Xfs, FsCase::Btrfs];

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            FsCase::Ext4 => "ext4",
            FsCase::Ext4Bigalloc => "ext4-bigalloc",
            FsCase::Ext4Journal => "ext4-journal",
            FsCase::Ext4JournalWrite => "ext4-journal-write",
            FsCase::Xfs => "xfs",
            FsCase::Btrfs => "btrfs",
        }
    }

    /// The `mount -t` type.
    pub fn fs_type(self) -> &'static str {
        match self {
            FsCase::Ext4 | FsCase::Ext4Journal | FsCase::Ext4JournalWrite | FsCase::Ext4Bigalloc => "ext4",
            FsCase::Xfs => "xfs",
            FsCase::Btrfs => "btrfs",
        }
    }

    /// The `f_type` magic `statfs` reports once mounted: proves the mount happened.
    pub fn magic(self) -> u64 {
        match self {
            FsCase::Ext4 | FsCase::Ext4Journal | FsCase::Ext4JournalWrite | FsCase::Ext4Bigalloc => 0xEF53,
            FsCase::Xfs => 0x5846_5342,
            FsCase::Btrfs => 0x9123_683E,
        }
    }

    /// The mkfs program and its flags (quiet, force, 4 KiB blocks where it matters, no discard: the image
    /// server has no fallocate and a discard would only produce noise).
    pub fn mkfs(self) -> (&'static str, &'static [&'static str]) {
        match self {
            FsCase::Ext4 | FsCase::Ext4Journal | FsCase::Ext4JournalWrite => {
                ("mkfs.ext4", &["-q", "-F", "-b", "4096", "-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1"])
            }
            FsCase::Ext4Bigalloc => (
                "mkfs.ext4",
                &[
                    "-q",
                    "-F",
                    "-b",
                    "4096",
                    "-O",
                    "bigalloc",
                    "-C",
                    "16384",
                    "-E",
                    "nodiscard,lazy_itable_init=1,lazy_journal_init=1",
                ],
            ),
            FsCase::Xfs => ("mkfs.xfs", &["-q", "-f", "-K"]),
            FsCase::Btrfs => ("mkfs.btrfs", &["-q", "-f", "-K"]),
        }
    }

    /// The Debian package that provides the mkfs program.
    pub fn package(self) -> &'static str {
        match self {
            FsCase::Ext4 | FsCase::Ext4Journal | FsCase::Ext4JournalWrite | FsCase::Ext4Bigalloc => "e2fsprogs",
            FsCase::Xfs => "xfsprogs",
            FsCase::Btrfs => "btrfs-progs",
        }
    }

    /// `mount -o` options.
    pub fn mount_options(self) -> &'static str {
        match self {
            FsCase::Ext4 | FsCase::Ext4Bigalloc => "data=ordered",
            FsCase::Ext4Journal | FsCase::Ext4JournalWrite => "data=journal",
            FsCase::Xfs | FsCase::Btrfs => "defaults",
        }
    }

    /// How the failure is aimed at the overwritten block. Content targeting on ext4 `data=journal` hits the
    /// first write that carries the new block: its copy in the journal.
    pub fn targeting(self) -> Targeting {
        match self {
            FsCase::Btrfs | FsCase::Ext4JournalWrite => Targeting::Content,
            _ => Targeting::BlockRange,
        }
    }
}

/// Which sync call the experiment makes after the overwrite (the setup's own sync is always fsync).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SyncCall {
    /// `fsync(2)`.
    #[default]
    Fsync,
    /// `fdatasync(2)`, what most write-ahead logs call.
    Fdatasync,
}

impl SyncCall {
    /// The call's name.
    pub fn name(self) -> &'static str {
        match self {
            SyncCall::Fsync => "fsync",
            SyncCall::Fdatasync => "fdatasync",
        }
    }

    /// Make the call on `fd`.
    pub fn call(self, fd: &std::os::fd::OwnedFd) -> std::io::Result<()> {
        match self {
            SyncCall::Fsync => syncbench_sys::fsync(fd),
            SyncCall::Fdatasync => syncbench_sys::fdatasync(fd),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_calls_report_errors() {
        // A pipe cannot be synced: both calls must return the error, not swallow it.
        let (reader, _writer) = std::io::pipe().unwrap();
        let fd = std::os::fd::OwnedFd::from(reader);
        assert!(SyncCall::Fsync.call(&fd).is_err());
        assert!(SyncCall::Fdatasync.call(&fd).is_err());
        assert_eq!(SyncCall::default().name(), "fsync");
    }

    #[test]
    fn names_are_unique_and_content_targeting_is_for_cow_and_the_journal_copy() {
        for case in FsCase::ALL {
            assert_eq!(FsCase::ALL.iter().filter(|c| c.name() == case.name()).count(), 1, "{case:?}");
            let content = matches!(case, FsCase::Btrfs | FsCase::Ext4JournalWrite);
            assert_eq!(case.targeting() == Targeting::Content, content, "{case:?}");
        }
    }
}
