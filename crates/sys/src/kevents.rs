//! One kernel-event path: the eBPF session every set of tracepoint programs runs in (`trace`'s syscall
//! programs, and the block programs of `trace`, `run`, `commit` and `pages`), and the one typed event
//! both backends, these programs or perf samples ([`crate::perf`]), hand their readers.
//!
//! A [`Session`] owns what every set of programs needs:
//! - one ring buffer shared by every CPU (records in commit order);
//! - `on` (array, one u32): programs record only while it is 1. Switched by a map update (microseconds)
//!   rather than by attaching and detaching (each a wait for other CPUs, up to a second on a busy
//!   machine), so a window can be set tightly around other counters (`/sys/block/*/stat`);
//! - `lost` (array, one u64): records the programs could not write (ring full, a map full): counts are
//!   low when it is not 0;
//! - the programs' runs the kernel skipped (`recursion_misses`: a tracepoint firing, in an interrupt,
//!   while another BPF program ran on that CPU), counted by Linux from 6.7 and read when the window
//!   opens and first closes ([`Lost::skipped`], `None` when this kernel does not count them);
//! - the programs and their attachments, attached and detached in parallel (each detach of a syscall
//!   tracepoint's program waits for a grace period, ~70 ms here).
//!
//! The programs themselves are each user's (their records differ); [`Maps`] writes the parts they
//! share: the `on` test, the ring write, the lost count.

use crate::bpf::{self, Alu, Asm, Attachment, Cond, Map, MapType, Program, Reg, RingBuf, Size, helper, ringbuf};
use std::io;

/// License of the programs (the helpers used are not GPL-only; the kernel takes this string as
/// GPL-compatible should one ever be).
pub const LICENSE: &str = "Dual MIT/GPL";

/// Who made a syscall or scheduler event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Task {
    /// Process (thread group) id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
}

/// What the kernel did, as either backend read it. Times are CLOCK_MONOTONIC ns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelEvent {
    /// A system call entered, with its six argument words (0 past the call's own).
    SyscallEnter {
        /// Caller.
        task: Task,
        /// When.
        time_ns: u64,
        /// Call number (x86_64 table).
        nr: i64,
        /// Arguments.
        args: [u64; 6],
    },
    /// A system call returned.
    SyscallExit {
        /// Caller.
        task: Task,
        /// When.
        time_ns: u64,
        /// Call number.
        nr: i64,
        /// Return value (`-errno` on failure).
        ret: i64,
    },
    /// `sched_process_fork`: `task` created `child` (a process, or a thread's tid).
    Fork {
        /// Parent.
        task: Task,
        /// When.
        time_ns: u64,
        /// The child's pid.
        child: i32,
    },
    /// `sched_process_exec`.
    Exec {
        /// The task that exec'd.
        task: Task,
        /// When.
        time_ns: u64,
    },
    /// `sched_process_exit` of one thread.
    TaskExit {
        /// The thread.
        task: Task,
        /// When.
        time_ns: u64,
        /// Whether it was its process's last (`None`: not in this kernel's record).
        group_dead: Option<bool>,
    },
    /// `block:block_rq_issue`: a request sent to a device.
    BlockIssue(BlockRequest),
    /// `block:block_rq_complete`: a request the device completed (`bytes` is 0: not in the record).
    BlockComplete(BlockRequest),
}

/// One block request at issue or completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockRequest {
    /// When.
    pub time_ns: u64,
    /// Kernel dev_t (`MAJOR << 20 | MINOR`).
    pub dev: u64,
    /// First sector (a flush: 0 at issue, `u64::MAX` at completion).
    pub sector: u64,
    /// Sectors.
    pub sectors: u64,
    /// Bytes (issue only).
    pub bytes: u64,
    /// Completion status (0: success).
    pub error: i64,
    /// The request's flags as the kernel's `blk_fill_rwbs` writes them (`FWS`, `WFS`, `FF`), NUL-padded.
    pub rwbs: [u8; 8],
}

impl BlockRequest {
    /// `rwbs` as text.
    pub fn rwbs_text(&self) -> &str {
        let end = self.rwbs.iter().position(|&b| b == 0).unwrap_or(self.rwbs.len());
        std::str::from_utf8(&self.rwbs[..end]).unwrap_or("")
    }
}

