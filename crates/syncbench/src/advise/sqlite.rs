//! SQLite: journal_mode WAL over the rollback journal, and synchronous=FULL vs NORMAL with the measured
//! cost per commit.
//!
//! The model, traced with strace on SQLite 3.40 (Debian 12's libsqlite3) and held against its commit rates
//! (bench/advise_sqlite.sh, docs/advise.md): a WAL commit with FULL is one frame write and one fdatasync of
//! the WAL; with NORMAL it syncs nothing (only checkpoints sync), so its cost is SQLite's own work, which
//! no disk measurement predicts. A rollback-journal (DELETE) commit syncs four times with FULL (the new
//! journal, its directory, the journal header, the database) and three with NORMAL, and creates and
//! deletes the journal file.

use super::facts::{Facts, evidence, per_s};
use super::{DatabaseAdvice, Setting};

/// A WAL frame carries one 4 KiB page (plus a 24-byte header): the 4 KiB fdatasync case is the closest.
const PAGE_BYTES: u64 = 4096;
/// fdatasync calls per rollback-journal commit with synchronous=FULL and =NORMAL (traced, SQLite 3.40).
const DELETE_SYNCS_FULL: f64 = 4.0;
const DELETE_SYNCS_NORMAL: f64 = 3.0;

pub fn advise(f: &Facts<'_>) -> DatabaseAdvice {
    let sync_case = f.any_case("fdatasync", PAGE_BYTES).or_else(|| f.any_case("fdatasync", 8192));
    let write_case = f.any_case("write", PAGE_BYTES).or_else(|| f.any_case("write", 8192));
    let mut reason = "FULL syncs the WAL at every commit (fdatasync on Linux), so a committed transaction survives \
                      power loss. NORMAL syncs only at checkpoints: the database stays consistent, but a power cut \
                      can roll back the most recent commits."
        .to_string();
    let mut journal_reason = "One sequential append and (with FULL) one sync per commit, instead of the rollback \
                              journal's four syncs (journal, its directory, journal header, database; three with \
                              NORMAL) and a journal file created and deleted per commit."
        .to_string();
    let mut ev = Vec::new();
    if let Some(s) = sync_case {
        reason.push_str(&format!(
            " Measured here: a FULL commit costs at least one 4 KiB write + fdatasync, about {} (p50 {}, p99 {}), \
             so at most about {} for one connection",
            crate::core::units::format_ms_or_us(s.latency_ns.mean),
            crate::core::units::format_ms_or_us(s.latency_ns.p50 as f64),
            crate::core::units::format_ms_or_us(s.latency_ns.p99 as f64),
            per_s(s.ops_per_s)
        ));
        ev.push(evidence(s));
        if let Some(w) = write_case {
            reason.push_str(&format!(
                "; a NORMAL commit waits for no flush: the disk adds one write ({}), and SQLite's own work per \
                 commit, which this measurement does not see, sets its rate",
                crate::core::units::format_ms_or_us(w.latency_ns.mean)
            ));
            ev.push(evidence(w));
        }
        reason.push('.');
        journal_reason.push_str(&format!(
            " Measured here, that caps a rollback-journal commit at about {} with FULL and {} with NORMAL.",
            per_s(s.ops_per_s / DELETE_SYNCS_FULL),
            per_s(s.ops_per_s / DELETE_SYNCS_NORMAL)
        ));
    }
    let journal = Setting {
        name: "journal_mode".into(),
        value: "WAL".into(),
        reason: journal_reason,
        evidence: sync_case.map(|s| vec![evidence(s)]).unwrap_or_default(),
    };
    let settings = vec![journal, Setting { name: "synchronous".into(), value: "FULL".into(), reason, evidence: ev }];
    DatabaseAdvice {
        database: String::new(),
        version: String::new(),
        storage_warning: None,
        settings,
        caveats: vec![
            "Use NORMAL only where losing the last commits on power loss is acceptable (caches, derived data).".into(),
            "The WAL is deleted when the last connection closes; a new one is appended to (file size and metadata \
             synced with every commit) until its first checkpoint, 1000 pages by default: keep one connection open \
             for the steady state."
                .into(),
        ],
        pass: None,
    }
}
