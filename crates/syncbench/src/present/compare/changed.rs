//! Whether the machine changed between the runs, beyond what was meant to differ: one run disturbed (other
//! I/O on its device, CPU steal) and another not, or the reference cases — writes that never reach the
//! device, so the storage cannot explain them — at different speeds. Either way a ratio measures the
//! environment as much as the storage, and `compare` says so before its numbers.

use super::ComparedCase;
use super::ratio::{Direction, Ratio};
use crate::present::report::input::RunFile;

/// A reference case differing by at least this factor (and beyond noise) means the CPU/memory changed.
const REFERENCE_FACTOR: f64 = 1.25;

/// One sentence per reason the environment changed between file 0 and the others (empty: no sign).
pub fn changes(runs: &[RunFile], cases: &[ComparedCase]) -> Vec<String> {
    let mut out = Vec::new();
    let disturbed: Vec<(usize, Vec<&str>)> = runs.iter().map(disturbance).collect();
    let letters = |i: usize| char::from(b'A' + (i % 26) as u8);
    let any_disturbed = disturbed.iter().any(|(n, _)| *n > 0);
    // A quiet run often has a case or two touched by the system's own writes (a journal commit); a run
    // beside a writer has most of them: the same kinds, but not the same environment.
    let case_count = runs.iter().map(|r| r.results.len()).max().unwrap_or(0).max(1);
    let far_apart = |a: usize, b: usize| a.abs_diff(b) >= 2 && a.abs_diff(b) * 4 > case_count;
    let all_same =
        disturbed.windows(2).all(|w| (w[0].0 > 0) == (w[1].0 > 0) && w[0].1 == w[1].1 && !far_apart(w[0].0, w[1].0));
    if any_disturbed && !all_same {
        let parts: Vec<String> = disturbed
            .iter()
            .enumerate()
            .map(|(i, (n, kinds))| match n {
                0 => format!("{} undisturbed", letters(i)),
                _ => format!("{} disturbed in {n} case(s) ({}: {})", letters(i), kinds.join(", "), magnitude(&runs[i])),
            })
            .collect();
        out.push(format!("the runs were not equally disturbed: {}", parts.join("; ")));
    }
    // A case that measured a disturbed disk is a lower bound: whatever the other run shows, that case
    // compares the environments, not the storage.
    let bounds: Vec<String> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, run)| {
            let n = run.results.iter().filter(|c| c.lower_bound).count();
            (n > 0).then(|| format!("{} {n} case(s) ({})", letters(i), magnitude(run)))
        })
        .collect();
    if !bounds.is_empty() {
        out.push(format!(
            "cases measured on a disturbed disk are lower bounds and not compared: {}",
            bounds.join("; ")
        ));
    }
    for c in cases.iter().filter(|c| c.case.key.method == crate::core::method::SyncMethod::Write) {
        for (i, r) in c.ratios.iter().enumerate() {
            let Some(r) = r else { continue };
            let directed = matches!(r.ratio.direction, Direction::Faster | Direction::Slower);
            if directed && factor(&r.ratio) >= REFERENCE_FACTOR {
                out.push(format!(
                    "the reference case {} (page cache only, no device) differs in {}: {} — the CPU or memory \
                     was not the same, so every ratio includes that",
                    super::case_name(&c.case.key, c.case.durable),
                    letters(i + 1),
                    r.text
                ));
            }
        }
    }
    out
}

/// How much a run was disturbed, over its cases: "412.3 MiB written and 3120 flushes not ours, CPU steal
/// up to 12%".
fn magnitude(run: &RunFile) -> String {
    let all = || run.results.iter().flat_map(|c| &c.disturbances);
    let written: u64 = all().map(|d| d.foreign_write_bytes).sum();
    let read: u64 = all().map(|d| d.foreign_read_bytes).sum();
    let flushes: u64 = all().map(|d| d.foreign_flushes).sum();
    let steal = all().filter_map(|d| d.steal_pct).fold(None, |m: Option<f64>, p| Some(m.map_or(p, |m| m.max(p))));
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / 1048576.0);
    let mut parts = Vec::new();
    if written > 0 || read > 0 || flushes > 0 {
        parts.push(format!("{} written, {} read and {flushes} flushes not ours", mib(written), mib(read)));
    }
    if let Some(pct) = steal {
        parts.push(format!("CPU steal up to {pct:.0}%"));
    }
    if parts.is_empty() { "no magnitude recorded".to_string() } else { parts.join(", ") }
}

fn factor(r: &Ratio) -> f64 {
    r.ratio.max(1.0 / r.ratio)
}

/// Cases with a disturbance named, and the kinds (sorted), plus `cpu_steal` when a steal verdict is on.
fn disturbance(run: &RunFile) -> (usize, Vec<&str>) {
    let n = run.results.iter().filter(|c| !c.disturbances.is_empty()).count();
    let mut kinds: Vec<&str> = run.results.iter().flat_map(|c| c.disturbances.iter().map(|d| d.kind.name())).collect();
    let steal_verdict = run.verdicts.iter().any(|v| v.is(crate::core::verdict::VerdictCode::CpuSteal));
    if steal_verdict {
        kinds.push("cpu_steal");
    }
    kinds.sort();
    kinds.dedup();
    (if n == 0 && steal_verdict { 1 } else { n }, kinds)
}
