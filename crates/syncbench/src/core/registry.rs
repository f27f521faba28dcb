//! The per-boot registry of kernel state syncbench creates, so that what a killed syncbench left behind is
//! found, reported and removed by a later one (see `proof::leftovers`).
//!
//! Every mount (tracefs, the lab's FUSE image server and file system), loop device, `.syncbench-*` file
//! or directory and lab started on a command's behalf is recorded in `/run/syncbench/` (a tmpfs: records
//! die with the boot, as the objects do) as one small JSON file naming the recording process (pid and
//! start time, so a reused pid is not mistaken for it) and the object as the kernel will show it (a mount's
//! type and source, a loop device's backing file). It is recorded before it is made, so a SIGKILL at any
//! moment leaves nothing unrecorded; dropping the [`Recorded`] guard, after the owner removed the object,
//! deletes the record. eBPF programs are not recorded: syncbench never pins them, so the kernel frees them
//! with the last descriptor when the process dies.

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
/// Where the records live.
pub const ROOT: &str = "/run/syncbench";
/// Overrides [`ROOT`] (inherited by every process a command starts): a test's records, and the leftovers it
/// plants, stay its own and are not reported by every other syncbench on the machine.
pub const ROOT_ENV: &str = "SYNCBENCH_STATE_DIR";

/// [`ROOT`], or `$SYNCBENCH_STATE_DIR` when set.
pub fn root() -> PathBuf {
    std::env::var_os(ROOT_ENV).filter(|v| !v.is_empty()).map_or_else(|| PathBuf::from(ROOT), PathBuf::from)
}

/// A kernel object (or directory) syncbench made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Object {
    /// A file system mounted at `dir`, with its type and source as `/proc/self/mountinfo` showed them.
    Mount {
        /// The mount point.
        dir: PathBuf,
        /// `ext4`, `tracefs`, `fuse`, …
        fs_type: String,
        /// The mount's source (`/dev/loop0`, `tracefs`, `syncbench-lab`).
        source: String,
        /// The mount point is a directory syncbench made for it: removed after unmounting.
        remove_dir: bool,
    },
    /// The loop devices reading `backing_file` (recorded before attaching one: until the device is known
    /// it is found by its backing file in `/sys/block/loop*/loop/backing_file`). Once attached, the record
    /// names the device and its disk sequence number (`/sys/block/loopN/diskseq`, new at every attach,
    /// never reused within a boot): the loop is then found by those even when its backing file's path no
    /// longer reads the same (a lazily unmounted FUSE server's image shows as `/image`), and a loop another
    /// program attached later on the same device is never taken for it.
    Loop {
        /// The file syncbench made and attached.
        backing_file: PathBuf,
        /// The device attached (`/dev/loop3`), once known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        device: Option<String>,
        /// Its disk sequence number at that attach.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diskseq: Option<u64>,
    },
    /// A file or directory syncbench made (a `.syncbench-*` name; see [`crate::core::cleanup::Created`]),
    /// removed with its contents.
    Path {
        /// The file or directory.
        path: PathBuf,
    },
    /// A lab served at `mount` for the recording command (`lab run`; `lab up` until it returns): if that
    /// command dies, its server, the processes it started and the lab are leftovers.
    Lab {
        /// The lab's mount point.
        mount: PathBuf,
    },
}

/// One record: who made what.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    /// The recording process.
    pub pid: u32,
    /// The process's start time (clock ticks after boot): tells a reused pid apart.
    pub start_ticks: u64,
    /// The subcommand, e.g. `lab run`.
    pub command: String,
    /// What it made.
    pub object: Object,
}

/// A recorded object; dropping the guard (after the object is removed) deletes the record.
#[derive(Debug)]
pub struct Recorded {
    file: PathBuf,
    record: Record,
}

