//! The block tracepoints read by eBPF programs (the default; perf samples are the fallback): one
//! program on `block:block_rq_issue` and one on `block:block_rq_complete`, built here as BPF instructions
//! (see `syncbench_sys::bpf`), each copying the start of the tracepoint's record into one ring buffer
//! shared by every CPU. User space pairs issues with completions ([`super::requests`]), the same code as
//! for perf samples.
//!
//! Why not perf samples: on the project VM (virtio disk, Linux 6.18) the kernel wrote no perf sample for
//! a completion that interrupted an idle CPU, while a counting perf event counted every one and an eBPF
//! program attached to the same tracepoint ran for every one (docs/trace.md, "The disks"). An eBPF
//! program runs at the tracepoint itself, before perf's per-event sample path.
//!
//! Maps:
//! - `on` (array, one u32): 1 while recording. Switched by a map update (microseconds) rather than by
//!   attaching and detaching (each a wait for other CPUs, tens of milliseconds on a busy machine), so
//!   the window can be set tightly around the disk counters' (`/sys/block/*/stat`).
//! - `lost` (array, one u64): records the ring had no room for (the request counts are then low). The
//!   kernel's count of runs it skipped (`recursion_misses`: the tracepoint fired in an interrupt while
//!   another BPF program ran on that CPU, e.g. one of the syscall programs) is added when reporting.
//! - `events` (ring buffer, 4 MiB: ~75,000 records; read every 50 ms by `trace`).
//!
//! Record (native endian, x86_64: little), the same for both tracepoints:
//! ```text
//! offset size
//!      0    8  time, CLOCK_MONOTONIC ns (bpf_ktime_get_ns, the clock perf samples are stamped with)
//!      8    8  the tracepoint id (as `common_type`, the record's first two bytes, would give it; a
//!              program cannot read the record's first 8 bytes)
//!     16  len  the tracepoint's record from its offset 8 on, up to the end of the last field read
//!              (`dev`, `sector`, `nr_sector`, `bytes`, `error`, `rwbs`; offsets as tracefs gives them):
//!              36 bytes on Linux 6.18 (both tracepoints' `rwbs` ends at 44)
//! ```
//! The programs write one record per hit, for every process and disk (as the perf events did): a
//! request is issued by whoever submits or by a kworker, and completed in an interrupt.

use std::io;
use syncbench_sys::bpf::{Alu, Asm, Attachment, Cond, Map, MapType, Program, Reg, RingBuf, Size, helper, ringbuf};
use syncbench_sys::perf::Sample;
use syncbench_sys::tracefs::EventFormat;

/// License of the programs (the helpers used are not GPL-only).
const LICENSE: &str = "Dual MIT/GPL";
/// Ring size (a power of two number of pages).
const RING_BYTES: u32 = 4 << 20;
/// Bytes before the copied tracepoint record: the time.
const TIME_BYTES: usize = 8;
/// The longest copy: the stack frame is 512 bytes.
const MAX_COPY: usize = 256;

/// The loaded and attached programs and their ring.
pub struct BlockPrograms {
    ring: RingBuf,
    lost: Map,
    on: Map,
    /// Kept open while attached; dropping them detaches the programs.
    attachments: Vec<Attachment>,
    programs: Vec<Program>,
}

/// Where the copy of the tracepoint's record starts: programs may not read below (`common_*` fields).
const FIRST: usize = 8;

/// How many bytes of a record to copy (from its offset 8) so that every field in `fields` is in the copy.
pub fn copy_len(format: &EventFormat, fields: &[&str]) -> io::Result<usize> {
    let mut end = 0;
    for name in fields {
        let f = format.field(name)?;
        if f.offset < FIRST {
            return Err(io::Error::other(format!("tracepoint {} has an unexpected layout (`{name}`)", format.id)));
        }
        end = end.max(f.offset + f.size);
    }
    let end = end.saturating_sub(FIRST);
    if end > MAX_COPY {
        return Err(io::Error::other(format!("tracepoint {} has an unexpected layout ({end} bytes)", format.id)));
    }
    Ok(end)
}

