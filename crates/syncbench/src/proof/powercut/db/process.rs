//! The processes `powercut db` and `powercut run` start (database servers, clients, the user's commands):
//! each in its own process group, so that "the power went" can SIGKILL a server with every child it forked,
//! and recorded here so that Ctrl-C or SIGTERM kills whatever is still running before the lab is torn
//! down (a server left on the mount would keep it busy and outlive syncbench).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// Process groups started and not yet reaped.
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<i32>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// The lab mount the processes started now run on: each gets `SYNCBENCH_LAB_MOUNT=<mount>` in its
/// environment, as `lab run` gives its command, so that after a `kill -9` of syncbench the next syncbench
/// finds them by it (`proof::leftovers`, through the campaign's `registry::record_lab`) and `cleanup`
/// kills them before the lab's mounts are removed.
static LAB_MOUNT: Mutex<Option<std::path::PathBuf>> = Mutex::new(None);

/// Say which lab mount the processes started from now on run on.
pub fn set_lab_mount(mount: &Path) {
    *LAB_MOUNT.lock().unwrap_or_else(|p| p.into_inner()) = Some(mount.to_path_buf());
}

/// The lab at `mount` is gone: processes started from now on are on none (unless another lab took its
/// place already, as when a cell replaces a broken disk: the new one is set before the old one is dropped).
pub fn clear_lab_mount(mount: &Path) {
    let mut current = LAB_MOUNT.lock().unwrap_or_else(|p| p.into_inner());
    if current.as_deref() == Some(mount) {
        *current = None;
    }
}

/// Start `command` as the leader of a new process group, recorded for the signal hook.
pub fn spawn(command: &mut Command) -> std::io::Result<Child> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| crate::core::cleanup::on_signal(kill_all));
    if let Some(mount) = LAB_MOUNT.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        command.env("SYNCBENCH_LAB_MOUNT", mount);
    }
    let mut live = live();
    let child = command.process_group(0).spawn()?;
    live.push(child.id() as i32);
    Ok(child)
}

/// SIGKILL the whole group `child` leads, and reap `child`.
pub fn kill(child: &mut Child) {
    let pgid = child.id() as i32;
    // The group may be gone already (ESRCH): that is the state wanted.
    let _ = syncbench_sys::ptrace::send_signal(-pgid, libc::SIGKILL);
    let _ = child.kill();
    let _ = child.wait();
    live().retain(|&g| g != pgid);
}

/// The leader of group `pgid` ended and was reaped: forget the group (after killing what it left behind).
pub fn reaped(pgid: i32) {
    let _ = syncbench_sys::ptrace::send_signal(-pgid, libc::SIGKILL);
    live().retain(|&g| g != pgid);
}

/// SIGKILL a group by id (for drivers whose server forks and whose leader was reaped elsewhere).
pub fn kill_group(pgid: i32) {
    let _ = syncbench_sys::ptrace::send_signal(-pgid, libc::SIGKILL);
}

/// The signal hook: every group still recorded.
fn kill_all() {
    for pgid in live().drain(..) {
        let _ = syncbench_sys::ptrace::send_signal(-pgid, libc::SIGKILL);
    }
}

/// Every process descended from this one, from /proc (parent links).
fn descendants() -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let parents: Vec<(i32, i32)> = entries
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = vec![me];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(parents.iter().filter(|&&(_, ppid)| ppid == parent).map(|&(pid, _)| pid));
        i += 1;
    }
    found.remove(0);
    found
}

/// The power goes: SIGSTOP every process this one started (servers, clients, commands, and what they
/// forked), where it is. A SIGKILL would let a running fsync finish first and make its data durable; a
/// stopped process's fsync is still in flight when the lab's cut fails it, as a real power cut would. Twice,
/// for a child forked during the first pass. The frozen pids, for [`kill_frozen`].
pub fn freeze_all() -> Vec<i32> {
    for &pgid in live().iter() {
        let _ = syncbench_sys::ptrace::send_signal(-pgid, libc::SIGSTOP);
    }
    let mut frozen = Vec::new();
    for _ in 0..2 {
        let new: Vec<i32> = descendants().into_iter().filter(|p| !frozen.contains(p)).collect();
        freeze(&new);
        frozen.extend(new);
    }
    frozen
}

fn freeze(pids: &[i32]) {
    for &pid in pids {
        let _ = syncbench_sys::ptrace::send_signal(pid, libc::SIGSTOP);
    }
}

/// SIGKILL what [`freeze_all`] stopped and is still here (a driver kills what it knows; this is the rest,
/// which would otherwise stay stopped), checked to still be a descendant so that a reused pid is spared.
pub fn kill_frozen(frozen: &[i32]) {
    let now = descendants();
    for pid in frozen.iter().filter(|p| now.contains(p)) {
        let _ = syncbench_sys::ptrace::send_signal(*pid, libc::SIGKILL);
    }
}

/// Whether any process of group `pgid` is still alive (zombies count as gone), from /proc.
pub fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // After the command, which may hold spaces and parentheses: state, ppid, pgrp.
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
    })
}

/// Wait up to `limit` until no process of group `pgid` is alive.
pub fn wait_group_gone(pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while group_alive(pgid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Make the directory `dir` and make its entry durable (the directory and its parent synced): a power cut
/// must not take the database's directory away with it.
pub fn create_durable_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir(dir)?;
    std::fs::File::open(dir)?.sync_all()?;
    match dir.parent() {
        Some(parent) => std::fs::File::open(parent)?.sync_all(),
        None => Ok(()),
    }
}

/// The last `lines` lines of the file at `path` (a server log), or of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The last lines of a log file, or why it could not be read.
pub fn log_tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => tail(&String::from_utf8_lossy(&bytes), lines),
        Err(e) => format!("(no log: {}: {e})", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_group_takes_its_children_with_it() {
        let mut child = spawn(Command::new("sh").args(["-c", "sleep 60 & sleep 60 & wait"])).unwrap();
        let pgid = child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read_to_string(e.path().join("cmdline")).is_ok_and(|c| c.starts_with("sleep"))
                && std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| s.contains(&format!(" {pgid} ")))
        }) && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(group_alive(pgid));
        kill(&mut child);
        assert!(wait_group_gone(pgid, Duration::from_secs(10)), "the sleeps outlived their group's kill");
        assert!(!live().contains(&pgid));
    }

    #[test]
    fn a_frozen_child_stays_stopped_until_killed() {
        let mut child = spawn(Command::new("sleep").arg("60")).unwrap();
        let pid = child.id() as i32;
        // Not freeze_all: the other tests of this binary have children too.
        assert!(descendants().contains(&pid));
        let frozen = [pid];
        freeze(&frozen);
        let state = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next().map(String::from))
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while state().as_deref() != Some("T") && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(state().as_deref(), Some("T"), "stopped");
        kill_frozen(&frozen);
        let status = child.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
        live().retain(|&g| g != pid);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}
