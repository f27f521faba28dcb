//! `powercut run`: the campaign for any program, given as three shell commands run with the lab mount's
//! directory in `$SYNCBENCH_DIR`. `--start` (optional) is the server, kept in the foreground; it is started
//! before the first load and again after every cut (its own recovery). `--load` writes and prints one
//! `ack KEY` line per write its program acknowledged; the power goes at a seeded moment, and every process
//! of both commands is SIGKILLed. After the reboot and the restart, `--verify` gets every key acknowledged on
//! this data so far on its standard input, one a line; it exits non-zero on a loss (and may print
//! `lost KEY` lines, which are counted).

use super::campaign::CellStore;
use super::cell::{DbCell, DbCut, IntegrityResult, RecoveryFailure};
use super::process;
use super::verify::DbVerification;
use crate::core::hash::splitmix64_next as splitmix64;
use crate::proof::lab::profile::{Honesty, LabFs, Profile};
use crate::proof::lab::stack::Stack;
use crate::proof::powercut::lab::{CUT_AFTER_MS_MAX, CUT_AFTER_MS_MIN};
use anyhow::Context;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The variable that names the directory on the lab mount.
pub const DIR_VARIABLE: &str = "SYNCBENCH_DIR";
/// How long `--verify` may take.
const VERIFY_LIMIT: Duration = Duration::from_secs(300);
/// How long after its start a `--start` that exits at once counts as a failed start.
const START_SETTLE: Duration = Duration::from_millis(200);

/// What to run.
#[derive(Clone, Debug)]
pub struct CommandPlan {
    /// Lab profiles.
    pub profiles: Vec<Profile>,
    /// File systems.
    pub fss: Vec<LabFs>,
    /// Cuts per cell.
    pub cuts: u32,
    /// Seed of the cut moments and the cuts.
    pub seed: u64,
    /// The server (optional).
    pub start: Option<String>,
    /// The writer that prints `ack KEY`.
    pub load: String,
    /// The checker.
    pub verify: String,
    /// The device's untorn unit instead of the profiles' (`--untorn`).
    pub untorn_bytes: Option<u64>,
    /// Aim each cut at a write of at least this many bytes in flight (`--aim data-writes --page SIZE`).
    pub aim_bytes: Option<u64>,
}

/// A command running in its own process group, its output kept (the last 64 KiB) for a failure's excerpt.
struct Running {
    child: Child,
    output: Arc<Mutex<String>>,
}

fn shell(cmd: &str, dir: &Path) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c").arg(cmd).env(DIR_VARIABLE, dir).current_dir(dir);
    command
}

/// Keep what `from` prints at the end of `into`, bounded.
fn keep_tail(from: impl Read + Send + 'static, into: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            let mut text = into.lock().unwrap_or_else(|p| p.into_inner());
            text.push_str(&line);
            text.push('\n');
            if text.len() > 64 << 10 {
                let cut = text.len() - (32 << 10);
                let cut = (cut..text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
                text.drain(..cut);
            }
        }
    });
}

impl Running {
    /// Start `cmd`; its standard output is read by `stdout` if given, else kept with its standard error.
    fn start(
        cmd: &str,
        dir: &Path,
        stdout: Option<Box<dyn FnOnce(std::process::ChildStdout) + Send>>,
    ) -> anyhow::Result<Running> {
        let mut child =
            process::spawn(shell(cmd, dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()))
                .with_context(|| format!("cannot start sh -c {cmd:?}"))?;
        let output = Arc::new(Mutex::new(String::new()));
        keep_tail(child.stderr.take().context("no stderr")?, output.clone());
        let out = child.stdout.take().context("no stdout")?;
        match stdout {
            Some(read) => drop(std::thread::spawn(move || read(out))),
            None => keep_tail(out, output.clone()),
        }
        Ok(Running { child, output })
    }
    fn excerpt(&self) -> String {
        process::tail(&self.output.lock().unwrap_or_else(|p| p.into_inner()), 10)
    }
    /// The exit status, if it ended.
    fn ended(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
    fn kill(mut self) {
        process::kill(&mut self.child);
        process::wait_group_gone(self.child.id() as i32, Duration::from_secs(10));
    }
}

/// The run's data on the mount and the keys acknowledged on it so far.
struct Data {
    dir: PathBuf,
    acked: Vec<String>,
    server: Option<Running>,
}

impl Data {
    /// A fresh directory `run-<n>` and, if there is one, the server started on it.
    fn fresh(stack: &Stack, plan: &CommandPlan, n: u32) -> anyhow::Result<Data> {
        let dir = stack.mount_dir().join(format!("run-{n}"));
        super::process::create_durable_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut data = Data { dir, acked: Vec::new(), server: None };
        if let Err(f) = data.start_server(plan) {
            anyhow::bail!("{}: {}", f.summary, f.log_excerpt);
        }
        Ok(data)
    }

