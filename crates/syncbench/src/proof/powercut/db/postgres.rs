//! The PostgreSQL driver of `powercut db`: the installed server (Debian's `/usr/lib/postgresql/<v>/bin`, or
//! `postgres` on PATH) in a fresh data directory with data checksums (`initdb -k`), the workload over the
//! `postgres` crate, `pg_amcheck` as the integrity check.
//!
//! **Client: the `postgres` crate, not a `psql` child.** A transfer is acknowledged only once the server's
//! CommandComplete for COMMIT arrived on the socket, which is exactly when `Transaction::commit` returns;
//! serialization failures and deadlocks come back as SQLSTATE codes (40001, 40P01), not as text to parse.
//! A `psql` child would need a line protocol whose output provably follows the COMMIT through psql's
//! stdio buffering on a pipe, and error text parsing. The cost, measured on 2026-11-28 on this 2-vCPU VM
//! (load ~7): the crate adds 35 crates to the lock file (tokio, tokio-postgres, digests, ...) and a clean
//! release build of them alone took 71 s wall / 32 s CPU. It sits behind the `postgres` feature, in the
//! default build.
//!
//! **Processes.** The postmaster is started directly (not through `pg_ctl`) as the `postgres` user (initdb
//! refuses root), in its own process group, so this process is its parent: it waits for it, and `kill`
//! stops it (SIGSTOP: it can fork no more), lists its children (every backend calls setsid(), so a process
//! group kill would miss them), SIGKILLs them all and the postmaster, and waits until they are gone. The
//! socket (no TCP: `listen_addresses = ''`) and the server log live in a private `/tmp/.syncbench-pg-*`
//! directory, never on the lab mount: the log must survive a cut to explain a failed recovery.
//!
//! **Checkpoints during the load.** `checkpoint_timeout` cannot go below 30 s, so while the server runs a
//! background connection issues `CHECKPOINT` every 300 ms: cuts then land during data-page writes and
//! full-page images, not only during WAL writes. `max_wal_size` is small for the same reason.

use super::{Client, DbState, INITIAL_BALANCE, Integrity, Server, StartFailure, Transfer};
use crate::core::cleanup::Created;
use anyhow::{Context, bail};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The port names the socket file only (`listen_addresses = ''`), in a private directory: no clash.
const PORT: u16 = 5432;
/// The background `CHECKPOINT` interval while the server runs.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(300);
/// How long a start (crash recovery included) may take before it is a failed recovery.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a clean stop may take before the server is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `initdb`, `pg_amcheck` and the like may run.
const PROGRAM_TIMEOUT: Duration = Duration::from_secs(300);
/// Lines of the server log in a [`StartFailure`].
const LOG_EXCERPT_LINES: usize = 20;

/// Settings syncbench writes itself (socket, log, paths): a `--set` of one of them is refused.
const RESERVED: &[&str] = &[
    "listen_addresses",
    "unix_socket_directories",
    "port",
    "data_directory",
    "config_file",
    "hba_file",
    "ident_file",
    "logging_collector",
    "external_pid_file",
];

/// The settings syncbench adds after initdb's postgresql.conf (the user's `--set` come after and win).
fn base_conf(socket_dir: &Path) -> String {
    format!(
        "\n# syncbench powercut db\nlisten_addresses = ''\nunix_socket_directories = '{}'\nport = {PORT}\n\
         logging_collector = off\ncheckpoint_timeout = 30s\nmax_wal_size = 32MB\nmin_wal_size = 32MB\n\
         shared_buffers = 16MB\n",
        socket_dir.display()
    )
}

/// One PostgreSQL server for `powercut db`.
pub struct PostgresServer {
    bin: PathBuf,
    version: String,
    settings: Vec<(String, String)>,
    owner: Owner,
    /// The socket and the server log; removed when the server is dropped (after the kill).
    private: Created,
    data_dir: Option<PathBuf>,
    accounts: u32,
    postmaster: Option<Child>,
    checkpointer: Option<Checkpointer>,
}

/// The user the server's programs run as: `postgres` when syncbench is root, else syncbench's own.
#[derive(Clone, Copy, Debug)]
struct Owner {
    ids: Option<(u32, u32)>,
}

