//! ptrace and seccomp, for `syncbench trace` (x86_64 Linux only).
//!
//! Why a seccomp filter: with plain `PTRACE_SYSCALL` every system call of the traced program stops twice
//! and the tracer's overhead distorts what it measures. A filter that returns `SECCOMP_RET_TRACE` only for
//! the calls the tracer cares about (fsync, fdatasync, ...) makes every other call run at full speed, and
//! unlike an `LD_PRELOAD` library it also sees statically linked programs and Go's raw syscalls.
//!
//! The filter is installed in the child between `fork` and `exec`, after `PTRACE_TRACEME`, so the child
//! is traced from its first instruction and every descendant inherits both the filter and the tracer.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// A process or thread id.
pub type Pid = libc::pid_t;

/// `AUDIT_ARCH_X86_64` from `<linux/audit.h>` (not in the libc crate): `EM_X86_64 | __AUDIT_ARCH_64BIT |
/// __AUDIT_ARCH_LE`.
const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;

/// Offsets into `struct seccomp_data`: `nr` at 0, `arch` at 4, `args[6]` (u64 each) from 16.
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;
const SECCOMP_DATA_ARGS: u32 = 16;

/// When a traced system call should stop for the tracer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopWhen {
    /// On every call.
    Always,
    /// Only when argument `arg` (0-based) has any of the bits in `mask` set (low 32 bits of the argument).
    AnyBitSet {
        /// Which argument (0..6).
        arg: u8,
        /// The bits to test.
        mask: u32,
    },
}

/// One system call the filter sends to the tracer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRule {
    /// The x86_64 system call number (`libc::SYS_*`).
    pub nr: i64,
    /// Condition on its arguments.
    pub when: StopWhen,
}

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt, jf, k }
}

/// The classic-BPF seccomp program for `rules`: stop for the tracer on a matching call, allow everything
/// else. Calls from other ABIs (i386, x32) are allowed untraced: the tracer decodes x86_64 only.
pub fn build_filter(rules: &[TraceRule]) -> Vec<libc::sock_filter> {
    use libc::{
        BPF_ABS, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W, SECCOMP_RET_ALLOW, SECCOMP_RET_TRACE,
    };
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let load = BPF_LD | BPF_W | BPF_ABS;
    let mut prog = vec![
        stmt(load, SECCOMP_DATA_ARCH),
        jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        stmt(load, SECCOMP_DATA_NR),
        // x32 calls share the arch value but carry this bit in nr.
        jump(BPF_JMP | BPF_JSET | BPF_K, X32_SYSCALL_BIT, 0, 1),
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    ];
    // Each rule: compare nr; on a match run its body, which always returns, so A still holds nr for the
    // next rule when it does not match.
    for rule in rules {
        let body = match rule.when {
            StopWhen::Always => vec![stmt(BPF_RET | BPF_K, SECCOMP_RET_TRACE)],
            StopWhen::AnyBitSet { arg, mask } => vec![
                // Little endian: the low 32 bits of args[arg] are at its offset.
                stmt(load, SECCOMP_DATA_ARGS + 8 * u32::from(arg)),
                jump(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1),
                stmt(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
                stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            ],
        };
        prog.push(jump(BPF_JMP | BPF_JEQ | BPF_K, rule.nr as u32, 0, body.len() as u8));
        prog.extend(body);
    }
    prog.push(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    prog
}

/// Spawn `argv` traced by this thread, with the seccomp `filter` installed just before `exec`.
///
/// The child stops with `SIGTRAP` right after a successful `exec`; call [`wait_exec_stop`] next, which
/// also reports a failed `exec` (program not found, not executable) as that error.
///
/// Why the child calls `execvp` itself instead of letting `Command` do it: once the filter is installed,
/// a filtered call made before the tracer has set its options fails with `ENOSYS`. `Command` reports an
/// exec failure by writing to a pipe, and aborts when that write fails, which under ptrace becomes a
/// stop nobody resumes. Here the child leaves with `_exit(errno)` instead, and makes no other call.
pub fn spawn_traced(argv: &[std::ffi::OsString], filter: Vec<libc::sock_filter>) -> io::Result<Pid> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let to_c = |s: &std::ffi::OsString| {
        CString::new(s.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "argument contains NUL"))
    };
    let c_args = argv.iter().map(to_c).collect::<io::Result<Vec<CString>>>()?;
    let Some(program) = c_args.first() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
    };
    let mut c_argv: Vec<*const libc::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
    c_argv.push(std::ptr::null());
    let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut libc::sock_filter };
    // Raw addresses so the closure is Send; all of them outlive `spawn`, which returns only after the
    // child has exec'd or exited.
    let (prog_addr, program_addr, argv_addr) =
        (&prog as *const libc::sock_fprog as usize, program.as_ptr() as usize, c_argv.as_ptr() as usize);
    let mut cmd = Command::new(&argv[0]);
    // SAFETY: the closure runs in the forked child before exec and makes only async-signal-safe system
    // calls (ptrace, prctl, seccomp, execvp, _exit); the pointers are valid as explained above.
    unsafe {
        cmd.pre_exec(move || {
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            install_filter(prog_addr as *const libc::sock_fprog)?;
            libc::execvp(program_addr as *const libc::c_char, argv_addr as *const *const libc::c_char);
            libc::_exit(*libc::__errno_location() & 0xff);
        });
    }
    let child = cmd.spawn()?;
    drop((filter, c_argv, c_args));
    Ok(child.id() as Pid)
}

