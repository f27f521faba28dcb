//! The server process of a database driver (started in its own process group, SIGKILLed when the power
//! goes, SIGTERMed for a clean stop, never left behind) and the small things the MariaDB and the etcd
//! driver need around it: finding a program, the private directory, the tail of a log, fsyncing a data
//! directory. Shared by `db::etcd`.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use crate::proof::powercut::db::process as group;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;

/// Where root's programs live when PATH lacks them (`mariadbd` is in /usr/sbin on Debian).
const SBIN_DIRS: [&str; 3] = ["/usr/sbin", "/usr/local/sbin", "/sbin"];

/// The first `program` on PATH or in the sbin directories.
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// A private directory in /tmp for what must not be on the lab mount (socket, pid file, logs), removed
/// when dropped (and after a SIGKILL of syncbench, by the next one: it is in the registry).
pub fn private_dir(what: &str) -> anyhow::Result<crate::core::cleanup::Created> {
    let path = std::env::temp_dir().join(crate::core::cleanup::unique_name(what));
    let (guard, ()) = crate::core::cleanup::Created::create(path, |p| {
        std::fs::create_dir(p).with_context(|| format!("creating {}", p.display()))
    })?;
    Ok(guard)
}

/// The last `lines` lines of the text written to `path` from byte `from` on (a log's part of one start).
pub fn log_tail(path: &Path, from: u64, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        let _ = file.seek(SeekFrom::Start(from)).and_then(|_| file.read_to_string(&mut text));
    }
    last_lines(&text, lines)
}

/// The last `n` non-empty lines of `text`.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The length of the file at `path` (0 when missing): where the next start's log begins.
pub fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// fsync every file and directory under `dir` (and `dir`): what a server wrote before a clean stop is
/// durable whatever its settings (the negative controls do not sync), so a cut never loses the setup.
pub fn sync_tree(dir: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            sync_tree(&entry.path())?;
        } else if entry.file_type()?.is_file() {
            let file = std::fs::File::open(entry.path())?;
            file.sync_all().with_context(|| format!("fsync {}", entry.path().display()))?;
        }
    }
    let handle = std::fs::File::open(dir)?;
    handle.sync_all().with_context(|| format!("fsync {}", dir.display()))
}

/// Run `command` to its end in a process group of its own, recorded so that Ctrl-C or SIGTERM kills it
/// (and what it forked: `mariadb-install-db` runs `mariadbd --bootstrap` on the lab mount).
pub fn run_to_end(command: &mut Command) -> anyhow::Result<ExitStatus> {
    let mut child =
        group::spawn(command).with_context(|| format!("starting {}", command.get_program().to_string_lossy()))?;
    let status = child.wait();
    group::reaped(child.id() as i32);
    Ok(status?)
}

/// One server process at a time; none once this is dropped. Started and killed through
/// [`crate::proof::powercut::db::process`]: its own process group (a Ctrl-C at the terminal reaches
/// syncbench, which kills it, not the server first), SIGKILLed as a group, and killed by the campaign's
/// teardown hook on Ctrl-C or SIGTERM.
#[derive(Default)]
pub struct ServerProcess {
    slot: Mutex<Option<Child>>,
}

impl ServerProcess {
    /// An empty slot.
    pub fn new() -> ServerProcess {
        ServerProcess::default()
    }

    /// Start `command` (stdin closed, stdout and stderr appended to `log`), killing any earlier one.
    pub fn spawn(&self, command: &mut Command, log: &Path) -> anyhow::Result<()> {
        let out = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
        let err = out.try_clone()?;
        self.kill();
        let child = group::spawn(command.stdin(Stdio::null()).stdout(out).stderr(err))
            .with_context(|| format!("starting {}", command.get_program().to_string_lossy()))?;
        *self.lock() = Some(child);
        Ok(())
    }

    /// The exit status if the process has ended (None while it runs or when there is none).
    pub fn exited(&self) -> Option<ExitStatus> {
        let mut guard = self.lock();
        let status = guard.as_mut().and_then(|c| c.try_wait().ok().flatten())?;
        if let Some(child) = guard.take() {
            group::reaped(child.id() as i32);
        }
        Some(status)
    }

    /// The process id of the running process.
    pub fn pid(&self) -> Option<u32> {
        self.lock().as_ref().map(Child::id)
    }

    /// SIGKILL the process (and its group) and wait until it is gone.
    pub fn kill(&self) {
        if let Some(mut child) = self.lock().take() {
            group::kill(&mut child);
        }
    }

    /// SIGTERM the process and wait up to `limit` for it to exit (a clean shutdown), then SIGKILL it.
    /// Whether it exited by itself in time.
    pub fn terminate(&self, limit: Duration) -> bool {
        let Some(pid) = self.pid() else { return true };
        let _ = syncbench_sys::ptrace::send_signal(pid as i32, libc::SIGTERM);
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.exited().is_some() || self.pid().is_none() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        false
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The current processes whose command line contains `needle` (tests: nothing left behind).
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(needle)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_keeps_the_end_and_skips_blank_lines() {
        assert_eq!(last_lines("a\n\nb\nc\n\n", 2), "b\nc");
        assert_eq!(last_lines("a\n", 5), "a");
        assert_eq!(last_lines("", 3), "");
    }

    #[test]
    fn log_tail_reads_from_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, "old 1\nold 2\n").unwrap();
        let from = file_len(&log);
        std::fs::write(&log, "old 1\nold 2\nnew 1\nnew 2\n").unwrap();
        assert_eq!(log_tail(&log, from, 10), "new 1\nnew 2");
    }

    #[test]
    fn a_dropped_server_process_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let process = ServerProcess::new();
        process.spawn(Command::new("sleep").arg("600"), &dir.path().join("log")).unwrap();
        assert!(process.exited().is_none());
        let proc_dir = PathBuf::from(format!("/proc/{}", process.pid().unwrap()));
        assert!(proc_dir.exists());
        drop(process);
        assert!(!proc_dir.exists(), "the killed process was reaped");
    }

    #[test]
    fn terminate_stops_a_process_that_obeys_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let process = ServerProcess::new();
        process.spawn(Command::new("sleep").arg("600"), &dir.path().join("log")).unwrap();
        assert!(process.terminate(Duration::from_secs(10)));
        assert!(process.pid().is_none());
    }
}
