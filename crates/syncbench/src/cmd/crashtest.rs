//! `syncbench crashtest`: crash the reference engine thousands of times on the simulated file system and
//! check that no acknowledged commit is ever lost. Args → options → `crashtest::explore_all` → one
//! summary (the library's `Summary`, serialised as is) → a line or JSON. A failure prints a one-line
//! reproducer and exits 1.

use crate::core::environment::Environment;
use crate::core::exit::{CheckFailed, Outcome, usage};
use crate::core::schema::{Envelope, now_rfc3339};
use crate::proof::crashtest::bugs::EngineBug;
use crate::proof::crashtest::export::summary_line;
use crate::proof::crashtest::json::{CrashtestJson, FailureJson, Payload};
use crate::proof::crashtest::pages::PagesScenario;
use crate::proof::crashtest::wal::WalScenario;
use crate::proof::crashtest::{self, ExploreOptions, Failure, Summary};
use std::process::ExitCode;
use syncbench_engine::pages::{DwDesign, Mode as PageMode};
use syncbench_simfs::Profile;

/// Accounts per branch unless `--accounts` says otherwise: small enough for thousands of points a minute.
const DEFAULT_ACCOUNTS: u32 = 2000;
/// Generations per point unless `--generations` says otherwise.
const DEFAULT_GENERATIONS: u32 = 3;

/// Which engine and torn-page protection to crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The write-ahead log alone: several clients append and commit records.
    Wal,
    /// TPC-B on the page store with full-page writes.
    Fpw,
    /// TPC-B on the page store with a double-write buffer.
    Dw,
    /// TPC-B on the page store with untorn (RWF_ATOMIC) page writes, up to the simulated device's unit.
    Atomic,
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

/// Flags of `syncbench crashtest`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to crash: `wal` (the log), or the TPC-B page workload with `fpw`, `dw`, `atomic` or `none`.
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
    /// Generations per point: crash (power loss or process crash), recover, continue, crash again.
    #[arg(long, default_value_t = DEFAULT_GENERATIONS, value_name = "N")]
    pub generations: u32,
    /// Accounts per branch of the TPC-B bank in the page-store modes (TPC-B proper: 100000).
    #[arg(long, default_value_t = DEFAULT_ACCOUNTS, value_name = "N")]
    pub accounts: u32,
    /// --json, --csv (one row: settings, outcome, summary, coverage), --markdown, --openmetrics (points and
    /// crashes run, failed points, a planted bug caught); `-` for stdout (the line then goes to stderr).
    #[command(flatten)]
    pub export: crate::core::export::ExportArgs,
    /// Double-write design with --mode dw.
    #[arg(long, default_value = "2012", value_parser = super::names_parser(&DwDesign::ALL, DwDesign::name))]
    pub dw_design: DwDesign,
    /// Break the engine on purpose (to prove the test catches it).
    #[arg(long, value_enum, hide = true)]
    pub engine_bug: Option<EngineBug>,
}

fn value_name<T: clap::ValueEnum>(v: T) -> String {
    v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
}

