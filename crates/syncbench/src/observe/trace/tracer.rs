//! The tracer's event loop: start the command under ptrace with the seccomp filter, then handle every
//! stop until the last traced task is gone.

use super::calls::{self, Entry, OPEN_SYNC_BITS, OpenSyncFlag, RWF_SYNC_BITS, SyncCall, WriteLen};
use super::fds::{self, FdInfo, FdTable};
use super::filter;
use super::stats::Recorder;
use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::time::Instant;
use syncbench_sys::ptrace::{self, Pid, Resume, Stop, SyscallRegs};

/// How to trace.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceOptions {
    /// Skip every sync call (it returns 0) and strip O_SYNC/O_DSYNC/RWF_DSYNC/RWF_SYNC.
    pub no_sync: bool,
    /// Stop on every write, close and dup too (bytes between syncs, writes on O_SYNC/O_DSYNC descriptors).
    pub track_writes: bool,
}

/// How the traced command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Exit status.
    Exited(i32),
    /// Killed by this signal.
    Killed(i32),
}

/// What a trace produced.
#[derive(Debug)]
pub struct Traced {
    /// The aggregates.
    pub recorder: Recorder,
    /// How the command ended.
    pub ending: Ending,
    /// Wall time from spawn to the last task's exit.
    pub duration_s: f64,
    /// Distinct processes seen (the command and its descendants).
    pub processes_seen: u64,
    /// Distinct tasks (threads included) seen.
    pub tasks_seen: u64,
    /// Programs whose durability calls may have gone unseen.
    pub unseen: Unseen,
}

/// Programs whose durability calls the tracer may not have seen (reported as warnings).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unseen {
    /// Programs (executable paths) that called `io_uring_setup`: what they submit through the ring
    /// (`IORING_OP_FSYNC`, `RWF_DSYNC` writes) makes no system call.
    pub io_uring: std::collections::BTreeSet<String>,
    /// 32-bit programs (executable path, ABI `i386` or `x32`): the seccomp filter lets their calls through.
    pub not_x86_64: std::collections::BTreeSet<(String, &'static str)>,
}

/// The 32-bit x86 ABI an ELF executable with this header runs under (`i386` or `x32`); `None` for x86_64
/// and anything that is not such an ELF header.
pub fn elf_abi_32(header: &[u8]) -> Option<&'static str> {
    const EM_386: u16 = 3;
    const EM_X86_64: u16 = 62;
    if header.len() < 20 || header[..4] != *b"\x7fELF" || header[4] != 1 {
        return None; // not ELF, or ELFCLASS64
    }
    match u16::from_le_bytes([header[18], header[19]]) {
        EM_386 => Some("i386"),
        EM_X86_64 => Some("x32"),
        _ => None,
    }
}

/// The executable of process `pid` and, when it is a 32-bit program, its ABI.
pub(crate) fn exe_abi(pid: Pid) -> (String, Option<&'static str>) {
    use std::io::Read;
    let exe = format!("/proc/{pid}/exe");
    let path = std::fs::read_link(&exe).map_or_else(|_| format!("(pid {pid})"), |p| p.display().to_string());
    let mut header = [0u8; 20];
    let abi =
        std::fs::File::open(&exe).and_then(|mut f| f.read_exact(&mut header)).ok().and_then(|()| elf_abi_32(&header));
    (path, abi)
}

/// The processes being traced right now, shared with a signal handler that passes Ctrl-C on to them.
pub type LiveProcesses = std::sync::Arc<std::sync::Mutex<std::collections::HashSet<Pid>>>;

/// A call the tracer is waiting to see return.
#[derive(Debug)]
enum Pending {
    /// A sync or durable write on `target`.
    Timed { call: SyncCall, target: String, started: Instant },
    /// An open with O_SYNC/O_DSYNC: the descriptor is known only when it returns.
    Open { sync: OpenSyncFlag },
}

#[derive(Debug, Default)]
struct Task {
    tgid: Option<Pid>,
    pending: Option<Pending>,
}

struct Tracer {
    options: TraceOptions,
    recorder: Recorder,
    fds: FdTable,
    tasks: HashMap<Pid, Task>,
    processes: std::collections::HashSet<Pid>,
    live: LiveProcesses,
    tasks_seen: u64,
    unseen: Unseen,
}

