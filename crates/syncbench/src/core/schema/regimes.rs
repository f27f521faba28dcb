//! The commits over time and the latency regimes found in them, as `run` records them: plain data the
//! result types embed. `measure::runner::series` cuts the windows and `measure::regimes` finds the regimes
//! (and holds the logic); both re-export these types.

use serde::{Deserialize, Serialize};

/// One window of a round: its commits' median and tail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Start, in ns from the start of the run (the first round's first timed commit).
    pub start_ns: u64,
    /// Length (first commit start to last commit end), ns.
    pub duration_ns: u64,
    /// Commits that ended in it.
    pub commits: u64,
    /// Median commit latency, ns.
    pub p50_ns: u64,
    /// Slowest commit, ns.
    pub max_ns: u64,
    /// The case's latency regime this window is in (0 fast, 1 slow), when the case has regimes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<u8>,
}

/// One latency regime of a case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regime {
    /// Median of its windows' median commit latency, ns.
    pub latency_ns_p50: u64,
    /// Its share of the case's measured time (0-1).
    pub time_share: f64,
    /// Windows in it.
    pub windows: u64,
}

/// A case whose commits switched between two latency regimes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regimes {
    /// The fast regime, then the slow one.
    pub regimes: Vec<Regime>,
    /// Ashman's D of the split (≥ 3; larger is cleaner).
    pub separation: f64,
    /// The middle of the gap between them (geometric): windows above this many ns are in the slow regime.
    pub threshold_ns: u64,
}

/// What a whole run shows: how many cases switched, and how long the device stays in a regime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRegimes {
    /// Cases with regimes.
    pub cases_with_regimes: u64,
    /// Durable cases with enough windows to tell.
    pub cases_analysed: u64,
    /// Whether the run calls the device regime-switching: regimes in at least two cases and half of those
    /// analysed (a few cases' splits can be stalls of their own: a lab disk left steady on this VM with
    /// other builds running showed them in 2-3 of 7 cases).
    pub switching: bool,
    /// Mean time the device stays in one regime on the run's timeline, seconds: the time observed over
    /// the stretches between switches (`None` without an observed switch).
    pub switch_every_s: Option<f64>,
    /// Switches seen between adjacent windows of the timeline.
    pub switches: u64,
}
