//! `syncbench fsync-errors`: what this kernel and file system really do after a failed fsync.
//!
//! The lab's stack ([`crate::proof::lab::stack`]: a FUSE server of our own serving one disk image, a loop device,
//! mkfs and a mount) gives a real ext4, xfs or btrfs; its fault switch ([`crate::proof::lab::fault`]) fails the image writes
//! of one block with EIO, so that block's writeback fails. The [`experiment`] then records what each
//! fsync and read reports ([`results`]), next to what Rebello et al. (USENIX ATC'20) found ([`report`]).
//!
//! The pure parts (results, report) build without the `fuse`
//! feature; the parts that mount things need it.

mod export;
pub mod report;
pub mod results;

#[cfg(feature = "fuse")]
pub mod experiment;
