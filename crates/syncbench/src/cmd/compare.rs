//! `syncbench compare` (not implemented yet).

use crate::exit::{Outcome, usage};

/// Flags of `syncbench compare`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run the command.
pub fn main(_args: Args) -> Outcome {
    Err(usage("syncbench compare is not implemented yet"))
}
