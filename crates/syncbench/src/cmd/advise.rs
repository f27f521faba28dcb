//! `syncbench advise`: the settings to use for each database, each with the measurement behind it.

use crate::advise::{AdvisePayload, Database, Input, Target, Version};
use crate::exit::{Outcome, usage};
use crate::method::SyncMethod;
use crate::runner::{RunBudget, Target as RunTarget, run_case};
use crate::schema::{CaseResult, Envelope};
use crate::suite::{Case, FileState, KIB, Section};
use crate::verdict::Verdict;
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `syncbench advise`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to measure (where the database's log will live). Ignored with --from.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Use a saved `syncbench run --json` file instead of measuring.
    #[arg(long, value_name = "RUN.json")]
    pub from: Option<PathBuf>,
    /// Databases to advise on, optionally with a version: postgres[:16],mysql[:8.4],mariadb[:11.4],sqlite,rocksdb,etcd.
    #[arg(
        long = "for",
        value_name = "DB[:VERSION],...",
        value_delimiter = ',',
        default_value = "postgres,mysql,mariadb,sqlite,rocksdb,etcd"
    )]
    pub databases: Vec<String>,
    /// Write the advice as JSON (schema syncbench/v1) to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Measure quickly (a few seconds; rougher numbers).
    #[arg(long)]
    pub quick: bool,
}

/// Parse `--for` into targets; an unknown name or version is a usage error.
pub fn parse_targets(names: &[String]) -> anyhow::Result<Vec<Target>> {
    let mut targets: Vec<Target> = Vec::new();
    for item in names.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let (name, version) = item.split_once(':').map_or((item, None), |(n, v)| (n, Some(v)));
        let database = Database::parse(name).ok_or_else(|| {
            usage(format!("--for: unknown database {name:?}; use postgres, mysql, mariadb, sqlite, rocksdb or etcd"))
        })?;
        let version = match version {
            Some(v) => Version::parse(v)
                .ok_or_else(|| usage(format!("--for {item}: version {v:?} is not a number like 16 or 8.4")))?,
            None => database.default_version(),
        };
        if !targets.iter().any(|t| t.database == database) {
            targets.push(Target { database, version });
        }
    }
    if targets.is_empty() {
        return Err(usage("--for: name at least one database"));
    }
    Ok(targets)
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    let targets = parse_targets(&args.databases)?;
    if let Some(json) = &args.json {
        crate::export::ExportArgs { json: Some(json.clone()), ..Default::default() }.validate()?;
    }
    let started_at = crate::schema::now_rfc3339();
    let (environment, verdicts, results, source, dir) = match &args.from {
        Some(path) => {
            let run = crate::export::read_run(path)?;
            (run.environment, run.verdicts, run.payload.results, path.display().to_string(), run.payload.dir)
        }
        None => measure(&args, &targets)?,
    };
    let input = Input { environment: &environment, verdicts: &verdicts, results: &results };
    let advice = crate::advise::advise(&input, &targets);
    let text = disturbed_measurement(&verdicts) + &crate::advise::to_text(&advice);
    let to_stdout = args.json.as_deref() == Some(std::path::Path::new("-"));
    if to_stdout {
        eprint!("{text}")
    } else {
        print!("{text}")
    }
    if let Some(json) = &args.json {
        let payload = AdvisePayload { dir, source, advice: advice.clone(), results };
        let doc = Envelope::new(started_at, environment, verdicts, payload);
        crate::output::write_to(json, &crate::export::to_json(&doc)?)?;
    }
    let failed = advice.iter().any(|a| a.pass == Some(false));
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// A warning above the advice when the hypervisor took CPU time during the measurement: the comparisons
/// between methods (and etcd's p99) are then noisier than they look.
fn disturbed_measurement(verdicts: &[Verdict]) -> String {
    verdicts
        .iter()
        .filter(|v| v.code == "cpu_steal")
        .map(|v| format!("Measurement\n  !! {} The comparisons below may not repeat.\n  → {}\n\n", v.message, v.advice))
        .collect()
}

type Measured = (crate::probe::Environment, Vec<Verdict>, Vec<CaseResult>, String, String);

/// Measure the cases the rules read: one and two 8 KiB writes per commit for every method a database can
/// be configured to use, a 4 KiB fdatasync (SQLite's WAL frame), overwrite vs append (RocksDB's recycling,
/// PostgreSQL's zero-filled segments), and etcd's 2300-byte appends with a longer budget for a steady p99.
fn measure(args: &Args, targets: &[Target]) -> anyhow::Result<Measured> {
    let dir = crate::cmd::run::check_dir(&args.dir, true)?;
    let environment = crate::probe::collect(&dir);
    let prepared = crate::cmd::run::prepare(&dir, &environment.fs_type)?;
    let case_secs = if args.quick { RunBudget::QUICK_CASE_SECS } else { RunBudget::DEFAULT_CASE_SECS };
    let budget = RunBudget::per_case(case_secs);
    let steal = crate::probe::steal::StealMeter::start();
    let mut results: Vec<CaseResult> =
        advise_cases().iter().map(|c| run_case(c, &budget, &RunTarget::Disk(&prepared))).collect();
    if targets.iter().any(|t| t.database == Database::Etcd) {
        let secs = if args.quick { 1.0 } else { 5.0 };
        // A p99 needs many samples: no early stop on a tight mean.
        let etcd_budget = RunBudget { min_secs: secs, min_samples: 1000, ..RunBudget::per_case(secs) };
        results.push(run_case(&etcd_case(), &etcd_budget, &RunTarget::Disk(&prepared)));
    }
    drop(prepared);
    let mut verdicts = crate::probe::verdicts(&environment, &results);
    verdicts.extend(steal.pct().and_then(|pct| crate::probe::steal::verdict(pct, "the measurement")));
    Ok((environment, verdicts, results, "measured".to_string(), dir.display().to_string()))
}

fn advise_cases() -> Vec<Case> {
    use SyncMethod::*;
    let mut cases = Vec::new();
    for method in [Fdatasync, Fsync, OpenDatasync, OpenSync, FdatasyncDirect, OpenDatasyncDirect] {
        cases.push(Case::one_write(method, 8 * KIB));
        let two = Case::one_write(method, 8 * KIB);
        cases.push(Case { section: Section::TwoWrites, writes_per_commit: 2, ..two });
    }
    cases.push(Case { section: Section::NoSync, ..Case::one_write(Write, 8 * KIB) });
    let sweep = Case::one_write(Fdatasync, 4 * KIB);
    cases.push(Case { section: Section::SizeSweep, label: "4 KiB fdatasync".into(), ..sweep });
    for state in [FileState::Overwrite, FileState::Append] {
        let c = Case::one_write(Fdatasync, 8 * KIB);
        cases.push(Case {
            section: Section::FileState,
            label: format!("{} fdatasync", state.name()),
            file_state: state,
            ..c
        });
    }
    cases
}

/// etcd's storage check: 2300-byte writes, each followed by fdatasync, into a preallocated segment.
fn etcd_case() -> Case {
    let c = Case::one_write(SyncMethod::Fdatasync, crate::advise::ETCD_WRITE_BYTES);
    Case {
        section: Section::FileState,
        label: "etcd: 2300 B + fdatasync".into(),
        file_state: FileState::Fallocate,
        ..c
    }
}
