//! CPU starvation: how long the threads that carry a commit waited on a run queue, ready to run but not
//! running. Those are the measuring process's own threads and, when the directory is on a `syncbench lab`
//! disk, the lab's server (a user-space FUSE process: every flush of the emulated disk is its work).
//!
//! Why: on a loaded machine a commit is slower because its threads waited for a CPU, not because the disk
//! changed. Steal (the hypervisor's share, [`crate::observe::probe::steal`]) misses it when the other load
//! is inside the guest: six builds on two vCPUs. The kernel counts each thread's run-queue wait in
//! `/proc/PID/task/TID/schedstat` (second field, nanoseconds; CONFIG_SCHED_INFO), so the wait of one window
//! is the sum of the deltas, and its share of the window's wall time says how much of the window the
//! commit chain spent waiting for a CPU. A window whose share passes [`STARVED_SHARE`] measured the CPU
//! queue, not the disk: it is named "cpu starved" and judged like steal, a disturbance, never a change.

use crate::observe::probe::sysfs::Root;
use std::collections::BTreeMap;
use std::time::Instant;

/// Run-queue wait, as a share of the window's wall time, from which a window is "cpu starved".
///
/// Why 0.25: a commit is a chain (our thread's write and fdatasync, then for a lab disk the server's
/// work), so the chain's run-queue wait adds to the commit time almost one for one; a quarter of the window
/// spent waiting makes a commit ~1.33× slower, under the detector's smallest reported step (1.5×,
/// `measure::watch::detect::MIN_EFFECT`) but enough to move an interval far out of a quiet baseline's band.
/// Measured on this 2-vCPU VM (docs/benchmarks.md, "watch"): a watch on a lab `hdd-7200` with the machine
/// quiet waited a few percent of each interval; with other builds running, the intervals whose flush
/// rate fell far below the disk's model waited for a large share.
pub const STARVED_SHARE: f64 = 0.25;

/// Windows shorter than this are not judged: a share of a few milliseconds means nothing.
const MIN_WINDOW_NS: u64 = 50_000_000;

/// The processes whose threads carry a commit: ours, and the lab server's when there is one.
#[derive(Clone, Debug)]
pub struct Chain {
    root: Root,
    /// Our own pid (read through `proc/self` in the root, so fixtures can stand in).
    own: String,
    /// The lab server's pid, when the directory is on a lab disk.
    server: Option<u32>,
}

/// A reading at the start of a window: every thread's wait so far, and when.
#[derive(Clone, Debug)]
pub struct Start {
    own: BTreeMap<String, u64>,
    server: BTreeMap<String, u64>,
    at: Instant,
}

/// The run-queue wait of one window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wait {
    /// Our threads' wait ÷ wall time.
    pub own_share: f64,
    /// The lab server's threads' wait ÷ wall time (None without a lab server).
    pub server_share: Option<f64>,
}

impl Wait {
    /// The commit chain's wait ÷ wall time: ours plus the server's.
    pub fn share(&self) -> f64 {
        self.own_share + self.server_share.unwrap_or(0.0)
    }

    /// Whether the window was starved of CPU ([`STARVED_SHARE`]).
    pub fn starved(&self) -> bool {
        self.share() >= STARVED_SHARE
    }

    /// "cpu starved: …" or "cpu wait …": what the window waited, in words.
    pub fn describe(&self) -> String {
        let server = self.server_share.map_or(String::new(), |s| format!(", lab server {:.0}%", s * 100.0));
        format!("ours {:.0}%{server}", self.own_share * 100.0)
    }
}

impl Chain {
    /// Our process, and the lab server whose disk is mounted at `mount_point` (when there is one).
    pub fn of(mount_point: Option<&str>) -> Chain {
        Chain::at(Root::system(), mount_point)
    }

    /// Like [`Chain::of`] under a fixture root (`proc/self/task/*/schedstat`, `run/syncbench-lab/*/state.json`).
    pub fn at(root: Root, mount_point: Option<&str>) -> Chain {
        let server = mount_point.and_then(|m| lab_server_pid(&root, m));
        Chain { root, own: "self".to_string(), server }
    }

    /// Whether a lab server is part of the chain.
    pub fn has_server(&self) -> bool {
        self.server.is_some()
    }

    /// Read every thread's wait now.
    pub fn start(&self) -> Start {
        Start {
            own: thread_waits(&self.root, &self.own),
            server: self.server.map(|p| thread_waits(&self.root, &p.to_string())).unwrap_or_default(),
            at: Instant::now(),
        }
    }