impl PostgresServer {
    /// A server with `settings` (`--set KEY=VALUE` pairs, in order): finds the installed PostgreSQL and
    /// refuses a key the server does not know (or one syncbench sets itself), naming it. Values are checked
    /// by the server at [`Server::create`].
    pub fn new(settings: &[(String, String)]) -> anyhow::Result<PostgresServer> {
        let bin = find_bin()?;
        let owner = Owner::find()?;
        let version = server_version(&bin)?;
        check_setting_syntax(settings)?;
        let known = known_settings(&bin, owner)?;
        check_settings_known(settings, &known)?;
        let private = make_private_dir(owner)?;
        Ok(PostgresServer {
            bin,
            version,
            settings: settings.to_vec(),
            owner,
            private,
            data_dir: None,
            accounts: 0,
            postmaster: None,
            checkpointer: None,
        })
    }

    /// A command for the server's program `name`, as its user, in the private directory. The campaign's
    /// `process::spawn` gives it `SYNCBENCH_LAB_MOUNT`, so `syncbench cleanup` finds a postmaster that
    /// outlived syncbench.
    fn command(&self, name: &str) -> Command {
        self.owner.command(&self.bin.join(name), self.socket_dir())
    }

    /// Why this server's settings may lose acknowledged commits or damage pages, if they may (the campaign
    /// labels such a cell a negative control).
    pub fn loss_expected(&self) -> Option<&'static str> {
        loss_expected(&self.settings)
    }

    /// How many background `CHECKPOINT`s completed since the last start (0 when not running).
    pub fn checkpoints(&self) -> u64 {
        self.checkpointer.as_ref().map_or(0, |c| c.done.load(Ordering::Relaxed))
    }

    /// The postmaster's pid, while it runs.
    pub fn postmaster_pid(&self) -> Option<u32> {
        self.postmaster.as_ref().map(Child::id)
    }

    /// The file holding `table`'s first segment (for tests that damage a page, and for aiming cuts at
    /// data-page writes).
    pub fn relation_file(&self, table: &str) -> anyhow::Result<PathBuf> {
        let row = self.connect_client()?.query_one("SELECT pg_relation_filepath($1::text::regclass)", &[&table])?;
        Ok(self.data_dir()?.join(row.get::<_, String>(0)))
    }

    fn socket_dir(&self) -> &Path {
        self.private.path()
    }

    fn log_path(&self) -> PathBuf {
        self.private.path().join("server.log")
    }

    fn data_dir(&self) -> anyhow::Result<&Path> {
        self.data_dir.as_deref().context("the PostgreSQL data directory was not created")
    }

    fn connect_client(&self) -> anyhow::Result<postgres::Client> {
        connect(self.socket_dir())
    }
}

/// Why `settings` may lose acknowledged commits or damage pages, if they may. The last value of a key wins,
/// as in postgresql.conf.
pub fn loss_expected(settings: &[(String, String)]) -> Option<&'static str> {
    let value = |key: &str| settings.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v);
    if value("fsync").and_then(|v| pg_bool(v)) == Some(false) {
        return Some("fsync = off: PostgreSQL never flushes, so a power cut may lose or corrupt anything");
    }
    if value("synchronous_commit").and_then(|v| pg_bool(v)) == Some(false) {
        return Some(
            "synchronous_commit = off: COMMIT returns before its WAL is flushed (up to 3 × wal_writer_delay lost)",
        );
    }
    if value("full_page_writes").and_then(|v| pg_bool(v)) == Some(false) {
        return Some("full_page_writes = off: a page torn by the cut cannot be repaired from the WAL");
    }
    None
}

/// A PostgreSQL boolean as the server parses it (`on`, `off`, `true`, `yes`, `1`, unique prefixes), or
/// `None` when it is not one.
pub fn pg_bool(value: &str) -> Option<bool> {
    let v = value.trim().trim_matches('\'').to_ascii_lowercase();
    let prefix_of = |word: &str| !v.is_empty() && word.starts_with(&v);
    match v.as_str() {
        "on" | "1" => Some(true),
        "off" | "of" | "0" => Some(false),
        _ if prefix_of("true") || prefix_of("yes") => Some(true),
        _ if prefix_of("false") || prefix_of("no") => Some(false),
        _ => None,
    }
}

