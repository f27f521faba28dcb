//! The etcd driver of `powercut db` against the installed etcd, without the lab (a tmp directory, a
//! SIGKILL instead of a power cut): every acknowledged txn is there after the WAL replay, no txn whose
//! compare failed; refused flags name their key; nothing is left running. Root and etcd-server,
//! etcd-client needed.

use syncbench::proof::powercut::db::etcd::Etcd;
use syncbench::proof::powercut::db::{Server, Transfer};

use crate::powercut_db_mariadb::{assert_nothing_left, assert_same_state, expected_state, load, missing};
use crate::skip;

const PROGRAMS: [&str; 2] = ["etcd", "etcdctl"];

#[test]
fn acknowledged_txns_survive_a_kill_and_the_wal_replay_and_failed_compares_leave_nothing() {
    if let Some(why) = missing(&PROGRAMS) {
        return skip(format_args!("the etcd driver needs root, etcd-server and etcd-client ({why})"));
    }
    let (dir, fresh) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let accounts = 10;
    {
        let mut server = Etcd::new(&[]).unwrap();
        assert!(server.version().starts_with("etcd 3."), "{}", server.version());
        server.create(dir.path(), accounts).unwrap();
        let load = load(&server, 8, 40, accounts, 1);
        assert!(load.errors.is_empty(), "{:?}", load.errors);
        assert_eq!(load.acked.len() + load.rolled_back.len(), 320);
        eprintln!("{} acknowledged, {} compares failed", load.acked.len(), load.rolled_back.len());
        server.kill();
        server.start().map_err(|f| format!("{}\n{}", f.summary, f.log_excerpt)).unwrap();
        assert_same_state(&server.read_state().unwrap(), &expected_state(accounts, &load.acked));
        let integrity = server.check_integrity().unwrap();
        assert!(integrity.ok, "{}", integrity.detail);
        let mut client = server.connect().unwrap();
        assert!(client.transfer(&Transfer { id: 10_000, from: 1, to: 1, amount: 3 }).unwrap());
        drop(client);
        // A fresh database (the campaign makes one after a damaged cut) starts again at a low revision:
        // the old database's last acknowledged revision must not fail its integrity check.
        server.create(fresh.path(), accounts).unwrap();
        let integrity = server.check_integrity().unwrap();
        assert!(integrity.ok, "{}", integrity.detail);
    }
    assert_nothing_left(dir.path());
    assert_nothing_left(fresh.path());
}

#[test]
fn refused_flags_name_their_key_and_start_nothing() {
    if let Some(why) = missing(&PROGRAMS) {
        return skip(format_args!("the etcd driver needs root, etcd-server and etcd-client ({why})"));
    }
    for (key, value) in [("no_such_flag", "1"), ("snapshot_count", "many"), ("data-dir", "/tmp/x")] {
        let err = Etcd::new(&[(key.to_string(), value.to_string())]).err().expect("refused");
        assert!(err.downcast_ref::<syncbench::core::exit::UsageError>().is_some(), "{err:#}");
        assert!(err.to_string().contains(&key.replace('_', "-")), "{err:#}");
        assert_eq!(err.to_string().lines().count(), 1, "{err:#}");
    }
    // The negative control's flag exists in this etcd (3.4 does not list it in --help).
    let dir = tempfile::tempdir().unwrap();
    let mut server = Etcd::new(&[("unsafe-no-fsync".into(), "true".into())]).unwrap();
    server.create(dir.path(), 3).unwrap();
    assert!(server.check_integrity().unwrap().ok);
    // A fresh database (as the campaign makes after damage) replaces the old one's files.
    let second = tempfile::tempdir().unwrap();
    server.create(second.path(), 3).unwrap();
    assert!(!dir.path().join("etcd").exists(), "the old database's files are gone");
    assert!(server.check_integrity().unwrap().ok);
    drop(server);
    assert_nothing_left(dir.path());
    assert_nothing_left(second.path());
}

#[cfg(feature = "fuse")]
mod on_the_lab {
    use crate::powercut_db_mariadb::on_the_lab::{
        a_few_honest_cuts_keep_everything, a_planted_early_ack_is_caught, an_unknown_setting_is_one_line_exit_2,
        missing,
    };

    #[test]
    fn etcd_keeps_every_acknowledged_txn_through_a_few_cuts_on_an_honest_disk() {
        a_few_honest_cuts_keep_everything("etcd", missing("etcd"), "etcd 3.");
    }

    #[test]
    fn etcd_a_planted_early_ack_is_caught() {
        a_planted_early_ack_is_caught("etcd", missing("etcd"));
    }

    #[test]
    fn etcd_unknown_flag_is_one_line_exit_2_and_leaves_nothing() {
        an_unknown_setting_is_one_line_exit_2("etcd", "etcd", "no_such_flag");
    }
}
