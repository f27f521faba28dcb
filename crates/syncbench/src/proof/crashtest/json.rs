//! `crashtest`'s JSON payload: the run's settings, the library's [`Summary`] as it is, the failure.

use super::Summary;
use serde::Serialize;

/// The JSON payload: `{"crashtest": {...}}`: the run's settings, the library's summary, the failure.
#[derive(Debug, Serialize)]
pub struct Payload<'a> {
    /// The run.
    pub crashtest: CrashtestJson<'a>,
}

/// One crash-test series.
#[derive(Debug, Serialize)]
pub struct CrashtestJson<'a> {
    pub mode: String,
    pub profile: String,
    pub seed: u64,
    pub points_requested: u64,
    pub point: Option<u64>,
    pub fsync_errors: bool,
    pub generations: u32,
    pub accounts_per_branch: u32,
    pub engine_bug: Option<String>,
    pub passed: bool,
    #[serde(flatten)]
    pub summary: &'a Summary,
    pub failure: Option<FailureJson>,
}

/// A failing crash point (or a coverage failure: `variant` is `coverage`).
#[derive(Debug, Serialize)]
pub struct FailureJson {
    /// Not in the JSON (a coverage failure's `variant` says `coverage` there).
    #[serde(skip)]
    pub kind: super::FailureKind,
    pub point: u64,
    pub crash_op: u64,
    pub sector_bytes: u64,
    pub variant: String,
    pub message: String,
    /// The command that reruns exactly this point.
    pub reproducer: String,
}
