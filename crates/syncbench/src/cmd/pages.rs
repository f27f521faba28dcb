//! `syncbench pages`: a TPC-B-like workload on the reference page store, once per torn-page protection
//! mode (and buffer-pool size), reporting throughput, commit latency and what each mode writes.
//!
//! Everything lives in a `.syncbench-pages-*` directory in DIR (and in `.syncbench-pages-wal-*` /
//! `.syncbench-pages-dw-*` directories under `--wal-dir` / `--dw-dir`), removed on success, error and
//! Ctrl-C. `--ack-log` and `--recover` exist for the kill -9 test: the first records every acknowledged
//! transaction id, the second recovers a store left behind by a killed run and checks it.

use crate::cleanup::{Created, unique_name};
use crate::exit::{CheckFailed, Outcome, usage};
use crate::schema::Envelope;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;
use syncbench_engine::RealStorage;
use syncbench_engine::pages::{Mode, StoreConfig, atomic};
use syncbench_engine::storage::{FileOptions, Storage, StorageFile, WriteSync};
use syncbench_engine::workload::{Bank, BankConfig, RunReport, RunSpec};

/// Flags of `syncbench pages`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to run in (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Torn-page protections to compare: none (unsafe baseline), fpw, dw, atomic.
    #[arg(long, default_value = "none,fpw,dw")]
    pub mode: String,
    /// Branches; accounts = 100,000 × scale (about 10 MiB of account pages per unit).
    #[arg(long, default_value_t = 1)]
    pub scale: u32,
    /// Concurrent clients.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Seconds per mode (default 10, 3 with --quick).
    #[arg(long)]
    pub secs: Option<f64>,
    /// Short runs.
    #[arg(long)]
    pub quick: bool,
    /// Buffer-pool sizes, one row per size and mode, e.g. 16MiB,256MiB.
    #[arg(long, default_value = "128MiB")]
    pub buffer_pool: String,
    /// Seconds between checkpoints.
    #[arg(long, default_value_t = 5.0)]
    pub checkpoint_secs: f64,
    /// Page size in bytes: 4096, 8192 or 16384.
    #[arg(long, default_value_t = 8192)]
    pub page_size: usize,
    /// Pages per double-write batch.
    #[arg(long, default_value_t = 64)]
    pub dw_batch: usize,
    /// Where files go.
    #[command(flatten)]
    pub paths: Box<Paths>,
    /// Accounts per branch (TPC-B: 100,000); smaller for tests.
    #[arg(long, default_value_t = 100_000, hide = true)]
    pub accounts_per_branch: u32,
}

/// The path flags of `syncbench pages` (boxed: they are most of the flags' size).
#[derive(Debug, clap::Args)]
pub struct Paths {
    /// Put the log in a `.syncbench-*` directory here (e.g. another device).
    #[arg(long)]
    pub wal_dir: Option<PathBuf>,
    /// Put the double-write area in a `.syncbench-*` directory here (e.g. another device).
    #[arg(long)]
    pub dw_dir: Option<PathBuf>,
    /// --json, --csv, --markdown.
    #[command(flatten)]
    pub export: crate::export::ExportArgs,
    /// Append each acknowledged transaction id to this file as it is acknowledged (kill -9 tests).
    #[arg(long, hide = true)]
    pub ack_log: Option<PathBuf>,
    /// Recover the `.syncbench-pages-*` store a killed run left behind, check it against --ack-log,
    /// and remove it.
    #[arg(long, hide = true)]
    pub recover: Option<PathBuf>,
}

/// Latency percentiles of one row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RowLatencyNs {
    /// Median commit latency.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
}

