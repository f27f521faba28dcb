//! `syncbench fsync-errors`: what this kernel and file system really do after a failed fsync.
//!
//! A FUSE file system of our own serves one disk image and can fail writes to it with EIO
//! ([`imagefs`], [`fault`]); a loop device, mkfs and a mount on top ([`stack`]) give a real ext4, xfs or
//! btrfs whose writeback can be made to fail for one block. The [`experiment`] then records what each
//! fsync and read reports ([`results`]), next to what Rebello et al. (USENIX ATC'20) found ([`report`]).
//!
//! The pure parts (cases, results, report, prerequisites, fault matching) build without the `fuse`
//! feature; the parts that mount things need it.

pub mod cases;
pub mod fault;
pub mod prereq;
pub mod report;
pub mod results;

#[cfg(feature = "fuse")]
pub mod experiment;
#[cfg(feature = "fuse")]
pub mod imagefs;
#[cfg(feature = "fuse")]
pub mod stack;
