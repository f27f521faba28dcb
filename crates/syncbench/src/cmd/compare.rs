//! `syncbench compare A.json B.json [C.json …]`: cases side by side, each candidate's ratio to the baseline
//! (the first file) with its uncertainty, cases present in only some files, and environment differences.

use crate::core::exit::{Outcome, usage};
use crate::core::export::ExportArgs;
use crate::present::compare::render;
use crate::present::report::input;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Flags of `syncbench compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// JSON files written by `syncbench run --json`; the first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "RUN.json")]
    pub inputs: Vec<PathBuf>,
    /// --json (the syncbench/v1 envelope with the baseline's environment), --csv (one row per case and
    /// candidate), --markdown, --openmetrics (each candidate's headline ratio with its 95% interval and the
    /// cases faster, slower, within noise); `-` for stdout (the table then goes to stderr).
    #[command(flatten)]
    pub export: ExportArgs,
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    validate(&args)?;
    let started_at = crate::core::schema::now_rfc3339();
    let runs = args.inputs.iter().map(|path| input::load(path)).collect::<anyhow::Result<Vec<_>>>()?;
    crate::present::compare::check_inputs(&runs)?;
    let doc = crate::present::compare::export::document(started_at, &runs);
    crate::core::export::print_human(&args.export, &render::text(&doc.payload.0))?;
    crate::core::export::write_all(&doc, &args.export)?;
    Ok(ExitCode::SUCCESS)
}

/// The shared checks, then: no two exports to one file, and no export over an input.
fn validate(args: &Args) -> anyhow::Result<()> {
    args.export.validate()?;
    let e = &args.export;
    let outputs: Vec<&PathBuf> =
        [&e.json, &e.csv, &e.markdown, &e.openmetrics].into_iter().flatten().filter(|p| *p != Path::new("-")).collect();
    for (i, output) in outputs.iter().enumerate() {
        if outputs[..i].contains(output) {
            return Err(usage(format!("{} is named by two exports; give each its own file", output.display())));
        }
        let clobbers_input =
            args.inputs.iter().any(|i| matches!((i.canonicalize(), output.canonicalize()), (Ok(a), Ok(b)) if a == b));
        if clobbers_input {
            return Err(usage(format!("{} is one of the input files; choose another output name", output.display())));
        }
    }
    Ok(())
}
