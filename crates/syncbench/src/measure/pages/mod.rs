//! `syncbench pages`'s measurement: a TPC-B-like workload on the reference page store, once per torn-page
//! protection mode (and buffer-pool size), reporting throughput, commit latency and what each mode writes.
//!
//! Everything lives in a `.syncbench-pages-*` directory in the plan's directory (and in
//! `.syncbench-pages-wal-*` / `.syncbench-pages-dw-*` directories under `--wal-dir` / `--dw-dir`), removed on
//! success, error and Ctrl-C. [`recover`] holds the other half of the kill -9 test.

pub mod recover;
pub mod render;

use crate::core::cleanup::{Created, unique_name};
use crate::core::exit::CheckFailed;
use crate::core::schema::LatencyNs;
use crate::core::stats::Samples;
use crate::core::verdict::{Severity, Verdict};
use crate::measure::rounds::Pooled;
use crate::measure::rounds::{Measurement, StopReason};
use crate::measure::runner::RoundChoice;
use crate::observe::blockdev::foreign::OurWork;
use crate::observe::disturbance::{CaseDisturbance, Monitor};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use syncbench_engine::RealStorage;
use syncbench_engine::pages::{DwDesign, Mode, StoreConfig, StoreStats, atomic};
use syncbench_engine::storage::Storage;
use syncbench_engine::workload::{Bank, BankConfig, RunReport, RunSpec};

/// One mode at one buffer-pool size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PagesRow {
    /// `none`, `fpw`, `dw` or `atomic` in JSON.
    #[serde(with = "mode_name")]
    pub mode: Mode,
    /// For `dw` rows: the double-write design, `"2012"` or `"pipelined"` in JSON (files written before
    /// designs existed have none: those rows are the 2012 design).
    #[serde(with = "design_name")]
    pub dw_design: Option<DwDesign>,
    /// Whether this mode could run here (atomic needs device support; files that do not say ran it).
    #[serde(default = "crate::core::schema::yes")]
    pub supported: bool,
    /// Why not, when unsupported or failed.
    pub error: Option<String>,
    /// Buffer-pool size.
    pub buffer_pool_bytes: u64,
    /// Acknowledged transactions per second.
    pub tps: f64,
    /// Commit latency (submit to durable). Files written before every payload shared one latency summary
    /// hold p50 and p99 only; the other fields read as 0.
    pub latency_ns: LatencyNs,
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
    /// Pages written synchronously by clients to make room.
    pub eviction_writes: u64,
    /// Of which waited for a double-write of their own and its sync (`dw` rows).
    pub evictions_waited_for_dw: u64,
    /// Syncs of the double-write area per transaction (included in `fsyncs_per_txn`).
    pub dw_syncs_per_txn: f64,
    /// `pipelined`: pages spooled into the double-write ring ahead of eviction.
    pub dw_pages_written_ahead: u64,
    /// `pipelined`: of which copies of a page spooled again within the checkpoint cycle of its earlier
    /// copy (which would have covered it, but its ring batch was recycled first): wasted work.
    pub dw_pages_rewritten_before_eviction: u64,
    /// Acknowledged transactions.
    pub txns: u64,
    /// Seconds timed.
    pub duration_s: f64,
    /// What the run made the devices under the store's directory do (per transaction: divide by `commits`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::observe::blockdev::account::DeviceAccounting>,
    /// Transactions per second of each round, in the order they ran (the left-out ones too; absent in
    /// files from before rounds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds_tps: Vec<f64>,
    /// Lower end of the 95% interval in which a re-run's `tps` is expected: the prediction interval over
    /// the rounds ([`crate::measure::rounds::Pooled::interval`], as `run`'s `ops_per_s_low`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps_low: Option<f64>,
    /// Upper end; absent when `lower_bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps_high: Option<f64>,
    /// Disturbed in too many rounds to leave them out (or CPU steal named): `tps` is what a disturbed
    /// machine gave, a lower bound of the undisturbed rate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// What else touched the device or the CPU while this row's rounds ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbances: Vec<crate::core::schema::Disturbance>,
}

