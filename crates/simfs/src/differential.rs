//! Differential test: the same seeded sequence of operations on simfs and on the real file system must
//! leave the same visible state (names and contents) after every step. Crash behaviour cannot be compared
//! this way; the visible semantics the crash model is built on can.

use crate::{SimFs, SimRng};
use std::path::{Path, PathBuf};
use syncbench_engine::{FileOptions, RealStorage, Storage, StorageFile, WriteSync};

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

/// Every file under `dir` as (name, length, FNV-1a of the content): compact in a failure message.
fn snapshot<S: Storage>(storage: &S, dir: &Path) -> Vec<(String, usize, u64)> {
    let mut out = Vec::new();
    for path in storage.list(dir).unwrap() {
        let f = storage.open(&path, FileOptions::default()).unwrap();
        let mut buf = vec![0; f.len().unwrap() as usize];
        f.read_exact_at(&mut buf, 0).unwrap();
        let hash = buf.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3));
        out.push((path.file_name().unwrap().to_string_lossy().into_owned(), buf.len(), hash));
    }
    out
}

/// Apply one random operation to both; both must succeed or both fail.
fn step<S: Storage>(storage: &S, dir: &Path, op: u64, name: &str, other: &str, rng_bytes: &[u8], offset: u64) -> bool {
    let path = dir.join(name);
    let to = dir.join(other);
    match op {
        0 => storage.create_new(&path, FileOptions::default()).is_ok(),
        1 | 2 => storage
            .open(&path, FileOptions::default())
            .and_then(|f| f.write_at(rng_bytes, offset, if op == 1 { WriteSync::None } else { WriteSync::Dsync }))
            .is_ok(),
        3 => storage.open(&path, FileOptions::default()).and_then(|f| f.set_len(offset)).is_ok(),
        4 => storage.rename(&path, &to).is_ok(),
        5 => storage.remove(&path).is_ok(),
        6 => storage.open(&path, FileOptions::default()).and_then(|f| f.sync_all()).is_ok(),
        _ => storage.sync_dir(dir).is_ok(),
    }
}

#[test]
fn simfs_and_the_real_file_system_agree_on_visible_state() {
    let real_dir = tempfile::tempdir().unwrap();
    let sim = SimFs::default();
    let sim_dir = PathBuf::from("/t");
    sim.create_dir_all(&sim_dir).unwrap();
    let mut rng = SimRng::new(42);
    for i in 0..400 {
        let op = rng.below(8);
        let name = NAMES[rng.below(4) as usize];
        let other = NAMES[rng.below(4) as usize];
        let len = rng.below(3000) as usize;
        let bytes: Vec<u8> = (0..len).map(|j| (i * 7 + j) as u8).collect();
        let offset = rng.below(6000);
        let real_ok = step(&RealStorage, real_dir.path(), op, name, other, &bytes, offset);
        let sim_ok = step(&sim, &sim_dir, op, name, other, &bytes, offset);
        assert_eq!(real_ok, sim_ok, "step {i}: op {op} on {name} (→ {other}) succeeded on one side only");
        assert_eq!(snapshot(&RealStorage, real_dir.path()), snapshot(&sim, &sim_dir), "step {i}: op {op}");
    }
}
