//! Page store + TPC-B workload on real files: clean shutdown and reopen, crash (drop without close) and
//! recovery in every mode, torn pages repaired by full-page images and by the double-write area, and
//! recovery stopping when a torn page cannot be repaired.

mod wal_common;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;
use syncbench_engine::RealStorage;
use syncbench_engine::pages::{DwDesign, Mode, PageError, PageId, StoreConfig, dw, page};
use syncbench_engine::storage::{FileOptions, Storage, StorageFile, WriteSync};
use syncbench_engine::workload::{Bank, BankConfig, RunSpec, Transfer};

const PAGE: usize = 4096;
const ACCOUNTS_FILE: u32 = 2;

fn small_config(mode: Mode) -> StoreConfig {
    let mut c = Bank::<RealStorage>::store_config(mode);
    c.page_size = PAGE;
    c.dw_batch_pages = 8;
    c.buffer_pool_bytes = 40 * PAGE; // smaller than the 50 account pages: evictions happen
    c.wal.segment_bytes = 1 << 20; // small segments: fast to create
    c
}

fn bank_size() -> BankConfig {
    BankConfig { scale: 1, accounts_per_branch: 2000 }
}

fn spec(txns: u64) -> RunSpec {
    RunSpec { clients: 3, duration: None, max_txns: Some(txns), checkpoint_every: Duration::from_millis(50), seed: 7 }
}

fn run(bank: &Bank<RealStorage>, txns: u64) -> Vec<u64> {
    let acked = Mutex::new(Vec::new());
    let report = bank.run(spec(txns), &|id| acked.lock().unwrap().push(id));
    assert_eq!(report.error, None);
    assert_eq!(report.acknowledged, txns);
    let mut acked = acked.into_inner().unwrap();
    acked.sort_unstable();
    acked
}

fn assert_all_present(bank: &Bank<RealStorage>, acked: &[u64]) {
    let mut ids = bank.history_txn_ids().unwrap();
    ids.sort_unstable();
    for id in acked {
        assert!(ids.binary_search(id).is_ok(), "acknowledged transaction {id} lost");
    }
}

fn data_file(dir: &Path, file: u32) -> syncbench_engine::RealFile {
    RealStorage.open(&syncbench_engine::pages::data_file_path(dir, file), FileOptions::default()).unwrap()
}

fn tear_page(dir: &Path, id: PageId) {
    let f = data_file(dir, id.file);
    // Half of a new write landed: the second half of the page is garbage.
    let offset = id.page_no as u64 * PAGE as u64 + PAGE as u64 / 2;
    f.write_at(&[0xA5; PAGE / 2], offset, WriteSync::None).unwrap();
    f.sync_all().unwrap();
}

fn read_home(dir: &Path, id: PageId) -> Vec<u8> {
    let mut buf = vec![0u8; PAGE];
    data_file(dir, id.file).read_exact_at(&mut buf, id.page_no as u64 * PAGE as u64).unwrap();
    buf
}

#[test]
fn clean_shutdown_and_reopen_in_every_mode() {
    for mode in [Mode::None, Mode::Fpw, Mode::Dw] {
        let dir = tempfile::tempdir().unwrap();
        let bank = Bank::create(RealStorage, dir.path(), small_config(mode), bank_size()).unwrap();
        let acked = run(&bank, 300);
        bank.check_invariants().unwrap();
        let stats = bank.store().stats();
        assert!(stats.home_bytes > 0, "{mode:?}: pages were written");
        if mode == Mode::Fpw {
            assert!(stats.fpi_bytes > 0, "fpw logs full-page images");
        } else {
            assert_eq!(stats.fpi_bytes, 0);
        }
        if mode == Mode::Dw {
            assert!(stats.dw_bytes > 0, "dw writes through the double-write area");
        }
        bank.close().unwrap();
        drop(bank);
        let bank = Bank::open(RealStorage, dir.path(), small_config(mode), bank_size()).unwrap();
        bank.check_invariants().unwrap();
        assert_all_present(&bank, &acked);
        assert_eq!(bank.history_txn_ids().unwrap().len(), 300);
        // And it keeps working after reopen, with fresh transaction ids.
        let more = run(&bank, 50);
        assert!(more[0] > *acked.last().unwrap());
        bank.check_invariants().unwrap();
    }
}

#[test]
fn crash_without_close_recovers_every_acknowledged_transaction() {
    for mode in [Mode::None, Mode::Fpw, Mode::Dw] {
        let dir = tempfile::tempdir().unwrap();
        let bank = Bank::create(RealStorage, dir.path(), small_config(mode), bank_size()).unwrap();
        let acked = run(&bank, 400);
        drop(bank); // a process crash: dirty frames are lost, the page cache keeps what was written
        let bank = Bank::open(RealStorage, dir.path(), small_config(mode), bank_size()).unwrap();
        assert!(bank.store().stats().redo_records > 0, "{mode:?}: recovery replayed the log");
        bank.check_invariants().unwrap();
        assert_all_present(&bank, &acked);
        // Recovering twice is harmless.
        drop(bank);
        let bank = Bank::open(RealStorage, dir.path(), small_config(mode), bank_size()).unwrap();
        bank.check_invariants().unwrap();
        assert_all_present(&bank, &acked);
    }
}

