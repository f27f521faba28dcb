//! Text and Markdown for `powercut db` and `powercut run`: one row per cell, and a line per cut as it runs.

use super::cell::{DbCell, DbCut};

/// One line per cut while the campaign runs.
pub fn progress(cell: &DbCell, cut: &DbCut) -> String {
    let problem = cut.problem();
    let problem = if cut.damaged() { format!(" — {problem}") } else { String::new() };
    format!(
        "{} {} {} {} cut {}: after {} ms, {} acknowledged, {} lost, restart {} ms{problem}",
        cell.db,
        cell.settings,
        cell.profile,
        cell.fs,
        cell.cuts.len() + 1,
        cut.cut_after_ms,
        cut.acknowledged,
        cut.lost(),
        cut.restart_ms
    )
}

/// The cells of a row, in the Markdown table's column order.
fn row(c: &DbCell) -> [String; 13] {
    let settings = match &c.expected_loss {
        Some(_) => format!("{} (negative control)", c.settings),
        None => c.settings.clone(),
    };
    [
        c.version.clone(),
        settings,
        c.profile.clone(),
        c.fs.clone(),
        crate::core::units::format_size(c.untorn_bytes),
        c.cuts.len().to_string(),
        c.acknowledged().to_string(),
        c.lost().to_string(),
        c.failed_recoveries().to_string(),
        c.integrity_failures().to_string(),
        c.invariant_failures().to_string(),
        format!("{:.1}", c.cuts_per_min()),
        match c.aim_words() {
            Some(aim) => format!("{}; {aim}", c.verdict()),
            None => c.verdict(),
        },
    ]
}

const HEADINGS: [&str; 13] = [
    "version",
    "settings",
    "profile",
    "fs",
    "untorn",
    "cuts",
    "acknowledged",
    "lost",
    "failed recoveries",
    "integrity failures",
    "broken invariants",
    "cuts/min",
    "verdict",
];

/// The table: one row per cell, each column as wide as its widest entry; `partial` when Ctrl-C stopped the
/// campaign.
pub fn table(cells: &[DbCell], partial: bool) -> String {
    let short =
        HEADINGS.map(|h| h.replace("failed recoveries", "failed rec.").replace(" failures", "").replace("broken ", ""));
    let rows: Vec<[String; 13]> = std::iter::once(short).chain(cells.iter().map(row)).collect();
    let widths: Vec<usize> = (0..12).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in &rows {
        for (i, width) in widths.iter().enumerate() {
            // Names left, counts right.
            out += &if i < 5 { format!("{:<width$}  ", r[i]) } else { format!("{:>width$}  ", r[i]) };
        }
        out += &r[12];
        out.push('\n');
    }
    if partial {
        out += "(partial: interrupted before every cut ran)\n";
    }
    out
}

/// The same as a Markdown table.
pub fn markdown(cells: &[DbCell], partial: bool) -> String {
    let mut out =
        format!("| {} |\n|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n", HEADINGS.join(" | "));
    out.extend(cells.iter().map(|c| format!("| {} |\n", row(c).join(" | "))));
    if partial {
        out += "\n(partial: interrupted before every cut ran)\n";
    }
    out
}

/// The JSON document: the seed, whether it is partial, every cell with every cut.
pub fn json(seed: u64, cells: &[DbCell], partial: bool) -> serde_json::Result<String> {
    Ok(serde_json::to_string_pretty(&serde_json::json!({ "seed": seed, "partial": partial, "cells": cells }))? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::powercut::db::cell::{IntegrityResult, RecoveryFailure};
    use crate::proof::powercut::db::verify::DbVerification;

    fn cut(acknowledged: u64, lost: u64) -> DbCut {
        let verification = DbVerification { acknowledged, present: acknowledged - lost, lost, ..Default::default() };
        let integrity = Some(IntegrityResult { ok: true, detail: "ok".into() });
        DbCut {
            acknowledged,
            cut_after_ms: 500,
            restart_ms: 12,
            verification: Some(verification),
            integrity,
            ..DbCut::default()
        }
    }

    fn cell(settings: &str, profile: &str, expected: Option<&str>, cuts: Vec<DbCut>) -> DbCell {
        DbCell {
            db: "sqlite".into(),
            version: "SQLite 3.40.1".into(),
            settings: settings.into(),
            profile: profile.into(),
            honesty: "honest".into(),
            fs: "ext4".into(),
            untorn_bytes: 512,
            aim: None,
            expected_loss: expected.map(String::from),
            cuts,
            fresh_databases: 0,
            elapsed_s: 60.0,
        }
    }

    /// A cell that holds, a negative control that loses, one that FAILS with a failed recovery.
    #[test]
    fn db_text_and_markdown_goldens() {
        let failed = DbCut {
            recovery_failure: Some(RecoveryFailure {
                summary: "would not open".into(),
                log_excerpt: "disk I/O error".into(),
            }),
            verification: None,
            integrity: None,
            ..cut(40, 0)
        };
        let cells = [
            cell("journal_mode=WAL,synchronous=FULL", "hdd-7200", None, vec![cut(120, 0), cut(130, 0)]),
            cell("synchronous=OFF", "cheating-ssd", Some("SQLite synchronous=OFF never syncs"), vec![cut(900, 40)]),
            cell("defaults", "nvme-plp", None, vec![cut(300, 0), failed.clone()]),
        ];
        assert_golden!("syncbench__powercut__db__render__tests__db_text", table(&cells, false));
        assert_golden!("syncbench__powercut__db__render__tests__db_markdown", markdown(&cells, true));
        assert_eq!(
            progress(&cells[2], &failed),
            "sqlite defaults nvme-plp ext4 cut 3: after 500 ms, 40 acknowledged, 0 lost, restart 12 ms — recovery failed: would not open: disk I/O error"
        );
    }
}
