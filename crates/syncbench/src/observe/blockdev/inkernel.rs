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
//! - `lost` (array, one u64): records the ring had no room for (the request counts are then low).
//! - `events` (ring buffer, 4 MiB; read every 50 ms by `trace`). A record is 52 bytes on Linux 6.18,
//!   64 in the ring with its 8-byte header (rounded up to 8): 65,536 records, ~32,768 requests (an
//!   issue and a completion each).
//!
//! Besides, the kernel skips a program when its tracepoint fires in an interrupt while another BPF
//! program runs on that CPU (one of the syscall programs, anybody's). From Linux 6.7 it counts those
//! runs (`recursion_misses`), read when recording starts and when it stops: the difference is reported
//! as lost. Before 6.7 nothing counts them, and the lost count is reported as unknown
//! ([`super::requests::Lost`]).
//!
//! Record (native endian), the same for both tracepoints:
//! ```text
//! offset size
//!      0    8  time, CLOCK_MONOTONIC ns (bpf_ktime_get_ns, the clock perf samples are stamped with)
//!      8    2  the tracepoint id, where a record's `common_type` has it (a program cannot read the
//!              record's first 8 bytes)
//!     10    6  zero
//!     16  len  the tracepoint's record from its offset 8 on, up to the end of the last field read
//!              (`dev`, `sector`, `nr_sector`, `bytes`, `error`, `rwbs`; offsets as tracefs gives them):
//!              36 bytes on Linux 6.18 (both tracepoints' `rwbs` ends at 44). The reader refuses a record
//!              of another length than its tracepoint's.
//! ```
//! The programs write one record per hit, for every process and disk (as the perf events did): a
//! request is issued by whoever submits or by a kworker, and completed in an interrupt.

use super::requests::Lost;
use std::io;
use syncbench_sys::bpf::{
    self, Alu, Asm, Attachment, Cond, Map, MapType, Program, Reg, RingBuf, Size, helper, ringbuf,
};
use syncbench_sys::perf::Sample;
use syncbench_sys::tracefs::EventFormat;

/// License of the programs (the helpers used are not GPL-only).
const LICENSE: &str = "Dual MIT/GPL";
/// Ring size (a power of two number of pages).
const RING_BYTES: u32 = 4 << 20;
/// Bytes before the copied tracepoint record (from its `common_type` on): the time.
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
    /// Each tracepoint's id and the length of its records' copy (`len`), to check records against.
    copies: Vec<(u16, usize)>,
    /// Records refused for their length (see [`sample_of`]).
    malformed: u64,
    /// Whether this kernel counts the programs' skipped runs (Linux 6.7).
    misses_counted: bool,
    /// The programs' skipped runs when recording started, and when it first stopped (`None`: not counted
    /// by this kernel, or unreadable).
    skipped_at_on: Option<u64>,
    skipped_at_off: Option<Option<u64>>,
}

/// Where the copy of the tracepoint's record starts: programs may not read below (`common_*` fields).
const FIRST: usize = 8;

