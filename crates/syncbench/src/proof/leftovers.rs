//! What a killed syncbench left behind, found in the per-boot registry (`core::registry`): reported by
//! every command (one stderr line each, with the command that removes it) and removed by
//! `syncbench cleanup` and `syncbench lab down`.
//!
//! A record whose process is gone and whose object is still what was recorded is a leftover. A record whose
//! object is gone is stale and is deleted quietly. Nothing else is touched: what syncbench did not record,
//! or what no longer matches its record, stays. A lab whose recording command (`lab run`, `lab up` before it
//! returned) died is a leftover with its server, the processes its command started and its mount
//! directory; a lab whose server died is found by its state directory.

use crate::core::registry::{Object, ROOT_ENV, Record, root, start_ticks};
use anyhow::Context;
use std::path::{Path, PathBuf};

/// The environment variable `lab run` sets for its command: finds the processes a dead `lab run` started.
const LAB_ENV: &str = "SYNCBENCH_LAB_MOUNT";

#[derive(Debug)]
pub struct Leftover {
    /// The record (none for a lab whose server died: its state directory is its record).
    file: Option<PathBuf>,
    record: Record,
    /// For a lab: what is still there of it (server pid, processes its command started).
    lab: Option<LabRemains>,
}

#[derive(Debug, Default)]
struct LabRemains {
    server_pid: Option<u32>,
    processes: Vec<u32>,
    state_dir: bool,
    /// The record of the mount directory the dead command made for the lab: removed with it.
    made_dir: Option<PathBuf>,
}

impl Leftover {
    /// One line: what, left by whom, and the command that removes it.
    pub fn describe(&self) -> String {
        let r = &self.record;
        format!(
            "left by syncbench {} (pid {}, gone): {}; remove with: {}",
            r.command,
            r.pid,
            self.what(),
            self.remover()
        )
    }

    fn what(&self) -> String {
        match &self.record.object {
            Object::Mount { dir, fs_type, source, .. } => format!("{fs_type} mount of {source} at {}", dir.display()),
            Object::Loop { device: Some(device), diskseq: Some(_), .. } => loop_text(device),
            Object::Loop { backing_file, .. } => {
                format!("loop device {} on {}", loops_on(backing_file).join(", "), backing_file.display())
            }
            Object::Path { path } if path.is_dir() => format!("directory {}", path.display()),
            Object::Path { path } => format!("file {}", path.display()),
            Object::Lab { mount } => {
                let remains = self.lab.as_ref().map(LabRemains::describe).unwrap_or_default();
                format!("lab at {}{remains}", mount.display())
            }
        }
    }

    fn remover(&self) -> String {
        match &self.record.object {
            Object::Mount { dir, remove_dir: true, .. } => format!("umount -l {0} && rmdir {0}", quote(dir)),
            Object::Mount { dir, .. } => format!("umount -l {}", quote(dir)),
            Object::Loop { device: Some(device), diskseq: Some(_), .. } => format!("losetup -d {device}"),
            Object::Loop { backing_file, .. } => format!("losetup -d {}", loops_on(backing_file).join(" ")),
            // --one-file-system: never into a file system still mounted inside.
            Object::Path { path } => format!("rm -r --one-file-system {}", quote(path)),
            Object::Lab { mount } => {
                let kill: Vec<String> = self.lab.iter().flat_map(|l| &l.processes).map(u32::to_string).collect();
                let down = format!("syncbench lab down {}", quote(mount));
                if kill.is_empty() { down } else { format!("kill {} && {down}", kill.join(" ")) }
            }
        }
    }
}

impl LabRemains {
    fn is_there(&self, mount: &Path) -> bool {
        self.state_dir || !self.processes.is_empty() || (self.made_dir.is_some() && mount.is_dir())
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(pid) = self.server_pid {
            parts.push(format!("server pid {pid} still serving"));
        } else if self.state_dir {
            parts.push("its server's state".to_string());
        }
        if self.made_dir.is_some() {
            parts.push("its mount directory".to_string());
        }
        if !self.processes.is_empty() {
            let pids: Vec<String> = self.processes.iter().map(u32::to_string).collect();
            parts.push(format!("its command still running (pid {})", pids.join(", ")));
        }
        if parts.is_empty() { String::new() } else { format!(" ({})", parts.join("; ")) }
    }
}

fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+%,=@:".contains(c)) {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Every leftover in the registry, in removal order (processes' labs first, mounts from the top of a stack
/// down, directories last); deletes stale records on the way.
pub fn leftovers() -> Vec<Leftover> {
    leftovers_in(&root())
}

fn leftovers_in(root: &Path) -> Vec<Leftover> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let file = entry.path();
        if file.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Some(record) = std::fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str::<Record>(&t).ok())
        else {
            continue;
        };
        if is_alive(record.pid, record.start_ticks) {
            continue;
        }
        for (file, record) in name_loop_devices(&file, record) {
            let lab = match &record.object {
                Object::Lab { mount } => Some(lab_remains(mount, record.start_ticks)),
                _ => None,
            };
            let leftover = Leftover { file: Some(file.clone()), record, lab };
            if leftover.still_there() {
                found.push(leftover);
            } else {
                let _ = std::fs::remove_file(&file);
            }
        }
    }
    let recorded_labs = fold_mount_dirs_into_labs(&mut found);
    found.extend(dead_lab_servers(&found).into_iter().filter(|l| match &l.record.object {
        Object::Lab { mount } => !recorded_labs.contains(mount),
        _ => true,
    }));
    found.sort_by_key(|l| (l.order(), std::cmp::Reverse(l.file.clone())));
    found
}

/// A dead process's loop record that does not name its device (it died between the attach and the record's
/// update): each device reading its backing file now gets a record naming it and its disk sequence number,
/// written before anything is removed. Removing the FUSE mount under it (first, see [`Leftover::order`])
/// detaches that mount lazily, and from then on the backing file reads `/image`: found by its path only, the
/// device would read as gone and stay attached, unrecorded, for good.
fn name_loop_devices(file: &Path, record: Record) -> Vec<(PathBuf, Record)> {
    let Object::Loop { backing_file, diskseq: None, .. } = &record.object else {
        return vec![(file.to_path_buf(), record)];
    };
    let mut named = Vec::new();
    for device in loops_on(backing_file) {
        let Ok(Some(diskseq)) = crate::core::registry::loop_diskseq(&device) else { continue };
        let object =
            Object::Loop { backing_file: backing_file.clone(), device: Some(device.clone()), diskseq: Some(diskseq) };
        let one = Record { object, ..record.clone() };
        let target =
            if named.is_empty() { file.to_path_buf() } else { file.with_extension(format!("{}.json", named.len())) };
        if crate::core::registry::rewrite_record(&target, &one).is_ok() {
            crate::core::registry::note_loop_attached(&device, diskseq);
            named.push((target, one));
        }
    }
    if named.is_empty() { vec![(file.to_path_buf(), record)] } else { named }
}

/// A dead `lab run`'s mount directory goes with its lab (`lab down` removes both, in order): one line.
/// The mount points of the labs found.
fn fold_mount_dirs_into_labs(found: &mut Vec<Leftover>) -> Vec<PathBuf> {
    let labs: Vec<PathBuf> = found
        .iter()
        .filter_map(|l| match &l.record.object {
            Object::Lab { mount } => Some(mount.clone()),
            _ => None,
        })
        .collect();
    let (dirs, rest): (Vec<Leftover>, Vec<Leftover>) = std::mem::take(found)
        .into_iter()
        .partition(|l| matches!(&l.record.object, Object::Path { path } if labs.contains(path)));
    *found = rest;
    for dir in dirs {
        let Object::Path { path } = &dir.record.object else { continue };
        let lab = found.iter_mut().find(|l| matches!(&l.record.object, Object::Lab { mount } if mount == path));
        if let Some(remains) = lab.and_then(|l| l.lab.as_mut()) {
            remains.made_dir = dir.file.clone();
        }
    }
    labs
}

