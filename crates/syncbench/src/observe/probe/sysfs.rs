//! Reading small text files under a root directory (`/` on a real machine, a fixture tree in tests).
//!
//! Why a root: every reader in the probe goes through here, so golden tests can replace /proc and /sys
//! with snapshots. Every read returns `Option`: an unreadable or missing file is "unknown", never an error.

use std::path::{Path, PathBuf};

/// A directory standing in for `/`.
#[derive(Clone, Debug)]
pub struct Root {
    base: PathBuf,
}

impl Root {
    /// The real machine.
    pub fn system() -> Root {
        Root { base: PathBuf::from("/") }
    }

    /// A fixture tree laid out like `/` (with `proc/…` and `sys/…`).
    pub fn at(base: impl Into<PathBuf>) -> Root {
        Root { base: base.into() }
    }

    /// `rel` (written without a leading `/`, e.g. `sys/dev/block/8:0`) inside the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.base.join(rel.trim_start_matches('/'))
    }

    /// Strip the root from a path obtained inside it, giving the path as the machine would show it.
    pub fn display(&self, inside: &Path) -> String {
        let base = self.base.canonicalize().unwrap_or_else(|_| self.base.clone());
        match inside.strip_prefix(&base) {
            Ok(rel) => format!("/{}", rel.display()),
            Err(_) => inside.display().to_string(),
        }
    }

    /// The whole file `rel`, if readable.
    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    /// Resolve the symbolic links of `rel` (sysfs links are relative, so they stay inside a fixture root).
    pub fn resolve(&self, rel: &str) -> Option<PathBuf> {
        self.path(rel).canonicalize().ok()
    }
}

/// The trimmed contents of `dir/name`, `None` when missing, unreadable or empty.
pub fn read_trimmed(dir: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(name)).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// `dir/name` parsed as an unsigned number.
pub fn read_u32(dir: &Path, name: &str) -> Option<u32> {
    read_trimmed(dir, name)?.parse().ok()
}

/// Whether a `queue/write_cache` value says the device has a volatile cache that needs flushes. The kernel
/// writes `write back` or `write through`; the value is kept as read (a file may hold one it wrote
/// another way), and this is the one place that reads its meaning.
pub fn is_write_back(write_cache: &str) -> bool {
    write_cache == "write back"
}

/// `dir/name` as a sysfs boolean (`0`/`1`).
pub fn read_bool(dir: &Path, name: &str) -> Option<bool> {
    match read_trimmed(dir, name)?.as_str() {
        "1" | "Y" | "y" => Some(true),
        "0" | "N" | "n" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_garbage_files_are_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n"), "512\n").unwrap();
        std::fs::write(dir.path().join("b"), "1\n").unwrap();
        std::fs::write(dir.path().join("junk"), "maybe\n").unwrap();
        std::fs::write(dir.path().join("empty"), "\n").unwrap();
        assert_eq!(read_u32(dir.path(), "n"), Some(512));
        assert_eq!(read_bool(dir.path(), "b"), Some(true));
        assert_eq!(read_bool(dir.path(), "junk"), None);
        assert_eq!(read_u32(dir.path(), "junk"), None);
        assert_eq!(read_trimmed(dir.path(), "empty"), None);
        assert_eq!(read_trimmed(dir.path(), "absent"), None);
    }

    #[test]
    fn root_paths_and_display() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::create_dir_all(root.path("sys/a")).unwrap();
        let inside = root.resolve("/sys/a").unwrap();
        assert_eq!(root.display(&inside), "/sys/a");
        assert_eq!(Root::system().path("proc/cpuinfo"), PathBuf::from("/proc/cpuinfo"));
    }
}
