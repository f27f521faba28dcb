//! The SQLite driver: the installed `sqlite3` program, one process per client fed SQL on its standard input.
//! A transfer is `BEGIN IMMEDIATE; … COMMIT;` followed by `SELECT 'ack', id;`: the shell runs with
//! `-bail`, so the marker line is printed only once the COMMIT has returned, and the client reads it before
//! the transfer is acknowledged. There is no server: "starting" after a cut is the first open, which rolls
//! a hot journal back or recovers the WAL; "killing" is SIGKILL to every client process.

use super::process;
use super::{Client, DbState, INITIAL_BALANCE, Integrity, Server, StartFailure, Transfer};
use anyhow::Context;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// The hidden planted bug (see [`super::plant`]); SQLite's clients print the ack before BEGIN.
pub use super::plant::PLANT_EARLY_ACK;
/// The variable naming the `sqlite3` program to run (your own build); default: `sqlite3` on the PATH.
pub const SQLITE3_PROGRAM: &str = "SYNCBENCH_SQLITE3";
/// How long opening (recovery), reading back or checking may take.
const STEP_LIMIT: Duration = Duration::from_secs(120);
/// WAL pages between automatic checkpoints (SQLite's default is 1000): short, so that cuts also land
/// while a checkpoint writes the database file's pages.
const WAL_AUTOCHECKPOINT_PAGES: u32 = 100;
/// The setting names, for the refusal of an unknown one.
const KNOWN: &str = "journal_mode=WAL|DELETE, synchronous=FULL|EXTRA|NORMAL|OFF, busy_timeout=MS";

/// The settings a cell runs with; unset ones are SQLite's defaults (DELETE, FULL) and a 10 s busy timeout.
#[derive(Clone, Debug)]
struct Settings {
    journal_mode: String,
    synchronous: String,
    busy_timeout_ms: u32,
}

impl Settings {
    fn parse(settings: &[(String, String)]) -> Result<Settings, String> {
        let mut s = Settings { journal_mode: "DELETE".into(), synchronous: "FULL".into(), busy_timeout_ms: 10_000 };
        for (key, value) in settings {
            let upper = value.to_ascii_uppercase();
            match key.to_ascii_lowercase().as_str() {
                "journal_mode" if ["WAL", "DELETE"].contains(&upper.as_str()) => s.journal_mode = upper,
                "synchronous" if ["FULL", "EXTRA", "NORMAL", "OFF"].contains(&upper.as_str()) => s.synchronous = upper,
                "busy_timeout" if value.parse::<u32>().is_ok() => s.busy_timeout_ms = value.parse().unwrap_or(0),
                "journal_mode" | "synchronous" | "busy_timeout" => {
                    return Err(format!("sqlite refuses {key}={value}; the settings are {KNOWN}"));
                }
                _ => return Err(format!("sqlite has no setting {key:?}; the settings are {KNOWN}")),
            }
        }
        Ok(s)
    }
}

/// What the server and its clients share: where the database is, and whether the power went.
struct Shared {
    program: PathBuf,
    settings: Settings,
    db: Mutex<Option<PathBuf>>,
    killed: AtomicBool,
    clients: Mutex<Vec<i32>>,
}

impl Shared {
    fn db(&self) -> anyhow::Result<PathBuf> {
        self.db.lock().unwrap_or_else(|p| p.into_inner()).clone().context("no database made yet")
    }

    /// Run `sql` in a new `sqlite3 -bail` on the database; its standard output, or its error words.
    fn run_sql(&self, sql: &str) -> Result<String, String> {
        let db = self.db().map_err(|e| e.to_string())?;
        let mut child = process::spawn(
            Command::new(&self.program)
                .arg("-batch")
                .arg("-bail")
                .arg(&db)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        let pgid = child.id() as i32;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let sql = sql.to_string();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // A shell that failed early closes its input: its words on stderr say why, not this write.
            let _ = stdin.write_all(sql.as_bytes());
            drop(stdin);
            let _ = tx.send(child.wait_with_output());
        });
        let output = match rx.recv_timeout(STEP_LIMIT) {
            Ok(output) => output.map_err(|e| format!("sqlite3: {e}"))?,
            Err(_) => {
                process::kill_group(pgid);
                let _ = rx.recv();
                process::reaped(pgid);
                return Err(format!("sqlite3 did not finish within {} s", STEP_LIMIT.as_secs()));
            }
        };
        process::reaped(pgid);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            Ok(stdout)
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            Err(format!("sqlite3 failed ({}): {}", output.status, process::tail(stderr.trim(), 5)))
        }
    }
}