/// Labs whose server died (killed, or the machine's OOM killer): their state directory says what they set
/// up. Removed first, by `lab down`'s own cleanup, which also removes what the server's records name.
#[cfg(feature = "fuse")]
fn dead_lab_servers(found: &[Leftover]) -> Vec<Leftover> {
    // With a registry of its own (a test's), only the labs whose servers recorded there are its own.
    let own_registry = std::env::var_os(ROOT_ENV).is_some_and(|v| !v.is_empty());
    let recorded_here = |pid: u32| found.iter().any(|l| l.record.pid == pid);
    let Ok(entries) = std::fs::read_dir(crate::proof::lab::control::STATE_ROOT) else { return Vec::new() };
    let states = entries.flatten().filter_map(|e| crate::proof::lab::control::read_state(&e.path()).ok());
    states
        .filter(|state| !is_alive(state.pid, 0) && (!own_registry || recorded_here(state.pid)))
        .map(|state| Leftover {
            file: None,
            record: Record {
                pid: state.pid,
                start_ticks: 0,
                command: "lab serve".to_string(),
                object: Object::Lab { mount: state.mount.clone() },
            },
            lab: Some(LabRemains { state_dir: true, ..LabRemains::default() }),
        })
        .collect()
}

#[cfg(not(feature = "fuse"))]
fn dead_lab_servers(_found: &[Leftover]) -> Vec<Leftover> {
    Vec::new()
}

impl Leftover {
    /// Whether the object is still what was recorded (else the record is stale).
    fn still_there(&self) -> bool {
        match &self.record.object {
            Object::Mount { dir, fs_type, source, .. } => {
                mount_at(dir).is_some_and(|(t, s)| &t == fs_type && &s == source)
            }
            Object::Loop { device: Some(device), diskseq: Some(seq), .. } => {
                crate::core::registry::loop_is_attached(device, *seq)
            }
            Object::Loop { backing_file, .. } => !loops_on(backing_file).is_empty(),
            Object::Path { path } => is_ours(path) && std::fs::symlink_metadata(path).is_ok(),
            Object::Lab { mount } => self.lab.as_ref().is_some_and(|l| l.is_there(mount)),
        }
    }

    fn order(&self) -> u8 {
        match &self.record.object {
            Object::Lab { .. } => 0,
            // A FUSE server that died can leave a thread of its own blocked on a request to itself (an fsync
            // through the loop device), and the process cannot finish dying: its connection is aborted first.
            Object::Mount { fs_type, .. } if fs_type.starts_with("fuse") => 1,
            Object::Mount { .. } => 2,
            Object::Loop { .. } => 3,
            Object::Path { .. } => 4,
        }
    }
}

/// Report every leftover on stderr, one line each, and how to remove them all (every command does this
/// first). Quiet when there are none or the registry cannot be read.
pub fn report_leftovers() {
    let found = leftovers();
    for leftover in &found {
        eprintln!("syncbench: {}", leftover.describe());
    }
    if !found.is_empty() {
        eprintln!("syncbench: `syncbench cleanup` removes all {} left behind (nothing else)", found.len());
    }
}

/// Remove every leftover; what each removal did or why it failed, one line each (`Err` for a failure).
pub fn remove_leftovers() -> Vec<Result<String, String>> {
    leftovers().into_iter().map(|l| l.remove()).collect()
}

/// Remove the leftover lab at `mount` (with its dead command's processes and mount directory, and what its
/// server recorded if the server died: FUSE mount, loop device, file system), for `lab down`.
pub fn remove_lab_leftovers(mount: &Path) -> Vec<Result<String, String>> {
    let server = lab_server_pid(mount);
    let ours = |l: &Leftover| match &l.record.object {
        Object::Lab { mount: m } => m == mount,
        _ => server == Some(l.record.pid),
    };
    leftovers().into_iter().filter(ours).map(|l| l.remove()).collect()
}

