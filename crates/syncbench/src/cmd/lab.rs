//! `syncbench lab`: a real file system on an emulated disk whose truth is known — flush cost, volatile
//! cache, honesty — and whose power can be cut.

use crate::core::exit::{Outcome, usage};
use crate::proof::lab::profile::{DiskArgs, Overrides};
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
    /// Change a running lab disk's flush cost, write latency or honesty, without remounting (e.g. to
    /// switch it between two regimes while `run` measures it).
    #[command(after_help = "Example:\n  sudo syncbench lab set /mnt/lab --flush-us 8500")]
    Set {
        /// The lab's mount point.
        mountpoint: PathBuf,
        /// What changes (at least one); the rest stays as it is.
        #[command(flatten)]
        overrides: Overrides,
    },
    /// Unmount and remove everything `up` set up.
    Down {
        /// The lab's mount point.
        mountpoint: PathBuf,
    },
    /// Bring a lab up on a private mount point, run CMD with SYNCBENCH_LAB_MOUNT set, take it down; exits
    /// with CMD's exit code.
    Run(RunArgs),
    /// The emulated disks, with their numbers and where they come from.
    Profiles,
    /// The server process `up` starts (internal).
    #[command(hide = true)]
    Serve {
        /// What to build, as JSON.
        #[arg(long)]
        config: String,
    },
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
    /// Cut the moment a data-page write arrives (a write of at least --aim-min-bytes that does not continue
    /// one of the last 64 writes: not a log append), so that it is in flight and tears at the disk's untorn
    /// unit; if none comes within --aim-wait, cut then and say so.
    #[arg(long)]
    pub aim_data_write: bool,
    /// With --aim-data-write: the smallest write aimed at (e.g. the database's page size).
    #[arg(long, value_name = "SIZE", default_value = "8KiB", requires = "aim_data_write")]
    pub aim_min_bytes: String,
    /// With --aim-data-write: how long to wait for such a write (e.g. 10s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "10s", requires = "aim_data_write")]
    pub aim_wait: String,
}

impl CutArgs {
    /// The aim of `--aim-data-write`, checked (a bad size or duration: one line, exit 2).
    #[cfg(feature = "fuse")]
    fn aim(&self) -> anyhow::Result<Option<crate::proof::lab::stack::CutAim>> {
        if !self.aim_data_write {
            return Ok(None);
        }
        let min_write_bytes = crate::core::units::parse_size(&self.aim_min_bytes)
            .filter(|&b| b > 0)
            .ok_or_else(|| usage(format!("--aim-min-bytes {:?} is not a size; use e.g. 8KiB", self.aim_min_bytes)))?;
        let max_wait = crate::core::units::parse_duration(&self.aim_wait)
            .ok_or_else(|| usage(format!("--aim-wait {:?} is not a duration; use e.g. 10s or 500ms", self.aim_wait)))?;
        Ok(Some(crate::proof::lab::stack::CutAim { min_write_bytes, max_wait, within: Vec::new() }))
    }
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

/// Run the command.
pub fn main(args: Args) -> Outcome {
    match args.action {
        Action::Profiles => {
            print!("{}", crate::proof::lab::render::profiles());
            Ok(ExitCode::SUCCESS)
        }
        action => run(action),
    }
}

#[cfg(not(feature = "fuse"))]
fn run(_action: Action) -> Outcome {
    Err(usage("this syncbench was built without FUSE support, which lab needs; rebuild with the default features"))
}

#[cfg(feature = "fuse")]
fn run(action: Action) -> Outcome {
    use crate::proof::lab::control::Client;
    use crate::proof::lab::{daemon, render};
    if let Action::Serve { config } = action {
        let config = serde_json::from_str(&config).map_err(|e| usage(format!("bad --config: {e}")))?;
        daemon::serve_main(config)?;
        return Ok(ExitCode::SUCCESS);
    }
    let missing = crate::proof::lab::prereq::missing_for_command();
    if !missing.is_empty() {
        return Err(usage(format!("lab cannot run: missing {}", missing.join("; "))));
    }
    let client = |mount: &std::path::Path| Client::for_mount(mount).map_err(|e| usage(format!("{e:#}")));
    match action {
        Action::Up(a) => {
            let mount = std::fs::canonicalize(&a.mountpoint).map_err(|e| {
                usage(format!("{}: {e}; create an empty directory to mount the lab on", a.mountpoint.display()))
            })?;
            let config = a.disk.plan(mount.clone())?;
            let _lab = crate::core::registry::record_lab(&mount)?; // until the lab is left running on purpose
            let s = daemon::up(&config)?;
            let m = mount.display();
            let disk = crate::proof::lab::profile::describe(&s.params);
            println!("lab up: {} ({disk}) {} on {} at {m}, server pid {}", s.profile, s.fs, s.loop_device, s.pid);
            println!("  power cut: syncbench lab cut {m}    remove: syncbench lab down {m}");
        }
        Action::Cut(a) => {
            let seed = a.seed.unwrap_or_else(clock_seed);
            let aim = a.aim()?;
            let client = client(&a.mountpoint)?;
            let outcome = match aim {
                Some(aim) => client.cut_aimed(seed, aim)?,
                None => client.cut(seed)?,
            };
            if a.json.as_deref() != Some(std::path::Path::new("-")) {
                print!("{}", render::cut(&outcome));
            }
            if let Some(dest) = &a.json {
                crate::core::output::write_to(dest, &(serde_json::to_string_pretty(&outcome)? + "\n"))?;
            }
        }
        Action::Stats(a) => stats(&client(&a.mountpoint)?, a.json.as_deref())?,
        Action::Set { mountpoint, overrides } => {
            println!("{}", crate::proof::lab::control::set(&mountpoint, overrides)?)
        }
        Action::Down { mountpoint } => return crate::cmd::cleanup::lab_down(mountpoint),
        Action::Run(a) => {
            let path = std::env::temp_dir().join(crate::core::cleanup::unique_name("lab-mnt"));
            let config = a.disk.plan(path.clone())?;
            let _records = crate::core::registry::record_lab(&path)?;
            let (_mount, ()) = crate::core::cleanup::Created::create(path, |p| {
                std::fs::create_dir(p).map_err(|e| usage(format!("cannot create {}: {e}", p.display())))
            })?;
            let status = daemon::run_command(&config, &a.command)?;
            let code =
                status.code().unwrap_or(128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0));
            return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
        }
        Action::Profiles | Action::Serve { .. } => unreachable!("handled above"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `lab stats`: the lab's state and its device's counters, as text or JSON.
#[cfg(feature = "fuse")]
fn stats(c: &crate::proof::lab::control::Client, json: Option<&std::path::Path>) -> anyhow::Result<()> {
    use crate::proof::lab::render;
    let (state, stats) = (c.state()?, c.stats()?);
    let Some(dest) = json else {
        print!("{}", render::stats(&render::stats_header(&state, &stats), &stats));
        return Ok(());
    };
    let doc = serde_json::json!({ "lab": state, "device": stats });
    crate::core::output::write_to(dest, &(serde_json::to_string_pretty(&doc)? + "\n"))
}

#[cfg(feature = "fuse")]
fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
}