/// Tracepoint hits a window did not record: counts are low by up to their sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lost {
    /// Records dropped: a ring had no room (perf's per-CPU rings, or the eBPF ring), or (eBPF) a record
    /// was refused by its reader. Known on every kernel.
    pub dropped: u64,
    /// eBPF: runs of the programs the kernel skipped while recording (a tracepoint firing in an interrupt
    /// while another BPF program ran on that CPU); `None` when unknown: kernels before Linux 6.7 do not
    /// count them, or the count could not be read. perf events: 0 (perf's recursion guard is per
    /// context: an interrupt's hit is not refused because a task's is being handled).
    pub skipped: Option<u64>,
}

impl Lost {
    /// Every hit not recorded, when known.
    pub fn total(&self) -> Option<u64> {
        Some(self.dropped + self.skipped?)
    }
}

/// How a record wakes a reader blocked in [`Session::wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// At once.
    Now,
    /// When a quarter of the ring is used (else the reader's own timeout).
    QuarterFull,
    /// Never: the reader reads on its own clock.
    Never,
}

/// The maps of a session, for writing its programs.
#[derive(Clone, Copy)]
pub struct Maps<'a> {
    /// The ring buffer.
    pub ring: &'a Map,
    /// `on[0]`.
    pub on: &'a Map,
    /// `lost[0]`.
    pub lost: &'a Map,
    ring_bytes: u32,
}

impl Maps<'_> {
    /// `r0 = lookup(map, r10 + key)`; clobbers r1–r5.
    pub fn lookup(a: &mut Asm, map: &Map, key: i16) {
        a.ld_map_fd(Reg::R1, map).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, key.into());
        a.call(helper::MAP_LOOKUP_ELEM);
    }

    /// Go to `out` unless `on[0]` is 1 (uses the stack word at r10 - 4; clobbers r0–r5).
    pub fn unless_on(&self, a: &mut Asm, out: &'static str) {
        a.st_imm(Size::W, Reg::R10, -4, 0); // key 0
        Self::lookup(a, self.on, -4);
        a.jmp_imm(Cond::Eq, Reg::R0, 0, out);
        a.ldx(Size::W, Reg::R1, Reg::R0, 0).jmp_imm(Cond::Eq, Reg::R1, 0, out);
    }

    /// `lost[0] += 1` (uses the stack word at r10 - 4), then on to `then`.
    pub fn count_lost(&self, a: &mut Asm, then: &'static str) {
        a.st_imm(Size::W, Reg::R10, -4, 0);
        Self::lookup(a, self.lost, -4);
        a.jmp_imm(Cond::Eq, Reg::R0, 0, then);
        a.mov_imm(Reg::R1, 1).atomic_add64(Reg::R0, 0, Reg::R1).ja(then);
    }

    /// Write `len` bytes at r10 + `at` to the ring (counted as lost when it has no room), then go to
    /// `out`. Uses the label `send` with [`Wake::QuarterFull`].
    pub fn output(&self, a: &mut Asm, at: i16, len: usize, wake: Wake, out: &'static str) {
        match wake {
            Wake::Now => {
                a.mov_imm(Reg::R4, ringbuf::FORCE_WAKEUP);
            }
            Wake::Never => {
                a.mov_imm(Reg::R4, ringbuf::NO_WAKEUP);
            }
            Wake::QuarterFull => {
                a.ld_map_fd(Reg::R1, self.ring).mov_imm(Reg::R2, ringbuf::AVAIL_DATA).call(helper::RINGBUF_QUERY);
                a.mov_imm(Reg::R4, ringbuf::NO_WAKEUP);
                a.jmp_imm(Cond::Lt, Reg::R0, (self.ring_bytes / 4) as i32, "send");
                a.mov_imm(Reg::R4, ringbuf::FORCE_WAKEUP);
                a.label("send");
            }
        }
        a.ld_map_fd(Reg::R1, self.ring).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, at.into());
        a.mov_imm(Reg::R3, len as i32).call(helper::RINGBUF_OUTPUT);
        a.jmp_imm(Cond::Eq, Reg::R0, 0, out);
        self.count_lost(a, out);
    }

    /// `out: return 1`: 0 would discard the hit for other perf users of the tracepoint too (the event a
    /// program is attached through is opened disabled, so perf neither counts nor samples its hits).
    pub fn epilogue(a: &mut Asm, out: &'static str) {
        a.label(out).mov_imm(Reg::R0, 1).exit();
    }
}

