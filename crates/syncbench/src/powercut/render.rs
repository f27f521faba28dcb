//! Text and Markdown for `powercut verify` and `powercut lab`.

#[cfg(feature = "fuse")]
use super::lab::Cell;
use super::verify::Verification;
use std::fmt::Write;

/// verify's table, per kind, and the first losses.
pub fn verification(v: &Verification) -> String {
    let mut out = String::new();
    let durable = if v.durable { "durable" } else { "NOT durable: it promises nothing after a power cut" };
    let _ = writeln!(out, "run {} written with {} ({durable})", v.run, v.method);
    let _ = writeln!(
        out,
        "{:<10} {:>12} {:>9} {:>9} {:>7} {:>7} {:>22} {:>24}",
        "kind",
        "acknowledged",
        "checked",
        "present",
        "lost",
        "torn",
        "unacknowledged present",
        "torn by next overwrite"
    );
    for k in &v.kinds {
        let _ = writeln!(
            out,
            "{:<10} {:>12} {:>9} {:>9} {:>7} {:>7} {:>22} {:>24}",
            k.kind,
            k.acknowledged,
            k.checked,
            k.present,
            k.lost,
            k.torn,
            k.unacknowledged_present,
            k.torn_by_next_overwrite
        );
    }
    for e in &v.examples {
        let _ = writeln!(out, "  {e}");
    }
    let verdict = match (v.failures(), v.durable) {
        (0, _) => "every acknowledged record is present and intact".to_string(),
        (n, true) => format!(
            "{n} acknowledged records lost or torn: this disk (or something above it) does not keep what it acknowledged"
        ),
        (n, false) => format!("{n} acknowledged records lost or torn: expected, {} is not a durable method", v.method),
    };
    let _ = writeln!(out, "verdict: {verdict}");
    out
}

#[cfg(feature = "fuse")]
/// One line per cut while `powercut lab` runs.
pub fn lab_progress(cell: &Cell, cut: &super::lab::CutResult) -> String {
    format!(
        "{} {} {} cut {}: after {} ms, {} acknowledged, {} lost, {} torn",
        cell.profile,
        cell.fs,
        cell.method,
        cell.cuts.len() + 1,
        cut.cut_after_ms,
        cut.acknowledged,
        cut.lost,
        cut.torn
    )
}

#[cfg(feature = "fuse")]
/// `powercut lab`'s table: one row per profile × fs × method.
pub fn lab_table(cells: &[Cell]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<14} {:<5} {:<14} {:>5} {:>13} {:>6} {:>5} {:>10}  verdict",
        "profile", "fs", "method", "cuts", "acknowledged", "lost", "torn", "records/s"
    );
    for c in cells {
        let method = if c.durable { c.method.clone() } else { format!("{} (not durable)", c.method) };
        let _ = writeln!(
            out,
            "{:<14} {:<5} {:<14} {:>5} {:>13} {:>6} {:>5} {:>10.0}  {}",
            c.profile,
            c.fs,
            method,
            c.cuts.len(),
            c.acknowledged(),
            c.lost(),
            c.torn(),
            c.records_per_s_median(),
            c.verdict()
        );
    }
    out
}

#[cfg(feature = "fuse")]
/// The same as a Markdown table.
pub fn lab_markdown(cells: &[Cell]) -> String {
    let mut out = String::from(
        "| profile | fs | method | cuts | acknowledged | lost | torn | cuts with loss | records/s (median) | verdict |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for c in cells {
        let method = if c.durable { c.method.clone() } else { format!("{} (not durable)", c.method) };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {} |",
            c.profile,
            c.fs,
            method,
            c.cuts.len(),
            c.acknowledged(),
            c.lost(),
            c.torn(),
            c.cuts_with_loss(),
            c.records_per_s_median(),
            c.verdict()
        );
    }
    out
}
