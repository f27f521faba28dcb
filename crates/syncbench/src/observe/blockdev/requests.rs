//! Every block request issued and completed during a window, from the tracepoints
//! `block:block_rq_issue` and `block:block_rq_complete` (root only): what kind of request it was (its
//! `rwbs` flags) and how long the device took (issue → completion). Read by eBPF programs
//! ([`super::inkernel`]), or by perf events on every CPU, which on some machines miss most completions
//! (docs/trace.md, "The disks"); both give the same records, paired here.

use super::inkernel::{self, BlockPrograms};
use crate::core::stats::Samples;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use syncbench_sys::ftrace;
pub use syncbench_sys::kevents::Lost;
use syncbench_sys::kevents::{BlockRequest, KernelEvent};
use syncbench_sys::perf::{self, Scope, Tracepoint, Tracepoints};
use syncbench_sys::tracefs::{EventFormat, Field, Tracefs};

pub use crate::core::schema::device::{KindReport, RequestReport};

/// The operation of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A write.
    Write,
    /// A read.
    Read,
    /// A cache flush with no data (`REQ_OP_FLUSH`).
    Flush,
    /// Discard, secure erase, write-zeroes, anything else.
    Other,
}

/// The flags of a request, decoded from the tracepoint's `rwbs` text (`FWS`, `WFS`, `FF`, `R`...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rwbs {
    /// What it does.
    pub op: Op,
    /// `REQ_PREFLUSH`: flush the cache before this request.
    pub preflush: bool,
    /// `REQ_FUA`: this write is durable when it completes.
    pub fua: bool,
    /// `REQ_SYNC`.
    pub sync: bool,
}

/// Decode `rwbs` as the kernel's `blk_fill_rwbs` writes it: [F = PREFLUSH] op (W R D DE F N) [F = FUA]
/// [A] [S = SYNC] [M].
pub fn parse_rwbs(text: &str) -> Rwbs {
    let b = text.as_bytes();
    let is_op = |c: u8| matches!(c, b'W' | b'R' | b'D' | b'F' | b'N');
    let preflush = b.len() >= 2 && b[0] == b'F' && is_op(b[1]);
    let rest = &b[usize::from(preflush)..];
    let op = match rest.first() {
        Some(b'W') => Op::Write,
        Some(b'R') => Op::Read,
        Some(b'F') => Op::Flush,
        _ => Op::Other,
    };
    let flags = rest.get(1..).unwrap_or(&[]);
    Rwbs { op, preflush, fua: flags.first() == Some(&b'F'), sync: flags.contains(&b'S') }
}

impl KindReport {
    /// The requests `latency_ns` describes (`count` in files that did not record them apart).
    pub fn timed(&self) -> u64 {
        if self.timed > 0 { self.timed } else { self.count }
    }

    /// Time the device spent on the timed requests, summed one after another (ns).
    pub fn busy_ns(&self) -> f64 {
        self.timed() as f64 * self.latency_ns.mean
    }

    /// Two windows' requests of this kind: counts and bytes summed, the mean weighted, min and max kept,
    /// the other percentiles those of the window with more requests.
    pub fn pooled(&self, other: &KindReport) -> KindReport {
        let count = self.count + other.count;
        let (a, b) = (&self.latency_ns, &other.latency_ns);
        let (ta, tb) = (self.timed(), other.timed());
        let mut latency_ns = if ta >= tb { *a } else { *b };
        if ta + tb > 0 {
            latency_ns.mean = (a.mean * ta as f64 + b.mean * tb as f64) / (ta + tb) as f64;
            latency_ns.min =
                [(a.min, ta), (b.min, tb)].iter().filter(|(_, n)| *n > 0).map(|(m, _)| *m).min().unwrap_or(0);
            latency_ns.max = a.max.max(b.max);
        }
        KindReport { count, bytes: self.bytes + other.bytes, latency_ns, timed: ta + tb }
    }
}

