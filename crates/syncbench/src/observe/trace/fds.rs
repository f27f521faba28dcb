//! What a tracee's descriptor is: its path, whether it is a regular file, its sync flag. Read from
//! `/proc/TID/fd` and `/proc/TID/fdinfo` on first sight and cached per process until the tracer sees the
//! descriptor closed or replaced (close, dup2, dup3, close_range, exec).

use super::calls::OpenSyncFlag;
use std::collections::HashMap;
use syncbench_sys::ptrace::Pid;

/// One descriptor of one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdInfo {
    /// The path the descriptor points to (`/proc/TID/fd/N`), e.g. `/var/lib/pg/pg_wal/0001`.
    pub path: String,
    /// Whether it is a file on a file system (not a pipe, socket, terminal or anonymous inode).
    pub regular: bool,
    /// `O_SYNC`/`O_DSYNC` as the program asked for them (kept even when `--no-sync` stripped them).
    pub sync: OpenSyncFlag,
    /// Device (`st_dev`) of the file system holding it, 0 when unknown: which disk its syncs flush.
    pub dev: u64,
    /// Inode number, 0 when unknown: tells a renamed file from a descriptor number reused for another.
    pub ino: u64,
}

impl FdInfo {
    /// Classify a `/proc/TID/fd/N` link target.
    pub fn from_link(path: String, flags: u64) -> FdInfo {
        // Pipes, sockets and anonymous inodes read as `pipe:[123]`, `socket:[4]`, `anon_inode:[eventfd]`.
        let regular = path.starts_with('/') && !path.starts_with("/dev/") && !path.starts_with("/proc/");
        FdInfo { path, regular, sync: OpenSyncFlag::of_flags(flags), dev: 0, ino: 0 }
    }
}

/// Read what descriptor `fd` of task `tid` is now; `None` if it is not open (or the task is gone). A
/// process whose leader exited first (`pthread_exit`) shows no descriptors under the leader's id: then
/// those of another of its threads, which share them.
pub fn read_fd(tid: Pid, fd: i32) -> Option<FdInfo> {
    read_fd_of(tid, fd).or_else(|| {
        let tasks = std::fs::read_dir(format!("/proc/{tid}/task")).ok()?;
        tasks
            .filter_map(|t| t.ok()?.file_name().to_str()?.parse::<Pid>().ok())
            .filter(|&t| t != tid)
            .find_map(|t| read_fd_of(t, fd))
    })
}

fn read_fd_of(tid: Pid, fd: i32) -> Option<FdInfo> {
    let link = std::fs::read_link(format!("/proc/{tid}/fd/{fd}")).ok()?;
    let info = std::fs::read_to_string(format!("/proc/{tid}/fdinfo/{fd}")).ok()?;
    let flags = parse_fdinfo_flags(&info)?;
    let mut path = link.to_string_lossy().into_owned();
    // A directory (fsynced after creating or renaming files in it) is shown as `dir/`, so reports list it
    // as the directory itself rather than as a file of its parent.
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(format!("/proc/{tid}/fd/{fd}")).ok();
    if meta.as_ref().is_some_and(|m| m.is_dir()) && !path.ends_with('/') {
        path.push('/');
    }
    let (dev, ino) = meta.map_or((0, 0), |m| (m.dev(), m.ino()));
    Some(FdInfo { dev, ino, ..FdInfo::from_link(path, flags) })
}

/// The octal `flags:` line of an fdinfo file.
pub fn parse_fdinfo_flags(text: &str) -> Option<u64> {
    let value = text.lines().find_map(|l| l.strip_prefix("flags:"))?;
    u64::from_str_radix(value.trim(), 8).ok()
}

/// The process (thread group) a task belongs to, from `/proc/TID/status`.
pub fn read_tgid(tid: Pid) -> Option<Pid> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

/// The file mapped at `addr` in process `tgid` (for msync), from `/proc/TGID/maps`.
pub fn mapped_file(tgid: Pid, addr: u64) -> Option<String> {
    let maps = std::fs::read_to_string(format!("/proc/{tgid}/maps")).ok()?;
    mapped_file_in(&maps, addr)
}

fn mapped_file_in(maps: &str, addr: u64) -> Option<String> {
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (u64::from_str_radix(start, 16).ok()?, u64::from_str_radix(end, 16).ok()?);
        let path = fields.nth(4)?;
        (start <= addr && addr < end && path.starts_with('/')).then(|| path.to_string())
    })
}