/// Nice value of the tracer thread when allowed (root).
const TRACER_NICE: i32 = -10;

/// Run `argv` under the tracer until it and all its descendants have exited. `live` is kept up to date
/// with the traced processes.
pub fn trace_command(argv: &[OsString], options: TraceOptions, live: LiveProcesses) -> io::Result<Traced> {
    let filter = ptrace::build_filter(&filter::rules(options.track_writes));
    let started = Instant::now();
    let root = ptrace::spawn_traced(argv, filter)?;
    // Every timed call waits for this thread to wake up twice; on a busy machine a woken tracer can wait
    // behind other runnable work. A higher priority (root only, the traced programs keep theirs) keeps
    // that wait, which is added to every latency, short. Without the privilege nothing changes.
    let _ = ptrace::set_this_thread_nice(TRACER_NICE);
    ptrace::wait_exec_stop(root)?;
    let mut tracer = Tracer {
        options,
        recorder: Recorder::new(options.track_writes),
        fds: FdTable::default(),
        tasks: HashMap::new(),
        processes: Default::default(),
        live,
        tasks_seen: 0,
        unseen: Unseen::default(),
    };
    tracer.tgid(root); // registers the command as live at once, for Ctrl-C
    tracer.check_abi(root);
    ptrace::resume(root, Resume::Continue, 0)?;
    let mut ending = Ending::Exited(0);
    while let Some((tid, stop)) = ptrace::wait_any()? {
        if let Some(end) = tracer.handle(tid, stop)?
            && tid == root
        {
            ending = end;
        }
    }
    Ok(Traced {
        recorder: tracer.recorder,
        ending,
        duration_s: started.elapsed().as_secs_f64(),
        processes_seen: tracer.processes.len() as u64,
        tasks_seen: tracer.tasks_seen,
        unseen: tracer.unseen,
    })
}

impl Tracer {
    /// The task's record, created on first sight.
    fn task(&mut self, tid: Pid) -> &mut Task {
        if !self.tasks.contains_key(&tid) {
            self.tasks_seen += 1;
        }
        self.tasks.entry(tid).or_default()
    }

    fn tgid(&mut self, tid: Pid) -> Pid {
        if let Some(tgid) = self.task(tid).tgid {
            return tgid;
        }
        let tgid = fds::read_tgid(tid).unwrap_or(tid);
        self.task(tid).tgid = Some(tgid);
        self.processes.insert(tgid);
        self.live.lock().unwrap_or_else(|p| p.into_inner()).insert(tgid);
        tgid
    }

    /// Handle one stop; returns how the task ended if it did.
    fn handle(&mut self, tid: Pid, stop: Stop) -> io::Result<Option<Ending>> {
        match stop {
            Stop::Exited(code) => return Ok(Some(self.gone(tid, Ending::Exited(code)))),
            Stop::Killed(sig) => return Ok(Some(self.gone(tid, Ending::Killed(sig)))),
            Stop::Seccomp => self.on_entry(tid)?,
            Stop::SyscallExit => self.on_exit(tid)?,
            Stop::NewTask => {
                // The new task reports its own first stop (SIGSTOP); it is counted there.
                self.tgid(tid);
                ptrace::resume(tid, Resume::Continue, 0)?;
            }
            Stop::Exec => {
                let tgid = self.tgid(tid);
                self.fds.forget_process(tgid);
                self.check_abi(tgid);
                ptrace::resume(tid, Resume::Continue, 0)?;
            }
            Stop::OtherEvent(_) => ptrace::resume(tid, Resume::Continue, 0)?,
            Stop::Signal(sig) => {
                let first_sight = !self.tasks.contains_key(&tid);
                self.tgid(tid);
                // A new task's initial SIGSTOP is ptrace's, not the program's. Stop signals are not passed
                // on either: a group stop under ptrace would need PTRACE_LISTEN (job control is not
                // supported while tracing).
                let is_stop = matches!(sig, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU);
                let deliver = if first_sight || is_stop { 0 } else { sig };
                ptrace::resume(tid, Resume::Continue, deliver)?;
            }
        }
        Ok(None)
    }

