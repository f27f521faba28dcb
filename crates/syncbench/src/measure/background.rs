//! `--background-writes RATE`: while commits are timed, another thread dirties data in a second file of
//! the same file system at RATE, as a database's checkpointer does, and leaves the write-back to the
//! kernel (no sync of its own). A commit's sync then competes with that write-back — "an fsync on a file
//! system can stall on other unrelated writes to the same file system".
//!
//! The writer writes 1 MiB chunks through the page cache into `.syncbench-background-*`, wrapping at
//! [`FILE_BYTES`], paced to RATE by sleeping until each chunk is due (`max`: no pacing; the kernel's dirty
//! throttling is then the limit). It runs in its own thread: the timed loop does nothing for it.
//!
//! A writer that fails (cannot start, or a write fails mid-run: the disk filled, a file size limit) does
//! not take the idle results with it: [`measure_under`] returns no results under writes and the writer's
//! error in [`BackgroundStats::error`]; the commands report the idle part in full, the under-writes part
//! as failed, print the error as one line on stderr and exit 1 ([`failure_exit`]). Results measured while
//! a writer had died are dropped, not shown: they would be labelled "under writes" without having been.

use crate::core::cleanup::{Created, unique_name};
use crate::core::exit::usage;
use crate::core::schema::{BackgroundRun, BackgroundStats};
use std::io;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use syncbench_sys::OpenFlags;

/// Size of the background file: it wraps there, so dirty data keeps coming without filling the disk.
pub const FILE_BYTES: u64 = 256 << 20;

/// Bytes per write of the background writer.
const CHUNK_BYTES: usize = 1 << 20;

/// Largest rate accepted (beyond it, `max` says what is meant).
const MAX_RATE_BYTES_PER_S: u64 = 100 << 30;

/// How fast the background writer dirties data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// Bytes per second.
    BytesPerS(u64),
    /// As fast as the kernel lets it (dirty throttling decides).
    Max,
}

impl Rate {
    /// The `--background-writes` option of `run` and `commit`: absent, or a rate [`Rate::parse`] accepts.
    pub fn from_option(text: Option<&str>) -> anyhow::Result<Option<Rate>> {
        text.map(|t| Rate::parse("--background-writes", t)).transpose()
    }

    /// `50MiB/s`, `50M`, `512k/s`, `max`. One-line usage error otherwise.
    pub fn parse(flag: &str, text: &str) -> anyhow::Result<Rate> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("max") {
            return Ok(Rate::Max);
        }
        let size = t.strip_suffix("/s").unwrap_or(t);
        match crate::core::units::parse_size(size) {
            Some(b) if b > 0 && b <= MAX_RATE_BYTES_PER_S => Ok(Rate::BytesPerS(b)),
            _ => Err(usage(format!(
                "invalid {flag} {text:?}: give a rate from 1 B/s to 100 GiB/s such as 50MiB/s or 512k, or `max`"
            ))),
        }
    }

    /// As the user would write it.
    pub fn name(self) -> String {
        match self {
            Rate::Max => "max".into(),
            Rate::BytesPerS(b) => format!("{}/s", crate::core::units::format_size(b)),
        }
    }
}

impl BackgroundStats {
    /// The stats of a writer that never ran.
    fn not_started(rate: Rate, error: String) -> BackgroundStats {
        BackgroundStats { rate: rate.name(), error: Some(error), ..BackgroundStats::default() }
    }
}

/// The exit code of a command that has reported everything: 0, or with `failed` (the error of its part
/// under writes) 1 ([`failure_exit`]).
pub fn exit_code(failed: Option<&str>) -> ExitCode {
    failed.map_or(ExitCode::SUCCESS, failure_exit)
}

/// After a command has reported everything: the one line on stderr naming a failed part under writes,
/// and exit code 1 (as a sync that failed during a run: what finished is reported, the rest failed).
pub fn failure_exit(error: &str) -> ExitCode {
    eprintln!("syncbench: {error}; the idle results are reported in full, none under background writes");
    ExitCode::from(1)
}

/// A running background writer; [`BackgroundWriter::stop`] ends it and removes its file.
pub struct BackgroundWriter {
    rate: Rate,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<(u64, Option<io::Error>)>,
    started: Instant,
    _file: Created,
}

