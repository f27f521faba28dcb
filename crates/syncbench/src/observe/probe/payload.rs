//! `probe`'s document: the environment and verdicts go in the envelope, the probe's own measurement here.

use crate::core::schema::CaseResult;
use serde::{Deserialize, Serialize};

/// `probe`'s JSON payload: `{"probe": {...}}` next to the envelope's `environment` and `verdicts`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ProbePayload {
    /// The probe's own measurements.
    pub probe: ProbeSection,
}

/// What the probe measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbeSection {
    /// The fdatasync burst, shaped like one of `run`'s results; `null` when skipped or failed.
    pub flush_burst: Option<CaseResult>,
    /// Why the burst did not run (`--no-burst`, read-only directory, …).
    pub flush_burst_skipped: Option<String>,
    /// The error a write or sync returned during the burst.
    pub flush_burst_error: Option<String>,
}
