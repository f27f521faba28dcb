//! `powercut write`: records written the three ways a database writes, each acknowledged to a witness
//! after its durable write returned, until the power goes, `--secs` pass or the caller stops it.
//!
//! The files live in `DIR/syncbench-powercut-<run>/`: `overwrite.dat` (preallocated, zero-filled and
//! durable before the first record; round `n` overwrites slot `n % 256`), `append-<n>.dat` (grows by
//! one record per append; a new segment every 16384 records, the one two segments back retired), and
//! `new/<n>.rec` (one record per new file, made durable with an fsync of `new/`; 1024 kept). They are left
//! in place on every exit: they are the evidence `verify` reads after the reboot.

use super::acks::{RunHeader, ack_line, retire_line};
use super::record::{Kind, RECORD_BYTES, RecordId, encode, splitmix64};
use crate::core::method::{MethodFile, OpenMethod, SyncMethod};
use crate::core::stats::Samples;
use anyhow::Context;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use syncbench_sys::{AlignedBuf, OpenFlags};

/// Slots of the overwrite file (1 MiB).
pub const OVERWRITE_SLOTS: u64 = 256;
/// Records per append segment (64 MiB).
pub const APPEND_SEGMENT_RECORDS: u64 = 16384;
/// New files kept before the oldest are retired.
pub const NEW_FILES_KEPT: u64 = 1024;
/// One new file per this many records (a new file costs a create and a directory fsync).
const NEW_FILE_EVERY: u64 = 8;

/// The sequence number of round `n`'s overwrite: each earlier round wrote an overwrite and an append, and
/// rounds 0, 8, 16… also a new file. (verify uses it to name the overwrite that follows a record in its slot.)
pub fn overwrite_seq(n: u64) -> u64 {
    2 * n + n.div_ceil(NEW_FILE_EVERY)
}

/// The round whose overwrite has sequence number `seq`, if one has.
pub fn overwrite_round(seq: u64) -> Option<u64> {
    let guess = seq * NEW_FILE_EVERY / (2 * NEW_FILE_EVERY + 1);
    (guess.saturating_sub(2)..=guess + 2).find(|&n| overwrite_seq(n) == seq)
}

/// Where acknowledgements go. `send` is called after the record's durable write returned.
pub trait Witness {
    /// Deliver one line (with its newline) now: no buffering in the writer.
    fn send(&mut self, line: &str) -> io::Result<()>;
}

/// Standard output: `ssh host syncbench powercut write DIR > acks` keeps the acks on the operator's machine.
pub struct StdoutWitness;

impl Witness for StdoutWitness {
    fn send(&mut self, line: &str) -> io::Result<()> {
        let mut out = io::stdout().lock();
        out.write_all(line.as_bytes())?;
        out.flush()
    }
}

/// A TCP connection to `powercut listen` on another machine.
pub struct TcpWitness(pub std::net::TcpStream);

impl Witness for TcpWitness {
    fn send(&mut self, line: &str) -> io::Result<()> {
        self.0.write_all(line.as_bytes())
    }
}

/// The witness `spec` names: `-` (standard output) or `tcp:HOST:PORT`; `Err` is one line for the user.
pub fn witness_for(spec: &str) -> Result<Box<dyn Witness>, String> {
    if spec == "-" {
        return Ok(Box::new(StdoutWitness));
    }
    let addr = spec.strip_prefix("tcp:").ok_or_else(|| format!("--witness {spec:?}: give - or tcp:HOST:PORT"))?;
    let stream = std::net::TcpStream::connect(addr).map_err(|e| {
        format!("cannot reach the witness at {addr}: {e}; start `syncbench powercut listen` there first")
    })?;
    stream.set_nodelay(true).map_err(|e| format!("TCP_NODELAY on the witness connection: {e}"))?;
    Ok(Box::new(TcpWitness(stream)))
}

/// The directory the run's files go in.
pub fn run_dir(dir: &Path, run: u64) -> PathBuf {
    dir.join(format!("syncbench-powercut-{run:016x}"))
}

