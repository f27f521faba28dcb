//! `commit`'s flags into plans: defaults, multiplied points, and bad flags as usage errors.

use super::*;
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn parse(line: &[&str]) -> Args {
    Cli::try_parse_from(std::iter::once("commit").chain(line.iter().copied())).unwrap().args
}

#[test]
fn default_plan_is_group_commit_over_seven_client_counts() {
    let p = plan(&parse(&[])).unwrap();
    assert_eq!(p.method, SyncMethod::Fdatasync);
    assert_eq!(p.points.iter().map(|s| s.clients).collect::<Vec<_>>(), vec![1, 2, 4, 8, 16, 32, 64]);
    assert!(p.points.iter().all(|s| s.group_commit && s.commit_delay_us == 0));
    assert_eq!(p.secs, 3.0);
}

#[test]
fn baseline_and_delays_multiply_the_points() {
    let p = plan(&parse(&["--clients", "1,8", "--commit-delay-us", "0,100", "--with-baseline"])).unwrap();
    assert_eq!(p.points.len(), 8);
    let spec = |clients, commit_delay_us, group_commit| PointSpec {
        clients,
        commit_delay_us,
        group_commit,
        commit_delay_count: 0,
    };
    assert_eq!(p.points[0], spec(1, 0, false));
    assert_eq!(p.points[7], spec(8, 100, true));
    let naive = plan(&parse(&["--no-group-commit", "--quick"])).unwrap();
    assert!(naive.points.iter().all(|s| !s.group_commit));
    assert_eq!(naive.points.len(), 3);
    assert_eq!(naive.secs, 1.0);
    let explicit = plan(&parse(&["--quick", "--clients", "1,2,4,8,16,32,64"])).unwrap();
    assert_eq!(explicit.points.len(), 7, "--clients given explicitly wins over --quick");
}

#[test]
fn delay_count_applies_only_to_delayed_group_commit_points() {
    let line = ["--clients", "1,16", "--commit-delay-us", "0,50", "--with-baseline", "--commit-delay-count", "clients"];
    let counts: Vec<(u32, u64, bool, u32)> = plan(&parse(&line))
        .unwrap()
        .points
        .iter()
        .map(|s| (s.clients, s.commit_delay_us, s.group_commit, s.commit_delay_count))
        .collect();
    assert_eq!(
        counts,
        vec![
            (1, 0, false, 0),
            (1, 0, true, 0),
            (16, 0, false, 0),
            (16, 0, true, 0),
            (1, 50, false, 0),
            (1, 50, true, 1),
            (16, 50, false, 0),
            (16, 50, true, 16)
        ]
    );
    let fixed = plan(&parse(&["--clients", "16", "--commit-delay-us", "50", "--commit-delay-count", "8"])).unwrap();
    assert_eq!(fixed.points[0].commit_delay_count, 8);
    assert!(Cli::try_parse_from(["commit", "--commit-delay-count", "many"]).is_err());
}

#[test]
fn method_takes_the_log_methods_and_none_as_write() {
    assert_eq!(parse(&["--method", "none"]).method, SyncMethod::Write);
    assert_eq!(parse(&["--method", "open_datasync+direct"]).method, SyncMethod::OpenDatasyncDirect);
    let err = Cli::try_parse_from(["commit", "--method", "open_sync"]).err().expect("open_sync is not a log method");
    assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
}

#[test]
fn bad_flags_are_usage_errors_naming_the_flag() {
    for (line, needle) in [
        (vec!["--clients", "0"], "--clients"),
        (vec!["--clients", "5000"], "--clients"),
        (vec!["--record-size", "0"], "--record-size"),
        (vec!["--commit-delay-us", "200000"], "--commit-delay-us"),
        (vec!["--secs", "0"], "--secs"),
        (vec!["--secs", "NaN"], "--secs"),
    ] {
        let err = plan(&parse(&line)).unwrap_err();
        assert!(err.downcast_ref::<crate::core::exit::UsageError>().is_some(), "{line:?}");
        assert!(err.to_string().contains(needle), "{line:?}: {err}");
    }
}