/// Keys are PostgreSQL identifiers, values one line: nothing a `--set` holds can add a line to
/// postgresql.conf.
pub fn check_setting_syntax(settings: &[(String, String)]) -> anyhow::Result<()> {
    for (key, value) in settings {
        let ident = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !ident {
            bail!("--set {key:?}: not a PostgreSQL setting name (letters, digits, _ and . only)");
        }
        if value.chars().any(char::is_control) {
            bail!("--set {key}: the value holds a control character (a line break?)");
        }
        if RESERVED.contains(&key.to_ascii_lowercase().as_str()) {
            bail!("--set {key}: syncbench sets this itself (private socket, no TCP, its own log); leave it out");
        }
    }
    Ok(())
}

/// Every key of `settings` is in `known` (the server's `--describe-config` names), or an error naming the
/// first that is not.
pub fn check_settings_known(settings: &[(String, String)], known: &[String]) -> anyhow::Result<()> {
    for (key, _) in settings {
        if !known.iter().any(|k| k.eq_ignore_ascii_case(key)) {
            bail!("--set {key}: PostgreSQL has no such setting (see `postgres --describe-config`)");
        }
    }
    Ok(())
}

/// The lines the user's settings add to postgresql.conf (single quotes doubled, as the file's syntax wants).
pub fn settings_conf(settings: &[(String, String)]) -> String {
    settings.iter().map(|(k, v)| format!("{k} = '{}'\n", v.replace('\'', "''"))).collect()
}

/// The server's own words about a refused setting: its `invalid value`/`FATAL` lines, the timestamps
/// dropped, on one line.
pub fn refusal_lines(log: &str) -> String {
    let wanted = |l: &&str| {
        ["invalid value", "FATAL", "HINT", "unrecognized", "parameter", "could not"].iter().any(|w| l.contains(w))
    };
    let lines: Vec<&str> = log.lines().filter(wanted).map(strip_log_prefix).collect();
    if lines.is_empty() { last_lines(log, 3).replace('\n', " / ") } else { lines.join(" / ") }
}

/// `2026-11-28 21:13:08.854 UTC [17771] LOG:  text` → `LOG:  text`.
fn strip_log_prefix(line: &str) -> &str {
    ["LOG:", "FATAL:", "HINT:", "ERROR:", "PANIC:", "DETAIL:", "WARNING:"]
        .iter()
        .filter_map(|tag| line.find(tag))
        .min()
        .map_or(line, |at| &line[at..])
}

/// The last `n` lines of `text`.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Owner {
    /// `postgres` (from /etc/passwd) when syncbench runs as root; else no switch.
    fn find() -> anyhow::Result<Owner> {
        use std::os::unix::fs::MetadataExt;
        let euid = std::fs::metadata("/proc/self").context("reading /proc/self")?.uid();
        if euid != 0 {
            return Ok(Owner { ids: None });
        }
        let passwd = std::fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
        let ids = passwd.lines().find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            (f.first() == Some(&"postgres") && f.len() > 3).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
        });
        let ids = ids.context(
            "PostgreSQL will not run as root and there is no `postgres` user: install the server package (Debian: apt-get install postgresql)",
        )?;
        Ok(Owner { ids: Some(ids) })
    }

    /// A command for `program` run as this owner, in `dir`, with messages in English.
    fn command(self, program: &Path, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(dir).env("LC_ALL", "C").env("LANG", "C").env_remove("PGDATA").stdin(Stdio::null());
        if let Some((uid, gid)) = self.ids {
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    fn chown(self, path: &Path) -> anyhow::Result<()> {
        if let Some((uid, gid)) = self.ids {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .with_context(|| format!("chown {}", path.display()))?;
        }
        Ok(())
    }
}

/// The newest `/usr/lib/postgresql/<v>/bin` with a `postgres` in it, else the directory of `postgres` on
/// PATH.
fn find_bin() -> anyhow::Result<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("postgres").is_file())
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("postgres"))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok()?.parent().map(Path::to_path_buf))
        .context("PostgreSQL server not found (no /usr/lib/postgresql/*/bin/postgres, no postgres on PATH): install it (Debian: apt-get install postgresql)")
}

/// "PostgreSQL 15.18" from `postgres --version` ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)").
fn server_version(bin: &Path) -> anyhow::Result<String> {
    let out = Command::new(bin.join("postgres")).arg("--version").stdin(Stdio::null()).output();
    let out = out.with_context(|| format!("running {} --version", bin.join("postgres").display()))?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
        .with_context(|| format!("{} --version said {:?}", bin.display(), String::from_utf8_lossy(&out.stdout)))
}