#[cfg(feature = "fuse")]
fn lab_server_pid(mount: &Path) -> Option<u32> {
    crate::proof::lab::control::read_state(&crate::proof::lab::control::state_dir(mount)).ok().map(|s| s.pid)
}

#[cfg(not(feature = "fuse"))]
fn lab_server_pid(_mount: &Path) -> Option<u32> {
    None
}

impl Leftover {
    /// Remove the object (checked again just before), then the record.
    pub fn remove(self) -> Result<String, String> {
        let what = self.what();
        if !self.still_there_now() {
            self.delete_record();
            return Ok(format!("{what}: already gone"));
        }
        let result = match &self.record.object {
            Object::Mount { dir, remove_dir, .. } => remove_mount(dir, *remove_dir),
            Object::Loop { device: Some(device), diskseq: Some(seq), .. } => remove_loop(device, *seq),
            Object::Loop { backing_file, .. } => {
                loops_on(backing_file).iter().try_for_each(|device| program("losetup", &["-d", device]))
            }
            Object::Path { path } => remove_dir(path),
            Object::Lab { mount } => remove_lab(mount, self.lab.as_ref()),
        };
        match result {
            Ok(()) => {
                self.delete_record();
                Ok(format!("removed {what}"))
            }
            Err(e) => Err(format!("could not remove {what}: {e:#}")),
        }
    }
}

impl Leftover {
    fn delete_record(&self) {
        if let Some(file) = &self.file {
            let _ = std::fs::remove_file(file);
        }
    }

    /// Checked again just before removing: removing one object (a lab) may have removed others.
    fn still_there_now(&self) -> bool {
        match &self.record.object {
            Object::Lab { mount } => {
                let made_dir = self.lab.as_ref().and_then(|l| l.made_dir.clone());
                LabRemains { made_dir, ..lab_remains(mount, self.record.start_ticks) }.is_there(mount)
            }
            _ => self.still_there(),
        }
    }
}

fn remove_mount(dir: &Path, remove_dir: bool) -> anyhow::Result<()> {
    if mount_at(dir).is_some_and(|(fs_type, _)| fs_type.starts_with("fuse")) {
        abort_fuse(dir)?;
    }
    let text = dir.to_str().with_context(|| format!("path is not UTF-8: {}", dir.display()))?;
    // A file system whose users are gone unmounts; one still busy is detached so the table is clean.
    if program("umount", &[text]).is_err() {
        program("umount", &["-l", text])?;
    }
    if remove_dir {
        std::fs::remove_dir(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(())
}

/// Remove a directory syncbench made, unless something is mounted in it (removing through a mount would
/// delete what is on it; the mounts are removed first, and one that could not be is reported).
fn remove_dir(path: &Path) -> anyhow::Result<()> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    if let Some(inner) = mount_points(&mountinfo).into_iter().find(|m| m.starts_with(path)) {
        anyhow::bail!("{} is still mounted", inner.display());
    }
    let removed = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    removed.with_context(|| format!("removing {}", path.display()))
}

fn mount_points(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo.lines().filter_map(|l| l.split(' ').nth(4)).map(|m| PathBuf::from(unescape(m))).collect()
}

#[cfg(feature = "fuse")]
fn remove_lab(mount: &Path, remains: Option<&LabRemains>) -> anyhow::Result<()> {
    for &pid in remains.map(|r| r.processes.as_slice()).unwrap_or_default() {
        stop_process(pid);
    }
    let dir = crate::proof::lab::control::state_dir(mount);
    // A live server, ready or still starting, stops on SIGTERM and tears its lab down itself.
    let server = remains.and_then(|r| r.server_pid).filter(|&pid| is_alive(pid, 0)).or_else(|| starting_server(mount));
    if let Some(pid) = server {
        stop_process_within(pid, std::time::Duration::from_secs(60));
    }
    if dir.exists() && crate::proof::lab::control::read_state(&dir).is_err() {
        // Made by a command that died before its server started (or said what it set up): only the log.
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    if let Ok(state) = crate::proof::lab::control::read_state(&dir) {
        // A dead server's own blocked thread may keep it from dying (see `Leftover::order`).
        let fuse_dir = state.image.parent().filter(|d| mount_at(d).is_some_and(|(t, _)| t.starts_with("fuse")));
        if let Some(fuse_dir) = fuse_dir.filter(|_| !is_alive(state.pid, 0)) {
            abort_fuse(fuse_dir)?;
        }
    }
    if dir.exists() {
        let client = crate::proof::lab::control::Client::for_mount(mount)?;
        crate::proof::lab::daemon::down(&client)?;
    }
    if let Some(record) = remains.and_then(|r| r.made_dir.as_ref()) {
        std::fs::remove_dir(mount).or_else(not_found_is_ok).with_context(|| format!("removing {}", mount.display()))?;
        let _ = std::fs::remove_file(record);
    }
    Ok(())
}

fn not_found_is_ok(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) }
}

