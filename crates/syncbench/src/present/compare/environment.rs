//! What differs between the environments of the files: the first thing to check before believing a ratio.

use crate::core::environment::Environment;
use crate::core::verdict::Severity;
use crate::present::report::html::{device_line, virtualization_line};
use crate::present::report::input::RunFile;
use serde::Serialize;

/// One property that is not the same in every file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// What it is, e.g. `file system`, `mount options`.
    pub field: String,
    /// Its value in each file (in the order the files were given); `unknown` when a file does not say.
    pub values: Vec<String>,
}

/// The properties compared, each read from a file as one line of text.
fn properties(run: &RunFile) -> Vec<(&'static str, String)> {
    let env = &run.environment;
    let disk = env.devices.last();
    vec![
        ("directory", env.dir.clone()),
        ("kernel", env.kernel.clone()),
        ("file system", env.fs_type.clone()),
        ("mount source", env.mount_source.clone().unwrap_or_default()),
        ("mount options", env.mount_options.join(",")),
        ("device chain", env.devices.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(" → ")),
        ("device", disk.map(device_line).unwrap_or_default()),
        ("loop backing", loop_line(env)),
        ("virtualization", virtualization_line(env)),
        ("O_DIRECT alignment", dio_line(env)),
        ("atomic writes", atomic_line(env)),
        ("access pattern", run.pattern.map_or_else(String::new, |p| p.name().to_string())),
        ("syncbench version", run.version.clone()),
        ("verdicts", verdict_codes(run)),
    ]
}

/// Warnings and critical verdicts, e.g. `critical not_durable_tmpfs`: a ratio against a run whose writes were
/// not durable, or whose device cache absorbed flushes, says little about the storage.
fn verdict_codes(run: &RunFile) -> String {
    let codes: Vec<String> = run
        .verdicts
        .iter()
        .filter(|v| v.severity != Severity::Info)
        .map(|v| format!("{} {}", severity_name(v.severity), v.code))
        .collect();
    if codes.is_empty() { "none".into() } else { codes.join(", ") }
}

fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Critical => "critical",
    }
}

fn loop_line(env: &Environment) -> String {
    env.loop_backing.as_ref().map(|b| format!("{} on {}", b.file, b.fs_type)).unwrap_or_default()
}

fn dio_line(env: &Environment) -> String {
    match (env.dio_offset_align_bytes, env.dio_mem_align_bytes) {
        (Some(offset), Some(memory)) => format!("offset {offset} B, memory {memory} B"),
        (Some(offset), None) => format!("offset {offset} B"),
        _ => "not supported".into(),
    }
}

fn atomic_line(env: &Environment) -> String {
    match (env.atomic_write_unit_min_bytes, env.atomic_write_unit_max_bytes) {
        (Some(min), Some(max)) if max > 0 => format!("{min} to {max} B"),
        _ => "not supported".into(),
    }
}

/// Every property whose value is not the same in all files.
pub fn differences(runs: &[RunFile]) -> Vec<Difference> {
    let per_run: Vec<Vec<(&str, String)>> = runs.iter().map(properties).collect();
    let Some(first) = per_run.first() else { return Vec::new() };
    (0..first.len())
        .filter_map(|i| {
            let values: Vec<String> = per_run
                .iter()
                .map(|props| if props[i].1.is_empty() { "unknown".to_string() } else { props[i].1.clone() })
                .collect();
            let differs = values.windows(2).any(|w| w[0] != w[1]);
            differs.then(|| Difference { field: first[i].0.to_string(), values })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fs: &str, options: &[&str]) -> RunFile {
        RunFile {
            environment: Environment {
                kernel: "6.18.0".into(),
                fs_type: fs.into(),
                mount_options: options.iter().map(|s| s.to_string()).collect(),
                ..Environment::default()
            },
            ..RunFile::default()
        }
    }

    #[test]
    fn only_differing_properties_are_listed() {
        let diffs = differences(&[run("ext4", &["rw", "relatime"]), run("xfs", &["rw", "relatime"])]);
        assert_eq!(diffs, vec![Difference { field: "file system".into(), values: vec!["ext4".into(), "xfs".into()] }]);
    }

    #[test]
    fn identical_environments_have_no_differences() {
        assert!(differences(&[run("ext4", &["rw"]), run("ext4", &["rw"])]).is_empty());
    }

    #[test]
    fn a_missing_value_reads_as_unknown() {
        let diffs = differences(&[run("ext4", &["rw"]), run("ext4", &[])]);
        assert_eq!(diffs[0].field, "mount options");
        assert_eq!(diffs[0].values, vec!["rw".to_string(), "unknown".to_string()]);
    }
}
