//! The default attach backend: eBPF programs on the same syscall tracepoints as the perf backend, built
//! here as BPF instructions (no compiler: see `syncbench_sys::bpf`), that keep only the followed
//! processes' calls and pair each call's entry with its exit in the kernel, writing one record per
//! completed call into one ring buffer shared by every CPU, in commit order.
//!
//! Maps:
//! - `followed` (hash, tgid → 1): the processes traced (`--pid`, `--comm`; unused with `--all`, which
//!   takes every process but syncbench). Filled from `/proc` when the trace starts, then by the kernel:
//!   `sched_process_fork` adds the child of a followed process before the child runs (no first call
//!   lost), `sched_process_exec` adds a process whose new name is `--comm`'s, `sched_process_exit` of
//!   its last thread (`group_dead`) removes the process.
//! - `inflight` (hash, tid → start ns, call number, six arguments): written by each entry program, read
//!   and deleted by the exit program of the same call.
//! - the session's (`syncbench_sys::kevents::Session`, shared with the block programs): `on` (1 while
//!   the reported window is open; entry programs record nothing while it is 0, as attaching and
//!   detaching take a while before and after the window; the exit of a call whose entry was recorded
//!   still pairs with it), `lost` (records the kernel could not write: ring full, `inflight` full, a
//!   child that could not be added; the report says INCOMPLETE when it is not 0, or when the kernel
//!   skipped runs of the programs) and the ring buffer (8 MiB).
//!
//! Records (native endian, x86_64: little):
//! ```text
//! offset size  call (kind 1), entry only (kind 2)    fork (3), exec (4), task exit (5)
//!      0    4  kind                                 kind
//!      4    4  tgid                                 tgid
//!      8    4  tid                                  tid
//!     12    4  syscall number                       fork: the child's pid (a thread's tid for a new thread);
//!                                                   task exit: group_dead (0 when unknown)
//!     16    8  entry time, CLOCK_MONOTONIC ns       time
//!     24    8  exit time (entry only: = entry)      -
//!     32    8  return value (entry only: 0)         -
//!     40   48  the six arguments (0 past the call's own)
//! ```
//! The reader turns each record into the typed events the perf backend's samples are decoded into (an
//! entry and an exit, or the scheduler event: `syncbench_sys::kevents::KernelEvent`), so
//! `attach::Attacher` aggregates both the same way.

use super::follow::{self, Follow, Selection};
use super::syscall_events::{ENTRY_ONLY, OPENS, PLAIN_WRITES, TIMED, syscall_event};
use std::io;
use syncbench_sys::bpf::{Alu, Asm, Cond, Map, MapType, Reg, Size, helper};
use syncbench_sys::kevents::{self, KernelEvent, Session, Task, Wake, step};
use syncbench_sys::tracefs::Tracefs;

/// Record kinds (offset 0).
const KIND_CALL: u32 = 1;
const KIND_ENTRY: u32 = 2;
const KIND_FORK: u32 = 3;
const KIND_EXEC: u32 = 4;
const KIND_TASK_EXIT: u32 = 5;
/// A call record's size, and a scheduler record's.
const CALL_RECORD: usize = 88;
const TASK_RECORD: usize = 24;

/// Ring size: ~87,000 call records (88 bytes and an 8-byte header each).
const RING_BYTES: u32 = 8 << 20;
/// Calls in flight at once (threads inside a traced call), machine-wide with `--all`.
const INFLIGHT_MAX: u32 = 32768;
/// Followed processes (and threads created while traced).
const FOLLOWED_MAX: u32 = 65536;

/// The loaded and attached programs, their session and own maps.
pub struct InKernel {
    session: Session,
    /// Whether a task exit record says if its process is gone (`group_dead`; else the leader's exit ends
    /// the process).
    group_dead_known: bool,
    /// `followed` and `inflight` (see the module docs), kept while the programs run.
    _maps: [Map; 2],
}

/// Who is traced, as the programs test it.
#[derive(Clone, Copy)]
enum Who {
    /// Processes in `followed`.
    Followed,
    /// Every process but this tgid (syncbench).
    AllBut(u32),
}

struct Maps<'a> {
    followed: &'a Map,
    inflight: &'a Map,
    k: kevents::Maps<'a>,
    who: Who,
}

