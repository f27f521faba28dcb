//! Kernel tracepoints through `perf_event_open(2)`: one ring buffer per CPU, every tracepoint of a set
//! writing into it, samples read back as (pid, tid, time, cpu, raw tracepoint record).
//!
//! Used by `trace --tracer perf` (and `--per-task`, and as the fallback when the kernel refuses the eBPF
//! programs of `bpf`), and for the block-layer tracepoints: a sample needs nothing but this syscall and
//! `mmap`; filtering by process happens in user space (see docs/trace.md).
//!
//! `perf_event_attr` is spelled once, here ([`PerfEventAttr`], also what `bpf` attaches its programs
//! through). Weighed against the `perf-event-open-sys` crate (bindgen output of the kernel's
//! `perf_event.h`, depending only on libc): it would replace one 136-byte struct and seven flag bits with
//! the whole perf ABI, its flags as generated bitfield setters, and a dependency to keep current; the
//! ioctls we use are four constants. The struct is checked against the kernel's size
//! (`PERF_ATTR_SIZE_VER8`) by a test, and the kernel itself refuses a wrong size with `E2BIG`/`EINVAL`.

use rustix::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// `struct perf_event_attr`, `PERF_ATTR_SIZE_VER8` (136 bytes): the fields after `config` we do not use
/// stay zero.
#[repr(C)]
#[derive(Default)]
pub(crate) struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_watermark: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
    aux_sample_size: u32,
    reserved_3: u32,
    sig_data: u64,
    config3: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_SAMPLE_TIME: u64 = 1 << 2;
const PERF_SAMPLE_CPU: u64 = 1 << 7;
const PERF_SAMPLE_RAW: u64 = 1 << 10;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_WATERMARK: u64 = 1 << 14;
const FLAG_USE_CLOCKID: u64 = 1 << 25;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
/// `_IOW('$', 6, char *)`.
const IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;
const RECORD_LOST: u32 = 2;
const RECORD_SAMPLE: u32 = 9;
/// `struct perf_event_mmap_page`: `data_head` and `data_tail` offsets.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

/// One sample: who, when (CLOCK_MONOTONIC, ns), where, and the tracepoint's record (its first two bytes
/// are the tracepoint id, `common_type`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Process (thread group) id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// CLOCK_MONOTONIC, ns.
    pub time_ns: u64,
    /// CPU the event fired on.
    pub cpu: u32,
    /// The raw tracepoint record.
    pub raw: Vec<u8>,
}

impl Sample {
    /// The tracepoint id (`common_type`).
    pub fn event_id(&self) -> u64 {
        self.raw.get(..2).map_or(u64::MAX, |b| u64::from(u16::from_ne_bytes([b[0], b[1]])))
    }
}

/// A ring buffer shared by every event on one CPU.
struct Ring {
    base: *mut u8,
    len: usize,
    data_size: usize,
}

// SAFETY: the mapping is owned by this value and only read through `&mut self`.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what mmap returned.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

impl Ring {
    fn map(fd: &OwnedFd, data_pages: usize) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = page * (1 + data_pages);
        // SAFETY: a fresh shared mapping of the perf fd; checked for MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring { base: base.cast(), len, data_size: page * data_pages })
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: offsets 1024/1032 are inside the first (control) page, 8-byte aligned.
        unsafe { &*self.base.add(offset).cast::<AtomicU64>() }
    }

    /// Copy out every complete record written since the last call, then hand the space back. Records
    /// are copied with two `memcpy`s at most (one when they do not wrap) into one reused buffer.
    fn drain(&mut self, out: &mut Vec<Sample>, lost: &mut u64, record: &mut Vec<u8>) {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let mut tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        while tail < head {
            let mut header = [0u8; 8];
            self.copy(tail, &mut header);
            let size = u16::from_ne_bytes([header[6], header[7]]) as usize;
            if size < 8 || tail + size as u64 > head {
                break; // cannot happen with a sane kernel; never loop forever nor read past the head
            }
            record.resize(size, 0);
            self.copy(tail, record);
            let kind = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
            match kind {
                RECORD_SAMPLE => out.extend(parse_sample(&record[8..])),
                RECORD_LOST => *lost += read_u64(record, 16),
                _ => {}
            }
            tail += size as u64;
        }
        self.word(DATA_TAIL).store(tail, Ordering::Release);
    }

    /// Copy `buf.len()` bytes at ring position `pos` (wrapping at the end of the data area).
    fn copy(&self, pos: u64, buf: &mut [u8]) {
        let page = self.len - self.data_size;
        let at = (pos % self.data_size as u64) as usize;
        let first = buf.len().min(self.data_size - at);
        // SAFETY: both ranges are inside the data area (`at + first <= data_size`, the rest from its start,
        // `buf.len() <= data_size`), which the kernel does not write between `data_tail` and `data_head`
        // (the Acquire load of the head orders these reads after its writes).
        unsafe {
            std::ptr::copy_nonoverlapping(self.base.add(page + at), buf.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(self.base.add(page), buf.as_mut_ptr().add(first), buf.len() - first);
        }
    }
}

