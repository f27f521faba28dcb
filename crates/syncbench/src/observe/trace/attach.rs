//! `syncbench trace --pid/--comm/--all`: the same durability calls as the ptrace tracer, seen without
//! stopping anybody, from the kernel's syscall tracepoints, plus `sched:sched_process_{fork,exec,exit}`
//! to follow new processes and forget descriptors. Two backends feed the same decoding here:
//! - eBPF (the default, `inkernel`): programs keep the followed processes' calls and pair entry with exit
//!   in the kernel, one record per call, read as an entry and an exit event;
//! - perf events (`--tracer perf`, `--per-task`, and the fallback): one sample per traced call entry and
//!   exit, `syscalls:sys_enter_*`/`sys_exit_*` on every CPU (or `raw_syscalls` per task: see
//!   `open_events`), every program's; [`Follow`] keeps the chosen processes' (new children, threads and
//!   execs included), and the samples are decoded into the same events and handled in time order.
//!
//! Both hand [`Attacher`] the typed `syncbench_sys::kevents::KernelEvent`.
//!
//! The traced program pays about 1.0 µs (eBPF) or 1.3 µs (perf) of its CPU per traced call on the project
//! VM (docs/benchmarks.md, "trace (attach)").

use super::calls::{self, Entry, OpenSyncFlag, SyncCall};
use super::fds::{self, FdTable};
use super::follow::{self, Follow, Selection};
use super::inkernel::{self, InKernel};
use super::stats::Recorder;
use super::syscall_events::{ARGS_OFFSET, ENTRY_ONLY, NR_OFFSET, OPENS, PLAIN_WRITES, TIMED, syscall_event};
use super::tracer::Unseen;
use crate::observe::blockdev::account::FTRACE_KB;
use crate::observe::blockdev::requests::{BlockTrace, Lost, RequestReport};
use crate::observe::blockdev::{Disk, disk, stat};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use syncbench_sys::kevents::{KernelEvent, Task};
use syncbench_sys::perf::{self, Sample, Scope, Tracepoint, Tracepoints};
use syncbench_sys::ptrace::Pid;
use syncbench_sys::tracefs::{EventFormat, Field, Tracefs};

/// The kernel-side filter keeping only these system calls (`id == 74 || id == 75 ...`).
pub fn id_filter(nrs: &[i64]) -> String {
    nrs.iter().map(|nr| format!("id == {nr}")).collect::<Vec<_>>().join(" || ")
}

/// How to attach.
#[derive(Clone, Debug)]
pub struct AttachOptions {
    /// Which processes.
    pub selection: Selection,
    /// Stop after this long (else at Ctrl-C, or for `--pid` when every followed process has exited).
    pub duration: Option<Duration>,
    /// Record every write (bytes between syncs, writes on O_SYNC/O_DSYNC descriptors).
    pub track_writes: bool,
    /// `--pid`/`--comm`: open the events on the chosen tasks (inherited by the tasks they create)
    /// instead of on every CPU: other programs' calls are not sampled, but the traced tasks pay for
    /// switching their events at every context switch (see `open_events`).
    pub per_task: bool,
    /// What records the calls (`per_task` implies perf events).
    pub backend: Backend,
}

/// What records an attached trace's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// eBPF programs (`inkernel`) on the syscall tracepoints and an ftrace instance on the block ones; perf
    /// events for what cannot be loaded (one line on stderr says why).
    Default,
    /// eBPF programs only (`--tracer bpf`): an error when they cannot be loaded.
    Bpf,
    /// perf events: one sample per call entry and exit, filtered and paired here (`--tracer perf`).
    Perf,
}

/// The report's `mechanism` for each backend.
pub const MECHANISM_BPF: &str = "eBPF programs on the syscall tracepoints";
/// The perf backend's.
pub const MECHANISM_PERF: &str = "perf_event syscall tracepoints";

/// What an attached trace produced.
#[derive(Debug)]
pub struct Attached {
    /// The aggregates (the same as the ptrace tracer's).
    pub recorder: Recorder,
    /// Length of the window, seconds.
    pub duration_s: f64,
    /// Processes that made a traced call.
    pub processes_seen: u64,
    /// Tasks (threads) that made a traced call.
    pub tasks_seen: u64,
    /// Programs whose calls may not have been seen.
    pub unseen: Unseen,
    /// Samples the kernel dropped (rings full): the counts are incomplete when non-zero.
    pub lost_events: u64,
    /// `st_dev` of each traced file, from its descriptor.
    pub file_devs: HashMap<String, u64>,
    /// Every disk's counters over the window.
    pub disk_stats: BTreeMap<Disk, stat::StatDelta>,
    /// Every disk's requests over the window, by kernel dev_t.
    pub disk_requests: BTreeMap<u64, RequestReport>,
    /// [`MECHANISM_BPF`] or [`MECHANISM_PERF`].
    pub mechanism: &'static str,
    /// What read the block tracepoints ([`crate::observe::blockdev::requests::Mechanism::describe`]).
    pub block_mechanism: &'static str,
    /// Block tracepoint hits not recorded: the request lines are low by up to their sum.
    pub block_lost: Lost,
}