/// Change account page 0 after a checkpoint, write it home with another checkpoint, change another
/// page, crash, and tear page 0 on disk (as if its last write had been cut in half).
fn touched_and_torn(mode: Mode, config: &StoreConfig) -> (tempfile::TempDir, Vec<u64>) {
    assert_eq!(config.mode, mode);
    let dir = tempfile::tempdir().unwrap();
    let bank = Bank::create(RealStorage, dir.path(), config.clone(), bank_size()).unwrap();
    let mut acked = run(&bank, 100);
    bank.store().checkpoint().unwrap();
    for delta in [5, -3, 11] {
        let (id, lsn) = bank.submit(Transfer { aid: 0, tid: 0, bid: 0, delta }).unwrap();
        bank.commit(lsn).unwrap();
        acked.push(id);
    }
    bank.store().checkpoint().unwrap();
    let (id, lsn) = bank.submit(Transfer { aid: 1, tid: 1, bid: 0, delta: 2 }).unwrap();
    bank.commit(lsn).unwrap();
    acked.push(id);
    drop(bank);
    tear_page(dir.path(), PageId { file: ACCOUNTS_FILE, page_no: 0 });
    (dir, acked)
}

fn large_pool(mode: Mode) -> StoreConfig {
    let mut config = small_config(mode);
    config.buffer_pool_bytes = 256 * PAGE;
    config
}

#[test]
fn fpw_repairs_a_torn_page_from_its_logged_image() {
    let config = large_pool(Mode::Fpw);
    let (dir, acked) = touched_and_torn(Mode::Fpw, &config);
    let bank = Bank::open(RealStorage, dir.path(), config, bank_size()).unwrap();
    bank.check_invariants().unwrap();
    assert_all_present(&bank, &acked);
}

#[test]
fn none_stops_on_a_torn_page() {
    let config = large_pool(Mode::None);
    let (dir, _) = touched_and_torn(Mode::None, &config);
    let err = Bank::open(RealStorage, dir.path(), config, bank_size()).err().expect("recovery must stop");
    assert!(matches!(&err, PageError::Corruption(why) if why.contains("recovery stopped")), "{err}");
}

#[test]
fn dw_restores_a_torn_home_page_from_a_valid_copy() {
    let config = large_pool(Mode::Dw);
    let (dir, acked) = touched_and_torn(Mode::Dw, &config);
    let bank = Bank::open(RealStorage, dir.path(), config, bank_size()).unwrap();
    assert!(bank.store().stats().dw_restored_pages >= 1);
    bank.check_invariants().unwrap();
    assert_all_present(&bank, &acked);
}

#[test]
fn dw_stops_when_home_and_copy_are_both_bad() {
    let config = large_pool(Mode::Dw);
    let (dir, _) = touched_and_torn(Mode::Dw, &config);
    let f = RealStorage.open(&dir.path().join(dw::DW_FILE_NAME), FileOptions::default()).unwrap();
    let len = f.len().unwrap() as usize;
    // Tear every slot: no valid copy of anything.
    for slot in 0..len / PAGE {
        f.write_at(&[0x5A; 64], (slot * PAGE + PAGE - 100) as u64, WriteSync::None).unwrap();
    }
    let err = Bank::open(RealStorage, dir.path(), config, bank_size()).err().expect("must stop");
    assert!(matches!(&err, PageError::Corruption(why) if why.contains("double-write area has no valid copy")), "{err}");
}

#[test]
fn dw_keeps_a_valid_home_page_newer_than_its_copy() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(Mode::Dw);
    let bank = Bank::create(RealStorage, dir.path(), config.clone(), bank_size()).unwrap();
    run(&bank, 200);
    bank.close().unwrap();
    drop(bank);
    // Make the double-write area hold an older, valid image of account page 0.
    let id = PageId { file: ACCOUNTS_FILE, page_no: 0 };
    let home = read_home(dir.path(), id);
    let home_lsn = page::lsn(&home);
    assert!(home_lsn > 1);
    let mut older = home.clone();
    older[page::HEADER_BYTES + 8] ^= 0xFF; // a different balance
    page::set_lsn(&mut older, home_lsn - 1);
    page::seal(&mut older);
    let f = RealStorage.open(&dir.path().join(dw::DW_FILE_NAME), FileOptions::default()).unwrap();
    f.write_at(&older, 0, WriteSync::None).unwrap();
    let bank = Bank::open(RealStorage, dir.path(), config, bank_size()).unwrap();
    assert_eq!(bank.store().stats().dw_restored_pages, 0);
    bank.check_invariants().unwrap();
    drop(bank);
    let after = read_home(dir.path(), id);
    assert_eq!(page::lsn(&after), home_lsn);
    let balance = page::HEADER_BYTES + 8..page::HEADER_BYTES + 16;
    assert_eq!(after[balance.clone()], home[balance]);
}

#[test]
#[should_panic(expected = "write-ahead rule violated")]
fn writing_a_page_before_its_log_is_durable_trips_the_assertion() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(Mode::None);
    config.faults.wal_rule_skip_flush = true;
    let bank = Bank::create(RealStorage, dir.path(), config, bank_size()).unwrap();
    bank.submit(Transfer { aid: 0, tid: 0, bid: 0, delta: 1 }).unwrap(); // logged, not flushed
    let _ = bank.store().checkpoint();
}

#[test]
fn reopening_with_other_settings_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bank = Bank::create(RealStorage, dir.path(), small_config(Mode::Fpw), bank_size()).unwrap();
    bank.close().unwrap();
    drop(bank);
    let err = Bank::open(RealStorage, dir.path(), small_config(Mode::Dw), bank_size()).err().unwrap();
    assert!(matches!(&err, PageError::Invalid(why) if why.contains("same settings")), "{err}");
}

