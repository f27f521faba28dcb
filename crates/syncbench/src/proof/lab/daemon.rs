//! Starting a detached lab server, the server's life, and cleaning up after a server that died.
//!
//! `lab up` checks everything it can, creates the state directory, and starts `syncbench lab serve` in a
//! process group of its own (a Ctrl-C meant for the shell's foreground job must not reach it) with its
//! stderr in the state directory's log. The server builds the stack, writes `state.json`, says `ready` on
//! its stdout and serves until `down` or SIGTERM. If `up` is interrupted before that, it sends the server
//! SIGTERM and waits for it: the server finishes what it is building, tears it all down and exits.

use super::control::{self, LOG_FILE, State};
use super::profile::{DeviceParams, DiskArgs};
use super::stack::{self, Stack, StackConfig};
use crate::core::cleanup::Created;
use crate::core::exit::usage;
use crate::proof::lab::cases::FsCase;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use syncbench_sys::process::is_running;

impl DiskArgs {
    /// What `up` and `run` build, checked: a bad flag is one line and exit 2.
    pub fn plan(&self, mount: PathBuf) -> anyhow::Result<ServeConfig> {
        use crate::proof::lab::stack::MIN_IMAGE_BYTES;
        let profile = crate::proof::lab::profile::by_name(&self.profile).map_err(usage)?;
        let size_bytes = crate::core::units::parse_size(&self.size)
            .ok_or_else(|| usage(format!("--size {:?} is not a size; use e.g. 4GiB or 512MiB", self.size)))?;
        if size_bytes < MIN_IMAGE_BYTES {
            return Err(usage(format!(
                "--size must be at least 320MiB (mkfs.xfs refuses smaller disks), not {}",
                self.size
            )));
        }
        let fs = self.fs.case();
        if let Some(why) = crate::proof::lab::prereq::missing_for_case(fs) {
            return Err(usage(format!("lab cannot make {}: {why}", fs.fs_type())));
        }
        let work_parent = std::env::temp_dir();
        if syncbench_sys::free_bytes(&work_parent).unwrap_or(u64::MAX) < MIN_IMAGE_BYTES {
            return Err(usage(format!("{} has less than 320 MiB free for the disk image", work_parent.display())));
        }
        let params = self.overrides.apply(profile.params);
        Ok(ServeConfig { profile: profile.name.into(), params, fs, seed: self.seed, size_bytes, mount, work_parent })
    }
}

/// What the server is asked to build (passed to `lab serve` as JSON).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServeConfig {
    /// Profile name (for state and probe).
    pub profile: String,
    /// The device parameters.
    pub params: DeviceParams,
    /// The file system.
    pub fs: FsCase,
    /// Seed of the background destaging order.
    pub seed: u64,
    /// Disk size.
    pub size_bytes: u64,
    /// The mount point (absolute, existing, empty).
    pub mount: PathBuf,
    /// Where the image goes.
    pub work_parent: PathBuf,
}

/// How long `up` waits for the server to be ready (mkfs of a large xfs on a loaded machine is slow).
const READY_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a stopping server may take to tear down.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Why `up` cannot start a lab at `mount`, as one line; `None` if it can.
pub fn refusal(mount: &Path) -> Option<String> {
    let dir = control::state_dir(mount);
    if let Ok(state) = control::read_state(&dir) {
        return Some(if is_running(state.pid) {
            format!(
                "a lab is already up at {} (server pid {}); `syncbench lab down {0}` first",
                mount.display(),
                state.pid
            )
        } else {
            format!(
                "a lab at {} was left behind by a server that died; `syncbench lab down {0}` cleans it up",
                mount.display()
            )
        });
    }
    if dir.exists() {
        return Some(format!("a lab is being set up at {} ({} exists)", mount.display(), dir.display()));
    }
    if is_mount_point(mount) {
        return Some(format!("{} is already a mount point; choose an empty directory", mount.display()));
    }
    match std::fs::read_dir(mount).map(|mut entries| entries.next().is_some()) {
        Ok(true) => {
            Some(format!("{} is not empty; the lab mounts over it, so give it an empty directory", mount.display()))
        }
        Ok(false) => None,
        Err(e) => Some(format!("{} is not a usable directory ({e}); create an empty one", mount.display())),
    }
}

/// Whether `path` is a mount point (in /proc/self/mountinfo; octal escapes of spaces are decoded).
fn is_mount_point(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else { return false };
    let want = path.to_string_lossy();
    text.lines().filter_map(|l| l.split(' ').nth(4)).any(|m| m.replace("\\040", " ") == want)
}

