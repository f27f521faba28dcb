//! Which versions the rules know, and which version is installed here when `--for` names none
//! (`postgres --version`, `pg_config --version`, /usr/lib/postgresql/*/bin/postgres, `mysqld --version`,
//! `mariadb --version`, `sqlite3 --version`, `etcd --version`).

use super::{Database, Version};
use std::path::Path;
use std::process::Command;

/// The versions the advice rules were written for, as (major, lowest minor, highest minor).
fn known(db: Database) -> &'static [(u32, u32, u32)] {
    match db {
        Database::Postgres => {
            &[(12, 0, 99), (13, 0, 99), (14, 0, 99), (15, 0, 99), (16, 0, 99), (17, 0, 99), (18, 0, 99)]
        }
        Database::Mysql => &[(5, 7, 7), (8, 0, 4), (9, 0, 5)],
        Database::Mariadb => &[(10, 3, 11), (11, 0, 8), (12, 0, 1)],
        Database::Sqlite => &[(3, 7, 99)],
        Database::Rocksdb => &[(6, 0, 99), (7, 0, 99), (8, 0, 99), (9, 0, 99), (10, 0, 99)],
        Database::Etcd => &[(3, 4, 6)],
    }
}

/// Whether the rules know `version` of `db`.
pub fn is_known(db: Database, version: Version) -> bool {
    known(db).iter().any(|&(major, lo, hi)| version.major == major && (lo..=hi).contains(&version.minor))
}

