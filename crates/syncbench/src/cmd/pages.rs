//! `syncbench pages` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench pages`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench pages is not implemented yet"))
}
