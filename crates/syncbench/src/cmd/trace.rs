//! `syncbench trace` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench trace`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench trace is not implemented yet"))
}
