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
    env: &crate::core::environment::Environment,
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
        crate::core::units::format_secs(opts.case_secs),
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
    env: &crate::core::environment::Environment,
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
        let disk = crate::core::environment::Device {
            name: "sda".into(),
            kind: crate::core::environment::DeviceKind::Disk,
            rotational: Some(true),
            write_cache: Some("write back".into()),
            fua: Some(true),
            ..crate::core::environment::Device::default()
        };
        let env = crate::core::environment::Environment {
            dir: "/data".into(),
            fs_type: "ext4".into(),
            fs_magic: 0xEF53,
            mount_options: vec!["rw".into(), "nobarrier".into()],
            devices: vec![disk],
            ..crate::core::environment::Environment::default()
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
        let quiet =
            crate::core::environment::Environment { mount_options: vec!["rw".into()], devices: vec![], ..env.clone() };
        let quiet_disk =
            crate::core::environment::Device { rotational: Some(false), ..crate::core::environment::Device::default() };
        let quiet = crate::core::environment::Environment { devices: vec![quiet_disk], ..quiet };
        let none = run(&opts, &quiet, &probe::verdicts(&quiet, &results), &results);
        assert!(none.find("verdicts: nothing to report").unwrap() < none.find("(a) ").unwrap(), "{none}");
        assert!(!none.contains("verdicts from the measurements"), "{none}");
    }

    /// The answer of a mock run (the real timing loop on the deterministic model, in rounds) through `run`'s
    /// text: golden, first after the title, and everything before the first table fits a terminal.
    #[test]
    fn the_answer_of_a_mock_run_comes_first_golden() {
        use crate::measure::runner::{MockTiming, RunBudget, Target, run_plan};
        let opts = crate::core::suite::PlanOptions {
            sections: vec![crate::core::suite::Section::OneWrite, crate::core::suite::Section::TwoWrites],
            ..Default::default()
        };
        let cases = crate::core::suite::plan(&opts);
        let budget = RunBudget::per_case(RunBudget::DEFAULT_CASE_SECS);
        let mock = Target::Mock(MockTiming { seed: 1 });
        let results =
            run_plan(&cases, crate::measure::rounds::Schedule::default_for(false), &budget, &mock, None, &mut |_| {});
        let disk =
            crate::core::environment::Device { name: "vda".into(), rotational: Some(false), ..Default::default() };
        let env = crate::core::environment::Environment {
            dir: "/data".into(),
            fs_type: "ext4".into(),
            devices: vec![disk],
            ..Default::default()
        };
        let verdicts = crate::observe::probe::verdicts(&env, &results);
        let next = crate::present::summary::next_command(
            Some(std::path::Path::new("run.json")),
            std::path::Path::new("/data"),
        );
        let ctx = crate::present::summary::RunContext { verdicts: &verdicts, next, partial: false, leftover: None };
        let text_opts = RunTextOptions {
            mock: true,
            answer: crate::present::summary::run_summary(&results, &ctx),
            rounds: crate::measure::rounds::DEFAULT_ROUNDS,
            case_secs: budget.case_secs,
            pattern: "sequential",
            size_bytes: 8192,
            histogram: false,
        };
        let text = run(&text_opts, &env, &verdicts, &results);
        let answer: String = text.lines().take_while(|l| !l.is_empty()).map(|l| format!("{l}\n")).collect();
        assert_golden!("syncbench__summary__tests__run_answer_mock_seed_1", answer);
        let before_table = text.lines().take_while(|l| !l.starts_with("(a) ")).count();
        assert!(before_table <= 40, "{before_table} lines before the first table:\n{text}");
    }

    /// The mock run as a noisy VM measures it (regimes switching between rounds): every interval a range or
    /// a factor, never a ± above 100%, and where the intervals overlap, "undecided" and no winner — in the
    /// answer and in the tables.
    #[test]
    fn a_noisy_mock_run_names_no_winner_golden() {
        use crate::measure::runner::{MockTiming, RunBudget, Target, run_plan};
        let opts = crate::core::suite::PlanOptions {
            sections: vec![crate::core::suite::Section::OneWrite, crate::core::suite::Section::TwoWrites],
            ..Default::default()
        };
        let budget = RunBudget::per_case(RunBudget::DEFAULT_CASE_SECS);
        let mock = Target::Mock(MockTiming { seed: 1 });
        let schedule = crate::measure::rounds::Schedule::default_for(false);
        let mut results = run_plan(&crate::core::suite::plan(&opts), schedule, &budget, &mock, None, &mut |_| {});
        crate::measure::rounds::as_on_a_noisy_vm(&mut results);
        let ctx = crate::present::summary::RunContext {
            verdicts: &[],
            next: "syncbench advise --from run.json".into(),
            partial: false,
            leftover: None,
        };
        let text = format!(
            "{}{}",
            crate::present::summary::run_summary(&results, &ctx),
            crate::present::table::render(&results, 8192, false)
        );
        assert_golden!("syncbench__summary__tests__run_noisy_mock_seed_1", text);
        assert!(crate::core::stats::printed_plus_minus(&text).iter().all(|pct| *pct <= 100.0), "{text}");
        assert!(text.contains("one 8 KiB write per commit: undecided, the 95% intervals overlap"), "{text}");
        assert!(text.contains("re-run ") && text.contains("×/÷ "), "{text}");
        assert!(!text.contains(crate::present::table::FASTEST_MARK), "a winner named from noise: {text}");
        assert_eq!(text.matches(crate::present::table::TIE_MARK).count(), 2, "{text}");
    }
}
