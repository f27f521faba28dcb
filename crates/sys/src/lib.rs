//! Every raw syscall syncbench and its reference engine use, and nothing else.
//!
//! Why one crate: the whole point of syncbench is to tell `O_DSYNC` from `O_SYNC`, `fdatasync` from
//! `fsync`, and a linked io_uring write+fsync from an unlinked one. Names lie (rustix's `OFlags::DSYNC`
//! is `O_SYNC` on its default backend), so every flag is spelled from `libc` here and verified against
//! `/proc/self/fdinfo` in the tests at the bottom of this file.
//!
//! Every function returns `io::Result`; no result is ever ignored. `EINTR` and short writes are retried
//! inside `pwrite_all`/`pwritev2_all`, because a benchmark that silently wrote half a buffer would report
//! a fast result for work it did not do.

#![deny(missing_docs)]

mod aligned;
#[cfg(target_os = "linux")]
pub mod bpf;
#[cfg(target_os = "linux")]
mod cpu_latency;
mod fiemap;
#[cfg(target_os = "linux")]
pub mod ftrace;
#[cfg(target_os = "linux")]
pub mod kevents;
#[cfg(target_os = "linux")]
pub mod perf;
pub mod process;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod ptrace;
#[doc(hidden)]
pub mod test_support;
#[cfg(target_os = "linux")]
pub mod tracefs;
mod uring;

pub use aligned::AlignedBuf;
#[cfg(target_os = "linux")]
pub use cpu_latency::{CpuLatencyRequest, cpu_latency_in_force_us, request_cpu_latency};
pub use fiemap::{FileExtent, fiemap};
pub use uring::Uring;

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::ReadWriteFlags;
use std::io;
use std::path::Path;

/// Which synchronous-write flag a file is opened with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpenSync {
    /// Neither flag: writes land in the page cache.
    None,
    /// `O_DSYNC`: every write returns after its data (and the metadata needed to read it) is durable.
    Dsync,
    /// `O_SYNC`: like `O_DSYNC` plus all metadata (timestamps).
    Sync,
}

/// How to open a file for measured writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpenFlags {
    /// The synchronous-write flag.
    pub sync: OpenSync,
    /// `O_DIRECT`: bypass the page cache (needs aligned buffers, offsets and lengths).
    pub direct: bool,
}

impl OpenFlags {
    /// Plain buffered read/write.
    pub const BUFFERED: OpenFlags = OpenFlags { sync: OpenSync::None, direct: false };

    /// The exact `open(2)` flag bits this asks for, beyond `O_RDWR | O_CLOEXEC`.
    pub fn bits(self) -> u32 {
        let sync = match self.sync {
            OpenSync::None => 0,
            OpenSync::Dsync => libc::O_DSYNC,
            OpenSync::Sync => libc::O_SYNC,
        };
        let direct = if self.direct { libc::O_DIRECT } else { 0 };
        (sync | direct) as u32
    }
}

fn oflags(flags: OpenFlags) -> OFlags {
    // NOTE: from_bits_retain with libc's constants, never OFlags::DSYNC (which is O_SYNC in rustix 1.1).
    OFlags::RDWR | OFlags::CLOEXEC | OFlags::from_bits_retain(flags.bits())
}

/// Create a new file (`O_CREAT | O_EXCL`): fails if anything exists at `path`, so syncbench can never
/// open somebody else's file for writing.
pub fn create_new(path: &Path, flags: OpenFlags) -> io::Result<OwnedFd> {
    let all = oflags(flags) | OFlags::CREATE | OFlags::EXCL;
    Ok(rustix::fs::open(path, all, Mode::from_raw_mode(0o600))?)
}

/// Open an existing file read-write with `flags`. Callers only pass paths they created themselves.
pub fn open_existing(path: &Path, flags: OpenFlags) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(path, oflags(flags), Mode::empty())?)
}

/// Open a file read-only (for recovery scans and probes).
pub fn open_read_only(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?)
}

/// Open a directory so that it can be fsynced (after a create, rename or unlink in it).
pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    Ok(rustix::fs::open(path, flags, Mode::empty())?)
}

/// fsync a directory: makes creates, renames and unlinks in it durable.
pub fn fsync_dir(path: &Path) -> io::Result<()> {
    let dir = open_dir(path)?;
    fsync(&dir)
}

