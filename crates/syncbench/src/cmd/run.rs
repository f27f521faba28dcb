//! `syncbench run [DIR]`: measure every durable-write method on DIR.
//!
//! Options are validated before anything is created; then the overwrite file is prepared, every case of
//! the plan runs (`runner::run_case`), the file is removed, and the table, verdicts and JSON are written.

use crate::cleanup::PREFIX;
use crate::exit::{CheckFailed, Outcome, usage};
use crate::export::ExportArgs;
use crate::method::SyncMethod;
use crate::output;
use crate::probe;
use crate::runner::{MockTiming, PreparedDir, RunBudget, Target, run_case};
use crate::schema::{CaseResult, Envelope, RunPayload};
use crate::suite::{self, Case, PlanOptions, Section, format_size};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Size of the prepared file (a PostgreSQL WAL segment); append and fallocate cases use one each.
pub const FILE_SIZE_BYTES: u64 = 16 * suite::MIB;
/// Smallest and largest `--size`.
const SIZE_RANGE_BYTES: (u64, u64) = (512, suite::MIB);

/// Flags of `syncbench run`.
#[derive(Debug, Default, clap::Args)]
pub struct Args {
    /// Directory to measure. Only `.syncbench-*` files are created there, and removed afterwards.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Time budget per case, in seconds [default: 0.4, or 0.1 with --quick]. A case stops earlier once
    /// the 95% confidence interval of its mean latency is within ±2%.
    #[arg(long, value_name = "SECS")]
    pub secs: Option<String>,
    /// Fewer write sizes in the sweep and 0.1 s per case: the whole suite in under 15 s.
    #[arg(long)]
    pub quick: bool,
    /// Write size of sections a, b, d, e and g, 512 B to 1 MiB (e.g. 4k, 8KiB, 16384) [default: 8k].
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Only these methods, comma-separated (e.g. fdatasync,open_datasync+direct) [default: all].
    #[arg(long, value_name = "LIST")]
    pub methods: Option<String>,
    /// Only these sections, comma-separated names or letters a-g (e.g. a,f or one_write,size_sweep).
    #[arg(long, value_name = "LIST")]
    pub sections: Option<String>,
    /// `sequential`: advance through the file and wrap, like a WAL; `rewrite`: rewrite offset 0 like
    /// pg_test_fsync.
    #[arg(long, value_name = "PATTERN", default_value = "sequential")]
    pub pattern: String,
    /// Print a log2 latency histogram under each case.
    #[arg(long)]
    pub histogram: bool,
    /// Exports: --json, --csv, --markdown (FILE or `-` for stdout).
    #[command(flatten)]
    pub exports: ExportArgs,
    /// Use a deterministic latency model instead of the disk (for golden tests).
    #[arg(long, value_name = "SEED", hide = true)]
    pub mock_timing: Option<String>,
}

/// Validated options: every value checked, the directory usable.
#[derive(Clone, Debug)]
pub struct Options {
    /// Absolute target directory.
    pub dir: PathBuf,
    /// Per-case budget.
    pub budget: RunBudget,
    /// Which cases.
    pub plan: PlanOptions,
    /// Histograms in the table.
    pub histogram: bool,
    /// Export destinations.
    pub exports: ExportArgs,
    /// Mock timing instead of the disk.
    pub mock: Option<MockTiming>,
}

impl Options {
    /// Check every value, then the directory. Errors are one line for the user (exit code 2).
    pub fn from_args(args: &Args) -> anyhow::Result<Options> {
        let secs = match &args.secs {
            Some(text) => parse_secs(text)?,
            None if args.quick => RunBudget::QUICK_CASE_SECS,
            None => RunBudget::DEFAULT_CASE_SECS,
        };
        let size_bytes = args.size.as_deref().map_or(Ok(8 * suite::KIB), parse_write_size)?;
        let pattern = suite::Pattern::parse(&args.pattern)
            .ok_or_else(|| usage(format!("invalid --pattern {:?}: use sequential or rewrite", args.pattern)))?;
        let plan = PlanOptions {
            sections: args.sections.as_deref().map_or(Ok(Section::ALL.to_vec()), parse_sections)?,
            methods: args.methods.as_deref().map(parse_methods).transpose()?,
            size_bytes,
            quick: args.quick,
            pattern,
        };
        if suite::plan(&plan).is_empty() {
            return Err(usage("no case left: none of the --methods is measured in the chosen --sections"));
        }
        let mock = args.mock_timing.as_deref().map(parse_seed).transpose()?;
        args.exports.validate()?;
        let dir = check_dir(&args.dir, mock.is_none())?;
        Ok(Options {
            dir,
            budget: RunBudget::per_case(secs),
            plan,
            histogram: args.histogram,
            exports: args.exports.clone(),
            mock,
        })
    }
}