/// Install a seccomp filter in the calling process. Root (CAP_SYS_ADMIN) may do so directly, which keeps
/// setuid programs working; anybody else needs `no_new_privs` first.
///
/// SAFETY: `prog` must point to a valid `sock_fprog`; only async-signal-safe calls are made.
unsafe fn install_filter(prog: *const libc::sock_fprog) -> io::Result<()> {
    // SAFETY: per the function contract, `prog` is valid for the duration of the call.
    unsafe {
        let rc = libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, prog);
        if rc == 0 {
            return Ok(());
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, prog) == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// The ptrace options `syncbench trace` uses: seccomp stops, follow fork/vfork/clone, report exec, mark
/// syscall stops, and kill every tracee if the tracer dies (a tracee left without its tracer would get
/// `ENOSYS` from every filtered call, i.e. silently lose durability).
pub const TRACE_OPTIONS: libc::c_int = libc::PTRACE_O_TRACESECCOMP
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACESYSGOOD
    | libc::PTRACE_O_EXITKILL;

/// Wait for the child spawned by [`spawn_traced`] to stop after its `exec`, then set [`TRACE_OPTIONS`].
/// The child is left stopped; resume it with [`resume`].
pub fn wait_exec_stop(pid: Pid) -> io::Result<()> {
    match wait_one(pid)? {
        (_, Stop::Signal(libc::SIGTRAP)) => set_options(pid, TRACE_OPTIONS),
        // The child's exit status carries execvp's errno (see `spawn_traced`).
        (_, Stop::Exited(errno)) => Err(io::Error::from_raw_os_error(errno)),
        (_, other) => Err(io::Error::other(format!("traced child did not stop after exec: {other:?}"))),
    }
}

fn set_options(pid: Pid, options: libc::c_int) -> io::Result<()> {
    // SAFETY: PTRACE_SETOPTIONS takes an integer in `data`; no memory is passed.
    check(unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, options as libc::c_long) })
}

fn check(rc: libc::c_long) -> io::Result<()> {
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// What `waitpid` reported about one tracee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The tracee exited with this status.
    Exited(i32),
    /// The tracee was killed by this signal.
    Killed(i32),
    /// A `SECCOMP_RET_TRACE` stop: a filtered call is about to run.
    Seccomp,
    /// A syscall stop (after resuming a seccomp stop with [`Resume::ToSyscallExit`]): the call returned.
    SyscallExit,
    /// `PTRACE_EVENT_FORK`, `VFORK` or `CLONE`: the tracee created a new task (id from [`event_msg`]).
    NewTask,
    /// `PTRACE_EVENT_EXEC`: the tracee exec'd a new program.
    Exec,
    /// Another ptrace event (`PTRACE_EVENT_*` number).
    OtherEvent(i32),
    /// Signal-delivery stop (or a new task's initial `SIGSTOP`).
    Signal(i32),
}

