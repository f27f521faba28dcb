//! A deterministic simulation of a Linux-like file system for crash testing the reference engine.
//!
//! Each file has a durable image and a page cache with dirty sectors; creates, renames and removes are
//! durable only after a directory fsync (or an ext4 journal commit); O_DSYNC, RWF_DSYNC and linked writes
//! are durable on return. [`SimFs::crash_image`] gives the file system after a power loss: the durable state
//! plus a seeded choice over the volatile residue. Injected writeback errors follow Linux: the failed
//! sectors turn clean, each open file description sees the error once (errseq), and the new bytes stay
//! readable until eviction. Everything is a function of the seed and the sequence of calls.

#![forbid(unsafe_code)]

mod errseq;
mod fs;
mod inode;
mod namespace;
mod rng;

pub use errseq::ErrSeq;
pub use fs::{
    CrashKind, CrashReport, Mark, OpHook, OpKind, Profile, SimConfig, SimFile, SimFs, SimStats, WriteAheadRule,
};
pub use inode::ResiduePolicy;
pub use rng::SimRng;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod differential;
