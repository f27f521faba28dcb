//! `syncbench probe` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench probe`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench probe is not implemented yet"))
}