impl BackgroundWriter {
    /// Create the file in `dir` and start writing at `rate`.
    pub fn start(dir: &Path, rate: Rate) -> io::Result<BackgroundWriter> {
        let path = dir.join(unique_name("background"));
        let (created, fd) = Created::create(path, |p| syncbench_sys::create_new(p, OpenFlags::BUFFERED))?;
        BackgroundWriter::start_on(fd, created, rate)
    }

    /// Start writing at `rate` to `fd`, the descriptor of `file`.
    fn start_on(fd: std::os::fd::OwnedFd, file: Created, rate: Rate) -> io::Result<BackgroundWriter> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("syncbench-background".into())
            .spawn(move || write_loop(&fd, rate, &flag))?;
        Ok(BackgroundWriter { rate, stop, thread, started: Instant::now(), _file: file })
    }

    /// Stop writing, wait for the thread, remove the file. A failed write is in [`BackgroundStats::error`].
    pub fn stop(self) -> BackgroundStats {
        self.stop.store(true, Ordering::Relaxed);
        let (bytes_written, error) = match self.thread.join() {
            Ok((bytes, None)) => (bytes, None),
            Ok((bytes, Some(e))) => {
                (bytes, Some(format!("the background writer failed after {} MiB: {e}", bytes >> 20)))
            }
            Err(_) => (0, Some("the background writer panicked".to_string())),
        };
        let duration_s = self.started.elapsed().as_secs_f64();
        BackgroundStats {
            rate: self.rate.name(),
            bytes_written,
            duration_s,
            bytes_per_s: bytes_written as f64 / duration_s.max(f64::MIN_POSITIVE),
            error,
        }
    }
}

/// Write until `stop`; the bytes written, and the error that ended it early.
fn write_loop(fd: &std::os::fd::OwnedFd, rate: Rate, stop: &AtomicBool) -> (u64, Option<io::Error>) {
    let chunk: Vec<u8> = (0..CHUNK_BYTES).map(|i| (i * 31 % 251) as u8 + 1).collect();
    let started = Instant::now();
    let mut written = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if let Rate::BytesPerS(per_s) = rate {
            // The next chunk is due when the bytes so far have taken their time at the rate.
            let due = Duration::from_secs_f64(written as f64 / per_s as f64);
            let now = started.elapsed();
            if due > now {
                std::thread::sleep((due - now).min(Duration::from_millis(50)));
                continue;
            }
        }
        if let Err(e) = syncbench_sys::pwrite_all(fd, &chunk, written % FILE_BYTES) {
            return (written, Some(e));
        }
        written += CHUNK_BYTES as u64;
    }
    (written, None)
}

impl BackgroundRun {
    /// Why the part under writes failed, if it did (its `results` are then empty).
    pub fn error(&self) -> Option<&str> {
        self.writer.error.as_deref()
    }
}

/// Measure every case again while a background writer dirties data in `dir` at `rate`.
pub fn run_cases(
    cases: &[crate::core::suite::Case],
    rounds: crate::measure::rounds::Schedule,
    budget: &crate::measure::runner::RunBudget,
    prepared: &crate::measure::runner::PreparedDir,
    dir: &Path,
    rate: Rate,
) -> BackgroundRun {
    let target = crate::measure::runner::Target::Disk(prepared);
    let (results, writer) = measure_under(dir, rate, || {
        no_failed_case(crate::measure::runner::run_plan(cases, rounds, budget, &target, None, &mut |_| {}))
    });
    BackgroundRun { writer, results: results.unwrap_or_default() }
}

/// A case whose sync failed under background writes fails the part under writes (marked FAILED, exit 1),
/// as it does idle: a failed sync is an error, never a row left out of the table. A case the file system
/// does not support (O_DIRECT on tmpfs) is not a failure.
pub fn no_failed_case(
    results: Vec<crate::core::schema::CaseResult>,
) -> anyhow::Result<Vec<crate::core::schema::CaseResult>> {
    match results.iter().find(|c| c.supported && c.error.is_some()) {
        Some(c) => Err(anyhow::anyhow!("{} {}: {}", c.section, c.label.trim(), c.error.as_deref().unwrap_or_default())),
        None => Ok(results),
    }
}

