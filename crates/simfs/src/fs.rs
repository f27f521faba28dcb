//! `SimFs`: the simulated file system behind the engine's `Storage` trait, plus the controls a crash test
//! needs (crash at operation K, marks such as "just acknowledged", injected writeback errors, eviction,
//! crash images).

use crate::inode::{Inode, ResidueCount, ResiduePolicy, Writeback};
use crate::namespace::{Ino, JournalModel, KeepPending, Namespace, NsOp};
use crate::rng::SimRng;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use syncbench_storage::{FileOptions, Storage, StorageFile, WriteSync};

/// Which file system's promises the simulator keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Profile {
    /// POSIX minimum: names durable only through a directory fsync, any order-respecting subset survives.
    #[default]
    Strict,
    /// ext4 `data=ordered`: a file's fsync (or an fdatasync that changes the size) commits the journal,
    /// including the file's create; a crash keeps a journal prefix.
    Ext4,
}

impl Profile {
    fn journal(self) -> JournalModel {
        match self {
            Profile::Strict => JournalModel::Strict,
            Profile::Ext4 => JournalModel::Prefix,
        }
    }

    /// The profile's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::Ext4 => "ext4",
        }
    }
}

/// How the simulated file system behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// The namespace and journal rules.
    pub profile: Profile,
    /// The device's atomic write unit: 512 or 4096 bytes. Crash images tear writes at these boundaries.
    pub sector_bytes: u64,
    /// Evict a file's clean pages right after a failed writeback, so reads at once return the old disk
    /// bytes (memory pressure at the worst moment: catches engines that trust the cache after an error).
    pub evict_after_error: bool,
    /// The device's untorn-write limit (`statx` `atomic_write_unit_max`): an `RWF_ATOMIC` write up to
    /// this size, aligned to it, is all or nothing; a larger or misaligned one fails with EINVAL, as on
    /// Linux. 0: the device has no untorn writes (every `RWF_ATOMIC` write fails).
    pub atomic_write_max_bytes: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            profile: Profile::Strict,
            sector_bytes: 512,
            evict_after_error: false,
            atomic_write_max_bytes: 65536,
        }
    }
}

/// What the power cut (or the process death) at the crash operation does to the machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CrashKind {
    /// Power loss: what was not durable may be lost ([`SimFs::crash_image`]).
    #[default]
    Power,
    /// The process dies: the page cache survives with every unsynced byte, and a new process may open
    /// the files and see them ([`SimFs::restart_process`]).
    Process,
}

/// The kind of storage operation about to run (for an [`OpHook`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// `write_at`.
    Write,
    /// `sync_data` or `sync_all`.
    Sync,
    /// `set_len`.
    SetLen,
    /// A create, rename, remove or directory fsync.
    Namespace,
}

/// Called before each counted storage operation, outside the simulator's lock, with the operation's
/// kind and file: a test harness uses it to interleave other clients' work with an operation in flight
/// (a group-commit flush, a checkpoint's page write) at a point fixed by its seed.
pub type OpHook = Arc<dyn Fn(OpKind, &Path) + Send + Sync>;

/// The LSN a page image carries.
pub type PageLsn = dyn Fn(&[u8]) -> u64 + Send + Sync;
/// What a power loss now would keep of a file: its bytes, if its name is durable.
pub type DurableFile<'a> = dyn Fn(&Path) -> Option<Vec<u8>> + 'a;
/// Whether the log is durable up to an LSN, given a [`DurableFile`] reader.
pub type LogDurableTo = dyn Fn(&DurableFile<'_>, u64) -> bool + Send + Sync;

/// The write-ahead rule, checked by the simulator at every page write: a page (in a data file or the
/// double-write area) may reach storage only once the log is durable up to the page's LSN. A page write
/// that breaks it is recorded as a violation the moment it is issued, whatever the engine believes.
pub struct WriteAheadRule {
    /// Files holding pages.
    pub is_page_file: Box<dyn Fn(&Path) -> bool + Send + Sync>,
    /// Page size: writes to page files are whole, aligned pages.
    pub page_bytes: usize,
    /// The LSN a page image carries: the log must be durable BEFORE this position (0: not logged).
    pub page_lsn: Box<PageLsn>,
    /// Whether the log is durable up to `lsn`, given a reader of what a power loss now would keep of a
    /// file (its durable name and bytes; None if the name is not durable).
    pub log_durable_to: Box<LogDurableTo>,
}

/// A note the harness puts on the operation timeline (e.g. "ack": a commit was just acknowledged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Storage operations completed when the mark was made.
    pub op: u64,
    /// What happened.
    pub tag: &'static str,
}

