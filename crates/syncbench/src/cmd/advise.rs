//! `syncbench advise` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench advise`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench advise is not implemented yet"))
}
