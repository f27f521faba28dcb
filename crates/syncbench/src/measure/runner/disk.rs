//! Cases on a real directory: the prepared files, the executors that issue real syscalls, and the plain
//! sentences for methods a file system refuses.

use super::{
    BestClock, CaseFailure, CommitExecutor, LoopEdges, MeasureError, Measurement, OffsetPlan, RunBudget,
    measure_with_edges,
};
use crate::core::cleanup::{Created, PREFIX, unique_name};
use crate::core::exit::usage;
use crate::core::method::{MethodError, MethodFile, OpenMethod, WriteCall};
use crate::core::suite::{Case, FileState, Shape, format_size};
use crate::core::workdir::RUN_FILE_BYTES;
use crate::observe::blockdev::account::{Accountant, Recorded, Window};
use std::io;
use std::path::{Path, PathBuf};
use syncbench_sys::{AlignedBuf, DioAlign, OpenFlags};

/// The directory being measured, with its zero-filled overwrite file (shared by every overwrite case,
/// like a recycled WAL segment). Dropping it removes the file.
#[derive(Debug)]
pub struct PreparedDir {
    dir: PathBuf,
    overwrite: Created,
    file_size_bytes: u64,
    fs_label: String,
    dio: Option<DioAlign>,
    /// Reads the devices under the directory around each case's timed loop.
    accountant: Accountant,
}

/// Size of each write that fills the prepared file.
const PREPARE_CHUNK_BYTES: usize = 8 * 1024;

impl PreparedDir {
    /// Create and zero-fill a `.syncbench-run-*` file of `file_size_bytes` in `dir` and make it durable.
    /// `fs_type` names the file system in messages (`unknown` becomes "this file system").
    pub fn prepare(dir: &Path, file_size_bytes: u64, fs_type: &str) -> io::Result<PreparedDir> {
        let path = dir.join(unique_name("run"));
        // Registered (and recorded for a later syncbench) before it exists: a SIGKILL in between leaves nothing unrecorded.
        let (overwrite, fd) = Created::create(path.clone(), |p| syncbench_sys::create_new(p, OpenFlags::BUFFERED))?;
        // 8 KiB writes, as pg_test_fsync and PostgreSQL's WAL zero-fill do: the page cache keeps the folio size
        // a file was written with, and on kernels with large folios (ext4 since 6.x) every later 8 KiB
        // write+fdatasync into a file written in 1 MiB chunks measured 10-20% slower (docs/benchmarks.md).
        let zeros = vec![0u8; PREPARE_CHUNK_BYTES.min(file_size_bytes as usize)];
        let mut offset = 0u64;
        while offset < file_size_bytes {
            let len = zeros.len().min((file_size_bytes - offset) as usize);
            syncbench_sys::pwrite_all(&fd, &zeros[..len], offset)?;
            offset += len as u64;
        }
        // Durable before any case starts, so no case pays for writing back the preparation.
        syncbench_sys::fsync(&fd)?;
        syncbench_sys::fsync_dir(dir)?;
        let dio = syncbench_sys::statx_io(&fd)?.dio;
        let fs_label = if fs_type.is_empty() || fs_type == "unknown" { "this file system" } else { fs_type };
        // As root the block tracepoints add flags and device-side latency to the counters.
        let accountant = Accountant::for_dir(dir, crate::observe::blockdev::account::is_root());
        let fs_label = fs_label.to_string();
        Ok(PreparedDir { dir: dir.to_path_buf(), overwrite, file_size_bytes, fs_label, dio, accountant })
    }

    /// The size of every case's file region.
    pub fn file_size_bytes(&self) -> u64 {
        self.file_size_bytes
    }

    /// The zero-filled file.
    pub fn overwrite_path(&self) -> &Path {
        self.overwrite.path()
    }
}

