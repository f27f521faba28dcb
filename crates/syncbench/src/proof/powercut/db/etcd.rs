//! The etcd driver of `powercut db`: the installed `etcd` as a one-member cluster with its data in
//! `DIR/etcd` on the lab mount, clients over the v3 JSON gateway on 127.0.0.1 (free ports chosen at
//! `create`), its log in a private directory in /tmp.
//!
//! Settings are etcd flags (`--set snapshot-count=1000`, `unsafe-no-fsync=true`: the negative control,
//! present in 3.4.23 though `--help` does not list it, `quota-backend-bytes`, ...), checked by etcd itself
//! before anything starts (`etcd FLAGS --version` parses every flag and exits).
//! Integrity: `etcdctl endpoint health`, the store's revision at least the highest revision a txn was
//! acknowledged with (kept by the driver across cuts), and every key of the store read and decoded.

pub mod client;
pub mod http;
pub mod kv;

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use super::mariadb::supervise::{self, ServerProcess};
use super::{Client, DbState, INITIAL_BALANCE, Integrity, Server, StartFailure};

/// How long a start (WAL replay included, on a slow lab disk) may take.
const START_LIMIT: Duration = Duration::from_secs(120);
/// How long a clean stop may take before etcd is killed.
const STOP_LIMIT: Duration = Duration::from_secs(60);
/// Lines of the log a failure quotes.
const EXCERPT_LINES: usize = 20;
/// Puts per setup txn (etcd's `--max-txn-ops` defaults to 128).
const SETUP_PUTS_PER_TXN: usize = 100;
/// The member's name.
const NAME: &str = "syncbench";

/// Flags syncbench sets itself: where etcd keeps its data, where it listens, how it logs.
const RESERVED: [&str; 13] = [
    "name",
    "data-dir",
    "wal-dir",
    "listen-client-urls",
    "advertise-client-urls",
    "listen-peer-urls",
    "initial-advertise-peer-urls",
    "initial-cluster",
    "initial-cluster-state",
    "initial-cluster-token",
    "config-file",
    "logger",
    "log-outputs",
];

/// The driver's defaults, overridden by a `--set` of the same key: a snapshot (and a WAL cut and bbolt
/// commit behind it) every 1,000 entries instead of 100,000, so cuts land in those writes too; a 100 ms
/// election timeout (10 ms heartbeat), so that the one member elects itself after a restart in ~0.1 s, not
/// 1–2 s (nothing else shares its term: no effect on what a commit waits for).
const DEFAULTS: [(&str, &str); 3] =
    [("snapshot-count", "1000"), ("heartbeat-interval", "10"), ("election-timeout", "100")];

/// The flags of a cell: defaults, then the user's (dashed keys); the user's keys, for blame.
pub fn flags(user: &[(String, String)]) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let mut options: Vec<(String, String)> = DEFAULTS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut keys = Vec::new();
    for (key, value) in user {
        let key = key.trim().to_ascii_lowercase().replace('_', "-");
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(crate::core::exit::usage(format!(
                "--set {key}={value}: not an etcd flag name; see `etcd --help`"
            )));
        }
        if RESERVED.contains(&key.as_str()) {
            return Err(crate::core::exit::usage(format!(
                "--set {key}: syncbench sets this etcd flag itself; leave it out"
            )));
        }
        options.retain(|(k, _)| *k != key);
        options.push((key.clone(), value.trim().to_string()));
        keys.push(key);
    }
    Ok((options.iter().map(|(k, v)| format!("--{k}={v}")).collect(), keys))
}

/// etcd's complaint about its flags (`flag provided but not defined: -x`, `invalid value "y" for flag
/// -x: ...`) as one line naming the `--set` it is about.
pub fn refusal(stderr: &str, user_keys: &[String], flags: &[String]) -> String {
    let line = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("etcd refused its flags").trim();
    match user_keys.iter().find(|k| line.contains(&format!("-{k}:")) || line.ends_with(&format!("-{k}"))) {
        Some(key) => {
            let given = flags.iter().rev().find_map(|f| f.strip_prefix(&format!("--{key}=")));
            format!("--set {key}={}: etcd does not take it ({line})", given.unwrap_or_default())
        }
        None => format!("etcd refuses the settings: {line}"),
    }
}

/// What a failed start's log says: its fatal, panic and error lines first (a Go panic ends in a goroutine
/// dump that would otherwise fill the excerpt), then its last lines.
pub fn excerpt(log: &str) -> String {
    let key = |l: &&str| {
        l.starts_with("panic:")
            || ["fatal", "panic", "error"].iter().any(|lv| l.contains(&format!("\"level\":\"{lv}\"")))
    };
    let important: Vec<&str> = log.lines().filter(key).collect();
    let tail = supervise::last_lines(log, EXCERPT_LINES / 2);
    match important.len() {
        0 => supervise::last_lines(log, EXCERPT_LINES),
        n => format!("{}\n…\n{tail}", important[n.saturating_sub(EXCERPT_LINES / 2)..].join("\n")),
    }
}