/// A fresh run id: the clock and the pid, mixed.
pub fn new_run_id() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut state = nanos ^ (u64::from(std::process::id()) << 32);
    splitmix64(&mut state)
}

/// What to write.
#[derive(Clone, Debug)]
pub struct WritePlan {
    /// An existing directory on the disk under test (canonical).
    pub dir: PathBuf,
    /// How each record is made durable.
    pub method: SyncMethod,
    /// Stop after this long; `None`: until the power goes.
    pub duration: Option<Duration>,
    /// The run id (in every record and the acks header).
    pub run: u64,
}

/// How the writing ended.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WriteSummary {
    /// Records acknowledged per kind: overwrite, append, new file.
    pub acknowledged: [u64; 3],
    /// Seconds from the first record to the end.
    pub elapsed_s: f64,
    /// Seconds spent making each kind's records durable (write and sync; for a new file also its create and
    /// the directory fsync), per kind: what `records_per_s_by_kind` divides by, to compare each kind with
    /// `syncbench run`'s case for the same write (overwrite: `one_write`; append: `file_state` append).
    pub busy_s: [f64; 3],
    /// Median time of one record of each kind, the same span as `busy_s` (compares with `run`'s p50 latency
    /// of the same case; unlike a mean, it is not dragged by the stalls of a loaded machine).
    pub latency_ns_p50: [u64; 3],
    /// Why it ended: `duration`, `stopped`, or the error that ended it (a dead disk after a cut).
    pub ended_by: String,
}

impl WriteSummary {
    /// The line `powercut write` ends with: what was acknowledged, the overall rate, and each kind's
    /// rate and median time, so the writer's pace can be set against `run`'s for the same method.
    pub fn summary_line(&self) -> String {
        let [o, ap, n] = self.acknowledged;
        let [o_rate, ap_rate, n_rate] = self.records_per_s_by_kind();
        let [o_us, ap_us, n_us] = self.latency_ns_p50.map(|ns| ns as f64 / 1e3);
        format!(
            "{o} overwrites, {ap} appends, {n} new files acknowledged in {:.1} s ({:.0} records/s; \
             each kind while it was written: {o_rate:.0} overwrites/s, {ap_rate:.0} appends/s, {n_rate:.0} new files/s; \
             median per record: overwrite {o_us:.0} µs, append {ap_us:.0} µs, new file {n_us:.0} µs)",
            self.elapsed_s,
            self.records_per_s()
        )
    }

    /// Acknowledged records per second.
    pub fn records_per_s(&self) -> f64 {
        self.acknowledged.iter().sum::<u64>() as f64 / self.elapsed_s.max(1e-9)
    }

    /// Acknowledged records per second of time spent on that kind: overwrite, append, new file.
    pub fn records_per_s_by_kind(&self) -> [f64; 3] {
        std::array::from_fn(|k| self.acknowledged[k] as f64 / self.busy_s[k].max(1e-9))
    }
}

struct Files {
    root: PathBuf,
    method: SyncMethod,
    overwrite: MethodFile,
    append: Option<MethodFile>,
    buf: AlignedBuf,
}

/// Create the run's directory and files, make them durable, and send the header: everything before the
/// first record. Errors here are the caller's to report (nothing of the run is acknowledged yet).
pub fn prepare(plan: &WritePlan, witness: &mut dyn Witness) -> anyhow::Result<PathBuf> {
    let root = run_dir(&plan.dir, plan.run);
    std::fs::create_dir(&root).with_context(|| format!("creating {}", root.display()))?;
    std::fs::create_dir(root.join("new"))?;
    let overwrite = root.join("overwrite.dat");
    let fd = syncbench_sys::create_new(&overwrite, OpenFlags::BUFFERED)?;
    let zeros = vec![0u8; RECORD_BYTES];
    for slot in 0..OVERWRITE_SLOTS {
        syncbench_sys::pwrite_all(&fd, &zeros, slot * RECORD_BYTES as u64)?;
    }
    syncbench_sys::fsync(&fd).context("fsync of the preallocated overwrite file")?;
    syncbench_sys::fsync_dir(&root.join("new"))?;
    syncbench_sys::fsync_dir(&root)?;
    syncbench_sys::fsync_dir(&plan.dir)?;
    let header =
        RunHeader { run: plan.run, method: plan.method, durable: plan.method.durable(), dir: plan.dir.clone() };
    witness.send(&header.line()).context("sending the header to the witness")?;
    Ok(root)
}