/// What a crash image kept of the volatile state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Dirty sectors that reached the disk.
    pub sectors_new: u64,
    /// Dirty sectors that did not.
    pub sectors_old: u64,
    /// Pending size changes that reached the disk.
    pub sizes_new: u64,
    /// Namespace operations still pending at the crash.
    pub ns_ops_pending: u64,
    /// Of those, how many the image kept.
    pub ns_ops_kept: u64,
    /// An in-flight untorn (RWF_ATOMIC) write: whether it made it (`None`: there was none).
    pub atomic_in_flight_applied: Option<bool>,
}

/// Counters of what the simulator did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Storage operations counted for crash points (writes, syncs, truncates, namespace changes).
    pub ops: u64,
    /// Writebacks with something to write.
    pub writebacks: u64,
    /// Writebacks that failed by injection.
    pub writeback_errors: u64,
    /// Page writes checked against the write-ahead rule.
    pub wal_rule_checks: u64,
    /// `RWF_ATOMIC` writes in flight when the power failed.
    pub atomic_writes_in_flight_at_crash: u64,
}

struct OpenFd {
    ino: Ino,
    /// The name it was opened by (for hooks and the write-ahead rule; the engine never renames a file it
    /// writes pages to).
    path: PathBuf,
    opts: FileOptions,
    /// This open file description's errseq sample.
    wb_err_sample: u64,
}

struct AtomicWrite {
    ino: Ino,
    offset: u64,
    data: Vec<u8>,
}

#[derive(Default)]
struct State {
    config: SimConfig,
    inodes: Vec<Inode>,
    ns: Namespace,
    fds: Vec<OpenFd>,
    stats: SimStats,
    crash_at_op: Option<u64>,
    frozen: bool,
    atomic_in_flight: Option<AtomicWrite>,
    marks: Vec<Mark>,
    fail_writeback_numbers: BTreeSet<u64>,
    fail_next_writeback_of: BTreeSet<Ino>,
    crash_kind: CrashKind,
    /// Crash `extra` operations after the `nth` mark with `tag` from now on.
    crash_after_mark: Option<(&'static str, u64, u64)>,
    hook: Option<OpHook>,
    wal_rule: Option<Arc<WriteAheadRule>>,
    /// Write-ahead rule violations, in order.
    violations: Vec<String>,
}

/// How an operation proceeds with respect to the crash point.
#[derive(PartialEq, Eq)]
enum Step {
    /// Normal operation.
    Run,
    /// This is operation K: the power fails while it is in flight.
    CrashNow,
}

fn power_lost() -> io::Error {
    io::Error::other("simfs: simulated power loss")
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(5)
}

impl State {
    /// Count a crash-point operation; fail if the power is already gone.
    fn begin_op(&mut self) -> io::Result<Step> {
        if self.frozen {
            return Err(power_lost());
        }
        self.stats.ops += 1;
        if self.crash_at_op == Some(self.stats.ops) {
            self.frozen = true;
            return Ok(Step::CrashNow);
        }
        Ok(Step::Run)
    }

    fn check_alive(&self) -> io::Result<()> {
        if self.frozen { Err(power_lost()) } else { Ok(()) }
    }

    fn sector(&self) -> u64 {
        self.config.sector_bytes
    }

