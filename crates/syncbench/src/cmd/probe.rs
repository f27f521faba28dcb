//! `syncbench probe [DIR]`: what stands between a write and stable storage, and whether a flush rate is
//! too good to be true.

use crate::core::exit::{Outcome, usage};
use crate::core::export::ExportArgs;
use crate::core::schema::{CaseResult, Envelope};
use crate::core::verdict::{Severity, Verdict};
use crate::measure::burst::{self, BurstError};
use crate::observe::probe::payload::{ProbePayload, ProbeSection};
use crate::observe::probe::{self as env_probe, render};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Flags of `syncbench probe`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to probe.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// --json, --csv (the burst as one row of run's CSV), --markdown, --openmetrics (the burst's rate and
    /// latency, and the verdicts by severity); `-` writes that export to stdout and the text to stderr.
    #[command(flatten)]
    pub export: ExportArgs,
    /// Seconds to time the fdatasync burst (8 KiB overwrites) that feeds the plausibility check.
    #[arg(long, value_name = "N", default_value_t = 1.0)]
    pub secs: f64,
    /// A shorter burst (0.2 s).
    #[arg(long, conflicts_with = "secs")]
    pub quick: bool,
    /// Skip the fdatasync burst (the plausibility check then has no measurement to judge).
    #[arg(long)]
    pub no_burst: bool,
}

/// Longest burst accepted: the probe is meant to be quick.
const SECS_MAX: f64 = 60.0;
const QUICK_SECS: f64 = 0.2;

/// Run the command.
pub fn main(args: Args) -> Outcome {
    check_dir(&args.dir)?;
    args.export.validate()?;
    let secs = if args.quick { QUICK_SECS } else { args.secs };
    if !(secs > 0.0 && secs <= SECS_MAX) {
        return Err(usage(format!(
            "--secs must be between 0 and {SECS_MAX} (got {secs}); the probe's burst is meant to be short"
        )));
    }
    let started_at = crate::core::schema::now_rfc3339();
    let env = env_probe::collect(&args.dir);
    let section = measure(&args.dir, secs, args.no_burst);
    let results: Vec<CaseResult> = section.flush_burst.iter().cloned().collect();
    let mut verdicts = env_probe::verdicts(&env, &results);
    if let Some(err) = &section.flush_burst_error {
        verdicts.insert(0, flush_failed(err));
    }
    let failed = section.flush_burst_error.is_some();
    let text = render_text(&env, &section, &verdicts);
    let envelope = Envelope::new(started_at, env, verdicts, ProbePayload { probe: section });
    crate::core::export::print_human(&args.export, &text)?;
    crate::core::export::write_all(&envelope, &args.export)?;
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn check_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(usage(format!("{} is not a directory; give the directory to probe", dir.display()))),
        Err(e) => Err(usage(format!("cannot use {}: {e}; give an existing directory to probe", dir.display()))),
    }
}

fn measure(dir: &Path, secs: f64, no_burst: bool) -> ProbeSection {
    if no_burst {
        return ProbeSection { flush_burst_skipped: Some("--no-burst".into()), ..ProbeSection::default() };
    }
    match burst::fdatasync_burst(dir, Duration::from_secs_f64(secs)) {
        Ok(r) => ProbeSection { flush_burst: Some(r), ..ProbeSection::default() },
        Err(e @ BurstError::Prepare { .. }) => {
            ProbeSection { flush_burst_skipped: Some(e.to_string()), ..ProbeSection::default() }
        }
        Err(e @ BurstError::Failed(_)) => {
            ProbeSection { flush_burst_error: Some(e.to_string()), ..ProbeSection::default() }
        }
    }
}

fn flush_failed(err: &str) -> Verdict {
    Verdict {
        severity: Severity::Critical,
        code: crate::core::verdict::VerdictCode::FlushFailed.name().into(),
        message: format!("A write or fdatasync failed during the burst: {err}. Data written here may be lost."),
        advice: "Check the kernel log (`dmesg`) and the device's health before trusting this storage; never retry a failed fsync.".into(),
    }
}

/// The answer first (the verdicts, then the flush burst they judge), as `run` and `advise` do; the
/// environment tree they come from after it.
fn render_text(env: &crate::core::environment::Environment, section: &ProbeSection, verdicts: &[Verdict]) -> String {
    let mut text = render::verdict_list(verdicts);
    match (&section.flush_burst, &section.flush_burst_skipped, &section.flush_burst_error) {
        (Some(r), _, _) => text.push_str(&render::flush_line(r)),
        (_, Some(why), _) => text.push_str(&format!("flush burst: skipped ({why})")),
        (_, _, Some(err)) => text.push_str(&format!("flush burst: FAILED ({err})")),
        _ => {}
    }
    text.push_str("\n\n");
    text.push_str(&render::environment_tree(env));
    text
}
