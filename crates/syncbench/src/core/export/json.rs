//! JSON export and import (schema `syncbench/v1`).
//!
//! Every syncbench JSON file is read by [`read_any`] with one policy: the `schema` must be
//! `syncbench/v1` and the `version`, when present, a version number; fields this syncbench does not know
//! are ignored (a newer syncbench adds fields within v1); fields an older file lacks take their defaults
//! through serde, except those that say what a record is (a case's `section`, `method`, `file_state`: every
//! syncbench wrote them). Anything else (not readable, not JSON, a field of the wrong type or missing) is a
//! usage error naming the file and what is wrong.

use crate::core::exit::usage;
use crate::core::schema::{Envelope, RunPayload, SCHEMA};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;

/// Serialize any command's document as pretty JSON with a trailing newline.
pub fn to_json<T: serde::Serialize>(doc: &T) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(doc)?;
    text.push('\n');
    Ok(text)
}

/// Read any syncbench JSON file as the envelope around payload `T` (see the module's policy).
pub fn read_any<T: DeserializeOwned>(path: &Path) -> anyhow::Result<Envelope<T>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        usage(format!(
            "cannot read {name}: {}; give the path of a JSON file written by syncbench --json",
            crate::core::workdir::reason(&e)
        ))
    })?;
    parse_any(&name, &text)
}

/// [`read_any`] on text already read (`name` is only used in messages).
pub fn parse_any<T: DeserializeOwned>(name: &str, text: &str) -> anyhow::Result<Envelope<T>> {
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
    if let Some(version) = object.get("version")
        && !version.as_str().is_some_and(is_version)
    {
        return Err(usage(format!("{name} has version {version}, not a syncbench version such as \"0.1.0\"")));
    }
    serde_json::from_value(doc)
        .map_err(|e| usage(format!("{name} is not a valid syncbench document: {e}; produce it again with syncbench")))
}

/// `0.1.0`, `1.12.3-rc.1`: three dot-separated numbers, then anything after a `-` or `+`.
fn is_version(text: &str) -> bool {
    let core = text.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Read a `run` document saved with `--json` for `command` (`advise --from`); a file with no run results
/// is refused (a usage error in the words of [`crate::core::input_kind`]).
pub fn read_run(path: &Path, command: &str) -> anyhow::Result<Envelope<RunPayload>> {
    let doc: Envelope<RunPayload> = read_any(path)?;
    if doc.payload.results.is_empty() {
        let given = crate::core::input_kind::describe(None, &doc.command);
        return Err(crate::core::input_kind::refusal(
            &path.display().to_string(),
            &given,
            command,
            crate::core::input_kind::RUN_FILES,
            "",
        ));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_three_numbers() {
        for good in ["0.1.0", "10.20.30", "1.2.3-rc.1", "1.2.3+build"] {
            assert!(is_version(good), "{good}");
        }
        for bad in ["", "1.2", "1.2.x", "v1.2.3", "1..3", "1.2.3.4"] {
            assert!(!is_version(bad), "{bad}");
        }
    }
}
