//! The PostgreSQL driver of `powercut db`, without the lab: a real server in a temporary directory, killed
//! under load and recovered; refused settings; a planted page corruption that the integrity check must see.
#![cfg(feature = "postgres")]

use crate::skip;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use syncbench::proof::powercut::db::postgres::{PostgresServer, children_of};
use syncbench::proof::powercut::db::{INITIAL_BALANCE, Server, Transfer};

const ACCOUNTS: u32 = 64;
const CLIENTS: u64 = 8;

/// Why these tests cannot run here, if they cannot: not root, or no PostgreSQL server installed.
fn missing() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|l| l.split_whitespace().nth(1));
    if euid != Some("0") {
        return Some("not root (PostgreSQL runs as the postgres user)".into());
    }
    let installed = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("bin/postgres").is_file());
    (!installed).then(|| "PostgreSQL server not installed (apt-get install postgresql)".into())
}

/// A temporary directory the postgres user can enter, with an empty `data` directory in it.
fn lab_like_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    (tmp, data)
}

fn set(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The server's processes: the postmaster and its children.
fn processes(server: &PostgresServer) -> Vec<u32> {
    let pm = server.postmaster_pid().expect("server running");
    let mut all = children_of(pm);
    all.push(pm);
    all
}

fn gone(pids: &[u32]) -> Vec<u32> {
    let alive = |pid: &u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next()).is_some_and(|s| s != "Z")
    };
    pids.iter().copied().filter(alive).collect()
}

