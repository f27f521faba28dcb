//! What else ran while a case was measured: requests on the device that were not ours (the device's own
//! counters in /sys/class/block/NAME/stat), CPU time the hypervisor took (steal in /proc/stat), and another
//! syncbench in the same directory (a lock file of our own, and the pids in `.syncbench-*` names).
//!
//! Why: a device has phases and neighbours. A case measured while a backup or another benchmark flushed
//! to the same disk is slower for reasons the numbers cannot show; naming the disturbance on the case it
//! touched lets `compare` say "environment changed" instead of "slower".

// The device counters are the ones `trace` reads: one parser of the stat file.
use crate::core::cleanup::{Created, PREFIX};
use crate::core::schema::{Disturbance, DisturbanceKind};
use crate::observe::blockdev::foreign::{Foreign, OurWork, SECTOR_BYTES, SLACK_BYTES, SLACK_FLUSHES, foreign_of};
use crate::observe::blockdev::stat::{Counters as DeviceCounters, parse as parse_stat};
use crate::observe::probe::steal::{self, CpuTimes};
use crate::observe::probe::sysfs::Root;
use std::path::{Path, PathBuf};

/// Watches the devices under a directory and the CPU's steal time, window by window.
#[derive(Clone, Debug)]
pub struct Monitor {
    root: Root,
    /// Block device names (`vda`, `vda1`, `loop3`): the one the file system sits on and the disk under it.
    devices: Vec<String>,
}

/// A reading at the start of a window.
#[derive(Clone, Debug)]
pub struct Window {
    devices: Vec<Option<DeviceCounters>>,
    cpu: Option<CpuTimes>,
}

/// The disturbances of one case: the device counters of each of its rounds, and the CPU steal summed.
#[derive(Clone, Debug, Default)]
pub struct CaseDisturbance {
    rounds: Vec<RoundCounts>,
    steal_ticks: u64,
    total_ticks: u64,
}

/// What the devices did during one round of a case, and what the case did.
#[derive(Clone, Debug)]
struct RoundCounts {
    /// 1-based.
    round: usize,
    ours: OurWork,
    /// Per device (as in the monitor): (name, bytes written, bytes read, flushes).
    devices: Vec<(String, Foreign)>,
}

/// A round whose writes (or flushes) per commit exceed the case's quietest round's by this fraction, beyond
/// the fixed slack, did more than our commits: our own footprint per commit is the same in every round of
/// a case (same method, size and file), a writer next to us is not. This catches a neighbour that the
/// absolute allowance (sized for the worst method) lets through: a 64 KiB O_DSYNC `dd` beside 4 KiB
/// fdatasync commits adds a few MiB per round, well inside 48 KiB × commits.
const ROUND_EXCESS_FRACTION: f64 = 0.5;
/// Steal at or above this share of the case's CPU time, over at least this many ticks, is named.
const STEAL_MIN_TICKS: u64 = 20;

impl Monitor {
    /// Watch the devices of `env` (the device the file system sits on and the disk at the end of the chain).
    pub fn new(env: &crate::core::environment::Environment) -> Monitor {
        Monitor::at(Root::system(), env)
    }

    /// Like [`Monitor::new`] under a fixture root.
    pub fn at(root: Root, env: &crate::core::environment::Environment) -> Monitor {
        let mut devices: Vec<String> = env.devices.iter().take(1).map(|d| d.name.clone()).collect();
        if let Some(last) = env.devices.last().filter(|d| !devices.contains(&d.name)) {
            devices.push(last.name.clone());
        }
        Monitor { root, devices }
    }

    /// Read the counters now.
    pub fn start(&self) -> Window {
        Window { devices: self.devices.iter().map(|d| self.read(d)).collect(), cpu: steal::read(&self.root) }
    }

    fn read(&self, device: &str) -> Option<DeviceCounters> {
        parse_stat(&self.root.read(&format!("sys/class/block/{device}/stat"))?)
    }

