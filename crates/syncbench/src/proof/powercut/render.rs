//! Text and Markdown for `powercut verify` and `powercut lab`.

#[cfg(feature = "fuse")]
use super::lab::Cell;
use super::verify::Verification;
use std::fmt::Write;

/// verify's answer first (the verdict), then its table, per kind, and the first losses.
pub fn verification(v: &Verification) -> String {
    let mut out = String::new();
    let verdict = match (v.failures(), v.durable) {
        (0, _) => "every acknowledged record is present and intact".to_string(),
        (n, true) => format!(
            "{n} acknowledged records lost or torn: this disk (or something above it) does not keep what it acknowledged"
        ),
        (n, false) => format!("{n} acknowledged records lost or torn: expected, {} is not a durable method", v.method),
    };
    let _ = writeln!(out, "verdict: {verdict}");
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
            k.records.acknowledged,
            k.checked,
            k.present,
            k.records.lost,
            k.records.torn,
            k.records.unacknowledged_present,
            k.records.torn_by_next_overwrite
        );
    }
    for e in &v.examples {
        let _ = writeln!(out, "  {e}");
    }
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
        cut.records.acknowledged,
        cut.records.lost,
        cut.records.torn
    )
}

#[cfg(feature = "fuse")]
/// The cells of a `powercut lab` row, in the Markdown table's column order; the text table leaves out the
/// cuts with loss (its verdict counts them).
fn lab_cells(c: &Cell) -> [String; 10] {
    let method = if c.durable { c.method.to_string() } else { format!("{} (not durable)", c.method) };
    [
        c.profile.to_string(),
        c.fs.to_string(),
        method,
        c.cuts.len().to_string(),
        c.acknowledged().to_string(),
        c.lost().to_string(),
        c.torn().to_string(),
        c.cuts_with_loss().to_string(),
        format!("{:.0}", c.records_per_s_median()),
        c.verdict(),
    ]
}

#[cfg(feature = "fuse")]
/// `powercut lab`'s table: one row per profile × fs × method.
pub fn lab_table(cells: &[Cell]) -> String {
    let line = |[profile, fs, method, cuts, acknowledged, lost, torn, _, rate, verdict]: [String; 10]| {
        format!(
            "{profile:<14} {fs:<5} {method:<14} {cuts:>5} {acknowledged:>13} {lost:>6} {torn:>5} {rate:>10}  {verdict}\n"
        )
    };
    let headings = ["profile", "fs", "method", "cuts", "acknowledged", "lost", "torn", "", "records/s", "verdict"];
    let mut out = line(headings.map(String::from));
    out.extend(cells.iter().map(|c| line(lab_cells(c))));
    out
}

#[cfg(feature = "fuse")]
/// The same as a Markdown table.
pub fn lab_markdown(cells: &[Cell]) -> String {
    let mut out = String::from(
        "| profile | fs | method | cuts | acknowledged | lost | torn | cuts with loss | records/s (median) | verdict |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    out.extend(cells.iter().map(|c| format!("| {} |\n", lab_cells(c).join(" | "))));
    out
}

#[cfg(test)]
mod verify_tests {
    use super::*;
    use crate::proof::powercut::verify::{KindResult, RecordCounts};

    fn kind(kind: &str, acknowledged: u64, lost: u64, torn: u64) -> KindResult {
        let records = RecordCounts { acknowledged, lost, torn, torn_by_next_overwrite: 1, unacknowledged_present: 2 };
        KindResult { kind: kind.into(), checked: acknowledged, present: acknowledged - lost - torn, records }
    }

    /// The verdict is the first line, before the run and the table: a run that lost records, one that
    /// kept them, and one with a method that promises nothing.
    #[test]
    fn verify_text_goldens_put_the_verdict_first() {
        let lost = Verification {
            run: "r1".into(),
            method: "fdatasync".parse().unwrap(),
            durable: true,
            kinds: vec![kind("overwrite", 100, 2, 1), kind("append", 50, 0, 0), kind("new_file", 10, 0, 0)],
            examples: vec!["overwrite slot 7: record 93 lost (an older record is there)".into()],
        };
        let kept = Verification { kinds: vec![kind("append", 50, 0, 0)], examples: Vec::new(), ..lost.clone() };
        let write = Verification {
            method: "write".parse().unwrap(),
            durable: false,
            kinds: vec![kind("append", 9, 4, 0)],
            ..kept.clone()
        };
        for v in [&lost, &kept, &write] {
            assert!(verification(v).starts_with("verdict: "), "{}", verification(v));
        }
        let text = [&lost, &kept, &write].map(verification).join("\n");
        assert_golden!("syncbench__powercut__render__tests__verify_text", text);
    }
}

#[cfg(all(test, feature = "fuse"))]
mod tests {
    use super::*;
    use crate::proof::powercut::lab::CutResult;
    use crate::proof::powercut::verify::RecordCounts;

    fn cut(acknowledged: u64, lost: u64, torn: u64, records_per_s: f64) -> CutResult {
        CutResult {
            seed: 1,
            cut_after_ms: 700,
            records: RecordCounts { acknowledged, lost, torn, torn_by_next_overwrite: 0, unacknowledged_present: 3 },
            records_per_s,
            device_lost_writes: 0,
            repaired_with: None,
            examples: Vec::new(),
        }
    }

    /// `parse` builds the names whether a field holds the name or its enum.
    fn cell(profile: &str, honesty: &str, method: &str, durable: bool, cuts: Vec<CutResult>) -> Cell {
        Cell {
            profile: profile.parse().unwrap(),
            honesty: honesty.parse().unwrap(),
            fs: "ext4".parse().unwrap(),
            method: method.parse().unwrap(),
            durable,
            cuts,
            unusable_fs: Vec::new(),
        }
    }

    /// A cell that holds, one that loses on a lying disk, one not durable, one that FAILS with an unusable
    /// file system, one without cuts.
    #[test]
    fn lab_text_and_markdown_goldens() {
        let mut fails =
            cell("ssd-plp", "honest", "fdatasync", true, vec![cut(900, 2, 1, 1234.6), cut(950, 0, 0, 1100.0)]);
        fails.unusable_fs.push("ext4".into());
        let cells = [
            cell("hdd-7200", "honest", "fsync", true, vec![cut(120, 0, 0, 98.4), cut(130, 0, 0, 101.7)]),
            cell("ssd-lying", "ignores-flush", "fdatasync", true, vec![cut(5000, 40, 0, 4500.0)]),
            cell("hdd-7200", "honest", "write", false, vec![cut(20_000, 12_000, 3, 250_000.0)]),
            fails,
            cell("zero", "write-through", "open_datasync", true, Vec::new()),
        ];
        assert_golden!("syncbench__powercut__render__tests__lab_text", lab_table(&cells));
        assert_golden!("syncbench__powercut__render__tests__lab_markdown", lab_markdown(&cells));
    }
}
