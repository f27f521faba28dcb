//! `syncbench lab`: a real file system on an emulated disk whose truth is known — flush cost, volatile
//! cache, honesty — and whose power can be cut.

use crate::exit::{Outcome, usage};
use crate::fsync_errors::cases::FsCase;
use crate::lab::profile::{self, Overrides};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `syncbench lab`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  sudo syncbench lab run --profile hdd-7200 -- sh -c 'syncbench run --quick \"$SYNCBENCH_LAB_MOUNT\"'"
)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The lab's subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Mount a real file system on an emulated disk at MOUNTPOINT and return; the disk is served until `down`.
    Up(UpArgs),
    /// Power cut and reboot: the disk's volatile cache is lost as the model says, the file system is
    /// mounted again (journal replay); prints what the cache lost.
    Cut(CutArgs),
    /// The emulated disk's own counters and latency.
    Stats(StatsArgs),
    /// Unmount and remove everything `up` set up.
    Down(DownArgs),
    /// Bring a lab up on a private mount point, run CMD with SYNCBENCH_LAB_MOUNT set, take it down; exits
    /// with CMD's exit code.
    Run(RunArgs),
    /// The emulated disks, with their numbers and where they come from.
    Profiles,
    /// The server process `up` starts (internal).
    #[command(hide = true)]
    Serve(ServeArgs),
}

/// The file systems the lab makes.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LabFs {
    /// ext4, data=ordered.
    Ext4,
    /// XFS.
    Xfs,
    /// Btrfs.
    Btrfs,
}

impl LabFs {
    fn case(self) -> FsCase {
        match self {
            LabFs::Ext4 => FsCase::Ext4,
            LabFs::Xfs => FsCase::Xfs,
            LabFs::Btrfs => FsCase::Btrfs,
        }
    }
}

/// The emulated disk and its file system.
#[derive(Clone, Debug, clap::Args)]
pub struct DiskArgs {
    /// The emulated disk (see `syncbench lab profiles`).
    #[arg(long, value_name = "PROFILE")]
    pub profile: String,
    /// The file system made on it.
    #[arg(long, value_enum, default_value = "ext4")]
    pub fs: LabFs,
    /// Size of the disk (a sparse image file in the temporary directory; at least 320MiB for xfs).
    #[arg(long, default_value = "4GiB")]
    pub size: String,
    /// Seed of the device's background destaging order.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Overrides of the profile's numbers.
    #[command(flatten)]
    pub overrides: Overrides,
}

/// Flags of `lab up`.
#[derive(Debug, clap::Args)]
pub struct UpArgs {
    /// The disk.
    #[command(flatten)]
    pub disk: DiskArgs,
    /// An existing empty directory to mount the file system on.
    pub mountpoint: PathBuf,
}

/// Flags of `lab cut`.
#[derive(Debug, clap::Args)]
pub struct CutArgs {
    /// The lab's mount point.
    pub mountpoint: PathBuf,
    /// Chooses which cached writes reached the medium and which write is torn (default: from the clock,
    /// printed so the cut can be repeated).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also write the cut's report as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Flags of `lab stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// The lab's mount point.
    pub mountpoint: PathBuf,
    /// Write the counters as JSON to FILE (`-` for stdout) instead of the table.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Flags of `lab down`.
#[derive(Debug, clap::Args)]
pub struct DownArgs {
    /// The lab's mount point.
    pub mountpoint: PathBuf,
}

/// Flags of `lab run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The disk.
    #[command(flatten)]
    pub disk: DiskArgs,
    /// The command to run, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Flags of `lab serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// What to build, as JSON.
    #[arg(long)]
    pub config: String,
}

/// Run the command.
pub fn main(args: Args) -> Outcome {
    match args.action {
        Action::Profiles => {
            print!("{}", render_profiles());
            Ok(ExitCode::SUCCESS)
        }
        action => run(action),
    }
}

/// The profile table.
fn render_profiles() -> String {
    let mut out = String::new();
    for p in profile::all() {
        let d = &p.params;
        let bw = d.bandwidth_bytes_per_s.map_or("unlimited".to_string(), |b| format!("{} MB/s", b / 1_000_000));
        out.push_str(&format!(
            "{:<18} {:<13} flush {:>6} µs  write {:>4} µs  {:>10}  cache {:>4} MiB\n    {}\n    source: {}\n",
            p.name,
            d.honesty.name(),
            d.flush_ns / 1000,
            d.write_ns / 1000,
            bw,
            d.cache_bytes >> 20,
            p.class,
            p.source
        ));
    }
    out
}

