//! `syncbench crashtest` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench crashtest`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench crashtest is not implemented yet"))
}
