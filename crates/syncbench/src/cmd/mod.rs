//! One module per subcommand: its flags (`Args`), validation, and `main`.

pub mod advise;
pub mod commit;
pub mod compare;
pub mod crashtest;
pub mod fsync_errors;
pub mod pages;
pub mod probe;
pub mod report;
pub mod run;
pub mod trace;
