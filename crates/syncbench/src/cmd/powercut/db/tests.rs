//! `powercut db` and `powercut run` flags.

use super::*;
use crate::proof::powercut::db::aim::AimAt;

#[derive(Debug, clap::Parser)]
struct DbCli {
    #[command(flatten)]
    args: DbArgs,
}

#[derive(Debug, clap::Parser)]
struct RunCli {
    #[command(flatten)]
    args: RunArgs,
}

fn db_args(flags: &[&str]) -> Result<DbArgs, String> {
    use clap::Parser;
    let argv = ["db", "--db", "postgres", "--profile", "nvme-consumer"].into_iter().chain(flags.iter().copied());
    DbCli::try_parse_from(argv).map(|c| c.args).map_err(|e| e.to_string())
}

#[test]
fn untorn_and_aim_parse_as_the_lab_takes_them_and_default_to_neither() {
    let a = db_args(&["--untorn", "16KiB", "--aim", "data-writes"]).unwrap();
    assert_eq!((a.untorn_bytes, a.aim), (Some(16384), Some(AimAt::DataWrites)));
    let a = db_args(&[]).unwrap();
    assert_eq!((a.untorn_bytes, a.aim), (None, None));
    assert!(db_args(&["--untorn", "3KiB"]).unwrap_err().contains("power of two from 512B to 1MiB"));
    assert!(db_args(&["--aim", "wal"]).unwrap_err().contains("data-writes"));
}

#[test]
fn powercut_run_aims_at_its_page_which_defaults_to_4_kib() {
    use clap::Parser;
    let parse = |flags: &[&str]| {
        let argv =
            ["run", "--profile", "hdd-7200", "--load", "x", "--verify", "y"].into_iter().chain(flags.iter().copied());
        RunCli::try_parse_from(argv).map(|c| c.args).map_err(|e| e.to_string())
    };
    let a = parse(&["--aim", "data-writes", "--untorn", "4KiB"]).unwrap();
    assert_eq!((a.aim, a.page, a.untorn_bytes), (Some(AimAt::DataWrites), 4096, Some(4096)));
    assert_eq!(parse(&["--page", "16KiB"]).unwrap().page, 16384);
    assert!(parse(&["--page", "5000"]).unwrap_err().contains("--page must be a power of two"));
}
