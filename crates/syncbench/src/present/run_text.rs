//! The human-readable text of `run`: what the numbers are about, the tables, then what they mean.

use crate::core::schema::CaseResult;
use crate::observe::probe;

/// What the text needs of `run`'s options.
#[derive(Clone, Debug)]
pub struct RunTextOptions {
    /// Mock timing: the numbers are simulated, and the title says so.
    pub mock: bool,
    /// The answer that opens the text (`summary::run_summary`; empty for none).
    pub answer: String,
    /// Rounds per case.
    pub rounds: u32,
    /// Time budget per case, in seconds.
    pub case_secs: f64,
    /// `sequential` or `rewrite`.
    pub pattern: &'static str,
    /// Write size of sections a, b, d, e and g.
    pub size_bytes: u64,
    /// Print a log2 histogram under each case.
    pub histogram: bool,
}

/// `run`'s text: the environment tree and its verdicts, the tables, then the verdicts that needed the
/// measurements.
pub fn run(
    opts: &RunTextOptions,
    env: &probe::Environment,
    verdicts: &[crate::core::verdict::Verdict],
    results: &[CaseResult],
) -> String {
    let timing = if opts.mock { " (MOCK TIMING: numbers are simulated, not measured)" } else { "" };
    // What the numbers are about first: the same tree `probe` prints and the verdicts that follow from the
    // environment alone; then the tables; then the verdicts that need the measurements (an implausible
    // flush rate, fsync much slower than fdatasync, CPU steal).
    let (from_env, from_results) = split_verdicts(env, verdicts);
    let mut text = format!("syncbench run{timing}\n");
    if !opts.answer.is_empty() {
        text.push_str(&opts.answer);
        text.push('\n');
    }
    text.push_str(&probe::render::environment_tree(env));
    if !from_env.is_empty() || from_results.is_empty() {
        text.push('\n');
        text.push_str(&probe::render::verdict_list(&from_env));
        text.push('\n');
    }
    text.push_str(&format!(
        "{} cases in {} rounds (order changed every round), up to {} s each in all, pattern {}\n",
        results.len(),
        opts.rounds,
        opts.case_secs,
        opts.pattern
    ));
    text.push_str(&crate::present::table::render(results, opts.size_bytes, opts.histogram));
    text.push_str(&crate::present::summary::case_notes(results));
    if !from_results.is_empty() {
        text.push('\n');
        let list = probe::render::verdict_list(&from_results);
        let items = list.strip_prefix("verdicts:").unwrap_or(&list);
        text.push_str(&format!("verdicts from the measurements:{items}"));
    }
    text
}

/// The verdicts the rules give for the environment alone (no measurements), and the rest: those that
/// needed the results, in the order given (most severe first).
fn split_verdicts(
    env: &probe::Environment,
    verdicts: &[crate::core::verdict::Verdict],
) -> (Vec<crate::core::verdict::Verdict>, Vec<crate::core::verdict::Verdict>) {
    let env_only = probe::verdicts(env, &[]);
    verdicts.iter().cloned().partition(|v| env_only.contains(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_verdicts_come_before_the_tables_measured_ones_after() {
        let opts = RunTextOptions {
            mock: true,
            answer: "answer:\n".into(),
            rounds: 5,
            case_secs: 0.4,
            pattern: "sequential",
            size_bytes: 8192,
            histogram: false,
        };
        let disk = probe::Device {
            name: "sda".into(),
            kind: crate::observe::probe::DeviceKind::Disk,
            rotational: Some(true),
            write_cache: Some("write back".into()),
            fua: Some(true),
            ..probe::Device::default()
        };
        let env = probe::Environment {
            dir: "/data".into(),
            fs_type: "ext4".into(),
            fs_magic: 0xEF53,
            mount_options: vec!["rw".into(), "nobarrier".into()],
            devices: vec![disk],
            ..probe::Environment::default()
        };
        let result = CaseResult {
            section: crate::core::suite::Section::OneWrite,
            method: crate::core::method::SyncMethod::Fdatasync,
            label: "fdatasync".into(),
            durable: true,
            supported: true,
            write_size_bytes: 8192,
            writes_per_commit: 1,
            file_state: crate::core::suite::FileState::Overwrite,
            ops: 5000,
            ops_per_s: 5000.0,
            ..CaseResult::default()
        };
        let results = vec![result];
        let verdicts = probe::verdicts(&env, &results);
        let text = run(&opts, &env, &verdicts, &results);
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("no {needle:?} in\n{text}"));
        // nobarrier follows from the mount options alone; the flush rate needs the measurement.
        assert!(at("answer:") < at("/data"), "{text}");
        assert!(at("/data") < at("[flushes_disabled]"), "{text}");
        assert!(at("[flushes_disabled]") < at("1 cases in 5 rounds"), "{text}");
        assert!(at("1 cases in 5 rounds") < at("(a) "), "{text}");
        assert!(at("(a) ") < at("verdicts from the measurements:"), "{text}");
        assert!(at("verdicts from the measurements:") < at("[implausible_flush_rate]"), "{text}");
        assert_eq!(text.matches("[flushes_disabled]").count(), 1, "{text}");
        assert_eq!(text.matches("[implausible_flush_rate]").count(), 1, "{text}");
        // Nothing at all to report is said once, before the tables.
        let quiet = probe::Environment { mount_options: vec!["rw".into()], devices: vec![], ..env.clone() };
        let quiet_disk = probe::Device { rotational: Some(false), ..probe::Device::default() };
        let quiet = probe::Environment { devices: vec![quiet_disk], ..quiet };
        let none = run(&opts, &quiet, &probe::verdicts(&quiet, &results), &results);
        assert!(none.find("verdicts: nothing to report").unwrap() < none.find("(a) ").unwrap(), "{none}");
        assert!(!none.contains("verdicts from the measurements"), "{none}");
    }
}
