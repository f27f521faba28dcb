use super::*;

/// Every .rs file under src/, as (path relative to src/, text).
fn source_files() -> Vec<(String, String)> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&src).unwrap().display().to_string();
                files.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

fn fixture(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
}

#[test]
fn dependencies_point_down_and_never_cycle() {
    let findings = check(&source_files());
    assert!(
        findings.problems.is_empty(),
        "the layer rule of ARCHITECTURE.md is broken:\n{}",
        findings.problems.join("\n")
    );
    let path: Vec<String> = findings.longest_path.iter().map(name).collect();
    println!("longest dependency path from cmd/ to core/ ({} steps): {}", path.len() - 1, path.join(" -> "));
    assert!(path.len() >= 3, "cmd reaches core through at least one layer: {path:?}");
}

#[test]
fn an_upward_use_is_reported_with_its_file_and_line() {
    let files = fixture(&[
        ("core/schema.rs", "//! Result types.\n\nuse crate::observe::probe::Environment;\n"),
        ("observe/probe/mod.rs", "pub struct Environment;\n"),
    ]);
    let problems = check(&files).problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("core/schema.rs:3: core::schema uses observe::probe"), "{problems:?}");
}

#[test]
fn grouped_inline_and_climbing_super_paths_are_all_seen() {
    let files = fixture(&[
        ("core/stats.rs", "use crate::{core::units, present::{table::render, summary}};\n"),
        ("core/export/json.rs", "fn f() { let _ = super::super::super::proof::lab::x(); }\n"),
        ("core/method.rs", "fn g() -> crate::measure::runner::Target { todo!() }\n"),
        ("core/verdict.rs", "// crate::cmd::run in a comment\nconst S: &str = \"crate::cmd::run\";\n"),
    ]);
    let problems = check(&files).problems;
    let named: Vec<&str> = problems.iter().map(|p| p.split(" — ").next().unwrap()).collect();
    assert_eq!(
        named,
        [
            "core/stats.rs:1: core::stats uses present::table",
            "core/stats.rs:1: core::stats uses present::summary",
            "core/export/json.rs:1: core::export uses proof::lab",
            "core/method.rs:1: core::method uses measure::runner",
        ],
    );
}

#[test]
fn super_inside_an_inline_test_module_stays_in_its_module() {
    let files = fixture(&[(
        "observe/probe/rules.rs",
        "fn a() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    fn b() { super::super::EmulatedDisk; }\n}\n",
    )]);
    assert!(check(&files).problems.is_empty());
}

#[test]
fn a_cycle_between_modules_of_one_layer_is_reported_with_its_path() {
    let files = fixture(&[
        ("observe/probe/rules.rs", "use crate::observe::blockdev::verdicts;\n"),
        ("observe/blockdev/account.rs", "\n\nuse crate::observe::disturbance::Monitor;\n"),
        ("observe/disturbance.rs", "use crate::observe::probe::Environment;\n"),
    ]);
    let problems = check(&files).problems;
    assert_eq!(
        problems,
        ["import cycle: observe::blockdev -> observe::disturbance (observe/blockdev/account.rs:3), \
          observe::disturbance -> observe::probe (observe/disturbance.rs:1), \
          observe::probe -> observe::blockdev (observe/probe/rules.rs:1)"]
    );
}

#[test]
fn a_file_named_by_a_path_attribute_is_the_module_that_declares_it() {
    let files = fixture(&[
        ("advise/rocksdb.rs", "#[cfg(test)]\n#[path = \"tests_rocksdb.rs\"]\nmod tests;\n"),
        ("advise/tests_rocksdb.rs", "use super::super::facts::Facts;\nuse super::super::super::present::table;\n"),
    ]);
    let problems = check(&files).problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("advise/tests_rocksdb.rs:2: advise uses present::table"), "{problems:?}");
}

#[test]
fn a_file_outside_every_layer_is_reported() {
    let problems = check(&fixture(&[("stray.rs", "")])).problems;
    assert_eq!(problems.len(), 1);
    assert!(problems[0].starts_with("stray.rs: not in a layer"), "{problems:?}");
}

#[test]
fn the_longest_path_runs_from_cmd_to_core() {
    let files = fixture(&[
        ("cmd/run.rs", "use crate::present::summary::x;\nuse crate::core::exit::y;\n"),
        ("present/summary.rs", "use crate::measure::runner::x;\n"),
        ("measure/runner.rs", "use crate::core::schema::x;\n"),
    ]);
    let findings = check(&files);
    let path: Vec<String> = findings.longest_path.iter().map(name).collect();
    assert_eq!(path, ["cmd::run", "present::summary", "measure::runner", "core::schema"]);
}

#[test]
fn files_of_one_module_that_use_each_other_are_a_cycle_but_a_use_of_a_parent_is_not() {
    let files = fixture(&[
        ("observe/probe/mod.rs", "pub mod rules;\npub mod device_rules;\nuse rules::all;\n"),
        ("observe/probe/rules.rs", "use super::Environment;\nfn f() { crate::observe::probe::device_rules::all(); }\n"),
        ("observe/probe/device_rules.rs", "\nuse super::rules::spins;\n"),
        ("observe/trace/attach.rs", "use super::inkernel::InKernel;\n"),
        ("observe/trace/inkernel.rs", "use crate::observe::trace::{attach::TIMED, Follow};\n"),
    ]);
    let problems = check(&files).problems;
    assert_eq!(
        problems,
        [
            "import cycle: observe::probe::device_rules -> observe::probe::rules (observe/probe/device_rules.rs:2), \
             observe::probe::rules -> observe::probe::device_rules (observe/probe/rules.rs:2)",
            "import cycle: observe::trace::attach -> observe::trace::inkernel (observe/trace/attach.rs:1), \
             observe::trace::inkernel -> observe::trace::attach (observe/trace/inkernel.rs:1)",
        ]
    );
}
