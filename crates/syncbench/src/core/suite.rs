//! The plan: which cases `syncbench run` measures, in which order. A strict superset of pg_test_fsync's
//! sections (a-e), plus a write-size sweep (f) and the file state (g).

use crate::core::method::SyncMethod;

pub use crate::core::units::{KIB, MIB};

crate::core::named::named_enum! {
    /// A part of the suite, by its JSON name.
    #[derive(Default, PartialOrd, Ord)]
    pub enum Section ("section") {
        /// (a) one write per commit, every method.
        #[default]
        OneWrite = "one_write",
        /// (b) two writes per commit, every method.
        TwoWrites = "two_writes",
        /// (c) 16 KiB per commit in 1..16 writes, open_sync and open_datasync, buffered and direct.
        WriteSizes = "write_sizes",
        /// (d) fsync on a descriptor that did not write.
        CloseThenSync = "close_then_sync",
        /// (e) writes without any sync.
        NoSync = "no_sync",
        /// (f) write sizes 512 B .. 1 MiB.
        SizeSweep = "size_sweep",
        /// (g) overwrite vs append vs fallocate.
        FileState = "file_state",
    }
}

impl Section {
    /// The letter of the section in issue #2 (a-g), also accepted by `--sections`.
    pub fn letter(self) -> char {
        (b'a' + Section::ALL.iter().position(|s| *s == self).unwrap_or(0) as u8) as char
    }

    /// By name or letter.
    pub fn parse(text: &str) -> Option<Section> {
        Section::ALL.iter().copied().find(|s| s.name() == text || (text.len() == 1 && text.starts_with(s.letter())))
    }

    /// The heading the table prints.
    pub fn title(self, size_bytes: u64) -> String {
        let size = format_size(size_bytes);
        match self {
            Section::OneWrite => format!("Compare sync methods using one {size} write per commit"),
            Section::TwoWrites => format!("Compare sync methods using two {size} writes per commit"),
            Section::WriteSizes => "Compare writing 16 KiB per commit in different write sizes".to_string(),
            Section::CloseThenSync => {
                format!("Is fsync on a descriptor that did not write honoured? ({size}; similar times: yes)")
            }
            Section::NoSync => format!("Non-synced {size} writes"),
            Section::SizeSweep => "Write-size sweep, one write per commit".to_string(),
            Section::FileState => format!("File state: overwrite vs append vs fallocate ({size} writes)"),
        }
    }
}

crate::core::named::named_enum! {
    /// The state of the file region a case writes to, by its JSON name.
    #[derive(Default)]
    pub enum FileState ("file state") {
        /// A zero-filled, fully written file (a recycled WAL segment). Writes wrap around it.
        #[default]
        Overwrite = "overwrite",
        /// An empty file that every write extends.
        Append = "append",
        /// Preallocated, unwritten extents (fio's default): every write converts an extent.
        Fallocate = "fallocate",
    }
}

crate::core::named::named_enum! {
    /// Where the writes of successive commits go.
    #[derive(Default)]
    pub enum Pattern ("access pattern") {
        /// Advance through the file and wrap, as a WAL does (`run`'s default).
        #[default]
        Sequential = "sequential",
        /// Rewrite the same offsets from 0 on every commit, as pg_test_fsync does.
        Rewrite = "rewrite",
    }
}

/// How a commit uses its file descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// One descriptor, opened once for the whole case.
    Steady,
    /// open, write, fsync, close, then open and close again (pg_test_fsync's "write, fsync, close").
    WriteSyncClose,
    /// open, write, close, open, fsync, close (the sync runs on a descriptor that did not write).
    WriteCloseSync,
}

/// One measured case.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Case {
    /// Section it belongs to.
    pub section: Section,
    /// The method.
    pub method: SyncMethod,
    /// What the table shows.
    pub label: String,
    /// Bytes per write.
    pub write_size_bytes: u64,
    /// Writes per commit.
    pub writes_per_commit: u32,
    /// The file region's state.
    pub file_state: FileState,
    /// How descriptors are used.
    pub shape: Shape,
    /// Where successive commits write (append and fallocate always advance, never wrap).
    pub pattern: Pattern,
}

/// etcd's WAL append in its own disk check: 2300 bytes per commit.
pub const ETCD_WAL_WRITE_BYTES: u64 = 2300;

impl Case {
    /// etcd's storage check: 2300-byte writes, each followed by fdatasync, into a preallocated segment
    /// (what `advise` judges etcd's rule on, and `watch`'s third canary).
    pub fn etcd_wal() -> Case {
        Case {
            section: Section::FileState,
            label: "etcd: 2300 B + fdatasync".into(),
            file_state: FileState::Fallocate,
            ..Case::one_write(SyncMethod::Fdatasync, ETCD_WAL_WRITE_BYTES)
        }
    }

