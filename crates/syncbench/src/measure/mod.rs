//! Timing loops and their rounds: `run`'s runner, the commit and pages measurements, background writes.
//! Uses `observe` and `core`.
//! See ARCHITECTURE.md for the layers and the test that keeps dependencies pointing down.

#[cfg(target_os = "linux")]
pub mod background;
pub mod burst;
pub mod commit;
pub mod pages;
pub mod regimes;
pub mod rounds;
pub mod runner;
pub mod series;
pub mod watch;
