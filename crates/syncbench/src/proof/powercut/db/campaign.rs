//! The campaign: per cell (database × settings × profile × fs) one lab stack and a fresh database on its
//! mount; per cut: load from several clients for a seeded 200–1200 ms (acks to an in-memory witness), the
//! power goes (every process frozen, witness off, the disk cut under the I/O in flight, then the processes
//! killed; journal replay at the remount), the server recovers, and what it holds is verified against every
//! ack of this data so far. After a failed recovery, a failed integrity check or a broken invariant, the
//! cell goes on with a fresh database.

use super::aim::{AimAt, FileMap, FileRole};
use super::cell::{AimedCut, DbCell, DbCut, IntegrityResult, RecoveryFailure};
use super::verify::verify;
use super::workload::{AckWitness, ClientEnd, TransferSource, drive};
use super::{DbKind, Server, Transfer};
use crate::core::hash::splitmix64_next as splitmix64;
use crate::proof::lab::profile::{DeviceParams, Honesty, LabFs, Profile};
use crate::proof::lab::stack::{CutAim, CutOutcome, Stack, StackConfig};
use crate::proof::powercut::lab::{CUT_AFTER_MS_MAX, CUT_AFTER_MS_MIN};
use anyhow::Context;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct DbPlan {
    /// The database.
    pub kind: DbKind,
    /// `--set` KEY=VALUE pairs, in order.
    pub settings: Vec<(String, String)>,
    /// Lab profiles.
    pub profiles: Vec<Profile>,
    /// File systems.
    pub fss: Vec<LabFs>,
    /// Cuts per cell.
    pub cuts: u32,
    /// Seed of the cut moments, the cuts and the transfers.
    pub seed: u64,
    /// Client threads.
    pub clients: u32,
    /// Accounts.
    pub accounts: u32,
    /// The device's untorn unit instead of the profiles' (`--untorn`).
    pub untorn_bytes: Option<u64>,
    /// Aim each cut at a write in flight (`--aim`), else cut at the seeded moment.
    pub aim: Option<AimAt>,
}

/// The cells so far, shared with the Ctrl-C handler (which prints and exports them, marked partial).
#[derive(Clone, Default)]
pub struct CellStore(Arc<Mutex<Option<Vec<DbCell>>>>);

impl CellStore {
    /// Cell `index` now stands at `cell`.
    pub fn update(&self, index: usize, cell: &DbCell) {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let cells = guard.get_or_insert_with(Vec::new);
        match cells.get_mut(index) {
            Some(slot) => *slot = cell.clone(),
            None => cells.push(cell.clone()),
        }
    }
    /// The cells so far (`None` once [`CellStore::finish`] took them).
    pub fn snapshot(&self) -> Option<Vec<DbCell>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    /// Take the cells: the command reports them itself, the Ctrl-C handler no longer does.
    pub fn finish(&self) -> Vec<DbCell> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_default()
    }
}

/// The database the cuts run on, and what was sent to it and acknowledged since it was made.
struct Data {
    dir: PathBuf,
    /// Where its files lie on the device (with `--aim`: mapped after it was made and after each reboot).
    map: FileMap,
    acked: HashSet<u64>,
    issued: HashMap<u64, Transfer>,
}

/// Run the plan; `progress` is told of every cut. Returns early (with what is done) on Ctrl-C. A server that
/// refuses its settings at the first `create` is a usage error (exit 2).
pub fn run(plan: &DbPlan, store: &CellStore, mut progress: impl FnMut(&DbCell, &DbCut)) -> anyhow::Result<Vec<DbCell>> {
    let cells = CellPlan {
        profiles: &plan.profiles,
        fss: &plan.fss,
        cuts: plan.cuts,
        seed: plan.seed,
        untorn_bytes: plan.untorn_bytes,
    };
    run_cells(&cells, store, &mut progress, || {
        let server = super::server_for(plan.kind, &plan.settings).map_err(crate::core::exit::usage)?;
        Ok(DbTarget { plan, server, data: None })
    })
}

