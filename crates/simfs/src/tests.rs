//! Behaviour of the whole simulator through the engine's `Storage` trait.

use crate::{Profile, ResiduePolicy, SimConfig, SimFs};
use std::path::{Path, PathBuf};
use syncbench_engine::{FileOptions, Storage, StorageFile, WriteSync};

fn fs(profile: Profile) -> SimFs {
    let fs = SimFs::new(SimConfig { profile, sector_bytes: 512, ..SimConfig::default() });
    fs.create_dir_all(Path::new("/db")).unwrap();
    fs
}

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

fn content(fs: &SimFs, path: &str) -> Option<Vec<u8>> {
    fs.read_file(Path::new(path)).ok()
}

/// A file whose name and content are durable.
fn durable_file(fs: &SimFs, path: &str, data: &[u8]) -> crate::SimFile {
    let f = fs.create_new(&p(path), FileOptions::default()).unwrap();
    f.write_at(data, 0, WriteSync::None).unwrap();
    f.sync_all().unwrap();
    fs.sync_dir(p(path).parent().unwrap()).unwrap();
    f
}

#[test]
fn plain_writes_are_lost_and_synced_writes_kept() {
    let fs = fs(Profile::Strict);
    let f = durable_file(&fs, "/db/a", b"one.");
    f.write_at(b"two.", 4, WriteSync::None).unwrap();
    assert!(fs.has_volatile_state());
    let (lost, _) = fs.crash_image_with(0, ResiduePolicy::None);
    assert_eq!(content(&lost, "/db/a").unwrap(), b"one.");
    f.sync_data().unwrap();
    assert!(!fs.has_volatile_state());
    let (kept, _) = fs.crash_image_with(0, ResiduePolicy::None);
    assert_eq!(content(&kept, "/db/a").unwrap(), b"one.two.");
}

#[test]
fn dsync_rwf_dsync_and_linked_writes_are_durable_on_return() {
    let fs = fs(Profile::Strict);
    durable_file(&fs, "/db/a", b"");
    let odsync = fs.open(&p("/db/a"), FileOptions { dsync: true, direct: false }).unwrap();
    odsync.write_at(b"aa", 0, WriteSync::None).unwrap();
    let plain = fs.open(&p("/db/a"), FileOptions::default()).unwrap();
    plain.write_at(b"bb", 2, WriteSync::Dsync).unwrap();
    plain.write_at(b"cc", 4, WriteSync::LinkedFdatasync).unwrap();
    plain.write_at(b"dd", 6, WriteSync::AtomicDsync).unwrap();
    let (image, _) = fs.crash_image_with(0, ResiduePolicy::None);
    assert_eq!(content(&image, "/db/a").unwrap(), b"aabbccdd");
}

#[test]
fn strict_create_needs_the_directory_fsync_ext4_file_fsync_commits_it() {
    for profile in [Profile::Strict, Profile::Ext4] {
        let fs = fs(profile);
        let f = fs.create_new(&p("/db/a"), FileOptions::default()).unwrap();
        f.write_at(b"x", 0, WriteSync::None).unwrap();
        f.sync_all().unwrap();
        let (image, _) = fs.crash_image_with(0, ResiduePolicy::None);
        assert_eq!(content(&image, "/db/a").is_some(), profile == Profile::Ext4, "{profile:?}");
        fs.sync_dir(&p("/db")).unwrap();
        let (image, _) = fs.crash_image_with(0, ResiduePolicy::None);
        assert_eq!(content(&image, "/db/a").unwrap(), b"x", "{profile:?}");
    }
}

#[test]
fn removed_file_comes_back_without_the_directory_fsync() {
    let fs = fs(Profile::Strict);
    durable_file(&fs, "/db/a", b"x");
    fs.remove(&p("/db/a")).unwrap();
    assert!(!fs.exists(&p("/db/a")).unwrap());
    let (image, _) = fs.crash_image_with(0, ResiduePolicy::None);
    assert!(image.exists(&p("/db/a")).unwrap());
    fs.sync_dir(&p("/db")).unwrap();
    let (image, _) = fs.crash_image_with(0, ResiduePolicy::All);
    assert!(!image.exists(&p("/db/a")).unwrap());
}