fn decode_status(status: libc::c_int) -> Stop {
    if libc::WIFEXITED(status) {
        return Stop::Exited(libc::WEXITSTATUS(status));
    }
    if libc::WIFSIGNALED(status) {
        return Stop::Killed(libc::WTERMSIG(status));
    }
    let sig = libc::WSTOPSIG(status);
    if sig == libc::SIGTRAP | 0x80 {
        return Stop::SyscallExit;
    }
    let event = (status >> 16) & 0xffff;
    match event {
        0 => Stop::Signal(sig),
        libc::PTRACE_EVENT_SECCOMP => Stop::Seccomp,
        libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => Stop::NewTask,
        libc::PTRACE_EVENT_EXEC => Stop::Exec,
        other => Stop::OtherEvent(other),
    }
}

fn wait_one(pid: Pid) -> io::Result<(Pid, Stop)> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer for the duration of the call.
        let got = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        if got >= 0 {
            return Ok((got, decode_status(status)));
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

/// Wait for the next stop or exit of any tracee; `None` when no tracee is left.
pub fn wait_any() -> io::Result<Option<(Pid, Stop)>> {
    match wait_one(-1) {
        Ok(got) => Ok(Some(got)),
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Ok(None),
        Err(e) => Err(e),
    }
}

/// How to resume a stopped tracee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Run until the next seccomp stop, event or signal (`PTRACE_CONT`).
    Continue,
    /// From a seccomp stop: run the call and stop again when it returns (`PTRACE_SYSCALL`).
    ToSyscallExit,
}

/// Resume a stopped tracee, delivering `signal` (0 for none). A tracee that vanished meanwhile (killed,
/// `ESRCH`) is not an error: its exit is reported by [`wait_any`].
pub fn resume(pid: Pid, how: Resume, signal: i32) -> io::Result<()> {
    let request = match how {
        Resume::Continue => libc::PTRACE_CONT,
        Resume::ToSyscallExit => libc::PTRACE_SYSCALL,
    };
    // SAFETY: the signal number is passed as an integer in `data`; no memory is passed.
    let rc = unsafe { libc::ptrace(request, pid, 0, signal as libc::c_long) };
    match check(rc) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        other => other,
    }
}

/// `PTRACE_GETEVENTMSG`: the new task's id after [`Stop::NewTask`].
pub fn event_msg(pid: Pid) -> io::Result<u64> {
    let mut msg: libc::c_ulong = 0;
    // SAFETY: `msg` is a valid out-pointer of the size the kernel writes.
    check(unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, pid, 0, &mut msg as *mut libc::c_ulong) })?;
    Ok(msg as u64)
}

/// A stopped tracee's registers, read at a seccomp or syscall-exit stop.
#[derive(Clone, Copy)]
pub struct SyscallRegs(libc::user_regs_struct);

impl std::fmt::Debug for SyscallRegs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyscallRegs").field("nr", &self.nr()).field("args", &self.args()).finish()
    }
}

impl SyscallRegs {
    /// The system call number (`orig_rax`).
    pub fn nr(&self) -> i64 {
        self.0.orig_rax as i64
    }

    /// The six arguments, in order (`rdi, rsi, rdx, r10, r8, r9`).
    pub fn args(&self) -> [u64; 6] {
        let r = &self.0;
        [r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9]
    }

    /// The return value (`rax`; at a syscall-exit stop, `-errno` on failure).
    pub fn ret(&self) -> i64 {
        self.0.rax as i64
    }

    /// Skip the call: it does not run and appears to return `ret` (used by `--no-sync`).
    pub fn skip_with(&mut self, ret: i64) {
        self.0.orig_rax = u64::MAX; // -1: no such call
        self.0.rax = ret as u64;
    }

    /// Replace argument `index` (0..6).
    pub fn set_arg(&mut self, index: usize, value: u64) {
        let r = &mut self.0;
        match index {
            0 => r.rdi = value,
            1 => r.rsi = value,
            2 => r.rdx = value,
            3 => r.r10 = value,
            4 => r.r8 = value,
            _ => r.r9 = value,
        }
    }
}

/// `PTRACE_GETREGS`.
pub fn get_regs(pid: Pid) -> io::Result<SyscallRegs> {
    // SAFETY: user_regs_struct is plain integers; all-zero is a valid value.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    // SAFETY: `regs` is a valid out-pointer of the size the kernel writes.
    check(unsafe { libc::ptrace(libc::PTRACE_GETREGS, pid, 0, &mut regs as *mut libc::user_regs_struct) })?;
    Ok(SyscallRegs(regs))
}

