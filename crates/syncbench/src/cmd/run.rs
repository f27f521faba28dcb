//! `syncbench run` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench run`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench run is not implemented yet"))
}
