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
//! - `on` (array, one u32): 1 while the reported window is open. Entry programs record nothing while it
//!   is 0 (attaching and detaching take a while before and after the window); the exit of a call whose
//!   entry was recorded still pairs with it.
//! - `lost` (array, one u64): records the kernel could not write (ring full, `inflight` full, a child
//!   that could not be added): the report says INCOMPLETE when it is not 0.
//! - `events` (ring buffer, 8 MiB).
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
//! The reader turns each record back into the samples the perf backend would have produced (an entry
//! and an exit, or the scheduler event), so `attach::Attacher` decodes and aggregates both the same way.

use super::attach::{ENTRY_ONLY, OPENS, PLAIN_WRITES, TIMED, syscall_event};
use super::follow::{self, Follow, Selection};
use std::io;
use syncbench_sys::bpf::{Alu, Asm, Attachment, Cond, Map, MapType, Program, Reg, RingBuf, Size, helper, ringbuf};
use syncbench_sys::perf::Sample;
use syncbench_sys::tracefs::{Field, Tracefs};

/// Record kinds (offset 0).
const KIND_CALL: u32 = 1;
const KIND_ENTRY: u32 = 2;
const KIND_FORK: u32 = 3;
const KIND_EXEC: u32 = 4;
const KIND_TASK_EXIT: u32 = 5;
/// A call record's size, and a scheduler record's.
const CALL_RECORD: usize = 88;
const TASK_RECORD: usize = 24;

/// The ids the samples made from records carry (`common_type`; real tracepoint ids are far smaller), and
/// the field of a fork sample holding the child's pid.
pub const ENTER_ID: u64 = 0xfff0;
/// An exit that is not an open's.
pub const EXIT_ID: u64 = 0xfff1;
/// An open's exit (names its descriptor at once).
pub const EXIT_OPEN_ID: u64 = 0xfff2;
/// `sched_process_fork`.
pub const FORK_ID: u64 = 0xfff3;
/// `sched_process_exec`.
pub const EXEC_ID: u64 = 0xfff4;
/// `sched_process_exit`.
pub const TASK_EXIT_ID: u64 = 0xfff5;
/// Where a task exit sample holds `group_dead` (the process's last thread), when the kernel has it.
pub const TASK_EXIT_GROUP_DEAD: Field = Field { offset: 12, size: 4, data_loc: false };
/// Where a fork sample holds the child's pid.
pub const FORK_CHILD: Field = Field { offset: 12, size: 4, data_loc: false };

/// License of the programs (the helpers used are not GPL-only; the kernel accepts this string as
/// GPL-compatible should one ever be).
const LICENSE: &str = "Dual MIT/GPL";
/// Ring size: ~87,000 call records (88 bytes and an 8-byte header each).
const RING_BYTES: u32 = 8 << 20;
/// Calls in flight at once (threads inside a traced call), machine-wide with `--all`.
const INFLIGHT_MAX: u32 = 32768;
/// Followed processes (and threads created while traced).
const FOLLOWED_MAX: u32 = 65536;

/// The loaded and attached programs, their maps and the ring.
pub struct InKernel {
    ring: RingBuf,
    lost: Map,
    /// `on[0]`: whether entries are recorded (see the module docs).
    on: Map,
    /// Where a task exit sample says whether its process is gone; `None`: the kernel's record has no
    /// `group_dead` (then the leader's exit ends the process).
    pub group_dead: Option<Field>,
    /// Kept open while attached; dropping them detaches the programs.
    attachments: Vec<Attachment>,
    _programs: Vec<Program>,
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
    lost: &'a Map,
    on: &'a Map,
    ring: &'a Map,
    who: Who,
}