fn read_u64(buf: &[u8], at: usize) -> u64 {
    buf.get(at..at + 8).map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
}

fn read_u32(buf: &[u8], at: usize) -> u32 {
    buf.get(at..at + 4).map_or(0, |b| u32::from_ne_bytes(b.try_into().unwrap_or([0; 4])))
}

/// A sample body with TID | TIME | CPU | RAW: pid, tid (u32 each), time (u64), cpu, res (u32 each), size
/// (u32), raw bytes.
pub fn parse_sample(body: &[u8]) -> Option<Sample> {
    let raw_size = read_u32(body, 24) as usize;
    let raw = body.get(28..28 + raw_size)?.to_vec();
    Some(Sample {
        pid: read_u32(body, 0) as i32,
        tid: read_u32(body, 4) as i32,
        time_ns: read_u64(body, 8),
        cpu: read_u32(body, 16),
        raw,
    })
}

/// One tracepoint to record, with an optional kernel-side filter (ftrace syntax, e.g. `id == 74 || id == 75`):
/// a sample the filter rejects costs the traced task almost nothing and never reaches the ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracepoint {
    /// Id from tracefs.
    pub id: u64,
    /// Filter expression on the record's fields.
    pub filter: Option<String>,
    /// Wake a reader blocked in [`Tracepoints::wait`] at every sample (for events that must be acted on
    /// at once); otherwise only when a ring is a quarter full.
    pub wake_each: bool,
}

/// Whose events to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every task on the machine.
    AllTasks,
    /// These tasks (thread ids) and every task they create from now on (`inherit`): children and new
    /// threads are recorded by the kernel itself, none can slip through.
    Tasks(Vec<i32>),
}

/// A set of tracepoints recorded on every given CPU into one ring per CPU.
pub struct Tracepoints {
    /// Every event fd (kept open: closing one stops it).
    events: Vec<OwnedFd>,
    /// Per CPU (same order as the `cpus` given to `open`): the ring and the fd every event there writes to.
    rings: Vec<Ring>,
    leaders: Vec<i32>,
    cpus: Vec<u32>,
    lost: u64,
    held: Vec<Sample>,
    /// One record's bytes, reused from record to record.
    record: Vec<u8>,
}

/// How long a sample may take from its timestamp to its ring (generous: preemption in between).
pub const REORDER_WINDOW_NS: u64 = 2_000_000;

impl Tracepoints {
    /// Open `points` for `scope` on each CPU in `cpus`, disabled, with a ring of `data_pages` pages (a
    /// power of two) per CPU. `enable` starts them all. A task that has exited meanwhile is skipped.
    pub fn open(points: &[Tracepoint], scope: &Scope, cpus: &[u32], data_pages: usize) -> io::Result<Tracepoints> {
        let mut set = Tracepoints {
            events: Vec::new(),
            rings: Vec::new(),
            leaders: Vec::new(),
            cpus: cpus.to_vec(),
            lost: 0,
            held: Vec::new(),
            record: Vec::new(),
        };
        match scope {
            Scope::AllTasks => set.add(points, -1, data_pages)?,
            Scope::Tasks(tids) => {
                for &tid in tids {
                    match set.add(points, tid, data_pages) {
                        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {} // gone already
                        other => other?,
                    }
                }
            }
        }
        Ok(set)
    }

