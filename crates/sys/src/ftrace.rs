//! A private ftrace instance (`instances/NAME` in tracefs): its own per-CPU ring buffers recording chosen
//! tracepoints, switched on and off by `tracing_on`, read in binary from `per_cpu/cpuN/trace_pipe_raw`.
//!
//! Why a third reader beside perf events and eBPF programs: on the project VM (Linux 6.18, KVM) no BPF
//! program runs for a tracepoint hit while one of PID 1's threads is the current task, in any context
//! (a block completion's softirq that interrupts it included), and the kernel counts no miss; the ftrace
//! ring records those hits (docs/trace.md, "The disks"). The ring writes the tracepoint's own record (from
//! `common_type` on, as a perf sample holds it), so the callers decode records the same way.
//!
//! Page format (`events/header_page`, `events/header_event`): an 8-byte time stamp, an 8-byte `commit`
//! (data bytes in its low 30 bits; bit 31: events were lost before this page, bit 30: their count is
//! stored after the data), then events, each a 32-bit header (`type_len`: 5 bits, `time_delta`: 27 bits)
//! and its data. `type_len` 1–28: data of `4 × type_len` bytes follows; 0: the next 32 bits hold the
//! length (+4) and data follows them; 29: padding (a zero delta ends the page); 30: a time extend; 31: an
//! absolute time stamp.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// One tracepoint hit as the ring holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Time (the instance's `trace_clock`: `mono` is CLOCK_MONOTONIC ns, as perf samples and
    /// `bpf_ktime_get_ns` are stamped).
    pub time_ns: u64,
    /// CPU whose ring held it.
    pub cpu: u32,
    /// The tracepoint's record from `common_type` on (padded to 4 bytes).
    pub raw: Vec<u8>,
}

/// A tracing instance of this process: removed (events off, directory deleted) on drop.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    events: Vec<(String, String)>,
    page_bytes: usize,
    /// Pages that said events were lost before them (their count is in `per_cpu/*/stats` too).
    pages_missed: u64,
}

const MISSED_EVENTS: u64 = 1 << 31;
const COMMIT_SIZE_MASK: u64 = (1 << 30) - 1;
const PAGE_HEADER: usize = 16;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;

impl Instance {
    /// Create instance `name` under the tracefs at `root` with `buffer_kb` KiB per CPU, the `events`
    /// (`(group, name)`) enabled and tracing off; an instance of that name already there is an error.
    pub fn create(root: &Path, name: &str, events: &[(&str, &str)], buffer_kb: u32) -> io::Result<Instance> {
        let dir = root.join("instances").join(name);
        std::fs::create_dir(&dir)?;
        let events = events.iter().map(|(g, n)| (g.to_string(), n.to_string())).collect();
        // From here on, dropping it removes the directory again.
        let mut instance = Instance { dir, events, page_bytes: 4096, pages_missed: 0 };
        instance.write("tracing_on", "0")?;
        instance.write("trace_clock", "mono")?;
        instance.write("buffer_size_kb", &buffer_kb.to_string())?;
        for (group, event) in instance.events.clone() {
            instance.write(&format!("events/{group}/{event}/enable"), "1")?;
        }
        instance.page_bytes = page_bytes(&std::fs::read_to_string(root.join("events/header_page"))?);
        instance.clear()?;
        Ok(instance)
    }