    /// Start `--start` (if any); a command that ends at once with an error is a failed start.
    fn start_server(&mut self, plan: &CommandPlan) -> Result<(), RecoveryFailure> {
        let Some(cmd) = &plan.start else { return Ok(()) };
        let failed = |summary: String, log_excerpt: String| RecoveryFailure { summary, log_excerpt };
        let mut server = Running::start(cmd, &self.dir, None).map_err(|e| failed(format!("{e:#}"), String::new()))?;
        std::thread::sleep(START_SETTLE);
        match server.ended() {
            Some(status) if !status.success() => {
                let excerpt = server.excerpt();
                server.kill();
                Err(failed(format!("--start exited with {status}"), excerpt))
            }
            _ => {
                self.server = Some(server);
                Ok(())
            }
        }
    }

    fn kill_server(&mut self) {
        if let Some(server) = self.server.take() {
            server.kill();
        }
    }
}

/// Run the plan; `progress` is told of every cut. Returns early (with what is done) on Ctrl-C. The cells run
/// in `powercut db`'s loop ([`super::campaign::run_cells`]).
pub fn run(
    plan: &CommandPlan,
    store: &CellStore,
    mut progress: impl FnMut(&DbCell, &DbCut),
) -> anyhow::Result<Vec<DbCell>> {
    let cells = super::campaign::CellPlan {
        profiles: &plan.profiles,
        fss: &plan.fss,
        cuts: plan.cuts,
        seed: plan.seed,
        untorn_bytes: plan.untorn_bytes,
    };
    super::campaign::run_cells(&cells, store, &mut progress, || Ok(CommandTarget { plan, data: None }))
}

/// `powercut run`'s target: the commands, and the directory they work on now.
struct CommandTarget<'a> {
    plan: &'a CommandPlan,
    data: Option<Data>,
}

impl super::campaign::Target for CommandTarget<'_> {
    fn cell(&self, profile: &Profile, fs: LabFs, untorn_bytes: u64) -> DbCell {
        DbCell {
            db: "command".into(),
            version: String::new(),
            settings: format!("load: {}", self.plan.load),
            profile: profile.name.into(),
            honesty: profile.params.honesty.name().into(),
            fs: fs.case().name().into(),
            expected_loss: (profile.params.honesty == Honesty::IgnoresFlush)
                .then(|| format!("the disk ({}) ignores flushes", profile.name)),
            untorn_bytes,
            aim: self.plan.aim_bytes.map(|bytes| super::aim::AimAt::DataWrites.words(bytes)),
            ..DbCell::default()
        }
    }

    fn fresh(&mut self, stack: &Stack, n: u32) -> anyhow::Result<()> {
        self.data = Some(Data::fresh(stack, self.plan, n).map_err(|e| match n {
            0 => crate::core::exit::usage(format!("--start failed: {e:#}")),
            _ => e,
        })?);
        Ok(())
    }

    fn cut(&mut self, stack: &mut Stack, _at: (u32, u32), rng: &mut u64) -> anyhow::Result<DbCut> {
        let data = self.data.as_mut().context("no directory to cut under")?;
        one_cut(stack, data, self.plan, rng)
    }

    fn stop(&mut self) {
        if let Some(data) = self.data.as_mut() {
            data.kill_server();
        }
    }
}

