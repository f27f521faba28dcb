//! What the target directory sits on, as every document's envelope records it: plain data, filled in by
//! the environment probe (`observe::probe`, which also reads the verdicts from it). Add fields, never rename.

use serde::{Deserialize, Serialize};

/// What the target directory sits on. Every field that could not be read is `None`/empty/"unknown",
/// never an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    /// `uname -r`.
    pub kernel: String,
    /// The target directory (absolute).
    pub dir: String,
    /// File system type of the target directory (`ext4`, `xfs`, `btrfs`, `tmpfs`, `overlay`, `nfs`, `fuse`,
    /// …, or `unknown`), from the fstatfs magic.
    pub fs_type: String,
    /// The fstatfs magic number, for types syncbench does not name.
    pub fs_magic: u64,
    /// Mount point of the target's mount (from /proc/self/mountinfo).
    pub mount_point: Option<String>,
    /// Mount source (device path, `tmpfs`, server:path …).
    pub mount_source: Option<String>,
    /// Per-mount and super-block options, e.g. `rw`, `relatime`, `data=ordered`, `nobarrier`, `commit=5`.
    pub mount_options: Vec<String>,
    /// The per-mount options alone (mountinfo field 6: `ro` of a read-only bind mount, `relatime`, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_mount_options: Vec<String>,
    /// The super-block options alone (the file system's, shared by all its mounts: `rw`, `data=ordered`, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub super_options: Vec<String>,
    /// Block devices from the file system down: partition → disk, loop → (backing file), dm/md → slaves.
    pub devices: Vec<Device>,
    /// For a loop device in the chain: its backing file and that file's own file system.
    pub loop_backing: Option<LoopBacking>,
    /// When that loop device is a `syncbench lab` emulated disk: its profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulated_disk: Option<EmulatedDisk>,
    /// Hypervisor or container, when detected.
    pub virtualization: Virtualization,
    /// `statx(STATX_DIOALIGN)` for a file in DIR: offset alignment for O_DIRECT, `None` if unsupported.
    pub dio_offset_align_bytes: Option<u32>,
    /// `statx(STATX_DIOALIGN)`: memory alignment for O_DIRECT.
    pub dio_mem_align_bytes: Option<u32>,
    /// `statx(STATX_WRITE_ATOMIC)` minimum untorn write for a file in DIR (`None`: not supported).
    pub atomic_write_unit_min_bytes: Option<u32>,
    /// `statx(STATX_WRITE_ATOMIC)` maximum untorn write.
    pub atomic_write_unit_max_bytes: Option<u32>,
    /// File-system type as the mount table names it (`ext4`, `fuse.sshfs`, `virtiofs`, …).
    pub mount_fs_type: Option<String>,
    /// For an overlay mount: its `upperdir`, where writes really go.
    pub overlay_upper_dir: Option<String>,
    /// For an overlay mount: the file system holding `upperdir`.
    pub overlay_upper_fs_type: Option<String>,
    /// What could not be found out, and why (unreadable files, a DIR syncbench cannot write to, …).
    pub notes: Vec<String>,
}

/// One block device in the chain.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Device {
    /// Kernel name, e.g. `vda`, `nvme0n1p1`, `loop3`, `dm-0`.
    pub name: String,
    /// `major:minor`.
    pub dev: String,
    /// `partition`, `disk`, `loop`, `dm`, `md`, or `unknown`.
    pub kind: DeviceKind,
    /// The bus or driver, when known: `virtio`, `nvme`, `scsi`, `ata`, `mmc`, …
    pub transport: Option<Transport>,
    /// `queue/rotational`.
    pub rotational: Option<bool>,
    /// `queue/write_cache`: `write back` (volatile cache, flushes needed) or `write through`.
    pub write_cache: Option<String>,
    /// `queue/fua`: the device honours Force Unit Access writes.
    pub fua: Option<bool>,
    /// `queue/logical_block_size`.
    pub logical_block_size_bytes: Option<u32>,
    /// `queue/physical_block_size`.
    pub physical_block_size_bytes: Option<u32>,
    /// `queue/atomic_write_unit_min_bytes` (0 or absent: no atomic writes).
    pub atomic_write_unit_min_bytes: Option<u32>,
    /// `queue/atomic_write_unit_max_bytes`.
    pub atomic_write_unit_max_bytes: Option<u32>,
    /// `device/model`, trimmed.
    pub model: Option<String>,
    /// `device/vendor`, trimmed.
    pub vendor: Option<String>,
    /// `dm/name`: the device-mapper name (LVM volume, dm-crypt mapping) of a `dm` device.
    pub dm_name: Option<String>,
    /// The device directly above this one in the chain (the partition on this disk, the dm device over
    /// this slave); `None` for the device the file system sits on.
    pub holder: Option<String>,
}

