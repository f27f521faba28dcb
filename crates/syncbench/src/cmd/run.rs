//! `syncbench run [DIR]`: measure every durable-write method on DIR.
//!
//! Options are validated before anything is created; then the overwrite file is prepared, every case of
//! the plan runs (`runner::run_case`), the file is removed, and the table, verdicts and JSON are written.

mod options;

use crate::core::exit::{CheckFailed, Outcome, usage};
use crate::core::export::ExportArgs;
use crate::core::schema::{CaseResult, Envelope, RunPayload};
use crate::core::suite::{self, PlanOptions, Section};
use crate::core::workdir;
use crate::measure::runner::{MockTiming, RunBudget, Target};
use crate::observe::probe;
use options::{parse_secs, parse_seed, parse_write_size};
use std::path::PathBuf;

/// Flags of `syncbench run`.
#[derive(Debug, Default, clap::Args)]
pub struct Args {
    /// Directory to measure. Only `.syncbench-*` files are created there, and removed afterwards.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Time budget per case, in seconds [default: 0.4, or 0.1 with --quick]. A case stops earlier once
    /// the 95% confidence interval of its mean latency is within ±2%.
    #[arg(long, value_name = "SECS")]
    pub secs: Option<String>,
    /// Fewer write sizes in the sweep and 0.1 s per case: the whole suite in under 15 s.
    #[arg(long)]
    pub quick: bool,
    /// Write size of sections a, b, d, e and g, 512 B to 1 MiB (e.g. 4k, 8KiB, 16384) [default: 8k].
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Only these methods, comma-separated (e.g. fdatasync,open_datasync+direct) [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = super::method_parser(&crate::core::method::SyncMethod::ALL, &[]))]
    pub methods: Vec<crate::core::method::SyncMethod>,
    /// Only these sections, comma-separated names or their letters a-g (e.g. a,f or one_write,size_sweep)
    /// [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = super::section_parser())]
    pub sections: Vec<Section>,
    /// `sequential`: advance through the file and wrap, like a WAL; `rewrite`: rewrite offset 0 like
    /// pg_test_fsync.
    #[arg(long, value_name = "PATTERN", default_value = "sequential",
          value_parser = super::names_parser(&[suite::Pattern::Sequential, suite::Pattern::Rewrite], suite::Pattern::name))]
    pub pattern: suite::Pattern,
    /// Rounds per case, 1-50 [default: 5, or 3 with --quick]. Each case's time is split over the rounds and
    /// run in a new order every round. Without it, a run under 20 s (8 s with --quick) adds rounds up to that.
    #[arg(long, value_name = "N")]
    pub rounds: Option<String>,
    /// Dirty a second file in DIR at RATE (e.g. 50MiB/s, max) while commits are timed, letting the kernel
    /// write it back: every case runs idle, then under it; latency and device counts side by side. If the
    /// writer fails, the idle results are still reported whole, that part is marked failed, exit code 1.
    #[arg(long, value_name = "RATE")]
    pub background_writes: Option<String>,
    /// Print a log2 latency histogram under each case.
    #[arg(long)]
    pub histogram: bool,
    /// Keep each case's latency log in the JSON (`latency_log`): its commits over time, one entry per
    /// window of up to 100 ms with the median and slowest commit (what `report` draws as a strip).
    #[arg(long)]
    pub log: bool,
    /// Exports: --json, --csv, --markdown (FILE or `-` for stdout).
    #[command(flatten)]
    pub exports: ExportArgs,
    /// Use a deterministic latency model instead of the disk (for golden tests).
    #[arg(long, value_name = "SEED", hide = true)]
    pub mock_timing: Option<String>,
}

