//! The bottom layer: the result types (`schema`, `environment`), verdicts, statistics, units, sync methods,
//! the case plan (`suite`), exit codes, output files, cleanup, and the export formats. It uses no other layer.
//! See ARCHITECTURE.md for the layers and the test that keeps dependencies pointing down.

pub mod cleanup;
pub mod environment;
pub mod escape;
pub mod exit;
pub mod export;
pub mod hash;
pub mod input_kind;
pub mod method;
pub mod named;
pub mod output;
pub mod partial;
pub mod registry;
pub mod schema;
pub mod stats;
pub mod suite;
pub mod units;
pub mod verdict;
pub mod workdir;
