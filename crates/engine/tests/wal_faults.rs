//! Fail-stop: a failed sync poisons the log; every waiting and later commit errors; nothing is retried.
//! And the deliberate-bug switches really change behaviour (so a crash test can prove it catches them).

mod wal_common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use syncbench_engine::wal::{FaultSwitches, SyncMethod, Wal, WalConfig, WalError};
use wal_common::{FaultyStorage, payload, small};

fn open_faulty(dir: &std::path::Path, cfg: WalConfig) -> (FaultyStorage, Wal<FaultyStorage>) {
    let storage = FaultyStorage::default();
    let (wal, _) = Wal::open(storage.clone(), dir, cfg).unwrap();
    (storage, wal)
}

#[test]
fn a_failed_sync_poisons_the_log_and_is_never_retried() {
    for method in [SyncMethod::Fdatasync, SyncMethod::Fsync] {
        let dir = tempfile::tempdir().unwrap();
        let (storage, wal) = open_faulty(dir.path(), small(method));
        let ok = wal.append(1, b"before").unwrap();
        wal.commit(ok).unwrap();

        storage.faults.fail_syncs.store(true, Ordering::SeqCst);
        storage.faults.fail_once.store(true, Ordering::SeqCst); // a retry WOULD succeed
        let calls_before = storage.faults.sync_calls.load(Ordering::SeqCst);
        let lsn = wal.append(1, b"lost?").unwrap();
        let err = wal.commit(lsn).unwrap_err();
        assert!(err.is_poisoned(), "{err}");
        assert!(err.to_string().contains("outcome unknown"), "{err}");
        assert_eq!(storage.faults.sync_calls.load(Ordering::SeqCst), calls_before + 1, "exactly one sync, no retry");

        // Every later operation fails too, without touching the disk.
        assert!(wal.commit(lsn).unwrap_err().is_poisoned());
        assert!(wal.commit(ok).unwrap_err().is_poisoned(), "even an already-durable LSN: the log is dead");
        assert!(wal.append(1, b"after").unwrap_err().is_poisoned());
        assert!(wal.flush_to(lsn).unwrap_err().is_poisoned());
        assert!(wal.truncate_before(lsn).unwrap_err().is_poisoned());
        assert!(wal.is_poisoned());
        assert_eq!(storage.faults.sync_calls.load(Ordering::SeqCst), calls_before + 1);
        assert_eq!(wal.flushed_lsn(), ok, "the failed flush is not published");
    }
}

#[test]
fn every_waiter_of_the_failed_group_gets_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let (storage, wal) = open_faulty(dir.path(), small(SyncMethod::Fdatasync));
    storage.faults.sync_delay_ms.store(50, Ordering::SeqCst);
    storage.faults.fail_syncs.store(true, Ordering::SeqCst);
    let wal = Arc::new(wal);
    let start = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (wal, start) = (wal.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let lsn = wal.append(1, &payload(t, 0, 100))?;
                wal.commit(lsn)
            })
        })
        .collect();
    for h in handles {
        let result: Result<(), WalError> = h.join().unwrap();
        assert!(result.unwrap_err().is_poisoned());
    }
    assert_eq!(storage.faults.failed_syncs.load(Ordering::SeqCst), 1, "one failure, never a second attempt");
}

#[test]
fn the_retry_switch_reintroduces_the_2018_bug() {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultSwitches { retry_fsync_after_error: true, ..FaultSwitches::default() };
    let (storage, wal) = open_faulty(dir.path(), WalConfig { faults, ..small(SyncMethod::Fdatasync) });
    storage.faults.fail_syncs.store(true, Ordering::SeqCst);
    storage.faults.fail_once.store(true, Ordering::SeqCst);
    let lsn = wal.append(1, b"acknowledged after a failed fsync").unwrap();
    wal.commit(lsn).expect("the buggy log carries on");
    assert_eq!(storage.faults.failed_syncs.load(Ordering::SeqCst), 1);
}

#[test]
fn the_skip_switches_skip_their_syncs() {
    let dir = tempfile::tempdir().unwrap();
    let faults = FaultSwitches { skip_log_sync: true, ..FaultSwitches::default() };
    let (storage, wal) = open_faulty(dir.path(), WalConfig { faults, ..small(SyncMethod::Fdatasync) });
    let before = storage.faults.sync_calls.load(Ordering::SeqCst);
    for i in 0..5 {
        let lsn = wal.append(1, &payload(0, i, 10)).unwrap();
        wal.commit(lsn).unwrap();
    }
    assert_eq!(storage.faults.sync_calls.load(Ordering::SeqCst), before, "no log sync at all");
    assert_eq!(wal.stats().syncs, 0);
}