impl Maps<'_> {
    /// `r6` = context, `r7` = tgid << 32 | tid; to `out` unless the current process is traced and the
    /// window is open (`on[0]` = 1).
    fn prologue(&self, a: &mut Asm) {
        a.mov(Reg::R6, Reg::R1).call(helper::GET_CURRENT_PID_TGID).mov(Reg::R7, Reg::R0);
        a.mov(Reg::R1, Reg::R7).alu_imm(Alu::Rsh, Reg::R1, 32); // r1 = tgid
        match self.who {
            Who::AllBut(me) => {
                a.jmp_imm(Cond::Eq, Reg::R1, me as i32, "out");
            }
            Who::Followed => {
                a.stx(Size::W, Reg::R10, -4, Reg::R1); // key: tgid
                kevents::Maps::lookup(a, self.followed, -4);
                a.jmp_imm(Cond::Eq, Reg::R0, 0, "out");
            }
        }
        self.k.unless_on(a, "out");
    }

    fn epilogue(a: &mut Asm) {
        kevents::Maps::epilogue(a, "out");
    }

    /// `r0 = lookup(map, r10 + key)`.
    fn lookup(&self, a: &mut Asm, map: &Map, key: i16) {
        kevents::Maps::lookup(a, map, key);
    }

    /// `r0 = update(map, r10 + key, r10 + value, BPF_ANY)`.
    fn update(&self, a: &mut Asm, map: &Map, key: i16, value: i16) {
        a.ld_map_fd(Reg::R1, map).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, key.into());
        a.mov(Reg::R3, Reg::R10).alu_imm(Alu::Add, Reg::R3, value.into()).mov_imm(Reg::R4, 0);
        a.call(helper::MAP_UPDATE_ELEM);
    }

    /// `delete(map, r10 + key)`.
    fn delete(&self, a: &mut Asm, map: &Map, key: i16) {
        a.ld_map_fd(Reg::R1, map).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, key.into());
        a.call(helper::MAP_DELETE_ELEM);
    }

    /// `lost[0] += 1`, then on to `then`.
    fn count_lost(&self, a: &mut Asm, then: &'static str) {
        self.k.count_lost(a, then);
    }

    /// Write `len` bytes at r10 + `at` to the ring (counted as lost if it is full), then `out`.
    fn emit(&self, a: &mut Asm, at: i16, len: usize, wake: Wake) {
        self.k.output(a, at, len, wake, "out");
    }

    /// The record header at r10 + `at`: kind, tgid, tid (from r7), then `extra`; clobbers r1.
    fn header(a: &mut Asm, at: i16, kind: u32, extra: Reg) {
        a.stx(Size::W, Reg::R10, at + 12, extra); // first: `extra` may be r1
        a.st_imm(Size::W, Reg::R10, at, kind as i32);
        a.mov(Reg::R1, Reg::R7).alu_imm(Alu::Rsh, Reg::R1, 32).stx(Size::W, Reg::R10, at + 4, Reg::R1);
        a.stx(Size::W, Reg::R10, at + 8, Reg::R7);
    }

    /// `sys_enter_*` of a timed call: `inflight[tid] = {now, nr, args}`.
    fn enter(&self, nr: i64, nargs: usize) -> Asm {
        let mut a = Asm::new();
        self.prologue(&mut a);
        // value at r10 - 64: start ns, nr, args[6]
        a.call(helper::KTIME_GET_NS).stx(Size::DW, Reg::R10, -64, Reg::R0);
        a.mov_imm(Reg::R1, nr as i32).stx(Size::DW, Reg::R10, -56, Reg::R1);
        copy_args(&mut a, nargs, -48);
        a.stx(Size::W, Reg::R10, -68, Reg::R7); // key: tid
        self.update(&mut a, self.inflight, -68, -64);
        a.jmp_imm(Cond::Eq, Reg::R0, 0, "out");
        self.count_lost(&mut a, "out"); // table full: this call will be missing
        Self::epilogue(&mut a);
        a
    }

    /// `sys_exit_*` of a timed call: pair with `inflight[tid]` and write one call record. No `followed`
    /// test: an entry in `inflight` says the entry program found the process followed.
    fn exit(&self, nr: i64, wake: Wake) -> Asm {
        const REC: i16 = -96; // the record: r10 - 96 .. r10 - 8
        let mut a = Asm::new();
        a.mov(Reg::R6, Reg::R1).call(helper::GET_CURRENT_PID_TGID).mov(Reg::R7, Reg::R0);
        a.stx(Size::W, Reg::R10, -4, Reg::R7); // key: tid
        self.lookup(&mut a, self.inflight, -4);
        a.jmp_imm(Cond::Eq, Reg::R0, 0, "out"); // entry not seen (before the trace, or not followed)
        a.mov(Reg::R8, Reg::R0);
        a.ldx(Size::DW, Reg::R9, Reg::R8, 8); // the entry's call number
        a.mov_imm(Reg::R1, nr as i32);
        Self::header(&mut a, REC, KIND_CALL, Reg::R1);
        a.ldx(Size::DW, Reg::R1, Reg::R8, 0).stx(Size::DW, Reg::R10, REC + 16, Reg::R1); // start
        for i in 0..6 {
            a.ldx(Size::DW, Reg::R1, Reg::R8, 16 + 8 * i).stx(Size::DW, Reg::R10, REC + 40 + 8 * i, Reg::R1);
        }
        // Copied out before the delete: a deleted element may be reused by another CPU at once.
        self.delete(&mut a, self.inflight, -4);
        a.jmp_imm(Cond::Ne, Reg::R9, nr as i32, "out"); // another call's entry (events lost): drop both
        a.call(helper::KTIME_GET_NS).stx(Size::DW, Reg::R10, REC + 24, Reg::R0); // end
        a.ldx(Size::DW, Reg::R1, Reg::R6, 16).stx(Size::DW, Reg::R10, REC + 32, Reg::R1); // ret
        self.emit(&mut a, REC, CALL_RECORD, wake);
        Self::epilogue(&mut a);
        a
    }

    /// `sys_enter_*` of a call whose entry alone matters (close, dup2/3, close_range, io_uring_setup).
    fn entry_only(&self, nr: i64, nargs: usize) -> Asm {
        const REC: i16 = -96;
        let mut a = Asm::new();
        self.prologue(&mut a);
        a.mov_imm(Reg::R1, nr as i32);
        Self::header(&mut a, REC, KIND_ENTRY, Reg::R1);
        a.call(helper::KTIME_GET_NS).stx(Size::DW, Reg::R10, REC + 16, Reg::R0).stx(
            Size::DW,
            Reg::R10,
            REC + 24,
            Reg::R0,
        );
        a.st_imm(Size::DW, Reg::R10, REC + 32, 0);
        copy_args(&mut a, nargs, REC + 40);
        self.emit(&mut a, REC, CALL_RECORD, Wake::QuarterFull);
        Self::epilogue(&mut a);
        a
    }

    /// `sched_process_fork`: a followed parent's child is followed from before it runs; every fork is
    /// recorded (user space follows the same way, and forgets reused pids).
    fn fork(&self, child_offset: i16) -> Asm {
        const REC: i16 = -32;
        let mut a = Asm::new();
        a.mov(Reg::R6, Reg::R1).call(helper::GET_CURRENT_PID_TGID).mov(Reg::R7, Reg::R0);
        a.ldx(Size::W, Reg::R8, Reg::R6, child_offset);
        if let Who::Followed = self.who {
            a.mov(Reg::R1, Reg::R7).alu_imm(Alu::Rsh, Reg::R1, 32).stx(Size::W, Reg::R10, -4, Reg::R1);
            self.lookup(&mut a, self.followed, -4);
            a.jmp_imm(Cond::Eq, Reg::R0, 0, "record");
            a.stx(Size::W, Reg::R10, -8, Reg::R8).st_imm(Size::W, Reg::R10, -12, 1);
            self.update(&mut a, self.followed, -8, -12);
            a.jmp_imm(Cond::Eq, Reg::R0, 0, "record");
            self.count_lost(&mut a, "record"); // a child not followed: its calls would be missing
        }
        a.label("record");
        Self::header(&mut a, REC, KIND_FORK, Reg::R8);
        a.call(helper::KTIME_GET_NS).stx(Size::DW, Reg::R10, REC + 16, Reg::R0);
        self.emit(&mut a, REC, TASK_RECORD, Wake::QuarterFull);
        Self::epilogue(&mut a);
        a
    }

    /// `sched_process_exec`: with `--comm NAME`, a process whose new name is NAME is followed from now.
    fn exec(&self, comm: Option<[u8; 16]>) -> Asm {
        const REC: i16 = -32;
        let mut a = Asm::new();
        a.mov(Reg::R6, Reg::R1).call(helper::GET_CURRENT_PID_TGID).mov(Reg::R7, Reg::R0);
        if let Some(name) = comm {
            // The comm (NUL-padded to 16 bytes) compared as two u64 words.
            a.mov(Reg::R1, Reg::R10).alu_imm(Alu::Add, Reg::R1, -48).mov_imm(Reg::R2, 16);
            a.call(helper::GET_CURRENT_COMM);
            for (i, half) in name.chunks(8).enumerate() {
                let word = u64::from_ne_bytes(half.try_into().expect("8 bytes"));
                a.ldx(Size::DW, Reg::R1, Reg::R10, -48 + 8 * i as i16).ld_imm64(Reg::R2, word);
                a.jmp_reg(Cond::Ne, Reg::R1, Reg::R2, "record");
            }
            a.mov(Reg::R1, Reg::R7).alu_imm(Alu::Rsh, Reg::R1, 32).stx(Size::W, Reg::R10, -8, Reg::R1);
            a.st_imm(Size::W, Reg::R10, -12, 1);
            self.update(&mut a, self.followed, -8, -12);
            a.jmp_imm(Cond::Eq, Reg::R0, 0, "record");
            self.count_lost(&mut a, "record");
        }
        a.label("record");
        a.mov_imm(Reg::R1, 0);
        Self::header(&mut a, REC, KIND_EXEC, Reg::R1);
        a.call(helper::KTIME_GET_NS).stx(Size::DW, Reg::R10, REC + 16, Reg::R0);
        self.emit(&mut a, REC, TASK_RECORD, Wake::QuarterFull);
        Self::epilogue(&mut a);
        a
    }

    /// `sched_process_exit` (every thread): forget the task in `inflight` (its id can be reused), the
    /// process in `followed` once its last thread exits (`group_dead`, at `group_dead` in the record: a
    /// leader that exits first, by `pthread_exit` or a non-leader's exec, leaves the others running;
    /// without the field, when the leader exits), a thread's own entry (from the fork program) at once;
    /// and record it, with `group_dead` (0 when unknown) at 12.
    fn task_exit(&self, group_dead: Option<i16>) -> Asm {
        const REC: i16 = -32;
        let mut a = Asm::new();
        a.mov(Reg::R6, Reg::R1).call(helper::GET_CURRENT_PID_TGID).mov(Reg::R7, Reg::R0);
        a.mov_imm(Reg::R8, 0);
        if let Some(at) = group_dead {
            a.ldx(Size::B, Reg::R8, Reg::R6, at);
        }
        a.stx(Size::W, Reg::R10, -4, Reg::R7); // key: tid
        if let Who::Followed = self.who {
            a.mov(Reg::R1, Reg::R7).alu_imm(Alu::Rsh, Reg::R1, 32).stx(Size::W, Reg::R10, -8, Reg::R1); // tgid
            if group_dead.is_some() {
                a.jmp_imm(Cond::Eq, Reg::R8, 0, "thread");
                self.delete(&mut a, self.followed, -8); // the process is gone
                a.label("thread");
                // The leader's own entry is the process's: kept while other threads run.
                a.ldx(Size::W, Reg::R1, Reg::R10, -4).ldx(Size::W, Reg::R2, Reg::R10, -8);
                a.jmp_reg(Cond::Eq, Reg::R1, Reg::R2, "followed_done");
            }
            self.delete(&mut a, self.followed, -4);
            a.label("followed_done");
        }
        self.delete(&mut a, self.inflight, -4);
        Self::header(&mut a, REC, KIND_TASK_EXIT, Reg::R8);
        a.call(helper::KTIME_GET_NS).stx(Size::DW, Reg::R10, REC + 16, Reg::R0);
        self.emit(&mut a, REC, TASK_RECORD, Wake::QuarterFull);
        Self::epilogue(&mut a);
        a
    }
}