/// Where a started server is, as the signal hook sees it.
enum Phase {
    /// The state directory exists; the server process may be about to start.
    Starting,
    /// The server runs and is ours to stop.
    Running(Child),
    /// Stopped (or reaped after `down`): nothing more to do.
    Stopped,
    /// Left running on purpose (`up` succeeded): the signal hook must not touch it.
    Detached,
}

/// A started server, shared with the signal hook. The server is spawned under the same lock the hook takes,
/// so a Ctrl-C either finds the server and stops it or keeps it from ever starting.
#[derive(Clone)]
pub struct Server {
    phase: Arc<Mutex<Phase>>,
    state_dir: PathBuf,
}

impl Server {
    /// Start the server for `config` and wait until it has mounted the file system. On error or when
    /// interrupted, nothing is left behind.
    pub fn start(config: &ServeConfig) -> anyhow::Result<(Server, State)> {
        let state_dir = control::state_dir(&config.mount);
        std::fs::create_dir_all(control::STATE_ROOT).context("creating /run/syncbench-lab")?;
        std::fs::create_dir(&state_dir).with_context(|| format!("creating {}", state_dir.display()))?;
        let server = Server { phase: Arc::new(Mutex::new(Phase::Starting)), state_dir };
        let hook = server.clone();
        crate::core::cleanup::on_signal(move || hook.stop());
        let result = server.spawn_and_wait(config);
        if result.is_err() {
            server.stop();
        }
        Ok((server.clone(), result?))
    }

