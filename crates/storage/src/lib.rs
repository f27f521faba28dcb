//! The storage the reference engine runs on: a small, Linux-shaped file API.
//!
//! The engine never calls the OS directly. `RealStorage` maps each call onto `syncbench-sys` (one
//! implementation of every syscall, shared with the benchmark); `syncbench-simfs` implements the same
//! trait with a model of a page cache that can crash, tear sectors and fail fsyncs.
//!
//! The contract mirrors what Linux promises, no more:
//! - `write_at` on a file opened without `dsync` is NOT durable until `sync_data`/`sync_all` returns Ok;
//! - a create, rename or remove is NOT durable until `sync_dir` of the parent directory returns Ok;
//! - after a sync error the state of the data is unknown: callers must not retry (fail-stop).

#![forbid(unsafe_code)]

pub mod method;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How a log or data file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FileOptions {
    /// `O_DSYNC`: each write is durable on return.
    pub dsync: bool,
    /// `O_DIRECT`: bypass the page cache (buffers, offsets and lengths must be aligned).
    pub direct: bool,
}

/// How one write is made durable, beyond the file's open flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteSync {
    /// Plain write: durable only after a later sync.
    None,
    /// `pwritev2(RWF_DSYNC)`: this write is durable on return.
    Dsync,
    /// Write linked to an fdatasync in one submission (io_uring): durable on return.
    LinkedFdatasync,
    /// `pwritev2(RWF_ATOMIC | RWF_DSYNC)`: untorn and durable on return.
    AtomicDsync,
}

/// An open file.
#[allow(clippy::len_without_is_empty)] // a file, not a collection
pub trait StorageFile: Send + Sync {
    /// Read exactly `buf.len()` bytes at `offset` (error past end of file).
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Write all of `buf` at `offset`, made durable as `sync` says.
    fn write_at(&self, buf: &[u8], offset: u64, sync: WriteSync) -> io::Result<()>;
    /// `fdatasync`.
    fn sync_data(&self) -> io::Result<()>;
    /// `fsync`.
    fn sync_all(&self) -> io::Result<()>;
    /// Current size in bytes.
    fn len(&self) -> io::Result<u64>;
    /// `ftruncate` (the new size is durable only after `sync_all`).
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Prepare the file for `WriteSync::LinkedFdatasync` writes (the real file sets up an io_uring).
    /// Storage that needs no setup keeps this default.
    fn enable_linked_sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Create `dir` and any missing parents, fsyncing the parent of each directory created so its name
/// survives a power cut (a create is durable only after its directory is synced).
pub fn create_dir_durably<S: Storage + ?Sized>(storage: &S, dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    for level in dir.ancestors() {
        // The root (no parent) always exists, whether or not a storage backend tracks it.
        if level.as_os_str().is_empty() || level.parent().is_none() || storage.exists(level)? {
            break;
        }
        missing.push(level);
    }
    if missing.is_empty() {
        return Ok(());
    }
    storage.create_dir_all(dir)?;
    for level in missing.iter().rev() {
        let parent = level.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        storage.sync_dir(parent)?;
    }
    Ok(())
}

/// A directory tree of files.
pub trait Storage: Send + Sync {
    /// The open-file type.
    type File: StorageFile + 'static;
    /// Create a new file (`O_CREAT | O_EXCL`); fails if it exists.
    fn create_new(&self, path: &Path, opts: FileOptions) -> io::Result<Self::File>;
    /// Open an existing file read-write.
    fn open(&self, path: &Path, opts: FileOptions) -> io::Result<Self::File>;
    /// Atomically rename `from` to `to` (replacing `to`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Remove a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Make creates, renames and removes in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Create a directory (and its parents) if missing.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The files directly in `dir`, sorted by name.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Whether a file exists at `path`.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// A hint for simulators: the engine is about to do something worth crashing near (e.g. `"dw_flush"`
    /// right before a write to the double-write area). A simulator may note `tag` on its operation
    /// timeline; real storage ignores it. Never affects what is stored.
    fn mark(&self, _tag: &'static str) {}
}

/// The real file system, through `syncbench-sys`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealStorage;

/// A real open file.
pub struct RealFile {
    fd: std::os::fd::OwnedFd,
    ring: Option<Mutex<syncbench_sys::Uring>>,
}

fn open_flags(opts: FileOptions) -> syncbench_sys::OpenFlags {
    syncbench_sys::OpenFlags {
        sync: if opts.dsync { syncbench_sys::OpenSync::Dsync } else { syncbench_sys::OpenSync::None },
        direct: opts.direct,
    }
}

impl RealFile {
    fn new(fd: std::os::fd::OwnedFd) -> RealFile {
        RealFile { fd, ring: None }
    }

