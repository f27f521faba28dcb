//! `syncbench commit`: what group commit buys (the measurement is in [`crate::measure::commit`]). This file turns
//! the flags into a validated [`Plan`], runs it in a directory of our own, and hands the results to the
//! exporters.

use crate::core::cleanup::{Created, unique_name};
use crate::core::exit::{Outcome, usage};
use crate::core::export::ExportArgs;
use crate::core::output;
use crate::core::partial::Partial;
use crate::core::schema::Envelope;
use crate::measure::commit::{CommitPayload, CommitResults, DelayCount, Plan, PointSpec, parse_delay_count, render};
use crate::observe::probe;
use std::path::PathBuf;
use syncbench_engine::wal::{LOG_METHODS, SyncMethod};

/// Flags of `syncbench commit`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to measure in; a `.syncbench-commit-*` directory is created there and removed after.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Client threads, comma-separated: one point per count [default: 1,2,4,8,16,32,64, or 1,4,16 with
    /// --quick].
    #[arg(long, value_delimiter = ',')]
    pub clients: Option<Vec<u32>>,
    /// How the log makes a write durable; write is no sync (NOT durable, for comparison; `none` is its
    /// old name).
    #[arg(long, default_value = "fdatasync", value_parser = super::method_parser(&LOG_METHODS, &[("none", SyncMethod::Write)]))]
    pub method: SyncMethod,
    /// Payload bytes per commit record (the log adds a 40-byte header).
    #[arg(long, default_value_t = 256)]
    pub record_size: usize,
    /// Microseconds a group leader waits for more commits before it flushes (PostgreSQL's commit_delay),
    /// comma-separated: one point per value.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub commit_delay_us: Vec<u64>,
    /// The leader waits only if at least this many other commits are in progress (commit_siblings).
    #[arg(long, default_value_t = 5)]
    pub commit_siblings: u32,
    /// End the leader's commit delay early, as soon as this many commits (the leader included) wait for
    /// the next flush (MySQL's binlog_group_commit_sync_no_delay_count): a number, or `clients` for each
    /// point's client count. 0 = always wait the whole delay (PostgreSQL).
    #[arg(long, default_value = "0", value_parser = parse_delay_count)]
    pub commit_delay_count: DelayCount,
    /// After its own commit is durable, a group leader flushes up to this many more batches itself
    /// instead of waking another thread to lead (0 = PostgreSQL's behaviour).
    #[arg(long, default_value_t = 0)]
    pub leader_extra_batches: u32,
    /// After a flush, the next waits for the commits it released to come back, at most this percentage
    /// of the recent flush time (docs/commit.md, "Group commit"); 0 = start at once (before issue #36).
    #[arg(long, default_value_t = 25, hide = true)]
    pub rejoin_wait_pct: u32,
    /// Seconds to time each point (after a short warm-up), split into rounds of 0.3–0.5 s (3 to 6; under 0.9 s
    /// fewer, and no interval: two rounds would give ±1000%). Default 3, or 1 with --quick.
    #[arg(long)]
    pub secs: Option<f64>,
    /// Measure the naive log instead: every commit does its own write and sync, one at a time.
    #[arg(long)]
    pub no_group_commit: bool,
    /// Measure both: the naive log and group commit, side by side for each client count.
    #[arg(long, conflicts_with = "no_group_commit")]
    pub with_baseline: bool,
    /// Short run: 1 second per point in 3 rounds of 1/3 s (the fewest with an interval), and clients
    /// 1,4,16 unless --clients is given.
    #[arg(long)]
    pub quick: bool,
    /// Dirty a second file in DIR at RATE (e.g. 50MiB/s, max) while commits are timed, letting the kernel
    /// write it back: every point runs idle, then under it, side by side. If the writer fails, the idle
    /// points are still reported whole, that part is marked failed, exit code 1.
    #[arg(long, value_name = "RATE")]
    pub background_writes: Option<String>,
    /// Exports: --json, --csv (one row per point), --markdown (FILE or `-` for stdout).
    #[command(flatten)]
    pub export: ExportArgs,
}

const MAX_CLIENTS: u32 = 1024;
const MAX_RECORD_BYTES: usize = 1 << 20;
const MAX_DELAY_US: u64 = 100_000; // PostgreSQL's range for commit_delay