/// Write records until the plan's duration passes, `stop` is set, or a write fails (then `ended_by` says
/// which error: after a power cut that is the expected end). Call [`prepare`] first.
pub fn write(
    plan: &WritePlan,
    root: &Path,
    witness: &mut dyn Witness,
    stop: &AtomicBool,
) -> anyhow::Result<WriteSummary> {
    let overwrite = plan
        .method
        .open(&root.join("overwrite.dat"))
        .map_err(|e| anyhow::anyhow!("{}: {}", plan.method.name(), e.io()))?;
    let mut files = Files {
        root: root.to_path_buf(),
        method: plan.method,
        overwrite,
        append: None,
        buf: AlignedBuf::new(RECORD_BYTES, RECORD_BYTES),
    };
    let started = Instant::now();
    let mut acknowledged = [0u64; 3];
    let mut busy_s = [0f64; 3];
    let mut latencies: [Samples; 3] = Default::default();
    let mut seq = 0u64;
    let mut n = 0u64;
    let ended_by = loop {
        if stop.load(Ordering::Relaxed) {
            break "stopped".to_string();
        }
        if plan.duration.is_some_and(|d| started.elapsed() >= d) {
            break "duration".to_string();
        }
        let mut step = |kind: Kind, slot: u64, files: &mut Files, seq: &mut u64| -> anyhow::Result<()> {
            let id = RecordId { kind, seq: *seq, slot };
            debug_assert!(kind != Kind::Overwrite || overwrite_seq(n) == *seq);
            *seq += 1;
            let began = Instant::now();
            files.write(plan.run, id, witness)?;
            let took = began.elapsed();
            busy_s[kind as usize] += took.as_secs_f64();
            latencies[kind as usize].record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
            witness.send(&ack_line(id)).context("sending an ack to the witness")?;
            acknowledged[kind as usize] += 1;
            Ok(())
        };
        // Each round: one overwrite, one append, and every eighth round one new file.
        let result = step(Kind::Overwrite, n % OVERWRITE_SLOTS, &mut files, &mut seq)
            .and_then(|()| step(Kind::Append, n, &mut files, &mut seq))
            .and_then(|()| {
                if n.is_multiple_of(NEW_FILE_EVERY) {
                    step(Kind::NewFile, n / NEW_FILE_EVERY, &mut files, &mut seq)
                } else {
                    Ok(())
                }
            });
        if let Err(e) = result {
            break format!("{e:#}");
        }
        n += 1;
    };
    let latency_ns_p50 = std::array::from_fn(|k| latencies[k].quantile_ns(0.5));
    Ok(WriteSummary { acknowledged, elapsed_s: started.elapsed().as_secs_f64(), busy_s, latency_ns_p50, ended_by })
}