/// The known versions in a phrase: `12-18`, `5.7, 8.0-8.4, 9.0-9.5`.
pub fn known_list(db: Database) -> String {
    let ranges = known(db);
    if ranges.iter().all(|&(_, lo, hi)| lo == 0 && hi == 99) {
        let (first, last) = (ranges[0].0, ranges[ranges.len() - 1].0);
        return format!("{first}-{last}");
    }
    ranges
        .iter()
        .map(|&(major, lo, hi)| match (lo, hi) {
            (lo, 99) => format!("{major}.{lo} and later {major}.x"),
            (lo, hi) if lo == hi => format!("{major}.{lo}"),
            (lo, hi) => format!("{major}.{lo}-{major}.{hi}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The installed version of `db` and where it was read, if a program says so.
pub fn installed(db: Database) -> Option<(Version, String)> {
    let programs: &[&str] = match db {
        Database::Postgres => &["postgres", "pg_config"],
        // The servers live in /usr/sbin, which a user's PATH may lack.
        Database::Mysql => &["mysqld", "/usr/sbin/mysqld", "mysql"],
        Database::Mariadb => &["mariadbd", "/usr/sbin/mariadbd", "mariadb"],
        Database::Sqlite => &["sqlite3"],
        Database::Rocksdb => &[],
        Database::Etcd => &["etcd"],
    };
    for program in programs {
        if let Some(v) = version_of(db, Command::new(program).arg("--version")) {
            return Some((v, format!("`{program} --version`")));
        }
    }
    if db == Database::Postgres {
        return debian_postgres(Path::new("/usr/lib/postgresql"));
    }
    None
}

/// Debian/Ubuntu install servers under /usr/lib/postgresql/MAJOR/bin: the highest major present.
fn debian_postgres(base: &Path) -> Option<(Version, String)> {
    let major = std::fs::read_dir(base)
        .ok()?
        .flatten()
        .filter(|e| e.path().join("bin/postgres").exists())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .max()?;
    let program = base.join(format!("{major}/bin/postgres"));
    // The binary says its minor version (15.18); the directory only the major.
    let version = version_of(Database::Postgres, Command::new(&program).arg("--version"))
        .filter(|v| v.major == major)
        .unwrap_or(Version::new(major, 0));
    Some((version, program.display().to_string()))
}

fn version_of(db: Database, command: &mut Command) -> Option<Version> {
    let out = command.stdin(std::process::Stdio::null()).stderr(std::process::Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_version_output(db, &String::from_utf8_lossy(&out.stdout))
}

/// The version in a program's `--version` output. MySQL's client and MariaDB's share a name and a format
/// (`mysql  Ver 15.1 Distrib 10.11.6-MariaDB`): a MariaDB answer is not MySQL's and vice versa.
pub fn parse_version_output(db: Database, text: &str) -> Option<Version> {
    let mariadb = text.contains("MariaDB");
    if (db == Database::Mysql && mariadb) || (db == Database::Mariadb && !mariadb) {
        return None;
    }
    // The number after a marker, else the first token shaped like a version.
    for marker in ["Distrib ", "from ", "(PostgreSQL) ", "PostgreSQL ", "Version: ", "Ver "] {
        if let Some(v) = text.split(marker).nth(1).and_then(leading_version) {
            return Some(v);
        }
    }
    text.split_whitespace().find_map(leading_version)
}

fn leading_version(text: &str) -> Option<Version> {
    let token: String = text.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let token = token.trim_end_matches('.');
    token.contains('.').then(|| Version::parse(token)).flatten().or_else(|| {
        // A bare major (`postgres (PostgreSQL) 18beta1` gives 18).
        (!token.is_empty() && db_major_only(token)).then(|| Version::parse(token)).flatten()
    })
}

fn db_major_only(token: &str) -> bool {
    token.chars().all(|c| c.is_ascii_digit()) && token.len() <= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_each_programs_output() {
        let pg = |t| parse_version_output(Database::Postgres, t);
        assert_eq!(pg("postgres (PostgreSQL) 16.4 (Debian 16.4-1.pgdg120+2)\n"), Some(Version::new(16, 4)));
        assert_eq!(pg("PostgreSQL 15.10\n"), Some(Version::new(15, 10)));
        assert_eq!(pg("postgres (PostgreSQL) 18beta1\n"), Some(Version::new(18, 0)));
        let my = |t| parse_version_output(Database::Mysql, t);
        assert_eq!(
            my("/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)"),
            Some(Version::new(8, 0))
        );
        assert_eq!(my("mysql  Ver 15.1 Distrib 10.11.6-MariaDB, for debian-linux-gnu (x86_64)"), None);
        let maria = |t| parse_version_output(Database::Mariadb, t);
        assert_eq!(
            maria("mariadb  Ver 15.1 Distrib 10.11.6-MariaDB, for debian-linux-gnu"),
            Some(Version::new(10, 11))
        );
        // Debian 12's server and client (mariadb-server 1:10.11.19-0+deb12u1).
        assert_eq!(
            maria("/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"),
            Some(Version::new(10, 11))
        );
        assert_eq!(
            maria("mariadb  Ver 15.1 Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64) using  EditLine wrapper"),
            Some(Version::new(10, 11))
        );
        assert_eq!(my("/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64"), None);
        assert_eq!(
            maria("mariadb from 11.4.2-MariaDB, client 15.2 for debian-linux-gnu (x86_64)"),
            Some(Version::new(11, 4))
        );
        assert_eq!(
            parse_version_output(Database::Sqlite, "3.40.1 2022-12-28 14:03:47 df5c253c"),
            Some(Version::new(3, 40))
        );
        assert_eq!(
            parse_version_output(Database::Etcd, "etcd Version: 3.5.12\nGit SHA: e7b3bb6cc\n"),
            Some(Version::new(3, 5))
        );
        assert_eq!(parse_version_output(Database::Sqlite, "no version here"), None);
    }

    #[test]
    fn known_versions_and_their_list() {
        assert!(is_known(Database::Postgres, Version::new(16, 0)));
        assert!(!is_known(Database::Postgres, Version::new(99, 0)));
        assert!(is_known(Database::Mysql, Version::new(8, 4)) && !is_known(Database::Mysql, Version::new(8, 5)));
        assert_eq!(known_list(Database::Postgres), "12-18");
        assert_eq!(known_list(Database::Mysql), "5.7, 8.0-8.4, 9.0-9.5");
        // Debian 12 ships MariaDB 10.11.
        assert!(is_known(Database::Mariadb, Version::new(10, 11)));
        assert!(
            !is_known(Database::Mariadb, Version::new(10, 12)) && !is_known(Database::Mariadb, Version::new(10, 2))
        );
        assert_eq!(known_list(Database::Mariadb), "10.3-10.11, 11.0-11.8, 12.0-12.1");
        for db in Database::ALL {
            assert!(is_known(db, db.default_version()), "{db:?}");
        }
    }

    #[test]
    fn debian_layout_gives_the_highest_major() {
        let tmp = tempfile::tempdir().unwrap();
        for major in ["13", "15", "notes"] {
            std::fs::create_dir_all(tmp.path().join(major).join("bin")).unwrap();
            std::fs::write(tmp.path().join(major).join("bin/postgres"), b"").unwrap();
        }
        let (v, source) = debian_postgres(tmp.path()).unwrap();
        assert_eq!(v, Version::new(15, 0));
        assert!(source.ends_with("/15/bin/postgres"));
        // A server that answers --version gives its minor version, as Debian's 15.18 does.
        let server = tmp.path().join("15/bin/postgres");
        std::fs::write(&server, "#!/bin/sh\necho 'postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)'\n").unwrap();
        std::fs::set_permissions(&server, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert_eq!(debian_postgres(tmp.path()).unwrap().0, Version::new(15, 18));
    }
}