    /// Note a 32-bit program (its calls pass the filter untraced).
    fn check_abi(&mut self, tgid: Pid) {
        if let (path, Some(abi)) = exe_abi(tgid) {
            self.unseen.not_x86_64.insert((path, abi));
        }
    }

    fn gone(&mut self, tid: Pid, ending: Ending) -> Ending {
        if let Some(task) = self.tasks.remove(&tid)
            && task.tgid == Some(tid)
        {
            self.fds.forget_process(tid);
            self.live.lock().unwrap_or_else(|p| p.into_inner()).remove(&tid);
        }
        ending
    }

    fn on_entry(&mut self, tid: Pid) -> io::Result<()> {
        let mut regs = match ptrace::get_regs(tid) {
            Ok(regs) => regs,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(()), // killed meanwhile
            Err(e) => return Err(e),
        };
        let tgid = self.tgid(tid);
        let resume = match calls::decode(regs.nr(), regs.args()) {
            Entry::Sync { call, fd, addr } => {
                let target = self.target_of(tid, tgid, fd, addr);
                self.sync_call(tid, &mut regs, call, target)?
            }
            Entry::Write { fd, len, rwf } => self.write_call(tid, tgid, &mut regs, fd, len, rwf)?,
            Entry::OpenSync { flags_arg, flags } => {
                if self.options.no_sync {
                    regs.set_arg(flags_arg, flags & !OPEN_SYNC_BITS);
                    ptrace::set_regs(tid, &regs)?;
                }
                self.task(tid).pending = Some(Pending::Open { sync: OpenSyncFlag::of_flags(flags) });
                Resume::ToSyscallExit
            }
            Entry::Openat2 { how_addr } => self.openat2(tid, how_addr)?,
            Entry::IoUringSetup => {
                self.unseen.io_uring.insert(exe_abi(tgid).0);
                Resume::Continue
            }
            Entry::Forget { fd } => {
                self.fds.forget(tgid, fd);
                Resume::Continue
            }
            Entry::ForgetRange { first, last } => {
                self.fds.forget_range(tgid, first, last);
                Resume::Continue
            }
            Entry::Other => Resume::Continue,
        };
        ptrace::resume(tid, resume, 0)
    }

    /// What a sync call applies to: the descriptor's path, the mapped file, or all file systems.
    fn target_of(&mut self, tid: Pid, tgid: Pid, fd: Option<i32>, addr: Option<u64>) -> String {
        match (fd, addr) {
            (Some(fd), _) => {
                // Read the name afresh: the file or a directory above it may have been renamed since the
                // descriptor was cached (etcd renames wal.tmp/ to wal/ with the segment open).
                let Some(fresh) = fds::read_fd(tid, fd) else {
                    return format!("(bad descriptor {fd})");
                };
                if let Some(old) = self.fds.rename(tgid, fd, &fresh.path) {
                    self.recorder.renamed(&old, &fresh.path);
                }
                fresh.path
            }
            (None, Some(addr)) => fds::mapped_file(tgid, addr).unwrap_or_else(|| "(anonymous mapping)".into()),
            (None, None) => "(all file systems)".into(),
        }
    }

    fn sync_call(&mut self, tid: Pid, regs: &mut SyscallRegs, call: SyncCall, target: String) -> io::Result<Resume> {
        if self.options.no_sync {
            regs.skip_with(0);
            ptrace::set_regs(tid, regs)?;
            self.recorder.call(call, &target, None, false, 0);
            return Ok(Resume::Continue);
        }
        self.task(tid).pending = Some(Pending::Timed { call, target, started: Instant::now() });
        Ok(Resume::ToSyscallExit)
    }

