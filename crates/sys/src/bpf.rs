//! eBPF without a compiler: the `bpf(2)` calls syncbench needs (maps, program loading, a ring buffer
//! read through `mmap`), a small instruction builder so programs are written in Rust as commented
//! assembly, and attaching a program to a tracepoint through `perf_event_open(2)`.
//!
//! Why no clang/libbpf: the programs are a few dozen instructions each, built at run time from the
//! tracepoint ids and layouts tracefs gives; the kernel's verifier checks them at load. Nothing but this
//! crate's `libc` is needed at build time, so `cargo build` on a fresh machine is enough.

use rustix::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const BPF_MAP_CREATE: i32 = 0;
const BPF_MAP_LOOKUP_ELEM: i32 = 1;
const BPF_MAP_UPDATE_ELEM: i32 = 2;
const BPF_MAP_DELETE_ELEM: i32 = 3;
const BPF_MAP_GET_NEXT_KEY: i32 = 4;
const BPF_PROG_LOAD: i32 = 5;
const BPF_OBJ_GET_INFO_BY_FD: i32 = 15;
/// `struct bpf_prog_info`: its size up to and including `recursion_misses` (in the struct since Linux
/// 5.12; an older kernel leaves it 0), and where that is.
const PROG_INFO_LEN: usize = 216;
const PROG_INFO_RECURSION_MISSES: usize = 208;
const BPF_PROG_TYPE_TRACEPOINT: u32 = 5;
const BPF_PSEUDO_MAP_FD: u8 = 1;
/// `_IOW('$', 8, __u32)`.
const IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

/// Map types used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MapType {
    /// `BPF_MAP_TYPE_HASH`.
    Hash = 1,
    /// `BPF_MAP_TYPE_ARRAY`.
    Array = 2,
    /// `BPF_MAP_TYPE_RINGBUF`: one ring shared by every CPU, records in commit order (Linux 5.8).
    RingBuf = 27,
}

/// Helper function ids (`enum bpf_func_id`).
pub mod helper {
    /// `void *bpf_map_lookup_elem(map, key)`.
    pub const MAP_LOOKUP_ELEM: i32 = 1;
    /// `long bpf_map_update_elem(map, key, value, flags)`.
    pub const MAP_UPDATE_ELEM: i32 = 2;
    /// `long bpf_map_delete_elem(map, key)`.
    pub const MAP_DELETE_ELEM: i32 = 3;
    /// `u64 bpf_ktime_get_ns()`: CLOCK_MONOTONIC.
    pub const KTIME_GET_NS: i32 = 5;
    /// `u64 bpf_get_current_pid_tgid()`: tgid << 32 | tid.
    pub const GET_CURRENT_PID_TGID: i32 = 14;
    /// `long bpf_get_current_comm(buf, size)`: the task's comm, NUL-padded.
    pub const GET_CURRENT_COMM: i32 = 16;
    /// `long bpf_ringbuf_output(ringbuf, data, size, flags)`.
    pub const RINGBUF_OUTPUT: i32 = 130;
    /// `u64 bpf_ringbuf_query(ringbuf, flags)`.
    pub const RINGBUF_QUERY: i32 = 134;
}

/// `bpf_ringbuf_output` flags and `bpf_ringbuf_query` selectors.
pub mod ringbuf {
    /// Do not wake the reader.
    pub const NO_WAKEUP: i32 = 1;
    /// Wake the reader now.
    pub const FORCE_WAKEUP: i32 = 2;
    /// `bpf_ringbuf_query`: bytes written and not yet consumed.
    pub const AVAIL_DATA: i32 = 0;
}

/// A BPF register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reg {
    /// Return value, helper result.
    R0 = 0,
    /// First argument (the context at entry); clobbered by calls.
    R1,
    /// Second argument; clobbered by calls.
    R2,
    /// Third argument; clobbered by calls.
    R3,
    /// Fourth argument; clobbered by calls.
    R4,
    /// Fifth argument; clobbered by calls.
    R5,
    /// Callee-saved.
    R6,
    /// Callee-saved.
    R7,
    /// Callee-saved.
    R8,
    /// Callee-saved.
    R9,
    /// Frame pointer (read only); the stack is the 512 bytes below it.
    R10,
}

/// Memory access sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Size {
    /// 4 bytes.
    W = 0x00,
    /// 2 bytes.
    H = 0x08,
    /// 1 byte.
    B = 0x10,
    /// 8 bytes.
    DW = 0x18,
}

