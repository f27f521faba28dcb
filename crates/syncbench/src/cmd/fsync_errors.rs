//! `syncbench fsync-errors`: make one block's writeback fail on a real ext4, xfs or btrfs and show what
//! every later fsync and read reports, next to the USENIX ATC'20 findings.

use crate::core::exit::{Outcome, usage};
use crate::core::export::ExportArgs;
use crate::proof::lab::cases::{FsCase, SyncCall};

/// Flags of `syncbench fsync-errors`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// File systems to test, comma-separated: ext4 (data=ordered), ext4-journal (data=journal),
    /// ext4-journal-write (data=journal, the journal write fails), xfs, btrfs.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "ext4,ext4-journal,ext4-journal-write,xfs,btrfs",
          value_parser = super::names_parser(&FsCase::ALL, FsCase::name))]
    pub fs: Vec<FsCase>,
    /// The sync call made after the failed writeback.
    #[arg(long, value_enum, default_value_t = SyncCall::Fsync)]
    pub sync: SyncCall,
    /// --json, --csv (one row per file system), --markdown (the tables), --openmetrics (per file system:
    /// did the first sync report the error, did a retry claim success); `-` for stdout (the text then
    /// goes to stderr). Every target is checked before anything is mounted.
    #[command(flatten)]
    pub export: ExportArgs,
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    let fs_cases = super::first_of_each(&args.fs);
    args.export.validate()?;
    run(&fs_cases, &args)
}

#[cfg(not(feature = "fuse"))]
fn run(_cases: &[FsCase], _args: &Args) -> Outcome {
    Err(usage(
        "this syncbench was built without FUSE support, which fsync-errors needs; \
         rebuild with `cargo build --release --features fuse`",
    ))
}

#[cfg(feature = "fuse")]
fn run(fs_cases: &[FsCase], args: &Args) -> Outcome {
    use crate::proof::fsync_errors::{report, results};
    use crate::proof::lab::prereq;
    let missing = prereq::missing_for_command();
    if !missing.is_empty() {
        return Err(usage(format!("fsync-errors cannot run: missing {}", missing.join("; "))));
    }
    let started_at = crate::core::schema::now_rfc3339();
    let all = run_cases(fs_cases, args.sync);
    let payload =
        results::Payload { fsync_errors: results::Report { conclusion: report::conclusion(&all), results: all } };
    write_outputs(&payload, args, started_at)?;
    let results = &payload.fsync_errors.results;
    if results.iter().all(|r| r.observed.is_none()) {
        let problems: Vec<String> = results
            .iter()
            .filter_map(|r| r.error.as_ref().or(r.skipped.as_ref()).map(|e| format!("{}: {e}", r.fs.name())))
            .collect();
        return Err(usage(format!("no file system could be tested: {}", problems.join("; "))));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Every case in order; on SIGINT/SIGTERM this never returns (the signal thread tears down and exits).
#[cfg(feature = "fuse")]
fn run_cases(fs_cases: &[FsCase], sync: SyncCall) -> Vec<crate::proof::fsync_errors::results::FsResult> {
    use crate::proof::fsync_errors::experiment;
    let mut all = Vec::new();
    for &case in fs_cases {
        if crate::core::output::stderr_is_terminal() {
            eprintln!("fsync-errors: {} …", case.name());
        }
        all.push(experiment::run_case(case, sync));
    }
    // On a signal the handler exits with 128+signal once teardown is done; a partial table would mislead.
    crate::core::cleanup::stop_if_interrupted();
    all
}

/// The table (on stderr when an export took stdout), then the requested exports.
#[cfg(feature = "fuse")]
fn write_outputs(
    payload: &crate::proof::fsync_errors::results::Payload,
    args: &Args,
    started_at: String,
) -> anyhow::Result<()> {
    use crate::proof::fsync_errors::report;
    let found = &payload.fsync_errors;
    crate::core::export::print_human(&args.export, &report::render(&found.results, &found.conclusion, false))?;
    let environment = crate::observe::probe::collect(&std::env::temp_dir());
    let verdicts = report::verdicts(&found.results);
    let envelope = crate::core::schema::Envelope::new(started_at, environment, verdicts, payload.clone());
    crate::core::export::write_all(&envelope, &args.export)
}
