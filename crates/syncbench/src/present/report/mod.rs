//! `syncbench report`: syncbench JSON files rendered as charts (SVG) inside one self-contained HTML page.
//!
//! `input` reads the files tolerantly, `figures` turns each kind of result into charts drawn by `chart`,
//! and `html` assembles the page. Nothing here touches the measured directories.

pub mod chart;
pub mod device;
pub mod figures;
pub mod html;
pub mod input;

use figures::Figure;
use input::RunFile;
use std::path::Path;

/// A run with the figures drawn from it.
#[derive(Clone, Debug)]
pub struct RunFigures<'a> {
    /// The file.
    pub run: &'a RunFile,
    /// Its charts, in page order.
    pub figures: Vec<Figure>,
}

/// Everything a report consists of.
#[derive(Clone, Debug)]
pub struct Report {
    /// The self-contained HTML page.
    pub html: String,
    /// Every chart, each a standalone SVG (what `--svg DIR` writes).
    pub figures: Vec<Figure>,
}

/// Draw every chart for `runs` and assemble the page.
pub fn build(runs: &[RunFile]) -> Report {
    let stems = run_stems(runs);
    let per_run: Vec<RunFigures> =
        runs.iter().zip(&stems).map(|(run, stem)| RunFigures { run, figures: run_figures(stem, run) }).collect();
    // Side by side only for files with run results (a commit or probe file has none to put next to them).
    let labels = short_names(runs);
    let named: Vec<(&str, &[crate::core::schema::CaseResult])> = labels
        .iter()
        .zip(runs)
        .filter(|(_, r)| !r.results.is_empty())
        .map(|(label, r)| (label.as_str(), r.results.as_slice()))
        .collect();
    let across = if named.len() > 1 { figures::method_bars::across_runs(&named) } else { Vec::new() };
    let html = html::page(&per_run, &across);
    let mut all: Vec<Figure> = across;
    all.extend(per_run.into_iter().flat_map(|r| r.figures));
    Report { html, figures: all }
}

/// Every chart of one run, in the order the page shows them.
fn run_figures(stem: &str, run: &RunFile) -> Vec<Figure> {
    let context = context(run);
    let mut out = Vec::new();
    for section in figures::bar_sections(&run.results) {
        let in_section: Vec<_> = run.results.iter().filter(|c| c.section == section).cloned().collect();
        out.extend(figures::method_bars::figures(stem, &context, &in_section));
        out.extend(figures::latency::figures(stem, &context, &in_section));
    }
    out.extend(figures::size_sweep::figures(stem, &context, &run.results));
    out.extend(figures::file_state::figures(stem, &context, &run.results));
    out.extend(figures::latency_over_time::figures(stem, &context, &run.results));
    if let Some(commit) = &run.commit {
        out.extend(figures::commit_scaling::figures(stem, &context, commit));
    }
    out
}

/// What a chart title says about where it was measured: ` — ext4 on /dev/vda1`.
fn context(run: &RunFile) -> String {
    let env = &run.environment;
    let fs = if env.fs_type.is_empty() || env.fs_type == "unknown" { None } else { Some(env.fs_type.as_str()) };
    match (fs, env.mount_source.as_deref()) {
        (Some(fs), Some(source)) if source != fs => format!(" — {fs} on {source}"),
        (Some(fs), _) => format!(" — {fs}"),
        (None, _) => {
            let file_name = Path::new(&run.name).file_name().map(|n| n.to_string_lossy().into_owned());
            format!(" — {}", file_name.unwrap_or_else(|| run.name.clone()))
        }
    }
}

/// How charts name runs: the file name alone (`ext4.json`), or the path as given when file names repeat.
pub fn short_names(runs: &[RunFile]) -> Vec<String> {
    let file_name = |r: &RunFile| {
        Path::new(&r.name).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or(r.name.clone())
    };
    let names: Vec<String> = runs.iter().map(file_name).collect();
    let unique = names.iter().enumerate().all(|(i, n)| !names[..i].contains(n));
    if unique { names } else { runs.iter().map(|r| r.name.clone()).collect() }
}

/// A distinct, file-name-safe stem per run: the file name without `.json`, numbered when names repeat.
fn run_stems(runs: &[RunFile]) -> Vec<String> {
    let mut stems: Vec<String> = Vec::new();
    for run in runs {
        let file_stem = Path::new(&run.name).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let base = match figures::slug(&file_stem) {
            s if s.is_empty() => "run".to_string(),
            s => s,
        };
        let mut stem = base.clone();
        let mut n = 2;
        while stems.contains(&stem) {
            stem = format!("{base}-{n}");
            n += 1;
        }
        stems.push(stem);
    }
    stems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str) -> RunFile {
        RunFile { name: name.into(), ..RunFile::default() }
    }

    #[test]
    fn short_names_drop_directories_unless_names_repeat() {
        assert_eq!(short_names(&[run("a/ext4.json"), run("b/xfs.json")]), vec!["ext4.json", "xfs.json"]);
        assert_eq!(short_names(&[run("a/r.json"), run("b/r.json")]), vec!["a/r.json", "b/r.json"]);
    }

    #[test]
    fn stems_are_unique_and_safe() {
        let runs = [run("a/ext4.json"), run("b/ext4.json"), run("../x y.json"), run("-")];
        assert_eq!(run_stems(&runs), vec!["ext4", "ext4-2", "x-y", "run"]);
    }
}
