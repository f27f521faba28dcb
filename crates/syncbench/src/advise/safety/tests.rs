use super::cite::{same_series, settings_text};
use super::*;
use crate::advise::{DatabaseAdvice, Setting, Version};

/// What is wrong with the entries, one line each: the checker behind `every_record_is_well_formed`.
fn problems(records: &[PowercutRecord], torn: &[TornPageTest]) -> Vec<String> {
    let mut out = Vec::new();
    for r in records {
        let name = format!("{} {} [{}]", r.database.name(), r.ran, settings_text(r));
        let mut say = |what: String| out.push(format!("{name}: {what}"));
        if r.cuts == 0 || r.damaged > r.cuts {
            say(format!("{} damaged of {} cuts", r.damaged, r.cuts));
        }
        for (count, what) in
            [(r.lost_ack_cuts, "lost"), (r.failed_recoveries, "failed"), (r.integrity_failures, "integrity")]
        {
            if count.is_some_and(|n| n > r.damaged) || (r.damaged == 0 && count != Some(0)) {
                say(format!("{what} {count:?} does not fit {} damaged cuts", r.damaged));
            }
        }
        let lying = |p: &&str| {
            crate::proof::lab::profile::by_name(p)
                .is_ok_and(|p| p.params.honesty == crate::proof::lab::profile::Honesty::IgnoresFlush)
        };
        if r.profiles.iter().any(lying) && !r.profiles.iter().all(lying) {
            say("mixes lying and honest profiles: one record each".into());
        }
        for (key, value) in r.settings {
            if !DEFAULTS.iter().any(|(db, k, _, _)| *db == r.database && k.eq_ignore_ascii_case(key)) {
                say(format!("{key} has no default in DEFAULTS"));
            }
            if TORN_KEYS.contains(key) && OFF.iter().any(|v| v.eq_ignore_ascii_case(value)) {
                say(format!("{key}={value} is a torn-page test: it belongs in TORN_PAGE_TESTS"));
            }
        }
        common(&mut say, r.database, r.ran, r.profiles, r.file_systems, r.untorn_bytes, r.results);
    }
    for t in torn {
        let name = format!("{} {} torn {}", t.database.name(), t.ran, t.setting);
        let mut say = |what: String| out.push(format!("{name}: {what}"));
        if t.cuts == 0 || t.off_damaged > t.cuts || t.on_damaged > t.cuts || !TORN_KEYS.contains(&t.setting) {
            say(format!("{} / {} damaged of {} cuts", t.off_damaged, t.on_damaged, t.cuts));
        }
        common(&mut say, t.database, t.ran, &[t.profile], &[t.file_system], t.untorn_bytes, t.results);
    }
    out
}

const TORN_KEYS: [&str; 2] = ["full_page_writes", "innodb_doublewrite"];
const OFF: [&str; 4] = ["off", "0", "false", "detect_only"];

