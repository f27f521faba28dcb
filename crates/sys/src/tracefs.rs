//! tracefs: where the kernel publishes each tracepoint's id and record layout
//! (`events/GROUP/NAME/{id,format}`). When it is not mounted anywhere (many systems mount it only when
//! something asks), it is mounted on a fresh directory of this process's own (not at
//! `/sys/kernel/tracing`, where another syncbench could unmount it under us), and the guard unmounts it
//! and removes the directory: hold it only while reading formats.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

/// A mounted tracefs; unmounts on drop when this process mounted it.
#[derive(Debug)]
pub struct Tracefs {
    root: PathBuf,
    mounted_here: bool,
}

impl Tracefs {
    /// The mounted tracefs, or tracefs mounted on a new directory under `dir` (root only).
    pub fn open(dir: &Path) -> io::Result<Tracefs> {
        Tracefs::open_announcing(dir, |_| Ok(()))
    }

    /// [`Tracefs::open`], calling `before_mount` with the new directory before mounting on it (to record
    /// the mount where a later process finds it if this one is killed); its error stops the mount.
    pub fn open_announcing(dir: &Path, before_mount: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<Tracefs> {
        let mounts = std::fs::read_to_string("/proc/self/mounts")?;
        if let Some(root) = tracefs_mount_point(&mounts) {
            return Ok(Tracefs { root: root.into(), mounted_here: false });
        }
        static MOUNTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = MOUNTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = dir.join(format!(".syncbench-tracefs-{}-{n}", std::process::id()));
        std::fs::create_dir(&root)?;
        if let Err(e) = before_mount(&root) {
            let _ = std::fs::remove_dir(&root);
            return Err(e);
        }
        let target = CString::new(root.as_os_str().as_encoded_bytes()).map_err(io::Error::other)?;
        let kind = CString::new("tracefs").map_err(io::Error::other)?;
        // SAFETY: valid NUL-terminated strings, no data argument.
        let rc = unsafe { libc::mount(kind.as_ptr(), target.as_ptr(), kind.as_ptr(), 0, std::ptr::null()) };
        if rc == -1 {
            let err = io::Error::last_os_error();
            let _ = std::fs::remove_dir(&root);
            return Err(err);
        }
        Ok(Tracefs { root, mounted_here: true })
    }

    /// Where it is mounted.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where this process mounted it, if it did: a signal handler that cannot run `Drop` passes it to
    /// [`detach`].
    pub fn mounted_here(&self) -> Option<&Path> {
        self.mounted_here.then_some(self.root.as_path())
    }

    /// The id and layout of tracepoint `group:name`.
    pub fn event(&self, group: &str, name: &str) -> io::Result<EventFormat> {
        let path = self.root.join("events").join(group).join(name).join("format");
        let text = std::fs::read_to_string(&path)?;
        parse_format(&text)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("{}: unreadable format", path.display())))
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.mounted_here {
            detach(&self.root);
        }
    }
}

/// Unmount a tracefs this process mounted at `root` and remove the directory (best effort: teardown; a
/// second call, or a call after `Drop`, finds nothing and does nothing).
pub fn detach(root: &Path) {
    if let Ok(target) = CString::new(root.as_os_str().as_encoded_bytes()) {
        // SAFETY: a valid path; MNT_DETACH so open perf events (which do not use the mount) cannot block it.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
        let _ = std::fs::remove_dir(root);
    }
}

/// The first tracefs mount point in a `/proc/self/mounts` text.
pub fn tracefs_mount_point(mounts: &str) -> Option<&str> {
    mounts.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (_, point, kind) = (f.next()?, f.next()?, f.next()?);
        (kind == "tracefs").then_some(point)
    })
}

/// One field of a tracepoint record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in the raw record.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// `__data_loc`: the field holds (u16 offset, u16 length) of a string stored later in the record.
    pub data_loc: bool,
}

