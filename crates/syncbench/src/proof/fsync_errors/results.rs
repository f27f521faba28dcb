//! What one run found, per file system, and what the ATC'20 paper reported for the same file system.
//!
//! Outcomes are enums written as plain strings, so that JSON readers need no enum table: a call is `ok` or
//! an errno name (`EIO`) ([`CallOutcome`]); a read of the overwritten block is `new`, `old`, `other` or an
//! errno name ([`BlockRead`]).

use crate::proof::lab::cases::{FsCase, SyncCall, Targeting};
use serde::Serialize;
use std::io;

/// The `fsync_errors` payload of the JSON envelope.
#[derive(Clone, Debug, Serialize)]
pub struct Payload {
    /// What the experiment found.
    pub fsync_errors: Report,
}

/// Results for every file system requested.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// One entry per file system, in the order they ran.
    pub results: Vec<FsResult>,
    /// The lesson for application writers, derived from the observations.
    pub conclusion: Vec<String>,
}

/// One file system's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct FsResult {
    /// `ext4`, `ext4-journal`, `xfs` or `btrfs`.
    pub fs: FsCase,
    /// The mount type.
    pub fs_type: String,
    /// The mount options used.
    pub mount_options: String,
    /// The sync call the steps make (the `fsync_*` observations name the step, whichever call it was).
    pub sync_call: SyncCall,
    /// Why the case did not run (a missing mkfs program), if it did not.
    pub skipped: Option<String>,
    /// What went wrong while setting up or running, if anything did.
    pub error: Option<String>,
    /// What this kernel did, when the experiment ran to the end.
    pub observed: Option<Observations>,
    /// What Rebello et al. (USENIX ATC'20) reported for this file system.
    pub paper: PaperFinding,
}

impl FsResult {
    /// A result with nothing observed yet.
    pub fn new(fs: FsCase, sync_call: SyncCall) -> FsResult {
        FsResult {
            fs,
            fs_type: fs.fs_type().to_string(),
            mount_options: fs.mount_options().to_string(),
            sync_call,
            skipped: None,
            error: None,
            observed: None,
            paper: PaperFinding::for_case(fs),
        }
    }
}

/// Every step of the experiment, in order (the JSON keeps this order: the phases are flattened into it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Observations {
    /// How the failing write was recognised.
    pub targeting: Option<Targeting>,
    /// Where the overwritten block lives on the image (block-range targeting only).
    pub target_image_offset_bytes: Option<u64>,
    /// Size of the overwritten block.
    pub block_size_bytes: u64,
    /// While every write of the block fails.
    #[serde(flatten)]
    pub failing: WhileFailing,
    /// Once the device works again.
    #[serde(flatten)]
    pub recovered: AfterRecovery,
    /// Creating a new file after the error (while writes fail): `ok`, or the errno (`EROFS` once the
    /// journal has aborted).
    pub new_file_after_error: CallOutcome,
    /// Writes the image server failed in total.
    pub injected_write_errors_total: u64,
}

#[cfg(test)]
impl Observations {
    /// For tests: ext4 as the ATC'20 paper found it. The first fsync fails, the retry claims success, the
    /// page cache serves the lost data while the disk holds the old.
    pub fn ext4_as_reported() -> Observations {
        Observations {
            targeting: None,
            target_image_offset_bytes: None,
            block_size_bytes: 4096,
            failing: WhileFailing {
                fsync_first: CallOutcome::Failed("EIO".into()),
                injected_write_errors_at_first_fsync: 1,
                fsync_second: CallOutcome::Ok,
                fsync_fd_opened_before_error: CallOutcome::Ok,
                fsync_fd_opened_after_error: CallOutcome::Ok,
                read_in_cache: BlockRead::New,
            },
            recovered: AfterRecovery {
                fsync_after_device_recovers: CallOutcome::Ok,
                rewritten_after_device_recovers: false,
                read_after_drop_caches: BlockRead::Old,
                read_after_remount: BlockRead::Old,
                image_at_target: None,
            },
            new_file_after_error: CallOutcome::Ok,
            injected_write_errors_total: 1,
        }
    }
}

/// The syncs and the cached read while every write of the block fails.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhileFailing {
    /// First fsync on the writer's descriptor after the overwrite whose writeback fails.
    pub fsync_first: CallOutcome,
    /// Writes the image server had failed by the time the first fsync returned (0: the failure was not
    /// reached, so the first fsync cannot have seen it).
    pub injected_write_errors_at_first_fsync: u64,
    /// Second fsync on the same descriptor, nothing changed in between (the "retry").
    pub fsync_second: CallOutcome,
    /// fsync on a descriptor opened before the failure.
    pub fsync_fd_opened_before_error: CallOutcome,
    /// fsync on a descriptor opened after the failure.
    pub fsync_fd_opened_after_error: CallOutcome,
    /// The block read back while the failure is still armed (from the page cache, if it kept it).
    pub read_in_cache: BlockRead,
}

