//! `syncbench trace`: watch a real program's durability calls with ptrace and a seccomp filter.
//!
//! `calls` decodes a stopped system call, `filter` says which calls stop, `fds` knows what a descriptor
//! is, `tracer` runs the event loop, `stats` aggregates, `report` renders, `baseline` compares with a
//! saved `syncbench run`.

pub mod baseline;
pub mod calls;
pub mod fds;
pub mod filter;
pub mod report;
pub mod stats;
pub mod tracer;
