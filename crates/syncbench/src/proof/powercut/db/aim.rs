//! Cuts aimed at data-page writes (`powercut db --aim data-writes`), and where the aimed write landed.
//!
//! The device model sees offsets, not files. The aim it is given is the lab's: cut the moment a write of at
//! least the database's page size is in flight that does not start at or inside one of the device's last 64
//! writes (a log append, the journal, a WAL page rewritten, continue a recent write; a checkpoint's page
//! written back does not). That is a heuristic, so after every aimed cut the write it hit is looked up in a
//! map of the database's files (FIEMAP, taken after the reboot) and recorded as landing in table data, in
//! the log, or in no file of the database (file system metadata or journal). The table counts each; only
//! the first kind is a data-page write for sure.

use super::DbKind;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What `--aim` aims the cuts at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AimAt {
    /// A write of at least the database's page size, not continuing a recent write, in flight.
    DataWrites,
    /// A write of at least the database's page size that touches a table data file's blocks (as FIEMAP
    /// mapped them after the database was made and after each reboot), in flight.
    DataFiles,
}

impl AimAt {
    /// The aim in the tables, for a page of `page_bytes`.
    pub fn words(self, page_bytes: u64) -> String {
        let page = crate::core::units::format_size(page_bytes);
        match self {
            AimAt::DataWrites => format!("data writes >= {page}"),
            AimAt::DataFiles => format!("writes >= {page} to data files"),
        }
    }
}

/// How long an aimed cut waits for its write while the load runs on; then it cuts unaimed (and says so).
pub const AIM_MAX_WAIT: Duration = Duration::from_secs(5);

/// The database's page: the unit a torn write breaks. PostgreSQL 8 KiB (a compile-time constant of the
/// server), InnoDB `innodb_page_size` (16 KiB unless set), SQLite and etcd's bbolt 4 KiB (their defaults,
/// which the drivers do not change).
pub fn page_bytes(kind: DbKind, settings: &[(String, String)]) -> u64 {
    match kind {
        DbKind::Postgres => 8 << 10,
        DbKind::Mariadb => {
            let set = settings.iter().rev().find(|(k, _)| k.replace('-', "_").eq_ignore_ascii_case("innodb_page_size"));
            set.and_then(|(_, v)| innodb_page_bytes(v)).unwrap_or(16 << 10)
        }
        DbKind::Sqlite | DbKind::Etcd => 4 << 10,
    }
}

/// `innodb_page_size` as mariadbd takes it: `4k`…`64k` or bytes.
fn innodb_page_bytes(value: &str) -> Option<u64> {
    let v = value.trim().to_ascii_lowercase();
    match v.strip_suffix('k') {
        Some(kib) => kib.parse::<u64>().ok().map(|k| k << 10),
        None => v.parse().ok(),
    }
}

/// `powercut run --page SIZE`: the program's page, a power of two from 512B to 1MiB, or a one-line reason.
pub fn parse_page(text: &str) -> Result<u64, String> {
    crate::proof::lab::profile::parse_untorn(text)
        .map_err(|_| format!("--page must be a power of two from 512B to 1MiB (e.g. 4KiB, 8KiB), not {text}"))
}

/// What a file of the database holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileRole {
    /// Table or index pages (PostgreSQL `base/`, `global/`; InnoDB `.ibd`; the SQLite file; etcd's bbolt).
    Data,
    /// The write-ahead or redo log (`pg_wal/`, `ib_logfile*`, `-wal`/`-journal`, etcd's `wal/`).
    Log,
    /// Any other file of the database (PostgreSQL's `pg_xact/`, InnoDB's system tablespace with the
    /// doublewrite buffer, ...).
    Other,
}