/// How a record wakes the reader.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// At once (an open: its descriptor is named from `/proc` while surely open).
    Now,
    /// When a quarter of the ring is used (else the reader's 50 ms timeout).
    QuarterFull,
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
                self.lookup(a, self.followed, -4);
                a.jmp_imm(Cond::Eq, Reg::R0, 0, "out");
            }
        }
        a.st_imm(Size::W, Reg::R10, -4, 0); // key 0
        self.lookup(a, self.on, -4);
        a.jmp_imm(Cond::Eq, Reg::R0, 0, "out");
        a.ldx(Size::W, Reg::R1, Reg::R0, 0).jmp_imm(Cond::Eq, Reg::R1, 0, "out");
    }

    /// `out: return 1`: 0 would discard the hit for other perf users of the tracepoint too (the event the
    /// program is attached through is opened disabled, so perf neither counts nor samples its hits).
    fn epilogue(a: &mut Asm) {
        a.label("out").mov_imm(Reg::R0, 1).exit();
    }

    /// `r0 = lookup(map, r10 + key)`.
    fn lookup(&self, a: &mut Asm, map: &Map, key: i16) {
        a.ld_map_fd(Reg::R1, map).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, key.into());
        a.call(helper::MAP_LOOKUP_ELEM);
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

    /// `lost[0] += 1` (uses the stack word at r10 - 4), then on to `then`.
    fn count_lost(&self, a: &mut Asm, then: &'static str) {
        a.st_imm(Size::W, Reg::R10, -4, 0);
        self.lookup(a, self.lost, -4);
        a.jmp_imm(Cond::Eq, Reg::R0, 0, then);
        a.mov_imm(Reg::R1, 1).atomic_add64(Reg::R0, 0, Reg::R1).ja(then);
    }

    /// Write `len` bytes at r10 + `at` to the ring (counted as lost if it is full), then `out`.
    fn emit(&self, a: &mut Asm, at: i16, len: usize, wake: Wake) {
        match wake {
            Wake::Now => {
                a.mov_imm(Reg::R4, ringbuf::FORCE_WAKEUP);
            }
            Wake::QuarterFull => {
                a.ld_map_fd(Reg::R1, self.ring).mov_imm(Reg::R2, ringbuf::AVAIL_DATA).call(helper::RINGBUF_QUERY);
                a.mov_imm(Reg::R4, ringbuf::NO_WAKEUP);
                a.jmp_imm(Cond::Lt, Reg::R0, (RING_BYTES / 4) as i32, "send");
                a.mov_imm(Reg::R4, ringbuf::FORCE_WAKEUP);
                a.label("send");
            }
        }
        a.ld_map_fd(Reg::R1, self.ring).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, at.into());
        a.mov_imm(Reg::R3, len as i32).call(helper::RINGBUF_OUTPUT);
        a.jmp_imm(Cond::Eq, Reg::R0, 0, "out");
        self.count_lost(a, "out");
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

/// An error of the step `what` (creating a map, attaching a program), saying so.
fn step(what: &'static str) -> impl Fn(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn load(asm: &Asm, what: &str) -> io::Result<Program> {
    Program::load_tracepoint(&asm.finish()?, LICENSE)
        .map_err(|e| io::Error::new(e.error.kind(), format!("the kernel refused the {what} program: {e}")))
}

impl InKernel {
    /// Load and attach every program for `selection`; calls are recorded once [`InKernel::set_on`] opened
    /// the window (processes forking and exiting are followed from now). Errors say which step
    /// failed (no BPF, the verifier's last line, ...).
    pub fn start(tracefs: &Tracefs, selection: &Selection, track_writes: bool) -> io::Result<InKernel> {
        let followed = Map::create(MapType::Hash, 4, 4, FOLLOWED_MAX).map_err(step("creating a BPF hash map"))?;
        let inflight = Map::create(MapType::Hash, 4, 64, INFLIGHT_MAX).map_err(step("creating a BPF hash map"))?;
        let lost = Map::create(MapType::Array, 4, 8, 1).map_err(step("creating a BPF array map"))?;
        let on = Map::create(MapType::Array, 4, 4, 1).map_err(step("creating a BPF array map"))?;
        let ring = RingBuf::create(RING_BYTES).map_err(step("creating a BPF ring buffer (Linux 5.8 or later)"))?;
        let me = std::process::id();
        let who = if *selection == Selection::All { Who::AllBut(me) } else { Who::Followed };
        let maps = Maps { followed: &followed, inflight: &inflight, lost: &lost, on: &on, ring: ring.map(), who };
        let mut programs = Vec::new();
        let mut ids = Vec::new();
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
        programs.push(load(&maps.fork(child.offset as i16), "sched_process_fork")?);
        ids.push(fork.id);
        programs.push(load(&maps.exec(comm), "sched_process_exec")?);
        ids.push(tracefs.event("sched", "sched_process_exec")?.id);
        let exit = tracefs.event("sched", "sched_process_exit")?;
        let group_dead = exit.fields.get("group_dead").filter(|f| f.size == 1).map(|f| f.offset as i16);
        programs.push(load(&maps.task_exit(group_dead), "sched_process_exit")?);
        ids.push(exit.id);
        let timed = TIMED.into_iter().filter(|(nr, _)| track_writes || !PLAIN_WRITES.contains(nr));
        for (nr, name) in timed {
            let enter = syscall_event(tracefs, "sys_enter", name)?;
            programs.push(load(&maps.enter(nr, nargs(&enter)), &format!("sys_enter_{name}"))?);
            ids.push(enter.id);
            let wake = if OPENS.contains(&nr) { Wake::Now } else { Wake::QuarterFull };
            let exit = syscall_event(tracefs, "sys_exit", name)?;
            programs.push(load(&maps.exit(nr, wake), &format!("sys_exit_{name}"))?);
            ids.push(exit.id);
        }
        for (nr, name) in ENTRY_ONLY {
            let enter = syscall_event(tracefs, "sys_enter", name)?;
            programs.push(load(&maps.entry_only(nr, nargs(&enter)), &format!("sys_enter_{name}"))?);
            ids.push(enter.id);
        }
        let mut attachments = Vec::new();
        for (program, id) in programs.iter().zip(ids) {
            attachments.push(program.attach_tracepoint(id).map_err(step("attaching a BPF program to a tracepoint"))?);
        }
        if let Who::Followed = who {
            fill_followed(&followed, selection)?;
        }
        let group_dead = group_dead.map(|_| TASK_EXIT_GROUP_DEAD);
        Ok(InKernel { ring, lost, on, group_dead, attachments, _programs: programs, _maps: [followed, inflight] })
    }

