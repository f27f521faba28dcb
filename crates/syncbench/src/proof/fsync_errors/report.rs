//! The tables (this kernel next to the ATC'20 paper, one per file system) and the plain conclusion.

use super::results::{BlockRead, FsResult, Observations};
use crate::core::verdict::{Severity, Verdict, VerdictCode};
use comfy_table::{Table, presets};

/// Rows of one file system's table: step, this kernel, the paper.
fn rows(seen: &Observations, result: &FsResult) -> Vec<[String; 3]> {
    let paper = &result.paper;
    let call = result.sync_call.name();
    let dash = || "—".to_string();
    let first = format!(
        "{} (image writes failed so far: {})",
        seen.failing.fsync_first, seen.failing.injected_write_errors_at_first_fsync
    );
    let recovered = format!(
        "{}, {}",
        seen.recovered.fsync_after_device_recovers,
        if seen.recovered.rewritten_after_device_recovers { "block written again" } else { "nothing written again" }
    );
    vec![
        [format!("first {call} after the failed writeback"), first, paper.fsync_first.clone()],
        [
            format!("second {call}, same descriptor (the retry)"),
            seen.failing.fsync_second.to_string(),
            paper.fsync_second.clone(),
        ],
        [
            format!("{call}, descriptor opened before the error"),
            seen.failing.fsync_fd_opened_before_error.to_string(),
            paper.other_descriptors.clone(),
        ],
        [
            format!("{call}, descriptor opened after the error"),
            seen.failing.fsync_fd_opened_after_error.to_string(),
            dash(),
        ],
        ["read of the block, page cache".into(), seen.failing.read_in_cache.to_string(), paper.read_in_cache.clone()],
        [format!("{call} once the device works again"), recovered, paper.fsync_after_recovery.clone()],
        [
            "read after dropping the page cache".into(),
            seen.recovered.read_after_drop_caches.to_string(),
            paper.read_after_eviction.clone(),
        ],
        [
            "read after unmount and mount".into(),
            seen.recovered.read_after_remount.to_string(),
            paper.read_after_eviction.clone(),
        ],
        [
            "the block's location on the image".into(),
            seen.recovered.image_at_target.as_ref().map_or_else(dash, BlockRead::to_string),
            dash(),
        ],
        [
            "creating a new file afterwards".into(),
            seen.new_file_after_error.to_string(),
            paper.new_file_after_error.clone(),
        ],
    ]
}

/// One file system's table; `markdown` picks the Markdown preset.
pub fn table(result: &FsResult, markdown: bool) -> Option<Table> {
    let seen = result.observed.as_ref()?;
    let mut table = Table::new();
    table.load_preset(if markdown { presets::ASCII_MARKDOWN } else { presets::UTF8_FULL_CONDENSED });
    table.set_header(["step", "this kernel", "ATC'20 paper (fsync)"]);
    for row in rows(seen, result) {
        table.add_row(row);
    }
    Some(table)
}

/// The heading of one file system's section.
pub fn heading(result: &FsResult) -> String {
    format!("{} ({}, {}, {})", result.fs.name(), result.fs_type, result.mount_options, result.sync_call.name())
}

/// Everything, as text: the conclusion first (the answer), then a heading and a table (or why there is
/// none) per file system.
pub fn render(results: &[FsResult], conclusion: &[String], markdown: bool) -> String {
    let mut out = String::new();
    out.push_str(if markdown { "### Conclusion\n\n" } else { "Conclusion\n" });
    for line in conclusion {
        out.push_str(&format!("{}{line}\n", if markdown { "- " } else { "  * " }));
    }
    out.push('\n');
    for result in results {
        out.push_str(&if markdown { format!("### {}\n\n", heading(result)) } else { format!("{}\n", heading(result)) });
        if let Some(why) = &result.skipped {
            out.push_str(&format!("skipped: {why}\n\n"));
        } else if let Some(err) = &result.error {
            out.push_str(&format!("failed: {err}\n\n"));
        } else if let Some(table) = table(result, markdown) {
            out.push_str(&format!("{table}\n\n"));
        }
    }
    out
}

fn names_where(results: &[FsResult], test: impl Fn(&Observations) -> bool) -> Vec<&'static str> {
    results.iter().filter(|r| r.observed.as_ref().is_some_and(&test)).map(|r| r.fs.name()).collect()
}

