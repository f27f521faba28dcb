//! syncbench as a library: the measurement core, the environment probe, the advice rules and the exporters.
//! The binary in `main.rs` only parses arguments and dispatches to `cmd`.

pub mod cleanup;
pub mod cli;
pub mod cmd;
pub mod exit;
pub mod output;
pub mod probe;
pub mod schema;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod trace;
pub mod verdict;