impl Default for PagesRow {
    /// A row that did not run (`supported` false), to fill in.
    fn default() -> PagesRow {
        PagesRow {
            mode: Mode::None,
            dw_design: None,
            supported: false,
            error: None,
            buffer_pool_bytes: 0,
            tps: 0.0,
            latency_ns: LatencyNs::default(),
            wal_bytes_per_txn: 0.0,
            fpi_share: 0.0,
            data_bytes_per_txn: 0.0,
            dw_bytes_per_txn: 0.0,
            fsyncs_per_txn: 0.0,
            checkpoint_duration_s_mean: 0.0,
            checkpoints: 0,
            eviction_writes: 0,
            evictions_waited_for_dw: 0,
            dw_syncs_per_txn: 0.0,
            dw_pages_written_ahead: 0,
            dw_pages_rewritten_before_eviction: 0,
            txns: 0,
            duration_s: 0.0,
            device: None,
            rounds_tps: Vec::new(),
            tps_low: None,
            tps_high: None,
            lower_bound: false,
            disturbances: Vec::new(),
        }
    }
}

/// [`Mode`] in JSON by the name users type; an unknown name is an error naming the four.
pub mod mode_name {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};
    use syncbench_engine::pages::Mode;

    /// `"fpw"`.
    pub fn serialize<S: Serializer>(mode: &Mode, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(mode.name())
    }

    /// From `"fpw"`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
        let name = String::deserialize(d)?;
        Mode::from_name(&name)
            .ok_or_else(|| D::Error::custom(format!("unknown mode {name:?}; expected none, fpw, dw or atomic")))
    }
}

impl PagesRow {
    /// The row's name in tables: the mode, or `dw-<design>`.
    pub fn label(&self) -> String {
        match self.dw_design {
            Some(design) if self.mode == Mode::Dw => format!("dw-{}", design.name()),
            _ => self.mode.name().to_string(),
        }
    }
}

/// [`DwDesign`] in JSON by the name users type (`null` for rows of other modes).
pub mod design_name {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};
    use syncbench_engine::pages::DwDesign;

    /// `"pipelined"` or `null`.
    pub fn serialize<S: Serializer>(design: &Option<DwDesign>, s: S) -> Result<S::Ok, S::Error> {
        match design {
            Some(d) => s.serialize_some(d.name()),
            None => s.serialize_none(),
        }
    }

    /// From `"pipelined"` or `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DwDesign>, D::Error> {
        let Some(name) = Option::<String>::deserialize(d)? else { return Ok(None) };
        DwDesign::from_name(&name)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("unknown dw design {name:?}; expected 2012 or pipelined")))
    }
}

/// The command's JSON payload.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PagesPayload {
    /// The table.
    pub pages: PagesTable,
    /// Interrupted (Ctrl-C, SIGTERM) before every round of every row ran: the rows are what was finished,
    /// each from the rounds it completed (as `run`'s `partial`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// Rows of the table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
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
    /// `pipelined` rows: batches in the double-write ring (absent without such rows, and in older files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dw_ring_batches: Option<usize>,
    /// One row per buffer-pool size and mode.
    pub rows: Vec<PagesRow>,
}

/// What to run, validated.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Where the store directories go.
    pub dir: PathBuf,
    /// Where the log's directory goes, when not in the store's.
    pub wal_dir: Option<PathBuf>,
    /// Where the double-write area's directory goes, when not in the store's.
    pub dw_dir: Option<PathBuf>,
    /// Append each acknowledged transaction id here (kill -9 tests).
    pub ack_log: Option<PathBuf>,
    /// Modes, in the order run.
    pub modes: Vec<Mode>,
    /// Double-write designs: one `dw` row per design, in this order.
    pub dw_designs: Vec<DwDesign>,
    /// Buffer-pool sizes, one row per size and mode.
    pub pools_bytes: Vec<usize>,
    /// Seconds per row, split over `rounds` rounds.
    pub secs: f64,
    /// Rounds per row (1 with `ack_log`: see [`Plan::rounds_run`]).
    pub rounds: u32,
    /// Seconds between checkpoints.
    pub checkpoint_secs: f64,
    /// Branches.
    pub scale: u32,
    /// Accounts per branch.
    pub accounts_per_branch: u32,
    /// Concurrent clients.
    pub clients: usize,
    /// Page size in bytes.
    pub page_size: usize,
    /// Pages per double-write batch.
    pub dw_batch: usize,
    /// `pipelined`: batches in the double-write ring.
    pub dw_ring_batches: usize,
}

