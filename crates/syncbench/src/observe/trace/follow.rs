//! Which processes an attached trace follows: the given PIDs and every process they start during the
//! window, the processes named NAME (and theirs), or all. Decided once per process (thread group) from
//! the fork events seen and, for a process first seen without its fork, from `/proc`.

use std::collections::{HashMap, HashSet};
use syncbench_sys::process::stat_field;
use syncbench_sys::ptrace::Pid;

/// What to follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// These processes and their descendants.
    Pids(Vec<Pid>),
    /// Processes whose name (`/proc/PID/comm`, 15 characters at most) is this, and their descendants.
    Comm(String),
    /// Every process but syncbench itself.
    All,
}

impl Selection {
    /// How the report names what was traced (`--pid 12,13`, `--comm postgres`, `--all`).
    pub fn describe(&self) -> String {
        match self {
            Selection::Pids(p) => format!("--pid {}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")),
            Selection::Comm(name) => format!("--comm {name}"),
            Selection::All => "--all".into(),
        }
    }
}

/// The followed processes, decided lazily.
#[derive(Debug)]
pub struct Follow {
    selection: Selection,
    me: Pid,
    decided: HashMap<Pid, bool>,
    /// Followed processes still alive (for `--pid`: the trace ends when none is left).
    live: HashSet<Pid>,
}

impl Follow {
    /// Start following; `me` (syncbench) is never followed.
    pub fn new(selection: Selection, me: Pid) -> Follow {
        let mut follow = Follow { selection, me, decided: HashMap::new(), live: HashSet::new() };
        if let Selection::Pids(pids) = &follow.selection {
            for &pid in pids.clone().iter() {
                follow.decided.insert(pid, true);
                follow.live.insert(pid);
            }
        }
        follow
    }

    /// Whether process `tgid` is followed (first sight: from `/proc`).
    pub fn wants(&mut self, tgid: Pid) -> bool {
        if let Some(&yes) = self.decided.get(&tgid) {
            return yes;
        }
        let yes = tgid != self.me
            && match &self.selection {
                Selection::All => true,
                Selection::Comm(name) => {
                    comm_of(tgid).as_deref() == Some(name.as_str()) || self.ancestor_followed(tgid)
                }
                Selection::Pids(_) => self.ancestor_followed(tgid),
            };
        self.decide(tgid, yes);
        yes
    }

    fn decide(&mut self, tgid: Pid, yes: bool) {
        self.decided.insert(tgid, yes);
        if yes {
            self.live.insert(tgid);
        }
    }

    /// A fork event: task `child` was created by a task of process `parent_tgid`. A new process of a
    /// followed one is followed (a new thread has the same process id and changes nothing).
    pub fn forked(&mut self, parent_tgid: Pid, child: Pid) {
        if child != parent_tgid && self.wants(parent_tgid) && !self.decided.get(&child).copied().unwrap_or(false) {
            self.decide(child, true);
        }
    }

    /// Process `tgid` is followed because the kernel says so (the eBPF backend keeps only followed
    /// processes' calls, deciding at fork and exec: a process that took NAME by exec and is gone before
    /// its calls are read would be refused by [`Self::wants`], which reads its name from `/proc`).
    pub fn adopt(&mut self, tgid: Pid) {
        if self.decided.get(&tgid) != Some(&true) {
            self.decide(tgid, true);
        }
    }

    /// Process `tgid` ran exec: for `--comm`, a process not followed is decided again at its next call, as
    /// its name may now be NAME (a new `postgres` started by a shell).
    pub fn execed(&mut self, tgid: Pid) {
        if matches!(self.selection, Selection::Comm(_)) && self.decided.get(&tgid) == Some(&false) {
            self.decided.remove(&tgid);
        }
    }

    /// Process `tgid` exited: forget the decision (its id can be reused).
    pub fn exited(&mut self, tgid: Pid) {
        self.decided.remove(&tgid);
        self.live.remove(&tgid);
    }

    /// For `--pid`: whether every followed process is gone (checked against `/proc`, zombies count as gone).
    pub fn all_gone(&mut self) -> bool {
        if !matches!(self.selection, Selection::Pids(_)) {
            return false;
        }
        self.live.retain(|&p| is_alive(p));
        self.live.is_empty()
    }

