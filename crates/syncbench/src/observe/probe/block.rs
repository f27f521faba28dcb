//! The block-device chain under a file system, from sysfs: partition → disk, loop → backing file,
//! dm/md → slaves. Every attribute that cannot be read stays `None`.

use super::mountinfo::Mount;
use super::sysfs::{Root, read_bool, read_trimmed, read_u32};
use crate::core::environment::{Device, DeviceKind, EmulatedDisk, LoopBacking, Transport};
use std::path::{Path, PathBuf};

/// How deep a stack of dm/md/partition devices can be before we stop (guards against link cycles).
const MAX_DEPTH: usize = 16;

/// What the chain walk found.
#[derive(Debug, Default)]
pub struct Chain {
    /// Devices from the file system down.
    pub devices: Vec<Device>,
    /// The backing file of the first loop device met.
    pub loop_backing_file: Option<String>,
    /// Whether that loop device does direct I/O on its backing file.
    pub loop_direct_io: Option<bool>,
}

/// The sysfs directory of the block device `dev` (`major:minor`), or of the device named by a mount source
/// like `/dev/sda2` when the file system reports no block device of its own (btrfs uses anonymous numbers).
pub fn device_dir(root: &Root, dev: Option<&str>, mount_source: Option<&str>) -> Option<PathBuf> {
    let by_dev = dev.filter(|d| !d.starts_with("0:")).and_then(|d| root.resolve(&format!("sys/dev/block/{d}")));
    let by_source = || {
        let source = mount_source?.strip_prefix("/dev/")?;
        // /dev/mapper/vg-lv and /dev/disk/by-uuid/… are links to the kernel name (dm-0, sda2).
        let real = root.resolve(&format!("dev/{source}"));
        let name = match &real {
            Some(path) => path.file_name()?.to_string_lossy().into_owned(),
            None => source.rsplit('/').next()?.to_string(),
        };
        root.resolve(&format!("sys/class/block/{name}"))
    };
    by_dev.or_else(by_source)
}

/// Walk from `start` down to the physical devices.
pub fn walk(root: &Root, start: &Path) -> Chain {
    let mut chain = Chain::default();
    visit(root, start, None, 0, &mut chain);
    chain
}

fn visit(root: &Root, dir: &Path, holder: Option<String>, depth: usize, chain: &mut Chain) {
    if depth >= MAX_DEPTH {
        return;
    }
    let device = read_device(root, dir, holder);
    let name = device.name.clone();
    let kind = device.kind;
    chain.devices.push(device);
    if kind == DeviceKind::Loop && chain.loop_backing_file.is_none() {
        chain.loop_backing_file = read_trimmed(dir, "loop/backing_file");
        chain.loop_direct_io = read_bool(dir, "loop/dio");
    }
    if kind == DeviceKind::Partition
        && let Some(disk) = dir.parent()
    {
        visit(root, disk, Some(name.clone()), depth + 1, chain);
    }
    for slave in slaves(dir) {
        visit(root, &slave, Some(name.clone()), depth + 1, chain);
    }
}

fn slaves(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join("slaves")) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries.filter_map(|e| e.ok()?.path().canonicalize().ok()).collect();
    found.sort();
    found
}

fn read_device(root: &Root, dir: &Path, holder: Option<String>) -> Device {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "unknown".into());
    let kind = kind_of(dir, &name);
    let queue = dir.join("queue");
    Device {
        transport: transport_of(&root.display(dir), &name),
        dev: read_trimmed(dir, "dev").unwrap_or_else(|| "unknown".into()),
        rotational: read_bool(&queue, "rotational"),
        write_cache: read_trimmed(&queue, "write_cache"),
        fua: read_bool(&queue, "fua"),
        logical_block_size_bytes: read_u32(&queue, "logical_block_size"),
        physical_block_size_bytes: read_u32(&queue, "physical_block_size"),
        atomic_write_unit_min_bytes: read_u32(&queue, "atomic_write_unit_min_bytes"),
        atomic_write_unit_max_bytes: read_u32(&queue, "atomic_write_unit_max_bytes"),
        model: read_trimmed(dir, "device/model"),
        vendor: read_trimmed(dir, "device/vendor"),
        dm_name: read_trimmed(dir, "dm/name"),
        holder,
        name,
        kind,
    }
}

