//! `syncbench watch DIR`: a low-duty durability canary for node_exporter's textfile collector
//! (docs/watch.md). Flags are checked before anything is created; then `watch::run` loops until SIGTERM.

use crate::core::exit::{Outcome, usage};
use crate::core::units::parse_duration;
use crate::measure::watch::{self, MIN_MEASURE_SECS, Plan, PlantedBug};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Flags of `syncbench watch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to watch: the one whose durability matters (a database's WAL directory). Only
    /// `.syncbench-*` files are created there (4 MiB), and removed on exit.
    pub dir: PathBuf,
    /// Time between intervals: `5m`, `300s`, `1h`, `2s`. With --once: the period of the timer that starts it.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub every: String,
    /// Share of wall time spent measuring, at most: `1%` or `0.01`, up to 50%.
    #[arg(long, value_name = "SHARE", default_value = "1%")]
    pub duty: String,
    /// Write the metrics here every interval, atomically (node_exporter's textfile collector directory,
    /// e.g. /var/lib/prometheus/node-exporter/syncbench.prom).
    #[arg(long, value_name = "FILE")]
    pub openmetrics: Option<PathBuf>,
    /// Keep the baseline here between intervals and runs (needed with --once).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// One interval, then exit (for cron or a systemd timer).
    #[arg(long)]
    pub once: bool,
    /// Stop after N intervals.
    #[arg(long, value_name = "N")]
    pub intervals: Option<u64>,
    /// Plant a bug on purpose (the end-to-end test's negative control): `frozen-baseline`.
    #[arg(long, value_name = "BUG", hide = true)]
    pub plant_bug: Option<String>,
}

/// Longest interval accepted.
const EVERY_MAX: Duration = Duration::from_secs(24 * 3600);
/// Largest duty accepted: a canary that measures more than half the time is a benchmark.
const DUTY_MAX: f64 = 0.5;

impl Args {
    /// Check every flag; errors are one line for the user (exit code 2).
    pub fn plan(&self) -> anyhow::Result<Plan> {
        let every = parse_duration(&self.every)
            .filter(|d| *d >= Duration::from_secs(1) && *d <= EVERY_MAX)
            .ok_or_else(|| usage(format!("invalid --every {:?}: give 1s to 24h, e.g. 5m or 30s", self.every)))?;
        let duty = parse_share(&self.duty).filter(|d| *d > 0.0 && *d <= DUTY_MAX).ok_or_else(|| {
            usage(format!("invalid --duty {:?}: give a share above 0 and up to 50%, e.g. 1%", self.duty))
        })?;
        let measure = every.as_secs_f64() * duty;
        if measure < MIN_MEASURE_SECS {
            return Err(usage(format!(
                "--duty {} of --every {} is {}: a canary needs at least {} per interval — raise --duty or --every",
                self.duty,
                self.every,
                crate::core::units::format_duration(measure),
                crate::core::units::format_duration(MIN_MEASURE_SECS)
            )));
        }
        if self.once && self.state.is_none() {
            return Err(usage("--once needs --state FILE to keep the baseline between runs"));
        }
        let planted = match self.plant_bug.as_deref() {
            None => None,
            Some("frozen-baseline") => Some(PlantedBug::FrozenBaseline),
            Some(other) => return Err(usage(format!("unknown --plant-bug {other:?}: frozen-baseline"))),
        };
        let dir =
            crate::core::workdir::check(&self.dir, Some((watch::FILE_BYTES * 2, "syncbench watch", "its test files")))?;
        Ok(Plan {
            dir,
            every,
            duty,
            openmetrics: self.openmetrics.clone(),
            state: self.state.clone(),
            once: self.once,
            max_intervals: self.intervals.filter(|n| *n > 0),
            planted,
            no_sleep: std::env::var_os(watch::NO_SLEEP_ENV).is_some_and(|v| v == "1"),
        })
    }
}

/// `1%`, `0.5 %` or `0.01`.
fn parse_share(text: &str) -> Option<f64> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().ok()? / 100.0,
        None => t.parse::<f64>().ok()?,
    };
    value.is_finite().then_some(value)
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    let plan = args.plan()?;
    let stdout = std::io::stdout();
    watch::run(&plan, &mut |line| {
        let mut out = stdout.lock();
        // A closed stdout (a pipe whose reader left) must not stop the canary: the textfile is its output.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(every: &str, duty: &str) -> Args {
        Args {
            dir: std::env::temp_dir(),
            every: every.into(),
            duty: duty.into(),
            openmetrics: None,
            state: None,
            once: false,
            intervals: None,
            plant_bug: None,
        }
    }

    #[test]
    fn flags_are_checked_with_one_line_each() {
        assert!(args("5m", "1%").plan().is_ok());
        for (every, duty, says) in [
            ("5 parsecs", "1%", "invalid --every"),
            ("0s", "1%", "invalid --every"),
            ("5m", "80%", "invalid --duty"),
            ("5m", "x", "invalid --duty"),
            ("5s", "1%", "a canary needs at least"),
        ] {
            let e = args(every, duty).plan().unwrap_err().to_string();
            assert!(e.contains(says) && !e.contains('\n'), "{every} {duty}: {e}");
        }
        let once = Args { once: true, ..args("5m", "1%") };
        assert!(once.plan().unwrap_err().to_string().contains("--once needs --state"));
    }

    #[test]
    fn shares_read_as_percent_or_fraction() {
        assert_eq!(parse_share("1%"), Some(0.01));
        assert_eq!(parse_share("0.25"), Some(0.25));
        assert_eq!(parse_share("nan"), None);
    }
}