/// `etcd 3.4.23` from `etcd Version: 3.4.23` (the first line of `etcd --version`).
pub fn parse_version(text: &str) -> Option<String> {
    let number = text.lines().find_map(|l| l.trim().strip_prefix("etcd Version:"))?.trim();
    (!number.is_empty()).then(|| format!("etcd {number}"))
}

/// Two free TCP ports on 127.0.0.1 (client, peer), held together while chosen so they differ.
fn free_ports() -> anyhow::Result<(u16, u16)> {
    let a = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("finding a free port for etcd")?;
    let b = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("finding a free port for etcd")?;
    Ok((a.local_addr()?.port(), b.local_addr()?.port()))
}

/// etcd's integrity from its parts: `etcdctl endpoint health` (healthy?, its line), the highest revision a
/// txn was acknowledged with, and the read of every key (the store's revision and the key count).
pub fn judge(health: (bool, String), acked: i64, read: anyhow::Result<(i64, usize)>) -> Integrity {
    let (healthy, line) = health;
    match read {
        Ok((revision, keys)) => Integrity {
            ok: healthy && revision >= acked,
            detail: format!(
                "etcdctl endpoint health: {line}; revision {revision} (last acknowledged {acked}); {keys} keys read"
            ),
        },
        Err(e) => {
            Integrity { ok: false, detail: format!("etcdctl endpoint health: {line}; reading every key failed: {e:#}") }
        }
    }
}

/// An etcd server for one cell.
pub struct Etcd {
    /// First field: dropped (etcd killed) before the private directory goes.
    process: ServerProcess,
    etcd: PathBuf,
    etcdctl: PathBuf,
    flags: Vec<String>,
    version: String,
    private: crate::core::cleanup::Created,
    data_dir: Option<PathBuf>,
    ports: (u16, u16),
    accounts: u32,
    acked_revision: Arc<AtomicI64>,
    log_start: u64,
}

impl Etcd {
    /// A driver with the user's `--set` pairs: finds `etcd` and `etcdctl`, has etcd parse every flag
    /// (usage error naming the key if it refuses one), makes the private directory.
    pub fn new(user_settings: &[(String, String)]) -> anyhow::Result<Etcd> {
        let missing = |p: &str| {
            crate::core::exit::usage(format!(
                "{p} is not installed: install etcd (Debian: apt-get install etcd-server etcd-client)"
            ))
        };
        let etcd = supervise::find_program("etcd").ok_or_else(|| missing("etcd"))?;
        let etcdctl = supervise::find_program("etcdctl").ok_or_else(|| missing("etcdctl"))?;
        let (flags, user_keys) = flags(user_settings)?;
        let output = Command::new(&etcd).args(&flags).arg("--version").output().context("running etcd --version")?;
        if !output.status.success() {
            return Err(crate::core::exit::usage(refusal(
                &String::from_utf8_lossy(&output.stderr),
                &user_keys,
                &flags,
            )));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let version = parse_version(&text).with_context(|| format!("reading the version in {:?}", text.trim()))?;
        Ok(Etcd {
            process: ServerProcess::new(),
            etcd,
            etcdctl,
            flags,
            version,
            private: supervise::private_dir("etcd")?,
            data_dir: None,
            ports: (0, 0),
            accounts: 0,
            acked_revision: Arc::new(AtomicI64::new(0)),
            log_start: 0,
        })
    }

    fn client_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.ports.0))
    }

    fn log(&self) -> PathBuf {
        self.private.path().join("etcd.log")
    }

    fn start_failure(&self, summary: String) -> StartFailure {
        let log = supervise::log_tail(&self.log(), self.log_start, usize::MAX);
        StartFailure { summary, log_excerpt: excerpt(&log) }
    }

    fn command(&self, data_dir: &Path) -> Command {
        let client = format!("http://127.0.0.1:{}", self.ports.0);
        let peer = format!("http://127.0.0.1:{}", self.ports.1);
        let mut command = Command::new(&self.etcd);
        command
            .arg(format!("--name={NAME}"))
            .arg(format!("--data-dir={}", data_dir.display()))
            .args([format!("--listen-client-urls={client}"), format!("--advertise-client-urls={client}")])
            .args([format!("--listen-peer-urls={peer}"), format!("--initial-advertise-peer-urls={peer}")])
            .arg(format!("--initial-cluster={NAME}={peer}"))
            .args(["--logger=zap", "--log-outputs=stderr"])
            .args(&self.flags);
        command
    }

    /// Wait until etcd answers a linearizable read (it has a leader and has replayed its WAL).
    fn wait_ready(&mut self) -> Result<(), StartFailure> {
        let deadline = Instant::now() + START_LIMIT;
        while Instant::now() < deadline {
            if let Some(status) = self.process.exited() {
                return Err(self.start_failure(format!("etcd exited during its start ({status})")));
            }
            if http::request(self.client_addr(), "POST", "/v3/kv/range", &kv::key_range("acct/")).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.process.kill();
        Err(self.start_failure(format!("etcd did not answer within {} s", START_LIMIT.as_secs())))
    }

    /// The accounts, `SETUP_PUTS_PER_TXN` puts per txn.
    fn load_accounts(&self, accounts: u32) -> anyhow::Result<()> {
        let all: Vec<u32> = (0..accounts).collect();
        for batch in all.chunks(SETUP_PUTS_PER_TXN) {
            let puts: Vec<_> =
                batch.iter().map(|n| kv::put(&kv::account_key(*n), &INITIAL_BALANCE.to_string())).collect();
            http::request(self.client_addr(), "POST", "/v3/kv/txn", &json!({ "success": puts }))
                .context("creating the accounts")?;
        }
        Ok(())
    }

    fn range(&self, prefix: &str) -> anyhow::Result<serde_json::Value> {
        http::request(self.client_addr(), "POST", "/v3/kv/range", &kv::prefix_range(prefix))
    }

    /// `etcdctl endpoint health`: its line, and whether it says healthy.
    fn endpoint_health(&self) -> anyhow::Result<(bool, String)> {
        let output = Command::new(&self.etcdctl)
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints=http://127.0.0.1:{}", self.ports.0))
            .args(["endpoint", "health"])
            .output()
            .context("running etcdctl endpoint health")?;
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        let healthy = output.status.success() && text.contains("is healthy");
        Ok((healthy, supervise::last_lines(&text, 1)))
    }

    /// Every key of the store read and decoded: the account count, the history parsed, the revision.
    fn read_everything(&self) -> anyhow::Result<(i64, usize)> {
        let accounts = self.range(kv::ACCOUNT_PREFIX)?;
        kv::parse_balances(&kv::kvs(&accounts)?, self.accounts)?;
        let history = self.range(kv::HISTORY_PREFIX)?;
        let rows = kv::kvs(&history)?;
        rows.iter().try_for_each(|kv| kv::parse_history(kv).map(drop))?;
        let all = http::request(
            self.client_addr(),
            "POST",
            "/v3/kv/range",
            &json!({ "key": "AA==", "range_end": "AA==", "count_only": true }),
        )?;
        let count = kv::int64(&all["count"])? as usize;
        if count != self.accounts as usize + rows.len() {
            bail!("{count} keys in the store, but {} accounts and {} history keys", self.accounts, rows.len());
        }
        Ok((kv::header_revision(&history)?, count))
    }
}