/// The requests of one disk as recorded: mergeable across windows (a case's rounds), reported at the end.
#[derive(Clone, Debug, Default)]
pub struct DiskRequests {
    flushes: Samples,
    flush_bytes: u64,
    writes: Samples,
    write_bytes: u64,
    reads: Samples,
    read_bytes: u64,
    fua_writes: u64,
    sync_writes: u64,
    preflush_writes: u64,
    errors: u64,
    unmatched: u64,
    /// Completions whose issue was not seen: counted, without a latency.
    unpaired_writes: u64,
    unpaired_flushes: u64,
    /// Zero-sector write completions (see [`RequestReport::flush_carriers`]).
    flush_carriers: u64,
    /// Issued, not yet completed: (sector, sectors, op) → issue times, oldest first.
    in_flight: HashMap<(u64, u64, Op), VecDeque<(u64, u64)>>,
}

impl RequestReport {
    /// Two windows' reports in one (see [`KindReport::pooled`]).
    pub fn pooled(&self, other: &RequestReport) -> RequestReport {
        RequestReport {
            flushes: self.flushes.pooled(&other.flushes),
            writes: self.writes.pooled(&other.writes),
            fua_writes: self.fua_writes + other.fua_writes,
            sync_writes: self.sync_writes + other.sync_writes,
            preflush_writes: self.preflush_writes + other.preflush_writes,
            reads: self.reads.pooled(&other.reads),
            errors: self.errors + other.errors,
            unmatched: self.unmatched + other.unmatched,
            flush_carriers: self.flush_carriers + other.flush_carriers,
        }
    }
}

impl DiskRequests {
    fn issued(&mut self, sector: u64, sectors: u64, bytes: u64, rwbs: Rwbs, time_ns: u64) {
        self.in_flight.entry(key(sector, sectors, rwbs.op)).or_default().push_back((time_ns, bytes));
        if rwbs.op == Op::Write {
            self.fua_writes += u64::from(rwbs.fua);
            self.sync_writes += u64::from(rwbs.sync);
            self.preflush_writes += u64::from(rwbs.preflush);
        }
    }

    fn completed(&mut self, sector: u64, sectors: u64, rwbs: Rwbs, error: bool, time_ns: u64) {
        self.errors += u64::from(error);
        // A request is completed with the sector and size it was issued with. The newest issue is taken,
        // not the oldest: an issue whose completion was lost (ring full) must not shift every later pair.
        // Two writes of one sector in flight at once are rare, so older ones are such leftovers; two
        // flushes can be in flight (one per hardware queue), so a few older flushes are kept.
        let queue = self.in_flight.entry(key(sector, sectors, rwbs.op)).or_default();
        let newest = queue.pop_back();
        let keep = if rwbs.op == Op::Flush { MAX_FLUSHES_IN_FLIGHT } else { 0 };
        while queue.len() > keep {
            queue.pop_front();
            self.unmatched += 1;
        }
        let Some((issued_ns, bytes)) = newest else {
            // A zero-sector write completion is the flush machinery's, not a lost issue: an empty PREFLUSH
            // request (an fsync's) is never issued itself (a flush request is, for it), and a flushed data
            // write on a device without FUA completes once more, empty, after its post-flush.
            let lost_issue = sectors != 0 || rwbs.op == Op::Flush;
            self.unmatched += u64::from(lost_issue);
            // Still a request the device completed in the window (as the kernel's counters count it): counted,
            // with its bytes, but no latency.
            match rwbs.op {
                Op::Write if sectors == 0 => self.flush_carriers += 1,
                Op::Write => (self.unpaired_writes += 1, self.write_bytes += sectors * 512).1,
                Op::Flush => self.unpaired_flushes += 1,
                _ => {}
            }
            return;
        };
        let ns = time_ns.saturating_sub(issued_ns);
        match rwbs.op {
            Op::Flush => (self.flushes.record(ns), self.flush_bytes += bytes).1,
            Op::Write => (self.writes.record(ns), self.write_bytes += bytes).1,
            Op::Read => (self.reads.record(ns), self.read_bytes += bytes).1,
            Op::Other => {}
        }
    }