/// The events being recorded: perf rings (read in time order across CPUs, decoded by what each
/// tracepoint id means) or the eBPF programs' ring (one record per call, in commit order).
enum Recording {
    Perf(Tracepoints, HashMap<u64, Kind>),
    Bpf(InKernel),
}

impl Recording {
    fn wait(&self, timeout_ms: i32) -> io::Result<()> {
        match self {
            Recording::Perf(events, _) => Tracepoints::wait(&[events], timeout_ms),
            Recording::Bpf(k) => k.wait(timeout_ms),
        }
    }

    /// The events ready to be handled (`all`: everything, after `stop`); `fresh` sees each new one first.
    fn drain(&mut self, all: bool, mut fresh: impl FnMut(&KernelEvent)) -> Vec<KernelEvent> {
        match self {
            Recording::Perf(events, kinds) => {
                let decode = |s: &Sample| kinds.get(&s.event_id()).and_then(|kind| decode(*kind, s));
                let samples = events.drain_ordered_seeing(all, |s| decode(s).iter().for_each(&mut fresh));
                samples.iter().filter_map(decode).collect()
            }
            Recording::Bpf(k) => {
                let events = k.drain();
                events.iter().for_each(fresh);
                events
            }
        }
    }

    /// Open the reported window: calls entered from now on are recorded.
    fn start(&mut self) -> io::Result<()> {
        match self {
            Recording::Perf(events, _) => events.enable(),
            Recording::Bpf(k) => k.set_on(true),
        }
    }

    /// Close the window before its length is taken: eBPF records no more entries (detaching in `stop`
    /// takes a while); perf is disabled in `stop`, at once.
    fn close(&mut self) -> io::Result<()> {
        match self {
            Recording::Perf(..) => Ok(()),
            Recording::Bpf(k) => k.set_on(false),
        }
    }

    fn stop(&mut self) -> io::Result<()> {
        match self {
            Recording::Perf(events, _) => events.disable(),
            Recording::Bpf(k) => {
                k.stop();
                Ok(())
            }
        }
    }

    fn lost(&self) -> io::Result<u64> {
        match self {
            Recording::Perf(events, _) => Ok(events.lost()),
            Recording::Bpf(k) => k.lost(),
        }
    }
}

/// The event of a perf sample of a tracepoint that means `kind`; `None` for one recorded only to wake
/// the reader ([`Kind::Opened`]: the exit it names a descriptor for comes as its own event).
fn decode(kind: Kind, s: &Sample) -> Option<KernelEvent> {
    let (task, time_ns, raw) = (Task { pid: s.pid, tid: s.tid }, s.time_ns, &s.raw);
    let nr = i64::from(word(raw, NR_OFFSET) as u32 as i32);
    Some(match kind {
        Kind::Enter => KernelEvent::SyscallEnter {
            task,
            time_ns,
            nr,
            args: std::array::from_fn(|i| word(raw, ARGS_OFFSET + 8 * i)),
        },
        Kind::Exit => KernelEvent::SyscallExit { task, time_ns, nr, ret: word(raw, ARGS_OFFSET) as i64 },
        Kind::Opened => return None,
        Kind::Fork { child_pid } => KernelEvent::Fork { task, time_ns, child: child_pid.int(raw) as i32 },
        Kind::Exec => KernelEvent::Exec { task, time_ns },
        Kind::TaskExit { group_dead } => {
            KernelEvent::TaskExit { task, time_ns, group_dead: group_dead.map(|f| f.uint(raw) != 0) }
        }
    })
}

/// What [`open_recording`] opened.
struct Opened {
    recording: Recording,
    mechanism: &'static str,
    /// Why the default fell back to perf events (said on stderr by [`fallback_line`]).
    fell_back: Option<io::Error>,
}

