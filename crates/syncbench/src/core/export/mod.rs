//! Exports of `run` results: JSON (schema `syncbench/v1`), CSV (one row per case, flat columns) and
//! Markdown (one table per section). One file per format, like hyperfine; `-` means stdout.

mod csv;
mod json;
pub(crate) mod markdown;
pub mod openmetrics;

pub use self::csv::to_csv;
pub use self::json::{parse_any, read_any, read_run, to_json};
pub use self::markdown::to_markdown;

use crate::core::exit::usage;
use crate::core::schema::{Envelope, RunPayload};
use std::path::{Path, PathBuf};

/// The export flags every measuring command shares.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExportArgs {
    /// Write the results as JSON (schema syncbench/v1) to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the results as CSV (one row per case) to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the results as Markdown tables to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the headline numbers as OpenMetrics gauges with labels to FILE (e.g. the node_exporter
    /// textfile collector's directory/syncbench.prom), or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub openmetrics: Option<PathBuf>,
}

impl ExportArgs {
    /// Check every target before anything runs: a parent directory must exist, the target must not be a
    /// directory, and at most one export may go to stdout.
    pub fn validate(&self) -> anyhow::Result<()> {
        let targets = self.targets();
        let to_stdout = targets.iter().filter(|(_, p)| *p == Path::new("-")).count();
        if to_stdout > 1 {
            return Err(usage(
                "only one of --json, --csv, --markdown, --openmetrics can write to stdout (-); give the others a file",
            ));
        }
        for (flag, path) in targets {
            validate_target(flag, path)?;
        }
        Ok(())
    }

    /// Whether any export was asked for (so a command can skip collecting what only exports carry).
    pub fn any(&self) -> bool {
        !self.targets().is_empty()
    }

    /// Whether any export writes to stdout (then the human-readable table goes to stderr).
    pub fn uses_stdout(&self) -> bool {
        self.targets().iter().any(|(_, p)| *p == Path::new("-"))
    }

    fn targets(&self) -> Vec<(&'static str, &Path)> {
        let mut out = Vec::new();
        let all = [
            ("--json", &self.json),
            ("--csv", &self.csv),
            ("--markdown", &self.markdown),
            ("--openmetrics", &self.openmetrics),
        ];
        for (flag, path) in all {
            if let Some(p) = path {
                out.push((flag, p.as_path()));
            }
        }
        out
    }
}

/// One export destination, checked before anything is measured: not a directory, its directory exists,
/// and this process can write there (a file that exists must be writable too).
pub fn validate_target(flag: &str, path: &Path) -> anyhow::Result<()> {
    if path == Path::new("-") {
        return Ok(());
    }
    if path.is_dir() {
        return Err(usage(format!("{flag} {}: is a directory; give a file name", path.display())));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(usage(format!("{flag} {}: directory {} does not exist", path.display(), parent.display())));
    }
    let target = if path.exists() { path } else { parent };
    if let Err(e) = syncbench_sys::check_writable(target) {
        let why = match e.raw_os_error() {
            Some(libc::EROFS) => "is on a read-only file system".to_string(),
            Some(libc::EACCES | libc::EPERM) => "is not writable (permission denied)".to_string(),
            _ => format!("cannot be written ({e})"),
        };
        return Err(usage(format!(
            "{flag} {}: {} {why} — choose a writable location before measuring",
            path.display(),
            target.display()
        )));
    }
    Ok(())
}

/// What a command's payload gives the exporters: JSON comes from serde, CSV, Markdown and OpenMetrics
/// from here. Every measuring command implements it once; [`write_all`] writes whatever the flags asked for.
pub trait Exportable: serde::Serialize + Sized {
    /// CSV: one row per measured point, flat columns, units at the end of the names.
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String>;
    /// Markdown tables.
    fn markdown(doc: &Envelope<Self>) -> String;
    /// The headline numbers as metric families (labels say which case, point or row).
    fn metrics(doc: &Envelope<Self>) -> Vec<openmetrics::Family>;
    /// Interrupted before everything ran (its Markdown then opens with [`crate::core::partial::MARKER`]).
    fn partial(&self) -> bool {
        false
    }
}

impl Exportable for RunPayload {
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String> {
        to_csv(&doc.payload.results)
    }
    fn markdown(doc: &Envelope<Self>) -> String {
        to_markdown(doc)
    }
    fn metrics(doc: &Envelope<Self>) -> Vec<openmetrics::Family> {
        openmetrics::run_families(&doc.payload.results)
    }
    fn partial(&self) -> bool {
        self.partial
    }
}

/// Write every requested export of a document.
pub fn write_all<T: Exportable>(doc: &Envelope<T>, targets: &ExportArgs) -> anyhow::Result<()> {
    if let Some(p) = &targets.json {
        crate::core::output::write_to(p, &to_json(doc)?)?;
    }
    if let Some(p) = &targets.csv {
        crate::core::output::write_to(p, &T::csv(doc)?)?;
    }
    if let Some(p) = &targets.markdown {
        let marker = doc.payload.partial().then(|| format!("**{}**\n\n", crate::core::partial::MARKER));
        crate::core::output::write_to(p, &(marker.unwrap_or_default() + &T::markdown(doc)))?;
    }
    if let Some(p) = &targets.openmetrics {
        crate::core::output::write_to(p, &openmetrics::render(doc, &T::metrics(doc)))?;
    }
    Ok(())
}

/// The human-readable output: to stdout, or to stderr when an export took stdout.
pub fn print_human(targets: &ExportArgs, text: &str) -> anyhow::Result<()> {
    if targets.uses_stdout() {
        eprint!("{text}");
        Ok(())
    } else {
        crate::core::output::write_to(Path::new("-"), text)
    }
}

/// A document as the export goldens pin it: a fixed start time, `environment`, and `command` as typed.
#[cfg(test)]
pub(crate) fn golden_doc<T>(
    environment: crate::core::environment::Environment,
    command: &str,
    payload: T,
) -> Envelope<T> {
    let mut doc = Envelope::new("2026-11-21T00:00:00Z".into(), environment, Vec::new(), payload);
    doc.command = command.into();
    doc
}

/// The environment of most goldens: `dir` on ext4.
#[cfg(test)]
pub(crate) fn ext4_at(dir: &str) -> crate::core::environment::Environment {
    crate::core::environment::Environment { dir: dir.into(), fs_type: "ext4".into(), ..Default::default() }
}

/// CSV, Markdown and OpenMetrics of one document, as the goldens compare them.
#[cfg(test)]
pub(crate) fn exports_of<T: Exportable>(doc: &Envelope<T>) -> [String; 3] {
    [T::csv(doc).expect("csv"), T::markdown(doc), openmetrics::render(doc, &T::metrics(doc))]
}

/// The goldens `{prefix}_csv`, `{prefix}_markdown` and `{prefix}_openmetrics` of one document, in the
/// calling module's snapshots (named as when they lived in `export/{prefix}.rs`).
#[cfg(test)]
macro_rules! assert_exports_golden {
    ($prefix:literal, $doc:expr) => {{
        let [csv, markdown, openmetrics] = $crate::core::export::exports_of($doc);
        assert_golden!(concat!("syncbench__export__", $prefix, "__tests__", $prefix, "_csv"), csv);
        assert_golden!(concat!("syncbench__export__", $prefix, "__tests__", $prefix, "_markdown"), markdown);
        assert_golden!(concat!("syncbench__export__", $prefix, "__tests__", $prefix, "_openmetrics"), openmetrics);
    }};
}

#[cfg(test)]
pub(crate) use assert_exports_golden;

#[cfg(test)]
mod tests;
