//! Reading syncbench JSON files for `report` and `compare`, tolerantly.
//!
//! Files come from other commands and other versions: a missing field takes its default instead of failing,
//! and the optional `commit` and `pages` payloads are read when present. Only what makes the file useless is
//! an error: it cannot be read, it is not JSON, or its `schema` is not `syncbench/v1`.

use crate::exit::usage;
use crate::probe::Environment;
use crate::schema::{CaseResult, SCHEMA};
use crate::verdict::Verdict;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;

/// One syncbench JSON file, with everything `report` and `compare` can show.
#[derive(Clone, Debug, Default)]
pub struct RunFile {
    /// How the user named the file (shown in headings and tables).
    pub name: String,
    /// `started_at` of the command.
    pub started_at: String,
    /// The command line that produced it.
    pub command: String,
    /// syncbench's version that wrote it.
    pub version: String,
    /// What the target was.
    pub environment: Environment,
    /// Conclusions about durability and plausibility.
    pub verdicts: Vec<Verdict>,
    /// `run`'s access pattern (`sequential`, `rewrite`; empty when absent).
    pub pattern: String,
    /// `run`'s cases (empty when the file is from another command).
    pub results: Vec<CaseResult>,
    /// `commit`'s group-commit points, when present.
    pub commit: Option<CommitPayload>,
    /// `pages`'s rows, when present.
    pub pages: Option<PagesPayload>,
}

/// `commit`'s payload: commits/s as clients grow.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CommitPayload {
    /// The sync method of the log.
    pub method: String,
    /// Whether a commit is durable when acknowledged (`method` `none` is not; `None` when the file does not say).
    pub durable: Option<bool>,
    /// Bytes per log record.
    pub record_size_bytes: u64,
    /// One point per (clients, commit_delay_us, group_commit).
    pub points: Vec<CommitPoint>,
}

/// One measured point of `commit`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CommitPoint {
    /// Concurrent committing clients.
    pub clients: u32,
    /// Delay before the leader syncs, in microseconds.
    pub commit_delay_us: u64,
    /// Whether commits were grouped into one sync.
    pub group_commit: bool,
    /// Commits acknowledged.
    pub commits: u64,
    /// Commits per second.
    pub commits_per_s: f64,
    /// Syncs per second.
    pub syncs_per_s: f64,
    /// Mean group size: commits per sync.
    pub commits_per_sync: f64,
    /// Commit latency.
    pub latency_ns: PointLatencyNs,
    /// Seconds measured.
    pub duration_s: f64,
}

/// Latency summary of a `commit` point or `pages` row (fields absent in a file read as 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PointLatencyNs {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Slowest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

/// `pages`'s payload: one row per torn-page protection mode.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PagesPayload {
    /// One row per mode.
    pub rows: Vec<PagesRow>,
}

/// One `pages` row.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PagesRow {
    /// `none`, `fpw`, `dw` or `atomic`.
    pub mode: String,
    /// Whether the mode could run here (`None` when the file does not say).
    pub supported: Option<bool>,
    /// Buffer pool size.
    pub buffer_pool_bytes: u64,
    /// Transactions per second (`None` when the mode did not run).
    pub tps: Option<f64>,
    /// Transaction latency.
    pub latency_ns: PointLatencyNs,
    /// WAL bytes per transaction.
    pub wal_bytes_per_txn: Option<f64>,
    /// Share of WAL bytes that are full-page images.
    pub fpi_share: Option<f64>,
    /// Data-file bytes per transaction.
    pub data_bytes_per_txn: Option<f64>,
    /// Syncs per transaction.
    pub fsyncs_per_txn: Option<f64>,
    /// Mean checkpoint duration.
    pub checkpoint_duration_s_mean: Option<f64>,
    /// Why the mode did not run, if it did not.
    pub error: Option<String>,
}

/// Read and parse one file; a problem is a usage error naming the file and what to do.
pub fn load(path: &Path) -> anyhow::Result<RunFile> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        usage(format!(
            "cannot read {name}: {}; give the path of a JSON file written by syncbench --json",
            io_reason(&e)
        ))
    })?;
    parse(&name, &text)
}

/// Parse the text of one file (`name` is only used in messages).
pub fn parse(name: &str, text: &str) -> anyhow::Result<RunFile> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| usage(format!("{name} is not JSON ({e}); give a file written by syncbench --json")))?;
    let Some(object) = doc.as_object() else {
        return Err(usage(format!("{name} is JSON but not a syncbench document (expected an object)")));
    };
    match object.get("schema").and_then(Value::as_str) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(usage(format!(
                "{name} has schema {other:?}, this syncbench reads {SCHEMA:?}; produce it again with this version"
            )));
        }
        None => return Err(usage(format!("{name} has no \"schema\" field: it was not written by syncbench --json"))),
    }
    Ok(RunFile {
        name: name.to_string(),
        started_at: string_field(&doc, "started_at"),
        command: string_field(&doc, "command"),
        version: string_field(&doc, "version"),
        pattern: string_field(&doc, "pattern"),
        environment: doc.get("environment").map(with_defaults::<Environment>).unwrap_or_default(),
        verdicts: list_of::<Verdict>(doc.get("verdicts")),
        results: doc
            .get("results")
            .and_then(Value::as_array)
            .map(|cases| cases.iter().map(with_defaults::<CaseResult>).collect())
            .unwrap_or_default(),
        commit: doc.get("commit").and_then(|v| serde_json::from_value(v.clone()).ok()),
        pages: doc.get("pages").and_then(|v| serde_json::from_value(v.clone()).ok()),
    })
}

