//! What the machine is and what it does: the environment probe and its verdict rules, the block device's
//! counters and requests, disturbances, and syscall tracing. Uses `core` only.
//! See ARCHITECTURE.md for the layers and the test that keeps dependencies pointing down.

pub mod blockdev;
pub mod cpu_wait;
pub mod disturbance;
pub mod probe;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod trace;
