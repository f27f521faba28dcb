//! `syncbench crashtest`: crash the reference engine thousands of times on the simulated file system and
//! check that no acknowledged commit is ever lost. A failure prints a one-line reproducer and exits 1.

use crate::crashtest::pages::PagesScenario;
use crate::crashtest::wal::WalScenario;
use crate::crashtest::{self, ExploreOptions, Failure, Summary};
use crate::exit::{CheckFailed, Outcome, usage};
use crate::probe::Environment;
use crate::schema::{Envelope, now_rfc3339};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use syncbench_simfs::Profile;

/// Accounts per branch unless `--accounts` says otherwise: small enough for thousands of points a minute.
const DEFAULT_ACCOUNTS: u32 = 2000;

/// Which engine and torn-page protection to crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The write-ahead log alone: several clients append and commit records.
    Wal,
    /// TPC-B on the page store with full-page writes.
    Fpw,
    /// TPC-B on the page store with a double-write buffer.
    Dw,
    /// TPC-B on the page store with no torn-page protection (the checker must find torn pages).
    None,
}

/// File-system rules for names and journals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileArg {
    /// POSIX minimum: a create or rename is durable only after the directory is fsynced.
    Strict,
    /// ext4 data=ordered: a file's fsync commits the journal (its create too); crashes keep a prefix.
    Ext4,
}

/// A deliberate engine bug, to show the crash test catches it (test-only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineBug {
    /// Do not fsync the directory after creating or renaming a file.
    SkipDirFsync,
    /// Acknowledge commits without syncing the log.
    SkipLogSync,
    /// Retry a failed fsync and carry on when the retry succeeds.
    RetryFsync,
    /// Let the double-write flush skip its fsync.
    DwSkipFsync,
}

/// Flags of `syncbench crashtest`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to crash: `wal` (the log), or the TPC-B page workload with `fpw`, `dw` or `none` protection.
    #[arg(long, value_enum, default_value = "wal")]
    pub mode: Mode,
    /// Number of crash points.
    #[arg(long, default_value_t = 1000)]
    pub points: u64,
    /// Seed of the series (every point derives from it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// File-system profile.
    #[arg(long, value_enum, default_value = "strict")]
    pub profile: ProfileArg,
    /// Inject one failed writeback per point: the engine must stop and keep every earlier commit.
    #[arg(long)]
    pub fsync_errors: bool,
    /// Run only crash point K of the series (what a failure's reproducer line says).
    #[arg(long, value_name = "K")]
    pub point: Option<u64>,
    /// Accounts per branch of the TPC-B bank in the page-store modes (TPC-B proper: 100000).
    #[arg(long, default_value_t = DEFAULT_ACCOUNTS, value_name = "N")]
    pub accounts: u32,
    /// Write the JSON result to FILE (`-` = stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Break the engine on purpose (to prove the test catches it).
    #[arg(long, value_enum, hide = true)]
    pub engine_bug: Option<EngineBug>,
}

/// The JSON payload: `{"crashtest": {...}}`.
#[derive(Debug, Serialize)]
pub struct Payload {
    /// The run.
    pub crashtest: CrashtestJson,
}

/// One crash-test series.
#[derive(Debug, Serialize)]
pub struct CrashtestJson {
    /// `wal`, `fpw`, `dw` or `none`.
    pub mode: String,
    /// `strict` or `ext4`.
    pub profile: String,
    /// Seed of the series.
    pub seed: u64,
    /// Points asked for.
    pub points_requested: u64,
    /// The single point run, if `--point` was given.
    pub point: Option<u64>,
    /// Whether writeback errors were injected.
    pub fsync_errors: bool,
    /// Accounts per branch of the bank (page-store modes; TPC-B scale 1).
    pub accounts_per_branch: u32,
    /// The deliberate engine bug, if any.
    pub engine_bug: Option<String>,
    /// Whether every point passed.
    pub passed: bool,
    /// Crash points run (each: crash, recover, crash again, recover, check).
    pub points: u64,
    /// Points right after an acknowledgement.
    pub points_after_ack: u64,
    /// Points near a checkpoint or flush.
    pub points_near_mark: u64,
    /// Points anywhere on the timeline.
    pub points_uniform: u64,
    /// Points with 512-byte sectors (the rest 4096).
    pub points_sector_512: u64,
    /// Points where the power failed during the run.
    pub points_crashed_mid_run: u64,
    /// Points where the power failed again during the first recovery.
    pub points_recovery_interrupted: u64,
    /// Storage operations in one uninterrupted run.
    pub ops_per_run: u64,
    /// Acknowledged commits in one uninterrupted run.
    pub acks_per_run: u64,
    /// Dirty sectors written in crash images.
    pub sectors_new: u64,
    /// Dirty sectors lost in crash images.
    pub sectors_old: u64,
    /// Pending namespace operations at the crashes.
    pub ns_ops_pending: u64,
    /// Of those, kept by the images.
    pub ns_ops_kept: u64,
    /// Writeback errors injected and hit.
    pub writeback_errors: u64,
    /// Runs where the engine stopped on an injected error.
    pub engine_stops_after_error: u64,
    /// Wall time.
    pub duration_s: f64,
    /// Crash-and-recover cycles per minute.
    pub cycles_per_min: f64,
    /// The first failing point.
    pub failure: Option<FailureJson>,
}

