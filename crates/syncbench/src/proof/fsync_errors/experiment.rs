//! The experiment on one mounted file system: overwrite a synced block, make its writeback fail, and
//! record what every later fsync and read reports.

use super::results::{AfterRecovery, BlockRead, CallOutcome, FsResult, Observations, WhileFailing};
use crate::proof::lab::cases::{FsCase, SyncCall, Targeting};
use crate::proof::lab::fault::{SECTOR_BYTES, Target};
use crate::proof::lab::profile;
use crate::proof::lab::stack::{Stack, StackConfig, run_exclusive};
use anyhow::Context;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use syncbench_sys::OpenFlags;

/// File-system block size the experiment overwrites (ext4 is made with `-b 4096`; xfs and btrfs default to it).
pub const BLOCK_BYTES: usize = 4096;
/// Blocks in the test file.
const FILE_BLOCKS: usize = 4;
/// The overwritten block: not the first, so the file's start stays intact and recognisable.
const VICTIM_BLOCK: usize = 1;
/// Starts every sector of the old block.
const OLD_MARKER: &[u8; 32] = b"syncbench-fsync-errors-old-block";
/// Starts every sector of the new block; the image server recognises its writes by it (content targeting).
const NEW_MARKER: &[u8; 32] = b"syncbench-fsync-errors-NEW-block";
/// The test file, inside the throwaway file system.
const FILE_NAME: &str = ".syncbench-fsync-errors-victim";

/// Run the whole experiment for `case`: skip it when its mkfs is missing, record an error when setup fails.
pub fn run_case(case: FsCase, sync: SyncCall) -> FsResult {
    let mut result = FsResult::new(case, sync);
    if let Some(why) = crate::proof::lab::prereq::missing_for_case(case) {
        result.skipped = Some(why);
        return result;
    }
    let config = StackConfig { label: "fsync-errors", ..StackConfig::new(case, profile::pass_through()) };
    match run_exclusive(|| Stack::build(config).and_then(|mut stack| observe(&mut stack, sync))) {
        Some(Ok(observed)) => result.observed = Some(observed),
        Some(Err(e)) => result.error = Some(format!("{e:#}")),
        None => result.error = Some("interrupted".to_string()),
    }
    result
}

/// A block whose every sector starts with `marker` (then a sector number, so no two sectors are equal).
fn block_of(marker: &[u8]) -> Vec<u8> {
    let mut block = vec![b'.'; BLOCK_BYTES];
    for (n, sector) in block.chunks_mut(SECTOR_BYTES).enumerate() {
        sector[..marker.len()].copy_from_slice(marker);
        let number = format!("#{n}");
        sector[marker.len()..marker.len() + number.len()].copy_from_slice(number.as_bytes());
    }
    block
}

fn victim_offset() -> u64 {
    (VICTIM_BLOCK * BLOCK_BYTES) as u64
}

/// The two contents of the overwritten block.
struct Blocks {
    old: Vec<u8>,
    new: Vec<u8>,
}

impl Blocks {
    fn new() -> Blocks {
        Blocks { old: block_of(OLD_MARKER), new: block_of(NEW_MARKER) }
    }

    /// `new`, `old`, `other`, or the errno of the failed read.
    fn read_victim(&self, fd: &OwnedFd) -> BlockRead {
        let mut buf = vec![0u8; BLOCK_BYTES];
        match syncbench_sys::pread_exact(fd, &mut buf, victim_offset()) {
            Ok(()) => BlockRead::classify(&buf, &self.old, &self.new),
            Err(e) => BlockRead::Failed(super::results::errno_text(&e)),
        }
    }

    fn read_victim_fresh(&self, path: &Path) -> anyhow::Result<BlockRead> {
        let fd = syncbench_sys::open_read_only(path).context("reopening the test file")?;
        Ok(self.read_victim(&fd))
    }
}

/// Where the failure is aimed: the block's location on the image, or its contents.
fn target_for(case: FsCase, writer: &OwnedFd) -> anyhow::Result<Target> {
    match case.targeting() {
        Targeting::Content => Ok(Target::Content(NEW_MARKER.to_vec())),
        Targeting::BlockRange => {
            let extents = syncbench_sys::fiemap(writer).context("FIEMAP on the test file")?;
            let start = extents
                .iter()
                .find_map(|e| e.physical_of(victim_offset()))
                .with_context(|| format!("FIEMAP does not map the overwritten block: {extents:?}"))?;
            Ok(Target::Range { start, len: BLOCK_BYTES as u64 })
        }
    }
}

/// One sync call, described. Real code must never retry a failed sync; here the retry is the point.
fn sync_outcome(sync: SyncCall, fd: &OwnedFd) -> CallOutcome {
    CallOutcome::of(&sync.call(fd))
}

/// Whether the file system still takes a new file (an aborted journal refuses it with EROFS).
fn try_new_file(dir: &Path) -> CallOutcome {
    let probe = dir.join(".syncbench-fsync-errors-probe");
    let created = syncbench_sys::create_new(&probe, OpenFlags::BUFFERED);
    if created.is_ok() {
        let _ = std::fs::remove_file(&probe); // inside the throwaway file system; a failure changes nothing
    }
    CallOutcome::of(&created)
}

