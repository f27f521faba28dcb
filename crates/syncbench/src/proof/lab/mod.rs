//! `syncbench lab`: emulated disks whose truth is known.
//!
//! A FUSE server of our own serves one disk image through a [`model::DeviceModel`] (volatile write cache,
//! flush cost, honesty, seeded power cut); a loop device, mkfs and a mount on top ([`stack`]) give a real
//! ext4, xfs or btrfs on that disk ([`cases`] names them, [`prereq`] finds the programs it needs).
//! `fsync-errors` builds its stack the same way, adding a fault switch ([`fault`]).

pub mod cases;
#[cfg(feature = "fuse")]
pub mod control;
#[cfg(feature = "fuse")]
pub mod daemon;
#[cfg(feature = "fuse")]
pub mod device_truth;
pub mod fault;
pub mod model;
pub mod prereq;
pub mod profile;
pub mod render;
#[cfg(feature = "fuse")]
pub mod server;
#[cfg(feature = "fuse")]
pub mod stack;