    /// Write back `what` of `ino`; fault injection decides success. Returns whether it succeeded.
    fn writeback(&mut self, ino: Ino, what: Writeback) -> bool {
        let sector = self.sector();
        if !self.inodes[ino].needs_writeback(what, sector) {
            return true;
        }
        self.stats.writebacks += 1;
        let fail =
            self.fail_writeback_numbers.remove(&self.stats.writebacks) | self.fail_next_writeback_of.remove(&ino);
        if fail {
            self.stats.writeback_errors += 1;
            self.inodes[ino].writeback_failed(what, sector);
            if self.config.evict_after_error {
                self.inodes[ino].evict(sector);
            }
        } else {
            self.inodes[ino].writeback_ok(what, sector);
        }
        !fail
    }

    /// fsync / fdatasync / an O_DSYNC write: write back, maybe commit the journal, report errseq to `fd`.
    fn sync_file(&mut self, fd: usize, what: Writeback, metadata: bool) -> io::Result<()> {
        let ino = self.fds[fd].ino;
        let size_change = self.inodes[ino].size_dirty();
        // ext4: the fsync commits the running journal transaction (the file's create among it).
        if self.writeback(ino, what) && self.config.profile == Profile::Ext4 && (metadata || size_change) {
            self.ns.commit_all();
        }
        let open = &mut self.fds[fd];
        if self.inodes[ino].wb_err.check_and_advance(&mut open.wb_err_sample) { Err(eio()) } else { Ok(()) }
    }

    fn open_fd(&mut self, ino: Ino, path: &Path, opts: FileOptions) -> usize {
        let wb_err_sample = self.inodes[ino].wb_err.sample();
        self.fds.push(OpenFd { ino, path: path.to_path_buf(), opts, wb_err_sample });
        self.fds.len() - 1
    }

    /// Check a write of `buf` at `offset` to the file opened as `fd` against the write-ahead rule.
    fn check_write_ahead(&mut self, fd: usize, buf: &[u8], offset: u64) {
        let Some(rule) = self.wal_rule.clone() else { return };
        let path = self.fds[fd].path.clone();
        if !(rule.is_page_file)(&path) || rule.page_bytes == 0 {
            return;
        }
        let first = offset.next_multiple_of(rule.page_bytes as u64) - offset;
        for page in buf.get(first as usize..).unwrap_or_default().chunks_exact(rule.page_bytes) {
            let lsn = (rule.page_lsn)(page);
            if lsn == 0 {
                continue;
            }
            self.stats.wal_rule_checks += 1;
            let durable_file = |log: &Path| match (self.ns.durable_lookup(log), self.ns.lookup(log)) {
                (Some(d), Some(l)) if d == l => Some(self.inodes[d].read_disk(0, self.inodes[d].disk_len() as usize)),
                _ => None,
            };
            if !(rule.log_durable_to)(&durable_file, lsn) {
                let op = self.stats.ops;
                self.violations.push(format!(
                    "write-ahead rule broken at storage op {op}: a page carrying LSN {lsn} was written to {} \
                     while the log was not durable up to it",
                    path.display(),
                ));
            }
        }
    }