impl Drop for Recorded {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

impl Recorded {
    /// The record's file in the registry.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The object now reads `object` (e.g. a loop device, once attached, names its device).
    pub fn update(&mut self, object: Object) -> anyhow::Result<()> {
        self.record.object = object;
        write_record(&self.file, &self.record)
    }

    /// The object outlives this guard (its removal was asked but has not happened yet): the record stays
    /// for a later syncbench to find it, report it and remove it, or delete the record once it is gone.
    pub fn keep(self) {
        std::mem::forget(self);
    }
}

fn write_record(file: &Path, record: &Record) -> anyhow::Result<()> {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_string(record)? + "\n")
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("writing {}", file.display()))
}

/// Write `record` to `file` in place of what it held (cleanup naming the device a dead process's loop record
/// did not name yet).
pub fn rewrite_record(file: &Path, record: &Record) -> anyhow::Result<()> {
    write_record(file, record)
}

/// Record `object`, which this process just made (or is about to make, for a directory or a lab).
pub fn record(object: Object) -> anyhow::Result<Recorded> {
    record_in(&root(), object)
}

pub fn record_in(root: &Path, object: Object) -> anyhow::Result<Recorded> {
    static N: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    let record = Record { pid, start_ticks: start_ticks(pid).unwrap_or(0), command: command_name(), object };
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let file = root.join(format!("{pid}-{}.json", N.fetch_add(1, Ordering::Relaxed)));
    write_record(&file, &record)?;
    Ok(Recorded { file, record })
}

/// Record a lab about to be served at `mount` for this command: if the command dies, its lab, the processes
/// it started and (if syncbench made it) the mount directory are leftovers.
pub fn record_lab(mount: &Path) -> anyhow::Result<Recorded> {
    record(Object::Lab { mount: mount.to_path_buf() })
}

/// Record a mount about to be made at `dir` (as `/proc/self/mountinfo` will show its type and source).
pub fn record_mount(dir: &Path, fs_type: &str, source: &str, remove_dir: bool) -> anyhow::Result<Recorded> {
    record(Object::Mount {
        dir: dir.to_path_buf(),
        fs_type: fs_type.to_string(),
        source: source.to_string(),
        remove_dir,
    })
}

/// Record a loop device about to be attached to `backing_file`.
pub fn record_loop(backing_file: &Path) -> anyhow::Result<Recorded> {
    record(Object::Loop { backing_file: backing_file.to_path_buf(), device: None, diskseq: None })
}

/// The loop device `record` (of [`record_loop`]) was for is attached as `device`: the record names it and
/// its disk sequence number from now on.
pub fn loop_attached(record: &mut Recorded, device: &str) -> anyhow::Result<()> {
    let Object::Loop { backing_file, .. } = &record.record.object else { anyhow::bail!("not a loop device's record") };
    let diskseq = loop_diskseq(device).with_context(|| format!("reading the disk sequence number of {device}"))?;
    if let Some(seq) = diskseq {
        note_loop_attached(device, seq);
    }
    let object = Object::Loop { backing_file: backing_file.clone(), device: Some(device.to_string()), diskseq };
    record.update(object)
}

/// In a private registry (`$SYNCBENCH_STATE_DIR` set, as the integration tests do), the loop devices its
/// processes attached, one `DEVICE DISKSEQ` line each, never deleted: records go when their devices go, so
/// only this history lets the registry's owner check at the end that every loop attached on its behalf is
/// gone, whatever its backing file reads by then (`/image` once the FUSE mount under it went). Not kept in
/// the shared [`ROOT`], where it would only grow.
pub const LOOP_HISTORY: &str = "loops-attached.log";

/// Append `device` attached with disk sequence number `diskseq` to the [`LOOP_HISTORY`] of a private
/// registry (nothing in the shared one). Best effort: the record, not this line, is what cleanup uses.
pub fn note_loop_attached(device: &str, diskseq: u64) {
    if std::env::var_os(ROOT_ENV).is_some_and(|v| !v.is_empty()) {
        append_loop_history(&root(), device, diskseq);
    }
}