/// The call's own arguments from the context (16 + 8 i: reading past the record is refused at attach),
/// zeros for the rest, to r10 + `at` ...
fn copy_args(a: &mut Asm, nargs: usize, at: i16) {
    for i in 0..6i16 {
        if (i as usize) < nargs {
            a.ldx(Size::DW, Reg::R1, Reg::R6, 16 + 8 * i);
        } else {
            a.mov_imm(Reg::R1, 0);
        }
        a.stx(Size::DW, Reg::R10, at + 8 * i, Reg::R1);
    }
}

impl InKernel {
    /// Load and attach every program for `selection`; calls are recorded once [`InKernel::set_on`] opened
    /// the window (processes forking and exiting are followed from now). Errors say which step
    /// failed (no BPF, the verifier's last line, ...).
    pub fn start(tracefs: &Tracefs, selection: &Selection, track_writes: bool) -> io::Result<InKernel> {
        let followed = Map::create(MapType::Hash, 4, 4, FOLLOWED_MAX).map_err(step("creating a BPF hash map"))?;
        let inflight = Map::create(MapType::Hash, 4, 64, INFLIGHT_MAX).map_err(step("creating a BPF hash map"))?;
        let mut session = Session::new(RING_BYTES)?;
        let me = std::process::id();
        let who = if *selection == Selection::All { Who::AllBut(me) } else { Who::Followed };
        let comm = match selection {
            Selection::Comm(name) => {
                let mut padded = [0u8; 16];
                padded[..name.len().min(15)].copy_from_slice(&name.as_bytes()[..name.len().min(15)]);
                Some(padded)
            }
            _ => None,
        };
        // Scheduler programs first: a fork while the rest loads already adds the child.
        let fork = tracefs.event("sched", "sched_process_fork")?;
        let child = fork.field("child_pid")?;
        if child.size != 4 {
            return Err(io::Error::other("sched_process_fork has an unexpected layout"));
        }
        let exit = tracefs.event("sched", "sched_process_exit")?;
        let group_dead = exit.fields.get("group_dead").filter(|f| f.size == 1).map(|f| f.offset as i16);
        let mut load = |build: &dyn Fn(&Maps) -> Asm, id: u64, what: &str| -> io::Result<()> {
            let maps = Maps { followed: &followed, inflight: &inflight, k: session.maps(), who };
            let asm = build(&maps);
            session.load(&asm, id, what)
        };
        load(&|m| m.fork(child.offset as i16), fork.id, "sched_process_fork")?;
        load(&|m| m.exec(comm), tracefs.event("sched", "sched_process_exec")?.id, "sched_process_exec")?;
        load(&|m| m.task_exit(group_dead), exit.id, "sched_process_exit")?;
        let timed = TIMED.into_iter().filter(|(nr, _)| track_writes || !PLAIN_WRITES.contains(nr));
        for (nr, name) in timed {
            let enter = syscall_event(tracefs, "sys_enter", name)?;
            load(&|m| m.enter(nr, nargs(&enter)), enter.id, &format!("sys_enter_{name}"))?;
            let wake = if OPENS.contains(&nr) { Wake::Now } else { Wake::QuarterFull };
            let exit = syscall_event(tracefs, "sys_exit", name)?;
            load(&|m| m.exit(nr, wake), exit.id, &format!("sys_exit_{name}"))?;
        }
        for (nr, name) in ENTRY_ONLY {
            let enter = syscall_event(tracefs, "sys_enter", name)?;
            load(&|m| m.entry_only(nr, nargs(&enter)), enter.id, &format!("sys_enter_{name}"))?;
        }
        session.attach()?;
        if let Who::Followed = who {
            fill_followed(&followed, selection)?;
        }
        Ok(InKernel { session, group_dead_known: group_dead.is_some(), _maps: [followed, inflight] })
    }