/// SQLite on the lab mount.
pub struct SqliteServer {
    shared: Arc<Shared>,
    version: String,
}

impl SqliteServer {
    /// The driver with `settings` (refused: an unknown key or value, or no `sqlite3` installed).
    pub fn new(settings: &[(String, String)]) -> Result<SqliteServer, String> {
        let settings = Settings::parse(settings)?;
        let program = match std::env::var_os(SQLITE3_PROGRAM) {
            Some(path) if !Path::new(&path).is_file() => {
                return Err(format!(
                    "{SQLITE3_PROGRAM}={} is not a program; give the sqlite3 to run",
                    path.to_string_lossy()
                ));
            }
            Some(path) => PathBuf::from(path),
            None => crate::proof::lab::prereq::find_program("sqlite3")
                .ok_or("sqlite3 is not installed; install it (apt-get install sqlite3) or choose another --db")?,
        };
        let out = Command::new(&program)
            .arg("--version")
            .output()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        let version = String::from_utf8_lossy(&out.stdout);
        let version = format!("SQLite {}", version.split_whitespace().next().unwrap_or("(unknown version)"));
        let shared = Shared {
            program,
            settings,
            db: Mutex::new(None),
            killed: AtomicBool::new(false),
            clients: Mutex::new(Vec::new()),
        };
        Ok(SqliteServer { shared: Arc::new(shared), version })
    }

    fn kill_clients(&self) {
        self.shared.killed.store(true, Ordering::SeqCst);
        let clients: Vec<i32> = self.shared.clients.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect();
        for &pgid in &clients {
            process::kill_group(pgid);
        }
        for pgid in clients {
            process::wait_group_gone(pgid, Duration::from_secs(10));
        }
    }
}

impl Drop for SqliteServer {
    fn drop(&mut self) {
        self.kill_clients();
    }
}

/// The schema and the accounts, in one transaction, made with synchronous=FULL whatever the cell's setting.
fn create_sql(s: &Settings, accounts: u32) -> String {
    format!(
        "PRAGMA journal_mode={mode};\nPRAGMA synchronous=FULL;\nBEGIN;\n\
         CREATE TABLE accounts(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);\n\
         CREATE TABLE history(id INTEGER PRIMARY KEY, src INTEGER NOT NULL, dst INTEGER NOT NULL, amount INTEGER NOT NULL);\n\
         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {accounts})\n\
         INSERT INTO accounts SELECT i, {INITIAL_BALANCE} FROM n;\nCOMMIT;\n",
        mode = s.journal_mode
    )
}

/// Make what sqlite3 wrote durable down to the directory entry (SQLite syncs its files, not always the
/// directory that names a new database).
fn sync_tree(dir: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        std::fs::File::open(&path)?.sync_all().with_context(|| format!("syncing {}", path.display()))?;
    }
    std::fs::File::open(dir)?.sync_all().with_context(|| format!("syncing {}", dir.display()))
}

impl Server for SqliteServer {
    fn version(&self) -> String {
        self.version.clone()
    }

    fn create(&mut self, data_dir: &Path, accounts: u32) -> anyhow::Result<()> {
        *self.shared.db.lock().unwrap_or_else(|p| p.into_inner()) = Some(data_dir.join("bank.db"));
        self.shared.killed.store(false, Ordering::SeqCst);
        let out = self.shared.run_sql(&create_sql(&self.shared.settings, accounts)).map_err(anyhow::Error::msg)?;
        let mode = out.lines().next().unwrap_or("").trim().to_ascii_uppercase();
        if mode != self.shared.settings.journal_mode {
            anyhow::bail!(
                "sqlite refused journal_mode={} (the database is in {mode} mode)",
                self.shared.settings.journal_mode
            );
        }
        sync_tree(data_dir)
    }

    fn start(&mut self) -> Result<(), StartFailure> {
        self.shared.killed.store(false, Ordering::SeqCst);
        match self.shared.run_sql("SELECT count(*) FROM accounts;\nSELECT count(*) FROM history;\n") {
            Ok(_) => Ok(()),
            Err(e) => Err(StartFailure {
                summary: "sqlite3 could not open the database after the cut".into(),
                log_excerpt: e,
            }),
        }
    }

