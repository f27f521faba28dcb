//! MySQL/InnoDB (innodb_flush_method, innodb_use_fdatasync, innodb_flush_log_at_trx_commit,
//! innodb_doublewrite), MariaDB 10.8-10.11 (innodb_flush_method over an O_DIRECT redo log) and MariaDB ≥ 11
//! (innodb_log_file_buffering / _write_through, innodb_data_file_buffering / _write_through).

use super::facts::{BLOCK_8K, Facts, Rate, compare, compare_with_rest, kept_default, per_s};
use super::{DatabaseAdvice, Setting, Version};

const MARGIN: f64 = 0.05;
/// InnoDB's default page size.
const INNODB_PAGE_BYTES: u64 = 16384;

fn advice(settings: Vec<Setting>, caveats: Vec<String>) -> DatabaseAdvice {
    DatabaseAdvice {
        database: String::new(),
        version: String::new(),
        storage_warning: None,
        settings,
        caveats,
        pass: None,
    }
}

pub fn advise_mysql(f: &Facts<'_>, version: Version) -> DatabaseAdvice {
    let mut settings = vec![flush_log_at_trx_commit(f, "fsync")];
    let mut caveats = Vec::new();
    settings.extend(flush_method(f, &mut caveats));
    if version >= Version::new(8, 0) {
        settings.extend(use_fdatasync(f));
    }
    settings.push(doublewrite(f, version, false));
    advice(settings, caveats)
}

pub fn advise_mariadb(f: &Facts<'_>, version: Version) -> DatabaseAdvice {
    if (Version::new(10, 8)..Version::new(11, 0)).contains(&version) {
        let mut caveats = Vec::new();
        let mut settings = vec![flush_log_at_trx_commit(f, "fdatasync+direct")];
        settings.push(mariadb_10_flush_method(f, version, &mut caveats));
        settings.push(doublewrite(f, version, true));
        return advice(settings, caveats);
    }
    if version.major < 11 {
        let mut a = advise_mysql(f, version);
        a.caveats.push(format!(
            "MariaDB {version} still uses innodb_flush_method (default O_DIRECT since 10.6); from 11.0 it is \
             replaced by innodb_log_file_buffering/_write_through and innodb_data_file_buffering/_write_through."
        ));
        return a;
    }
    let mut caveats = Vec::new();
    let mut settings = vec![flush_log_at_trx_commit(f, "fdatasync")];
    settings.extend(mariadb_log_file(f, &mut caveats));
    settings.extend(mariadb_data_file(f));
    settings.push(doublewrite(f, version, true));
    advice(settings, caveats)
}

fn flush_log_at_trx_commit(f: &Facts<'_>, method: &str) -> Setting {
    let mut reason = "1 writes and flushes the redo log at every commit: the only value that keeps every \
                      acknowledged commit after a power loss (2 can lose about a second of commits on an OS \
                      crash or power loss, 0 even on a mysqld crash)."
        .to_string();
    let mut evidence = Vec::new();
    if let Some(r) = f.wal_score(method) {
        reason.push_str(&format!(
            " Measured cost here: one client can commit at most about {} with {method}; more commits per second \
             need concurrent clients (group commit).",
            per_s(r.ops_per_s)
        ));
        evidence = r.evidence;
    }
    Setting { name: "innodb_flush_log_at_trx_commit".into(), value: "1".into(), reason, evidence }
}