/// What application writers should take from these observations.
pub fn conclusion(results: &[FsResult]) -> Vec<String> {
    let mut lines = Vec::new();
    let retry_lies = names_where(results, |s| !s.failing.fsync_first.is_ok() && s.failing.fsync_second.is_ok());
    if !retry_lies.is_empty() {
        lines.push(format!(
            "{}: after a failed fsync, the retry returned ok although the data never reached the disk.",
            retry_lies.join(", ")
        ));
    }
    let late =
        names_where(results, |s| s.failing.fsync_first.is_ok() && s.failing.injected_write_errors_at_first_fsync > 0);
    if !late.is_empty() {
        lines.push(format!(
            "{}: the fsync whose writeback failed returned ok (the error is reported late, or never).",
            late.join(", ")
        ));
    }
    let cache_lies = names_where(results, |s| {
        s.failing.read_in_cache == BlockRead::New && s.recovered.read_after_remount == BlockRead::Old
    });
    if !cache_lies.is_empty() {
        lines.push(format!(
            "{}: reads returned the new data from the page cache while the disk held the old; after a remount \
             the new data was gone. A restart must not recover from the page cache.",
            cache_lies.join(", ")
        ));
    }
    let unavailable = names_where(results, |s| !s.new_file_after_error.is_ok());
    if !unavailable.is_empty() {
        lines.push(format!(
            "{}: the failed write made the file system unavailable: every later sync and new file failed until \
             it was unmounted, and the unsynced data was gone after the remount.",
            unavailable.join(", ")
        ));
    }
    let unseen =
        names_where(results, |s| !s.failing.fsync_first.is_ok() && s.failing.fsync_fd_opened_after_error.is_ok());
    if !unseen.is_empty() {
        lines.push(format!(
            "{}: a descriptor opened after the error saw no error (a checkpointer that opens files later never learns of it).",
            unseen.join(", ")
        ));
    }
    lines.extend(differences_from_paper(results));
    lines.push(
        "Never retry fsync after an error: stop (as PostgreSQL PANICs) and recover from the log, or rewrite \
         everything since the last successful sync from your own copy."
            .to_string(),
    );
    lines
}

/// The findings as verdicts for the JSON envelope: each names the file systems it was seen on.
pub fn verdicts(results: &[FsResult]) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    let mut add = |names: Vec<&str>, severity, code: VerdictCode, message: &str, advice: &str| {
        if !names.is_empty() {
            verdicts.push(Verdict::new(severity, code, format!("{}: {message}", names.join(", ")), advice));
        }
    };
    add(
        names_where(results, |s| !s.failing.fsync_first.is_ok() && s.failing.fsync_second.is_ok()),
        Severity::Critical,
        VerdictCode::FsyncRetrySucceedsAfterDataLoss,
        "a retried fsync returned ok after a failed one, and the data was not on disk.",
        "Never retry fsync: stop and recover from the log, or rewrite from your own copy.",
    );
    add(
        names_where(results, |s| {
            s.failing.read_in_cache == BlockRead::New && s.recovered.read_after_remount == BlockRead::Old
        }),
        Severity::Warning,
        VerdictCode::PageCacheServesLostData,
        "after the failed fsync, reads returned data that was not on disk (gone after a remount).",
        "After an fsync error, do not recover from the page cache: restart from durable state.",
    );
    add(
        names_where(results, |s| !s.failing.fsync_first.is_ok() && s.failing.fsync_fd_opened_after_error.is_ok()),
        Severity::Warning,
        VerdictCode::FsyncErrorUnseenByLaterDescriptors,
        "a descriptor opened after the error saw no error on fsync.",
        "Keep descriptors open from write to fsync, or fsync through the descriptor that wrote.",
    );
    verdicts
}