    /// Add another window's requests (requests still in flight at its end count as unmatched).
    pub fn merge(&mut self, other: &DiskRequests) {
        self.flushes.merge(&other.flushes);
        self.writes.merge(&other.writes);
        self.reads.merge(&other.reads);
        self.flush_bytes += other.flush_bytes;
        self.write_bytes += other.write_bytes;
        self.read_bytes += other.read_bytes;
        self.fua_writes += other.fua_writes;
        self.sync_writes += other.sync_writes;
        self.preflush_writes += other.preflush_writes;
        self.errors += other.errors;
        self.unpaired_writes += other.unpaired_writes;
        self.unpaired_flushes += other.unpaired_flushes;
        self.flush_carriers += other.flush_carriers;
        self.unmatched += other.unmatched + other.in_flight.values().map(|q| q.len() as u64).sum::<u64>();
    }

    /// Counts, bytes and device-side latency.
    pub fn report(&self) -> RequestReport {
        let kind = |s: &Samples, bytes, unpaired: u64| KindReport {
            count: s.count() + unpaired,
            bytes,
            latency_ns: s.latency(),
            timed: s.count(),
        };
        RequestReport {
            flushes: kind(&self.flushes, self.flush_bytes, self.unpaired_flushes),
            writes: kind(&self.writes, self.write_bytes, self.unpaired_writes),
            fua_writes: self.fua_writes,
            sync_writes: self.sync_writes,
            preflush_writes: self.preflush_writes,
            reads: kind(&self.reads, self.read_bytes, 0),
            errors: self.errors,
            unmatched: self.unmatched + self.in_flight.values().map(|q| q.len() as u64).sum::<u64>(),
            flush_carriers: self.flush_carriers,
        }
    }
}

/// Flushes kept waiting for their completion per disk (more are leftovers of lost samples).
const MAX_FLUSHES_IN_FLIGHT: usize = 8;

/// How an issue is found again at completion. A flush has no sector (the completion reports it as
/// `u64::MAX`, the issue as 0), so flushes pair first in, first out.
fn key(sector: u64, sectors: u64, op: Op) -> (u64, u64, Op) {
    if op == Op::Flush { (0, 0, op) } else { (sector, sectors, op) }
}

/// Record layout of the two tracepoints.
struct Layout {
    issue_id: u64,
    complete_id: u64,
    dev: Field,
    sector: Field,
    nr_sector: Field,
    bytes: Field,
    rwbs: Field,
    c_dev: Field,
    c_sector: Field,
    c_nr_sector: Field,
    c_rwbs: Field,
    c_error: Field,
}

/// What reads the tracepoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// eBPF programs (no record is lost to perf's sampling path; see [`super::inkernel`]).
    Bpf,
    /// perf events on every CPU.
    Perf,
    /// A private ftrace instance's rings (see `syncbench_sys::ftrace`): the reader that sees every hit on
    /// the project VM, where no BPF program runs while the VM agent's threads are current.
    Ftrace,
}

impl Mechanism {
    /// How reports name it.
    pub fn describe(self) -> &'static str {
        match self {
            Mechanism::Bpf => "eBPF programs on the block tracepoints",
            Mechanism::Perf => "perf_event block tracepoints",
            Mechanism::Ftrace => "an ftrace instance on the block tracepoints",
        }
    }

    /// How the JSON names it (`trace_reader`).
    pub fn token(self) -> &'static str {
        match self {
            Mechanism::Bpf => "bpf",
            Mechanism::Perf => "perf",
            Mechanism::Ftrace => "ftrace",
        }
    }
}

enum Source {
    Perf(Tracepoints),
    Bpf(BlockPrograms),
    Ftrace(FtraceRings),
}

/// How far behind the newest record read a record must be before it is paired during a window: the
/// per-CPU rings are drained one after another, so a later ring can hold records a little older than
/// an earlier ring's newest (a drain takes milliseconds; a second is ample).
const PAIRING_SLACK_NS: u64 = 1_000_000_000;

/// An ftrace instance, what was read from it so far (handled in time order when the window closes), and
/// the first read that failed (reported by [`BlockTrace::finish_raw`]: the counts would be short).
struct FtraceRings {
    instance: ftrace::Instance,
    held: Vec<ftrace::Record>,
    failed: Option<io::Error>,
}