/// ALU operations (64-bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Alu {
    /// `+=`.
    Add = 0x00,
    /// `-=`.
    Sub = 0x10,
    /// `|=`.
    Or = 0x40,
    /// `&=`.
    And = 0x50,
    /// `<<=`.
    Lsh = 0x60,
    /// `>>=` (logical).
    Rsh = 0x70,
    /// `=`.
    Mov = 0xb0,
}

/// Conditional jumps (64-bit compares).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cond {
    /// `==`.
    Eq = 0x10,
    /// `>` unsigned.
    Gt = 0x20,
    /// `>=` unsigned.
    Ge = 0x30,
    /// `!=`.
    Ne = 0x50,
    /// `<` unsigned.
    Lt = 0xa0,
    /// `<` signed.
    Slt = 0xc0,
}

const CLASS_LD: u8 = 0x00;
const CLASS_LDX: u8 = 0x01;
const CLASS_ST: u8 = 0x02;
const CLASS_STX: u8 = 0x03;
const CLASS_JMP: u8 = 0x05;
const CLASS_ALU64: u8 = 0x07;
const MODE_IMM: u8 = 0x00;
const MODE_MEM: u8 = 0x60;
const MODE_ATOMIC: u8 = 0xc0;
const SRC_X: u8 = 0x08;
const OP_CALL: u8 = 0x80;
const OP_EXIT: u8 = 0x90;

/// One instruction, `struct bpf_insn`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    /// Opcode.
    pub code: u8,
    /// dst register in the low nibble, src in the high one.
    pub regs: u8,
    /// Offset (memory, jumps).
    pub off: i16,
    /// Immediate.
    pub imm: i32,
}

