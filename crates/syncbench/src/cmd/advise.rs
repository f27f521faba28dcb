//! `syncbench advise`: the settings to use for each database, each with the measurement behind it.

use crate::advise::{AdvisePayload, Database, Input, Target, Version};
use crate::exit::{Outcome, usage};
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
    let text = crate::advise::to_text(&advice);
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

type Measured = (crate::probe::Environment, Vec<Verdict>, Vec<CaseResult>, String, String);

fn measure(_args: &Args, _targets: &[Target]) -> anyhow::Result<Measured> {
    Err(usage("measuring from advise needs the run engine; use --from RUN.json for now"))
}