impl Plan {
    /// The store configuration of one row.
    pub fn store_config(&self, mode: Mode, design: DwDesign, pool_bytes: usize) -> StoreConfig {
        let mut config = Bank::<RealStorage>::store_config(mode);
        config.page_size = self.page_size;
        config.buffer_pool_bytes = pool_bytes;
        config.dw_batch_pages = self.dw_batch;
        config.dw_design = design;
        config.dw_ring_batches = self.dw_ring_batches;
        config
    }

    /// The rows of one buffer-pool size, in order: every mode, `dw` once per design.
    pub fn variants(&self) -> Vec<(Mode, DwDesign)> {
        let mut out = Vec::new();
        for &mode in &self.modes {
            match mode {
                Mode::Dw => out.extend(self.dw_designs.iter().map(|&d| (mode, d))),
                _ => out.push((mode, DwDesign::default())),
            }
        }
        out
    }

    /// Rounds each row runs: [`Plan::rounds`], but one with `--ack-log` (the kill -9 test recovers the
    /// store that was running and checks every acknowledged id in it; ids of an earlier round's store,
    /// removed, could not be found).
    pub fn rounds_run(&self) -> u32 {
        if self.ack_log.is_some() { 1 } else { self.rounds.max(1) }
    }

    /// Seconds of one round.
    pub fn round_secs(&self) -> f64 {
        self.secs / f64::from(self.rounds_run())
    }

    fn bank_config(&self) -> BankConfig {
        BankConfig { scale: self.scale, accounts_per_branch: self.accounts_per_branch }
    }

    /// Bytes the tables take on disk once loaded: every branch, teller and account row in pages.
    pub fn data_bytes(&self) -> u64 {
        let rows = u64::from(self.scale) * (1 + 10 + u64::from(self.accounts_per_branch));
        let body = syncbench_engine::pages::page::body_range(self.page_size).len() as u64;
        rows.div_ceil(body / ROW_BYTES) * self.page_size as u64
    }

    /// Free space each directory needs before the first row starts: the tables where the store goes, the
    /// log's segments (current, preallocated and spares) and a double-write batch where those go. A row's
    /// store is removed before the next one starts, so one row's worth is what must fit.
    pub fn space_needed(&self) -> Vec<(&Path, u64)> {
        let wal = self.store_config(Mode::Fpw, DwDesign::default(), 0).wal;
        let wal_bytes =
            (1 + u64::from(wal.preallocate_segments) + u64::from(wal.max_spare_segments)) * wal.segment_bytes;
        let ring = if self.dw_designs.contains(&DwDesign::Pipelined) { self.dw_ring_batches } else { 0 };
        let dw_slots = (2 + ring) * self.dw_batch;
        let dw_bytes = if self.modes.contains(&Mode::Dw) { (dw_slots * self.page_size) as u64 } else { 0 };
        let mut need: Vec<(&Path, u64)> = vec![(&self.dir, self.data_bytes())];
        for (extra, bytes) in [(&self.wal_dir, wal_bytes), (&self.dw_dir, dw_bytes)] {
            match extra {
                Some(d) => need.push((d, bytes)),
                None => need[0].1 += bytes,
            }
        }
        need
    }
}

/// Bytes of one account, teller or branch row (the engine's `ROW_BYTES`).
const ROW_BYTES: u64 = 100;

/// Rounds per row by default and with `--quick`: three, the fewest that give a prediction interval
/// ([`crate::measure::rounds::prediction`], t(2) = 4.3) that is not vacuous.
pub const ROUNDS: u32 = 3;

/// `--secs` when not given: [`ROUNDS`] rounds, each 1.2 × the checkpoint interval (at least 1 s), so every
/// round of every mode completes a checkpoint (a round starts from a fresh store, see [`run_all`]).
pub fn default_secs(checkpoint_secs: f64) -> f64 {
    (checkpoint_secs * 1.2).clamp(1.0, 30.0) * f64::from(ROUNDS)
}

