//! The storage stack an emulated disk lives in, built and torn down in order:
//! image file → FUSE server with the device model → loop device → mkfs → mount.
//!
//! `syncbench lab` and `syncbench fsync-errors` both build this one stack: the lab to run anything on a
//! disk whose truth is known (and cut its power), fsync-errors to fail chosen writes.
//!
//! Teardown runs in reverse (unmount, detach the loop device, unmount FUSE, remove the image) on every
//! path: when the [`Stack`] is dropped after success or error, and on SIGINT/SIGTERM. Work with a stack runs
//! inside [`run_exclusive`]; the signal hook waits for it to finish and tear down normally (a few seconds
//! at most; long-running users poll [`cleanup::interrupted`]) and stops the next one from starting. Only if
//! that takes too long does it tear down from the process-wide record of what is set up, detaching lazily
//! what is still busy. One stack per process is recorded for that (the lab server and fsync-errors build one at
//! a time).

use super::model::{AimSpec, CutReport, DeviceModel, Stats};
use super::profile::DeviceParams;
use super::server::{Device, FileMedium, IMAGE_NAME, ImageFs};
use crate::core::cleanup::{self, Created};
use crate::core::registry::{self, Recorded};
use crate::proof::lab::cases::FsCase;
use crate::proof::lab::fault::FaultSwitch;
use crate::proof::lab::prereq::find_program;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, Once, TryLockError};
use std::time::{Duration, Instant};

/// `mkfs.xfs` refuses devices smaller than 300 MB: the smallest image the stack builds.
pub const MIN_IMAGE_BYTES: u64 = 320 << 20;
/// `statfs` magic of a FUSE mount.
const FUSE_MAGIC: u64 = 0x6573_5546;

/// What to build.
#[derive(Clone, Debug)]
pub struct StackConfig {
    /// The file system made on the emulated disk.
    pub fs: FsCase,
    /// The device model's parameters (a profile with overrides).
    pub params: DeviceParams,
    /// Seed of the model's background destaging order.
    pub seed: u64,
    /// Size of the emulated disk (a sparse image file).
    pub size_bytes: u64,
    /// Mount the file system here (an existing empty directory); `None`: a private directory.
    pub mount_dir: Option<PathBuf>,
    /// Where the image file and the FUSE mount go (a private directory is made inside).
    pub work_parent: PathBuf,
    /// Names the private directory: `.syncbench-<label>-<pid>-<n>`.
    pub label: &'static str,
    /// How the stack above the model is run (not what the device does: the model is the same either way).
    pub tuning: StackTuning,
}

/// How the layers above the device model are run: they change the stack's own cost and how many requests
/// can overlap at the model, never what the model does with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StackTuning {
    /// Attach the loop device with direct I/O (`losetup --direct-io=on`): no page cache of the image
    /// inside the loop device, and reads and writes submitted asynchronously, so several can be in flight.
    pub loop_direct_io: bool,
    /// Threads reading FUSE requests (each with its own cloned /dev/fuse descriptor).
    pub fuse_threads: usize,
    /// Keep idle CPUs polling while the stack is up (a PM QoS request of 0 µs wake-up latency, see
    /// [`syncbench_sys::request_cpu_latency`]). A request hops between the loop driver, a FUSE thread and
    /// the completer; on this project's VM a halted vCPU woken for each hop cost `zero`'s 8 KiB commit
    /// 87 µs at the median against 46 µs polling (bench/lab_cpu_idle.sh, docs/benchmarks.md "lab stack
    /// cost"). The machine's other work is not slowed (a polling CPU runs whatever becomes runnable), but an
    /// idle machine burns its idle CPUs while a lab is up.
    #[serde(default)]
    pub cpu_idle_poll: bool,
}

/// The default, chosen by bench/lab_stack_cost.sh and bench/lab_queue.sh (docs/benchmarks.md, "lab stack
/// cost"): direct I/O and 4 threads let requests overlap at the model (a flush saw up to 15 in flight
/// under 16 writers, never more than 1 before) and cost no more per commit than the buffered single thread.
impl Default for StackTuning {
    fn default() -> StackTuning {
        StackTuning { loop_direct_io: true, fuse_threads: 4, cpu_idle_poll: true }
    }
}

