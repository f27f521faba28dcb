//! The storage the engine runs on lives in its own crate, `syncbench-storage`, so that the crash
//! simulator (`syncbench-simfs`) implements it without depending on the engine, and the engine's own
//! tests can crash the log on the simulator.

pub use syncbench_storage::*;
