//! What stands between a write and stable storage: environment readers and the verdict rules.
//!
//! (Skeleton: the probe issue fills this in. `Environment` is part of the JSON envelope.)

use serde::{Deserialize, Serialize};

/// What the target directory sits on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `uname -r`.
    pub kernel: String,
    /// File system type of the target directory (`ext4`, `xfs`, `tmpfs`, …, or `unknown`).
    pub fs_type: String,
    /// Mount options of the target's mount (from /proc/self/mountinfo), empty when unknown.
    pub mount_options: Vec<String>,
}
