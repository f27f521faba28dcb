//! Write-ahead log on real files: recovery after reopen, torn and garbage tails, corruption in the middle,
//! segment recycling, and many threads committing concurrently with every sync method.

mod wal_common;

use std::collections::HashMap;
use std::sync::{Arc, Barrier};
use std::time::Duration;
use syncbench_engine::wal::{SyncMethod, WalConfig, WalError, record};
use wal_common::{open, payload, poke, segment_files, small};

#[test]
fn reopen_recovers_committed_records_in_order_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small(SyncMethod::Fdatasync);
    let (wal, recovered) = open(dir.path(), cfg.clone());
    assert!(recovered.is_empty());
    let mut ends = Vec::new();
    for i in 0..50u32 {
        let lsn = wal.append(1 + (i % 3) as u8, &payload(0, i, 100 + i as usize * 13)).unwrap();
        ends.push(lsn);
    }
    wal.commit(*ends.last().unwrap()).unwrap();
    assert!(wal.flushed_lsn() >= *ends.last().unwrap());
    let end_before = wal.appended_lsn();
    drop(wal);

    let (wal, recovered) = open(dir.path(), cfg.clone());
    assert_eq!(recovered.len(), 50);
    for (i, r) in recovered.iter().enumerate() {
        assert_eq!(r.payload, payload(0, i as u32, 100 + i * 13));
        assert_eq!(r.kind, 1 + (i % 3) as u8);
        assert_eq!(r.end_lsn, ends[i]);
        assert!(r.lsn < r.end_lsn);
    }
    assert_eq!(wal.appended_lsn(), end_before, "reopening continues after the last valid LSN");
    let more = wal.append(9, b"after reopen").unwrap();
    wal.commit(more).unwrap();
    drop(wal);

    let (_wal, recovered) = open(dir.path(), cfg);
    assert_eq!(recovered.len(), 51);
    assert_eq!(recovered[50].payload, b"after reopen");
    assert!(recovered.windows(2).all(|w| w[0].end_lsn <= w[1].lsn));
}

#[test]
fn records_never_committed_are_not_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open(dir.path(), small(SyncMethod::Fdatasync));
    let a = wal.append(1, b"durable").unwrap();
    wal.commit(a).unwrap();
    wal.append(1, b"only in memory").unwrap();
    drop(wal);
    let (_, recovered) = open(dir.path(), small(SyncMethod::Fdatasync));
    assert_eq!(recovered.iter().map(|r| r.payload.clone()).collect::<Vec<_>>(), vec![b"durable".to_vec()]);
}

#[test]
fn reserved_kinds_and_oversized_records_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open(dir.path(), small(SyncMethod::Fdatasync));
    assert!(matches!(wal.append(0, b"x"), Err(WalError::Invalid(_))));
    assert!(matches!(wal.append(250, b"x"), Err(WalError::Invalid(_))));
    assert!(matches!(wal.append(1, &vec![0u8; 16 * 1024]), Err(WalError::Invalid(_))));
    let biggest = vec![7u8; wal.max_payload_bytes()];
    let lsn = wal.append(1, &biggest).unwrap();
    wal.commit(lsn).unwrap();
    assert!(matches!(wal.flush_to(lsn + 1), Err(WalError::Invalid(_))));
    drop(wal);
    let (_, recovered) = open(dir.path(), small(SyncMethod::Fdatasync));
    assert_eq!(recovered[0].payload, biggest);
}

/// Write `n` records, committing each one separately (one flush per record).
fn write_one_per_flush(dir: &std::path::Path, cfg: &WalConfig, n: u32) {
    let (wal, _) = open(dir, cfg.clone());
    for i in 0..n {
        let lsn = wal.append(1, &payload(0, i, 200)).unwrap();
        wal.commit(lsn).unwrap();
    }
}