/// Write all of `buf` at `offset`, retrying `EINTR` and short writes.
pub fn pwrite_all(fd: impl AsFd, buf: &[u8], offset: u64) -> io::Result<()> {
    let fd = fd.as_fd();
    let mut done = 0usize;
    while done < buf.len() {
        match rustix::io::pwrite(fd, &buf[done..], offset + done as u64) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "pwrite wrote 0 bytes")),
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Per-write flags of `pwritev2(2)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RwFlag {
    /// `RWF_DSYNC`: this one write behaves as if the file were opened with `O_DSYNC`.
    Dsync,
    /// `RWF_SYNC`: this one write behaves as if the file were opened with `O_SYNC`.
    Sync,
    /// `RWF_ATOMIC`: the write is untorn (Linux ≥ 6.11, needs device and file-system support).
    Atomic,
    /// `RWF_ATOMIC | RWF_DSYNC`.
    AtomicDsync,
}

impl RwFlag {
    /// The raw `RWF_*` bits.
    pub fn bits(self) -> u32 {
        let bits = match self {
            RwFlag::Dsync => libc::RWF_DSYNC,
            RwFlag::Sync => libc::RWF_SYNC,
            RwFlag::Atomic => libc::RWF_ATOMIC,
            RwFlag::AtomicDsync => libc::RWF_ATOMIC | libc::RWF_DSYNC,
        };
        bits as u32
    }
}

/// `pwritev2(2)` of all of `buf` at `offset` with a per-write flag, retrying `EINTR` and short writes.
/// An atomic write is never split: a short atomic write is an error.
pub fn pwritev2_all(fd: impl AsFd, buf: &[u8], offset: u64, flag: RwFlag) -> io::Result<()> {
    let fd = fd.as_fd();
    let flags = ReadWriteFlags::from_bits_retain(flag.bits());
    let mut done = 0usize;
    while done < buf.len() {
        let iov = [io::IoSlice::new(&buf[done..])];
        match rustix::io::pwritev2(fd, &iov, offset + done as u64, flags) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "pwritev2 wrote 0 bytes")),
            Ok(n) if n < buf.len() && matches!(flag, RwFlag::Atomic | RwFlag::AtomicDsync) => {
                return Err(io::Error::other(format!("atomic write was short: {n} of {} bytes", buf.len())));
            }
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Read exactly `buf.len()` bytes at `offset`; a read past the end of the file is an `UnexpectedEof` error.
pub fn pread_exact(fd: impl AsFd, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let fd = fd.as_fd();
    let mut done = 0usize;
    while done < buf.len() {
        match rustix::io::pread(fd, &mut buf[done..], offset + done as u64) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file")),
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Read up to `buf.len()` bytes at `offset`; returns how many were read (fewer only at end of file).
pub fn pread_upto(fd: impl AsFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let fd = fd.as_fd();
    let mut done = 0usize;
    while done < buf.len() {
        match rustix::io::pread(fd, &mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(done)
}

/// `fsync(2)`: data and all metadata. An error here means data may be lost: never retry it.
pub fn fsync(fd: impl AsFd) -> io::Result<()> {
    Ok(rustix::fs::fsync(fd)?)
}

/// `fdatasync(2)`: data and the metadata needed to read it back (size, allocation), not timestamps.
pub fn fdatasync(fd: impl AsFd) -> io::Result<()> {
    Ok(rustix::fs::fdatasync(fd)?)
}

/// `sync_file_range(fd, off, len, SYNC_FILE_RANGE_WAIT_BEFORE | WRITE | WAIT_AFTER)`.
/// Starts and waits for writeback of the range. NOT durable: it flushes no device cache and no metadata.
pub fn sync_file_range_wait(fd: impl AsFd, offset: u64, len: u64) -> io::Result<()> {
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    let raw = fd.as_fd().as_raw_fd();
    // SAFETY: `raw` is a valid open descriptor borrowed for the duration of the call; the call takes no pointers.
    let rc = unsafe { libc::sync_file_range(raw, offset as i64, len as i64, flags) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// `fallocate(fd, 0, offset, len)`: allocate unwritten extents (reads return zeros) and extend the size.
pub fn fallocate(fd: impl AsFd, offset: u64, len: u64) -> io::Result<()> {
    Ok(rustix::fs::fallocate(fd, rustix::fs::FallocateFlags::empty(), offset, len)?)
}

/// `ftruncate(2)`.
pub fn set_len(fd: impl AsFd, len: u64) -> io::Result<()> {
    Ok(rustix::fs::ftruncate(fd, len)?)
}

/// Size of the file in bytes (`fstat`).
pub fn file_len(fd: impl AsFd) -> io::Result<u64> {
    Ok(rustix::fs::fstat(fd)?.st_size as u64)
}

/// `(st_dev major, minor)` of the file system holding `fd`.
pub fn device_of(fd: impl AsFd) -> io::Result<(u32, u32)> {
    let st = rustix::fs::fstat(fd)?;
    Ok((rustix::fs::major(st.st_dev), rustix::fs::minor(st.st_dev)))
}

/// The file-system magic number (`f_type` of `fstatfs`).
pub fn fs_magic(fd: impl AsFd) -> io::Result<u64> {
    Ok(rustix::fs::fstatfs(fd)?.f_type as u64)
}

/// Free space for unprivileged users, in bytes, of the file system holding `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let st = rustix::fs::statvfs(path)?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Whether this process may write `path` (a file to overwrite, or a directory to create a file in):
/// `access(W_OK)`, which also reports EROFS for a read-only file system.
pub fn check_writable(path: &Path) -> io::Result<()> {
    Ok(rustix::fs::access(path, rustix::fs::Access::WRITE_OK)?)
}

