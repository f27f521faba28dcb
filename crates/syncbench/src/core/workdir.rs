//! The directory a measuring command writes into, checked before anything is created there: it exists, is a
//! directory on a writable file system, and has room for what the command will put in it. Every problem
//! is one line naming the directory and what to do (exit code 2).

use crate::core::exit::usage;
use crate::core::units::{MIB, format_size};
use std::path::{Path, PathBuf};

/// Size of `run`'s prepared file (a PostgreSQL WAL segment); append and fallocate cases use one each.
pub const RUN_FILE_BYTES: u64 = 16 * MIB;
/// What `run` needs: the overwrite file plus one append/fallocate file at a time, and room to spare.
pub const RUN_FILES_BYTES: u64 = 2 * RUN_FILE_BYTES + 8 * MIB;

/// DIR exists, is a directory on a writable file system; with `need` = (bytes, command, what for), it also
/// has that much free space. Returns the canonical path.
pub fn check(dir: &Path, need: Option<(u64, &str, &str)>) -> anyhow::Result<PathBuf> {
    let shown = dir.display();
    let meta = std::fs::metadata(dir)
        .map_err(|e| usage(format!("cannot use {shown}: {} — give an existing directory", reason(&e))))?;
    if !meta.is_dir() {
        return Err(usage(format!("{shown} is not a directory — give the directory to measure")));
    }
    let dir = std::fs::canonicalize(dir).map_err(|e| usage(format!("cannot use {shown}: {}", reason(&e))))?;
    if syncbench_sys::is_read_only_fs(&dir).unwrap_or(false) {
        return Err(usage(format!("{shown} is on a read-only file system — choose a writable directory")));
    }
    if let Some((bytes, command, purpose)) = need {
        require_free(&dir, bytes, command, purpose)?;
    }
    Ok(dir)
}

/// DIR has at least `need_bytes` free, or a usage error: "DIR has 12 MiB free but `command` needs 40 MiB
/// for `purpose` — …".
pub fn require_free(dir: &Path, need_bytes: u64, command: &str, purpose: &str) -> anyhow::Result<()> {
    let shown = dir.display();
    let free = syncbench_sys::free_bytes(dir).map_err(|e| usage(format!("cannot use {shown}: {}", reason(&e))))?;
    if free < need_bytes {
        return Err(usage(format!(
            "{shown} has {} free but {command} needs {} for {purpose} — free some space or choose another directory",
            format_size(free),
            format_size(need_bytes)
        )));
    }
    Ok(())
}

/// The OS's reason in words, without the "(os error 2)" suffix users do not need.
pub fn reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: anyhow::Result<impl std::fmt::Debug>) -> String {
        let err = result.unwrap_err();
        assert!(err.downcast_ref::<crate::core::exit::UsageError>().is_some(), "{err}");
        let text = err.to_string();
        assert!(!text.contains('\n'), "{text}");
        text
    }

    #[test]
    fn bad_directories_are_one_line_each() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(message(check(&tmp.path().join("nope"), None)).contains("existing directory"));
        let file = tmp.path().join("file");
        std::fs::write(&file, b"").unwrap();
        assert!(message(check(&file, None)).contains("not a directory"));
        assert_eq!(check(tmp.path(), None).unwrap(), tmp.path().canonicalize().unwrap());
    }

    #[test]
    fn too_little_space_names_the_directory_the_command_and_both_sizes() {
        let tmp = tempfile::tempdir().unwrap();
        let m = message(require_free(tmp.path(), u64::MAX, "syncbench pages", "its tables and log"));
        assert!(m.contains(&tmp.path().display().to_string()) && m.contains("syncbench pages needs"), "{m}");
        assert!(m.contains("free but") && m.contains("for its tables and log"), "{m}");
        require_free(tmp.path(), 1, "syncbench pages", "its tables").unwrap();
    }
}
