use super::*;

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn user_flags_replace_the_defaults_in_either_spelling() {
    let (flags, keys) = flags(&pairs(&[("snapshot_count", "50"), ("unsafe-no-fsync", "true")])).unwrap();
    assert_eq!(
        flags,
        ["--heartbeat-interval=10", "--election-timeout=100", "--snapshot-count=50", "--unsafe-no-fsync=true"]
    );
    assert_eq!(keys, ["snapshot-count", "unsafe-no-fsync"]);
    assert_eq!(
        super::flags(&[]).unwrap().0,
        ["--snapshot-count=1000", "--heartbeat-interval=10", "--election-timeout=100"]
    );
}

#[test]
fn reserved_and_malformed_flags_are_usage_errors() {
    for key in ["data-dir", "data_dir", "listen-client-urls", "log-outputs"] {
        let e = flags(&pairs(&[(key, "x")])).unwrap_err();
        assert!(e.downcast_ref::<crate::core::exit::UsageError>().is_some(), "{key}");
    }
    assert!(flags(&pairs(&[("a b", "1")])).unwrap_err().to_string().contains("not an etcd flag name"));
}

#[test]
fn refusals_name_the_users_key() {
    let (f, keys) = flags(&pairs(&[("snapshot-count", "abc"), ("bogus", "1")])).unwrap();
    let invalid = "invalid value \"abc\" for flag -snapshot-count: parse error\nUsage:\n";
    assert_eq!(
        refusal(invalid, &keys, &f),
        "--set snapshot-count=abc: etcd does not take it (invalid value \"abc\" for flag -snapshot-count: parse error)"
    );
    let unknown = "flag provided but not defined: -bogus\nUsage:\n";
    assert!(refusal(unknown, &keys, &f).starts_with("--set bogus=1: etcd does not take it"));
    assert!(refusal("something else\n", &keys, &f).starts_with("etcd refuses the settings: something else"));
}

#[test]
fn version_comes_from_the_first_line() {
    let text = "etcd Version: 3.4.23\nGit SHA: Not provided (use ./build instead of go build)\nGo Version: go1.19.8\n";
    assert_eq!(parse_version(text).as_deref(), Some("etcd 3.4.23"));
    assert_eq!(parse_version("nothing"), None);
}

#[test]
fn integrity_fails_on_a_revision_behind_the_acknowledged_one_an_unhealthy_member_or_an_unreadable_key() {
    let healthy = || (true, "127.0.0.1:2379 is healthy: successfully committed proposal".to_string());
    assert!(judge(healthy(), 120, Ok((120, 30))).ok);
    let behind = judge(healthy(), 121, Ok((120, 30)));
    assert!(!behind.ok);
    assert!(behind.detail.contains("revision 120 (last acknowledged 121)"), "{}", behind.detail);
    assert!(!judge((false, "unhealthy".into()), 0, Ok((5, 3))).ok);
    let unreadable = judge(healthy(), 0, Err(anyhow::anyhow!("balance of acct/00000003: \"x\"")));
    assert!(!unreadable.ok && unreadable.detail.contains("acct/00000003"), "{}", unreadable.detail);
}

#[test]
fn a_failed_starts_excerpt_leads_with_the_panic_not_the_goroutine_dump() {
    let mut log = String::from(
        "{\"level\":\"info\",\"msg\":\"starting\"}\npanic: freepages: failed to get all reachable pages\n",
    );
    for i in 0..40 {
        log.push_str(&format!("\tgo.etcd.io/bbolt/db.go:{i} +0x1ea\n"));
    }
    let text = excerpt(&log);
    assert!(text.starts_with("panic: freepages"), "{text}");
    assert!(text.ends_with("db.go:39 +0x1ea"), "{text}");
    let fatal = "{\"level\":\"fatal\",\"msg\":\"failed to commit tx\"}\nstack\n";
    assert!(excerpt(fatal).starts_with("{\"level\":\"fatal\""));
    assert_eq!(excerpt("a\nb\n"), "a\nb");
}