/// The version in `postgres --version`'s line.
pub fn parse_version(line: &str) -> Option<String> {
    let after = line.split_once("(PostgreSQL)")?.1;
    let number = after.split_whitespace().next()?;
    Some(format!("PostgreSQL {number}"))
}

/// Every setting name the server knows (`postgres --describe-config`, one tab-separated line each).
fn known_settings(bin: &Path, owner: Owner) -> anyhow::Result<Vec<String>> {
    let out = owner.command(&bin.join("postgres"), Path::new("/")).arg("--describe-config").output();
    let out = out.context("running postgres --describe-config")?;
    if !out.status.success() {
        bail!("postgres --describe-config failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().filter_map(|l| l.split('\t').next()).filter(|n| !n.is_empty()).map(str::to_string).collect())
}

/// The private directory (socket, server log) under the temporary directory, owned by the server's user.
fn make_private_dir(owner: Owner) -> anyhow::Result<Created> {
    use std::os::unix::fs::PermissionsExt;
    static N: AtomicU64 = AtomicU64::new(0);
    let name =
        format!("{}pg-{}-{}", crate::core::cleanup::PREFIX, std::process::id(), N.fetch_add(1, Ordering::Relaxed));
    let path = std::env::temp_dir().join(name);
    let (created, ()) =
        Created::create(path.clone(), |p| std::fs::create_dir(p).with_context(|| format!("creating {}", p.display())))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
    owner.chown(&path)?;
    Ok(created)
}

/// A client on the server's socket.
fn connect(socket_dir: &Path) -> anyhow::Result<postgres::Client> {
    let mut config = postgres::Config::new();
    config.host_path(socket_dir).port(PORT).user("postgres").dbname("postgres");
    config.connect_timeout(Duration::from_secs(10));
    config.connect(postgres::NoTls).context("connecting to PostgreSQL")
}

/// Run `cmd` to its end (at most [`PROGRAM_TIMEOUT`]), its stdout and stderr in files of `dir`; returns
/// whether it succeeded and what it printed.
fn run_program(mut cmd: Command, dir: &Path, name: &str) -> anyhow::Result<(bool, String)> {
    let out_path = dir.join(format!("{name}.out"));
    let out = std::fs::File::create(&out_path).with_context(|| format!("creating {}", out_path.display()))?;
    cmd.stdout(out.try_clone()?).stderr(out);
    let mut child = super::process::spawn(&mut cmd).with_context(|| format!("starting {name}"))?;
    let deadline = Instant::now() + PROGRAM_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            super::process::reaped(child.id() as i32);
            break Some(status);
        }
        if Instant::now() > deadline {
            super::process::kill(&mut child);
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    match status {
        None => bail!("{name} did not finish in {} s: {}", PROGRAM_TIMEOUT.as_secs(), last_lines(&text, 3)),
        Some(status) => Ok((status.success(), text)),
    }
}

impl PostgresServer {
    /// `initdb -k` into `data_dir` (not synced: [`Server::create`] syncs the whole file system once the
    /// tables are filled), then the settings appended to postgresql.conf and checked by `postgres -C`.
    fn initdb(&self, data_dir: &Path) -> anyhow::Result<()> {
        self.owner.chown(data_dir)?;
        let mut cmd = self.command("initdb");
        cmd.args(["-k", "-A", "trust", "-U", "postgres", "--no-sync", "--no-instructions", "-E", "UTF8", "-D"]);
        cmd.arg(data_dir);
        let (ok, text) = run_program(cmd, self.socket_dir(), "initdb")?;
        if !ok {
            bail!("initdb -D {} failed: {}", data_dir.display(), last_lines(&text, 3).replace('\n', " / "));
        }
        let conf = data_dir.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).with_context(|| format!("reading {}", conf.display()))?;
        text += &base_conf(self.socket_dir());
        text += &settings_conf(&self.settings);
        std::fs::write(&conf, text).with_context(|| format!("writing {}", conf.display()))?;
        let mut check = self.command("postgres");
        check.arg("-D").arg(data_dir).args(["-C", "wal_sync_method"]);
        let (ok, text) = run_program(check, self.socket_dir(), "postgres-C")?;
        if !ok {
            bail!("PostgreSQL refused the settings: {}", refusal_lines(&text));
        }
        Ok(())
    }

    /// The accounts, the history, amcheck; a checkpoint; then syncfs over the data directory's file system
    /// (`sync -f`), so the start state is durable even under `fsync = off`.
    fn fill(&self, accounts: u32) -> anyhow::Result<()> {
        let mut client = self.connect_client()?;
        let sql = format!(
            "CREATE EXTENSION IF NOT EXISTS amcheck;\n\
             CREATE TABLE accounts (id integer PRIMARY KEY, balance bigint NOT NULL, filler char(84) NOT NULL DEFAULT '');\n\
             CREATE TABLE history (id bigint PRIMARY KEY, from_acct integer NOT NULL, to_acct integer NOT NULL, amount bigint NOT NULL);\n\
             INSERT INTO accounts (id, balance) SELECT g, {INITIAL_BALANCE} FROM generate_series(0, {}) g;\n\
             CHECKPOINT;",
            i64::from(accounts) - 1
        );
        client.batch_execute(&sql).context("creating the accounts and history tables")?;
        let data_dir = self.data_dir()?;
        let out =
            Command::new("sync").arg("-f").arg(data_dir).stdin(Stdio::null()).output().context("running sync -f")?;
        if !out.status.success() {
            bail!("sync -f {} failed: {}", data_dir.display(), String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(())
    }

    /// Spawn the postmaster on the data directory, its output appended to the private log.
    fn spawn_postmaster(&mut self) -> anyhow::Result<u64> {
        let log_path = self.log_path();
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path)?;
        let log_start = log.metadata()?.len();
        let data_dir = self.data_dir()?.to_path_buf();
        let mut cmd = self.command("postgres");
        cmd.arg("-D").arg(&data_dir).stdout(log.try_clone()?).stderr(log);
        // Recorded (as its own process group) so that Ctrl-C and SIGTERM kill it; its children exit when it dies.
        self.postmaster = Some(super::process::spawn(&mut cmd).context("starting postgres")?);
        Ok(log_start)
    }

    /// Wait until the server accepts a client, or its postmaster exits, or [`START_TIMEOUT`].
    fn wait_ready(&mut self, log_start: u64) -> Result<(), StartFailure> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.exited_status() {
                if let Some(pm) = self.postmaster.take() {
                    super::process::reaped(pm.id() as i32);
                }
                return Err(self.start_failure(&format!("postgres exited during its start ({status})"), log_start));
            }
            match self.connect_client() {
                Ok(_) => return Ok(()),
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => {
                    self.kill();
                    let summary =
                        format!("postgres did not accept clients within {} s: {e:#}", START_TIMEOUT.as_secs());
                    return Err(self.start_failure(&summary, log_start));
                }
            }
        }
    }
}