/// What a sync, the disk and the image hold once writes work again.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AfterRecovery {
    /// fsync on the writer's descriptor after the device works again.
    pub fsync_after_device_recovers: CallOutcome,
    /// Whether anything wrote the block again once the device worked (false: the failed page was clean).
    pub rewritten_after_device_recovers: bool,
    /// The block read after dropping the page cache (what the disk holds).
    pub read_after_drop_caches: BlockRead,
    /// The block read after unmounting and mounting again.
    pub read_after_remount: BlockRead,
    /// The bytes at the block's location on the image, read directly (block-range targeting only).
    pub image_at_target: Option<BlockRead>,
}

/// What the paper (and its CuttleFS model) reported, in the same vocabulary as [`Observations`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PaperFinding {
    /// First fsync after the failed writeback.
    pub fsync_first: String,
    /// A retried fsync.
    pub fsync_second: String,
    /// Other descriptors.
    pub other_descriptors: String,
    /// The page cache's content after the error.
    pub read_in_cache: String,
    /// A sync once the device works again.
    pub fsync_after_recovery: String,
    /// After the cache is dropped.
    pub read_after_eviction: String,
    /// Whether the file system stays writable.
    pub new_file_after_error: String,
    /// One sentence of context.
    pub note: String,
    /// `fsync_first` as an outcome, where the paper gives a definite one (compared with this kernel's).
    #[serde(skip)]
    pub definite_fsync_first: Option<CallOutcome>,
    /// `read_in_cache` as a read, where the paper gives a definite one.
    #[serde(skip)]
    pub definite_read_in_cache: Option<BlockRead>,
}

impl PaperFinding {
    /// The paper's finding for one file system (USENIX ATC'20 §4 and the CuttleFS `--fsync-behavior` model).
    pub fn for_case(fs: FsCase) -> PaperFinding {
        if fs == FsCase::Ext4JournalWrite {
            return PaperFinding::journal_write_failure();
        }
        let eio = || CallOutcome::Failed("EIO".into());
        let ((first, definite_first), others, cache, note) = match fs {
            FsCase::Ext4Journal => (
                ("ok (error reported late, on a later fsync)", CallOutcome::Ok),
                "EIO once on each descriptor open at the failure",
                BlockRead::New,
                "data=journal does not report the failure on the fsync that hit it",
            ),
            FsCase::Btrfs => (
                ("EIO", eio()),
                "EIO on every descriptor",
                BlockRead::Old,
                "copy-on-write: the inode reverts to the old blocks and the failed pages are dropped",
            ),
            _ => (
                ("EIO", eio()),
                "EIO once on each descriptor open at the failure",
                BlockRead::New,
                "pages marked clean; the new data stays in memory although it is not on disk",
            ),
        };
        PaperFinding {
            fsync_first: first.to_string(),
            definite_fsync_first: Some(definite_first),
            definite_read_in_cache: Some(cache.clone()),
            fsync_second: "ok (pages already clean)".to_string(),
            other_descriptors: others.to_string(),
            read_in_cache: cache.to_string(),
            fsync_after_recovery: "ok, nothing written again (pages clean)".to_string(),
            read_after_eviction: "old (the new data is lost)".to_string(),
            new_file_after_error: "ok (only a data block failed)".to_string(),
            note: note.to_string(),
        }
    }

    /// The paper reports only that journal and metadata write failures make the file system unavailable.
    fn journal_write_failure() -> PaperFinding {
        let unknown = || "—".to_string();
        PaperFinding {
            fsync_first: "an error (not detailed in the paper)".to_string(),
            fsync_second: unknown(),
            other_descriptors: unknown(),
            read_in_cache: unknown(),
            fsync_after_recovery: unknown(),
            read_after_eviction: unknown(),
            new_file_after_error: "fails: the file system becomes unavailable".to_string(),
            note: "a failed journal write makes the file system unavailable (ext4 aborts the journal)".to_string(),
            definite_fsync_first: None,
            definite_read_in_cache: None,
        }
    }
}

/// What a call returned: written `ok`, or the errno name of its failure (`EIO`), or the failure's
/// message when it has no errno.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    /// It succeeded.
    Ok,
    /// It failed: the errno name, or the message.
    Failed(String),
}

