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
/// be configured to use, one 16 KiB write for PostgreSQL's methods, a 4 KiB fdatasync (SQLite's WAL
/// frame), overwrite vs append (RocksDB's recycling, PostgreSQL's zero-filled segments), and etcd's
/// 2300-byte appends with a longer budget for a steady p99.
fn measure(args: &Args, targets: &[Target]) -> anyhow::Result<Measured> {
    let need = (crate::workdir::RUN_FILES_BYTES, "syncbench advise", "its test files");
    let dir = crate::workdir::check(&args.dir, Some(need))?;
    let environment = crate::probe::collect(&dir);
    let prepared = crate::workdir::prepare_run_file(&dir, &environment.fs_type)?;
    let case_secs = if args.quick { RunBudget::QUICK_CASE_SECS } else { RunBudget::DEFAULT_CASE_SECS };
    let budget = RunBudget::per_case(case_secs / 2.0);
    let steal = crate::probe::steal::StealMeter::start();
    let cases = advise_cases();
    let rounds: Vec<Vec<CaseResult>> = (0..ROUNDS)
        .map(|round| {
            let mut results: Vec<Option<CaseResult>> = vec![None; cases.len()];
            for i in rotated(cases.len(), round) {
                results[i] = Some(run_case(&cases[i], &budget, &RunTarget::Disk(&prepared)));
            }
            results.into_iter().flatten().collect()
        })
        .collect();
    let mut results = merge_rounds(rounds);
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

/// Rounds over the cases: the methods are compared across time as well as within one window, so a
/// device or host that changes speed for a while (this test VM's flush time is bimodal) neither favours
/// one method nor hides as a confident difference.
const ROUNDS: usize = 3;

/// The case indices of one round, starting at a different case each round so none always runs first.
fn rotated(len: usize, round: usize) -> impl Iterator<Item = usize> {
    let start = if len == 0 { 0 } else { round * len / ROUNDS % len };
    (0..len).map(move |i| (start + i) % len)
}

/// One result per case from its rounds: the round with the median commits/s stands for the case, and its
/// `ci95_rel` widens to half the spread between rounds when that is larger, so the rules' noise margin
/// covers drift over time. A round that failed or was refused decides the case: a failed sync is never
/// averaged away.
fn merge_rounds(rounds: Vec<Vec<CaseResult>>) -> Vec<CaseResult> {
    let Some(len) = rounds.first().map(Vec::len) else { return Vec::new() };
    assert!(rounds.iter().all(|r| r.len() == len), "every round measures every case");
    let mut by_case: Vec<Vec<CaseResult>> = vec![Vec::new(); len];
    for round in rounds {
        for (i, result) in round.into_iter().enumerate() {
            by_case[i].push(result);
        }
    }
    by_case.into_iter().map(merge_case).collect()
}

fn merge_case(mut results: Vec<CaseResult>) -> CaseResult {
    if let Some(bad) = results.iter().position(|r| !r.supported || r.error.is_some() || r.ops == 0) {
        return results.swap_remove(bad);
    }
    results.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
    let (low, high) = (results[0].ops_per_s, results[results.len() - 1].ops_per_s);
    let mut median = results.swap_remove(results.len() / 2);
    median.ci95_rel = median.ci95_rel.max((high - low) / 2.0 / median.ops_per_s);
    median
}

fn advise_cases() -> Vec<Case> {
    use SyncMethod::*;
    let mut cases = Vec::new();
    for method in [Fdatasync, Fsync, OpenDatasync, OpenSync, FdatasyncDirect, OpenDatasyncDirect] {
        cases.push(Case::one_write(method, 8 * KIB));
        let two = Case::one_write(method, 8 * KIB);
        cases.push(Case { section: Section::TwoWrites, writes_per_commit: 2, ..two });
    }
    // PostgreSQL's commit spanning two WAL blocks: one 16 KiB write.
    cases.extend([Fdatasync, Fsync, OpenDatasync, OpenSync].map(|m| Case::split_16k(m, 1)));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn result(ops_per_s: f64, ci95_rel: f64) -> CaseResult {
        CaseResult { supported: true, ops: 100, ops_per_s, ci95_rel, ..CaseResult::default() }
    }

    #[test]
    fn rounds_start_at_different_cases_and_cover_all() {
        let orders: Vec<Vec<usize>> = (0..ROUNDS).map(|r| rotated(6, r).collect()).collect();
        assert_eq!(orders[0], [0, 1, 2, 3, 4, 5]);
        assert_eq!(orders[1], [2, 3, 4, 5, 0, 1]);
        assert_eq!(orders[2], [4, 5, 0, 1, 2, 3]);
        assert_eq!(rotated(0, 1).count(), 0);
    }

    #[test]
    fn merged_case_is_the_median_round_with_the_spread_as_noise() {
        let rounds = vec![vec![result(100.0, 0.01)], vec![result(140.0, 0.01)], vec![result(120.0, 0.02)]];
        let merged = merge_rounds(rounds);
        assert_eq!(merged[0].ops_per_s, 120.0);
        // (140 - 100) / 2 / 120
        assert!((merged[0].ci95_rel - 1.0 / 6.0).abs() < 1e-9, "{}", merged[0].ci95_rel);
        // Agreeing rounds keep the case's own interval.
        let merged =
            merge_rounds(vec![vec![result(100.0, 0.03)], vec![result(100.5, 0.01)], vec![result(100.2, 0.01)]]);
        assert_eq!((merged[0].ops_per_s, merged[0].ci95_rel), (100.2, 0.01_f64.max(0.5 / 2.0 / 100.2)));
    }

    #[test]
    fn a_failed_round_decides_the_case() {
        let failed = CaseResult { error: Some("EIO: fdatasync failed".into()), ..result(0.0, 0.0) };
        let merged = merge_rounds(vec![vec![result(100.0, 0.01)], vec![failed], vec![result(100.0, 0.01)]]);
        assert_eq!(merged[0].error.as_deref(), Some("EIO: fdatasync failed"));
    }
}
