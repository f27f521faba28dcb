//! `fsync-errors`' exports: one CSV row per file system with every observation, the report's Markdown, and
//! OpenMetrics with the two outcomes an application depends on (did the first sync report the failed
//! writeback; did a retried sync then claim success).

use crate::core::export::Exportable;
use crate::core::export::openmetrics::Family;
use crate::core::schema::Envelope;
use crate::proof::fsync_errors::report;
use crate::proof::fsync_errors::results::{FsResult, Payload};

impl Exportable for Payload {
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String> {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER)?;
        for r in &doc.payload.fsync_errors.results {
            w.write_record(row(r))?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    fn markdown(doc: &Envelope<Self>) -> String {
        let found = &doc.payload.fsync_errors;
        report::render(&found.results, &found.conclusion, true)
    }

    fn metrics(doc: &Envelope<Self>) -> Vec<Family> {
        let mut reported = Family::new(
            "syncbench_fsync_errors_first_sync_reported_error",
            "",
            "1 when the first sync after the failed writeback returned an error.",
        );
        let mut retry = Family::new(
            "syncbench_fsync_errors_retry_claimed_success",
            "",
            "1 when a retried sync after the error returned success (the data is not on disk).",
        );
        for r in &doc.payload.fsync_errors.results {
            let Some(o) = &r.observed else { continue };
            let labels = vec![("fs", r.fs.name().to_string()), ("sync_call", r.sync_call.name().to_string())];
            let first_failed = !o.failing.fsync_first.is_ok();
            reported.push(labels.clone(), f64::from(u8::from(first_failed)));
            retry.push(labels, f64::from(u8::from(first_failed && o.failing.fsync_second.is_ok())));
        }
        vec![reported, retry]
    }
}

const HEADER: [&str; 16] = [
    "fs",
    "fs_type",
    "mount_options",
    "sync_call",
    "skipped",
    "error",
    "fsync_first",
    "fsync_second",
    "fsync_fd_opened_before_error",
    "fsync_fd_opened_after_error",
    "read_in_cache",
    "fsync_after_device_recovers",
    "read_after_drop_caches",
    "read_after_remount",
    "new_file_after_error",
    "injected_write_errors_total",
];

fn row(r: &FsResult) -> Vec<String> {
    let head = [r.fs.name(), &r.fs_type, &r.mount_options, r.sync_call.name()].map(str::to_string);
    let why = [r.skipped.clone().unwrap_or_default(), r.error.clone().unwrap_or_default()];
    let seen = r.observed.as_ref().map(|o| {
        [
            o.failing.fsync_first.name(),
            o.failing.fsync_second.name(),
            o.failing.fsync_fd_opened_before_error.name(),
            o.failing.fsync_fd_opened_after_error.name(),
            o.failing.read_in_cache.name(),
            o.recovered.fsync_after_device_recovers.name(),
            o.recovered.read_after_drop_caches.name(),
            o.recovered.read_after_remount.name(),
            o.new_file_after_error.name(),
        ]
        .map(str::to_string)
        .into_iter()
        .chain([o.injected_write_errors_total.to_string()])
        .collect::<Vec<_>>()
    });
    head.into_iter().chain(why).chain(seen.unwrap_or_else(|| vec![String::new(); 10])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::fsync_errors::results::{Observations, Report};
    use crate::proof::lab::cases::{FsCase, SyncCall};

    /// ext4 as the paper found it (first fsync EIO, the retry claims success), xfs skipped.
    fn doc() -> Envelope<Payload> {
        let mut ext4 = FsResult::new(FsCase::Ext4, SyncCall::Fsync);
        ext4.observed = Some(Observations::ext4_as_reported());
        let mut skipped = FsResult::new(FsCase::Xfs, SyncCall::Fsync);
        skipped.skipped = Some("mkfs.xfs not found".into());
        let results = vec![ext4, skipped];
        let conclusion = report::conclusion(&results);
        let payload = Payload { fsync_errors: Report { results, conclusion } };
        crate::core::export::golden_doc(crate::core::export::ext4_at("/tmp"), "syncbench fsync-errors", payload)
    }

    #[test]
    fn exports_golden() {
        crate::core::export::assert_exports_golden!("fsync_errors", &doc());
    }

    /// Every CSV row has the header's width, observed or not.
    #[test]
    fn rows_have_the_header_width() {
        for r in &doc().payload.fsync_errors.results {
            assert_eq!(row(r).len(), HEADER.len(), "{}", r.fs.name());
        }
    }
}