/// The OS's reason without the "(os error 2)" suffix users do not need.
fn io_reason(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => err.to_string(),
    }
}

fn string_field(doc: &Value, key: &str) -> String {
    doc.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Deserialize `value` over `T::default()`: fields missing from the file keep their defaults, fields of the
/// wrong type are dropped. The shared schema types have no `#[serde(default)]`, so the defaults are merged
/// in as JSON first.
fn with_defaults<T: Default + serde::Serialize + DeserializeOwned>(value: &Value) -> T {
    let Ok(mut merged) = serde_json::to_value(T::default()) else { return T::default() };
    if let (Some(base), Some(given)) = (merged.as_object_mut(), value.as_object()) {
        for (key, field) in given {
            if !base.contains_key(key) || !field.is_null() || base[key].is_null() {
                base.insert(key.clone(), field.clone());
            }
        }
    }
    serde_json::from_value(merged.clone()).unwrap_or_else(|_| drop_bad_fields::<T>(merged))
}

/// Slow path of `with_defaults`: keep only the fields that deserialize on their own.
fn drop_bad_fields<T: Default + serde::Serialize + DeserializeOwned>(merged: Value) -> T {
    let Ok(mut good) = serde_json::to_value(T::default()) else { return T::default() };
    if let (Some(base), Value::Object(given)) = (good.as_object_mut(), merged) {
        for (key, field) in given {
            let previous = base.insert(key.clone(), field);
            if serde_json::from_value::<T>(Value::Object(base.clone())).is_err() {
                match previous {
                    Some(old) => base.insert(key, old),
                    None => base.remove(&key),
                };
            }
        }
    }
    serde_json::from_value(good).unwrap_or_default()
}

/// The elements of a JSON array that deserialize as `T`; anything else is skipped.
fn list_of<T: DeserializeOwned>(value: Option<&Value>) -> Vec<T> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|item| serde_json::from_value(item.clone()).ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_case_fields_take_defaults() {
        let text = r#"{"schema":"syncbench/v1","results":[{"section":"one_write","method":"fsync","ops_per_s":10.5}]}"#;
        let run = parse("t.json", text).unwrap();
        assert_eq!(run.results.len(), 1);
        assert_eq!(run.results[0].method, "fsync");
        assert_eq!(run.results[0].ops_per_s, 10.5);
        assert_eq!(run.results[0].write_size_bytes, 0);
    }

    #[test]
    fn a_field_of_the_wrong_type_is_dropped_not_fatal() {
        let text = r#"{"schema":"syncbench/v1","results":[{"method":"fsync","ops":"many","ci95_rel":0.02}]}"#;
        let run = parse("t.json", text).unwrap();
        assert_eq!(run.results[0].method, "fsync");
        assert_eq!(run.results[0].ops, 0);
        assert_eq!(run.results[0].ci95_rel, 0.02);
    }

    #[test]
    fn wrong_schema_names_both_schemas() {
        let err = parse("old.json", r#"{"schema":"syncbench/v0"}"#).unwrap_err().to_string();
        assert!(err.contains("old.json") && err.contains("syncbench/v0") && err.contains("syncbench/v1"), "{err}");
    }

    #[test]
    fn not_json_and_no_schema_are_usage_errors() {
        for text in ["not json", "[1,2]", r#"{"results":[]}"#] {
            let err = parse("x.json", text).unwrap_err();
            assert!(err.downcast_ref::<crate::exit::UsageError>().is_some(), "{text}: {err}");
        }
    }

    #[test]
    fn commit_and_pages_are_read_when_present() {
        let text = r#"{"schema":"syncbench/v1","commit":{"method":"fdatasync","points":[{"clients":4,"commits_per_s":900}]},
            "pages":{"rows":[{"mode":"fpw","tps":10},{"mode":"atomic","error":"EOPNOTSUPP"}]}}"#;
        let run = parse("t.json", text).unwrap();
        let commit = run.commit.unwrap();
        assert_eq!(commit.points[0].clients, 4);
        assert_eq!(commit.points[0].commits_per_s, 900.0);
        let pages = run.pages.unwrap();
        assert_eq!(pages.rows[1].tps, None);
        assert_eq!(pages.rows[1].error.as_deref(), Some("EOPNOTSUPP"));
    }
}
