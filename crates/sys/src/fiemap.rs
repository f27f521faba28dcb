//! `ioctl(FS_IOC_FIEMAP)`: where a file's bytes live on the device under its file system.
//!
//! `syncbench fsync-errors` uses it to find the byte range of one file block on a disk image, so that a
//! write error can be injected exactly there. Layouts follow `<linux/fiemap.h>`.

use rustix::fd::{AsFd, AsRawFd};
use std::io;

/// Ask the kernel to write back dirty data before mapping (`FIEMAP_FLAG_SYNC`), so delayed allocations
/// have a physical location.
const FIEMAP_FLAG_SYNC: u32 = 0x1;
/// `FS_IOC_FIEMAP` = `_IOWR('f', 11, struct fiemap)` (32-byte header).
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// How many extents one call asks for; more than any file syncbench maps.
const MAX_EXTENTS: usize = 64;

/// `struct fiemap_extent`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// `struct fiemap` followed by room for `MAX_EXTENTS` extents.
#[repr(C)]
struct RawFiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [RawExtent; MAX_EXTENTS],
}

/// One mapped extent of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileExtent {
    /// Offset of the extent in the file, in bytes.
    pub logical_bytes: u64,
    /// Offset on the device, in bytes. For multi-device or copy-on-write file systems (btrfs) this is the
    /// file system's own logical address, not necessarily a device offset.
    pub physical_bytes: u64,
    /// Length in bytes.
    pub length_bytes: u64,
    /// `FIEMAP_EXTENT_*` flags (e.g. `0x800` unwritten, `0x4` delayed allocation, `0x1` last).
    pub flags: u32,
}

impl FileExtent {
    /// The device offset of file offset `offset`, when this extent covers it.
    pub fn physical_of(&self, offset: u64) -> Option<u64> {
        let inside = offset >= self.logical_bytes && offset < self.logical_bytes + self.length_bytes;
        inside.then(|| self.physical_bytes + (offset - self.logical_bytes))
    }
}

/// The extents of `fd` (up to 64), after writing back its dirty data (`FIEMAP_FLAG_SYNC`).
/// File systems without FIEMAP (tmpfs) fail with `EOPNOTSUPP`.
pub fn fiemap(fd: impl AsFd) -> io::Result<Vec<FileExtent>> {
    let mut map = RawFiemap {
        fm_start: 0,
        fm_length: u64::MAX,
        fm_flags: FIEMAP_FLAG_SYNC,
        fm_mapped_extents: 0,
        fm_extent_count: MAX_EXTENTS as u32,
        fm_reserved: 0,
        fm_extents: [RawExtent::default(); MAX_EXTENTS],
    };
    let raw = fd.as_fd().as_raw_fd();
    // SAFETY: `raw` is a valid descriptor for the call; `map` is a properly laid out `struct fiemap` with
    // room for `fm_extent_count` extents, and the kernel writes no further than that.
    let rc = unsafe { libc::ioctl(raw, FS_IOC_FIEMAP as _, &mut map as *mut RawFiemap) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let mapped = (map.fm_mapped_extents as usize).min(MAX_EXTENTS);
    Ok(map.fm_extents[..mapped]
        .iter()
        .map(|e| FileExtent {
            logical_bytes: e.fe_logical,
            physical_bytes: e.fe_physical,
            length_bytes: e.fe_length,
            flags: e.fe_flags,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpenFlags, create_new, pwrite_all};

    #[test]
    fn layout_matches_the_kernel_header() {
        assert_eq!(std::mem::size_of::<RawExtent>(), 56);
        assert_eq!(std::mem::size_of::<RawFiemap>(), 32 + 56 * MAX_EXTENTS);
    }

    #[test]
    fn physical_of_maps_inside_the_extent_only() {
        let e = FileExtent { logical_bytes: 4096, physical_bytes: 1 << 20, length_bytes: 8192, flags: 0 };
        assert_eq!(e.physical_of(4096), Some(1 << 20));
        assert_eq!(e.physical_of(4096 + 5000), Some((1 << 20) + 5000));
        assert_eq!(e.physical_of(4095), None);
        assert_eq!(e.physical_of(4096 + 8192), None);
    }

    #[test]
    fn maps_a_written_file_or_says_unsupported() {
        // Current directory: the build tree, usually on a real file system (tmpfs has no FIEMAP).
        let dir = tempfile::tempdir_in(".").unwrap();
        let fd = create_new(&dir.path().join("f"), OpenFlags::BUFFERED).unwrap();
        pwrite_all(&fd, &[7u8; 16384], 0).unwrap();
        match fiemap(&fd) {
            Ok(extents) => {
                assert!(!extents.is_empty());
                let covered: u64 = extents.iter().map(|e| e.length_bytes).sum();
                assert!(covered >= 16384, "{extents:?}");
                assert_eq!(extents[0].logical_bytes, 0);
            }
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}"),
        }
    }
}
