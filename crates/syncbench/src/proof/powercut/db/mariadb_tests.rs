use super::*;

#[test]
fn version_is_the_flavour_and_the_number() {
    let text = "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)\n";
    assert_eq!(parse_version(text).as_deref(), Some("MariaDB 10.11.19"));
    let mysql = "/usr/sbin/mysqld  Ver 8.0.40-0ubuntu0.24.04.1 for Linux on x86_64 ((Ubuntu))";
    assert_eq!(parse_version(mysql).as_deref(), Some("MySQL 8.0.40"));
    assert_eq!(parse_version("garbage"), None);
}

#[test]
fn state_rows_become_balances_and_history() {
    let text = "a\t0\t999990\na\t1\t1000010\nh\t7\t0\t1\t10\n";
    let state = parse_state(text, 2).unwrap();
    assert_eq!(state.balances, vec![999_990, 1_000_010]);
    assert_eq!(state.history, vec![Transfer { id: 7, from: 0, to: 1, amount: 10 }]);
}

#[test]
fn a_missing_account_or_a_strange_row_is_an_error() {
    let gap = parse_state("a\t0\t1\na\t2\t1\n", 3).unwrap_err();
    assert!(gap.to_string().contains("account 1 is missing"), "{gap}");
    let short = parse_state("a\t0\t1\n", 2).unwrap_err();
    assert!(short.to_string().contains("1 of 2 accounts"), "{short}");
    assert!(parse_state("x\t1\n", 0).is_err());
    assert!(parse_state("a\t0\tlots\n", 1).is_err());
}

#[test]
fn check_table_passes_only_when_every_table_says_ok() {
    let ok = "bank.accounts\tcheck\tstatus\tOK\nbank.history\tcheck\tstatus\tOK\n";
    assert!(judge_check_table(ok, &["accounts", "history"]).ok);
    let corrupt = "bank.accounts\tcheck\tWarning\tInnoDB: The B-tree of index PRIMARY is corrupted.\n\
                   bank.accounts\tcheck\terror\tCorrupt\nbank.history\tcheck\tstatus\tOK\n";
    let judged = judge_check_table(corrupt, &["accounts", "history"]);
    assert!(!judged.ok);
    assert!(judged.detail.contains("B-tree of index PRIMARY is corrupted"), "{}", judged.detail);
    let one_missing = "bank.accounts\tcheck\tstatus\tOK\n";
    assert!(!judge_check_table(one_missing, &["accounts", "history"]).ok);
    assert!(!judge_check_table("", &["accounts"]).ok);
}