    fn lookup(&self, path: &Path) -> io::Result<Ino> {
        self.ns.lookup(path).ok_or_else(|| not_found(path))
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("simfs: {} does not exist", path.display()))
}

/// The simulated file system. Cheap to clone: clones share the same state.
#[derive(Clone, Default)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

/// An open file description on a [`SimFs`].
pub struct SimFile {
    state: Arc<Mutex<State>>,
    fd: usize,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock (a failed test assertion) must not hide the state from the next caller.
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl SimFs {
    /// An empty file system.
    pub fn new(config: SimConfig) -> SimFs {
        let state = State { config, ..State::default() };
        SimFs { state: Arc::new(Mutex::new(state)) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The configuration.
    pub fn config(&self) -> SimConfig {
        self.lock().config
    }

    /// Lose power while operation number `op` (1-based, counted from now on the op counter) is in flight:
    /// it and every later operation fail, and [`crash_image`](Self::crash_image) gives what survived.
    pub fn set_crash_at_op(&self, op: Option<u64>) {
        self.lock().crash_at_op = op;
    }

    /// Whether the power is gone (the crash point was reached).
    pub fn crashed(&self) -> bool {
        self.lock().frozen
    }

    /// Counters so far.
    pub fn stats(&self) -> SimStats {
        self.lock().stats
    }

    /// Put a note on the operation timeline (the crash test picks crash points near these).
    pub fn mark(&self, tag: &'static str) {
        let mut s = self.lock();
        let op = s.stats.ops;
        s.marks.push(Mark { op, tag });
        if let Some((want, nth, extra)) = s.crash_after_mark
            && want == tag
        {
            if nth <= 1 {
                s.crash_after_mark = None;
                s.crash_at_op = Some(op + 1 + extra);
            } else {
                s.crash_after_mark = Some((want, nth - 1, extra));
            }
        }
    }

    /// Crash `extra + 1` operations after the `nth` (1-based) mark tagged `tag` made from now on (a crash
    /// point in a later generation, whose timeline is not known in advance).
    pub fn set_crash_after_mark(&self, tag: &'static str, nth: u64, extra: u64) {
        self.lock().crash_after_mark = Some((tag, nth.max(1), extra));
    }

    /// What the crash does: a power loss (default) or the death of the process.
    pub fn set_crash_kind(&self, kind: CrashKind) {
        self.lock().crash_kind = kind;
    }

    /// The crash kind set for this file system.
    pub fn crash_kind(&self) -> CrashKind {
        self.lock().crash_kind
    }

    /// After a process crash: a new process starts. Everything in the page cache is still there (dirty
    /// sectors, pending names, sizes); files must be opened again; no crash is armed any more.
    pub fn restart_process(&self) {
        let mut s = self.lock();
        s.frozen = false;
        s.crash_at_op = None;
        s.crash_after_mark = None;
        s.atomic_in_flight = None;
        s.crash_kind = CrashKind::Power;
        // Writeback failures injected for the dead process's run are not carried into the next one.
        s.fail_writeback_numbers.clear();
        s.fail_next_writeback_of.clear();
    }

    /// Call `hook` before every counted storage operation (None: stop).
    pub fn set_op_hook(&self, hook: Option<OpHook>) {
        self.lock().hook = hook;
    }

    /// Check every page write against `rule` from now on.
    pub fn set_write_ahead_rule(&self, rule: Option<Arc<WriteAheadRule>>) {
        self.lock().wal_rule = rule;
    }

    /// Write-ahead rule violations seen so far.
    pub fn write_ahead_violations(&self) -> Vec<String> {
        self.lock().violations.clone()
    }

    /// The named files and their durable sizes (on a crash image: what media damage can hit).
    pub fn durable_files(&self) -> Vec<(PathBuf, u64)> {
        let s = self.lock();
        s.ns.live_names().map(|(p, &ino)| (p.clone(), s.inodes[ino].disk_len())).collect()
    }

    /// `len` bytes on disk at `offset` of the file at `path` (zeros where nothing was written).
    pub fn read_durable(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let s = self.lock();
        Ok(s.inodes[s.lookup(path)?].read_disk(offset, len))
    }

    /// Media damage on a crash image: the disk now holds `bytes` at `offset` of `path` (a flipped bit, a
    /// lost or misdirected write), within the durable size.
    pub fn damage(&self, path: &Path, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut s = self.lock();
        let ino = s.lookup(path)?;
        s.inodes[ino].damage(offset, bytes);
        Ok(())
    }

    fn hook(&self) -> Option<OpHook> {
        let s = self.lock();
        if s.frozen { None } else { s.hook.clone() }
    }

    fn before_op(&self, kind: OpKind, path: &Path) {
        if let Some(hook) = self.hook() {
            hook(kind, path);
        }
    }

    /// The engine just acknowledged a commit: crash points right after this are the interesting ones.
    pub fn after_ack(&self) {
        self.mark("ack");
    }

    /// The marks so far, in order.
    pub fn marks(&self) -> Vec<Mark> {
        self.lock().marks.clone()
    }

    /// Make the `n`-th writeback (1-based, counting writebacks that had something to write) fail with EIO.
    pub fn fail_writeback_number(&self, n: u64) {
        self.lock().fail_writeback_numbers.insert(n);
    }

    /// Make the next writeback of the file at `path` fail with EIO.
    pub fn fail_next_writeback(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        let ino = s.lookup(path)?;
        s.fail_next_writeback_of.insert(ino);
        Ok(())
    }

    /// The kernel's flusher writes back the file at `path` on its own: nobody is told if it fails, so the
    /// error waits in the inode for the next fsync of any description (and for descriptions opened later).
    pub fn background_writeback(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        s.check_alive()?;
        let ino = s.lookup(path)?;
        s.writeback(ino, Writeback::Whole);
        Ok(())
    }

    /// Memory pressure evicts the clean pages of the file at `path`.
    pub fn evict(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        let ino = s.lookup(path)?;
        let sector = s.sector();
        s.inodes[ino].evict(sector);
        Ok(())
    }

    /// Memory pressure evicts every clean page.
    pub fn evict_all(&self) {
        let mut s = self.lock();
        let sector = s.sector();
        for inode in &mut s.inodes {
            inode.evict(sector);
        }
    }

    /// The live content of the file at `path` (what a reader sees now), for checkers and tests.
    pub fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let s = self.lock();
        let inode = &s.inodes[s.lookup(path)?];
        let mut buf = vec![0; inode.len() as usize];
        inode.read(&mut buf, 0);
        Ok(buf)
    }

    /// Whether anything would be lost by a crash now (dirty sectors, pending sizes or namespace operations).
    pub fn has_volatile_state(&self) -> bool {
        let s = self.lock();
        s.ns.pending_len() > 0 || s.inodes.iter().any(|i| i.has_residue())
    }

    /// Namespace operations not yet durable.
    pub fn pending_namespace_ops(&self) -> usize {
        self.lock().ns.pending_len()
    }

    /// An independent deep copy of the file system as it is now (open files are not carried over), with
    /// `config` from now on: build an expensive starting state once, then fork it for every crash point.
    pub fn fork_with(&self, config: SimConfig) -> SimFs {
        let s = self.lock();
        let state = State {
            config,
            inodes: s.inodes.clone(),
            ns: s.ns.clone(),
            stats: s.stats,
            marks: s.marks.clone(),
            frozen: s.frozen,
            wal_rule: s.wal_rule.clone(),
            ..State::default()
        };
        SimFs { state: Arc::new(Mutex::new(state)) }
    }

    /// The file system after a power loss now: the durable state plus a seeded choice of the volatile
    /// residue (each dirty sector old or new, pending sizes, a prefix or subset of pending namespace
    /// operations, an in-flight untorn write all or nothing). Deterministic in (`seed`, state).
    pub fn crash_image(&self, seed: u64) -> (SimFs, CrashReport) {
        self.crash_image_with(seed, ResiduePolicy::Random)
    }

    /// Like [`crash_image`](Self::crash_image) with an explicit policy for the volatile residue.
    pub fn crash_image_with(&self, seed: u64, policy: ResiduePolicy) -> (SimFs, CrashReport) {
        let s = self.lock();
        let mut rng = SimRng::new(seed);
        let mut report = CrashReport::default();
        let keep = match policy {
            ResiduePolicy::Random => KeepPending::Random,
            ResiduePolicy::None => KeepPending::None,
            ResiduePolicy::All => KeepPending::All,
        };
        let (names, kept) = s.ns.crash(s.config.profile.journal(), keep, &mut rng);
        report.ns_ops_pending = s.ns.pending_len() as u64;
        report.ns_ops_kept = kept as u64;
        // Renumber the surviving files densely; unnamed inodes are gone with the power.
        let mut renumber: BTreeMap<Ino, Ino> = BTreeMap::new();
        let mut inodes = Vec::new();
        for &ino in names.values() {
            renumber.entry(ino).or_insert_with(|| {
                let (image, count) = s.inodes[ino].crash(policy, s.config.sector_bytes, &mut rng);
                add_counts(&mut report, count);
                inodes.push(image);
                inodes.len() - 1
            });
        }
        if let Some(write) = &s.atomic_in_flight {
            let applied = match policy {
                ResiduePolicy::Random => rng.coin(),
                ResiduePolicy::None => false,
                ResiduePolicy::All => true,
            };
            if let (true, Some(&new_ino)) = (applied, renumber.get(&write.ino)) {
                inodes[new_ino].apply_untorn(&write.data, write.offset);
            }
            report.atomic_in_flight_applied = Some(applied);
        }
        let names: BTreeMap<PathBuf, Ino> = names.into_iter().map(|(p, ino)| (p, renumber[&ino])).collect();
        let state = State { config: s.config, inodes, ns: Namespace::from_durable(names, &s.ns), ..State::default() };
        (SimFs { state: Arc::new(Mutex::new(state)) }, report)
    }
}

fn add_counts(report: &mut CrashReport, count: ResidueCount) {
    report.sectors_new += count.sectors_new;
    report.sectors_old += count.sectors_old;
    report.sizes_new += u64::from(count.size_new);
}

fn is_direct_aligned(offset: u64, len: usize) -> bool {
    offset.is_multiple_of(512) && len.is_multiple_of(512)
}

impl SimFile {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn before_op(&self, kind: OpKind) {
        let (hook, path) = {
            let s = self.lock();
            if s.frozen {
                return;
            }
            (s.hook.clone(), s.fds[self.fd].path.clone())
        };
        if let Some(hook) = hook {
            hook(kind, &path);
        }
    }

    /// Whether this description was opened with O_DSYNC (for tests).
    pub fn options(&self) -> FileOptions {
        let s = self.lock();
        s.fds[self.fd].opts
    }
}

impl StorageFile for SimFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let s = self.lock();
        s.check_alive()?;
        if s.inodes[s.fds[self.fd].ino].read(buf, offset) {
            Ok(())
        } else {
            Err(io::Error::new(io::ErrorKind::UnexpectedEof, "simfs: read past end of file"))
        }
    }

