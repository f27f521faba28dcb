//! `advise`'s measurement: the cases its rules read, on the directory to advise for, and (with
//! `--background-writes`) PostgreSQL's and etcd's cases again under a background writer.
//!
//! `cmd/advise.rs` turns the flags into a [`Plan`] (targets parsed, directory checked); [`measure`] runs
//! it and returns what a saved `run` file would hold, so the rules read a measurement and a file alike.

use super::Database;
use crate::core::environment::Environment;
use crate::core::schema::BackgroundRun;
use crate::core::schema::CaseResult;
use crate::core::verdict::Verdict;
use crate::measure::background::Rate;
use crate::measure::runner::{RunBudget, Target, run_case};
use std::path::PathBuf;

/// What to measure, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The directory, checked usable (free space included).
    pub dir: PathBuf,
    /// `--quick`: shorter cases, fewer rounds.
    pub quick: bool,
    /// The databases advised on (etcd adds its long case; etcd and PostgreSQL the part under writes).
    pub databases: Vec<Database>,
    /// `--background-writes`.
    pub background: Option<Rate>,
}

/// Free space a measurement needs: the run's test files, and the background writer's file when one runs.
pub fn space_needed_bytes(background: Option<Rate>) -> u64 {
    crate::core::workdir::RUN_FILES_BYTES + background.map_or(0, |_| crate::measure::background::FILE_BYTES)
}

/// What was measured: as a saved `run` file holds it.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The probe of the directory.
    pub environment: Environment,
    /// The probe's verdicts on the results, and CPU steal during the measurement.
    pub verdicts: Vec<Verdict>,
    /// The idle cases, in the plan's order (etcd's last).
    pub results: Vec<CaseResult>,
    /// The cases under background writes, or why that part failed ([`BackgroundRun::error`]).
    pub under_writes: Option<BackgroundRun>,
}

/// Measure the cases the rules read: one and two 8 KiB writes per commit for every method a database can
/// be configured to use, one 16 KiB write for PostgreSQL's methods, a 4 KiB fdatasync (SQLite's WAL
/// frame), overwrite vs append (RocksDB's recycling, PostgreSQL's zero-filled segments), and etcd's
/// 2300-byte appends with a longer budget for a steady p99. With a background rate, PostgreSQL's and
/// etcd's cases again while a background writer dirties data in the directory at that rate; a failure of
/// that part leaves the idle results whole (see [`crate::measure::background`]).
pub fn measure(plan: &Plan) -> anyhow::Result<Measured> {
    let dir = &plan.dir;
    let environment = crate::observe::probe::collect(dir);
    let _lock = crate::observe::disturbance::DirLock::take(dir)?;
    let prepared = crate::measure::runner::prepare_run_file(dir, &environment.fs_type)?;
    let case_secs = if plan.quick { RunBudget::QUICK_CASE_SECS } else { RunBudget::DEFAULT_CASE_SECS };
    let rounds = crate::measure::rounds::Schedule::default_for(plan.quick);
    // 1.5 × run's time per case, in rounds: the methods are compared across the whole measurement, so a
    // device that changes speed for a while neither favours one method nor hides as a confident difference.
    let budget = RunBudget::per_case(case_secs * 1.5);
    let steal = crate::observe::probe::steal::StealMeter::start();
    let monitor = crate::observe::disturbance::Monitor::new(&environment);
    let target = Target::Disk(&prepared);
    let mut results =
        crate::measure::runner::run_plan(&super::cases::all(), rounds, &budget, &target, Some(&monitor), &mut |_| {});
    let (etcd, postgres) = (plan.databases.contains(&Database::Etcd), plan.databases.contains(&Database::Postgres));
    let secs = if plan.quick { 1.0 } else { 5.0 };
    // A p99 needs many samples: no early stop on a tight mean.
    let etcd_budget = RunBudget { min_secs: secs, min_samples: 1000, ..RunBudget::per_case(secs) };
    if etcd {
        results.push(run_case(&super::cases::etcd(), &etcd_budget, &target));
    }
    let under_writes = match plan.background {
        Some(rate) if etcd || postgres => {
            let (results, writer) = crate::measure::background::measure_under(dir, rate, || {
                let cases = if postgres { super::cases::postgres_under_writes() } else { Vec::new() };
                let mut results = crate::measure::runner::run_plan(&cases, rounds, &budget, &target, None, &mut |_| {});
                if etcd {
                    results.push(run_case(&super::cases::etcd(), &etcd_budget, &target));
                }
                crate::measure::background::no_failed_case(results)
            });
            Some(BackgroundRun { writer, results: results.unwrap_or_default() })
        }
        _ => None,
    };
    drop(prepared);
    let mut verdicts = crate::observe::probe::verdicts(&environment, &results);
    verdicts.extend(steal.pct().and_then(|pct| crate::observe::probe::steal::verdict(pct, "the measurement")));
    Ok(Measured { environment, verdicts, results, under_writes })
}