fn parse_secs(text: &str) -> anyhow::Result<f64> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(usage(format!("invalid --secs {text:?}: give seconds per case, more than 0 and at most 3600"))),
    }
}

fn parse_write_size(text: &str) -> anyhow::Result<u64> {
    let (min, max) = SIZE_RANGE_BYTES;
    match suite::parse_size(text) {
        Some(bytes) if (min..=max).contains(&bytes) => Ok(bytes),
        _ => Err(usage(format!("invalid --size {text:?}: give a write size from 512 to 1M, e.g. 8k or 16384"))),
    }
}

fn parse_sections(text: &str) -> anyhow::Result<Vec<Section>> {
    split_list(text)
        .map(|name| {
            Section::parse(name).ok_or_else(|| {
                let all: Vec<_> = Section::ALL.iter().map(|s| format!("{}={}", s.letter(), s.name())).collect();
                usage(format!("unknown section {name:?} in --sections: use {}", all.join(", ")))
            })
        })
        .collect()
}

fn parse_methods(text: &str) -> anyhow::Result<Vec<SyncMethod>> {
    split_list(text)
        .map(|name| {
            SyncMethod::from_name(name).ok_or_else(|| {
                let all: Vec<_> = SyncMethod::ALL.iter().map(|m| m.name()).collect();
                usage(format!("unknown method {name:?} in --methods: use {}", all.join(", ")))
            })
        })
        .collect()
}

fn split_list(text: &str) -> impl Iterator<Item = &str> {
    // An empty list is one empty name, which no section or method matches: an error, not "everything".
    text.split(',').map(str::trim)
}

fn parse_seed(text: &str) -> anyhow::Result<MockTiming> {
    let seed = text.trim().parse().map_err(|_| usage(format!("invalid --mock-timing {text:?}: give a number")))?;
    Ok(MockTiming { seed })
}

/// DIR exists, is a directory, is on a writable file system with room for the test files.
pub(crate) fn check_dir(dir: &Path, needs_space: bool) -> anyhow::Result<PathBuf> {
    let shown = dir.display();
    let meta = std::fs::metadata(dir)
        .map_err(|e| usage(format!("cannot use {shown}: {} — give an existing directory", reason(&e))))?;
    if !meta.is_dir() {
        return Err(usage(format!("{shown} is not a directory — give the directory to measure")));
    }
    let dir = std::fs::canonicalize(dir).map_err(|e| usage(format!("cannot use {shown}: {}", reason(&e))))?;
    if syncbench_sys::is_read_only_fs(&dir).unwrap_or(false) {
        return Err(usage(format!("{shown} is on a read-only file system — choose a writable directory")));
    }
    let free = syncbench_sys::free_bytes(&dir).map_err(|e| usage(format!("cannot use {shown}: {}", reason(&e))))?;
    // The overwrite file plus one append/fallocate file at a time, and room to spare for the file system.
    let needed = 2 * FILE_SIZE_BYTES + 8 * suite::MIB;
    if needs_space && free < needed {
        return Err(usage(format!(
            "{shown} has {} free but run needs {} for its test files — free some space or choose another directory",
            format_size(free),
            format_size(needed)
        )));
    }
    Ok(dir)
}

fn reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    let opts = Options::from_args(&args)?;
    let started_at = crate::schema::now_rfc3339();
    let environment = probe::collect(&opts.dir);
    let cases = suite::plan(&opts.plan);
    // Steal is measured on real runs only: the mock's output must not depend on the machine.
    let (results, steal_pct) = match opts.mock {
        Some(mock) => (run_all(&cases, &opts.budget, &Target::Mock(mock)), None),
        None => {
            let prepared = prepare(&opts.dir, &environment.fs_type)?;
            let steal = probe::steal::StealMeter::start();
            (run_all(&cases, &opts.budget, &Target::Disk(&prepared)), steal.pct())
            // `prepared` is dropped here: the overwrite file is removed before anything is printed.
        }
    };
    let mut verdicts = probe::verdicts(&environment, &results);
    verdicts.extend(steal_pct.and_then(|pct| probe::steal::verdict(pct, "the measurement")));
    let text = render_text(&opts, &environment, &verdicts, &results);
    if opts.exports.uses_stdout() {
        eprint!("{text}");
    } else {
        output::write_to(Path::new("-"), &text)?;
    }
    let payload =
        RunPayload { dir: opts.dir.display().to_string(), pattern: opts.plan.pattern.name().to_string(), results };
    let envelope = Envelope::new(started_at, environment, verdicts, payload);
    crate::export::write_all(&envelope, &opts.exports)?;
    let failed: Vec<&CaseResult> =
        envelope.payload.results.iter().filter(|r| r.supported && r.error.is_some()).collect();
    match failed.first() {
        None => Ok(ExitCode::SUCCESS),
        Some(first) => Err(CheckFailed(format!(
            "{} case(s) failed while running, first: {} {}: {}",
            failed.len(),
            first.section,
            first.label,
            first.error.as_deref().unwrap_or_default()
        ))
        .into()),
    }
}