/// Validated options: every value checked, the directory usable.
#[derive(Clone, Debug)]
pub struct Options {
    /// Absolute target directory.
    pub dir: PathBuf,
    /// Per-case budget (all rounds together).
    pub budget: RunBudget,
    /// Rounds per case, and the time they spread over.
    pub rounds: crate::measure::rounds::Schedule,
    /// Which cases.
    pub plan: PlanOptions,
    /// Histograms in the table.
    pub histogram: bool,
    /// `--log`: the cases' latency logs in the JSON.
    pub log: bool,
    /// Export destinations.
    pub exports: ExportArgs,
    /// Mock timing instead of the disk.
    pub mock: Option<MockTiming>,
    /// `--background-writes`.
    pub background: Option<crate::measure::background::Rate>,
}

impl Options {
    /// Check every value, then the directory. Errors are one line for the user (exit code 2).
    pub fn from_args(args: &Args) -> anyhow::Result<Options> {
        let secs = match &args.secs {
            Some(text) => parse_secs(text)?,
            None if args.quick => RunBudget::QUICK_CASE_SECS,
            None => RunBudget::DEFAULT_CASE_SECS,
        };
        let size_bytes = args.size.as_deref().map_or(Ok(8 * suite::KIB), parse_write_size)?;
        let pattern = args.pattern;
        let plan = PlanOptions {
            sections: if args.sections.is_empty() { Section::ALL.to_vec() } else { args.sections.clone() },
            methods: (!args.methods.is_empty()).then(|| args.methods.clone()),
            size_bytes,
            quick: args.quick,
            pattern,
        };
        if suite::plan(&plan).is_empty() {
            return Err(usage("no case left: none of the --methods is measured in the chosen --sections"));
        }
        let rounds = crate::measure::rounds::Schedule::from_flag(args.rounds.as_deref(), args.quick)?;
        let mock = args.mock_timing.as_deref().map(parse_seed).transpose()?;
        let background = crate::measure::background::Rate::from_option(args.background_writes.as_deref())?;
        if background.is_some() && mock.is_some() {
            return Err(usage("--background-writes needs a real directory, not --mock-timing"));
        }
        args.exports.validate()?;
        let dir = workdir::check(
            &args.dir,
            // The background writer's file comes on top of the test files.
            mock.is_none().then_some((
                workdir::RUN_FILES_BYTES + background.map_or(0, |_| crate::measure::background::FILE_BYTES),
                "syncbench run",
                "its test files",
            )),
        )?;
        Ok(Options {
            dir,
            budget: RunBudget::per_case(secs),
            rounds,
            plan,
            histogram: args.histogram,
            log: args.log,
            exports: args.exports.clone(),
            mock,
            background,
        })
    }
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    let opts = Options::from_args(&args)?;
    let started_at = crate::core::schema::now_rfc3339();
    let environment = probe::collect(&opts.dir);
    let cases = suite::plan(&opts.plan);
    let partial = crate::core::partial::Partial::new(cases.len());
    let run = |target: &Target<'_>, monitor| {
        crate::measure::runner::run_plan_with_progress(&cases, opts.rounds, &opts.budget, target, monitor, &partial)
    };
    // Steal and disturbances are measured on real runs only: the mock's output must not depend on the machine.
    let (results, steal_pct, leftover, background) = match opts.mock {
        Some(mock) => (run(&Target::Mock(mock), None), None, None, None),
        None => {
            let lock = crate::observe::disturbance::DirLock::take(&opts.dir)?;
            let prepared = crate::measure::runner::prepare_run_file(&opts.dir, &environment.fs_type)?;
            let (o, env, at, note) = (opts.clone(), environment.clone(), started_at.clone(), lock.leftover_note());
            partial.on_interrupt(move |results| {
                if let Err(e) = report(&o, env.clone(), at.clone(), results, (None, note.clone(), None), true) {
                    eprintln!("syncbench: {e:#}");
                }
            });
            let (monitor, steal) =
                (crate::observe::disturbance::Monitor::new(&environment), probe::steal::StealMeter::start());
            let results = run(&Target::Disk(&prepared), Some(&monitor));
            let (budget, rounds) = (&opts.budget, opts.rounds);
            let background = opts
                .background
                .map(|rate| crate::measure::background::run_cases(&cases, rounds, budget, &prepared, &opts.dir, rate));
            (results, steal.pct(), lock.leftover_note(), background)
            // `prepared` is dropped here: the overwrite file is removed before anything is printed.
        }
    };
    partial.finish();
    let envelope = report(&opts, environment, started_at, results, (steal_pct, leftover, background), false)?;
    let failed: Vec<&CaseResult> =
        envelope.payload.results.iter().filter(|r| r.supported && r.error.is_some()).collect();
    // The line about a failed part under writes first, then the failed cases' (both exit 1).
    let code =
        crate::measure::background::exit_code(envelope.payload.background_writes.as_ref().and_then(|b| b.error()));
    match failed.first() {
        None => Ok(code),
        Some(first) => Err(CheckFailed(format!(
            "{} case(s) failed while running, first: {} {}: {}",
            failed.len(),
            first.section,
            first.label,
            first.error.as_deref().unwrap_or_default()
        ))
        .into()),
    }
}