/// 8 clients transfer until the server is killed under them; returns every acknowledged transfer and the
/// background checkpoints done meanwhile.
fn load_until_killed(server: &mut PostgresServer, run_for: Duration) -> (Vec<Transfer>, u64) {
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let mut client = server.connect().unwrap();
            let (acked, stop) = (Arc::clone(&acked), Arc::clone(&stop));
            std::thread::spawn(move || {
                for seq in 0u64.. {
                    let t = Transfer {
                        id: c << 32 | seq,
                        from: ((seq * 7 + c) % 64) as u32,
                        to: ((seq * 13 + 3 * c) % 64) as u32,
                        amount: 1 + (seq % 100) as i64,
                    };
                    match client.transfer(&t) {
                        Ok(true) => acked.lock().unwrap().push(t),
                        Ok(false) => {}
                        Err(_) if stop.load(Ordering::SeqCst) => return,
                        Err(e) => panic!("transfer failed before the kill: {e:#}"),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(run_for);
    stop.store(true, Ordering::SeqCst);
    let checkpoints = server.checkpoints();
    server.kill();
    for t in threads {
        t.join().unwrap();
    }
    (Arc::try_unwrap(acked).unwrap().into_inner().unwrap(), checkpoints)
}

#[test]
fn postgres_keeps_every_acknowledged_transfer_across_a_kill() {
    if let Some(why) = missing() {
        return skip(why);
    }
    let (_tmp, data) = lab_like_dir();
    let mut server = PostgresServer::new(&[]).unwrap();
    assert!(server.version().starts_with("PostgreSQL "), "{}", server.version());
    let started = Instant::now();
    server.create(&data, ACCOUNTS).unwrap();
    let create_s = started.elapsed().as_secs_f64();
    let before_kill = processes(&server);
    assert!(before_kill.len() > 3, "postmaster and its children: {before_kill:?}");
    let (acked, checkpoints) = load_until_killed(&mut server, Duration::from_secs(4));
    assert!(checkpoints > 0, "no background CHECKPOINT during the load");
    assert!(gone(&before_kill).is_empty(), "still running after kill: {:?}", gone(&before_kill));
    assert!(acked.len() > 50, "only {} transfers acknowledged in 4 s", acked.len());

    let started = Instant::now();
    server.start().unwrap_or_else(|f| panic!("{}: {}", f.summary, f.log_excerpt));
    let recovery_s = started.elapsed().as_secs_f64();
    let state = server.read_state().unwrap();
    let history: HashMap<u64, Transfer> = state.history.iter().map(|t| (t.id, *t)).collect();
    for t in &acked {
        assert_eq!(history.get(&t.id), Some(t), "acknowledged transfer {} lost or changed", t.id);
    }
    let mut expected = vec![INITIAL_BALANCE; ACCOUNTS as usize];
    for t in &state.history {
        expected[t.from as usize] -= t.amount;
        expected[t.to as usize] += t.amount;
    }
    assert_eq!(state.balances, expected, "balances disagree with the history");
    let integrity = server.check_integrity().unwrap();
    assert!(integrity.ok, "{}", integrity.detail);
    eprintln!(
        "create {create_s:.2} s; {} acknowledged in 4 s, {checkpoints} checkpoints; recovery {recovery_s:.2} s; {} in history; {}",
        acked.len(),
        state.history.len(),
        integrity.detail
    );

    let after_restart = processes(&server);
    drop(server);
    assert!(gone(&after_restart).is_empty(), "still running after drop: {:?}", gone(&after_restart));
}

#[test]
fn postgres_refuses_an_unknown_key_by_name() {
    if let Some(why) = missing() {
        return skip(why);
    }
    let err = PostgresServer::new(&set(&[("wal_sync_methd", "fsync")])).err().expect("unknown key accepted");
    assert!(err.to_string().contains("wal_sync_methd"), "{err:#}");
}

#[test]
fn postgres_refuses_a_bad_value_with_the_servers_words() {
    if let Some(why) = missing() {
        return skip(why);
    }
    // Refused when the configuration is read (postgres -C) ...
    let (_tmp, data) = lab_like_dir();
    let mut server = PostgresServer::new(&set(&[("wal_sync_method", "bogus")])).unwrap();
    let err = format!("{:#}", server.create(&data, ACCOUNTS).unwrap_err());
    assert!(err.contains("invalid value for parameter \"wal_sync_method\": \"bogus\""), "{err}");
    assert!(server.postmaster_pid().is_none());
    // ... and refused only when the server starts.
    let (_tmp2, data2) = lab_like_dir();
    let mut server =
        PostgresServer::new(&set(&[("max_connections", "2"), ("superuser_reserved_connections", "5")])).unwrap();
    let err = format!("{:#}", server.create(&data2, ACCOUNTS).unwrap_err());
    assert!(err.contains("superuser_reserved_connections"), "{err}");
    assert!(server.postmaster_pid().is_none(), "a server that failed to start is not running");
}

/// Overwrite a stretch of the accounts table's first page (its rows, not the header): the data checksum no
/// longer matches, and the integrity check and the read must both say so.
fn corrupt_first_page(path: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(4096)).unwrap();
    file.write_all(&[0x5a; 512]).unwrap();
    file.sync_all().unwrap();
}

#[test]
fn postgres_integrity_check_sees_a_corrupted_page() {
    if let Some(why) = missing() {
        return skip(why);
    }
    let (_tmp, data) = lab_like_dir();
    let mut server = PostgresServer::new(&[]).unwrap();
    server.create(&data, ACCOUNTS).unwrap();
    assert!(server.check_integrity().unwrap().ok);
    let file = server.relation_file("accounts").unwrap();
    assert!(file.starts_with(&data), "{}", file.display());
    server.stop();
    corrupt_first_page(&file);
    server.start().unwrap_or_else(|f| panic!("{}: {}", f.summary, f.log_excerpt));
    let integrity = server.check_integrity().unwrap();
    assert!(!integrity.ok, "corruption not seen: {}", integrity.detail);
    assert!(integrity.detail.contains("checksum") || integrity.detail.contains("invalid page"), "{}", integrity.detail);
    eprintln!("{}", integrity.detail);
    let read = server.read_state();
    assert!(read.is_err(), "a corrupted page read back without error");
}

/// `syncbench powercut db --db postgres` on a lab disk (root, /dev/fuse, loop devices): a few honest cuts
/// keep every acknowledged transfer; with the planted early ack the same cuts lose some and fail the run.
#[cfg(feature = "fuse")]
mod on_the_lab {
    use crate::powercut_db_mariadb::on_the_lab::{a_few_honest_cuts_keep_everything, a_planted_early_ack_is_caught};

    /// Why the lab or PostgreSQL cannot run here (its programs are not on the PATH in Debian's packages).
    fn missing() -> Option<String> {
        crate::missing_stack_prerequisite(&["losetup", "mkfs.ext4", "mount", "umount"]).or_else(super::missing)
    }

    #[test]
    fn postgres_keeps_every_acknowledged_transfer_through_a_few_cuts_on_an_honest_disk() {
        a_few_honest_cuts_keep_everything("postgres", missing(), "PostgreSQL ");
    }

    #[test]
    fn postgres_a_planted_early_ack_is_caught() {
        a_planted_early_ack_is_caught("postgres", missing());
    }
}