/// Names of this process's ftrace instances start with it (and `syncbench cleanup` finds them by it).
pub const FTRACE_PREFIX: &str = "syncbench-";
static FTRACE_SEQ: AtomicU64 = AtomicU64::new(0);
/// Instances to remove if a signal ends the process before their `Drop` runs.
static LIVE_INSTANCES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

impl Drop for FtraceRings {
    fn drop(&mut self) {
        let dir = self.instance.dir();
        LIVE_INSTANCES.lock().unwrap_or_else(|p| p.into_inner()).retain(|d| d != dir);
    }
}

/// The ftrace instances of syncbench processes that are gone.
pub fn stale_instances(tracefs: &Tracefs) -> Vec<PathBuf> {
    ftrace::stale_instances(tracefs.root(), FTRACE_PREFIX)
}

/// Remove the ftrace instances of syncbench processes that are gone (killed before their `Drop` and signal
/// hook ran): one line per instance, removed or not.
pub fn remove_stale_instances(tracefs: &Tracefs) -> Vec<Result<String, String>> {
    stale_instances(tracefs)
        .iter()
        .map(|dir| {
            ftrace::remove(dir);
            match dir.exists() {
                false => Ok(format!("removed ftrace instance {}", dir.display())),
                true => {
                    Err(format!("could not remove ftrace instance {} (rmdir it when nothing reads it)", dir.display()))
                }
            }
        })
        .collect()
}

/// Remove every ftrace instance this process still has (a signal hook: `Drop` will not run).
pub fn remove_live_instances() {
    for dir in LIVE_INSTANCES.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
        ftrace::remove(&dir);
    }
}

/// Block requests being recorded on every CPU.
pub struct BlockTrace {
    source: Source,
    layout: Layout,
    /// Per kernel dev_t (`MAJOR << 20 | MINOR`).
    disks: BTreeMap<u64, DiskRequests>,
}

impl BlockTrace {
    /// Open and enable the two tracepoints on every online CPU (root; tracefs mounted by `tracefs`).
    pub fn start(tracefs: &Tracefs) -> io::Result<BlockTrace> {
        BlockTrace::start_with_pages(tracefs, 256)
    }

    /// [`BlockTrace::start`] with `data_pages` per CPU ring (a power of two): rings big enough to hold a
    /// whole window need no reading during it.
    pub fn start_with_pages(tracefs: &Tracefs, data_pages: usize) -> io::Result<BlockTrace> {
        let mut trace = BlockTrace::prepare_perf(tracefs, data_pages)?;
        trace.resume()?;
        Ok(trace)
    }

    /// The perf events opened on every online CPU, not recording until [`BlockTrace::resume`].
    pub fn prepare_perf(tracefs: &Tracefs, data_pages: usize) -> io::Result<BlockTrace> {
        let (issue, complete, layout) = layout(tracefs)?;
        let points = [issue.id, complete.id].map(|id| Tracepoint { id, filter: None, wake_each: false });
        let events = Tracepoints::open(&points, &Scope::AllTasks, &perf::online_cpus()?, data_pages)?;
        Ok(BlockTrace { source: Source::Perf(events), layout, disks: BTreeMap::new() })
    }

    /// Load eBPF programs on the two tracepoints and record from now on (root; BPF ring buffers, Linux
    /// 5.8). Read them ([`BlockTrace::poll`]) before ~32,000 requests pile up: the ring holds 65,536
    /// records of 64 bytes, an issue and a completion each (`trace` reads it every 50 ms).
    pub fn start_bpf(tracefs: &Tracefs) -> io::Result<BlockTrace> {
        let mut trace = BlockTrace::prepare_bpf(tracefs, inkernel::RING_BYTES)?;
        trace.resume()?;
        Ok(trace)
    }