impl Insn {
    fn new(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Insn {
        Insn { code, regs: (dst as u8) | ((src as u8) << 4), off, imm }
    }

    /// The 8 bytes the kernel reads (little-endian machine).
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = self.regs;
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

/// A program being written: instructions plus named labels, resolved by [`Asm::finish`].
#[derive(Debug, Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: HashMap<&'static str, usize>,
    jumps: Vec<(usize, &'static str)>,
}

impl Asm {
    /// An empty program.
    pub fn new() -> Asm {
        Asm::default()
    }

    fn push(&mut self, insn: Insn) -> &mut Asm {
        self.insns.push(insn);
        self
    }

    /// `dst = map` (the map's fd, turned into a map pointer by the kernel at load; two instruction slots).
    pub fn ld_map_fd(&mut self, dst: Reg, map: &Map) -> &mut Asm {
        let code = CLASS_LD | Size::DW as u8 | MODE_IMM;
        self.push(Insn::new(code, dst, Reg::R0, 0, map.fd.as_raw_fd()));
        self.insns.last_mut().expect("just pushed").regs |= BPF_PSEUDO_MAP_FD << 4;
        self.push(Insn::default())
    }

    /// `dst = imm` (64-bit immediate, two instruction slots).
    pub fn ld_imm64(&mut self, dst: Reg, imm: u64) -> &mut Asm {
        let code = CLASS_LD | Size::DW as u8 | MODE_IMM;
        self.push(Insn::new(code, dst, Reg::R0, 0, imm as u32 as i32));
        self.push(Insn { imm: (imm >> 32) as u32 as i32, ..Insn::default() })
    }

    /// `dst op= imm` (64-bit).
    pub fn alu_imm(&mut self, op: Alu, dst: Reg, imm: i32) -> &mut Asm {
        self.push(Insn::new(CLASS_ALU64 | op as u8, dst, Reg::R0, 0, imm))
    }

    /// `dst op= src` (64-bit).
    pub fn alu_reg(&mut self, op: Alu, dst: Reg, src: Reg) -> &mut Asm {
        self.push(Insn::new(CLASS_ALU64 | op as u8 | SRC_X, dst, src, 0, 0))
    }

    /// `dst = imm` (sign-extended to 64 bits).
    pub fn mov_imm(&mut self, dst: Reg, imm: i32) -> &mut Asm {
        self.alu_imm(Alu::Mov, dst, imm)
    }

    /// `dst = src`.
    pub fn mov(&mut self, dst: Reg, src: Reg) -> &mut Asm {
        self.alu_reg(Alu::Mov, dst, src)
    }

    /// `dst = *(size *)(src + off)`.
    pub fn ldx(&mut self, size: Size, dst: Reg, src: Reg, off: i16) -> &mut Asm {
        self.push(Insn::new(CLASS_LDX | size as u8 | MODE_MEM, dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = src`.
    pub fn stx(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(Insn::new(CLASS_STX | size as u8 | MODE_MEM, dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = imm`.
    pub fn st_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) -> &mut Asm {
        self.push(Insn::new(CLASS_ST | size as u8 | MODE_MEM, dst, Reg::R0, off, imm))
    }

    /// `lock *(u64 *)(dst + off) += src`.
    pub fn atomic_add64(&mut self, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(Insn::new(CLASS_STX | Size::DW as u8 | MODE_ATOMIC, dst, src, off, 0))
    }

    /// `if dst cond imm goto label`.
    pub fn jmp_imm(&mut self, cond: Cond, dst: Reg, imm: i32, label: &'static str) -> &mut Asm {
        self.jumps.push((self.insns.len(), label));
        self.push(Insn::new(CLASS_JMP | cond as u8, dst, Reg::R0, 0, imm))
    }

    /// `if dst cond src goto label`.
    pub fn jmp_reg(&mut self, cond: Cond, dst: Reg, src: Reg, label: &'static str) -> &mut Asm {
        self.jumps.push((self.insns.len(), label));
        self.push(Insn::new(CLASS_JMP | cond as u8 | SRC_X, dst, src, 0, 0))
    }

    /// `goto label`.
    pub fn ja(&mut self, label: &'static str) -> &mut Asm {
        self.jumps.push((self.insns.len(), label));
        self.push(Insn::new(CLASS_JMP, Reg::R0, Reg::R0, 0, 0))
    }

    /// `r0 = helper(r1, ..., r5)`; r1–r5 are clobbered.
    pub fn call(&mut self, helper: i32) -> &mut Asm {
        self.push(Insn::new(CLASS_JMP | OP_CALL, Reg::R0, Reg::R0, 0, helper))
    }

    /// `return r0`.
    pub fn exit(&mut self) -> &mut Asm {
        self.push(Insn::new(CLASS_JMP | OP_EXIT, Reg::R0, Reg::R0, 0, 0))
    }

    /// Place `name` at the next instruction.
    pub fn label(&mut self, name: &'static str) -> &mut Asm {
        let previous = self.labels.insert(name, self.insns.len());
        assert!(previous.is_none(), "BPF label {name} defined twice");
        self
    }

    /// The instructions, every jump resolved (a jump to an unknown label is an error, not a guess).
    pub fn finish(&self) -> io::Result<Vec<Insn>> {
        let mut insns = self.insns.clone();
        for &(at, label) in &self.jumps {
            let target =
                *self.labels.get(label).ok_or_else(|| io::Error::other(format!("BPF label {label} unknown")))?;
            let off = target as i64 - at as i64 - 1;
            insns[at].off = i16::try_from(off).map_err(|_| io::Error::other("BPF jump out of range"))?;
        }
        Ok(insns)
    }
}

/// The `bpf(2)` system call with a zeroed 128-byte `union bpf_attr` whose first bytes are `attr`.
fn sys_bpf(cmd: i32, attr: &[u8]) -> io::Result<i64> {
    let mut buf = [0u64; 16];
    // SAFETY: `buf` is 128 bytes and `attr` is at most that (asserted), copied byte for byte.
    assert!(attr.len() <= 128);
    unsafe { std::ptr::copy_nonoverlapping(attr.as_ptr(), buf.as_mut_ptr().cast::<u8>(), attr.len()) };
    // SAFETY: `buf` is a valid bpf_attr of the size given; pointers inside it outlive the call.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, buf.as_mut_ptr(), 128usize) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(rc) }
}

/// Little-endian `bpf_attr` bytes from (offset, value) words.
fn attr(words: &[(usize, u64, usize)]) -> Vec<u8> {
    let mut b = vec![0u8; 128];
    for &(at, value, size) in words {
        b[at..at + size].copy_from_slice(&value.to_le_bytes()[..size]);
    }
    b
}

/// A BPF map.
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    key_size: usize,
    value_size: usize,
}

impl Map {
    /// `BPF_MAP_CREATE`. For a ring buffer, key and value sizes are 0 and `max_entries` is its size in
    /// bytes (a power of two, a multiple of the page size).
    pub fn create(kind: MapType, key_size: u32, value_size: u32, max_entries: u32) -> io::Result<Map> {
        let a = attr(&[
            (0, kind as u64, 4),
            (4, key_size.into(), 4),
            (8, value_size.into(), 4),
            (12, max_entries.into(), 4),
        ]);
        let fd = sys_bpf(BPF_MAP_CREATE, &a)?;
        // SAFETY: a new fd returned by the kernel, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        Ok(Map { fd, key_size: key_size as usize, value_size: value_size as usize })
    }

    fn elem(&self, cmd: i32, key: &[u8], value: *mut u8, flags: u64) -> io::Result<i64> {
        if key.len() != self.key_size {
            return Err(io::Error::other("BPF map key of the wrong size"));
        }
        let a = attr(&[
            (0, self.fd.as_raw_fd() as u64, 4),
            (8, key.as_ptr() as u64, 8),
            (16, value as u64, 8),
            (24, flags, 8),
        ]);
        sys_bpf(cmd, &a)
    }

    /// `BPF_MAP_UPDATE_ELEM` with `BPF_ANY`.
    pub fn update(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        if value.len() != self.value_size {
            return Err(io::Error::other("BPF map value of the wrong size"));
        }
        self.elem(BPF_MAP_UPDATE_ELEM, key, value.as_ptr().cast_mut(), 0).map(drop)
    }

    /// `BPF_MAP_LOOKUP_ELEM`: the value, or `None` when the key is absent.
    pub fn lookup(&self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        let mut value = vec![0u8; self.value_size];
        match self.elem(BPF_MAP_LOOKUP_ELEM, key, value.as_mut_ptr(), 0) {
            Ok(_) => Ok(Some(value)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `BPF_MAP_DELETE_ELEM`: whether the key was there.
    pub fn delete(&self, key: &[u8]) -> io::Result<bool> {
        match self.elem(BPF_MAP_DELETE_ELEM, key, std::ptr::null_mut(), 0) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Every key (`BPF_MAP_GET_NEXT_KEY` from none on).
    pub fn keys(&self) -> io::Result<Vec<Vec<u8>>> {
        let mut keys = Vec::new();
        let mut key = vec![0u8; self.key_size];
        let mut next = vec![0u8; self.key_size];
        // A key that cannot be in the map starts the walk (the kernel then returns the first key).
        let mut first = true;
        loop {
            let from: &[u8] = &key;
            let a = attr(&[
                (0, self.fd.as_raw_fd() as u64, 4),
                (8, if first { 0 } else { from.as_ptr() as u64 }, 8),
                (16, next.as_mut_ptr() as u64, 8),
            ]);
            match sys_bpf(BPF_MAP_GET_NEXT_KEY, &a) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(keys),
                Err(e) => return Err(e),
            }
            first = false;
            keys.push(next.clone());
            key.copy_from_slice(&next);
        }
    }

    /// The map's fd (for polling a ring buffer).
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

/// A loaded program.
#[derive(Debug)]
pub struct Program {
    fd: OwnedFd,
}

/// Why a program was refused: the error and the verifier's log.
#[derive(Debug)]
pub struct LoadError {
    /// `bpf(BPF_PROG_LOAD)`'s error.
    pub error: io::Error,
    /// The verifier's explanation (empty when the kernel refused before verifying).
    pub log: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let last = self.log.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        if last.is_empty() { write!(f, "{}", self.error) } else { write!(f, "{} (verifier: {last})", self.error) }
    }
}

impl std::error::Error for LoadError {}

impl From<LoadError> for io::Error {
    fn from(e: LoadError) -> io::Error {
        io::Error::new(e.error.kind(), e.to_string())
    }
}

impl Program {
    /// `BPF_PROG_LOAD` of a tracepoint program. On refusal the error carries the verifier's log: the
    /// program is loaded without one first (writing it slows every load), and again with it if refused.
    pub fn load_tracepoint(insns: &[Insn], license: &str) -> Result<Program, LoadError> {
        let bytes: Vec<u8> = insns.iter().flat_map(|i| i.to_bytes()).collect();
        let license = std::ffi::CString::new(license).expect("license without NUL");
        let load = |log: &mut [u8]| {
            let a = attr(&[
                (0, BPF_PROG_TYPE_TRACEPOINT.into(), 4),
                (4, insns.len() as u64, 4),
                (8, bytes.as_ptr() as u64, 8),
                (16, license.as_ptr() as u64, 8),
                (24, u64::from(!log.is_empty()), 4), // log_level 1 with a buffer, else 0
                (28, log.len() as u64, 4),
                (32, if log.is_empty() { 0 } else { log.as_mut_ptr() as u64 }, 8),
            ]);
            // SAFETY: a new fd returned by the kernel, owned by nobody else.
            sys_bpf(BPF_PROG_LOAD, &a).map(|fd| Program { fd: unsafe { OwnedFd::from_raw_fd(fd as i32) } })
        };
        if let Ok(program) = load(&mut []) {
            return Ok(program);
        }
        let mut log = vec![0u8; 256 * 1024];
        load(&mut log).map_err(|error| {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            LoadError { error, log: String::from_utf8_lossy(&log[..end]).into_owned() }
        })
    }

    /// How many times the kernel skipped this program because another BPF program was running on the same
    /// CPU (`bpf_prog_info.recursion_misses`): a tracepoint hit in an interrupt that came while a syscall
    /// tracepoint's program ran is not seen by its own program. Those hits are lost. For a tracepoint
    /// program the kernel counts them only from Linux 6.7 (see [`counts_tracepoint_misses`]): before, this
    /// reads 0 whatever was skipped.
    pub fn recursion_misses(&self) -> io::Result<u64> {
        let mut info = [0u8; PROG_INFO_LEN];
        let a =
            attr(&[(0, self.fd.as_raw_fd() as u64, 4), (4, PROG_INFO_LEN as u64, 4), (8, info.as_mut_ptr() as u64, 8)]);
        sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a)?;
        // The layout checked where it starts: `type` (0) is what was loaded.
        if info[..4] != BPF_PROG_TYPE_TRACEPOINT.to_ne_bytes() {
            return Err(io::Error::other("bpf_prog_info of an unexpected layout"));
        }
        let at = PROG_INFO_RECURSION_MISSES;
        Ok(u64::from_ne_bytes(info[at..at + 8].try_into().expect("8 bytes")))
    }

    /// Run this program at every hit of tracepoint `id` (from tracefs), on every CPU, until the returned
    /// attachment is dropped. The program should return 1: 0 discards the hit for every perf event on
    /// that CPU, other tools' included.
    pub fn attach_tracepoint(&self, id: u64) -> io::Result<Attachment> {
        // Disabled: an enabled cpu-0 event would also run perf's sample path at every hit.
        let event = crate::perf::PerfEventAttr::tracepoint(id).open(-1, 0)?;
        // The event is opened disabled and never enabled: the kernel runs the program at every hit once
        // it is attached (the tracepoint is registered when the event is opened and the program sits in
        // the tracepoint's program array), while a disabled event is in no CPU's list, so perf neither
        // counts nor samples its hits. A program returning 1 lets other perf users of the tracepoint
        // (`perf record`, a second syncbench) record their samples. (Returning 0 would discard theirs too.)
        // SAFETY: ioctl on our perf fd; SET_BPF takes the program fd as its argument.
        if unsafe { libc::ioctl(event.as_raw_fd(), IOC_SET_BPF, self.fd.as_raw_fd()) } == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(Attachment { _event: event })
    }
}

/// Whether a kernel of release `release` (`uname -r`: `6.18.0-1-amd64`, `5.14.0-362.el9.x86_64`) counts
/// the runs of a tracepoint program it skips in [`Program::recursion_misses`]: from Linux 6.7, where
/// `trace_call_bpf` calls `bpf_prog_inc_misses_counter` when another BPF program runs on that CPU. On
/// 5.12–6.6 the field exists but stays 0 for tracepoint programs; before 5.12 it is not filled. A release
/// that does not start with `MAJOR.MINOR` is taken as not counting (the count would be a guess).
pub fn counts_tracepoint_misses(release: &str) -> bool {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let (major, minor) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    // MAJOR, a dot, MINOR (`6-7` is no release).
    if release.as_bytes().get(major.len()) != Some(&b'.') {
        return false;
    }
    match (major.parse::<u32>(), minor.parse::<u32>()) {
        (Ok(major), Ok(minor)) => (major, minor) >= (6, 7),
        _ => false,
    }
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    rustix::system::uname().release().to_string_lossy().into_owned()
}

/// A program attached to a tracepoint; dropping it detaches the program.
#[derive(Debug)]
pub struct Attachment {
    _event: OwnedFd,
}

/// A `BPF_MAP_TYPE_RINGBUF` map read through `mmap`: the consumer position (read-write page), then the
/// producer position and the data, mapped twice in a row by the kernel so a record that wraps around
/// reads as one slice.
pub struct RingBuf {
    map: Map,
    consumer: *mut u8,
    producer: *mut u8,
    page: usize,
    size: usize,
}

// SAFETY: the mappings are owned by this value and only touched through `&mut self`.
unsafe impl Send for RingBuf {}

const RINGBUF_BUSY: u32 = 1 << 31;
const RINGBUF_DISCARD: u32 = 1 << 30;
const RINGBUF_HEADER: usize = 8;

impl RingBuf {
    /// A ring of `size` bytes (a power of two, at least a page).
    pub fn create(size: u32) -> io::Result<RingBuf> {
        let map = Map::create(MapType::RingBuf, 0, 0, size)?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let size = size as usize;
        let fd = map.fd.as_raw_fd();
        // SAFETY: fresh shared mappings of the map fd at the offsets the kernel defines; checked below.
        let consumer = unsafe {
            libc::mmap(std::ptr::null_mut(), page, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if consumer == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above; the producer page plus the data mapped twice, read only.
        let producer = unsafe {
            libc::mmap(std::ptr::null_mut(), page + 2 * size, libc::PROT_READ, libc::MAP_SHARED, fd, page as i64)
        };
        if producer == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            // SAFETY: the mapping made just above.
            unsafe { libc::munmap(consumer, page) };
            return Err(e);
        }
        Ok(RingBuf { map, consumer: consumer.cast(), producer: producer.cast(), page, size })
    }

    /// The map, for programs to write to.
    pub fn map(&self) -> &Map {
        &self.map
    }

    /// Block until a record is ready or `timeout_ms` passed (the kernel wakes pollers as the programs ask).
    pub fn wait(&self, timeout_ms: i32) -> io::Result<()> {
        let mut fd = libc::pollfd { fd: self.map.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut fd, 1, timeout_ms) };
        if rc == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Hand every committed record to `each`, in commit order, and release their space. Whether every
    /// record published was read: `false` when one still reserved (its program running on another CPU,
    /// or its vCPU descheduled meanwhile) holds back those after it until a later call.
    pub fn drain(&mut self, mut each: impl FnMut(&[u8])) -> bool {
        // SAFETY: both positions are 8-byte aligned u64s at the start of their pages, shared with the
        // kernel: read (and the consumer's written) atomically.
        let (cons_pos, prod_pos) =
            unsafe { (&*self.consumer.cast::<AtomicU64>(), &*self.producer.cast::<AtomicU64>()) };
        let mut cons = cons_pos.load(Ordering::Acquire);
        let prod = prod_pos.load(Ordering::Acquire);
        let mask = self.size as u64 - 1;
        while cons < prod {
            let at = self.page + (cons & mask) as usize;
            // SAFETY: `at` is inside the first copy of the data area; the header is a u32 the kernel
            // writes atomically (busy bit cleared on commit).
            let len = unsafe { &*self.producer.add(at).cast::<AtomicU32>() }.load(Ordering::Acquire);
            if len & RINGBUF_BUSY != 0 {
                break; // reserved, not committed yet: later records wait behind it
            }
            let body = (len & !(RINGBUF_BUSY | RINGBUF_DISCARD)) as usize;
            if len & RINGBUF_DISCARD == 0 {
                // SAFETY: the record lies within the doubly mapped data area (body < size).
                let data = unsafe { std::slice::from_raw_parts(self.producer.add(at + RINGBUF_HEADER), body) };
                each(data);
            }
            cons += ((body + RINGBUF_HEADER + 7) & !7) as u64;
            cons_pos.store(cons, Ordering::Release);
        }
        cons >= prod
    }
}

impl Drop for RingBuf {
    fn drop(&mut self) {
        // SAFETY: exactly the mappings made in `create`.
        unsafe {
            libc::munmap(self.consumer.cast(), self.page);
            libc::munmap(self.producer.cast(), self.page + 2 * self.size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(asm: &Asm) -> Vec<u8> {
        asm.finish().unwrap().iter().flat_map(|i| i.to_bytes()).collect()
    }

    #[test]
    fn encodings_match_the_kernel_and_llvm() {
        // Reference bytes as `llvm-objdump -d` prints them for the same instructions.
        let mut a = Asm::new();
        a.mov_imm(Reg::R0, 0);
        assert_eq!(bytes(&a), [0xb7, 0x00, 0, 0, 0, 0, 0, 0]);
        let mut a = Asm::new();
        a.exit();
        assert_eq!(bytes(&a), [0x95, 0, 0, 0, 0, 0, 0, 0]);
        let mut a = Asm::new();
        a.ldx(Size::DW, Reg::R1, Reg::R6, 16); // r1 = *(u64 *)(r6 + 16)
        assert_eq!(bytes(&a), [0x79, 0x61, 0x10, 0, 0, 0, 0, 0]);
        let mut a = Asm::new();
        a.stx(Size::DW, Reg::R10, -8, Reg::R0); // *(u64 *)(r10 - 8) = r0
        assert_eq!(bytes(&a), [0x7b, 0x0a, 0xf8, 0xff, 0, 0, 0, 0]);
        let mut a = Asm::new();
        a.stx(Size::W, Reg::R10, -4, Reg::R7); // *(u32 *)(r10 - 4) = r7
        assert_eq!(bytes(&a), [0x63, 0x7a, 0xfc, 0xff, 0, 0, 0, 0]);
        let mut a = Asm::new();
        a.call(helper::GET_CURRENT_PID_TGID);
        assert_eq!(bytes(&a), [0x85, 0, 0, 0, 0x0e, 0, 0, 0]);
        let mut a = Asm::new();
        a.alu_imm(Alu::Rsh, Reg::R1, 32).alu_imm(Alu::Add, Reg::R2, -4).mov(Reg::R6, Reg::R1);
        assert_eq!(
            bytes(&a),
            [0x77, 0x01, 0, 0, 0x20, 0, 0, 0, 0x07, 0x02, 0, 0, 0xfc, 0xff, 0xff, 0xff, 0xbf, 0x16, 0, 0, 0, 0, 0, 0]
        );
        let mut a = Asm::new();
        a.atomic_add64(Reg::R0, 0, Reg::R1); // lock *(u64 *)(r0 + 0) += r1
        assert_eq!(bytes(&a), [0xdb, 0x10, 0, 0, 0, 0, 0, 0]);
        let mut a = Asm::new();
        a.ld_imm64(Reg::R2, 0x1122_3344_5566_7788);
        assert_eq!(bytes(&a), [0x18, 0x02, 0, 0, 0x88, 0x77, 0x66, 0x55, 0, 0, 0, 0, 0x44, 0x33, 0x22, 0x11]);
    }

    #[test]
    fn tracepoint_misses_are_counted_from_linux_6_7() {
        for counted in ["6.7.0", "6.7", "6.18.0-1-amd64", "6.10.0-rc3", "7.0.1", "10.2.3-custom"] {
            assert!(counts_tracepoint_misses(counted), "{counted}");
        }
        // Debian 12, Ubuntu 22.04 / 24.04 (6.8 counts), RHEL 9, an old LTS, and what is not a release.
        for not in ["6.6.58", "6.1.0-13-amd64", "5.15.0-91-generic", "5.14.0-362.el9.x86_64", "4.19.0", ""] {
            assert!(!counts_tracepoint_misses(not), "{not}");
        }
        for junk in ["6", "6-7", "x6.7", "6.x", "-6.7"] {
            assert!(!counts_tracepoint_misses(junk), "{junk}");
        }
        assert!(counts_tracepoint_misses("6.8.0-49-generic"));
        assert!(!kernel_release().is_empty());
    }

    #[test]
    fn jumps_resolve_forward_and_backward_and_unknown_labels_are_errors() {
        let mut a = Asm::new();
        a.label("top").jmp_imm(Cond::Eq, Reg::R0, 0, "out").mov_imm(Reg::R0, 1).ja("top").label("out").exit();
        let insns = a.finish().unwrap();
        // if r0 == 0 goto +2 ; r0 = 1 ; goto -3 ; exit
        assert_eq!(insns[0].to_bytes(), [0x15, 0x00, 0x02, 0x00, 0, 0, 0, 0]);
        assert_eq!(insns[2].to_bytes(), [0x05, 0x00, 0xfd, 0xff, 0, 0, 0, 0]);
        let mut bad = Asm::new();
        bad.ja("nowhere").exit();
        assert!(bad.finish().is_err());
    }

    /// Pins the calling thread to CPU 0; returns its former affinity.
    fn pin_to_cpu0() -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is plain data; sched_{get,set}affinity(0, ..) act on the calling thread and
        // read/write exactly one cpu_set_t.
        unsafe {
            let mut saved: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut saved), 0);
            let mut cpu0: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut cpu0);
            assert_eq!(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &cpu0), 0);
            saved
        }
    }

    /// The whole path as root: a hash map, a ring buffer, a program on `syscalls:sys_enter_getppid` that
    /// counts this process's calls in the map and writes its tgid to the ring, attached and seen working;
    /// a program the verifier must refuse comes back with its log.
    #[test]
    fn a_program_attached_to_a_tracepoint_counts_calls_and_writes_records() {
        if !crate::test_support::is_root_or_skip() {
            return;
        }
        let tracefs = crate::tracefs::Tracefs::open(&std::env::temp_dir()).unwrap();
        let id = tracefs.event("syscalls", "sys_enter_getppid").unwrap().id;
        let me = std::process::id();
        let counts = Map::create(MapType::Array, 4, 8, 1).unwrap();
        let mut ring = RingBuf::create(1 << 16).unwrap();
        let mut a = Asm::new();
        a.call(helper::GET_CURRENT_PID_TGID)
            .alu_imm(Alu::Rsh, Reg::R0, 32)
            .jmp_imm(Cond::Ne, Reg::R0, me as i32, "out") // only this process
            .stx(Size::DW, Reg::R10, -16, Reg::R0) // record: the tgid
            .st_imm(Size::W, Reg::R10, -4, 0) // key 0
            .ld_map_fd(Reg::R1, &counts)
            .mov(Reg::R2, Reg::R10)
            .alu_imm(Alu::Add, Reg::R2, -4)
            .call(helper::MAP_LOOKUP_ELEM)
            .jmp_imm(Cond::Eq, Reg::R0, 0, "out")
            .mov_imm(Reg::R1, 1)
            .atomic_add64(Reg::R0, 0, Reg::R1)
            .ld_map_fd(Reg::R1, ring.map())
            .mov(Reg::R2, Reg::R10)
            .alu_imm(Alu::Add, Reg::R2, -16)
            .mov_imm(Reg::R3, 8)
            .mov_imm(Reg::R4, 0)
            .call(helper::RINGBUF_OUTPUT)
            .label("out")
            .mov_imm(Reg::R0, 1) // 0 would discard `other`'s samples: this test fails then (tried)
            .exit();
        let prog = Program::load_tracepoint(&a.finish().unwrap(), "Dual MIT/GPL").unwrap();
        // A perf user of the same tracepoint (another tool) keeps its samples while the program runs.
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let point = crate::perf::Tracepoint { id, filter: None, wake_each: false };
        let cpus = crate::perf::online_cpus().unwrap();
        let mut other =
            crate::perf::Tracepoints::open(&[point], &crate::perf::Scope::Tasks(vec![tid]), &cpus, 8).unwrap();
        other.enable().unwrap();
        let attached = prog.attach_tracepoint(id).unwrap();
        // On CPU 0, whose list an enabled event opened with cpu = 0 would be in (restored below).
        let saved = pin_to_cpu0();
        for _ in 0..5 {
            // SAFETY: getppid has no preconditions.
            unsafe { libc::getppid() };
        }
        // SAFETY: sets this thread's affinity back to the mask read before.
        assert_eq!(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &saved) }, 0);
        // The perf event the program hangs from is disabled: perf itself saw none of the hits (an enabled
        // event on CPU 0 would count those that ran there, and take its sample path for each).
        let mut perf_count = [0u8; 8];
        // SAFETY: read of 8 bytes (the event's count, read_format 0) into a buffer of 8 bytes.
        let n = unsafe { libc::read(attached._event.as_raw_fd(), perf_count.as_mut_ptr().cast(), 8) };
        assert_eq!(n, 8, "{}", io::Error::last_os_error());
        assert_eq!(u64::from_ne_bytes(perf_count), 0, "the attachment's perf event counted hits");
        drop(attached);
        // SAFETY: as above: after detaching, not counted.
        unsafe { libc::getppid() };
        assert_eq!(other.drain().len(), 6, "the program discarded another perf user's samples");
        let count = u64::from_ne_bytes(counts.lookup(&0u32.to_ne_bytes()).unwrap().unwrap().try_into().unwrap());
        assert_eq!(count, 5);
        assert_eq!(prog.recursion_misses().unwrap(), 0, "no other BPF program ran beneath it");
        let mut records = Vec::new();
        ring.drain(|r| records.push(u64::from_ne_bytes(r.try_into().unwrap())));
        assert_eq!(records, vec![u64::from(me); 5]);

        // Returning without setting r0: the verifier refuses, and says why.
        let mut bad = Asm::new();
        bad.exit();
        let err = Program::load_tracepoint(&bad.finish().unwrap(), "Dual MIT/GPL").unwrap_err();
        assert!(err.log.contains("R0 !read_ok"), "{}", err.log);
        assert!(err.to_string().contains("verifier: "), "{err}");
    }

    #[test]
    fn hash_map_update_lookup_delete_and_keys_from_user_space() {
        if !crate::test_support::is_root_or_skip() {
            return;
        }
        let map = Map::create(MapType::Hash, 4, 4, 16).unwrap();
        for k in [3u32, 9, 12] {
            map.update(&k.to_ne_bytes(), &(k * 10).to_ne_bytes()).unwrap();
        }
        assert_eq!(map.lookup(&9u32.to_ne_bytes()).unwrap(), Some(90u32.to_ne_bytes().to_vec()));
        assert!(map.delete(&9u32.to_ne_bytes()).unwrap());
        assert!(!map.delete(&9u32.to_ne_bytes()).unwrap());
        assert_eq!(map.lookup(&9u32.to_ne_bytes()).unwrap(), None);
        let mut keys: Vec<u32> =
            map.keys().unwrap().iter().map(|k| u32::from_ne_bytes(k[..].try_into().unwrap())).collect();
        keys.sort();
        assert_eq!(keys, vec![3, 12]);
    }
}