    /// One write of `size` per commit on an overwritten file: the basic case (probe's fdatasync burst).
    pub fn one_write(method: SyncMethod, size: u64) -> Case {
        Case {
            section: Section::OneWrite,
            method,
            label: method.name().to_string(),
            write_size_bytes: size,
            writes_per_commit: 1,
            file_state: FileState::Overwrite,
            shape: Shape::Steady,
            pattern: Pattern::Sequential,
        }
    }

    /// 16 KiB per commit in `writes` equal writes (section c).
    pub fn split_16k(method: SyncMethod, writes: u32) -> Case {
        let each = 16 * KIB / u64::from(writes);
        let plural = if writes == 1 { "write" } else { "writes" };
        Case {
            section: Section::WriteSizes,
            label: format!("{writes:>2} × {:>6} {} {plural}", format_size(each), method.name()),
            write_size_bytes: each,
            writes_per_commit: writes,
            ..Case::one_write(method, each)
        }
    }

    /// Bytes one commit writes.
    pub fn bytes_per_commit(&self) -> u64 {
        self.write_size_bytes * u64::from(self.writes_per_commit)
    }
}

/// What the user asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanOptions {
    /// Sections to include (in suite order).
    pub sections: Vec<Section>,
    /// Methods to include; `None` = all.
    pub methods: Option<Vec<SyncMethod>>,
    /// Write size of sections a, b, d, e, g.
    pub size_bytes: u64,
    /// Fewer sizes in the sweep.
    pub quick: bool,
    /// Where successive commits write.
    pub pattern: Pattern,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            sections: Section::ALL.to_vec(),
            methods: None,
            size_bytes: 8 * KIB,
            quick: false,
            pattern: Pattern::Sequential,
        }
    }
}

/// Write sizes of the sweep (f).
pub fn sweep_sizes(quick: bool) -> Vec<u64> {
    if quick { vec![512, 4 * KIB, 64 * KIB, MIB] } else { (9..=20).map(|p| 1u64 << p).collect() }
}

/// The cases, in order.
pub fn plan(opts: &PlanOptions) -> Vec<Case> {
    let mut cases: Vec<Case> = Section::ALL
        .iter()
        .copied()
        .filter(|s| opts.sections.contains(s))
        .flat_map(|s| section_cases(s, opts.size_bytes, opts.quick))
        .map(|c| Case { pattern: opts.pattern, ..c })
        .collect();
    if let Some(methods) = &opts.methods {
        cases.retain(|c| methods.contains(&c.method));
    }
    cases
}

fn section_cases(section: Section, size: u64, quick: bool) -> Vec<Case> {
    use SyncMethod::*;
    let base = |method: SyncMethod| Case { section, ..Case::one_write(method, size) };
    match section {
        Section::OneWrite => SyncMethod::ALL.into_iter().map(base).collect(),
        Section::TwoWrites => SyncMethod::ALL.into_iter().map(|m| Case { writes_per_commit: 2, ..base(m) }).collect(),
        // The O_SYNC/O_DSYNC methods in every split, and one 16 KiB write with fdatasync and fsync as the
        // reference: PostgreSQL writes a commit's contiguous WAL blocks in one call (advise scores it so).
        Section::WriteSizes => [OpenSync, OpenDatasync, OpenSyncDirect, OpenDatasyncDirect]
            .into_iter()
            .flat_map(|m| [1u32, 2, 4, 8, 16].into_iter().map(move |n| Case::split_16k(m, n)))
            .chain([Fdatasync, Fsync].map(|m| Case::split_16k(m, 1)))
            .collect(),
        Section::CloseThenSync => vec![
            Case { label: "write, fsync, close".into(), shape: Shape::WriteSyncClose, ..base(Fsync) },
            Case { label: "write, close, fsync".into(), shape: Shape::WriteCloseSync, ..base(Fsync) },
        ],
        Section::NoSync => [Write, Direct].into_iter().map(base).collect(),
        Section::SizeSweep => [Fdatasync, OpenDatasync, OpenDatasyncDirect]
            .into_iter()
            .flat_map(|m| {
                sweep_sizes(quick).into_iter().map(move |s| {
                    let label = format!("{:>7} {}", format_size(s), m.name());
                    Case { label, write_size_bytes: s, ..base(m) }
                })
            })
            .collect(),
        Section::FileState => [Fsync, Fdatasync]
            .into_iter()
            .flat_map(|m| {
                FileState::ALL.iter().copied().map(move |st| {
                    let label = format!("{:<9} {}", st.name(), m.name());
                    Case { label, file_state: st, ..base(m) }
                })
            })
            .collect(),
    }
}