/// An error of the step `what` (creating a map, attaching a program), saying so.
pub fn step(what: &'static str) -> impl Fn(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Programs on tracepoints, their ring, `on` and `lost` maps (see the module docs).
pub struct Session {
    ring: RingBuf,
    on: Map,
    lost: Map,
    ring_bytes: u32,
    /// Each loaded program and the tracepoint it is for.
    programs: Vec<(Program, u64)>,
    /// Kept open while attached; dropping them detaches the programs.
    attachments: Vec<Attachment>,
    /// Whether this kernel counts the programs' skipped runs (Linux 6.7).
    misses_counted: bool,
    /// The skipped runs when the window first opened, and when it first closed (`None` inside: not
    /// counted by this kernel, or unreadable).
    skipped_at_on: Option<Option<u64>>,
    skipped_at_off: Option<Option<u64>>,
}

impl Session {
    /// The maps and a ring of `ring_bytes` (a power of two, at least a page); no program yet.
    pub fn new(ring_bytes: u32) -> io::Result<Session> {
        let on = Map::create(MapType::Array, 4, 4, 1).map_err(step("creating a BPF array map"))?;
        let lost = Map::create(MapType::Array, 4, 8, 1).map_err(step("creating a BPF array map"))?;
        let ring = RingBuf::create(ring_bytes).map_err(step("creating a BPF ring buffer (Linux 5.8 or later)"))?;
        Ok(Session {
            ring,
            on,
            lost,
            ring_bytes,
            programs: Vec::new(),
            attachments: Vec::new(),
            misses_counted: bpf::counts_tracepoint_misses(&bpf::kernel_release()),
            skipped_at_on: None,
            skipped_at_off: None,
        })
    }

    /// The maps, to write programs with.
    pub fn maps(&self) -> Maps<'_> {
        Maps { ring: self.ring.map(), on: &self.on, lost: &self.lost, ring_bytes: self.ring_bytes }
    }

    /// Load `asm` for tracepoint `id` (attached by [`Session::attach`]); `what` names it in errors.
    pub fn load(&mut self, asm: &Asm, id: u64, what: &str) -> io::Result<()> {
        let program = Program::load_tracepoint(&asm.finish()?, LICENSE)
            .map_err(|e| io::Error::new(e.error.kind(), format!("the kernel refused the {what} program: {e}")))?;
        self.programs.push((program, id));
        Ok(())
    }

    /// Attach every program loaded since the last call, in parallel: they run from now on (recording
    /// once `on` is set).
    pub fn attach(&mut self) -> io::Result<()> {
        let todo = &self.programs[self.attachments.len()..];
        let attached: Vec<io::Result<Attachment>> = std::thread::scope(|scope| {
            let each: Vec<_> = todo.iter().map(|(p, id)| scope.spawn(move || p.attach_tracepoint(*id))).collect();
            each.into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(io::Error::other("attach thread panicked"))))
                .collect()
        });
        for a in attached {
            // On an error the ones attached are kept: dropping the session detaches them.
            self.attachments.push(a.map_err(step("attaching a BPF program to a tracepoint"))?);
        }
        Ok(())
    }

    /// Open (`true`) or close the window. The programs' skipped runs are read when it first opens and
    /// first closes: those outside it are not the window's.
    pub fn set_on(&mut self, on: bool) -> io::Result<()> {
        if !on && self.skipped_at_on.is_some() && self.skipped_at_off.is_none() {
            self.skipped_at_off = Some(self.skipped_runs());
        }
        self.on
            .update(&0u32.to_ne_bytes(), &u32::from(on).to_ne_bytes())
            .map_err(step("switching the eBPF programs"))?;
        if on && self.skipped_at_on.is_none() {
            self.skipped_at_on = Some(self.skipped_runs());
        }
        Ok(())
    }

    /// The programs' runs the kernel skipped so far, summed: `None` when this kernel does not count them
    /// (before Linux 6.7) or a count cannot be read.
    fn skipped_runs(&self) -> Option<u64> {
        if !self.misses_counted {
            return None;
        }
        self.programs.iter().map(|(p, _)| p.recursion_misses().ok()).sum()
    }

    /// Block until a program wakes the reader or `timeout_ms` passed.
    pub fn wait(&self, timeout_ms: i32) -> io::Result<()> {
        self.ring.wait(timeout_ms)
    }

    /// Hand every record written since the last call to `each`, in commit order; whether all were read
    /// (see [`RingBuf::drain`]).
    pub fn drain(&mut self, each: impl FnMut(&[u8])) -> bool {
        self.ring.drain(each)
    }

    /// Detach every program, in parallel (what is in the ring stays readable).
    pub fn detach(&mut self) {
        std::thread::scope(|scope| {
            for attachment in self.attachments.drain(..) {
                scope.spawn(move || drop(attachment));
            }
        });
    }

    /// Hits not recorded in the window: `lost[0]` and the skipped runs between the window's first
    /// opening and first closing (up to now while it is open). An error when `lost[0]` cannot be read:
    /// the counts could not then be called complete.
    pub fn lost(&self) -> io::Result<Lost> {
        let failed = |why: String| io::Error::other(format!("reading the eBPF lost-record count: {why}"));
        let dropped = match self.lost.lookup(&0u32.to_ne_bytes()) {
            Ok(Some(v)) => {
                let len = v.len();
                u64::from_ne_bytes(v.try_into().map_err(|_| failed(format!("{len} bytes, not 8")))?)
            }
            Ok(None) => return Err(failed("no entry 0 in the array map".into())),
            Err(e) => return Err(failed(e.to_string())),
        };
        let off = self.skipped_at_off.unwrap_or_else(|| self.skipped_runs());
        Ok(Lost { dropped, skipped: skipped_between(self.skipped_at_on.flatten(), off) })
    }

    /// Replace the lost map (tests: one that cannot be read).
    #[doc(hidden)]
    pub fn replace_lost_map(&mut self, map: Map) {
        self.lost = map;
    }
}