impl StackTuning {
    /// The default, with `SYNCBENCH_LAB_LOOP_DIO=on|off`, `SYNCBENCH_LAB_FUSE_THREADS=N` and
    /// `SYNCBENCH_LAB_CPU_IDLE=poll|default` applied (what bench/lab_stack_cost.sh and bench/lab_cpu_idle.sh
    /// alternate; an unreadable value is ignored with a warning).
    pub fn from_env() -> StackTuning {
        let mut tuning = StackTuning::default();
        if let Ok(text) = std::env::var("SYNCBENCH_LAB_LOOP_DIO") {
            match text.as_str() {
                "on" => tuning.loop_direct_io = true,
                "off" => tuning.loop_direct_io = false,
                other => eprintln!("syncbench lab: ignoring SYNCBENCH_LAB_LOOP_DIO={other:?} (on or off)"),
            }
        }
        if let Ok(text) = std::env::var("SYNCBENCH_LAB_FUSE_THREADS") {
            match text.parse::<usize>() {
                Ok(n @ 1..=64) => tuning.fuse_threads = n,
                _ => eprintln!("syncbench lab: ignoring SYNCBENCH_LAB_FUSE_THREADS={text:?} (1 to 64)"),
            }
        }
        if let Ok(text) = std::env::var("SYNCBENCH_LAB_CPU_IDLE") {
            match text.as_str() {
                "poll" => tuning.cpu_idle_poll = true,
                "default" => tuning.cpu_idle_poll = false,
                other => eprintln!("syncbench lab: ignoring SYNCBENCH_LAB_CPU_IDLE={other:?} (poll or default)"),
            }
        }
        tuning
    }
}

impl StackConfig {
    /// A stack for `fs` with `params`, in the system temporary directory, at the smallest size.
    pub fn new(fs: FsCase, params: DeviceParams) -> StackConfig {
        StackConfig {
            fs,
            params,
            seed: 1,
            size_bytes: MIN_IMAGE_BYTES,
            mount_dir: None,
            work_parent: std::env::temp_dir(),
            label: "lab",
            tuning: StackTuning::from_env(),
        }
    }
}

/// What a power cut and the reboot after it did.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CutOutcome {
    /// What the device's cache lost.
    pub device: CutReport,
    /// The file system would not mount after the cut and was repaired first (the repair program's name).
    pub repaired_with: Option<String>,
    /// The old file system was busy and was detached lazily instead of unmounted.
    pub detached_lazily: bool,
    /// The loop device the file system is on now.
    pub loop_device: String,
    /// Wall time of the whole cut and reboot.
    pub reboot_ms: u64,
    /// What the file system's files lost: writes still in the page cache die with the power, before the
    /// device ever saw them.
    #[serde(default)]
    pub files: FilesLost,
    /// For an aimed cut ([`Stack::cut_aimed`]): what it aimed at and whether it got it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aim: Option<AimOutcome>,
}

/// What an aimed cut waits for: a write in flight that is not part of a sequential stream (a data page
/// written back, not a log append), or, with `within`, one that touches one of the given byte ranges.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CutAim {
    /// The write must be at least this long (e.g. the database's page size).
    pub min_write_bytes: u64,
    /// How long to wait for such a write; then the cut happens anyway (and says the aim was missed).
    pub max_wait: Duration,
    /// If not empty: the write must touch one of these byte ranges of the disk (e.g. the table files'
    /// extents) instead of merely not continuing one of the last 64 writes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<std::ops::Range<u64>>,
}

/// Whether an aimed cut found its write.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AimOutcome {
    /// What it waited for.
    pub aim: CutAim,
    /// A matching write was in flight when the power went (see `device.aimed_at`, and `device.torn` for
    /// the units it tore into); if not, the cut came at `max_wait`, at whatever moment that was.
    pub met: bool,
    /// How long it waited.
    pub waited_ms: u64,
}

/// How often an aimed cut looks whether its write came (the cut itself happens as the write arrives).
const AIM_POLL: Duration = Duration::from_millis(2);

/// Regular files in the lab before the cut and after the reboot, compared by size (what a user sees: a file
/// that shrank or vanished). Data overwritten in place without a size change is not counted here.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FilesLost {
    /// Regular files before the cut.
    pub files_before: u64,
    /// Files that are shorter after the reboot.
    pub files_shrunk: u64,
    /// Files that are gone after the reboot.
    pub files_gone: u64,
    /// Bytes of file data the sizes lost (shrunk files' differences plus vanished files' sizes).
    pub bytes_lost: u64,
}

