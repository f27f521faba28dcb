//! Plain-text rendering of advice: the answer first (one line per database), then each database's
//! settings with their reasons. A storage warning or a note that several databases share is said once.

use super::DatabaseAdvice;
use std::fmt::Write;

/// Human-readable advice: the answer, then one block per database.
pub fn to_text(advice: &[DatabaseAdvice]) -> String {
    answer(advice) + "\n" + &body(advice)
}

/// The opening lines: each database's first settings (or its pass/fail) in one line.
pub fn answer(advice: &[DatabaseAdvice]) -> String {
    let mut out = String::from("answer:\n");
    for a in advice {
        let pass = match a.pass {
            Some(true) => " PASS",
            Some(false) => " FAIL",
            None => "",
        };
        let settings: Vec<String> = a.settings.iter().take(2).map(|s| format!("{} = {}", s.name, s.value)).collect();
        let more = a.settings.len().saturating_sub(2);
        let more = if more > 0 { format!(" (+{more} more below)") } else { String::new() };
        let what = if settings.is_empty() { "see below".to_string() } else { settings.join(", ") };
        let _ = writeln!(out, "  {} {}:{pass} {what}{more}", title(&a.database), a.version);
    }
    out
}

/// The settings of every database, shared warnings and notes once.
pub fn body(advice: &[DatabaseAdvice]) -> String {
    let mut out = String::new();
    let shared_warning = shared(advice.iter().map(|a| a.storage_warning.clone().into_iter().collect()));
    let shared_notes = shared(advice.iter().map(|a| a.caveats.clone()));
    if advice.len() > 1 {
        for w in &shared_warning {
            let _ = writeln!(out, "Storage, for every database below:\n  !! {w}\n");
        }
    }
    for a in advice {
        let pass = match a.pass {
            Some(true) => " — PASS",
            Some(false) => " — FAIL",
            None => "",
        };
        let _ = writeln!(out, "{} {}{pass}", title(&a.database), a.version);
        let _ = writeln!(out, "  evidence: {}", super::evidence::of(a).level);
        let _ = writeln!(out, "  power cuts: {}", super::safety::of(a).summary);
        if let Some(w) = a.storage_warning.as_ref().filter(|w| advice.len() == 1 || !shared_warning.contains(w)) {
            let _ = writeln!(out, "  !! {w}");
        }
        for s in &a.settings {
            let _ = writeln!(out, "  {} = {}", s.name, s.value);
            let _ = writeln!(out, "      {}", s.reason);
        }
        for c in a.caveats.iter().filter(|c| !shared_notes.contains(c)) {
            let _ = writeln!(out, "  note: {c}");
        }
        out.push('\n');
    }
    if !shared_notes.is_empty() {
        let names: Vec<&str> = advice
            .iter()
            .filter(|a| a.caveats.iter().any(|c| shared_notes.contains(c)))
            .map(|a| title(&a.database))
            .collect();
        let _ = writeln!(out, "Notes for {}:", names.join(", "));
        for c in &shared_notes {
            let _ = writeln!(out, "  note: {c}");
        }
        out.push('\n');
    }
    out
}

/// The items that occur in at least two of the lists, in first-seen order.
fn shared(lists: impl Iterator<Item = Vec<String>>) -> Vec<String> {
    let lists: Vec<Vec<String>> = lists.collect();
    let mut out: Vec<String> = Vec::new();
    for item in lists.iter().flatten() {
        let holders = lists.iter().filter(|l| l.contains(item)).count();
        if holders >= 2 && !out.contains(item) {
            out.push(item.clone());
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn db(name: &str, warning: Option<&str>, caveats: &[&str]) -> DatabaseAdvice {
        DatabaseAdvice {
            database: name.into(),
            version: "1.0".into(),
            storage_warning: warning.map(String::from),
            settings: Vec::new(),
            caveats: caveats.iter().map(|c| c.to_string()).collect(),
            pass: None,
        }
    }

    #[test]
    fn a_shared_warning_and_note_are_printed_once() {
        let advice = [db("postgres", Some("tmpfs!"), &["own", "shared"]), db("mysql", Some("tmpfs!"), &["shared"])];
        let text = to_text(&advice);
        assert_eq!(text.matches("tmpfs!").count(), 1, "{text}");
        assert_eq!(text.matches("note: shared").count(), 1, "{text}");
        assert_eq!(text.matches("note: own").count(), 1, "{text}");
        assert!(text.starts_with("answer:\n  PostgreSQL 1.0: see below\n"), "{text}");
        assert!(text.contains("Notes for PostgreSQL, MySQL/InnoDB:\n  note: shared"), "{text}");
        // Alone, a database keeps its warning in its own block.
        assert!(to_text(&advice[..1]).contains("  !! tmpfs!"));
    }
}