    /// Record `points` for one more task (`-1`: all tasks) on every CPU, into the existing rings.
    pub fn add(&mut self, points: &[Tracepoint], tid: i32, data_pages: usize) -> io::Result<()> {
        for (i, &cpu) in self.cpus.clone().iter().enumerate() {
            for point in points {
                let fd = open_one(point, tid, cpu, data_pages)?;
                if let Some(filter) = &point.filter {
                    let text = std::ffi::CString::new(filter.as_str()).map_err(io::Error::other)?;
                    // SAFETY: ioctl on our fd with a NUL-terminated string that outlives the call.
                    check(unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_FILTER, text.as_ptr()) })?;
                }
                match self.leaders.get(i) {
                    None => {
                        self.rings.push(Ring::map(&fd, data_pages)?);
                        self.leaders.push(fd.as_raw_fd());
                    }
                    Some(&out) => {
                        // SAFETY: ioctl on an fd we own, argument is another perf fd of ours on the same CPU.
                        check(unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_OUTPUT, out) })?;
                    }
                }
                self.events.push(fd);
            }
        }
        Ok(())
    }

    /// Start every event.
    pub fn enable(&self) -> io::Result<()> {
        self.ioctl_all(IOC_ENABLE)
    }

    /// Stop every event (what is in the rings stays readable).
    pub fn disable(&self) -> io::Result<()> {
        self.ioctl_all(IOC_DISABLE)
    }

    fn ioctl_all(&self, request: libc::c_ulong) -> io::Result<()> {
        for fd in &self.events {
            // SAFETY: ioctl without argument on an fd we own.
            check(unsafe { libc::ioctl(fd.as_raw_fd(), request, 0) })?;
        }
        Ok(())
    }

    /// Block until a ring of any of `sets` has something to read (a `wake_each` sample, or a quarter of
    /// the ring used) or `timeout_ms` passed.
    pub fn wait(sets: &[&Tracepoints], timeout_ms: i32) -> io::Result<()> {
        let mut fds: Vec<libc::pollfd> = sets
            .iter()
            .flat_map(|set| set.leaders.iter())
            .map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
            .collect();
        // SAFETY: a valid array of pollfd of the given length.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if rc == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Every sample written since the last call, in ring order per CPU (not merged across CPUs).
    pub fn drain(&mut self) -> Vec<Sample> {
        let mut out = Vec::new();
        for ring in &mut self.rings {
            ring.drain(&mut out, &mut self.lost, &mut self.record);
        }
        out
    }

    /// Every sample written more than `REORDER_WINDOW_NS` ago, in time order across CPUs; younger ones are
    /// held for the next call (one on another CPU may not be in its ring yet: its timestamp is taken a
    /// moment before it is written). `all` returns everything (after `disable`).
    pub fn drain_ordered(&mut self, all: bool) -> Vec<Sample> {
        self.drain_ordered_seeing(all, |_| {})
    }

    /// [`Self::drain_ordered`], showing `fresh` every sample as soon as it is read from its ring, before it
    /// waits in time order (for what must be acted on at once, such as naming a descriptor just opened).
    pub fn drain_ordered_seeing(&mut self, all: bool, mut fresh: impl FnMut(&Sample)) -> Vec<Sample> {
        let horizon = monotonic_ns().saturating_sub(REORDER_WINDOW_NS);
        let mut samples = std::mem::take(&mut self.held);
        let old = samples.len();
        for ring in &mut self.rings {
            ring.drain(&mut samples, &mut self.lost, &mut self.record);
        }
        samples[old..].iter().for_each(&mut fresh);
        // Each ring is in time order already and the held ones are older: a stable sort of runs is cheap.
        samples.sort_by_key(|s| s.time_ns);
        if !all {
            let ready = samples.partition_point(|s| s.time_ns < horizon);
            self.held = samples.split_off(ready);
        }
        samples
    }

    /// Samples the kernel dropped because a ring was full (the counts are then incomplete).
    pub fn lost(&self) -> u64 {
        self.lost
    }
}

impl PerfEventAttr {
    /// Tracepoint `id`, one sample per hit, opened disabled; the caller sets what else it needs.
    pub(crate) fn tracepoint(id: u64) -> PerfEventAttr {
        PerfEventAttr {
            kind: PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: id,
            sample_period: 1,
            flags: FLAG_DISABLED,
            ..PerfEventAttr::default()
        }
    }