    /// Where it lives.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&self, file: &str, value: &str) -> io::Result<()> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.dir.join(file).display())))
    }

    /// Empty every CPU's ring and zero its counters.
    pub fn clear(&mut self) -> io::Result<()> {
        self.pages_missed = 0;
        OpenOptions::new().write(true).truncate(true).open(self.dir.join("trace")).map(drop)
    }

    /// Record from now on, or stop.
    pub fn set_on(&self, on: bool) -> io::Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// Read everything the rings hold into `out` (each CPU's records in time order, CPUs one after
    /// another). The files are open only while reading, so that a signal handler can remove the instance.
    pub fn drain(&mut self, out: &mut Vec<Record>) -> io::Result<()> {
        let mut page = vec![0u8; self.page_bytes];
        for (cpu, path) in cpu_pipes(&self.dir)? {
            let mut pipe = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&path)?;
            loop {
                match read_page(&mut pipe, &mut page) {
                    Ok(0) => break,
                    Ok(n) => self.pages_missed += u64::from(parse_page(&page[..n], cpu, out)),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Hits the rings had no room for since the last [`Instance::clear`] (`overrun` and `dropped events`
    /// of every CPU's `stats`; at least one per page that said events were lost before it).
    pub fn lost(&self) -> io::Result<u64> {
        let mut lost = 0;
        for (_, pipe) in cpu_pipes(&self.dir)? {
            let stats = std::fs::read_to_string(pipe.with_file_name("stats"))?;
            lost += stats_lost(&stats);
        }
        Ok(lost.max(self.pages_missed))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        remove(&self.dir);
    }
}

/// Switch off and delete the instance at `dir` (best effort: for `Drop` and signal handlers).
pub fn remove(dir: &Path) {
    let _ = std::fs::write(dir.join("tracing_on"), "0");
    // Deleting an instance disables its events; a busy one (a file still open) stays, switched off.
    let _ = std::fs::remove_dir(dir);
}

/// Instances under the tracefs at `root` named `PREFIX<pid>-<n>` whose process is gone: left by a process
/// killed before it could remove them.
pub fn stale_instances(root: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join("instances")) else { return Vec::new() };
    let owner = |name: &str| -> Option<u32> {
        let (pid, n) = name.strip_prefix(prefix)?.split_once('-')?;
        n.parse::<u64>().ok()?;
        pid.parse().ok()
    };
    let mut stale: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().and_then(owner).is_some_and(process_gone))
        .map(|e| e.path())
        .collect();
    stale.sort();
    stale
}

/// Whether `pid` has exited: no such process, or a zombie its parent has not reaped yet (a killed
/// syncbench whose shell or test harness has not waited for it yet no longer reads its instance).
fn process_gone(pid: u32) -> bool {
    !crate::process::is_running(pid)
}

fn read_page(pipe: &mut File, page: &mut [u8]) -> io::Result<usize> {
    loop {
        match pipe.read(page) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// `(cpu, per_cpu/cpuN/trace_pipe_raw)` of every CPU the instance has a ring for.
fn cpu_pipes(dir: &Path) -> io::Result<Vec<(u32, PathBuf)>> {
    let mut pipes = Vec::new();
    for entry in std::fs::read_dir(dir.join("per_cpu"))? {
        let entry = entry?;
        let name = entry.file_name();
        if let Some(cpu) = name.to_str().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse().ok()) {
            pipes.push((cpu, entry.path().join("trace_pipe_raw")));
        }
    }
    pipes.sort();
    Ok(pipes)
}

/// Bytes of a ring page from `events/header_page` (the `data` field's offset + size; 4096 if unreadable).
pub fn page_bytes(header_page: &str) -> usize {
    let field = |line: &str, key: &str| -> Option<usize> {
        let part = line.split(';').find(|p| p.trim().starts_with(key))?;
        part.trim().strip_prefix(key)?.parse().ok()
    };
    header_page
        .lines()
        .find(|l| l.contains(" data;"))
        .and_then(|l| Some(field(l, "offset:")? + field(l, "size:")?))
        .unwrap_or(4096)
}

/// Records lost per a CPU's `stats` file (`overrun` + `dropped events`).
pub fn stats_lost(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| l.strip_prefix("overrun:").or_else(|| l.strip_prefix("dropped events:")))
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum()
}

fn u32_at(page: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(page.get(at..at + 4)?.try_into().ok()?))
}

/// Append the records of one ring page (as `trace_pipe_raw` returns it) to `out`; whether the page said
/// events were lost before it. A page cut short ends at its last whole event.
pub fn parse_page(page: &[u8], cpu: u32, out: &mut Vec<Record>) -> bool {
    let Some(header) = page.get(..PAGE_HEADER) else { return false };
    let page_ts = u64::from_ne_bytes(header[..8].try_into().expect("8 bytes"));
    let commit = u64::from_ne_bytes(header[8..16].try_into().expect("8 bytes"));
    let end = (PAGE_HEADER + (commit & COMMIT_SIZE_MASK) as usize).min(page.len());
    let (mut ts, mut at) = (page_ts, PAGE_HEADER);
    while let Some(word) = u32_at(page, at).filter(|_| at + 4 <= end) {
        let (type_len, delta) = (word & 0x1f, u64::from(word >> 5));
        let array0 = u32_at(page, at + 4).map(u64::from);
        match type_len {
            TYPE_PADDING if delta == 0 => break,
            TYPE_PADDING => at += 4 + array0.unwrap_or(u64::MAX) as usize,
            TYPE_TIME_EXTEND => {
                ts += (array0.unwrap_or(0) << TS_SHIFT) | delta;
                at += 8;
            }
            TYPE_TIME_STAMP => {
                ts = absolute_ts((array0.unwrap_or(0) << TS_SHIFT) | delta, page_ts);
                at += 8;
            }
            _ => {
                ts += delta;
                let (data, len) = match type_len {
                    0 => (at + 8, array0.map_or(0, |l| l.saturating_sub(4) as usize)),
                    n => (at + 4, 4 * n as usize),
                };
                let Some(raw) = page.get(data..data + len).filter(|_| data + len <= end) else { break };
                out.push(Record { time_ns: ts, cpu, raw: raw.to_vec() });
                at = data + len.next_multiple_of(4);
            }
        }
    }
    commit & MISSED_EVENTS != 0
}