#[test]
fn rename_replacing_a_file_shows_old_xor_new_content_after_any_crash() {
    for profile in [Profile::Strict, Profile::Ext4] {
        let fs = fs(profile);
        durable_file(&fs, "/db/config", b"old");
        durable_file(&fs, "/db/config.tmp", b"new");
        fs.rename(&p("/db/config.tmp"), &p("/db/config")).unwrap();
        let mut outcomes = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let (image, _) = fs.crash_image(seed);
            let config = content(&image, "/db/config");
            let tmp = content(&image, "/db/config.tmp");
            match (config.as_deref(), tmp.as_deref()) {
                (Some(b"old"), Some(b"new")) => outcomes.insert("old"),
                (Some(b"new"), None) => outcomes.insert("new"),
                other => panic!("{profile:?}: rename not atomic: {other:?}"),
            };
        }
        assert_eq!(outcomes.len(), 2, "{profile:?}: both sides of the rename occur");
    }
}

#[test]
fn errseq_reports_a_failed_writeback_once_per_open_file_description() {
    let fs = fs(Profile::Strict);
    let a = durable_file(&fs, "/db/a", b"old!");
    let b = fs.open(&p("/db/a"), FileOptions::default()).unwrap();
    a.write_at(b"new!", 0, WriteSync::None).unwrap();
    fs.fail_next_writeback(&p("/db/a")).unwrap();
    assert_eq!(a.sync_data().unwrap_err().raw_os_error(), Some(5), "the first fsync reports EIO");
    assert!(a.sync_data().is_ok(), "a retry on the same fd returns 0: the trap");
    assert_eq!(b.sync_all().unwrap_err().raw_os_error(), Some(5), "another description sees it once");
    assert!(b.sync_all().is_ok());
    let c = fs.open(&p("/db/a"), FileOptions::default()).unwrap();
    assert!(c.sync_all().is_ok(), "opened after the error was seen: nothing to report");
    let (image, _) = fs.crash_image_with(0, ResiduePolicy::All);
    assert_eq!(content(&image, "/db/a").unwrap(), b"old!", "the retry made nothing durable");
}

#[test]
fn an_unseen_background_error_reaches_every_description_even_one_opened_later() {
    let fs = fs(Profile::Strict);
    let a = durable_file(&fs, "/db/a", b"old!");
    a.write_at(b"new!", 0, WriteSync::None).unwrap();
    fs.fail_next_writeback(&p("/db/a")).unwrap();
    fs.background_writeback(&p("/db/a")).unwrap();
    let late = fs.open(&p("/db/a"), FileOptions::default()).unwrap();
    assert_eq!(late.sync_data().unwrap_err().raw_os_error(), Some(5), "4.17: reported at least once");
    assert!(late.sync_data().is_ok());
    assert_eq!(a.sync_data().unwrap_err().raw_os_error(), Some(5), "the writer's description sees it too");
    assert!(a.sync_data().is_ok());
}

#[test]
fn eviction_after_an_error_makes_reads_return_the_old_bytes() {
    let fs = fs(Profile::Strict);
    let a = durable_file(&fs, "/db/a", b"old!");
    a.write_at(b"new!", 0, WriteSync::None).unwrap();
    fs.fail_next_writeback(&p("/db/a")).unwrap();
    assert!(a.sync_data().is_err());
    let mut buf = [0u8; 4];
    a.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"new!", "before eviction the cache still serves the new bytes");
    fs.evict(&p("/db/a")).unwrap();
    a.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"old!", "after eviction reads show what the disk has");
}

#[test]
fn dsync_write_reports_its_writeback_error() {
    let fs = fs(Profile::Strict);
    let a = durable_file(&fs, "/db/a", b"");
    fs.fail_next_writeback(&p("/db/a")).unwrap();
    assert_eq!(a.write_at(b"x", 0, WriteSync::Dsync).unwrap_err().raw_os_error(), Some(5));
    assert!(a.write_at(b"y", 1, WriteSync::Dsync).is_ok());
}

#[test]
fn crash_at_op_k_freezes_everything_after() {
    let fs = fs(Profile::Strict);
    let a = durable_file(&fs, "/db/a", b"");
    let done = fs.stats().ops;
    fs.set_crash_at_op(Some(done + 2));
    a.write_at(b"1", 0, WriteSync::Dsync).unwrap();
    let err = a.write_at(b"2", 1, WriteSync::Dsync).unwrap_err();
    assert!(err.to_string().contains("power loss"));
    assert!(fs.crashed());
    assert!(a.sync_all().is_err() && a.write_at(b"3", 2, WriteSync::None).is_err());
    assert!(fs.create_new(&p("/db/b"), FileOptions::default()).is_err());
    assert_eq!(fs.stats().ops, done + 2, "nothing counts after the power is gone");
    let (none, _) = fs.crash_image_with(0, ResiduePolicy::None);
    assert_eq!(content(&none, "/db/a").unwrap(), b"1");
    let (all, _) = fs.crash_image_with(0, ResiduePolicy::All);
    assert_eq!(content(&all, "/db/a").unwrap(), b"12", "the in-flight write may have reached the disk");
}