/// `--checkpoint-secs` when not given: 5 s, 1 s with `--quick` (so `--quick`'s rounds each checkpoint
/// and the whole run stays near 15 s).
pub fn default_checkpoint_secs(quick: bool) -> f64 {
    if quick { 1.0 } else { 5.0 }
}

/// Run every (buffer pool, mode) row of `plan` in rounds: each round runs every mode of one buffer-pool
/// size once, in an order that changes every round ([`crate::measure::rounds::order`]), so a slow phase of the
/// disk spreads over the modes instead of landing on one. `progress` is called before each round of a row
/// (label, pool, round 1-based). `monitor` watches the device and the CPU during each round. Each row, as
/// its rounds finish, is kept in `partial` (one slot per pool and variant, in table order) for a Ctrl-C
/// report.
///
/// Every round creates, loads and removes its own store rather than measuring windows of one store per
/// mode: a store kept open carries dirty pages, a half-full log segment and a checkpoint timer from its
/// previous round, and the kernel may still be writing back the previous mode's files, so a round's
/// numbers would depend on what ran before it. A fresh store starts every round from the same state
/// (tables loaded and synced, nothing dirty), and the previous store was closed, synced and removed.
pub fn run_all(
    plan: &Plan,
    monitor: Option<&Monitor>,
    progress: impl Fn(&str, usize, u32),
    partial: &crate::core::partial::Partial<PagesRow>,
) -> anyhow::Result<PagesTable> {
    let mut rows = Vec::new();
    for (pool_index, &pool) in plan.pools_bytes.iter().enumerate() {
        let variants = plan.variants();
        let mut measured: Vec<RowRounds> = variants.iter().map(|_| RowRounds::default()).collect();
        for round in 0..plan.rounds_run() {
            for i in crate::measure::rounds::order(variants.len(), round) {
                let (mode, design) = variants[i];
                let row = &mut measured[i];
                if row.unsupported.is_some() {
                    continue;
                }
                progress(&label(mode, design), pool, round + 1);
                match run_round(plan, (mode, design), pool, monitor, row)? {
                    Ok(r) => row.rounds.push(r),
                    Err(why) => row.unsupported = Some(why),
                }
                partial.update(pool_index * variants.len() + i, Some(&row.row((mode, design), pool)));
            }
        }
        rows.extend(variants.iter().zip(measured).map(|(&v, m)| m.row(v, pool)));
    }
    Ok(table_of(plan, rows))
}

/// The table of `plan` with `rows` (all of them, or those with finished rounds for a Ctrl-C report).
pub fn table_of(plan: &Plan, rows: Vec<PagesRow>) -> PagesTable {
    PagesTable {
        scale: plan.scale,
        clients: plan.clients,
        page_size_bytes: plan.page_size,
        checkpoint_secs: plan.checkpoint_secs,
        dw_batch_pages: plan.dw_batch,
        dw_ring_batches: plan.dw_designs.contains(&DwDesign::Pipelined).then_some(plan.dw_ring_batches),
        rows,
    }
}

/// The rounds of one row so far.
#[derive(Default)]
struct RowRounds {
    rounds: Vec<RoundRun>,
    disturbance: CaseDisturbance,
    /// Why the mode cannot run here (found in its first round).
    unsupported: Option<String>,
}

/// What one round of one row did.
struct RoundRun {
    report: RunReport,
    /// The store's counters over the round (after − before).
    stats: StoreStats,
    device: Option<crate::observe::blockdev::account::DeviceAccounting>,
}

impl RoundRun {
    /// The round as `run`'s rounds are, for [`Pooled`]: its commit latencies over its wall time.
    fn measurement(&self) -> Measurement {
        Measurement {
            samples: Samples::of(&self.report.latencies_ns),
            duration_ns: u64::try_from(self.report.elapsed.as_nanos()).unwrap_or(u64::MAX),
            stop: StopReason::Budget,
            warmup_ops: 0,
            halves: [(0, 0); 2],
            started_ns: 0,
            windows: Vec::new(),
        }
    }

    fn tps(&self) -> f64 {
        let secs = self.report.elapsed.as_secs_f64();
        if secs > 0.0 { self.report.acknowledged as f64 / secs } else { 0.0 }
    }
}

