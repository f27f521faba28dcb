//! io_uring: a write linked to an fdatasync, so the sync really covers the write.
//!
//! Without `IO_LINK` the kernel may complete the fsync before the write (observed on this project's
//! machine), and a benchmark would time a sync of nothing.

use io_uring::{IoUring, opcode, squeue, types};
use rustix::fd::{AsFd, AsRawFd};
use std::io;

const WRITE_TAG: u64 = 1;
const SYNC_TAG: u64 = 2;

/// A two-entry ring that submits `write → fdatasync` as a linked pair.
pub struct Uring {
    ring: IoUring,
}

impl Uring {
    /// Create the ring. `ENOSYS`/`EPERM` mean io_uring is unavailable (old kernel, disabled by
    /// `kernel.io_uring_disabled`, or a seccomp filter).
    pub fn new() -> io::Result<Uring> {
        Ok(Uring { ring: IoUring::new(4)? })
    }

    /// Write all of `buf` at `offset`, linked to an `fdatasync` of `fd`; returns when both completed.
    /// A short write is an error (the linked sync is then cancelled by the kernel).
    pub fn write_then_fdatasync(&mut self, fd: impl AsFd, buf: &[u8], offset: u64) -> io::Result<()> {
        let raw = types::Fd(fd.as_fd().as_raw_fd());
        let len = u32::try_from(buf.len()).map_err(|_| io::Error::other("write larger than 4 GiB"))?;
        let write = opcode::Write::new(raw, buf.as_ptr(), len)
            .offset(offset)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(WRITE_TAG);
        let sync = opcode::Fsync::new(raw).flags(types::FsyncFlags::DATASYNC).build().user_data(SYNC_TAG);
        // SAFETY: `buf` outlives the submission because we wait for both completions before returning,
        // and the descriptor is borrowed for the whole call.
        unsafe {
            let mut sq = self.ring.submission();
            sq.push(&write).map_err(|_| io::Error::other("io_uring submission queue full"))?;
            sq.push(&sync).map_err(|_| io::Error::other("io_uring submission queue full"))?;
        }
        self.submit_and_wait_both(buf.len())
    }

    fn submit_and_wait_both(&mut self, want_len: usize) -> io::Result<()> {
        let mut seen = 0;
        let mut first_err: Option<io::Error> = None;
        while seen < 2 {
            match self.ring.submit_and_wait(2 - seen) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
            for cqe in self.ring.completion() {
                seen += 1;
                let res = cqe.result();
                let err = if res < 0 {
                    Some(io::Error::from_raw_os_error(-res))
                } else if cqe.user_data() == WRITE_TAG && res as usize != want_len {
                    Some(io::Error::other(format!("io_uring write was short: {res} of {want_len} bytes")))
                } else {
                    None
                };
                if first_err.is_none() {
                    first_err = err;
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpenFlags, create_new, pread_exact};

    #[test]
    fn linked_write_and_sync() {
        let mut ring = match Uring::new() {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipping: io_uring unavailable here: {e}");
                return;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let fd = create_new(&dir.path().join("x"), OpenFlags::BUFFERED).unwrap();
        ring.write_then_fdatasync(&fd, b"abcdef", 3).unwrap();
        let mut back = [0u8; 6];
        pread_exact(&fd, &mut back, 3).unwrap();
        assert_eq!(&back, b"abcdef");
    }

    #[test]
    fn errors_come_back() {
        let Ok(mut ring) = Uring::new() else { return };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"").unwrap();
        let ro = crate::open_read_only(&path).unwrap();
        let err = ring.write_then_fdatasync(&ro, b"abc", 0).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EBADF));
    }
}
