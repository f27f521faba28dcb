//! `compare`'s output: a terminal table, Markdown, or JSON, all from the same `Comparison`.

use super::join::Cell;
use super::{Comparison, Summary, writes};
use crate::present::report::chart::scale::format_count;
use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use std::fmt::Write;

/// Column letters: the table names files A, B, C… and says once which is which.
fn letter(index: usize) -> String {
    char::from_u32('A' as u32 + (index % 26) as u32).map(String::from).unwrap_or_default()
}

/// `4.88k ±1.2%`, `4.88k ×/÷ 16` ([`crate::core::stats::Estimate::column`]), or why there is no value.
fn cell_text(cell: &Cell) -> String {
    match (cell.ops_per_s, &cell.note) {
        (Some(ops), _) => match cell.ci95_rel {
            Some(ci) if ci > 0.0 => {
                format!("{} {}", format_count(ops), crate::core::stats::Estimate::from_rel(ops, ci).column())
            }
            _ => format_count(ops),
        },
        (None, _) if !cell.present => "—".into(),
        (None, Some(note)) => short_note(note),
        (None, None) => "n/a".into(),
    }
}

/// `not measured: EINVAL: the file …` → `n/a (EINVAL)`; the full note is in the JSON.
fn short_note(note: &str) -> String {
    let reason = note.strip_prefix("not measured: ").unwrap_or(note);
    let head = reason.split(':').next().unwrap_or(reason).trim();
    if head.len() <= 16 { format!("n/a ({head})") } else { "n/a".into() }
}

/// The header and rows of the main table.
fn table_rows(cmp: &Comparison) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["section".to_string(), "method".into(), "writes".into(), "file state".into()];
    header.extend((0..cmp.files.len()).map(|i| format!("{} commits/s", letter(i))));
    header.extend((1..cmp.files.len()).map(|i| format!("{} vs A", letter(i))));
    let rows = cmp
        .cases
        .iter()
        .map(|c| {
            let key = &c.case.key;
            let method =
                if c.case.durable { key.method.name().to_string() } else { format!("{} (not durable)", key.method) };
            let repeat = if key.repeat > 0 { format!(" #{}", key.repeat + 1) } else { String::new() };
            let mut row = vec![
                key.section.name().to_string(),
                format!("{method}{repeat}"),
                writes(key.writes_per_commit, key.write_size_bytes),
                key.file_state.name().to_string(),
            ];
            row.extend(c.case.cells.iter().map(cell_text));
            row.extend(c.ratios.iter().map(|r| r.as_ref().map(|r| r.text.clone()).unwrap_or_else(|| "—".into())));
            row
        })
        .collect();
    (header, rows)
}

fn files_legend(cmp: &Comparison) -> Vec<String> {
    cmp.files
        .iter()
        .enumerate()
        .map(|(i, f)| format!("{} = {f}{}", letter(i), if i == 0 { " (baseline)" } else { "" }))
        .collect()
}

/// A candidate's summary: the counts, then the typical factor and the extremes on their own lines.
fn summary_lines(cmp: &Comparison, index: usize, s: &Summary) -> Vec<String> {
    let mut counts = format!(
        "{} vs A: {} faster, {} slower, {} within noise",
        letter(index + 1),
        s.faster,
        s.slower,
        s.within_noise
    );
    if s.undecided_regimes > 0 {
        let _ = write!(
            counts,
            ", {} undecided (latency regimes: the same regime on both sides does not agree, or one side has none)",
            s.undecided_regimes
        );
    }
    if s.disturbed > 0 {
        let _ = write!(counts, ", {} not compared (a side measured a disturbed disk: a lower bound)", s.disturbed);
    }
    if s.not_comparable > 0 {
        let _ = write!(counts, ", {} not comparable (no value on one side)", s.not_comparable);
    }
    if cmp.environment_differences.is_empty() && cmp.environment_changed.is_empty() {
        counts.push_str("; same environment");
    } else if !cmp.environment_changed.is_empty() {
        counts.push_str("; environment changed (see above)");
    }
    let mut lines = vec![s.headline.clone(), counts];
    if let Some(mean) = s.durable_geometric_mean_ratio {
        lines.push(format!("durable methods, geometric mean of the ratios: {mean:.2}×"));
    }
    if let Some(gain) = &s.largest_gain {
        lines.push(format!("largest gain: {} ({})", gain.case, gain.text));
    }
    if let Some(loss) = &s.largest_loss {
        lines.push(format!("largest loss: {} ({})", loss.case, loss.text));
    }
    lines
}

fn only_in_line(cmp: &Comparison, present_in: &[String]) -> String {
    let letters: Vec<String> =
        cmp.files.iter().enumerate().filter(|(_, f)| present_in.contains(f)).map(|(i, _)| letter(i)).collect();
    format!("only in {}", letters.join(", "))
}