    fn connect(&self) -> anyhow::Result<Box<dyn Client>> {
        Ok(Box::new(SqliteClient::open(self.shared.clone(), super::plant::early_ack_planted())?))
    }

    fn read_state(&mut self) -> anyhow::Result<DbState> {
        let sql =
            "SELECT 'a', id, balance FROM accounts ORDER BY id;\nSELECT 'h', id, src, dst, amount FROM history;\n";
        let out = self.shared.run_sql(sql).map_err(anyhow::Error::msg)?;
        parse_state(&out)
    }

    fn check_integrity(&mut self) -> anyhow::Result<Integrity> {
        let out = self.shared.run_sql("PRAGMA integrity_check;\n").map_err(anyhow::Error::msg)?;
        let ok = out.trim() == "ok";
        let detail = if ok { "PRAGMA integrity_check: ok".to_string() } else { process::tail(out.trim(), 10) };
        Ok(Integrity { ok, detail })
    }

    fn kill(&mut self) {
        self.kill_clients();
    }

    fn stop(&mut self) {
        self.kill_clients();
    }
}

/// Balances (account rows `a|id|balance`, which must be 0, 1, 2, …) and history rows (`h|id|src|dst|amount`).
fn parse_state(out: &str) -> anyhow::Result<DbState> {
    let mut state = DbState::default();
    for line in out.lines() {
        let fields: Vec<&str> = line.split('|').collect();
        let num = |i: usize| -> anyhow::Result<i64> {
            fields.get(i).and_then(|f| f.parse().ok()).with_context(|| format!("unreadable row {line:?}"))
        };
        match fields.first() {
            Some(&"a") if num(1)? == state.balances.len() as i64 => state.balances.push(num(2)?),
            Some(&"a") => {
                anyhow::bail!("account row {line:?} out of order: account {} is missing", state.balances.len())
            }
            Some(&"h") => state.history.push(Transfer {
                id: u64::try_from(num(1)?)?,
                from: u32::try_from(num(2)?)?,
                to: u32::try_from(num(3)?)?,
                amount: num(4)?,
            }),
            _ => anyhow::bail!("unexpected line from sqlite3: {line:?}"),
        }
    }
    Ok(state)
}

/// One `sqlite3` process.
struct SqliteClient {
    shared: Arc<Shared>,
    early_ack: bool,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl SqliteClient {
    fn open(shared: Arc<Shared>, early_ack: bool) -> anyhow::Result<SqliteClient> {
        let db = shared.db()?;
        let mut child = process::spawn(
            Command::new(&shared.program)
                .arg("-batch")
                .arg("-bail")
                .arg(&db)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .with_context(|| format!("starting {}", shared.program.display()))?;
        shared.clients.lock().unwrap_or_else(|p| p.into_inner()).push(child.id() as i32);
        let (stdin, stdout) = (child.stdin.take().context("no stdin")?, child.stdout.take().context("no stdout")?);
        let mut client = SqliteClient { shared, early_ack, child, stdin, stdout: BufReader::new(stdout) };
        let s = &client.shared.settings;
        let setup = format!(
            "PRAGMA busy_timeout={};\nPRAGMA synchronous={};\nPRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES};\nSELECT 'ready';\n",
            s.busy_timeout_ms, s.synchronous
        );
        client.send(&setup)?;
        client.read_until("ready")?;
        Ok(client)
    }

    fn send(&mut self, sql: &str) -> anyhow::Result<()> {
        self.stdin.write_all(sql.as_bytes()).and_then(|()| self.stdin.flush()).context("writing to sqlite3")
    }

    /// Read lines until `marker`; an end of output is the process's end, explained by its stderr.
    fn read_until(&mut self, marker: &str) -> anyhow::Result<()> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).context("reading from sqlite3")? == 0 {
                anyhow::bail!("{}", self.ended());
            }
            if line.trim_end() == marker {
                return Ok(());
            }
        }
    }

    /// Why the process ended (it has, or is about to: its output is closed).
    fn ended(&mut self) -> String {
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        let status = self.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        format!("sqlite3 ended ({status}): {}", process::tail(stderr.trim(), 3))
    }
}

impl Drop for SqliteClient {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        process::kill(&mut self.child);
        self.shared.clients.lock().unwrap_or_else(|p| p.into_inner()).retain(|&g| g != pgid);
    }
}

