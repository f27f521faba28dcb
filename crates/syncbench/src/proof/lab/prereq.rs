//! What the experiment needs from the machine, and what exactly is missing when it cannot run.

use super::cases::FsCase;
use std::path::{Path, PathBuf};

/// Directories searched for programs besides `$PATH` (sudo often drops the sbin directories).
const SBIN_DIRS: [&str; 4] = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// Everything missing for the command as a whole, each item naming what to do; empty when it can run.
pub fn missing_for_command() -> Vec<String> {
    let mut missing = Vec::new();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if effective_uid(&status) != Some(0) {
        missing.push("root (loop devices and mounts need it; run with sudo)".to_string());
    }
    if !Path::new("/dev/fuse").exists() {
        missing.push("/dev/fuse (load the fuse module: modprobe fuse)".to_string());
    }
    for (program, package) in [("losetup", "mount"), ("mount", "mount"), ("umount", "mount")] {
        if find_program(program).is_none() {
            missing.push(format!("{program} (apt-get install {package})"));
        }
    }
    missing
}

/// Why `case` cannot run here (its mkfs program is missing), if it cannot.
pub fn missing_for_case(case: FsCase) -> Option<String> {
    let (program, _) = case.mkfs();
    find_program(program).is_none().then(|| format!("{program} not found (apt-get install {})", case.package()))
}

/// The full path of `program`, looked up in `$PATH` and the sbin directories.
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The effective user id from the text of `/proc/self/status` (`Uid: real effective saved fs`).
pub fn effective_uid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_uid_is_the_second_uid_field() {
        assert_eq!(effective_uid("Name:\tx\nUid:\t1000\t0\t0\t0\nGid:\t1\t1\t1\t1\n"), Some(0));
        assert_eq!(effective_uid("Uid:\t1000\t1000\t1000\t1000\n"), Some(1000));
        assert_eq!(effective_uid("Name: x\n"), None);
    }

    #[test]
    fn finds_sh_but_not_nonsense() {
        assert!(find_program("sh").is_some());
        assert!(find_program("no-such-program-syncbench").is_none());
    }
}