#[test]
fn an_in_flight_write_is_torn_at_sector_boundaries_unless_atomic() {
    for sector in [512u64, 4096] {
        let fs = SimFs::new(SimConfig { profile: Profile::Strict, sector_bytes: sector, ..SimConfig::default() });
        fs.create_dir_all(Path::new("/db")).unwrap();
        let a = durable_file(&fs, "/db/a", &vec![b'o'; 16384]);
        fs.set_crash_at_op(Some(fs.stats().ops + 1));
        assert!(a.write_at(&vec![b'n'; 16384], 0, WriteSync::Dsync).is_err());
        let torn = (0..32).any(|seed| {
            let data = content(&fs.crash_image(seed).0, "/db/a").unwrap();
            data.contains(&b'o') && data.contains(&b'n')
        });
        assert!(torn, "sector {sector}: some image tears the write");
        for seed in 0..32 {
            let data = content(&fs.crash_image(seed).0, "/db/a").unwrap();
            for chunk in data.chunks(sector as usize) {
                assert!(chunk.iter().all(|b| *b == chunk[0]), "torn only at {sector}-byte boundaries");
            }
        }
    }
    let fs = fs(Profile::Strict);
    let a = durable_file(&fs, "/db/a", &[b'o'; 8192]);
    fs.set_crash_at_op(Some(fs.stats().ops + 1));
    assert!(a.write_at(&[b'n'; 8192], 0, WriteSync::AtomicDsync).is_err());
    for seed in 0..32 {
        let data = content(&fs.crash_image(seed).0, "/db/a").unwrap();
        assert!(data.iter().all(|b| *b == data[0]), "an untorn write is all or nothing");
    }
}

#[test]
fn crash_images_are_deterministic_by_seed() {
    let build = || {
        let fs = fs(Profile::Ext4);
        let f = durable_file(&fs, "/db/a", &[0u8; 8192]);
        for i in 0..16u8 {
            f.write_at(&[i; 512], u64::from(i) * 512, WriteSync::None).unwrap();
        }
        fs.create_new(&p("/db/b"), FileOptions::default()).unwrap();
        fs
    };
    let (x, y) = (build(), build());
    for seed in 0..8 {
        let (ix, rx) = x.crash_image(seed);
        let (iy, ry) = y.crash_image(seed);
        assert_eq!(rx, ry);
        assert_eq!(content(&ix, "/db/a"), content(&iy, "/db/a"));
        assert_eq!(ix.exists(&p("/db/b")).unwrap(), iy.exists(&p("/db/b")).unwrap());
    }
    let differs = (1..8).any(|seed| content(&x.crash_image(0).0, "/db/a") != content(&x.crash_image(seed).0, "/db/a"));
    assert!(differs, "different seeds choose different residue");
}

#[test]
fn marks_record_the_operation_count() {
    let fs = fs(Profile::Strict);
    durable_file(&fs, "/db/a", b"x");
    fs.after_ack();
    let marks = fs.marks();
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0].tag, "ack");
    assert_eq!(marks[0].op, fs.stats().ops);
}

#[test]
fn bad_paths_are_errors_not_panics() {
    let fs = fs(Profile::Strict);
    assert_eq!(fs.open(&p("/db/missing"), FileOptions::default()).err().unwrap().kind(), std::io::ErrorKind::NotFound);
    assert!(fs.create_new(&p("/nodir/a"), FileOptions::default()).is_err());
    durable_file(&fs, "/db/a", b"x");
    assert_eq!(
        fs.create_new(&p("/db/a"), FileOptions::default()).err().unwrap().kind(),
        std::io::ErrorKind::AlreadyExists
    );
    let direct = fs.open(&p("/db/a"), FileOptions { dsync: false, direct: true }).unwrap();
    assert!(direct.write_at(b"x", 1, WriteSync::None).is_err(), "O_DIRECT needs alignment");
    assert_eq!(fs.list(&p("/db")).unwrap(), vec![p("/db/a")]);
}

