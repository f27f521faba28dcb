//! Which writes to the disk image fail: the switch the experiment flips while the image server runs.
//!
//! The server runs in our own process, so the control is a shared handle rather than a control file.

use std::sync::{Arc, Mutex, MutexGuard};

/// The writes a fault applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Writes overlapping `[start, start + len)` of the image.
    Range {
        /// First byte.
        start: u64,
        /// Length in bytes.
        len: u64,
    },
    /// Writes containing a 512-byte sector that begins with this marker (the new block's contents start
    /// every sector with it), wherever on the image they go.
    Content(Vec<u8>),
}

/// Sector size the content marker is aligned to.
pub const SECTOR_BYTES: usize = 512;

impl Target {
    /// Whether a write of `data` at image offset `offset` touches the target.
    pub fn hits(&self, offset: u64, data: &[u8]) -> bool {
        match self {
            Target::Range { start, len } => offset < start + len && offset + data.len() as u64 > *start,
            Target::Content(marker) => data.chunks(SECTOR_BYTES).any(|sector| sector.starts_with(marker)),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// Writes hitting this target fail with EIO.
    armed: Option<Target>,
    /// Writes hitting this target are counted (it stays set after disarming, to see rewrites).
    watched: Option<Target>,
    failed_writes: u64,
    watched_writes_ok: u64,
}

/// A shared handle on the image server's fault state.
#[derive(Clone, Debug, Default)]
pub struct FaultSwitch(Arc<Mutex<State>>);

impl FaultSwitch {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fail every later write that hits `target`, and watch it.
    pub fn arm(&self, target: Target) {
        let mut state = self.lock();
        state.armed = Some(target.clone());
        state.watched = Some(target);
        state.watched_writes_ok = 0;
    }

    /// Let writes succeed again; keep counting the successful writes that hit the old target.
    pub fn disarm(&self) {
        self.lock().armed = None;
    }

    /// Decide the fate of one write: `true` means fail it with EIO.
    pub fn should_fail(&self, offset: u64, data: &[u8]) -> bool {
        let mut state = self.lock();
        if state.armed.as_ref().is_some_and(|t| t.hits(offset, data)) {
            state.failed_writes += 1;
            return true;
        }
        if state.watched.as_ref().is_some_and(|t| t.hits(offset, data)) {
            state.watched_writes_ok += 1;
        }
        false
    }

    /// Writes failed so far.
    pub fn failed_writes(&self) -> u64 {
        self.lock().failed_writes
    }

    /// Successful writes to the watched target since it was armed.
    pub fn watched_writes_ok(&self) -> u64 {
        self.lock().watched_writes_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_hits_only_overlapping_writes() {
        let t = Target::Range { start: 8192, len: 4096 };
        assert!(t.hits(8192, &[0; 4096]));
        assert!(t.hits(0, &[0; 8193]));
        assert!(t.hits(12287, &[0; 1]));
        assert!(!t.hits(0, &[0; 8192]));
        assert!(!t.hits(12288, &[0; 4096]));
    }

    #[test]
    fn content_hits_sectors_starting_with_the_marker() {
        let marker = b"NEW-BLOCK".to_vec();
        let t = Target::Content(marker.clone());
        let mut data = vec![0u8; 4 * SECTOR_BYTES];
        assert!(!t.hits(0, &data));
        data[2 * SECTOR_BYTES..2 * SECTOR_BYTES + marker.len()].copy_from_slice(&marker);
        assert!(t.hits(0, &data));
        // A marker in the middle of a sector is not the block's contents.
        let mut shifted = vec![0u8; SECTOR_BYTES];
        shifted[7..7 + marker.len()].copy_from_slice(&marker);
        assert!(!t.hits(0, &shifted));
    }

    #[test]
    fn armed_writes_fail_and_rewrites_are_counted_after_disarm() {
        let switch = FaultSwitch::default();
        assert!(!switch.should_fail(0, &[0; 512]));
        switch.arm(Target::Range { start: 0, len: 512 });
        assert!(switch.should_fail(0, &[0; 512]));
        assert!(!switch.should_fail(512, &[0; 512]));
        switch.disarm();
        assert!(!switch.should_fail(0, &[0; 512]));
        assert_eq!(switch.failed_writes(), 1);
        assert_eq!(switch.watched_writes_ok(), 1);
    }
}