#[test]
fn torn_tail_ends_the_log_and_appends_continue_there() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small(SyncMethod::Fdatasync);
    write_one_per_flush(dir.path(), &cfg, 5);
    let (wal, recovered) = open(dir.path(), cfg.clone());
    let last = recovered.last().unwrap().clone();
    drop(wal);
    // Tear the last record: its second half never reached the disk.
    let half = (last.end_lsn - last.lsn) / 2;
    poke(dir.path(), cfg.segment_bytes, last.lsn + half, &vec![0u8; half as usize]);
    let (wal, recovered) = open(dir.path(), cfg.clone());
    assert_eq!(recovered.len(), 4);
    assert_eq!(wal.appended_lsn(), last.lsn);
    let lsn = wal.append(2, b"replacement").unwrap();
    wal.commit(lsn).unwrap();
    drop(wal);
    let (_, recovered) = open(dir.path(), cfg);
    assert_eq!(recovered.len(), 5);
    assert_eq!(recovered[4].payload, b"replacement");
}

#[test]
fn garbage_after_the_tail_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small(SyncMethod::Fdatasync);
    write_one_per_flush(dir.path(), &cfg, 3);
    let (wal, recovered) = open(dir.path(), cfg.clone());
    let end = wal.appended_lsn();
    drop(wal);
    let garbage: Vec<u8> = (0..3000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    poke(dir.path(), cfg.segment_bytes, end, &garbage);
    let (wal, again) = open(dir.path(), cfg);
    assert_eq!(again, recovered);
    assert_eq!(wal.appended_lsn(), end);
}

#[test]
fn damage_before_records_of_a_later_flush_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small(SyncMethod::Fdatasync);
    write_one_per_flush(dir.path(), &cfg, 6);
    let (wal, recovered) = open(dir.path(), cfg.clone());
    drop(wal);
    // Flip one payload byte of the second record: it was durable, later flushes wrote more.
    let victim = &recovered[1];
    poke(dir.path(), cfg.segment_bytes, victim.lsn + record::HEADER_BYTES as u64 + 3, b"!");
    match open_err(dir.path(), cfg) {
        WalError::Corruption { bad_lsn, later_lsn, .. } => {
            assert_eq!(bad_lsn, victim.lsn);
            assert_eq!(later_lsn, recovered[2].lsn);
        }
        other => panic!("expected corruption, got {other}"),
    }
}

fn open_err(dir: &std::path::Path, cfg: WalConfig) -> WalError {
    match syncbench_engine::wal::Wal::open(syncbench_engine::RealStorage, dir, cfg) {
        Ok(_) => panic!("open should fail"),
        Err(e) => e,
    }
}

#[test]
fn a_torn_group_write_is_a_tail_and_its_stale_records_are_zeroed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small(SyncMethod::Fdatasync);
    let (wal, _) = open(dir.path(), cfg.clone());
    let first = wal.append(1, b"first flush").unwrap();
    wal.commit(first).unwrap();
    // Three records written by ONE flush; the middle one is torn, the third survived.
    let ends: Vec<u64> = (0..3).map(|i| wal.append(1, &payload(1, i, 300)).unwrap()).collect();
    wal.commit(ends[2]).unwrap();
    drop(wal);
    let (_, all) = open(dir.path(), cfg.clone());
    assert_eq!(all.len(), 4);
    poke(dir.path(), cfg.segment_bytes, all[2].lsn + 60, &[0xAA; 8]);

    let (wal, recovered) = open(dir.path(), cfg.clone());
    assert_eq!(recovered.len(), 2, "the unacknowledgeable tail of the torn flush is dropped, not corruption");
    // Write a record of the same size at the torn position: the old third record now sits right after it.
    let lsn = wal.append(1, &payload(2, 0, 300)).unwrap();
    wal.commit(lsn).unwrap();
    drop(wal);
    let (_, recovered) = open(dir.path(), cfg);
    let texts: Vec<_> = recovered.iter().map(|r| r.payload.clone()).collect();
    assert_eq!(texts, vec![b"first flush".to_vec(), payload(1, 0, 300), payload(2, 0, 300)]);
}

#[test]
fn recovery_aborts_on_a_segment_of_the_wrong_size() {
    let dir = tempfile::tempdir().unwrap();
    write_one_per_flush(dir.path(), &small(SyncMethod::Fdatasync), 1);
    let seg = segment_files(dir.path())[0].clone();
    std::fs::OpenOptions::new().write(true).open(&seg).unwrap().set_len(1000).unwrap();
    assert!(matches!(open_err(dir.path(), small(SyncMethod::Fdatasync)), WalError::Invalid(_)));
}