#[test]
fn fpw_without_images_cannot_repair_the_torn_page() {
    // The same scenario as above with the image logging switched off: recovery must notice and stop,
    // which shows the repair above really came from the logged image.
    let mut config = large_pool(Mode::Fpw);
    config.faults.fpw_skip_image = true;
    let (dir, _) = touched_and_torn(Mode::Fpw, &config);
    let err = Bank::open(RealStorage, dir.path(), config, bank_size()).err().expect("recovery must stop");
    assert!(matches!(&err, PageError::Corruption(why) if why.contains("no full-page image")), "{err}");
}

/// Real storage that records which directories were fsynced.
#[derive(Clone, Default)]
struct DirSyncs(std::sync::Arc<Mutex<Vec<std::path::PathBuf>>>);

impl Storage for DirSyncs {
    type File = syncbench_engine::RealFile;
    fn create_new(&self, path: &Path, opts: FileOptions) -> std::io::Result<Self::File> {
        RealStorage.create_new(path, opts)
    }
    fn open(&self, path: &Path, opts: FileOptions) -> std::io::Result<Self::File> {
        RealStorage.open(path, opts)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        RealStorage.rename(from, to)
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        RealStorage.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.0.lock().unwrap().push(dir.to_path_buf());
        RealStorage.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        RealStorage.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        RealStorage.list(dir)
    }
    fn exists(&self, path: &Path) -> std::io::Result<bool> {
        RealStorage.exists(path)
    }
}

#[test]
fn every_directory_the_store_creates_is_followed_by_a_parent_fsync() {
    let root = tempfile::tempdir().unwrap();
    // Each directory under a parent of its own, so one parent's fsync cannot stand in for another's.
    let (store, wal, dw) = (root.path().join("store"), root.path().join("logs/wal"), root.path().join("area/dw"));
    let mut config = small_config(Mode::Dw);
    config.wal_dir = Some(wal.clone());
    config.dw_dir = Some(dw.clone());
    let storage = DirSyncs::default();
    let bank = Bank::create(storage.clone(), &store, config, bank_size()).unwrap();
    bank.close().unwrap();
    let synced = storage.0.lock().unwrap().clone();
    for created in [&store, &root.path().join("logs"), &wal, &root.path().join("area"), &dw] {
        let parent = created.parent().unwrap().to_path_buf();
        assert!(
            synced.contains(&parent),
            "{} was created but {} never fsynced: {synced:?}",
            created.display(),
            parent.display()
        );
    }
}

/// The log makes the directories it creates durable by itself, not only when the page store made them.
#[test]
fn the_log_alone_fsyncs_the_parent_of_every_directory_it_creates() {
    let root = tempfile::tempdir().unwrap();
    let log_dir = root.path().join("a/b/log");
    let storage = DirSyncs::default();
    let config = syncbench_engine::wal::WalConfig::default();
    let (wal, _) = syncbench_engine::wal::Wal::open(storage.clone(), &log_dir, config).unwrap();
    drop(wal);
    let synced = storage.0.lock().unwrap().clone();
    for parent in [root.path().to_path_buf(), root.path().join("a"), root.path().join("a/b")] {
        assert!(synced.contains(&parent), "{} never fsynced: {synced:?}", parent.display());
    }
}

/// In dw mode with a full pool the flusher double-writes dirty pages just before the clock hand reaches
/// them, even while clean frames are above the low-water mark, but never pages in use (the clock skips
/// them, so writing them ahead would only rewrite hot pages); a pool with empty frames, or another mode,
/// keeps the low-water rule only.
#[test]
fn dw_flusher_writes_ahead_only_what_the_clock_is_about_to_evict() {
    use syncbench_engine::pages::PageStore;
    const FRAMES: u32 = 64; // low water: max(64 / 4, 2 x 8) = 16 clean frames
    for (mode, pool_frames) in [(Mode::Dw, FRAMES), (Mode::Dw, 4 * FRAMES), (Mode::Fpw, FRAMES)] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = large_pool(mode);
        config.dw_batch_pages = 8;
        config.buffer_pool_bytes = pool_frames as usize * PAGE;
        let store = PageStore::create(RealStorage, dir.path(), config).unwrap();
        store.finish_load().unwrap();
        let dirty = |pages: std::ops::Range<u32>| {
            store
                .update(1, |tx| {
                    for n in pages {
                        tx.write(PageId { file: 0, page_no: n }, page::HEADER_BYTES, &[7; 8])?;
                    }
                    Ok(())
                })
                .unwrap();
        };
        // 72 pages on disk, the pool full of clean ones (the small pool holds 64 of them).
        dirty(0..FRAMES);
        dirty(FRAMES..FRAMES + 8);
        store.checkpoint().unwrap();
        // A batch of pages in use: dirty and just referenced. The clock would skip them.
        dirty(40..48);
        assert_eq!(store.flush_ahead().unwrap(), 0, "{mode:?}/{pool_frames}: hot pages are not written ahead");
        // Clients read the other 64 pages round and round: the hand sweeps, clears the reference bits and
        // comes up to the (now cold) dirty pages.
        let others: Vec<u32> = (0..40).chain(48..FRAMES + 8).collect();
        let evictions_before = store.stats().eviction_writes;
        let mut written = 0;
        let mut buf = [0u8; 8];
        for (reads, &n) in others.iter().cycle().take(4 * others.len()).enumerate() {
            store.read(PageId { file: 0, page_no: n }, page::HEADER_BYTES, &mut buf).unwrap();
            written = store.flush_ahead().unwrap();
            if written > 0 {
                assert!(reads >= FRAMES as usize / 2, "{reads} reads: written before the hand came near");
                break;
            }
        }
        if mode == Mode::Dw && pool_frames == FRAMES {
            assert_eq!(written, 8, "the cold dirty batch is double-written before a client must");
            assert_eq!(store.stats().eviction_writes, evictions_before, "no client paid for a dirty victim");
        } else {
            assert_eq!(written, 0, "{mode:?}/{pool_frames}: empty frames or not dw: the low-water rule only");
        }
    }
}

