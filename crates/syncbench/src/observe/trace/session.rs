//! One trace, either mode, from its options to its report: what `syncbench trace` runs between parsing
//! its flags and printing. `Done` lets a Ctrl-C handler wait until the report is out.

use super::attach::{self, AttachOptions};
use super::devices::DiskWindow;
use super::report::{self, Meta, TraceReport};
use super::tracer::{self, Ending, LiveProcesses, TraceOptions};
use crate::core::exit::usage;
use crate::observe::blockdev::requests::Lost;
use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Set once the report is out, so a Ctrl-C handler waiting for it can let the process exit.
pub type Done = Arc<(Mutex<bool>, Condvar)>;

/// Say the report is out.
pub fn report_done(done: &Done) {
    *done.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
    done.1.notify_all();
}

/// Attach as `options` says until the trace ends; the report of what was seen.
pub fn attached(options: AttachOptions, done: Done) -> anyhow::Result<TraceReport> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    crate::core::cleanup::on_signal(move || {
        flag.store(true, Ordering::SeqCst);
        wait_for_report(&done);
    });
    let what = options.selection.describe();
    let until = options.duration.map_or("Ctrl-C".to_string(), |d| format!("{:.0} s or Ctrl-C", d.as_secs_f64()));
    let writes_tracked = options.track_writes;
    let traced = attach::attach(options, stop, |mechanism| {
        eprintln!("syncbench: tracing {what} ({mechanism}, nothing is stopped) until {until}");
    })
    .map_err(|e| anyhow::Error::new(e).context("attaching to the kernel tracepoints failed"))?;
    let meta = Meta {
        attached_to: Some(what),
        mechanism: traced.mechanism,
        block_mechanism: Some(traced.block_mechanism),
        duration_s: traced.duration_s,
        processes: traced.processes_seen,
        tasks: traced.tasks_seen,
        unseen: traced.unseen,
        writes_tracked,
        lost_events: traced.lost_events,
        block_lost: traced.block_lost,
        ..Meta::default()
    };
    let window = DiskWindow {
        stats: traced.disk_stats,
        requests: traced.disk_requests,
        file_devs: traced.file_devs,
        every_busy_disk: meta.attached_to.as_deref() == Some("--all"),
    };
    Ok(report::build(meta, &traced.recorder, &window))
}

/// Start `command` under ptrace and trace it to its end; the report and how the command ended.
pub fn started(command: &[OsString], options: TraceOptions, done: Done) -> anyhow::Result<(TraceReport, Ending)> {
    if options.no_sync {
        eprintln!(
            "syncbench: WARNING: --no-sync: fsync, fdatasync, sync_file_range, msync, syncfs and sync return \
             success without doing anything, and O_SYNC/O_DSYNC/RWF_DSYNC are stripped. NOTHING THIS \
             COMMAND WRITES IS DURABLE. Use it for test suites only."
        );
        if options.track_writes {
            eprintln!(
                "syncbench: hint: add --syncs-only to let plain writes run untraced (faster for write-heavy \
                 test suites; O_DSYNC writes are then not counted one by one)"
            );
        }
    }
    let live = LiveProcesses::default();
    pass_on_interrupt(live.clone(), done);
    let disks = crate::observe::blockdev::disk::all_disks();
    let before = crate::observe::blockdev::stat::Snapshot::take(&disks);
    let traced = tracer::trace_command(command, options, live).map_err(|e| spawn_error(command, e))?;
    let window = DiskWindow {
        stats: crate::observe::blockdev::stat::Snapshot::take(&disks).since(&before),
        ..Default::default()
    };
    let meta = Meta {
        command: command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        mechanism: "ptrace+seccomp",
        block_mechanism: None,
        ending: Some(traced.ending),
        duration_s: traced.duration_s,
        processes: traced.processes_seen,
        tasks: traced.tasks_seen,
        unseen: traced.unseen.clone(),
        no_sync: options.no_sync,
        writes_tracked: options.track_writes,
        lost_events: 0,
        block_lost: Lost::default(),
        attached_to: None,
    };
    Ok((report::build(meta, &traced.recorder, &window), traced.ending))
}

fn spawn_error(command: &[OsString], err: std::io::Error) -> anyhow::Error {
    let name = command[0].to_string_lossy();
    match err.raw_os_error() {
        Some(libc::ENOENT) => usage(format!("cannot run `{name}`: no such program; check the name and PATH")),
        Some(libc::EACCES) => usage(format!("cannot run `{name}`: permission denied (not executable?)")),
        Some(libc::EPERM) => usage(format!(
            "cannot trace `{name}`: ptrace or seccomp not permitted here ({err}); check \
             /proc/sys/kernel/yama/ptrace_scope or the container's seccomp profile"
        )),
        _ => anyhow::Error::new(err).context(format!("tracing `{name}` failed")),
    }
}

/// Wait up to 10 s for the report to be out (then the signal handler exits the process).
pub fn wait_for_report(done: &Done) {
    let (lock, cvar) = &**done;
    let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
    let _ = cvar.wait_timeout_while(guard, Duration::from_secs(10), |printed| !*printed);
}

/// On Ctrl-C or SIGTERM, pass SIGINT on to every traced process (a terminal's Ctrl-C reaches them
/// anyway; a `kill` of syncbench alone would not) and wait for the report. After that syncbench exits
/// and the kernel kills whatever is still traced (PTRACE_O_EXITKILL).
fn pass_on_interrupt(live: LiveProcesses, done: Done) {
    crate::core::cleanup::on_signal(move || {
        let pids: Vec<_> = live.lock().unwrap_or_else(|p| p.into_inner()).iter().copied().collect();
        for pid in pids {
            let _ = syncbench_sys::ptrace::send_signal(pid, libc::SIGINT);
        }
        wait_for_report(&done);
    });
}
