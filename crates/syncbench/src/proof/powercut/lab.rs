//! `powercut lab`: the whole loop on emulated disks. Per profile × file system one lab stack; per method
//! and cut: write (the writer in a thread, its witness in memory), cut the power at a seeded random moment,
//! reboot (journal replay), verify, remove the run's files. The witness stops accepting acks the instant
//! before the cut, so an ack counts only if its durable write returned before the power went.

use super::acks::parse;
use super::record::splitmix64;
use super::verify::{RecordCounts, Verification, verify};
use super::writer::{self, Witness, WritePlan};
use crate::core::method::SyncMethod;
use crate::proof::lab::profile::{Honesty, LabFs, Profile};
use crate::proof::lab::stack::{Stack, StackConfig};
use anyhow::Context;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The power is cut this long after the first record at the earliest…
pub const CUT_AFTER_MS_MIN: u64 = 200;
/// …and at the latest (uniform in between, from the seed).
pub const CUT_AFTER_MS_MAX: u64 = 1200;

/// What to run.
#[derive(Clone, Debug)]
pub struct LabPlan {
    /// Lab profiles.
    pub profiles: Vec<Profile>,
    /// File systems.
    pub fss: Vec<LabFs>,
    /// Sync methods.
    pub methods: Vec<SyncMethod>,
    /// Cuts per profile × fs × method.
    pub cuts: u32,
    /// Seed of the cut moments, the cuts and the run ids.
    pub seed: u64,
}

/// One cut.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CutResult {
    /// The cut's seed (`syncbench lab cut --seed` would repeat the device's part).
    pub seed: u64,
    /// When the power went, after the first record.
    pub cut_after_ms: u64,
    /// What became of the records (in the JSON as fields of the cut).
    #[serde(flatten)]
    pub records: RecordCounts,
    /// Acknowledged records per second of writing.
    pub records_per_s: f64,
    /// Writes the device's cache lost (its own count).
    pub device_lost_writes: u64,
    /// The file system needed a repair to mount after the cut.
    pub repaired_with: Option<String>,
    /// The first losses, described.
    pub examples: Vec<String>,
}

/// One profile × fs × method.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Cell {
    /// Lab profile.
    pub profile: String,
    /// Its honesty about flushes.
    pub honesty: String,
    /// File system.
    pub fs: String,
    /// Sync method.
    pub method: String,
    /// Whether the method promises durability.
    pub durable: bool,
    /// Every cut.
    pub cuts: Vec<CutResult>,
    /// File systems left unusable by a cut (the next write or verify failed; a new disk was made).
    pub unusable_fs: Vec<String>,
}