#[test]
fn truncate_recycles_old_segments_and_recovery_ignores_their_stale_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = WalConfig { max_spare_segments: 2, ..small(SyncMethod::Fdatasync) };
    let (wal, _) = open(dir.path(), cfg.clone());
    let mut ends = Vec::new();
    for i in 0..200u32 {
        ends.push(wal.append(1, &payload(0, i, 500)).unwrap());
        if i % 10 == 9 {
            wal.commit(ends[i as usize]).unwrap();
        }
    }
    wal.commit(*ends.last().unwrap()).unwrap();
    let checkpoint = ends[150];
    let retired = wal.truncate_before(checkpoint).unwrap();
    assert!(retired >= 5, "retired {retired}");
    let more = wal.append(3, b"after truncate").unwrap();
    wal.commit(more).unwrap();
    drop(wal);
    let (wal, recovered) = open(dir.path(), cfg.clone());
    assert!(recovered.first().unwrap().lsn <= checkpoint, "records from the checkpoint on survive");
    assert_eq!(recovered.last().unwrap().payload, b"after truncate");
    assert!(recovered.windows(2).all(|w| w[0].end_lsn <= w[1].lsn));
    // Keep going through the recycled spares.
    for i in 0..100u32 {
        let lsn = wal.append(1, &payload(5, i, 500)).unwrap();
        wal.commit(lsn).unwrap();
    }
    drop(wal);
    let (_, recovered) = open(dir.path(), cfg);
    assert_eq!(recovered.last().unwrap().payload, payload(5, 99, 500));
}

/// N threads × M commits: every acknowledged record is there after reopen, each thread's in order.
fn many_threads(method: SyncMethod, group_commit: bool) {
    many_threads_with(WalConfig { group_commit, ..small(method) });
}