impl RowRounds {
    /// The row: rounds that saw foreign I/O are left out when at least two rounds and half of them were
    /// clean, else (and whenever CPU steal was named) the row is a lower bound — `run`'s rule
    /// ([`crate::measure::runner::result_from_rounds`]). The interval is [`Pooled::interval`] of the rounds used.
    fn row(&self, variant: (Mode, DwDesign), pool: usize) -> PagesRow {
        let (mode, design) = variant;
        if let Some(why) = self.unsupported.clone() {
            return PagesRow {
                mode,
                dw_design: (mode == Mode::Dw).then_some(design),
                buffer_pool_bytes: pool as u64,
                error: Some(why),
                ..PagesRow::default()
            };
        }
        // The rounds the rate is taken from, by run's rule.
        let RoundChoice { used, left_out, lower_bound } = RoundChoice::of(self.rounds.len(), &self.disturbance);
        let used: Vec<&RoundRun> = used.iter().map(|&i| &self.rounds[i]).collect();
        let mut report = RunReport::default();
        let mut stats = StoreStats::default();
        for r in &used {
            report.acknowledged += r.report.acknowledged;
            report.elapsed += r.report.elapsed;
            report.latencies_ns.extend_from_slice(&r.report.latencies_ns);
            add_stats(&mut stats, &r.stats);
        }
        report.latencies_ns.sort_unstable();
        let measurements: Vec<Measurement> = used.iter().map(|r| r.measurement()).collect();
        let interval = Pooled::of(&measurements).interval();
        PagesRow {
            device: crate::observe::blockdev::account::DeviceAccounting::pooled(
                used.iter().filter_map(|r| r.device.as_ref()),
            ),
            rounds_tps: self.rounds.iter().map(RoundRun::tps).collect(),
            tps_low: Some(interval.low),
            tps_high: (!lower_bound).then_some(interval.high),
            lower_bound,
            disturbances: self.disturbance.named(self.rounds.len(), left_out),
            ..row(variant, pool, &report, StoreStats::default(), stats)
        }
    }
}

/// `sum += delta`, every counter.
fn add_stats(sum: &mut StoreStats, delta: &StoreStats) {
    let StoreStats {
        wal_bytes,
        fpi_bytes,
        wal_syncs,
        home_bytes,
        dw_bytes,
        data_syncs,
        eviction_writes,
        evictions_waited_for_dw,
        dw_syncs,
        dw_pages_spooled,
        dw_pages_respooled,
        checkpoints,
        checkpoint_secs_total,
        dw_restored_pages,
        redo_records,
        dw_scan_reads,
    } = *delta;
    sum.wal_bytes += wal_bytes;
    sum.fpi_bytes += fpi_bytes;
    sum.wal_syncs += wal_syncs;
    sum.home_bytes += home_bytes;
    sum.dw_bytes += dw_bytes;
    sum.data_syncs += data_syncs;
    sum.eviction_writes += eviction_writes;
    sum.evictions_waited_for_dw += evictions_waited_for_dw;
    sum.dw_syncs += dw_syncs;
    sum.dw_scan_reads += dw_scan_reads;
    sum.dw_pages_spooled += dw_pages_spooled;
    sum.dw_pages_respooled += dw_pages_respooled;
    sum.checkpoints += checkpoints;
    sum.checkpoint_secs_total += checkpoint_secs_total;
    sum.dw_restored_pages += dw_restored_pages;
    sum.redo_records += redo_records;
}

/// `after − before`, every counter.
fn stats_delta(before: &StoreStats, after: &StoreStats) -> StoreStats {
    let mut delta = StoreStats::default();
    add_stats(&mut delta, after);
    let b = before;
    delta.wal_bytes -= b.wal_bytes;
    delta.fpi_bytes -= b.fpi_bytes;
    delta.wal_syncs -= b.wal_syncs;
    delta.home_bytes -= b.home_bytes;
    delta.dw_bytes -= b.dw_bytes;
    delta.data_syncs -= b.data_syncs;
    delta.eviction_writes -= b.eviction_writes;
    delta.evictions_waited_for_dw -= b.evictions_waited_for_dw;
    delta.dw_syncs -= b.dw_syncs;
    delta.dw_pages_spooled -= b.dw_pages_spooled;
    delta.dw_pages_respooled -= b.dw_pages_respooled;
    delta.checkpoints -= b.checkpoints;
    delta.checkpoint_secs_total -= b.checkpoint_secs_total;
    delta.dw_restored_pages -= b.dw_restored_pages;
    delta.redo_records -= b.redo_records;
    delta
}