/// What every cell of a campaign shares: where and how often the power goes.
pub(super) struct CellPlan<'a> {
    /// Lab profiles.
    pub profiles: &'a [Profile],
    /// File systems.
    pub fss: &'a [LabFs],
    /// Cuts per cell.
    pub cuts: u32,
    /// Seed of the disks, the cut moments and the cuts.
    pub seed: u64,
    /// The device's untorn unit instead of the profiles'.
    pub untorn_bytes: Option<u64>,
}

/// What a campaign cuts the power under: a database driver (`powercut db`) or shell commands (`powercut run`).
pub(super) trait Target {
    /// The cell's row before its first cut.
    fn cell(&self, profile: &Profile, fs: LabFs, untorn_bytes: u64) -> DbCell;
    /// Fresh data number `n` on the mount, with its program started on it. A failure of the first (`n` = 0)
    /// is the user's settings or commands: a usage error.
    fn fresh(&mut self, stack: &Stack, n: u32) -> anyhow::Result<()>;
    /// Load, cut, recover, verify (`at`: cell and cut index). `Err` only when the lab itself failed.
    fn cut(&mut self, stack: &mut Stack, at: (u32, u32), rng: &mut u64) -> anyhow::Result<DbCut>;
    /// Stop the program (before fresh data, and at the cell's end).
    fn stop(&mut self);
}

/// Every profile × fs a cell: one lab stack, one target made by `target`, the cuts.
pub(super) fn run_cells<T: Target>(
    plan: &CellPlan,
    store: &CellStore,
    progress: &mut impl FnMut(&DbCell, &DbCut),
    mut target: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<Vec<DbCell>> {
    let mut rng = plan.seed;
    let mut index = 0;
    for profile in plan.profiles {
        for &fs in plan.fss {
            let stack_seed = splitmix64(&mut rng);
            let done = crate::proof::lab::stack::run_exclusive(|| {
                let params = cell_params(profile, plan.untorn_bytes);
                let config = StackConfig { seed: stack_seed, ..StackConfig::new(fs.case(), params) };
                let mut target = target()?;
                run_cell(plan, &mut target, (profile, fs, config), (index, &mut rng), store, progress)
            });
            match done {
                Some(result) => result?,
                None => return Ok(store.snapshot().unwrap_or_default()),
            }
            index += 1;
        }
    }
    Ok(store.snapshot().unwrap_or_default())
}

fn run_cell<T: Target>(
    plan: &CellPlan,
    target: &mut T,
    (profile, fs, config): (&Profile, LabFs, StackConfig),
    (index, rng): (usize, &mut u64),
    store: &CellStore,
    progress: &mut impl FnMut(&DbCell, &DbCut),
) -> anyhow::Result<()> {
    let started = Instant::now();
    let build = || {
        let stack = Stack::build(config.clone())
            .with_context(|| format!("building a {} lab disk with {}", profile.name, fs.case().name()))?;
        RecordedStack::new(stack)
    };
    let mut cell = target.cell(profile, fs, config.params.untorn_bytes);
    let mut stack = build()?;
    target.fresh(&stack, 0)?;
    while cell.cuts.len() < plan.cuts as usize && !crate::core::cleanup::interrupted() {
        let cut = target.cut(&mut stack, (index as u32, cell.cuts.len() as u32), rng)?;
        if crate::core::cleanup::interrupted() {
            break;
        }
        progress(&cell, &cut);
        let damaged = cut.damaged();
        cell.cuts.push(cut);
        cell.elapsed_s = started.elapsed().as_secs_f64();
        store.update(index, &cell);
        if damaged && cell.cuts.len() < plan.cuts as usize {
            target.stop();
            cell.fresh_databases += 1;
            if target.fresh(&stack, cell.fresh_databases).is_err() {
                // The cut left a file system that takes no new data: a new disk.
                drop(std::mem::replace(&mut stack, build()?));
                target.fresh(&stack, cell.fresh_databases)?;
            }
        }
    }
    target.stop();
    drop(stack);
    cell.elapsed_s = started.elapsed().as_secs_f64();
    store.update(index, &cell);
    Ok(())
}

/// Why losses are expected in this cell, if they are: a negative-control setting or a lying disk. Torn-page
/// protection turned off is expected to lose only where the device's untorn unit is smaller than a page.
fn expected_loss(plan: &DbPlan, profile: &Profile, untorn_bytes: u64) -> Option<String> {
    let pages_untorn = untorn_bytes >= super::aim::page_bytes(plan.kind, &plan.settings);
    super::controls::known_unsafe_on(plan.kind, &plan.settings, pages_untorn).or_else(|| {
        (profile.params.honesty == Honesty::IgnoresFlush)
            .then(|| format!("the disk ({}) ignores flushes", profile.name))
    })
}

/// `powercut db`'s target: one database server and the data it holds now.
struct DbTarget<'a> {
    plan: &'a DbPlan,
    server: Box<dyn Server>,
    data: Option<Data>,
}