/// One mode at one buffer-pool size.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PagesRow {
    /// `none`, `fpw`, `dw` or `atomic`.
    pub mode: String,
    /// Whether this mode could run here (atomic needs device support).
    pub supported: bool,
    /// Why not, when unsupported or failed.
    pub error: Option<String>,
    /// Buffer-pool size.
    pub buffer_pool_bytes: u64,
    /// Acknowledged transactions per second.
    pub tps: f64,
    /// Commit latency (submit to durable).
    pub latency_ns: RowLatencyNs,
    /// Log bytes per transaction (headers included).
    pub wal_bytes_per_txn: f64,
    /// Share of log bytes that are full-page images.
    pub fpi_share: f64,
    /// Page bytes written per transaction: home writes plus double-write copies.
    pub data_bytes_per_txn: f64,
    /// Of which double-write copies.
    pub dw_bytes_per_txn: f64,
    /// fsync/fdatasync calls per transaction: log, data files and double-write area.
    pub fsyncs_per_txn: f64,
    /// Mean checkpoint duration (0 when none completed).
    pub checkpoint_duration_s_mean: f64,
    /// Checkpoints completed during the run.
    pub checkpoints: u64,
    /// Pages written synchronously by clients to make room (the evictions that wait).
    pub eviction_writes: u64,
    /// Acknowledged transactions.
    pub txns: u64,
    /// Seconds timed.
    pub duration_s: f64,
}

/// The command's JSON payload.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PagesPayload {
    /// The table.
    pub pages: PagesTable,
}

/// Rows of the table.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PagesTable {
    /// Settings shared by every row.
    pub scale: u32,
    /// Clients.
    pub clients: usize,
    /// Page size.
    pub page_size_bytes: usize,
    /// Checkpoint interval.
    pub checkpoint_secs: f64,
    /// Double-write batch.
    pub dw_batch_pages: usize,
    /// One row per buffer-pool size and mode.
    pub rows: Vec<PagesRow>,
}

/// What a store directory was created with, so `--recover` can reopen it.
#[derive(Debug, Serialize, Deserialize)]
struct StoreSettings {
    mode: String,
    page_size: usize,
    dw_batch: usize,
    buffer_pool_bytes: usize,
    scale: u32,
    accounts_per_branch: u32,
    /// The `.syncbench-pages-wal-*` directory created under `--wal-dir` (absolute), if any.
    #[serde(default)]
    wal_dir: Option<PathBuf>,
    /// The `.syncbench-pages-dw-*` directory created under `--dw-dir` (absolute), if any.
    #[serde(default)]
    dw_dir: Option<PathBuf>,
}

const SETTINGS_FILE: &str = "syncbench-pages.json";

/// Validated options.
struct Plan {
    dir: PathBuf,
    modes: Vec<Mode>,
    pools_bytes: Vec<usize>,
    secs: f64,
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    if let Some(store_dir) = &args.paths.recover {
        return recover_and_check(store_dir, args.paths.ack_log.as_deref());
    }
    let plan = validate(&args)?;
    let started_at = crate::schema::now_rfc3339();
    let environment = crate::probe::collect(&plan.dir);
    let mut rows = Vec::new();
    for &pool in &plan.pools_bytes {
        for &mode in &plan.modes {
            if crate::output::stderr_is_terminal() {
                eprintln!("syncbench pages: {} with a {} buffer pool …", mode.name(), format_bytes(pool as u64));
            }
            rows.push(run_one(&args, &plan, mode, pool)?);
        }
    }
    let mut verdicts = crate::probe::verdicts(&environment, &[]);
    verdicts.extend(mode_verdicts(&rows));
    let table = PagesTable {
        scale: args.scale,
        clients: args.clients,
        page_size_bytes: args.page_size,
        checkpoint_secs: args.checkpoint_secs,
        dw_batch_pages: args.dw_batch,
        rows,
    };
    export(&args, Envelope::new(started_at, environment, verdicts, PagesPayload { pages: table }))
}

fn validate(args: &Args) -> anyhow::Result<Plan> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if !dir.is_dir() {
        return Err(usage(format!("{} is not a directory; give an existing directory to run in", dir.display())));
    }
    for (flag, extra) in [("--wal-dir", &args.paths.wal_dir), ("--dw-dir", &args.paths.dw_dir)] {
        if let Some(d) = extra.as_ref().filter(|d| !d.is_dir()) {
            return Err(usage(format!("{flag} {} is not a directory; create it or pick another", d.display())));
        }
    }
    args.paths.export.validate()?;
    let modes = parse_modes(&args.mode)?;
    let pools_bytes = args.buffer_pool.split(',').map(|s| parse_size(s.trim())).collect::<anyhow::Result<Vec<_>>>()?;
    let secs = args.secs.unwrap_or(if args.quick { 3.0 } else { 10.0 });
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(usage(format!("--secs {secs} is not in (0, 86400]")));
    }
    if !(args.checkpoint_secs > 0.0 && args.checkpoint_secs <= 3600.0) {
        return Err(usage(format!("--checkpoint-secs {} is not in (0, 3600]", args.checkpoint_secs)));
    }
    if args.scale == 0 || args.scale > 1000 || args.accounts_per_branch == 0 {
        return Err(usage(format!("--scale {} is not in 1..=1000", args.scale)));
    }
    if !(1..=1024).contains(&args.clients) {
        return Err(usage(format!("--clients {} is not in 1..=1024", args.clients)));
    }
    for &pool in &pools_bytes {
        store_config(args, Mode::None, pool)
            .validate()
            .map_err(|e| usage(format!("{e} (see --buffer-pool, --dw-batch)")))?;
    }
    Ok(Plan { dir, modes, pools_bytes, secs })
}