/// Run `measure` while a background writer dirties data in `dir` at `rate`; the writer is stopped (and its
/// file removed) whether `measure` succeeds or not. When the writer cannot start, a write of it fails or
/// `measure` fails, there is no result and the stats say why ([`BackgroundStats::error`]): the caller
/// still has its idle results to report.
pub fn measure_under<T>(
    dir: &Path,
    rate: Rate,
    measure: impl FnOnce() -> anyhow::Result<T>,
) -> (Option<T>, BackgroundStats) {
    measure_under_writer(BackgroundWriter::start(dir, rate), rate, measure)
}

/// [`measure_under`] with the writer given (started, or the error of starting it).
fn measure_under_writer<T>(
    writer: io::Result<BackgroundWriter>,
    rate: Rate,
    measure: impl FnOnce() -> anyhow::Result<T>,
) -> (Option<T>, BackgroundStats) {
    let writer = match writer {
        Ok(writer) => writer,
        Err(e) => {
            return (None, BackgroundStats::not_started(rate, format!("cannot start the background writer: {e}")));
        }
    };
    let measured = measure();
    let mut stats = writer.stop();
    match measured {
        Ok(measured) if stats.error.is_none() => (Some(measured), stats),
        Ok(_) => (None, stats),
        Err(e) => {
            stats.error.get_or_insert(format!("the measurement under background writes failed: {e:#}"));
            (None, stats)
        }
    }
}

/// Idle and under background writes side by side: latency percentiles and the device counts of both.
pub fn side_by_side(idle: &[crate::core::schema::CaseResult], under: &BackgroundRun) -> String {
    use std::fmt::Write;
    let w = &under.writer;
    if w.error.is_some() {
        return failed_part(w);
    }
    let mut out = format!(
        "\ncommit latency idle vs under background writes at {} (achieved {:.1} MiB/s, {} MiB dirtied; the kernel wrote it back):\n",
        w.rate,
        w.bytes_per_s / (1 << 20) as f64,
        w.bytes_written >> 20
    );
    let width =
        idle.iter().map(|c| c.label.chars().count() + c.section.to_string().len() + 1).max().unwrap_or(20).max(20);
    let _ = writeln!(
        out,
        "  {:<width$} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>7} {:>7} {:>8} {:>8}",
        "", "p50 idle", "p50 bg", "p99 idle", "p99 bg", "p999 idle", "p999 bg", "fl/c", "fl/c bg", "KiB/c", "KiB/c bg"
    );
    let us = |ns: u64| format!("{:.0}", ns as f64 / 1000.0);
    let per_commit = |c: &crate::core::schema::CaseResult| {
        c.device
            .as_ref()
            .and_then(|d| d.lowest_per_commit())
            .map_or(("-".into(), "-".into()), |p| (format!("{:.2}", p.flushes), format!("{:.1}", p.bytes / 1024.0)))
    };
    for (a, b) in idle.iter().zip(&under.results) {
        if a.ops == 0 || b.ops == 0 {
            continue;
        }
        let name = format!("{} {}", a.section, a.label.trim());
        let ((fa, ka), (fb, kb)) = (per_commit(a), per_commit(b));
        let (la, lb) = (&a.latency_ns, &b.latency_ns);
        let _ = writeln!(
            out,
            "  {name:<width$} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {fa:>7} {fb:>7} {ka:>8} {kb:>8}",
            us(la.p50),
            us(lb.p50),
            us(la.p99),
            us(lb.p99),
            us(la.p999),
            us(lb.p999),
        );
    }
    out.push_str("  (µs; fl/c, KiB/c: flushes and KiB per commit at the lowest disk, the writer's write-back included under bg)\n");
    out
}

