//! Which system calls stop for the tracer. Everything else runs untouched at full speed.

use super::calls::{OPEN_SYNC_BITS, RWF_SYNC_BITS};
use syncbench_sys::ptrace::{StopWhen, TraceRule};

fn always(nr: i64) -> TraceRule {
    TraceRule { nr, when: StopWhen::Always }
}

fn when_bits(nr: i64, arg: u8, mask: u64) -> TraceRule {
    TraceRule { nr, when: StopWhen::AnyBitSet { arg, mask: mask as u32 } }
}

/// The rules: the sync calls always; opens only with `O_SYNC`/`O_DSYNC` (openat2 hides its flags behind a
/// pointer, so always); msync only with `MS_SYNC`; `io_uring_setup` always (rare, and what the ring does is
/// invisible to ptrace: the report warns about it). With `track_writes`, every write and every call that
/// changes what a descriptor number means (close, dup2, dup3, close_range) too, to count bytes between
/// syncs and see writes on `O_SYNC`/`O_DSYNC` descriptors; without it only `pwritev2` with
/// `RWF_DSYNC`/`RWF_SYNC`.
pub fn rules(track_writes: bool) -> Vec<TraceRule> {
    let mut rules = vec![
        always(libc::SYS_fsync),
        always(libc::SYS_fdatasync),
        always(libc::SYS_sync_file_range),
        always(libc::SYS_syncfs),
        always(libc::SYS_sync),
        when_bits(libc::SYS_msync, 2, libc::MS_SYNC as u64),
        when_bits(libc::SYS_open, 1, OPEN_SYNC_BITS),
        when_bits(libc::SYS_openat, 2, OPEN_SYNC_BITS),
        always(libc::SYS_openat2),
        always(libc::SYS_io_uring_setup),
    ];
    if track_writes {
        for nr in [
            libc::SYS_write,
            libc::SYS_pwrite64,
            libc::SYS_writev,
            libc::SYS_pwritev,
            libc::SYS_pwritev2,
            libc::SYS_close,
            libc::SYS_dup2,
            libc::SYS_dup3,
            libc::SYS_close_range,
        ] {
            rules.push(always(nr));
        }
    } else {
        rules.push(when_bits(libc::SYS_pwritev2, 5, RWF_SYNC_BITS));
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_writes_are_untraced_without_write_tracking() {
        let light = rules(false);
        assert!(!light.iter().any(|r| r.nr == libc::SYS_write || r.nr == libc::SYS_close));
        assert!(light.iter().any(|r| r.nr == libc::SYS_pwritev2 && r.when != StopWhen::Always));
        let full = rules(true);
        assert!(full.iter().any(|r| r.nr == libc::SYS_write));
        assert!(full.iter().any(|r| r.nr == libc::SYS_fdatasync));
        for rules in [light, full] {
            assert!(rules.iter().any(|r| r.nr == libc::SYS_io_uring_setup && r.when == StopWhen::Always));
        }
    }
}
