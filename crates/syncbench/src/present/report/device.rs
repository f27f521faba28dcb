//! The report's device accounting table: for every measurement that has it (run's cases, commit's points,
//! pages' rows), what each commit made the lowest disk do, and when other I/O made the counts
//! unattributable.

use super::chart::scale::{format_bytes, format_ns};
use super::chart::svg::esc;
use super::input::RunFile;
use crate::observe::blockdev::account::DeviceAccounting;
use std::fmt::Write;

/// Every measurement of `run` with device accounting, labelled.
fn rows(run: &RunFile) -> Vec<(String, &DeviceAccounting)> {
    let mut out: Vec<(String, &DeviceAccounting)> = Vec::new();
    for c in &run.results {
        if let Some(d) = &c.device {
            out.push((format!("{} {}", super::figures::section_title(c.section.name()), c.label.trim()), d));
        }
    }
    if let Some(commit) = &run.commit {
        for p in commit.points.iter() {
            if let Some(d) = &p.device {
                let log = if p.group_commit { "group" } else { "naive" };
                out.push((format!("commit {}, {} clients, {log}", commit.method_name(), p.clients), d));
            }
        }
    }
    if let Some(pages) = &run.pages {
        for r in &pages.rows {
            if let Some(d) = &r.device {
                out.push((format!("pages {}", r.label()), d));
            }
        }
    }
    out
}

/// The table, or nothing when no measurement has accounting.
pub fn table(out: &mut String, run: &RunFile) {
    let rows = rows(run);
    let Some((_, first)) = rows.first() else { return };
    let chain: Vec<&str> = first.devices.iter().map(|d| d.disk.as_str()).collect();
    let _ = writeln!(
        out,
        "<h3>What reached the device</h3>\n<p>Per commit at {} (chain {}), counters read outside the timed loop.</p>\n\
         <table class=\"device\">\n<tr><th>measurement</th><th>flushes</th><th>write requests</th><th>bytes</th>\
         <th>device time</th><th>FUA writes</th><th>note</th></tr>",
        esc(chain.last().copied().unwrap_or("?")),
        esc(&chain.join(" → "))
    );
    for (label, d) in rows {
        let Some(pc) = d.lowest_per_commit() else { continue };
        let fua = d.traced().map_or("–".to_string(), |(_, r)| r.fua_writes.to_string());
        let dev = d.device_ns_per_commit.map_or("–".to_string(), format_ns);
        let note = d.unattributable.as_deref().unwrap_or("");
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{dev}</td><td class=\"num\">{fua}</td><td>{}</td></tr>",
            esc(&label),
            pc.flushes,
            pc.writes,
            format_bytes(pc.bytes),
            esc(note)
        );
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::CaseResult;
    use crate::observe::blockdev::DeviceReport;
    use crate::observe::blockdev::stat::StatDelta;

    #[test]
    fn cases_with_accounting_get_a_row_and_foreign_io_is_said() {
        let stat = StatDelta { writes: 10, flushes: 10, write_bytes: 10 * 8192, ..Default::default() };
        let device = DeviceAccounting {
            commits: 10,
            devices: vec![DeviceReport { disk: "vda".into(), stat, ..Default::default() }],
            unattributable: Some("vda served requests that were not the commits'".into()),
            ..Default::default()
        };
        let case = CaseResult {
            section: crate::core::suite::Section::OneWrite,
            label: "fdatasync".into(),
            device: Some(device),
            ..Default::default()
        };
        let run = RunFile { results: vec![case, CaseResult::default()], ..Default::default() };
        let mut out = String::new();
        table(&mut out, &run);
        assert!(out.contains("What reached the device") && out.contains("at vda"), "{out}");
        assert_eq!(out.matches("<tr><td>").count(), 1, "{out}");
        assert!(out.contains("<td class=\"num\">1.00</td>") && out.contains("not the commits"), "{out}");
        let mut none = String::new();
        table(&mut none, &RunFile::default());
        assert!(none.is_empty());
    }
}