/// InnoDB's O_DSYNC mode opens the redo log with O_SYNC (a 2001 decision in os0file.cc), so it is
/// measured by `open_sync`; every other mode writes the redo log buffered and fsyncs it.
fn flush_method(f: &Facts<'_>, caveats: &mut Vec<String>) -> Option<Setting> {
    let fsync = f.wal_score("fsync")?;
    let osync = f.wal_score("open_sync");
    let direct_ok = f.direct_supported();
    let osync_wins = osync.as_ref().is_some_and(|o| o.beats(&fsync, MARGIN));
    let (value, mut reason) = match (osync_wins, direct_ok) {
        (true, _) => {
            let o = osync.as_ref().expect("checked above");
            ("O_DSYNC", format!("The redo log opened O_SYNC (what InnoDB's O_DSYNC mode does) beats write+fsync: {}. Data files stay buffered in this mode.", compare(o, &fsync)))
        }
        (false, Some(false)) => ("fsync", format!("{}, so data pages cannot bypass the page cache; fsync is the remaining safe mode.", f.no_direct_reason())),
        (false, _) => ("O_DIRECT", "Data files bypass the page cache (no double buffering with the buffer pool); the redo log keeps write+fsync".to_string()),
    };
    if value == "O_DIRECT" {
        match &osync {
            Some(o) if o.ops_per_s > fsync.ops_per_s => {
                reason.push_str(&format!(
                    ": the redo log opened O_SYNC did not win clearly. {}",
                    kept_default(o, &fsync, MARGIN)
                ));
            }
            Some(o) if !o.told_apart(&fsync) => reason.push_str(&format!(
                ": {}. This run cannot tell them apart, so the choice rests on the mechanism (no double buffering), \
                 not on a measured speed.",
                compare(&fsync, o)
            )),
            Some(o) => {
                reason.push_str(&format!(", which measured at least as fast as O_SYNC here: {}.", compare(&fsync, o)))
            }
            None => reason.push('.'),
        }
    }
    caveats.push(format!(
        "innodb_flush_method=O_DIRECT_NO_FSYNC skips fsync after data writes: safe only since 8.0.14 (fsync \
         after create/extend), risky on XFS before that, and it loses data if the data device has a volatile \
         write cache and sits on a different device from the redo log.{}",
        if f.env.fs_type == "xfs" { " This directory is on XFS." } else { "" }
    ));
    let mut evidence = fsync.evidence.clone();
    if let Some(o) = osync {
        evidence.extend(o.evidence);
    }
    Some(Setting { name: "innodb_flush_method".into(), value: value.into(), reason, evidence })
}

/// MariaDB 10.8-10.11 opens the redo log O_DIRECT whatever innodb_flush_method says
/// (innodb_log_file_buffering=OFF) and writes it once per commit (group): one 4 KiB block, rewritten until
/// full, then fdatasync — or, with O_DSYNC, the same write opened O_DSYNC and no fdatasync (traced with
/// strace on 10.11.19: 1.05 writes and 1.05 fdatasyncs per commit, docs/advise.md). fsync, O_DIRECT and
/// O_DIRECT_NO_FSYNC share that commit path and differ only in how data pages are written, in the
/// background; so the commit-rate choice is O_DSYNC against the default O_DIRECT, scored on one write per
/// commit (two O_DSYNC writes per commit, which the MySQL score averages in, never happen here).
fn mariadb_10_flush_method(f: &Facts<'_>, version: Version, caveats: &mut Vec<String>) -> Setting {
    caveats.push(format!(
        "MariaDB {version} opens the redo log with O_DIRECT under every innodb_flush_method \
         (innodb_log_file_buffering=OFF); from 11.0 innodb_flush_method is replaced by \
         innodb_log_file_buffering/_write_through and innodb_data_file_buffering/_write_through."
    ));
    caveats.push(
        "innodb_flush_method=O_DIRECT_NO_FSYNC commits through the same redo-log path as O_DIRECT (the same \
         device flushes per transaction on lab disks) and skips the fsync after data-page writes: safe when the \
         data files share the redo log's device (the log's flush empties that device's cache) or the device has \
         no volatile cache, not when they sit on separate devices. sysbench measured it faster than O_DIRECT in \
         most runs on lab NVMe disks (medians up to 1.9×), but within the noise between rounds, and slower in an \
         8-round A/B; advise cannot measure the difference, so it stays a choice for you to test."
            .into(),
    );
    if f.direct_supported() == Some(false) {
        let fsync = f.single("one_write", "fdatasync", BLOCK_8K);
        let reason = format!(
            "{}, so neither the redo log nor data pages can bypass the page cache: fsync (buffered data files, \
             redo log write + fdatasync) is the safe mode.",
            f.no_direct_reason()
        );
        let evidence = fsync.map(|r| r.evidence).unwrap_or_default();
        return Setting { name: "innodb_flush_method".into(), value: "fsync".into(), reason, evidence };
    }
    let Some(direct) = f.single("one_write", "fdatasync+direct", BLOCK_8K) else {
        let reason = "The default. These measurements have no one 8 KiB O_DIRECT write per commit \
                      (fdatasync+direct), so it could not be compared with O_DSYNC: measure with `syncbench advise DIR`."
            .to_string();
        return Setting { name: "innodb_flush_method".into(), value: "O_DIRECT".into(), reason, evidence: Vec::new() };
    };
    let dsync = f.single("one_write", "open_datasync+direct", BLOCK_8K);
    let wins = dsync.as_ref().is_some_and(|d| d.beats(&direct, MARGIN));
    let mut reason =
        "Scored by commits/s of one 8 KiB O_DIRECT write per commit, as MariaDB writes its redo log: ".to_string();
    let value = match &dsync {
        Some(d) if wins => {
            reason.push_str(&format!(
                "the write opened O_DSYNC (O_DSYNC mode) beats write + fdatasync (every other mode): {}.",
                compare(d, &direct)
            ));
            "O_DSYNC"
        }
        Some(d) => {
            reason.push_str(&format!(
                "write + fdatasync (O_DIRECT, the default; data pages bypass the page cache too): {}.",
                compare(&direct, d)
            ));
            if d.ops_per_s > direct.ops_per_s {
                reason.push(' ');
                reason.push_str(&kept_default(d, &direct, MARGIN));
            }
            "O_DIRECT"
        }
        None => {
            reason.push_str("O_DSYNC was not measured, so the default O_DIRECT stays.");
            "O_DIRECT"
        }
    };
    let mut evidence = direct.evidence.clone();
    if let Some(d) = dsync {
        evidence.extend(d.evidence);
    }
    Setting { name: "innodb_flush_method".into(), value: value.into(), reason, evidence }
}

