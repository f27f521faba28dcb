//! The state file (`--state FILE`): what `watch` remembers between intervals and between `--once` runs —
//! the baseline, the recent duty, and which textfile it writes. Bounded in size (the baseline holds at
//! most [`super::detect::BASELINE_MAX`] intervals, the duty history [`DUTY_HISTORY`]), written atomically.
//!
//! syncbench never writes to a file it did not create: an existing state file must carry this schema and
//! the same watched directory, and an existing textfile must hold only `syncbench_` samples, or the watch is
//! refused before it measures anything.

use super::detect::Memory;
use crate::core::exit::usage;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The schema string of the state file.
pub const SCHEMA: &str = "syncbench/watch-state/v1";
/// Intervals whose measuring and wall time are kept for the duty figure.
pub const DUTY_HISTORY: usize = 24;

/// Everything `watch` keeps between intervals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// [`SCHEMA`].
    pub schema: String,
    /// The watched directory (absolute).
    pub dir: String,
    /// Intervals measured since the state was created.
    pub intervals: u64,
    /// Unix time the last interval finished.
    pub last_finished_unix_s: f64,
    /// (seconds measuring, seconds of wall time since the previous interval), newest last.
    pub duty: Vec<(f64, f64)>,
    /// The baseline and recent deviations.
    pub memory: Memory,
}

impl State {
    /// A new state for `dir`.
    pub fn new(dir: &Path) -> State {
        State {
            schema: SCHEMA.to_string(),
            dir: dir.display().to_string(),
            intervals: 0,
            last_finished_unix_s: 0.0,
            duty: Vec::new(),
            memory: Memory::default(),
        }
    }

    /// Read `path` if it exists (a new state otherwise). A file that is not a watch state of `dir` is a
    /// usage error: it is not ours to overwrite.
    pub fn load(path: &Path, dir: &Path) -> anyhow::Result<State> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::new(dir)),
            Err(e) => return Err(usage(format!("cannot read --state {}: {e}", path.display()))),
        };
        let state: State = serde_json::from_str(&text).map_err(|_| {
            usage(format!(
                "--state {} exists and is not a syncbench watch state file — give a new path",
                path.display()
            ))
        })?;
        if state.schema != SCHEMA {
            return Err(usage(format!("--state {} has schema {:?}, not {SCHEMA}", path.display(), state.schema)));
        }
        if state.dir != dir.display().to_string() {
            return Err(usage(format!(
                "--state {} belongs to a watch of {}, not {} — give one state file per watched directory",
                path.display(),
                state.dir,
                dir.display()
            )));
        }
        Ok(state)
    }

    /// Write the state to `path` atomically.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let json = serde_json::to_string(self)?;
        write_atomically(path, json.as_bytes())
    }

    /// Record one interval's measuring time and the wall time since the previous one.
    pub fn record_duty(&mut self, measure_secs: f64, wall_secs: f64) {
        self.duty.push((measure_secs, wall_secs));
        if self.duty.len() > DUTY_HISTORY {
            self.duty.remove(0);
        }
    }

    /// Seconds measuring ÷ seconds of wall time over the kept history (None before two intervals).
    pub fn duty_ratio(&self) -> Option<f64> {
        let wall: f64 = self.duty.iter().map(|(_, w)| w).sum();
        let measuring: f64 = self.duty.iter().map(|(m, _)| m).sum();
        (wall > 0.0).then(|| measuring / wall)
    }
}

/// Write `bytes` to `path` through a temporary file in the same directory, synced, then renamed over it:
/// a reader sees the old file or the new one, never half of one. The temporary file is registered for
/// removal on a signal.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp: PathBuf = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let guard = crate::core::cleanup::Created::register(tmp.clone());
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    let result = write();
    drop(guard); // after a rename it removes nothing: the name is gone
    result.map_err(|e| anyhow::anyhow!("writing {}: {}", path.display(), crate::core::workdir::reason(&e)))
}

/// Refuse a textfile destination that exists and holds anything but `syncbench_` samples (someone
/// else's metrics): `watch` replaces that file every interval.
pub fn check_textfile(path: &Path) -> anyhow::Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(usage(format!("cannot read --openmetrics {}: {e}", path.display()))),
    };
    let foreign = text.lines().any(|l| {
        let l = l.trim();
        !(l.is_empty() || l.starts_with('#') || l.starts_with("syncbench_"))
    });
    if foreign {
        return Err(usage(format!(
            "--openmetrics {} exists and holds metrics syncbench did not write — give a new file name",
            path.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_round_trips_and_refuses_other_files() {
        let tmp = tempfile::tempdir().unwrap();
        let (path, dir) = (tmp.path().join("state.json"), tmp.path().join("d"));
        let mut state = State::load(&path, &dir).unwrap();
        state.intervals = 7;
        state.record_duty(0.5, 50.0);
        state.save(&path).unwrap();
        assert_eq!(State::load(&path, &dir).unwrap(), state);
        let other = State::load(&path, Path::new("/elsewhere")).unwrap_err().to_string();
        assert!(other.contains("belongs to a watch of"), "{other}");
        std::fs::write(&path, "{\"some\": \"other file\"}").unwrap();
        assert!(State::load(&path, &dir).unwrap_err().to_string().contains("not a syncbench watch state"));
        // Only the destination and nothing else is left in the directory.
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
    }

    #[test]
    fn duty_history_is_bounded() {
        let mut state = State::new(Path::new("/d"));
        for _ in 0..1000 {
            state.record_duty(1.0, 100.0);
        }
        assert_eq!(state.duty.len(), DUTY_HISTORY);
        assert!((state.duty_ratio().unwrap() - 0.01).abs() < 1e-9);
    }

    #[test]
    fn a_textfile_with_foreign_metrics_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.prom");
        assert!(check_textfile(&path).is_ok());
        std::fs::write(&path, "# TYPE syncbench_watch_up gauge\nsyncbench_watch_up{dir=\"/d\"} 1\n# EOF\n").unwrap();
        assert!(check_textfile(&path).is_ok());
        std::fs::write(&path, "node_cpu_seconds_total 3\n").unwrap();
        assert!(check_textfile(&path).is_err());
    }
}