    fn linked_write(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let Some(ring) = &self.ring else {
            return Err(io::Error::other("io_uring was not set up for this file"));
        };
        let mut ring = ring.lock().map_err(|_| io::Error::other("io_uring lock poisoned"))?;
        ring.write_then_fdatasync(&self.fd, buf, offset)
    }

    /// Set up an io_uring for `WriteSync::LinkedFdatasync` writes on this file.
    pub fn enable_uring(&mut self) -> io::Result<()> {
        self.ring = Some(Mutex::new(syncbench_sys::Uring::new()?));
        Ok(())
    }
}

impl StorageFile for RealFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        syncbench_sys::pread_exact(&self.fd, buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64, sync: WriteSync) -> io::Result<()> {
        use syncbench_sys::RwFlag;
        match sync {
            WriteSync::None => syncbench_sys::pwrite_all(&self.fd, buf, offset),
            WriteSync::Dsync => syncbench_sys::pwritev2_all(&self.fd, buf, offset, RwFlag::Dsync),
            WriteSync::AtomicDsync => syncbench_sys::pwritev2_all(&self.fd, buf, offset, RwFlag::AtomicDsync),
            WriteSync::LinkedFdatasync => self.linked_write(buf, offset),
        }
    }

    fn sync_data(&self) -> io::Result<()> {
        syncbench_sys::fdatasync(&self.fd)
    }

    fn sync_all(&self) -> io::Result<()> {
        syncbench_sys::fsync(&self.fd)
    }

    fn len(&self) -> io::Result<u64> {
        syncbench_sys::file_len(&self.fd)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        syncbench_sys::set_len(&self.fd, len)
    }

    fn enable_linked_sync(&mut self) -> io::Result<()> {
        self.enable_uring()
    }
}

impl Storage for RealStorage {
    type File = RealFile;

    fn create_new(&self, path: &Path, opts: FileOptions) -> io::Result<RealFile> {
        Ok(RealFile::new(syncbench_sys::create_new(path, open_flags(opts))?))
    }

    fn open(&self, path: &Path, opts: FileOptions) -> io::Result<RealFile> {
        Ok(RealFile::new(syncbench_sys::open_existing(path, open_flags(opts))?))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        syncbench_sys::fsync_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                out.push(entry.path());
            }
        }
        out.sort();
        Ok(out)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_storage_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let s = RealStorage;
        let p = dir.path().join("a");
        let f = s.create_new(&p, FileOptions::default()).unwrap();
        assert!(s.create_new(&p, FileOptions::default()).is_err());
        f.write_at(b"abc", 0, WriteSync::None).unwrap();
        f.write_at(b"def", 3, WriteSync::Dsync).unwrap();
        f.sync_data().unwrap();
        f.sync_all().unwrap();
        s.sync_dir(dir.path()).unwrap();
        let mut buf = [0u8; 6];
        f.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"abcdef");
        let q = dir.path().join("b");
        s.rename(&p, &q).unwrap();
        assert!(!s.exists(&p).unwrap());
        assert_eq!(s.list(dir.path()).unwrap(), vec![q.clone()]);
        s.remove(&q).unwrap();
    }
}
