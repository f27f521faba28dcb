//! `syncbench advise`: the settings to use for each database, each with the measurement behind it.

use crate::advise::{AdvisePayload, Database, Input, Target, Version, versions};
use crate::background::{BackgroundRun, Rate};
use crate::exit::{Outcome, usage};
use crate::runner::{RunBudget, Target as RunTarget, run_case};
use crate::schema::{CaseResult, Envelope};
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
    /// --json, --csv (one row per setting and measurement behind it), --markdown (a table of settings per
    /// database), --openmetrics (an info gauge per setting: database, setting, value, evidence level; and
    /// etcd's pass); `-` for stdout (the text then goes to stderr). Checked before measuring.
    #[command(flatten)]
    pub export: crate::export::ExportArgs,
    /// Measure quickly (a few seconds; rougher numbers).
    #[arg(long)]
    pub quick: bool,
    /// Measure etcd's and PostgreSQL's commits again while a second file in DIR is dirtied at RATE (e.g.
    /// 50MiB/s, max) and written back by the kernel, as checkpoints and other tenants do; the verdicts judge both.
    #[arg(long, value_name = "RATE")]
    pub background_writes: Option<String>,
}

/// Parse `--for` into targets; an unknown name or version is a usage error. A database named without a
/// version gets the installed one when a program here says which (`postgres --version`, …), else the
/// current stable major; where the version came from is returned as notes for the output.
pub fn parse_targets(names: &[String]) -> anyhow::Result<Vec<Target>> {
    parse_targets_with(names, &detect).map(|(targets, _)| targets)
}

/// The installed version, unless SYNCBENCH_NO_VERSION_DETECT is set (tests that need a fixed version).
fn detect(db: Database) -> Option<(Version, String)> {
    if std::env::var_os("SYNCBENCH_NO_VERSION_DETECT").is_some() { None } else { versions::installed(db) }
}

/// [`parse_targets`] with the installed-version lookup given, and the notes on detected versions.
pub fn parse_targets_with(
    names: &[String],
    installed: &dyn Fn(Database) -> Option<(Version, String)>,
) -> anyhow::Result<(Vec<Target>, Vec<String>)> {
    let mut targets: Vec<Target> = Vec::new();
    let mut notes = Vec::new();
    for item in names.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let (name, version) = item.split_once(':').map_or((item, None), |(n, v)| (n, Some(v)));
        let database = Database::parse(name).ok_or_else(|| {
            usage(format!("--for: unknown database {name:?}; use postgres, mysql, mariadb, sqlite, rocksdb or etcd"))
        })?;
        let version = match version {
            Some(v) => {
                let version = Version::parse(v)
                    .ok_or_else(|| usage(format!("--for {item}: version {v:?} is not a number like 16 or 8.4")))?;
                if !versions::is_known(database, version) {
                    return Err(usage(format!(
                        "--for {item}: {} {v} is not a version these rules know; known: {}",
                        database.name(),
                        versions::known_list(database)
                    )));
                }
                version
            }
            None => match installed(database) {
                Some((v, source)) if versions::is_known(database, v) => {
                    notes.push(format!("{} {v}: the installed version ({source})", database.name()));
                    v
                }
                Some((v, source)) => {
                    let d = database.default_version();
                    notes.push(format!(
                        "{} {v} is installed ({source}) but not a version these rules know ({}); advising for {d} — \
                         give --for {}:VERSION",
                        database.name(),
                        versions::known_list(database),
                        database.name()
                    ));
                    d
                }
                None => database.default_version(),
            },
        };
        if !targets.iter().any(|t| t.database == database) {
            targets.push(Target { database, version });
        }
    }
    if targets.is_empty() {
        return Err(usage("--for: name at least one database"));
    }
    Ok((targets, notes))
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    let (targets, version_notes) = parse_targets_with(&args.databases, &detect)?;
    args.export.validate()?;
    let background = crate::background::Rate::from_option(args.background_writes.as_deref())?;
    if background.is_some() && args.from.is_some() {
        return Err(usage(
            "--background-writes measures; with --from the file's own results under writes are used (make it with \
             `syncbench run --background-writes RATE --json FILE`)",
        ));
    }
    let started_at = crate::schema::now_rfc3339();
    let (environment, verdicts, results, source, dir, under_writes) = match &args.from {
        Some(path) => {
            let run = crate::export::read_run(path)?;
            let p = run.payload;
            (run.environment, run.verdicts, p.results, path.display().to_string(), p.dir, p.background_writes)
        }
        None => measure(&args, &targets, background)?,
    };
    let input = Input {
        environment: &environment,
        verdicts: &verdicts,
        results: &results,
        under_writes: under_writes.as_ref(),
    };
    let advice = crate::advise::advise(&input, &targets);
    let versions: String = version_notes.iter().map(|n| format!("  version: {n}\n")).collect();
    let text = crate::advise::answer(&advice)
        + &versions
        + "\n"
        + &disturbed_measurement(&verdicts)
        + &crate::advise::body(&advice);
    crate::export::print_human(&args.export, &text)?;
    let evidence = advice.iter().map(crate::advise::evidence::of).collect();
    let payload =
        AdvisePayload { dir, source, advice: advice.clone(), evidence, results, background_writes: under_writes };
    crate::export::write_all(&Envelope::new(started_at, environment, verdicts, payload), &args.export)?;
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

