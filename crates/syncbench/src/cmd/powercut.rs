//! `syncbench powercut`: prove that acknowledged writes survive a power cut — on real hardware with a
//! witness (`write`, `listen`, `verify`), and on lab disks automatically (`lab`).

mod db;
mod exports;
use crate::core::exit::{Outcome, usage};
use crate::core::method::SyncMethod;
use crate::proof::powercut::{acks, listen, render, verify, writer};
pub use db::{DbArgs, RunArgs};
pub use exports::TableExports;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// Flags of `syncbench powercut`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  ssh db1 syncbench powercut write /data > acks     # cut db1's power while it runs, reboot, then:\n  ssh db1 syncbench powercut verify /data --acks - < acks\n  sudo syncbench powercut lab --profile hdd-7200,cheating-ssd --fs ext4,xfs --cuts 10\n  sudo syncbench powercut db --db sqlite --set journal_mode=WAL,synchronous=FULL --profile hdd-7200,nvme-plp --cuts 25\n  sudo syncbench powercut run --profile hdd-7200 --load ./writer --verify ./checker --cuts 25"
)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The power-cut checker's subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Write records (overwrites, appends, new files) in DIR and acknowledge each durable one to the witness,
    /// until the power goes or --secs pass.
    Write(WriteArgs),
    /// The witness on another machine: record the acks a writer sends over TCP into ACKS.
    Listen(ListenArgs),
    /// After the reboot: is every acknowledged record in DIR present and intact? Exit 1 if not.
    Verify(VerifyArgs),
    /// The whole loop on emulated disks: write, cut at a seeded random moment, reboot, verify (needs root).
    Lab(LabArgs),
    /// A real database on lab disks: load from several clients, cut, recover, verify every acknowledged
    /// transfer, the balances and the database's own check (needs root).
    Db(DbArgs),
    /// Any program on lab disks: --start (a server), --load (prints `ack KEY`), cut, restart, --verify gets the
    /// acknowledged keys (needs root).
    Run(RunArgs),
}

/// Flags of `powercut write`.
#[derive(Debug, clap::Args)]
pub struct WriteArgs {
    /// A directory on the disk under test (the run's files go in a new subdirectory).
    pub dir: PathBuf,
    /// How each record is made durable: a method of `syncbench run` (write, direct and sync_file_range are
    /// allowed and labelled not durable).
    #[arg(long, default_value = "fdatasync", value_parser = super::method_parser(&SyncMethod::ALL, &[]))]
    pub method: SyncMethod,
    /// Where acks go: `-` (standard output) or `tcp:HOST:PORT` (a `powercut listen`).
    #[arg(long, default_value = "-")]
    pub witness: String,
    /// Stop after this many seconds (default: until the power goes).
    #[arg(long)]
    pub secs: Option<f64>,
}

/// Flags of `powercut listen`.
#[derive(Debug, clap::Args)]
pub struct ListenArgs {
    /// TCP port to listen on (all addresses).
    #[arg(long)]
    pub port: u16,
    /// The acks file to create (must not exist).
    #[arg(long)]
    pub out: PathBuf,
}

/// Flags of `powercut verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The directory `powercut write` wrote to.
    pub dir: PathBuf,
    /// The acks the witness kept (`-` for standard input).
    #[arg(long)]
    pub acks: PathBuf,
    /// Also write the result as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Flags of `powercut lab`.
#[derive(Debug, clap::Args)]
pub struct LabArgs {
    /// Lab profiles, comma-separated (see `syncbench lab profiles`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub profile: Vec<String>,
    /// File systems, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ext4,xfs")]
    pub fs: Vec<crate::proof::lab::profile::LabFs>,
    /// Power cuts per profile × fs × method.
    #[arg(long, default_value_t = 10)]
    pub cuts: u32,
    /// Sync methods, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "fdatasync", value_parser = super::method_parser(&SyncMethod::ALL, &[]))]
    pub method: Vec<SyncMethod>,
    /// Seed of the cut moments and of what each cut keeps.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the table goes besides the screen.
    #[command(flatten)]
    pub exports: TableExports,
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    match args.action {
        Action::Write(a) => write(a),
        Action::Listen(a) => listen_main(a),
        Action::Verify(a) => verify_main(a),
        Action::Lab(a) => lab(a),
        Action::Db(a) => db::db(a),
        Action::Run(a) => db::run(a),
    }
}

fn existing_dir(dir: &Path, what: &str) -> anyhow::Result<PathBuf> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(dir.canonicalize()?),
        Ok(_) => Err(usage(format!("{} is not a directory; give {what}", dir.display()))),
        Err(e) => Err(usage(format!("cannot use {}: {e}; give {what}", dir.display()))),
    }
}

