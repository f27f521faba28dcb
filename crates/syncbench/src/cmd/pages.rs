//! `syncbench pages`: a TPC-B-like workload on the reference page store, once per torn-page protection
//! mode (and buffer-pool size); the measurement is in [`crate::measure::pages`]. This file turns the flags into a
//! validated [`Plan`], checks the directories have room, runs it and hands the table to the exporters.
//! `--ack-log` and `--recover` exist for the kill -9 test ([`crate::measure::pages::recover`]).

use crate::core::exit::{Outcome, usage};
use crate::core::schema::Envelope;
use crate::core::units::{format_size, parse_size};
use crate::measure::pages::{PagesPayload, Plan, recover, render};
use std::path::PathBuf;
use std::process::ExitCode;
use syncbench_engine::pages::{DwDesign, Mode, dw_pipelined};

/// Flags of `syncbench pages`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to run in (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Torn-page protections to compare, comma-separated: none (unsafe baseline), fpw, dw, atomic.
    #[arg(long, value_delimiter = ',', default_value = "none,fpw,dw", value_parser = super::names_parser(&Mode::ALL, Mode::name))]
    pub mode: Vec<Mode>,
    /// Branches; accounts = 100,000 × scale (about 10 MiB of account pages per unit).
    #[arg(long, default_value_t = 1)]
    pub scale: u32,
    /// Concurrent clients.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Seconds per mode, split over 3 rounds with the modes rotated between rounds (default: 3 × 1.2 ×
    /// --checkpoint-secs, so every round completes a checkpoint: 18 s, with --quick 3.6 s).
    #[arg(long)]
    pub secs: Option<f64>,
    /// Short runs.
    #[arg(long)]
    pub quick: bool,
    /// Buffer-pool sizes, one row per size and mode, e.g. 16MiB,256MiB (k, kb and KiB all mean 1024 bytes).
    #[arg(long, default_value = "128MiB")]
    pub buffer_pool: String,
    /// Seconds between checkpoints (default 5; with --quick 1).
    #[arg(long)]
    pub checkpoint_secs: Option<f64>,
    /// Page size in bytes: 4096, 8192 or 16384.
    #[arg(long, default_value_t = 8192)]
    pub page_size: usize,
    /// Pages per double-write batch.
    #[arg(long, default_value_t = 64)]
    pub dw_batch: usize,
    /// Double-write designs, one dw row each: 2012 (the prototype: pages double-written and synced when
    /// evicted or checkpointed) and/or pipelined (spooled into a ring ahead of evictions and of the
    /// checkpoint's home writes, synced by their own thread).
    #[arg(long, value_delimiter = ',', default_value = "2012",
          value_parser = super::names_parser(&DwDesign::ALL, DwDesign::name))]
    pub dw_design: Vec<DwDesign>,
    /// Size of the pipelined design's ring in the double-write area (rounded down to whole batches): a
    /// ring that holds a checkpoint cycle's copies is recycled without syncing the data files.
    #[arg(long, default_value = "256MiB")]
    pub dw_ring: String,
    /// Where files go.
    #[command(flatten)]
    pub paths: Box<Paths>,
    /// Accounts per branch (TPC-B: 100,000); smaller for tests.
    #[arg(long, default_value_t = 100_000, hide = true)]
    pub accounts_per_branch: u32,
}

/// The path flags of `syncbench pages` (boxed: they are most of the flags' size).
#[derive(Debug, clap::Args)]
pub struct Paths {
    /// Put the log in a `.syncbench-*` directory here (e.g. another device).
    #[arg(long)]
    pub wal_dir: Option<PathBuf>,
    /// Put the double-write area in a `.syncbench-*` directory here (e.g. another device).
    #[arg(long)]
    pub dw_dir: Option<PathBuf>,
    /// --json, --csv, --markdown.
    #[command(flatten)]
    pub export: crate::core::export::ExportArgs,
    /// Append each acknowledged transaction id to this file as it is acknowledged (kill -9 tests).
    #[arg(long, hide = true)]
    pub ack_log: Option<PathBuf>,
    /// Recover the `.syncbench-pages-*` store a killed run left behind, check it against --ack-log,
    /// and remove it.
    #[arg(long, hide = true)]
    pub recover: Option<PathBuf>,
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    if let Some(store_dir) = &args.paths.recover {
        let found = recover::recover_and_check(store_dir, args.paths.ack_log.as_deref())?;
        println!(
            "recovered {} mode store: {} transactions, invariant holds, all {} acknowledged present",
            found.mode.name(),
            found.txns,
            found.acknowledged
        );
        return Ok(ExitCode::SUCCESS);
    }
    let plan = validate(&args)?;
    check_space(&plan)?;
    // Two measurements in one directory measure each other: refused (and a killed run's leftovers reported).
    let _lock = crate::observe::disturbance::DirLock::take(&plan.dir)?;
    let started_at = crate::core::schema::now_rfc3339();
    let environment = crate::observe::probe::collect(&plan.dir);
    let progress = |row: &str, pool: usize, round: u32| {
        if crate::core::output::stderr_is_terminal() {
            eprintln!("syncbench pages: round {round}: {row} with a {} buffer pool …", format_size(pool as u64));
        }
    };
    let monitor = crate::observe::disturbance::Monitor::new(&environment);
    let partial = crate::core::partial::Partial::new(plan.pools_bytes.len() * plan.variants().len());
    {
        let (p, exports, env, at) = (plan.clone(), args.paths.export.clone(), environment.clone(), started_at.clone());
        partial.on_interrupt(move |rows| {
            let table = crate::measure::pages::table_of(&p, rows);
            if let Err(e) = report(&exports, (env.clone(), at.clone()), table, true) {
                eprintln!("syncbench: {e:#}");
            }
        });
    }
    let table = crate::measure::pages::run_all(&plan, Some(&monitor), progress, &partial)?;
    partial.finish();
    report(&args.paths.export, (environment, started_at), table, false)?;
    Ok(ExitCode::SUCCESS)
}