/// The maps a program uses.
pub struct Maps<'a> {
    /// The ring buffer.
    pub ring: &'a Map,
    /// `lost[0]`.
    pub lost: &'a Map,
    /// `on[0]`.
    pub on: &'a Map,
}

/// The program of tracepoint `id`: if `on[0]`, `record = {now, id, ctx[8..8 + len]}`, written to `ring`
/// (or `lost[0] += 1`).
pub fn program(maps: &Maps, id: u64, len: usize) -> Asm {
    let total = TIME_BYTES + FIRST + len;
    let rec = -(total.next_multiple_of(8) as i16); // the record: r10 + rec .. (stack accesses are aligned)
    let mut a = Asm::new();
    a.mov(Reg::R6, Reg::R1);
    a.st_imm(Size::W, Reg::R10, -4, 0); // key 0
    a.ld_map_fd(Reg::R1, maps.on).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, -4);
    a.call(helper::MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, Reg::R0, 0, "out");
    a.ldx(Size::W, Reg::R1, Reg::R0, 0).jmp_imm(Cond::Eq, Reg::R1, 0, "out");
    a.call(helper::KTIME_GET_NS).stx(Size::DW, Reg::R10, rec, Reg::R0);
    a.st_imm(Size::DW, Reg::R10, rec + TIME_BYTES as i16, id as i32);
    // Copied in the widest loads that stay inside the record: reading past its end is refused at load.
    let mut at = FIRST;
    for (size, width) in [(Size::DW, 8), (Size::W, 4), (Size::H, 2), (Size::B, 1)] {
        while at + width <= FIRST + len {
            a.ldx(size, Reg::R1, Reg::R6, at as i16);
            a.stx(size, Reg::R10, rec + (TIME_BYTES + at) as i16, Reg::R1);
            at += width;
        }
    }
    a.ld_map_fd(Reg::R1, maps.ring).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, rec.into());
    // No wake-up: the reader reads on its own clock (every 50 ms), not when woken.
    a.mov_imm(Reg::R3, total as i32).mov_imm(Reg::R4, ringbuf::NO_WAKEUP);
    a.call(helper::RINGBUF_OUTPUT);
    a.jmp_imm(Cond::Eq, Reg::R0, 0, "out");
    a.st_imm(Size::W, Reg::R10, -4, 0); // key 0
    a.ld_map_fd(Reg::R1, maps.lost).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, -4);
    a.call(helper::MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, Reg::R0, 0, "out");
    a.mov_imm(Reg::R1, 1).atomic_add64(Reg::R0, 0, Reg::R1);
    // 1 lets other perf users of the tracepoint (`perf record`) have their samples too.
    a.label("out").mov_imm(Reg::R0, 1).exit();
    a
}

/// A record as the sample a perf event would have written (no pid, tid or cpu: they are not used).
pub fn sample_of(record: &[u8]) -> Option<Sample> {
    let time = record.get(..TIME_BYTES)?;
    let time_ns = u64::from_ne_bytes(time.try_into().ok()?);
    Some(Sample { pid: 0, tid: 0, time_ns, cpu: 0, raw: record[TIME_BYTES..].to_vec() })
}