#[cfg(not(feature = "fuse"))]
fn run(_action: Action) -> Outcome {
    Err(usage("this syncbench was built without FUSE support, which lab needs; rebuild with the default features"))
}

#[cfg(feature = "fuse")]
fn run(action: Action) -> Outcome {
    use lab_cli::*;
    if let Action::Serve(a) = action {
        let config = serde_json::from_str(&a.config).map_err(|e| usage(format!("bad --config: {e}")))?;
        crate::lab::daemon::serve_main(config)?;
        return Ok(ExitCode::SUCCESS);
    }
    let missing = crate::fsync_errors::prereq::missing_for_command();
    if !missing.is_empty() {
        return Err(usage(format!("lab cannot run: missing {}", missing.join("; "))));
    }
    match action {
        Action::Up(a) => up(a),
        Action::Cut(a) => cut(a),
        Action::Stats(a) => stats(a),
        Action::Down(a) => down(a),
        Action::Run(a) => run_command(a),
        Action::Profiles | Action::Serve(_) => unreachable!("handled above"),
    }
}

#[cfg(feature = "fuse")]
mod lab_cli {
    use super::*;
    use crate::lab::control::Client;
    use crate::lab::daemon::{self, ServeConfig, Server};
    use crate::lab::stack::MIN_IMAGE_BYTES;

    /// What `up` and `run` build, checked: a bad flag is one line and exit 2.
    pub(super) fn serve_config(disk: &DiskArgs, mount: PathBuf) -> anyhow::Result<ServeConfig> {
        let profile = profile::by_name(&disk.profile).map_err(usage)?;
        let size_bytes = crate::suite::parse_size(&disk.size)
            .ok_or_else(|| usage(format!("--size {:?} is not a size; use e.g. 4GiB or 512MiB", disk.size)))?;
        if size_bytes < MIN_IMAGE_BYTES {
            return Err(usage(format!(
                "--size must be at least 320MiB (mkfs.xfs refuses smaller disks), not {}",
                disk.size
            )));
        }
        let case = disk.fs.case();
        if let Some(why) = crate::fsync_errors::prereq::missing_for_case(case) {
            return Err(usage(format!("lab cannot make {}: {why}", case.fs_type())));
        }
        let work_parent = std::env::temp_dir();
        let free = syncbench_sys::free_bytes(&work_parent).unwrap_or(u64::MAX);
        if free < MIN_IMAGE_BYTES {
            return Err(usage(format!("{} has less than 320 MiB free for the disk image", work_parent.display())));
        }
        Ok(ServeConfig {
            profile: profile.name.to_string(),
            params: disk.overrides.apply(profile.params),
            fs: case,
            seed: disk.seed,
            size_bytes,
            mount,
            work_parent,
        })
    }

    pub(super) fn up(a: UpArgs) -> Outcome {
        let mount = std::fs::canonicalize(&a.mountpoint).map_err(|e| {
            usage(format!("{}: {e}; create an empty directory to mount the lab on", a.mountpoint.display()))
        })?;
        let config = serve_config(&a.disk, mount.clone())?;
        if let Some(why) = daemon::refusal(&mount) {
            return Err(usage(why));
        }
        let (server, state) = Server::start(&config)?;
        server.detach();
        println!(
            "lab up: {} ({}) {} on {} at {}, server pid {}",
            state.profile,
            describe(&state.params),
            state.fs,
            state.loop_device,
            mount.display(),
            state.pid
        );
        println!("  power cut: syncbench lab cut {0}    remove: syncbench lab down {0}", mount.display());
        Ok(ExitCode::SUCCESS)
    }

    pub(super) fn describe(p: &profile::DeviceParams) -> String {
        format!("{}, flush {} µs, write {} µs", p.honesty.name(), p.flush_ns / 1000, p.write_ns / 1000)
    }