impl Drop for Session {
    /// Detached together, not one grace period after the other.
    fn drop(&mut self) {
        self.detach();
    }
}

/// The runs skipped between two readings of the programs' count, when both are known.
fn skipped_between(on: Option<u64>, off: Option<u64>) -> Option<u64> {
    Some(off?.saturating_sub(on?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_runs_are_the_windows_and_unknown_when_either_reading_is() {
        assert_eq!(skipped_between(Some(40), Some(43)), Some(3));
        assert_eq!(skipped_between(Some(0), Some(0)), Some(0));
        assert_eq!(skipped_between(None, Some(43)), None);
        assert_eq!(skipped_between(Some(40), None), None);
        assert_eq!(Lost { dropped: 2, skipped: Some(3) }.total(), Some(5));
        assert_eq!(Lost { dropped: 2, skipped: None }.total(), None);
    }

    #[test]
    fn rwbs_text_ends_at_the_first_nul() {
        let r = BlockRequest { rwbs: *b"FWS\0\0\0\0\0", ..Default::default() };
        assert_eq!(r.rwbs_text(), "FWS");
        assert_eq!(BlockRequest { rwbs: *b"WFSMWFSM", ..Default::default() }.rwbs_text(), "WFSMWFSM");
    }

    /// A session on `syscalls:sys_enter_getsid` recording this thread's calls: only those made while the
    /// window is open reach the ring, nothing is lost, and a lost count that cannot be read is an error.
    /// (Not getppid: bpf.rs's test counts this process's getppid calls beside it.)
    #[test]
    fn a_session_records_only_while_on_and_reports_what_it_lost() {
        if !crate::test_support::is_root_or_skip() {
            return;
        }
        let tracefs = crate::tracefs::Tracefs::open(&std::env::temp_dir()).unwrap();
        let id = tracefs.event("syscalls", "sys_enter_getsid").unwrap().id;
        let mut session = Session::new(1 << 16).unwrap();
        let maps = session.maps();
        let mut a = Asm::new();
        a.mov(Reg::R6, Reg::R1);
        maps.unless_on(&mut a, "out");
        a.call(helper::GET_CURRENT_PID_TGID).stx(Size::DW, Reg::R10, -16, Reg::R0);
        maps.output(&mut a, -16, 8, Wake::Never, "out");
        Maps::epilogue(&mut a, "out");
        session.load(&a, id, "getsid").unwrap();
        session.attach().unwrap();
        // SAFETY: gettid and getsid have no preconditions.
        let (tid, call) = (unsafe { libc::gettid() }, || unsafe { libc::getsid(0) });
        call(); // before the window
        session.set_on(true).unwrap();
        for _ in 0..3 {
            call();
        }
        session.set_on(false).unwrap();
        call(); // after it
        session.detach();
        let mut mine = 0;
        session.drain(|r| mine += usize::from(u64::from_ne_bytes(r.try_into().unwrap()) as u32 as i32 == tid));
        assert_eq!(mine, 3);
        let lost = session.lost().unwrap();
        assert_eq!(lost.dropped, 0);
        if bpf::counts_tracepoint_misses(&bpf::kernel_release()) {
            assert_eq!(lost.skipped, Some(0));
        }
        session.replace_lost_map(Map::create(MapType::Hash, 4, 8, 1).unwrap());
        let err = session.lost().unwrap_err().to_string();
        assert!(err.contains("reading the eBPF lost-record count"), "{err}");
    }
}
