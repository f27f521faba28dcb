//! `pages --recover`: the other half of the kill -9 test. A run writes [`SETTINGS_FILE`] into its store
//! before loading it; recovery reopens the store a killed run left behind with those settings, checks the
//! bank's invariant and that every transaction id in the `--ack-log` is present, and removes the store.

use super::{CreatedDirs, Plan};
use crate::core::cleanup::Created;
use crate::core::exit::{CheckFailed, usage};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use syncbench_engine::RealStorage;
use syncbench_engine::pages::{DwDesign, Mode};
use syncbench_engine::storage::{FileOptions, Storage, StorageFile, WriteSync};
use syncbench_engine::workload::{Bank, BankConfig};

/// What a store directory was created with, so `--recover` can reopen it.
#[derive(Debug, Serialize, Deserialize)]
struct StoreSettings {
    #[serde(with = "super::mode_name")]
    mode: Mode,
    /// `2012` or `pipelined` (absent in files from before designs existed: 2012).
    #[serde(default, with = "super::design_name")]
    dw_design: Option<DwDesign>,
    page_size: usize,
    dw_batch: usize,
    /// `pipelined`: batches in the ring (absent in files from before `--dw-ring`: the library's 16).
    #[serde(default = "default_ring_batches")]
    dw_ring_batches: usize,
    buffer_pool_bytes: usize,
    scale: u32,
    accounts_per_branch: u32,
    /// The `.syncbench-pages-wal-*` directory created under `--wal-dir` (absolute), if any.
    #[serde(default)]
    wal_dir: Option<PathBuf>,
    /// The `.syncbench-pages-dw-*` directory created under `--dw-dir` (absolute), if any.
    #[serde(default)]
    dw_dir: Option<PathBuf>,
}

fn default_ring_batches() -> usize {
    syncbench_engine::pages::dw_pipelined::DEFAULT_RING_BATCHES
}

pub const SETTINGS_FILE: &str = "syncbench-pages.json";

/// What recovery found.
#[derive(Debug)]
pub struct Recovered {
    /// The store's torn-page protection.
    pub mode: Mode,
    /// Transactions in the recovered history.
    pub txns: usize,
    /// Acknowledged ids checked (all present).
    pub acknowledged: usize,
}

fn absolute(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(dir).with_context(|| format!("cannot resolve {}", dir.display()))
}

/// Write the settings file (file fsynced, then the store directory) so `--recover` can reopen the store.
pub(crate) fn write_settings(
    store_dir: &Path,
    plan: &Plan,
    (mode, design): (Mode, DwDesign),
    pool_bytes: usize,
    created: CreatedDirs<'_>,
) -> anyhow::Result<()> {
    let settings = StoreSettings {
        mode,
        dw_design: Some(design),
        page_size: plan.page_size,
        dw_batch: plan.dw_batch,
        dw_ring_batches: plan.dw_ring_batches,
        buffer_pool_bytes: pool_bytes,
        scale: plan.scale,
        accounts_per_branch: plan.accounts_per_branch,
        wal_dir: created.wal.map(absolute).transpose()?,
        dw_dir: created.dw.map(absolute).transpose()?,
    };
    let path = store_dir.join(SETTINGS_FILE);
    let write = || -> std::io::Result<()> {
        let file = RealStorage.create_new(&path, FileOptions::default())?;
        file.write_at(serde_json::to_string(&settings)?.as_bytes(), 0, WriteSync::None)?;
        file.sync_all()?;
        RealStorage.sync_dir(store_dir)
    };
    write().with_context(|| format!("cannot write {}", path.display()))
}