fn step(what: &'static str) -> impl Fn(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl BlockPrograms {
    /// Load the programs and attach them to `events` (each with the bytes of its record to copy):
    /// recording from now on. Errors say which step failed.
    pub fn start(events: &[(&EventFormat, usize)]) -> io::Result<BlockPrograms> {
        let lost = Map::create(MapType::Array, 4, 8, 1).map_err(step("creating a BPF array map"))?;
        let on = Map::create(MapType::Array, 4, 4, 1).map_err(step("creating a BPF array map"))?;
        let ring = RingBuf::create(RING_BYTES).map_err(step("creating a BPF ring buffer (Linux 5.8 or later)"))?;
        let maps = Maps { ring: ring.map(), lost: &lost, on: &on };
        let mut programs = Vec::new();
        for (format, len) in events {
            let insns = program(&maps, format.id, *len).finish()?;
            let loaded = Program::load_tracepoint(&insns, LICENSE).map_err(|e| {
                io::Error::new(e.error.kind(), format!("the kernel refused the block tracepoint program: {e}"))
            })?;
            programs.push((loaded, format.id));
        }
        let mut attachments = Vec::new();
        for (program, id) in &programs {
            attachments.push(program.attach_tracepoint(*id).map_err(step("attaching a BPF program to a tracepoint"))?);
        }
        let programs = programs.into_iter().map(|(p, _)| p).collect();
        let programs = BlockPrograms { ring, lost, on, attachments, programs };
        programs.set_on(true)?;
        Ok(programs)
    }

    fn set_on(&self, on: bool) -> io::Result<()> {
        self.on.update(&0u32.to_ne_bytes(), &u32::from(on).to_ne_bytes()).map_err(step("switching the block programs"))
    }

    /// Stop recording at once (what is in the ring stays readable); the programs stay attached until
    /// [`BlockPrograms::detach`] or drop.
    pub fn stop(&mut self) -> io::Result<()> {
        self.set_on(false)
    }

    /// Detach the programs.
    pub fn detach(&mut self) {
        self.attachments.clear();
    }

    /// Every record written since the last call, as samples, in commit order (an issue's record is
    /// committed before its request can complete).
    pub fn drain(&mut self) -> Vec<Sample> {
        let mut samples = Vec::new();
        self.ring.drain(|record| samples.extend(sample_of(record)));
        samples
    }

    /// Hits not recorded: records the ring had no room for, and runs the kernel skipped because another
    /// BPF program (syncbench's syscall programs, anybody's) was running on that CPU when the tracepoint
    /// fired (a completion's interrupt arriving meanwhile). An error when a count cannot be read.
    pub fn lost(&self) -> io::Result<u64> {
        let failed = |why: String| io::Error::other(format!("reading the block programs' lost-record count: {why}"));
        let value = self.lost.lookup(&0u32.to_ne_bytes()).map_err(|e| failed(e.to_string()))?.unwrap_or_default();
        let bytes: [u8; 8] = value.try_into().map_err(|_| failed("not 8 bytes".into()))?;
        let mut lost = u64::from_ne_bytes(bytes);
        for program in &self.programs {
            lost += program.recursion_misses().map_err(|e| failed(e.to_string()))?;
        }
        Ok(lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use syncbench_sys::tracefs::Field;

    fn format(fields: &[(&str, usize, usize)]) -> EventFormat {
        let fields = fields
            .iter()
            .map(|&(n, offset, size)| (n.to_string(), Field { offset, size, data_loc: false }))
            .collect::<HashMap<_, _>>();
        EventFormat { id: 7, fields }
    }

    #[test]
    fn the_copy_ends_with_the_last_field_read() {
        let f = format(&[("dev", 8, 4), ("sector", 16, 8), ("rwbs", 34, 10), ("cmd", 60, 4)]);
        assert_eq!(copy_len(&f, &["dev", "sector", "rwbs"]).unwrap(), 36);
        assert!(copy_len(&format(&[("common_type", 0, 2)]), &["common_type"]).is_err());
        assert!(copy_len(&f, &["nope"]).is_err());
        let huge = format(&[("rwbs", 300, 10)]);
        assert!(copy_len(&huge, &["rwbs"]).is_err());
    }

    #[test]
    fn a_record_becomes_the_sample_perf_would_have_written() {
        let mut record = 1234u64.to_ne_bytes().to_vec();
        record.extend_from_slice(&[0x33, 0x08, 0, 0, 0, 0, 0, 0, 1, 2]);
        let s = sample_of(&record).unwrap();
        assert_eq!((s.time_ns, s.event_id(), s.raw.len()), (1234, 0x0833, 10));
        assert!(sample_of(&[1, 2, 3]).is_none());
    }
}