/// Try to take a `flock` on `fd` without waiting: exclusive, or shared. `Ok(false)` when another open file
/// holds a conflicting lock (EWOULDBLOCK).
pub fn try_flock(fd: impl AsFd, exclusive: bool) -> io::Result<bool> {
    use rustix::fs::FlockOperation;
    let op = if exclusive { FlockOperation::NonBlockingLockExclusive } else { FlockOperation::NonBlockingLockShared };
    match rustix::fs::flock(fd, op) {
        Ok(()) => Ok(true),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Whether the file system holding `path` is mounted read-only.
pub fn is_read_only_fs(path: &Path) -> io::Result<bool> {
    let st = rustix::fs::statvfs(path)?;
    Ok(st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
}

/// Direct-I/O alignment from `statx(STATX_DIOALIGN)` (Linux ≥ 6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DioAlign {
    /// Required alignment of the memory buffer, in bytes.
    pub mem_align_bytes: u32,
    /// Required alignment of file offsets and lengths, in bytes.
    pub offset_align_bytes: u32,
}

/// Untorn-write limits from `statx(STATX_WRITE_ATOMIC)` (Linux ≥ 6.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicUnits {
    /// Smallest untorn write, in bytes.
    pub unit_min_bytes: u32,
    /// Largest untorn write, in bytes.
    pub unit_max_bytes: u32,
}

/// What `statx` says about direct I/O and untorn writes for an open file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StatxIo {
    /// `None` when the kernel or file system does not report it, or reports 0 (direct I/O unsupported).
    pub dio: Option<DioAlign>,
    /// `None` when not reported, or when both units are 0 — "field present, value 0" means unsupported.
    pub atomic: Option<AtomicUnits>,
}

/// `statx` with `STATX_DIOALIGN | STATX_WRITE_ATOMIC` on an open file.
pub fn statx_io(fd: impl AsFd) -> io::Result<StatxIo> {
    use rustix::fs::{AtFlags, StatxFlags};
    let mask = StatxFlags::DIOALIGN | StatxFlags::from_bits_retain(libc::STATX_WRITE_ATOMIC);
    let st = rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, mask)?;
    let got = StatxFlags::from_bits_retain(st.stx_mask);
    let dio = (got.contains(StatxFlags::DIOALIGN) && st.stx_dio_offset_align != 0)
        .then_some(DioAlign { mem_align_bytes: st.stx_dio_mem_align, offset_align_bytes: st.stx_dio_offset_align });
    let atomic_reported = got.contains(StatxFlags::from_bits_retain(libc::STATX_WRITE_ATOMIC));
    let atomic = (atomic_reported && st.stx_atomic_write_unit_max != 0).then_some(AtomicUnits {
        unit_min_bytes: st.stx_atomic_write_unit_min,
        unit_max_bytes: st.stx_atomic_write_unit_max,
    });
    Ok(StatxIo { dio, atomic })
}

/// The `flags:` line of `/proc/self/fdinfo/N`: the open flags the kernel really recorded.
pub fn fdinfo_flags(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let text = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd()))?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .ok_or_else(|| io::Error::other("no flags: line in fdinfo"))?;
    u32::from_str_radix(line.trim(), 8).map_err(|e| io::Error::other(format!("bad fdinfo flags {line:?}: {e}")))
}