    /// Close a window opened by [`Monitor::start`] in which our case did `ours` in round `round` (1-based);
    /// add it to `into`.
    pub fn finish(&self, window: Window, ours: OurWork, round: usize, into: &mut CaseDisturbance) {
        let mut devices = Vec::new();
        for (name, before) in self.devices.iter().zip(window.devices) {
            let (Some(before), Some(after)) = (before, self.read(name)) else { continue };
            let delta = |a: u64, b: u64| b.saturating_sub(a);
            let counts = Foreign {
                write_bytes: delta(before.write_sectors, after.write_sectors) * SECTOR_BYTES,
                read_bytes: delta(before.read_sectors, after.read_sectors) * SECTOR_BYTES,
                flushes: delta(before.flushes, after.flushes),
            };
            devices.push((name.clone(), counts));
        }
        into.rounds.push(RoundCounts { round, ours, devices });
        if let (Some(a), Some(b)) = (window.cpu, steal::read(&self.root)) {
            into.steal_ticks += b.steal_ticks.saturating_sub(a.steal_ticks);
            into.total_ticks += b.total_ticks.saturating_sub(a.total_ticks);
        }
    }
}

impl CaseDisturbance {
    /// Per device, the requests of each round that our work does not explain: beyond the absolute allowance
    /// ([`foreign`]), or beyond the case's quietest round per commit ([`ROUND_EXCESS_FRACTION`]).
    fn foreign_by_round(&self, device: &str) -> Vec<(usize, Foreign)> {
        let counts: Vec<(usize, OurWork, Foreign)> = self
            .rounds
            .iter()
            .filter_map(|r| Some((r.round, r.ours, r.devices.iter().find(|(n, _)| n == device)?.1)))
            .collect();
        // Own writeback is a fixed amount per round, not a cost per commit: compare what is left.
        let beyond_writeback =
            |o: &OurWork, c: &Foreign| Foreign { write_bytes: c.write_bytes.saturating_sub(o.writeback_bytes), ..*c };
        let per_commit = |f: fn(&Foreign) -> u64| {
            counts
                .iter()
                .filter(|(_, o, _)| o.commits > 0)
                .map(|(_, o, c)| f(&beyond_writeback(o, c)) as f64 / o.commits as f64)
                .fold(f64::INFINITY, f64::min)
        };
        let (min_bytes, min_flushes) = (per_commit(|c| c.write_bytes), per_commit(|c| c.flushes));
        let relative = |measured: u64, commits: u64, min: f64, slack: u64| -> u64 {
            if counts.len() < 2 || !min.is_finite() {
                return 0;
            }
            let expected = commits as f64 * min;
            let excess = measured as f64 - expected;
            if excess > (slack as f64).max(expected * ROUND_EXCESS_FRACTION) { excess as u64 } else { 0 }
        };
        counts
            .iter()
            .map(|(round, ours, c)| {
                let absolute = foreign_of(*c, *ours);
                let f = Foreign {
                    write_bytes: absolute.write_bytes.max(relative(
                        beyond_writeback(ours, c).write_bytes,
                        ours.commits,
                        min_bytes,
                        SLACK_BYTES,
                    )),
                    read_bytes: absolute.read_bytes,
                    flushes: absolute.flushes.max(relative(c.flushes, ours.commits, min_flushes, SLACK_FLUSHES)),
                };
                (*round, f)
            })
            .collect()
    }