/// Run the command.
pub fn main(args: Args) -> Outcome {
    let plan = plan(&args)?;
    let rate = crate::measure::background::Rate::from_option(args.background_writes.as_deref())?;
    args.export.validate()?;
    let need = (crate::measure::commit::space_needed_bytes(rate), "syncbench commit", "its log");
    crate::core::workdir::check(&plan.dir, Some(need))?;
    // Two measurements in one directory measure each other: refused (and a killed run's leftovers reported).
    let _lock = crate::observe::disturbance::DirLock::take(&plan.dir)?;
    let started_at = crate::core::schema::now_rfc3339();
    let environment = probe::collect(&plan.dir);
    let (root, ()) = Created::create(plan.dir.join(unique_name("commit")), |p| {
        std::fs::create_dir(p).map_err(|e| usage(format!("cannot create a directory in {}: {e}", plan.dir.display())))
    })?;
    let progress = |i: usize, spec: &PointSpec| {
        if output::stderr_is_terminal() {
            eprintln!("syncbench commit: point {}/{}: {}", i + 1, plan.points.len(), spec.describe());
        }
    };
    let partial = Partial::new(plan.points.len());
    {
        let (p, exports, env, at) = (plan.clone(), args.export.clone(), environment.clone(), started_at.clone());
        partial.on_interrupt(move |points| {
            let commit = crate::measure::commit::results_of(&p, points);
            if let Err(e) = report(&p, &exports, (env.clone(), at.clone()), (commit, None), true) {
                eprintln!("syncbench: {e:#}");
            }
        });
    }
    let commit = crate::measure::commit::measure_watched(&plan, root.path(), &environment, progress, &partial)?;
    let background_writes = rate.map(|r| crate::measure::commit::background::commit_points(&plan, root.path(), r));
    drop(root);
    partial.finish();
    let envelope = report(&plan, &args.export, (environment, started_at), (commit, background_writes), false)?;
    Ok(crate::measure::background::exit_code(envelope.payload.background_writes.as_ref().and_then(|b| b.error())))
}

/// Verdicts, exports and the table (answer first) of what was measured; `partial` when interrupted (the
/// points are those with finished rounds, and nothing under background writes).
fn report(
    plan: &Plan,
    exports: &ExportArgs,
    (environment, started_at): (crate::core::environment::Environment, String),
    (commit, background_writes): (CommitResults, Option<crate::measure::commit::background::BackgroundCommit>),
    partial: bool,
) -> anyhow::Result<Envelope<CommitPayload>> {
    let verdicts = crate::measure::commit::verdicts(plan, &environment, &commit.points);
    let payload = CommitPayload { dir: plan.dir.display().to_string(), commit, background_writes, partial };
    let envelope = Envelope::new(started_at, environment, verdicts, payload);
    write_outputs(exports, &envelope)?;
    Ok(envelope)
}

/// Validate the flags into a plan (pure: no file system access).
fn plan(args: &Args) -> anyhow::Result<Plan> {
    let method = args.method;
    let default_clients = if args.quick { vec![1, 4, 16] } else { vec![1, 2, 4, 8, 16, 32, 64] };
    let clients = args.clients.clone().unwrap_or(default_clients);
    if let Some(&bad) = clients.iter().find(|&&c| c == 0 || c > MAX_CLIENTS) {
        return Err(usage(format!("--clients {bad} is out of range; use 1 to {MAX_CLIENTS}")));
    }
    if args.record_size == 0 || args.record_size > MAX_RECORD_BYTES {
        return Err(usage(format!("--record-size {} is out of range; use 1 to {MAX_RECORD_BYTES}", args.record_size)));
    }
    if let Some(&bad) = args.commit_delay_us.iter().find(|&&d| d > MAX_DELAY_US) {
        return Err(usage(format!("--commit-delay-us {bad} is too large; use 0 to {MAX_DELAY_US}")));
    }
    let secs = args.secs.unwrap_or(if args.quick { 1.0 } else { 3.0 });
    if !(secs.is_finite() && (0.05..=3600.0).contains(&secs)) {
        return Err(usage(format!("--secs {secs} is out of range; use 0.05 to 3600")));
    }
    let modes: &[bool] = match (args.no_group_commit, args.with_baseline) {
        (true, _) => &[false],
        (false, true) => &[false, true],
        (false, false) => &[true],
    };
    let mut points = Vec::new();
    for &commit_delay_us in &args.commit_delay_us {
        for &c in &clients {
            for &group_commit in modes {
                let commit_delay_count = args.commit_delay_count.of_point(c, commit_delay_us, group_commit);
                points.push(PointSpec { clients: c, commit_delay_us, group_commit, commit_delay_count });
            }
        }
    }
    Ok(Plan {
        dir: args.dir.clone(),
        method,
        record_size: args.record_size,
        commit_siblings: args.commit_siblings,
        leader_extra_batches: args.leader_extra_batches,
        rejoin_wait_pct: args.rejoin_wait_pct,
        secs,
        points,
    })
}

/// Exports as asked; the table goes to stdout, or to stderr when an export took stdout.
fn write_outputs(exports: &ExportArgs, envelope: &Envelope<CommitPayload>) -> anyhow::Result<()> {
    crate::core::export::write_all(envelope, exports)?;
    let results = &envelope.payload.commit;
    let header = probe::render::header(&envelope.environment, &envelope.verdicts);
    let mut answer = crate::present::summary::commit_answer(results, &envelope.verdicts);
    if envelope.payload.partial {
        // Too few rounds because of the interrupt, not of --secs.
        answer = crate::core::partial::mark_answer(&answer.replace(" (--secs under 0.9 s)", " (interrupted)"));
    }
    let under = envelope.payload.background_writes.as_ref();
    let bg =
        under.map_or(String::new(), |b| crate::measure::commit::background::commit_side_by_side(&results.points, b));
    crate::core::export::print_human(exports, &format!("{answer}\n{header}\n{}{bg}", render::to_table(results)))
}

#[cfg(test)]
mod tests;
