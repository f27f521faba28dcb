//! What the environment says about the physical disks under DIR: which they are, and whether they spin as
//! a fact. Shared by the environment rules and the device rules, which both judge a flush by it.

use crate::core::environment::{Device, DeviceKind, Environment, Transport};

/// Physical disks in the chain (partitions, loop, dm and md devices are layers above them).
pub fn disks(env: &Environment) -> impl Iterator<Item = &Device> {
    env.devices.iter().filter(|d| d.kind == DeviceKind::Disk)
}

/// Whether a disk's "rotational" is a default rather than a fact: virtio-blk does not learn what the host
/// stores the disk on, and the kernel marks every disk rotational unless its driver says otherwise.
pub fn rotational_is_a_default(d: &Device) -> bool {
    d.transport == Some(Transport::Virtio)
}

/// Whether every physical disk under DIR says it spins, as a fact (and there is at least one).
pub fn all_disks_rotational(env: &Environment) -> bool {
    disks(env).count() > 0 && disks(env).all(|d| d.rotational == Some(true) && !rotational_is_a_default(d))
}

/// Whether DIR is known to be on a spinning disk: every physical disk says so as a fact, or a lab disk's
/// profile spins (its loop device says nothing about it).
pub fn spins(env: &Environment) -> bool {
    all_disks_rotational(env) || env.emulated_disk.as_ref().is_some_and(|e| e.rotational)
}