fn kind_of(dir: &Path, name: &str) -> DeviceKind {
    if dir.join("partition").exists() {
        DeviceKind::Partition
    } else if name.starts_with("loop") {
        DeviceKind::Loop
    } else if name.starts_with("dm-") {
        DeviceKind::Dm
    } else if name.starts_with("md") {
        DeviceKind::Md
    } else if dir.join("dev").exists() {
        DeviceKind::Disk
    } else {
        DeviceKind::Unknown
    }
}

/// The bus, from the device's place in the sysfs tree (`/sys/devices/pci…/virtio1/block/vda`) and its name.
fn transport_of(sys_path: &str, name: &str) -> Option<Transport> {
    let has = |part: &str| sys_path.split('/').any(|c| c.starts_with(part));
    let transport = if name.starts_with("nvme") {
        Transport::Nvme
    } else if has("virtio") {
        Transport::Virtio
    } else if has("usb") {
        Transport::Usb
    } else if has("ata") {
        Transport::Ata
    } else if name.starts_with("mmcblk") {
        Transport::Mmc
    } else if has("host") && has("target") {
        Transport::Scsi
    } else if name.starts_with("xvd") {
        Transport::Xen
    } else {
        return None;
    };
    Some(transport)
}

/// A [`LoopBacking`] for `file`, with the mount that holds it (`None`: not in the mount table).
pub fn loop_backing(file: String, direct_io: Option<bool>, holder: Option<&Mount>) -> LoopBacking {
    LoopBacking {
        file,
        fs_type: holder.map_or_else(|| "unknown".to_string(), |m| m.fs_type.clone()),
        direct_io,
        mount_point: holder.map(|m| m.mount_point.clone()),
        mount_source: holder.map(|m| m.source.clone()),
    }
}

/// The devices under a loop device's backing file (from its mount source), hung below the loop device.
pub fn backing_devices(root: &Root, devices: &[Device], backing: &LoopBacking) -> Vec<Device> {
    let Some(loop_name) = devices.iter().find(|d| d.kind == DeviceKind::Loop).map(|d| d.name.clone()) else {
        return Vec::new();
    };
    let Some(start) = device_dir(root, None, backing.mount_source.as_deref()) else { return Vec::new() };
    let mut lower = walk(root, &start).devices;
    if let Some(top) = lower.first_mut() {
        top.holder = Some(loop_name);
    }
    lower
}

