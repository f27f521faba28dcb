//! `syncbench fsync-errors` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench fsync-errors`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench fsync-errors is not implemented yet"))
}