    fn write_call(
        &mut self,
        tid: Pid,
        tgid: Pid,
        regs: &mut SyscallRegs,
        fd: i32,
        len: WriteLen,
        rwf: u64,
    ) -> io::Result<Resume> {
        let Some(info) = self.fds.lookup(tgid, tid, fd).cloned() else {
            return Ok(Resume::Continue);
        };
        if !info.regular {
            return Ok(Resume::Continue);
        }
        let durable = calls::rwf_call(rwf).or(info.sync.write_call());
        let Some(call) = durable else {
            let bytes = write_len(tid, len);
            self.recorder.wrote(&info.path, bytes);
            return Ok(Resume::Continue);
        };
        if self.options.no_sync {
            if rwf & RWF_SYNC_BITS != 0 {
                regs.set_arg(5, rwf & !RWF_SYNC_BITS);
                ptrace::set_regs(tid, regs)?;
            }
            // The write still happens, without its sync: its bytes count as pending for a later fsync.
            let bytes = write_len(tid, len);
            self.recorder.call(call, &info.path, None, false, bytes);
            self.recorder.wrote(&info.path, bytes);
            return Ok(Resume::Continue);
        }
        self.task(tid).pending = Some(Pending::Timed { call, target: info.path, started: Instant::now() });
        Ok(Resume::ToSyscallExit)
    }

    fn openat2(&mut self, tid: Pid, how_addr: u64) -> io::Result<Resume> {
        let mut word = [0u8; 8];
        if ptrace::read_memory(tid, how_addr, &mut word).is_err() {
            return Ok(Resume::Continue); // a bad pointer: the kernel will return EFAULT
        }
        let flags = u64::from_ne_bytes(word);
        if flags & OPEN_SYNC_BITS == 0 {
            return Ok(Resume::Continue);
        }
        if self.options.no_sync {
            ptrace::write_word(tid, how_addr, flags & !OPEN_SYNC_BITS)?;
        }
        self.task(tid).pending = Some(Pending::Open { sync: OpenSyncFlag::of_flags(flags) });
        Ok(Resume::ToSyscallExit)
    }

    fn on_exit(&mut self, tid: Pid) -> io::Result<()> {
        let ended = Instant::now();
        let pending = self.task(tid).pending.take();
        let ret = match ptrace::get_regs(tid) {
            Ok(regs) => regs.ret(),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(()),
            Err(e) => return Err(e),
        };
        match pending {
            Some(Pending::Timed { call, target, started }) => {
                let ns = ended.duration_since(started).as_nanos() as u64;
                let written = if call.is_durable_write() { ret.max(0) as u64 } else { 0 };
                self.recorder.call(call, &target, Some(ns), ret < 0, written);
            }
            Some(Pending::Open { sync }) if ret >= 0 => {
                let tgid = self.tgid(tid);
                if let Some(info) = fds::read_fd(tid, ret as i32) {
                    self.recorder.opened_sync(&info.path);
                    self.fds.insert(tgid, ret as i32, FdInfo { sync, ..info });
                }
            }
            Some(Pending::Open { .. }) | None => {}
        }
        ptrace::resume(tid, Resume::Continue, 0)
    }
}

/// Bytes a write asks for: the count, or the sum of its iovec lengths (read from the tracee).
fn write_len(tid: Pid, len: WriteLen) -> u64 {
    match len {
        WriteLen::Count(n) => n,
        WriteLen::Iovec(addr, entries) => {
            // struct iovec { void *base; size_t len; }: 16 bytes each; IOV_MAX is 1024.
            let entries = entries.min(1024) as usize;
            let mut raw = vec![0u8; entries * 16];
            if ptrace::read_memory(tid, addr, &mut raw).is_err() {
                return 0;
            }
            raw.chunks_exact(16).map(|iov| u64::from_ne_bytes(iov[8..16].try_into().unwrap_or([0; 8]))).sum()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(class: u8, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 20];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = class;
        h[5] = 1;
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h
    }

    #[test]
    fn elf_headers_name_the_32_bit_abis_only() {
        assert_eq!(elf_abi_32(&header(1, 3)), Some("i386"));
        assert_eq!(elf_abi_32(&header(1, 62)), Some("x32"));
        assert_eq!(elf_abi_32(&header(2, 62)), None, "x86_64");
        assert_eq!(elf_abi_32(b"#!/bin/sh\nexit 0\n\0\0\0"), None);
        assert_eq!(elf_abi_32(&header(1, 3)[..10]), None, "short");
    }

    #[test]
    fn this_test_binary_is_not_32_bit() {
        let (path, abi) = exe_abi(std::process::id() as Pid);
        assert!(path.starts_with('/'), "{path}");
        assert_eq!(abi, None);
    }
}
