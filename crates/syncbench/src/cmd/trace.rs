//! `syncbench trace [EXPORTS] [--histogram] [--baseline RUN.json] (--pid PID[,PID...] | --comm NAME | --all)
//! [--secs N]` and `syncbench trace [...] [--no-sync] [--syncs-only] -- COMMAND...`
//!
//! Attached (`--pid`, `--comm`, `--all`): reads the kernel's syscall and block tracepoints, stops nobody,
//! ends after `--secs`, at Ctrl-C, or (`--pid`) when every followed process has exited. Started
//! (`-- COMMAND`): runs COMMAND under ptrace with a seccomp filter and exits with its exit status (128+N
//! when a signal killed it), so a test suite run under `trace --no-sync` keeps its meaning. One report.

use crate::core::exit::{Outcome, usage};
use std::ffi::OsString;
use std::path::PathBuf;

/// Flags of `syncbench trace`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  syncbench trace --comm postgres --secs 60 --histogram\n  \
                        syncbench trace --pid 4242,4243 --json trace.json\n  \
                        syncbench trace --all --secs 10\n  \
                        syncbench trace --histogram -- sqlite3 test.db < script.sql\n  \
                        syncbench trace --no-sync --syncs-only -- make check\n  \
                        syncbench trace --baseline run.json --json trace.json -- ./my-service")]
pub struct Args {
    /// --json, --csv (one row per call kind, overall and per file), --markdown, --openmetrics (calls per
    /// second and latency p50/p99/p99.9 per call kind); `-` for stdout. Checked before anything is traced.
    #[command(flatten)]
    pub export: crate::core::export::ExportArgs,
    /// Also print a log2 latency histogram per call (like DTrace's quantize).
    #[arg(long)]
    pub histogram: bool,
    /// Make every durability call a no-op (and strip O_SYNC/O_DSYNC): fast, and NOTHING IS DURABLE.
    /// Started commands only.
    #[arg(long, conflicts_with_all = ["pid", "comm", "all"])]
    pub no_sync: bool,
    /// Trace only the sync calls, not every write: no bytes between syncs, and writes on O_SYNC/O_DSYNC
    /// descriptors are not seen (started: writes run without stopping; attached: fewer samples).
    #[arg(long)]
    pub syncs_only: bool,
    /// Compare with the fdatasync latency of a saved `syncbench run --json` file.
    #[arg(long, value_name = "RUN.json")]
    pub baseline: Option<PathBuf>,
    /// Attach to running processes (every thread, and the processes they start meanwhile); no ptrace,
    /// root needed. Ends after --secs, at Ctrl-C, or when they have all exited.
    #[arg(long, value_name = "PID[,PID...]", conflicts_with_all = ["comm", "all", "command"])]
    pub pid: Option<String>,
    /// Attach to every process with this name (as in `ps -o comm`, at most 15 characters) and the
    /// processes they start; root needed.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["all", "command"])]
    pub comm: Option<String>,
    /// Attach to the whole machine; root needed.
    #[arg(long, conflicts_with = "command")]
    pub all: bool,
    /// --pid/--comm: record with events on the chosen tasks instead of on every CPU (other programs'
    /// calls are not sampled; the traced tasks pay more at each context switch).
    #[arg(long, conflicts_with_all = ["all", "command"])]
    pub per_task: bool,
    /// What records an attached trace: `bpf` (the default: eBPF programs filter and pair the calls in
    /// the kernel, one record per call; falls back to perf with one line on stderr when the kernel refuses
    /// them) or `perf` (perf events: one sample per call entry and exit, filtered here). Given
    /// explicitly, `bpf` does not fall back. The disks' request lines (block tracepoints) are read the
    /// same way (perf events there may miss completions: docs/trace.md, "The disks").
    #[arg(long, value_name = "bpf|perf", value_parser = ["bpf", "perf"], conflicts_with = "command")]
    pub tracer: Option<String>,
    /// Stop an attached trace after N seconds (default: at Ctrl-C).
    #[arg(long, value_name = "N")]
    pub secs: Option<f64>,
    /// The command to start and trace, with its arguments (put it after `--`).
    #[arg(
        required_unless_present_any = ["pid", "comm", "all"],
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<OsString>,
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
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
    use crate::core::schema::Envelope;
    use crate::observe::trace::attach::{AttachOptions, Backend};
    use crate::observe::trace::baseline;
    use crate::observe::trace::follow::{self, Selection};
    use crate::observe::trace::report::{self, TracePayload};
    use crate::observe::trace::session::{self, Done};
    use crate::observe::trace::tracer::{Ending, TraceOptions};
    use std::process::ExitCode;
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Duration;

