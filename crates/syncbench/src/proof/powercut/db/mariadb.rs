//! The MariaDB driver of `powercut db`: the installed `mariadbd` (or `mysqld`) on a fresh data directory,
//! InnoDB tables, clients through the installed `mariadb` program (why: [`client`]).
//!
//! The server never reads an option file (`--no-defaults`) and never listens on the network: its socket,
//! pid file and error log are in a private directory in /tmp (`.syncbench-mariadb-*`, not on the lab
//! mount, so a cut never takes the log of a failed recovery with it). Settings are mariadbd options
//! (`innodb_flush_log_at_trx_commit`, `innodb_doublewrite`, `innodb_flush_method`, `sync_binlog`,
//! `innodb_page_size`, ...), checked by mariadbd itself before anything starts ([`settings`]).
//! Integrity is `CHECK TABLE accounts, history EXTENDED` plus the `[ERROR]` lines of the error log since
//! the server's last start (a page InnoDB found corrupt during recovery is logged there).

pub mod client;
pub mod settings;
pub mod supervise;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use self::client::{DATABASE, Endpoint, MariaClient};
use self::settings::Settings;
use self::supervise::ServerProcess;
use super::{Client, DbState, INITIAL_BALANCE, Integrity, Server, StartFailure, Transfer};

/// How long a start (crash recovery included, on a slow lab disk) may take.
const START_LIMIT: Duration = Duration::from_secs(180);
/// How long a clean shutdown may take before the server is killed.
const STOP_LIMIT: Duration = Duration::from_secs(120);
/// Lines of the error log a failure quotes.
const EXCERPT_LINES: usize = 20;

/// The programs of an installed MariaDB (or MySQL).
#[derive(Clone, Debug)]
struct Programs {
    server: PathBuf,
    client: PathBuf,
    install_db: PathBuf,
}

impl Programs {
    fn find() -> anyhow::Result<Programs> {
        let find = |names: &[&str]| names.iter().find_map(|n| supervise::find_program(n));
        let missing = |what: &str| {
            crate::core::exit::usage(format!(
                "{what} is not installed: install MariaDB (Debian: apt-get install mariadb-server)"
            ))
        };
        Ok(Programs {
            server: find(&["mariadbd", "mysqld"]).ok_or_else(|| missing("mariadbd"))?,
            client: find(&["mariadb", "mysql"]).ok_or_else(|| missing("the mariadb client"))?,
            install_db: find(&["mariadb-install-db", "mysql_install_db"])
                .ok_or_else(|| missing("mariadb-install-db"))?,
        })
    }
}

/// `MariaDB 10.11.19` from `mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64`.
pub fn parse_version(text: &str) -> Option<String> {
    let rest = text.split_once(" Ver ")?.1.trim_start();
    let full = rest.split_whitespace().next()?;
    let number = full.split('-').next()?;
    let flavour = if full.contains("MariaDB") { "MariaDB" } else { "MySQL" };
    Some(format!("{flavour} {number}"))
}

/// A MariaDB server for one cell.
pub struct MariaDb {
    /// First field: dropped (the server killed) before the private directory goes.
    process: ServerProcess,
    programs: Programs,
    settings: Settings,
    version: String,
    private: crate::core::cleanup::Created,
    data_dir: Option<PathBuf>,
    accounts: u32,
    /// Where the error log of the current start begins.
    log_start: u64,
}

impl MariaDb {
    /// A driver with the user's `--set` pairs: finds the programs, asks mariadbd whether it takes every
    /// setting as given (usage error naming the key if not), makes the private directory.
    pub fn new(user_settings: &[(String, String)]) -> anyhow::Result<MariaDb> {
        let programs = Programs::find()?;
        let settings = Settings::new(user_settings)?;
        settings.check(&programs.server)?;
        let output = Command::new(&programs.server).arg("--version").output().context("running mariadbd --version")?;
        let text = String::from_utf8_lossy(&output.stdout);
        let version = parse_version(&text).with_context(|| format!("reading the version of {:?}", text.trim()))?;
        let private = supervise::private_dir("mariadb")?;
        Ok(MariaDb {
            process: ServerProcess::new(),
            programs,
            settings,
            version,
            private,
            data_dir: None,
            accounts: 0,
            log_start: 0,
        })
    }

    fn socket(&self) -> PathBuf {
        self.private.path().join("sock")
    }

    fn error_log(&self) -> PathBuf {
        self.private.path().join("error.log")
    }

    /// The server's own temporary directory: concurrent bootstraps sharing /tmp fail now and then
    /// ("Unknown table 'mysql.tmp_user_sys'" after "Could not remove temporary table '/tmp/#sql-temptable-…'").
    fn tmp_dir(&self) -> anyhow::Result<PathBuf> {
        let dir = self.private.path().join("tmp");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint { client: self.programs.client.clone(), socket: self.socket() }
    }

    fn data_dir(&self) -> anyhow::Result<&Path> {
        self.data_dir.as_deref().context("the MariaDB driver was not created on a data directory")
    }