/// Run `case` on the disk; with what its timed commits cost the devices.
pub(super) fn run(
    case: &Case,
    budget: &RunBudget,
    dir: &PreparedDir,
) -> Result<(Measurement, Option<Recorded>), CaseFailure> {
    check_direct_alignment(case, dir)?;
    let region = CaseFile::for_case(case, dir)?;
    let buf = pattern_buffer(case.bytes_per_commit() as usize, dir);
    let plan = OffsetPlan::new(case, dir.file_size_bytes);
    let mut clock = BestClock::new();
    let mut edges = DeviceEdges::new(&dir.accountant, case.bytes_per_commit());
    let m = match case.shape {
        Shape::Steady => {
            let file = case.method.open(region.path()).map_err(|e| setup_failure(case, dir, &e))?;
            let mut exec = Steady { file, buf, plan, offsets: Vec::new() };
            let m = measure_with_edges(&mut exec, &mut clock, budget, &mut edges)
                .map_err(|e| measure_failure(case, dir, e))?;
            exec.file.settle().map_err(|e| failed("fsync after the case", &e))?;
            m
        }
        shape => {
            let mut exec = Reopen { path: region.path(), shape, buf, plan, offsets: Vec::new() };
            measure_with_edges(&mut exec, &mut clock, budget, &mut edges).map_err(|e| measure_failure(case, dir, e))?
        }
    };
    Ok((m, edges.recorded))
}

/// Device accounting at the edges of the timed loop.
pub struct DeviceEdges<'a> {
    accountant: &'a Accountant,
    bytes_per_commit: u64,
    window: Option<Window>,
    /// What the timed commits cost the devices, once the loop ended (`None` without a block device).
    pub recorded: Option<Recorded>,
}

impl<'a> DeviceEdges<'a> {
    /// Edges that account the devices of `accountant`.
    pub fn new(accountant: &'a Accountant, bytes_per_commit: u64) -> DeviceEdges<'a> {
        DeviceEdges { accountant, bytes_per_commit, window: None, recorded: None }
    }
}

impl LoopEdges for DeviceEdges<'_> {
    fn started(&mut self) {
        if !self.accountant.is_empty() {
            self.window = Some(self.accountant.open());
        }
    }

    fn ended(&mut self, commits: u64) {
        if let Some(w) = self.window.take() {
            self.recorded = Some(self.accountant.close(w, commits, self.bytes_per_commit));
        }
    }
}

/// The file a case writes to: the shared overwrite file, or a fresh one for append and fallocate.
enum CaseFile<'a> {
    Shared(&'a Path),
    Own(Created),
}

impl CaseFile<'_> {
    fn for_case<'a>(case: &Case, dir: &'a PreparedDir) -> Result<CaseFile<'a>, CaseFailure> {
        if case.file_state == FileState::Overwrite {
            return Ok(CaseFile::Shared(dir.overwrite_path()));
        }
        let path = dir.dir.join(unique_name(case.file_state.name()));
        let (guard, fd) = Created::create(path, |p| {
            syncbench_sys::create_new(p, OpenFlags::BUFFERED).map_err(|e| failed("creating the file", &e))
        })?;
        if case.file_state == FileState::Fallocate {
            syncbench_sys::fallocate(&fd, 0, dir.file_size_bytes).map_err(|e| match is_refusal(&e) {
                true => CaseFailure::Unsupported(format!("{}: {} does not support fallocate", errno(&e), dir.fs_label)),
                false => failed("fallocate", &e),
            })?;
        }
        // The new file and its directory entry are durable before timing: the first commit pays only for itself.
        syncbench_sys::fsync(&fd).map_err(|e| failed("fsync of the new file", &e))?;
        syncbench_sys::fsync_dir(&dir.dir).map_err(|e| failed("fsync of the directory", &e))?;
        Ok(CaseFile::Own(guard))
    }

    fn path(&self) -> &Path {
        match self {
            CaseFile::Shared(p) => p,
            CaseFile::Own(c) => c.path(),
        }
    }
}

