//! The `syscalls:` tracepoints both in-kernel readers of `trace --pid` use (the perf reader in `attach`,
//! the eBPF programs in `inkernel`): which calls are recorded, and the one record layout they share.

use std::io;
use syncbench_sys::tracefs::{EventFormat, Tracefs};

/// Calls whose entry and exit are both recorded (timed, or their result names a descriptor), with the
/// name of their tracepoints (`syscalls:sys_enter_NAME`, `sys_exit_NAME`).
pub(crate) const TIMED: [(i64, &str); 14] = [
    (libc::SYS_fsync, "fsync"),
    (libc::SYS_fdatasync, "fdatasync"),
    (libc::SYS_sync_file_range, "sync_file_range"),
    (libc::SYS_msync, "msync"),
    (libc::SYS_syncfs, "syncfs"),
    (libc::SYS_sync, "sync"),
    (libc::SYS_write, "write"),
    (libc::SYS_pwrite64, "pwrite64"),
    (libc::SYS_writev, "writev"),
    (libc::SYS_pwritev, "pwritev"),
    (libc::SYS_pwritev2, "pwritev2"),
    (libc::SYS_open, "open"),
    (libc::SYS_openat, "openat"),
    (libc::SYS_openat2, "openat2"),
];
/// Calls whose entry alone matters (a descriptor number stops meaning what it meant; io_uring warning).
pub(crate) const ENTRY_ONLY: [(i64, &str); 5] = [
    (libc::SYS_close, "close"),
    (libc::SYS_dup2, "dup2"),
    (libc::SYS_dup3, "dup3"),
    (libc::SYS_close_range, "close_range"),
    (libc::SYS_io_uring_setup, "io_uring_setup"),
];
/// The writes (left out with `--syncs-only`, except `pwritev2`, whose flags can make it durable).
pub(crate) const PLAIN_WRITES: [i64; 4] = [libc::SYS_write, libc::SYS_pwrite64, libc::SYS_writev, libc::SYS_pwritev];
/// The opens, whose exits wake the reader at once so the new descriptor is named while surely open.
pub(crate) const OPENS: [i64; 3] = [libc::SYS_open, libc::SYS_openat, libc::SYS_openat2];

/// The syscall record layout, the same for every `syscalls:` tracepoint: nr at 8, then the arguments
/// (enter) or `ret` (exit) as 8-byte words from 16 (an argument the call does not have reads as 0).
/// Checked against each format when opening.
pub(crate) const NR_OFFSET: usize = 8;
pub(crate) const ARGS_OFFSET: usize = 16;

/// `syscalls:{sys_enter,sys_exit}_NAME`, checked to have the layout decoded here: the call number at 8,
/// then the arguments (enter) or `ret` (exit) as 8-byte words from 16.
pub(crate) fn syscall_event(tracefs: &Tracefs, which: &str, name: &str) -> io::Result<EventFormat> {
    let format = tracefs.event("syscalls", &format!("{which}_{name}"))?;
    let first = format.fields.values().filter(|f| f.offset > NR_OFFSET).map(|f| (f.offset, f.size)).min();
    let nr = format.field("__syscall_nr")?;
    if nr.offset != NR_OFFSET || first.is_some_and(|(offset, size)| offset != ARGS_OFFSET || size != 8) {
        return Err(io::Error::other(format!("tracepoint syscalls:{which}_{name} has an unexpected layout")));
    }
    Ok(format)
}
