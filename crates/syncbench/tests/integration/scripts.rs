//! scripts/test.sh: cargo test's output passes through unchanged, one total line follows, and cargo test's
//! exit code is the script's. Run against a stand-in `cargo` (first on PATH) in a copy of the script's
//! directory layout, with a no-op install-test-deps.sh, so the test neither installs packages nor recurses.

use std::path::Path;
use std::process::Command;

/// Run a copy of scripts/test.sh whose `cargo` prints `stdout` and `stderr` and exits with `code`.
fn run_with_fake_cargo(stdout: &str, stderr: &str, code: i32) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let scripts = tmp.path().join("scripts");
    std::fs::create_dir(&scripts).unwrap();
    std::fs::copy(root.join("scripts/test.sh"), scripts.join("test.sh")).unwrap();
    std::fs::write(scripts.join("install-test-deps.sh"), "exit 0\n").unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let (out_file, err_file) = (tmp.path().join("out.txt"), tmp.path().join("err.txt"));
    std::fs::write(&out_file, stdout).unwrap();
    std::fs::write(&err_file, stderr).unwrap();
    let fake = format!("#!/bin/sh\ncat '{}'\ncat '{}' >&2\nexit {code}\n", out_file.display(), err_file.display());
    std::fs::write(bin.join("cargo"), fake).unwrap();
    Command::new("chmod").arg("+x").arg(bin.join("cargo")).status().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    Command::new("bash").arg(scripts.join("test.sh")).env("PATH", path).output().unwrap()
}

const PASSING: &str = "\
running 3 tests
test a ... ok
test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

running 2 tests
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 5 filtered out; finished in 0.20s
";

#[test]
fn test_sh_totals_the_results_after_cargo_tests_own_output() {
    let out = run_with_fake_cargo(PASSING, "   Compiling syncbench\n", 0);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout.starts_with(PASSING), "cargo test's output comes through unchanged:\n{stdout}");
    let last = stdout.lines().last().unwrap();
    assert!(
        last.starts_with("scripts/test.sh: 5 passed, 0 failed, 1 ignored in 2 test binaries;")
            && last.ends_with("cargo test exit 0"),
        "{last}"
    );
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "   Compiling syncbench\n", "stderr untouched");
}

#[test]
fn test_sh_keeps_cargo_tests_exit_code_and_counts_failures() {
    let failing = format!(
        "{PASSING}\nrunning 4 tests\ntest b ... FAILED\ntest result: FAILED. 2 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s\n"
    );
    let out = run_with_fake_cargo(&failing, "error: test failed\n", 101);
    assert_eq!(out.status.code(), Some(101), "cargo test's exit code");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = stdout.lines().last().unwrap();
    assert!(last.starts_with("scripts/test.sh: 7 passed, 2 failed, 1 ignored in 3 test binaries;"), "{last}");
    assert!(last.contains("cargo test exit 101"), "{last}");
    // A build error: no result lines at all, and the total says why.
    let out = run_with_fake_cargo("", "error[E0308]: mismatched types\n", 101);
    assert_eq!(out.status.code(), Some(101));
    let last = String::from_utf8(out.stdout).unwrap().lines().last().unwrap().to_string();
    assert!(
        last.starts_with("scripts/test.sh: 0 passed, 0 failed") && last.contains("failed before reporting"),
        "{last}"
    );
}