#[test]
fn a_failed_log_sync_poisons_the_store_and_says_so_in_the_type() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let storage = wal_common::FaultyStorage::default();
    let bank = Bank::create(storage.clone(), dir.path(), small_config(Mode::Fpw), bank_size()).unwrap();
    let (_, lsn) = bank.submit(Transfer { aid: 0, tid: 0, bid: 0, delta: 1 }).unwrap();
    bank.commit(lsn).unwrap();
    storage.faults.fail_syncs.store(true, Ordering::SeqCst);
    let (_, lsn) = bank.submit(Transfer { aid: 1, tid: 1, bid: 0, delta: 1 }).unwrap();
    let err = bank.commit(lsn).unwrap_err();
    assert!(matches!(&err, PageError::Wal(wal) if wal.is_poisoned()), "the log's own error, typed: {err}");
    assert!(err.is_poisoned());
    storage.faults.fail_syncs.store(false, Ordering::SeqCst);
    let later = bank.submit(Transfer { aid: 2, tid: 2, bid: 0, delta: 1 }).unwrap_err();
    assert!(matches!(later, PageError::Poisoned { .. }), "the store stays stopped: {later}");
    assert!(later.is_poisoned());
    assert!(bank.store().checkpoint().unwrap_err().is_poisoned(), "no checkpoint after a failed sync");
}

#[test]
fn a_pool_with_every_frame_pinned_is_exhausted_not_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(Mode::None);
    config.buffer_pool_bytes = 32 * PAGE; // the smallest pool: 2 × dw batch + 16
    let bank = Bank::create(RealStorage, dir.path(), config, bank_size()).unwrap();
    // One transaction that writes more pages than the pool has frames.
    let err = bank
        .store()
        .update(0, |tx| {
            for page_no in 0..48 {
                let id = PageId { file: ACCOUNTS_FILE, page_no };
                let mut byte = [0u8; 1];
                tx.read(id, page::HEADER_BYTES, &mut byte)?;
                tx.write(id, page::HEADER_BYTES, &byte)?; // a written page stays pinned until commit
            }
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err, PageError::PoolExhausted), "{err}");
    assert!(!err.is_poisoned(), "a full pool is the caller's problem, not an unknown outcome");
}

fn pipelined(mut config: StoreConfig) -> StoreConfig {
    config.dw_design = DwDesign::Pipelined;
    config
}

/// The pipelined design under the workload with its spooler and sync thread running: pages go home
/// relying on ring copies, a clean reopen and a crash both recover every acknowledged transaction, and a
/// torn home page is restored from the area.
#[test]
fn pipelined_runs_reopens_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let config = pipelined(small_config(Mode::Dw));
    let bank = Bank::create(RealStorage, dir.path(), config.clone(), bank_size()).unwrap();
    let acked = run(&bank, 600);
    bank.check_invariants().unwrap();
    let stats = bank.store().stats();
    assert!(stats.dw_pages_spooled > 0, "pages were spooled ahead: {stats:?}");
    // Whether clients evict dirty pages at all, and how many find their copy durable, depends on the
    // threads' timing (the flusher may keep up with all of them): client evictions are tested step by
    // step below (`a_pipelined_eviction_waits_for_a_double_write_only_when_its_copy_is_not_durable`).
    drop(bank); // crash
    let bank = Bank::open(RealStorage, dir.path(), config.clone(), bank_size()).unwrap();
    bank.check_invariants().unwrap();
    assert_all_present(&bank, &acked);
    bank.close().unwrap();
    drop(bank);
    let (dir, acked) = touched_and_torn(Mode::Dw, &pipelined(large_pool(Mode::Dw)));
    let bank = Bank::open(RealStorage, dir.path(), pipelined(large_pool(Mode::Dw)), bank_size()).unwrap();
    assert!(bank.store().stats().dw_restored_pages >= 1);
    bank.check_invariants().unwrap();
    assert_all_present(&bank, &acked);
}

#[test]
fn reopening_with_the_other_dw_design_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bank = Bank::create(RealStorage, dir.path(), small_config(Mode::Dw), bank_size()).unwrap();
    bank.close().unwrap();
    drop(bank);
    let err = Bank::open(RealStorage, dir.path(), pipelined(small_config(Mode::Dw)), bank_size()).err().unwrap();
    assert!(matches!(&err, PageError::Invalid(why) if why.contains("design 2012")), "{err}");
}

/// A store of 72 pages written home once, with a 64-frame pool: page `P` dirty, the others clean.
/// (Page 40: not among the pages the setup evicts or the checkpoint's last batch, so the area holds no
/// older copy of it that recovery could repair it from.)
const P: PageId = PageId { file: 0, page_no: 40 };

fn store_with_dirty_p(dir: &Path, config: StoreConfig) -> syncbench_engine::pages::PageStore<RealStorage> {
    use syncbench_engine::pages::PageStore;
    let store = PageStore::create(RealStorage, dir, config).unwrap();
    store.finish_load().unwrap();
    let write = |pages: std::ops::Range<u32>, byte: u8| {
        store
            .update(1, |tx| {
                for n in pages {
                    tx.write(PageId { file: 0, page_no: n }, page::HEADER_BYTES, &[byte; 8])?;
                }
                Ok(())
            })
            .unwrap();
    };
    write(0..64, 1);
    write(64..72, 1);
    store.checkpoint().unwrap();
    // In `pipelined` the checkpoint wrote its pages through the ring, and a copy protects its page for the
    // rest of its checkpoint cycle: a second checkpoint ends that cycle, so `P` changed after it has no
    // copy that covers it.
    store.checkpoint().unwrap();
    write(P.page_no..P.page_no + 1, 2);
    store
}