/// A size the file system's direct-I/O alignment rules out is unsupported, not a crash.
fn check_direct_alignment(case: &Case, dir: &PreparedDir) -> Result<(), CaseFailure> {
    let Some(align) = dir.dio.filter(|_| case.method.is_direct()) else { return Ok(()) };
    let unit = u64::from(align.offset_align_bytes);
    if case.write_size_bytes.is_multiple_of(unit) {
        return Ok(());
    }
    let relation = if case.write_size_bytes < unit { "below" } else { "not a multiple of" };
    Err(CaseFailure::Unsupported(format!(
        "EINVAL: a {} write is {relation} the {} direct-I/O alignment of {}",
        format_size(case.write_size_bytes),
        format_size(unit),
        dir.fs_label
    )))
}

/// Pseudo-random bytes (never zeros: a compressing or deduplicating layer must not get a free ride),
/// aligned for O_DIRECT.
fn pattern_buffer(len: usize, dir: &PreparedDir) -> AlignedBuf {
    let align = dir.dio.map_or(4096, |d| (d.mem_align_bytes as usize).max(4096));
    let mut buf = AlignedBuf::new(len, align);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for chunk in buf.as_mut_slice().chunks_mut(8) {
        state = super::mock::splitmix64(state);
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
    buf
}

/// One descriptor for the whole case.
struct Steady {
    file: MethodFile,
    buf: AlignedBuf,
    plan: OffsetPlan,
    offsets: Vec<u64>,
}

impl CommitExecutor for Steady {
    fn prepare_next(&mut self) -> bool {
        self.plan.next_commit(&mut self.offsets)
    }

    #[inline]
    fn commit(&mut self) -> io::Result<()> {
        self.file.commit(self.buf.as_slice(), &self.offsets)
    }
}

/// pg_test_fsync's "write, fsync, close" and "write, close, fsync": a descriptor per commit.
struct Reopen<'a> {
    path: &'a Path,
    shape: Shape,
    buf: AlignedBuf,
    plan: OffsetPlan,
    offsets: Vec<u64>,
}

impl CommitExecutor for Reopen<'_> {
    fn prepare_next(&mut self) -> bool {
        self.plan.next_commit(&mut self.offsets)
    }

    fn commit(&mut self) -> io::Result<()> {
        use syncbench_sys::{fsync, open_existing, pwrite_all};
        let writer = open_existing(self.path, OpenFlags::BUFFERED)?;
        let chunk = self.buf.len() / self.offsets.len().max(1);
        for (data, offset) in self.buf.as_slice().chunks(chunk).zip(&self.offsets) {
            pwrite_all(&writer, data, *offset)?;
        }
        match self.shape {
            Shape::WriteCloseSync => {
                drop(writer);
                fsync(open_existing(self.path, OpenFlags::BUFFERED)?)
            }
            _ => {
                fsync(&writer)?;
                drop(writer);
                // Open and close again, so both variants do the same number of opens.
                drop(open_existing(self.path, OpenFlags::BUFFERED)?);
                Ok(())
            }
        }
    }
}

fn rwf_name(flag: syncbench_sys::RwFlag) -> &'static str {
    use syncbench_sys::RwFlag;
    match flag {
        RwFlag::Dsync => "RWF_DSYNC",
        RwFlag::Sync => "RWF_SYNC",
        RwFlag::Atomic => "RWF_ATOMIC",
        RwFlag::AtomicDsync => "RWF_ATOMIC|RWF_DSYNC",
    }
}

/// The errors that mean "this platform or file system does not do that".
fn is_refusal(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP | libc::ENOSYS | libc::EPERM))
}

fn errno(e: &io::Error) -> String {
    match (syncbench_sys::errno_name(e), e.raw_os_error()) {
        (Some(name), _) => name.to_string(),
        (None, Some(code)) => format!("errno {code}"),
        (None, None) => "error".to_string(),
    }
}

