//! Negative controls: settings each database documents as not keeping every acknowledged commit through a
//! power cut. A cell with one of them is expected to lose, and its verdict says so (as does a disk that
//! ignores flushes, whatever the settings).

use super::DbKind;

/// `(database, key, value, why)`: with `key = value` (case-insensitive) the database does not promise that
/// an acknowledged commit survives a power cut. SQLite's NORMAL is unsafe only in WAL mode (see below).
const UNSAFE: &[(DbKind, &str, &str, &str)] = &[
    (DbKind::Sqlite, "synchronous", "off", "SQLite synchronous=OFF never syncs"),
    (
        DbKind::Postgres,
        "synchronous_commit",
        "off",
        "PostgreSQL synchronous_commit=off acknowledges before the WAL flush",
    ),
    (DbKind::Postgres, "fsync", "off", "PostgreSQL fsync=off never syncs"),
    (DbKind::Mariadb, "innodb_flush_log_at_trx_commit", "0", "InnoDB flush_log_at_trx_commit=0 flushes once a second"),
    (DbKind::Mariadb, "innodb_flush_log_at_trx_commit", "2", "InnoDB flush_log_at_trx_commit=2 syncs once a second"),
    (DbKind::Etcd, "unsafe-no-fsync", "true", "etcd --unsafe-no-fsync never syncs"),
    (
        DbKind::Postgres,
        "full_page_writes",
        "off",
        "PostgreSQL full_page_writes=off cannot repair a page the power cut tore",
    ),
    (
        DbKind::Mariadb,
        "innodb_doublewrite",
        "off",
        "InnoDB innodb_doublewrite=OFF cannot repair a page the power cut tore",
    ),
];

impl DbKind {
    /// The name on the command line and in the tables.
    pub fn name(self) -> &'static str {
        match self {
            DbKind::Postgres => "postgres",
            DbKind::Mariadb => "mariadb",
            DbKind::Sqlite => "sqlite",
            DbKind::Etcd => "etcd",
        }
    }
}

/// Settings whose only danger is a torn page: on a disk whose untorn unit covers the page they are safe.
const TORN_PAGE_ONLY: [&str; 2] = ["full_page_writes", "innodb_doublewrite"];

/// Why `settings` on `kind` are known not to keep acknowledged commits, if they are.
pub fn known_unsafe(kind: DbKind, settings: &[(String, String)]) -> Option<String> {
    known_unsafe_on(kind, settings, false)
}

/// [`known_unsafe`] on a disk that writes whole pages when `pages_untorn` (its untorn unit is at least the
/// database's page): torn-page protection turned off is then not expected to lose.
pub fn known_unsafe_on(kind: DbKind, settings: &[(String, String)], pages_untorn: bool) -> Option<String> {
    let value = |key: &str| settings.iter().rev().find(|(k, _)| same_key(k, key)).map(|(_, v)| v.as_str());
    let table = UNSAFE
        .iter()
        .filter(|(_, key, _, _)| !(pages_untorn && TORN_PAGE_ONLY.contains(key)))
        .find(|(db, key, unsafe_value, _)| *db == kind && value(key).is_some_and(|v| same_value(v, unsafe_value)));
    if let Some((_, _, _, why)) = table {
        return Some((*why).to_string());
    }
    let wal = value("journal_mode").is_some_and(|v| v.eq_ignore_ascii_case("wal"));
    let normal = value("synchronous").is_some_and(|v| v.eq_ignore_ascii_case("normal"));
    (kind == DbKind::Sqlite && wal && normal)
        .then(|| "SQLite synchronous=NORMAL in WAL mode does not sync the WAL at each commit".to_string())
}

/// Keys match case-insensitively, with `-` and `_` alike (the drivers accept either: `unsafe_no_fsync` is
/// etcd's `--unsafe-no-fsync`, `innodb-flush-log-at-trx-commit` MariaDB's variable).
fn same_key(given: &str, key: &str) -> bool {
    let norm = |c: u8| if c == b'-' { b'_' } else { c.to_ascii_lowercase() };
    given.len() == key.len() && given.bytes().zip(key.bytes()).all(|(a, b)| norm(a) == norm(b))
}

/// Values match case-insensitively, and a boolean in any spelling the servers accept (`off`, `false`, `no`,
/// `0`; `on`, `true`, `yes`, `1`).
fn same_value(given: &str, value: &str) -> bool {
    const OFF: [&str; 4] = ["off", "false", "no", "0"];
    const ON: [&str; 4] = ["on", "true", "yes", "1"];
    let spelled = |set: [&str; 4]| set.iter().any(|w| w.eq_ignore_ascii_case(given));
    match value {
        "off" => spelled(OFF),
        "true" => spelled(ON),
        _ => given.eq_ignore_ascii_case(value),
    }
}