crate::core::named::named_enum! {
    /// What a block device is, from its sysfs directory and name. A name a newer syncbench writes reads as
    /// `unknown`.
    #[derive(Default)]
    pub enum DeviceKind ("device kind") else Unknown {
        /// A partition of a disk.
        Partition = "partition",
        /// A whole disk (the physical device, or what the hypervisor presents as one).
        Disk = "disk",
        /// A loop device over a backing file.
        Loop = "loop",
        /// A device-mapper device (LVM, dm-crypt, …) over its slaves.
        Dm = "dm",
        /// A software RAID (md) device over its members.
        Md = "md",
        /// None of these.
        #[default]
        Unknown = "unknown",
    }
}

crate::core::named::named_enum! {
    /// The bus or driver of a block device. A name a newer syncbench writes reads as `other`.
    pub enum Transport ("transport") else Other {
        /// NVMe.
        Nvme = "nvme",
        /// virtio-blk (a virtual machine's disk).
        Virtio = "virtio",
        /// USB mass storage.
        Usb = "usb",
        /// SATA/PATA through libata.
        Ata = "ata",
        /// SD/eMMC.
        Mmc = "mmc",
        /// SCSI or SAS.
        Scsi = "scsi",
        /// Xen's block front end.
        Xen = "xen",
        /// Named by a newer syncbench.
        Other = "other",
    }
}

/// A loop device's backing file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopBacking {
    /// `loop/backing_file`.
    pub file: String,
    /// File system type holding the backing file, `unknown` if it cannot be found.
    pub fs_type: String,
    /// Whether the loop device uses direct I/O (`loop/dio`).
    pub direct_io: Option<bool>,
    /// Mount point of the file system holding the backing file.
    pub mount_point: Option<String>,
    /// Mount source of the file system holding the backing file.
    pub mount_source: Option<String>,
}

/// A `syncbench lab` disk: timing and honesty are the lab's device model, not hardware.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EmulatedDisk {
    /// The lab profile (`hdd-7200`, `ssd-200us`, …).
    pub profile: String,
    /// `honest`, `write-through` or `ignores-flush`.
    pub honesty: String,
    /// The modelled cost of one flush.
    pub flush_us: u64,
    /// The modelled latency of one write.
    pub write_us: u64,
    /// Whether the profile models a spinning disk.
    pub rotational: bool,
    /// Where the lab is mounted (for `syncbench lab cut`).
    pub mount: String,
    /// The device model's untorn unit (`syncbench lab --untorn`): a write cut short by a power cut reached
    /// the medium in whole aligned units of this size. `None` in files written before it was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untorn_unit_bytes: Option<u64>,
}

/// Virtualization, when detected.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Virtualization {
    /// Whether a hypervisor was detected (cpuinfo `hypervisor` flag or DMI).
    pub virtual_machine: bool,
    /// The hypervisor or platform, when named by DMI (`KVM`, `QEMU`, `VMware`, `Amazon EC2`, …).
    pub hypervisor: Option<String>,
    /// DMI `sys_vendor`.
    pub dmi_vendor: Option<String>,
    /// DMI `product_name`.
    pub dmi_product: Option<String>,
    /// A container runtime, when detected.
    pub container: Option<String>,
}