fn parse_modes(list: &str) -> anyhow::Result<Vec<Mode>> {
    let mut modes = Vec::new();
    for name in list.split(',').map(str::trim) {
        let mode = Mode::from_name(name)
            .ok_or_else(|| usage(format!("--mode {name:?} is unknown; use none, fpw, dw or atomic")))?;
        if !modes.contains(&mode) {
            modes.push(mode);
        }
    }
    Ok(modes)
}

/// `16MiB`, `1GiB`, `512KiB`, `4096`, `2MB` (decimal) → bytes.
fn parse_size(text: &str) -> anyhow::Result<usize> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return Err(usage(format!("size {text:?} has an unknown unit; use e.g. 16MiB or 1GiB"))),
    };
    let n: u64 = number.parse().map_err(|_| usage(format!("size {text:?} is not a number with a unit, e.g. 16MiB")))?;
    n.checked_mul(multiplier)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| usage(format!("size {text:?} is too large")))
}

fn format_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}KiB", b >> 10),
        b => format!("{b}B"),
    }
}

fn store_config(args: &Args, mode: Mode, pool_bytes: usize) -> StoreConfig {
    let mut config = Bank::<RealStorage>::store_config(mode);
    config.page_size = args.page_size;
    config.buffer_pool_bytes = pool_bytes;
    config.dw_batch_pages = args.dw_batch;
    config
}

/// A `.syncbench-<what>-*` directory inside `parent`, registered for removal. The parent is fsynced so
/// the new directory's name is durable (the store inside it must survive a power cut to be recovered).
fn own_dir(parent: &Path, what: &str) -> anyhow::Result<Created> {
    let path = parent.join(unique_name(what));
    let guard = Created::register(path.clone());
    std::fs::create_dir(&path).with_context(|| format!("cannot create {}", path.display()))?;
    RealStorage
        .sync_dir(parent)
        .with_context(|| format!("cannot fsync {} after creating {}", parent.display(), path.display()))?;
    Ok(guard)
}

fn run_one(args: &Args, plan: &Plan, mode: Mode, pool_bytes: usize) -> anyhow::Result<PagesRow> {
    let store_dir = own_dir(&plan.dir, "pages")?;
    let wal_dir = args.paths.wal_dir.as_deref().map(|d| own_dir(d, "pages-wal")).transpose()?;
    let dw_dir = args.paths.dw_dir.as_deref().map(|d| own_dir(d, "pages-dw")).transpose()?;
    let mut config = store_config(args, mode, pool_bytes);
    config.wal_dir = wal_dir.as_ref().map(|g| g.path().to_path_buf());
    config.dw_dir = dw_dir.as_ref().filter(|_| mode == Mode::Dw).map(|g| g.path().to_path_buf());
    let unsupported = |why: String| PagesRow {
        mode: mode.name().to_string(),
        buffer_pool_bytes: pool_bytes as u64,
        error: Some(why),
        ..PagesRow::default()
    };
    if mode == Mode::Atomic
        && let Err(why) = atomic_support(store_dir.path(), args.page_size)
    {
        return Ok(unsupported(why));
    }
    let bank_config = BankConfig { scale: args.scale, accounts_per_branch: args.accounts_per_branch };
    let created = CreatedDirs { wal: wal_dir.as_ref().map(Created::path), dw: dw_dir.as_ref().map(Created::path) };
    write_settings(store_dir.path(), args, mode, pool_bytes, created)?;
    let bank = Bank::create(RealStorage, store_dir.path(), config, bank_config)
        .with_context(|| format!("creating the {} store in {}", mode.name(), store_dir.path().display()))?;
    let before = bank.store().stats();
    let report = run_workload(args, plan, &bank)?;
    let after = bank.store().stats();
    if let Some(err) = &report.error {
        return Err(anyhow::anyhow!("the {} run failed: {err}", mode.name()));
    }
    bank.check_invariants().map_err(|e| CheckFailed(format!("{} run: {e}", mode.name())))?;
    bank.close().with_context(|| format!("closing the {} store", mode.name()))?;
    Ok(row(mode, pool_bytes, &report, before, after))
}