/// Drop clean page-cache pages system-wide, so the next read comes from the "disk".
fn drop_page_cache() -> anyhow::Result<()> {
    std::fs::write("/proc/sys/vm/drop_caches", b"1").context("writing 1 to /proc/sys/vm/drop_caches")
}

/// The synced test file, with the failure armed for its victim block.
struct Armed {
    path: PathBuf,
    writer: OwnedFd,
    opened_before: OwnedFd,
    target: Target,
}

fn observe(stack: &mut Stack, sync: SyncCall) -> anyhow::Result<Observations> {
    let blocks = Blocks::new();
    let armed = write_sync_and_arm(stack, &blocks)?;
    let target_image_offset_bytes = match armed.target {
        Target::Range { start, .. } => Some(start),
        Target::Content(_) => None,
    };
    syncbench_sys::pwrite_all(&armed.writer, &blocks.new, victim_offset()).context("overwriting the block")?;
    let (failing, new_file_after_error) = while_writes_fail(stack, sync, &armed, &blocks)?;
    let recovered = after_the_device_recovers(stack, sync, armed, &blocks)?;
    Ok(Observations {
        targeting: Some(stack.case().targeting()),
        target_image_offset_bytes,
        block_size_bytes: BLOCK_BYTES as u64,
        failing,
        recovered,
        new_file_after_error,
        injected_write_errors_total: stack.faults.failed_writes(),
    })
}

/// Write the file with the old contents, fsync it, open a second descriptor, and arm the failure.
fn write_sync_and_arm(stack: &Stack, blocks: &Blocks) -> anyhow::Result<Armed> {
    let path = stack.mount_dir().join(FILE_NAME);
    let writer = syncbench_sys::create_new(&path, OpenFlags::BUFFERED).context("creating the test file")?;
    for n in 0..FILE_BLOCKS {
        let offset = (n * BLOCK_BYTES) as u64;
        syncbench_sys::pwrite_all(&writer, &blocks.old, offset).context("writing the test file")?;
    }
    syncbench_sys::fsync(&writer).context("the fsync before any failure is armed failed")?;
    let opened_before = syncbench_sys::open_existing(&path, OpenFlags::BUFFERED)?;
    let target = target_for(stack.case(), &writer)?;
    // Arm before the overwrite: background writeback could otherwise write the page first.
    stack.faults.arm(target.clone());
    Ok(Armed { path, writer, opened_before, target })
}

/// The fsyncs and the cached read while every write of the block fails; then whether a new file can
/// be created.
fn while_writes_fail(
    stack: &Stack,
    sync: SyncCall,
    armed: &Armed,
    blocks: &Blocks,
) -> anyhow::Result<(WhileFailing, CallOutcome)> {
    // Each step in the experiment's order (a struct's fields are evaluated in the order written).
    let fsync_first = sync_outcome(sync, &armed.writer);
    let injected_write_errors_at_first_fsync = stack.faults.failed_writes();
    let fsync_second = sync_outcome(sync, &armed.writer);
    let fsync_fd_opened_before_error = sync_outcome(sync, &armed.opened_before);
    // Read-only: the file system may have gone read-only, and fsync works on any descriptor.
    let opened_after = syncbench_sys::open_read_only(&armed.path)?;
    let failing = WhileFailing {
        fsync_first,
        injected_write_errors_at_first_fsync,
        fsync_second,
        fsync_fd_opened_before_error,
        fsync_fd_opened_after_error: sync_outcome(sync, &opened_after),
        read_in_cache: blocks.read_victim(&armed.writer),
    };
    Ok((failing, try_new_file(stack.mount_dir())))
}

/// Once writes work again: does a sync rewrite the block, and what do the cache, the file system and the
/// image hold after eviction and remount.
fn after_the_device_recovers(
    stack: &mut Stack,
    sync: SyncCall,
    armed: Armed,
    blocks: &Blocks,
) -> anyhow::Result<AfterRecovery> {
    stack.faults.disarm();
    let fsync_after_device_recovers = sync_outcome(sync, &armed.writer);
    let rewritten_after_device_recovers = stack.faults.watched_writes_ok() > 0;
    let Armed { path, writer, opened_before, target } = armed;
    drop((writer, opened_before)); // no descriptor may keep the file system busy during the remount
    drop_page_cache()?;
    let read_after_drop_caches = blocks.read_victim_fresh(&path)?;
    stack.remount().context("remounting after the error")?;
    let read_after_remount = blocks.read_victim_fresh(&path)?;
    let image_at_target = match target {
        Target::Range { start, len } => {
            let on_image = stack.read_image(start, len as usize)?;
            Some(BlockRead::classify(&on_image, &blocks.old, &blocks.new))
        }
        Target::Content(_) => None,
    };
    Ok(AfterRecovery {
        fsync_after_device_recovers,
        rewritten_after_device_recovers,
        read_after_drop_caches,
        read_after_remount,
        image_at_target,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::lab::fault::Target;

    #[test]
    fn blocks_carry_their_marker_in_every_sector_and_differ() {
        let Blocks { old, new } = Blocks::new();
        assert_eq!(new.len(), BLOCK_BYTES);
        assert_ne!(old, new);
        let content = Target::Content(NEW_MARKER.to_vec());
        assert!(content.hits(0, &new));
        assert!(!content.hits(0, &old));
        assert!(new.chunks(SECTOR_BYTES).all(|s| s.starts_with(NEW_MARKER)));
    }
}