fn many_threads_with(cfg: WalConfig) {
    let (method, group_commit) = (cfg.sync_method, cfg.group_commit);
    let dir = tempfile::tempdir().unwrap();
    let (threads, commits) = (8u32, 40u32);
    let (wal, _) = match syncbench_engine::wal::Wal::open(syncbench_engine::RealStorage, dir.path(), cfg.clone()) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("skipping: {} is not available here: {e}", method.name());
            return;
        }
    };
    let wal = Arc::new(wal);
    let start = Arc::new(Barrier::new(threads as usize));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (wal, start) = (wal.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                (0..commits)
                    .map(|s| {
                        let lsn = wal.append(1, &payload(t, s, 64 + (t as usize * 37) % 300)).unwrap();
                        wal.commit(lsn).unwrap();
                        assert!(wal.flushed_lsn() >= lsn);
                        lsn
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let acked: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let stats = wal.stats();
    assert_eq!(stats.commits, u64::from(threads * commits));
    assert!(stats.flush_ns_max > 0 && stats.flush_ns_max <= stats.flush_ns_total, "{stats:?}");
    assert!(stats.bytes_written > 0 && stats.writes >= stats.flushes.min(1));
    if group_commit {
        assert!(stats.flushes <= stats.commits);
    } else {
        assert_eq!(stats.flushes, stats.commits, "naive: one flush per commit");
    }
    drop(wal);
    let (_, recovered) = open(dir.path(), cfg);
    assert_eq!(recovered.len() as u32, threads * commits);
    let by_end: HashMap<u64, &syncbench_engine::wal::Record> = recovered.iter().map(|r| (r.end_lsn, r)).collect();
    for (t, lsns) in acked.iter().enumerate() {
        for (s, lsn) in lsns.iter().enumerate() {
            let r = by_end.get(lsn).expect("acknowledged record recovered");
            assert_eq!(r.payload, payload(t as u32, s as u32, 64 + (t * 37) % 300));
        }
        assert!(lsns.windows(2).all(|w| w[0] < w[1]));
    }
}

/// One test per line, `name: method, group_commit`: `many_threads` under each log method.
macro_rules! many_threads_tests {
    ($($name:ident: $method:ident, $group_commit:literal;)*) => {
        $(
            #[test]
            fn $name() {
                many_threads(SyncMethod::$method, $group_commit);
            }
        )*
    };
}

many_threads_tests! {
    many_threads_fdatasync_group: Fdatasync, true;
    many_threads_fdatasync_naive: Fdatasync, false;
    many_threads_fsync: Fsync, true;
    many_threads_open_datasync: OpenDatasync, true;
    many_threads_open_datasync_direct: OpenDatasyncDirect, true;
    many_threads_pwritev2_dsync: Pwritev2Dsync, true;
    many_threads_io_uring: IoUringFdatasync, true;
    many_threads_none: Write, true;
}

#[test]
fn many_threads_small_groups_and_a_commit_delay() {
    many_threads_with(WalConfig {
        max_group_bytes: 700,
        commit_delay: Duration::from_micros(200),
        commit_siblings: 2,
        leader_extra_batches: 3,
        ..small(SyncMethod::Fdatasync)
    });
}

#[test]
fn commit_delay_lets_a_leader_gather_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = WalConfig { commit_delay: Duration::from_millis(30), commit_siblings: 0, ..small(SyncMethod::Fdatasync) };
    let (wal, _) = open(dir.path(), cfg);
    let wal = Arc::new(wal);
    let start = Arc::new(Barrier::new(6));
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let (wal, start) = (wal.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for s in 0..5 {
                    let lsn = wal.append(1, &payload(t, s, 100)).unwrap();
                    wal.commit(lsn).unwrap();
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let stats = wal.stats();
    assert_eq!(stats.commits, 30);
    assert!(stats.flushes < stats.commits, "a 30 ms delay with 6 clients must group commits: {stats:?}");
}

#[test]
fn commit_delay_count_ends_the_delay_once_the_group_is_complete() {
    // An hour-long delay that must end as soon as all 6 commits are waiting: each round of 6 is one flush.
    let dir = tempfile::tempdir().unwrap();
    let cfg = WalConfig {
        commit_delay: Duration::from_secs(3600),
        commit_siblings: 0,
        commit_delay_count: 6,
        ..small(SyncMethod::Fdatasync)
    };
    let (wal, _) = open(dir.path(), cfg);
    let wal = Arc::new(wal);
    let began = std::time::Instant::now();
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                let lsn = wal.append(1, &payload(t, 0, 100)).unwrap();
                wal.commit(lsn).unwrap();
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    assert!(began.elapsed() < Duration::from_secs(600), "the leader waited out its delay");
    let stats = wal.stats();
    assert_eq!((stats.commits, stats.flushes), (6, 1), "{stats:?}");
}

#[test]
fn commit_delay_count_forms_a_full_group_every_round() {
    // 6 threads, each commits 20 records one after another, with an hour-long delay that ends when the
    // leader and 5 others wait. Every flush must then carry exactly 6 commits: commits woken by the
    // previous flush but still on their way out must not count towards the next group.
    let dir = tempfile::tempdir().unwrap();
    let (threads, rounds) = (6u32, 20u32);
    let cfg = WalConfig {
        commit_delay: Duration::from_secs(3600),
        commit_siblings: 0,
        commit_delay_count: threads,
        ..small(SyncMethod::Fdatasync)
    };
    let (wal, _) = open(dir.path(), cfg);
    let wal = Arc::new(wal);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                for s in 0..rounds {
                    let lsn = wal.append(1, &payload(t, s, 100)).unwrap();
                    wal.commit(lsn).unwrap();
                }
            })
        })
        .collect();
    // A short group leaves a thread behind in the last round, waiting out the hour: fail, don't hang.
    within(Duration::from_secs(120), move || handles.into_iter().for_each(|h| h.join().unwrap()));
    let stats = wal.stats();
    assert_eq!((stats.commits, stats.flushes), (u64::from(threads * rounds), u64::from(rounds)), "{stats:?}");
}

/// Run `f` on its own thread and fail the test if it has not finished within `limit`.
fn within(limit: Duration, f: impl FnOnce() + Send + 'static) {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        f();
        let _ = done_tx.send(());
    });
    match done_rx.recv_timeout(limit) {
        Ok(()) => worker.join().unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => std::panic::resume_unwind(worker.join().unwrap_err()),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("still running after {limit:?}: commits left waiting")
        }
    }
}

