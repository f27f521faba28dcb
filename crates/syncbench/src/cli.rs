//! The command line: one subcommand per job. Each subcommand's flags live next to its code in `cmd/`.

use clap::{Parser, Subcommand};

/// The truth about durable writes on this machine.
///
/// Measures every way to make a write durable, says what stands between a write and stable storage,
/// recommends database settings, and proves the mechanisms with a reference engine and a crash simulator.
#[derive(Debug, Parser)]
#[command(name = "syncbench", version, about, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size of the biggest variant's flags costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure every durable-write method on DIR (default: the current directory).
    Run(crate::cmd::run::Args),
    /// Show the file system, mount, device chain and caches under DIR, and the verdict.
    Probe(crate::cmd::probe::Args),
    /// Recommend durability settings for PostgreSQL, MySQL, MariaDB, SQLite, RocksDB and etcd, each with the
    /// measurement and the recorded power cuts (`powercut db`) behind it.
    Advise(crate::cmd::advise::Args),
    /// Group commit with the reference write-ahead log: commits/s as clients grow.
    Commit(crate::cmd::commit::Args),
    /// TPC-B-like workload on the reference page store with each torn-page protection.
    Pages(crate::cmd::pages::Args),
    /// Crash the reference engine on a simulated file system and check no acknowledged commit is lost.
    Crashtest(crate::cmd::crashtest::Args),
    /// What this kernel and file system really do after a failed fsync (needs root).
    FsyncErrors(crate::cmd::fsync_errors::Args),
    /// Emulated disks whose truth is known (flush cost, volatile cache, honesty, power cut) under a real
    /// file system (needs root).
    Lab(crate::cmd::lab::Args),
    /// Prove that acknowledged writes survive a power cut: a writer with a witness, verify after the reboot,
    /// and the whole loop on lab disks.
    Powercut(crate::cmd::powercut::Args),
    /// Render a run's JSON as a self-contained HTML report with charts.
    Report(crate::cmd::report::Args),
    /// Compare runs side by side, with ratios and their uncertainty.
    Compare(crate::cmd::compare::Args),
    /// Watch durability calls of a started program, running processes (--pid, --comm) or the machine (--all).
    Trace(crate::cmd::trace::Args),
    /// A low-duty durability canary: measure every interval, judge against a baseline, write metrics for
    /// Prometheus (node_exporter's textfile collector).
    Watch(crate::cmd::watch::Args),
    /// Remove what a killed syncbench left behind (mounts, loop devices, lab servers, their directories),
    /// as recorded in /run/syncbench; nothing else.
    Cleanup(crate::cmd::cleanup::Args),
}

/// Parses the command line. A value outside a flag's closed set is one line naming the flag and the
/// values it takes (exit 2, as every usage error); clap reports the rest (and prints --help, --version).
pub fn parse() -> Cli {
    Cli::try_parse().unwrap_or_else(|e| match invalid_value_line(&e) {
        Some(line) => {
            eprintln!("{line}");
            std::process::exit(2)
        }
        None => e.exit(),
    })
}

/// `syncbench: invalid value 'x' for --flag <X>; use one of a, b, c` for clap's invalid-value error.
fn invalid_value_line(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidValue {
        return None;
    }
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value)), Some(ContextValue::Strings(valid))) =
        (e.get(ContextKind::InvalidArg), e.get(ContextKind::InvalidValue), e.get(ContextKind::ValidValue))
    else {
        return None;
    };
    Some(format!("syncbench: invalid value '{value}' for {arg}; use one of {}", valid.join(", ")))
}
