//! Media damage on a crash image: one durable sector gets a flipped bit, loses its last write (it reads
//! what it held when the generation began) or receives a write meant for another sector. The rule
//! afterwards: recovery reports corruption (refuses to open) or returns correct data, never silently
//! less. Damage is aimed only where the engine can tell (see `Target`); a lost write of a whole valid
//! page is invisible to any checksum and is not modelled on pages.

use std::path::PathBuf;
use syncbench_simfs::{SimFs, SimRng};

/// Where damage may strike.
#[derive(Clone, Debug)]
pub struct Target {
    /// The file.
    pub path: PathBuf,
    /// Byte range (whole sectors inside it are candidates).
    pub start: u64,
    /// End of the range (exclusive).
    pub end: u64,
    /// Whether an older version of a sector is detectable here (a log: yes, its records chain by LSN;
    /// a page with its own valid checksum: no).
    pub lost_write_detectable: bool,
}

/// Damage one sector of one target on `image`; `before` is the durable state when the generation began
/// (where a lost write's old content comes from). Returns what was done, or None if nothing differed.
pub fn strike(image: &SimFs, before: &SimFs, targets: &[Target], rng: &mut SimRng) -> Option<String> {
    if targets.is_empty() {
        return None;
    }
    let t = &targets[rng.below(targets.len() as u64) as usize];
    let sector = image.config().sector_bytes;
    let size = image.durable_files().into_iter().find(|(p, _)| *p == t.path)?.1;
    let (first, last) = (t.start.div_ceil(sector), t.end.min(size) / sector);
    if first >= last {
        return None;
    }
    let at = (first + rng.below(last - first)) * sector;
    let now = image.read_durable(&t.path, at, sector as usize).ok()?;
    let (what, bytes) = match rng.below(3) {
        1 if t.lost_write_detectable => {
            let old = before.read_durable(&t.path, at, sector as usize).unwrap_or_else(|_| vec![0; now.len()]);
            ("lost write", old)
        }
        2 if last - first > 1 => {
            let from = (first + rng.below(last - first)) * sector;
            ("misdirected write", image.read_durable(&t.path, from, sector as usize).ok()?)
        }
        _ => {
            let mut flipped = now.clone();
            let bit = rng.below(sector * 8);
            flipped[(bit / 8) as usize] ^= 1 << (bit % 8);
            ("bit flip", flipped)
        }
    };
    if bytes == now {
        return None;
    }
    image.damage(&t.path, at, &bytes).ok()?;
    Some(format!("{what} in {} at byte {at}", t.path.display()))
}