/// The `syncbench lab` disk whose FUSE-served image is `backing_file`, from the state the lab server keeps
/// in `/run/syncbench-lab/*/state.json` (read as plain JSON: the probe does not need the lab's types).
pub fn lab_disk(root: &Root, backing_file: &str) -> Option<EmulatedDisk> {
    let entries = std::fs::read_dir(root.path("run/syncbench-lab")).ok()?;
    entries.flatten().find_map(|entry| {
        let text = std::fs::read_to_string(entry.path().join("state.json")).ok()?;
        let state: serde_json::Value = serde_json::from_str(&text).ok()?;
        (state["image"].as_str()? == backing_file).then(|| {
            let profile = state["profile"].as_str().unwrap_or("unknown").to_string();
            let params = &state["params"];
            EmulatedDisk {
                rotational: profile.starts_with("hdd"),
                profile,
                honesty: params["honesty"].as_str().unwrap_or("unknown").to_string(),
                flush_us: params["flush_ns"].as_u64().unwrap_or(0) / 1000,
                write_us: params["write_ns"].as_u64().unwrap_or(0) / 1000,
                mount: state["mount"].as_str().unwrap_or("").to_string(),
                // A lab older than `--untorn` tore at sectors (the device model's default).
                untorn_unit_bytes: Some(params["untorn_bytes"].as_u64().unwrap_or(512)),
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lab_disk_is_found_by_its_image_with_its_untorn_unit() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let state = |name: &str, params: &str| {
            let lab = root.path(&format!("run/syncbench-lab/{name}"));
            std::fs::create_dir_all(&lab).unwrap();
            let text = format!(
                r#"{{"image":"/var/tmp/{name}.img","profile":"nvme-plp","mount":"/mnt/{name}","params":{params}}}"#
            );
            std::fs::write(lab.join("state.json"), text).unwrap();
        };
        state("a", r#"{"honesty":"write-through","flush_ns":30000,"write_ns":20000,"untorn_bytes":16384}"#);
        state("b", r#"{"honesty":"honest","flush_ns":30000,"write_ns":20000}"#);
        let a = lab_disk(&root, "/var/tmp/a.img").unwrap();
        assert_eq!(
            (a.profile.as_str(), a.honesty.as_str(), a.untorn_unit_bytes),
            ("nvme-plp", "write-through", Some(16384))
        );
        // A lab from before `--untorn` tore at sectors.
        assert_eq!(lab_disk(&root, "/var/tmp/b.img").unwrap().untorn_unit_bytes, Some(512));
        assert!(lab_disk(&root, "/var/tmp/c.img").is_none());
    }

    #[test]
    fn transports_from_sysfs_paths() {
        let t = |p: &str, n: &str| transport_of(p, n).map(Transport::name);
        assert_eq!(t("/sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda", "vda"), Some("virtio"));
        assert_eq!(t("/sys/devices/pci0000:00/0000:00:1d.0/nvme/nvme0/nvme0n1", "nvme0n1"), Some("nvme"));
        let sata = "/sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda";
        assert_eq!(t(sata, "sda"), Some("ata"));
        let sas = "/sys/devices/pci0000:00/0000:02:00.0/host0/target0:2:0/0:2:0:0/block/sdc";
        assert_eq!(t(sas, "sdc"), Some("scsi"));
        assert_eq!(t("/sys/devices/virtual/block/loop0", "loop0"), None);
    }

    #[test]
    fn device_found_by_mount_source_through_dev_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::create_dir_all(root.path("sys/devices/virtual/block/dm-0")).unwrap();
        std::fs::create_dir_all(root.path("sys/class/block")).unwrap();
        std::os::unix::fs::symlink("../../devices/virtual/block/dm-0", root.path("sys/class/block/dm-0")).unwrap();
        std::fs::create_dir_all(root.path("dev/mapper")).unwrap();
        std::fs::write(root.path("dev/dm-0"), b"").unwrap();
        std::os::unix::fs::symlink("../dm-0", root.path("dev/mapper/vg0-data")).unwrap();
        let found = device_dir(&root, Some("0:41"), Some("/dev/mapper/vg0-data")).unwrap();
        assert!(found.ends_with("sys/devices/virtual/block/dm-0"), "{found:?}");
        assert!(device_dir(&root, Some("0:41"), Some("tmpfs")).is_none());
        assert!(device_dir(&root, Some("8:1"), None).is_none());
    }

    #[test]
    fn a_directory_without_sysfs_files_is_all_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("sys/devices/virtual/block/weird0");
        std::fs::create_dir_all(&disk).unwrap();
        let chain = walk(&Root::at(dir.path()), &disk);
        assert_eq!(chain.devices.len(), 1);
        let d = &chain.devices[0];
        assert_eq!((d.name.as_str(), d.kind, d.dev.as_str()), ("weird0", DeviceKind::Unknown, "unknown"));
        assert_eq!((d.rotational, d.write_cache.as_deref(), d.fua), (None, None, None));
    }
}