impl PostgresServer {
    /// The postmaster's exit status, if it exited.
    fn exited_status(&mut self) -> Option<std::process::ExitStatus> {
        self.postmaster.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// A [`StartFailure`] with the server log written since `log_start`.
    fn start_failure(&self, summary: &str, log_start: u64) -> StartFailure {
        let log = std::fs::read(self.log_path()).unwrap_or_default();
        let since = usize::try_from(log_start).unwrap_or(0).min(log.len());
        let text = String::from_utf8_lossy(&log[since..]);
        StartFailure { summary: summary.to_string(), log_excerpt: last_lines(&text, LOG_EXCERPT_LINES) }
    }
}

impl Server for PostgresServer {
    fn version(&self) -> String {
        self.version.clone()
    }

    fn create(&mut self, data_dir: &Path, accounts: u32) -> anyhow::Result<()> {
        if accounts == 0 {
            bail!("powercut db needs at least one account");
        }
        self.kill();
        self.data_dir = Some(data_dir.to_path_buf());
        self.accounts = accounts;
        self.initdb(data_dir)?;
        if let Err(failure) = self.start() {
            bail!(
                "PostgreSQL did not start with these settings: {} ({})",
                failure.summary,
                refusal_lines(&failure.log_excerpt)
            );
        }
        self.fill(accounts)
    }

    fn start(&mut self) -> Result<(), StartFailure> {
        self.kill();
        let log_start = match self.spawn_postmaster() {
            Ok(at) => at,
            Err(e) => return Err(StartFailure { summary: format!("{e:#}"), log_excerpt: String::new() }),
        };
        self.wait_ready(log_start)?;
        self.checkpointer = Some(Checkpointer::start(self.socket_dir().to_path_buf()));
        Ok(())
    }