impl Target for DbTarget<'_> {
    fn cell(&self, profile: &Profile, fs: LabFs, untorn_bytes: u64) -> DbCell {
        let plan = self.plan;
        DbCell {
            db: plan.kind.name().into(),
            version: self.server.version(),
            settings: super::controls::settings_text(&plan.settings),
            profile: profile.name.into(),
            honesty: profile.params.honesty.name().into(),
            fs: fs.case().name().into(),
            expected_loss: expected_loss(plan, profile, untorn_bytes),
            untorn_bytes,
            aim: plan.aim.map(|at| at.words(super::aim::page_bytes(plan.kind, &plan.settings))),
            cuts: Vec::new(),
            fresh_databases: 0,
            elapsed_s: 0.0,
        }
    }

    fn fresh(&mut self, stack: &Stack, n: u32) -> anyhow::Result<()> {
        let kind = self.plan.kind;
        let mut data = fresh_data(stack, self.server.as_mut(), self.plan.accounts, n).map_err(|e| match n {
            0 => crate::core::exit::usage(format!("{} would not make its database: {e:#}", kind.name())),
            _ => e,
        })?;
        if self.plan.aim.is_some() {
            data.map = FileMap::of(&data.dir);
        }
        self.data = Some(data);
        Ok(())
    }

    fn cut(&mut self, stack: &mut Stack, at: (u32, u32), rng: &mut u64) -> anyhow::Result<DbCut> {
        let data = self.data.as_mut().context("no database to cut under")?;
        one_cut(stack, self.server.as_mut(), data, self.plan, at, rng)
    }

    fn stop(&mut self) {
        self.server.stop();
    }
}

/// The profile's device, with `untorn_bytes` as its untorn unit if given.
pub(super) fn cell_params(profile: &Profile, untorn_bytes: Option<u64>) -> DeviceParams {
    let mut params = profile.params.clone();
    if let Some(bytes) = untorn_bytes {
        params.untorn_bytes = bytes;
    }
    params
}

/// A range of the disk no write touches: an aim at it never fires.
const NO_WRITE: std::ops::Range<u64> = 0..0;

/// The aim of a cut at writes of at least `min_write_bytes`: touching one of `within` if given (an empty
/// list aims at nothing: the cut comes unaimed at the wait's end), else not continuing a recent write.
pub(super) fn cut_aim(min_write_bytes: u64, within: Option<Vec<std::ops::Range<u64>>>) -> CutAim {
    let within = match within {
        Some(ranges) if ranges.is_empty() => vec![NO_WRITE],
        other => other.unwrap_or_default(),
    };
    CutAim { min_write_bytes, max_wait: super::aim::AIM_MAX_WAIT, within }
}

/// The power goes: at the next write `aim` matches (the load running on until it comes, at most
/// [`super::aim::AIM_MAX_WAIT`]), else at once. `at_power_off` runs the
/// moment the device lost power, before the reboot: it freezes the processes and stops the witness. An ack
/// that arrives between the device's cut and `at_power_off` is still held to account: every request after the
/// cut fails, so its commit was flushed before it. Ctrl-C: no cut (the teardown waits for this work to end).
pub(super) fn power_cut(
    stack: &mut Stack,
    seed: u64,
    aim: Option<CutAim>,
    at_power_off: impl FnOnce(),
) -> anyhow::Result<CutOutcome> {
    if crate::core::cleanup::interrupted() {
        at_power_off();
        anyhow::bail!("interrupted");
    }
    match aim {
        Some(aim) => stack.cut_aimed_then(seed, aim, at_power_off),
        None => {
            at_power_off();
            stack.cut(seed)
        }
    }
}