/// An absolute time stamp holds the low 59 bits; the page's time stamp gives the rest.
fn absolute_ts(low: u64, page_ts: u64) -> u64 {
    const MSB: u64 = !((1 << 59) - 1);
    let ts = low | (page_ts & MSB);
    if ts < page_ts && page_ts & MSB != 0 { ts + (1 << 59) } else { ts }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(type_len: u32, delta: u32) -> [u8; 4] {
        (type_len | (delta << 5)).to_ne_bytes()
    }

    /// A page of: a 12-byte event (+100 ns), a time extend (+2^27 + 5 ns), a long event (type 0, 120
    /// bytes, +7 ns), a discarded event (padding with a length), an event, then end-of-page padding.
    fn page(missed: bool) -> Vec<u8> {
        let mut data = Vec::new();
        data.extend(header(3, 100));
        data.extend([1u8; 12]);
        data.extend(header(TYPE_TIME_EXTEND, 5));
        data.extend(1u32.to_ne_bytes());
        data.extend(header(0, 7));
        data.extend(124u32.to_ne_bytes());
        data.extend([2u8; 120]);
        data.extend(header(TYPE_PADDING, 1));
        data.extend(12u32.to_ne_bytes()); // what follows the header: its own length word and 8 bytes
        data.extend([9u8; 8]);
        data.extend(header(1, 3));
        data.extend([3u8; 4]);
        data.extend(header(TYPE_PADDING, 0));
        let mut page = 1_000u64.to_ne_bytes().to_vec();
        let commit = data.len() as u64 | if missed { MISSED_EVENTS } else { 0 };
        page.extend(commit.to_ne_bytes());
        page.extend(data);
        page.resize(4096, 0xee);
        page
    }

    #[test]
    fn events_of_every_kind_are_read_with_their_times() {
        let mut out = Vec::new();
        assert!(!parse_page(&page(false), 1, &mut out));
        let got: Vec<(u64, usize, u8)> = out.iter().map(|r| (r.time_ns, r.raw.len(), r.raw[0])).collect();
        let t1 = 1_100;
        let t2 = t1 + (1 << 27) + 5 + 7;
        assert_eq!(got, vec![(t1, 12, 1), (t2, 120, 2), (t2 + 3, 4, 3)]);
        assert!(out.iter().all(|r| r.cpu == 1));
    }

    #[test]
    fn a_page_says_when_events_were_lost_before_it_and_a_cut_page_ends_cleanly() {
        let mut out = Vec::new();
        assert!(parse_page(&page(true), 0, &mut out));
        let mut cut = Vec::new();
        parse_page(&page(false)[..16 + 4 + 12 + 8 + 30], 0, &mut cut);
        assert_eq!(cut.len(), 1, "only the first whole event");
        assert!(!parse_page(&[0u8; 8], 0, &mut cut), "a page shorter than its header is nothing");
    }

    #[test]
    fn an_absolute_time_stamp_takes_the_pages_high_bits() {
        assert_eq!(absolute_ts(500, 400), 500);
        let high = 3u64 << 59;
        assert_eq!(absolute_ts(500, high | 400), high | 500);
        // Wrapped past the low bits since the page began.
        assert_eq!(absolute_ts(5, high | 400), (high | 5) + (1 << 59));
    }

    #[test]
    fn stale_instances_are_those_of_processes_that_are_gone_and_named_as_ours() {
        let root = tempfile::tempdir().unwrap();
        let dead = u32::MAX - 1; // above any pid_max: no such process
        let own = std::process::id();
        for name in [format!("x-{dead}-0"), format!("x-{own}-1"), format!("x-{dead}-y"), "x-".into(), "other".into()] {
            std::fs::create_dir_all(root.path().join("instances").join(name)).unwrap();
        }
        let stale = stale_instances(root.path(), "x-");
        assert_eq!(stale, vec![root.path().join("instances").join(format!("x-{dead}-0"))]);
        assert!(stale_instances(&root.path().join("absent"), "x-").is_empty());
    }

    #[test]
    fn page_size_and_lost_counts_come_from_tracefs_text() {
        let header_page = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(page_bytes(header_page), 4096);
        assert_eq!(page_bytes("nonsense"), 4096);
        let stats = "entries: 10\noverrun: 3\ncommit overrun: 0\nbytes: 100\ndropped events: 2\nread events: 5\n";
        assert_eq!(stats_lost(stats), 5);
    }
}