fn append_loop_history(root: &Path, device: &str, diskseq: u64) {
    use std::io::Write;
    let file = std::fs::OpenOptions::new().create(true).append(true).open(root.join(LOOP_HISTORY));
    // One write of one short line to an O_APPEND file: lines of concurrent processes never interleave.
    if let Err(e) = file.and_then(|mut f| f.write_all(format!("{device} {diskseq}\n").as_bytes())) {
        eprintln!("syncbench: warning: cannot note {device} in {}: {e}", root.join(LOOP_HISTORY).display());
    }
}

/// The loop devices (device, disk sequence number) a private registry's [`LOOP_HISTORY`] lists.
pub fn loops_attached_in(root: &Path) -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(root.join(LOOP_HISTORY)).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (device, seq) = l.split_once(' ')?;
            Some((device.to_string(), seq.trim().parse().ok()?))
        })
        .collect()
}

/// Detach was asked of the loop device `record` names: on a device still open somewhere `losetup -d`
/// only sets autoclear, and it goes when its last user closes it. Until it is gone the record stays
/// (past this process, if need be), so a loop that never goes is found and reported; a device that is
/// gone deletes it.
pub fn loop_detach_asked(record: Recorded) {
    match &record.record.object {
        Object::Loop { device: Some(device), diskseq: Some(seq), .. } if loop_is_attached(device, *seq) => {
            record.keep();
        }
        _ => drop(record),
    }
}

/// `/sys/block/loopN` of `/dev/loopN`.
fn sys_block(device: &str) -> PathBuf {
    Path::new("/sys/block").join(device.trim_start_matches("/dev/"))
}

/// The disk sequence number of `device` (`None` on a kernel before 5.15, which has none).
pub fn loop_diskseq(device: &str) -> anyhow::Result<Option<u64>> {
    match std::fs::read_to_string(sys_block(device).join("diskseq")) {
        Ok(text) => Ok(Some(text.trim().parse().with_context(|| format!("diskseq of {device}: {text:?}"))?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Whether `device` is still the loop attached with disk sequence number `diskseq` (its backing file is
/// listed only while it is attached).
pub fn loop_is_attached(device: &str, diskseq: u64) -> bool {
    sys_block(device).join("loop/backing_file").exists() && loop_diskseq(device).ok().flatten() == Some(diskseq)
}

/// A tracefs for reading tracepoint formats whose mount, if this process made one, is recorded.
#[derive(Debug)]
pub struct RecordedTracefs {
    /// Declared first: unmounted before the record is deleted.
    tracefs: syncbench_sys::tracefs::Tracefs,
    _record: Option<Recorded>,
}

impl std::ops::Deref for RecordedTracefs {
    type Target = syncbench_sys::tracefs::Tracefs;
    fn deref(&self) -> &Self::Target {
        &self.tracefs
    }
}

/// The mounted tracefs, or one mounted (and recorded) in the temporary directory.
pub fn open_tracefs() -> std::io::Result<RecordedTracefs> {
    let mut record = None;
    let tracefs = syncbench_sys::tracefs::Tracefs::open_announcing(&std::env::temp_dir(), |root| {
        let recorded = record_mount(root, "tracefs", "tracefs", true);
        record = Some(recorded.map_err(|e| std::io::Error::other(format!("{e:#}")))?);
        Ok(())
    })?;
    Ok(RecordedTracefs { tracefs, _record: record })
}

/// The subcommand this process runs (`run`, `lab run`, …), for the report.
fn command_name() -> String {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).take(2).collect();
    match args.first().map(String::as_str) {
        Some("lab" | "powercut") => args.join(" "),
        Some(first) => first.to_string(),
        None => "syncbench".to_string(),
    }
}

/// Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks after boot.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    syncbench_sys::process::stat_field(&stat, 22)?.parse().ok()
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
