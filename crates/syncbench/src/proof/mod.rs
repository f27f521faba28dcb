//! Durability proofs: the crash simulator (`crashtest`), the FUSE disk lab, power cuts, and fsync error
//! experiments. Uses `measure`, `observe` and `core`.
//! See ARCHITECTURE.md for the layers and the test that keeps dependencies pointing down.

pub mod crashtest;
pub mod fsync_errors;
pub mod lab;
pub mod leftovers;
pub mod powercut;