impl Files {
    fn write(&mut self, run: u64, id: RecordId, witness: &mut dyn Witness) -> anyhow::Result<()> {
        let method = self.method;
        let what = move || format!("{} of {} record {}", method.name(), id.kind.name(), id.seq);
        if id.kind == Kind::Append && (id.slot.is_multiple_of(APPEND_SEGMENT_RECORDS) || self.append.is_none()) {
            self.next_segment(id.slot / APPEND_SEGMENT_RECORDS, witness)?;
        }
        encode(run, id, self.buf.as_mut_slice());
        let record = self.buf.as_slice();
        match id.kind {
            Kind::Overwrite => self.overwrite.commit(record, &[id.slot * RECORD_BYTES as u64]).with_context(what),
            Kind::Append => {
                let offset = id.slot % APPEND_SEGMENT_RECORDS * RECORD_BYTES as u64;
                let file = self.append.as_mut().expect("segment opened above");
                file.commit(record, &[offset]).with_context(what)
            }
            Kind::NewFile => {
                let dir = self.root.join("new");
                let mut file = open_new(&dir.join(format!("{}.rec", id.slot)), self.method)?;
                file.commit(record, &[0]).with_context(what)?;
                self.sync_dir(&dir)?;
                if id.slot >= NEW_FILES_KEPT {
                    let old = id.slot - NEW_FILES_KEPT;
                    witness.send(&retire_line(Kind::NewFile, old, old))?;
                    std::fs::remove_file(dir.join(format!("{old}.rec"))).context("retiring an old new file")?;
                }
                Ok(())
            }
        }
    }

    /// Start append segment `n` (its name made durable before any record in it is acknowledged) and retire
    /// the one two segments back.
    fn next_segment(&mut self, n: u64, witness: &mut dyn Witness) -> anyhow::Result<()> {
        self.append = Some(open_new(&self.root.join(format!("append-{n}.dat")), self.method)?);
        self.sync_dir(&self.root.clone())?;
        if n >= 2 {
            let old = n - 2;
            witness.send(&retire_line(
                Kind::Append,
                old * APPEND_SEGMENT_RECORDS,
                (old + 1) * APPEND_SEGMENT_RECORDS - 1,
            ))?;
            std::fs::remove_file(self.root.join(format!("append-{old}.dat"))).context("retiring an append segment")?;
        }
        Ok(())
    }

    /// A durable method makes a new name durable with a directory fsync; a not-durable one promises nothing.
    fn sync_dir(&self, dir: &Path) -> anyhow::Result<()> {
        if self.method.durable() {
            syncbench_sys::fsync_dir(dir).with_context(|| format!("fsync of directory {}", dir.display()))?;
        }
        Ok(())
    }
}

fn open_new(path: &Path, method: SyncMethod) -> anyhow::Result<MethodFile> {
    drop(syncbench_sys::create_new(path, OpenFlags::BUFFERED).with_context(|| format!("creating {}", path.display()))?);
    method.open(path).map_err(|e| anyhow::anyhow!("{} on {}: {}", method.name(), path.display(), e.io()))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Lines(String);

    impl Witness for Lines {
        fn send(&mut self, line: &str) -> io::Result<()> {
            self.0.push_str(line);
            Ok(())
        }
    }

    #[test]
    fn each_kinds_time_is_counted_and_within_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let plan = WritePlan {
            dir: dir.path().canonicalize().unwrap(),
            method: SyncMethod::Fdatasync,
            duration: Some(Duration::from_millis(300)),
            run: 7,
        };
        let mut witness = Lines(String::new());
        let root = prepare(&plan, &mut witness).unwrap();
        let s = write(&plan, &root, &mut witness, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.ended_by, "duration");
        assert!(s.acknowledged.iter().all(|&n| n > 0), "{s:?}");
        assert!(s.busy_s.iter().all(|&b| b > 0.0), "{s:?}");
        assert!(s.busy_s.iter().sum::<f64>() <= s.elapsed_s, "{s:?}");
        // A median of one kind's records lies within that kind's whole time.
        assert!((0..3).all(|k| s.latency_ns_p50[k] > 0 && s.latency_ns_p50[k] as f64 <= s.busy_s[k] * 1e9), "{s:?}");
        let by_kind = s.records_per_s_by_kind();
        assert!((0..3).all(|k| (by_kind[k] * s.busy_s[k] - s.acknowledged[k] as f64).abs() < 1e-6), "{by_kind:?}");
        let acks = witness.0.lines().filter(|l| !l.starts_with("retire") && !l.starts_with("syncbench-")).count();
        assert_eq!(acks as u64, s.acknowledged.iter().sum::<u64>());
    }
}