pub(crate) fn prepare(dir: &Path, fs_type: &str) -> anyhow::Result<PreparedDir> {
    PreparedDir::prepare(dir, FILE_SIZE_BYTES, fs_type).map_err(|e| {
        let shown = dir.display();
        match e.raw_os_error() {
            Some(libc::EACCES | libc::EPERM) => {
                usage(format!("{shown} is not writable — choose a directory you can write to"))
            }
            Some(libc::EROFS) => usage(format!("{shown} is on a read-only file system — choose a writable directory")),
            Some(libc::ENOSPC | libc::EDQUOT) => {
                usage(format!("{shown} ran out of space preparing the {PREFIX}* test file — free some space"))
            }
            _ => anyhow::anyhow!("preparing the test file in {shown}: {e}"),
        }
    })
}

fn run_all(cases: &[Case], budget: &RunBudget, target: &Target<'_>) -> Vec<CaseResult> {
    let bar = output::stderr_is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(cases.len() as u64);
        let style = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar
    });
    let results = cases
        .iter()
        .map(|case| {
            if let Some(bar) = &bar {
                bar.set_message(format!("{} {}", case.section.name(), case.label.trim()));
            }
            let result = run_case(case, budget, target);
            if let Some(bar) = &bar {
                bar.inc(1);
            }
            result
        })
        .collect();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    results
}

fn render_text(
    opts: &Options,
    env: &probe::Environment,
    verdicts: &[crate::verdict::Verdict],
    results: &[CaseResult],
) -> String {
    let timing = if opts.mock.is_some() { " (MOCK TIMING: numbers are simulated, not measured)" } else { "" };
    // What the numbers are about first: the same tree `probe` prints and the verdicts that follow from the
    // environment alone; then the tables; then the verdicts that need the measurements (an implausible
    // flush rate, fsync much slower than fdatasync, CPU steal).
    let (from_env, from_results) = split_verdicts(env, verdicts);
    let mut text = format!("syncbench run{timing}\n{}", probe::render::environment_tree(env));
    if !from_env.is_empty() || from_results.is_empty() {
        text.push('\n');
        text.push_str(&probe::render::verdict_list(&from_env));
        text.push('\n');
    }
    text.push_str(&format!(
        "{} cases, up to {} s each, pattern {}\n",
        results.len(),
        opts.budget.case_secs,
        opts.plan.pattern.name()
    ));
    text.push_str(&crate::table::render(results, opts.plan.size_bytes, opts.histogram));
    if !from_results.is_empty() {
        text.push('\n');
        let list = probe::render::verdict_list(&from_results);
        let items = list.strip_prefix("verdicts:").unwrap_or(&list);
        text.push_str(&format!("verdicts from the measurements:{items}"));
    }
    text
}

