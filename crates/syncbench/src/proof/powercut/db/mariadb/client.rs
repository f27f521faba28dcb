//! Talking to a private mariadbd through the `mariadb` program over its Unix socket: one-shot queries
//! (setup, read-back, CHECK TABLE) and the workload's persistent client sessions.
//!
//! Why the installed client program and not the `mysql` crate: that crate (28.0, `default-features =
//! false` + `minimal-rust`, no TLS) adds 65 crates to syncbench's 85 and took 142 s of wall time (57 s CPU)
//! to build clean in release on this 2-vCPU machine, for one driver; the `mariadb` program is installed
//! with every MariaDB server (Debian's mariadb-server depends on mariadb-client) and speaks the server's
//! own protocol. What makes its answers trustworthy as acknowledgements:
//! - `--batch` without `--force`: at the first statement that fails, the program stops and exits without
//!   running the rest of its input; the server then rolls the open transaction back (disconnect);
//! - each transfer is written as `BEGIN; UPDATE; UPDATE; INSERT; COMMIT; SELECT 'committed ID';`, so the
//!   marker line is printed only if COMMIT returned success, and by the same session, after it;
//! - `--unbuffered` flushes stdout after every statement, so the marker arrives as soon as COMMIT has
//!   returned (a pipe would otherwise hold it in the program's buffer);
//! - `--skip-reconnect`: a session that lost its server never reconnects and runs the rest of a
//!   transaction in autocommit mode.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::proof::powercut::db::{Client, Transfer};

/// The database the workload's tables live in.
pub const DATABASE: &str = "bank";

/// MariaDB's "Deadlock found when trying to get lock": InnoDB rolled the transaction back.
const ER_LOCK_DEADLOCK: u32 = 1213;
/// MariaDB's "Lock wait timeout exceeded": the session ends (disconnect rolls the transaction back).
const ER_LOCK_WAIT_TIMEOUT: u32 = 1205;

/// How to reach one server with the `mariadb` program.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The `mariadb` (or `mysql`) client program.
    pub client: PathBuf,
    /// The server's Unix socket.
    pub socket: PathBuf,
}

impl Endpoint {
    /// The client program with the options every use shares (no option files, root over the socket,
    /// tab-separated rows without headers, no reconnect).
    fn command(&self) -> Command {
        let mut command = Command::new(&self.client);
        command.args(["--no-defaults", "--user=root", "--batch", "--skip-column-names", "--skip-reconnect"]);
        command.arg(format!("--socket={}", self.socket.display()));
        command
    }