/// Where this kernel did not do what the ATC'20 paper reported (kernels changed since 2020).
fn differences_from_paper(results: &[FsResult]) -> Vec<String> {
    let mut lines = Vec::new();
    for result in results {
        let Some(seen) = &result.observed else { continue };
        let paper = &result.paper;
        // Compare only where the paper gives a definite answer.
        if paper.definite_fsync_first.as_ref().is_some_and(|first| seen.failing.fsync_first != *first) {
            lines.push(format!(
                "{}: the first fsync returned {} where the ATC'20 paper reported {}.",
                result.fs.name(),
                seen.failing.fsync_first,
                paper.fsync_first
            ));
        }
        if paper.definite_read_in_cache.as_ref().is_some_and(|cache| seen.failing.read_in_cache != *cache) {
            lines.push(format!(
                "{}: the page cache held the {} data after the error where the ATC'20 paper reported {}.",
                result.fs.name(),
                seen.failing.read_in_cache,
                paper.read_in_cache
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::fsync_errors::results::CallOutcome;
    use crate::proof::lab::cases::{FsCase, SyncCall};

    fn eio() -> CallOutcome {
        CallOutcome::Failed("EIO".into())
    }

    fn linux_like(fs: FsCase) -> FsResult {
        let mut result = FsResult::new(fs, SyncCall::Fsync);
        result.observed = Some(Observations::ext4_as_reported());
        result
    }

    #[test]
    fn conclusion_names_the_file_systems_that_lie() {
        let mut skipped = FsResult::new(FsCase::Btrfs, SyncCall::Fsync);
        skipped.skipped = Some("mkfs.btrfs not found".into());
        let lines = conclusion(&[linux_like(FsCase::Ext4), linux_like(FsCase::Xfs), skipped]);
        assert!(lines[0].starts_with("ext4, xfs: after a failed fsync, the retry returned ok"), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("page cache")));
        assert!(!lines.iter().any(|l| l.contains("btrfs")));
        assert!(lines.last().unwrap().starts_with("Never retry fsync"));
    }

    #[test]
    fn verdicts_follow_the_observations() {
        let codes: Vec<String> =
            verdicts(&[linux_like(FsCase::Ext4)]).into_iter().map(|v| v.code.to_string()).collect();
        assert_eq!(
            codes,
            [
                "fsync_retry_succeeds_after_data_loss",
                "page_cache_serves_lost_data",
                "fsync_error_unseen_by_later_descriptors"
            ]
        );
        let mut honest = linux_like(FsCase::Xfs);
        let seen = honest.observed.as_mut().unwrap();
        (seen.failing.fsync_second, seen.failing.read_in_cache, seen.failing.fsync_fd_opened_after_error) =
            (eio(), BlockRead::Old, eio());
        assert!(verdicts(&[honest]).is_empty());
    }

    #[test]
    fn an_unavailable_file_system_is_called_out() {
        let mut aborted = linux_like(FsCase::Ext4JournalWrite);
        aborted.observed.as_mut().unwrap().new_file_after_error = CallOutcome::Failed("EROFS".into());
        let lines = conclusion(&[aborted, linux_like(FsCase::Ext4)]);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("ext4-journal-write: the failed write made the file system unavailable"))
        );
        // The paper gives no definite first-fsync result for a journal write failure: nothing to contradict.
        assert!(!lines.iter().any(|l| l.contains("where the ATC'20 paper reported")), "{lines:?}");
    }

    #[test]
    fn late_reporting_is_called_out() {
        let mut late = linux_like(FsCase::Ext4Journal);
        let seen = late.observed.as_mut().unwrap();
        seen.failing.fsync_first = CallOutcome::Ok;
        let lines = conclusion(&[late]);
        assert!(lines.iter().any(|l| l.starts_with("ext4-journal: the fsync whose writeback failed returned ok")));
    }

    #[test]
    fn differences_from_the_paper_are_listed() {
        assert!(differences_from_paper(&[linux_like(FsCase::Ext4)]).is_empty());
        let lines = differences_from_paper(&[linux_like(FsCase::Btrfs), linux_like(FsCase::Ext4Journal)]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("btrfs: the page cache held the new data"));
        assert!(lines[1].starts_with("ext4-journal: the first fsync returned EIO"));
    }

    #[test]
    fn render_shows_tables_skips_and_failures() {
        let mut failed = FsResult::new(FsCase::Xfs, SyncCall::Fsync);
        failed.error = Some("mount failed".into());
        let results = [linux_like(FsCase::Ext4), failed];
        let text = render(&results, &conclusion(&results), true);
        assert!(text.contains("### ext4 (ext4, data=ordered, fsync)"));
        assert!(text.contains("| first fsync after the failed writeback"));
        assert!(text.contains("failed: mount failed"));
        assert!(text.contains("- Never retry fsync"));
    }
}
