//! `syncbench commit`: what group commit buys. N client threads each append a record to the reference
//! write-ahead log and wait until it is durable, in a loop; one point per client count (and commit delay).
//! With `--no-group-commit` (or `--with-baseline`) every commit syncs its own write instead: the naive log.

use crate::cleanup::{Created, unique_name};
use crate::exit::{Outcome, usage};
use crate::export::ExportArgs;
use crate::probe::steal::StealMeter;
use crate::schema::{Envelope, LatencyNs};
use crate::verdict::{Severity, Verdict};
use crate::{output, probe};
use anyhow::Context;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use syncbench_engine::RealStorage;
use syncbench_engine::wal::{SyncMethod, Wal, WalConfig, WalError};

/// Flags of `syncbench commit`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to measure in; a `.syncbench-commit-*` directory is created there and removed after.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Client threads, comma-separated: one point per count [default: 1,2,4,8,16,32,64, or 1,4,16 with
    /// --quick].
    #[arg(long, value_delimiter = ',')]
    pub clients: Option<Vec<u32>>,
    /// How the log makes a write durable: fsync, fdatasync, open_datasync, open_datasync+direct,
    /// pwritev2_dsync, io_uring_fdatasync, or none (NOT durable, for comparison).
    #[arg(long, default_value = "fdatasync")]
    pub method: String,
    /// Payload bytes per commit record (the log adds a 40-byte header).
    #[arg(long, default_value_t = 256)]
    pub record_size: usize,
    /// Microseconds a group leader waits for more commits before it flushes (PostgreSQL's commit_delay),
    /// comma-separated: one point per value.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub commit_delay_us: Vec<u64>,
    /// The leader waits only if at least this many other commits are in progress (commit_siblings).
    #[arg(long, default_value_t = 5)]
    pub commit_siblings: u32,
    /// End the leader's commit delay early, as soon as this many commits (the leader included) wait for
    /// the next flush (MySQL's binlog_group_commit_sync_no_delay_count): a number, or `clients` for each
    /// point's client count. 0 = always wait the whole delay (PostgreSQL).
    #[arg(long, default_value = "0", value_parser = parse_delay_count)]
    pub commit_delay_count: DelayCount,
    /// After its own commit is durable, a group leader flushes up to this many more batches itself
    /// instead of waking another thread to lead (0 = PostgreSQL's behaviour).
    #[arg(long, default_value_t = 0)]
    pub leader_extra_batches: u32,
    /// Seconds to time each point (after a short warm-up). Default 3, or 1 with --quick.
    #[arg(long)]
    pub secs: Option<f64>,
    /// Measure the naive log instead: every commit does its own write and sync, one at a time.
    #[arg(long)]
    pub no_group_commit: bool,
    /// Measure both: the naive log and group commit, side by side for each client count.
    #[arg(long, conflicts_with = "no_group_commit")]
    pub with_baseline: bool,
    /// Short run: 1 second per point, and clients 1,4,16 unless --clients is given.
    #[arg(long)]
    pub quick: bool,
    /// Exports: --json, --csv (one row per point), --markdown (FILE or `-` for stdout).
    #[command(flatten)]
    pub export: ExportArgs,
}

/// `commit`'s JSON payload (inside the `syncbench/v1` envelope).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommitPayload {
    /// The directory measured.
    pub dir: String,
    /// The measurement.
    pub commit: CommitResults,
}

/// Every point of one `syncbench commit` run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommitResults {
    /// Sync method of the log.
    pub method: String,
    /// Whether an acknowledged commit is durable with this method.
    pub durable: bool,
    /// Payload bytes per record.
    pub record_size_bytes: u64,
    /// Batches a leader may flush beyond its own (`--leader-extra-batches`).
    pub leader_extra_batches: u32,
    /// Bytes per record in the log (header and padding included).
    pub record_log_bytes: u64,
    /// One entry per (commit delay, client count, group commit on/off).
    pub points: Vec<CommitPoint>,
}

