use super::*;

fn set(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn booleans_parse_as_the_server_parses_them() {
    for on in ["on", "ON", "true", "t", "yes", "y", "1", "'on'"] {
        assert_eq!(pg_bool(on), Some(true), "{on}");
    }
    for off in ["off", "false", "f", "no", "n", "0", "Off"] {
        assert_eq!(pg_bool(off), Some(false), "{off}");
    }
    for neither in ["", "o", "local", "remote_write", "2"] {
        assert_eq!(pg_bool(neither), None, "{neither}");
    }
}

#[test]
fn unsafe_settings_are_named_and_safe_ones_are_not() {
    assert_eq!(loss_expected(&[]), None);
    for method in ["fdatasync", "open_datasync", "fsync", "open_sync"] {
        assert_eq!(loss_expected(&set(&[("wal_sync_method", method)])), None, "{method}");
    }
    assert_eq!(loss_expected(&set(&[("synchronous_commit", "local"), ("full_page_writes", "on")])), None);
    assert!(loss_expected(&set(&[("fsync", "off")])).unwrap().contains("fsync = off"));
    assert!(loss_expected(&set(&[("synchronous_commit", "off")])).unwrap().contains("synchronous_commit"));
    assert!(loss_expected(&set(&[("full_page_writes", "false")])).unwrap().contains("full_page_writes"));
    // The last value wins, as in postgresql.conf; keys are case-insensitive.
    assert_eq!(loss_expected(&set(&[("fsync", "off"), ("FSYNC", "on")])), None);
}

#[test]
fn setting_syntax_refuses_what_could_break_the_conf_file() {
    assert!(
        check_setting_syntax(&set(&[("wal_sync_method", "open_datasync"), ("auto_explain.log_min_duration", "1")]))
            .is_ok()
    );
    let err = |pairs: &[(&str, &str)]| check_setting_syntax(&set(pairs)).unwrap_err().to_string();
    assert!(err(&[("wal sync", "x")]).contains("not a PostgreSQL setting name"));
    assert!(err(&[("", "x")]).contains("not a PostgreSQL setting name"));
    assert!(err(&[("work_mem", "1MB\nfsync = off")]).contains("control character"));
    assert!(err(&[("Port", "5433")]).contains("syncbench sets this itself"));
    assert!(err(&[("listen_addresses", "*")]).contains("syncbench sets this itself"));
}

#[test]
fn unknown_keys_are_refused_by_name() {
    let known = vec!["fsync".to_string(), "wal_sync_method".to_string()];
    assert!(check_settings_known(&set(&[("FSYNC", "on"), ("wal_sync_method", "fsync")]), &known).is_ok());
    let e = check_settings_known(&set(&[("fsync", "on"), ("wal_sync_methd", "fsync")]), &known).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--set wal_sync_methd: PostgreSQL has no such setting (see `postgres --describe-config`)"
    );
}

#[test]
fn conf_lines_quote_values() {
    assert_eq!(
        settings_conf(&set(&[("fsync", "off"), ("application_name", "it's")])),
        "fsync = 'off'\napplication_name = 'it''s'\n"
    );
}

#[test]
fn refusal_lines_keep_the_servers_words() {
    let log = "2026-11-28 21:13:08.854 UTC [17771] LOG:  invalid value for parameter \"wal_sync_method\": \"bogus\"\n\
               2026-11-28 21:13:08.854 UTC [17771] HINT:  Available values: fsync, fdatasync, open_sync, open_datasync.\n\
               2026-11-28 21:13:08.854 UTC [17771] FATAL:  configuration file \"/x/postgresql.conf\" contains errors\n";
    assert_eq!(
        refusal_lines(log),
        "LOG:  invalid value for parameter \"wal_sync_method\": \"bogus\" / HINT:  Available values: fsync, fdatasync, \
         open_sync, open_datasync. / FATAL:  configuration file \"/x/postgresql.conf\" contains errors"
    );
    assert_eq!(refusal_lines("a\nb\nc\nd\n"), "b / c / d");
}

#[test]
fn versions_parse() {
    assert_eq!(
        parse_version("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n").as_deref(),
        Some("PostgreSQL 15.18")
    );
    assert_eq!(parse_version("postgres (PostgreSQL) 17.2\n").as_deref(), Some("PostgreSQL 17.2"));
    assert_eq!(parse_version("mysqld 10.11"), None);
}

#[test]
fn children_are_found_by_parent() {
    let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
    assert!(children_of(std::process::id()).contains(&child.id()));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!children_of(std::process::id()).contains(&child.id()));
}
