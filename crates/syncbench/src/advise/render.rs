//! Plain-text rendering of advice.

use super::DatabaseAdvice;
use std::fmt::Write;

/// Human-readable advice, one block per database.
pub fn to_text(advice: &[DatabaseAdvice]) -> String {
    let mut out = String::new();
    for a in advice {
        let pass = match a.pass {
            Some(true) => " — PASS",
            Some(false) => " — FAIL",
            None => "",
        };
        let _ = writeln!(out, "{} {}{pass}", title(&a.database), a.version);
        if let Some(w) = &a.storage_warning {
            let _ = writeln!(out, "  !! {w}");
        }
        for s in &a.settings {
            let _ = writeln!(out, "  {} = {}", s.name, s.value);
            let _ = writeln!(out, "      {}", s.reason);
        }
        for c in &a.caveats {
            let _ = writeln!(out, "  note: {c}");
        }
        out.push('\n');
    }
    out
}

fn title(db: &str) -> &str {
    match db {
        "postgres" => "PostgreSQL",
        "mysql" => "MySQL/InnoDB",
        "mariadb" => "MariaDB",
        "sqlite" => "SQLite",
        "rocksdb" => "RocksDB",
        "etcd" => "etcd",
        other => other,
    }
}