fn pipelined_pool(faults: syncbench_engine::pages::FaultSwitches) -> StoreConfig {
    let mut config = pipelined(small_config(Mode::Dw));
    config.data_files = 1;
    config.buffer_pool_bytes = 64 * PAGE;
    config.faults = faults;
    config
}

/// Read the other pages round and round (the clock hand sweeps) until `until` says stop.
fn sweep(store: &syncbench_engine::pages::PageStore<RealStorage>, mut until: impl FnMut() -> bool) -> bool {
    let mut buf = [0u8; 8];
    let others: Vec<u32> = (0..72).filter(|&n| n != P.page_no).collect();
    for &n in others.iter().cycle().take(6 * others.len()) {
        store.read(PageId { file: 0, page_no: n }, page::HEADER_BYTES, &mut buf).unwrap();
        if until() {
            return true;
        }
    }
    false
}

/// The spooler copies the dirty page once the clock has passed it. Clients then leave it alone while a
/// clean frame is near (a client writing a page home holds the pool lock every transaction waits for),
/// and the checkpoint writes it home relying on that copy: no second copy, and a ring sync only if the
/// copy was not yet durable. (Which victim a client takes: `pool.rs`'s tests; a client eviction with
/// every frame dirty: the next test.)
#[test]
fn pipelined_writes_a_spooled_page_home_relying_on_its_copy() {
    for synced in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_dirty_p(dir.path(), pipelined_pool(Default::default()));
        let mut seq = None;
        let spooled_before = store.stats().dw_pages_spooled;
        assert!(sweep(&store, || {
            seq = store.dw_spool().unwrap();
            seq.is_some()
        }));
        assert_eq!(store.stats().dw_pages_spooled - spooled_before, 1, "only the dirty page is spooled");
        if synced {
            store.dw_sync_ring(seq.unwrap()).unwrap();
        }
        let before = store.stats();
        let evicted = sweep(&store, || store.stats().eviction_writes > before.eviction_writes);
        assert!(!evicted, "synced {synced}: clean frames come first");
        store.checkpoint().unwrap();
        let after = store.stats();
        assert_eq!(after.evictions_waited_for_dw, before.evictions_waited_for_dw);
        assert_eq!((after.dw_pages_spooled, after.dw_bytes), (before.dw_pages_spooled, before.dw_bytes), "no new copy");
        assert_eq!(after.dw_syncs - before.dw_syncs, u64::from(!synced), "a ring sync only for an unsynced copy");
        assert_eq!(after.home_bytes - before.home_bytes, PAGE as u64, "P went home");
        assert_eq!(store.dw_spool().unwrap(), None, "nothing new to spool");
    }
}

/// A client eviction when no frame is clean, step by step (no background threads): a victim with no copy
/// in the ring makes the client spool a batch — the victim and the next evictions — and sync the ring
/// once; the evictions after it find their copies durable and wait for nothing (no double-write, no
/// sync); a victim whose copy is written but not synced costs one ring sync and no double-write.
#[test]
fn a_pipelined_eviction_waits_for_a_double_write_only_when_its_copy_is_not_durable() {
    use syncbench_engine::pages::{PageStore, StoreStats};
    let dir = tempfile::tempdir().unwrap();
    let config = pipelined_pool(Default::default());
    let batch = config.dw_batch_pages as u64;
    let store = PageStore::create(RealStorage, dir.path(), config).unwrap();
    store.finish_load().unwrap();
    let write = |pages: std::ops::Range<u32>| {
        store
            .update(1, |tx| {
                pages.clone().try_for_each(|n| tx.write(PageId { file: 0, page_no: n }, page::HEADER_BYTES, &[3; 8]))
            })
            .unwrap();
    };
    write(0..64);
    store.checkpoint().unwrap();
    store.checkpoint().unwrap(); // a new cycle: the first checkpoint's ring copies cover no later change
    write(0..64); // every frame dirty, none with a covering copy: each eviction has a dirty victim
    // (evictions, evictions that waited for a double-write, double-write syncs, pages spooled,
    // double-write pages written) since `before`.
    let delta = |before: &StoreStats| {
        let s = store.stats();
        (
            s.eviction_writes - before.eviction_writes,
            s.evictions_waited_for_dw - before.evictions_waited_for_dw,
            s.dw_syncs - before.dw_syncs,
            s.dw_pages_spooled - before.dw_pages_spooled,
            s.dw_bytes / PAGE as u64 - before.dw_bytes / PAGE as u64,
        )
    };
    let before = store.stats();
    write(64..65);
    assert_eq!(delta(&before), (1, 1, 1, batch, batch), "no copy: the client spooled a batch and synced it");
    for n in 65..64 + batch as u32 {
        let before = store.stats();
        write(n..n + 1);
        assert_eq!(delta(&before), (1, 0, 0, 0, 0), "page {n}: its copy was durable, nothing waited");
    }
    assert!(store.dw_spool().unwrap().is_some(), "the next batch of evictions is spooled, not synced");
    let before = store.stats();
    write(64 + batch as u32..65 + batch as u32);
    assert_eq!(delta(&before), (1, 1, 1, 0, 0), "copy not durable: one ring sync, no double-write");
}

