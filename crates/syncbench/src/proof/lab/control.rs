//! A lab that outlives the command that started it: a detached server process owns the [`Stack`] and
//! answers requests on a unix socket in its state directory, `/run/syncbench-lab/<mount point>/`.
//!
//! The state directory also holds `state.json` (what is set up, for `syncbench probe` and for cleaning up
//! after a server that died) and the server's log. One line of JSON per request and per reply.

use super::model::Stats;
use super::profile::{DeviceParams, Overrides};
use super::stack::{CutAim, CutOutcome, Stack};
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where every lab's state directory lives.
pub const STATE_ROOT: &str = "/run/syncbench-lab";
const SOCKET: &str = "control.sock";
const STATE_FILE: &str = "state.json";
/// The server's stderr.
pub const LOG_FILE: &str = "server.log";
/// How often the server looks for a signal while no request comes.
const POLL: Duration = Duration::from_millis(50);

/// What a running lab has set up.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    /// The server's process id.
    pub pid: u32,
    /// Where the file system is mounted.
    pub mount: PathBuf,
    /// The loop device it is on (changes at every cut).
    pub loop_device: String,
    /// The FUSE-served image the loop device reads (`…/fuse/image`).
    pub image: PathBuf,
    /// The image file on the host.
    pub backing_file: PathBuf,
    /// The profile's name.
    pub profile: String,
    /// The device parameters in force (profile plus overrides).
    pub params: DeviceParams,
    /// The file system type.
    pub fs: String,
    /// Size of the emulated disk.
    pub size_bytes: u64,
}

/// The state directory of the lab mounted at `mount` (an absolute path).
pub fn state_dir(mount: &Path) -> PathBuf {
    let text = mount.to_string_lossy();
    let escaped = text.trim_start_matches('/').replace('%', "%25").replace('/', "%2F");
    Path::new(STATE_ROOT).join(if escaped.is_empty() { "%2F".to_string() } else { escaped })
}

/// Every lab's state that can be read now (for `probe`).
pub fn all_states() -> Vec<State> {
    let Ok(entries) = std::fs::read_dir(STATE_ROOT) else { return Vec::new() };
    entries.filter_map(|e| read_state(&e.ok()?.path()).ok()).collect()
}

/// The state of the lab whose state directory is `dir`.
pub fn read_state(dir: &Path) -> anyhow::Result<State> {
    let text = std::fs::read_to_string(dir.join(STATE_FILE))?;
    Ok(serde_json::from_str(&text)?)
}