/// The verdicts the rules give for the environment alone (no measurements), and the rest: those that
/// needed the results, in the order given (most severe first).
fn split_verdicts(
    env: &probe::Environment,
    verdicts: &[crate::verdict::Verdict],
) -> (Vec<crate::verdict::Verdict>, Vec<crate::verdict::Verdict>) {
    let env_only = probe::verdicts(env, &[]);
    verdicts.iter().cloned().partition(|v| env_only.contains(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path) -> Args {
        Args { dir: dir.to_path_buf(), pattern: "sequential".into(), ..Args::default() }
    }

    fn message(result: anyhow::Result<Options>) -> String {
        let err = result.unwrap_err();
        assert!(err.downcast_ref::<crate::exit::UsageError>().is_some(), "{err}");
        let text = err.to_string();
        assert!(!text.contains('\n'), "{text}");
        text
    }

    #[test]
    fn defaults() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = Options::from_args(&args(tmp.path())).unwrap();
        assert_eq!(opts.budget.case_secs, RunBudget::DEFAULT_CASE_SECS);
        assert_eq!(opts.plan, PlanOptions::default());
        let quick = Options::from_args(&Args { quick: true, ..args(tmp.path()) }).unwrap();
        assert_eq!(quick.budget.case_secs, RunBudget::QUICK_CASE_SECS);
    }

    #[test]
    fn bad_values_are_one_line_each() {
        let tmp = tempfile::tempdir().unwrap();
        let a = || args(tmp.path());
        for secs in ["0", "-1", "abc", "NaN", "inf", "3601"] {
            assert!(message(Options::from_args(&Args { secs: Some(secs.into()), ..a() })).contains("--secs"));
        }
        for size in ["0", "511", "2M", "8q", ""] {
            assert!(message(Options::from_args(&Args { size: Some(size.into()), ..a() })).contains("--size"));
        }
        let m = message(Options::from_args(&Args { methods: Some("fsync,fsnyc".into()), ..a() }));
        assert!(m.contains("\"fsnyc\"") && m.contains("open_datasync+direct"), "{m}");
        assert!(message(Options::from_args(&Args { sections: Some("a,z".into()), ..a() })).contains("\"z\""));
        assert!(message(Options::from_args(&Args { sections: Some("".into()), ..a() })).contains("--sections"));
        assert!(message(Options::from_args(&Args { pattern: "random".into(), ..a() })).contains("--pattern"));
        let none_left = Args { sections: Some("d".into()), methods: Some("write".into()), ..a() };
        assert!(message(Options::from_args(&none_left)).contains("no case left"));
        let exports = ExportArgs { json: Some(tmp.path().join("missing/out.json")), ..ExportArgs::default() };
        let bad_json = Args { exports, ..a() };
        assert!(message(Options::from_args(&bad_json)).contains("--json"));
        let both = ExportArgs { json: Some("-".into()), csv: Some("-".into()), ..ExportArgs::default() };
        assert!(message(Options::from_args(&Args { exports: both, ..a() })).contains("stdout"));
    }

    #[test]
    fn environment_verdicts_come_before_the_tables_measured_ones_after() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = Options::from_args(&Args { mock_timing: Some("1".into()), ..args(tmp.path()) }).unwrap();
        let disk = probe::Device {
            name: "sda".into(),
            kind: "disk".into(),
            rotational: Some(true),
            write_cache: Some("write back".into()),
            fua: Some(true),
            ..probe::Device::default()
        };
        let env = probe::Environment {
            dir: "/data".into(),
            fs_type: "ext4".into(),
            fs_magic: 0xEF53,
            mount_options: vec!["rw".into(), "nobarrier".into()],
            devices: vec![disk],
            ..probe::Environment::default()
        };
        let result = CaseResult {
            section: "one_write".into(),
            method: "fdatasync".into(),
            label: "fdatasync".into(),
            durable: true,
            supported: true,
            write_size_bytes: 8192,
            writes_per_commit: 1,
            file_state: "overwrite".into(),
            ops: 5000,
            ops_per_s: 5000.0,
            ..CaseResult::default()
        };
        let results = vec![result];
        let verdicts = probe::verdicts(&env, &results);
        let text = render_text(&opts, &env, &verdicts, &results);
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("no {needle:?} in\n{text}"));
        // nobarrier follows from the mount options alone; the flush rate needs the measurement.
        assert!(at("/data") < at("[flushes_disabled]"), "{text}");
        assert!(at("[flushes_disabled]") < at("1 cases, up to"), "{text}");
        assert!(at("1 cases, up to") < at("(a) "), "{text}");
        assert!(at("(a) ") < at("verdicts from the measurements:"), "{text}");
        assert!(at("verdicts from the measurements:") < at("[implausible_flush_rate]"), "{text}");
        assert_eq!(text.matches("[flushes_disabled]").count(), 1, "{text}");
        assert_eq!(text.matches("[implausible_flush_rate]").count(), 1, "{text}");
        // Nothing at all to report is said once, before the tables.
        let quiet = probe::Environment { mount_options: vec!["rw".into()], devices: vec![], ..env.clone() };
        let quiet_disk = probe::Device { rotational: Some(false), ..probe::Device::default() };
        let quiet = probe::Environment { devices: vec![quiet_disk], ..quiet };
        let none = render_text(&opts, &quiet, &probe::verdicts(&quiet, &results), &results);
        assert!(none.find("verdicts: nothing to report").unwrap() < none.find("(a) ").unwrap(), "{none}");
        assert!(!none.contains("verdicts from the measurements"), "{none}");
    }

    #[test]
    fn bad_directories_are_one_line_each() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        assert!(message(Options::from_args(&args(&missing))).contains("existing directory"));
        let file = tmp.path().join("file");
        std::fs::write(&file, b"").unwrap();
        assert!(message(Options::from_args(&args(&file))).contains("not a directory"));
    }
}
