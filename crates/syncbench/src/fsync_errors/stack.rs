//! The storage stack one case runs on, built and torn down in order:
//! backing file → FUSE image server → loop device → mkfs → mount.
//!
//! Teardown runs in reverse (unmount, detach the loop device, unmount FUSE) on every path: when the
//! [`Stack`] is dropped after success or error, and on SIGINT/SIGTERM. A case runs inside
//! [`run_exclusive`]; the signal hook waits for the running case to finish and tear down normally (a few
//! seconds at most) and stops the next one from starting. Only if that takes too long does it tear down
//! from the process-wide record of what is set up, detaching lazily what is still busy.

use super::cases::FsCase;
use super::fault::FaultSwitch;
use super::imagefs::{IMAGE_NAME, ImageFs};
use crate::cleanup::{self, Created};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, Once, TryLockError};
use std::time::{Duration, Instant};

/// Size of the disk image: `mkfs.xfs` refuses devices smaller than 300 MB. The backing file is sparse.
pub const IMAGE_SIZE_BYTES: u64 = 320 << 20;
/// `statfs` magic of a FUSE mount.
const FUSE_MAGIC: u64 = 0x6573_5546;

/// What is set up right now, for the signal hook.
#[derive(Debug, Default)]
struct Active {
    fs_mount: Option<PathBuf>,
    loop_device: Option<String>,
    fuse_mount: Option<PathBuf>,
}

static ACTIVE: Mutex<Active> = Mutex::new(Active { fs_mount: None, loop_device: None, fuse_mount: None });

/// Held while a case builds, runs and tears down its stack.
static CASE_RUNNING: Mutex<()> = Mutex::new(());
/// How long the signal hook waits for the running case to finish on its own.
const SIGNAL_WAIT: Duration = Duration::from_secs(15);

/// Run one case (build, experiment, teardown) unless the process was interrupted; `None` if it was.
pub fn run_exclusive<T>(case: impl FnOnce() -> T) -> Option<T> {
    install_signal_hook();
    let _running = CASE_RUNNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if cleanup::interrupted() {
        return None;
    }
    Some(case())
}

fn active() -> std::sync::MutexGuard<'static, Active> {
    ACTIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A mounted file system on a loop device over the FUSE-served image.
pub struct Stack {
    /// The switch that makes image writes fail.
    pub faults: FaultSwitch,
    case: FsCase,
    backing_path: PathBuf,
    mount_dir: PathBuf,
    loop_device: Option<String>,
    fs_mounted: bool,
    fuse: Option<fuser::BackgroundSession>,
    /// Declared last: the work directory is removed after everything in it is unmounted.
    _workdir: Created,
}

impl Stack {
    /// Build the whole stack for `case` in a private directory under the system temporary directory.
    pub fn build(case: FsCase) -> anyhow::Result<Stack> {
        let workdir = std::env::temp_dir().join(cleanup::unique_name("fsync-errors"));
        let guard = Created::register(workdir.clone());
        std::fs::create_dir(&workdir).with_context(|| format!("cannot create {}", workdir.display()))?;
        let mut stack = Stack {
            faults: FaultSwitch::default(),
            case,
            backing_path: workdir.join("image.img"),
            mount_dir: workdir.join("mnt"),
            loop_device: None,
            fs_mounted: false,
            fuse: None,
            _workdir: guard,
        };
        let fuse_dir = workdir.join("fuse");
        stack.serve_image(&fuse_dir)?;
        let device = run("losetup", &["--find", "--show", path_str(&fuse_dir.join(IMAGE_NAME))?])?;
        let device = device.trim().to_string();
        active().loop_device = Some(device.clone());
        stack.loop_device = Some(device.clone());
        let (mkfs, flags) = case.mkfs();
        let mut args = flags.to_vec();
        args.push(&device);
        run(mkfs, &args)?;
        std::fs::create_dir(&stack.mount_dir)?;
        stack.mount()?;
        Ok(stack)
    }

    /// The file system this stack was built for.
    pub fn case(&self) -> FsCase {
        self.case
    }

    /// Where the file system under test is mounted.
    pub fn mount_dir(&self) -> &Path {
        &self.mount_dir
    }

