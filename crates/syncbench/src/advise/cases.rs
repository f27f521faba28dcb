//! The cases `advise` measures (run's vocabulary): what each database's rules read.

use crate::core::method::SyncMethod;
use crate::core::suite::{Case, FileState, KIB, Section};

/// Under background writes, PostgreSQL's rule compares the chosen wal_sync_method's one 8 KiB write per
/// commit with its idle measurement: the four methods it may choose, in run's one-write cases.
pub fn postgres_under_writes() -> Vec<Case> {
    use SyncMethod::*;
    [Fdatasync, Fsync, OpenDatasync, OpenSync].map(|m| Case::one_write(m, 8 * KIB)).to_vec()
}

/// Every case advise measures for its rules, in the order they run: one and two 8 KiB writes per commit for
/// every method a database can be configured to use, one 16 KiB write for PostgreSQL's methods, a 4 KiB
/// fdatasync (SQLite's WAL frame), overwrite vs append (RocksDB's recycling, PostgreSQL's zero-filled
/// segments), and the baseline without a sync.
pub fn all() -> Vec<Case> {
    use SyncMethod::*;
    let mut cases = Vec::new();
    for method in [Fdatasync, Fsync, OpenDatasync, OpenSync, FdatasyncDirect, OpenDatasyncDirect] {
        cases.push(Case::one_write(method, 8 * KIB));
        let two = Case::one_write(method, 8 * KIB);
        cases.push(Case { section: Section::TwoWrites, writes_per_commit: 2, ..two });
    }
    // PostgreSQL's commit spanning two WAL blocks: one 16 KiB write.
    cases.extend([Fdatasync, Fsync, OpenDatasync, OpenSync].map(|m| Case::split_16k(m, 1)));
    cases.push(Case { section: Section::NoSync, ..Case::one_write(Write, 8 * KIB) });
    let sweep = Case::one_write(Fdatasync, 4 * KIB);
    cases.push(Case { section: Section::SizeSweep, label: "4 KiB fdatasync".into(), ..sweep });
    for state in [FileState::Overwrite, FileState::Append] {
        let c = Case::one_write(Fdatasync, 8 * KIB);
        cases.push(Case {
            section: Section::FileState,
            label: format!("{} fdatasync", state.name()),
            file_state: state,
            ..c
        });
    }
    cases
}

/// etcd's storage check: 2300-byte writes, each followed by fdatasync, into a preallocated segment.
pub fn etcd() -> Case {
    Case::etcd_wal()
}
