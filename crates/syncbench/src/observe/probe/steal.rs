//! CPU time the hypervisor took from this virtual machine while syncbench measured: the `steal` column
//! of /proc/stat. A descheduled vCPU delays every wake-up, including the one that ends a flush, so a
//! measurement with steal is slower and noisier than the storage alone would make it — and nothing in the
//! numbers themselves says so. On the project's VM, steal of 0-37% per point moved the 16-client commit
//! rate by up to 2x from one run to the next (docs/benchmarks.md).

use super::sysfs::Root;
use crate::core::verdict::{Severity, Verdict};

/// Steal at or above this share of the CPU time warns that timings include waits for the host.
pub const WARN_PCT: f64 = 5.0;

/// Cumulative CPU time of all CPUs, in clock ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time the hypervisor ran something else while a vCPU wanted to run.
    pub steal_ticks: u64,
    /// user + nice + system + idle + iowait + irq + softirq + steal (guest time is inside user and nice).
    pub total_ticks: u64,
}

/// Parse the aggregate `cpu` line of /proc/stat. `None` if it is missing or has no steal column
/// (kernels before 2.6.11).
pub fn parse(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.split_whitespace().next() == Some("cpu"))?;
    let fields: Vec<u64> = line.split_whitespace().skip(1).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    let first_eight = fields.get(..8)?;
    Some(CpuTimes { steal_ticks: first_eight[7], total_ticks: first_eight.iter().sum() })
}

/// Read the CPU times under `root` (`/` on a real machine).
pub fn read(root: &Root) -> Option<CpuTimes> {
    parse(&root.read("proc/stat")?)
}

/// Share of the CPU time between two readings that was stolen, in percent. `None` when either reading
/// is missing or no tick passed between them.
pub fn steal_pct(before: Option<CpuTimes>, after: Option<CpuTimes>) -> Option<f64> {
    let (before, after) = (before?, after?);
    let total = after.total_ticks.checked_sub(before.total_ticks).filter(|&t| t > 0)?;
    let steal = after.steal_ticks.checked_sub(before.steal_ticks)?;
    Some(100.0 * steal as f64 / total as f64)
}

/// Measures steal over a stretch of work: start it before, read it after.
pub struct StealMeter {
    root: Root,
    start: Option<CpuTimes>,
}

impl StealMeter {
    /// Start measuring on the real machine.
    pub fn start() -> StealMeter {
        StealMeter::start_at(Root::system())
    }

    /// Start measuring under `root`.
    pub fn start_at(root: Root) -> StealMeter {
        let start = read(&root);
        StealMeter { root, start }
    }

    /// Steal since the start, in percent of the CPU time.
    pub fn pct(&self) -> Option<f64> {
        steal_pct(self.start, read(&self.root))
    }
}

/// A warning when the hypervisor took `pct` ≥ [`WARN_PCT`] of the CPU time during `what` (e.g. "the
/// measurement", "the 16-client point").
pub fn verdict(pct: f64, what: &str) -> Option<Verdict> {
    (pct >= WARN_PCT).then(|| Verdict {
        severity: Severity::Warning,
        code: crate::core::verdict::VerdictCode::CpuSteal.name().into(),
        message: format!(
            "The hypervisor took {pct:.0}% of this machine's CPU time during {what} (steal time in \
             /proc/stat): every wake-up, including the one that ends a flush, waited for the host, so these \
             numbers are slower and noisier than the storage alone would make them."
        ),
        advice: "Repeat when the host is quiet and compare runs only side by side in time (alternate them); \
                 on a cloud VM, a dedicated or larger instance steals less."
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  1693654 29463 384590 878474 144896 0 54559 100968 0 0\n\
                        cpu0 846827 14731 192295 439237 72448 0 27279 50484 0 0\n\
                        intr 1 2 3\n";

    #[test]
    fn parses_the_aggregate_line_with_steal_eighth() {
        let t = parse(STAT).unwrap();
        assert_eq!(t.steal_ticks, 100968);
        assert_eq!(t.total_ticks, 1693654 + 29463 + 384590 + 878474 + 144896 + 54559 + 100968);
    }

    #[test]
    fn old_kernels_without_a_steal_column_and_garbage_are_unknown() {
        assert_eq!(parse("cpu  1 2 3 4 5 6 7\n"), None);
        assert_eq!(parse("cpu  1 2 x 4 5 6 7 8\n"), None);
        assert_eq!(parse("intr 1 2\n"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn steal_share_between_two_readings() {
        let at = |steal, total| Some(CpuTimes { steal_ticks: steal, total_ticks: total });
        assert_eq!(steal_pct(at(10, 1000), at(40, 1200)), Some(15.0));
        assert_eq!(steal_pct(at(10, 1000), at(10, 1000)), None, "no tick passed");
        assert_eq!(steal_pct(None, at(10, 1000)), None);
        assert_eq!(steal_pct(at(10, 1000), at(5, 1200)), None, "counters never go back");
    }

    #[test]
    fn warns_only_from_the_threshold_and_names_the_share() {
        assert!(verdict(4.9, "the measurement").is_none());
        let v = verdict(23.4, "the 16-client point").unwrap();
        assert_eq!((v.severity, v.code.as_str()), (Severity::Warning, "cpu_steal"));
        assert!(v.message.contains("23%") && v.message.contains("the 16-client point"), "{}", v.message);
    }

    #[test]
    fn meter_reads_a_fixture_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        let write = |steal: u64, idle: u64| {
            std::fs::write(dir.path().join("proc/stat"), format!("cpu  100 0 50 {idle} 0 0 0 {steal} 0 0\n")).unwrap()
        };
        write(0, 850);
        let meter = StealMeter::start_at(Root::at(dir.path()));
        write(50, 1300);
        assert_eq!(meter.pct(), Some(10.0));
    }
}
