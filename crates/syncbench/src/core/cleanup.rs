//! Remove every file and directory syncbench created, on success, error, SIGINT and SIGTERM.
//!
//! Anything syncbench creates in a user's directory is registered here first (and its name starts with
//! `.syncbench-`). Dropping a [`Created`] guard removes it at once; `remove_all` and the signal handler
//! remove whatever is still registered.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Each registered path, with its record in the per-boot registry if it has one: the signal handler, which
/// exits without dropping the guards, deletes the record of each path it removed.
static REGISTERED: Mutex<Vec<(PathBuf, Option<PathBuf>)>> = Mutex::new(Vec::new());

/// The prefix of every name syncbench creates in a user's directory.
pub const PREFIX: &str = ".syncbench-";

/// A path syncbench created; removed (file, or directory tree) when dropped.
#[derive(Debug)]
pub struct Created {
    path: PathBuf,
    /// In the per-boot registry too, when this process may write it (root): what a SIGKILL leaves is then
    /// found and removed by a later syncbench. Deleted after the path is removed.
    _record: Option<crate::core::registry::Recorded>,
}

impl Created {
    /// Register `path` (which the caller is about to create, or has just created exclusively).
    pub fn register(path: PathBuf) -> Created {
        let ours = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(PREFIX));
        let record = ours
            .then(|| crate::core::registry::record(crate::core::registry::Object::Path { path: path.clone() }).ok())
            .flatten();
        lock().push((path.clone(), record.as_ref().map(|r| r.file().to_path_buf())));
        Created { path, _record: record }
    }

    /// Register `path` and create it with `make` (which must create it exclusively), as one step the
    /// signal handler cannot cut in two: a path registered before it exists, and removed by the handler
    /// before `make` ran, would otherwise be made after the handler's sweep and left behind (a watch
    /// killed with SIGTERM between two intervals once left a `.syncbench-fallocate-*` file so). Once a
    /// signal is being handled no new path is made: the calling thread waits for the handler's exit.
    pub fn create<T, E>(path: PathBuf, make: impl FnOnce(&Path) -> Result<T, E>) -> Result<(Created, T), E> {
        let creating = creating();
        if interrupted() {
            drop(creating); // the handler takes it for its sweep
            stop_if_interrupted();
        }
        let created = Created::register(path);
        let made = make(&created.path)?;
        Ok((created, made))
    }

    /// The registered path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        remove_path(&self.path);
        lock().retain(|(p, _)| p != &self.path);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<(PathBuf, Option<PathBuf>)>> {
    REGISTERED.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Held while a path is registered and made ([`Created::create`]), and by the signal handler from its
/// sweep to the exit: a path is either made before the sweep (and removed by it) or never.
static CREATING: Mutex<()> = Mutex::new(());

fn creating() -> std::sync::MutexGuard<'static, ()> {
    CREATING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Remove `path`; true once it is gone.
fn remove_path(path: &Path) -> bool {
    // Only paths registered by this process get here, so removing a directory tree is safe. On a signal
    // the main thread may still be creating a file in the tree while it is removed ("Directory not
    // empty"): try again a few times, briefly, before giving up and saying so.
    let mut result = remove_once(path);
    for _ in 0..20 {
        if result.is_ok() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        result = remove_once(path);
    }
    match result {
        Ok(()) => true,
        Err(e) => {
            eprintln!("syncbench: could not remove {}: {e}", path.display());
            false
        }
    }
}

fn remove_once(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Set once a SIGINT/SIGTERM is being handled: the handler thread owns the exit from then on.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a SIGINT/SIGTERM is being handled. Long measurements check it between steps.
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// If a signal is being handled, wait here for the handler to exit the process: the main thread, seeing
/// its files vanish under it, would otherwise finish first with a misleading error instead of 130/143.
/// The one place any thread waits for the handler.
pub fn stop_if_interrupted() {
    if interrupted() {
        loop {
            std::thread::park();
        }
    }
}

/// Remove everything still registered (called by `main` at exit), unless a signal handler owns the exit.
pub fn remove_all() {
    stop_if_interrupted();
    remove_registered();
}

fn remove_registered() {
    let paths: Vec<(PathBuf, Option<PathBuf>)> = lock().drain(..).collect();
    for (path, record) in paths.iter().rev() {
        // A path that could not be removed keeps its record, for a later syncbench to find.
        if remove_path(path)
            && let Some(record) = record
        {
            let _ = std::fs::remove_file(record);
        }
    }
}

/// Paths currently registered (for tests).
pub fn registered() -> Vec<PathBuf> {
    lock().iter().map(|(p, _)| p.clone()).collect()
}

/// How long the teardown after a signal may take before the process ends anyway: the hooks wait for a
/// report at most 10 s, and unmounting a lab stack takes a few seconds; a hook blocked for good (a write
/// to a pipe nobody reads, a lock its holder never releases) must not keep syncbench alive.
const TEARDOWN_LIMIT: std::time::Duration = std::time::Duration::from_secs(25);

/// On SIGINT or SIGTERM: run the teardown hooks, remove our files, then hand `exit` the code a shell would
/// report (130 or 143). The library never ends the process itself: `main` passes `std::process::exit`.
/// Nothing on this path may block on output: the main thread may be stuck writing to a pipe whose reader
/// stopped reading, holding stdout's or stderr's lock (`trace --json - | head -c 100` once hung for an
/// hour), so the last message is written without the lock and only if the pipe takes it now, and a
/// watchdog ends the process with the same code if the teardown does not finish in `TEARDOWN_LIMIT`.
pub fn install_signal_handlers(exit: fn(i32) -> !) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        eprintln!("syncbench: warning: could not install signal handlers; Ctrl-C may leave .syncbench-* files");
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
            let code = 128 + sig;
            std::thread::spawn(move || {
                std::thread::sleep(TEARDOWN_LIMIT);
                say_if_it_fits(b"syncbench: interrupted; teardown did not finish in time, exiting\n");
                // SAFETY: _exit ends the process at once; nothing is assumed to run after it.
                unsafe { libc::_exit(code) }
            });
            run_exit_hooks();
            // Held until the exit: a path being made now is finished first and swept; none is made after.
            let _no_more = creating();
            remove_registered();
            say_if_it_fits(b"syncbench: interrupted; removed temporary files\n");
            exit(code);
        }
    });
}

