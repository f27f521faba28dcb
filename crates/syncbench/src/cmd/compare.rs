//! `syncbench compare A.json B.json [C.json …]`: cases side by side, each candidate's ratio to the baseline
//! (the first file) with its uncertainty, cases present in only some files, and environment differences.

use crate::compare::{self, render};
use crate::exit::{Outcome, usage};
use crate::output::write_to;
use crate::report::input;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Flags of `syncbench compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// JSON files written by `syncbench run --json`; the first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "RUN.json")]
    pub inputs: Vec<PathBuf>,
    /// Also write the comparison as Markdown to FILE (`-` = stdout instead of the table).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also write the comparison as JSON to FILE (`-` = stdout instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    validate(&args)?;
    let runs = args.inputs.iter().map(|path| input::load(path)).collect::<anyhow::Result<Vec<_>>>()?;
    compare::check_inputs(&runs)?;
    let comparison = compare::compare(&runs);
    let to_stdout = |dest: &Option<PathBuf>| dest.as_deref() == Some(Path::new("-"));
    if !to_stdout(&args.markdown) && !to_stdout(&args.json) {
        write_to(Path::new("-"), &render::text(&comparison))?;
    }
    if let Some(dest) = &args.markdown {
        write_to(dest, &render::markdown(&comparison))?;
    }
    if let Some(dest) = &args.json {
        write_to(dest, &render::json(&comparison)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn validate(args: &Args) -> anyhow::Result<()> {
    let outputs: Vec<&PathBuf> = [&args.markdown, &args.json].into_iter().flatten().collect();
    if outputs.len() == 2 && outputs[0] == outputs[1] {
        return Err(usage("--markdown and --json name the same destination; give each its own file"));
    }
    for output in outputs {
        if output.as_path() == Path::new("-") {
            continue;
        }
        if output.is_dir() {
            return Err(usage(format!("{} is a directory; give a file name for the export", output.display())));
        }
        crate::export::validate_target("output", output)?;
        let clobbers_input =
            args.inputs.iter().any(|i| matches!((i.canonicalize(), output.canonicalize()), (Ok(a), Ok(b)) if a == b));
        if clobbers_input {
            return Err(usage(format!("{} is one of the input files; choose another output name", output.display())));
        }
    }
    Ok(())
}