/// A leader whose thread never commits again must not strand the commits that wait for the next flush:
/// the commit woken first (which relays the wake-ups) leads that flush. Slow syncs (300 ms) order the
/// steps: A leads a flush that covers D's record; B and C commit during it and wait for the next flush;
/// then A leaves. Without the hand-off, B and C would sleep forever.
#[test]
fn commits_still_waiting_are_flushed_when_the_leader_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let storage = wal_common::FaultyStorage::default();
    let (wal, _) = syncbench_engine::wal::Wal::open(storage.clone(), dir.path(), small(SyncMethod::Fdatasync)).unwrap();
    storage.faults.sync_delay_ms.store(300, std::sync::atomic::Ordering::SeqCst);
    let wal = Arc::new(wal);
    let d_lsn = wal.append(1, &payload(3, 0, 50)).unwrap();
    let a_lsn = wal.append(1, &payload(0, 0, 50)).unwrap();
    let commit_in = |delay_ms: u64, lsn: u64| {
        let wal = wal.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(delay_ms));
            wal.commit(lsn).unwrap();
        })
    };
    let a = commit_in(0, a_lsn); // leads flush 1 (a and d), then its thread is done
    let d = commit_in(50, d_lsn); // covered by flush 1
    let (b_lsn, c_lsn) = {
        std::thread::sleep(Duration::from_millis(100));
        (wal.append(1, &payload(1, 0, 50)).unwrap(), wal.append(1, &payload(2, 0, 50)).unwrap())
    };
    let (b, c) = (commit_in(0, b_lsn), commit_in(0, c_lsn)); // wait for flush 2
    within(Duration::from_secs(60), move || [a, d, b, c].into_iter().for_each(|h| h.join().unwrap()));
    assert_eq!(wal.flushed_lsn(), c_lsn);
    assert_eq!(wal.stats().flushes, 2, "{:?}", wal.stats());
}

#[test]
fn a_leader_waits_out_its_delay_when_the_count_is_not_reached() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = WalConfig {
        commit_delay: Duration::from_millis(20),
        commit_siblings: 0,
        commit_delay_count: 2,
        ..small(SyncMethod::Fdatasync)
    };
    let (wal, _) = open(dir.path(), cfg);
    let began = std::time::Instant::now();
    let lsn = wal.append(1, &payload(0, 0, 100)).unwrap();
    wal.commit(lsn).unwrap();
    assert!(began.elapsed() >= Duration::from_millis(20), "one commit never reaches a count of 2");
    assert_eq!(wal.flushed_lsn(), lsn);
}

#[test]
fn groups_are_capped_in_bytes_but_a_commit_still_covers_everything_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = WalConfig { max_group_bytes: 1024, ..small(SyncMethod::Fdatasync) };
    let (wal, _) = open(dir.path(), cfg.clone());
    let ends: Vec<u64> = (0..20).map(|i| wal.append(1, &payload(0, i, 300)).unwrap()).collect();
    wal.commit(*ends.last().unwrap()).unwrap();
    // 344 bytes per record: at most two records per 1 KiB group, so at least ten flushes.
    assert!(wal.stats().flushes >= 10, "{:?}", wal.stats());
    assert_eq!(wal.flushed_lsn(), *ends.last().unwrap());
    drop(wal);
    assert_eq!(open(dir.path(), cfg).1.len(), 20);
}

#[test]
fn direct_io_log_reopens_mid_block_and_keeps_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small(SyncMethod::OpenDatasyncDirect);
    let mut expected = Vec::new();
    for round in 0..3u32 {
        let (wal, recovered) =
            match syncbench_engine::wal::Wal::open(syncbench_engine::RealStorage, dir.path(), cfg.clone()) {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("skipping: O_DIRECT is not available here: {e}");
                    return;
                }
            };
        assert_eq!(recovered.iter().map(|r| r.payload.clone()).collect::<Vec<_>>(), expected);
        // Odd sizes so every reopen lands in the middle of a 4 KiB block.
        for i in 0..7u32 {
            let p = payload(round, i, 333 + i as usize * 101);
            let lsn = wal.append(1, &p).unwrap();
            wal.commit(lsn).unwrap();
            expected.push(p);
        }
        assert_ne!(wal.appended_lsn() % 4096, 0);
    }
}