/// Descriptor cache, per process.
#[derive(Debug, Default)]
pub struct FdTable {
    known: HashMap<(Pid, i32), FdInfo>,
}

impl FdTable {
    /// What `fd` of process `tgid` is, reading `/proc/TID/...` on a miss.
    pub fn lookup(&mut self, tgid: Pid, tid: Pid, fd: i32) -> Option<&mut FdInfo> {
        match self.known.entry((tgid, fd)) {
            std::collections::hash_map::Entry::Occupied(e) => Some(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(e) => Some(e.insert(read_fd(tid, fd)?)),
        }
    }

    /// Record a descriptor just opened (its sync flag as requested, before `--no-sync` stripped it).
    pub fn insert(&mut self, tgid: Pid, fd: i32, info: FdInfo) {
        self.known.insert((tgid, fd), info);
    }

    /// The cached descriptor's file is now called `path`: update it and return the old name if it changed
    /// (the sync flag is kept: `--no-sync` may have stripped it from what `/proc` shows).
    pub fn rename(&mut self, tgid: Pid, fd: i32, path: &str) -> Option<String> {
        let info = self.known.get_mut(&(tgid, fd))?;
        (info.path != path).then(|| std::mem::replace(&mut info.path, path.to_string()))
    }

    /// What `fd` of process `tgid` is known to be, without reading `/proc`.
    pub fn cached(&self, tgid: Pid, fd: i32) -> Option<&FdInfo> {
        self.known.get(&(tgid, fd))
    }

    /// The descriptor was closed or replaced.
    pub fn forget(&mut self, tgid: Pid, fd: i32) {
        self.known.remove(&(tgid, fd));
    }

    /// close_range(first, last).
    pub fn forget_range(&mut self, tgid: Pid, first: u64, last: u64) {
        self.known.retain(|&(pid, fd), _| pid != tgid || (fd as u64) < first || (fd as u64) > last);
    }

    /// The process exec'd (close-on-exec descriptors are gone) or exited.
    pub fn forget_process(&mut self, tgid: Pid) {
        self.known.retain(|&(pid, _), _| pid != tgid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_and_devices_are_not_regular_files() {
        assert!(!FdInfo::from_link("pipe:[1234]".into(), 1).regular);
        assert!(!FdInfo::from_link("/dev/pts/0".into(), 2).regular);
        let wal = FdInfo::from_link("/var/lib/pg/pg_wal/000000010000000000000001".into(), 0o4010002);
        assert!(wal.regular);
        assert_eq!(wal.sync, OpenSyncFlag::Sync);
    }

    #[test]
    fn reads_own_descriptor_flags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = std::fs::File::create(&path).unwrap();
        use std::os::fd::AsRawFd;
        let info = read_fd(std::process::id() as Pid, file.as_raw_fd()).unwrap();
        assert_eq!(info.path, path.display().to_string());
        assert_eq!(info.sync, OpenSyncFlag::None);
        let dir_fd = std::fs::File::open(dir.path()).unwrap();
        let dir_info = read_fd(std::process::id() as Pid, dir_fd.as_raw_fd()).unwrap();
        assert_eq!(dir_info.path, format!("{}/", dir.path().display()));
    }

    #[test]
    fn finds_the_mapping_of_an_address() {
        let maps = "7f00-8000 rw-s 00000000 fd:01 12 /data/db.sqlite-shm\n9000-a000 rw-p 00000000 00:00 0 \n";
        assert_eq!(mapped_file_in(maps, 0x7f10).as_deref(), Some("/data/db.sqlite-shm"));
        assert_eq!(mapped_file_in(maps, 0x9000), None);
    }

    #[test]
    fn forget_range_is_inclusive_and_per_process() {
        let mut table = FdTable::default();
        for fd in 3..7 {
            table.insert(1, fd, FdInfo::from_link(format!("/f{fd}"), 0));
            table.insert(2, fd, FdInfo::from_link(format!("/g{fd}"), 0));
        }
        assert_eq!(table.rename(1, 3, "/moved"), Some("/f3".to_string()));
        assert_eq!(table.rename(1, 3, "/moved"), None);
        table.forget_range(1, 4, 5);
        assert_eq!(table.known.len(), 6);
        assert!(table.known.contains_key(&(1, 3)) && table.known.contains_key(&(1, 6)));
    }
}