/// Start recording with the backend asked for: the eBPF programs (recording from now on), or the perf
/// events (opened disabled: `enable` starts them).
fn open_recording(tracefs: &Tracefs, options: &AttachOptions) -> io::Result<Opened> {
    let bpf = || match inkernel::pid_namespace_refusal_here() {
        Some(why) => Err(io::Error::new(io::ErrorKind::Unsupported, why)),
        None => InKernel::start(tracefs, &options.selection, options.track_writes),
    };
    let (in_kernel, fell_back) = match options.backend {
        _ if options.per_task => (None, None),
        Backend::Perf => (None, None),
        Backend::Bpf => (Some(bpf().map_err(|e| io::Error::new(e.kind(), format!("--tracer bpf: {e}")))?), None),
        Backend::Default => match bpf() {
            Ok(k) => (Some(k), None),
            Err(e) => (None, Some(e)),
        },
    };
    if let Some(k) = in_kernel {
        return Ok(Opened { recording: Recording::Bpf(k), mechanism: MECHANISM_BPF, fell_back: None });
    }
    let scope = scope_of(&options.selection, options.per_task);
    let (points, kinds) = open_events(tracefs, options.track_writes, &scope)?;
    let events = open_for(&points, &options.selection, options.per_task)?;
    Ok(Opened { recording: Recording::Perf(events, kinds), mechanism: MECHANISM_PERF, fell_back })
}

/// The one stderr line saying what fell back from eBPF to perf events by default, and why: the syscall
/// tracepoints (`calls`), the block tracepoints (`blocks`), or both (one line, the second reason only
/// when it differs).
fn fallback_line(calls: Option<&io::Error>, blocks: Option<&io::Error>) -> Option<String> {
    const DISKS: &str = "which may miss completions (see docs/trace.md, \"The disks\")";
    Some(match (calls, blocks) {
        (None, None) => return None,
        (Some(e), None) => {
            format!("syncbench: eBPF unavailable ({e}); tracing with perf events instead (see --tracer)")
        }
        (None, Some(e)) => format!(
            "syncbench: eBPF unavailable for the block tracepoints ({e}); reading them with perf events instead, {DISKS}"
        ),
        (Some(c), Some(b)) => {
            let (c, b) = (c.to_string(), b.to_string());
            let also = if b == c { String::new() } else { format!(" ({b})") };
            format!(
                "syncbench: eBPF unavailable ({c}); tracing with perf events instead (see --tracer), the block \
                 tracepoints too{also}, {DISKS}"
            )
        }
    })
}

/// What a perf tracepoint id means.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Enter,
    Exit,
    /// An open's exit recorded only to wake the reader at once, so the descriptor is named while surely
    /// open (beside `raw_syscalls:sys_exit`, which carries the exit itself).
    Opened,
    Fork {
        child_pid: Field,
    },
    Exec,
    /// `group_dead`: where the record says the process's last thread exited (`None`: not in this
    /// kernel's record; the leader's exit is taken for the process's).
    TaskExit {
        group_dead: Option<Field>,
    },
}

/// One timed call waiting for its exit.
#[derive(Debug)]
enum Pending {
    Timed {
        nr: i64,
        call: SyncCall,
        target: String,
        started_ns: u64,
    },
    Plain {
        nr: i64,
        path: String,
    },
    /// An open: the descriptor it returns replaces whatever was cached; `sync` known from the flags, or
    /// (`openat2`, flags behind a pointer) read from `/proc` afterwards.
    Open {
        nr: i64,
        sync: Option<OpenSyncFlag>,
    },
}

impl Pending {
    fn nr(&self) -> i64 {
        match self {
            Pending::Timed { nr, .. } | Pending::Plain { nr, .. } | Pending::Open { nr, .. } => *nr,
        }
    }
}

struct Attacher {
    options: AttachOptions,
    follow: Follow,
    recorder: Recorder,
    fds: FdTable,
    pending: HashMap<Pid, Pending>,
    processes: HashSet<Pid>,
    tasks: HashSet<Pid>,
    unseen: Unseen,
    file_devs: HashMap<String, u64>,
    abi_32: HashMap<Pid, bool>,
    /// Descriptors named as soon as their open returned, oldest first per (process, descriptor), for the
    /// time-ordered handling of that open to pick up.
    early_names: HashMap<(Pid, i32), std::collections::VecDeque<Option<fds::FdInfo>>>,
    /// When each cached descriptor's name was last checked against `/proc` (sample clock, ns).
    checked_ns: HashMap<(Pid, i32), u64>,
    /// The kernel kept only the followed processes' calls (eBPF backend): every call seen is followed.
    kernel_filtered: bool,
}

