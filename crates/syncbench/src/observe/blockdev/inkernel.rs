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
//! The session (`syncbench_sys::kevents::Session`) holds the ring buffer (4 MiB, or what the caller
//! asks: `run`, `commit` and `pages` read it only when a window closes), the `on` map (switched by a
//! map update so the window can be set tightly around the disk counters', `/sys/block/*/stat`), the
//! `lost` count (records the ring had no room for) and the runs the kernel skipped (Linux 6.7 counts
//! them; before, the lost count is reported as unknown). A record is 52 bytes on Linux 6.18, 64 in the
//! ring with its 8-byte header: 65,536 records in 4 MiB, ~32,768 requests (an issue and a completion
//! each).
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
//! request is issued by whoever submits or by a kworker, and completed in an interrupt. The reader
//! hands the copied record (the tracepoint's own layout) to the decoder the perf samples go through
//! ([`super::requests`]), which makes the typed [`KernelEvent`]s.

use std::io;
use syncbench_sys::bpf::{Asm, Reg, Size, helper};
use syncbench_sys::kevents::{Lost, Maps, Session, Wake};
use syncbench_sys::tracefs::EventFormat;

/// Default ring size (a power of two number of pages).
pub const RING_BYTES: u32 = 4 << 20;
/// Bytes before the copied tracepoint record (from its `common_type` on): the time.
const TIME_BYTES: usize = 8;
/// The longest copy: the stack frame is 512 bytes.
const MAX_COPY: usize = 256;

/// The loaded and attached programs in their session.
pub struct BlockPrograms {
    session: Session,
    /// Each tracepoint's id and the length of its records' copy (`len`), to check records against.
    copies: Vec<(u16, usize)>,
    /// Records refused for their length (see [`record_of`]).
    malformed: u64,
    /// Whether the last reading stopped at a record still reserved (see [`BlockPrograms::drain`]).
    held_back: bool,
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

/// The program of tracepoint `id`: if `on[0]`, `record = {now, id, ctx[8..8 + len]}`, written to the
/// ring (or `lost[0] += 1`). `len` from [`copy_len`].
pub fn program(maps: &Maps, id: u16, len: usize) -> Asm {
    let total = TIME_BYTES + FIRST + len;
    let rec = record_at(len);
    let mut a = Asm::new();
    a.mov(Reg::R6, Reg::R1);
    maps.unless_on(&mut a, "out");
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
    // No wake-up: the reader reads on its own clock (every 50 ms, or when a window closes).
    maps.output(&mut a, rec, total, Wake::Never, "out");
    Maps::epilogue(&mut a, "out");
    a
}

/// A record's time and its copy of the tracepoint's record (`common_type` holding the id), if it is as
/// long as the records of its tracepoint are (`copies`: each tracepoint's id and copied bytes). A short
/// record would otherwise decode as zeros (fields read as 0 where the record is too short).
pub fn record_of<'a>(record: &'a [u8], copies: &[(u16, usize)]) -> Option<(u64, &'a [u8])> {
    let time_ns = u64::from_ne_bytes(record.get(..TIME_BYTES)?.try_into().ok()?);
    let raw = &record[TIME_BYTES..];
    let id = u16::from_ne_bytes(raw.get(..2)?.try_into().ok()?);
    let &(_, len) = copies.iter().find(|(known, _)| *known == id)?;
    (raw.len() == FIRST + len).then_some((time_ns, raw))
}

impl BlockPrograms {
    /// Load the programs into a session with a ring of `ring_bytes` and attach them to `events` (each
    /// with the bytes of its record to copy): recording once [`BlockPrograms::set_on`] opens the window.
    /// Errors say which step failed.
    pub fn start(events: &[(&EventFormat, usize)], ring_bytes: u32) -> io::Result<BlockPrograms> {
        let mut session = Session::new(ring_bytes)?;
        let mut copies = Vec::new();
        for (format, len) in events {
            let id = u16::try_from(format.id)
                .map_err(|_| io::Error::other(format!("tracepoint id {} is wider than common_type", format.id)))?;
            let asm = program(&session.maps(), id, *len);
            session.load(&asm, format.id, "block tracepoint")?;
            copies.push((id, *len));
        }
        session.attach()?;
        Ok(BlockPrograms { session, copies, malformed: 0, held_back: false })
    }

    /// Open (`true`) or close the window; what is in the ring stays readable. The programs stay attached
    /// until [`BlockPrograms::detach`] or drop, and still run (switched off): their skipped runs are
    /// counted up to the first close.
    pub fn set_on(&mut self, on: bool) -> io::Result<()> {
        self.session.set_on(on).map_err(|e| io::Error::new(e.kind(), format!("the block programs: {e}")))
    }

    /// Detach the programs.
    pub fn detach(&mut self) {
        self.session.detach();
    }

    /// Every record written since the last call, as (time, tracepoint record), in commit order (an
    /// issue's record is committed before its request can complete). Records of the wrong length are
    /// counted, not decoded. With `all` (the programs switched off), a record still reserved is waited
    /// for (up to 100 ms); one that stays reserved holds back the rest, and counts as dropped.
    pub fn drain(&mut self, all: bool, mut each: impl FnMut(u64, &[u8])) {
        let (copies, mut malformed) = (&self.copies, 0);
        for _ in 0..100 {
            let read_all = self.session.drain(|record| match record_of(record, copies) {
                Some((time_ns, raw)) => each(time_ns, raw),
                None => malformed += 1,
            });
            self.held_back = !read_all;
            if read_all || !all {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.malformed += malformed;
    }

    /// Hits not recorded while recording: records the ring had no room for (or refused for their
    /// length), and runs the kernel skipped because another BPF program (syncbench's syscall programs,
    /// anybody's) was running on that CPU when the tracepoint fired (a completion's interrupt arriving
    /// meanwhile), unknown before Linux 6.7. An error when the ring's count cannot be read.
    pub fn lost(&self) -> io::Result<Lost> {
        let lost = self.session.lost().map_err(|e| io::Error::new(e.kind(), format!("the block programs: {e}")))?;
        Ok(Lost { dropped: lost.dropped + self.malformed + u64::from(self.held_back), ..lost })
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
    fn a_record_is_read_back_if_its_length_is_its_tracepoints() {
        let copies = [(0x0833, 2), (0x0834, 4)];
        let record = |id: u16, copied: &[u8]| {
            let mut r = 1234u64.to_ne_bytes().to_vec();
            r.extend_from_slice(&id.to_ne_bytes());
            r.extend_from_slice(&[0; 6]);
            r.extend_from_slice(copied);
            r
        };
        let r = record(0x0833, &[1, 2]);
        let (time_ns, raw) = record_of(&r, &copies).unwrap();
        assert_eq!((time_ns, &raw[..2], raw.len()), (1234, &0x0833u16.to_ne_bytes()[..], 10));
        // Short or long for its tracepoint, of an unknown one, or without an id: refused.
        assert!(record_of(&record(0x0834, &[1, 2]), &copies).is_none());
        assert!(record_of(&record(0x0833, &[1, 2, 3]), &copies).is_none());
        assert!(record_of(&record(0x0999, &[1, 2]), &copies).is_none());
        assert!(record_of(&[1, 2, 3], &copies).is_none());
        assert!(record_of(&1234u64.to_ne_bytes(), &copies).is_none());
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
}
