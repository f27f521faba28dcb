//! Flag validation of `syncbench run`.

use super::*;
use crate::core::method::SyncMethod;
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
    let none_left = Args { sections: vec![Section::SizeSweep], methods: vec![SyncMethod::Write], ..a() };
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

/// `run`'s flags as clap parses them.
#[derive(Debug, clap::Parser)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn parse(flags: &[&str]) -> Result<Args, String> {
    use clap::Parser;
    Cli::try_parse_from(std::iter::once("run").chain(flags.iter().copied())).map(|c| c.args).map_err(|e| e.to_string())
}

#[test]
fn methods_and_sections_are_listed_names_or_letters() {
    let a = parse(&["--methods", "fsync,open_datasync+direct", "--sections", "a,size_sweep,g"]).unwrap();
    assert_eq!(a.methods, [SyncMethod::Fsync, SyncMethod::OpenDatasyncDirect]);
    assert_eq!(a.sections, [Section::ALL[0], Section::SizeSweep, Section::ALL[6]]);
    let m = parse(&["--methods", "fsync,fsnyc"]).unwrap_err();
    assert!(m.contains("'fsnyc'") && m.contains("open_datasync+direct"), "{m}");
    assert!(parse(&["--sections", "a,z"]).unwrap_err().contains("'z'"));
    assert!(parse(&["--sections", ""]).unwrap_err().contains("--sections"));
}