/// Verdicts, exports and the table (answer first); `partial` when interrupted (the rows with finished
/// rounds).
fn report(
    exports: &crate::core::export::ExportArgs,
    (environment, started_at): (crate::core::environment::Environment, String),
    table: crate::measure::pages::PagesTable,
    partial: bool,
) -> anyhow::Result<()> {
    let mut verdicts = crate::observe::probe::verdicts(&environment, &[]);
    verdicts.extend(crate::measure::pages::verdicts(&table.rows));
    let envelope = Envelope::new(started_at, environment, verdicts, PagesPayload { pages: table, partial });
    crate::core::export::write_all(&envelope, exports)?;
    let mut answer = crate::present::summary::pages_answer(&envelope.payload.pages, &envelope.verdicts);
    if partial {
        answer = crate::core::partial::mark_answer(&answer);
    }
    crate::core::export::print_human(exports, &(answer + "\n" + &render::to_table(&envelope.payload.pages)))
}

fn validate(args: &Args) -> anyhow::Result<Plan> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if !dir.is_dir() {
        return Err(usage(format!("{} is not a directory; give an existing directory to run in", dir.display())));
    }
    for (flag, extra) in [("--wal-dir", &args.paths.wal_dir), ("--dw-dir", &args.paths.dw_dir)] {
        if let Some(d) = extra.as_ref().filter(|d| !d.is_dir()) {
            return Err(usage(format!("{flag} {} is not a directory; create it or pick another", d.display())));
        }
    }
    args.paths.export.validate()?;
    let modes = super::first_of_each(&args.mode);
    let dw_designs = super::first_of_each(&args.dw_design);
    let pools_bytes = args.buffer_pool.split(',').map(pool_size).collect::<anyhow::Result<Vec<_>>>()?;
    let checkpoint_secs = args.checkpoint_secs.unwrap_or(crate::measure::pages::default_checkpoint_secs(args.quick));
    let secs = args.secs.unwrap_or(crate::measure::pages::default_secs(checkpoint_secs));
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(usage(format!("--secs {secs} is not in (0, 86400]")));
    }
    if !(checkpoint_secs > 0.0 && checkpoint_secs <= 3600.0) {
        return Err(usage(format!("--checkpoint-secs {checkpoint_secs} is not in (0, 3600]")));
    }
    if args.scale == 0 || args.scale > 1000 || args.accounts_per_branch == 0 {
        return Err(usage(format!("--scale {} is not in 1..=1000", args.scale)));
    }
    if !(1..=1024).contains(&args.clients) {
        return Err(usage(format!("--clients {} is not in 1..=1024", args.clients)));
    }
    let plan = Plan {
        dir,
        wal_dir: args.paths.wal_dir.clone(),
        dw_dir: args.paths.dw_dir.clone(),
        ack_log: args.paths.ack_log.clone(),
        modes,
        dw_designs,
        pools_bytes,
        secs,
        rounds: crate::measure::pages::ROUNDS,
        checkpoint_secs,
        scale: args.scale,
        accounts_per_branch: args.accounts_per_branch,
        clients: args.clients,
        page_size: args.page_size,
        dw_batch: args.dw_batch,
        dw_ring_batches: ring_batches(&args.dw_ring, args.dw_batch, args.page_size)?,
    };
    for &pool in &plan.pools_bytes {
        plan.store_config(Mode::None, DwDesign::default(), pool)
            .validate()
            .map_err(|e| usage(format!("{e} (see --buffer-pool, --dw-batch)")))?;
    }
    Ok(plan)
}

/// `--dw-ring SIZE` in batches of `--dw-batch` pages.
fn ring_batches(size: &str, batch_pages: usize, page_size: usize) -> anyhow::Result<usize> {
    let bytes =
        parse_size(size).ok_or_else(|| usage(format!("--dw-ring {size:?} is not a size; write it like 256MiB")))?;
    let batch_bytes = (batch_pages * page_size).max(1) as u64;
    let batches = usize::try_from(bytes / batch_bytes).unwrap_or(usize::MAX);
    let (min, max) = (dw_pipelined::MIN_RING_BATCHES, dw_pipelined::MAX_RING_BATCHES);
    if !(min..=max).contains(&batches) {
        return Err(usage(format!(
            "--dw-ring {size} holds {batches} batches of {batch_pages} {page_size}-byte pages; it needs {min} to {max} \
             (see --dw-batch, --page-size)"
        )));
    }
    Ok(batches)
}

/// One `--buffer-pool` entry in bytes.
fn pool_size(text: &str) -> anyhow::Result<usize> {
    let bytes = parse_size(text)
        .ok_or_else(|| usage(format!("--buffer-pool {:?} is not a size; use e.g. 16MiB or 1GiB", text.trim())))?;
    usize::try_from(bytes).map_err(|_| usage(format!("--buffer-pool {:?} is too large", text.trim())))
}

/// Every directory must have room for one row before the first starts: a full disk found mid-load fails
/// late, with the engine's error instead of one line naming the directory.
fn check_space(plan: &Plan) -> anyhow::Result<()> {
    for (dir, need) in plan.space_needed() {
        crate::core::workdir::require_free(dir, need, "syncbench pages", "its tables and log (lower --scale?)")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
