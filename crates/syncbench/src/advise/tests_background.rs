//! The rules that judge commits under background writes, from recorded `syncbench run --background-writes`
//! files (fixtures/): etcd's verdict that flips from pass to fail under writes and one that holds, and
//! PostgreSQL's WAL placement from a run whose p99 stalled under writes and one whose did not.

use super::*;
use crate::core::schema::{Envelope, RunPayload};

/// etcd's 2300-byte fdatasync on btrfs over a loop device on tmpfs (2026-11-24, `run --sections a --methods
/// fdatasync --size 2300 --secs 2 --rounds 2 --background-writes max`): p99 8.97 ms idle, 62.72 ms under writes.
const ETCD_FLIPS: &str = include_str!("fixtures/etcd-btrfs-loop-tmpfs-max-flips.json");
/// The same on ext4 over a loop device on tmpfs: p99 4.16 ms idle, 76 µs under writes.
const ETCD_HOLDS: &str = include_str!("fixtures/etcd-ext4-loop-tmpfs-max-holds.json");
/// One 8 KiB fdatasync per commit on ext4 on vda (bench/results/devacct-2026-11-24/bg-ext4-max-2.json):
/// p99 10.13 ms idle, 84.21 ms under writes at max.
const PG_STALLS: &str = include_str!("fixtures/pg-ext4-vda-max-stalls.json");
/// The same at 50 MiB/s (bg-ext4-50MiB-3.json): p99 11.70 ms idle, 9.11 ms under writes.
const PG_HOLDS: &str = include_str!("fixtures/pg-ext4-vda-50MiB-holds.json");

fn run(text: &str) -> Envelope<RunPayload> {
    crate::core::export::parse_any("fixture", text).unwrap()
}

/// The advice for `db` from a recorded run, with its results under writes or (`idle_only`) without them.
fn advice(text: &str, db: Database, idle_only: bool) -> DatabaseAdvice {
    let doc = run(text);
    let under = if idle_only { None } else { doc.payload.background_writes.as_ref() };
    assert!(doc.payload.background_writes.is_some(), "the fixture was recorded with --background-writes");
    let input = Input {
        environment: &doc.environment,
        verdicts: &doc.verdicts,
        results: &doc.payload.results,
        under_writes: under,
        partial: false,
    };
    advise(&input, &[Target { database: db, version: db.default_version() }]).remove(0)
}

#[test]
fn etcd_passes_idle_and_fails_under_writes() {
    let idle = advice(ETCD_FLIPS, Database::Etcd, true);
    assert_eq!(idle.pass, Some(true), "{idle:?}");
    // 274.7 MiB of other writes reached the disk while the idle case ran: not called an idle disk, and the
    // disturbed case is named.
    assert!(!idle.caveats.iter().any(|c| c == IDLE_DISK_NOTE), "{:?}", idle.caveats);
    let not_idle = "Measured without background writes of syncbench's own, but not on an idle disk: 274.7 MiB";
    assert!(idle.caveats.iter().any(|c| c.starts_with(not_idle)), "{:?}", idle.caveats);
    assert!(
        idle.caveats[0].starts_with("1 of 1 cases were disturbed while measured — one_write"),
        "{:?}",
        idle.caveats
    );
    let loaded = advice(ETCD_FLIPS, Database::Etcd, false);
    assert_eq!(loaded.pass, Some(false), "{loaded:?}");
    let s = &loaded.settings[0];
    assert_eq!(s.value, "8.97 ms idle (passes), 62.72 ms under writes at max (FAILS) — FAILS");
    assert!(s.reason.contains("It passes on an idle disk and FAILS under writes"), "{}", s.reason);
    assert!(s.reason.contains("etcd --wal-dir"), "{}", s.reason);
    assert!(s.reason.contains("7.0× idle"), "{}", s.reason);
    assert_eq!(s.evidence.len(), 2);
    assert!(s.evidence[1].case.ends_with("(under background writes at max)"), "{:?}", s.evidence);
    // Measured under writes: no idle-disk note; the 147 syncs under writes are too few for a steady p99.
    assert!(!loaded.caveats.iter().any(|c| c == IDLE_DISK_NOTE), "{:?}", loaded.caveats);
    assert!(loaded.caveats.iter().any(|c| c.starts_with("Only 147 syncs were timed under background writes")));
}

#[test]
fn etcd_that_passes_under_writes_too_still_passes() {
    let loaded = advice(ETCD_HOLDS, Database::Etcd, false);
    assert_eq!(loaded.pass, Some(true), "{loaded:?}");
    let s = &loaded.settings[0];
    assert_eq!(s.value, "4.16 ms idle (passes), 76 µs under writes at max (passes) — passes");
    assert!(!s.reason.contains("FAILS"), "{}", s.reason);
    // The worse p99 (4.16 ms) passes by more than a factor 2: no note that etcd's own p99 may not.
    assert!(!loaded.caveats.iter().any(|c| c.contains("etcd_disk_wal_fsync_duration_seconds")), "{:?}", loaded.caveats);
}

#[test]
fn postgres_wal_moves_to_its_own_device_when_writes_stall_commits() {
    let a = advice(PG_STALLS, Database::Postgres, false);
    let wal = a.settings.iter().find(|s| s.name == "pg_wal").unwrap();
    assert_eq!(wal.value, "its own device");
    assert!(
        wal.reason.contains("p99 84.21 ms, against p50 205 µs and p99 10.13 ms on the idle disk (8.3× at p99)"),
        "{}",
        wal.reason
    );
    let target = a.settings.iter().find(|s| s.name == "checkpoint_completion_target").unwrap();
    assert_eq!(target.value, "0.9");
    assert!(target.reason.contains("(the default since PostgreSQL 14)"), "{}", target.reason);
    assert!(a.caveats.iter().any(|c| c.contains("vm.dirty_background_bytes")), "{:?}", a.caveats);
    // Idle only: no placement advice, the note instead.
    let idle = advice(PG_STALLS, Database::Postgres, true);
    assert!(!idle.settings.iter().any(|s| s.name == "pg_wal" || s.name == "checkpoint_completion_target"));
    let results = run(PG_STALLS).payload.results;
    assert!(idle.caveats.iter().any(|c| *c == idle_disk_note(&results)), "{:?}", idle.caveats);
}

#[test]
fn postgres_wal_stays_when_writes_do_not_stall_commits() {
    let a = advice(PG_HOLDS, Database::Postgres, false);
    let wal = a.settings.iter().find(|s| s.name == "pg_wal").unwrap();
    assert_eq!(wal.value, "same file system is fine", "{}", wal.reason);
    assert!(wal.reason.contains("(0.8× at p99)"), "{}", wal.reason);
    assert!(!a.settings.iter().any(|s| s.name == "checkpoint_completion_target"));
    assert!(!a.caveats.iter().any(|c| c == IDLE_DISK_NOTE));
}

#[test]
fn the_idle_disk_note_is_said_once() {
    let doc = run(ETCD_FLIPS);
    let mut results = doc.payload.results.clone();
    results.extend(run(PG_STALLS).payload.results);
    let input = Input {
        environment: &doc.environment,
        verdicts: &doc.verdicts,
        results: &results,
        under_writes: None,
        partial: false,
    };
    let targets = [Database::Postgres, Database::Etcd].map(|d| Target { database: d, version: d.default_version() });
    let text = to_text(&advise(&input, &targets));
    assert_eq!(text.matches(&idle_disk_note(&results)).count(), 1, "{text}");
}
