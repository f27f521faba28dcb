//! What stands between a write and stable storage: environment readers and the verdict rules.
//!
//! (Skeleton: the probe issue fills in the readers and rules. The types below are part of the JSON
//! envelope of every command and are shared with `advise`, `report` and `compare`; add fields, never rename.)

use serde::{Deserialize, Serialize};

/// What the target directory sits on. Every field that could not be read is `None`/empty/"unknown",
/// never an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// Block devices from the file system down: partition → disk, loop → (backing file), dm/md → slaves.
    pub devices: Vec<Device>,
    /// For a loop device in the chain: its backing file and that file's own file system.
    pub loop_backing: Option<LoopBacking>,
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
}

/// One block device in the chain.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Kernel name, e.g. `vda`, `nvme0n1p1`, `loop3`, `dm-0`.
    pub name: String,
    /// `major:minor`.
    pub dev: String,
    /// `partition`, `disk`, `loop`, `dm`, `md`, or `unknown`.
    pub kind: String,
    /// The bus or driver, when known: `virtio`, `nvme`, `scsi`, `ata`, `mmc`, …
    pub transport: Option<String>,
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
}

/// A loop device's backing file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopBacking {
    /// `loop/backing_file`.
    pub file: String,
    /// File system type holding the backing file, `unknown` if it cannot be found.
    pub fs_type: String,
    /// Whether the loop device uses direct I/O (`loop/dio`).
    pub direct_io: Option<bool>,
}

/// Virtualization, when detected.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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

/// Read everything syncbench can learn about the storage under `dir`. Never fails: what cannot be
/// read is reported as unknown. (Skeleton until the probe issue lands.)
pub fn collect(dir: &std::path::Path) -> Environment {
    Environment { dir: dir.display().to_string(), fs_type: "unknown".to_string(), ..Environment::default() }
}

/// The verdict rules over the environment and whatever measurements exist. (Skeleton.)
pub fn verdicts(_env: &Environment, _results: &[crate::schema::CaseResult]) -> Vec<crate::verdict::Verdict> {
    Vec::new()
}