#[cfg(not(feature = "fuse"))]
fn remove_lab(_mount: &Path, _remains: Option<&LabRemains>) -> anyhow::Result<()> {
    anyhow::bail!("this syncbench was built without FUSE support, which lab needs")
}

/// Where the kernel lists FUSE connections (fusectl; mounted here only for the abort, if it is not).
const FUSE_CONNECTIONS: &str = "/sys/fs/fuse/connections";

/// Abort the FUSE connection of the mount at `dir` (its server is gone): every request waiting on it fails
/// at once, so nothing stays blocked on it and it unmounts.
fn abort_fuse(dir: &Path) -> anyhow::Result<()> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    let conn = fuse_connection(&mountinfo, dir).with_context(|| format!("no FUSE mount at {}", dir.display()))?;
    let abort = Path::new(FUSE_CONNECTIONS).join(conn.to_string()).join("abort");
    let mounted_here = !abort.exists();
    if mounted_here {
        program("mount", &["-t", "fusectl", "fusectl", FUSE_CONNECTIONS])?;
    }
    let written = std::fs::write(&abort, "1").with_context(|| format!("writing {}", abort.display()));
    if mounted_here {
        program("umount", &[FUSE_CONNECTIONS])?;
    }
    written
}

/// The connection number of the FUSE mount at `dir`: its device number (`0:40` is connection 40).
fn fuse_connection(mountinfo: &str, dir: &Path) -> Option<u64> {
    let want = dir.to_string_lossy();
    let line = mountinfo.lines().rev().find(|l| l.split(' ').nth(4).is_some_and(|m| unescape(m) == want))?;
    let (major, minor) = line.split(' ').nth(2)?.split_once(':')?;
    Some((major.parse::<u64>().ok()? << 20) | minor.parse::<u64>().ok()?)
}

/// Run a system program (umount, losetup); its stderr, on one line, in the error.
fn program(name: &str, args: &[&str]) -> anyhow::Result<()> {
    let path = crate::proof::lab::prereq::find_program(name).with_context(|| format!("{name} not found"))?;
    let out = std::process::Command::new(path).args(args).stdin(std::process::Stdio::null()).output()?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stderr = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        anyhow::bail!("{name} {} failed ({}): {stderr}", args.join(" "), out.status);
    }
    Ok(())
}

/// SIGTERM, up to 2 s to exit, then SIGKILL.
fn stop_process(pid: u32) {
    stop_process_within(pid, std::time::Duration::from_secs(2));
}

fn stop_process_within(pid: u32, limit: std::time::Duration) {
    let Ok(raw) = i32::try_from(pid) else { return };
    let _ = syncbench_sys::ptrace::send_signal(raw, libc::SIGTERM);
    let deadline = std::time::Instant::now() + limit;
    while is_alive(pid, 0) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if is_alive(pid, 0) {
        let _ = syncbench_sys::ptrace::send_signal(raw, libc::SIGKILL);
    }
}