/// One measured point.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CommitPoint {
    /// Client threads.
    pub clients: u32,
    /// Leader delay in microseconds.
    pub commit_delay_us: u64,
    /// The delay ended early once this many commits waited (0: never early).
    #[serde(default)]
    pub commit_delay_count: u32,
    /// Group commit (true) or the naive log (false).
    pub group_commit: bool,
    /// Commits started and finished inside the timed window.
    pub commits: u64,
    /// Commits per second.
    pub commits_per_s: f64,
    /// Durable flushes per second (a leader's write + sync; one O_DSYNC write for write-through methods).
    pub syncs_per_s: f64,
    /// Mean commits per flush (mean group size).
    pub commits_per_sync: f64,
    /// Mean time of one flush (the leader's write + sync), in nanoseconds.
    pub sync_latency_ns_mean: f64,
    /// Commit latency (append + wait until durable).
    pub latency_ns: LatencyNs,
    /// Seconds timed.
    pub duration_s: f64,
    /// Share of the CPU time the hypervisor took from this machine during the timed window (steal time
    /// in /proc/stat), in percent; absent where the kernel does not report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_steal_pct: Option<f64>,
}

/// When a delaying leader stops waiting early (`--commit-delay-count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayCount {
    /// Once this many commits wait (0: never early).
    Fixed(u32),
    /// Once as many commits wait as the point has clients.
    Clients,
}

fn parse_delay_count(text: &str) -> Result<DelayCount, String> {
    match text {
        "clients" => Ok(DelayCount::Clients),
        n => n.parse().map(DelayCount::Fixed).map_err(|_| format!("'{text}' is not a number or `clients`")),
    }
}

/// What to measure, validated.
#[derive(Clone, Debug, PartialEq)]
struct Plan {
    dir: PathBuf,
    method: SyncMethod,
    record_size: usize,
    commit_siblings: u32,
    leader_extra_batches: u32,
    secs: f64,
    points: Vec<PointSpec>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct PointSpec {
    clients: u32,
    commit_delay_us: u64,
    group_commit: bool,
    commit_delay_count: u32,
}

const MAX_CLIENTS: u32 = 1024;
const MAX_RECORD_BYTES: usize = 1 << 20;
const MAX_DELAY_US: u64 = 100_000; // PostgreSQL's range for commit_delay
const SEGMENT_BYTES: u64 = 16 << 20;
/// Segments the measurement may hold at once (current, preallocated, spares): checked against free space.
const SEGMENTS_IN_USE: u64 = 8;
const RECORD_KIND: u8 = 1;

/// Set by the Ctrl-C hook before the signal thread removes our files.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Run the command.
pub fn main(args: Args) -> Outcome {
    let plan = plan(&args)?;
    args.export.validate()?;
    check_dir(&plan.dir)?;
    let started_at = crate::schema::now_rfc3339();
    let environment = probe::collect(&plan.dir);
    crate::cleanup::on_signal(|| INTERRUPTED.store(true, Ordering::SeqCst));
    let root = Created::register(plan.dir.join(unique_name("commit")));
    std::fs::create_dir(root.path())
        .map_err(|e| usage(format!("cannot create a directory in {}: {e}", plan.dir.display())))?;
    let mut points = Vec::with_capacity(plan.points.len());
    for (i, spec) in plan.points.iter().enumerate() {
        if output::stderr_is_terminal() {
            eprintln!("syncbench commit: point {}/{}: {}", i + 1, plan.points.len(), describe(spec));
        }
        let point = measure(&plan, spec, &root.path().join(format!("point-{i}")));
        if INTERRUPTED.load(Ordering::SeqCst) {
            // Ctrl-C: the signal thread is removing our files (which may have failed this point) and
            // will exit with 130; returning now would race it with another exit code.
            loop {
                std::thread::park();
            }
        }
        points.push(point?);
    }
    drop(root);
    let payload = CommitPayload {
        dir: plan.dir.display().to_string(),
        commit: CommitResults {
            method: plan.method.name().to_string(),
            durable: plan.method.durable(),
            record_size_bytes: plan.record_size as u64,
            leader_extra_batches: plan.leader_extra_batches,
            record_log_bytes: syncbench_engine::wal::record::encoded_len(plan.record_size) as u64,
            points,
        },
    };
    let verdicts = verdicts(&plan, &environment, &payload.commit.points);
    let envelope = Envelope::new(started_at, environment, verdicts, payload);
    write_outputs(&args, &envelope)?;
    Ok(ExitCode::SUCCESS)
}

/// Validate the flags into a plan (pure: no file system access).
fn plan(args: &Args) -> anyhow::Result<Plan> {
    let method = SyncMethod::from_name(&args.method).ok_or_else(|| {
        let names: Vec<&str> = SyncMethod::ALL.iter().map(|m| m.name()).collect();
        usage(format!("unknown --method '{}'; use one of {}", args.method, names.join(", ")))
    })?;
    let default_clients = if args.quick { vec![1, 4, 16] } else { vec![1, 2, 4, 8, 16, 32, 64] };
    let clients = args.clients.clone().unwrap_or(default_clients);
    if let Some(&bad) = clients.iter().find(|&&c| c == 0 || c > MAX_CLIENTS) {
        return Err(usage(format!("--clients {bad} is out of range; use 1 to {MAX_CLIENTS}")));
    }
    if args.record_size == 0 || args.record_size > MAX_RECORD_BYTES {
        return Err(usage(format!("--record-size {} is out of range; use 1 to {MAX_RECORD_BYTES}", args.record_size)));
    }
    if let Some(&bad) = args.commit_delay_us.iter().find(|&&d| d > MAX_DELAY_US) {
        return Err(usage(format!("--commit-delay-us {bad} is too large; use 0 to {MAX_DELAY_US}")));
    }
    let secs = args.secs.unwrap_or(if args.quick { 1.0 } else { 3.0 });
    if !(secs.is_finite() && (0.05..=3600.0).contains(&secs)) {
        return Err(usage(format!("--secs {secs} is out of range; use 0.05 to 3600")));
    }
    let modes: &[bool] = match (args.no_group_commit, args.with_baseline) {
        (true, _) => &[false],
        (false, true) => &[false, true],
        (false, false) => &[true],
    };
    let mut points = Vec::new();
    for &commit_delay_us in &args.commit_delay_us {
        for &c in &clients {
            for &group_commit in modes {
                let commit_delay_count = delay_count(args.commit_delay_count, c, commit_delay_us, group_commit);
                points.push(PointSpec { clients: c, commit_delay_us, group_commit, commit_delay_count });
            }
        }
    }
    Ok(Plan {
        dir: args.dir.clone(),
        method,
        record_size: args.record_size,
        commit_siblings: args.commit_siblings,
        leader_extra_batches: args.leader_extra_batches,
        secs,
        points,
    })
}

/// DIR must be an existing, writable directory with room for the log's segments.
fn check_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(usage(format!("{} is not a directory; give a directory to measure in", dir.display()))),
        Err(e) => return Err(usage(format!("cannot use {}: {e}; give an existing directory", dir.display()))),
    }
    let need = SEGMENTS_IN_USE * SEGMENT_BYTES;
    match syncbench_sys::free_bytes(dir) {
        Ok(free) if free < need => Err(usage(format!(
            "{} has {} MiB free; syncbench commit needs {} MiB for its log",
            dir.display(),
            free >> 20,
            need >> 20
        ))),
        _ => Ok(()),
    }
}

