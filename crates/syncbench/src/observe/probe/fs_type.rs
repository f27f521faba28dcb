//! File-system names from the `fstatfs` magic number.

/// Magic numbers (from `linux/magic.h` and the file systems' own headers) and the names syncbench uses.
const MAGICS: &[(u64, &str)] = &[
    (0xEF53, "ext4"), // ext2, ext3 and ext4 share it; the mount table tells them apart
    (0x5846_5342, "xfs"),
    (0x9123_683E, "btrfs"),
    (0x2FC1_2FC1, "zfs"),
    (0xF2F5_2010, "f2fs"),
    (0xCA45_1A4E, "bcachefs"),
    (0x0102_1994, "tmpfs"),
    (0x8584_58F6, "ramfs"),
    (0x794C_7630, "overlay"),
    (0x6969, "nfs"),
    (0x6573_5546, "fuse"),
    (0xFF53_4D42, "cifs"),
    (0xFE53_4D42, "smb2"),
    (0x0102_1997, "9p"),
    (0x00C3_6400, "ceph"),
    (0x4D44, "vfat"),
    (0x2011_BAB0, "exfat"),
    (0x5346_544E, "ntfs"),
    (0x7371_7368, "squashfs"),
    (0xE0F5_E1E2, "erofs"),
    (0x3434, "nilfs2"),
    (0x0116_1970, "gfs2"),
    (0x7461_636F, "ocfs2"),
    (0x3153_464A, "jfs"),
    (0x5265_4973, "reiserfs"),
    (0x482B, "hfsplus"),
    (0x9FA0, "proc"),
    (0x6265_6572, "sysfs"),
];

/// The name of a file system from its magic, `None` if syncbench does not know it.
pub fn name_of_magic(magic: u64) -> Option<&'static str> {
    MAGICS.iter().find(|(m, _)| *m == magic).map(|(_, name)| *name)
}

/// The file-system type to report: the magic's name, refined by the mount table's type where the magic
/// is shared (ext2/3/4) or generic (FUSE: `fuse.sshfs`, `virtiofs`); the mount table's type when the magic
/// is unknown; `unknown` when neither says.
pub fn resolve(magic: Option<u64>, mount_type: Option<&str>) -> String {
    let by_magic = magic.and_then(name_of_magic);
    match (by_magic, mount_type) {
        (Some("ext4"), Some(t @ ("ext2" | "ext3" | "ext4"))) => t.to_string(),
        (Some("fuse"), Some(t)) if t.starts_with("fuse") || t == "virtiofs" => t.to_string(),
        (Some(name), _) => name.to_string(),
        (None, Some(t)) => t.to_string(),
        (None, None) => "unknown".to_string(),
    }
}

/// Memory-only file systems: nothing written there survives a reboot.
pub fn is_memory_fs(fs_type: &str) -> bool {
    matches!(fs_type, "tmpfs" | "ramfs")
}

/// File systems whose durability is decided by a server or a daemon, not by a local block device.
pub fn is_network_fs(fs_type: &str) -> bool {
    matches!(fs_type, "nfs" | "nfs4" | "cifs" | "smb2" | "smb3" | "9p" | "ceph" | "gfs2" | "ocfs2")
}

/// FUSE file systems (including virtiofs, which is FUSE over virtio).
pub fn is_fuse(fs_type: &str) -> bool {
    fs_type == "fuse" || fs_type.starts_with("fuse.") || fs_type == "fuseblk" || fs_type == "virtiofs"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_known_magics_and_refines_with_mount_type() {
        assert_eq!(resolve(Some(0xEF53), Some("ext4")), "ext4");
        assert_eq!(resolve(Some(0xEF53), Some("ext3")), "ext3");
        assert_eq!(resolve(Some(0x5846_5342), Some("xfs")), "xfs");
        assert_eq!(resolve(Some(0x0102_1994), None), "tmpfs");
        assert_eq!(resolve(Some(0x6573_5546), Some("fuse.sshfs")), "fuse.sshfs");
        assert_eq!(resolve(Some(0x6573_5546), Some("virtiofs")), "virtiofs");
    }

    #[test]
    fn unknown_magic_falls_back_then_says_unknown() {
        assert_eq!(resolve(Some(0x1234_5678), Some("weirdfs")), "weirdfs");
        assert_eq!(resolve(Some(0x1234_5678), None), "unknown");
        assert_eq!(resolve(None, None), "unknown");
        assert!(name_of_magic(0x1234_5678).is_none());
    }

    #[test]
    fn classes() {
        assert!(is_memory_fs("tmpfs") && is_memory_fs("ramfs") && !is_memory_fs("ext4"));
        assert!(is_network_fs("nfs4") && !is_network_fs("xfs"));
        assert!(is_fuse("fuse.sshfs") && is_fuse("virtiofs") && !is_fuse("overlay"));
    }
}