impl Field {
    /// The field as an unsigned integer (1, 2, 4 or 8 bytes); 0 when the record is too short.
    pub fn uint(&self, raw: &[u8]) -> u64 {
        let Some(b) = raw.get(self.offset..self.offset + self.size) else { return 0 };
        match self.size {
            1 => u64::from(b[0]),
            2 => u64::from(u16::from_ne_bytes([b[0], b[1]])),
            4 => u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            8 => u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])),
            _ => 0,
        }
    }

    /// The field as a signed 64-bit value (sign-extended from 4 bytes).
    pub fn int(&self, raw: &[u8]) -> i64 {
        match self.size {
            4 => self.uint(raw) as u32 as i32 as i64,
            _ => self.uint(raw) as i64,
        }
    }

    /// A `char[N]` or `__data_loc char[]` field as text, up to its first NUL.
    pub fn text<'a>(&self, raw: &'a [u8]) -> &'a str {
        let bytes = if self.data_loc {
            let loc = self.uint(raw);
            let (at, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
            raw.get(at..at + len).unwrap_or(&[])
        } else {
            raw.get(self.offset..self.offset + self.size).unwrap_or(&[])
        };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        std::str::from_utf8(&bytes[..end]).unwrap_or("")
    }
}

/// A tracepoint's id and fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// The id to give `perf_event_open` (also `common_type` of every record).
    pub id: u64,
    /// Fields by name.
    pub fields: HashMap<String, Field>,
}

impl EventFormat {
    /// A field, or an error naming it (a kernel whose tracepoint lacks it).
    pub fn field(&self, name: &str) -> io::Result<Field> {
        self.fields.get(name).copied().ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("tracepoint {} has no field `{name}`", self.id))
        })
    }
}

/// Parse a tracefs `format` file.
pub fn parse_format(text: &str) -> Option<EventFormat> {
    let id = text.lines().find_map(|l| l.strip_prefix("ID:"))?.trim().parse().ok()?;
    let mut fields = HashMap::new();
    for line in text.lines().map(str::trim).filter(|l| l.starts_with("field:")) {
        let mut decl = "";
        let (mut offset, mut size) = (None, None);
        for part in line.split(';').map(str::trim) {
            if let Some(v) = part.strip_prefix("field:") {
                decl = v;
            } else if let Some(v) = part.strip_prefix("offset:") {
                offset = v.parse().ok();
            } else if let Some(v) = part.strip_prefix("size:") {
                size = v.parse().ok();
            }
        }
        // `const struct iovec * vec`, `char rwbs[10]`, `__data_loc char[] cmd`: the name is the last word,
        // without its array brackets.
        let name = decl.rsplit([' ', '*']).next()?.split('[').next()?.to_string();
        let field = Field { offset: offset?, size: size?, data_loc: decl.starts_with("__data_loc") };
        fields.insert(name, field);
    }
    Some(EventFormat { id, fields })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORK: &str = "name: sched_process_fork\nID: 366\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;\n\
        \tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;\n\
        \tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\
        \tfield:const struct iovec * vec;\toffset:24;\tsize:8;\tsigned:0;\n\nprint fmt: \"x\"\n";

    #[test]
    fn formats_parse_names_offsets_and_strings() {
        let f = parse_format(FORK).unwrap();
        assert_eq!(f.id, 366);
        assert_eq!(f.fields["parent_pid"], Field { offset: 12, size: 4, data_loc: false });
        assert!(f.fields["parent_comm"].data_loc);
        assert_eq!(f.fields["rwbs"].size, 10);
        assert_eq!(f.fields["vec"].offset, 24);
        let mut raw = vec![0u8; 48];
        raw[12..16].copy_from_slice(&(-5i32).to_ne_bytes());
        raw[8..12].copy_from_slice(&((3u32 << 16) | 44).to_ne_bytes());
        raw[44..47].copy_from_slice(b"pg\0");
        raw[34..38].copy_from_slice(b"FWS\0");
        assert_eq!(f.fields["parent_pid"].int(&raw), -5);
        assert_eq!(f.fields["parent_comm"].text(&raw), "pg");
        assert_eq!(f.fields["rwbs"].text(&raw), "FWS");
        assert!(f.field("nope").is_err());
    }

    #[test]
    fn finds_the_tracefs_mount() {
        let mounts = "sysfs /sys sysfs rw 0 0\nnodev /sys/kernel/tracing tracefs rw 0 0\n";
        assert_eq!(tracefs_mount_point(mounts), Some("/sys/kernel/tracing"));
        assert_eq!(tracefs_mount_point("sysfs /sys sysfs rw 0 0\n"), None);
    }
}
