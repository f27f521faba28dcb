//! `syncbench trace`: watch a real program's durability calls, either by starting it under ptrace with a
//! seccomp filter (`tracer`) or by attaching to running processes through the kernel's syscall
//! tracepoints (`attach`, `follow`), through eBPF programs built here (`inkernel`) or perf events.
//!
//! `calls` decodes a system call from its number and arguments (for both tracers), `filter` says which
//! calls stop under ptrace, `syscall_events` which calls the in-kernel readers record and how, `fds` knows what a descriptor is, `stats` aggregates, `devices` sets the disks
//! under the traced files beside the calls, `report` builds the one report both tracers share and
//! renders it, `session` runs one trace of either kind into it, `baseline` compares with a saved `syncbench run`.

pub mod attach;
pub mod baseline;
pub mod calls;
pub mod devices;
mod export;
pub mod fds;
pub mod filter;
pub mod fmt;
pub mod follow;
pub mod inkernel;
pub mod report;
pub mod session;
pub mod stats;
pub mod syscall_events;
pub mod tracer;
