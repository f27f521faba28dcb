//! `syncbench advise`: the settings to use for each database, each with the measurement behind it.

use crate::advise::measure::{Measured, Plan};
use crate::advise::{AdvisePayload, Database, Input, Target, Version, versions};
use crate::core::exit::{Outcome, usage};
use crate::core::schema::Envelope;
use crate::core::verdict::Verdict;
use crate::measure::background::Rate;
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
    /// --json (with `power_cuts`: each setting's recorded power cuts), --csv (one row per setting and
    /// measurement behind it), --markdown (a table of settings per database), --openmetrics (an info gauge per setting: database, setting, value, evidence level; and
    /// etcd's pass); `-` for stdout (the text then goes to stderr). Checked before measuring.
    #[command(flatten)]
    pub export: crate::core::export::ExportArgs,
    /// Measure quickly (a few seconds; rougher numbers).
    #[arg(long)]
    pub quick: bool,
    /// Measure etcd's and PostgreSQL's commits again while a second file in DIR is dirtied at RATE (e.g.
    /// 50MiB/s, max) and written back by the kernel, as checkpoints and other tenants do; the verdicts judge both.
    /// If the writer fails, the advice from the idle measurement is still given, that part marked failed, exit 1.
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
                // `postgres:15` with 15.18 installed advises for 15.18, not 15.0.
                let version = match installed(database) {
                    Some((found, source)) if !v.contains('.') && found.major == version.major => {
                        notes.push(format!("{} {found}: the installed version ({source})", database.name()));
                        found
                    }
                    _ => version,
                };
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
    let background = crate::measure::background::Rate::from_option(args.background_writes.as_deref())?;
    if background.is_some() && args.from.is_some() {
        return Err(usage(
            "--background-writes measures; with --from the file's own results under writes are used (make it with \
             `syncbench run --background-writes RATE --json FILE`)",
        ));
    }
    let started_at = crate::core::schema::now_rfc3339();
    let (measured, source, dir, partial) = match &args.from {
        Some(path) => {
            let run = crate::core::export::read_run(path, "advise --from")?;
            let p = run.payload;
            let under_writes = p.background_writes;
            let measured =
                Measured { environment: run.environment, verdicts: run.verdicts, results: p.results, under_writes };
            (measured, path.display().to_string(), p.dir, p.partial)
        }
        None => {
            let plan = plan(&args, &targets, background)?;
            let dir = plan.dir.display().to_string();
            (crate::advise::measure::measure(&plan)?, "measured".to_string(), dir, false)
        }
    };
    let Measured { environment, verdicts, results, under_writes } = measured;
    let input = Input {
        environment: &environment,
        verdicts: &verdicts,
        results: &results,
        under_writes: under_writes.as_ref(),
        partial,
    };
    let advice = crate::advise::advise(&input, &targets);
    let versions: String = version_notes.iter().map(|n| format!("  version: {n}\n")).collect();
    let input_note = if partial { "  input: a PARTIAL run (interrupted): see the note below\n" } else { "" };
    let text = crate::advise::answer(&advice)
        + input_note
        + &versions
        + "\n"
        + &disturbed_measurement(&verdicts)
        + &crate::advise::body(&advice)
        + &under_writes.as_ref().map_or(String::new(), failed_under_writes);
    crate::core::export::print_human(&args.export, &text)?;
    let evidence = advice.iter().map(crate::advise::evidence::of).collect();
    let power_cuts = advice.iter().map(crate::advise::safety::of).collect();
    let failed = advice.iter().any(|a| a.pass == Some(false));
    let under_writes_failed = under_writes.as_ref().and_then(|u| u.error()).map(str::to_string);
    let payload = AdvisePayload {
        dir,
        source,
        advice: advice.clone(),
        evidence,
        power_cuts,
        results,
        background_writes: under_writes,
    };
    crate::core::export::write_all(&Envelope::new(started_at, environment, verdicts, payload), &args.export)?;
    // Exit 1 when etcd's rule failed or the part under writes did (its line on stderr).
    let code = crate::measure::background::exit_code(under_writes_failed.as_deref());
    Ok(if failed { ExitCode::from(1) } else { code })
}

/// The measurement's plan: the directory checked (space for the test files and the background writer's).
fn plan(args: &Args, targets: &[Target], background: Option<Rate>) -> anyhow::Result<Plan> {
    let need = (crate::advise::measure::space_needed_bytes(background), "syncbench advise", "its test files");
    let dir = crate::core::workdir::check(&args.dir, Some(need))?;
    let databases = targets.iter().map(|t| t.database).collect();
    Ok(Plan { dir, quick: args.quick, databases, background })
}

/// A warning above the advice when the hypervisor took CPU time during the measurement: the comparisons
/// between methods (and etcd's p99) are then noisier than they look.
fn disturbed_measurement(verdicts: &[Verdict]) -> String {
    verdicts
        .iter()
        .filter(|v| v.is(crate::core::verdict::VerdictCode::CpuSteal))
        .map(|v| format!("Measurement\n  !! {} The comparisons below may not repeat.\n  → {}\n\n", v.message, v.advice))
        .collect()
}

/// Below the advice when the part under background writes failed: the advice above is from idle only.
fn failed_under_writes(under: &crate::core::schema::BackgroundRun) -> String {
    let failed = crate::measure::background::failed_part(&under.writer);
    if failed.is_empty() { failed } else { failed + "  The advice above is from the idle measurement only.\n" }
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
        assert!(err.downcast_ref::<crate::core::exit::UsageError>().is_some());
        assert_eq!(err.to_string(), "--for postgres:99: postgres 99 is not a version these rules know; known: 12-18");
        // A bare major that is installed takes the installed minor version; a given minor or another major
        // is kept.
        let for_ = |item: &str| parse_targets_with(&[item.to_string()], &installed).unwrap();
        let (targets, notes) = for_("postgres:15");
        assert_eq!(targets[0].version, Version::new(15, 4));
        assert_eq!(notes, vec!["postgres 15.4: the installed version (`postgres --version`)".to_string()]);
        assert_eq!(for_("postgres:15.2").0[0].version, Version::new(15, 2));
        assert_eq!(for_("postgres:16").0[0].version, Version::new(16, 0));
        let odd = |_: Database| Some((Version::new(42, 0), "x".to_string()));
        let (targets, notes) = parse_targets_with(&["postgres".to_string()], &odd).unwrap();
        assert_eq!(targets[0].version, Database::Postgres.default_version());
        assert!(notes[0].contains("not a version these rules know"), "{notes:?}");
    }
}