    /// `perf_event_open(2)` of this event for task `tid` (`-1`: every task) on `cpu` (`-1`: every CPU).
    pub(crate) fn open(&self, tid: i32, cpu: i32) -> io::Result<OwnedFd> {
        // SAFETY: self is a valid, fully initialised perf_event_attr of the size it declares.
        let fd = unsafe {
            libc::syscall(libc::SYS_perf_event_open, self as *const PerfEventAttr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC)
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new fd returned by the kernel, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }
}

fn open_one(point: &Tracepoint, tid: i32, cpu: u32, data_pages: usize) -> io::Result<OwnedFd> {
    let inherit = if tid == -1 { 0 } else { FLAG_INHERIT };
    // Wake a waiting reader when a quarter of the ring is used: early enough to drain it before it is full.
    // SAFETY: sysconf has no preconditions.
    let quarter = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize * data_pages / 4) as u32;
    let (watermark, wakeup) = if point.wake_each { (0, 1) } else { (FLAG_WATERMARK, quarter) };
    let attr = PerfEventAttr {
        sample_type: PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW,
        // A wake-up per sample would cost the traced program: only `wake_each` events do that.
        flags: FLAG_DISABLED | watermark | FLAG_USE_CLOCKID | inherit,
        wakeup_watermark: wakeup,
        clockid: libc::CLOCK_MONOTONIC,
        ..PerfEventAttr::tracepoint(point.id)
    };
    attr.open(tid, cpu as i32)
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// The CPUs that can run tasks now, from `/sys/devices/system/cpu/online` (`0-3,6`).
pub fn online_cpus() -> io::Result<Vec<u32>> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_cpu_list(&text).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("cpu list {text:?}")))
}

/// Parse a kernel CPU list (`0-3,6`).
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// Raise the soft limit on open files to the hard limit (one perf event per tracepoint, CPU and task).
pub fn raise_fd_limit() -> io::Result<()> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a valid rlimit to fill, then to set.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    lim.rlim_cur = lim.rlim_max;
    // SAFETY: as above.
    check(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) })
}

/// CLOCK_MONOTONIC now, ns (the clock the samples are stamped with).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_has_the_kernel_size() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 136);
    }

    #[test]
    fn cpu_lists_expand() {
        assert_eq!(parse_cpu_list("0-3,6\n"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("x"), None);
    }

    /// A ring over anonymous memory, with a sample record that wraps at the end of the data area and a
    /// lost record after it: both read back whole, and the tail handed back.
    #[test]
    fn records_wrapping_around_the_ring_are_read_whole() {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = 2 * page;
        // SAFETY: a fresh private anonymous mapping, checked below; the Ring unmaps it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let mut ring = Ring { base: base.cast(), len, data_size: page };
        let mut sample = Vec::new();
        sample.extend(RECORD_SAMPLE.to_ne_bytes());
        sample.extend(0u16.to_ne_bytes());
        sample.extend(40u16.to_ne_bytes());
        for word in [7u32, 8] {
            sample.extend(word.to_ne_bytes());
        }
        sample.extend(99u64.to_ne_bytes());
        for word in [1u32, 0, 4] {
            sample.extend(word.to_ne_bytes());
        }
        sample.extend([0x34, 0x12, 0, 0]);
        let mut lost = Vec::new();
        lost.extend(RECORD_LOST.to_ne_bytes());
        lost.extend(0u16.to_ne_bytes());
        lost.extend(24u16.to_ne_bytes());
        lost.extend(1u64.to_ne_bytes());
        lost.extend(5u64.to_ne_bytes());
        let tail = (3 * page - 16) as u64; // the sample's first 16 bytes end the data area
        let bytes: Vec<u8> = sample.iter().chain(&lost).copied().collect();
        for (i, b) in bytes.iter().enumerate() {
            let at = (tail as usize + i) % page;
            // SAFETY: inside the data area of the mapping.
            unsafe { *ring.base.add(page + at) = *b };
        }
        ring.word(DATA_TAIL).store(tail, Ordering::Relaxed);
        ring.word(DATA_HEAD).store(tail + bytes.len() as u64, Ordering::Relaxed);
        let (mut out, mut lost_count, mut scratch) = (Vec::new(), 0, Vec::new());
        ring.drain(&mut out, &mut lost_count, &mut scratch);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].pid, out[0].tid, out[0].time_ns, out[0].cpu, out[0].event_id()), (7, 8, 99, 1, 0x1234));
        assert_eq!(lost_count, 5);
        assert_eq!(ring.word(DATA_TAIL).load(Ordering::Relaxed), tail + bytes.len() as u64);
    }

    #[test]
    fn sample_bodies_parse() {
        let mut body = Vec::new();
        body.extend(7u32.to_ne_bytes());
        body.extend(8u32.to_ne_bytes());
        body.extend(99u64.to_ne_bytes());
        body.extend(1u32.to_ne_bytes());
        body.extend(0u32.to_ne_bytes());
        body.extend(4u32.to_ne_bytes());
        body.extend([0x34, 0x12, 0, 0]);
        let s = parse_sample(&body).unwrap();
        assert_eq!((s.pid, s.tid, s.time_ns, s.cpu), (7, 8, 99, 1));
        assert_eq!(s.event_id(), 0x1234);
        assert!(parse_sample(&body[..30]).is_none(), "raw size beyond the record");
    }
}