/// Load, cut, restart, verify. `Err` only when the lab itself failed.
fn one_cut(stack: &mut Stack, data: &mut Data, plan: &CommandPlan, rng: &mut u64) -> anyhow::Result<DbCut> {
    let seed = splitmix64(rng);
    let cut_after_ms = CUT_AFTER_MS_MIN + splitmix64(rng) % (CUT_AFTER_MS_MAX - CUT_AFTER_MS_MIN + 1);
    let witness = super::workload::AckWitness::default();
    let keys = Arc::new(Mutex::new(Vec::<String>::new()));
    let (reader_keys, reader_witness) = (keys.clone(), witness.clone());
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let read_acks = Box::new(move |out: std::process::ChildStdout| {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let Some(key) = line.strip_prefix("ack ") else { continue };
            let mut keys = reader_keys.lock().unwrap_or_else(|p| p.into_inner());
            if !reader_witness.ack(keys.len() as u64) {
                break;
            }
            keys.push(key.trim().to_string());
        }
        let _ = done_tx.send(());
    });
    let started = Instant::now();
    let load = Running::start(&plan.load, &data.dir, Some(read_acks))?;
    super::campaign::sleep_unless_interrupted(cut_after_ms);
    // As in `powercut db`: frozen, acks refused, the disk cut under the I/O in flight, then killed.
    let (mut frozen, mut load_s) = (Vec::new(), 0.0);
    let aim = plan.aim_bytes.map(|bytes| super::campaign::cut_aim(bytes, None));
    let outcome = super::campaign::power_cut(stack, seed, aim, || {
        frozen = process::freeze_all();
        witness.power_off();
        load_s = started.elapsed().as_secs_f64();
    })
    .context("power cut and reboot");
    let load_failure = load_ended_badly(load, data);
    process::kill_frozen(&frozen);
    let outcome = outcome?;
    let _ = done_rx.recv_timeout(Duration::from_secs(10));
    let new_keys = std::mem::take(&mut *keys.lock().unwrap_or_else(|p| p.into_inner()));
    data.acked.extend(new_keys.iter().cloned());
    let mut cut = DbCut {
        seed,
        cut_after_ms,
        acknowledged: new_keys.len() as u64,
        transfers_per_s: new_keys.len() as f64 / load_s.max(1e-3),
        device_lost_writes: outcome.device.lost_writes,
        aim: super::campaign::aimed_cut(&outcome, None),
        repaired_with: outcome.repaired_with,
        client_errors: load_failure.into_iter().collect(),
        ..DbCut::default()
    };
    let restart = Instant::now();
    match data.start_server(plan) {
        Err(failure) => cut.recovery_failure = Some(failure),
        Ok(()) => {
            cut.restart_ms = restart.elapsed().as_millis() as u64;
            run_verify(plan, data, &mut cut)?;
        }
    }
    cut.cut_ms = started.elapsed().as_millis() as u64;
    Ok(cut)
}

/// Kill the load and the server (the power went); a load that had already failed on its own is news.
fn load_ended_badly(mut load: Running, data: &mut Data) -> Option<String> {
    let failure = match load.ended() {
        Some(status) if !status.success() => Some(format!("--load exited with {status}: {}", load.excerpt())),
        _ => None,
    };
    load.kill();
    data.kill_server();
    failure
}

/// Run `--verify` with the acknowledged keys on its input; record its verdict in `cut`.
fn run_verify(plan: &CommandPlan, data: &Data, cut: &mut DbCut) -> anyhow::Result<()> {
    let spawned = process::spawn(
        shell(&plan.verify, &data.dir).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()),
    );
    let mut child = match spawned {
        Ok(child) => child,
        // Its directory may be gone with the cut: that is the cut's damage, not a failure of the lab.
        Err(e) => {
            cut.integrity = Some(IntegrityResult {
                ok: false,
                detail: format!("--verify could not start in {}: {e}", data.dir.display()),
            });
            return Ok(());
        }
    };
    let pgid = child.id() as i32;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let input: String = data.acked.iter().map(|k| format!("{k}\n")).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // A verify that stops reading early (it found a loss) closes its input: not an error of ours.
        let _ = stdin.write_all(input.as_bytes());
        drop(stdin);
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(VERIFY_LIMIT) {
        Ok(output) => output.context("waiting for --verify")?,
        Err(_) => {
            process::kill_group(pgid);
            let _ = rx.recv();
            process::reaped(pgid);
            cut.integrity = Some(IntegrityResult {
                ok: false,
                detail: format!("--verify did not finish in {} s", VERIFY_LIMIT.as_secs()),
            });
            return Ok(());
        }
    };
    process::reaped(pgid);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lost: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("lost ")).collect();
    let acknowledged = data.acked.len() as u64;
    let mut v = DbVerification { acknowledged, lost: lost.len() as u64, ..DbVerification::default() };
    v.present = acknowledged.saturating_sub(v.lost);
    v.examples = lost.iter().take(5).map(|k| format!("key {k} was acknowledged and is lost")).collect();
    let words = process::tail(&format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)), 5);
    cut.integrity = Some(match output.status.success() {
        true if v.lost > 0 => {
            IntegrityResult { ok: false, detail: format!("--verify printed lost keys but exited 0: {words}") }
        }
        true => IntegrityResult { ok: true, detail: format!("--verify passed ({acknowledged} keys)") },
        false if v.lost > 0 => IntegrityResult { ok: true, detail: words },
        false => IntegrityResult { ok: false, detail: format!("--verify exited with {}: {words}", output.status) },
    });
    cut.verification = Some(v);
    Ok(())
}
