//! Names → files, live and durable. A create, rename or remove changes the live namespace at once and joins
//! a journal of pending operations; a directory fsync (or, in the ext4 profile, a journal commit) moves
//! pending operations into the durable namespace. A crash keeps a prefix (ext4) or an order-respecting
//! subset (strict) of what is still pending; a rename is one operation, so a name is old xor new.

use crate::rng::SimRng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// An inode number (index into the file table).
pub type Ino = usize;

/// One namespace operation waiting for a directory fsync.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NsOp {
    /// A new name for a new file.
    Create { path: PathBuf, ino: Ino },
    /// `from` becomes `to`, replacing whatever `to` named.
    Rename { from: PathBuf, to: PathBuf, ino: Ino },
    /// A name disappears.
    Remove { path: PathBuf, ino: Ino },
}

impl NsOp {
    fn touches_dir(&self, dir: &Path) -> bool {
        let parent_is = |p: &Path| p.parent() == Some(dir);
        match self {
            NsOp::Create { path, .. } | NsOp::Remove { path, .. } => parent_is(path),
            NsOp::Rename { from, to, .. } => parent_is(from) || parent_is(to),
        }
    }

    /// Apply to a namespace map; an operation whose precondition does not hold there is skipped (a subset
    /// can drop the create a later rename depended on; the file system would never show that rename).
    fn apply(&self, names: &mut BTreeMap<PathBuf, Ino>) {
        match self {
            NsOp::Create { path, ino } => {
                names.entry(path.clone()).or_insert(*ino);
            }
            NsOp::Rename { from, to, ino } => {
                if names.get(from) == Some(ino) {
                    names.remove(from);
                    names.insert(to.clone(), *ino);
                }
            }
            NsOp::Remove { path, ino } => {
                if names.get(path) == Some(ino) {
                    names.remove(path);
                }
            }
        }
    }
}

/// How pending operations become durable and what a crash keeps of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JournalModel {
    /// POSIX minimum: only a directory fsync commits, only that directory's operations, and a crash keeps
    /// any order-respecting subset.
    Strict,
    /// ext4/jbd2: one journal; any commit makes everything before it durable, and a crash keeps a prefix.
    Prefix,
}

/// The live and durable namespaces plus the journal of pending operations.
#[derive(Clone, Debug, Default)]
pub struct Namespace {
    live: BTreeMap<PathBuf, Ino>,
    durable: BTreeMap<PathBuf, Ino>,
    pending: Vec<NsOp>,
    /// Directories (durable at once: the harness creates them before the engine runs).
    dirs: BTreeSet<PathBuf>,
}

impl Namespace {
    /// The file a live name points to.
    pub fn lookup(&self, path: &Path) -> Option<Ino> {
        self.live.get(path).copied()
    }

    /// Whether `dir` can hold files (a known directory, or the root / a relative top level).
    pub fn dir_exists(&self, dir: &Path) -> bool {
        dir.as_os_str().is_empty() || dir == Path::new("/") || self.dirs.contains(dir)
    }

    /// Whether a file or directory exists at `path`.
    pub fn exists(&self, path: &Path) -> bool {
        self.live.contains_key(path) || self.dirs.contains(path)
    }

    /// `mkdir -p`.
    pub fn create_dir_all(&mut self, dir: &Path) {
        for ancestor in dir.ancestors() {
            if !ancestor.as_os_str().is_empty() && ancestor != Path::new("/") {
                self.dirs.insert(ancestor.to_path_buf());
            }
        }
    }

    /// The live files directly in `dir`, sorted.
    pub fn list(&self, dir: &Path) -> Vec<PathBuf> {
        self.live.keys().filter(|p| p.parent() == Some(dir)).cloned().collect()
    }

    /// Record an operation: it takes effect now in the live namespace and waits in the journal.
    pub fn record(&mut self, op: NsOp) {
        op.apply(&mut self.live);
        self.pending.push(op);
    }

    /// A directory fsync of `dir`.
    pub fn commit_dir(&mut self, dir: &Path, model: JournalModel) {
        match model {
            JournalModel::Strict => {
                let (now, later): (Vec<NsOp>, Vec<NsOp>) =
                    std::mem::take(&mut self.pending).into_iter().partition(|op| op.touches_dir(dir));
                for op in &now {
                    op.apply(&mut self.durable);
                }
                self.pending = later;
            }
            JournalModel::Prefix => {
                if let Some(last) = self.pending.iter().rposition(|op| op.touches_dir(dir)) {
                    self.commit_prefix(last + 1);
                }
            }
        }
    }

    /// A journal commit (ext4 fsync of a file): every pending operation becomes durable.
    pub fn commit_all(&mut self) {
        self.commit_prefix(self.pending.len());
    }

    fn commit_prefix(&mut self, n: usize) {
        for op in self.pending.drain(..n) {
            op.apply(&mut self.durable);
        }
    }

    /// The file a durable name points to (what a power loss now would keep at least).
    pub fn durable_lookup(&self, path: &Path) -> Option<Ino> {
        self.durable.get(path).copied()
    }