#[cfg(feature = "fuse")]
/// What is left of a lab whose recording command died: its server (if alive), the processes started with
/// `SYNCBENCH_LAB_MOUNT=<mount>` after the command began, and whether its state directory exists.
fn lab_remains(mount: &Path, owner_start_ticks: u64) -> LabRemains {
    let state_dir = crate::proof::lab::control::state_dir(mount);
    let server_pid = match crate::proof::lab::control::read_state(&state_dir) {
        Ok(state) => Some(state.pid).filter(|&pid| is_alive(pid, 0)),
        // Still starting: not in its state yet, but its command line names the mount.
        Err(_) => starting_server(mount),
    };
    let processes = processes_of_lab(mount, owner_start_ticks);
    LabRemains { server_pid, processes, state_dir: state_dir.exists(), made_dir: None }
}

#[cfg(not(feature = "fuse"))]
fn lab_remains(_mount: &Path, _owner_start_ticks: u64) -> LabRemains {
    LabRemains::default()
}

/// A `syncbench lab serve` process whose `--config` serves `mount`.
fn starting_server(mount: &Path) -> Option<u32> {
    let want = format!("\"mount\":{}", serde_json::to_string(mount).ok()?);
    let entries = std::fs::read_dir("/proc").ok()?;
    entries.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).find(|&pid| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let serve = args.windows(2).any(|w| w[0] == "lab" && w[1] == "serve");
        serve && args.iter().any(|a| a.contains(&want)) && is_alive(pid, 0)
    })
}

fn processes_of_lab(mount: &Path, after_ticks: u64) -> Vec<u32> {
    let want = format!("{LAB_ENV}={}", mount.display()).into_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id() && start_ticks(pid).is_some_and(|t| t >= after_ticks))
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == want))
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// Whether `pid` runs (see [`syncbench_sys::process::is_running`]: not a zombie), is not dying of a SIGKILL
/// and, if `start_ticks` is not 0, is the process that started then.
fn is_alive(pid: u32, ticks: u64) -> bool {
    syncbench_sys::process::is_running(pid) && !killed(pid) && (ticks == 0 || start_ticks(pid) == Some(ticks))
}

/// Whether a SIGKILL is pending for `pid`. Such a process is dying, and it may be unable to finish: a
/// thread in an fsync on a file system whose FUSE server was one of its own (now killed) threads waits in
/// the kernel until that connection is aborted, which is cleanup's job (seen: `fsync-errors` killed
/// mid-measurement, stuck in jbd2_log_wait_commit). So it counts as dead, not as a live owner.
fn killed(pid: u32) -> bool {
    sigkill_pending(&std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default())
}

/// Whether a `/proc/PID/status` text has SIGKILL among its pending signals (thread or process).
pub(crate) fn sigkill_pending(status: &str) -> bool {
    const SIGKILL_BIT: u64 = 1 << (9 - 1);
    status
        .lines()
        .filter_map(|l| l.strip_prefix("ShdPnd:").or_else(|| l.strip_prefix("SigPnd:")))
        .filter_map(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .any(|mask| mask & SIGKILL_BIT != 0)
}

/// The type and source of the topmost mount at `dir`, from `/proc/self/mountinfo`.
pub fn mount_at(dir: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_in(&text, dir)
}

fn mount_in(mountinfo: &str, dir: &Path) -> Option<(String, String)> {
    let want = dir.to_string_lossy();
    mountinfo.lines().rev().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        (unescape(before.split(' ').nth(4)?) == want).then_some(())?;
        let mut rest = after.split(' ');
        Some((rest.next()?.to_string(), unescape(rest.next()?)))
    })
}