    fn device_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (name, _) in self.rounds.iter().flat_map(|r| &r.devices) {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// The rounds (1-based, ascending) in which some device served requests that were not ours.
    pub fn touched_rounds(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .device_names()
            .iter()
            .flat_map(|d| self.foreign_by_round(d))
            .filter(|(_, f)| f.any())
            .map(|(r, _)| r)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The hypervisor's share of the CPU time while the case ran, in percent, when it reached the warning
    /// level over enough ticks to count.
    pub fn steal_pct(&self) -> Option<f64> {
        if self.total_ticks < STEAL_MIN_TICKS {
            return None;
        }
        let pct = 100.0 * self.steal_ticks as f64 / self.total_ticks as f64;
        (pct >= steal::WARN_PCT).then_some(pct)
    }

    /// The disturbances to name on the case (empty when none passed the thresholds); `left_out`: the
    /// disturbed rounds were left out of the case's rate.
    pub fn named(&self, rounds: usize, left_out: bool) -> Vec<Disturbance> {
        let mut out = Vec::new();
        // The device the file system sits on first; the disk under it only when the first saw nothing (a
        // loop file's disk, a partition's neighbours).
        for name in self.device_names() {
            let by_round = self.foreign_by_round(&name);
            let touched: Vec<usize> = by_round.iter().filter(|(_, f)| f.any()).map(|(r, _)| *r).collect();
            if touched.is_empty() {
                continue;
            }
            let mut sum = Foreign::default();
            by_round.iter().for_each(|(_, f)| sum.add(*f));
            let mut detail = device_sentence(&name, &sum, &touched, rounds);
            if left_out {
                detail.push_str("; those rounds are left out of the rate");
            }
            out.push(Disturbance {
                kind: DisturbanceKind::DeviceIo,
                detail,
                foreign_write_bytes: sum.write_bytes,
                foreign_read_bytes: sum.read_bytes,
                foreign_flushes: sum.flushes,
                rounds: touched,
                steal_pct: None,
            });
            break;
        }
        if let Some(pct) = self.steal_pct() {
            out.push(Disturbance {
                kind: DisturbanceKind::CpuSteal,
                detail: format!("the hypervisor took {pct:.0}% of the CPU time while this case ran"),
                steal_pct: Some(pct),
                ..Disturbance::default()
            });
        }
        out
    }
}

fn device_sentence(name: &str, f: &Foreign, touched: &[usize], rounds: usize) -> String {
    let mut parts = Vec::new();
    if f.write_bytes > 0 {
        parts.push(format!("{} written", crate::core::units::format_mib(f.write_bytes)));
    }
    if f.read_bytes > 0 {
        parts.push(format!("{} read", crate::core::units::format_mib(f.read_bytes)));
    }
    if f.flushes > 0 {
        parts.push(format!("{} flushes", f.flushes));
    }
    let which: Vec<String> = touched.iter().map(|r| r.to_string()).collect();
    let noun = if touched.len() == 1 { "round" } else { "rounds" };
    format!(
        "{name} served requests that were not this case's ({}) in {noun} {} of {rounds}",
        parts.join(", "),
        which.join(", ")
    )
}

/// Our lock in a directory: held (flock) while we measure there; removed at exit.
#[derive(Debug)]
pub struct DirLock {
    _file: std::fs::File,
    _created: Created,
    /// Leftovers of killed runs found when the lock was taken.
    pub leftovers: Vec<PathBuf>,
}

/// The `.syncbench-*` entries of `dir` with the pid in their names.
fn entries(dir: &Path) -> Vec<(PathBuf, Option<u32>)> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(PathBuf, Option<u32>)> = read
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let rest = name.strip_prefix(PREFIX)?;
            Some((e.path(), pid_in(rest)))
        })
        .collect();
    out.sort();
    out
}

/// `<what>-<pid>-<n>` → pid (the what may itself contain dashes).
fn pid_in(rest: &str) -> Option<u32> {
    let mut parts = rest.rsplit('-');
    let _n = parts.next()?;
    parts.next()?.parse().ok()
}

/// Whether `pid` is a running syncbench (not a reused pid of another program).
fn live_syncbench(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim().starts_with("syncbench"))
}

impl DirLock {
    /// Take our lock in `dir`. Another syncbench measuring there is refused (one line, exit code 2): two
    /// measurements at once each measure the other. Entries of killed runs are returned as leftovers.
    pub fn acquire(dir: &Path) -> anyhow::Result<DirLock> {
        let me = std::process::id();
        let path = dir.join(crate::core::cleanup::unique_name("lock"));
        let (created, file) =
            Created::create(path.clone(), |p| std::fs::OpenOptions::new().write(true).create_new(true).open(p))?;
        if !syncbench_sys::try_flock(&file, true)? {
            anyhow::bail!("locking {}: held by another process", path.display());
        }
        let mut leftovers = Vec::new();
        for (entry, pid) in entries(dir) {
            if entry == path {
                continue;
            }
            let other_live = pid.is_some_and(|p| p != me && live_syncbench(p)) || held_by_another(&entry);
            if other_live {
                let who = pid.map_or(String::new(), |p| format!(" (pid {p})"));
                return Err(crate::core::exit::usage(format!(
                    "another syncbench{who} is measuring in {}: two at once measure each other — wait for it to \
                     finish or choose another directory",
                    dir.display()
                )));
            }
            if pid != Some(me) {
                leftovers.push(entry);
            }
        }
        Ok(DirLock { _file: file, _created: created, leftovers })
    }

