//! Markdown export: a header naming the target, the verdicts, then one table per section.
//! Written by hand (as hyperfine does) so the format is stable and easy to snapshot.

use crate::core::schema::{CaseResult, Envelope, RunPayload};
use crate::core::suite::Section;
use std::fmt::Write;

/// The run as Markdown.
pub fn to_markdown(doc: &Envelope<RunPayload>) -> String {
    let mut out = String::new();
    let env = &doc.environment;
    let _ = writeln!(out, "# syncbench run: {}\n", escape(&doc.payload.dir));
    let _ = writeln!(
        out,
        "File system `{}`, kernel `{}`, pattern `{}`, started {}.\n",
        env.fs_type, env.kernel, doc.payload.pattern, doc.started_at
    );
    if !doc.verdicts.is_empty() {
        let _ = writeln!(out, "## Verdicts\n");
        for v in &doc.verdicts {
            let _ = writeln!(out, "- **{:?}** `{}`: {} {}", v.severity, v.code, escape(&v.message), escape(&v.advice));
        }
        out.push('\n');
    }
    for section in sections_in_order(&doc.payload.results) {
        section_table(&mut out, section, &doc.payload.results);
    }
    out
}

fn sections_in_order(cases: &[CaseResult]) -> Vec<Section> {
    let mut seen: Vec<Section> = Vec::new();
    for c in cases {
        if !seen.contains(&c.section) {
            seen.push(c.section);
        }
    }
    seen
}

fn section_table(out: &mut String, section: Section, cases: &[CaseResult]) {
    let _ = writeln!(out, "## {section}\n");
    // p99.99 only where a case of the section has one (≥ 10,000 commits), as in the text and JSON.
    let tails = cases.iter().any(|c| c.section == section && c.latency_ns_p9999.is_some());
    let (tail_head, tail_rule) = if tails { (" p99.99 µs |", "---:|") } else { ("", "") };
    let _ = writeln!(out, "| Case | Method | Durable | ops/s | p50 µs | p99 µs | p99.9 µs |{tail_head} 95% re-run |");
    let _ = writeln!(out, "|:---|:---|:---:|---:|---:|---:|---:|{tail_rule}---:|");
    for c in cases.iter().filter(|c| c.section == section) {
        let durable = if c.durable { "yes" } else { "**no**" };
        if !c.supported || c.error.is_some() {
            let why = c.error.as_deref().unwrap_or("unsupported");
            let blank = if tails { " |" } else { "" };
            let _ =
                writeln!(out, "| {} | `{}` | {durable} | {} | | | |{blank} |", escape(&c.label), c.method, escape(why));
            continue;
        }
        let l = &c.latency_ns;
        let _ = writeln!(
            out,
            "| {} | `{}` | {durable} | {:.0} | {:.1} | {:.1} | {:.1} |{} {} |",
            escape(&c.label),
            c.method,
            c.ops_per_s,
            l.p50 as f64 / 1e3,
            l.p99 as f64 / 1e3,
            l.p999 as f64 / 1e3,
            if tails {
                c.latency_ns_p9999.map_or(" |".to_string(), |ns| format!(" {:.1} |", ns as f64 / 1e3))
            } else {
                String::new()
            },
            c.estimate().column()
        );
    }
    out.push('\n');
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
