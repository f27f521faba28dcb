//! `/proc/self/mountinfo`: which mount a directory is on, with its type, source and options.

use std::path::Path;

/// One line of mountinfo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// `major:minor` of the mounted file system (`0:N` for those without a block device).
    pub dev: String,
    /// Where it is mounted.
    pub mount_point: String,
    /// File-system type as the kernel names it (`ext4`, `fuse.sshfs`, `overlay`, …).
    pub fs_type: String,
    /// What is mounted: a device path, `tmpfs`, `server:/export`, …
    pub source: String,
    /// Per-mount options followed by super-block options, without duplicates (what the rules look in).
    pub options: Vec<String>,
    /// The per-mount options alone: a read-only bind mount of a read-write file system has `ro` here and
    /// `rw` in `super_options`.
    pub per_mount_options: Vec<String>,
    /// The super-block options alone.
    pub super_options: Vec<String>,
}

/// Parse mountinfo text; malformed lines are skipped (a probe never fails on them).
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

// Format (proc(5)): id parent major:minor root mount_point mount_options [optional…] - type source super_options
fn parse_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let left: Vec<&str> = left.split(' ').collect();
    let mut right = right.split(' ');
    let (dev, mount_point, mount_options) = (left.get(2)?, left.get(4)?, left.get(5)?);
    let fs_type = right.next()?;
    let source = right.next()?;
    let super_options = right.next().unwrap_or("");
    let list = |text: &str| -> Vec<String> { text.split(',').filter(|o| !o.is_empty()).map(str::to_string).collect() };
    let (per_mount_options, super_options) = (list(mount_options), list(super_options));
    let mut options: Vec<String> = Vec::new();
    for opt in per_mount_options.iter().chain(&super_options) {
        if !options.contains(opt) {
            options.push(opt.clone());
        }
    }
    Some(Mount {
        dev: dev.to_string(),
        mount_point: unescape(mount_point),
        fs_type: fs_type.to_string(),
        source: unescape(source),
        options,
        per_mount_options,
        super_options,
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo` octal.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| std::str::from_utf8(d).ok());
        match octal.map(|d| u8::from_str_radix(d, 8)) {
            Some(Ok(b)) if bytes[i] == b'\\' => {
                out.push(b);
                i += 4;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `path` is `mount_point` or below it (whole path components only).
fn is_under(path: &Path, mount_point: &str) -> bool {
    path.starts_with(mount_point)
}

/// The mount holding `path`: the longest mount point above it, preferring mounts whose device is `dev`;
/// the last such line wins (`max_by_key` keeps the last maximum), because a later mount on the same point
/// hides the earlier one.
pub fn find<'a>(mounts: &'a [Mount], path: &Path, dev: Option<&str>) -> Option<&'a Mount> {
    let above: Vec<&Mount> = mounts.iter().filter(|m| is_under(path, &m.mount_point)).collect();
    let same_dev: Vec<&Mount> = above.iter().copied().filter(|m| Some(m.dev.as_str()) == dev).collect();
    let candidates = if same_dev.is_empty() { above } else { same_dev };
    candidates.into_iter().max_by_key(|m| m.mount_point.len())
}

/// The value of `key=value` among the options.
pub fn option_value<'a>(options: &'a [String], key: &str) -> Option<&'a str> {
    options.iter().find_map(|o| o.strip_prefix(key)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
40 27 7:0 / /mnt/my\\040disk rw,noatime - xfs /dev/loop0 rw,attr2,inode64
41 27 254:0 /data /srv/bind rw,relatime shared:5 - ext4 /dev/vda rw,data=journal,commit=30
42 27 254:0 /data /srv/ro ro,relatime - ext4 /dev/vda rw,discard
garbage line
";

    #[test]
    fn parses_fields_options_and_escapes() {
        let mounts = parse(SAMPLE);
        assert_eq!(mounts.len(), 5);
        // A read-only bind mount of a read-write file system: `ro` is the mount's, `rw` the super-block's.
        assert_eq!(mounts[4].per_mount_options, ["ro", "relatime"]);
        assert_eq!(mounts[4].super_options, ["rw", "discard"]);
        assert_eq!(mounts[2].mount_point, "/mnt/my disk");
        assert_eq!(mounts[2].options, ["rw", "noatime", "attr2", "inode64"]);
        assert_eq!(mounts[2].per_mount_options, ["rw", "noatime"]);
        assert_eq!(mounts[2].super_options, ["rw", "attr2", "inode64"]);
        assert_eq!(mounts[3].fs_type, "ext4");
        assert_eq!(option_value(&mounts[3].options, "data"), Some("journal"));
        assert_eq!(option_value(&mounts[3].options, "commit"), Some("30"));
        assert_eq!(option_value(&mounts[3].options, "barrier"), None);
    }

    #[test]
    fn finds_longest_mount_point_on_the_same_device() {
        let mounts = parse(SAMPLE);
        let m = find(&mounts, Path::new("/mnt/my disk/x"), Some("7:0")).unwrap();
        assert_eq!(m.source, "/dev/loop0");
        assert_eq!(find(&mounts, Path::new("/dev/shm"), Some("0:23")).unwrap().fs_type, "tmpfs");
        assert_eq!(find(&mounts, Path::new("/home"), Some("254:0")).unwrap().mount_point, "/");
        // Not fooled by a shared prefix that is not a path component.
        assert_eq!(find(&mounts, Path::new("/srv/bindery"), None).unwrap().mount_point, "/");
        assert!(find(&[], Path::new("/x"), None).is_none());
    }
}