type Measured = (crate::probe::Environment, Vec<Verdict>, Vec<CaseResult>, String, String, Option<BackgroundRun>);

/// Measure the cases the rules read: one and two 8 KiB writes per commit for every method a database can
/// be configured to use, one 16 KiB write for PostgreSQL's methods, a 4 KiB fdatasync (SQLite's WAL
/// frame), overwrite vs append (RocksDB's recycling, PostgreSQL's zero-filled segments), and etcd's
/// 2300-byte appends with a longer budget for a steady p99. With `background`, PostgreSQL's and etcd's
/// cases again while a background writer dirties data in DIR at that rate.
fn measure(args: &Args, targets: &[Target], background: Option<Rate>) -> anyhow::Result<Measured> {
    let writer_bytes = if background.is_some() { crate::background::FILE_BYTES } else { 0 };
    let need = (crate::workdir::RUN_FILES_BYTES + writer_bytes, "syncbench advise", "its test files");
    let dir = crate::workdir::check(&args.dir, Some(need))?;
    let environment = crate::probe::collect(&dir);
    let _lock = crate::disturbance::DirLock::take(&dir)?;
    let prepared = crate::workdir::prepare_run_file(&dir, &environment.fs_type)?;
    let case_secs = if args.quick { RunBudget::QUICK_CASE_SECS } else { RunBudget::DEFAULT_CASE_SECS };
    let rounds = crate::rounds::Schedule::default_for(args.quick);
    // 1.5 × run's time per case, in rounds: the methods are compared across the whole measurement, so a
    // device that changes speed for a while neither favours one method nor hides as a confident difference.
    let budget = RunBudget::per_case(case_secs * 1.5);
    let steal = crate::probe::steal::StealMeter::start();
    let monitor = crate::disturbance::Monitor::new(&environment);
    let target = RunTarget::Disk(&prepared);
    let mut results =
        crate::runner::run_plan(&crate::advise::cases::all(), rounds, &budget, &target, Some(&monitor), &mut |_| {});
    let etcd = targets.iter().any(|t| t.database == Database::Etcd);
    let secs = if args.quick { 1.0 } else { 5.0 };
    // A p99 needs many samples: no early stop on a tight mean.
    let etcd_budget = RunBudget { min_secs: secs, min_samples: 1000, ..RunBudget::per_case(secs) };
    if etcd {
        results.push(run_case(&crate::advise::cases::etcd(), &etcd_budget, &target));
    }
    let postgres = targets.iter().any(|t| t.database == Database::Postgres);
    let under_writes = match background {
        Some(rate) if etcd || postgres => {
            let (results, writer) = crate::background::measure_under(&dir, rate, || {
                let cases = if postgres { crate::advise::cases::postgres_under_writes() } else { Vec::new() };
                let mut results = crate::runner::run_plan(&cases, rounds, &budget, &target, None, &mut |_| {});
                if etcd {
                    results.push(run_case(&crate::advise::cases::etcd(), &etcd_budget, &target));
                }
                Ok(results)
            })?;
            Some(BackgroundRun { writer, results })
        }
        _ => None,
    };
    drop(prepared);
    let mut verdicts = crate::probe::verdicts(&environment, &results);
    verdicts.extend(steal.pct().and_then(|pct| crate::probe::steal::verdict(pct, "the measurement")));
    Ok((environment, verdicts, results, "measured".to_string(), dir.display().to_string(), under_writes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detected_versions_are_used_and_noted_and_unknown_ones_refused() {
        let installed = |db: Database| {
            (db == Database::Postgres).then(|| (Version::new(15, 4), "`postgres --version`".to_string()))
        };
        let names = vec!["postgres".to_string(), "sqlite".to_string()];
        let (targets, notes) = parse_targets_with(&names, &installed).unwrap();
        assert_eq!(targets[0].version, Version::new(15, 4));
        assert_eq!(targets[1].version, Database::Sqlite.default_version());
        assert_eq!(notes, vec!["postgres 15.4: the installed version (`postgres --version`)".to_string()]);
        let err = parse_targets_with(&["postgres:99".to_string()], &installed).unwrap_err();
        assert!(err.downcast_ref::<crate::exit::UsageError>().is_some());
        assert_eq!(err.to_string(), "--for postgres:99: postgres 99 is not a version these rules know; known: 12-18");
        let odd = |_: Database| Some((Version::new(42, 0), "x".to_string()));
        let (targets, notes) = parse_targets_with(&["postgres".to_string()], &odd).unwrap();
        assert_eq!(targets[0].version, Database::Postgres.default_version());
        assert!(notes[0].contains("not a version these rules know"), "{notes:?}");
    }
}