/// Verdicts, the text (answer first) and the exports of `results`; `partial` when interrupted.
fn report(
    opts: &Options,
    environment: crate::core::environment::Environment,
    started_at: String,
    results: Vec<CaseResult>,
    (steal_pct, leftover, background_writes): (Option<f64>, Option<String>, Option<crate::core::schema::BackgroundRun>),
    partial: bool,
) -> anyhow::Result<Envelope<RunPayload>> {
    let mut verdicts = probe::verdicts(&environment, &results);
    verdicts.extend(steal_pct.and_then(|pct| probe::steal::verdict(pct, "the measurement")));
    let next = crate::present::summary::next_command(opts.exports.json.as_deref(), &opts.dir);
    let ctx = crate::present::summary::RunContext { verdicts: &verdicts, next, partial, leftover };
    let run_regimes = crate::measure::regimes::of_results(&results);
    let mut answer = crate::present::summary::run_summary(&results, &ctx);
    // The regime lines go before the answer's closing `next:` line.
    let at = answer.rfind("  next: ").unwrap_or(answer.len());
    answer.insert_str(at, &crate::measure::regimes::answer_line(&results, run_regimes.as_ref()));
    let text_opts = text_options(opts, &results, answer);
    let mut text = crate::present::run_text::run(&text_opts, &environment, &verdicts, &results);
    text += &crate::measure::regimes::notes(&results);
    text += &crate::present::tails::notes(&results);
    text +=
        &background_writes.as_ref().map_or(String::new(), |b| crate::measure::background::side_by_side(&results, b));
    crate::core::export::print_human(&opts.exports, &text)?;
    let (dir, pattern) = (opts.dir.display().to_string(), opts.plan.pattern);
    let mut results = results;
    if !opts.log {
        results.iter_mut().for_each(|r| r.latency_log.clear());
    }
    let payload = RunPayload { dir, pattern, results, partial, background_writes, regimes: run_regimes };
    let envelope = Envelope::new(started_at, environment, verdicts, payload);
    crate::core::export::write_all(&envelope, &opts.exports)?;
    Ok(envelope)
}

/// What the human-readable text needs of the options (the rounds that ran), and the answer that opens it.
fn text_options(opts: &Options, results: &[CaseResult], answer: String) -> crate::present::run_text::RunTextOptions {
    let rounds = crate::measure::rounds::rounds_run(results, opts.rounds.rounds);
    crate::present::run_text::RunTextOptions {
        mock: opts.mock.is_some(),
        answer,
        rounds,
        case_secs: opts.budget.case_secs * f64::from(rounds) / f64::from(opts.rounds.rounds.max(1)),
        pattern: opts.plan.pattern.name(),
        size_bytes: opts.plan.size_bytes,
        histogram: opts.histogram,
    }
}

#[cfg(test)]
mod tests;