fn atomic_support(store_dir: &Path, page_size: usize) -> Result<(), String> {
    let probe = store_dir.join("atomic-probe");
    std::fs::write(&probe, vec![0u8; page_size]).map_err(|e| format!("cannot create a probe file: {e}"))?;
    let result = atomic::support(&probe, page_size);
    let _ = std::fs::remove_file(&probe);
    result
}

/// The directories a run created under `--wal-dir` and `--dw-dir`.
#[derive(Clone, Copy)]
struct CreatedDirs<'a> {
    wal: Option<&'a Path>,
    dw: Option<&'a Path>,
}

fn absolute(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(dir).with_context(|| format!("cannot resolve {}", dir.display()))
}

/// Write the settings file (file fsynced, then the store directory) so `--recover` can reopen the store.
fn write_settings(
    store_dir: &Path,
    args: &Args,
    mode: Mode,
    pool_bytes: usize,
    created: CreatedDirs<'_>,
) -> anyhow::Result<()> {
    let settings = StoreSettings {
        mode: mode.name().to_string(),
        page_size: args.page_size,
        dw_batch: args.dw_batch,
        buffer_pool_bytes: pool_bytes,
        scale: args.scale,
        accounts_per_branch: args.accounts_per_branch,
        wal_dir: created.wal.map(absolute).transpose()?,
        dw_dir: created.dw.map(absolute).transpose()?,
    };
    let path = store_dir.join(SETTINGS_FILE);
    let write = || -> std::io::Result<()> {
        let file = RealStorage.create_new(&path, FileOptions::default())?;
        file.write_at(serde_json::to_string(&settings)?.as_bytes(), 0, WriteSync::None)?;
        file.sync_all()?;
        RealStorage.sync_dir(store_dir)
    };
    write().with_context(|| format!("cannot write {}", path.display()))
}