/// The role of `rel`, a path relative to the database's directory, by each database's file layout.
pub fn file_role(kind: DbKind, rel: &Path) -> FileRole {
    let text = rel.to_string_lossy();
    let name = rel.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let under = |dir: &str| rel.components().any(|c| c.as_os_str() == dir);
    let (data, log) = match kind {
        DbKind::Postgres => (under("base") || under("global"), under("pg_wal")),
        DbKind::Mariadb => (name.ends_with(".ibd"), name.starts_with("ib_logfile")),
        DbKind::Sqlite => {
            (!name.contains('-') && !text.is_empty(), name.ends_with("-wal") || name.ends_with("-journal"))
        }
        DbKind::Etcd => (under("snap") && name == "db", under("wal")),
    };
    match (data, log) {
        (true, _) => FileRole::Data,
        (_, true) => FileRole::Log,
        _ => FileRole::Other,
    }
}

/// Where an aimed write landed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Landing {
    /// The role of the file it touched; `None`: no file of the database (file system metadata, journal).
    pub role: Option<FileRole>,
    /// That file, relative to the database's directory.
    pub file: Option<String>,
}

/// The device byte ranges of every regular file under a database's directory.
#[derive(Clone, Debug, Default)]
pub struct FileMap {
    extents: Vec<(Range<u64>, PathBuf)>,
}

