//! JSON export and import (schema `syncbench/v1`).

use crate::exit::usage;
use crate::schema::{Envelope, RunPayload, SCHEMA};
use std::path::Path;

/// Serialize any command's document as pretty JSON with a trailing newline.
pub fn to_json<T: serde::Serialize>(doc: &T) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(doc)?;
    text.push('\n');
    Ok(text)
}

/// Read a `run` document saved with `--json`. Any problem is a usage error naming the file and what is
/// wrong with it.
pub fn read_run(path: &Path) -> anyhow::Result<Envelope<RunPayload>> {
    let text = std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        usage(format!("{} is not JSON ({e}); give a file written by `syncbench run --json`", path.display()))
    })?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if schema != SCHEMA {
        return Err(usage(format!(
            "{} has schema {schema:?}, expected {SCHEMA:?}; give a file written by `syncbench run --json`",
            path.display()
        )));
    }
    if value.get("results").is_none() {
        return Err(usage(format!(
            "{} has no run results; give a file written by `syncbench run --json`",
            path.display()
        )));
    }
    serde_json::from_value(value)
        .map_err(|e| usage(format!("{}: not a valid syncbench run document: {e}", path.display())))
}