    /// Followed processes seen.
    pub fn followed(&self) -> impl Iterator<Item = Pid> + '_ {
        self.decided.iter().filter(|(_, yes)| **yes).map(|(p, _)| *p)
    }

    fn ancestor_followed(&self, tgid: Pid) -> bool {
        let mut pid = tgid;
        // The chain to init is short; the bound guards against a /proc race producing a loop.
        for _ in 0..64 {
            match parent_of(pid) {
                Some(parent) if parent > 1 => {
                    if self.decided.get(&parent) == Some(&true) {
                        return true;
                    }
                    pid = parent;
                }
                _ => return false,
            }
        }
        false
    }
}

/// The threads of process `pid` (`/proc/PID/task`), empty when it is gone.
pub fn threads_of(pid: Pid) -> Vec<Pid> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()
}

/// Every process running now, syncbench excluded.
pub fn all_pids() -> Vec<Pid> {
    let me = std::process::id() as Pid;
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).filter(|&p| p != me).collect()
}

/// Every process named `name` (its comm), syncbench excluded.
pub fn pids_named(name: &str) -> Vec<Pid> {
    let me = std::process::id() as Pid;
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<Pid> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&p| p != me && comm_of(p).as_deref() == Some(name))
        .collect();
    pids.sort_unstable();
    pids
}

/// `/proc/PID/comm` without its newline.
pub fn comm_of(pid: Pid) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|s| s.trim_end_matches('\n').to_string())
}

/// The parent process of `pid` (field 4 of `/proc/PID/stat`).
fn parent_of(pid: Pid) -> Option<Pid> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_field(&stat, 4)?.parse().ok()
}

/// Whether process `pid` runs (see [`syncbench_sys::process::is_running`]: a zombie does not, a zombie
/// leader whose other threads run does).
pub fn is_alive(pid: Pid) -> bool {
    u32::try_from(pid).is_ok_and(syncbench_sys::process::is_running)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_the_kernel_followed_is_followed_even_when_gone_from_proc() {
        // A pid that cannot exist: `wants` would read its name from /proc and refuse it.
        let gone: Pid = i32::MAX - 7;
        let mut follow = Follow::new(Selection::Comm("postgres".into()), 1);
        follow.adopt(gone);
        assert!(follow.wants(gone));
        assert!(follow.followed().any(|p| p == gone));
        let mut refused = Follow::new(Selection::Comm("postgres".into()), 1);
        assert!(!refused.wants(gone));
    }

    #[test]
    fn children_of_followed_processes_are_followed_threads_change_nothing() {
        let me = std::process::id() as Pid;
        let mut f = Follow::new(Selection::Pids(vec![1_000_001]), me);
        assert!(f.wants(1_000_001));
        f.forked(1_000_001, 1_000_002);
        assert!(f.wants(1_000_002), "a child started during the window");
        f.forked(1_000_009, 1_000_010);
        assert!(!f.wants(1_000_010), "a child of a process not followed");
        f.exited(1_000_002);
        assert!(f.all_gone(), "the PIDs do not exist");
    }

    #[test]
    fn the_tracer_itself_is_never_followed() {
        let me = std::process::id() as Pid;
        assert!(!Follow::new(Selection::All, me).wants(me));
        assert!(Follow::new(Selection::All, me).wants(1));
        let own = comm_of(me).unwrap();
        let mut by_name = Follow::new(Selection::Comm(own), me);
        assert!(!by_name.wants(me));
    }

    #[test]
    fn comm_is_decided_again_after_exec_pids_are_not() {
        let me = std::process::id() as Pid;
        let own = comm_of(me).unwrap();
        let mut f = Follow::new(Selection::Comm(own), 0);
        f.decide(me, false); // as if first seen under another name, before its exec
        f.execed(me);
        assert!(f.wants(me), "its name now matches");
        let mut p = Follow::new(Selection::Pids(vec![1_000_001]), 0);
        p.decide(me, false);
        p.execed(me);
        assert!(!p.wants(me), "--pid follows processes, not names");
    }

    #[test]
    fn a_live_process_found_by_ancestry() {
        let me = std::process::id() as Pid;
        let parent = parent_of(me).unwrap();
        let mut f = Follow::new(Selection::Pids(vec![parent]), 0);
        assert!(f.wants(me), "this test's process descends from its parent");
        assert!(!f.all_gone());
        assert_eq!(Selection::Pids(vec![3, 4]).describe(), "--pid 3,4");
        assert!(threads_of(me).contains(&me));
        assert!(pids_named(&comm_of(1).unwrap()).contains(&1));
    }
}
