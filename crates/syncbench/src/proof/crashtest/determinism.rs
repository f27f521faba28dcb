//! A seed replays exactly: the same series run three times gives the same summary (every counter, the
//! failure and its reproducer point) in every mode and profile, and a planted bug that only concurrent
//! clients can see fails at the same point, the same operation and with the same message every time its
//! reproducer is run.

use super::pages::PagesScenario;
use super::wal::WalScenario;
use super::{ExploreOptions, Failure, Scenario, Summary, explore_all};
use syncbench_engine::pages::{DwDesign, FaultSwitches as PageFaults, Mode};
use syncbench_engine::wal::FaultSwitches as LogFaults;
use syncbench_simfs::Profile;

/// The summary as JSON without its wall-clock fields (the only ones a seed does not fix), and the failure.
fn replayable(summary: &Summary, failure: &Option<Failure>) -> String {
    let mut json = serde_json::to_value(summary).expect("a summary serialises");
    let fields = json.as_object_mut().expect("an object");
    assert!(fields.remove("duration_s").is_some() && fields.remove("cycles_per_min").is_some());
    format!("{json}\n{failure:?}")
}

/// The three runs go side by side, their committers pausing at random moments (`Jitter`): the OS
/// interleaves each run's threads differently, and a schedule left to the OS shows as a difference.
fn three_runs<S: Scenario>(scenario: &S, opts: &ExploreOptions) -> [String; 3] {
    std::thread::scope(|s| {
        let runs: [_; 3] = std::array::from_fn(|_| {
            s.spawn(|| {
                super::clients::jitter_schedules_on_this_thread();
                let (summary, failure) = explore_all(scenario, opts, |_| {});
                replayable(&summary, &failure)
            })
        });
        runs.map(|r| r.join().expect("a run completes"))
    })
}

fn assert_replays<S: Scenario>(name: &str, scenario: &S, opts: &ExploreOptions) {
    let [a, b, c] = three_runs(scenario, opts);
    assert_eq!(a, b, "{name}: runs 1 and 2 of seed {} differ", opts.seed);
    assert_eq!(a, c, "{name}: runs 1 and 3 of seed {} differ", opts.seed);
}

const POINTS: u64 = 24;

#[test]
fn the_log_replays_its_seed_under_both_profiles_with_and_without_fsync_errors() {
    let wal = WalScenario::new(LogFaults::default());
    for profile in [Profile::Strict, Profile::Ext4] {
        for fsync_errors in [false, true] {
            let opts = ExploreOptions { fsync_errors, ..ExploreOptions::new(7, POINTS, profile) };
            assert_replays(&format!("wal {profile:?} fsync_errors={fsync_errors}"), &wal, &opts);
        }
    }
}

#[test]
fn every_page_mode_replays_its_seed_under_both_profiles() {
    let designs = [(Mode::Fpw, DwDesign::V2012), (Mode::Dw, DwDesign::V2012), (Mode::Dw, DwDesign::Pipelined)];
    let others = [(Mode::Atomic, DwDesign::V2012), (Mode::None, DwDesign::V2012)];
    for (mode, design) in designs.into_iter().chain(others) {
        let scenario = PagesScenario::new(mode, 200, PageFaults::default()).with_dw_design(design);
        for profile in [Profile::Strict, Profile::Ext4] {
            let opts = ExploreOptions { accounts_per_branch: 200, ..ExploreOptions::new(7, POINTS, profile) };
            assert_replays(&format!("{mode:?} {design:?} {profile:?}"), &scenario, &opts);
        }
    }
}

/// An acknowledgement a step too early is visible only to a commit that overlaps a flush, i.e. only in
/// some interleavings of the clients: found once, its reproducer must fail the same way 10 times of 10,
/// with the committers pausing at random moments.
#[test]
fn a_bug_only_an_interleaving_shows_reproduces_from_its_point_ten_times_of_ten() {
    let wal = WalScenario::new(LogFaults { ack_when_written: true, ..LogFaults::default() });
    let series = ExploreOptions::new(3, 200, Profile::Strict);
    let (_, found) = explore_all(&wal, &series, |_| {});
    let found = found.expect("the planted bug is caught");
    assert!(found.crash_op > 0 && found.message.contains("missing"), "{found:?}");
    super::clients::jitter_schedules_on_this_thread();
    for run in 0..10 {
        let replay = ExploreOptions { only_point: Some(found.point), ..series };
        let (_, again) = explore_all(&wal, &replay, |_| {});
        assert_eq!(again.as_ref(), Some(&found), "replay {run} of point {}", found.point);
    }
}
