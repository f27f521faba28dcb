//! Running the durable-write methods against a file: what one commit of each method does. The vocabulary
//! (names, durability, flags) is `syncbench_storage::method`, shared with the engine's log.

use std::io;
use std::path::Path;
use syncbench_sys::Uring;
use syncbench_sys::{fdatasync, fsync, pwrite_all, pwritev2_all, sync_file_range_wait};

pub use syncbench_engine::storage::method::{SyncCall, SyncMethod, WriteCall};

/// Opening a file for a method's commits (the vocabulary lives in the storage crate, the running here).
pub trait OpenMethod {
    /// Open `path` (a file syncbench created) for this method's commits.
    fn open(self, path: &Path) -> Result<MethodFile, MethodError>;
}

impl OpenMethod for SyncMethod {
    fn open(self, path: &Path) -> Result<MethodFile, MethodError> {
        let fd = syncbench_sys::open_existing(path, self.open_flags()).map_err(|e| MethodError::Open(self, e))?;
        let ring = match self.write_call() {
            WriteCall::UringLinkedFdatasync => Some(Uring::new().map_err(MethodError::Uring)?),
            _ => None,
        };
        Ok(MethodFile { method: self, fd, ring })
    }
}

/// Why a method could not be set up.
#[derive(Debug)]
pub enum MethodError {
    /// `open` refused the method's flags.
    Open(SyncMethod, io::Error),
    /// io_uring could not be set up.
    Uring(io::Error),
}

impl MethodError {
    /// The underlying error.
    pub fn io(&self) -> &io::Error {
        match self {
            MethodError::Open(_, e) | MethodError::Uring(e) => e,
        }
    }
}

/// A file opened for one method: runs that method's commits.
pub struct MethodFile {
    method: SyncMethod,
    fd: std::os::fd::OwnedFd,
    ring: Option<Uring>,
}

impl MethodFile {
    /// The open descriptor (to check its flags).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_fd()
    }

    /// One commit: write `buf` split into `offsets.len()` equal chunks, chunk `i` at `offsets[i]`, then sync
    /// as the method does. Every result is checked; the first error ends the commit.
    pub fn commit(&mut self, buf: &[u8], offsets: &[u64]) -> io::Result<()> {
        let chunk = buf.len() / offsets.len().max(1);
        let last = offsets.len().saturating_sub(1);
        for (i, offset) in offsets.iter().enumerate() {
            let data = &buf[i * chunk..(i + 1) * chunk];
            match (self.method.write_call(), &mut self.ring) {
                (WriteCall::Pwrite, _) => pwrite_all(&self.fd, data, *offset)?,
                (WriteCall::Pwritev2(flag), _) => pwritev2_all(&self.fd, data, *offset, flag)?,
                // Earlier writes go through pwrite: the linked fdatasync after the last one covers them all.
                (WriteCall::UringLinkedFdatasync, Some(ring)) if i == last => {
                    ring.write_then_fdatasync(&self.fd, data, *offset)?
                }
                (WriteCall::UringLinkedFdatasync, _) => pwrite_all(&self.fd, data, *offset)?,
            }
        }
        match self.method.sync_call() {
            SyncCall::None => Ok(()),
            SyncCall::Fsync => fsync(&self.fd),
            SyncCall::Fdatasync => fdatasync(&self.fd),
            SyncCall::SyncFileRange => {
                let start = offsets.iter().min().copied().unwrap_or(0);
                let end = offsets.iter().map(|o| o + chunk as u64).max().unwrap_or(0);
                sync_file_range_wait(&self.fd, start, end - start)
            }
        }
    }

    /// fsync whatever the case left dirty, outside any timing, so it cannot slow the next case down.
    pub fn settle(&self) -> io::Result<()> {
        fsync(&self.fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use syncbench_sys::OpenFlags;

    #[test]
    fn every_method_opens_with_the_flags_it_claims() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".syncbench-flags");
        drop(syncbench_sys::create_new(&path, OpenFlags::BUFFERED).unwrap());
        let sync_bits = (libc::O_SYNC | libc::O_DSYNC) as u32;
        for m in SyncMethod::ALL {
            let file = match m.open(&path) {
                Ok(f) => f,
                Err(e) if m.is_direct() || matches!(e, MethodError::Uring(_)) => {
                    eprintln!("skipping {}: {:?}", m.name(), e.io());
                    continue;
                }
                Err(e) => panic!("{}: {:?}", m.name(), e.io()),
            };
            let got = syncbench_sys::fdinfo_flags(file.fd().as_fd()).unwrap();
            let want_sync = match m {
                SyncMethod::OpenDatasync | SyncMethod::OpenDatasyncDirect => libc::O_DSYNC as u32,
                SyncMethod::OpenSync | SyncMethod::OpenSyncDirect => libc::O_SYNC as u32,
                _ => 0,
            };
            assert_eq!(got & sync_bits, want_sync, "{}: fdinfo flags {got:o}", m.name());
            assert_eq!(got & libc::O_DIRECT as u32 != 0, m.name().contains("direct"), "{}: {got:o}", m.name());
            assert_eq!(got & 0o3, libc::O_RDWR as u32, "{}", m.name());
        }
    }

    #[test]
    fn a_commit_writes_every_chunk_where_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".syncbench-commit");
        drop(syncbench_sys::create_new(&path, OpenFlags::BUFFERED).unwrap());
        for m in SyncMethod::ALL.into_iter().filter(|m| !m.is_direct()) {
            let mut file = match m.open(&path) {
                Ok(f) => f,
                Err(MethodError::Uring(e)) => {
                    eprintln!("skipping {}: {e}", m.name());
                    continue;
                }
                Err(e) => panic!("{}: {:?}", m.name(), e.io()),
            };
            let buf: Vec<u8> = (0..64u8).collect();
            file.commit(&buf, &[100, 0]).unwrap();
            file.settle().unwrap();
            let back = std::fs::read(&path).unwrap();
            assert_eq!(&back[100..132], &buf[..32], "{}", m.name());
            assert_eq!(&back[0..32], &buf[32..], "{}", m.name());
            std::fs::write(&path, b"").unwrap();
        }
    }
}
