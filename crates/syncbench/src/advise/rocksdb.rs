//! RocksDB: WriteOptions.sync, recycle_log_file_num, wal_bytes_per_sync, manual_wal_flush.

use super::facts::{Facts, evidence, per_s};
use super::{DatabaseAdvice, Setting, Version};
use crate::core::schema::CaseResult;

/// Recycling must make an fdatasync at least this much faster to be worth its constraints.
const RECYCLE_GAIN: f64 = 0.10;

/// The first release whose recycled WALs work with the default wal_recovery_mode kPointInTimeRecovery:
/// facebook/rocksdb PR #12403 (March 2024) lifted the restriction after 9.0.0 (February 2024), so 9.1 is
/// taken as the first; no 9.x binary was checked. Since PR #6351 (2020) SanitizeOptions had set
/// recycle_log_file_num to 0 under kPointInTimeRecovery and kAbsoluteConsistency: Debian's 7.8.3 logs
/// `Options.recycle_log_file_num: 0` when 4 is set (bench/advise_rocksdb.sh), so a 4 there changes nothing.
pub const RECYCLE_WITH_POINT_IN_TIME: Version = Version::new(9, 1);

pub fn advise(f: &Facts<'_>, version: Version) -> DatabaseAdvice {
    let mut settings = vec![sync(f)];
    let mut caveats = Vec::new();
    settings.push(recycle(f, version, &mut caveats));
    settings.push(Setting {
        name: "wal_bytes_per_sync".into(),
        value: "0".into(),
        reason: "With sync=true every write group is already synced. If some writes use sync=false, 1048576 \
                 (1 MiB) smooths writeback with sync_file_range, but it is no durability guarantee."
            .into(),
        evidence: Vec::new(),
    });
    settings.push(Setting {
        name: "manual_wal_flush".into(),
        value: "false".into(),
        reason: "true keeps WAL records in RocksDB's memory until FlushWAL(): not crash safe unless the \
                 application calls FlushWAL(true) before acknowledging."
            .into(),
        evidence: Vec::new(),
    });
    DatabaseAdvice {
        database: String::new(),
        version: String::new(),
        storage_warning: None,
        settings,
        caveats,
        pass: None,
    }
}

fn sync(f: &Facts<'_>) -> Setting {
    let mut reason = "sync=true fdatasyncs the WAL before a write returns (use_fsync=false, the default, uses \
                      fdatasync); concurrent writers share one sync through RocksDB's write groups."
        .to_string();
    let mut ev = Vec::new();
    let case = f.file_state_case("fdatasync", "append").or_else(|| f.any_case("fdatasync", 8192));
    if let Some(c) = case {
        reason.push_str(&format!(
            " Measured here: {} per synced write group (p99 {}), at most {} for one writer.",
            crate::core::units::format_ms_or_us(c.latency_ns.mean),
            crate::core::units::format_ms_or_us(c.latency_ns.p99 as f64),
            per_s(c.ops_per_s)
        ));
        ev.push(evidence(c));
    }
    Setting { name: "WriteOptions.sync".into(), value: "true".into(), reason, evidence: ev }
}

fn recycle(f: &Facts<'_>, version: Version, caveats: &mut Vec<String>) -> Setting {
    let over = f.file_state_case("fdatasync", "overwrite");
    let append = f.file_state_case("fdatasync", "append");
    let (gain, ev) = match (over, append) {
        (Some(o), Some(a)) => (Some(recycle_gain(f, o, a)), vec![evidence(o), evidence(a)]),
        _ => (None, Vec::new()),
    };
    let (value, reason) = match gain {
        None => ("0", "The overwrite and append file states were not both measured; keep the default.".to_string()),
        Some(Gain::Clear(why)) if version >= RECYCLE_WITH_POINT_IN_TIME => ("4", why),
        Some(Gain::Clear(why)) => (
            "0",
            format!(
                "{why} But RocksDB {version} sets recycle_log_file_num to 0 under the default wal_recovery_mode \
                 kPointInTimeRecovery (releases before {RECYCLE_WITH_POINT_IN_TIME}; its LOG shows \
                 `Options.recycle_log_file_num: 0`): recycling would need kSkipAnyCorruptedRecords, which replays \
                 past a corrupted record instead of stopping there. Keep the default, or upgrade to gain this."
            ),
        ),
        Some(Gain::Unclear(why)) => ("0", format!("{why}; keep the default.")),
    };
    if value != "0" {
        caveats.push(
            "recycle_log_file_num is ignored with wal_recovery_mode kTolerateCorruptedTailRecords or \
             kAbsoluteConsistency; it works with the default kPointInTimeRecovery."
                .into(),
        );
    }
    Setting { name: "recycle_log_file_num".into(), value: value.into(), reason, evidence: ev }
}

/// Whether overwriting an already-written WAL file syncs clearly faster than appending, and why.
enum Gain {
    Clear(String),
    Unclear(String),
}

fn recycle_gain(f: &Facts<'_>, o: &CaseResult, a: &CaseResult) -> Gain {
    let gain = (o.ops_per_s / a.ops_per_s - 1.0) * 100.0;
    let decision = crate::core::stats::decide(&o.estimate(), &a.estimate());
    let clear = matches!(decision, crate::core::stats::Decision::AFaster(x) if x > 1.0 + RECYCLE_GAIN);
    if !f.copy_on_write() && clear {
        return Gain::Clear(format!(
            "Overwriting an already-written WAL file avoids a metadata update per sync: fdatasync measured {} \
             overwriting vs {} appending ({gain:.0}% faster).",
            per_s(o.ops_per_s),
            per_s(a.ops_per_s)
        ));
    }
    let why = if gain > RECYCLE_GAIN * 100.0 && !f.copy_on_write() {
        format!(
            "Overwriting measured {gain:.0}% faster than appending ({} vs {}), but the two measurements' 95% \
             intervals overlap: undecided",
            o.rate_text(),
            a.rate_text()
        )
    } else {
        format!(
            "Overwriting measured no clear gain over appending here ({} vs {})",
            per_s(o.ops_per_s),
            per_s(a.ops_per_s)
        )
    };
    let cow = if f.copy_on_write() { ", and a copy-on-write file system reallocates anyway" } else { "" };
    Gain::Unclear(format!("{why}{cow}"))
}

#[cfg(test)]
#[path = "tests_rocksdb_etcd.rs"]
mod tests;