    /// Run `sql` (in `database`, if given) once and return what it printed; a failure is an `Err` with
    /// the program's error line.
    pub fn query(&self, database: Option<&str>, sql: &str) -> anyhow::Result<String> {
        let mut command = self.command();
        if let Some(db) = database {
            command.arg(format!("--database={db}"));
        }
        let output = command
            .arg(format!("--execute={sql}"))
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", self.client.display()))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            bail!("mariadb client: {}", stderr.trim().lines().last().unwrap_or("failed without a message"));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// The statements of one transfer, ending in the marker that only a successful COMMIT lets through.
pub fn transfer_sql(t: &Transfer) -> String {
    format!(
        "BEGIN;\nUPDATE accounts SET balance = balance - {a} WHERE id = {from};\n\
         UPDATE accounts SET balance = balance + {a} WHERE id = {to};\n\
         INSERT INTO history (id, src, dst, amount) VALUES ({id}, {from}, {to}, {a});\nCOMMIT;\n\
         SELECT 'committed {id}';\n",
        a = t.amount,
        from = t.from,
        to = t.to,
        id = t.id
    )
}

/// The error number of the client's `ERROR 1213 (40001) at line 3: ...` line.
pub fn error_code(stderr: &str) -> Option<u32> {
    let rest = stderr.lines().find_map(|l| l.trim().strip_prefix("ERROR "))?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// One running `mariadb` program: its input, and its output read line by line.
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Session {
    fn open(endpoint: &Endpoint) -> anyhow::Result<Session> {
        let mut child = endpoint
            .command()
            .args(["--unbuffered", &format!("--database={DATABASE}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", endpoint.client.display()))?;
        let stdin = child.stdin.take().context("the client's stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("the client's stdout")?);
        Ok(Session { child, stdin: Some(stdin), stdout })
    }

    /// Send `sql` and read one line of the answer (empty at end of output).
    fn exchange(&mut self, sql: &str) -> String {
        let mut line = String::new();
        let stdin = self.stdin.as_mut().expect("open session");
        if stdin.write_all(sql.as_bytes()).and_then(|()| stdin.flush()).is_ok() {
            let _ = self.stdout.read_line(&mut line);
        }
        line
    }

    /// End the program (close its input; kill it if it does not exit soon) and return what it said on
    /// stderr: after a failed statement it has exited already, having printed the error.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        stderr
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A workload client: one `mariadb` program kept open across transfers, opened again after a failure.
pub struct MariaClient {
    endpoint: Endpoint,
    session: Option<Session>,
}

impl MariaClient {
    /// A client of the server at `endpoint`; its session opens (and is checked) now.
    pub fn connect(endpoint: Endpoint) -> anyhow::Result<MariaClient> {
        let mut session = Session::open(&endpoint)?;
        let answer = session.exchange("SELECT 'connected';\n");
        if answer.trim_end() != "connected" {
            bail!("mariadb client could not connect: {}", session.finish().trim());
        }
        Ok(MariaClient { endpoint, session: Some(session) })
    }
}

impl Client for MariaClient {
    fn transfer(&mut self, transfer: &Transfer) -> anyhow::Result<bool> {
        let session = match self.session.as_mut() {
            Some(session) => session,
            None => self.session.insert(Session::open(&self.endpoint)?),
        };
        let answer = session.exchange(&transfer_sql(transfer));
        if answer.trim_end() == format!("committed {}", transfer.id) {
            return Ok(true);
        }
        // Anything else ends this session: the program exited at a failed statement, or said something
        // we cannot read as a commit.
        let stderr = self.session.take().map(Session::finish).unwrap_or_default();
        match error_code(&stderr) {
            Some(ER_LOCK_DEADLOCK | ER_LOCK_WAIT_TIMEOUT) => Ok(false),
            _ if answer.is_empty() => {
                bail!("transfer {}: mariadb client: {}", transfer.id, stderr.trim().lines().last().unwrap_or("ended"))
            }
            _ => bail!("transfer {}: unexpected answer from the mariadb client: {:?}", transfer.id, answer.trim_end()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_come_from_the_clients_error_line() {
        let deadlock =
            "ERROR 1213 (40001) at line 3: Deadlock found when trying to get lock; try restarting transaction\n";
        assert_eq!(error_code(deadlock), Some(ER_LOCK_DEADLOCK));
        assert_eq!(error_code("ERROR 2013 (HY000) at line 5: Lost connection to server during query"), Some(2013));
        assert_eq!(
            error_code("--------------\nselect x\n--------------\n\nERROR 1054 (42S22) at line 2: x"),
            Some(1054)
        );
        assert_eq!(error_code("warning: something\n"), None);
    }

    #[test]
    fn the_marker_follows_the_commit_in_the_same_input() {
        let sql = transfer_sql(&Transfer { id: 42, from: 3, to: 7, amount: 15 });
        let lines: Vec<&str> = sql.lines().collect();
        assert_eq!(lines.first(), Some(&"BEGIN;"));
        assert_eq!(lines[lines.len() - 2], "COMMIT;");
        assert_eq!(lines[lines.len() - 1], "SELECT 'committed 42';");
        assert!(sql.contains("balance - 15 WHERE id = 3;") && sql.contains("balance + 15 WHERE id = 7;"));
        assert!(sql.contains("VALUES (42, 3, 7, 15);"));
    }
}