/// The deliberate bug `dw_home_before_sync` (a home write issued before the ring's sync completed) and
/// the power cut it is exposed by, modelled by hand on real files: every frame dirty with no copy of its
/// page in the area, a batch of the next evictions spooled but not synced, then one eviction. The correct store
/// syncs the ring before that page goes home; the buggy one writes it home at once. Then the power fails
/// right after that home write, losing what was not synced by then (the buggy store's ring batch: zeroed
/// here) and tearing the page written. The correct store restores it from the ring; the buggy one cannot.
#[test]
fn a_home_write_before_the_ring_sync_is_caught_by_recovery() {
    use syncbench_engine::pages::PageStore;
    for bug in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let faults = syncbench_engine::pages::FaultSwitches { dw_home_before_sync: bug, ..Default::default() };
        let config = pipelined_pool(faults);
        let store = store_of_72_pages(dir.path(), config.clone());
        let write = |pages: std::ops::Range<u32>, byte: u8| {
            store
                .update(1, |tx| {
                    pages
                        .clone()
                        .try_for_each(|n| tx.write(PageId { file: 0, page_no: n }, page::HEADER_BYTES, &[byte; 8]))
                })
                .unwrap();
        };
        // Every frame dirty, and no copy of any page anywhere (no checkpoint has written one).
        write(0..64, 2);
        // As in the test above: the first eviction spools and syncs batch 1, the next ones use it, then
        // batch 2 is spooled and not synced.
        let batch = config.dw_batch_pages as u32;
        for n in 64..64 + batch {
            write(n..n + 1, 2);
        }
        let unsynced = store.dw_spool().unwrap().expect("the next evictions are spooled, not synced");
        let homes_before: Vec<Vec<u8>> =
            (0..64).map(|n| read_home(dir.path(), PageId { file: 0, page_no: n })).collect();
        let before = store.stats();
        write(64 + batch..65 + batch, 2);
        let after = store.stats();
        assert_eq!(after.eviction_writes - before.eviction_writes, 1);
        assert_eq!(after.dw_syncs - before.dw_syncs, u64::from(!bug), "bug {bug}: a ring sync before the home write");
        let written: Vec<u32> = (0..64)
            .filter(|&n| read_home(dir.path(), PageId { file: 0, page_no: n }) != homes_before[n as usize])
            .collect();
        assert_eq!(written.len(), 1, "bug {bug}: one page went home");
        let victim = PageId { file: 0, page_no: written[0] };
        drop(store);
        if bug {
            let area = RealStorage.open(&dir.path().join(dw::DW_FILE_NAME), FileOptions::default()).unwrap();
            let position = unsynced as usize % config.dw_ring_batches;
            let batch_bytes = config.dw_batch_pages * PAGE;
            let at = (config.dw_batch_pages + dw::SINGLE_SLOTS) * PAGE + position * batch_bytes;
            area.write_at(&vec![0u8; batch_bytes], at as u64, WriteSync::None).unwrap();
        }
        tear_page(dir.path(), victim);
        match (bug, PageStore::open(RealStorage, dir.path(), config)) {
            (false, Ok(store)) => {
                assert_eq!(store.stats().dw_restored_pages, 1);
                let mut buf = [0u8; 8];
                store.read(victim, page::HEADER_BYTES, &mut buf).unwrap();
                assert_eq!(buf, [2; 8], "the torn page was restored from its ring copy");
            }
            (true, Err(PageError::Corruption(why))) => assert!(why.contains("no valid copy"), "{why}"),
            (bug, other) => panic!("bug {bug}: {:?}", other.map(|_| ())),
        }
    }
}

/// With a pool that never evicts, `pipelined` still runs: the checkpoint's pages go through the ring
/// (spooled, one group sync per batch, home with no data-file sync per batch) rather than the 2012 path
/// (a double-write sync and a data-file sync per batch); and a page torn at home after such a
/// checkpoint is restored from its ring copy.
#[test]
fn a_pipelined_checkpoint_writes_through_the_ring_when_nothing_is_evicted() {
    use syncbench_engine::pages::PageStore;
    let mut syncs_besides_dw = Vec::new();
    for design in [DwDesign::V2012, DwDesign::Pipelined] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = pipelined_pool(Default::default());
        config.dw_design = design;
        config.buffer_pool_bytes = 256 * PAGE;
        let store = PageStore::create(RealStorage, dir.path(), config.clone()).unwrap();
        store.finish_load().unwrap();
        store
            .update(1, |tx| {
                (0..40).try_for_each(|n| tx.write(PageId { file: 0, page_no: n }, page::HEADER_BYTES, &[7; 8]))
            })
            .unwrap();
        let before = store.stats();
        store.checkpoint().unwrap();
        let s = store.stats();
        assert_eq!(s.eviction_writes, 0, "{design:?}: nothing evicted");
        assert_eq!(s.dw_bytes - before.dw_bytes, 40 * PAGE as u64, "{design:?}: every page double-written once");
        let spooled = if design == DwDesign::Pipelined { 40 } else { 0 };
        assert_eq!(s.dw_pages_spooled, spooled, "{design:?}: the checkpoint's pages went through the ring");
        syncs_besides_dw.push((s.data_syncs - s.dw_syncs) - (before.data_syncs - before.dw_syncs));
        drop(store); // crash right after the checkpoint
        // The last page written (2012's batch region holds only the last batch).
        let torn = PageId { file: 0, page_no: 39 };
        tear_page(dir.path(), torn);
        let store = PageStore::open(RealStorage, dir.path(), config).unwrap();
        assert_eq!(store.stats().dw_restored_pages, 1, "{design:?}");
        let mut buf = [0u8; 8];
        store.read(torn, page::HEADER_BYTES, &mut buf).unwrap();
        assert_eq!(buf, [7; 8], "{design:?}");
    }
    // 2012: a data-file sync per batch of 8 and the checkpoint's own; pipelined: the checkpoint's only.
    assert_eq!(syncs_besides_dw, vec![6, 1]);
}

