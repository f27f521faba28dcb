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
pub mod cli;
pub mod cmd;
pub mod core;
#[cfg(test)]
mod layers;
pub mod measure;
pub mod observe;
pub mod present;
pub mod proof;
