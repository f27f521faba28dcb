//! What a stopped system call means to the tracer: decoded from its number and arguments (pure code).

/// A durability call as reported to the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SyncCall {
    /// `fsync(fd)`.
    Fsync,
    /// `fdatasync(fd)`.
    Fdatasync,
    /// `sync_file_range(fd, ...)` (not durable: no device flush, no metadata).
    SyncFileRange,
    /// `msync(addr, len, MS_SYNC)`.
    Msync,
    /// `syncfs(fd)`: the whole file system holding fd.
    Syncfs,
    /// `sync()`: every file system.
    Sync,
    /// A write on a descriptor opened with `O_DSYNC`.
    WriteOdsync,
    /// A write on a descriptor opened with `O_SYNC`.
    WriteOsync,
    /// `pwritev2(..., RWF_DSYNC)`.
    Pwritev2Dsync,
    /// `pwritev2(..., RWF_SYNC)`.
    Pwritev2Sync,
}

impl SyncCall {
    /// The name shown in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            SyncCall::Fsync => "fsync",
            SyncCall::Fdatasync => "fdatasync",
            SyncCall::SyncFileRange => "sync_file_range",
            SyncCall::Msync => "msync(MS_SYNC)",
            SyncCall::Syncfs => "syncfs",
            SyncCall::Sync => "sync",
            SyncCall::WriteOdsync => "write(O_DSYNC)",
            SyncCall::WriteOsync => "write(O_SYNC)",
            SyncCall::Pwritev2Dsync => "pwritev2(RWF_DSYNC)",
            SyncCall::Pwritev2Sync => "pwritev2(RWF_SYNC)",
        }
    }

    /// Whether the call makes the written bytes durable by itself (writes), rather than syncing earlier
    /// writes (fsync and friends).
    pub fn is_durable_write(self) -> bool {
        matches!(self, SyncCall::WriteOdsync | SyncCall::WriteOsync | SyncCall::Pwritev2Dsync | SyncCall::Pwritev2Sync)
    }
}

/// The synchronous-write flag a descriptor was opened with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpenSyncFlag {
    /// Neither `O_SYNC` nor `O_DSYNC`.
    None,
    /// `O_DSYNC`.
    Dsync,
    /// `O_SYNC` (which includes the `O_DSYNC` bit).
    Sync,
}

impl OpenSyncFlag {
    /// Classify open flags.
    pub fn of_flags(flags: u64) -> OpenSyncFlag {
        let sync = libc::O_SYNC as u64;
        let dsync = libc::O_DSYNC as u64;
        if flags & sync == sync {
            OpenSyncFlag::Sync
        } else if flags & dsync != 0 {
            OpenSyncFlag::Dsync
        } else {
            OpenSyncFlag::None
        }
    }

    /// The durable-write call a plain write on such a descriptor is.
    pub fn write_call(self) -> Option<SyncCall> {
        match self {
            OpenSyncFlag::None => None,
            OpenSyncFlag::Dsync => Some(SyncCall::WriteOdsync),
            OpenSyncFlag::Sync => Some(SyncCall::WriteOsync),
        }
    }
}

/// Bits of the open flags `--no-sync` strips.
pub const OPEN_SYNC_BITS: u64 = (libc::O_SYNC | libc::O_DSYNC) as u64;
/// Bits of `pwritev2` flags that make a write durable.
pub const RWF_SYNC_BITS: u64 = (libc::RWF_DSYNC | libc::RWF_SYNC) as u64;

/// How many bytes a write asks to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteLen {
    /// `write`/`pwrite64`: the count argument.
    Count(u64),
    /// `writev`/`pwritev`/`pwritev2`: an iovec array in the tracee (address, entries).
    Iovec(u64, u64),
}

/// A stopped call, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// fsync, fdatasync, sync_file_range, syncfs on `fd`; msync at `addr`; sync (no fd).
    Sync {
        /// Which call.
        call: SyncCall,
        /// The descriptor, when the call has one.
        fd: Option<i32>,
        /// The mapped address (msync).
        addr: Option<u64>,
    },
    /// A write of any kind; `rwf` holds pwritev2's flags (0 for the others).
    Write {
        /// The descriptor.
        fd: i32,
        /// Its length.
        len: WriteLen,
        /// pwritev2 flags.
        rwf: u64,
    },
    /// open/openat with `O_SYNC` or `O_DSYNC`: `flags_arg` is the argument index holding the flags.
    OpenSync {
        /// Argument index of the flags.
        flags_arg: usize,
        /// The flags.
        flags: u64,
    },
    /// io_uring_setup: whatever the program later submits through the ring (fsync, `RWF_DSYNC` writes)
    /// makes no system call the tracer could see.
    IoUringSetup,
    /// openat2: its flags are in `struct open_how` at this address (first field, u64).
    Openat2 {
        /// Address of `struct open_how` in the tracee.
        how_addr: u64,
    },
    /// A descriptor stops meaning what it meant: close, or the target of dup2/dup3.
    Forget {
        /// The descriptor.
        fd: i32,
    },
    /// close_range(first, last).
    ForgetRange {
        /// First descriptor.
        first: u64,
        /// Last descriptor (inclusive).
        last: u64,
    },
    /// A call the filter should not have sent (or a write whose flags do not matter).
    Other,
}

