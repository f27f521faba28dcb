//! `syncbench powercut`: prove that acknowledged writes survive a power cut. A writer writes records the
//! ways a database does and tells a witness (stdout, or `listen` over TCP on another machine) each one
//! whose durable write returned; after the power is cut and the machine rebooted, `verify` checks that
//! every acknowledged record is present and whole. `lab` runs the loop on emulated disks.
//! The record format is in [`record`] and docs/powercut.md.

pub mod acks;
pub mod db;
#[cfg(feature = "fuse")]
pub mod lab;
pub mod listen;
pub mod record;
pub mod render;
pub mod verify;
pub mod writer;