fn failed(what: &str, e: &io::Error) -> CaseFailure {
    CaseFailure::Failed(format!("{}: {what} failed: {e}", errno(e)))
}

fn setup_failure(case: &Case, dir: &PreparedDir, e: &MethodError) -> CaseFailure {
    let err = e.io();
    let code = errno(err);
    match e {
        MethodError::Uring(_) if is_refusal(err) || err.raw_os_error() == Some(libc::ENOMEM) => {
            CaseFailure::Unsupported(format!(
                "{code}: io_uring is unavailable (disabled by kernel.io_uring_disabled, a seccomp filter or an old kernel)"
            ))
        }
        MethodError::Open(m, _) if m.is_direct() && is_refusal(err) => {
            CaseFailure::Unsupported(format!("{code}: O_DIRECT is not supported by {}", dir.fs_label))
        }
        MethodError::Open(m, _) if is_refusal(err) => {
            CaseFailure::Unsupported(format!("{code}: {} refused to open a file for {}", dir.fs_label, m.name()))
        }
        _ => failed(&format!("setting up {}", case.method.name()), err),
    }
}

fn measure_failure(case: &Case, dir: &PreparedDir, e: MeasureError) -> CaseFailure {
    match e {
        MeasureError::FirstCommit(err) if is_refusal(&err) => {
            CaseFailure::Unsupported(refusal_sentence(case, dir, &err))
        }
        MeasureError::FirstCommit(err) | MeasureError::Later(err) => {
            // Fail-stop: no retry, no partial numbers. A failed sync is an error, never a fast result.
            failed(&format!("a {} commit", case.method.name()), &err)
        }
    }
}

fn refusal_sentence(case: &Case, dir: &PreparedDir, err: &io::Error) -> String {
    let code = errno(err);
    let fs = &dir.fs_label;
    let size = format_size(case.write_size_bytes);
    match case.method.write_call() {
        _ if case.method.is_direct() => format!("{code}: {fs} refused a {size} O_DIRECT write (alignment?)"),
        WriteCall::Pwritev2(flag) => format!("{code}: pwritev2 with {} is not supported by {fs}", rwf_name(flag)),
        WriteCall::UringLinkedFdatasync => format!("{code}: io_uring write+fdatasync refused by {fs}"),
        WriteCall::Pwrite => format!("{code}: {fs} refused {}: {err}", case.method.name()),
    }
}