    /// Open (`true`) or close the window: calls entered while it is closed are not recorded.
    pub fn set_on(&mut self, on: bool) -> io::Result<()> {
        self.session.set_on(on)
    }

    /// Block until the programs wake the reader or `timeout_ms` passed.
    pub fn wait(&self, timeout_ms: i32) -> io::Result<()> {
        self.session.wait(timeout_ms)
    }

    /// Detach every program, in parallel (what is in the ring stays readable).
    pub fn stop(&mut self) {
        self.session.detach();
    }

    /// Every record written since the last call, as events, in commit order.
    pub fn drain(&mut self) -> Vec<KernelEvent> {
        let mut events = Vec::new();
        let group_dead_known = self.group_dead_known;
        // A record still reserved holds back the rest until the next call (the last comes after detaching,
        // when no program runs).
        let _ = self.session.drain(|record| events_of(record, group_dead_known, &mut events));
        events
    }

    /// Records the kernel could not write, and runs of the programs it skipped (when this kernel counts
    /// them: Linux 6.7): the counts are then incomplete. An error when the count cannot be read: the
    /// trace cannot then say whether it is complete.
    pub fn lost(&self) -> io::Result<u64> {
        let lost = self.session.lost()?;
        Ok(lost.dropped + lost.skipped.unwrap_or(0))
    }
}