/// The terminal rendering.
pub fn text(cmp: &Comparison) -> String {
    let mut out = String::new();
    // The answer first: each candidate's direction, and whether the machine changed under the runs.
    for s in &cmp.summaries {
        let _ = writeln!(out, "{}", s.headline);
    }
    for line in &cmp.environment_changed {
        let _ = writeln!(out, "environment changed: {line}");
    }
    out.push('\n');
    for line in files_legend(cmp) {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
    if cmp.environment_differences.is_empty() {
        out.push_str("Environments: no differences in kernel, file system, mount, device or virtualization.\n\n");
    } else {
        out.push_str("Environment differences:\n");
        let width = cmp.environment_differences.iter().map(|d| d.field.chars().count()).max().unwrap_or(0);
        for d in &cmp.environment_differences {
            let values: Vec<String> = d.values.iter().enumerate().map(|(i, v)| format!("{}: {v}", letter(i))).collect();
            let _ = writeln!(out, "  {:width$}  {}", d.field, values.join("  |  "));
        }
        out.push('\n');
    }
    let (header, rows) = table_rows(cmp);
    if rows.is_empty() {
        out.push_str("No case is in both the baseline and another file.\n");
    } else {
        let mut table = Table::new();
        table.load_preset(presets::UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
        table.set_header(header);
        for row in rows {
            table.add_row(row);
        }
        let first_number = 4;
        for index in first_number..table.column_count() {
            if let Some(column) = table.column_mut(index) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        let _ = writeln!(out, "{table}");
    }
    if !cmp.only_in_some.is_empty() {
        out.push_str("\nCases not in every file:\n");
        for only in &cmp.only_in_some {
            let _ = writeln!(out, "  {} — {}", only.name, only_in_line(cmp, &only.present_in));
        }
    }
    if !cmp.summaries.is_empty() {
        out.push_str("\nSummary (commits per second; ± or the range is the 95% confidence interval of the ratio):\n");
        for (i, s) in cmp.summaries.iter().enumerate() {
            for (n, line) in summary_lines(cmp, i, s).iter().enumerate() {
                let indent = if n == 0 { "  " } else { "    " };
                let _ = writeln!(out, "{indent}{line}");
            }
        }
    }
    out
}

fn md_escape(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The Markdown rendering (GitHub-flavoured tables).
pub fn markdown(cmp: &Comparison) -> String {
    let mut out = String::from("## syncbench compare\n\n");
    for line in files_legend(cmp) {
        let _ = writeln!(out, "- {}", md_escape(&line));
    }
    for s in &cmp.summaries {
        let _ = writeln!(out, "\n**{}**", md_escape(&s.headline));
    }
    for line in &cmp.environment_changed {
        let _ = writeln!(out, "\n**environment changed:** {}", md_escape(line));
    }
    out.push_str("\n### Environment differences\n\n");
    if cmp.environment_differences.is_empty() {
        out.push_str("None in kernel, file system, mount, device or virtualization.\n");
    } else {
        let header: Vec<String> =
            std::iter::once("property".to_string()).chain((0..cmp.files.len()).map(letter)).collect();
        markdown_table(
            &mut out,
            &header,
            cmp.environment_differences
                .iter()
                .map(|d| std::iter::once(d.field.clone()).chain(d.values.iter().cloned()).collect()),
        );
    }
    out.push_str("\n### Commits per second\n\n");
    let (header, rows) = table_rows(cmp);
    markdown_table(&mut out, &header, rows.into_iter());
    if !cmp.only_in_some.is_empty() {
        out.push_str("\n### Cases not in every file\n\n");
        for only in &cmp.only_in_some {
            let _ = writeln!(out, "- {} — {}", md_escape(&only.name), only_in_line(cmp, &only.present_in));
        }
    }
    if !cmp.summaries.is_empty() {
        out.push_str("\n### Summary\n\n");
        for (i, s) in cmp.summaries.iter().enumerate() {
            for (n, line) in summary_lines(cmp, i, s).iter().enumerate() {
                let indent = if n == 0 { "- " } else { "  - " };
                let _ = writeln!(out, "{indent}{}", md_escape(line));
            }
        }
        out.push_str(
            "\n± or the range is the 95% confidence interval of the ratio, propagated from both runs' intervals in \
                  log space (never below zero).\n",
        );
    }
    out
}

fn markdown_table(out: &mut String, header: &[String], rows: impl Iterator<Item = Vec<String>>) {
    let _ = writeln!(out, "| {} |", header.iter().map(|h| md_escape(h)).collect::<Vec<_>>().join(" | "));
    let aligns: Vec<&str> =
        header.iter().map(|h| if h.contains("commits/s") || h.contains(" vs ") { "---:" } else { "---" }).collect();
    let _ = writeln!(out, "|{}|", aligns.join("|"));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.iter().map(|c| md_escape(c)).collect::<Vec<_>>().join(" | "));
    }
}

/// The JSON rendering (pretty, newline-terminated).
pub fn json(cmp: &Comparison) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(cmp)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_shortened_to_the_errno() {
        assert_eq!(short_note("not measured: EINVAL: tmpfs has no O_DIRECT"), "n/a (EINVAL)");
        assert_eq!(short_note("unsupported here"), "n/a (unsupported here)");
        assert_eq!(short_note("not measured: a very long sentence without an errno"), "n/a");
    }

    #[test]
    fn letters_name_files() {
        assert_eq!((letter(0), letter(2)), ("A".to_string(), "C".to_string()));
    }
}