/// A `.syncbench-<what>-*` directory inside `parent`, registered for removal. The parent is fsynced so
/// the new directory's name is durable (the store inside it must survive a power cut to be recovered).
fn own_dir(parent: &Path, what: &str) -> anyhow::Result<Created> {
    let path = parent.join(unique_name(what));
    let (guard, ()) = Created::create(path.clone(), |p| {
        std::fs::create_dir(p).with_context(|| format!("cannot create {}", p.display()))
    })?;
    RealStorage
        .sync_dir(parent)
        .with_context(|| format!("cannot fsync {} after creating {}", parent.display(), path.display()))?;
    Ok(guard)
}

/// How a row is named in progress lines and tables: `dw-2012`, `dw-pipelined`, or the mode.
pub fn label(mode: Mode, design: DwDesign) -> String {
    match mode {
        Mode::Dw => format!("dw-{}", design.name()),
        _ => mode.name().to_string(),
    }
}

/// One round of one row in a store of its own: `Ok(Err(why))` when the mode cannot run here. The
/// disturbance window covers the timed workload only (not the load of the tables, which is ours).
fn run_round(
    plan: &Plan,
    variant: (Mode, DwDesign),
    pool_bytes: usize,
    monitor: Option<&Monitor>,
    row: &mut RowRounds,
) -> anyhow::Result<Result<RoundRun, String>> {
    let (mode, design) = variant;
    let store_dir = own_dir(&plan.dir, "pages")?;
    let wal_dir = plan.wal_dir.as_deref().map(|d| own_dir(d, "pages-wal")).transpose()?;
    let dw_dir = plan.dw_dir.as_deref().map(|d| own_dir(d, "pages-dw")).transpose()?;
    let mut config = plan.store_config(mode, design, pool_bytes);
    config.wal_dir = wal_dir.as_ref().map(|g| g.path().to_path_buf());
    config.dw_dir = dw_dir.as_ref().filter(|_| mode == Mode::Dw).map(|g| g.path().to_path_buf());
    if mode == Mode::Atomic
        && let Err(why) = atomic_support(store_dir.path(), plan.page_size)
    {
        return Ok(Err(why));
    }
    let created = CreatedDirs { wal: wal_dir.as_ref().map(Created::path), dw: dw_dir.as_ref().map(Created::path) };
    recover::write_settings(store_dir.path(), plan, (mode, design), pool_bytes, created)?;
    let bank = Bank::create(RealStorage, store_dir.path(), config, plan.bank_config())
        .with_context(|| format!("creating the {} store in {}", mode.name(), store_dir.path().display()))?;
    let accountant = crate::observe::blockdev::account::Accountant::for_dir(
        store_dir.path(),
        crate::observe::blockdev::account::is_root(),
    );
    let window = (!accountant.is_empty()).then(|| accountant.open());
    let watch = monitor.map(Monitor::start);
    let before = bank.store().stats();
    let report = run_workload(plan, &bank)?;
    let after = bank.store().stats();
    let stats = stats_delta(&before, &after);
    let written = stats.wal_bytes + stats.home_bytes + stats.dw_bytes;
    let txns = report.acknowledged;
    if let (Some(monitor), Some(watch)) = (monitor, watch) {
        let ours = OurWork { commits: txns, bytes: written, writeback_bytes: 0 };
        monitor.finish(watch, ours, row.rounds.len() + 1, &mut row.disturbance);
    }
    let device = window.map(|w| accountant.close(w, txns, written / txns.max(1)).report());
    if let Some(err) = &report.error {
        return Err(anyhow::anyhow!("the {} run failed: {err}", mode.name()));
    }
    bank.check_invariants().map_err(|e| CheckFailed(format!("{} run: {e}", mode.name())))?;
    bank.close().with_context(|| format!("closing the {} store", mode.name()))?;
    Ok(Ok(RoundRun { report, stats, device }))
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
pub(crate) struct CreatedDirs<'a> {
    pub(crate) wal: Option<&'a Path>,
    pub(crate) dw: Option<&'a Path>,
}