/// Write `line` to stderr if it fits in it right now, bypassing the standard library's lock (which a
/// thread blocked in a write may hold): never blocks. A line shorter than `PIPE_BUF` is written whole or
/// not at all when stderr is a pipe.
fn say_if_it_fits(line: &[u8]) {
    let mut fd = libc::pollfd { fd: libc::STDERR_FILENO, events: libc::POLLOUT, revents: 0 };
    // SAFETY: one valid pollfd, no timeout.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) } == 1 && fd.revents & libc::POLLOUT != 0;
    if ready {
        // SAFETY: writes from a valid buffer of the given length; the result is deliberately ignored (there
        // is nowhere left to report a failure to write to stderr).
        let _ = unsafe { libc::write(libc::STDERR_FILENO, line.as_ptr().cast(), line.len()) };
    }
}

type Hook = Box<dyn Fn() + Send + Sync>;
static EXIT_HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Register extra teardown to run on a signal before files are removed (unmounts, loop devices, children).
pub fn on_signal(hook: impl Fn() + Send + Sync + 'static) {
    EXIT_HOOKS.lock().unwrap_or_else(|p| p.into_inner()).push(Box::new(hook));
}

fn run_exit_hooks() {
    let hooks = EXIT_HOOKS.lock().unwrap_or_else(|p| p.into_inner());
    for hook in hooks.iter().rev() {
        hook();
    }
}

/// A unique name for a new file or directory in a user's directory: `.syncbench-<what>-<pid>-<n>`.
pub fn unique_name(what: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{PREFIX}{what}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_removes_file_and_dir() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join(unique_name("t"));
        std::fs::write(&f, b"x").unwrap();
        let d = dir.path().join(unique_name("d"));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("inner"), b"y").unwrap();
        {
            let _a = Created::register(f.clone());
            let _b = Created::register(d.clone());
            assert!(registered().contains(&f));
        }
        assert!(!f.exists() && !d.exists());
        assert!(!registered().contains(&f));
    }

    /// The signal handler's sweep waits for a path being made (it takes `CREATING`): a path is never
    /// made after the sweep, where nothing would remove it.
    #[test]
    fn a_path_being_made_holds_off_the_sweep_until_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(unique_name("made"));
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (go, go_rx) = std::sync::mpsc::channel::<()>();
        let maker = {
            let path = path.clone();
            std::thread::spawn(move || {
                let (created, ()) = Created::create(path, |p| {
                    entered_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                    std::fs::write(p, b"x")
                })
                .unwrap();
                created
            })
        };
        entered.recv().unwrap();
        assert!(CREATING.try_lock().is_err(), "the sweep could run while the path is being made");
        go.send(()).unwrap();
        let created = maker.join().unwrap();
        let _sweep = creating(); // what the handler takes: free once the path exists
        assert!(path.exists() && registered().contains(&path));
        drop(created);
        assert!(!path.exists());
    }
}