/// The command that reruns exactly the failing point.
fn reproducer(args: &Args, point: u64) -> String {
    let (mode, profile, seed) = (value_name(args.mode), value_name(args.profile), args.seed);
    let mut line = format!("syncbench crashtest --mode {mode} --profile {profile} --seed {seed} --point {point}");
    if args.generations != DEFAULT_GENERATIONS {
        line.push_str(&format!(" --generations {}", args.generations));
    }
    if args.accounts != DEFAULT_ACCOUNTS {
        line.push_str(&format!(" --accounts {}", args.accounts));
    }
    if args.fsync_errors {
        line.push_str(" --fsync-errors");
    }
    if args.dw_design != DwDesign::default() {
        line.push_str(&format!(" --dw-design {}", args.dw_design.name()));
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
    if !(1..=100).contains(&args.generations) {
        return Err(usage("--generations must be in 1..=100 (e.g. --generations 3)"));
    }
    if let Some(bug) = args.engine_bug
        && let Some((modes, name)) = bug.needs()
        && !modes.contains(&value_name(args.mode).as_str())
    {
        return Err(usage(format!("--engine-bug {} needs {name}", value_name(bug))));
    }
    args.export.validate()
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    validate(&args)?;
    let started_at = now_rfc3339();
    let opts = ExploreOptions {
        only_point: args.point,
        fsync_errors: args.fsync_errors,
        accounts_per_branch: args.accounts,
        generations: args.generations,
        ..ExploreOptions::new(args.seed, args.points, profile_of(args.profile))
    };
    let bar = crate::core::output::progress_bar(
        if args.point.is_some() { 1 } else { args.points },
        "crash points {pos}/{len} {wide_bar} {eta}",
    );
    let (summary, failure) = explore_mode(&args, &opts, |_| bar.inc(1));
    bar.finish_and_clear();
    let failure = failure.map(|f| FailureJson {
        kind: f.kind,
        reproducer: reproducer(&args, f.point),
        point: f.point,
        crash_op: f.crash_op,
        sector_bytes: f.sector_bytes,
        variant: f.variant,
        message: f.message,
    });
    let json = CrashtestJson {
        mode: value_name(args.mode),
        profile: value_name(args.profile),
        seed: args.seed,
        points_requested: args.points,
        point: args.point,
        fsync_errors: args.fsync_errors,
        generations: args.generations,
        accounts_per_branch: args.accounts,
        engine_bug: args.engine_bug.map(value_name),
        passed: failure.is_none(),
        summary: &summary,
        failure,
    };
    let environment = Environment { fs_type: "simfs".to_string(), ..Environment::default() };
    let envelope = Envelope::new(started_at, environment, Vec::new(), Payload { crashtest: json });
    if envelope.payload.crashtest.passed {
        crate::core::export::print_human(&args.export, &(summary_line(&envelope.payload.crashtest) + "\n"))?;
    }
    crate::core::export::write_all(&envelope, &args.export)?;
    finish(&args, &envelope.payload.crashtest)
}

fn profile_of(arg: ProfileArg) -> Profile {
    match arg {
        ProfileArg::Strict => Profile::Strict,
        ProfileArg::Ext4 => Profile::Ext4,
    }
}

/// Explore the scenario of a mode, with an optional deliberate engine bug.
fn explore_mode(args: &Args, opts: &ExploreOptions, progress: impl FnMut(u64)) -> (Summary, Option<Failure>) {
    let (log_faults, faults) = EngineBug::switches(args.engine_bug);
    let page_mode = match args.mode {
        Mode::Wal => return crashtest::explore_all(&WalScenario::new(log_faults), opts, progress),
        Mode::Fpw => PageMode::Fpw,
        Mode::Dw => PageMode::Dw,
        Mode::Atomic => PageMode::Atomic,
        Mode::None => PageMode::None,
    };
    let scenario = PagesScenario::new(page_mode, opts.accounts_per_branch, faults)
        .with_log_faults(log_faults)
        .with_dw_design(args.dw_design);
    crashtest::explore_all(&scenario, opts, progress)
}

fn finish(args: &Args, json: &CrashtestJson<'_>) -> Outcome {
    match &json.failure {
        None => Ok(ExitCode::SUCCESS),
        Some(f) if f.kind == crate::proof::crashtest::FailureKind::Coverage => {
            Err(CheckFailed(format!("{}; rerun: {}", f.message, {
                let line = reproducer(args, 0);
                line.replace(" --point 0", &format!(" --points {}", json.summary.points))
            }))
            .into())
        }
        Some(f) => Err(CheckFailed(format!(
            "crash point {} ({}, power lost at storage op {}, {}-byte sectors): {}; reproduce: {}",
            f.point, f.variant, f.crash_op, f.sector_bytes, f.message, f.reproducer
        ))
        .into()),
    }
}