fn run_workload(plan: &Plan, bank: &Bank<RealStorage>) -> anyhow::Result<RunReport> {
    let spec = RunSpec {
        clients: plan.clients,
        duration: Some(Duration::from_secs_f64(plan.round_secs())),
        max_txns: None,
        checkpoint_every: Duration::from_secs_f64(plan.checkpoint_secs),
        seed: 0x5EED,
    };
    let Some(path) = &plan.ack_log else {
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

fn row(variant: (Mode, DwDesign), pool: usize, report: &RunReport, before: StoreStats, after: StoreStats) -> PagesRow {
    let (mode, design) = variant;
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
        mode,
        dw_design: (mode == Mode::Dw).then_some(design),
        supported: true,
        error: None,
        buffer_pool_bytes: pool as u64,
        tps: if duration_s > 0.0 { txns as f64 / duration_s } else { 0.0 },
        latency_ns: Samples::of(&report.latencies_ns).latency(),
        wal_bytes_per_txn: per_txn(wal, txns),
        fpi_share: if wal == 0 { 0.0 } else { fpi as f64 / wal as f64 },
        data_bytes_per_txn: per_txn(home + dw, txns),
        dw_bytes_per_txn: per_txn(dw, txns),
        fsyncs_per_txn: per_txn(syncs, txns),
        checkpoint_duration_s_mean: if checkpoints == 0 { 0.0 } else { checkpoint_secs / checkpoints as f64 },
        checkpoints,
        eviction_writes: after.eviction_writes - before.eviction_writes,
        evictions_waited_for_dw: after.evictions_waited_for_dw - before.evictions_waited_for_dw,
        dw_syncs_per_txn: per_txn(after.dw_syncs - before.dw_syncs, txns),
        dw_pages_written_ahead: after.dw_pages_spooled - before.dw_pages_spooled,
        dw_pages_rewritten_before_eviction: after.dw_pages_respooled - before.dw_pages_respooled,
        txns,
        duration_s,
        ..PagesRow::default()
    }
}

/// How a row compares with the `none` row of its buffer pool.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Versus {
    /// `tps / none's tps − 1`, in percent.
    pub pct: f64,
    /// Whether the two rows' 95% intervals are apart (`Some(false)`: they overlap, the difference is
    /// inside the noise); `None` when a row has no interval (files from before rounds).
    pub beyond_noise: Option<bool>,
}

impl PagesRow {
    /// The 95% interval of a re-run's tps: `(low, high)`, high infinite for a lower bound; None in files
    /// from before rounds.
    pub fn interval(&self) -> Option<(f64, f64)> {
        let low = self.tps_low?;
        Some((low, if self.lower_bound { f64::INFINITY } else { self.tps_high? }))
    }

    /// The tps with its re-run interval; None in files from before rounds.
    pub fn estimate(&self) -> Option<crate::core::stats::Estimate> {
        let (low, high) = self.interval()?;
        Some(crate::core::stats::Estimate::new(self.tps, low, high))
    }

    /// `±12%` or `×/÷ 16` ([`crate::core::stats::Estimate::column`]), `≥` for a lower bound, `-` without one.
    pub fn noise_text(&self) -> String {
        match self.estimate() {
            _ if self.lower_bound => "≥ (disturbed)".to_string(),
            Some(e) if self.tps > 0.0 => e.column(),
            _ => "-".to_string(),
        }
    }
}

/// `r` against the `none` row of its buffer pool in `t`, when there is one that ran.
pub fn versus_none(t: &PagesTable, r: &PagesRow) -> Option<Versus> {
    let b = t.rows.iter().find(|b| b.mode == Mode::None && b.buffer_pool_bytes == r.buffer_pool_bytes)?;
    if !(b.supported && r.supported && b.tps > 0.0) {
        return None;
    }
    let decided = |(r, b)| !matches!(crate::core::stats::decide(&r, &b), crate::core::stats::Decision::Undecided);
    let beyond_noise = r.estimate().zip(b.estimate()).map(decided);
    Some(Versus { pct: (r.tps / b.tps - 1.0) * 100.0, beyond_noise })
}