    /// The eBPF programs loaded and attached with a ring of `ring_bytes` (a power of two), not recording
    /// until [`BlockTrace::resume`] (switching them on is a map update: the window's edges are tight).
    pub fn prepare_bpf(tracefs: &Tracefs, ring_bytes: u32) -> io::Result<BlockTrace> {
        let (issue, complete, layout) = layout(tracefs)?;
        let issue_len = inkernel::copy_len(&issue, &["dev", "sector", "nr_sector", "bytes", "rwbs"])?;
        let complete_len = inkernel::copy_len(&complete, &["dev", "sector", "nr_sector", "error", "rwbs"])?;
        let programs = BlockPrograms::start(&[(&issue, issue_len), (&complete, complete_len)], ring_bytes)?;
        Ok(BlockTrace { source: Source::Bpf(programs), layout, disks: BTreeMap::new() })
    }

    /// A private ftrace instance recording the two tracepoints into rings of `buffer_kb` KiB per CPU, not
    /// recording until [`BlockTrace::resume`] (a write to its `tracing_on`). Removed when dropped, and
    /// by the signal hook [`remove_live_instances`] if the process is stopped first.
    pub fn prepare_ftrace(tracefs: &Tracefs, buffer_kb: u32) -> io::Result<BlockTrace> {
        let (_, _, layout) = layout(tracefs)?;
        // A killed syncbench's instance would record every request for as long as the machine runs.
        let _ = remove_stale_instances(tracefs);
        let name = format!("{FTRACE_PREFIX}{}-{}", std::process::id(), FTRACE_SEQ.fetch_add(1, Ordering::Relaxed));
        let events = [("block", "block_rq_issue"), ("block", "block_rq_complete")];
        let instance = ftrace::Instance::create(tracefs.root(), &name, &events, buffer_kb)?;
        LIVE_INSTANCES.lock().unwrap_or_else(|p| p.into_inner()).push(instance.dir().to_path_buf());
        let rings = FtraceRings { instance, held: Vec::new(), failed: None };
        Ok(BlockTrace { source: Source::Ftrace(rings), layout, disks: BTreeMap::new() })
    }

    /// Start recording.
    pub fn resume(&mut self) -> io::Result<()> {
        match &mut self.source {
            Source::Perf(events) => events.enable(),
            Source::Bpf(programs) => programs.set_on(true),
            Source::Ftrace(rings) => rings.instance.set_on(true),
        }
    }

    /// Where the ftrace instance recording the requests lives, if one does.
    pub fn ftrace_dir(&self) -> Option<&std::path::Path> {
        match &self.source {
            Source::Ftrace(rings) => Some(rings.instance.dir()),
            _ => None,
        }
    }

    /// What records the requests.
    pub fn mechanism(&self) -> Mechanism {
        match self.source {
            Source::Perf(_) => Mechanism::Perf,
            Source::Bpf(_) => Mechanism::Bpf,
            Source::Ftrace(..) => Mechanism::Ftrace,
        }
    }

    /// Read what the rings hold (call often enough that they do not fill: every 100 ms is plenty).
    pub fn poll(&mut self) {
        self.read(false);
    }

    fn read(&mut self, all: bool) {
        let (layout, disks) = (&self.layout, &mut self.disks);
        let mut handle = |time_ns, raw: &[u8]| {
            if let Some(event) = layout.decode(time_ns, raw) {
                handle(disks, &event);
            }
        };
        match &mut self.source {
            // Issue and completion of one request can be on different CPUs: time order pairs them.
            Source::Perf(events) => events.drain_ordered(all).iter().for_each(|s| handle(s.time_ns, &s.raw)),
            // One ring in commit order: an issue is committed before its request can complete.
            Source::Bpf(programs) => programs.drain(all, handle),
            // Per-CPU rings: what is read is held until the window closes, then paired in time order
            // (a stable sort keeps each CPU's order for equal times). A failed read shows as a shortfall.
            Source::Ftrace(rings) => {
                if let Err(e) = rings.instance.drain(&mut rings.held) {
                    rings.failed.get_or_insert(e);
                }
                rings.held.sort_by_key(|r| r.time_ns);
                // A long trace cannot hold every record to the end: those older than the newest by
                // more than PAIRING_SLACK_NS are paired now. Every ring was drained to the same moment,
                // so no record still in a ring is that much older than one already read.
                let newest = rings.held.last().map_or(0, |r| r.time_ns);
                let ready = match all {
                    true => rings.held.len(),
                    false => rings.held.partition_point(|r| r.time_ns.saturating_add(PAIRING_SLACK_NS) < newest),
                };
                rings.held.drain(..ready).for_each(|r| handle(r.time_ns, &r.raw));
            }
        }
    }