    /// [`DirLock::acquire`] for a command: a directory that cannot hold the lock file is the user's problem
    /// (one line, exit code 2), and leftovers of a killed run are reported on stderr at once, before the
    /// measuring starts.
    pub fn take(dir: &Path) -> anyhow::Result<DirLock> {
        let lock = DirLock::acquire(dir).map_err(|e| {
            let shown = dir.display();
            match e.downcast_ref::<std::io::Error>().and_then(std::io::Error::raw_os_error) {
                Some(libc::EACCES | libc::EPERM) => {
                    crate::core::exit::usage(format!("{shown} is not writable — choose a directory you can write to"))
                }
                Some(libc::EROFS) => crate::core::exit::usage(format!(
                    "{shown} is on a read-only file system — choose a writable directory"
                )),
                Some(libc::ENOSPC | libc::EDQUOT) => {
                    crate::core::exit::usage(format!("{shown} has no space left for a lock file — free some space"))
                }
                _ => e,
            }
        })?;
        if let Some(note) = lock.leftover_note() {
            eprintln!("syncbench: {note}");
        }
        Ok(lock)
    }

    /// The line that reports leftovers of a killed run, with the command to remove them.
    pub fn leftover_note(&self) -> Option<String> {
        leftover_note(&self.leftovers)
    }
}

/// A lock file whose flock another process holds.
fn held_by_another(entry: &Path) -> bool {
    let is_lock = entry.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!("{PREFIX}lock-")));
    if !is_lock {
        return false;
    }
    let Ok(file) = std::fs::File::open(entry) else { return false };
    matches!(syncbench_sys::try_flock(&file, false), Ok(false))
}

/// "DIR holds N leftover .syncbench-* files of a run that was killed …; remove them with: rm -rf -- …".
pub fn leftover_note(leftovers: &[PathBuf]) -> Option<String> {
    if leftovers.is_empty() {
        return None;
    }
    let quoted: Vec<String> = leftovers.iter().map(|p| shell_quote(&p.display().to_string())).collect();
    let dir = leftovers[0].parent().map_or(String::from("."), |d| d.display().to_string());
    Some(format!(
        "{dir} holds {} leftover {PREFIX}* file(s) of a syncbench that was killed; syncbench does not remove \
         files it did not create in this run — remove them with: rm -rf -- {}",
        leftovers.len(),
        quoted.join(" ")
    ))
}

