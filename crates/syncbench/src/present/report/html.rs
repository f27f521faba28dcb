//! The report page: one HTML document with inline CSS and SVG, no scripts, no network resources.

use super::RunFigures;
use super::chart::scale::{format_bytes, format_count, format_ns, trim_number};
use super::chart::svg::esc;
use super::figures::Figure;
use super::input::RunFile;
use crate::core::environment::Environment;
use crate::core::verdict::{Severity, Verdict};
use crate::measure::pages::PagesTable;
use std::fmt::Write;

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:0;color:#1d1d1d;background:#f6f6f4}
main{max-width:820px;margin:0 auto;padding:24px 20px 60px}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:21px;margin:36px 0 8px;border-bottom:2px solid #ddd;padding-bottom:4px}
h3{font-size:16px;margin:24px 0 8px}
.meta{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:13px;margin:8px 0;background:#fff}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th{background:#efefef;white-space:nowrap}
th.section{background:#f6f6f4;text-align:left;font-weight:600}
.environment td{overflow-wrap:anywhere}
.glance{font-size:14px;margin:6px 0 4px}
td.answer{background:#fbfbf8}
.verdict{border-left:5px solid #888;background:#fff;padding:6px 10px;margin:8px 0}
.verdict.critical{border-color:#c0392b}.verdict.warning{border-color:#e69f00}.verdict.info{border-color:#0072b2}
.verdict .advice{color:#444}
figure{margin:14px 0;background:#fff;border:1px solid #ddd}
figure svg{display:block;max-width:100%;height:auto}
.notdurable{color:#777}
code{font-size:12px}
";

/// The whole page.
pub fn page(runs: &[RunFigures], across: &[Figure]) -> String {
    let mut out = String::new();
    let names: Vec<&str> = runs.iter().map(|r| r.run.name.as_str()).collect();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>syncbench report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n<h1>syncbench report</h1>\n<p class=\"meta\">{}</p>\n",
        esc(&names.join(", ")),
        esc(&format!("{} file(s): {}", names.len(), names.join(", "))),
    );
    if !across.is_empty() {
        out.push_str("<h2>Runs side by side</h2>\n");
        for figure in across {
            push_figure(&mut out, figure);
        }
    }
    for run in runs {
        run_section(&mut out, run);
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn run_section(out: &mut String, run_figures: &RunFigures) {
    let run = run_figures.run;
    let _ = writeln!(out, "<section class=\"run\">\n<h2>{}</h2>", esc(&run.name));
    let _ = writeln!(
        out,
        "<p class=\"meta\">Started {} · syncbench {} · <code>{}</code></p>",
        esc(or_unknown(&run.started_at)),
        esc(or_unknown(&run.version)),
        esc(&run.command)
    );
    // What a reader comes for first: the charts (and the small pages table); the verdicts are counted here
    // and spelled out below, with the environment and the full results table.
    at_a_glance(out, &run.verdicts);
    if !run_figures.figures.is_empty() {
        out.push_str("<h3>Charts</h3>\n");
    }
    for figure in &run_figures.figures {
        push_figure(out, figure);
    }
    if let Some(pages) = &run.pages {
        pages_table(out, pages);
    }
    verdicts(out, &run.verdicts);
    environment(out, &run.environment);
    if !run.results.is_empty() {
        results_table(out, run);
    }
    super::device::table(out, run);
    out.push_str("</section>\n");
}

fn push_figure(out: &mut String, figure: &Figure) {
    let _ = write!(
        out,
        "<figure id=\"fig-{}\" aria-label=\"{}\">\n{}</figure>\n",
        esc(&figure.stem),
        esc(&figure.title),
        figure.svg
    );
}

fn or_unknown(text: &str) -> &str {
    if text.is_empty() { "unknown" } else { text }
}

fn environment(out: &mut String, env: &Environment) {
    out.push_str("<h3>Environment</h3>\n<table class=\"environment\">\n");
    let mut row = |key: &str, value: String| {
        if !value.is_empty() {
            let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(key), esc(&value));
        }
    };
    row("directory", env.dir.clone());
    row("file system", env.fs_type.clone());
    row(
        "mount",
        [env.mount_source.clone(), env.mount_point.clone().map(|p| format!("on {p}"))]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" "),
    );
    row("mount options", crate::observe::probe::render::mount_options_text(env).unwrap_or_default());
    row("kernel", env.kernel.clone());
    for device in &env.devices {
        row(&format!("device {}", device.name), device_line(device));
    }
    if let Some(backing) = &env.loop_backing {
        row("loop backing file", format!("{} on {}", backing.file, backing.fs_type));
    }
    row("virtualization", virtualization_line(env));
    if let (Some(offset), Some(memory)) = (env.dio_offset_align_bytes, env.dio_mem_align_bytes) {
        row("O_DIRECT alignment", format!("offset {offset} B, memory {memory} B"));
    }
    if let (Some(min), Some(max)) = (env.atomic_write_unit_min_bytes, env.atomic_write_unit_max_bytes) {
        row("atomic writes", format!("{} to {}", format_bytes(f64::from(min)), format_bytes(f64::from(max))));
    }
    out.push_str("</table>\n");
}

/// One line per device: `disk, virtio, rotational, write cache: write back, FUA: no, model …`.
pub fn device_line(device: &crate::core::environment::Device) -> String {
    let mut parts = vec![device.kind.name().to_string()];
    parts.extend(device.transport.map(|t| t.name().to_string()));
    if let Some(rotational) = device.rotational {
        parts.push(if rotational { "rotational".into() } else { "non-rotational".into() });
    }
    if let Some(cache) = &device.write_cache {
        parts.push(format!("write cache: {cache}"));
    }
    if let Some(fua) = device.fua {
        parts.push(format!("FUA: {}", if fua { "yes" } else { "no" }));
    }
    parts.extend(device.model.clone().map(|m| format!("model {m}")));
    parts.retain(|p| !p.is_empty());
    parts.join(", ")
}

/// `virtual machine (KVM; QEMU Standard PC)`, a container, or `none detected`.
pub fn virtualization_line(env: &Environment) -> String {
    let v = &env.virtualization;
    let mut parts = Vec::new();
    if v.virtual_machine {
        let details: Vec<String> = [v.hypervisor.clone(), v.dmi_product.clone()].into_iter().flatten().collect();
        parts.push(if details.is_empty() {
            "virtual machine".into()
        } else {
            format!("virtual machine ({})", details.join("; "))
        });
    }
    parts.extend(v.container.clone().map(|c| format!("container: {c}")));
    if parts.is_empty() { "none detected".into() } else { parts.join(", ") }
}

/// One line above the charts: how many verdicts of each severity the file has, pointing below.
fn at_a_glance(out: &mut String, verdicts: &[Verdict]) {
    if verdicts.is_empty() {
        return;
    }
    let count = |severity: Severity| verdicts.iter().filter(|v| v.severity == severity).count();
    let parts: Vec<String> =
        [(Severity::Critical, "critical"), (Severity::Warning, "warning"), (Severity::Info, "info")]
            .into_iter()
            .filter(|(s, _)| count(*s) > 0)
            .map(|(s, name)| format!("{} {name}", count(s)))
            .collect();
    let _ = writeln!(
        out,
        "<p class=\"glance\">Verdicts: {} ({}) — spelled out below the charts.</p>",
        parts.join(", "),
        esc(&verdicts.iter().map(|v| v.code.as_str()).collect::<Vec<_>>().join(", "))
    );
}

fn verdicts(out: &mut String, verdicts: &[Verdict]) {
    out.push_str("<h3>Verdicts</h3>\n");
    if verdicts.is_empty() {
        out.push_str("<p class=\"meta\">No verdicts in this file.</p>\n");
    }
    for v in verdicts {
        let severity = match v.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        };
        let _ = writeln!(
            out,
            "<div class=\"verdict {severity}\"><strong>{severity}</strong> <code>{}</code>: {}<br><span class=\"advice\">{}</span></div>",
            esc(v.code.as_str()),
            esc(&v.message),
            esc(&v.advice)
        );
    }
}

fn results_table(out: &mut String, run: &RunFile) {
    // One heading row per section instead of a section column, so the numbers fit on one line each.
    out.push_str(
        "<h3>Results</h3>\n<table class=\"results\">\n<tr><th>case</th><th>commits/s</th><th>95% re-run</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>\n",
    );
    let mut section: Option<&str> = None;
    for case in &run.results {
        if section != Some(case.section.name()) {
            close_then_sync_answer(out, run, section);
            section = Some(case.section.name());
            let _ = writeln!(
                out,
                "<tr><th class=\"section\" colspan=\"7\">{}</th></tr>",
                esc(&super::figures::section_title(case.section.name()))
            );
        }
        let class = if case.durable { "" } else { " class=\"notdurable\"" };
        let name = if case.label.is_empty() { case.method.name().to_string() } else { case.label.trim().to_string() };
        let durable = if case.durable { "" } else { " (not durable)" };
        let _ = write!(out, "<tr{class}><td>{}{durable}</td>", esc(&name));
        if super::figures::measured(case) {
            let l = &case.latency_ns;
            let _ = writeln!(
                out,
                "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                format_count(case.ops_per_s),
                esc(&case.estimate().column()),
                format_ns(l.p50 as f64),
                format_ns(l.p99 as f64),
                format_ns(l.p999 as f64),
                format_ns(l.max as f64)
            );
        } else {
            let _ = writeln!(out, "<td colspan=\"6\">{}</td></tr>", esc(&super::figures::missing_note(case)));
        }
    }
    close_then_sync_answer(out, run, section);
    out.push_str("</table>\n");
}

/// After the rows of `close_then_sync`, its question answered in words, as `run` prints it.
fn close_then_sync_answer(out: &mut String, run: &RunFile, ended: Option<&str>) {
    if ended == Some("close_then_sync") {
        let all: Vec<&crate::core::schema::CaseResult> = run.results.iter().collect();
        let _ = writeln!(
            out,
            "<tr><td class=\"answer\" colspan=\"7\">→ {}</td></tr>",
            esc(&crate::present::table::honoured_answer(&all))
        );
    }
}

fn pages_table(out: &mut String, pages: &PagesTable) {
    out.push_str(
        "<h3>Torn-page protection (pages)</h3>\n<table class=\"pages\">\n<tr><th>mode</th><th>buffer pool</th><th>tps</th><th>p50</th><th>p99</th><th>WAL bytes/txn</th><th>full-page share</th><th>data bytes/txn</th><th>syncs/txn</th><th>checkpoint</th></tr>\n",
    );
    for row in &pages.rows {
        let pool = if row.buffer_pool_bytes > 0 { format_bytes(row.buffer_pool_bytes as f64) } else { "–".into() };
        let _ = write!(out, "<tr><td>{}</td><td class=\"num\">{pool}</td>", esc(row.mode.name()));
        match (&row.error, row.supported) {
            (Some(error), _) => {
                let _ = writeln!(out, "<td colspan=\"8\">not measured: {}</td></tr>", esc(error));
            }
            (None, false) => {
                let _ = writeln!(out, "<td colspan=\"8\">not supported here</td></tr>");
            }
            (None, true) => {
                let ns = |v: f64| if v > 0.0 { format_ns(v) } else { "–".into() };
                let _ = writeln!(
                    out,
                    "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}%</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} s</td></tr>",
                    format_count(row.tps),
                    ns(row.latency_ns.p50 as f64),
                    ns(row.latency_ns.p99 as f64),
                    format_bytes(row.wal_bytes_per_txn),
                    trim_number(row.fpi_share * 100.0),
                    format_bytes(row.data_bytes_per_txn),
                    trim_number(row.fsyncs_per_txn),
                    trim_number(row.checkpoint_duration_s_mean),
                );
            }
        }
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::pages::PagesRow;
    use syncbench_engine::pages::Mode;

    #[test]
    fn results_are_grouped_by_section_and_close_then_sync_is_answered_in_words() {
        let case = |section: &str, label: &str, mean_ns: f64| crate::core::schema::CaseResult {
            section: section.parse().unwrap(),
            method: crate::core::method::SyncMethod::Fsync,
            label: label.into(),
            durable: true,
            supported: true,
            ops: 100,
            ops_per_s: 1e9 / mean_ns,
            ci95_rel: 0.1,
            write_size_bytes: 8192,
            writes_per_commit: 1,
            latency_ns: crate::core::schema::LatencyNs { mean: mean_ns, ..Default::default() },
            ..Default::default()
        };
        let run = RunFile {
            results: vec![
                case("one_write", "fsync", 200_000.0),
                case("close_then_sync", "write, fsync, close", 210_000.0),
                case("close_then_sync", "write, close, fsync", 220_000.0),
            ],
            ..RunFile::default()
        };
        let mut out = String::new();
        results_table(&mut out, &run);
        let at = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("no {needle:?} in {out}"));
        assert!(at("One write per commit") < at(">fsync<"), "{out}");
        assert!(at("Sync from another descriptor") < at("write, close, fsync"), "{out}");
        assert!(at("write, close, fsync") < at("→ yes: fsync on a descriptor that did not write"), "{out}");
        assert_eq!(out.matches("class=\"answer\"").count(), 1, "{out}");
    }

    #[test]
    fn pages_rows_show_values_or_why_they_are_missing() {
        let pages = PagesTable {
            rows: vec![
                PagesRow {
                    mode: Mode::Fpw,
                    buffer_pool_bytes: 64 << 20,
                    supported: true,
                    tps: 2600.0,
                    fpi_share: 0.93,
                    ..PagesRow::default()
                },
                PagesRow { mode: Mode::Atomic, supported: false, ..PagesRow::default() },
                PagesRow { mode: Mode::Dw, error: Some("EIO: <disk>".into()), ..PagesRow::default() },
            ],
            ..PagesTable::default()
        };
        let mut out = String::new();
        pages_table(&mut out, &pages);
        assert!(out.contains("<td>fpw</td><td class=\"num\">64 MiB</td><td class=\"num\">2.6k</td>"), "{out}");
        assert!(out.contains("93%"));
        assert!(out.contains("<td>atomic</td><td class=\"num\">–</td><td colspan=\"8\">not supported here</td>"));
        assert!(out.contains("not measured: EIO: &lt;disk&gt;"), "errors are escaped");
    }
}
