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
/// The most a state file holds, whatever the watch has seen: at most [`super::detect::BASELINE_MAX`] +
/// [`super::detect::RELEARN`] intervals of three cases × two numbers, every verdict code there is, five facts of
/// [`super::interval::FACT_BYTES_MAX`] each, the range seen ([`super::detect::SEEN_MAX`] values of 4 digits
/// per case and number), and two histories of [`DUTY_HISTORY`]; the directory's path up to PATH_MAX. A unit test fills every one of them to the brim and checks the file stays under this.
pub const STATE_BYTES_MAX: usize = 128 * 1024;

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
    /// (seconds the lowest device was busy while the interval measured, seconds of wall time), newest
    /// last; absent in states written before it.
    #[serde(default)]
    pub device_busy: Vec<(f64, f64)>,
    /// Sums over every interval since the state was created (the duty check over a long run).
    #[serde(default)]
    pub totals: Totals,
    /// The newest interval, whose wall time (until the next one starts, in this process or the next
    /// `--once`) is not known yet: it joins the duty history when the next interval starts.
    #[serde(default)]
    pub pending: Option<Pending>,
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
            device_busy: Vec::new(),
            totals: Totals::default(),
            pending: None,
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
        // A bug, not a user's problem: never let the file grow without limit on a machine that runs for years.
        anyhow::ensure!(
            json.len() <= STATE_BYTES_MAX,
            "the state is {} bytes, over its bound of {STATE_BYTES_MAX}: not saved (a bug; please report it)",
            json.len()
        );
        write_atomically(path, json.as_bytes())
    }

    /// An interval that started at `started_unix_s` measured for `measure_secs` and kept the lowest device
    /// busy for `device_busy_secs` (None when unknown: no block device, e.g. tmpfs). The previous one's
    /// wall time is now known (from its start to this start): it joins the duty history. Why not this
    /// one's own: its wall time includes the sleep after it, which has not happened yet; pairing it with
    /// the time since the previous start counted the first interval against one `--every` and the last
    /// one's sleep never (a lab run read 0.501 at `--duty 50%`).
    pub fn measured(&mut self, measure_secs: f64, device_busy_secs: Option<f64>, started_unix_s: f64) {
        if let Some(previous) = self.pending.take() {
            let wall_secs = started_unix_s - previous.started_unix_s;
            // A clock stepped backwards gives no wall time to count.
            if wall_secs.is_finite() && wall_secs > 0.0 {
                self.record_duty(previous.measure_secs, wall_secs, previous.device_busy_secs);
            }
        }
        self.pending = Some(Pending { measure_secs, device_busy_secs, started_unix_s });
    }

    /// Record one interval's measuring time, its wall time (from its start to the next one's) and how long
    /// the lowest device was busy while it measured (None when unknown).
    pub fn record_duty(&mut self, measure_secs: f64, wall_secs: f64, device_busy_secs: Option<f64>) {
        push_bounded(&mut self.duty, (measure_secs, wall_secs));
        self.totals.wall_secs += wall_secs;
        self.totals.measure_secs += measure_secs;
        if let Some(busy) = device_busy_secs {
            push_bounded(&mut self.device_busy, (busy, wall_secs));
            self.totals.device_busy_secs += busy;
            self.totals.device_wall_secs += wall_secs;
        }
    }

    /// Seconds the lowest device was busy while watch measured ÷ seconds of wall time, over the kept
    /// history: the duty as the device's own counter (`io_ticks`) sees it. Other I/O in the same windows
    /// counts too, so on a shared disk it is an upper bound of the canary's share.
    pub fn device_busy_ratio(&self) -> Option<f64> {
        let wall: f64 = self.device_busy.iter().map(|(_, w)| w).sum();
        let busy: f64 = self.device_busy.iter().map(|(b, _)| b).sum();
        (wall > 0.0).then(|| busy / wall)
    }

    /// Seconds measuring ÷ seconds of wall time over the kept history (None before two intervals).
    pub fn duty_ratio(&self) -> Option<f64> {
        let wall: f64 = self.duty.iter().map(|(_, w)| w).sum();
        let measuring: f64 = self.duty.iter().map(|(m, _)| m).sum();
        (wall > 0.0).then(|| measuring / wall)
    }
}

/// An interval whose wall time is not known yet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// Time spent measuring.
    pub measure_secs: f64,
    /// Time the lowest device was busy meanwhile, when known.
    pub device_busy_secs: Option<f64>,
    /// Unix time it started.
    pub started_unix_s: f64,
}

/// Sums over every interval of a state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Wall time covered (each interval's time since the previous start).
    pub wall_secs: f64,
    /// Time spent measuring.
    pub measure_secs: f64,
    /// Time the lowest device was busy while watch measured.
    pub device_busy_secs: f64,
    /// Wall time of the intervals whose device busy time is known.
    pub device_wall_secs: f64,
}

fn push_bounded(list: &mut Vec<(f64, f64)>, item: (f64, f64)) {
    list.push(item);
    if list.len() > DUTY_HISTORY {
        list.remove(0);
    }
}