/// The initial PID namespace, as `readlink /proc/self/ns/pid` shows it (`PROC_PID_INIT_INO`, fixed by
/// the kernel). Comparing with `/proc/1/ns/pid` is not enough: in a container, pid 1 is in its namespace.
const INIT_PID_NS: &str = "pid:[4026531836]";

/// Why the programs cannot run here, if they cannot: they see the initial namespace's process ids
/// (`bpf_get_current_pid_tgid`), while syncbench's `--pid`, `/proc` and its own id are those of its
/// namespace, so in another one `--pid`/`--comm` would record nothing and `--all` would record
/// syncbench. `link`: `/proc/self/ns/pid`'s target, or why it could not be read.
pub fn pid_namespace_refusal(link: Result<String, String>) -> Option<String> {
    match link {
        Ok(link) if link == INIT_PID_NS => None,
        Ok(link) => Some(format!(
            "syncbench runs in its own PID namespace ({link}, e.g. a container), where eBPF programs would see \
             other process ids than syncbench"
        )),
        Err(why) => Some(format!("cannot tell syncbench's PID namespace (/proc/self/ns/pid: {why})")),
    }
}

/// [`pid_namespace_refusal`] of this process.
pub fn pid_namespace_refusal_here() -> Option<String> {
    let link = std::fs::read_link("/proc/self/ns/pid").map(|l| l.to_string_lossy().into_owned());
    pid_namespace_refusal(link.map_err(|e| e.to_string()))
}