/// The under-writes part of the text when it failed (what was asked, and why there is nothing to show);
/// empty when it did not.
pub fn failed_part(writer: &BackgroundStats) -> String {
    writer.error.as_ref().map_or(String::new(), |error| {
        format!("\ncommit latency under background writes at {}: FAILED, not measured: {error}\n", writer.rate)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_bad_ones_are_usage_errors() {
        assert_eq!(Rate::parse("--background-writes", "50MiB/s").unwrap(), Rate::BytesPerS(50 << 20));
        assert_eq!(Rate::parse("--background-writes", "512k").unwrap(), Rate::BytesPerS(512 << 10));
        assert_eq!(Rate::parse("--background-writes", "MAX").unwrap(), Rate::Max);
        for bad in ["", "0", "fast", "-5M", "50MiB/min", "200GiB/s"] {
            let e = Rate::parse("--background-writes", bad).unwrap_err();
            assert!(e.downcast_ref::<crate::core::exit::UsageError>().is_some(), "{bad}: {e}");
            assert!(e.to_string().contains("invalid --background-writes"), "{e}");
        }
        assert_eq!(Rate::BytesPerS(50 << 20).name(), "50 MiB/s");
    }

    #[test]
    fn the_writer_keeps_its_rate_and_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let w = BackgroundWriter::start(dir.path(), Rate::BytesPerS(20 << 20)).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        std::thread::sleep(Duration::from_millis(300));
        let s = w.stop();
        assert_eq!(s.error, None);
        // 20 MiB/s for ~0.3 s is ~6 MiB: paced, so never far beyond the rate.
        assert!(s.bytes_written >= 1 << 20 && s.bytes_per_s <= 2.0 * (20 << 20) as f64, "{s:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// A writer on a descriptor opened read-only: its first write fails (EBADF), as a write of a full disk
    /// or beyond a file size limit fails mid-run.
    fn failing_writer(dir: &Path) -> BackgroundWriter {
        let path = dir.join(".syncbench-background-test");
        std::fs::write(&path, b"").unwrap();
        let fd: std::os::fd::OwnedFd = std::fs::File::open(&path).unwrap().into();
        let writer = BackgroundWriter::start_on(fd, Created::register(path), Rate::Max).unwrap();
        while !writer.thread.is_finished() {
            std::thread::yield_now(); // until it has failed: no race with the stop flag
        }
        writer
    }

    #[test]
    fn a_failed_writer_or_measurement_leaves_no_result_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let (measured, stats) = measure_under_writer(Ok(failing_writer(dir.path())), Rate::Max, || Ok(42));
        assert_eq!(measured, None, "a result measured beside a dead writer is not one under writes");
        let error = stats.error.unwrap();
        assert!(error.starts_with("the background writer failed after 0 MiB: Bad file descriptor"), "{error}");
        let refused = io::Error::from_raw_os_error(libc::ENOSPC);
        let (measured, stats) = measure_under_writer::<u32>(Err(refused), Rate::Max, || panic!("not measured"));
        assert_eq!((measured, stats.rate.as_str()), (None, "max"));
        assert!(stats.error.unwrap().starts_with("cannot start the background writer: No space left"));
        let (measured, stats) =
            measure_under::<u32>(dir.path(), Rate::BytesPerS(1 << 20), || Err(anyhow::anyhow!("the log failed")));
        assert_eq!(measured, None);
        assert_eq!(stats.error.unwrap(), "the measurement under background writes failed: the log failed");
        let (measured, stats) = measure_under(dir.path(), Rate::BytesPerS(1 << 20), || Ok(7));
        assert_eq!((measured, stats.error), (Some(7), None));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "every writer's file removed");
    }

    #[test]
    fn a_case_whose_sync_failed_fails_the_part_under_writes_an_unsupported_one_does_not() {
        use crate::core::schema::CaseResult;
        let ok = CaseResult { supported: true, ops: 10, label: "1 × 8192 B fdatasync".into(), ..Default::default() };
        let unsupported = CaseResult { supported: false, error: Some("EINVAL: O_DIRECT".into()), ..Default::default() };
        let failed = CaseResult { supported: true, error: Some("fdatasync: Input/output error".into()), ..ok.clone() };
        assert_eq!(no_failed_case(vec![ok.clone(), unsupported.clone()]).unwrap().len(), 2);
        let error = no_failed_case(vec![ok, unsupported, failed]).unwrap_err().to_string();
        assert!(error.ends_with("1 × 8192 B fdatasync: fdatasync: Input/output error"), "{error}");
    }

    #[test]
    fn a_failed_part_is_reported_as_failed_not_as_a_table() {
        let writer = BackgroundStats::not_started(Rate::Max, "cannot start the background writer: x".into());
        let run = BackgroundRun { writer, results: Vec::new() };
        assert_eq!(run.error(), Some("cannot start the background writer: x"));
        let text = side_by_side(&[], &run);
        assert_eq!(
            text,
            "\ncommit latency under background writes at max: FAILED, not measured: cannot start the background writer: x\n"
        );
    }
}