/// Decode a stopped call from its x86_64 number and arguments.
pub fn decode(nr: i64, args: [u64; 6]) -> Entry {
    let fd = args[0] as i32;
    let sync = |call| Entry::Sync { call, fd: Some(fd), addr: None };
    match nr {
        libc::SYS_fsync => sync(SyncCall::Fsync),
        libc::SYS_fdatasync => sync(SyncCall::Fdatasync),
        libc::SYS_sync_file_range => sync(SyncCall::SyncFileRange),
        libc::SYS_syncfs => sync(SyncCall::Syncfs),
        libc::SYS_sync => Entry::Sync { call: SyncCall::Sync, fd: None, addr: None },
        libc::SYS_msync if args[2] & libc::MS_SYNC as u64 != 0 => {
            Entry::Sync { call: SyncCall::Msync, fd: None, addr: Some(args[0]) }
        }
        libc::SYS_write | libc::SYS_pwrite64 => Entry::Write { fd, len: WriteLen::Count(args[2]), rwf: 0 },
        libc::SYS_writev | libc::SYS_pwritev => Entry::Write { fd, len: WriteLen::Iovec(args[1], args[2]), rwf: 0 },
        libc::SYS_pwritev2 => Entry::Write { fd, len: WriteLen::Iovec(args[1], args[2]), rwf: args[5] },
        libc::SYS_open if args[1] & OPEN_SYNC_BITS != 0 => Entry::OpenSync { flags_arg: 1, flags: args[1] },
        libc::SYS_openat if args[2] & OPEN_SYNC_BITS != 0 => Entry::OpenSync { flags_arg: 2, flags: args[2] },
        libc::SYS_openat2 => Entry::Openat2 { how_addr: args[2] },
        libc::SYS_close => Entry::Forget { fd },
        libc::SYS_dup2 | libc::SYS_dup3 => Entry::Forget { fd: args[1] as i32 },
        libc::SYS_close_range => Entry::ForgetRange { first: args[0], last: args[1] },
        libc::SYS_io_uring_setup => Entry::IoUringSetup,
        _ => Entry::Other,
    }
}

/// The durable-write call a `pwritev2` with these flags is, if any.
pub fn rwf_call(rwf: u64) -> Option<SyncCall> {
    if rwf & libc::RWF_SYNC as u64 != 0 {
        Some(SyncCall::Pwritev2Sync)
    } else if rwf & libc::RWF_DSYNC as u64 != 0 {
        Some(SyncCall::Pwritev2Dsync)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o_sync_is_not_mistaken_for_o_dsync() {
        assert_eq!(OpenSyncFlag::of_flags(libc::O_SYNC as u64 | 2), OpenSyncFlag::Sync);
        assert_eq!(OpenSyncFlag::of_flags(libc::O_DSYNC as u64 | 2), OpenSyncFlag::Dsync);
        assert_eq!(OpenSyncFlag::of_flags(libc::O_DIRECT as u64 | 2), OpenSyncFlag::None);
    }

    #[test]
    fn decodes_sync_calls_with_their_descriptor() {
        let e = decode(libc::SYS_fdatasync, [7, 0, 0, 0, 0, 0]);
        assert_eq!(e, Entry::Sync { call: SyncCall::Fdatasync, fd: Some(7), addr: None });
        let e = decode(libc::SYS_msync, [0x1000, 4096, libc::MS_SYNC as u64, 0, 0, 0]);
        assert_eq!(e, Entry::Sync { call: SyncCall::Msync, fd: None, addr: Some(0x1000) });
        assert_eq!(decode(libc::SYS_msync, [0x1000, 4096, libc::MS_ASYNC as u64, 0, 0, 0]), Entry::Other);
    }

    #[test]
    fn decodes_open_flags_and_dup_targets() {
        let flags = (libc::O_WRONLY | libc::O_DSYNC) as u64;
        assert_eq!(decode(libc::SYS_openat, [0, 0, flags, 0, 0, 0]), Entry::OpenSync { flags_arg: 2, flags });
        assert_eq!(decode(libc::SYS_openat, [0, 0, libc::O_WRONLY as u64, 0, 0, 0]), Entry::Other);
        assert_eq!(decode(libc::SYS_dup2, [3, 9, 0, 0, 0, 0]), Entry::Forget { fd: 9 });
    }

    #[test]
    fn io_uring_setup_is_recognised() {
        assert_eq!(decode(libc::SYS_io_uring_setup, [8, 0x1000, 0, 0, 0, 0]), Entry::IoUringSetup);
        assert_eq!(decode(libc::SYS_io_uring_enter, [3, 1, 0, 0, 0, 0]), Entry::Other);
    }

    #[test]
    fn pwritev2_flags_pick_the_call() {
        assert_eq!(rwf_call(libc::RWF_DSYNC as u64), Some(SyncCall::Pwritev2Dsync));
        assert_eq!(rwf_call((libc::RWF_SYNC | libc::RWF_DSYNC) as u64), Some(SyncCall::Pwritev2Sync));
        assert_eq!(rwf_call(libc::RWF_HIPRI as u64), None);
    }
}
