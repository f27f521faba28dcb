//! `syncbench report` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench report`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench report is not implemented yet"))
}