fn use_fdatasync(f: &Facts<'_>) -> Option<Setting> {
    let fsync = f.wal_score("fsync")?;
    let fdatasync = f.wal_score("fdatasync")?;
    let on = fdatasync.beats(&fsync, MARGIN);
    let mut reason = format!("{}.", compare(&fdatasync, &fsync));
    if on {
        reason.push_str(
            " fdatasync skips the timestamp update that fsync forces, and measured faster here (MySQL ≥ 8.0.26).",
        );
    } else if fdatasync.ops_per_s > fsync.ops_per_s {
        reason.push(' ');
        reason.push_str(&kept_default(&fdatasync, &fsync, MARGIN));
    } else if !fdatasync.told_apart(&fsync) {
        reason.push_str(" This run cannot tell them apart, so the default stays on its mechanism.");
    } else {
        reason.push_str(" fdatasync measured no faster here, so the default stays.");
    }
    let evidence = [fsync.evidence, fdatasync.evidence].concat();
    Some(Setting { name: "innodb_use_fdatasync".into(), value: if on { "ON" } else { "OFF" }.into(), reason, evidence })
}

fn doublewrite(f: &Facts<'_>, version: Version, mariadb: bool) -> Setting {
    let untorn = super::untorn::sentence(f.env, INNODB_PAGE_BYTES);
    let db = if mariadb { super::Database::Mariadb } else { super::Database::Mysql };
    let torn = super::safety::torn_page_tests(db, version, "innodb_doublewrite");
    // Off only where the whole stack is known to write a page untorn: statx's promise for files here (a
    // device's or a lab disk's unit alone is not the file system's), or copy-on-write (no page is
    // overwritten in place).
    let (value, reason) = if f.copy_on_write() {
        (
            "OFF",
            format!(
                "{} is copy-on-write: a page is never overwritten in place, so a torn 16 KiB page cannot occur and \
                 the double-write buffer only doubles data writes (verify the file system is not mounted nodatacow).",
                f.env.fs_type
            ),
        )
    } else if super::untorn::file_promises(f.env, INNODB_PAGE_BYTES) && mariadb {
        (
            "OFF",
            format!(
                "{untorn}; MariaDB's OFF means \"assume page writes are atomic\". Confirm the whole stack (device, \
                 file system, no RAID/volume layer splitting writes) before relying on it. {torn}"
            ),
        )
    } else {
        let detect = if !mariadb && version >= Version::new(8, 0) {
            " DETECT_ONLY (8.0.30+) only detects torn pages, it does not repair them."
        } else {
            ""
        };
        let why = if mariadb || !super::untorn::file_promises(f.env, INNODB_PAGE_BYTES) {
            "A power cut can tear a 16 KiB page"
        } else {
            "MySQL does not ask for untorn (RWF_ATOMIC) page writes, so a power cut can still tear a 16 KiB page"
        };
        ("ON", format!("{why}: {untorn}.{detect} {torn}"))
    };
    Setting { name: "innodb_doublewrite".into(), value: value.into(), reason, evidence: Vec::new() }
}