fn write(a: WriteArgs) -> Outcome {
    let dir = existing_dir(&a.dir, "an existing directory on the disk under test")?;
    let method = a.method;
    let duration = match a.secs {
        Some(s) if !(s > 0.0 && s.is_finite()) => return Err(usage(format!("--secs must be positive (got {s})"))),
        s => s.map(std::time::Duration::from_secs_f64),
    };
    let mut witness = writer::witness_for(&a.witness).map_err(usage)?;
    if !method.durable() {
        eprintln!("syncbench: {} is NOT a durable method: losses after a power cut are expected", method.name());
    }
    let plan = writer::WritePlan { dir, method, duration, run: writer::new_run_id() };
    let root = writer::prepare(&plan, witness.as_mut())?;
    eprintln!(
        "syncbench: writing run {:016x} in {} with {}; cut the power now and then run `powercut verify`",
        plan.run,
        root.display(),
        method.name()
    );
    let s = writer::write(&plan, &root, witness.as_mut(), &AtomicBool::new(false))?;
    eprintln!("syncbench: {}", s.summary_line());
    match s.ended_by.as_str() {
        "duration" => Ok(ExitCode::SUCCESS),
        other => Err(anyhow::anyhow!("writing stopped: {other}")),
    }
}

fn listen_main(a: ListenArgs) -> Outcome {
    if a.out.exists() {
        return Err(usage(format!(
            "{} exists; give a new file for the acks (syncbench never overwrites a file it did not create)",
            a.out.display()
        )));
    }
    let listener = std::net::TcpListener::bind(("0.0.0.0", a.port))
        .map_err(|e| usage(format!("cannot listen on port {}: {e}", a.port)))?;
    let out = listen::create_acks(&a.out)?;
    eprintln!("syncbench: waiting for a writer on port {}; acks go to {}", a.port, a.out.display());
    let got = listen::record(&listener, &out, &AtomicBool::new(false))?;
    let partial = if got.partial_bytes > 0 {
        format!(", a partial last line of {} bytes dropped", got.partial_bytes)
    } else {
        String::new()
    };
    eprintln!("syncbench: {} lines recorded ({}){partial}", got.lines, got.ended_by);
    Ok(ExitCode::SUCCESS)
}

fn read_acks(path: &Path) -> anyhow::Result<String> {
    let text =
        if path == Path::new("-") { std::io::read_to_string(std::io::stdin()) } else { std::fs::read_to_string(path) };
    text.map_err(|e| {
        usage(format!("cannot read the acks file {}: {e}; give the file the witness kept", path.display()))
    })
}

fn verify_main(a: VerifyArgs) -> Outcome {
    let dir = existing_dir(&a.dir, "the directory `powercut write` wrote to")?;
    let text = read_acks(&a.acks)?;
    let (header, acks) =
        acks::parse(&text).map_err(|e| usage(format!("{} is not a powercut acks file: {e}", a.acks.display())))?;
    let root = verify::run_root(&dir, &header).map_err(|e| usage(format!("{}: {e}", a.acks.display())))?;
    let v = verify::verify(&root, &header, &acks)?;
    let env = crate::observe::probe::collect(&dir);
    let verdicts = crate::observe::probe::verdicts(&env, &[]);
    if a.json.as_deref() != Some(Path::new("-")) {
        // The answer first (the verification's verdict and table), then where it ran.
        print!(
            "{}\n{}\n{}",
            render::verification(&v),
            crate::observe::probe::render::environment_tree(&env),
            crate::observe::probe::render::verdict_list(&verdicts)
        );
    }
    if let Some(dest) = &a.json {
        let doc = serde_json::json!({ "verify": v, "environment": env, "verdicts": verdicts });
        crate::core::output::write_to(dest, &(serde_json::to_string_pretty(&doc)? + "\n"))?;
    }
    Ok(if v.failures() > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

#[cfg(not(feature = "fuse"))]
fn lab(_a: LabArgs) -> Outcome {
    Err(usage(
        "this syncbench was built without FUSE support, which powercut lab needs; rebuild with the default features",
    ))
}

#[cfg(feature = "fuse")]
fn lab(a: LabArgs) -> Outcome {
    use crate::proof::powercut::lab;
    let profiles = db::lab_inputs(&a.profile, &a.fs, a.cuts, "powercut lab")?;
    let plan = lab::LabPlan { profiles, fss: a.fs.clone(), methods: a.method.clone(), cuts: a.cuts, seed: a.seed };
    let cells = lab::run(&plan, |cell, cut| eprintln!("{}", render::lab_progress(cell, cut)))?;
    a.exports.write(
        &render::lab_table(&cells),
        || Ok(serde_json::to_string_pretty(&serde_json::json!({ "seed": a.seed, "cells": cells }))? + "\n"),
        || render::lab_markdown(&cells),
    )?;
    Ok(if cells.iter().any(lab::Cell::unexpected_loss) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