/// A failing crash point.
#[derive(Debug, Serialize)]
pub struct FailureJson {
    /// Point index.
    pub point: u64,
    /// Operation the power failed at.
    pub crash_op: u64,
    /// Sector size of the point.
    pub sector_bytes: u64,
    /// The engine configuration of the point (e.g. the log's sync method).
    pub variant: String,
    /// What was wrong.
    pub message: String,
    /// The command that reruns exactly this point.
    pub reproducer: String,
}

fn profile_of(arg: ProfileArg) -> Profile {
    match arg {
        ProfileArg::Strict => Profile::Strict,
        ProfileArg::Ext4 => Profile::Ext4,
    }
}

fn value_name<T: clap::ValueEnum>(v: T) -> String {
    v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
}

/// The command that reruns exactly the failing point.
fn reproducer(args: &Args, point: u64) -> String {
    let mut line = format!(
        "syncbench crashtest --mode {} --profile {} --seed {} --point {point}",
        value_name(args.mode),
        value_name(args.profile),
        args.seed
    );
    if args.accounts != DEFAULT_ACCOUNTS {
        line.push_str(&format!(" --accounts {}", args.accounts));
    }
    if args.fsync_errors {
        line.push_str(" --fsync-errors");
    }
    if let Some(bug) = args.engine_bug {
        line.push_str(&format!(" --engine-bug {}", value_name(bug)));
    }
    line
}

fn validate(args: &Args) -> anyhow::Result<()> {
    if args.accounts == 0 {
        return Err(usage("--accounts must be at least 1 (e.g. --accounts 2000)"));
    }
    if args.points == 0 && args.point.is_none() {
        return Err(usage("--points must be at least 1 (e.g. --points 2000)"));
    }
    if args.engine_bug == Some(EngineBug::DwSkipFsync) && args.mode != Mode::Dw {
        return Err(usage("--engine-bug dw-skip-fsync needs --mode dw"));
    }
    Ok(())
}

fn to_json(args: &Args, summary: &Summary, failure: Option<&Failure>) -> CrashtestJson {
    CrashtestJson {
        mode: value_name(args.mode),
        profile: value_name(args.profile),
        seed: args.seed,
        points_requested: args.points,
        point: args.point,
        fsync_errors: args.fsync_errors,
        accounts_per_branch: args.accounts,
        engine_bug: args.engine_bug.map(value_name),
        passed: failure.is_none(),
        points: summary.points,
        points_after_ack: summary.points_after_ack,
        points_near_mark: summary.points_near_mark,
        points_uniform: summary.points_uniform,
        points_sector_512: summary.points_sector_512,
        points_crashed_mid_run: summary.points_crashed_mid_run,
        points_recovery_interrupted: summary.points_recovery_interrupted,
        ops_per_run: summary.ops_per_run,
        acks_per_run: summary.acks_per_run,
        sectors_new: summary.sectors_new,
        sectors_old: summary.sectors_old,
        ns_ops_pending: summary.ns_ops_pending,
        ns_ops_kept: summary.ns_ops_kept,
        writeback_errors: summary.writeback_errors,
        engine_stops_after_error: summary.engine_errors,
        duration_s: summary.duration.as_secs_f64(),
        cycles_per_min: summary.cycles_per_min(),
        failure: failure.map(|f| FailureJson {
            point: f.point,
            crash_op: f.crash_op,
            sector_bytes: f.sector_bytes,
            variant: f.variant.clone(),
            message: f.message.clone(),
            reproducer: reproducer(args, f.point),
        }),
    }
}

