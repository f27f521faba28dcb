//! The lab's answer to the device accounting's question "what did the emulated disk itself receive?"
//! (`observe::blockdev::account` asks it through [`DeviceTruth`]; `main` installs it).

use super::control::{Client, all_states};
use crate::core::schema::device::EmulatedCounts;
use crate::observe::blockdev::Disk;
use crate::observe::blockdev::account::DeviceTruth;
use std::path::{Path, PathBuf};

/// Every running `syncbench lab` on this machine, found by its loop device.
pub struct LabDeviceTruth;

impl DeviceTruth for LabDeviceTruth {
    fn mount_of(&self, disks: &[Disk]) -> Option<PathBuf> {
        all_states().into_iter().find_map(|s| {
            let name = Path::new(&s.loop_device).file_name()?.to_str()?.to_string();
            disks.iter().any(|d| d.name == name).then_some(s.mount)
        })
    }

    fn counts(&self, mount: &Path) -> Option<EmulatedCounts> {
        let c = Client::for_mount(mount).ok()?.stats().ok()?.counters;
        Some(EmulatedCounts { writes: c.writes, write_bytes: c.write_bytes, flushes: c.flushes })
    }
}