/// Every regular file's size under `root` (not crossing into other mounts; unreadable parts skipped: the
/// comparison is of what can be seen on both sides).
fn file_sizes(root: &Path) -> std::collections::BTreeMap<PathBuf, u64> {
    use std::os::unix::fs::MetadataExt;
    let mut sizes = std::collections::BTreeMap::new();
    let Ok(top) = std::fs::metadata(root) else { return sizes };
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.dev() != top.dev() {
                continue;
            }
            if meta.is_dir() {
                dirs.push(entry.path());
            } else if meta.is_file() {
                sizes.insert(entry.path().strip_prefix(root).unwrap_or(&entry.path()).to_path_buf(), meta.len());
            }
        }
    }
    sizes
}

fn files_lost(
    before: &std::collections::BTreeMap<PathBuf, u64>,
    after: &std::collections::BTreeMap<PathBuf, u64>,
) -> FilesLost {
    let mut lost = FilesLost { files_before: before.len() as u64, ..FilesLost::default() };
    for (path, &size) in before {
        match after.get(path) {
            None => {
                lost.files_gone += 1;
                lost.bytes_lost += size;
            }
            Some(&now) if now < size => {
                lost.files_shrunk += 1;
                lost.bytes_lost += size - now;
            }
            Some(_) => {}
        }
    }
    lost
}

/// What is set up right now, for the signal hook.
#[derive(Debug, Default)]
struct Active {
    fs_mount: Option<PathBuf>,
    loop_device: Option<String>,
    fuse_mount: Option<PathBuf>,
}

static ACTIVE: Mutex<Active> = Mutex::new(Active { fs_mount: None, loop_device: None, fuse_mount: None });

/// Held while work with a stack builds, runs and tears down.
static CASE_RUNNING: Mutex<()> = Mutex::new(());
/// How long the signal hook waits for the running work to finish on its own.
const SIGNAL_WAIT: Duration = Duration::from_secs(15);

/// Run `work` (build, use, teardown) unless the process was interrupted; `None` if it was.
pub fn run_exclusive<T>(work: impl FnOnce() -> T) -> Option<T> {
    install_signal_hook();
    let _running = CASE_RUNNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if cleanup::interrupted() {
        return None;
    }
    Some(work())
}

fn active() -> std::sync::MutexGuard<'static, Active> {
    ACTIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A mounted file system on a loop device over the FUSE-served, modelled disk.
pub struct Stack {
    /// The switch that makes image writes fail (never armed by the lab).
    pub faults: FaultSwitch,
    config: StackConfig,
    device: Arc<Device>,
    completer: Option<std::thread::JoinHandle<()>>,
    backing_path: PathBuf,
    image_path: PathBuf,
    mount_dir: PathBuf,
    loop_device: Option<String>,
    fs_mounted: bool,
    fuse: Option<fuser::BackgroundSession>,
    /// Idle CPUs kept polling while the stack is up ([`StackTuning::cpu_idle_poll`]).
    _cpu_idle_poll: Option<syncbench_sys::CpuLatencyRequest>,
    /// The records of what is set up now (see [`registry`]): deleted once each is removed, so what a
    /// killed process left is found by the next syncbench.
    records: Records,
    /// Declared last: the work directory is removed after everything in it is unmounted.
    _workdir: Created,
}

#[derive(Debug, Default)]
struct Records {
    fuse: Option<Recorded>,
    loop_device: Option<Recorded>,
    fs_mount: Option<Recorded>,
}

/// A 0 µs wake-up latency request, or `None` with a warning (once per process) when the kernel refuses it:
/// the lab then works, each hop of a request paying an idle CPU's wake-up.
fn keep_cpus_polling() -> Option<syncbench_sys::CpuLatencyRequest> {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    match syncbench_sys::request_cpu_latency(0) {
        Ok(request) => Some(request),
        Err(e) => {
            if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                eprintln!(
                    "syncbench lab: cannot keep idle CPUs polling (/dev/cpu_dma_latency: {e}); the stack's own cost \
                     then includes waking idle CPUs"
                );
            }
            None
        }
    }
}

