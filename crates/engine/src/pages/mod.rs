//! The reference page store: checksummed pages, a buffer pool with clock eviction, the write-ahead rule,
//! checkpoints with a two-slot control file, and torn-page protection by full-page writes (`fpw`), a
//! double-write buffer (`dw`) or hardware atomic writes (`atomic`) — or none (`none`, unsafe baseline).
//!
//! Each protection is a module of [`protection`]; the store ([`PageStore`]) calls them where they differ.
//! On-disk formats: docs/format-pages.md. Recovery: [`PageStore::open`].

mod access;
mod background;
pub mod control;
pub mod dw;
mod error;
mod flush;
pub mod log;
pub mod page;
pub mod pool;
pub mod protection;
mod record;
mod recovery;
mod stats;
mod store;
mod tx;

pub use access::DW_FLUSH_MARK;
pub use background::Background;
pub use error::{PageError, PageResult};
pub use log::{LogRecord, LogStats, PageLog};
pub use page::{Lsn, PageId};
pub use protection::{atomic, dw_pipelined};
pub use stats::StoreStats;
pub use store::{PageStore, data_file_path};
pub use tx::Tx;

use std::path::PathBuf;

/// Torn-page protection. The discriminant is the control file's code (docs/format-pages.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Mode {
    /// No protection: a torn page is detected by its checksum and recovery stops. Unsafe baseline.
    None = 0,
    /// Full-page writes: the first change to a page after a checkpoint logs its whole image.
    Fpw = 1,
    /// Double-write buffer: pages are written and synced to a scratch area before going home.
    Dw = 2,
    /// O_DIRECT + RWF_ATOMIC: the device writes each page untorn.
    Atomic = 3,
}

/// Written as the name users type, so tables and messages read `fpw`, not `Fpw`.
impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Mode {
    /// Every mode, in the order reports list them.
    pub const ALL: [Mode; 4] = [Mode::None, Mode::Fpw, Mode::Dw, Mode::Atomic];

    /// The name users type (`none`, `fpw`, `dw`, `atomic`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Fpw => "fpw",
            Mode::Dw => "dw",
            Mode::Atomic => "atomic",
        }
    }

    /// Parse a name users type.
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(code: u8) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.code() == code)
    }
}

/// How the double-write buffer (`dw` mode) writes pages: see docs/pages.md. The discriminant is the
/// control file's code (byte 42; 0 in files written before designs existed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DwDesign {
    /// The 2012 prototype (shared/seeds/003): pages are double-written when they are evicted or
    /// checkpointed, a batch or a single page at a time, each write followed by a sync.
    #[default]
    V2012 = 0,
    /// Pages are spooled into a ring of batches ahead of eviction and of the checkpoint's home writes and
    /// synced by their own thread, several batches in flight; evictions prefer pages whose copy is
    /// durable and then write only home.
    Pipelined = 1,
}

impl DwDesign {
    /// Every design, in the order reports list them.
    pub const ALL: [DwDesign; 2] = [DwDesign::V2012, DwDesign::Pipelined];

    /// The name users type (`2012`, `pipelined`).
    pub fn name(self) -> &'static str {
        match self {
            DwDesign::V2012 => "2012",
            DwDesign::Pipelined => "pipelined",
        }
    }

    /// Parse a name users type.
    pub fn from_name(name: &str) -> Option<DwDesign> {
        DwDesign::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The control file's code.
    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_code(code: u8) -> Option<DwDesign> {
        DwDesign::ALL.into_iter().find(|d| d.code() == code)
    }
}

