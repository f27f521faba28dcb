//! `syncbench commit` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench commit`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench commit is not implemented yet"))
}