impl Server for Etcd {
    fn version(&self) -> String {
        self.version.clone()
    }

    fn create(&mut self, data_dir: &Path, accounts: u32) -> anyhow::Result<()> {
        // The previous database of this cell is done with (the campaign starts a fresh one after damage):
        // remove what etcd made there, or a few dozen fresh databases (64 MiB of preallocated WAL each)
        // fill the lab disk ("no space left on device" seen after 16 on cheating-ssd).
        if let Some(old) = self.data_dir.take() {
            self.process.kill();
            let _ = std::fs::remove_dir_all(old);
        }
        self.data_dir = Some(data_dir.join("etcd"));
        self.accounts = accounts;
        // A new database's revisions start again at 1: the old one's acks say nothing about it.
        self.acked_revision.store(0, Ordering::SeqCst);
        self.ports = free_ports()?;
        self.start().map_err(|f| anyhow::anyhow!("{}\n{}", f.summary, f.log_excerpt))?;
        self.load_accounts(accounts)?;
        // A clean stop, then fsync the whole directory: the setup survives a cut whatever the settings
        // (with unsafe-no-fsync etcd itself never syncs).
        self.stop();
        supervise::sync_tree(data_dir)?;
        self.start().map_err(|f| anyhow::anyhow!("{}\n{}", f.summary, f.log_excerpt))
    }

    fn start(&mut self) -> Result<(), StartFailure> {
        let Some(data_dir) = self.data_dir.clone() else {
            return Err(StartFailure {
                summary: "the etcd driver was not created on a data directory".into(),
                log_excerpt: String::new(),
            });
        };
        self.log_start = supervise::file_len(&self.log());
        if let Err(e) = self.process.spawn(&mut self.command(&data_dir), &self.log()) {
            return Err(self.start_failure(format!("{e:#}")));
        }
        self.wait_ready()
    }

    fn connect(&self) -> anyhow::Result<Box<dyn Client>> {
        let client = client::EtcdClient::new(self.client_addr(), Arc::clone(&self.acked_revision));
        Ok(super::plant::maybe_early_ack(Box::new(client)))
    }

    fn read_state(&mut self) -> anyhow::Result<DbState> {
        let balances = kv::parse_balances(&kv::kvs(&self.range(kv::ACCOUNT_PREFIX)?)?, self.accounts)?;
        let history =
            kv::kvs(&self.range(kv::HISTORY_PREFIX)?)?.iter().map(kv::parse_history).collect::<anyhow::Result<_>>()?;
        Ok(DbState { balances, history })
    }

    fn check_integrity(&mut self) -> anyhow::Result<Integrity> {
        let health = self.endpoint_health()?;
        Ok(judge(health, self.acked_revision.load(Ordering::SeqCst), self.read_everything()))
    }

    fn kill(&mut self) {
        self.process.kill();
    }

    fn stop(&mut self) {
        self.process.terminate(STOP_LIMIT);
    }
}

#[cfg(test)]
#[path = "etcd_tests.rs"]
mod tests;