/// `PTRACE_SETREGS`.
pub fn set_regs(pid: Pid, regs: &SyscallRegs) -> io::Result<()> {
    // SAFETY: `regs` is a valid in-pointer for the duration of the call.
    check(unsafe { libc::ptrace(libc::PTRACE_SETREGS, pid, 0, &regs.0 as *const libc::user_regs_struct) })
}

/// Read `buf.len()` bytes of the tracee's memory at `addr` (`process_vm_readv`).
pub fn read_memory(pid: Pid, addr: u64, buf: &mut [u8]) -> io::Result<()> {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: `local` describes `buf`, which is valid for writes; the remote side is checked by the kernel.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != buf.len() {
        return Err(io::Error::other(format!("short read of tracee memory: {n} of {} bytes", buf.len())));
    }
    Ok(())
}

/// Write one 8-byte word into the stopped tracee's memory at `addr` (`PTRACE_POKEDATA`).
pub fn write_word(pid: Pid, addr: u64, value: u64) -> io::Result<()> {
    // SAFETY: POKEDATA takes the address and the word as integers; the kernel checks the address.
    check(unsafe { libc::ptrace(libc::PTRACE_POKEDATA, pid, addr as *mut libc::c_void, value as *mut libc::c_void) })
}

/// Set the nice value of the calling thread only (Linux applies `PRIO_PROCESS` with a thread id to that
/// thread). The tracer raises its own priority after spawning, so the traced programs keep theirs.
pub fn set_this_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: gettid and setpriority take and return integers only.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Send `signal` to process `pid` (used to pass Ctrl-C on to the traced command).
pub fn send_signal(pid: Pid, signal: i32) -> io::Result<()> {
    // SAFETY: kill takes integers only.
    if unsafe { libc::kill(pid, signal) } == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_has_one_compare_per_rule_and_ends_in_allow() {
        let rules = [
            TraceRule { nr: libc::SYS_fsync, when: StopWhen::Always },
            TraceRule { nr: libc::SYS_openat, when: StopWhen::AnyBitSet { arg: 2, mask: libc::O_DSYNC as u32 } },
        ];
        let prog = build_filter(&rules);
        assert_eq!(prog.len(), 6 + (1 + 1) + (1 + 4) + 1);
        let last = prog.last().unwrap();
        assert_eq!(u32::from(last.code), libc::BPF_RET | libc::BPF_K);
        assert_eq!(last.k, libc::SECCOMP_RET_ALLOW);
        let fsync_cmp = &prog[6];
        assert_eq!(fsync_cmp.k, libc::SYS_fsync as u32);
        assert_eq!(fsync_cmp.jf, 1);
        let openat_cmp = &prog[8];
        assert_eq!(openat_cmp.jf, 4);
        assert_eq!(prog[9].k, SECCOMP_DATA_ARGS + 16);
    }

    #[test]
    fn exec_failure_is_reported_with_its_errno() {
        let filter = build_filter(&[TraceRule { nr: libc::SYS_write, when: StopWhen::Always }]);
        let pid = spawn_traced(&["/nonexistent/syncbench-test-program".into()], filter).unwrap();
        let err = wait_exec_stop(pid).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    fn traced_child_stops_on_filtered_call_only() {
        // `true` makes no fsync: it must run to completion with no seccomp stop.
        let filter = build_filter(&[TraceRule { nr: libc::SYS_fsync, when: StopWhen::Always }]);
        let pid = match spawn_traced(&["true".into()], filter) {
            Ok(pid) => pid,
            Err(e) => {
                eprintln!("skipping: cannot spawn a traced child here: {e}");
                return;
            }
        };
        wait_exec_stop(pid).unwrap();
        resume(pid, Resume::Continue, 0).unwrap();
        loop {
            // wait_one(pid), not wait_any(): other tests in this binary may have children of their own.
            let (got, stop) = wait_one(pid).unwrap();
            assert_eq!(got, pid);
            match stop {
                Stop::Exited(code) => {
                    assert_eq!(code, 0);
                    break;
                }
                Stop::Signal(sig) => resume(pid, Resume::Continue, sig).unwrap(),
                other => panic!("unexpected stop {other:?}"),
            }
        }
    }
}
