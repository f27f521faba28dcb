//! `pages`'s flags as clap parses them: listed modes and designs.

use super::*;

/// `pages`'s flags as clap parses them.
#[derive(Debug, clap::Parser)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn parse(flags: &[&str]) -> Result<Args, String> {
    use clap::Parser;
    let argv = std::iter::once("pages").chain(flags.iter().copied());
    Cli::try_parse_from(argv).map(|c| c.args).map_err(|e| e.to_string())
}

#[test]
fn modes_and_designs_are_listed_names_each_once() {
    let a = parse(&["--mode", "none,fpw,dw,fpw", "--dw-design", "pipelined,2012,pipelined"]).unwrap();
    assert_eq!(crate::cmd::first_of_each(&a.mode), vec![Mode::None, Mode::Fpw, Mode::Dw]);
    assert_eq!(crate::cmd::first_of_each(&a.dw_design), vec![DwDesign::Pipelined, DwDesign::V2012]);
    assert_eq!(parse(&[]).unwrap().mode, vec![Mode::None, Mode::Fpw, Mode::Dw]);
    assert!(parse(&["--mode", "none,raid"]).unwrap_err().contains("'raid'"));
    assert!(parse(&["--dw-design", "2013"]).unwrap_err().contains("'2013'"));
}
