//! The integration tests, one binary. Tests that need root, a kernel feature or a Debian package call
//! [`skip`] when it is missing; CI sets `SYNCBENCH_REQUIRE_ALL_TESTS=1` (see .ci/run) so that a missing
//! prerequisite fails the test instead of letting it pass without having run.

mod advise;
mod attached_loops;
mod commit;
mod crashtest;
mod devacct;
mod fixtures_v1;
mod fsync_errors;
mod interrupt;
mod lab;
mod leftovers;
mod one_voice;
mod pages;
mod powercut;
mod powercut_db;
mod powercut_db_etcd;
mod powercut_db_mariadb;
mod powercut_db_postgres;
mod powercut_db_torn;
mod probe;
mod report;
mod run;
mod scripts;
mod trace;
mod trace_disks;
mod watch;

/// The variable that turns every [`skip`] into a failure.
pub const REQUIRE_ALL_TESTS: &str = "SYNCBENCH_REQUIRE_ALL_TESTS";

/// Whether `SYNCBENCH_REQUIRE_ALL_TESTS` asks for every test to run (set, and not empty or `0`).
pub fn all_tests_required() -> bool {
    std::env::var_os(REQUIRE_ALL_TESTS).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Why a test of the FUSE + loop device stack cannot run here, if it cannot: not root, no /dev/fuse, or
/// one of `programs` not installed.
pub fn missing_stack_prerequisite(programs: &[&str]) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|l| l.split_whitespace().nth(1));
    if euid != Some("0") {
        return Some("not root".into());
    }
    if !std::path::Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse".into());
    }
    programs
        .iter()
        .find(|p| syncbench::proof::lab::prereq::find_program(p).is_none())
        .map(|p| format!("{p} not installed"))
}

/// Skip the calling test because `missing` (what it needs and lacks, e.g. "chromium is not installed")
/// — or fail it when `SYNCBENCH_REQUIRE_ALL_TESTS` is set. Use as `return skip(...)`.
#[track_caller]
pub fn skip(missing: impl std::fmt::Display) {
    if all_tests_required() {
        panic!("{REQUIRE_ALL_TESTS} is set but this test cannot run: {missing}");
    }
    eprintln!("skipping: {missing}");
}
