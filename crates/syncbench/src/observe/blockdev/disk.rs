//! Which disk a file is on.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A whole block device (not a partition).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Disk {
    /// Kernel name, the directory under `/sys/block`.
    pub name: String,
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl Disk {
    /// The disk named `name` (a directory of `/sys/block`).
    pub fn by_name(name: &str) -> Option<Disk> {
        let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).ok()?;
        let (major, minor) = parse_major_minor(&dev)?;
        Some(Disk { name: name.to_string(), major, minor })
    }

    /// The kernel's encoding of this device in tracepoint records (`MAJOR << 20 | MINOR`).
    pub fn kernel_devt(&self) -> u64 {
        (u64::from(self.major) << 20) | u64::from(self.minor)
    }

    /// `/sys/block/NAME/queue/write_cache` (`write back`, `write through`), or empty.
    pub fn write_cache(&self) -> String {
        std::fs::read_to_string(format!("/sys/block/{}/queue/write_cache", self.name))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }
}

/// Every disk in `/sys/block`, by name.
pub fn all_disks() -> Vec<Disk> {
    let Ok(dir) = std::fs::read_dir("/sys/block") else { return Vec::new() };
    let mut disks: Vec<Disk> = dir.flatten().filter_map(|e| Disk::by_name(e.file_name().to_str()?)).collect();
    disks.sort();
    disks
}

/// `"254:1\n"` → (254, 1).
pub fn parse_major_minor(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The disks holding `path`: its file system's device made whole (a partition's parent), then for a
/// device-mapper or md device also the disks under it (`slaves/`). Empty for file systems without a block
/// device (tmpfs, overlay, NFS).
pub fn disks_of_path(path: &Path) -> Vec<Disk> {
    let Ok(meta) = std::fs::metadata(path) else { return Vec::new() };
    disks_of_dev(meta.dev())
}

/// The disks behind device number `st_dev` (as `stat` returns it).
pub fn disks_of_dev(st_dev: u64) -> Vec<Disk> {
    let (major, minor) = (libc::major(st_dev), libc::minor(st_dev));
    let Ok(sys) = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")) else { return Vec::new() };
    let mut out = Vec::new();
    collect(&whole(sys), &mut out, 0);
    out
}

/// A partition's directory is inside its disk's: the disk is the parent.
fn whole(sys: PathBuf) -> PathBuf {
    match sys.parent() {
        Some(parent) if sys.join("partition").exists() => parent.to_path_buf(),
        _ => sys,
    }
}

fn collect(sys: &Path, out: &mut Vec<Disk>, depth: u32) {
    let Some(name) = sys.file_name().and_then(|n| n.to_str()) else { return };
    if let Some(disk) = Disk::by_name(name)
        && !out.contains(&disk)
    {
        out.push(disk);
    }
    // dm-crypt on LVM on a partition: a few levels at most; the bound guards against a cycle.
    if depth > 4 {
        return;
    }
    if let Ok(slaves) = std::fs::read_dir(sys.join("slaves")) {
        for slave in slaves.flatten() {
            if let Ok(path) = std::fs::canonicalize(slave.path()) {
                collect(&whole(path), out, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn major_minor_parses() {
        assert_eq!(parse_major_minor("254:1\n"), Some((254, 1)));
        assert_eq!(parse_major_minor("x"), None);
    }

    #[test]
    fn kernel_devt_packs_twenty_minor_bits() {
        let d = Disk { name: "vda".into(), major: 254, minor: 0 };
        assert_eq!(d.kernel_devt(), 254 << 20);
    }

    #[test]
    fn a_file_in_proc_has_no_disk() {
        assert!(disks_of_path(Path::new("/proc/self/status")).is_empty());
    }
}
