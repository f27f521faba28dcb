//! syncbench as a library: the measurement core, the environment probe, the advice rules and the exporters.
//! The binary in `main.rs` only parses arguments and dispatches to `cmd`.

/// An insta golden under a fixed file name (`snapshots/{name}.snap` beside the calling file), so that
/// moving a module to another folder does not rename its goldens.
#[cfg(test)]
macro_rules! assert_golden {
    ($name:expr, $value:expr) => {
        insta::with_settings!({ prepend_module_to_snapshot => false }, { insta::assert_snapshot!($name, $value) })
    };
}

pub mod advise;
#[cfg(target_os = "linux")]
pub mod background;
pub mod blockdev;
pub mod cleanup;
pub mod cli;
pub mod cmd;
pub mod commit;
pub mod compare;
pub mod crashtest;
pub mod disturbance;
pub mod exit;
pub mod export;
pub mod fsync_errors;
pub mod hash;
pub mod lab;
pub mod method;
pub mod named;
pub mod output;
pub mod pages;
pub mod partial;
pub mod powercut;
pub mod probe;
pub mod report;
pub mod rounds;
pub mod runner;
pub mod schema;
pub mod size;
pub mod stats;
pub mod suite;
pub mod summary;
pub mod table;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod trace;
pub mod verdict;
pub mod workdir;