/// Fail-stop for the ring: after a failed ring sync, a later one (a client needing a copy, the sync thread)
/// must not sync again and mark the batch durable — fsync reports an error once, so a retry could
/// "succeed" on copies that were lost, and a page would go home relying on them.
#[test]
fn a_ring_sync_after_a_failed_one_refuses_and_marks_nothing_durable() {
    use std::sync::atomic::Ordering;
    use syncbench_engine::pages::PageStore;
    let dir = tempfile::tempdir().unwrap();
    let storage = wal_common::FaultyStorage::default();
    let store = PageStore::create(storage.clone(), dir.path(), pipelined_pool(Default::default())).unwrap();
    store.finish_load().unwrap();
    let batch = pipelined_pool(Default::default()).dw_batch_pages as u32;
    let write = |pages: std::ops::Range<u32>| {
        store
            .update(1, |tx| {
                pages.clone().try_for_each(|n| tx.write(PageId { file: 0, page_no: n }, page::HEADER_BYTES, &[3; 8]))
            })
            .unwrap()
    };
    // As in the eviction test above: every frame dirty, then evictions until the next batch can be spooled.
    write(0..64);
    store.checkpoint().unwrap();
    store.checkpoint().unwrap();
    write(0..64);
    write(64..64 + batch);
    let seq = store.dw_spool().unwrap().expect("a batch of dirty pages to spool");
    storage.faults.fail_syncs.store(true, Ordering::SeqCst);
    let failed = store.dw_sync_ring(seq);
    assert!(failed.is_err(), "the ring sync fails: {failed:?}");
    storage.faults.fail_syncs.store(false, Ordering::SeqCst);
    let syncs = store.stats().dw_syncs;
    let retried = store.dw_sync_ring(seq).unwrap_err();
    assert!(matches!(retried, PageError::Poisoned { .. }), "no second ring sync: {retried}");
    assert_eq!(store.stats().dw_syncs, syncs, "nothing synced, nothing marked durable");
    assert!(store.dw_spool().unwrap_err().is_poisoned(), "and nothing spooled over the ring");
}

/// A new store of 72 loaded pages (all zero bodies, LSN 0, written home and synced).
fn store_of_72_pages(dir: &Path, config: StoreConfig) -> syncbench_engine::pages::PageStore<RealStorage> {
    let store = syncbench_engine::pages::PageStore::create(RealStorage, dir, config).unwrap();
    for n in 0..72 {
        store.load_page(PageId { file: 0, page_no: n }, |_| {}).unwrap();
    }
    store.finish_load().unwrap();
    store
}

/// A `pipelined` store of 72 loaded pages and a 64-frame pool whose pages 0..64 were all changed and
/// then written home by a checkpoint through the ring: each has a copy taken in that checkpoint's cycle.
fn store_with_cycle_copies(dir: &Path, config: StoreConfig) -> syncbench_engine::pages::PageStore<RealStorage> {
    let store = store_of_72_pages(dir, config);
    write_all(&store, page::HEADER_BYTES, 1);
    store.checkpoint().unwrap();
    store
}

/// Change pages 0..64 at `offset` to `byte` (one transaction).
fn write_all(store: &syncbench_engine::pages::PageStore<RealStorage>, offset: usize, byte: u8) {
    store
        .update(1, |tx| (0..64).try_for_each(|n| tx.write(PageId { file: 0, page_no: n }, offset, &[byte; 8])))
        .unwrap();
}

/// The flusher writes one batch home with every frame dirty; returns a page it wrote, after checking it
/// did so relying on ring copies (no copy taken, no sync of the area).
fn flush_relying_on_copies(store: &syncbench_engine::pages::PageStore<RealStorage>, dir: &Path) -> PageId {
    let homes: Vec<Vec<u8>> = (0..64).map(|n| read_home(dir, PageId { file: 0, page_no: n })).collect();
    let before = store.stats();
    assert!(store.flush_ahead().unwrap() > 0, "every frame dirty: the flusher writes a batch");
    let after = store.stats();
    assert_eq!(
        (after.dw_pages_spooled, after.dw_bytes, after.dw_syncs),
        (before.dw_pages_spooled, before.dw_bytes, before.dw_syncs),
        "no copy, no area sync"
    );
    let n = (0..64)
        .find(|&n| read_home(dir, PageId { file: 0, page_no: n }) != homes[n as usize])
        .expect("a page went home");
    PageId { file: 0, page_no: n }
}

/// The step beyond the 2012 thread: a page changed again after its ring copy, in the same checkpoint
/// cycle, goes home relying on that copy (no new copy, no sync); torn, it is restored from the older copy
/// and the log's redo brings it forward.
#[test]
fn a_page_changed_after_its_copy_goes_home_relying_on_it_until_the_next_checkpoint() {
    use syncbench_engine::pages::PageStore;
    let dir = tempfile::tempdir().unwrap();
    let config = pipelined_pool(Default::default());
    let store = store_with_cycle_copies(dir.path(), config.clone());
    write_all(&store, page::HEADER_BYTES + 8, 2);
    let torn = flush_relying_on_copies(&store, dir.path());
    drop(store);
    tear_page(dir.path(), torn);
    let store = PageStore::open(RealStorage, dir.path(), config).unwrap();
    assert_eq!(store.stats().dw_restored_pages, 1);
    let mut buf = [0u8; 16];
    store.read(torn, page::HEADER_BYTES, &mut buf).unwrap();
    assert_eq!(buf, [[1; 8], [2; 8]].concat()[..], "the copy's change and the one after it");
}

