//! Whether a process runs, as `/proc/PID/stat` tells it: the one answer syncbench's parts use (the tracer
//! following `--pid`, the ftrace instances of dead processes, the lab server, the owners of leftovers).

/// Field `n` (1-based, as proc(5) numbers them) of a `/proc/PID/stat` line. The name (field 2) may hold
/// spaces and parentheses, so the fields are counted after its last `)`.
pub fn stat_field(stat: &str, n: usize) -> Option<&str> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(n.checked_sub(3)?)
}

/// Whether process `pid` runs: it exists and is neither dead (`X`) nor a zombie (`Z`) its parent has not
/// reaped yet (a killed process whose shell or test harness has not waited for it does nothing more).
/// A zombie leader whose other threads still run (it called `pthread_exit` first) is a running process.
pub fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| running_in(&stat))
}

/// [`is_running`] of the process whose `/proc/PID/stat` line is `stat`.
fn running_in(stat: &str) -> bool {
    match stat_field(stat, 3) {
        None | Some("X") => false,
        // Field 20: num_threads; the zombie leader is one of them.
        Some("Z") => stat_field(stat, 20).and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n > 1),
        Some(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_survive_odd_names() {
        let stat = "42 (a) b (c)) S 7 42 42 0";
        assert_eq!(stat_field(stat, 3), Some("S"));
        assert_eq!(stat_field(stat, 4), Some("7"));
        assert_eq!(stat_field(stat, 1), None, "the pid and name are not counted here");
        assert_eq!(stat_field("no name", 3), None);
    }

    #[test]
    fn a_zombie_not_yet_reaped_does_not_run_and_this_process_does() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while is_running(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "not reaped yet: still in /proc");
        assert!(!is_running(pid), "an exited, unreaped child does not run");
        child.wait().unwrap();
        assert!(!is_running(pid), "nor once reaped");
        assert!(is_running(std::process::id()));
    }

    #[test]
    fn a_zombie_leader_with_running_threads_runs_and_a_dead_process_does_not() {
        // Fields 3.. of a stat line; field 20 (num_threads) is the 18th after the name.
        let line = |state: &str, threads: u32| {
            format!("7 (x y) {state} 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 {threads} 0 123")
        };
        assert!(running_in(&line("Z", 3)), "leader exited first, two threads run");
        assert!(!running_in(&line("Z", 1)));
        assert!(!running_in(&line("X", 1)));
        assert!(running_in(&line("D", 1)) && running_in(&line("S", 1)));
        assert!(!running_in(""));
    }
}