    /// Open (`true`) or close the window: calls entered while it is closed are not recorded.
    pub fn set_on(&self, on: bool) -> io::Result<()> {
        self.on.update(&0u32.to_ne_bytes(), &u32::from(on).to_ne_bytes()).map_err(step("switching the eBPF programs"))
    }

    /// Block until the programs wake the reader or `timeout_ms` passed.
    pub fn wait(&self, timeout_ms: i32) -> io::Result<()> {
        self.ring.wait(timeout_ms)
    }

    /// Detach every program (what is in the ring stays readable).
    pub fn stop(&mut self) {
        // Each detach waits for a grace period (~70 ms here, syscall tracepoints being faultable): one
        // thread each, so they wait together instead of one after the other.
        std::thread::scope(|scope| {
            for attachment in self.attachments.drain(..) {
                scope.spawn(move || drop(attachment));
            }
        });
    }

    /// Every record written since the last call, as samples, in commit order.
    pub fn drain(&mut self) -> Vec<Sample> {
        let mut samples = Vec::new();
        self.ring.drain(|record| samples_of(record, &mut samples));
        samples
    }

    /// Records the kernel could not write (the counts are then incomplete). An error when the count
    /// cannot be read: the trace cannot then say whether it is complete.
    pub fn lost(&self) -> io::Result<u64> {
        let failed = |why: String| io::Error::other(format!("reading the eBPF lost-record count: {why}"));
        match self.lost.lookup(&0u32.to_ne_bytes()) {
            Ok(Some(v)) => {
                let len = v.len();
                Ok(u64::from_ne_bytes(v.try_into().map_err(|_| failed(format!("{len} bytes, not 8")))?))
            }
            Ok(None) => Err(failed("no entry 0 in the array map".into())),
            Err(e) => Err(failed(e.to_string())),
        }
    }
}