    fn connect(&self) -> anyhow::Result<Box<dyn Client>> {
        Ok(super::plant::maybe_early_ack(Box::new(PostgresClient::new(self.connect_client()?)?)))
    }

    fn read_state(&mut self) -> anyhow::Result<DbState> {
        let mut client = self.connect_client()?;
        let mut balances = Vec::with_capacity(self.accounts as usize);
        for row in client.query("SELECT id, balance FROM accounts ORDER BY id", &[]).context("reading accounts")? {
            let (id, balance): (i32, i64) = (row.get(0), row.get(1));
            if usize::try_from(id).ok() != Some(balances.len()) {
                bail!("account {} is missing (next row is account {id})", balances.len());
            }
            balances.push(balance);
        }
        if balances.len() != self.accounts as usize {
            bail!("account {} is missing ({} of {} accounts read)", balances.len(), balances.len(), self.accounts);
        }
        let rows =
            client.query("SELECT id, from_acct, to_acct, amount FROM history", &[]).context("reading history")?;
        let history = rows.iter().map(history_row).collect::<anyhow::Result<Vec<Transfer>>>()?;
        Ok(DbState { balances, history })
    }

    fn check_integrity(&mut self) -> anyhow::Result<Integrity> {
        let mut cmd = self.command("pg_amcheck");
        cmd.arg("-h").arg(self.socket_dir()).args(["-p", &PORT.to_string(), "-U", "postgres", "-d", "postgres"]);
        cmd.args(["--heapallindexed", "--no-strict-names"]);
        let started = Instant::now();
        let (ok, text) = run_program(cmd, self.socket_dir(), "pg_amcheck")?;
        let took = started.elapsed().as_secs_f64();
        if ok && text.trim().is_empty() {
            let detail =
                format!("pg_amcheck --heapallindexed (heap and btree, data checksums on): no corruption ({took:.1} s)");
            return Ok(Integrity { ok: true, detail });
        }
        Ok(Integrity { ok: false, detail: format!("pg_amcheck --heapallindexed: {}", last_lines(text.trim(), 10)) })
    }

    fn kill(&mut self) {
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.stop.store(true, Ordering::Relaxed);
        }
        if let Some(mut postmaster) = self.postmaster.take() {
            kill_tree(&mut postmaster);
        }
        if let Some(checkpointer) = self.checkpointer.take() {
            checkpointer.join();
        }
    }

