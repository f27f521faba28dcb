//! `syncbench cleanup`: remove what a killed syncbench left in the kernel — mounts (tracefs, the lab's
//! FUSE image server and file system), loop devices, lab servers and the commands a dead `lab run` started,
//! and the directories it made for them — as recorded in `/run/syncbench` (see [`crate::proof::leftovers`]) —
//! and the ftrace instances of dead syncbench processes (named `syncbench-PID-N`).
//! Nothing else: an object that no longer matches its record stays.

use crate::core::exit::Outcome;
use crate::observe::blockdev::requests;
use crate::proof::leftovers as registry;
use std::process::ExitCode;

/// Flags of `syncbench cleanup`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only list what would be removed, with the command that removes each.
    #[arg(long)]
    pub dry_run: bool,
}

/// Run the command: one line per leftover (removed, or why not), then a total; exit 1 if any stayed.
pub fn main(args: Args) -> Outcome {
    if args.dry_run {
        let found = registry::leftovers();
        for leftover in &found {
            println!("{}", leftover.describe());
        }
        let tracefs = crate::core::registry::open_tracefs().ok();
        let instances = tracefs.as_ref().map(|t| requests::stale_instances(t)).unwrap_or_default();
        for dir in &instances {
            println!(
                "left by a syncbench process that is gone: ftrace instance {0}; remove with: rmdir {0}",
                dir.display()
            );
        }
        let total = found.len() + instances.len();
        println!("cleanup: {total} left behind by syncbench processes that are gone");
        return Ok(ExitCode::SUCCESS);
    }
    let mut results = registry::remove_leftovers();
    // The ftrace instances of killed `run`/`commit`/`pages` (not in the record: their names say whose).
    if let Ok(tracefs) = crate::core::registry::open_tracefs() {
        results.extend(requests::remove_stale_instances(&tracefs));
    }
    finish("cleanup", results)
}

/// Print what each removal did; the exit code says whether everything went.
pub fn finish(what: &str, results: Vec<Result<String, String>>) -> Outcome {
    let failed = results.iter().filter(|r| r.is_err()).count();
    for result in &results {
        match result {
            Ok(line) => println!("{line}"),
            Err(line) => eprintln!("syncbench: {line}"),
        }
    }
    match (results.len(), failed) {
        (0, _) => println!("{what}: nothing left behind"),
        (n, 0) => println!("{what}: removed all {n} left behind"),
        (n, f) => println!("{what}: {f} of {n} could not be removed (see above)"),
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `lab down`: a lab a dead `lab run` or `lab up` left goes with its command's processes and the mount
/// directory syncbench made for it; a lab `up` left running is taken down through its server.
#[cfg(feature = "fuse")]
pub fn lab_down(mountpoint: std::path::PathBuf) -> Outcome {
    let mount = std::fs::canonicalize(&mountpoint).unwrap_or(mountpoint);
    let results = registry::remove_lab_leftovers(&mount);
    if !results.is_empty() {
        return finish("lab down", results);
    }
    let client = crate::proof::lab::control::Client::for_mount(&mount)
        .map_err(|e| crate::core::exit::usage(format!("{e:#}")))?;
    let state = crate::proof::lab::daemon::down(&client)?;
    println!("lab down: {} unmounted, disk removed", state.mount.display());
    Ok(ExitCode::SUCCESS)
}