    fn write_at(&self, buf: &[u8], offset: u64, sync: WriteSync) -> io::Result<()> {
        self.before_op(OpKind::Write);
        let mut s = self.lock();
        let (ino, opts) = (s.fds[self.fd].ino, s.fds[self.fd].opts);
        if opts.direct && !is_direct_aligned(offset, buf.len()) {
            return Err(io::Error::from_raw_os_error(22)); // EINVAL, as O_DIRECT does
        }
        // RWF_ATOMIC beyond the device's untorn unit, or not naturally aligned: EINVAL, never a torn write.
        let len = buf.len() as u64;
        if sync == WriteSync::AtomicDsync
            && (len > s.config.atomic_write_max_bytes || !len.is_power_of_two() || !offset.is_multiple_of(len))
        {
            return Err(io::Error::from_raw_os_error(22));
        }
        let sector = s.sector();
        s.check_write_ahead(self.fd, buf, offset);
        if s.begin_op()? == Step::CrashNow {
            // In flight at power loss: its sectors are volatile (each old or new), unless it was untorn.
            if sync == WriteSync::AtomicDsync {
                s.stats.atomic_writes_in_flight_at_crash += 1;
                s.atomic_in_flight = Some(AtomicWrite { ino, offset, data: buf.to_vec() });
            } else {
                s.inodes[ino].write(buf, offset, sector);
            }
            return Err(power_lost());
        }
        s.inodes[ino].write(buf, offset, sector);
        if opts.dsync || sync != WriteSync::None {
            return s.sync_file(self.fd, Writeback::Range { offset, len: buf.len() as u64 }, false);
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.before_op(OpKind::Sync);
        let mut s = self.lock();
        if s.begin_op()? == Step::CrashNow {
            return Err(power_lost());
        }
        s.sync_file(self.fd, Writeback::Whole, false)
    }

    fn sync_all(&self) -> io::Result<()> {
        self.before_op(OpKind::Sync);
        let mut s = self.lock();
        if s.begin_op()? == Step::CrashNow {
            return Err(power_lost());
        }
        s.sync_file(self.fd, Writeback::Whole, true)
    }

    fn len(&self) -> io::Result<u64> {
        let s = self.lock();
        s.check_alive()?;
        Ok(s.inodes[s.fds[self.fd].ino].len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.before_op(OpKind::SetLen);
        let mut s = self.lock();
        let step = s.begin_op()?;
        let (ino, sector) = (s.fds[self.fd].ino, s.sector());
        s.inodes[ino].set_len(len, sector);
        if step == Step::CrashNow { Err(power_lost()) } else { Ok(()) }
    }
}

impl Storage for SimFs {
    type File = SimFile;

    fn create_new(&self, path: &Path, opts: FileOptions) -> io::Result<SimFile> {
        self.before_op(OpKind::Namespace, path);
        let mut s = self.lock();
        s.check_alive()?;
        if s.ns.exists(path) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("simfs: {} exists", path.display())));
        }
        if !s.ns.dir_exists(path.parent().unwrap_or(Path::new(""))) {
            return Err(not_found(path.parent().unwrap_or(path)));
        }
        let step = s.begin_op()?;
        s.inodes.push(Inode::default());
        let ino = s.inodes.len() - 1;
        s.ns.record(NsOp::Create { path: path.to_path_buf(), ino });
        if step == Step::CrashNow {
            return Err(power_lost());
        }
        let fd = s.open_fd(ino, path, opts);
        Ok(SimFile { state: Arc::clone(&self.state), fd })
    }