    /// Stop recording (perf: disable the events; eBPF: switch the programs off).
    fn disable(&mut self) -> io::Result<()> {
        match &mut self.source {
            Source::Perf(events) => events.disable(),
            Source::Bpf(programs) => programs.set_on(false),
            Source::Ftrace(rings) => rings.instance.set_on(false),
        }
    }

    /// Hits not recorded (see [`Lost`]).
    fn lost(&self) -> io::Result<Lost> {
        match &self.source {
            Source::Perf(events) => Ok(Lost { dropped: events.lost(), skipped: Some(0) }),
            Source::Bpf(programs) => programs.lost(),
            // The rings count what they had no room for; no hit is skipped as BPF programs' runs are.
            Source::Ftrace(rings) => match &rings.failed {
                Some(e) => Err(io::Error::new(e.kind(), format!("reading the ftrace rings: {e}"))),
                None => Ok(Lost { dropped: rings.instance.lost()?, skipped: Some(0) }),
            },
        }
    }

    /// Stop, read the rest, and report per kernel dev_t (see [`super::Disk::kernel_devt`]), with the hits
    /// not recorded.
    pub fn finish(mut self) -> io::Result<(BTreeMap<u64, RequestReport>, Lost)> {
        self.disable()?;
        self.read(true);
        let lost = self.lost()?;
        Ok((self.disks.iter().map(|(dev, d)| (*dev, d.report())).collect(), lost))
    }

    /// Stop recording (what the rings hold is read by [`BlockTrace::finish_raw`]).
    pub fn stop(&mut self) -> io::Result<()> {
        self.disable()
    }

    /// Stop, read the rest, and return the raw per-disk records (to merge with other windows') and the
    /// hits not recorded (`skipped` unknown on eBPF before Linux 6.7: the caller says so).
    pub fn finish_raw(mut self) -> io::Result<(BTreeMap<u64, DiskRequests>, Lost)> {
        self.disable()?;
        self.read(true);
        let lost = self.lost()?;
        Ok((std::mem::take(&mut self.disks), lost))
    }
}

/// One block event into its disk's requests.
fn handle(disks: &mut BTreeMap<u64, DiskRequests>, event: &KernelEvent) {
    match event {
        KernelEvent::BlockIssue(r) => {
            let rwbs = parse_rwbs(r.rwbs_text());
            disks.entry(r.dev).or_default().issued(r.sector, r.sectors, r.bytes, rwbs, r.time_ns);
        }
        KernelEvent::BlockComplete(r) => {
            let rwbs = parse_rwbs(r.rwbs_text());
            disks.entry(r.dev).or_default().completed(r.sector, r.sectors, rwbs, r.error != 0, r.time_ns);
        }
        _ => {}
    }
}

impl Layout {
    /// The event of one tracepoint record (`raw`, from `common_type` on, as a perf sample or the eBPF
    /// programs' copy hold it), stamped `time_ns`; `None` for another tracepoint's.
    fn decode(&self, time_ns: u64, raw: &[u8]) -> Option<KernelEvent> {
        let id = u64::from(u16::from_ne_bytes(raw.get(..2)?.try_into().ok()?));
        let rwbs = |f: &Field| {
            let mut bytes = [0u8; 8];
            let text = f.text(raw).as_bytes();
            bytes[..text.len().min(8)].copy_from_slice(&text[..text.len().min(8)]);
            bytes
        };
        if id == self.issue_id {
            Some(KernelEvent::BlockIssue(BlockRequest {
                time_ns,
                dev: self.dev.uint(raw),
                sector: self.sector.uint(raw),
                sectors: self.nr_sector.uint(raw),
                bytes: self.bytes.uint(raw),
                error: 0,
                rwbs: rwbs(&self.rwbs),
            }))
        } else if id == self.complete_id {
            Some(KernelEvent::BlockComplete(BlockRequest {
                time_ns,
                dev: self.c_dev.uint(raw),
                sector: self.c_sector.uint(raw),
                sectors: self.c_nr_sector.uint(raw),
                bytes: 0,
                error: self.c_error.int(raw),
                rwbs: rwbs(&self.c_rwbs),
            }))
        } else {
            None
        }
    }
}

