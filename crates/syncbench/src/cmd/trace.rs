//! `syncbench trace [--json F] [--histogram] [--no-sync] [--syncs-only] [--baseline RUN.json] -- COMMAND...`
//!
//! Runs COMMAND under ptrace with a seccomp filter and reports its durability calls per call and per file.
//! syncbench exits with COMMAND's exit status (128+N when a signal killed it), so a test suite run under
//! `trace --no-sync` keeps its meaning.

use crate::exit::{Outcome, usage};
use std::ffi::OsString;
use std::path::PathBuf;

/// Flags of `syncbench trace`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  syncbench trace --histogram -- sqlite3 test.db < script.sql\n  \
                        syncbench trace --no-sync --syncs-only -- make check\n  \
                        syncbench trace --baseline run.json --json trace.json -- ./my-service")]
pub struct Args {
    /// Write the report as JSON (syncbench/v1) to FILE (`-` = stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also print a log2 latency histogram per call (like DTrace's quantize).
    #[arg(long)]
    pub histogram: bool,
    /// Make every durability call a no-op (and strip O_SYNC/O_DSYNC): fast, and NOTHING IS DURABLE.
    #[arg(long)]
    pub no_sync: bool,
    /// Trace only the sync calls, not every write: writes run at full speed, but bytes between syncs and
    /// writes on O_SYNC/O_DSYNC descriptors are not seen.
    #[arg(long)]
    pub syncs_only: bool,
    /// Compare with the fdatasync latency of a saved `syncbench run --json` file.
    #[arg(long, value_name = "RUN.json")]
    pub baseline: Option<PathBuf>,
    /// Attaching to a running process is not supported: exits 2 saying why and what to do instead.
    #[arg(long, value_name = "PID", allow_hyphen_values = true, num_args = 0..=1, default_missing_value = "")]
    pub pid: Option<String>,
    /// The command to trace, with its arguments (put it after `--`).
    #[arg(
        required_unless_present = "pid",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<OsString>,
}

/// The one line `--pid` gets (the reason is the one in docs/trace.md, "Limits").
pub const PID_UNSUPPORTED: &str = "--pid: attaching to a running process is not supported: the seccomp filter \
                                   that limits stops to durability calls cannot be installed into a running \
                                   process from outside, and stopping it on every system call instead would \
                                   distort what is measured; start the program under trace instead: \
                                   syncbench trace -- COMMAND [ARGS...]";

/// Run the command.
pub fn main(args: Args) -> Outcome {
    if args.pid.is_some() {
        return Err(usage(PID_UNSUPPORTED));
    }
    platform_main(args)
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn platform_main(args: Args) -> Outcome {
    imp::main(args)
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn platform_main(_args: Args) -> Outcome {
    Err(usage("syncbench trace is not available on this platform: it decodes x86_64 Linux system calls only"))
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod imp {
    use super::*;
    use crate::schema::Envelope;
    use crate::trace::baseline;
    use crate::trace::report::{self, TracePayload};
    use crate::trace::tracer::{self, Ending, LiveProcesses, TraceOptions};
    use std::process::ExitCode;
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Duration;

    /// Set once the report is out, so a Ctrl-C handler waiting for it can let the process exit.
    type Done = Arc<(Mutex<bool>, Condvar)>;

    pub fn main(args: Args) -> Outcome {
        check_json_dest(&args)?;
        let baseline_case = args.baseline.as_deref().map(baseline::load).transpose()?;
        let started_at = crate::schema::now_rfc3339();
        if args.no_sync {
            eprintln!(
                "syncbench: WARNING: --no-sync: fsync, fdatasync, sync_file_range, msync, syncfs and sync return \
                 success without doing anything, and O_SYNC/O_DSYNC/RWF_DSYNC are stripped. NOTHING THIS \
                 COMMAND WRITES IS DURABLE. Use it for test suites only."
            );
            if !args.syncs_only {
                eprintln!(
                    "syncbench: hint: add --syncs-only to let plain writes run untraced (faster for write-heavy \
                     test suites; O_DSYNC writes are then not counted one by one)"
                );
            }
        }
        let options = TraceOptions { no_sync: args.no_sync, track_writes: !args.syncs_only };
        let done: Done = Arc::new((Mutex::new(false), Condvar::new()));
        let live = LiveProcesses::default();
        pass_on_interrupt(live.clone(), done.clone());
        let traced = tracer::trace_command(&args.command, options, live).map_err(|e| spawn_error(&args.command, e))?;
        let command = args.command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let mut report = report::build(command, &traced, args.no_sync, options.track_writes);
        if let (Some(path), Some(case)) = (&args.baseline, &baseline_case) {
            report.baseline = baseline::compare(&report, path, case);
        }
        eprint!("{}", report::render(&report, args.histogram));
        for warning in &report.coverage_warnings {
            eprintln!("syncbench: warning: {}", warning.message);
        }
        if let Some(dest) = &args.json {
            let dir = std::env::current_dir().unwrap_or_default();
            let env = crate::probe::collect(&dir);
            let doc = Envelope::new(started_at, env, Vec::new(), TracePayload { trace: report });
            crate::output::write_to(dest, &(serde_json::to_string_pretty(&doc)? + "\n"))?;
        }
        *done.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
        done.1.notify_all();
        Ok(exit_code(traced.ending))
    }

    /// Fail before running the command, not after, when the JSON cannot be written.
    fn check_json_dest(args: &Args) -> anyhow::Result<()> {
        let Some(dest) = args.json.as_deref().filter(|d| *d != std::path::Path::new("-")) else {
            return Ok(());
        };
        let parent = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        if !parent.is_dir() {
            return Err(usage(format!(
                "--json {}: directory {} does not exist; create it or choose another path",
                dest.display(),
                parent.display()
            )));
        }
        Ok(())
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

    /// On Ctrl-C or SIGTERM, pass SIGINT on to every traced process (a terminal's Ctrl-C reaches them
    /// anyway; a `kill` of syncbench alone would not) and wait up to 10 s for the report. After that
    /// syncbench exits and the kernel kills whatever is still traced (PTRACE_O_EXITKILL).
    fn pass_on_interrupt(live: LiveProcesses, done: Done) {
        crate::cleanup::on_signal(move || {
            let pids: Vec<_> = live.lock().unwrap_or_else(|p| p.into_inner()).iter().copied().collect();
            for pid in pids {
                let _ = syncbench_sys::ptrace::send_signal(pid, libc::SIGINT);
            }
            let (lock, cvar) = &*done;
            let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
            let _ = cvar.wait_timeout_while(guard, Duration::from_secs(10), |printed| !*printed);
        });
    }

    fn exit_code(ending: Ending) -> ExitCode {
        match ending {
            Ending::Exited(code) => ExitCode::from(code.clamp(0, 255) as u8),
            Ending::Killed(sig) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        }
    }
}