fn run_workload(args: &Args, plan: &Plan, bank: &Bank<RealStorage>) -> anyhow::Result<RunReport> {
    let spec = RunSpec {
        clients: args.clients,
        duration: Some(Duration::from_secs_f64(plan.secs)),
        max_txns: None,
        checkpoint_every: Duration::from_secs_f64(args.checkpoint_secs),
        seed: 0x5EED,
    };
    let Some(path) = &args.paths.ack_log else {
        return Ok(bank.run(spec, &|_| {}));
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open --ack-log {}", path.display()))?;
    let file = Mutex::new(file);
    // One write per acknowledgement, so a kill -9 loses at most the line being written.
    Ok(bank.run(spec, &|id| {
        let _ = writeln!(file.lock().unwrap_or_else(|p| p.into_inner()), "{id}");
    }))
}

fn per_txn(value: u64, txns: u64) -> f64 {
    if txns == 0 { 0.0 } else { value as f64 / txns as f64 }
}

fn row(
    mode: Mode,
    pool_bytes: usize,
    report: &RunReport,
    before: syncbench_engine::pages::StoreStats,
    after: syncbench_engine::pages::StoreStats,
) -> PagesRow {
    let txns = report.acknowledged;
    let wal = after.wal_bytes - before.wal_bytes;
    let fpi = after.fpi_bytes - before.fpi_bytes;
    let dw = after.dw_bytes - before.dw_bytes;
    let home = after.home_bytes - before.home_bytes;
    let syncs = (after.wal_syncs - before.wal_syncs) + (after.data_syncs - before.data_syncs);
    let checkpoints = after.checkpoints - before.checkpoints;
    let checkpoint_secs = after.checkpoint_secs_total - before.checkpoint_secs_total;
    let duration_s = report.elapsed.as_secs_f64();
    PagesRow {
        mode: mode.name().to_string(),
        supported: true,
        error: None,
        buffer_pool_bytes: pool_bytes as u64,
        tps: if duration_s > 0.0 { txns as f64 / duration_s } else { 0.0 },
        latency_ns: RowLatencyNs { p50: report.latency_ns_quantile(0.50), p99: report.latency_ns_quantile(0.99) },
        wal_bytes_per_txn: per_txn(wal, txns),
        fpi_share: if wal == 0 { 0.0 } else { fpi as f64 / wal as f64 },
        data_bytes_per_txn: per_txn(home + dw, txns),
        dw_bytes_per_txn: per_txn(dw, txns),
        fsyncs_per_txn: per_txn(syncs, txns),
        checkpoint_duration_s_mean: if checkpoints == 0 { 0.0 } else { checkpoint_secs / checkpoints as f64 },
        checkpoints,
        eviction_writes: after.eviction_writes - before.eviction_writes,
        txns,
        duration_s,
    }
}

fn mode_verdicts(rows: &[PagesRow]) -> Vec<crate::verdict::Verdict> {
    use crate::verdict::{Severity, Verdict};
    let mut out = Vec::new();
    if rows.iter().any(|r| r.mode == "none") {
        out.push(Verdict {
            severity: Severity::Info,
            code: "pages_none_unsafe".to_string(),
            message: "Mode none has no torn-page protection: a power cut during a page write can leave a page \
                      that recovery cannot repair."
                .to_string(),
            advice: "Use it only as the baseline the other modes are compared with.".to_string(),
        });
    }
    if let Some(r) = rows.iter().find(|r| r.mode == "atomic" && !r.supported) {
        out.push(Verdict {
            severity: Severity::Info,
            code: "pages_atomic_unsupported".to_string(),
            message: format!(
                "Atomic (untorn) page writes are not available here: {}.",
                r.error.as_deref().unwrap_or("")
            ),
            advice: "They need Linux ≥ 6.11, O_DIRECT, and a device and file system that report \
                     STATX_WRITE_ATOMIC units covering the page size; use fpw or dw otherwise."
                .to_string(),
        });
    }
    out
}

fn export(args: &Args, envelope: Envelope<PagesPayload>) -> Outcome {
    let targets = &args.paths.export;
    let rows = &envelope.payload.pages.rows;
    if let Some(path) = &targets.json {
        crate::output::write_to(path, &crate::export::to_json(&envelope)?)?;
    }
    if let Some(path) = &targets.csv {
        crate::output::write_to(path, &to_csv(rows)?)?;
    }
    if let Some(path) = &targets.markdown {
        crate::output::write_to(path, &to_markdown(&envelope.payload.pages))?;
    }
    let table = to_table(&envelope.payload.pages);
    if targets.uses_stdout() {
        eprint!("{table}");
    } else {
        crate::output::write_to(Path::new("-"), &table)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn versus_none(t: &PagesTable, r: &PagesRow) -> String {
    let baseline = t.rows.iter().find(|b| b.mode == "none" && b.buffer_pool_bytes == r.buffer_pool_bytes);
    match baseline {
        Some(b) if b.tps > 0.0 && b.supported => format!("{:+.0}%", (r.tps / b.tps - 1.0) * 100.0),
        _ => "-".to_string(),
    }
}

fn to_markdown(t: &PagesTable) -> String {
    let mut out = format!(
        "TPC-B-like, scale {}, {} clients, {}-byte pages, checkpoint every {} s, dw batch {} pages\n\n",
        t.scale, t.clients, t.page_size_bytes, t.checkpoint_secs, t.dw_batch_pages
    );
    out += "| mode | buffer pool | tps | vs none | p50 ms | p99 ms | WAL B/txn | FPI share | data B/txn | fsyncs/txn | checkpoint s |\n";
    out += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    for r in &t.rows {
        let pool = format_bytes(r.buffer_pool_bytes);
        if !r.supported {
            out += &format!("| {} | {pool} | unsupported: {} |||||||||\n", r.mode, r.error.as_deref().unwrap_or(""));
            continue;
        }
        out += &format!(
            "| {} | {pool} | {:.0} | {} | {:.2} | {:.2} | {:.0} | {:.0}% | {:.0} | {:.2} | {:.3} |\n",
            r.mode,
            r.tps,
            versus_none(t, r),
            r.latency_ns.p50 as f64 / 1e6,
            r.latency_ns.p99 as f64 / 1e6,
            r.wal_bytes_per_txn,
            r.fpi_share * 100.0,
            r.data_bytes_per_txn,
            r.fsyncs_per_txn,
            r.checkpoint_duration_s_mean,
        );
    }
    out
}

fn to_csv(rows: &[PagesRow]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "mode",
        "supported",
        "error",
        "buffer_pool_bytes",
        "tps",
        "latency_ns_p50",
        "latency_ns_p99",
        "wal_bytes_per_txn",
        "fpi_share",
        "data_bytes_per_txn",
        "dw_bytes_per_txn",
        "fsyncs_per_txn",
        "checkpoint_duration_s_mean",
        "checkpoints",
        "eviction_writes",
        "txns",
        "duration_s",
    ])?;
    for r in rows {
        w.write_record([
            r.mode.clone(),
            r.supported.to_string(),
            r.error.clone().unwrap_or_default(),
            r.buffer_pool_bytes.to_string(),
            format!("{:.1}", r.tps),
            r.latency_ns.p50.to_string(),
            r.latency_ns.p99.to_string(),
            format!("{:.1}", r.wal_bytes_per_txn),
            format!("{:.4}", r.fpi_share),
            format!("{:.1}", r.data_bytes_per_txn),
            format!("{:.1}", r.dw_bytes_per_txn),
            format!("{:.3}", r.fsyncs_per_txn),
            format!("{:.4}", r.checkpoint_duration_s_mean),
            r.checkpoints.to_string(),
            r.eviction_writes.to_string(),
            r.txns.to_string(),
            format!("{:.3}", r.duration_s),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

fn to_table(t: &PagesTable) -> String {
    let mut out = format!(
        "TPC-B-like, scale {}, {} clients, {}-byte pages, checkpoint every {} s, dw batch {} pages\n\n",
        t.scale, t.clients, t.page_size_bytes, t.checkpoint_secs, t.dw_batch_pages
    );
    out += &format!(
        "{:<7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>5} {:>10} {:>7} {:>8} {:>8}\n",
        "mode", "pool", "tps", "vs none", "p50 ms", "p99 ms", "fpi%", "WAL B/txn", "data KiB", "fsyncs", "ckpt s"
    );
    for r in &t.rows {
        let pool = format_bytes(r.buffer_pool_bytes);
        if !r.supported {
            out += &format!("{:<7} {:>8} unsupported: {}\n", r.mode, pool, r.error.as_deref().unwrap_or(""));
            continue;
        }
        let versus = versus_none(t, r);
        out += &format!(
            "{:<7} {:>8} {:>9.0} {:>9} {:>9.2} {:>9.2} {:>5.0} {:>10.0} {:>7.1} {:>8.2} {:>8.3}\n",
            r.mode,
            pool,
            r.tps,
            versus,
            r.latency_ns.p50 as f64 / 1e6,
            r.latency_ns.p99 as f64 / 1e6,
            r.fpi_share * 100.0,
            r.wal_bytes_per_txn,
            r.data_bytes_per_txn / 1024.0,
            r.fsyncs_per_txn,
            r.checkpoint_duration_s_mean,
        );
    }
    out += "\nnone is unsafe (no torn-page protection); data KiB = page bytes written per transaction \
            (home + double-write); fsyncs per transaction include the log.\n";
    out
}

/// Recover a store a killed run left behind; check the invariant and every acknowledged id.
fn recover_and_check(store_dir: &Path, ack_log: Option<&Path>) -> Outcome {
    if !is_ours(store_dir, "pages") || !store_dir.is_dir() {
        return Err(usage(format!(
            "--recover {} is not a .syncbench-pages-* directory left by syncbench pages",
            store_dir.display()
        )));
    }
    let text = std::fs::read_to_string(store_dir.join(SETTINGS_FILE))
        .map_err(|e| usage(format!("--recover {}: no {SETTINGS_FILE} ({e})", store_dir.display())))?;
    let settings: StoreSettings = serde_json::from_str(&text).context("reading the store settings")?;
    let mode = Mode::from_name(&settings.mode).ok_or_else(|| usage("unknown mode in the store settings"))?;
    let wal_dir =
        settings.wal_dir.as_deref().map(|d| recorded_dir(store_dir, "--wal-dir", "pages-wal", d)).transpose()?;
    let dw_dir = settings.dw_dir.as_deref().map(|d| recorded_dir(store_dir, "--dw-dir", "pages-dw", d)).transpose()?;
    // Everything the killed run left behind is removed once checked (guards drop in reverse order).
    let _remove_after = Created::register(store_dir.to_path_buf());
    let _remove_wal = wal_dir.clone().map(Created::register);
    let _remove_dw = dw_dir.clone().map(Created::register);
    let mut config = Bank::<RealStorage>::store_config(mode);
    config.page_size = settings.page_size;
    config.dw_batch_pages = settings.dw_batch;
    config.buffer_pool_bytes = settings.buffer_pool_bytes;
    config.wal_dir = wal_dir;
    config.dw_dir = dw_dir.filter(|_| mode == Mode::Dw);
    let bank_config = BankConfig { scale: settings.scale, accounts_per_branch: settings.accounts_per_branch };
    let bank = Bank::open(RealStorage, store_dir, config, bank_config)
        .map_err(|e| CheckFailed(format!("recovery failed: {e}")))?;
    bank.check_invariants().map_err(|e| CheckFailed(format!("after recovery: {e}")))?;
    let mut present = bank.history_txn_ids().context("reading the history")?;
    present.sort_unstable();
    let acknowledged = match ack_log {
        Some(path) => read_ack_log(path)?,
        None => Vec::new(),
    };
    if let Some(lost) = acknowledged.iter().find(|id| present.binary_search(id).is_err()) {
        return Err(CheckFailed(format!("acknowledged transaction {lost} is missing after recovery")).into());
    }
    println!(
        "recovered {} mode store: {} transactions, invariant holds, all {} acknowledged present",
        mode.name(),
        present.len(),
        acknowledged.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Whether `path` is named like a directory syncbench made for `what` (`.syncbench-<what>-*`).
fn is_ours(path: &Path, what: &str) -> bool {
    let prefix = format!("{}{what}-", crate::cleanup::PREFIX);
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix))
}

/// A directory the settings file says the run created under `flag`: it must still be there, absolute, and
/// one of ours (`.syncbench-<what>-*`), or recovery would silently start an empty log or double-write area.
fn recorded_dir(store_dir: &Path, flag: &str, what: &str, dir: &Path) -> anyhow::Result<PathBuf> {
    if !dir.is_absolute() || !is_ours(dir, what) {
        return Err(usage(format!(
            "--recover {}: {SETTINGS_FILE} names {} as the {flag} directory, which is not an absolute \
             .syncbench-{what}-* path; the settings file is damaged",
            store_dir.display(),
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(usage(format!(
            "--recover {}: the {flag} directory {} the run used is missing or not a directory; mount or \
             restore it and try again",
            store_dir.display(),
            dir.display()
        )));
    }
    Ok(dir.to_path_buf())
}

fn read_ack_log(path: &Path) -> anyhow::Result<Vec<u64>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    // The last line may be cut short by the kill; only complete lines count.
    let complete = if text.ends_with('\n') { &text[..] } else { &text[..text.rfind('\n').map_or(0, |i| i + 1)] };
    complete.lines().map(|l| l.parse::<u64>().with_context(|| format!("bad ack-log line {l:?}"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("2MB").unwrap(), 2_000_000);
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
        assert_eq!(format_bytes(256 << 20), "256MiB");
    }

    #[test]
    fn modes_parse_and_unknown_is_a_usage_error() {
        assert_eq!(parse_modes("none,fpw,dw,fpw").unwrap(), vec![Mode::None, Mode::Fpw, Mode::Dw]);
        let err = parse_modes("none,raid").unwrap_err();
        assert!(err.downcast_ref::<crate::exit::UsageError>().is_some());
    }

    #[test]
    fn ack_log_ignores_a_cut_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("acks");
        std::fs::write(&p, "1\n2\n3").unwrap();
        assert_eq!(read_ack_log(&p).unwrap(), vec![1, 2]);
    }
}