    /// Every live name and its file.
    pub fn live_names(&self) -> impl Iterator<Item = (&PathBuf, &Ino)> {
        self.live.iter()
    }

    /// Pending operations (not yet durable).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// The durable namespace after a power loss, keeping a seeded choice of pending operations.
    /// Returns the names and how many pending operations were kept.
    pub fn crash(&self, model: JournalModel, keep: KeepPending, rng: &mut SimRng) -> (BTreeMap<PathBuf, Ino>, usize) {
        let mut names = self.durable.clone();
        let n = self.pending.len();
        let kept: Vec<&NsOp> = match (keep, model) {
            (KeepPending::None, _) => Vec::new(),
            (KeepPending::All, _) => self.pending.iter().collect(),
            (KeepPending::Random, JournalModel::Prefix) => {
                self.pending.iter().take(rng.below(n as u64 + 1) as usize).collect()
            }
            (KeepPending::Random, JournalModel::Strict) => self.pending.iter().filter(|_| rng.coin()).collect(),
        };
        for op in &kept {
            op.apply(&mut names);
        }
        (names, kept.len())
    }

    /// A namespace holding exactly `names` (all durable) and the same directories.
    pub fn from_durable(names: BTreeMap<PathBuf, Ino>, dirs: &Namespace) -> Namespace {
        Namespace { live: names.clone(), durable: names, pending: Vec::new(), dirs: dirs.dirs.clone() }
    }
}

/// Which pending namespace operations a crash keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepPending {
    /// A seeded prefix or subset.
    Random,
    /// None of them.
    None,
    /// All of them.
    All,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn create_is_durable_only_after_the_directory_fsync() {
        let mut ns = Namespace::default();
        ns.create_dir_all(&p("/d"));
        ns.record(NsOp::Create { path: p("/d/a"), ino: 1 });
        assert_eq!(ns.lookup(&p("/d/a")), Some(1));
        let (names, _) = ns.crash(JournalModel::Strict, KeepPending::None, &mut SimRng::new(0));
        assert!(names.is_empty());
        ns.commit_dir(&p("/other"), JournalModel::Strict);
        assert_eq!(ns.pending_len(), 1, "another directory's fsync does not help");
        ns.commit_dir(&p("/d"), JournalModel::Strict);
        let (names, _) = ns.crash(JournalModel::Strict, KeepPending::None, &mut SimRng::new(0));
        assert_eq!(names.get(&p("/d/a")), Some(&1));
    }

    #[test]
    fn rename_is_old_xor_new_in_every_crash_image() {
        for model in [JournalModel::Strict, JournalModel::Prefix] {
            let mut ns = Namespace::default();
            ns.create_dir_all(&p("/d"));
            ns.record(NsOp::Create { path: p("/d/old"), ino: 1 });
            ns.record(NsOp::Create { path: p("/d/tmp"), ino: 2 });
            ns.commit_dir(&p("/d"), model);
            ns.record(NsOp::Rename { from: p("/d/tmp"), to: p("/d/old"), ino: 2 });
            let mut saw = BTreeSet::new();
            for seed in 0..64 {
                let (names, _) = ns.crash(model, KeepPending::Random, &mut SimRng::new(seed));
                let target = names.get(&p("/d/old")).copied();
                let source = names.get(&p("/d/tmp")).copied();
                match (target, source) {
                    (Some(1), Some(2)) => saw.insert("old"),
                    (Some(2), None) => saw.insert("new"),
                    other => panic!("rename not atomic under {model:?}: {other:?}"),
                };
            }
            assert_eq!(saw.len(), 2, "both outcomes occur under {model:?}");
        }
    }

    #[test]
    fn prefix_model_keeps_only_prefixes_strict_keeps_subsets() {
        let build = || {
            let mut ns = Namespace::default();
            for i in 0..4 {
                ns.record(NsOp::Create { path: p(&format!("/f{i}")), ino: i });
            }
            ns
        };
        let ns = build();
        let mut non_prefix_seen = false;
        for seed in 0..64 {
            let (prefix, _) = ns.crash(JournalModel::Prefix, KeepPending::Random, &mut SimRng::new(seed));
            let kept: Vec<usize> = prefix.values().copied().collect();
            assert_eq!(kept, (0..kept.len()).collect::<Vec<_>>(), "ext4 keeps a journal prefix");
            let (subset, _) = ns.crash(JournalModel::Strict, KeepPending::Random, &mut SimRng::new(seed));
            let kept: Vec<usize> = subset.values().copied().collect();
            non_prefix_seen |= kept != (0..kept.len()).collect::<Vec<_>>();
        }
        assert!(non_prefix_seen, "strict may drop an earlier operation and keep a later one");
    }

    #[test]
    fn prefix_commit_of_one_directory_commits_earlier_operations_elsewhere() {
        let mut ns = Namespace::default();
        ns.record(NsOp::Create { path: p("/x/a"), ino: 1 });
        ns.record(NsOp::Create { path: p("/y/b"), ino: 2 });
        ns.commit_dir(&p("/y"), JournalModel::Prefix);
        assert_eq!(ns.pending_len(), 0);
    }
}