    fn stop(&mut self) {
        if let Some(checkpointer) = self.checkpointer.take() {
            checkpointer.stop.store(true, Ordering::Relaxed);
            checkpointer.join();
        }
        let Some(postmaster) = self.postmaster.as_mut() else { return };
        // SIGINT: fast shutdown (clients disconnected, a shutdown checkpoint).
        if let Ok(pid) = i32::try_from(postmaster.id()) {
            let _ = syncbench_sys::ptrace::send_signal(pid, libc::SIGINT);
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if matches!(postmaster.try_wait(), Ok(Some(_))) {
                super::process::reaped(postmaster.id() as i32);
                self.postmaster = None;
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A history row as a [`Transfer`].
fn history_row(row: &postgres::Row) -> anyhow::Result<Transfer> {
    let (id, from, to, amount): (i64, i32, i32, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
    Ok(Transfer {
        id: u64::try_from(id).with_context(|| format!("history row with negative id {id}"))?,
        from: u32::try_from(from).with_context(|| format!("history row {id}: negative account {from}"))?,
        to: u32::try_from(to).with_context(|| format!("history row {id}: negative account {to}"))?,
        amount,
    })
}

/// SIGKILL the postmaster and every child at once, as a power cut would, and wait until all are gone.
/// The postmaster is stopped first so that it can fork no child between the listing and the kill.
fn kill_tree(postmaster: &mut Child) {
    let Ok(pid) = i32::try_from(postmaster.id()) else { return };
    if matches!(postmaster.try_wait(), Ok(Some(_))) {
        super::process::reaped(pid);
        return;
    }
    let _ = syncbench_sys::ptrace::send_signal(pid, libc::SIGSTOP);
    let deadline = Instant::now() + Duration::from_secs(2);
    while process_state(postmaster.id()).is_some_and(|s| s != 'T' && s != 'Z') && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let children = children_of(postmaster.id());
    for &child in &children {
        if let Ok(child) = i32::try_from(child) {
            let _ = syncbench_sys::ptrace::send_signal(child, libc::SIGKILL);
        }
    }
    super::process::kill(postmaster);
    // A child blocked in an fsync on a dead disk dies when the call returns: wait, bounded.
    let deadline = Instant::now() + Duration::from_secs(30);
    while children.iter().any(|&c| process_state(c).is_some_and(|s| s != 'Z')) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The state letter of `/proc/<pid>/stat` (`R`, `S`, `D`, `T`, `Z`, ...), `None` when the process is gone.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().next()?.chars().next()
}

/// The processes whose parent is `parent`.
pub fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            ppid == Some(parent)
        })
        .collect()
}

/// The background connection that asks for a `CHECKPOINT` every [`CHECKPOINT_INTERVAL`] while the server
/// runs. It stops at `stop`, or when the server goes (connection lost).
struct Checkpointer {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl Checkpointer {
    fn start(socket_dir: PathBuf) -> Checkpointer {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let (stop_flag, counter) = (Arc::clone(&stop), Arc::clone(&done));
        let thread = std::thread::spawn(move || {
            let Ok(mut client) = connect(&socket_dir) else { return };
            while !stop_flag.load(Ordering::Relaxed) {
                // An error (the server was killed, or refused) ends the loop: the campaign sees the cause.
                if client.batch_execute("CHECKPOINT").is_err() {
                    return;
                }
                counter.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(CHECKPOINT_INTERVAL);
            }
        });
        Checkpointer { stop, done, thread }
    }

    fn join(self) {
        let _ = self.thread.join();
    }
}

/// One client connection and its prepared statements.
pub struct PostgresClient {
    client: postgres::Client,
    update: postgres::Statement,
    insert: postgres::Statement,
}

impl PostgresClient {
    fn new(mut client: postgres::Client) -> anyhow::Result<PostgresClient> {
        let update = client.prepare("UPDATE accounts SET balance = balance + $1 WHERE id = $2")?;
        let insert = client.prepare("INSERT INTO history (id, from_acct, to_acct, amount) VALUES ($1, $2, $3, $4)")?;
        Ok(PostgresClient { client, update, insert })
    }

    /// The transaction; `Ok` once COMMIT returned success.
    fn run(&mut self, t: &Transfer) -> Result<(), TransferError> {
        let id =
            i64::try_from(t.id).map_err(|_| TransferError::Other(anyhow::anyhow!("transfer id {} ≥ 2^63", t.id)))?;
        let (from, to) = (account(t.from)?, account(t.to)?);
        // The two rows are locked in account order: concurrent transfers then never deadlock.
        let mut updates = [(from, -t.amount), (to, t.amount)];
        updates.sort_by_key(|&(acct, _)| acct);
        let mut tx = self.client.transaction()?;
        for (acct, delta) in updates {
            let rows = tx.execute(&self.update, &[&delta, &acct])?;
            if rows != 1 {
                return Err(TransferError::Other(anyhow::anyhow!("account {acct} is missing ({rows} rows updated)")));
            }
        }
        tx.execute(&self.insert, &[&id, &from, &to, &t.amount])?;
        tx.commit()?;
        Ok(())
    }
}

fn account(n: u32) -> Result<i32, TransferError> {
    i32::try_from(n).map_err(|_| TransferError::Other(anyhow::anyhow!("account {n} ≥ 2^31")))
}

/// A transfer's failure: rolled back by the server for a retryable reason, or anything else.
enum TransferError {
    Retry,
    Other(anyhow::Error),
}

impl From<postgres::Error> for TransferError {
    fn from(e: postgres::Error) -> TransferError {
        use postgres::error::SqlState;
        match e.code() {
            Some(code) if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED => {
                TransferError::Retry
            }
            _ => TransferError::Other(anyhow::Error::new(e).context("PostgreSQL transfer")),
        }
    }
}

impl Client for PostgresClient {
    fn transfer(&mut self, transfer: &Transfer) -> anyhow::Result<bool> {
        match self.run(transfer) {
            Ok(()) => Ok(true),
            Err(TransferError::Retry) => Ok(false),
            Err(TransferError::Other(e)) => Err(e),
        }
    }
}

#[cfg(test)]
#[path = "postgres_tests.rs"]
mod tests;
