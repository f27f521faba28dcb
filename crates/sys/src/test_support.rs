//! For the root-only tests of this crate and of syncbench (not part of the API): CI sets
//! `SYNCBENCH_REQUIRE_ALL_TESTS`, and there a test that cannot run fails instead of skipping, as the
//! integration tests' `skip` does.

/// Whether CI asked for every test to run (`SYNCBENCH_REQUIRE_ALL_TESTS` set, non-empty, not `0`).
pub fn all_tests_required() -> bool {
    std::env::var_os("SYNCBENCH_REQUIRE_ALL_TESTS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether a root-only test can run: true as root; otherwise it is skipped (false, one line on stderr),
/// or fails when every test is required.
pub fn is_root_or_skip() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(!all_tests_required(), "SYNCBENCH_REQUIRE_ALL_TESTS is set but this test needs root");
    eprintln!("skipped: needs root");
    false
}