/// Decode an errno from an `io::Error` into its symbolic name ("EINVAL"), for messages users can search for.
pub fn errno_name(err: &io::Error) -> Option<&'static str> {
    let code = err.raw_os_error()?;
    Some(match code {
        libc::EINVAL => "EINVAL",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOSYS => "ENOSYS",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::EIO => "EIO",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EEXIST => "EEXIST",
        libc::ENOENT => "ENOENT",
        libc::ENOTDIR => "ENOTDIR",
        libc::EBADF => "EBADF",
        libc::EFAULT => "EFAULT",
        libc::ENOMEM => "ENOMEM",
        libc::EAGAIN => "EAGAIN",
        libc::EDQUOT => "EDQUOT",
        libc::ECANCELED => "ECANCELED",
        _ => return None,
    })
}

/// The CPU's time-stamp counter (`rdtsc`): a ~10 ns clock read where `clock_gettime` costs ~60 ns in a VM.
/// Only meaningful as a clock when the TSC is invariant (`constant_tsc` and `nonstop_tsc` in /proc/cpuinfo);
/// callers calibrate it against `CLOCK_MONOTONIC`. `None` on other architectures.
#[inline]
pub fn read_tsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no memory effects and exists on every x86_64 CPU.
        #[allow(unused_unsafe)]
        let ticks = unsafe { core::arch::x86_64::_rdtsc() };
        Some(ticks)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Make `SIGPIPE` kill nothing: writes to a closed pipe then fail with `EPIPE`, which the CLI turns into
