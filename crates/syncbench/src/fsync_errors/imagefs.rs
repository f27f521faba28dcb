//! A FUSE file system of our own that serves one disk image file, passing reads and writes through to a
//! backing file, except the writes a [`FaultSwitch`] says to fail with EIO.
//!
//! Every open is `direct_io`, so the kernel keeps no page cache of the image on the FUSE side: each write
//! the loop device issues reaches [`ImageFs::write`], and a failed one is reported back to the file system
//! above exactly like a failing disk sector.

use super::fault::FaultSwitch;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::time::{Duration, UNIX_EPOCH};

/// The name of the one file the FUSE mount serves.
pub const IMAGE_NAME: &str = "image";

const IMAGE_INO: INodeNo = INodeNo(2);
/// Attributes never change (the image has a fixed size), so the kernel may cache them.
const ATTR_TTL: Duration = Duration::from_secs(60);

/// The image server.
pub struct ImageFs {
    backing: OwnedFd,
    size_bytes: u64,
    faults: FaultSwitch,
}

impl ImageFs {
    /// Serve `backing` (an open read-write file of `size_bytes`) as `IMAGE_NAME`.
    pub fn new(backing: OwnedFd, size_bytes: u64, faults: FaultSwitch) -> ImageFs {
        ImageFs { backing, size_bytes, faults }
    }

    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, size) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0o700, 0),
            IMAGE_INO => (FileType::RegularFile, 0o600, self.size_bytes),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }
}

fn errno_of(err: &std::io::Error) -> Errno {
    err.raw_os_error().map(Errno::from_i32).unwrap_or(Errno::EIO)
}

impl Filesystem for ImageFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match (parent, name.to_str()) {
            (INodeNo::ROOT, Some(IMAGE_NAME)) => {
                let attr = self.attr(IMAGE_INO).expect("the image inode always exists");
                reply.entry(&ATTR_TTL, &attr, Generation(0));
            }
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(attr) => reply.attr(&ATTR_TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino == IMAGE_INO {
            reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            reply.error(Errno::EISDIR);
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let len = (size as u64).min(self.size_bytes.saturating_sub(offset)) as usize;
        let mut buf = vec![0u8; len];
        match syncbench_sys::pread_exact(&self.backing, &mut buf, offset) {
            Ok(()) => reply.data(&buf),
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if offset + data.len() as u64 > self.size_bytes {
            return reply.error(Errno::ENOSPC);
        }
        if self.faults.should_fail(offset, data) {
            return reply.error(Errno::EIO);
        }
        match syncbench_sys::pwrite_all(&self.backing, data, offset) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    /// The "disk" is the backing file, read back through the same kernel, and a power cut is not part of
    /// this experiment; so a flush only needs to succeed, not to reach the platter.
    fn fsync(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        reply.ok();
    }
}