/// How often a cached descriptor's name is checked against `/proc` for a rename.
const RECHECK_NAME_NS: u64 = 1_000_000_000;

/// The tracepoints to open and what each id means, two ways (measured in docs/benchmarks.md):
/// - events per CPU (the default, `--all`, `--pid`, `--comm`): each traced call's own
///   `syscalls:sys_enter_*`/`sys_exit_*`. Any other system call stops at a bitmap test (~0.1–0.2 µs),
///   where with `raw_syscalls` and an `id == …` filter it builds a record for the filter to reject
///   (~0.45 µs), on every task of the machine. No kernel-side pid filter: `common_pid` is a thread id, and
///   a filter updated from the fork events (read up to 50 ms later) would drop a new thread's or child's
///   first calls.
/// - events per task (`--per-task`): `raw_syscalls:sys_enter`/`sys_exit` with that filter. A task's
///   events are switched out and in with it at every context switch, at a cost that grows with their
///   number (a write+fdatasync loop, which sleeps in every fdatasync, paid ~40 µs of CPU per iteration
///   with the 36 per-call events, ~20 µs with these 8): fewer events win where programs sleep often.
///
/// Both: the scheduler's fork, exec and exit; the open exits wake the reader at once (see `name_early`).
fn open_events(
    tracefs: &Tracefs,
    track_writes: bool,
    scope: &Scope,
) -> io::Result<(Vec<Tracepoint>, HashMap<u64, Kind>)> {
    let timed = TIMED.into_iter().filter(|(nr, _)| track_writes || !PLAIN_WRITES.contains(nr));
    let mut points = Vec::new();
    let mut kinds = HashMap::new();
    let mut add = |format: &EventFormat, kind: Kind, filter: Option<String>, wake_each: bool| {
        points.push(Tracepoint { id: format.id, filter, wake_each });
        kinds.insert(format.id, kind);
    };
    if *scope == Scope::AllTasks {
        for (_, name) in timed.clone().chain(ENTRY_ONLY) {
            add(&syscall_event(tracefs, "sys_enter", name)?, Kind::Enter, None, false);
        }
        for (nr, name) in timed {
            let open = OPENS.contains(&nr);
            add(&syscall_event(tracefs, "sys_exit", name)?, Kind::Exit, None, open);
        }
    } else {
        let nrs: Vec<i64> = timed.map(|(nr, _)| nr).collect();
        let entered: Vec<i64> = nrs.iter().copied().chain(ENTRY_ONLY.map(|(nr, _)| nr)).collect();
        let enter = tracefs.event("raw_syscalls", "sys_enter")?;
        let exit = tracefs.event("raw_syscalls", "sys_exit")?;
        for (format, second) in [(&enter, "args"), (&exit, "ret")] {
            if format.field("id")?.offset != NR_OFFSET || format.field(second)?.offset != ARGS_OFFSET {
                return Err(io::Error::other(format!(
                    "raw_syscalls tracepoint {} has an unexpected layout",
                    format.id
                )));
            }
        }
        add(&enter, Kind::Enter, Some(id_filter(&entered)), false);
        add(&exit, Kind::Exit, Some(id_filter(&nrs)), false);
        for (_, name) in TIMED.into_iter().filter(|(nr, _)| OPENS.contains(nr)) {
            let format = syscall_event(tracefs, "sys_exit", name)?;
            add(&format, Kind::Opened, Some("ret >= 0".into()), true);
        }
    }
    let fork = tracefs.event("sched", "sched_process_fork")?;
    add(&fork, Kind::Fork { child_pid: fork.field("child_pid")? }, None, false);
    add(&tracefs.event("sched", "sched_process_exec")?, Kind::Exec, None, false);
    let exit = tracefs.event("sched", "sched_process_exit")?;
    add(&exit, Kind::TaskExit { group_dead: exit.fields.get("group_dead").copied() }, None, false);
    Ok((points, kinds))
}

/// What to record: the whole machine (the default: [`Follow`] picks the selected processes), or with
/// `per_task` the selected processes' threads (and, through `inherit`, every task they create while
/// traced).
fn scope_of(selection: &Selection, per_task: bool) -> Scope {
    match selection {
        _ if !per_task => Scope::AllTasks,
        Selection::All => Scope::AllTasks,
        Selection::Pids(pids) => Scope::Tasks(pids.iter().flat_map(|&p| follow::threads_of(p)).collect()),
        Selection::Comm(name) => {
            Scope::Tasks(follow::pids_named(name).into_iter().flat_map(follow::threads_of).collect())
        }
    }
}

