//! `syncbench report RUN.json [MORE.json …] -o report.html [--svg DIR]`: charts of one or more runs in one
//! self-contained HTML page, and each chart as its own SVG file.

use crate::core::exit::{Outcome, usage};
use crate::core::output::write_to;
use crate::present::report::{self, input};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Flags of `syncbench report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// JSON files written by `syncbench run --json` (or `commit`, `pages`, `probe`).
    #[arg(required = true, value_name = "RUN.json")]
    pub inputs: Vec<PathBuf>,
    /// Write the HTML report here (`-` = stdout). A self-contained file: inline SVG and CSS, no scripts.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write every chart as its own SVG file into DIR (created if missing).
    #[arg(long = "svg", value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    validate(&args)?;
    let runs = args.inputs.iter().map(|path| input::load(path)).collect::<anyhow::Result<Vec<_>>>()?;
    runs.iter().try_for_each(refuse_what_cannot_be_charted)?;
    let report = report::build(&runs);
    if let Some(dir) = &args.svg_dir {
        write_svgs(dir, &report.figures)?;
        eprintln!("syncbench: wrote {} charts to {}", report.figures.len(), dir.display());
    }
    if let Some(output) = &args.output {
        write_to(output, &report.html)?;
        if output != Path::new("-") {
            eprintln!("syncbench: wrote {} ({} charts)", output.display(), report.figures.len());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What report charts: run, commit and pages results, and probe files (their environment and verdicts).
fn refuse_what_cannot_be_charted(run: &input::RunFile) -> anyhow::Result<()> {
    use crate::core::input_kind::{describe, refusal};
    let given = describe(crate::present::compare::kind(run), &run.command);
    if crate::present::compare::kind(run).is_some() || given == "a probe file" {
        return Ok(());
    }
    let accepted = "run, commit, pages and probe files (their --json)";
    Err(refusal(&run.name, &given, "report", accepted, ""))
}

fn validate(args: &Args) -> anyhow::Result<()> {
    if args.output.is_none() && args.svg_dir.is_none() {
        return Err(usage("nothing to write: give -o report.html (or -o - for stdout) and/or --svg DIR"));
    }
    if let Some(output) = &args.output {
        if output.is_dir() {
            return Err(usage(format!("-o {} is a directory; give a file name such as report.html", output.display())));
        }
        if args.inputs.iter().any(|input| same_file(input, output)) {
            return Err(usage(format!(
                "-o {} is one of the input files; choose another output name",
                output.display()
            )));
        }
    }
    if let Some(dir) = &args.svg_dir
        && dir.exists()
        && !dir.is_dir()
    {
        return Err(usage(format!("--svg {} exists and is not a directory; give a directory", dir.display())));
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn write_svgs(dir: &Path, figures: &[report::figures::Figure]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for figure in figures {
        let path = dir.join(format!("{}.svg", figure.stem));
        write_to(&path, &figure.svg)?;
    }
    Ok(())
}