impl Cell {
    /// Acknowledged records and what became of them, all cuts.
    pub fn records(&self) -> RecordCounts {
        self.cuts.iter().map(|c| c.records).sum()
    }
    /// Acknowledged records, all cuts.
    pub fn acknowledged(&self) -> u64 {
        self.records().acknowledged
    }
    /// Lost acknowledged records, all cuts.
    pub fn lost(&self) -> u64 {
        self.records().lost
    }
    /// Torn acknowledged records, all cuts.
    pub fn torn(&self) -> u64 {
        self.records().torn
    }
    /// Acknowledged overwrites torn by the next write to their slot (not failures), all cuts.
    pub fn torn_by_next_overwrite(&self) -> u64 {
        self.records().torn_by_next_overwrite
    }
    /// Cuts after which an acknowledged record was lost or torn.
    pub fn cuts_with_loss(&self) -> usize {
        self.cuts.iter().filter(|c| c.records.lost + c.records.torn > 0).count()
    }
    /// Median acknowledged records per second over the cuts.
    pub fn records_per_s_median(&self) -> f64 {
        let mut rates: Vec<f64> = self.cuts.iter().map(|c| c.records_per_s).collect();
        rates.sort_by(f64::total_cmp);
        rates.get(rates.len() / 2).copied().unwrap_or(0.0)
    }
    /// Whether losses are what this cell should show: a method that promises nothing, or a disk that lies.
    pub fn loss_expected(&self) -> bool {
        !self.durable || self.honesty == Honesty::IgnoresFlush.name()
    }
    /// One line: what the cuts showed, and whether that is what the disk and method promise.
    pub fn verdict(&self) -> String {
        let broken = match self.unusable_fs.len() {
            0 => String::new(),
            k => format!("; the file system was unusable after {k} cuts (a new disk was made each time)"),
        };
        self.loss_verdict() + &broken
    }
    fn loss_verdict(&self) -> String {
        let (lossy, n) = (self.cuts_with_loss(), self.cuts.len());
        let pct = 100.0 * lossy as f64 / n.max(1) as f64;
        match (lossy, self.loss_expected()) {
            (0, false) => format!("holds: no acknowledged record lost in {n} cuts"),
            (0, true) => format!("no loss seen in {n} cuts, though {}", self.why_loss_expected()),
            (_, true) => {
                format!("loses acknowledged records in {lossy} of {n} cuts ({pct:.0}%): {}", self.why_loss_expected())
            }
            (_, false) => format!("FAILS: acknowledged records lost in {lossy} of {n} cuts ({pct:.0}%)"),
        }
    }
    fn why_loss_expected(&self) -> String {
        if self.durable {
            format!("the disk ({}) ignores flushes", self.profile)
        } else {
            format!("{} is not durable", self.method)
        }
    }
    /// Acknowledged records lost where the disk and method promise none.
    pub fn unexpected_loss(&self) -> bool {
        !self.loss_expected() && (self.cuts_with_loss() > 0 || !self.unusable_fs.is_empty())
    }
}

/// Acks in memory, refused from the instant the power is cut.
#[derive(Clone, Default)]
struct MemoryWitness(Arc<Mutex<(String, bool)>>);

impl Witness for MemoryWitness {
    fn send(&mut self, line: &str) -> std::io::Result<()> {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if guard.1 {
            return Err(std::io::Error::other("the power is off"));
        }
        guard.0.push_str(line);
        Ok(())
    }
}

impl MemoryWitness {
    fn power_off(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
    }
    fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).0.clone()
    }
}