/// a quiet exit.
pub fn ignore_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory-safety requirements.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Set the calling thread's timer slack (`PR_SET_TIMERSLACK`): how late the kernel may fire its timed
/// waits to batch wake-ups (50 µs by default). A thread that emulates a 20 µs device latency needs ~1 ns.
pub fn set_thread_timer_slack_ns(slack_ns: u64) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer and affects only the calling thread.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack_ns as libc::c_ulong, 0, 0, 0) };
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Run the calling thread in the real-time FIFO class at `priority` (1-99), ahead of every normal thread
/// on its CPU, or back in the normal class with `None`. Needs root (or CAP_SYS_NICE).
pub fn set_thread_realtime(priority: Option<i32>) -> io::Result<()> {
    let (policy, sched_priority) = match priority {
        Some(p) => (libc::SCHED_FIFO, p),
        None => (libc::SCHED_OTHER, 0),
    };
    let param = libc::sched_param { sched_priority };
    // SAFETY: sched_setscheduler(0, ..) reads a valid sched_param and affects only the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, policy, &param) };
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fd::AsFd;

    const O_ACCMODE_RDWR: u32 = libc::O_RDWR as u32;

    fn flags_of(flags: OpenFlags) -> Option<u32> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        match create_new(&path, flags) {
            Ok(fd) => Some(fdinfo_flags(fd.as_fd()).unwrap()),
            // O_DIRECT is refused on tmpfs; the flag test then only covers the buffered modes.
            Err(e) if flags.direct && e.raw_os_error() == Some(libc::EINVAL) => None,
            Err(e) => panic!("open {flags:?}: {e}"),
        }
    }

    #[test]
    fn a_thread_enters_and_leaves_the_realtime_class() {
        let policies = std::thread::spawn(|| {
            if let Err(e) = set_thread_realtime(Some(1)) {
                // Unprivileged runs cannot enter the class; nothing else to check there.
                assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
                return None;
            }
            // SAFETY: sched_getscheduler(0) only reads the calling thread's policy.
            let policy = || unsafe { libc::sched_getscheduler(0) };
            let inside = policy();
            set_thread_realtime(None).unwrap();
            Some((inside, policy()))
        })
        .join()
        .unwrap();
        if let Some((inside, after)) = policies {
            assert_eq!((inside, after), (libc::SCHED_FIFO, libc::SCHED_OTHER));
        }
    }

    #[test]
    fn open_flags_are_what_the_kernel_records() {
        let sync_bits = (libc::O_SYNC | libc::O_DSYNC) as u32;
        for direct in [false, true] {
            for (sync, want) in
                [(OpenSync::None, 0u32), (OpenSync::Dsync, libc::O_DSYNC as u32), (OpenSync::Sync, libc::O_SYNC as u32)]
            {
                let Some(got) = flags_of(OpenFlags { sync, direct }) else { continue };
                assert_eq!(got & 0o3, O_ACCMODE_RDWR, "{sync:?}");
                assert_eq!(got & sync_bits, want, "{sync:?} direct={direct}: flags {got:o}");
                assert_eq!(got & libc::O_DIRECT as u32 != 0, direct, "{sync:?} direct={direct}: {got:o}");
                assert!(got & libc::O_CLOEXEC as u32 != 0);
            }
        }
    }

    #[test]
    fn tsc_moves_forward() {
        let Some(a) = read_tsc() else { return };
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(read_tsc().unwrap() > a);
    }

    #[test]
    fn per_write_flags_keep_dsync_and_sync_apart_and_the_kernel_takes_them() {
        // The trap this crate exists to avoid, for pwritev2: RWF_DSYNC must not become RWF_SYNC (or 0).
        // (open(2)'s flags are checked against what the kernel records above.)
        let (dsync, sync) = (libc::RWF_DSYNC as u32, libc::RWF_SYNC as u32);
        assert_eq!(RwFlag::Dsync.bits() & (dsync | sync), dsync);
        assert_eq!(RwFlag::Sync.bits() & sync, sync);
        assert_eq!(RwFlag::AtomicDsync.bits(), RwFlag::Atomic.bits() | RwFlag::Dsync.bits());
        let dir = tempfile::tempdir().unwrap();
        let fd = create_new(&dir.path().join("w"), OpenFlags::BUFFERED).unwrap();
        for (i, flag) in [RwFlag::Dsync, RwFlag::Sync].into_iter().enumerate() {
            pwritev2_all(&fd, b"durable", i as u64 * 8, flag).unwrap();
        }
        let mut back = [0u8; 15];
        pread_exact(&fd, &mut back, 0).unwrap();
        assert_eq!(&back, b"durable\0durable");
    }

    #[test]
    fn create_new_refuses_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"precious").unwrap();
        let err = create_new(&path, OpenFlags::BUFFERED).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EEXIST));
        assert_eq!(std::fs::read(&path).unwrap(), b"precious");
    }

    #[test]
    fn write_sync_read_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        let fd = create_new(&path, OpenFlags::BUFFERED).unwrap();
        pwrite_all(&fd, b"hello", 10).unwrap();
        pwritev2_all(&fd, b"world", 15, RwFlag::Dsync).unwrap();
        pwritev2_all(&fd, b"!", 20, RwFlag::Sync).unwrap();
        fdatasync(&fd).unwrap();
        fsync(&fd).unwrap();
        sync_file_range_wait(&fd, 0, 21).unwrap();
        let mut buf = [0u8; 21];
        pread_exact(&fd, &mut buf, 0).unwrap();
        assert_eq!(&buf[10..], b"helloworld!");
        assert_eq!(file_len(&fd).unwrap(), 21);
        let mut big = [0u8; 64];
        assert_eq!(pread_upto(&fd, &mut big, 0).unwrap(), 21);
        assert!(pread_exact(&fd, &mut big, 0).is_err());
        fsync_dir(dir.path()).unwrap();
    }

    #[test]
    fn fallocate_extends_and_reads_zero() {
        let dir = tempfile::tempdir().unwrap();
        let fd = create_new(&dir.path().join("x"), OpenFlags::BUFFERED).unwrap();
        match fallocate(&fd, 0, 1 << 20) {
            Ok(()) => assert_eq!(file_len(&fd).unwrap(), 1 << 20),
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP)),
        }
    }

    #[test]
    fn sync_errors_are_reported_not_swallowed() {
        // fsync of a descriptor to a pipe is EINVAL: the error must come back.
        let (r, _w) = rustix::pipe::pipe().unwrap();
        let err = fsync(&r).unwrap_err();
        assert_eq!(errno_name(&err), Some("EINVAL"));
        assert!(fdatasync(&r).is_err());
    }

    #[test]
    fn statx_reports_something_sane() {
        let dir = tempfile::tempdir().unwrap();
        let fd = create_new(&dir.path().join("x"), OpenFlags::BUFFERED).unwrap();
        let io = statx_io(&fd).unwrap();
        if let Some(dio) = io.dio {
            assert!(dio.offset_align_bytes.is_power_of_two());
        }
        if let Some(a) = io.atomic {
            assert!(a.unit_min_bytes <= a.unit_max_bytes);
        }
    }
}