/// Open the events for the selection. Threads started while the events were being opened are not
/// covered by `inherit`: list the threads again until no new one appears.
fn open_for(points: &[Tracepoint], selection: &Selection, per_task: bool) -> io::Result<Tracepoints> {
    let cpus = perf::online_cpus()?;
    let _ = perf::raise_fd_limit(); // without it, fewer tasks can be followed: opening then fails clearly
    let scope = scope_of(selection, per_task);
    // 8 MiB per CPU: ~80 000 samples, drained from a quarter full on.
    let pages = 2048;
    let mut events = Tracepoints::open(points, &scope, &cpus, pages)?;
    if let Scope::Tasks(mut known) = scope {
        for _ in 0..10 {
            let Scope::Tasks(now) = scope_of(selection, per_task) else { break };
            let new: Vec<i32> = now.into_iter().filter(|t| !known.contains(t)).collect();
            if new.is_empty() {
                break;
            }
            for &tid in &new {
                match events.add(points, tid, pages) {
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                    other => other?,
                }
            }
            known.extend(new);
        }
    }
    Ok(events)
}

/// How often the rings are read at least (more often when they fill).
const POLL_EVERY: Duration = Duration::from_millis(50);

/// Trace until the duration is over, `stop` is set, or (for `--pid`) every followed process is gone.
/// `ready` is called once recording has started, with the mechanism recording.
pub fn attach(options: AttachOptions, stop: Arc<AtomicBool>, ready: impl FnOnce(&'static str)) -> io::Result<Attached> {
    let tracefs = crate::core::registry::open_tracefs()?;
    let Opened { recording: mut events, mechanism, fell_back: calls_fell_back } = open_recording(&tracefs, &options)?;
    let all_disks: Vec<Disk> = disk::all_disks();
    let (mut blocks, blocks_fell_back) = open_blocks(&tracefs, &options)?;
    if let Some(line) = fallback_line(calls_fell_back.as_ref(), blocks_fell_back.as_ref()) {
        eprintln!("{line}");
    }
    let block_mechanism = blocks.mechanism().describe();
    // The counters' window inside the block tracepoints' (read once they record, before they stop): every
    // request the counters count was seen, so the request lines can be checked against them.
    let before = stat::Snapshot::take(&all_disks);
    drop(tracefs); // every id is known: unmount now if it was mounted for us
    events.start()?;
    let started = Instant::now();
    let mut a = Attacher::new(options, mechanism == MECHANISM_BPF);
    a.check_abi_of_running();
    ready(mechanism);
    let recorded = a.record(&mut events, &mut blocks, started, &stop);
    let closed = events.close();
    let duration_s = started.elapsed().as_secs_f64();
    // Counters first, then the block programs stopped: detaching the syscall programs below can take a
    // second on a busy machine, and the block ring is not read meanwhile.
    let disk_stats = stat::Snapshot::take(&all_disks).since(&before);
    blocks.stop()?;
    events.stop()?;
    closed?;
    recorded?;
    a.handle_all(&mut events, true);
    let lost = events.lost()?;
    let (disk_requests, block_lost) = blocks.finish()?;
    Ok(Attached {
        recorder: a.recorder,
        duration_s,
        processes_seen: a.processes.len() as u64,
        tasks_seen: a.tasks.len() as u64,
        unseen: a.unseen,
        lost_events: lost,
        block_lost,
        file_devs: a.file_devs,
        disk_stats,
        disk_requests,
        mechanism,
        block_mechanism,
    })
}

/// The block tracepoints' reader: a private ftrace instance (as `run`'s device columns: on some VMs no
/// eBPF program runs for a completion that interrupts certain threads, and nothing counts the miss; the
/// instance's rings record it), else eBPF programs, else perf events (then with why, for
/// [`fallback_line`]); eBPF only with `--tracer bpf` (an error if refused), perf with `--tracer perf`.
fn open_blocks(tracefs: &Tracefs, options: &AttachOptions) -> io::Result<(BlockTrace, Option<io::Error>)> {
    match options.backend {
        Backend::Perf => Ok((BlockTrace::start(tracefs)?, None)),
        Backend::Bpf => BlockTrace::start_bpf(tracefs)
            .map(|b| (b, None))
            .map_err(|e| io::Error::new(e.kind(), format!("--tracer bpf (block tracepoints): {e}"))),
        Backend::Default => {
            let ftrace = BlockTrace::prepare_ftrace(tracefs, FTRACE_KB).and_then(|mut b| b.resume().map(|()| b));
            match ftrace.or_else(|_| BlockTrace::start_bpf(tracefs)) {
                Ok(b) => Ok((b, None)),
                Err(e) => Ok((BlockTrace::start(tracefs)?, Some(e))),
            }
        }
    }
}

fn word(raw: &[u8], at: usize) -> u64 {
    raw.get(at..at + 8).map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
}

impl Attacher {
    fn new(options: AttachOptions, kernel_filtered: bool) -> Attacher {
        Attacher {
            follow: Follow::new(options.selection.clone(), std::process::id() as Pid),
            recorder: Recorder::new(options.track_writes),
            options,
            fds: FdTable::default(),
            pending: HashMap::new(),
            processes: HashSet::new(),
            tasks: HashSet::new(),
            unseen: Unseen::default(),
            file_devs: HashMap::new(),
            abi_32: HashMap::new(),
            early_names: HashMap::new(),
            checked_ns: HashMap::new(),
            kernel_filtered,
        }
    }

    /// Whether process `tgid`'s calls are counted: decided by the kernel (eBPF) or by [`Follow`] (perf).
    fn followed(&mut self, tgid: Pid) -> bool {
        if self.kernel_filtered {
            self.follow.adopt(tgid);
            return true;
        }
        self.follow.wants(tgid)
    }

    /// Read the rings: name each opened descriptor at once, then handle every event in time order
    /// (`all`: including the youngest, after the events were disabled).
    fn handle_all(&mut self, events: &mut Recording, all: bool) {
        let (mut opened, mut forks) = (Vec::new(), Vec::new());
        let drained = events.drain(all, |e| match *e {
            KernelEvent::SyscallExit { task, nr, ret, .. } if OPENS.contains(&nr) => {
                opened.push((task.pid, ret as i32))
            }
            KernelEvent::Fork { task, child, .. } => forks.push((task.pid, child)),
            _ => {}
        });
        // A child forked a moment ago is followed at once, so the descriptors it opens are named while they
        // are surely open; its fork is handled again in time order below (a reused pid's exit held back in
        // the reorder window is then replayed before it).
        for (parent, child) in forks {
            self.follow.forked(parent, child);
        }
        for (tgid, fd) in opened {
            self.name_early(tgid, fd);
        }
        for e in &drained {
            self.handle(e);
        }
    }

    /// Read the rings until the duration is over, `stop` is set, or (for `--pid`) every followed process
    /// is gone.
    fn record(
        &mut self,
        events: &mut Recording,
        blocks: &mut BlockTrace,
        started: Instant,
        stop: &AtomicBool,
    ) -> io::Result<()> {
        let mut ticked = Instant::now();
        loop {
            events.wait(POLL_EVERY.as_millis() as i32)?;
            self.handle_all(events, false);
            // The rest once per POLL_EVERY, not at every wake-up: `all_gone` reads `/proc`, and that
            // open's own exit sample (opens wake this reader at once) made the next wait return at once:
            // a busy loop, ~10,000 rounds a second, that took a fifth of a CPU beside the program watched
            // and made it wait for its CPU (docs/trace.md, "What attaching costs").
            let tick = ticked.elapsed() >= POLL_EVERY;
            if tick {
                blocks.poll();
                ticked = Instant::now();
            }
            let over = self.options.duration.is_some_and(|d| started.elapsed() >= d);
            if over || stop.load(Ordering::SeqCst) || (tick && self.follow.all_gone()) {
                return Ok(());
            }
        }
    }

    fn handle(&mut self, event: &KernelEvent) {
        match *event {
            KernelEvent::Fork { task, child, .. } => self.follow.forked(task.pid, child),
            KernelEvent::Exec { task, .. } => {
                self.fds.forget_process(task.pid);
                self.abi_32.remove(&task.pid);
                self.follow.execed(task.pid);
                if self.follow.wants(task.pid) {
                    self.is_32_bit(task.pid); // a 32-bit program's calls are not seen: the report says so
                }
            }
            KernelEvent::TaskExit { task, group_dead, .. } => {
                self.pending.remove(&task.tid);
                // A leader exiting first (pthread_exit, a non-leader's exec) leaves the process running.
                if group_dead.unwrap_or(task.tid == task.pid) {
                    self.fds.forget_process(task.pid);
                    self.abi_32.remove(&task.pid);
                    self.follow.exited(task.pid);
                }
            }
            KernelEvent::SyscallEnter { task, .. } | KernelEvent::SyscallExit { task, .. }
                if !self.followed(task.pid) || self.is_32_bit(task.pid) => {}
            KernelEvent::SyscallEnter { task, time_ns, nr, args } => self.on_enter(task, time_ns, nr, args),
            KernelEvent::SyscallExit { task, time_ns, nr, ret } => self.on_exit(task, time_ns, nr, ret),
            KernelEvent::BlockIssue(_) | KernelEvent::BlockComplete(_) => {}
        }
    }

    /// The followed processes running now that are 32-bit programs, whose calls go unseen (see
    /// `is_32_bit`): the report lists them, even if they make no call. Those started later are checked
    /// at their exec.
    fn check_abi_of_running(&mut self) {
        let pids: Vec<Pid> = match &self.options.selection {
            Selection::Pids(pids) => pids.clone(),
            Selection::Comm(name) => follow::pids_named(name),
            Selection::All => follow::all_pids(),
        };
        for pid in pids {
            if self.follow.wants(pid) {
                self.is_32_bit(pid);
            }
        }
    }

    fn seen(&mut self, task: Task) {
        self.processes.insert(task.pid);
        self.tasks.insert(task.tid);
    }

    /// Whether process `tgid` is a 32-bit program (recorded for the report's warning): the `syscalls:`
    /// tracepoints do not report its calls, `raw_syscalls` numbers them in the i386 table, which the
    /// x86_64 decoding would misread, so they are skipped.
    fn is_32_bit(&mut self, tgid: Pid) -> bool {
        if let Some(&known) = self.abi_32.get(&tgid) {
            return known;
        }
        let (path, abi) = super::tracer::exe_abi(tgid);
        if let Some(abi) = abi {
            self.unseen.not_x86_64.insert((path, abi));
        }
        self.abi_32.insert(tgid, abi.is_some());
        abi.is_some()
    }

    fn on_enter(&mut self, task: Task, now: u64, nr: i64, args: [u64; 6]) {
        let (tgid, tid) = (task.pid, task.tid);
        let pending = match calls::decode(nr, args) {
            Entry::Sync { call, fd, addr } => {
                let target = self.target_of(tgid, fd, addr, now);
                Some(Pending::Timed { nr, call, target, started_ns: now })
            }
            Entry::Write { fd, rwf, .. } => self.write_entry(tgid, nr, fd, rwf, now),
            Entry::OpenSync { flags, .. } => Some(Pending::Open { nr, sync: Some(OpenSyncFlag::of_flags(flags)) }),
            Entry::Openat2 { .. } => Some(Pending::Open { nr, sync: None }),
            Entry::IoUringSetup => {
                self.unseen.io_uring.insert(super::tracer::exe_abi(tgid).0);
                None
            }
            Entry::Forget { fd } => (self.fds.forget(tgid, fd), None).1,
            Entry::ForgetRange { first, last } => (self.fds.forget_range(tgid, first, last), None).1,
            Entry::Other if nr == libc::SYS_open || nr == libc::SYS_openat => {
                Some(Pending::Open { nr, sync: Some(OpenSyncFlag::None) })
            }
            Entry::Other => None,
        };
        if let Some(p) = pending {
            if matches!(p, Pending::Timed { .. }) {
                self.seen(task);
            }
            self.pending.insert(tid, p);
        }
    }

    fn write_entry(&mut self, tgid: Pid, nr: i64, fd: i32, rwf: u64, now: u64) -> Option<Pending> {
        let info = self.fds.lookup(tgid, tgid, fd)?.clone();
        if !info.regular {
            return None;
        }
        self.file_devs.entry(info.path.clone()).or_insert(info.dev);
        match calls::rwf_call(rwf).or(info.sync.write_call()) {
            Some(call) => Some(Pending::Timed { nr, call, target: info.path, started_ns: now }),
            None if self.options.track_writes => Some(Pending::Plain { nr, path: info.path }),
            None => None,
        }
    }

    /// What a sync applies to. The descriptor's name comes from the cache (kept in event order: closes
    /// and opens seen before this call invalidate it), checked against `/proc` at most once a second per
    /// descriptor (reading it costs more than the call being watched): the fresh name wins when it is the
    /// same file renamed (etcd renames `wal.tmp/` to `wal/` with the segment open), the cached one when
    /// the number now holds another file.
    fn target_of(&mut self, tgid: Pid, fd: Option<i32>, addr: Option<u64>, now_ns: u64) -> String {
        let fd = match (fd, addr) {
            (Some(fd), _) => fd,
            (None, Some(addr)) => return fds::mapped_file(tgid, addr).unwrap_or_else(|| "(anonymous mapping)".into()),
            (None, None) => return "(all file systems)".into(),
        };
        let cached = self.fds.cached(tgid, fd).cloned();
        let checked = self.checked_ns.get(&(tgid, fd)).copied();
        if let (Some(info), Some(at)) = (&cached, checked)
            && now_ns.saturating_sub(at) < RECHECK_NAME_NS
        {
            return info.path.clone();
        }
        self.checked_ns.insert((tgid, fd), now_ns);
        let info = match (cached, fds::read_fd(tgid, fd)) {
            (Some(old), Some(new)) if old.ino == new.ino && old.dev == new.dev => {
                if let Some(previous) = self.fds.rename(tgid, fd, &new.path) {
                    self.recorder.renamed(&previous, &new.path);
                }
                new
            }
            (Some(old), _) => old,
            (None, Some(new)) => {
                self.fds.insert(tgid, fd, new.clone());
                new
            }
            (None, None) => return format!("(closed descriptor {fd})"),
        };
        self.file_devs.entry(info.path.clone()).or_insert(info.dev);
        info.path
    }

    fn on_exit(&mut self, task: Task, time_ns: u64, nr: i64, ret: i64) {
        let Some(pending) = self.pending.remove(&task.tid) else { return };
        if pending.nr() != nr {
            return; // an exit we did not see the entry of (events lost): drop both
        }
        match pending {
            Pending::Timed { call, target, started_ns, .. } => {
                let ns = time_ns.saturating_sub(started_ns);
                let written = if call.is_durable_write() { ret.max(0) as u64 } else { 0 };
                self.recorder.call(call, &target, Some(ns), ret < 0, written);
            }
            Pending::Plain { path, .. } if ret > 0 => self.recorder.wrote(&path, ret as u64),
            Pending::Open { sync, .. } if ret >= 0 => self.opened(task.pid, ret as i32, sync),
            Pending::Plain { .. } | Pending::Open { .. } => {}
        }
    }

    /// An open returned `fd`: name it now, from `/proc`, while it is surely open (the time-ordered
    /// handling comes up to 50 ms later, when a short-lived file or process may be gone).
    fn name_early(&mut self, tgid: Pid, fd: i32) {
        if fd >= 0 && self.followed(tgid) {
            self.early_names.entry((tgid, fd)).or_default().push_back(fds::read_fd(tgid, fd));
        }
    }

    fn opened(&mut self, tgid: Pid, fd: i32, sync: Option<OpenSyncFlag>) {
        self.fds.forget(tgid, fd);
        let early = self.early_names.get_mut(&(tgid, fd)).and_then(|q| q.pop_front()).flatten();
        let info = match (early.or_else(|| fds::read_fd(tgid, fd)), sync) {
            (Some(mut info), _) => {
                info.sync = sync.unwrap_or(info.sync);
                info
            }
            // Gone before it could be named: still counted, under a placeholder.
            (None, Some(sync)) if sync != OpenSyncFlag::None => fds::FdInfo {
                path: format!("(descriptor {fd} of process {tgid}, closed before it could be named)"),
                regular: true,
                sync,
                dev: 0,
                ino: 0,
            },
            (None, _) => return,
        };
        if info.sync != OpenSyncFlag::None && info.regular {
            self.recorder.opened_sync(&info.path);
        }
        self.fds.insert(tgid, fd, info);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_is_one_line_when_both_readers_fell_back() {
        let refused = io::Error::other("Operation not permitted");
        let other = io::Error::other("creating a BPF ring buffer (Linux 5.8 or later): Invalid argument");
        assert_eq!(fallback_line(None, None), None);
        let calls = fallback_line(Some(&refused), None).unwrap();
        assert!(calls.contains("tracing with perf events instead") && !calls.contains("block"), "{calls}");
        let blocks = fallback_line(None, Some(&other)).unwrap();
        assert!(blocks.contains("for the block tracepoints (creating a BPF ring buffer"), "{blocks}");
        // Both: one line, each reason once.
        let both = fallback_line(Some(&refused), Some(&refused)).unwrap();
        assert_eq!(both.matches("Operation not permitted").count(), 1, "{both}");
        assert!(both.contains("the block tracepoints too, which may miss completions"), "{both}");
        let both = fallback_line(Some(&refused), Some(&other)).unwrap();
        assert!(!both.contains('\n') && both.matches("syncbench:").count() == 1, "{both}");
        assert!(both.contains("the block tracepoints too (creating a BPF ring buffer"), "{both}");
    }
}