/// The two tracepoints' formats and where their fields are.
fn layout(tracefs: &Tracefs) -> io::Result<(EventFormat, EventFormat, Layout)> {
    let issue = tracefs.event("block", "block_rq_issue")?;
    let complete = tracefs.event("block", "block_rq_complete")?;
    let layout = Layout {
        issue_id: issue.id,
        complete_id: complete.id,
        dev: issue.field("dev")?,
        sector: issue.field("sector")?,
        nr_sector: issue.field("nr_sector")?,
        bytes: issue.field("bytes")?,
        rwbs: issue.field("rwbs")?,
        c_dev: complete.field("dev")?,
        c_sector: complete.field("sector")?,
        c_nr_sector: complete.field("nr_sector")?,
        c_rwbs: complete.field("rwbs")?,
        c_error: complete.field("error")?,
    };
    Ok((issue, complete, layout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwbs_decodes_preflush_fua_and_flush() {
        let r = parse_rwbs("FWS");
        assert_eq!((r.op, r.preflush, r.fua, r.sync), (Op::Write, true, false, true));
        let r = parse_rwbs("WFS");
        assert_eq!((r.op, r.preflush, r.fua, r.sync), (Op::Write, false, true, true));
        assert_eq!(parse_rwbs("FF"), Rwbs { op: Op::Flush, preflush: true, fua: false, sync: false });
        assert_eq!(parse_rwbs("F").op, Op::Flush);
        assert_eq!(parse_rwbs("FS"), Rwbs { op: Op::Flush, preflush: false, fua: false, sync: true });
        assert_eq!(parse_rwbs("RA").op, Op::Read);
        assert_eq!(parse_rwbs("DS").op, Op::Other);
        assert_eq!(parse_rwbs("").op, Op::Other);
    }

    #[test]
    fn issue_and_completion_pair_up_first_in_first_out() {
        let mut d = DiskRequests::default();
        let flush = parse_rwbs("FF");
        let write = parse_rwbs("WS");
        d.issued(0, 0, 0, flush, 1_000);
        d.issued(8, 8, 4096, write, 1_500);
        d.completed(8, 8, write, false, 2_500);
        d.completed(u64::MAX, 0, flush, false, 4_000);
        d.completed(0, 0, write, false, 4_001); // the fsync's empty PREFLUSH request: never issued itself
        d.issued(0, 0, 0, flush, 5_000);
        d.completed(u64::MAX, 0, flush, false, 5_500);
        d.completed(16, 8, write, true, 6_000); // issued before the window
        let r = d.report();
        assert_eq!((r.flushes.count, r.flushes.latency_ns.max, r.flushes.latency_ns.min), (2, 3_000, 500));
        // The write issued before the window is counted (the kernel's counters do) without a latency.
        assert_eq!((r.writes.count, r.writes.bytes, r.writes.latency_ns.p50), (2, 8192, 1_000));
        assert_eq!((r.sync_writes, r.errors, r.unmatched, r.flush_carriers), (1, 1, 1, 1));
    }

    #[test]
    fn a_lost_completion_does_not_shift_later_pairs() {
        let mut d = DiskRequests::default();
        let write = parse_rwbs("WS");
        d.issued(8, 8, 4096, write, 1_000); // its completion is lost
        d.issued(8, 8, 4096, write, 50_000);
        d.completed(8, 8, write, false, 50_300);
        d.issued(8, 8, 4096, write, 60_000);
        d.completed(8, 8, write, false, 60_200);
        let r = d.report();
        assert_eq!((r.writes.count, r.writes.latency_ns.max, r.unmatched), (2, 300, 1));
    }
}