#[test]
fn evict_after_error_config_reverts_reads_at_once() {
    let fs = SimFs::new(SimConfig { evict_after_error: true, ..SimConfig::default() });
    fs.create_dir_all(Path::new("/db")).unwrap();
    let a = durable_file(&fs, "/db/a", b"old!");
    a.write_at(b"new!", 0, WriteSync::None).unwrap();
    fs.fail_next_writeback(&p("/db/a")).unwrap();
    assert!(a.sync_data().is_err());
    assert_eq!(content(&fs, "/db/a").unwrap(), b"old!");
}

#[test]
fn a_fork_is_independent_and_keeps_volatile_state() {
    let fs = fs(Profile::Strict);
    let f = durable_file(&fs, "/db/a", b"old!");
    f.write_at(b"new!", 0, WriteSync::None).unwrap();
    let fork = fs.fork_with(SimConfig { sector_bytes: 4096, ..SimConfig::default() });
    assert_eq!(fork.config().sector_bytes, 4096);
    let g = fork.open(&p("/db/a"), FileOptions::default()).unwrap();
    g.write_at(b"fork", 0, WriteSync::None).unwrap();
    assert_eq!(content(&fs, "/db/a").unwrap(), b"new!", "the original does not see the fork's writes");
    assert_eq!(content(&fork.crash_image_with(0, ResiduePolicy::None).0, "/db/a").unwrap(), b"old!");
    assert_eq!(fork.stats().ops, fs.stats().ops + 1, "the op counter carries on");
}

/// A dw-mode bank on the simulator: `pool_pages` frames of 4 KiB, 8-page batches.
fn dw_bank(fs: &SimFs, mode: syncbench_engine::pages::Mode) -> syncbench_engine::workload::Bank<SimFs> {
    use syncbench_engine::workload::{Bank, BankConfig};
    let mut config = Bank::<SimFs>::store_config(mode);
    config.page_size = 4096;
    config.dw_batch_pages = 8;
    config.buffer_pool_bytes = 32 * 4096; // the minimum (2 × batch + 16): clients must evict dirty pages
    config.wal.segment_bytes = 1 << 20;
    Bank::create(fs.clone(), Path::new("/db"), config, BankConfig { scale: 1, accounts_per_branch: 2000 }).unwrap()
}

fn dw_flush_marks(fs: &SimFs) -> usize {
    fs.marks().iter().filter(|m| m.tag == syncbench_engine::pages::DW_FLUSH_MARK).count()
}

#[test]
fn double_write_flushes_leave_a_dw_flush_mark() {
    use syncbench_engine::pages::Mode;
    let fs = fs(Profile::Strict);
    let bank = dw_bank(&fs, Mode::Dw);
    assert_eq!(dw_flush_marks(&fs), 0, "loading writes pages home directly");
    let mut rng = crate::rng::SimRng::new(1);
    let mut next = || rng.next_u64();
    // No background flusher: clients evict dirty pages themselves, through the single-page region.
    for _ in 0..200 {
        let (_, lsn) = bank.submit(bank.pick(&mut next)).unwrap();
        bank.commit(lsn).unwrap();
    }
    let evictions = bank.store().stats().eviction_writes;
    assert!(evictions > 0, "the small pool forced evictions");
    assert_eq!(dw_flush_marks(&fs) as u64, evictions, "one mark per evicted page's double-write");
    // The checkpoint double-writes the rest in batches, each marked.
    bank.store().checkpoint().unwrap();
    assert!(dw_flush_marks(&fs) as u64 > evictions, "checkpoint batches are marked");

    let other = self::fs(Profile::Strict);
    let fpw = dw_bank(&other, Mode::Fpw);
    for _ in 0..50 {
        let (_, lsn) = fpw.submit(fpw.pick(&mut next)).unwrap();
        fpw.commit(lsn).unwrap();
    }
    fpw.store().checkpoint().unwrap();
    assert_eq!(dw_flush_marks(&other), 0, "no double-write area, no mark");
}