/// Recover a store a killed run left behind; check the invariant and every acknowledged id; remove it.
/// A store that is not ours is a usage error; a lost transaction or a broken invariant is [`CheckFailed`].
pub fn recover_and_check(store_dir: &Path, ack_log: Option<&Path>) -> anyhow::Result<Recovered> {
    if !is_ours(store_dir, "pages") || !store_dir.is_dir() {
        return Err(usage(format!(
            "--recover {} is not a .syncbench-pages-* directory left by syncbench pages",
            store_dir.display()
        )));
    }
    let text = std::fs::read_to_string(store_dir.join(SETTINGS_FILE))
        .map_err(|e| usage(format!("--recover {}: no {SETTINGS_FILE} ({e})", store_dir.display())))?;
    let settings: StoreSettings = serde_json::from_str(&text).context("reading the store settings")?;
    let mode = settings.mode;
    let design = settings.dw_design.unwrap_or_default();
    let wal_dir =
        settings.wal_dir.as_deref().map(|d| recorded_dir(store_dir, "--wal-dir", "pages-wal", d)).transpose()?;
    let dw_dir = settings.dw_dir.as_deref().map(|d| recorded_dir(store_dir, "--dw-dir", "pages-dw", d)).transpose()?;
    // Everything the killed run left behind is removed once checked (guards drop in reverse order).
    let _remove_after = Created::register(store_dir.to_path_buf());
    let _remove_wal = wal_dir.clone().map(Created::register);
    let _remove_dw = dw_dir.clone().map(Created::register);
    let mut config = Bank::<RealStorage>::store_config(mode);
    config.page_size = settings.page_size;
    config.dw_batch_pages = settings.dw_batch;
    config.dw_design = design;
    config.dw_ring_batches = settings.dw_ring_batches;
    config.buffer_pool_bytes = settings.buffer_pool_bytes;
    config.wal_dir = wal_dir;
    config.dw_dir = dw_dir.filter(|_| mode == Mode::Dw);
    let bank_config = BankConfig { scale: settings.scale, accounts_per_branch: settings.accounts_per_branch };
    let bank = Bank::open(RealStorage, store_dir, config, bank_config)
        .map_err(|e| CheckFailed(format!("recovery failed: {e}")))?;
    bank.check_invariants().map_err(|e| CheckFailed(format!("after recovery: {e}")))?;
    let mut present = bank.history_txn_ids().context("reading the history")?;
    present.sort_unstable();
    let acknowledged = match ack_log {
        Some(path) => read_ack_log(path)?,
        None => Vec::new(),
    };
    if let Some(lost) = acknowledged.iter().find(|id| present.binary_search(id).is_err()) {
        return Err(CheckFailed(format!("acknowledged transaction {lost} is missing after recovery")).into());
    }
    Ok(Recovered { mode, txns: present.len(), acknowledged: acknowledged.len() })
}

/// Whether `path` is named like a directory syncbench made for `what` (`.syncbench-<what>-*`).
fn is_ours(path: &Path, what: &str) -> bool {
    let prefix = format!("{}{what}-", crate::core::cleanup::PREFIX);
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix))
}

/// A directory the settings file says the run created under `flag`: it must still be there, absolute, and
/// one of ours (`.syncbench-<what>-*`), or recovery would silently start an empty log or double-write area.
fn recorded_dir(store_dir: &Path, flag: &str, what: &str, dir: &Path) -> anyhow::Result<PathBuf> {
    if !dir.is_absolute() || !is_ours(dir, what) {
        return Err(usage(format!(
            "--recover {}: {SETTINGS_FILE} names {} as the {flag} directory, which is not an absolute \
             .syncbench-{what}-* path; the settings file is damaged",
            store_dir.display(),
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(usage(format!(
            "--recover {}: the {flag} directory {} the run used is missing or not a directory; mount or \
             restore it and try again",
            store_dir.display(),
            dir.display()
        )));
    }
    Ok(dir.to_path_buf())
}

fn read_ack_log(path: &Path) -> anyhow::Result<Vec<u64>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    // The last line may be cut short by the kill; only complete lines count.
    let complete = if text.ends_with('\n') { &text[..] } else { &text[..text.rfind('\n').map_or(0, |i| i + 1)] };
    complete.lines().map(|l| l.parse::<u64>().with_context(|| format!("bad ack-log line {l:?}"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_log_ignores_a_cut_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("acks");
        std::fs::write(&p, "1\n2\n3").unwrap();
        assert_eq!(read_ack_log(&p).unwrap(), vec![1, 2]);
    }

    #[test]
    fn only_our_directories_are_recovered() {
        assert!(is_ours(Path::new("/x/.syncbench-pages-12-0"), "pages"));
        assert!(!is_ours(Path::new("/x/.syncbench-pages-wal-12-0"), "pages-dw"));
        assert!(!is_ours(Path::new("/x/pages-12-0"), "pages"));
        let dir = tempfile::tempdir().unwrap();
        let err = recover_and_check(dir.path(), None).unwrap_err();
        assert!(err.downcast_ref::<crate::core::exit::UsageError>().is_some(), "{err}");
        assert!(dir.path().exists(), "a directory that is not ours is never removed");
    }
}