fn describe(spec: &PointSpec) -> String {
    let mode = if spec.group_commit { "group commit" } else { "naive" };
    format!("{} clients, {mode}, commit_delay {} µs", spec.clients, spec.commit_delay_us)
}

/// A point's `commit_delay_count` (0 when there is no delay to end early).
fn delay_count(count: DelayCount, clients: u32, commit_delay_us: u64, group_commit: bool) -> u32 {
    match count {
        _ if commit_delay_us == 0 || !group_commit => 0,
        DelayCount::Fixed(n) => n,
        DelayCount::Clients => clients,
    }
}

fn wal_config(plan: &Plan, spec: &PointSpec) -> WalConfig {
    WalConfig {
        sync_method: plan.method,
        segment_bytes: SEGMENT_BYTES,
        preallocate_segments: 2,
        max_spare_segments: 4,
        group_commit: spec.group_commit,
        commit_delay: Duration::from_micros(spec.commit_delay_us),
        commit_siblings: plan.commit_siblings,
        commit_delay_count: spec.commit_delay_count,
        leader_extra_batches: plan.leader_extra_batches,
        ..WalConfig::default()
    }
}

/// What each client thread brings back.
struct ClientTally {
    latency: Histogram<u64>,
}

/// Run one point on a fresh log in `dir` (removed afterwards).
fn measure(plan: &Plan, spec: &PointSpec, dir: &Path) -> anyhow::Result<CommitPoint> {
    let (wal, _) = Wal::open(RealStorage, dir, wal_config(plan, spec)).map_err(|e| {
        usage(format!(
            "--method {} does not work in {}: {e}; pick another method",
            plan.method.name(),
            plan.dir.display()
        ))
    })?;
    let wal = Arc::new(wal);
    let warmup = Duration::from_secs_f64((plan.secs * 0.2).clamp(0.05, 1.0));
    let start_at = Instant::now() + warmup;
    let end_at = start_at + Duration::from_secs_f64(plan.secs);
    let stop = AtomicBool::new(false);
    let (tallies, window) = std::thread::scope(|scope| {
        let checkpointer = scope.spawn(|| recycle_segments(&wal, &stop));
        let clients: Vec<_> = (0..spec.clients)
            .map(|c| {
                let wal = &wal;
                scope.spawn(move || run_client(wal, c, plan.record_size, start_at, end_at))
            })
            .collect();
        let window = time_window(&wal, start_at, end_at);
        let tallies: Vec<Result<ClientTally, WalError>> =
            clients.into_iter().map(|h| h.join().expect("client thread panicked")).collect();
        stop.store(true, Ordering::Relaxed);
        let recycled = checkpointer.join().expect("checkpointer thread panicked");
        (tallies.into_iter().collect::<Result<Vec<_>, _>>().and_then(|t| recycled.map(|()| t)), window)
    });
    let tallies = tallies.context("the log failed during the measurement")?;
    drop(wal);
    std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    Ok(summarize(spec, &tallies, &window))
}