#[test]
fn a_process_crash_keeps_the_page_cache_and_a_later_power_loss_does_not() {
    let fs = fs(Profile::Strict);
    let f = durable_file(&fs, "/db/a", b"old!");
    fs.set_crash_kind(crate::CrashKind::Process);
    fs.set_crash_at_op(Some(fs.stats().ops + 2));
    f.write_at(b"new!", 0, WriteSync::None).unwrap();
    assert!(f.sync_data().is_err(), "the process died at its sync");
    assert!(fs.crashed());
    fs.restart_process();
    assert!(!fs.crashed());
    let g = fs.open(&p("/db/a"), FileOptions::default()).unwrap();
    let mut buf = [0u8; 4];
    g.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"new!", "a new process sees the unsynced write");
    let (image, _) = fs.crash_image_with(0, ResiduePolicy::None);
    assert_eq!(content(&image, "/db/a").unwrap(), b"old!", "it was never durable");
}

#[test]
fn a_crash_can_be_armed_after_the_nth_mark() {
    let fs = fs(Profile::Strict);
    let f = durable_file(&fs, "/db/a", b"x");
    fs.set_crash_after_mark("ack", 2, 1);
    fs.mark("ack");
    f.write_at(b"1", 0, WriteSync::None).unwrap();
    fs.mark("other");
    fs.mark("ack");
    f.write_at(b"2", 0, WriteSync::None).unwrap();
    assert!(f.write_at(b"3", 0, WriteSync::None).is_err(), "the second operation after the second ack");
}

#[test]
fn untorn_writes_beyond_the_device_unit_are_refused() {
    let fs = SimFs::new(SimConfig { atomic_write_max_bytes: 4096, ..SimConfig::default() });
    fs.create_dir_all(Path::new("/db")).unwrap();
    let f = fs.create_new(&p("/db/a"), FileOptions { dsync: false, direct: true }).unwrap();
    assert!(f.write_at(&[1u8; 4096], 4096, WriteSync::AtomicDsync).is_ok());
    let err = f.write_at(&[1u8; 8192], 0, WriteSync::AtomicDsync).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(22), "larger than the unit");
    let err = f.write_at(&[1u8; 4096], 512, WriteSync::AtomicDsync).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(22), "not naturally aligned");
}

#[test]
fn the_write_ahead_rule_flags_a_page_whose_log_is_not_durable_when_it_is_written() {
    use std::sync::Arc;
    let fs = fs(Profile::Strict);
    let log = durable_file(&fs, "/db/log", &[0u8; 16]);
    let data = durable_file(&fs, "/db/data", &[0u8; 8]);
    // Toy format: a page is 8 bytes whose first byte is its LSN; the log is durable to LSN n when its
    // durable byte n - 1 is non-zero.
    fs.set_write_ahead_rule(Some(Arc::new(crate::WriteAheadRule {
        is_page_file: Box::new(|path| path.ends_with("data")),
        page_bytes: 8,
        page_lsn: Box::new(|page| u64::from(page[0])),
        log_durable_to: Box::new(|durable, lsn| {
            durable(Path::new("/db/log")).is_some_and(|bytes| bytes.get(lsn as usize - 1).is_some_and(|b| *b != 0))
        }),
    })));
    log.write_at(&[1u8; 4], 0, WriteSync::None).unwrap();
    data.write_at(&[3u8; 8], 0, WriteSync::None).unwrap();
    assert_eq!(fs.write_ahead_violations().len(), 1, "LSN 3 written while log byte 2 was only cached");
    log.sync_data().unwrap();
    data.write_at(&[4u8; 8], 0, WriteSync::None).unwrap();
    data.write_at(&[0u8; 8], 0, WriteSync::None).unwrap();
    assert_eq!(fs.write_ahead_violations().len(), 1, "durable now; LSN 0 is not logged");
    assert!(fs.write_ahead_violations()[0].contains("LSN 3"), "{:?}", fs.write_ahead_violations());
}

#[test]
fn media_damage_changes_durable_bytes_only_within_the_file() {
    let fs = fs(Profile::Strict);
    durable_file(&fs, "/db/a", b"abcdefgh");
    let (image, _) = fs.crash_image_with(0, ResiduePolicy::None);
    image.damage(&p("/db/a"), 2, b"XY").unwrap();
    image.damage(&p("/db/a"), 7, b"ZZZZ").unwrap();
    assert_eq!(content(&image, "/db/a").unwrap(), b"abXYefgZ", "the size does not grow");
    assert_eq!(image.read_durable(&p("/db/a"), 0, 8).unwrap(), b"abXYefgZ");
    assert_eq!(content(&fs, "/db/a").unwrap(), b"abcdefgh", "the original machine is untouched");
}
