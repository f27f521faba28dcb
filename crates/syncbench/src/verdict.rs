//! Verdicts: what syncbench concludes about the storage, each with advice. Produced by `probe`'s rules,
//! carried in every command's JSON.

use serde::{Deserialize, Serialize};

/// How much a verdict matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Results or durability may not be what they seem.
    Warning,
    /// Writes here are not durable, or the numbers cannot be trusted.
    Critical,
}

/// One conclusion with what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// How much it matters.
    pub severity: Severity,
    /// A stable machine-readable code, e.g. `not_durable_tmpfs`.
    pub code: String,
    /// What was found, in one or two sentences.
    pub message: String,
    /// What the user can do next.
    pub advice: String,
}