    pub fn main(args: Args) -> Outcome {
        args.export.validate()?;
        let baseline_case = args.baseline.as_deref().map(baseline::load).transpose()?;
        let started_at = crate::core::schema::now_rfc3339();
        let done: Done = Arc::new((Mutex::new(false), Condvar::new()));
        let plan = plan_attach(&args)?;
        let attached = plan.is_some();
        let (mut report, code) = match plan {
            Some(options) => (session::attached(options, done.clone())?, ExitCode::SUCCESS),
            None => {
                let options = TraceOptions { no_sync: args.no_sync, track_writes: !args.syncs_only };
                let (report, ending) = session::started(&args.command, options, done.clone())?;
                (report, exit_code(ending))
            }
        };
        if let (Some(path), Some(case)) = (&args.baseline, &baseline_case) {
            report.baseline = baseline::compare(&report, path, case);
        }
        // Attached, the report is the answer: stdout (unless an export takes it). A started command's stdout
        // is its own, so the report goes beside it on stderr.
        let text = report::render(&report, args.histogram);
        if attached {
            crate::core::export::print_human(&args.export, &text)?
        } else {
            eprint!("{text}")
        }
        for warning in &report.coverage_warnings {
            eprintln!("syncbench: warning: {}", warning.message);
        }
        if args.export.any() {
            let env = crate::observe::probe::collect(&std::env::current_dir().unwrap_or_default());
            let doc = Envelope::new(started_at, env, Vec::new(), TracePayload { trace: report });
            crate::core::export::write_all(&doc, &args.export)?;
        }
        session::report_done(&done);
        Ok(code)
    }

    /// The attach plan from `--pid`/`--comm`/`--all`, or `None` for a started command. Bad values and a
    /// missing privilege are one line each, before anything is traced.
    fn plan_attach(args: &Args) -> anyhow::Result<Option<AttachOptions>> {
        let selection = match (&args.pid, &args.comm, args.all) {
            (Some(pids), _, _) => Selection::Pids(parse_pids(pids)?),
            (_, Some(name), _) if name.is_empty() || name.len() > 15 => {
                return Err(usage(format!(
                    "--comm {name:?}: a process name is 1 to 15 characters (the kernel's comm, as `ps -o comm` \
                     shows it); give the first 15"
                )));
            }
            (_, Some(name), _) if follow::pids_named(name).is_empty() => {
                return Err(usage(format!(
                    "--comm {name}: no running process is named {name} (see `ps -e -o comm`); --comm attaches to \
                     processes running now and what they start"
                )));
            }
            (_, Some(name), _) => Selection::Comm(name.clone()),
            (_, _, true) => Selection::All,
            _ if args.secs.is_some() => return Err(usage("--secs applies to --pid, --comm or --all only")),
            _ => return Ok(None),
        };
        let duration = match args.secs {
            Some(s) if !(s > 0.0 && s < 1e9) => return Err(usage(format!("--secs {s}: give a positive number"))),
            s => s.map(Duration::from_secs_f64),
        };
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(usage(
                "syncbench trace --pid/--comm/--all needs root (it records the kernel's syscall and block \
                 tracepoints): run it with sudo, or start the program under trace: syncbench trace -- COMMAND",
            ));
        }
        let per_task = args.per_task;
        let backend = match args.tracer.as_deref() {
            Some("bpf") if per_task => {
                return Err(usage(
                    "--per-task records with perf events per task: give --tracer perf or leave --tracer out",
                ));
            }
            Some("bpf") => match crate::observe::trace::inkernel::pid_namespace_refusal_here() {
                Some(why) => return Err(usage(format!("--tracer bpf: {why}: give --tracer perf"))),
                None => Backend::Bpf,
            },
            Some(_) => Backend::Perf,
            None if per_task => Backend::Perf,
            None => Backend::Default,
        };
        Ok(Some(AttachOptions { selection, duration, track_writes: !args.syncs_only, per_task, backend }))
    }

    fn parse_pids(text: &str) -> anyhow::Result<Vec<i32>> {
        let mut pids = Vec::new();
        for part in text.split(',') {
            let pid: i32 = part.trim().parse().ok().filter(|p| *p > 0).ok_or_else(|| {
                usage(format!(
                    "--pid {text}: `{part}` is not a process id; give PID[,PID...], e.g. --pid $(pgrep -d, etcd)"
                ))
            })?;
            if !follow::is_alive(pid) {
                return Err(usage(format!("--pid {pid}: no such process (see `ps -e`)")));
            }
            pids.push(pid);
        }
        Ok(pids)
    }

    fn exit_code(ending: Ending) -> ExitCode {
        match ending {
            Ending::Exited(code) => ExitCode::from(code.clamp(0, 255) as u8),
            Ending::Killed(sig) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        }
    }
}
