//! Reading syncbench JSON files for `report` and `compare`.
//!
//! Files come from other commands and other versions; they are read as every syncbench file is
//! ([`crate::core::export::read_any`]: schema and version checked, unknown fields ignored, missing fields
//! defaulted but for a case's section, method and file state), with the payload types the commands write: `run`'s cases, and `commit`'s and `pages`'s
//! payloads when present.

use crate::core::environment::Environment;
use crate::core::schema::CaseResult;
use crate::core::suite::Pattern;
use crate::core::verdict::Verdict;
use crate::measure::commit::CommitResults;
use crate::measure::pages::PagesTable;
use serde::Deserialize;
use std::path::Path;

/// Any syncbench document as `report` and `compare` read it: `run`'s cases, and `commit`'s and `pages`'s
/// payloads when present (every part may be absent: a `probe` file has none of them).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct AnyPayload {
    /// `run`'s directory.
    pub dir: String,
    /// `run`'s access pattern (absent in other commands' files).
    pub pattern: Option<Pattern>,
    /// `run`'s cases.
    pub results: Vec<CaseResult>,
    /// `commit`'s points.
    pub commit: Option<CommitResults>,
    /// `pages`'s rows.
    pub pages: Option<PagesTable>,
}

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
    /// `run`'s access pattern (`None` in other commands' files).
    pub pattern: Option<Pattern>,
    /// `run`'s cases (empty when the file is from another command).
    pub results: Vec<CaseResult>,
    /// `commit`'s group-commit points, when present.
    pub commit: Option<CommitResults>,
    /// `pages`'s rows, when present.
    pub pages: Option<PagesTable>,
}

/// Read and parse one file; a problem is a usage error naming the file and what to do.
pub fn load(path: &Path) -> anyhow::Result<RunFile> {
    let doc = crate::core::export::read_any::<AnyPayload>(path)?;
    Ok(from_document(path.display().to_string(), doc))
}

/// Parse the text of one file (`name` is only used in messages).
pub fn parse(name: &str, text: &str) -> anyhow::Result<RunFile> {
    Ok(from_document(name.to_string(), crate::core::export::parse_any(name, text)?))
}

fn from_document(name: String, doc: crate::core::schema::Envelope<AnyPayload>) -> RunFile {
    RunFile {
        name,
        started_at: doc.started_at,
        command: doc.command,
        version: doc.version,
        environment: doc.environment,
        verdicts: doc.verdicts,
        pattern: doc.payload.pattern,
        results: doc.payload.results,
        commit: doc.payload.commit,
        pages: doc.payload.pages,
    }
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod reader_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_of_a_file_reaches_the_run_file() {
        let text = r#"{"schema":"syncbench/v1","version":"0.1.0","started_at":"2026-11-21T00:00:00Z",
            "command":"syncbench run","pattern":"rewrite","environment":{"fs_type":"xfs"},
            "verdicts":[{"severity":"warning","code":"c","message":"m","advice":"a"}],
            "results":[{"section":"one_write","method":"fsync","file_state":"overwrite"}],"commit":{"method":"fdatasync","points":[{"clients":4}]},
            "pages":{"rows":[{"mode":"atomic","supported":false,"error":"EOPNOTSUPP"}]}}"#;
        let run = parse("t.json", text).unwrap();
        assert_eq!((run.name.as_str(), run.version.as_str(), run.pattern), ("t.json", "0.1.0", Some(Pattern::Rewrite)));
        assert_eq!((run.started_at.as_str(), run.command.as_str()), ("2026-11-21T00:00:00Z", "syncbench run"));
        assert_eq!(run.environment.fs_type, "xfs");
        assert_eq!(run.verdicts[0].code, "c");
        assert_eq!(run.results[0].method, crate::core::method::SyncMethod::Fsync);
        assert_eq!(run.commit.unwrap().points[0].clients, 4);
        let pages = run.pages.unwrap();
        assert!(!pages.rows[0].supported);
        assert_eq!(pages.rows[0].error.as_deref(), Some("EOPNOTSUPP"));
    }

    #[test]
    fn a_file_without_commit_or_pages_has_none() {
        let run = parse("t.json", r#"{"schema":"syncbench/v1","results":[]}"#).unwrap();
        assert!(run.commit.is_none() && run.pages.is_none());
    }
}
