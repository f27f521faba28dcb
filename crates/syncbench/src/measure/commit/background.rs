//! `commit --background-writes`: the points measured again while a background writer dirties data
//! (the writer and its stats are `measure::background`'s, shared with `run`).

use super::{CommitPoint, Plan};
use crate::core::schema::BackgroundStats;
use crate::measure::background::{Rate, failed_part, measure_under};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `commit`'s points measured again under background writes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackgroundCommit {
    /// What the background writer did.
    pub writer: BackgroundStats,
    /// Every point again, in the plan's order, measured while the writer ran.
    pub points: Vec<CommitPoint>,
}

/// Measure every point of `plan` again (in `root`) while a background writer dirties data in the plan's
/// directory at `rate`.
pub fn commit_points(plan: &Plan, root: &Path, rate: Rate) -> BackgroundCommit {
    let (results, writer) = measure_under(&plan.dir, rate, || super::measure_all(plan, root, |_, _| {}));
    BackgroundCommit { writer, points: results.map(|r| r.points).unwrap_or_default() }
}

impl BackgroundCommit {
    /// Why the part under writes failed, if it did (its `points` are then empty).
    pub fn error(&self) -> Option<&str> {
        self.writer.error.as_deref()
    }
}

/// `commit`'s points idle and under background writes side by side.
pub fn commit_side_by_side(idle: &[CommitPoint], under: &BackgroundCommit) -> String {
    use std::fmt::Write;
    let w = &under.writer;
    if w.error.is_some() {
        return failed_part(w);
    }
    let mut out = format!(
        "\ncommit latency idle vs under background writes at {} (achieved {:.1} MiB/s; the kernel wrote it back):\n",
        w.rate,
        w.bytes_per_s / (1 << 20) as f64
    );
    let _ = writeln!(
        out,
        "  {:<24} {:>10} {:>10} {:>9} {:>9} {:>10} {:>10} {:>7} {:>7}",
        "", "commits/s", "bg", "p50 µs", "bg", "p99 µs", "bg", "fl/c", "bg"
    );
    let us = |ns: u64| format!("{:.0}", ns as f64 / 1000.0);
    let flushes = |p: &CommitPoint| {
        p.device.as_ref().and_then(|d| d.lowest_per_commit()).map_or("-".to_string(), |c| format!("{:.2}", c.flushes))
    };
    for (a, b) in idle.iter().zip(&under.points) {
        let name = format!("{} clients, {}", a.clients, if a.group_commit { "group" } else { "naive" });
        let _ = writeln!(
            out,
            "  {name:<24} {:>10.0} {:>10.0} {:>9} {:>9} {:>10} {:>10} {:>7} {:>7}",
            a.commits_per_s,
            b.commits_per_s,
            us(a.latency_ns.p50),
            us(b.latency_ns.p50),
            us(a.latency_ns.p99),
            us(b.latency_ns.p99),
            flushes(a),
            flushes(b)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_part_is_reported_as_failed_not_as_a_table() {
        let error = "cannot start the background writer: x";
        let writer = BackgroundStats { rate: "max".into(), error: Some(error.into()), ..BackgroundStats::default() };
        let under = BackgroundCommit { writer, points: Vec::new() };
        assert_eq!(under.error(), Some(error));
        assert_eq!(
            commit_side_by_side(&[], &under),
            "\ncommit latency under background writes at max: FAILED, not measured: cannot start the background writer: x\n"
        );
    }
}