/// Run the plan; `progress` is told of every cut. Stops early (returning what is done) on Ctrl-C.
pub fn run(plan: &LabPlan, mut progress: impl FnMut(&Cell, &CutResult)) -> anyhow::Result<Vec<Cell>> {
    let mut cells = Vec::new();
    let mut rng = plan.seed;
    for profile in &plan.profiles {
        for &fs in &plan.fss {
            let config =
                StackConfig { seed: splitmix64(&mut rng), ..StackConfig::new(fs.case(), profile.params.clone()) };
            let build = || {
                Stack::build(config.clone())
                    .with_context(|| format!("building a {} lab disk with {}", profile.name, fs.case().name()))
            };
            let done = crate::proof::lab::stack::run_exclusive(|| -> anyhow::Result<()> {
                let mut stack = Some(build()?);
                for &method in &plan.methods {
                    let mut cell = Cell {
                        profile: profile.name.into(),
                        honesty: profile.params.honesty.name().into(),
                        fs: fs.case().name().into(),
                        method: method.name().into(),
                        durable: method.durable(),
                        cuts: Vec::new(),
                        unusable_fs: Vec::new(),
                    };
                    while cell.cuts.len() < plan.cuts as usize && !crate::core::cleanup::interrupted() {
                        match one_cut(stack.as_mut().expect("built above"), method, &mut rng) {
                            Ok(cut) => {
                                progress(&cell, &cut);
                                cell.cuts.push(cut);
                            }
                            // A lying disk can leave a file system that mounts but is corrupt: record it,
                            // and go on with a new disk (torn down first: one stack per process).
                            Err(e) if cell.unusable_fs.len() < plan.cuts as usize => {
                                cell.unusable_fs.push(format!("after cut {}: {e:#}", cell.cuts.len()));
                                drop(stack.take());
                                stack = Some(build()?);
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    cells.push(cell);
                }
                drop(stack);
                Ok(())
            });
            match done {
                Some(result) => result?,
                None => return Ok(cells),
            }
        }
    }
    Ok(cells)
}

fn one_cut(stack: &mut Stack, method: SyncMethod, rng: &mut u64) -> anyhow::Result<CutResult> {
    let seed = splitmix64(rng);
    let cut_after_ms = CUT_AFTER_MS_MIN + splitmix64(rng) % (CUT_AFTER_MS_MAX - CUT_AFTER_MS_MIN + 1);
    let plan = WritePlan { dir: stack.mount_dir().to_path_buf(), method, duration: None, run: splitmix64(rng) };
    let witness = MemoryWitness::default();
    let root = writer::prepare(&plan, &mut witness.clone())?;
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let thread = {
        let (plan, root, mut witness, stop) = (plan.clone(), root.clone(), witness.clone(), stop.clone());
        std::thread::spawn(move || writer::write(&plan, &root, &mut witness, &stop))
    };
    std::thread::sleep(Duration::from_millis(cut_after_ms));
    witness.power_off();
    let wrote_s = started.elapsed().as_secs_f64();
    let outcome = stack.cut(seed);
    stop.store(true, Ordering::SeqCst);
    // The writer ends on the dead disk's EIO or the witness's refusal; either is the expected end.
    let _ended = thread.join().map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
    let outcome = outcome.context("power cut and reboot")?;
    let (header, acks) = parse(&witness.text()).map_err(|e| anyhow::anyhow!("the in-memory acks: {e}"))?;
    let v: Verification = verify(&root, &header, &acks).context("verifying after the reboot")?;
    match std::fs::remove_dir_all(&root) {
        // The cut may have taken the whole run directory with it.
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", root.display()));
        }
        _ => {}
    }
    Ok(CutResult {
        seed,
        cut_after_ms,
        records: v.records(),
        records_per_s: v.acknowledged() as f64 / wrote_s,
        device_lost_writes: outcome.device.lost_writes,
        repaired_with: outcome.repaired_with,
        examples: v.examples.into_iter().take(3).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(acknowledged: u64, lost: u64, torn: u64) -> CutResult {
        CutResult {
            seed: 7,
            cut_after_ms: 300,
            records: RecordCounts { acknowledged, lost, torn, torn_by_next_overwrite: 1, unacknowledged_present: 2 },
            records_per_s: 10.0,
            device_lost_writes: 0,
            repaired_with: None,
            examples: Vec::new(),
        }
    }

    #[test]
    fn a_cuts_counts_stay_flat_in_the_json() {
        let records = RecordCounts { acknowledged: 16, lost: 3, torn: 3, ..RecordCounts::default() };
        let json = serde_json::to_string(&CutResult { records, ..cut(0, 0, 0) }).unwrap();
        assert!(
            json.starts_with(
                r#"{"seed":7,"cut_after_ms":300,"acknowledged":16,"lost":3,"torn":3,"torn_by_next_overwrite":0,"unacknowledged_present":0,"records_per_s":10.0,"#
            ),
            "{json}"
        );
    }

    #[test]
    fn a_cells_counts_are_the_sum_of_its_cuts() {
        let cell = Cell {
            profile: "ssd".into(),
            honesty: "honest".into(),
            fs: "ext4".into(),
            method: "fdatasync".into(),
            durable: true,
            cuts: vec![cut(100, 0, 0), cut(50, 3, 1), cut(70, 0, 2)],
            unusable_fs: Vec::new(),
        };
        assert_eq!((cell.acknowledged(), cell.lost(), cell.torn(), cell.torn_by_next_overwrite()), (220, 3, 3, 3));
        assert_eq!(cell.records().unacknowledged_present, 6);
        assert_eq!(cell.cuts_with_loss(), 2);
    }
}