impl Stack {
    /// Build the whole stack: image, FUSE server, loop device, mkfs, mount.
    pub fn build(config: StackConfig) -> anyhow::Result<Stack> {
        let workdir = config.work_parent.join(cleanup::unique_name(config.label));
        let (guard, ()) = Created::create(workdir.clone(), |p| {
            std::fs::create_dir(p).with_context(|| format!("cannot create {}", p.display()))
        })?;
        let backing_path = workdir.join("image.img");
        let backing = syncbench_sys::create_new(&backing_path, syncbench_sys::OpenFlags::BUFFERED)
            .context("creating the image file")?;
        syncbench_sys::set_len(&backing, config.size_bytes).context("sizing the image file")?;
        let faults = FaultSwitch::default();
        let model = DeviceModel::new(config.params.clone(), config.seed);
        let device = Device::new(model, FileMedium(backing), config.size_bytes, Some(faults.clone()));
        let completer = {
            let device = device.clone();
            std::thread::Builder::new().name("lab-completer".into()).spawn(move || device.run_completer())?
        };
        let fuse_dir = workdir.join("fuse");
        let mount_dir = config.mount_dir.clone().unwrap_or_else(|| workdir.join("mnt"));
        let mut stack = Stack {
            faults,
            device,
            completer: Some(completer),
            backing_path,
            image_path: fuse_dir.join(IMAGE_NAME),
            mount_dir,
            loop_device: None,
            fs_mounted: false,
            fuse: None,
            _cpu_idle_poll: config.tuning.cpu_idle_poll.then(keep_cpus_polling).flatten(),
            records: Records::default(),
            config,
            _workdir: guard,
        };
        stack.serve_image(&fuse_dir)?;
        stack.attach_loop()?;
        let device = stack.loop_device.clone().context("no loop device")?;
        let (mkfs, flags) = stack.config.fs.mkfs();
        let mut args = flags.to_vec();
        args.push(&device);
        run(mkfs, &args)?;
        if stack.config.mount_dir.is_none() {
            std::fs::create_dir(&stack.mount_dir)?;
        }
        stack.mount(false)?;
        // On a disk that ignores flushes, mkfs's writes could otherwise still be in the cache at the first cut.
        stack.device.model().settle(stack.device.medium()).context("settling the new disk")?;
        Ok(stack)
    }

    /// The file system this stack was built for.
    pub fn case(&self) -> FsCase {
        self.config.fs
    }

    /// What the stack was built from.
    pub fn config(&self) -> &StackConfig {
        &self.config
    }

    /// Where the file system is mounted.
    pub fn mount_dir(&self) -> &Path {
        &self.mount_dir
    }

    /// The loop device the file system is on.
    pub fn loop_device(&self) -> Option<&str> {
        self.loop_device.as_deref()
    }

    /// The FUSE-served image the loop device reads.
    pub fn image_path(&self) -> &Path {
        &self.image_path
    }

    /// The image file on the host (what is durable).
    pub fn backing_path(&self) -> &Path {
        &self.backing_path
    }

    /// The device's counters, latency summaries and cut reports.
    pub fn stats(&self) -> Stats {
        self.device.model().stats()
    }

    /// Change the device model's parameters while everything stays mounted (`lab set`).
    pub fn set_params(&mut self, params: DeviceParams) {
        self.device.model().set_params(params.clone());
        self.config.params = params;
    }

    /// Unmount and mount the file system again (everything cached for it is gone afterwards).
    pub fn remount(&mut self) -> anyhow::Result<()> {
        self.unmount_fs()?;
        self.mount(false)
    }

    /// Read `len` bytes at `offset` of the image directly from the backing file: what the "disk" holds durably.
    pub fn read_image(&self, offset: u64, len: usize) -> anyhow::Result<Vec<u8>> {
        let fd = syncbench_sys::open_read_only(&self.backing_path)?;
        let mut buf = vec![0u8; len];
        syncbench_sys::pread_exact(&fd, &mut buf, offset).context("reading the image")?;
        Ok(buf)
    }

    /// Power cut and reboot: the device loses its volatile cache as the model says for `seed` and fails
    /// every request of the old generation; the old file system is unmounted (lazily if busy), the loop
    /// device detached and a new one attached, and the file system mounted again (journal replay),
    /// repaired first if it will not mount.
    pub fn cut(&mut self, seed: u64) -> anyhow::Result<CutOutcome> {
        let started = Instant::now();
        let sizes_before = file_sizes(&self.mount_dir);
        let report = {
            let device = &self.device;
            let mut model = device.model();
            model.cut(seed, device.medium()).context("writing the destaged data to the image")?
        };
        self.reboot(started, report, &sizes_before)
    }