fn summary_line(json: &CrashtestJson) -> String {
    format!(
        "crashtest {} ({} profile{}): {} crash points passed ({} just after an acknowledgement, {} near a \
         checkpoint, {} mid-run, {} with a second crash inside recovery), {} acknowledged commits per run, \
         {:.1} s, {:.0} crash-and-recover cycles/min",
        json.mode,
        json.profile,
        if json.fsync_errors { ", fsync errors" } else { "" },
        json.points,
        json.points_after_ack,
        json.points_near_mark,
        json.points_crashed_mid_run,
        json.points_recovery_interrupted,
        json.acks_per_run,
        json.duration_s,
        json.cycles_per_min
    )
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    validate(&args)?;
    let started_at = now_rfc3339();
    let opts = ExploreOptions {
        seed: args.seed,
        points: args.points,
        only_point: args.point,
        profile: profile_of(args.profile),
        fsync_errors: args.fsync_errors,
        accounts_per_branch: args.accounts,
    };
    let total = if args.point.is_some() { 1 } else { args.points };
    let bar = progress_bar(total);
    let (summary, failure) = explore_mode(args.mode, args.engine_bug, &opts, |_| bar.inc(1))?;
    bar.finish_and_clear();
    let json = to_json(&args, &summary, failure.as_ref());
    if let Some(dest) = &args.json {
        let environment = Environment { fs_type: "simfs".to_string(), ..Environment::default() };
        let envelope = Envelope::new(started_at, environment, Vec::new(), Payload { crashtest: json });
        crate::output::write_to(dest, &(serde_json::to_string_pretty(&envelope)? + "\n"))?;
        return finish(&args, &envelope.payload.crashtest);
    }
    finish(&args, &json)
}

/// Explore the scenario of a mode, with an optional deliberate engine bug.
fn explore_mode(
    mode: Mode,
    bug: Option<EngineBug>,
    opts: &ExploreOptions,
    progress: impl FnMut(u64),
) -> anyhow::Result<(Summary, Option<Failure>)> {
    use syncbench_engine::pages::{FaultSwitches as PageFaults, Mode as PageMode};
    use syncbench_engine::wal::FaultSwitches as LogFaults;
    // The log's bugs break the log of every mode: the page store commits through the same log.
    let log_faults = LogFaults {
        skip_dir_fsync: bug == Some(EngineBug::SkipDirFsync),
        skip_log_sync: bug == Some(EngineBug::SkipLogSync),
        retry_fsync_after_error: bug == Some(EngineBug::RetryFsync),
    };
    match mode {
        Mode::Wal => Ok(crashtest::explore_all(&WalScenario::new(opts.seed, log_faults), opts, progress)),
        Mode::Fpw | Mode::Dw | Mode::None => {
            let page_mode = match mode {
                Mode::Fpw => PageMode::Fpw,
                Mode::Dw => PageMode::Dw,
                _ => PageMode::None,
            };
            let faults = PageFaults { dw_skip_fsync: bug == Some(EngineBug::DwSkipFsync), ..PageFaults::default() };
            let scenario =
                PagesScenario::new(page_mode, opts.seed, opts.accounts_per_branch, faults).with_log_faults(log_faults);
            Ok(crashtest::explore_all(&scenario, opts, progress))
        }
    }
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
fn progress_bar(points: u64) -> indicatif::ProgressBar {
    if !crate::output::stderr_is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(points);
    if let Ok(style) = indicatif::ProgressStyle::with_template("crash points {pos}/{len} {wide_bar} {eta}") {
        bar.set_style(style);
    }
    bar
}

fn finish(args: &Args, json: &CrashtestJson) -> Outcome {
    match &json.failure {
        None => {
            if args.json.as_deref() != Some(std::path::Path::new("-")) {
                println!("{}", summary_line(json));
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(f) => Err(CheckFailed(format!(
            "crash point {} ({}, power lost at storage op {}, {}-byte sectors): {}; reproduce: {}",
            f.point, f.variant, f.crash_op, f.sector_bytes, f.message, f.reproducer
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Args {
        Cli::try_parse_from(std::iter::once("crashtest").chain(argv.iter().copied())).unwrap().args
    }

    #[test]
    fn the_reproducer_names_every_choice_that_changes_the_point() {
        let args = parse(&["--mode", "wal", "--profile", "ext4", "--seed", "9", "--fsync-errors"]);
        assert_eq!(
            reproducer(&args, 17),
            "syncbench crashtest --mode wal --profile ext4 --seed 9 --point 17 --fsync-errors"
        );
        let args = parse(&["--engine-bug", "skip-log-sync"]);
        assert!(reproducer(&args, 3).ends_with("--point 3 --engine-bug skip-log-sync"));
    }

    #[test]
    fn zero_points_and_misplaced_bugs_are_usage_errors() {
        assert!(validate(&parse(&["--points", "0"])).is_err());
        assert!(validate(&parse(&["--points", "0", "--point", "4"])).is_ok());
        assert!(validate(&parse(&["--mode", "wal", "--engine-bug", "dw-skip-fsync"])).is_err());
    }
}