/// Write `bytes` to `path` through a temporary file in the same directory, synced, then renamed over it:
/// a reader sees the old file or the new one, never half of one. The temporary file is registered for
/// removal on a signal.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp: PathBuf = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let write = || -> std::io::Result<crate::core::cleanup::Created> {
        let (guard, mut file) = crate::core::cleanup::Created::create(tmp.clone(), |p| {
            std::fs::OpenOptions::new().write(true).create_new(true).open(p)
        })?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()?;
        Ok(guard) // dropped after the rename, it removes nothing: the name is gone
    };
    write().map(drop).map_err(|e| anyhow::anyhow!("writing {}: {}", path.display(), crate::core::workdir::reason(&e)))
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
        state.record_duty(0.5, 50.0, Some(0.25));
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
    fn each_interval_is_paired_with_its_own_wall_time() {
        let mut state = State::new(Path::new("/d"));
        // Measuring 1 s, 2 s, 3 s; started at 0, 10, 30 s: the first two cycles are known, the third not.
        state.measured(1.0, Some(0.5), 1000.0);
        assert!(state.duty.is_empty() && state.duty_ratio().is_none());
        state.measured(2.0, None, 1010.0);
        state.measured(3.0, Some(1.0), 1030.0);
        assert_eq!(state.duty, vec![(1.0, 10.0), (2.0, 20.0)]);
        assert_eq!(state.device_busy, vec![(0.5, 10.0)]);
        assert!((state.duty_ratio().unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(state.pending.as_ref().map(|p| p.measure_secs), Some(3.0));
        // A clock stepped back: that cycle is not counted.
        state.measured(1.0, None, 900.0);
        assert_eq!(state.duty.len(), 2);
    }

    #[test]
    fn duty_history_is_bounded() {
        let mut state = State::new(Path::new("/d"));
        for _ in 0..1000 {
            state.record_duty(1.0, 100.0, Some(0.5));
        }
        assert_eq!((state.duty.len(), state.device_busy.len()), (DUTY_HISTORY, DUTY_HISTORY));
        assert!((state.duty_ratio().unwrap() - 0.01).abs() < 1e-9);
        assert!((state.device_busy_ratio().unwrap() - 0.005).abs() < 1e-9);
        assert!((state.totals.device_busy_secs - 500.0).abs() < 1e-6 && (state.totals.wall_secs - 1e5).abs() < 1e-3);
    }

    /// The worst an observation can be: every case and metric, every verdict code, five facts cut to the
    /// bound and made of quotes (each one escaped in JSON), numbers with the most digits JSON gives them.
    fn fullest_observation(i: usize) -> super::super::detect::Observation {
        use super::super::detect::{Metric, Observation};
        let mut o = Observation::default();
        for case in super::super::interval::CASE_NAMES {
            let m = [(Metric::LatencyP99, 0.012_345_678_901_234_5 + i as f64), (Metric::Rate, 1.234_567_890_123_4e-7)];
            o.values.insert(case.to_string(), m.into_iter().collect());
            o.device_ms.insert(case.to_string(), 0.012_345_678_901_234_5 + i as f64);
        }
        o.verdicts = crate::core::verdict::VerdictCode::ALL.iter().map(|c| c.name().to_string()).collect();
        for what in ["write_cache", "fua", "device_chain", "mount_options", "virtualization"] {
            o.facts.insert(what.into(), super::super::interval::bounded(&format!("{i}{}", "\"".repeat(4096))));
        }
        o
    }

    #[test]
    fn the_state_stays_under_its_bound_after_many_intervals_of_every_kind() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::path::PathBuf::from(format!("/{}", "d".repeat(4094)));
        let mut state = State::new(&dir);
        let mut largest = 0;
        for i in 0..2_000 {
            // Phases of steady, deviating and disturbed intervals, so the baseline, the deviating list and
            // the relearning all run many times.
            let mut o = fullest_observation(i);
            let level = if (i / 40) % 2 == 0 { 1.0 } else { 9.0 };
            for m in o.values.values_mut() {
                m.values_mut().for_each(|v| *v *= level);
            }
            o.disturbed = i % 17 == 0;
            state.memory.judge_and_learn(o);
            state.intervals += 1;
            state.record_duty(0.123_456_789_012_345_6, 300.123_456_789_012_3, Some(0.012_345_678_901_234_5));
            if i % 100 == 0 || i > 1_990 {
                let path = tmp.path().join("state.json");
                state.save(&path).unwrap();
                largest = largest.max(std::fs::metadata(&path).unwrap().len() as usize);
            }
        }
        eprintln!("largest state: {largest} bytes");
        assert!(largest <= STATE_BYTES_MAX, "{largest} bytes");
        // The bound is not loose by orders of magnitude either: the test reaches most of it.
        assert!(largest > STATE_BYTES_MAX / 2, "{largest} bytes: the bound or the test is off");
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