/// Deliberate bugs for crash tests to prove they catch them. Never set outside tests.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultSwitches {
    /// Do not sync the double-write area before writing pages home.
    pub dw_skip_fsync: bool,
    /// Do not log full-page images in `fpw` mode.
    pub fpw_skip_image: bool,
    /// Do not fsync the data files before recording a checkpoint.
    pub checkpoint_skip_data_fsync: bool,
    /// Do not flush the log before writing a page (the write-ahead rule assertion fires).
    pub wal_rule_skip_flush: bool,
    /// An evicted page goes out without the write-ahead step at all (no flush, no assertion): a page
    /// written before its log record is durable, which only the simulator's own rule check can see.
    pub evict_skip_write_ahead: bool,
    /// In `dw` mode an evicted page's home write is not synced before its single-page double-write slot
    /// is reused.
    pub dw_reuse_slot_before_home_sync: bool,
    /// In `atomic` mode pages are written with plain writes (tearable, not durable on return).
    pub atomic_plain_write: bool,
    /// Recovery's redo starts one record after the checkpoint's redo point.
    pub redo_skips_first_record: bool,
    /// `pipelined`: let a page go home as soon as its copy is written to the ring, before the ring's
    /// sync has completed.
    pub dw_home_before_sync: bool,
    /// `pipelined`: overwrite a ring batch without first syncing the data files written home relying on
    /// its copies (checkpoints and evictions rely on the ring and leave that sync to the recycle).
    pub dw_recycle_before_home_sync: bool,
    /// `pipelined`: a ring copy taken in an earlier checkpoint cycle protects a page changed since (the
    /// log recovery would need to bring the copy forward is gone).
    pub dw_trust_earlier_cycle: bool,
}

/// How a store is laid out and behaves.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Bytes per page: 4096, 8192 or 16384.
    pub page_size: usize,
    /// Bytes of buffer pool (rounded down to whole pages).
    pub buffer_pool_bytes: usize,
    /// Torn-page protection.
    pub mode: Mode,
    /// Pages per double-write batch (and the batch size of the background flusher).
    pub dw_batch_pages: usize,
    /// How the double-write buffer works (`dw` mode only).
    pub dw_design: DwDesign,
    /// `pipelined`: batches in the double-write ring (a ring that holds a checkpoint cycle's copies
    /// recycles them without syncing the data files: docs/pages.md).
    pub dw_ring_batches: usize,
    /// Number of data files (`data-0` …).
    pub data_files: u32,
    /// Where the log lives (default: the store directory).
    pub wal_dir: Option<PathBuf>,
    /// Where the double-write area lives (default: the store directory).
    pub dw_dir: Option<PathBuf>,
    /// The write-ahead log's settings (sync method, segment size, group commit).
    pub wal: crate::wal::WalConfig,
    /// Recovery reads the double-write area this many bytes at a time (at least one page; default 1 MiB).
    pub dw_scan_read_bytes: usize,
    /// Test-only deliberate bugs.
    #[doc(hidden)]
    pub faults: FaultSwitches,
}

impl StoreConfig {
    /// Defaults: 8 KiB pages, 16 MiB pool, 64-page batches.
    pub fn new(mode: Mode, data_files: u32) -> StoreConfig {
        StoreConfig {
            page_size: 8192,
            buffer_pool_bytes: 16 << 20,
            mode,
            dw_batch_pages: 64,
            dw_design: DwDesign::V2012,
            dw_ring_batches: dw_pipelined::DEFAULT_RING_BATCHES,
            data_files,
            wal_dir: None,
            dw_dir: None,
            wal: crate::wal::WalConfig::default(),
            dw_scan_read_bytes: 1 << 20,
            faults: FaultSwitches::default(),
        }
    }

    /// Frames in the buffer pool.
    pub fn pool_frames(&self) -> usize {
        self.buffer_pool_bytes / self.page_size
    }

    /// Check the numbers fit together; the message says what to change.
    pub fn validate(&self) -> Result<(), String> {
        if !page::PAGE_SIZES.contains(&self.page_size) {
            return Err(format!("page size {} is not one of 4096, 8192, 16384", self.page_size));
        }
        if !(1..=1024).contains(&self.dw_batch_pages) {
            return Err(format!("double-write batch of {} pages is not in 1..=1024", self.dw_batch_pages));
        }
        let ring = dw_pipelined::MIN_RING_BATCHES..=dw_pipelined::MAX_RING_BATCHES;
        if !ring.contains(&self.dw_ring_batches) {
            return Err(format!(
                "a double-write ring of {} batches is not in {}..={}",
                self.dw_ring_batches,
                ring.start(),
                ring.end()
            ));
        }
        let min_frames = 2 * self.dw_batch_pages + 16;
        if self.pool_frames() < min_frames {
            return Err(format!(
                "buffer pool of {} bytes holds {} pages; it needs at least {min_frames} (2 × batch + 16)",
                self.buffer_pool_bytes,
                self.pool_frames()
            ));
        }
        Ok(())
    }
}