pub fn verdicts(rows: &[PagesRow]) -> Vec<Verdict> {
    let mut out = Vec::new();
    if rows.iter().any(|r| r.mode == Mode::None) {
        out.push(Verdict {
            severity: Severity::Info,
            code: crate::core::verdict::VerdictCode::PagesNoneUnsafe.name().into(),
            message: "Mode none has no torn-page protection: a power cut during a page write can leave a page \
                      that recovery cannot repair."
                .to_string(),
            advice: "Use it only as the baseline the other modes are compared with.".to_string(),
        });
    }
    if let Some(r) = rows.iter().find(|r| r.mode == Mode::Atomic && !r.supported) {
        out.push(Verdict {
            severity: Severity::Info,
            code: crate::core::verdict::VerdictCode::PagesAtomicUnsupported.name().into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A round of `tps` transactions over one second, each commit taking the same time.
    fn round(tps: u64) -> RoundRun {
        let report = RunReport {
            acknowledged: tps,
            latencies_ns: vec![1_000_000_000 / tps; tps as usize],
            elapsed: Duration::from_secs(1),
            ..RunReport::default()
        };
        RoundRun { report, stats: StoreStats { checkpoints: 1, ..StoreStats::default() }, device: None }
    }

    #[test]
    fn the_interval_comes_from_the_spread_between_rounds() {
        let rows = RowRounds { rounds: vec![round(1000), round(2000), round(1000)], ..RowRounds::default() };
        let r = rows.row((Mode::Fpw, DwDesign::default()), 1 << 20);
        assert_eq!(r.rounds_tps, vec![1000.0, 2000.0, 1000.0]);
        assert!((r.tps - 4000.0 / 3.0).abs() < 1e-9 && r.checkpoints == 3, "{r:?}");
        // Every commit of a round takes the same time: only the rounds' spread makes the interval.
        let p = crate::measure::rounds::prediction(&[1000.0, 2000.0, 1000.0]).unwrap();
        assert!((r.tps_low.unwrap() - p.low).abs() < 1e-6 && (r.tps_high.unwrap() - p.high).abs() < 1e-6, "{r:?}");
        assert!(r.tps_low.unwrap() < 700.0 && r.tps_high.unwrap() > 2500.0, "{r:?}");
        assert!(!r.lower_bound && r.disturbances.is_empty());
        // Rounds that agree give a narrow interval: the spread, not a fixed margin, is what widened it.
        let steady = RowRounds { rounds: vec![round(1000), round(1000), round(1000)], ..RowRounds::default() };
        let s = steady.row((Mode::Fpw, DwDesign::default()), 1 << 20);
        assert!(s.tps_high.unwrap() / s.tps_low.unwrap() < 1.01, "{s:?}");
        // A wide interval reads as a factor, never as a ± above 100%.
        assert!(s.noise_text() == "±0.0%" && r.noise_text().starts_with("×/÷ "), "{}", r.noise_text());
    }

    #[test]
    fn an_unsupported_mode_has_no_interval() {
        let rows = RowRounds { unsupported: Some("no atomic writes".into()), ..RowRounds::default() };
        let r = rows.row((Mode::Atomic, DwDesign::default()), 1 << 20);
        assert!(!r.supported && r.tps_low.is_none() && r.error.as_deref() == Some("no atomic writes"));
    }

    #[test]
    fn versus_none_says_when_the_intervals_overlap() {
        let row = |mode: &str, tps, low, high| PagesRow {
            mode: Mode::from_name(mode).expect("a mode"),
            supported: true,
            tps,
            tps_low: Some(low),
            tps_high: Some(high),
            ..PagesRow::default()
        };
        let mut t = PagesTable {
            rows: vec![row("none", 1000.0, 800.0, 1200.0), row("dw", 700.0, 500.0, 900.0)],
            ..PagesTable::default()
        };
        let v = versus_none(&t, &t.rows[1]).unwrap();
        assert!((v.pct + 30.0).abs() < 1e-9 && v.beyond_noise == Some(false));
        t.rows[1].tps_high = Some(790.0);
        assert_eq!(versus_none(&t, &t.rows[1]).unwrap().beyond_noise, Some(true));
        t.rows[1].lower_bound = true;
        assert_eq!(versus_none(&t, &t.rows[1]).unwrap().beyond_noise, Some(false), "a lower bound is open upwards");
    }
}