pub use crate::core::units::{format_size, parse_size};
#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON names of sections and file states are the names `run` has always written (`Section::name`).
    #[test]
    fn section_and_file_state_json_names_are_their_names() {
        for &s in Section::ALL {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s.name()));
            assert_eq!(s.name().parse::<Section>().unwrap(), s);
        }
        for &f in FileState::ALL {
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{}\"", f.name()));
            assert_eq!(serde_json::from_str::<FileState>(&format!("\"{f}\"")).unwrap(), f);
        }
        assert!(serde_json::from_str::<Section>("\"mystery\"").is_err());
        assert_eq!("mystery".parse::<Section>().unwrap_err(), "unknown section 'mystery'");
        assert_eq!("sparse".parse::<FileState>().unwrap_err(), "unknown file state 'sparse'");
        assert_eq!(format!("[{:<9}|{:>8}]", FileState::Append, Section::NoSync), "[append   | no_sync]");
    }

    fn count(cases: &[Case], section: Section) -> usize {
        cases.iter().filter(|c| c.section == section).count()
    }

    #[test]
    fn default_plan_covers_every_section_and_method() {
        let cases = plan(&PlanOptions::default());
        assert_eq!(count(&cases, Section::OneWrite), 14);
        assert_eq!(count(&cases, Section::TwoWrites), 14);
        assert_eq!(count(&cases, Section::WriteSizes), 22);
        assert_eq!(count(&cases, Section::CloseThenSync), 2);
        assert_eq!(count(&cases, Section::NoSync), 2);
        assert_eq!(count(&cases, Section::SizeSweep), 36);
        assert_eq!(count(&cases, Section::FileState), 6);
        for m in SyncMethod::ALL {
            assert!(cases.iter().any(|c| c.method == m && c.section == Section::OneWrite), "{}", m.name());
        }
        // Every case of section c writes 16 KiB per commit.
        assert!(cases.iter().filter(|c| c.section == Section::WriteSizes).all(|c| c.bytes_per_commit() == 16 * KIB));
        // Labels are unique inside a section (the table and the JSON identify cases by them).
        for &s in Section::ALL {
            let mut labels: Vec<_> = cases.iter().filter(|c| c.section == s).map(|c| &c.label).collect();
            let n = labels.len();
            labels.sort();
            labels.dedup();
            assert_eq!(labels.len(), n, "{s:?}");
        }
    }

    #[test]
    fn quick_keeps_every_section_with_fewer_sizes() {
        let quick = plan(&PlanOptions { quick: true, ..PlanOptions::default() });
        assert_eq!(count(&quick, Section::SizeSweep), 12);
        assert!(Section::ALL.iter().all(|s| count(&quick, *s) > 0));
        let sizes: Vec<u64> = sweep_sizes(false);
        assert_eq!((sizes[0], *sizes.last().unwrap(), sizes.len()), (512, MIB, 12));
    }

    #[test]
    fn filters_by_section_and_method() {
        let opts = PlanOptions {
            sections: vec![Section::OneWrite, Section::FileState],
            methods: Some(vec![SyncMethod::Fsync]),
            size_bytes: 4 * KIB,
            quick: false,
            pattern: Pattern::Rewrite,
        };
        let cases = plan(&opts);
        assert_eq!(cases.len(), 1 + 3);
        assert!(cases.iter().all(|c| c.method == SyncMethod::Fsync && c.write_size_bytes == 4 * KIB));
        assert!(cases.iter().all(|c| c.pattern == Pattern::Rewrite));
    }

    #[test]
    fn sections_parse_by_name_and_letter() {
        for (i, s) in Section::ALL.iter().copied().enumerate() {
            assert_eq!(Section::parse(s.name()), Some(s));
            assert_eq!(Section::parse(&((b'a' + i as u8) as char).to_string()), Some(s));
        }
        assert_eq!(Section::parse("h"), None);
        assert_eq!(Section::parse("one"), None);
    }

    #[test]
    fn sizes_parse_and_format() {
        assert_eq!(parse_size("8192"), Some(8192));
        assert_eq!(parse_size("8k"), Some(8192));
        assert_eq!(parse_size("8KiB"), Some(8192));
        assert_eq!(parse_size("1M"), Some(MIB));
        assert_eq!(parse_size("1.5k"), None);
        assert_eq!(parse_size("k"), None);
        assert_eq!(parse_size("3x"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(8192), "8 KiB");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(MIB), "1 MiB");
    }
}