    /// `mariadb-install-db` into the empty `data_dir`, with the cell's settings (the page size is fixed here).
    fn install(&self, data_dir: &Path) -> anyhow::Result<()> {
        let log = self.private.path().join("install.log");
        let from = supervise::file_len(&log);
        // One open file (appending) for both streams, so that neither overwrites the other.
        let out = std::fs::File::options().create(true).append(true).open(&log)?;
        let status = supervise::run_to_end(
            Command::new(&self.programs.install_db)
                .args(["--no-defaults", "--user=root", "--auth-root-authentication-method=normal", "--skip-test-db"])
                .arg(format!("--datadir={}", data_dir.display()))
                .arg(format!("--tmpdir={}", self.tmp_dir()?.display()))
                .args(self.settings.args())
                .stdin(std::process::Stdio::null())
                .stdout(out.try_clone()?)
                .stderr(out),
        )?;
        if !status.success() {
            // Its last lines are advice boilerplate: quote the errors above them.
            let text = supervise::log_tail(&log, from, usize::MAX);
            let errors: Vec<&str> = text.lines().filter(|l| l.contains("ERROR") || l.contains("rror:")).collect();
            let quoted = if errors.is_empty() { text.clone() } else { errors.join("\n") };
            bail!("mariadb-install-db failed ({status}):\n{}", supervise::last_lines(&quoted, EXCERPT_LINES));
        }
        Ok(())
    }

    /// The schema and the accounts, in one transaction.
    fn load_schema(&self, accounts: u32) -> anyhow::Result<()> {
        let rows: Vec<String> = (0..accounts).map(|id| format!("({id},{INITIAL_BALANCE})")).collect();
        let sql = format!(
            "CREATE DATABASE {DATABASE}; USE {DATABASE};\
             CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL, \
               filler CHAR(84) CHARACTER SET latin1 NOT NULL DEFAULT '') ENGINE=InnoDB;\
             CREATE TABLE history (id BIGINT UNSIGNED PRIMARY KEY, src INT NOT NULL, dst INT NOT NULL, \
               amount BIGINT NOT NULL) ENGINE=InnoDB;\
             BEGIN; INSERT INTO accounts (id, balance) VALUES {}; COMMIT;",
            rows.join(",")
        );
        self.endpoint().query(None, &sql).context("creating the tables")?;
        Ok(())
    }

    fn start_failure(&self, summary: String) -> StartFailure {
        StartFailure { summary, log_excerpt: supervise::log_tail(&self.error_log(), self.log_start, EXCERPT_LINES) }
    }

    /// Wait until the server answers on its socket; a server that exits first, or does not answer in
    /// [`START_LIMIT`], is a failed start.
    fn wait_ready(&mut self) -> Result<(), StartFailure> {
        let deadline = Instant::now() + START_LIMIT;
        let socket = self.socket();
        while Instant::now() < deadline {
            if let Some(status) = self.process.exited() {
                return Err(self.start_failure(format!("mariadbd exited during its start ({status})")));
            }
            if socket.exists() && self.endpoint().query(None, "SELECT 1").is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.process.kill();
        Err(self.start_failure(format!("mariadbd did not accept clients within {} s", START_LIMIT.as_secs())))
    }

    /// The value the running server has for a global variable (`innodb_flush_method`, ...): what a cell
    /// actually ran with.
    pub fn variable(&self, name: &str) -> anyhow::Result<String> {
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            bail!("not a variable name: {name:?}");
        }
        let text = self.endpoint().query(None, &format!("SELECT @@GLOBAL.{name}"))?;
        Ok(text.trim().to_string())
    }

    /// The `[ERROR]` lines of the error log since the current start.
    fn logged_errors(&self) -> Vec<String> {
        let text = supervise::log_tail(&self.error_log(), self.log_start, usize::MAX);
        text.lines().filter(|l| l.contains("[ERROR]")).map(str::to_string).collect()
    }
}

/// Remove everything in `dir` (not `dir`): best effort, a cut may have left it unreadable.
fn remove_contents(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let _ = if is_dir { std::fs::remove_dir_all(entry.path()) } else { std::fs::remove_file(entry.path()) };
    }
}

/// Balances and history rows from `SELECT 'a', id, balance ...; SELECT 'h', id, src, dst, amount ...`.
pub fn parse_state(text: &str, accounts: u32) -> anyhow::Result<DbState> {
    let mut state = DbState { balances: Vec::with_capacity(accounts as usize), history: Vec::new() };
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            ["a", id, balance] => {
                let id: u32 = id.parse().with_context(|| format!("account row {line:?}"))?;
                if id as usize != state.balances.len() {
                    bail!("account {} is missing (next row is account {id})", state.balances.len());
                }
                state.balances.push(balance.parse().with_context(|| format!("account row {line:?}"))?);
            }
            ["h", id, from, to, amount] => state.history.push(Transfer {
                id: id.parse().with_context(|| format!("history row {line:?}"))?,
                from: from.parse().with_context(|| format!("history row {line:?}"))?,
                to: to.parse().with_context(|| format!("history row {line:?}"))?,
                amount: amount.parse().with_context(|| format!("history row {line:?}"))?,
            }),
            _ => bail!("unexpected row from the mariadb client: {line:?}"),
        }
    }
    if state.balances.len() != accounts as usize {
        bail!("{} of {accounts} accounts read back: the others are missing", state.balances.len());
    }
    Ok(state)
}