/// Undo mountinfo's octal escapes (`\040` for a space, …).
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut chars = field.chars().peekable();
    while let Some(c) = chars.next() {
        let digits: String = chars.clone().take(3).collect();
        match (c, u8::from_str_radix(&digits, 8)) {
            ('\\', Ok(byte)) if digits.len() == 3 => {
                out.push(char::from(byte));
                chars.nth(2);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The loop devices (`/dev/loopN`) reading `backing_file` now.
fn loops_on(backing_file: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else { return Vec::new() };
    let mut found: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let text = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            let file = text.trim_end_matches('\n').trim_end_matches(" (deleted)");
            (Path::new(file) == backing_file).then(|| format!("/dev/{name}"))
        })
        .collect();
    found.sort();
    found
}

/// A loop device syncbench attached, as it stands: its backing file as the kernel shows it now, whether
/// detach was asked (autoclear) and which processes hold it open.
fn loop_text(device: &str) -> String {
    let sys = Path::new("/sys/block").join(device.trim_start_matches("/dev/"));
    let read = |name: &str| std::fs::read_to_string(sys.join(name)).unwrap_or_default().trim().to_string();
    let mut text = format!("loop device {device} on {}", read("loop/backing_file"));
    let holders: Vec<String> = loop_holders(device).iter().map(u32::to_string).collect();
    match (read("loop/autoclear") == "1", holders.is_empty()) {
        (true, true) => text.push_str(" (detach asked while it was busy)"),
        (true, false) => text.push_str(&format!(" (detach asked while busy; held open by pid {})", holders.join(", "))),
        (false, false) => text.push_str(&format!(" (held open by pid {})", holders.join(", "))),
        (false, true) => {}
    }
    text
}

/// Detach the loop device syncbench attached as `device` (disk sequence number `diskseq`), unless a file
/// system is still mounted on it (the mounts syncbench recorded are removed before any loop device; one
/// still there is not ours to unmount). A device still open elsewhere only gets autoclear: that is an
/// error naming the holders, and the record stays until the device is gone.
fn remove_loop(device: &str, diskseq: u64) -> anyhow::Result<()> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    let mounted = mountinfo
        .lines()
        .filter_map(|l| l.split_once(" - "))
        .find(|(_, after)| after.split(' ').nth(1).is_some_and(|source| unescape(source) == device));
    if let Some((before, _)) = mounted {
        let dir = unescape(before.split(' ').nth(4).unwrap_or("?"));
        anyhow::bail!("{device} is still mounted at {dir}, which syncbench did not record: unmount it first");
    }
    program("losetup", &["-d", device])?;
    // Not busy: the detach happens in the call. Give a racing last close a moment anyway.
    for _ in 0..50 {
        if !crate::core::registry::loop_is_attached(device, diskseq) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let holders: Vec<String> = loop_holders(device).iter().map(u32::to_string).collect();
    let by = if holders.is_empty() { "something".to_string() } else { format!("pid {}", holders.join(", ")) };
    anyhow::bail!("{device} is still open ({by}): detach is asked and happens when that closes it")
}

/// The processes with `device` open, or a file on a file system on it (also one lazily unmounted), or
/// their working directory there.
fn loop_holders(device: &str) -> Vec<u32> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let sys = Path::new("/sys/block").join(device.trim_start_matches("/dev/"));
    let Some(dev) = std::fs::read_to_string(sys.join("dev")).ok().and_then(|t| dev_number(t.trim())) else {
        return Vec::new();
    };
    let holds = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| m.dev() == dev || (m.file_type().is_block_device() && m.rdev() == dev))
    };
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id())
        .filter(|&pid| {
            let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).into_iter().flatten().flatten();
            holds(Path::new(&format!("/proc/{pid}/cwd"))) || fds.map(|fd| fd.path()).any(|p| holds(&p))
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// `MAJOR:MINOR` (as `/sys/block/*/dev` has it) as the kernel's `dev_t` (glibc's `makedev`).
fn dev_number(text: &str) -> Option<u64> {
    let (major, minor) = text.split_once(':')?;
    let (major, minor): (u64, u64) = (major.parse().ok()?, minor.parse().ok()?);
    Some(((major & 0xffff_f000) << 32) | ((major & 0xfff) << 8) | ((minor & 0xffff_ff00) << 12) | (minor & 0xff))
}

/// Only `.syncbench-*` directories are ever recorded, and only those are removed.
fn is_ours(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(crate::core::cleanup::PREFIX))
}

#[cfg(test)]
#[path = "leftovers_tests.rs"]
mod tests;