/// What an aimed cut waited for and hit: the write it tore or kept, looked up in `files` (the database's).
pub(super) fn aimed_cut(outcome: &CutOutcome, files: Option<(DbKind, &FileMap)>) -> Option<AimedCut> {
    let aim = outcome.aim.as_ref()?;
    let write = outcome.device.aimed_at.as_ref().filter(|_| aim.met);
    let landing = write.zip(files).map(|(w, (kind, map))| map.landing(kind, w.offset, w.len_bytes));
    Some(AimedCut {
        met: aim.met,
        waited_ms: aim.waited_ms,
        write_offset: write.map(|w| w.offset),
        write_bytes: write.map(|w| w.len_bytes),
        torn: write.is_some_and(|w| w.torn),
        landed_in: landing.as_ref().and_then(|l| l.role),
        file: landing.and_then(|l| l.file),
    })
}

/// A lab stack whose mount is recorded as a lab in the per-boot registry while it lives, with every process
/// started on it marked by its mount (`process::set_lab_mount`): after a `kill -9` of syncbench, the next
/// syncbench reports the database server still running there and `cleanup` kills it before it removes the
/// mounts and the loop device.
pub(super) struct RecordedStack {
    stack: Stack,
    _record: crate::core::registry::Recorded,
}

impl RecordedStack {
    pub(super) fn new(stack: Stack) -> anyhow::Result<RecordedStack> {
        let record = crate::core::registry::record_lab(stack.mount_dir())?;
        super::process::set_lab_mount(stack.mount_dir());
        Ok(RecordedStack { stack, _record: record })
    }
}

impl Drop for RecordedStack {
    fn drop(&mut self) {
        super::process::clear_lab_mount(self.stack.mount_dir());
    }
}

impl std::ops::Deref for RecordedStack {
    type Target = Stack;
    fn deref(&self) -> &Stack {
        &self.stack
    }
}

impl std::ops::DerefMut for RecordedStack {
    fn deref_mut(&mut self) -> &mut Stack {
        &mut self.stack
    }
}

/// A new database in `db-<n>` on the mount (the old one's directory is left to the lab's teardown).
fn fresh_data(stack: &Stack, server: &mut dyn Server, accounts: u32, n: u32) -> anyhow::Result<Data> {
    let dir = stack.mount_dir().join(format!("db-{n}"));
    super::process::create_durable_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    server.create(&dir, accounts)?;
    Ok(Data { dir, map: FileMap::default(), acked: HashSet::new(), issued: HashMap::new() })
}

/// Sleep `ms`, in steps, unless Ctrl-C comes first.
pub(super) fn sleep_unless_interrupted(ms: u64) {
    let until = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < until && !crate::core::cleanup::interrupted() {
        std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
    }
}