fn shell_quote(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:".contains(c)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
impl CaseDisturbance {
    /// `rounds` rounds of 10 commits of 8 KiB on `vda`; those in `touched` (1-based) had 1 GiB written
    /// beside them.
    pub(crate) fn with_touched_rounds(rounds: usize, touched: &[usize]) -> CaseDisturbance {
        let round = |r: usize| RoundCounts {
            round: r,
            ours: OurWork { commits: 10, bytes: 81920, writeback_bytes: 0 },
            devices: vec![(
                "vda".into(),
                Foreign { write_bytes: if touched.contains(&r) { 1 << 30 } else { 81920 }, read_bytes: 0, flushes: 10 },
            )],
        };
        CaseDisturbance { rounds: (1..=rounds).map(round).collect(), ..Default::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::blockdev::foreign::foreign;

    #[test]
    fn our_own_requests_are_not_foreign() {
        let before = DeviceCounters { write_sectors: 1000, flushes: 10, ..Default::default() };
        let ours = OurWork { commits: 100, bytes: 100 * 8192, writeback_bytes: 0 };
        // 100 commits of 8 KiB with a journal block each and two flushes each.
        let after = DeviceCounters { write_sectors: 1000 + 100 * (8192 + 4096) / 512, flushes: 210, ..before };
        assert!(!foreign(before, after, ours).any());
        // A dd writer's 64 MiB and 500 flushes on top are.
        let busy = DeviceCounters {
            write_sectors: after.write_sectors + 64 * 2048,
            flushes: 710,
            reads: 3,
            read_sectors: 4096,
            ..after
        };
        let f = foreign(before, busy, ours);
        assert!(f.write_bytes > 50 << 20 && f.flushes > 250 && f.read_bytes > 0, "{f:?}");
    }

    #[test]
    fn monitor_names_the_device_and_steal_on_the_case() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("sys/class/block/vda")).unwrap();
        std::fs::create_dir_all(root.join("proc")).unwrap();
        let set = |sectors: u64, steal: u64, total_idle: u64| {
            std::fs::write(
                root.join("sys/class/block/vda/stat"),
                format!("0 0 0 0 10 0 {sectors} 0 0 0 0 0 0 0 0 5 0"),
            )
            .unwrap();
            std::fs::write(root.join("proc/stat"), format!("cpu  100 0 0 {total_idle} 0 0 0 {steal} 0 0\n")).unwrap();
        };
        let env = crate::core::environment::Environment {
            devices: vec![crate::core::environment::Device { name: "vda".into(), ..Default::default() }],
            ..Default::default()
        };
        let monitor = Monitor::at(Root::at(root), &env);
        let mut case = CaseDisturbance::default();
        set(0, 0, 0);
        let w = monitor.start();
        set(16, 1, 100);
        monitor.finish(w, OurWork { commits: 1, bytes: 8192, writeback_bytes: 0 }, 1, &mut case);
        assert!(case.named(2, false).is_empty(), "{:?}", case.named(2, false));
        let w = monitor.start();
        set(16 + 200 * 2048, 31, 300);
        monitor.finish(w, OurWork { commits: 1, bytes: 8192, writeback_bytes: 0 }, 2, &mut case);
        let named = case.named(2, false);
        assert_eq!(named.len(), 2, "{named:?}");
        assert_eq!((named[0].foreign_write_bytes >> 20, named[0].rounds.clone()), (199, vec![2]));
        assert!(named[1].steal_pct.unwrap() > 5.0);
        assert_eq!(case.touched_rounds(), vec![2]);
        assert_eq!(named[0].kind, DisturbanceKind::DeviceIo);
        assert!(
            named[0].detail.starts_with("vda served requests that were not this case's (200.0 MiB written)"),
            "{}",
            named[0].detail
        );
        assert!(named[0].detail.ends_with("in round 2 of 2"), "{}", named[0].detail);
        assert_eq!(named[1].kind, DisturbanceKind::CpuSteal);
    }

    #[test]
    fn a_neighbour_inside_the_absolute_allowance_shows_against_the_quiet_rounds() {
        // Five rounds of 500 fdatasync commits of 4 KiB (4 KiB + one flush each on the device); in round 3
        // a 64 KiB O_DSYNC writer adds 150 writes (9.4 MiB, 150 flushes) and slows us to 300 commits. The
        // absolute allowance (48 KiB and 4 flushes per commit) hides it; the quietest rounds do not.
        let round = |n: usize, commits: u64, extra_writes: u64| RoundCounts {
            round: n,
            ours: OurWork { commits, bytes: commits * 4096, writeback_bytes: 0 },
            devices: vec![(
                "vda".to_string(),
                Foreign {
                    write_bytes: commits * 4096 + extra_writes * 65536,
                    read_bytes: 0,
                    flushes: commits + extra_writes,
                },
            )],
        };
        let quiet = (1..=5).map(|n| round(n, 500, 0)).collect::<Vec<_>>();
        let mut case = CaseDisturbance { rounds: quiet.clone(), ..Default::default() };
        assert!(case.touched_rounds().is_empty());
        assert!(!foreign_of(quiet[0].devices[0].1, quiet[0].ours).any());
        case.rounds[2] = round(3, 300, 150);
        assert!(!foreign_of(case.rounds[2].devices[0].1, case.rounds[2].ours).any(), "inside the allowance");
        assert_eq!(case.touched_rounds(), vec![3]);
        let named = case.named(5, true);
        assert_eq!(named[0].rounds, vec![3]);
        assert_eq!(named[0].foreign_write_bytes, 150 * 65536);
        assert!(
            named[0].detail.ends_with("in round 3 of 5; those rounds are left out of the rate"),
            "{}",
            named[0].detail
        );
        // Commits that vary by a few percent between rounds are not a neighbour.
        let mut jitter = CaseDisturbance { rounds: quiet, ..Default::default() };
        jitter.rounds[1] = round(2, 540, 0);
        jitter.rounds[1].devices[0].1.write_bytes += 200 * 1024;
        assert!(jitter.touched_rounds().is_empty());
    }

    #[test]
    fn own_writeback_is_the_cases_own_io_and_a_neighbour_still_shows() {
        // `write` with no sync through a 16 MiB region: every round's closing fsync (or the kernel's
        // writeback) writes the region back, 16 MiB and a journal commit whatever the commits; the rounds
        // ran 15,000 to 40,000 commits of 8 KiB (recorded on vda: 50 of 50 rounds were named before).
        let region = 16u64 << 20;
        let round = |n: usize, commits: u64, extra: u64| {
            let bytes = commits * 8192;
            RoundCounts {
                round: n,
                ours: OurWork { commits, bytes, writeback_bytes: bytes.min(region) },
                devices: vec![(
                    "vda".to_string(),
                    Foreign { write_bytes: region + 64 * 1024 + extra, read_bytes: 0, flushes: 2 },
                )],
            }
        };
        let commits = [40_000, 15_000, 22_000, 31_000, 18_000];
        let rounds: Vec<RoundCounts> = commits.iter().enumerate().map(|(i, &c)| round(i + 1, c, 0)).collect();
        let case = CaseDisturbance { rounds: rounds.clone(), ..Default::default() };
        assert!(case.touched_rounds().is_empty(), "{:?}", case.named(5, false));
        // Counted per commit as before (no writeback of its own), the same rounds were "not this case's".
        let per_commit = |mut r: RoundCounts| {
            r.ours.writeback_bytes = 0;
            r
        };
        let old = CaseDisturbance { rounds: rounds.iter().cloned().map(per_commit).collect(), ..Default::default() };
        assert!(!old.touched_rounds().is_empty());
        // A neighbour writing 100 MiB in round 4 is still named.
        let mut busy = CaseDisturbance { rounds, ..Default::default() };
        busy.rounds[3] = round(4, 31_000, 100 << 20);
        assert_eq!(busy.touched_rounds(), vec![4]);
    }

    #[test]
    fn a_second_syncbench_is_refused_and_leftovers_are_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(tmp.path()).unwrap();
        assert!(first.leftovers.is_empty());
        // Our own process is a live syncbench only in name checks; a held lock file is what refuses here.
        let err = DirLock::acquire(tmp.path()).unwrap_err();
        assert!(err.downcast_ref::<crate::core::exit::UsageError>().is_some());
        assert!(err.to_string().contains("another syncbench"), "{err}");
        drop(first);
        // A file of a killed run (pid 999999999 cannot exist) is a leftover, reported with rm.
        let dead = tmp.path().join(".syncbench-run-999999999-0");
        std::fs::write(&dead, b"x").unwrap();
        let lock = DirLock::acquire(tmp.path()).unwrap();
        assert_eq!(lock.leftovers, vec![dead.clone()]);
        let note = lock.leftover_note().unwrap();
        assert!(note.contains("1 leftover") && note.ends_with(&format!("rm -rf -- {}", dead.display())), "{note}");
        assert!(dead.exists(), "reported, never removed");
    }

    #[test]
    fn pids_are_read_from_names() {
        assert_eq!(pid_in("run-1234-0"), Some(1234));
        assert_eq!(pid_in("pages-dw-77-3"), Some(77));
        assert_eq!(pid_in("garbage"), None);
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