    /// A power cut aimed at a data-page write: wait up to `aim.max_wait` for a write that matches `aim`
    /// and cut the power the moment it arrives, so it is in flight (torn at untorn-unit boundaries if it
    /// spans two or more units, see [`super::profile::DeviceParams::untorn_bytes`]); then reboot as
    /// [`Stack::cut`] does. If none comes in time, the cut happens then and `aim.met` is false. The files'
    /// sizes compared after the reboot are those from when the wait began.
    pub fn cut_aimed(&mut self, seed: u64, aim: CutAim) -> anyhow::Result<CutOutcome> {
        self.cut_aimed_then(seed, aim, || ())
    }

    /// [`Stack::cut_aimed`], calling `at_power_off` the moment the device lost power, before the reboot (a
    /// database campaign freezes its processes there: the load ran on while the cut waited for its write).
    pub fn cut_aimed_then(
        &mut self,
        seed: u64,
        aim: CutAim,
        at_power_off: impl FnOnce(),
    ) -> anyhow::Result<CutOutcome> {
        let started = Instant::now();
        let sizes_before = file_sizes(&self.mount_dir);
        let spec = AimSpec { min_write_bytes: aim.min_write_bytes, within: aim.within.clone() };
        self.device.model().arm_aim(seed, spec, self.device.medium());
        let (fired, met) = loop {
            std::thread::sleep(AIM_POLL);
            let mut model = self.device.model();
            if let Some(fired) = model.take_aimed_cut() {
                break (fired, true);
            }
            if started.elapsed() >= aim.max_wait || cleanup::interrupted() {
                break match model.disarm_aim() {
                    Some(fired) => (fired, true),
                    None => (model.cut(seed, self.device.medium()), false),
                };
            }
        };
        let waited_ms = started.elapsed().as_millis() as u64;
        at_power_off();
        let report = fired.context("writing the destaged data to the image")?;
        let mut outcome = self.reboot(started, report, &sizes_before)?;
        outcome.aim = Some(AimOutcome { aim, met, waited_ms });
        Ok(outcome)
    }

    /// After the device lost power: unmount, a new loop device, mount (repaired if it must be).
    fn reboot(
        &mut self,
        started: Instant,
        report: CutReport,
        sizes_before: &std::collections::BTreeMap<PathBuf, u64>,
    ) -> anyhow::Result<CutOutcome> {
        let detached_lazily = self.unmount_fs_after_cut()?;
        self.detach_loop();
        self.attach_loop()?;
        let repaired_with = self.mount_after_cut(detached_lazily)?;
        let files = files_lost(sizes_before, &file_sizes(&self.mount_dir));
        Ok(CutOutcome {
            aim: None,
            files,
            device: report,
            repaired_with,
            detached_lazily,
            loop_device: self.loop_device.clone().unwrap_or_default(),
            reboot_ms: started.elapsed().as_millis() as u64,
        })
    }

    fn serve_image(&mut self, fuse_dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir(fuse_dir)?;
        let mut config = fuser::Config::default();
        config.mount_options = vec![fuser::MountOption::FSName("syncbench-lab".to_string())];
        config.n_threads = Some(self.config.tuning.fuse_threads.max(1));
        config.clone_fd = true;
        let server = ImageFs(self.device.clone());
        self.records.fuse = Some(registry::record_mount(fuse_dir, "fuse", "syncbench-lab", false)?);
        let session = fuser::spawn_mount(server, fuse_dir, &config).context("mounting the FUSE image server")?;
        active().fuse_mount = Some(fuse_dir.to_path_buf());
        self.fuse = Some(session);
        expect_magic(fuse_dir, FUSE_MAGIC, "fuse")
    }

    fn attach_loop(&mut self) -> anyhow::Result<()> {
        self.records.loop_device = Some(registry::record_loop(&self.image_path)?);
        let mut args = vec!["--find", "--show"];
        if self.config.tuning.loop_direct_io {
            args.push("--direct-io=on");
        }
        args.push(path_str(&self.image_path)?);
        let device = run("losetup", &args)?;
        let device = device.trim().to_string();
        active().loop_device = Some(device.clone());
        self.loop_device = Some(device.clone());
        match self.records.loop_device.as_mut() {
            Some(record) => registry::loop_attached(record, &device),
            None => Ok(()),
        }
    }