/// Parse `KEY=VALUE[,KEY=VALUE…]` (one `--set`), in order.
pub fn parse_settings(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
            _ => Err(format!("--set {item:?} is not KEY=VALUE; give e.g. --set synchronous=FULL")),
        })
        .collect()
}

/// The settings as one `key=value,…` text (for the tables).
pub fn settings_text(settings: &[(String, String)]) -> String {
    if settings.is_empty() {
        return "defaults".to_string();
    }
    settings.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> Vec<(String, String)> {
        parse_settings(text).unwrap()
    }

    #[test]
    fn a_negative_control_is_known_whichever_spelling_its_key_has() {
        let set = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert!(known_unsafe(DbKind::Etcd, &set("unsafe_no_fsync", "true")).is_some());
        assert!(known_unsafe(DbKind::Etcd, &set("unsafe-no-fsync", "TRUE")).is_some());
        assert!(known_unsafe(DbKind::Mariadb, &set("innodb-flush-log-at-trx-commit", "2")).is_some());
        assert!(known_unsafe(DbKind::Mariadb, &set("innodb_flush_log_at_trx_commit", "1")).is_none());
        assert!(known_unsafe(DbKind::Mariadb, &set("innodb_flush_log_at_trx_commits", "2")).is_none());
        assert!(known_unsafe(DbKind::Postgres, &set("fsync", "false")).is_some());
        assert!(known_unsafe(DbKind::Postgres, &set("synchronous_commit", "0")).is_some());
        assert!(known_unsafe(DbKind::Postgres, &set("synchronous_commit", "on")).is_none());
        assert!(known_unsafe(DbKind::Postgres, &set("full_page_writes", "off")).is_some());
        assert!(known_unsafe(DbKind::Mariadb, &set("innodb_doublewrite", "OFF")).is_some());
        assert!(known_unsafe(DbKind::Etcd, &set("unsafe-no-fsync", "1")).is_some());
    }

    #[test]
    fn the_documented_unsafe_settings_are_negative_controls_and_the_safe_ones_are_not() {
        assert!(known_unsafe(DbKind::Sqlite, &set("synchronous=OFF")).is_some());
        assert!(known_unsafe(DbKind::Sqlite, &set("journal_mode=wal,synchronous=normal")).is_some());
        assert!(known_unsafe(DbKind::Sqlite, &set("journal_mode=DELETE,synchronous=NORMAL")).is_none());
        assert!(known_unsafe(DbKind::Sqlite, &set("journal_mode=WAL,synchronous=FULL")).is_none());
        assert!(known_unsafe(DbKind::Sqlite, &set("synchronous=OFF,synchronous=FULL")).is_none(), "the last wins");
        assert!(known_unsafe(DbKind::Postgres, &set("synchronous_commit=off")).is_some());
        assert!(known_unsafe(DbKind::Postgres, &set("synchronous_commit=on")).is_none());
        assert!(known_unsafe(DbKind::Mariadb, &set("innodb_flush_log_at_trx_commit=2")).is_some());
        assert!(known_unsafe(DbKind::Mariadb, &set("innodb_flush_log_at_trx_commit=1")).is_none());
        assert!(known_unsafe(DbKind::Etcd, &[]).is_none());
    }

    #[test]
    fn torn_page_protection_off_is_a_control_only_where_pages_can_tear() {
        for (kind, key) in [(DbKind::Postgres, "full_page_writes=off"), (DbKind::Mariadb, "innodb_doublewrite=OFF")] {
            assert!(known_unsafe_on(kind, &set(key), false).is_some(), "{key} on a tearing disk");
            assert!(known_unsafe_on(kind, &set(key), true).is_none(), "{key} on a disk that writes whole pages");
        }
        let both = set("full_page_writes=off,fsync=off");
        assert!(known_unsafe_on(DbKind::Postgres, &both, true).unwrap().contains("fsync=off"));
    }

    #[test]
    fn settings_parse_in_order_and_refuse_an_item_without_a_key() {
        assert_eq!(set("a=1, b = x ,"), [("a".into(), "1".into()), ("b".into(), "x".into())]);
        assert!(parse_settings("synchronous").unwrap_err().contains("KEY=VALUE"));
        assert!(parse_settings("=1").is_err());
        assert_eq!(settings_text(&set("a=1,b=2")), "a=1,b=2");
        assert_eq!(settings_text(&[]), "defaults");
    }
}