impl FileMap {
    /// Map every regular file under `dir` (not following links, not crossing mounts). A file FIEMAP cannot
    /// map is left out (its writes then count as landing in no file of the database).
    pub fn of(dir: &Path) -> FileMap {
        let mut map = FileMap::default();
        let Ok(top) = std::fs::metadata(dir) else { return map };
        let mut pending = vec![dir.to_path_buf()];
        while let Some(at) = pending.pop() {
            for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
                let Ok(meta) = std::fs::symlink_metadata(entry.path()) else { continue };
                if std::os::unix::fs::MetadataExt::dev(&meta) != std::os::unix::fs::MetadataExt::dev(&top) {
                    continue;
                }
                if meta.is_dir() {
                    pending.push(entry.path());
                } else if meta.is_file() {
                    let rel = entry.path().strip_prefix(dir).map(Path::to_path_buf).unwrap_or_default();
                    map.add_file(&entry.path(), rel);
                }
            }
        }
        map
    }

    fn add_file(&mut self, path: &Path, rel: PathBuf) {
        let Ok(file) = std::fs::File::open(path) else { return };
        let Ok(extents) = syncbench_sys::fiemap(&file) else { return };
        for e in extents {
            self.extents.push((e.physical_bytes..e.physical_bytes + e.length_bytes, rel.clone()));
        }
    }

    /// The device ranges of every file of `role` (merged where they touch).
    pub fn ranges(&self, kind: DbKind, role: FileRole) -> Vec<Range<u64>> {
        let mut ranges: Vec<Range<u64>> =
            self.extents.iter().filter(|(_, p)| file_role(kind, p) == role).map(|(r, _)| r.clone()).collect();
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        merged
    }

    /// A map from known extents (tests).
    pub fn from_extents(extents: Vec<(Range<u64>, PathBuf)>) -> FileMap {
        FileMap { extents }
    }

    /// Where the write `offset..offset + len` landed: the first data file it touches, else the first file.
    pub fn landing(&self, kind: DbKind, offset: u64, len: u64) -> Landing {
        let touched: Vec<&PathBuf> =
            self.extents.iter().filter(|(r, _)| r.start < offset + len && offset < r.end).map(|(_, p)| p).collect();
        let best = touched.iter().find(|p| file_role(kind, p) == FileRole::Data).or(touched.first());
        Landing { role: best.map(|p| file_role(kind, p)), file: best.map(|p| p.to_string_lossy().into_owned()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(k: &str, v: &str) -> Vec<(String, String)> {
        vec![(k.to_string(), v.to_string())]
    }

    #[test]
    fn each_database_knows_its_page() {
        assert_eq!(page_bytes(DbKind::Postgres, &[]), 8192);
        assert_eq!(page_bytes(DbKind::Mariadb, &[]), 16384);
        assert_eq!(page_bytes(DbKind::Mariadb, &set("innodb-page-size", "4k")), 4096);
        assert_eq!(page_bytes(DbKind::Mariadb, &set("innodb_page_size", "65536")), 65536);
        assert_eq!(page_bytes(DbKind::Sqlite, &[]), 4096);
        assert_eq!(page_bytes(DbKind::Etcd, &[]), 4096);
    }

    #[test]
    fn a_page_is_a_power_of_two_from_a_sector_to_a_mebibyte() {
        assert_eq!(parse_page("8KiB"), Ok(8192));
        assert!(parse_page("12KiB").unwrap_err().starts_with("--page must be a power of two"));
        assert!(parse_page("big").is_err());
    }

    #[test]
    fn files_are_data_log_or_other_by_each_databases_layout() {
        let role = |kind, p: &str| file_role(kind, Path::new(p));
        assert_eq!(role(DbKind::Postgres, "pgdata/base/5/16384"), FileRole::Data);
        assert_eq!(role(DbKind::Postgres, "pgdata/global/1262"), FileRole::Data);
        assert_eq!(role(DbKind::Postgres, "pgdata/pg_wal/000000010000000000000001"), FileRole::Log);
        assert_eq!(role(DbKind::Postgres, "pgdata/pg_xact/0000"), FileRole::Other);
        assert_eq!(role(DbKind::Mariadb, "bench/accounts.ibd"), FileRole::Data);
        assert_eq!(role(DbKind::Mariadb, "ib_logfile0"), FileRole::Log);
        assert_eq!(role(DbKind::Mariadb, "ibdata1"), FileRole::Other);
        assert_eq!(role(DbKind::Sqlite, "bench.db"), FileRole::Data);
        assert_eq!(role(DbKind::Sqlite, "bench.db-wal"), FileRole::Log);
        assert_eq!(role(DbKind::Etcd, "member/snap/db"), FileRole::Data);
        assert_eq!(role(DbKind::Etcd, "member/wal/0.wal"), FileRole::Log);
    }

    #[test]
    fn a_write_lands_in_the_data_file_it_touches_else_in_any_file_else_in_none() {
        let map = FileMap::from_extents(vec![
            (0..8192, PathBuf::from("pg_wal/1")),
            (8192..16384, PathBuf::from("base/5/16384")),
            (65536..69632, PathBuf::from("pg_xact/0000")),
        ]);
        let at = |offset, len| map.landing(DbKind::Postgres, offset, len);
        assert_eq!(at(4096, 8192).role, Some(FileRole::Data), "straddles the log and a table: the table");
        assert_eq!(at(4096, 8192).file.as_deref(), Some("base/5/16384"));
        assert_eq!(at(0, 8192).role, Some(FileRole::Log));
        assert_eq!(at(16384, 8192), Landing { role: None, file: None }, "ends where the table ends");
        assert_eq!(at(60000, 8192).role, Some(FileRole::Other));
    }

    #[test]
    fn the_data_files_ranges_are_merged_and_leave_out_the_log() {
        let map = FileMap::from_extents(vec![
            (8192..16384, PathBuf::from("base/5/16384")),
            (0..8192, PathBuf::from("pg_wal/1")),
            (16384..24576, PathBuf::from("base/5/16385")),
            (40960..49152, PathBuf::from("global/1262")),
        ]);
        assert_eq!(map.ranges(DbKind::Postgres, FileRole::Data), vec![8192..24576, 40960..49152]);
        let log = 0..8192;
        assert_eq!(map.ranges(DbKind::Postgres, FileRole::Log), vec![log]);
        assert_eq!(AimAt::DataFiles.words(8192), "writes >= 8 KiB to data files");
        assert_eq!(AimAt::DataWrites.words(16384), "data writes >= 16 KiB");
    }

    /// The map is of real files: a file written on this file system is found where FIEMAP puts it.
    #[test]
    fn a_real_files_extent_is_found_by_its_device_offset() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("base/5")).unwrap();
        std::fs::write(dir.path().join("base/5/16384"), vec![7u8; 65536]).unwrap();
        let map = FileMap::of(dir.path());
        let Some((range, path)) = map.extents.first().cloned() else {
            eprintln!("skipped: this file system has no FIEMAP");
            return;
        };
        assert_eq!(path, Path::new("base/5/16384"));
        assert_eq!(map.landing(DbKind::Postgres, range.start, 8192).role, Some(FileRole::Data));
    }
}