impl CallOutcome {
    /// The outcome of a call's result.
    pub fn of<T>(result: &io::Result<T>) -> CallOutcome {
        match result {
            Ok(_) => CallOutcome::Ok,
            Err(e) => CallOutcome::Failed(errno_text(e)),
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        *self == CallOutcome::Ok
    }

    /// The name written to JSON, CSV and the tables.
    pub fn name(&self) -> &str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Failed(why) => why,
        }
    }
}

/// What a read of the overwritten block found: written `new`, `old`, `other`, or the errno name of a
/// failed read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockRead {
    /// The contents written before the failure (the ones whose writeback failed).
    New,
    /// The contents the block held before (synced before the failure was armed).
    Old,
    /// Neither.
    Other,
    /// The read failed: the errno name, or the message.
    Failed(String),
}

impl BlockRead {
    /// Whether `block` holds the `old` contents, the `new` ones, or something else.
    pub fn classify(block: &[u8], old: &[u8], new: &[u8]) -> BlockRead {
        if block == new {
            BlockRead::New
        } else if block == old {
            BlockRead::Old
        } else {
            BlockRead::Other
        }
    }

    /// The name written to JSON, CSV and the tables.
    pub fn name(&self) -> &str {
        match self {
            BlockRead::New => "new",
            BlockRead::Old => "old",
            BlockRead::Other => "other",
            BlockRead::Failed(why) => why,
        }
    }
}

/// Both outcome types are written as their names.
macro_rules! outcome_as_name {
    ($($ty:ty),*) => {$(
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.name())
            }
        }
    )*};
}

outcome_as_name!(CallOutcome, BlockRead);

/// The errno name of an error, or its message.
pub fn errno_text(err: &io::Error) -> String {
    syncbench_sys::errno_name(err).map(str::to_string).unwrap_or_else(|| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_outcomes_are_written_as_ok_or_errno_names() {
        let json = |o: CallOutcome| serde_json::to_string(&o).unwrap();
        assert_eq!(json(CallOutcome::of(&Ok(()))), r#""ok""#);
        assert_eq!(json(CallOutcome::of::<()>(&Err(io::Error::from_raw_os_error(libc::EIO)))), r#""EIO""#);
        assert_eq!(json(CallOutcome::of::<()>(&Err(io::Error::other("boom")))), r#""boom""#);
        assert!(CallOutcome::of(&Ok(())).is_ok() && !CallOutcome::Failed("EIO".into()).is_ok());
    }

    #[test]
    fn blocks_are_classified_by_exact_content() {
        let (old, new) = ([1u8; 8], [2u8; 8]);
        assert_eq!(BlockRead::classify(&new, &old, &new), BlockRead::New);
        assert_eq!(BlockRead::classify(&old, &old, &new), BlockRead::Old);
        let mut mixed = old;
        mixed[7] = 2;
        assert_eq!(BlockRead::classify(&mixed, &old, &new), BlockRead::Other);
        let names: Vec<String> = [BlockRead::New, BlockRead::Old, BlockRead::Other, BlockRead::Failed("EIO".into())]
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        assert_eq!(names, [r#""new""#, r#""old""#, r#""other""#, r#""EIO""#]);
    }

    /// The phases are flattened: the JSON has the keys of the v1 files (tests/fixtures/v1/fsync_errors.json),
    /// in their order.
    #[test]
    fn observations_keep_the_v1_keys_in_order() {
        let v1 = [
            "targeting",
            "target_image_offset_bytes",
            "block_size_bytes",
            "fsync_first",
            "injected_write_errors_at_first_fsync",
            "fsync_second",
            "fsync_fd_opened_before_error",
            "fsync_fd_opened_after_error",
            "read_in_cache",
            "fsync_after_device_recovers",
            "rewritten_after_device_recovers",
            "read_after_drop_caches",
            "read_after_remount",
            "image_at_target",
            "new_file_after_error",
            "injected_write_errors_total",
        ];
        let text = serde_json::to_string(&Observations::ext4_as_reported()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value.as_object().unwrap().len(), v1.len(), "{text}");
        let at: Vec<usize> = v1.iter().map(|k| text.find(&format!("\"{k}\":")).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(text.contains(r#""fsync_first":"EIO","#) && text.contains(r#""read_in_cache":"new","#), "{text}");
    }

    #[test]
    fn paper_says_btrfs_reverts_and_ext4_journal_reports_late() {
        assert_eq!(PaperFinding::for_case(FsCase::Btrfs).read_in_cache, "old");
        assert_eq!(PaperFinding::for_case(FsCase::Xfs).read_in_cache, "new");
        assert!(PaperFinding::for_case(FsCase::Ext4Journal).fsync_first.contains("late"));
    }
}