    pub(super) fn cut(a: CutArgs) -> Outcome {
        let client = Client::for_mount(&a.mountpoint).map_err(|e| usage(format!("{e:#}")))?;
        let seed = a.seed.unwrap_or_else(clock_seed);
        let outcome = client.cut(seed)?;
        let d = &outcome.device;
        if a.json.as_deref() != Some(std::path::Path::new("-")) {
            println!("power cut (seed {}) and reboot in {} ms:", d.seed, outcome.reboot_ms);
            println!(
                "  cache held {} writes ({} acknowledged); {} reached the disk before the cut, {} of the rest were overwritten by those",
                d.cached_writes, d.acknowledged_writes, d.destaged_writes, d.superseded_writes
            );
            println!(
                "  lost {} writes, {} bytes: {} acknowledged, {} after a flush had reported them durable",
                d.lost_writes, d.lost_bytes, d.lost_acknowledged, d.lost_after_flush
            );
            if let Some(t) = &d.torn {
                println!(
                    "  torn: the {}-byte write at byte {} kept its first {} bytes",
                    t.len_bytes, t.offset, t.persisted_bytes
                );
            }
            if let Some(tool) = &outcome.repaired_with {
                println!("  the file system did not mount after the cut; repaired with {tool}");
            }
            if outcome.detached_lazily {
                println!("  open files kept the old mount busy: it was detached lazily (its users now get EIO)");
            }
            println!("  mounted again on {}", outcome.loop_device);
        }
        if let Some(dest) = &a.json {
            crate::output::write_to(dest, &(serde_json::to_string_pretty(&outcome)? + "\n"))?;
        }
        Ok(ExitCode::SUCCESS)
    }

    fn clock_seed() -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    }

    pub(super) fn stats(a: StatsArgs) -> Outcome {
        let client = Client::for_mount(&a.mountpoint).map_err(|e| usage(format!("{e:#}")))?;
        let state = client.state()?;
        let stats = client.stats()?;
        if let Some(dest) = &a.json {
            let doc = serde_json::json!({ "lab": state, "device": stats });
            crate::output::write_to(dest, &(serde_json::to_string_pretty(&doc)? + "\n"))?;
            return Ok(ExitCode::SUCCESS);
        }
        let c = &stats.counters;
        println!("{} ({}) {} at {}", state.profile, describe(&state.params), state.fs, state.mount.display());
        println!("  writes {}  bytes {}  reads {}", c.writes, c.write_bytes, c.reads);
        println!("  flushes {} ({} with nothing to write)  FUA writes {}", c.flushes, c.empty_flushes, c.fua_writes);
        println!(
            "  background destages {}  in cache now {} bytes  power cuts {}",
            c.background_destages, c.cached_bytes, c.cuts
        );
        for (name, l) in [("write", &stats.write_latency), ("flush", &stats.flush_latency)] {
            println!(
                "  {name} latency charged: n {}  mean {:.1} µs  p50 {:.1}  p99 {:.1}  max {:.1}",
                l.count,
                l.mean_ns as f64 / 1e3,
                l.p50_ns as f64 / 1e3,
                l.p99_ns as f64 / 1e3,
                l.max_ns as f64 / 1e3
            );
        }
        for cut in &stats.cuts {
            println!(
                "  cut seed {}: lost {} writes ({} after a flush)",
                cut.seed, cut.lost_writes, cut.lost_after_flush
            );
        }
        Ok(ExitCode::SUCCESS)
    }

    pub(super) fn down(a: DownArgs) -> Outcome {
        let client = Client::for_mount(&a.mountpoint).map_err(|e| usage(format!("{e:#}")))?;
        let state = client.state()?;
        if std::path::Path::new(&format!("/proc/{}", state.pid)).exists() {
            client.down()?;
            wait_gone(state.pid);
        } else {
            daemon::clean_after_dead_server(client.state_dir(), &state)?;
        }
        println!("lab down: {} unmounted, disk removed", state.mount.display());
        Ok(ExitCode::SUCCESS)
    }

    /// Wait (briefly) until process `pid` has exited.
    fn wait_gone(pid: u32) {
        let proc_dir = format!("/proc/{pid}");
        for _ in 0..500 {
            if !std::path::Path::new(&proc_dir).exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    pub(super) fn run_command(a: RunArgs) -> Outcome {
        let mount_guard =
            crate::cleanup::Created::register(std::env::temp_dir().join(crate::cleanup::unique_name("lab-mnt")));
        let mount = mount_guard.path().to_path_buf();
        let config = serve_config(&a.disk, mount.clone())?;
        std::fs::create_dir(&mount).map_err(|e| usage(format!("cannot create {}: {e}", mount.display())))?;
        let (server, state) = Server::start(&config)?;
        let (program, rest) = a.command.split_first().expect("clap requires CMD");
        let status = std::process::Command::new(program)
            .args(rest)
            .env("SYNCBENCH_LAB_MOUNT", &mount)
            .env("SYNCBENCH_LAB_PROFILE", &state.profile)
            .status();
        let down = Client::for_mount(&mount).and_then(|c| c.down());
        match &down {
            Ok(()) => server.reap(),
            Err(_) => server.stop(),
        }
        let status = status.map_err(|e| usage(format!("cannot run {}: {e}", program.to_string_lossy())))?;
        down?;
        drop(mount_guard);
        let code = status.code().unwrap_or(128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0));
        Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
    }
}