/// How many bytes of a record to copy (from its offset 8) so that every field in `fields` is in the copy.
/// The programs' reads stay inside the record only through this: the verifier checks a tracepoint
/// program's reads against no record's size. A `__data_loc` field (its text lies further on, at an offset
/// the record holds) is refused: the copy would not hold its text.
pub fn copy_len(format: &EventFormat, fields: &[&str]) -> io::Result<usize> {
    let mut end = 0;
    for name in fields {
        let f = format.field(name)?;
        if f.offset < FIRST {
            return Err(io::Error::other(format!("tracepoint {} has an unexpected layout (`{name}`)", format.id)));
        }
        if f.data_loc {
            return Err(io::Error::other(format!(
                "tracepoint {} has `{name}` as a __data_loc field, which the block programs do not copy",
                format.id
            )));
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

/// Where a record of `len` copied bytes starts on the program's stack (`r10 + rec`; stack accesses are
/// aligned).
fn record_at(len: usize) -> i16 {
    -((TIME_BYTES + FIRST + len).next_multiple_of(8) as i16)
}

/// The record's first 16 bytes at `r10 + rec`: the time, then tracepoint `id` where a record's
/// `common_type` has it (2 bytes, native endian: what [`Sample::event_id`] reads), 6 zero bytes.
/// Clobbers r0–r5.
fn stamp(a: &mut Asm, rec: i16, id: u16) {
    a.call(helper::KTIME_GET_NS).stx(Size::DW, Reg::R10, rec, Reg::R0);
    let at = rec + TIME_BYTES as i16;
    a.st_imm(Size::DW, Reg::R10, at, 0).st_imm(Size::H, Reg::R10, at, i32::from(id));
}

/// The program of tracepoint `id`: if `on[0]`, `record = {now, id, ctx[8..8 + len]}`, written to `ring`
/// (or `lost[0] += 1`). `len` from [`copy_len`].
pub fn program(maps: &Maps, id: u16, len: usize) -> Asm {
    let total = TIME_BYTES + FIRST + len;
    let rec = record_at(len);
    let mut a = Asm::new();
    a.mov(Reg::R6, Reg::R1);
    a.st_imm(Size::W, Reg::R10, -4, 0); // key 0
    a.ld_map_fd(Reg::R1, maps.on).mov(Reg::R2, Reg::R10).alu_imm(Alu::Add, Reg::R2, -4);
    a.call(helper::MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, Reg::R0, 0, "out");
    a.ldx(Size::W, Reg::R1, Reg::R0, 0).jmp_imm(Cond::Eq, Reg::R1, 0, "out");
    stamp(&mut a, rec, id);
    // Copied in the widest loads that stay inside the `len` bytes (inside the record: see `copy_len`).
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

/// A record as the sample a perf event would have written (no pid, tid or cpu: they are not used), if
/// it is as long as the records of its tracepoint are (`copies`: each tracepoint's id and copied bytes).
/// A short record would otherwise decode as zeros (fields read as 0 where the record is too short).
pub fn sample_of(record: &[u8], copies: &[(u16, usize)]) -> Option<Sample> {
    let time_ns = u64::from_ne_bytes(record.get(..TIME_BYTES)?.try_into().ok()?);
    let raw = &record[TIME_BYTES..];
    let id = u16::from_ne_bytes(raw.get(..2)?.try_into().ok()?);
    let &(_, len) = copies.iter().find(|(known, _)| *known == id)?;
    (raw.len() == FIRST + len).then(|| Sample { pid: 0, tid: 0, time_ns, cpu: 0, raw: raw.to_vec() })
}

/// The runs skipped between two readings of the programs' count, when both are known.
fn skipped_between(on: Option<u64>, off: Option<u64>) -> Option<u64> {
    Some(off?.saturating_sub(on?))
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
        let mut copies = Vec::new();
        for (format, len) in events {
            let id = u16::try_from(format.id)
                .map_err(|_| io::Error::other(format!("tracepoint id {} is wider than common_type", format.id)))?;
            let insns = program(&maps, id, *len).finish()?;
            let loaded = Program::load_tracepoint(&insns, LICENSE).map_err(|e| {
                io::Error::new(e.error.kind(), format!("the kernel refused the block tracepoint program: {e}"))
            })?;
            programs.push(loaded);
            copies.push((id, *len));
        }
        let mut attachments = Vec::new();
        for (program, (id, _)) in programs.iter().zip(&copies) {
            let attached = program.attach_tracepoint(u64::from(*id));
            attachments.push(attached.map_err(step("attaching a BPF program to a tracepoint"))?);
        }
        let misses_counted = bpf::counts_tracepoint_misses(&bpf::kernel_release());
        let mut programs = BlockPrograms {
            ring,
            lost,
            on,
            attachments,
            programs,
            copies,
            malformed: 0,
            misses_counted,
            skipped_at_on: None,
            skipped_at_off: None,
        };
        programs.set_on(true)?;
        // Read at once: runs skipped before (the programs ran, switched off, since they were attached)
        // are not the window's.
        programs.skipped_at_on = programs.skipped_runs();
        Ok(programs)
    }

    /// The programs' runs the kernel skipped so far, summed: `None` when this kernel does not count them
    /// (before Linux 6.7) or a count cannot be read (then the lost count is unknown, the report kept).
    fn skipped_runs(&self) -> Option<u64> {
        if !self.misses_counted {
            return None;
        }
        self.programs.iter().map(|p| p.recursion_misses().ok()).sum()
    }

    fn set_on(&self, on: bool) -> io::Result<()> {
        self.on.update(&0u32.to_ne_bytes(), &u32::from(on).to_ne_bytes()).map_err(step("switching the block programs"))
    }

    /// Stop recording at once (what is in the ring stays readable); the programs stay attached until
    /// [`BlockPrograms::detach`] or drop, and still run (switched off): their skipped runs are counted
    /// up to the first stop.
    pub fn stop(&mut self) -> io::Result<()> {
        self.set_on(false)?;
        if self.skipped_at_off.is_none() {
            self.skipped_at_off = Some(self.skipped_runs());
        }
        Ok(())
    }

    /// Detach the programs.
    pub fn detach(&mut self) {
        self.attachments.clear();
    }

    /// Every record written since the last call, as samples, in commit order (an issue's record is
    /// committed before its request can complete). Records of the wrong length are counted, not decoded.
    pub fn drain(&mut self) -> Vec<Sample> {
        let (mut samples, mut malformed) = (Vec::new(), 0);
        let copies = &self.copies;
        self.ring.drain(|record| match sample_of(record, copies) {
            Some(sample) => samples.push(sample),
            None => malformed += 1,
        });
        self.malformed += malformed;
        samples
    }

    /// Hits not recorded while recording: records the ring had no room for (or refused for their
    /// length), and runs the kernel skipped because another BPF program (syncbench's syscall programs,
    /// anybody's) was running on that CPU when the tracepoint fired (a completion's interrupt arriving
    /// meanwhile), unknown before Linux 6.7. An error when the ring's count cannot be read.
    pub fn lost(&self) -> io::Result<Lost> {
        let failed = |why: String| io::Error::other(format!("reading the block programs' lost-record count: {why}"));
        let value = self.lost.lookup(&0u32.to_ne_bytes()).map_err(|e| failed(e.to_string()))?.unwrap_or_default();
        let bytes: [u8; 8] = value.try_into().map_err(|_| failed("not 8 bytes".into()))?;
        let off = self.skipped_at_off.unwrap_or_else(|| self.skipped_runs());
        Ok(Lost {
            dropped: u64::from_ne_bytes(bytes) + self.malformed,
            skipped: skipped_between(self.skipped_at_on, off),
        })
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
    fn a_data_loc_field_is_refused_with_its_name() {
        let mut f = format(&[("dev", 8, 4), ("rwbs", 34, 4)]);
        f.fields.get_mut("rwbs").unwrap().data_loc = true; // (offset, length) of text further on
        let e = copy_len(&f, &["dev", "rwbs"]).unwrap_err();
        assert!(e.to_string().contains("`rwbs` as a __data_loc field"), "{e}");
        assert_eq!(copy_len(&f, &["dev"]).unwrap(), 4);
    }

    #[test]
    fn a_record_becomes_the_sample_perf_would_have_written_if_its_length_is_its_tracepoints() {
        let copies = [(0x0833, 2), (0x0834, 4)];
        let record = |id: u16, copied: &[u8]| {
            let mut r = 1234u64.to_ne_bytes().to_vec();
            r.extend_from_slice(&id.to_ne_bytes());
            r.extend_from_slice(&[0; 6]);
            r.extend_from_slice(copied);
            r
        };
        let s = sample_of(&record(0x0833, &[1, 2]), &copies).unwrap();
        assert_eq!((s.time_ns, s.event_id(), s.raw.len()), (1234, 0x0833, 10));
        // Short or long for its tracepoint, of an unknown one, or without an id: refused.
        assert!(sample_of(&record(0x0834, &[1, 2]), &copies).is_none());
        assert!(sample_of(&record(0x0833, &[1, 2, 3]), &copies).is_none());
        assert!(sample_of(&record(0x0999, &[1, 2]), &copies).is_none());
        assert!(sample_of(&[1, 2, 3], &copies).is_none());
        assert!(sample_of(&1234u64.to_ne_bytes(), &copies).is_none());
    }

    /// The id's 8 bytes as `stamp`'s immediate stores leave them on a machine of either byte order: the
    /// tracepoint id in the first two, as `common_type` (a u16) and `Sample::event_id` have it. (An id
    /// stored as a u64 reads as 0 there on a big-endian machine.)
    #[test]
    fn the_id_is_the_records_first_two_bytes_in_either_byte_order() {
        let (rec, id) = (record_at(36), 0x0833u16);
        assert_eq!(rec, -56); // 8 + 8 + 36 bytes, aligned
        let mut a = Asm::new();
        stamp(&mut a, rec, id);
        let insns = a.finish().unwrap();
        let stores: Vec<_> = insns.iter().filter(|i| i.code & 0x07 == 0x02).collect(); // BPF_ST: imm stores
        assert!(!stores.is_empty());
        for big_endian in [false, true] {
            let mut bytes = [0xaau8; 8];
            for i in &stores {
                let width = match i.code & 0x18 {
                    0x18 => 8,
                    0x00 => 4,
                    0x08 => 2,
                    _ => 1,
                };
                let at = usize::try_from(i.off - (rec + TIME_BYTES as i16)).expect("a store into the id's bytes");
                let value = i64::from(i.imm) as u64; // sign-extended, the low `width` bytes stored
                let stored = if big_endian {
                    value.to_be_bytes()[8 - width..].to_vec()
                } else {
                    value.to_le_bytes()[..width].to_vec()
                };
                bytes[at..at + width].copy_from_slice(&stored);
            }
            let read = if big_endian {
                u16::from_be_bytes([bytes[0], bytes[1]])
            } else {
                u16::from_le_bytes([bytes[0], bytes[1]])
            };
            assert_eq!(read, id, "big endian: {big_endian}, {bytes:?}");
            assert_eq!(bytes[2..], [0; 6], "big endian: {big_endian}");
        }
    }

    #[test]
    fn skipped_runs_are_the_windows_and_unknown_when_either_reading_is() {
        assert_eq!(skipped_between(Some(40), Some(43)), Some(3));
        assert_eq!(skipped_between(Some(0), Some(0)), Some(0));
        assert_eq!(skipped_between(None, Some(43)), None);
        assert_eq!(skipped_between(Some(40), None), None);
    }
}