    fn open(&self, path: &Path, opts: FileOptions) -> io::Result<SimFile> {
        let mut s = self.lock();
        s.check_alive()?;
        let ino = s.lookup(path)?;
        let fd = s.open_fd(ino, path, opts);
        Ok(SimFile { state: Arc::clone(&self.state), fd })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.before_op(OpKind::Namespace, from);
        let mut s = self.lock();
        s.check_alive()?;
        let ino = s.lookup(from)?;
        if !s.ns.dir_exists(to.parent().unwrap_or(Path::new(""))) {
            return Err(not_found(to));
        }
        let step = s.begin_op()?;
        s.ns.record(NsOp::Rename { from: from.to_path_buf(), to: to.to_path_buf(), ino });
        if step == Step::CrashNow { Err(power_lost()) } else { Ok(()) }
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.before_op(OpKind::Namespace, path);
        let mut s = self.lock();
        s.check_alive()?;
        let ino = s.lookup(path)?;
        let step = s.begin_op()?;
        s.ns.record(NsOp::Remove { path: path.to_path_buf(), ino });
        if step == Step::CrashNow { Err(power_lost()) } else { Ok(()) }
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.before_op(OpKind::Namespace, dir);
        let mut s = self.lock();
        if !s.ns.dir_exists(dir) {
            s.check_alive()?;
            return Err(not_found(dir));
        }
        if s.begin_op()? == Step::CrashNow {
            return Err(power_lost());
        }
        let model = s.config.profile.journal();
        s.ns.commit_dir(dir, model);
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.lock();
        s.check_alive()?;
        s.ns.create_dir_all(dir);
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let s = self.lock();
        s.check_alive()?;
        if !s.ns.dir_exists(dir) {
            return Err(not_found(dir));
        }
        Ok(s.ns.list(dir))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let s = self.lock();
        s.check_alive()?;
        Ok(s.ns.exists(path))
    }

    /// The engine's hint goes on the timeline like any other mark (crash points are weighted near it).
    fn mark(&self, tag: &'static str) {
        SimFs::mark(self, tag);
    }
}
