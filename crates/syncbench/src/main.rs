//! syncbench: the truth about durable writes on this machine.
//!
//! main is a table of contents: parse, dispatch, and turn the outcome into an exit code
//! (0 success, 1 a check failed, 2 bad usage or unusable target; a broken pipe exits quietly).

use std::process::ExitCode;
use syncbench::cli::Command;
use syncbench::cmd;
use syncbench::core::{cleanup, exit};

fn main() -> ExitCode {
    syncbench_sys::ignore_sigpipe();
    cleanup::install_signal_handlers(|code| std::process::exit(code));
    // The device accounting (observe) reads a lab disk's own counts through the lab (proof, above it).
    #[cfg(feature = "fuse")]
    syncbench::observe::blockdev::account::install_device_truth(Box::new(
        syncbench::proof::lab::device_truth::LabDeviceTruth,
    ));
    let cli = syncbench::cli::parse();
    if !matches!(cli.command, Command::Cleanup(_)) {
        syncbench::proof::leftovers::report_leftovers();
    }
    let outcome = match cli.command {
        Command::Run(args) => cmd::run::main(args),
        Command::Probe(args) => cmd::probe::main(args),
        Command::Advise(args) => cmd::advise::main(args),
        Command::Commit(args) => cmd::commit::main(args),
        Command::Pages(args) => cmd::pages::main(args),
        Command::Crashtest(args) => cmd::crashtest::main(args),
        Command::FsyncErrors(args) => cmd::fsync_errors::main(args),
        Command::Lab(args) => cmd::lab::main(args),
        Command::Powercut(args) => cmd::powercut::main(args),
        Command::Report(args) => cmd::report::main(args),
        Command::Compare(args) => cmd::compare::main(args),
        Command::Trace(args) => cmd::trace::main(args),
        Command::Watch(args) => cmd::watch::main(args),
        Command::Cleanup(args) => cmd::cleanup::main(args),
    };
    cleanup::remove_all();
    exit::code_for(outcome)
}