/// How many arguments a `sys_enter_*` record has (8-byte words from 16).
fn nargs(format: &syncbench_sys::tracefs::EventFormat) -> usize {
    format.fields.values().filter(|f| f.offset >= 16).count().min(6)
}

/// The processes followed when the trace starts, from `/proc` as [`Follow`] decides (the given pids or
/// names and their descendants). Listed again until no new one appears: a child forked by a process
/// not yet in the map when it forked is caught by the next pass.
fn fill_followed(followed: &Map, selection: &Selection) -> io::Result<()> {
    let mut follow = Follow::new(selection.clone(), std::process::id() as i32);
    let mut known = std::collections::HashSet::new();
    for _ in 0..10 {
        let new: Vec<i32> = follow::all_pids().into_iter().filter(|p| !known.contains(p)).collect();
        let mut added = false;
        for pid in new {
            known.insert(pid);
            if follow.wants(pid) {
                followed.update(&(pid as u32).to_ne_bytes(), &1u32.to_ne_bytes())?;
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    Ok(())
}

fn u32_at(r: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(r[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(r: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(r[at..at + 8].try_into().expect("8 bytes"))
}

/// The events of one record: a call's entry and exit, an entry alone, or the scheduler event.
fn events_of(r: &[u8], group_dead_known: bool, out: &mut Vec<KernelEvent>) {
    if r.len() < TASK_RECORD {
        return;
    }
    let (kind, extra) = (u32_at(r, 0), u32_at(r, 12));
    let task = Task { pid: u32_at(r, 4) as i32, tid: u32_at(r, 8) as i32 };
    let time_ns = u64_at(r, 16);
    match kind {
        KIND_CALL | KIND_ENTRY if r.len() >= CALL_RECORD => {
            let nr = i64::from(extra as i32);
            let args = std::array::from_fn(|i| u64_at(r, 40 + 8 * i));
            out.push(KernelEvent::SyscallEnter { task, time_ns, nr, args });
            if kind == KIND_CALL {
                out.push(KernelEvent::SyscallExit { task, time_ns: u64_at(r, 24), nr, ret: u64_at(r, 32) as i64 });
            }
        }
        KIND_FORK => out.push(KernelEvent::Fork { task, time_ns, child: extra as i32 }),
        KIND_EXEC => out.push(KernelEvent::Exec { task, time_ns }),
        KIND_TASK_EXIT => {
            let group_dead = group_dead_known.then_some(extra != 0);
            out.push(KernelEvent::TaskExit { task, time_ns, group_dead });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_record(kind: u32, nr: u32, ret: i64, args: [u64; 6]) -> Vec<u8> {
        let mut r = Vec::new();
        for w in [kind, 100, 101, nr] {
            r.extend(w.to_ne_bytes());
        }
        for w in [5_000u64, 7_500, ret as u64].into_iter().chain(args) {
            r.extend(w.to_ne_bytes());
        }
        r
    }

    #[test]
    fn a_call_record_becomes_the_entry_and_exit_events() {
        let mut out = Vec::new();
        events_of(&call_record(KIND_CALL, libc::SYS_fdatasync as u32, 0, [3, 0, 0, 0, 0, 0]), true, &mut out);
        let task = Task { pid: 100, tid: 101 };
        let nr = libc::SYS_fdatasync;
        assert_eq!(
            out,
            [
                KernelEvent::SyscallEnter { task, time_ns: 5_000, nr, args: [3, 0, 0, 0, 0, 0] },
                KernelEvent::SyscallExit { task, time_ns: 7_500, nr, ret: 0 },
            ]
        );
        out.clear();
        events_of(&call_record(KIND_CALL, libc::SYS_openat as u32, -2i64 as u64 as i64, [0; 6]), true, &mut out);
        assert!(matches!(out[1], KernelEvent::SyscallExit { ret: -2, .. }), "{out:?}");
        out.clear();
        events_of(&call_record(KIND_ENTRY, libc::SYS_close as u32, 0, [7, 0, 0, 0, 0, 0]), true, &mut out);
        assert_eq!(out.len(), 1, "an entry-only call has no exit");
        out.clear();
        events_of(&call_record(KIND_CALL, 1, 0, [0; 6])[..CALL_RECORD - 1], true, &mut out);
        assert!(out.is_empty(), "a short call record is refused");
    }

    /// `--comm` in the kernel: a process that takes the name by exec after the programs were attached is
    /// followed from its exec on (its `sync()` is recorded), one of another name is not. Fails if the
    /// exec program's name comparison or its `followed` update is wrong (tried: comparing one word off).
    #[test]
    fn a_process_taking_the_name_by_exec_is_followed_from_the_kernel() {
        if !syncbench_sys::test_support::is_root_or_skip() {
            return;
        }
        let tracefs = Tracefs::open(&std::env::temp_dir()).unwrap();
        let mut k = InKernel::start(&tracefs, &Selection::Comm("sbcommtest".into()), false).unwrap();
        k.set_on(true).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("sbcommtest");
        std::os::unix::fs::symlink("/bin/sh", &named).unwrap();
        for exe in [named.as_path(), std::path::Path::new("/bin/sh")] {
            let status = std::process::Command::new(exe).args(["-c", "sync"]).status().unwrap();
            assert!(status.success());
        }
        k.stop();
        let syncs = k
            .drain()
            .iter()
            .filter(|e| matches!(e, KernelEvent::SyscallEnter { nr, .. } if *nr == libc::SYS_sync))
            .count();
        assert_eq!(syncs, 1, "only the sync of the process named sbcommtest");
        assert_eq!(k.lost().unwrap(), 0);
    }

    /// Calls are recorded only while `on` is 1 (the reported window): not those entered after the
    /// programs were attached but before the window opened, nor after it closed (detaching takes a
    /// while). Only this thread's calls are counted: other tests in this binary run beside it.
    #[test]
    fn only_calls_entered_while_the_window_is_open_are_recorded() {
        if !syncbench_sys::test_support::is_root_or_skip() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("f")).unwrap();
        let fdatasyncs = |n: usize| {
            for _ in 0..n {
                file.sync_data().unwrap();
            }
        };
        let tracefs = Tracefs::open(&std::env::temp_dir()).unwrap();
        let me = std::process::id();
        let mut k = InKernel::start(&tracefs, &Selection::Pids(vec![me as i32]), false).unwrap();
        // Syncbench leaves itself out of `followed`: this test process is put in by hand.
        k._maps[0].update(&me.to_ne_bytes(), &1u32.to_ne_bytes()).unwrap();
        fdatasyncs(2); // before the window
        k.set_on(true).unwrap();
        fdatasyncs(3);
        k.set_on(false).unwrap();
        fdatasyncs(4); // after it, still attached
        k.stop();
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let events = k.drain();
        let counted = events
            .iter()
            .filter(|e| matches!(e, KernelEvent::SyscallEnter { task, nr, .. } if task.tid == tid && *nr == libc::SYS_fdatasync))
            .count();
        assert_eq!(counted, 3, "only the calls made while the window was open");
        assert_eq!(k.lost().unwrap(), 0);
        // A lost count that cannot be read is an error, not 0 (here: a map without the entry).
        k.session.replace_lost_map(Map::create(MapType::Hash, 4, 8, 1).unwrap());
        let err = k.lost().unwrap_err().to_string();
        assert!(err.contains("reading the eBPF lost-record count"), "{err}");
    }

    #[test]
    fn ebpf_is_refused_outside_the_initial_pid_namespace() {
        assert_eq!(pid_namespace_refusal(Ok("pid:[4026531836]".into())), None);
        let other = pid_namespace_refusal(Ok("pid:[4026532201]".into())).unwrap();
        assert!(other.contains("own PID namespace (pid:[4026532201]"), "{other}");
        let unreadable = pid_namespace_refusal(Err("No such file or directory".into())).unwrap();
        assert!(unreadable.contains("cannot tell"), "{unreadable}");
        // This machine (CI, the project VM) is not a container: here the programs run.
        assert_eq!(pid_namespace_refusal_here(), None);
    }

    #[test]
    fn scheduler_records_carry_the_child_and_group_dead() {
        let record = |kind: u32, extra: u32| {
            let mut r = Vec::new();
            for w in [kind, 100, 101, extra] {
                r.extend(w.to_ne_bytes());
            }
            r.extend(9u64.to_ne_bytes());
            r
        };
        let task = Task { pid: 100, tid: 101 };
        let mut out = Vec::new();
        events_of(&record(KIND_FORK, 4242), true, &mut out);
        events_of(&record(KIND_TASK_EXIT, 1), true, &mut out);
        events_of(&record(KIND_TASK_EXIT, 0), false, &mut out);
        assert_eq!(
            out,
            [
                KernelEvent::Fork { task, time_ns: 9, child: 4242 },
                KernelEvent::TaskExit { task, time_ns: 9, group_dead: Some(true) },
                KernelEvent::TaskExit { task, time_ns: 9, group_dead: None },
            ]
        );
    }
}

/// A tight loop of one traced call, and where the eBPF backend's cost per call goes. The test: every
/// call of this thread makes exactly one record, none of its entries is left in `inflight`, nothing is
/// lost. The
/// measurement, printed (run as root with `--nocapture`, `SYNCBENCH_BPF_COST_ROUNDS=9` for more rounds):
/// the thread's CPU time per `sync_file_range` (a traced call that does no I/O) untraced, with programs
/// that only return (the kernel's syscall tracepoint and BPF dispatch), with programs that also read the
/// clock, and with syncbench's own entry and exit programs.
#[cfg(test)]
mod cost {
    use super::*;
    use syncbench_sys::bpf::{Attachment, Program};

    /// This thread's CPU time (the kernel's work for its calls included), ns: less disturbed by other
    /// work on the machine than the wall clock.
    fn thread_cpu_ns() -> u64 {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid timespec to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }

    fn ns_per_sfr(fd: i32, n: u32) -> f64 {
        let start = thread_cpu_ns();
        for _ in 0..n {
            // SAFETY: a valid fd.
            assert_eq!(unsafe { libc::sync_file_range(fd, 0, 8192, libc::SYNC_FILE_RANGE_WRITE) }, 0);
        }
        (thread_cpu_ns() - start) as f64 / f64::from(n)
    }

    fn with_programs(fd: i32, n: u32, enter: &Asm, exit: &Asm) -> f64 {
        let tracefs = Tracefs::open(&std::env::temp_dir()).unwrap();
        let ids = [
            syscall_event(&tracefs, "sys_enter", "sync_file_range").unwrap().id,
            syscall_event(&tracefs, "sys_exit", "sync_file_range").unwrap().id,
        ];
        let load = |asm: &Asm| Program::load_tracepoint(&asm.finish().unwrap(), kevents::LICENSE).unwrap();
        let programs = [load(enter), load(exit)];
        let attached: Vec<Attachment> =
            programs.iter().zip(ids).map(|(p, id)| p.attach_tracepoint(id).unwrap()).collect();
        let ns = ns_per_sfr(fd, n);
        drop(attached);
        ns
    }

    #[test]
    fn every_call_of_a_tight_loop_is_one_record_and_what_each_part_costs() {
        if !syncbench_sys::test_support::is_root_or_skip() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("f")).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        // Fewer calls than a quarter of the ring holds: no wake-up needed, nothing lost.
        let n = 20_000;
        let rounds: u32 = std::env::var("SYNCBENCH_BPF_COST_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
        let followed = Map::create(MapType::Hash, 4, 4, FOLLOWED_MAX).unwrap();
        let inflight = Map::create(MapType::Hash, 4, 64, INFLIGHT_MAX).unwrap();
        let mut session = Session::new(RING_BYTES).unwrap();
        session.set_on(true).unwrap();
        followed.update(&std::process::id().to_ne_bytes(), &1u32.to_ne_bytes()).unwrap();
        let mut nothing = Asm::new();
        nothing.mov_imm(Reg::R0, 1).exit();
        let mut clock = Asm::new();
        clock.call(helper::KTIME_GET_NS).mov_imm(Reg::R0, 1).exit();
        for round in 1..=rounds {
            let untraced = ns_per_sfr(fd, n);
            let bare = with_programs(fd, n, &nothing, &nothing);
            let clocked = with_programs(fd, n, &clock, &clock);
            let who = Who::Followed;
            let maps = Maps { followed: &followed, inflight: &inflight, k: session.maps(), who };
            let (enter, exit) =
                (maps.enter(libc::SYS_sync_file_range, 4), maps.exit(libc::SYS_sync_file_range, Wake::QuarterFull));
            let ours = with_programs(fd, n, &enter, &exit);
            let mut calls = Vec::new();
            session.drain(|r| events_of(r, true, &mut calls));
            // This thread's records only: other tests in this binary (method.rs's included) run beside
            // it and make the same calls.
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let mine =
                calls.iter().filter(|e| matches!(e, KernelEvent::SyscallExit { task, .. } if task.tid == tid)).count();
            assert_eq!(mine, n as usize, "one record per call");
            let open = inflight.lookup(&(tid as u32).to_ne_bytes()).unwrap();
            assert_eq!(open, None, "every entry of this thread paired with its exit");
            assert_eq!(session.lost().unwrap().dropped, 0);
            eprintln!(
                "round {round} (load {}): CPU ns per sync_file_range: untraced {untraced:.0}, programs that only return \
                 {bare:.0}, that read the clock {clocked:.0}, syncbench's {ours:.0}",
                std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').next().unwrap_or("?")
            );
        }
    }
}
