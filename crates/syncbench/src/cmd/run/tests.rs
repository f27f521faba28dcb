//! Flag validation of `syncbench run`.

use super::*;
use std::path::Path;

fn args(dir: &Path) -> Args {
    Args { dir: dir.to_path_buf(), ..Args::default() }
}

fn message(result: anyhow::Result<Options>) -> String {
    let err = result.unwrap_err();
    assert!(err.downcast_ref::<crate::core::exit::UsageError>().is_some(), "{err}");
    let text = err.to_string();
    assert!(!text.contains('\n'), "{text}");
    text
}

#[test]
fn defaults() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = Options::from_args(&args(tmp.path())).unwrap();
    assert_eq!(opts.budget.case_secs, RunBudget::DEFAULT_CASE_SECS);
    assert_eq!(opts.plan, PlanOptions::default());
    let quick = Options::from_args(&Args { quick: true, ..args(tmp.path()) }).unwrap();
    assert_eq!(quick.budget.case_secs, RunBudget::QUICK_CASE_SECS);
}

#[test]
fn bad_values_are_one_line_each() {
    let tmp = tempfile::tempdir().unwrap();
    let a = || args(tmp.path());
    for secs in ["0", "-1", "abc", "NaN", "inf", "3601"] {
        assert!(message(Options::from_args(&Args { secs: Some(secs.into()), ..a() })).contains("--secs"));
    }
    for size in ["0", "511", "2M", "8q", ""] {
        assert!(message(Options::from_args(&Args { size: Some(size.into()), ..a() })).contains("--size"));
    }
    let m = message(Options::from_args(&Args { methods: Some("fsync,fsnyc".into()), ..a() }));
    assert!(m.contains("\"fsnyc\"") && m.contains("open_datasync+direct"), "{m}");
    assert!(message(Options::from_args(&Args { sections: Some("a,z".into()), ..a() })).contains("\"z\""));
    assert!(message(Options::from_args(&Args { sections: Some("".into()), ..a() })).contains("--sections"));
    let none_left = Args { sections: Some("d".into()), methods: Some("write".into()), ..a() };
    assert!(message(Options::from_args(&none_left)).contains("no case left"));
    let exports = ExportArgs { json: Some(tmp.path().join("missing/out.json")), ..ExportArgs::default() };
    let bad_json = Args { exports, ..a() };
    assert!(message(Options::from_args(&bad_json)).contains("--json"));
    let both = ExportArgs { json: Some("-".into()), csv: Some("-".into()), ..ExportArgs::default() };
    assert!(message(Options::from_args(&Args { exports: both, ..a() })).contains("stdout"));
}

#[test]
fn bad_directories_are_one_line_each() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    assert!(message(Options::from_args(&args(&missing))).contains("existing directory"));
    let file = tmp.path().join("file");
    std::fs::write(&file, b"").unwrap();
    assert!(message(Options::from_args(&args(&file))).contains("not a directory"));
}