/// Counters at the start and end of the timed window.
struct Window {
    duration_s: f64,
    steal_pct: Option<f64>,
    flushes: u64,
    commits: u64,
    flush_ns: u64,
}

fn time_window<S: syncbench_engine::Storage>(wal: &Wal<S>, start_at: Instant, end_at: Instant) -> Window {
    std::thread::sleep(start_at.saturating_duration_since(Instant::now()));
    let (t0, s0, steal) = (Instant::now(), wal.stats(), StealMeter::start());
    std::thread::sleep(end_at.saturating_duration_since(Instant::now()));
    let (t1, s1) = (Instant::now(), wal.stats());
    Window {
        duration_s: (t1 - t0).as_secs_f64(),
        steal_pct: steal.pct(),
        flushes: s1.flushes - s0.flushes,
        commits: s1.commits - s0.commits,
        flush_ns: s1.flush_ns_total - s0.flush_ns_total,
    }
}

/// A database recycles log segments behind its checkpoints; so does the benchmark, so the disk use stays
/// bounded and new segments come from renamed spares rather than fresh zero-filled files.
fn recycle_segments<S: syncbench_engine::Storage>(wal: &Wal<S>, stop: &AtomicBool) -> Result<(), WalError> {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
        match wal.truncate_before(wal.flushed_lsn()) {
            Ok(_) => {}
            Err(e) if e.is_poisoned() => return Ok(()), // the clients report the failure
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One client: append a record, wait until durable, repeat until `end_at`. Commits that start inside
/// the window are timed.
fn run_client<S: syncbench_engine::Storage>(
    wal: &Wal<S>,
    client: u32,
    record_size: usize,
    start_at: Instant,
    end_at: Instant,
) -> Result<ClientTally, WalError> {
    let mut latency = new_histogram();
    let payload: Vec<u8> = (0..record_size).map(|i| (i as u32 ^ client) as u8).collect();
    loop {
        let began = Instant::now();
        if began >= end_at {
            return Ok(ClientTally { latency });
        }
        let lsn = wal.append(RECORD_KIND, &payload)?;
        wal.commit(lsn)?;
        if began >= start_at {
            let ns = began.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
            latency.saturating_record(ns.max(1));
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

fn summarize(spec: &PointSpec, tallies: &[ClientTally], window: &Window) -> CommitPoint {
    let mut all = new_histogram();
    for t in tallies {
        all.add(&t.latency).expect("same histogram bounds");
    }
    let commits = all.len();
    let duration_s = window.duration_s.max(f64::MIN_POSITIVE);
    CommitPoint {
        clients: spec.clients,
        commit_delay_us: spec.commit_delay_us,
        commit_delay_count: spec.commit_delay_count,
        group_commit: spec.group_commit,
        commits,
        commits_per_s: commits as f64 / duration_s,
        syncs_per_s: window.flushes as f64 / duration_s,
        commits_per_sync: per_flush(window.commits, window.flushes),
        sync_latency_ns_mean: per_flush(window.flush_ns, window.flushes),
        latency_ns: latency_summary(&all),
        duration_s: window.duration_s,
        cpu_steal_pct: window.steal_pct,
    }
}

/// A `cpu_steal` warning for the point that lost the most CPU time to the hypervisor, if it lost enough.
fn steal_verdict(points: &[CommitPoint]) -> Option<Verdict> {
    let (pct, worst) = points.iter().filter_map(|p| Some((p.cpu_steal_pct?, p))).max_by(|a, b| a.0.total_cmp(&b.0))?;
    let which = if points.len() > 1 { ", the worst of this run" } else { "" };
    probe::steal::verdict(pct, &format!("the {}-client point{which}", worst.clients))
}

fn per_flush(total: u64, flushes: u64) -> f64 {
    if flushes == 0 { 0.0 } else { total as f64 / flushes as f64 }
}

fn latency_summary(h: &Histogram<u64>) -> LatencyNs {
    if h.is_empty() {
        return LatencyNs::default();
    }
    LatencyNs {
        min: h.min(),
        mean: h.mean(),
        p50: h.value_at_quantile(0.5),
        p90: h.value_at_quantile(0.9),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
        stddev: h.stdev(),
    }
}

/// The probe's verdicts about DIR, plus one if the method itself is not durable and one if the hypervisor
/// took CPU time from the measurement (for the worst point).
fn verdicts(plan: &Plan, environment: &probe::Environment, points: &[CommitPoint]) -> Vec<Verdict> {
    let mut verdicts = probe::verdicts(environment, &[]);
    verdicts.extend(steal_verdict(points));
    if !plan.method.durable() {
        verdicts.push(Verdict {
            severity: Severity::Critical,
            code: "commit_not_durable".to_string(),
            message: "--method none never syncs: these commits would be lost on a power failure.".to_string(),
            advice: "Use it only as the upper bound; measure a durable method (e.g. fdatasync) for real numbers."
                .to_string(),
        });
    }
    verdicts
}

/// Exports as asked; the table goes to stdout, or to stderr when an export took stdout.
fn write_outputs(args: &Args, envelope: &Envelope<CommitPayload>) -> anyhow::Result<()> {
    let export = &args.export;
    let results = &envelope.payload.commit;
    if let Some(dest) = &export.json {
        output::write_to(dest, &(serde_json::to_string_pretty(envelope)? + "\n"))?;
    }
    if let Some(dest) = &export.csv {
        output::write_to(dest, &to_csv(results)?)?;
    }
    if let Some(dest) = &export.markdown {
        output::write_to(dest, &to_markdown(results))?;
    }
    let human = format!("{}\n{}", probe::render::header(&envelope.environment, &envelope.verdicts), to_table(results));
    if export.uses_stdout() {
        eprint!("{human}");
    } else {
        output::write_to(Path::new("-"), &human)?;
    }
    Ok(())
}

fn to_markdown(results: &CommitResults) -> String {
    let durability = if results.durable { "" } else { " (NOT durable: no sync at all)" };
    let mut md = format!(
        "## syncbench commit: {}, {}-byte records{durability}\n\n\
         | clients | commit_delay µs | log | commits/s | syncs/s | commits/sync | sync µs | p50 µs | p99 µs | p99.9 µs | max µs | steal % |\n\
         |---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        results.method, results.record_size_bytes
    );
    for p in &results.points {
        let l = &p.latency_ns;
        md += &format!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.2} | {:.0} | {} | {} | {} | {} | {} |\n",
            p.clients,
            delay_cell(p),
            if p.group_commit { "group" } else { "naive" },
            p.commits_per_s,
            p.syncs_per_s,
            p.commits_per_sync,
            p.sync_latency_ns_mean / 1000.0,
            micros(l.p50),
            micros(l.p99),
            micros(l.p999),
            micros(l.max),
            steal_cell(p),
        );
    }
    md
}

/// The steal column: the share of CPU time the hypervisor took during the point, `-` where unknown.
fn steal_cell(p: &CommitPoint) -> String {
    p.cpu_steal_pct.map_or_else(|| "-".to_string(), |s| format!("{s:.1}"))
}

/// The delay column: microseconds, and the count that ends it early when there is one.
fn delay_cell(p: &CommitPoint) -> String {
    match p.commit_delay_count {
        0 => p.commit_delay_us.to_string(),
        n => format!("{} until {n}", p.commit_delay_us),
    }
}

const CSV_HEADER: [&str; 19] = [
    "method",
    "record_size_bytes",
    "clients",
    "commit_delay_us",
    "commit_delay_count",
    "group_commit",
    "commits",
    "commits_per_s",
    "syncs_per_s",
    "commits_per_sync",
    "sync_latency_ns_mean",
    "latency_ns_p50",
    "latency_ns_p90",
    "latency_ns_p99",
    "latency_ns_p999",
    "latency_ns_max",
    "latency_ns_mean",
    "duration_s",
    "cpu_steal_pct",
];

fn to_csv(results: &CommitResults) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER)?;
    for p in &results.points {
        let l = &p.latency_ns;
        w.write_record([
            results.method.clone(),
            results.record_size_bytes.to_string(),
            p.clients.to_string(),
            p.commit_delay_us.to_string(),
            p.commit_delay_count.to_string(),
            p.group_commit.to_string(),
            p.commits.to_string(),
            format!("{:.1}", p.commits_per_s),
            format!("{:.1}", p.syncs_per_s),
            format!("{:.2}", p.commits_per_sync),
            format!("{:.0}", p.sync_latency_ns_mean),
            l.p50.to_string(),
            l.p90.to_string(),
            l.p99.to_string(),
            l.p999.to_string(),
            l.max.to_string(),
            format!("{:.0}", l.mean),
            format!("{:.3}", p.duration_s),
            p.cpu_steal_pct.map(|s| format!("{s:.1}")).unwrap_or_default(),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

fn micros(ns: u64) -> String {
    format!("{:.0}", ns as f64 / 1000.0)
}

fn to_table(results: &CommitResults) -> String {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header([
        "clients",
        "delay µs",
        "log",
        "commits/s",
        "syncs/s",
        "commits/sync",
        "sync µs",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "steal %",
    ]);
    for p in &results.points {
        let l = &p.latency_ns;
        table.add_row([
            p.clients.to_string(),
            delay_cell(p),
            if p.group_commit { "group" } else { "naive" }.to_string(),
            format!("{:.0}", p.commits_per_s),
            format!("{:.0}", p.syncs_per_s),
            format!("{:.2}", p.commits_per_sync),
            format!("{:.0}", p.sync_latency_ns_mean / 1000.0),
            micros(l.p50),
            micros(l.p99),
            micros(l.p999),
            micros(l.max),
            steal_cell(p),
        ]);
    }
    let durability = if results.durable { "" } else { "  (NOT durable: no sync at all)" };
    format!(
        "syncbench commit: method {}, {}-byte records ({} bytes in the log){durability}\n{table}\n",
        results.method, results.record_size_bytes, results.record_log_bytes
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(line: &[&str]) -> Args {
        Cli::try_parse_from(std::iter::once("commit").chain(line.iter().copied())).unwrap().args
    }

    #[test]
    fn default_plan_is_group_commit_over_seven_client_counts() {
        let p = plan(&parse(&[])).unwrap();
        assert_eq!(p.method, SyncMethod::Fdatasync);
        assert_eq!(p.points.iter().map(|s| s.clients).collect::<Vec<_>>(), vec![1, 2, 4, 8, 16, 32, 64]);
        assert!(p.points.iter().all(|s| s.group_commit && s.commit_delay_us == 0));
        assert_eq!(p.secs, 3.0);
    }

    #[test]
    fn baseline_and_delays_multiply_the_points() {
        let p = plan(&parse(&["--clients", "1,8", "--commit-delay-us", "0,100", "--with-baseline"])).unwrap();
        assert_eq!(p.points.len(), 8);
        let spec = |clients, commit_delay_us, group_commit| PointSpec {
            clients,
            commit_delay_us,
            group_commit,
            commit_delay_count: 0,
        };
        assert_eq!(p.points[0], spec(1, 0, false));
        assert_eq!(p.points[7], spec(8, 100, true));
        let naive = plan(&parse(&["--no-group-commit", "--quick"])).unwrap();
        assert!(naive.points.iter().all(|s| !s.group_commit));
        assert_eq!(naive.points.len(), 3);
        assert_eq!(naive.secs, 1.0);
        let explicit = plan(&parse(&["--quick", "--clients", "1,2,4,8,16,32,64"])).unwrap();
        assert_eq!(explicit.points.len(), 7, "--clients given explicitly wins over --quick");
    }

    #[test]
    fn delay_count_applies_only_to_delayed_group_commit_points() {
        let line =
            ["--clients", "1,16", "--commit-delay-us", "0,50", "--with-baseline", "--commit-delay-count", "clients"];
        let counts: Vec<(u32, u64, bool, u32)> = plan(&parse(&line))
            .unwrap()
            .points
            .iter()
            .map(|s| (s.clients, s.commit_delay_us, s.group_commit, s.commit_delay_count))
            .collect();
        assert_eq!(
            counts,
            vec![
                (1, 0, false, 0),
                (1, 0, true, 0),
                (16, 0, false, 0),
                (16, 0, true, 0),
                (1, 50, false, 0),
                (1, 50, true, 1),
                (16, 50, false, 0),
                (16, 50, true, 16)
            ]
        );
        let fixed = plan(&parse(&["--clients", "16", "--commit-delay-us", "50", "--commit-delay-count", "8"])).unwrap();
        assert_eq!(fixed.points[0].commit_delay_count, 8);
        assert!(Cli::try_parse_from(["commit", "--commit-delay-count", "many"]).is_err());
    }

    #[test]
    fn bad_flags_are_usage_errors_naming_the_flag() {
        for (line, needle) in [
            (vec!["--method", "open_sync"], "--method"),
            (vec!["--clients", "0"], "--clients"),
            (vec!["--clients", "5000"], "--clients"),
            (vec!["--record-size", "0"], "--record-size"),
            (vec!["--commit-delay-us", "200000"], "--commit-delay-us"),
            (vec!["--secs", "0"], "--secs"),
            (vec!["--secs", "NaN"], "--secs"),
        ] {
            let err = plan(&parse(&line)).unwrap_err();
            assert!(err.downcast_ref::<crate::exit::UsageError>().is_some(), "{line:?}");
            assert!(err.to_string().contains(needle), "{line:?}: {err}");
        }
    }

    #[test]
    fn steal_is_reported_for_the_worst_point_only_past_the_threshold() {
        let point = |clients, steal| CommitPoint { clients, cpu_steal_pct: steal, ..CommitPoint::default() };
        assert!(steal_verdict(&[point(1, Some(1.0)), point(16, Some(4.0))]).is_none());
        assert!(steal_verdict(&[point(1, None)]).is_none());
        let v = steal_verdict(&[point(1, Some(6.0)), point(16, Some(21.0)), point(64, None)]).unwrap();
        assert_eq!(v.code, "cpu_steal");
        assert!(
            v.message.contains("21%") && v.message.contains("the 16-client point, the worst of this run (steal"),
            "{}",
            v.message
        );
    }

    #[test]
    fn summary_of_a_window() {
        let mut h = new_histogram();
        for ns in [1000u64, 2000, 3000, 4000] {
            h.record(ns).unwrap();
        }
        let spec = PointSpec { clients: 2, commit_delay_us: 0, group_commit: true, commit_delay_count: 0 };
        let p = summarize(
            &spec,
            &[ClientTally { latency: h }],
            &Window { duration_s: 2.0, steal_pct: Some(12.5), flushes: 2, commits: 4, flush_ns: 300 },
        );
        assert_eq!(p.commits, 4);
        assert_eq!(p.commits_per_s, 2.0);
        assert_eq!(p.syncs_per_s, 1.0);
        assert_eq!(p.commits_per_sync, 2.0);
        assert_eq!(p.sync_latency_ns_mean, 150.0);
        assert_eq!(p.cpu_steal_pct, Some(12.5));
        assert!((3996..=4004).contains(&p.latency_ns.max), "hdr precision is 3 digits");
        let csv = to_csv(&CommitResults {
            method: "fdatasync".into(),
            durable: true,
            record_size_bytes: 256,
            leader_extra_batches: 0,
            record_log_bytes: 296,
            points: vec![p],
        })
        .unwrap();
        assert_eq!(csv.lines().count(), 2);
        assert!(csv.starts_with("method,record_size_bytes,clients"));
        assert!(csv.lines().next().unwrap().ends_with(",duration_s,cpu_steal_pct"));
        assert!(csv.lines().nth(1).unwrap().ends_with(",2.000,12.5"), "{csv}");
    }
}