impl Client for SqliteClient {
    fn transfer(&mut self, t: &Transfer) -> anyhow::Result<bool> {
        let body = format!(
            "BEGIN IMMEDIATE;\nUPDATE accounts SET balance = balance - {a} WHERE id = {f};\n\
             UPDATE accounts SET balance = balance + {a} WHERE id = {to};\n\
             INSERT INTO history VALUES({id}, {f}, {to}, {a});\n",
            a = t.amount,
            f = t.from,
            to = t.to,
            id = t.id
        );
        let ack = format!("SELECT 'ack', {};\n", t.id);
        // The planted bug prints the marker before the transaction even starts: the ack is read while the
        // transaction waits for the write lock behind the other clients and then commits — a window of
        // several commits, so a cut lands in it even when a loaded machine delays the reading thread (a
        // marker printed just before the COMMIT was read, under load, only after that COMMIT had returned).
        let sql = if self.early_ack { format!("{ack}{body}COMMIT;\n") } else { format!("{body}COMMIT;\n{ack}") };
        let marker = format!("ack|{}", t.id);
        match self.send(&sql).and_then(|()| self.read_until(&marker)) {
            Ok(()) => Ok(true),
            Err(e) if self.shared.killed.load(Ordering::SeqCst) => Err(e.context("the power went")),
            // Waiting for the lock longer than busy_timeout: rolled back (the shell bailed out); reconnect.
            Err(e) if format!("{e:#}").contains("database is locked") => {
                *self = SqliteClient::open(self.shared.clone(), self.early_ack)?;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn settings_take_the_known_values_in_any_case_and_refuse_the_rest_by_name() {
        let s =
            Settings::parse(&set(&[("journal_mode", "wal"), ("Synchronous", "off"), ("busy_timeout", "5")])).unwrap();
        assert_eq!((s.journal_mode.as_str(), s.synchronous.as_str(), s.busy_timeout_ms), ("WAL", "OFF", 5));
        let e = Settings::parse(&set(&[("journal_size", "1")])).unwrap_err();
        assert!(e.contains("no setting \"journal_size\"") && e.contains("journal_mode="), "{e}");
        assert!(
            Settings::parse(&set(&[("journal_mode", "MEMORY")])).unwrap_err().contains("refuses journal_mode=MEMORY")
        );
        assert!(Settings::parse(&set(&[("busy_timeout", "-1")])).is_err());
    }

    #[test]
    fn the_state_is_parsed_and_a_missing_account_is_an_error() {
        let s = parse_state("a|0|5\na|1|7\nh|42|0|1|3\n").unwrap();
        assert_eq!(s.balances, [5, 7]);
        assert_eq!(s.history, [Transfer { id: 42, from: 0, to: 1, amount: 3 }]);
        assert!(parse_state("a|0|5\na|2|7\n").unwrap_err().to_string().contains("account 1 is missing"));
        assert!(parse_state("h|x|0|1|3\n").is_err());
    }

    /// The whole driver on a temporary directory (no lab): create, two clients, state, integrity.
    #[test]
    fn the_driver_keeps_the_invariants_on_a_plain_directory() {
        let Ok(mut server) = SqliteServer::new(&set(&[("journal_mode", "WAL")])) else {
            return eprintln!("skipping: sqlite3 is not installed");
        };
        let dir = tempfile::tempdir().unwrap();
        server.create(dir.path(), 4).unwrap();
        server.start().unwrap();
        let mut a = server.connect().unwrap();
        let mut b = server.connect().unwrap();
        assert!(a.transfer(&Transfer { id: 1, from: 0, to: 1, amount: 10 }).unwrap());
        assert!(b.transfer(&Transfer { id: 2, from: 1, to: 3, amount: 4 }).unwrap());
        assert!(a.transfer(&Transfer { id: 1, from: 2, to: 3, amount: 1 }).is_err(), "a duplicate id is an error");
        let state = server.read_state().unwrap();
        assert_eq!(state.balances, [INITIAL_BALANCE - 10, INITIAL_BALANCE + 6, INITIAL_BALANCE, INITIAL_BALANCE + 4]);
        assert_eq!(state.history.len(), 2);
        assert!(server.check_integrity().unwrap().ok);
        assert!(server.version().starts_with("SQLite 3."));
        server.kill();
        assert!(b.transfer(&Transfer { id: 3, from: 0, to: 1, amount: 1 }).is_err(), "its process was killed");
    }
}
