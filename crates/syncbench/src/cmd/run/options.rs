//! Parsing of `run`'s option values: one-line usage errors (exit code 2) naming what to give instead.

use crate::core::exit::usage;

use crate::core::suite;
use crate::measure::runner::MockTiming;

/// Smallest and largest `--size`.
const SIZE_RANGE_BYTES: (u64, u64) = (512, suite::MIB);

pub(super) fn parse_secs(text: &str) -> anyhow::Result<f64> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(usage(format!("invalid --secs {text:?}: give seconds per case, more than 0 and at most 3600"))),
    }
}

pub(super) fn parse_write_size(text: &str) -> anyhow::Result<u64> {
    let (min, max) = SIZE_RANGE_BYTES;
    match suite::parse_size(text) {
        Some(bytes) if (min..=max).contains(&bytes) => Ok(bytes),
        _ => Err(usage(format!("invalid --size {text:?}: give a write size from 512 to 1M, e.g. 8k or 16384"))),
    }
}

pub(super) fn parse_seed(text: &str) -> anyhow::Result<MockTiming> {
    let seed = text.trim().parse().map_err(|_| usage(format!("invalid --mock-timing {text:?}: give a number")))?;
    Ok(MockTiming { seed })
}