/// ... but not after the next checkpoint began: the log between the copy and that checkpoint's redo LSN
/// is gone, so a page changed in between needs a new copy. The deliberate bug `dw_trust_earlier_cycle`
/// relies on the old copy anyway, and a torn page comes back without the change made in between.
#[test]
fn a_copy_from_an_earlier_checkpoint_cycle_does_not_cover_later_changes() {
    use syncbench_engine::pages::PageStore;
    for bug in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let faults = syncbench_engine::pages::FaultSwitches { dw_trust_earlier_cycle: bug, ..Default::default() };
        let config = pipelined_pool(faults);
        let store = store_with_cycle_copies(dir.path(), config.clone());
        write_all(&store, page::HEADER_BYTES + 8, 2); // between the first copies and the next checkpoint
        let spooled = store.stats().dw_pages_spooled;
        store.checkpoint().unwrap();
        let copied = store.stats().dw_pages_spooled - spooled;
        assert_eq!(copied, if bug { 0 } else { 64 }, "bug {bug}: new copies for the new cycle");
        write_all(&store, page::HEADER_BYTES + 16, 3);
        let torn = flush_relying_on_copies(&store, dir.path());
        drop(store);
        tear_page(dir.path(), torn);
        let store = PageStore::open(RealStorage, dir.path(), config).unwrap();
        let mut buf = [0u8; 24];
        store.read(torn, page::HEADER_BYTES, &mut buf).unwrap();
        let middle = if bug { [0; 8] } else { [2; 8] };
        assert_eq!(buf, [[1; 8], middle, [3; 8]].concat()[..], "bug {bug}");
    }
}

/// Copies taken while recovery's redo runs (a small pool evicts redone pages) hold only the records
/// replayed so far, though the log already ends further on: such a copy must not count as taken at the
/// log's end, or the end-of-recovery checkpoint (whose redo LSN is that end) would let the page go home
/// relying on it, and a later tear would lose the records replayed after it. Here `P` is evicted during
/// redo between its two changes, the store then runs on, `P` goes home again in the cycle after
/// recovery, and tears: both changes and the one after recovery must survive.
#[test]
fn a_copy_taken_during_redo_covers_only_what_redo_had_applied() {
    use syncbench_engine::pages::PageStore;
    let dir = tempfile::tempdir().unwrap();
    let config = pipelined_pool(Default::default());
    // The run before the crash has a pool that holds every page: nothing goes home before the crash, so
    // redo (in the 64-frame pool) has every page dirty and must evict some of them, `P` first.
    let whole = StoreConfig { buffer_pool_bytes: 256 * PAGE, ..config.clone() };
    let store = store_of_72_pages(dir.path(), whole);
    let write = |store: &PageStore<RealStorage>, pages: &[u32], offset: usize, byte: u8| {
        let ((), lsn) = store
            .update(1, |tx| {
                pages.iter().try_for_each(|&n| tx.write(PageId { file: 0, page_no: n }, offset, &[byte; 8]))
            })
            .unwrap();
        store.commit(lsn).unwrap();
        lsn
    };
    let others: Vec<u32> = (0..72).filter(|&n| n != P.page_no).collect();
    let first_change = write(&store, &[P.page_no], page::HEADER_BYTES, 1);
    for chunk in others.chunks(8) {
        write(&store, chunk, page::HEADER_BYTES + 24, 9);
    }
    write(&store, &[P.page_no], page::HEADER_BYTES + 8, 2);
    drop(store); // crash: no checkpoint since the load, so recovery redoes all of it in a 64-frame pool
    assert_eq!(page::lsn(&read_home(dir.path(), P)), 0, "P never went home before the crash");
    let store = PageStore::open(RealStorage, dir.path(), config.clone()).unwrap();
    // Redo evicted `P` between its two changes, through the ring: the area holds a copy of it with only
    // the first.
    let area = std::fs::read(dir.path().join(dw::DW_FILE_NAME)).unwrap();
    let copied_mid_redo =
        area.chunks_exact(PAGE).any(|image| page::check(image, P) == page::PageCheck::Valid { lsn: first_change });
    assert!(copied_mid_redo, "redo evicted P with its first change only");
    // Pages 0..64 dirty again and the flusher writing them home relying on their copies, the clock hand
    // moved on by a read between rounds, until `P` has gone home.
    let home_before = read_home(dir.path(), P);
    let (spooled, area_bytes) = (store.stats().dw_pages_spooled, store.stats().dw_bytes);
    let mut buf = [0u8; 8];
    let went_home = (0..200).any(|i| {
        write(&store, &(0..64).collect::<Vec<_>>(), page::HEADER_BYTES + 16, 3);
        store.flush_ahead().unwrap();
        store.read(PageId { file: 0, page_no: 64 + i % 8 }, page::HEADER_BYTES, &mut buf).unwrap();
        read_home(dir.path(), P) != home_before
    });
    assert!(went_home, "P went home");
    assert_eq!(
        (store.stats().dw_pages_spooled, store.stats().dw_bytes),
        (spooled, area_bytes),
        "relying on a copy it had"
    );
    drop(store);
    tear_page(dir.path(), P);
    let store = PageStore::open(RealStorage, dir.path(), config).unwrap();
    let mut buf = [0u8; 24];
    store.read(P, page::HEADER_BYTES, &mut buf).unwrap();
    assert_eq!(buf, [[1; 8], [2; 8], [3; 8]].concat()[..], "every change to P survives");
}