impl Drop for InKernel {
    /// Detached together when dropped without [`InKernel::stop`] (an error ended the trace), not one
    /// grace period after the other.
    fn drop(&mut self) {
        self.stop();
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

/// The samples the perf backend would have read for this record: `[id][nr at 8][args or ret from 16]`.
fn samples_of(r: &[u8], out: &mut Vec<Sample>) {
    if r.len() < TASK_RECORD {
        return;
    }
    let (kind, pid, tid, extra) = (u32_at(r, 0), u32_at(r, 4) as i32, u32_at(r, 8) as i32, u32_at(r, 12));
    let sample = |id: u64, time_ns: u64, words: &[u64]| {
        let mut raw = vec![0u8; 16 + 8 * words.len()];
        raw[..2].copy_from_slice(&(id as u16).to_ne_bytes());
        raw[8..12].copy_from_slice(&extra.to_ne_bytes());
        raw[12..16].copy_from_slice(&extra.to_ne_bytes()); // fork: the child at 12 (FORK_CHILD)
        for (i, w) in words.iter().enumerate() {
            raw[16 + 8 * i..24 + 8 * i].copy_from_slice(&w.to_ne_bytes());
        }
        Sample { pid, tid, time_ns, cpu: 0, raw }
    };
    match kind {
        KIND_CALL | KIND_ENTRY if r.len() >= CALL_RECORD => {
            let args: Vec<u64> = (0..6).map(|i| u64_at(r, 40 + 8 * i)).collect();
            out.push(sample(ENTER_ID, u64_at(r, 16), &args));
            if kind == KIND_CALL {
                let id = if OPENS.contains(&i64::from(extra)) { EXIT_OPEN_ID } else { EXIT_ID };
                out.push(sample(id, u64_at(r, 24), &[u64_at(r, 32)]));
            }
        }
        KIND_FORK => out.push(sample(FORK_ID, u64_at(r, 16), &[])),
        KIND_EXEC => out.push(sample(EXEC_ID, u64_at(r, 16), &[])),
        KIND_TASK_EXIT => out.push(sample(TASK_EXIT_ID, u64_at(r, 16), &[])),
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
    fn a_call_record_becomes_the_entry_and_exit_samples_of_the_perf_layout() {
        let mut out = Vec::new();
        samples_of(&call_record(KIND_CALL, libc::SYS_fdatasync as u32, 0, [3, 0, 0, 0, 0, 0]), &mut out);
        assert_eq!(out.len(), 2);
        let (enter, exit) = (&out[0], &out[1]);
        assert_eq!((enter.event_id(), enter.pid, enter.tid, enter.time_ns), (ENTER_ID, 100, 101, 5_000));
        assert_eq!(i32::from_ne_bytes(enter.raw[8..12].try_into().unwrap()), libc::SYS_fdatasync as i32);
        assert_eq!(u64::from_ne_bytes(enter.raw[16..24].try_into().unwrap()), 3);
        assert_eq!((exit.event_id(), exit.time_ns), (EXIT_ID, 7_500));
        assert_eq!(i64::from_ne_bytes(exit.raw[16..24].try_into().unwrap()), 0);

        out.clear();
        samples_of(&call_record(KIND_CALL, libc::SYS_openat as u32, 7, [0; 6]), &mut out);
        assert_eq!(out[1].event_id(), EXIT_OPEN_ID);
        out.clear();
        samples_of(&call_record(KIND_ENTRY, libc::SYS_close as u32, 0, [7, 0, 0, 0, 0, 0]), &mut out);
        assert_eq!(out.len(), 1, "an entry-only call has no exit");
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
        let syncs =
            k.drain().iter().filter(|s| s.event_id() == ENTER_ID && u32_at(&s.raw, 8) == libc::SYS_sync as u32).count();
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
        let samples = k.drain();
        let mine = samples.iter().filter(|s| s.tid == tid && s.event_id() == ENTER_ID);
        let counted = mine.filter(|s| u32_at(&s.raw, 8) == libc::SYS_fdatasync as u32).count();
        assert_eq!(counted, 3, "only the calls made while the window was open");
        assert_eq!(k.lost().unwrap(), 0);
        // A lost count that cannot be read is an error, not 0 (here: a map without the entry).
        k.lost = Map::create(MapType::Hash, 4, 8, 1).unwrap();
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
    fn a_fork_record_carries_the_child_where_the_fork_kind_reads_it() {
        let mut r = Vec::new();
        for w in [KIND_FORK, 100, 101, 4242] {
            r.extend(w.to_ne_bytes());
        }
        r.extend(9u64.to_ne_bytes());
        let mut out = Vec::new();
        samples_of(&r, &mut out);
        assert_eq!(out[0].event_id(), FORK_ID);
        assert_eq!(FORK_CHILD.int(&out[0].raw), 4242);
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
        let programs = [load(enter, "enter").unwrap(), load(exit, "exit").unwrap()];
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
        let lost = Map::create(MapType::Array, 4, 8, 1).unwrap();
        let on = Map::create(MapType::Array, 4, 4, 1).unwrap();
        on.update(&0u32.to_ne_bytes(), &1u32.to_ne_bytes()).unwrap();
        let mut ring = RingBuf::create(RING_BYTES).unwrap();
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
            let maps = Maps { followed: &followed, inflight: &inflight, lost: &lost, on: &on, ring: ring.map(), who };
            let (enter, exit) =
                (maps.enter(libc::SYS_sync_file_range, 4), maps.exit(libc::SYS_sync_file_range, Wake::QuarterFull));
            let ours = with_programs(fd, n, &enter, &exit);
            let mut calls = Vec::new();
            ring.drain(|r| samples_of(r, &mut calls));
            // This thread's records only: other tests in this binary (method.rs's included) run beside
            // it and make the same calls.
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let mine = calls.iter().filter(|s| s.event_id() == EXIT_ID && s.tid == tid).count();
            assert_eq!(mine, n as usize, "one record per call");
            let open = inflight.lookup(&(tid as u32).to_ne_bytes()).unwrap();
            assert_eq!(open, None, "every entry of this thread paired with its exit");
            assert_eq!(lost.lookup(&0u32.to_ne_bytes()).unwrap(), Some(0u64.to_ne_bytes().to_vec()));
            eprintln!(
                "round {round} (load {}): CPU ns per sync_file_range: untraced {untraced:.0}, programs that only return \
                 {bare:.0}, that read the clock {clocked:.0}, syncbench's {ours:.0}",
                std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').next().unwrap_or("?")
            );
        }
    }
}