/// The checks records and torn-page tests share: a version the rules know, profiles and file systems the
/// lab makes, an untorn unit it can model, raw output that exists.
fn common(
    say: &mut impl FnMut(String),
    db: Database,
    ran: &str,
    profiles: &[&str],
    file_systems: &[&str],
    untorn_bytes: u64,
    results: &[&str],
) {
    if !Version::parse(ran).is_some_and(|v| crate::advise::versions::is_known(db, v)) {
        say(format!("version {ran:?} is not one the rules know"));
    }
    for p in profiles {
        if crate::proof::lab::profile::by_name(p).is_err() {
            say(format!("unknown lab profile {p}"));
        }
    }
    for f in file_systems {
        if !["ext4", "xfs", "btrfs"].contains(f) {
            say(format!("the lab makes no {f}"));
        }
    }
    if crate::proof::lab::profile::parse_untorn(&format!("{untorn_bytes}B")).is_err() {
        say(format!("untorn unit {untorn_bytes} B"));
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if results.is_empty() {
        say("no raw output named".into());
    }
    for path in results {
        if !path.starts_with("bench/results/") || !root.join(path).exists() {
            say(format!("raw output {path} is not in bench/results/"));
        }
    }
}

#[test]
fn every_record_is_well_formed() {
    assert_eq!(problems(POWERCUTS, TORN_PAGE_TESTS), Vec::<String>::new());
}

#[test]
fn the_checker_catches_planted_wrong_entries() {
    let good = POWERCUTS[0];
    let planted = [
        PowercutRecord { profiles: &["nvme-fast"], ..good },
        PowercutRecord { damaged: 30, cuts: 25, ..good },
        PowercutRecord { damaged: 3, lost_ack_cuts: Some(4), ..good },
        PowercutRecord { settings: &[("wal_level", "minimal")], ..good },
        PowercutRecord { settings: &[("full_page_writes", "off")], ..good },
        PowercutRecord { ran: "99.1", ..good },
        PowercutRecord { results: &["bench/results/powercut-db-2026-11-28/no-such-run.json"], ..good },
        PowercutRecord { file_systems: &["zfs"], ..good },
        PowercutRecord { profiles: &["nvme-plp", "cheating-ssd"], ..good },
    ];
    for (i, r) in planted.iter().enumerate() {
        let found = problems(std::slice::from_ref(r), &[]);
        assert_eq!(found.len(), 1, "planted entry {i} gave {found:?}");
    }
    let torn = TornPageTest { on_damaged: 26, ..TORN_PAGE_TESTS[0] };
    assert_eq!(problems(&[], &[torn]).len(), 1);
}

fn advice(db: &str, version: &str, settings: &[(&str, &str)]) -> DatabaseAdvice {
    let settings = settings
        .iter()
        .map(|(n, v)| Setting {
            name: n.to_string(),
            value: v.to_string(),
            reason: String::new(),
            evidence: Vec::new(),
        })
        .collect();
    DatabaseAdvice {
        database: db.into(),
        version: version.into(),
        storage_warning: None,
        settings,
        caveats: Vec::new(),
        pass: None,
    }
}

fn pg(version: &str, wal_sync_method: &str, commit_delay: &str) -> DatabaseAdvice {
    let s = [("wal_sync_method", wal_sync_method), ("commit_delay", commit_delay), ("full_page_writes", "on")];
    advice("postgres", version, &s)
}

#[test]
fn postgres_defaults_are_cited_with_their_cuts_and_the_controls_against_them() {
    let e = of(&pg("15.18", "fdatasync", "0"));
    assert!(e.applies);
    let wal = &e.settings[0];
    let cited = wal.advised.as_ref().unwrap();
    // defaults (150) + wal_sync_method=fdatasync (50) + defaults (25, 2026-11-28), all freeze-cut-kill;
    // not the syncfs run (another recovery_init_sync_method) nor any control.
    assert_eq!((cited.cuts, cited.damaged, cited.kill_first_cuts), (225, 0, 0));
    assert_eq!(cited.settings, ["defaults", "wal_sync_method=fdatasync"]);
    assert_eq!(
        wal.text,
        "Power cuts: kept every acknowledged commit in 225 cuts on lab disks hdd-7200, nvme-consumer, nvme-plp × \
         ext4, xfs (PostgreSQL 15.18, syncbench powercut db 2026-11-29, 2026-11-28); other values: \
         wal_sync_method=open_datasync kept every acknowledged commit in 50 cuts on lab disks nvme-consumer × \
         ext4, xfs (PostgreSQL 15.18, syncbench powercut db 2026-11-29); wal_sync_method=fsync kept every \
         acknowledged commit in 50 cuts on lab disks nvme-consumer × ext4, xfs (PostgreSQL 15.18, syncbench \
         powercut db 2026-11-29); wal_sync_method=open_sync kept every acknowledged commit in 50 cuts on lab \
         disks nvme-consumer × ext4, xfs (PostgreSQL 15.18, syncbench powercut db 2026-11-29)."
    );
    assert_eq!(e.settings[1].advised.as_ref().map(|c| c.cuts), Some(225), "commit_delay=0 is the default");
    let others: Vec<(&str, u32, u32)> =
        e.other_settings.iter().map(|c| (c.settings[0].as_str(), c.damaged, c.cuts)).collect();
    assert_eq!(
        others,
        [("recovery_init_sync_method=syncfs", 0, 10), ("synchronous_commit=off", 24, 25), ("fsync=off", 25, 25)]
    );
    let lying = e.lying_disk.as_ref().unwrap();
    assert_eq!((lying.damaged, lying.cuts, lying.failed_recoveries), (25, 25, Some(25)));
    assert!(e.summary.contains("synchronous_commit=off was damaged in 24 of 25 cuts"), "{}", e.summary);
    assert!(e.summary.contains("the database failed recovery in 25 of 25 cuts: no setting"), "{}", e.summary);
}

#[test]
fn a_value_no_cut_ran_has_no_power_cut_evidence() {
    let e = of(&pg("15.18", "open_datasync", "58"));
    assert_eq!(e.settings[1].text, "Power cuts: no power-cut evidence for commit_delay = 58.");
    // open_datasync: its own 50 cuts; fdatasync (set on purpose) is the other value, not the defaults runs.
    let wal = &e.settings[0];
    assert_eq!(wal.advised.as_ref().map(|c| c.cuts), Some(50));
    let others: Vec<&str> = wal.other_values.iter().map(|c| c.settings[0].as_str()).collect();
    assert_eq!(others, ["wal_sync_method=fdatasync", "wal_sync_method=fsync", "wal_sync_method=open_sync"]);
    // full_page_writes=on with open_datasync: only the cuts that ran both.
    assert_eq!(e.settings[2].advised.as_ref().map(|c| c.cuts), Some(50));
    for db in ["mysql", "rocksdb"] {
        let e = of(&advice(db, "8.4", &[("innodb_flush_method", "O_DIRECT")]));
        assert_eq!(e.settings[0].text, "Power cuts: no power-cut evidence for innodb_flush_method = O_DIRECT.");
        assert!(e.summary.starts_with("no power-cut evidence for"), "{}", e.summary);
    }
}

#[test]
fn evidence_applies_to_the_release_series_that_ran() {
    assert!(same_series(Database::Postgres, "15.18", Version::new(15, 0)));
    assert!(!same_series(Database::Postgres, "15.18", Version::new(16, 0)));
    assert!(same_series(Database::Mariadb, "10.11.19", Version::new(10, 11)));
    assert!(!same_series(Database::Mariadb, "10.11.19", Version::new(11, 4)));
    let other_minor = of(&pg("15.4", "fdatasync", "0"));
    assert!(other_minor.applies);
    assert!(other_minor.settings[0].text.contains("(PostgreSQL 15.18, not 15.4 itself, syncbench"));
    let newer = of(&pg("17.0", "fdatasync", "0"));
    assert!(!newer.applies);
    assert!(
        newer.settings[0].text.starts_with(
            "Power cuts: no power-cut evidence for PostgreSQL 17.0; this value kept every acknowledged commit in 225 cuts"
        ),
        "{}",
        newer.settings[0].text
    );
    assert!(newer.summary.starts_with("no power-cut evidence for PostgreSQL 17.0; advise's settings kept"));
    let maria = of(&advice("mariadb", "11.4", &[("innodb_flush_log_at_trx_commit", "1")]));
    assert!(maria.settings[0].text.starts_with("Power cuts: no power-cut evidence for MariaDB 11.4; this value kept"));
}

#[test]
fn sqlite_combinations_are_matched_whole() {
    let e = of(&advice("sqlite", "3.40", &[("journal_mode", "WAL"), ("synchronous", "FULL")]));
    let journal = &e.settings[0];
    // WAL+FULL's 450 cuts; DELETE+FULL (also synchronous=FULL) is another journal_mode, never pooled in.
    assert_eq!(journal.advised.as_ref().map(|c| (c.cuts, c.damaged)), Some((450, 0)));
    let others: Vec<(&str, u32)> = journal.other_values.iter().map(|c| (c.settings[0].as_str(), c.damaged)).collect();
    assert_eq!(
        others,
        [
            ("journal_mode=DELETE,synchronous=EXTRA", 0),
            ("journal_mode=DELETE,synchronous=FULL", 100),
            ("journal_mode=DELETE,synchronous=OFF", 25)
        ]
    );
    assert!(journal.text.contains("journal_mode=DELETE,synchronous=FULL lost acknowledged commits in 100 of 450 cuts"));
    let sync: Vec<&str> = e.settings[1].other_values.iter().map(|c| c.settings[0].as_str()).collect();
    assert_eq!(
        sync,
        [
            "journal_mode=DELETE,synchronous=EXTRA",
            "journal_mode=DELETE,synchronous=OFF",
            "journal_mode=WAL,synchronous=NORMAL"
        ]
    );
    assert_eq!(e.lying_disk.as_ref().map(|c| (c.damaged, c.failed_recoveries)), Some((25, Some(25))));
}

#[test]
fn a_planted_wrong_record_is_never_evidence_for_the_advice() {
    // A control that claims to have held, a lying disk that claims to have held, and another version:
    // none may count as evidence for advise's fdatasync.
    let planted = [
        PowercutRecord {
            database: Database::Postgres,
            ran: "15.18",
            settings: &[("synchronous_commit", "off")],
            cuts: 999,
            results: &["x"],
            ..CLEAN
        },
        PowercutRecord {
            database: Database::Postgres,
            ran: "15.18",
            profiles: &["cheating-ssd"],
            cuts: 777,
            results: &["x"],
            ..CLEAN
        },
        PowercutRecord { database: Database::Postgres, ran: "16.4", cuts: 555, results: &["x"], ..CLEAN },
    ];
    let records: Vec<&'static PowercutRecord> = POWERCUTS.iter().collect();
    let mut with_planted = records.clone();
    let leaked: &'static [PowercutRecord] = Box::leak(Box::new(planted));
    with_planted.extend(leaked.iter());
    let e = cite::of_records(&pg("15.18", "fdatasync", "0"), with_planted);
    assert_eq!(e.settings[0].advised.as_ref().map(|c| c.cuts), Some(225));
    assert_eq!(e.advised.as_ref().map(|c| c.cuts), Some(225));
    assert!(e.other_settings.iter().any(|c| c.cuts == 1024), "the planted control pools with its own kind");
    assert_eq!(e.lying_disk.as_ref().map(|c| c.cuts), Some(802));
}

#[test]
fn torn_page_tests_are_cited_for_their_setting_and_series() {
    let maria = torn_page_tests(Database::Mariadb, Version::new(10, 11), "innodb_doublewrite");
    assert_eq!(
        maria,
        "Torn-page test (MariaDB 10.11.19, lab disk nvme-consumer × ext4 with a 512 B untorn unit, cuts at seeded \
         moments, not aimed at page writes; 2026-11-28): innodb_doublewrite=OFF failed recovery in 2 of 25 cuts, \
         ON in 0 of 25 on the same seeds. Torn-page test (MariaDB 10.11.19, lab disk nvme-consumer × ext4 with a \
         4 KiB untorn unit, cuts aimed at data-page writes; 2026-11-29): innodb_doublewrite=OFF failed recovery \
         (corrupted page) in 50 of 50 cuts, ON in 0 of 50 on the same seeds."
    );
    let newer = torn_page_tests(Database::Mariadb, Version::new(11, 4), "innodb_doublewrite");
    assert!(
        newer.starts_with("No torn-page power-cut test of MariaDB 11.4. Torn-page test (MariaDB 10.11.19"),
        "{newer}"
    );
    assert_eq!(
        torn_page_tests(Database::Postgres, Version::new(15, 18), "full_page_writes"),
        "Torn-page test (PostgreSQL 15.18, lab disk nvme-consumer × ext4 with a 4 KiB untorn unit, cuts aimed at \
         data-page writes; 2026-11-29): full_page_writes=off failed recovery (page checksum) in 26 of 50 cuts, on \
         in 0 of 50 on the same seeds."
    );
    assert_eq!(
        torn_page_tests(Database::Postgres, Version::new(15, 18), "wal_sync_method"),
        "No torn-page power-cut test of wal_sync_method is recorded yet."
    );
}