/// Prepare `run`'s overwrite file in DIR; a directory that turns out unwritable or full is a usage error.
pub fn prepare_run_file(dir: &Path, fs_type: &str) -> anyhow::Result<PreparedDir> {
    PreparedDir::prepare(dir, RUN_FILE_BYTES, fs_type).map_err(|e| {
        let shown = dir.display();
        match e.raw_os_error() {
            Some(libc::EACCES | libc::EPERM) => {
                usage(format!("{shown} is not writable — choose a directory you can write to"))
            }
            Some(libc::EROFS) => usage(format!("{shown} is on a read-only file system — choose a writable directory")),
            Some(libc::ENOSPC | libc::EDQUOT) => {
                usage(format!("{shown} ran out of space preparing the {PREFIX}* test file — free some space"))
            }
            _ => anyhow::anyhow!("preparing the test file in {shown}: {e}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::method::SyncMethod;
    use crate::core::suite::{PlanOptions, Section, plan};
    use crate::measure::runner::{RunBudget, Target, run_case};

    fn tiny() -> RunBudget {
        RunBudget {
            case_secs: 0.003,
            warmup_secs: 0.0,
            min_secs: 0.0,
            min_samples: 2,
            ci95_target_rel: 0.02,
            max_samples: u64::MAX,
        }
    }

    #[test]
    fn every_case_of_the_suite_runs_or_says_why_and_cleans_up() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = PreparedDir::prepare(tmp.path(), 1 << 20, "unknown").unwrap();
        assert_eq!(std::fs::metadata(dir.overwrite_path()).unwrap().len(), 1 << 20);
        let opts = PlanOptions { quick: true, ..PlanOptions::default() };
        for case in plan(&opts) {
            let r = run_case(&case, &tiny(), &Target::Disk(&dir));
            if r.supported && r.error.is_none() {
                assert!(r.ops > 0 && r.latency_ns.min > 0, "{}: {r:?}", case.label);
                assert!(r.stop_reason.is_some());
            } else {
                let why = r.error.as_deref().unwrap_or_default();
                assert!(why.starts_with('E'), "{} has no errno in {why:?}", case.label);
                assert_eq!(r.ops, 0);
            }
        }
        // Only the shared file is left while the PreparedDir lives; nothing once it is dropped.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
        drop(dir);
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_size_below_the_direct_io_alignment_is_unsupported() {
        let tmp = tempfile::tempdir().unwrap();
        let mut dir = PreparedDir::prepare(tmp.path(), 1 << 20, "ext4").unwrap();
        dir.dio = Some(DioAlign { mem_align_bytes: 512, offset_align_bytes: 4096 });
        let case = Case { section: Section::WriteSizes, ..Case::one_write(SyncMethod::OpenSyncDirect, 1024) };
        let r = run_case(&case, &tiny(), &Target::Disk(&dir));
        assert!(!r.supported);
        assert_eq!(r.error.as_deref(), Some("EINVAL: a 1 KiB write is below the 4 KiB direct-I/O alignment of ext4"));
    }

    #[test]
    fn append_case_extends_its_own_file_and_removes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = PreparedDir::prepare(tmp.path(), 64 * 1024, "unknown").unwrap();
        let case = Case { file_state: FileState::Append, ..Case::one_write(SyncMethod::Fdatasync, 4096) };
        let budget = RunBudget { case_secs: 5.0, ..tiny() };
        let r = run_case(&case, &budget, &Target::Disk(&dir));
        assert_eq!(r.stop_reason, Some(crate::core::schema::StopReason::FileFull));
        assert_eq!(r.ops + r.warmup_ops, 16);
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    #[test]
    fn refusals_read_as_errno_and_a_sentence() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = PreparedDir::prepare(tmp.path(), 64 * 1024, "tmpfs").unwrap();
        let einval = || io::Error::from_raw_os_error(libc::EINVAL);
        let direct = Case::one_write(SyncMethod::OpenDatasyncDirect, 8192);
        let open = MethodError::Open(SyncMethod::OpenDatasyncDirect, einval());
        let msg = |f: CaseFailure| match f {
            CaseFailure::Unsupported(m) => format!("unsupported {m}"),
            CaseFailure::Failed(m) => format!("failed {m}"),
        };
        assert_eq!(msg(setup_failure(&direct, &dir, &open)), "unsupported EINVAL: O_DIRECT is not supported by tmpfs");
        let uring = Case::one_write(SyncMethod::IoUringFdatasync, 8192);
        let disabled = MethodError::Uring(io::Error::from_raw_os_error(libc::EPERM));
        assert!(msg(setup_failure(&uring, &dir, &disabled)).starts_with("unsupported EPERM: io_uring is unavailable"));
        let pwritev2 = Case::one_write(SyncMethod::Pwritev2Dsync, 8192);
        let refused = MeasureError::FirstCommit(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        assert_eq!(
            msg(measure_failure(&pwritev2, &dir, refused)),
            "unsupported EOPNOTSUPP: pwritev2 with RWF_DSYNC is not supported by tmpfs"
        );
        // EIO is never "unsupported", first commit or not: the case failed, and says which call.
        let fsync = Case::one_write(SyncMethod::Fsync, 8192);
        for e in [MeasureError::FirstCommit(io::Error::from_raw_os_error(libc::EIO)), MeasureError::Later(einval())] {
            assert!(msg(measure_failure(&fsync, &dir, e)).starts_with("failed E"), "fail-stop");
        }
    }
}