    fn detach_loop(&mut self) {
        if let Some(device) = self.loop_device.take() {
            // On a device still in use this only sets autoclear: it detaches when the last user closes it.
            let detached = run("losetup", &["-d", &device]).map(drop);
            // Kept if the device could not be detached, or (autoclear) is not detached yet: then it is still
            // there to find and remove. Kept past this stack, too: dropping the guard (at the next attach or
            // at teardown) would delete the record of a device still attached.
            if let Some(record) = self.records.loop_device.take() {
                if detached.is_ok() { registry::loop_detach_asked(record) } else { record.keep() }
            }
            warn_on_error("losetup -d", detached);
            active().loop_device = None;
        }
    }

    fn mount(&mut self, nouuid: bool) -> anyhow::Result<()> {
        let device = self.loop_device.clone().context("no loop device")?;
        let dir = path_str(&self.mount_dir)?;
        let mut options = self.config.fs.mount_options().to_string();
        if nouuid {
            // The lazily detached old xfs is still alive with the same UUID.
            options.push_str(",nouuid");
        }
        let fs_type = self.config.fs.fs_type();
        self.records.fs_mount = Some(registry::record_mount(&self.mount_dir, fs_type, &device, false)?);
        run("mount", &["-t", fs_type, "-o", &options, &device, dir])?;
        self.fs_mounted = true;
        active().fs_mount = Some(self.mount_dir.clone());
        // Writing into the bare directory underneath a failed mount would test the wrong file system.
        expect_magic(&self.mount_dir, self.config.fs.magic(), self.config.fs.fs_type())
    }

    fn unmount_fs(&mut self) -> anyhow::Result<()> {
        if std::mem::take(&mut self.fs_mounted) {
            active().fs_mount = None;
            unmount(&self.mount_dir)?;
            self.records.fs_mount = None;
        }
        Ok(())
    }

    /// Unmount the dead file system; `true` if it was busy and only detached lazily.
    fn unmount_fs_after_cut(&mut self) -> anyhow::Result<bool> {
        if !std::mem::take(&mut self.fs_mounted) {
            return Ok(false);
        }
        active().fs_mount = None;
        let dir = path_str(&self.mount_dir)?;
        if run("umount", &[dir]).is_ok() {
            self.records.fs_mount = None;
            return Ok(false);
        }
        // Open files keep it busy; the processes holding them see a dead disk (EIO) from now on.
        lazy_unmount(&self.mount_dir)?;
        self.records.fs_mount = None;
        Ok(true)
    }