    /// The wait since `start` (None for a window too short to judge).
    pub fn finish(&self, start: &Start) -> Option<Wait> {
        let wall_ns = u64::try_from(start.at.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let own = thread_waits(&self.root, &self.own);
        let server = self.server.map(|p| thread_waits(&self.root, &p.to_string()));
        share_of(&start.own, &own, start.server.clone(), server, wall_ns)
    }
}

/// The shares of `wall_ns` the threads waited between two readings (None under [`MIN_WINDOW_NS`]).
fn share_of(
    own_before: &BTreeMap<String, u64>,
    own_after: &BTreeMap<String, u64>,
    server_before: BTreeMap<String, u64>,
    server_after: Option<BTreeMap<String, u64>>,
    wall_ns: u64,
) -> Option<Wait> {
    if wall_ns < MIN_WINDOW_NS {
        return None;
    }
    let share = |ns: u64| ns as f64 / wall_ns as f64;
    Some(Wait {
        own_share: share(waited(own_before, own_after)),
        server_share: server_after.map(|after| share(waited(&server_before, &after))),
    })
}

/// The run-queue wait the threads of `after` added since `before`. A thread born inside the window counts
/// all of its wait (it started at 0); a thread that ended inside it is lost (its counter went with it):
/// the sum is a lower bound, and the measuring threads live through the window.
pub fn waited(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> u64 {
    after.iter().map(|(tid, now)| now.saturating_sub(before.get(tid).copied().unwrap_or(0))).sum()
}

/// Every thread of process `pid` (a number or `self`) and its run-queue wait so far in nanoseconds.
pub fn thread_waits(root: &Root, pid: &str) -> BTreeMap<String, u64> {
    let Ok(entries) = std::fs::read_dir(root.path(&format!("proc/{pid}/task"))) else { return BTreeMap::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let tid = e.file_name().to_string_lossy().into_owned();
            let wait = run_delay_ns(&std::fs::read_to_string(e.path().join("schedstat")).ok()?)?;
            Some((tid, wait))
        })
        .collect()
}

/// The second field of a schedstat line: time spent waiting on a run queue, in nanoseconds.
pub fn run_delay_ns(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

/// The pid of the `syncbench lab` server whose disk is mounted at `mount_point`, from the state the lab
/// keeps in `/run/syncbench-lab/*/state.json` (read as plain JSON, as the probe reads it: observe does not
/// use the lab's types), when that process still exists.
pub fn lab_server_pid(root: &Root, mount_point: &str) -> Option<u32> {
    let entries = std::fs::read_dir(root.path("run/syncbench-lab")).ok()?;
    entries.flatten().find_map(|entry| {
        let text = std::fs::read_to_string(entry.path().join("state.json")).ok()?;
        let state: serde_json::Value = serde_json::from_str(&text).ok()?;
        let pid = u32::try_from(state["pid"].as_u64()?).ok()?;
        let alive = root.path(&format!("proc/{pid}")).is_dir();
        (state["mount"].as_str()? == mount_point && alive).then_some(pid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(root: &Root, pid: &str, tid: &str, wait_ns: u64) {
        let dir = root.path(&format!("proc/{pid}/task/{tid}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("schedstat"), format!("123456789 {wait_ns} 42\n")).unwrap();
    }

    #[test]
    fn the_second_schedstat_field_is_the_run_queue_wait() {
        assert_eq!(run_delay_ns("2871934 39629 1\n"), Some(39629));
        assert_eq!(run_delay_ns("2871934\n"), None);
        assert_eq!(run_delay_ns("a b c"), None);
    }

    #[test]
    fn the_wait_is_summed_over_threads_born_and_living_through_the_window() {
        let before = BTreeMap::from([("1".to_string(), 100), ("2".to_string(), 50), ("3".to_string(), 7)]);
        // Thread 3 ended (lost), thread 4 was born with 30 ns of wait.
        let after = BTreeMap::from([("1".to_string(), 160), ("2".to_string(), 50), ("4".to_string(), 30)]);
        assert_eq!(waited(&before, &after), 60 + 30);
    }

    #[test]
    fn a_lab_server_is_found_by_its_mount_and_its_threads_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let lab = root.path("run/syncbench-lab/mnt%2Flab");
        std::fs::create_dir_all(&lab).unwrap();
        std::fs::write(lab.join("state.json"), r#"{"pid":4242,"mount":"/mnt/lab","image":"/x"}"#).unwrap();
        assert_eq!(lab_server_pid(&root, "/mnt/lab"), None, "no such process");
        thread(&root, "4242", "4242", 1_000);
        thread(&root, "4242", "4243", 2_000);
        assert_eq!(lab_server_pid(&root, "/mnt/lab"), Some(4242));
        assert_eq!(lab_server_pid(&root, "/mnt/other"), None);
        let chain = Chain::at(root.clone(), Some("/mnt/lab"));
        assert!(chain.has_server());
        assert_eq!(thread_waits(&root, "4242").values().sum::<u64>(), 3_000);
    }

    #[test]
    fn a_window_whose_threads_waited_a_third_of_it_is_starved_and_a_quiet_one_is_not() {
        let ms = 1_000_000u64;
        let (own0, own1) = (BTreeMap::from([("1".to_string(), 0)]), BTreeMap::from([("1".to_string(), 10 * ms)]));
        let server0 = BTreeMap::from([("9".to_string(), 5 * ms)]);
        let starved =
            share_of(&own0, &own1, server0.clone(), Some(BTreeMap::from([("9".to_string(), 40 * ms)])), 100 * ms)
                .unwrap();
        assert!((starved.share() - 0.45).abs() < 1e-9, "{starved:?}");
        assert!(starved.starved());
        assert_eq!(starved.describe(), "ours 10%, lab server 35%");
        let quiet =
            share_of(&own0, &own1, server0, Some(BTreeMap::from([("9".to_string(), 6 * ms)])), 100 * ms).unwrap();
        assert!(!quiet.starved(), "{quiet:?}");
        assert_eq!(share_of(&own0, &own1, BTreeMap::new(), None, 10 * ms), None, "too short to judge");
    }

    #[test]
    fn our_own_threads_are_read_from_proc_self() {
        let waits = thread_waits(&Root::system(), "self");
        assert!(!waits.is_empty(), "this test's own threads have schedstat files");
    }
}