    fn spawn_and_wait(&self, config: &ServeConfig) -> anyhow::Result<State> {
        let log = std::fs::File::create(self.state_dir.join(LOG_FILE)).context("creating the server log")?;
        let stdout = {
            let mut phase = self.lock();
            if !matches!(*phase, Phase::Starting) {
                bail!("interrupted before the lab server started");
            }
            let mut child = Command::new(std::env::current_exe().context("finding syncbench's own executable")?)
                .args(["lab", "serve", "--config", &serde_json::to_string(config)?])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(log)
                .process_group(0)
                .spawn()
                .context("starting the lab server")?;
            let stdout = child.stdout.take().context("the server's stdout")?;
            *phase = Phase::Running(child);
            stdout
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(READY_TIMEOUT).unwrap_or_default();
        match line.trim() {
            "ready" => control::read_state(&self.state_dir),
            "" => bail!("the lab server exited without saying why (see {})", self.state_dir.join(LOG_FILE).display()),
            text => bail!("{}", text.strip_prefix("error: ").unwrap_or(text)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Unless the server was detached or already stopped: SIGTERM it if it runs, wait for it to tear
    /// down, and remove the state directory (and whatever a server that died before cleaning up left).
    pub fn stop(&self) {
        let previous = std::mem::replace(&mut *self.lock(), Phase::Stopped);
        match previous {
            Phase::Detached => *self.lock() = Phase::Detached,
            Phase::Stopped => {}
            Phase::Starting => {
                let _ = std::fs::remove_dir_all(&self.state_dir);
            }
            Phase::Running(mut child) => {
                if let Ok(None) = child.try_wait() {
                    let _ = syncbench_sys::ptrace::send_signal(child.id() as i32, libc::SIGTERM);
                    wait_with_timeout(&mut child, STOP_TIMEOUT);
                }
                if let Ok(state) = control::read_state(&self.state_dir) {
                    warn_on_error(clean_after_dead_server(&self.state_dir, &state));
                }
                let _ = std::fs::remove_dir_all(&self.state_dir);
            }
        }
    }

    /// Wait for the server to exit after a `down` (it confirmed teardown already; this reaps it).
    pub fn reap(&self) {
        if let Phase::Running(mut child) = std::mem::replace(&mut *self.lock(), Phase::Stopped) {
            wait_with_timeout(&mut child, STOP_TIMEOUT);
        }
    }

    /// Let the server run on without us (after a successful `up`).
    pub fn detach(self) {
        *self.lock() = Phase::Detached;
    }
}

fn warn_on_error(result: anyhow::Result<()>) {
    if let Err(e) = result {
        eprintln!("syncbench: warning: cleaning up after the lab server: {e:#}");
    }
}

fn wait_with_timeout(child: &mut Child, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("syncbench: the lab server (pid {}) did not stop in time; killing it", child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// The server process: build the stack, publish its state, say `ready`, serve, tear down.
pub fn serve_main(config: ServeConfig) -> anyhow::Result<()> {
    let state_dir = control::state_dir(&config.mount);
    // Owned from here on: removed after teardown, on error and on SIGTERM.
    let state_guard = Created::register(state_dir.clone());
    let mut out = std::io::stdout();
    let outcome = stack::run_exclusive(|| -> anyhow::Result<()> {
        let stack_config = StackConfig {
            fs: config.fs,
            params: config.params.clone(),
            seed: config.seed,
            size_bytes: config.size_bytes,
            mount_dir: Some(config.mount.clone()),
            work_parent: config.work_parent.clone(),
            label: "lab",
            tuning: stack::StackTuning::from_env(),
        };
        let built = Stack::build(stack_config).and_then(|stack| {
            let listener = control::listen(&state_dir)?;
            control::write_state(&state_dir, &control::state_of(&stack, &config.profile))?;
            Ok((stack, listener))
        });
        let (mut stack, listener) = match built {
            Ok(built) => built,
            Err(e) => {
                let _ = writeln!(out, "error: {e:#}");
                return Err(e);
            }
        };
        writeln!(out, "ready")?;
        out.flush()?;
        let down = control::serve(&mut stack, &listener, &state_dir, &config.profile);
        drop(stack);
        drop(listener);
        if let Some(conn) = down {
            drop(state_guard);
            control::confirm_down(conn);
        }
        Ok(())
    });
    outcome.unwrap_or(Ok(()))
}

/// Clean up after a lab whose server is gone: unmount, detach, unmount FUSE, remove the image and state.
pub fn clean_after_dead_server(dir: &Path, state: &State) -> anyhow::Result<()> {
    if is_mount_point(&state.mount) {
        stack::unmount(&state.mount)?;
    }
    if !state.loop_device.is_empty() && loop_backing_is(&state.loop_device, &state.image) {
        stack::run("losetup", &["-d", &state.loop_device])?;
    }
    if let Some(fuse_dir) = state.image.parent().filter(|dir| is_mount_point(dir)) {
        stack::lazy_unmount(fuse_dir)?;
    }
    // The work directory syncbench created: …/.syncbench-lab-*/image.img.
    if let Some(work) = state.backing_file.parent() {
        let ours = work.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".syncbench-lab-"));
        if ours {
            std::fs::remove_dir_all(work).with_context(|| format!("removing {}", work.display()))?;
        }
    }
    std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
}

/// Whether loop device `device` (e.g. `/dev/loop3`) is backed by `image`.
pub fn loop_backing_is(device: &str, image: &Path) -> bool {
    let name = device.trim_start_matches("/dev/");
    std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
        .is_ok_and(|text| Path::new(text.trim()) == image)
}

/// Take down the lab at `mount` (through its server, or by hand if the server is gone); its last state.
pub fn down(client: &control::Client) -> anyhow::Result<State> {
    let state = client.state()?;
    if is_running(state.pid) {
        let asked = client.down();
        // Confirmed: the process is about to exit. Refused: it may be dying (a SIGKILLed server takes a
        // moment to release its FUSE mount). Either way, wait for it briefly.
        let deadline = Instant::now() + Duration::from_secs(5);
        while is_running(state.pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        match asked {
            Ok(()) => return Ok(state),
            Err(e) if is_running(state.pid) => return Err(e),
            Err(_) => {}
        }
    }
    clean_after_dead_server(client.state_dir(), &state)?;
    Ok(state)
}

/// `lab run`: bring a lab up at `config.mount`, run `command` with `SYNCBENCH_LAB_MOUNT` and
/// `SYNCBENCH_LAB_PROFILE` set, take the lab down; the command's exit status.
pub fn run_command(config: &ServeConfig, command: &[std::ffi::OsString]) -> anyhow::Result<std::process::ExitStatus> {
    let (server, state) = Server::start(config)?;
    let (program, rest) = command.split_first().context("no command to run")?;
    let status = Command::new(program)
        .args(rest)
        .env("SYNCBENCH_LAB_MOUNT", &config.mount)
        .env("SYNCBENCH_LAB_PROFILE", &state.profile)
        .status();
    let down = control::Client::for_mount(&config.mount).and_then(|c| c.down());
    match &down {
        Ok(()) => server.reap(),
        Err(_) => server.stop(),
    }
    let status =
        status.map_err(|e| crate::core::exit::usage(format!("cannot run {}: {e}", program.to_string_lossy())))?;
    down?;
    Ok(status)
}

/// `lab up`: refuse a mount point that cannot take a lab (one line, exit 2), else start a server that keeps
/// serving after this process exits; the lab's state.
pub fn up(config: &ServeConfig) -> anyhow::Result<State> {
    if let Some(why) = refusal(&config.mount) {
        return Err(crate::core::exit::usage(why));
    }
    let (server, state) = Server::start(config)?;
    // A Ctrl-C that arrived meanwhile owns the exit: its handler stops the server.
    crate::core::cleanup::stop_if_interrupted();
    server.detach();
    Ok(state)
}