    /// Mount after a cut; if that fails, repair the file system (as a boot-time fsck would) and retry.
    fn mount_after_cut(&mut self, nouuid: bool) -> anyhow::Result<Option<String>> {
        let nouuid = nouuid && self.config.fs == FsCase::Xfs;
        let first = match self.mount(nouuid) {
            Ok(()) => return Ok(None),
            Err(e) => e,
        };
        let device = self.loop_device.clone().context("no loop device")?;
        let repair = match self.config.fs.fs_type() {
            "ext4" => vec!["e2fsck", "-f", "-y", &device],
            "xfs" => vec!["xfs_repair", "-L", &device],
            // A log tree the cache lost ("bad tree block start … failed to read log tree"): drop the log, losing
            // what was fsynced since the last transaction commit, as an administrator would.
            "btrfs" => vec!["btrfs", "rescue", "zero-log", &device],
            other => bail!("{other} does not mount after the power cut ({first:#}) and has no repair step here"),
        };
        let status = Command::new(find_program(repair[0]).with_context(|| format!("{} not found", repair[0]))?)
            .args(&repair[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        // e2fsck: 1 and 2 mean "errors corrected".
        if !(status.success() || (repair[0] == "e2fsck" && matches!(status.code(), Some(1 | 2)))) {
            bail!("the file system does not mount after the power cut ({first:#}) and {} failed ({status})", repair[0]);
        }
        self.mount(nouuid).with_context(|| format!("mounting after {} (first attempt: {first:#})", repair[0]))?;
        Ok(Some(repair[..repair.len() - 1].join(" ")))
    }

    fn teardown(&mut self) {
        if let Err(e) = self.unmount_fs() {
            eprintln!("syncbench: warning: unmount failed during teardown: {e:#}");
        }
        self.detach_loop();
        if let Some(session) = self.fuse.take() {
            let fuse_dir = active().fuse_mount.clone();
            let unmounted = match session.umount_and_join() {
                Ok(()) => Ok(()),
                Err(e) => {
                    eprintln!("syncbench: warning: FUSE unmount failed ({e}); detaching it lazily");
                    fuse_dir.map_or(Ok(()), |dir| lazy_unmount(&dir))
                }
            };
            if unmounted.is_ok() {
                self.records.fuse = None;
            }
            warn_on_error("umount -l", unmounted);
        }
        self.device.stop();
        if let Some(completer) = self.completer.take() {
            let _ = completer.join();
        }
        *active() = Active::default();
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Register, once per process, the signal-time teardown of whatever is set up.
fn install_signal_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| cleanup::on_signal(on_signal));
}

/// Let the running work finish and tear down, keep the next one from starting; force teardown if stuck.
fn on_signal() {
    let deadline = Instant::now() + SIGNAL_WAIT;
    loop {
        match CASE_RUNNING.try_lock() {
            Ok(guard) => return std::mem::forget(guard),
            Err(TryLockError::Poisoned(poisoned)) => return std::mem::forget(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() >= deadline => {
                eprintln!("syncbench: the running work did not stop in time; tearing it down under it");
                return teardown_active();
            }
            Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Signal-time teardown: the main thread may still hold descriptors, so fall back to lazy unmounts.
fn teardown_active() {
    let now = std::mem::take(&mut *active());
    if let Some(dir) = now.fs_mount {
        warn_on_error("unmount", unmount(&dir));
    }
    if let Some(device) = now.loop_device {
        warn_on_error("losetup -d", run("losetup", &["-d", &device]).map(drop));
    }
    if let Some(dir) = now.fuse_mount {
        let result = path_str(&dir).and_then(|d| run("umount", &[d])).map(drop);
        warn_on_error("FUSE unmount", result.or_else(|_| lazy_unmount(&dir)));
    }
}

/// `umount DIR`, retried briefly while busy, then detached lazily so nothing stays in the mount table.
pub fn unmount(dir: &Path) -> anyhow::Result<()> {
    let dir_text = path_str(dir)?;
    let mut last = None;
    for _ in 0..5 {
        match run("umount", &[dir_text]) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let busy = last.expect("at least one attempt");
    eprintln!("syncbench: warning: {} stayed busy ({busy:#}); detaching it lazily", dir.display());
    lazy_unmount(dir).with_context(|| format!("{busy:#}"))
}

/// `umount -l DIR`.
pub fn lazy_unmount(dir: &Path) -> anyhow::Result<()> {
    run("umount", &["-l", path_str(dir)?]).map(drop)
}

fn warn_on_error(what: &str, result: anyhow::Result<()>) {
    if let Err(e) = result {
        eprintln!("syncbench: warning: {what} failed during teardown: {e:#}");
    }
}

fn expect_magic(dir: &Path, magic: u64, name: &str) -> anyhow::Result<()> {
    let fd = syncbench_sys::open_dir(dir)?;
    let got = syncbench_sys::fs_magic(&fd)?;
    if got != magic {
        bail!("{} is not a {name} mount after mounting (statfs magic {got:#x})", dir.display());
    }
    Ok(())
}

fn path_str(path: &Path) -> anyhow::Result<&str> {
    path.to_str().with_context(|| format!("path is not UTF-8: {}", path.display()))
}

/// Run a setup program; its stdout on success, its stderr in the error otherwise.
pub fn run(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let path = find_program(program).with_context(|| format!("{program} not found"))?;
    let output = Command::new(&path)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {program}"))?;
    if !output.status.success() {
        // One line: users get one line per problem.
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
        bail!("{program} {} failed ({}): {stderr}", args.join(" "), output.status);
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_cache_s_loss_is_what_the_files_sizes_lost() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("wal"), vec![0u8; 409_600]).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/new"), vec![0u8; 4096]).unwrap();
        std::fs::write(dir.path().join("kept"), b"abc").unwrap();
        let before = file_sizes(dir.path());
        assert_eq!(before.len(), 3);
        std::fs::write(dir.path().join("wal"), vec![0u8; 204_800]).unwrap();
        std::fs::remove_file(dir.path().join("d/new")).unwrap();
        let lost = files_lost(&before, &file_sizes(dir.path()));
        assert_eq!(lost, FilesLost { files_before: 3, files_shrunk: 1, files_gone: 1, bytes_lost: 204_800 + 4096 });
        assert_eq!(files_lost(&before, &before), FilesLost { files_before: 3, ..FilesLost::default() });
    }
}