/// CHECK TABLE's rows (`bank.accounts  check  status  OK`): passed when every row is a status of OK and
/// every table in `tables` has one.
pub fn judge_check_table(text: &str, tables: &[&str]) -> Integrity {
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    let is_ok = |r: &Vec<&str>| r.len() == 4 && r[2] == "status" && r[3] == "OK";
    let all_ok = rows.iter().all(is_ok);
    let covered = tables.iter().all(|t| rows.iter().any(|r| is_ok(r) && r[0].ends_with(&format!(".{t}"))));
    let detail = if all_ok && covered {
        format!("CHECK TABLE {} EXTENDED: OK", tables.join(", "))
    } else {
        format!("CHECK TABLE {} EXTENDED: {}", tables.join(", "), text.trim().replace('\t', " ").replace('\n', "; "))
    };
    Integrity { ok: all_ok && covered, detail }
}

impl Server for MariaDb {
    fn version(&self) -> String {
        self.version.clone()
    }

    fn create(&mut self, data_dir: &Path, accounts: u32) -> anyhow::Result<()> {
        // The previous database of this cell is done with: remove what mariadb-install-db and the server
        // made in its directory (the directory is the campaign's), so fresh databases do not fill the disk.
        if let Some(old) = self.data_dir.take() {
            self.process.kill();
            remove_contents(&old);
        }
        self.data_dir = Some(data_dir.to_path_buf());
        self.accounts = accounts;
        self.install(data_dir)?;
        self.start().map_err(|f| anyhow::anyhow!("{}\n{}", f.summary, f.log_excerpt))?;
        self.load_schema(accounts)?;
        // A clean stop writes every page; then fsync the whole directory, so the setup survives a cut
        // whatever the settings (innodb_flush_log_at_trx_commit=0 would otherwise lose it).
        self.stop();
        supervise::sync_tree(data_dir)?;
        self.start().map_err(|f| anyhow::anyhow!("{}\n{}", f.summary, f.log_excerpt))
    }

    fn start(&mut self) -> Result<(), StartFailure> {
        let data_dir = match self.data_dir() {
            Ok(dir) => dir.to_path_buf(),
            Err(e) => return Err(StartFailure { summary: format!("{e:#}"), log_excerpt: String::new() }),
        };
        // A killed server leaves its socket and pid file (ours, in the private directory).
        let _ = std::fs::remove_file(self.socket());
        let _ = std::fs::remove_file(self.private.path().join("mariadbd.pid"));
        self.log_start = supervise::file_len(&self.error_log());
        let mut command = Command::new(&self.programs.server);
        command
            .args(["--no-defaults", "--user=root", "--skip-networking"])
            .arg(format!("--datadir={}", data_dir.display()))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--pid-file={}", self.private.path().join("mariadbd.pid").display()))
            .arg(format!("--log-error={}", self.error_log().display()))
            .arg(format!("--tmpdir={}", self.private.path().join("tmp").display()))
            .args(self.settings.args());
        if let Err(e) = self.process.spawn(&mut command, &self.private.path().join("stderr.log")) {
            return Err(self.start_failure(format!("{e:#}")));
        }
        self.wait_ready()
    }

    fn connect(&self) -> anyhow::Result<Box<dyn Client>> {
        Ok(super::plant::maybe_early_ack(Box::new(MariaClient::connect(self.endpoint())?)))
    }

    fn read_state(&mut self) -> anyhow::Result<DbState> {
        let text = self.endpoint().query(
            Some(DATABASE),
            "SELECT 'a', id, balance FROM accounts ORDER BY id; SELECT 'h', id, src, dst, amount FROM history",
        )?;
        parse_state(&text, self.accounts)
    }

    fn check_integrity(&mut self) -> anyhow::Result<Integrity> {
        let mut integrity = match self.endpoint().query(Some(DATABASE), "CHECK TABLE accounts, history EXTENDED") {
            Ok(text) => judge_check_table(&text, &["accounts", "history"]),
            // InnoDB stops the server on some corruption it meets: that is the check failing.
            Err(e) => Integrity { ok: false, detail: format!("CHECK TABLE failed: {e:#}") },
        };
        let errors = self.logged_errors();
        if !errors.is_empty() {
            integrity.ok = false;
            integrity.detail = format!("{}; error log since start: {}", integrity.detail, errors.join(" | "));
        } else {
            integrity.detail.push_str("; no [ERROR] in the error log since start");
        }
        Ok(integrity)
    }

    fn kill(&mut self) {
        self.process.kill();
    }

    fn stop(&mut self) {
        self.process.terminate(STOP_LIMIT);
    }
}

#[cfg(test)]
#[path = "mariadb_tests.rs"]
mod tests;