/// Load, cut, recover, verify. `Err` only when the lab itself failed.
fn one_cut(
    stack: &mut Stack,
    server: &mut dyn Server,
    data: &mut Data,
    plan: &DbPlan,
    (cell, cut_index): (u32, u32),
    rng: &mut u64,
) -> anyhow::Result<DbCut> {
    let seed = splitmix64(rng);
    let cut_after_ms = CUT_AFTER_MS_MIN + splitmix64(rng) % (CUT_AFTER_MS_MAX - CUT_AFTER_MS_MIN + 1);
    let clients = (0..plan.clients).map(|_| server.connect()).collect::<anyhow::Result<Vec<_>>>()?;
    let (witness, issued, stop) = (AckWitness::default(), Mutex::new(Vec::new()), AtomicBool::new(false));
    let started = Instant::now();
    let aim = plan.aim.map(|at| {
        let data_files = (at == AimAt::DataFiles).then(|| data.map.ranges(plan.kind, FileRole::Data));
        cut_aim(super::aim::page_bytes(plan.kind, &plan.settings), data_files)
    });
    let (ends, outcome, load_s) = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(i, mut client)| {
                let source = TransferSource::new(cell, cut_index, i as u32, plan.accounts, plan.seed);
                let (witness, issued, stop) = (&witness, &issued, &stop);
                s.spawn(move || drive(client.as_mut(), source, witness, issued, stop))
            })
            .collect();
        sleep_unless_interrupted(cut_after_ms);
        // The power goes: every process frozen where it is, acks refused, the disk cut under the I/O still
        // in flight (it fails), then the processes killed.
        let (mut frozen, mut load_s) = (Vec::new(), 0.0);
        let outcome = power_cut(stack, seed, aim, || {
            frozen = super::process::freeze_all();
            witness.power_off();
            load_s = started.elapsed().as_secs_f64();
        });
        server.kill();
        super::process::kill_frozen(&frozen);
        stop.store(true, Ordering::SeqCst);
        let ends: Vec<ClientEnd> = handles.into_iter().map(|h| h.join().unwrap_or_default()).collect();
        (ends, outcome, load_s)
    });
    let outcome = outcome.context("power cut and reboot")?;
    if plan.aim.is_some() {
        data.map = FileMap::of(&data.dir);
    }
    let acks = witness.acks();
    data.acked.extend(&acks);
    let issued = issued.into_inner().unwrap_or_else(|p| p.into_inner());
    data.issued.extend(issued.iter().map(|t| (t.id, *t)));
    let mut cut = DbCut {
        seed,
        cut_after_ms,
        acknowledged: acks.len() as u64,
        issued: issued.len() as u64,
        rolled_back: ends.iter().map(|e| e.rolled_back).sum(),
        client_errors: ends.into_iter().filter_map(|e| e.error_before_cut).collect(),
        transfers_per_s: acks.len() as f64 / load_s.max(1e-3),
        device_lost_writes: outcome.device.lost_writes,
        aim: aimed_cut(&outcome, Some((plan.kind, &data.map))),
        repaired_with: outcome.repaired_with,
        ..DbCut::default()
    };
    recover_and_check(server, data, plan.accounts, &mut cut);
    cut.cut_ms = started.elapsed().as_millis() as u64;
    Ok(cut)
}

/// The server's recovery, the read-back and verification, the database's own check.
fn recover_and_check(server: &mut dyn Server, data: &Data, accounts: u32, cut: &mut DbCut) {
    let restart = Instant::now();
    if let Err(failure) = server.start() {
        cut.recovery_failure = Some(RecoveryFailure { summary: failure.summary, log_excerpt: failure.log_excerpt });
        return;
    }
    cut.restart_ms = restart.elapsed().as_millis() as u64;
    match server.read_state() {
        Ok(state) => cut.verification = Some(verify(&state, &data.acked, &data.issued, accounts)),
        Err(e) => cut.read_error = Some(format!("reading {} back: {e:#}", data.dir.display())),
    }
    cut.integrity = Some(match server.check_integrity() {
        Ok(i) => IntegrityResult { ok: i.ok, detail: i.detail },
        Err(e) => IntegrityResult { ok: false, detail: format!("the check could not run: {e:#}") },
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aim_at_no_data_file_aims_at_nothing_instead_of_falling_back_to_any_write() {
        assert_eq!(cut_aim(8192, None).within, Vec::<std::ops::Range<u64>>::new(), "data-writes: the heuristic");
        let one = 4096..8192;
        assert_eq!(cut_aim(8192, Some(vec![one.clone()])).within, vec![one]);
        let nothing = cut_aim(8192, Some(Vec::new()));
        assert_eq!(nothing.within, vec![NO_WRITE], "an empty map must not turn into the heuristic");
        assert_eq!((nothing.min_write_bytes, nothing.max_wait), (8192, super::super::aim::AIM_MAX_WAIT));
    }
}