/// The four combinations of innodb_log_file_buffering (OFF = O_DIRECT) and innodb_log_file_write_through
/// (ON = O_DSYNC writes, no fdatasync) map onto four measured methods.
fn mariadb_log_file(f: &Facts<'_>, caveats: &mut Vec<String>) -> Vec<Setting> {
    let combos = [
        ("OFF", "OFF", "fdatasync+direct"),
        ("OFF", "ON", "open_datasync+direct"),
        ("ON", "OFF", "fdatasync"),
        ("ON", "ON", "open_datasync"),
    ];
    // Without real O_DIRECT (refused, or data=journal's silent fallback) buffering OFF is not on offer,
    // whatever the +direct cases measured.
    let direct = f.direct_supported() != Some(false);
    let offered = |m: &str| direct || !m.contains("direct");
    let scored: Vec<(&str, &str, Rate)> = combos
        .iter()
        .filter(|(_, _, m)| offered(m))
        .filter_map(|(b, w, m)| f.wal_score(m).map(|r| (*b, *w, r)))
        .collect();
    let rates: Vec<Rate> = scored.iter().map(|(_, _, r)| r.clone()).collect();
    // MariaDB's default on Linux: buffering OFF (O_DIRECT when the block size allows), write_through OFF.
    let default = if direct { "fdatasync+direct" } else { "fdatasync" };
    let Some(chosen) = f.choose(&rates, default, MARGIN) else {
        caveats
            .push("No fdatasync/open_datasync cases were measured, so the log file settings are not advised.".into());
        return Vec::new();
    };
    let (buffering, write_through) =
        scored.iter().find(|(_, _, r)| r.method == chosen.method).map_or(("ON", "OFF"), |(b, w, _)| (*b, *w));
    // Each setting's own reason: the chosen pair against the pair that differs in that setting alone.
    let rate = |b: &str, w: &str| scored.iter().find(|(sb, sw, _)| *sb == b && *sw == w).map(|(_, _, r)| r);
    let flip = |v: &str| if v == "ON" { "OFF" } else { "ON" };
    let against = |other: Option<&Rate>| match (rate(buffering, write_through), other) {
        (Some(mine), Some(other)) => format!("{}.", compare(mine, other)),
        _ => "the other value was not measured.".to_string(),
    };
    let mut pair = format!(
        " The pair is chosen together, by commits/s of one and of two 8 KiB writes per commit (geometric mean): \
         {} does {}.",
        chosen.method,
        per_s(chosen.ops_per_s)
    );
    pair.push_str(&compare_with_rest(&chosen, &rates, default, MARGIN));
    let excluded = combos.iter().any(|(_, _, m)| !offered(m) && f.wal_score(m).is_some());
    if excluded {
        pair.push_str(&format!(" The +direct cases are left out: {}.", f.no_direct_reason()));
    }
    let evidence: Vec<_> = rates.iter().flat_map(|r| r.evidence.clone()).collect();
    vec![
        Setting {
            name: "innodb_log_file_buffering".into(),
            value: buffering.into(),
            reason: if direct {
                format!(
                    "OFF writes the redo log with O_DIRECT, ON through the page cache; with write_through={write_through}, {}{pair}",
                    against(rate(flip(buffering), write_through))
                )
            } else {
                format!("OFF would write the redo log with O_DIRECT, which is not on offer here: ON.{pair}")
            },
            evidence: evidence.clone(),
        },
        Setting {
            name: "innodb_log_file_write_through".into(),
            value: write_through.into(),
            reason: format!(
                "ON makes each redo log write durable by itself (O_DSYNC), OFF follows it with fdatasync; with \
                 buffering={buffering}, {}",
                against(rate(buffering, flip(write_through)))
            ),
            evidence,
        },
    ]
}

fn mariadb_data_file(f: &Facts<'_>) -> Vec<Setting> {
    let direct = f.direct_supported() != Some(false);
    let buffering = Setting {
        name: "innodb_data_file_buffering".into(),
        value: if direct { "OFF" } else { "ON" }.into(),
        reason: if direct {
            "OFF (O_DIRECT) keeps data pages out of the page cache: the buffer pool already caches them.".into()
        } else {
            format!("{}, so data files must be buffered.", f.no_direct_reason())
        },
        evidence: Vec::new(),
    };
    let mut wt_reason = "Data pages are written in batches and flushed once per batch; O_DSYNC would pay a device \
                         round trip per page"
        .to_string();
    if let Some(one) = f.single("one_write", "open_datasync", 8192) {
        let p50 = one.evidence.first().map_or(0, |e| e.latency_ns_p50);
        wt_reason.push_str(&format!(
            " (measured: {} for one 8 KiB O_DSYNC write per commit, p50 {})",
            per_s(one.ops_per_s),
            crate::core::units::format_ms_or_us(p50 as f64)
        ));
    }
    wt_reason.push('.');
    vec![
        buffering,
        Setting {
            name: "innodb_data_file_write_through".into(),
            value: "OFF".into(),
            reason: wt_reason,
            evidence: Vec::new(),
        },
    ]
}
