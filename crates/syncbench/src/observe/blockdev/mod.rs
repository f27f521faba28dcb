//! What the block devices did during a window: reusable by any command that wants to say what its
//! syncs cost at the device.
//!
//! * [`disk`]: which disk(s) a file lives on (`st_dev` → `/sys/dev/block/MAJ:MIN` → whole disk, and the
//!   disks under a device-mapper or md device).
//! * [`stat`]: deltas of `/sys/block/DISK/stat` (requests, bytes, time, and the flush count and time the
//!   kernel has kept since 5.5). No privilege needed, nothing per request.
//! * [`requests`]: every request issued and completed, from the block tracepoints
//!   `block:block_rq_issue`/`block:block_rq_complete` (root): flags (PREFLUSH, FUA, SYNC), bytes and the
//!   device-side latency (issue to completion) of flushes and writes. Read by perf events
//!   (`BlockTrace::start`) or by eBPF programs ([`inkernel`], `BlockTrace::start_bpf`: `trace`'s default,
//!   as perf samples miss completions that interrupt an idle CPU on some machines).
//!
//! Typical use: `let disks = disk::all_disks()` (or `disk::disks_of_path(file)`),
//! `let before = stat::Snapshot::take(&disks)`; optionally `requests::BlockTrace::start()`
//! and `poll()` it now and then; at the end `stat::Snapshot::take(&disks).since(&before)` and
//! `trace.finish()`, then [`DeviceReport::new`] per disk.

pub mod account;
pub mod disk;
pub mod foreign;
pub mod inkernel;
pub mod render;
pub mod requests;
pub mod stat;

pub use disk::Disk;

pub use crate::core::schema::device::DeviceReport;

impl DeviceReport {
    /// Assemble the report of one disk.
    pub fn new(disk: &Disk, stat: stat::StatDelta, requests: Option<requests::RequestReport>) -> DeviceReport {
        DeviceReport {
            disk: disk.name.clone(),
            dev: format!("{}:{}", disk.major, disk.minor),
            write_cache: disk.write_cache(),
            stat,
            requests,
        }
    }
}