/// Write the state file (replaced atomically: probe may read it at any time).
pub fn write_state(dir: &Path, state: &State) -> anyhow::Result<()> {
    let tmp = dir.join(".state.json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(state)? + "\n")?;
    std::fs::rename(&tmp, dir.join(STATE_FILE))?;
    Ok(())
}

/// What the lab's state describes for `stack` now.
pub fn state_of(stack: &Stack, profile: &str) -> State {
    State {
        pid: std::process::id(),
        mount: stack.mount_dir().to_path_buf(),
        loop_device: stack.loop_device().unwrap_or_default().to_string(),
        image: stack.image_path().to_path_buf(),
        backing_file: stack.backing_path().to_path_buf(),
        profile: profile.to_string(),
        params: stack.config().params.clone(),
        fs: stack.case().fs_type().to_string(),
        size_bytes: stack.config().size_bytes,
    }
}

/// A request to the server.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Request {
    /// Power cut and reboot.
    Cut {
        /// Chooses what the cache loses.
        seed: u64,
        /// Cut when a data-page write is in flight (absent: now).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        aim: Option<CutAim>,
    },
    /// The device's counters.
    Stats,
    /// Change the device's parameters live (`lab set`).
    Set {
        /// What changes; the rest stays.
        overrides: Overrides,
    },
    /// Tear everything down and exit.
    Down,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply {
    Ok(serde_json::Value),
    Error(String),
}

/// Listen on the state directory's socket.
pub fn listen(dir: &Path) -> anyhow::Result<UnixListener> {
    let listener = UnixListener::bind(dir.join(SOCKET)).context("binding the lab's control socket")?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Answer requests until `down` or a signal (see [`crate::core::cleanup::interrupted`]). On `down` the reply is
/// returned to the caller together with its connection, to be sent once everything is torn down.
pub fn serve(stack: &mut Stack, listener: &UnixListener, dir: &Path, profile: &str) -> Option<UnixStream> {
    loop {
        if crate::core::cleanup::interrupted() {
            return None;
        }
        let conn = match listener.accept() {
            Ok((conn, _)) => conn,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(POLL);
                continue;
            }
            Err(e) => {
                eprintln!("syncbench lab: accept failed: {e}");
                std::thread::sleep(POLL);
                continue;
            }
        };
        let Some((request, mut conn)) = read_request(conn) else { continue };
        let reply = match request {
            Request::Down => return Some(conn),
            Request::Stats => to_reply(Ok(stack.stats())),
            Request::Set { overrides } => {
                let params = overrides.apply(stack.config().params.clone());
                stack.set_params(params.clone());
                eprintln!("syncbench lab: parameters set live: {}", super::profile::describe(&params));
                if let Err(e) = write_state(dir, &state_of(stack, profile)) {
                    eprintln!("syncbench lab: cannot update the state file: {e:#}");
                }
                to_reply(Ok(params))
            }
            Request::Cut { seed, aim } => {
                let outcome = match aim {
                    Some(aim) => stack.cut_aimed(seed, aim),
                    None => stack.cut(seed),
                };
                if let Err(e) = write_state(dir, &state_of(stack, profile)) {
                    eprintln!("syncbench lab: cannot update the state file: {e:#}");
                }
                to_reply(outcome)
            }
        };
        send(&mut conn, &reply);
    }
}

/// Tell a `down` caller that everything is gone.
pub fn confirm_down(mut conn: UnixStream) {
    send(&mut conn, &Reply::Ok(serde_json::Value::Null));
}

fn to_reply<T: Serialize>(result: anyhow::Result<T>) -> Reply {
    match result.and_then(|v| Ok(serde_json::to_value(v)?)) {
        Ok(v) => Reply::Ok(v),
        Err(e) => Reply::Error(format!("{e:#}")),
    }
}

fn read_request(conn: UnixStream) -> Option<(Request, UnixStream)> {
    conn.set_nonblocking(false).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut line = String::new();
    BufReader::new(&conn).read_line(&mut line).ok()?;
    match serde_json::from_str(&line) {
        Ok(request) => Some((request, conn)),
        Err(e) => {
            let mut conn = conn;
            send(&mut conn, &Reply::Error(format!("bad request: {e}")));
            None
        }
    }
}

fn send(conn: &mut UnixStream, reply: &Reply) {
    let text = serde_json::to_string(reply).expect("replies serialize") + "\n";
    if let Err(e) = conn.write_all(text.as_bytes()) {
        eprintln!("syncbench lab: the client went away before the reply: {e}");
    }
}

/// A connection to a running lab, for the CLI and for Rust callers.
pub struct Client {
    dir: PathBuf,
}

impl Client {
    /// The lab mounted at `mount`; a one-line error if there is none.
    pub fn for_mount(mount: &Path) -> anyhow::Result<Client> {
        // A mount point removed under a lab (its file system failed to come back) still names the lab.
        let mount = std::fs::canonicalize(mount)
            .or_else(|_| std::path::absolute(mount))
            .with_context(|| format!("{} is not a usable path", mount.display()))?;
        let dir = state_dir(&mount);
        if !dir.join(STATE_FILE).exists() {
            bail!(
                "no lab is up at {} (start one with `syncbench lab up --profile P {}`)",
                mount.display(),
                mount.display()
            );
        }
        Ok(Client { dir })
    }

    /// The lab's state directory.
    pub fn state_dir(&self) -> &Path {
        &self.dir
    }

    /// Its state.
    pub fn state(&self) -> anyhow::Result<State> {
        read_state(&self.dir)
    }

    /// Power cut and reboot.
    pub fn cut(&self, seed: u64) -> anyhow::Result<CutOutcome> {
        Ok(serde_json::from_value(self.call(&Request::Cut { seed, aim: None })?)?)
    }

    /// Power cut aimed at a data-page write in flight (see [`Stack::cut_aimed`]), and reboot.
    pub fn cut_aimed(&self, seed: u64, aim: CutAim) -> anyhow::Result<CutOutcome> {
        Ok(serde_json::from_value(self.call(&Request::Cut { seed, aim: Some(aim) })?)?)
    }

    /// The device's counters.
    pub fn stats(&self) -> anyhow::Result<Stats> {
        // A lab started by another syncbench version may answer in another shape: say what to do.
        serde_json::from_value(self.call(&Request::Stats)?).with_context(|| {
            format!(
                "the lab server on {} answers in a shape this syncbench does not read (started by another version?): `syncbench lab down` it and bring it up again",
                self.dir.display()
            )
        })
    }

    /// Change the running device's parameters; the parameters now in force.
    pub fn set(&self, overrides: Overrides) -> anyhow::Result<DeviceParams> {
        Ok(serde_json::from_value(self.call(&Request::Set { overrides })?)?)
    }

    /// Tear the lab down; returns once the server confirmed everything is gone.
    pub fn down(&self) -> anyhow::Result<()> {
        self.call(&Request::Down).map(drop)
    }

    fn call(&self, request: &Request) -> anyhow::Result<serde_json::Value> {
        let mut conn = UnixStream::connect(self.dir.join(SOCKET))
            .with_context(|| format!("the lab server does not answer on {}", self.dir.join(SOCKET).display()))?;
        conn.write_all((serde_json::to_string(request)? + "\n").as_bytes())?;
        let mut line = String::new();
        BufReader::new(&conn).read_line(&mut line)?;
        if line.is_empty() {
            bail!("the lab server closed the connection without answering (see {})", self.dir.join(LOG_FILE).display());
        }
        match serde_json::from_str(&line)? {
            Reply::Ok(v) => Ok(v),
            Reply::Error(e) => bail!("{e}"),
        }
    }
}

/// `lab set`: apply `overrides` to the running lab at `mount` (nothing to change, or no lab: one line, exit
/// 2); the line saying what is in force now and what was.
pub fn set(mount: &Path, overrides: Overrides) -> anyhow::Result<String> {
    use crate::core::exit::usage;
    if overrides.is_empty() {
        return Err(usage("lab set: give what to change: --flush-us, --write-us, --honesty or --untorn"));
    }
    let client = Client::for_mount(mount).map_err(|e| usage(format!("{e:#}")))?;
    let before = client.state()?.params;
    let now = client.set(overrides)?;
    let (now, before) = (super::profile::describe(&now), super::profile::describe(&before));
    Ok(format!("lab set: {} now {now} (was {before})", mount.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_dirs_are_one_component_per_mount_point() {
        assert_eq!(state_dir(Path::new("/mnt/lab")), Path::new("/run/syncbench-lab/mnt%2Flab"));
        assert_eq!(state_dir(Path::new("/a%b")), Path::new("/run/syncbench-lab/a%25b"));
        assert_ne!(state_dir(Path::new("/a/b")), state_dir(Path::new("/a%2Fb")));
    }

    #[test]
    fn requests_round_trip_as_one_json_line() {
        let text = serde_json::to_string(&Request::Cut { seed: 7, aim: None }).unwrap();
        assert_eq!(text, r#"{"op":"cut","seed":7}"#);
        assert!(matches!(serde_json::from_str(&text).unwrap(), Request::Cut { seed: 7, aim: None }));
        let aim = CutAim { min_write_bytes: 8192, max_wait: Duration::from_secs(3), within: Vec::new() };
        let text = serde_json::to_string(&Request::Cut { seed: 7, aim: Some(aim.clone()) }).unwrap();
        assert!(matches!(serde_json::from_str(&text).unwrap(), Request::Cut { seed: 7, aim: Some(a) } if a == aim));
        let set = Request::Set { overrides: Overrides { flush_us: Some(8500), ..Overrides::default() } };
        let text = serde_json::to_string(&set).unwrap();
        assert_eq!(text, r#"{"op":"set","overrides":{"flush_us":8500,"write_us":null,"honesty":null}}"#);
        let back: Request = serde_json::from_str(&text).unwrap();
        assert!(matches!(back, Request::Set { overrides } if overrides.flush_us == Some(8500)));
    }
}