    /// Unmount and mount the file system again (everything cached for it is gone afterwards).
    pub fn remount(&mut self) -> anyhow::Result<()> {
        unmount(&self.mount_dir)?;
        self.fs_mounted = false;
        active().fs_mount = None;
        self.mount()
    }

    /// Read `len` bytes at `offset` of the image directly from the backing file: what the "disk" holds.
    pub fn read_image(&self, offset: u64, len: usize) -> anyhow::Result<Vec<u8>> {
        let fd = syncbench_sys::open_read_only(&self.backing_path)?;
        let mut buf = vec![0u8; len];
        syncbench_sys::pread_exact(&fd, &mut buf, offset).context("reading the image")?;
        Ok(buf)
    }

    fn serve_image(&mut self, fuse_dir: &Path) -> anyhow::Result<()> {
        let flags = syncbench_sys::OpenFlags::BUFFERED;
        let backing = syncbench_sys::create_new(&self.backing_path, flags).context("creating the image file")?;
        syncbench_sys::set_len(&backing, IMAGE_SIZE_BYTES).context("sizing the image file")?;
        std::fs::create_dir(fuse_dir)?;
        let server = ImageFs::new(backing, IMAGE_SIZE_BYTES, self.faults.clone());
        let mut config = fuser::Config::default();
        config.mount_options = vec![fuser::MountOption::FSName("syncbench-image".to_string())];
        let session = fuser::spawn_mount(server, fuse_dir, &config).context("mounting the FUSE image server")?;
        active().fuse_mount = Some(fuse_dir.to_path_buf());
        self.fuse = Some(session);
        expect_magic(fuse_dir, FUSE_MAGIC, "fuse")
    }

    fn mount(&mut self) -> anyhow::Result<()> {
        let device = self.loop_device.clone().context("no loop device")?;
        let dir = path_str(&self.mount_dir)?;
        run("mount", &["-t", self.case.fs_type(), "-o", self.case.mount_options(), &device, dir])?;
        self.fs_mounted = true;
        active().fs_mount = Some(self.mount_dir.clone());
        // Writing into the bare directory underneath a failed mount would test the wrong file system.
        expect_magic(&self.mount_dir, self.case.magic(), self.case.fs_type())
    }

    fn teardown(&mut self) {
        if std::mem::take(&mut self.fs_mounted) {
            warn_on_error("unmount", unmount(&self.mount_dir));
        }
        if let Some(device) = self.loop_device.take() {
            warn_on_error("losetup -d", run("losetup", &["-d", &device]).map(drop));
        }
        if let Some(session) = self.fuse.take() {
            let fuse_dir = active().fuse_mount.clone();
            if let Err(e) = session.umount_and_join() {
                eprintln!("syncbench: warning: FUSE unmount failed ({e}); detaching it lazily");
                if let Some(dir) = fuse_dir {
                    warn_on_error("umount -l", lazy_unmount(&dir));
                }
            }
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

/// Let the running case finish and tear down, keep the next one from starting; force teardown if stuck.
fn on_signal() {
    let deadline = Instant::now() + SIGNAL_WAIT;
    loop {
        match CASE_RUNNING.try_lock() {
            Ok(guard) => return std::mem::forget(guard),
            Err(TryLockError::Poisoned(poisoned)) => return std::mem::forget(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() >= deadline => {
                eprintln!("syncbench: the running case did not stop in time; tearing it down under it");
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
        // On a busy device this only sets autoclear: it detaches when the last user closes it.
        warn_on_error("losetup -d", run("losetup", &["-d", &device]).map(drop));
    }
    if let Some(dir) = now.fuse_mount {
        let result = path_str(&dir).and_then(|d| run("umount", &[d])).map(drop);
        warn_on_error("FUSE unmount", result.or_else(|_| lazy_unmount(&dir)));
    }
}

/// `umount DIR`, retried briefly while busy, then detached lazily so nothing stays in the mount table.
fn unmount(dir: &Path) -> anyhow::Result<()> {
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

fn lazy_unmount(dir: &Path) -> anyhow::Result<()> {
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
fn run(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let path = super::prereq::find_program(program).with_context(|| format!("{program} not found"))?;
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
