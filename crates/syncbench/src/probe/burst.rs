//! A quick fdatasync burst, so the plausibility rule has a measurement when `probe` runs alone.
//!
//! Deliberately tiny and in one function ([`fdatasync_burst`]) so it can be swapped for a call into the
//! runner later. It measures what a recycled WAL segment costs: 8 KiB overwrites of a pre-written file,
//! each followed by fdatasync. A failed write or sync is an error, never a fast result.

use crate::cleanup::{Created, unique_name};
use crate::schema::{CaseResult, LatencyNs, Log2Bucket};
use anyhow::Context;
use std::path::Path;
use std::time::{Duration, Instant};

/// Bytes per write: a PostgreSQL WAL page.
pub const WRITE_SIZE_BYTES: usize = 8192;
/// The burst cycles through this much of a pre-written file (overwrites only, no allocation).
const FILE_SIZE_BYTES: u64 = 2 << 20;
/// Untimed commits first (the first syncs also commit the file's creation).
const WARMUP_COMMITS: u32 = 5;

/// Why a burst did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum BurstError {
    /// The burst file could not be created (read-only file system, no permission): nothing was measured.
    #[error("cannot create a file in {dir}: {source}")]
    Create {
        /// The directory.
        dir: String,
        /// Why.
        source: std::io::Error,
    },
    /// Writing the file to overwrite failed (no space, quota): nothing was measured.
    #[error("cannot prepare the burst file: {0}")]
    Prepare(std::io::Error),
    /// A sync, or a write between syncs, failed: the storage reported an error (never a fast result).
    #[error("{0:#}")]
    Failed(anyhow::Error),
}

/// Time 8 KiB write + fdatasync commits on a new `.syncbench-probe-*` file in `dir` for about `duration`.
pub fn fdatasync_burst(dir: &Path, duration: Duration) -> Result<CaseResult, BurstError> {
    let file = Created::register(dir.join(unique_name("probe-burst")));
    let fd = syncbench_sys::create_new(file.path(), syncbench_sys::OpenFlags::BUFFERED)
        .map_err(|source| BurstError::Create { dir: dir.display().to_string(), source })?;
    let page = vec![0u8; WRITE_SIZE_BYTES];
    for offset in (0..FILE_SIZE_BYTES).step_by(WRITE_SIZE_BYTES) {
        syncbench_sys::pwrite_all(&fd, &page, offset).map_err(BurstError::Prepare)?;
    }
    time_commits(&fd, &page, duration).map_err(BurstError::Failed)
}

fn time_commits(fd: &std::os::fd::OwnedFd, page: &[u8], duration: Duration) -> anyhow::Result<CaseResult> {
    syncbench_sys::fsync(fd).context("fsync of the prepared burst file failed (not retried)")?;
    let mut offset = 0u64;
    let mut commit = |page: &[u8]| -> anyhow::Result<()> {
        syncbench_sys::pwrite_all(fd, page, offset).context("write")?;
        syncbench_sys::fdatasync(fd).context("fdatasync failed (data may be lost; not retried)")?;
        offset = (offset + WRITE_SIZE_BYTES as u64) % FILE_SIZE_BYTES;
        Ok(())
    };
    for _ in 0..WARMUP_COMMITS {
        commit(page)?;
    }
    let mut latencies_ns: Vec<u64> = Vec::new();
    let started = Instant::now();
    while started.elapsed() < duration {
        let t = Instant::now();
        commit(page)?;
        latencies_ns.push(t.elapsed().as_nanos() as u64);
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    Ok(case_result(latencies_ns, elapsed_s))
}

/// A `run`-shaped result for the burst.
fn case_result(mut latencies_ns: Vec<u64>, elapsed_s: f64) -> CaseResult {
    latencies_ns.sort_unstable();
    let ops = latencies_ns.len() as u64;
    let latency_ns = summarize(&latencies_ns);
    let ops_per_s = if elapsed_s > 0.0 { ops as f64 / elapsed_s } else { 0.0 };
    let ci95_rel = if ops > 1 && latency_ns.mean > 0.0 {
        1.96 * latency_ns.stddev / (ops as f64).sqrt() / latency_ns.mean
    } else {
        0.0
    };
    let outlier_limit = latency_ns.p50 + 10 * (latency_ns.p90 - latency_ns.p50);
    let outliers = latencies_ns.iter().filter(|&&l| l > outlier_limit).count();
    CaseResult {
        section: "one_write".into(),
        method: "fdatasync".into(),
        label: "8 KiB overwrite + fdatasync (probe burst)".into(),
        durable: true,
        supported: true,
        error: None,
        write_size_bytes: WRITE_SIZE_BYTES as u64,
        writes_per_commit: 1,
        file_state: "overwrite".into(),
        ops,
        ops_per_s,
        bytes_per_s: ops_per_s * WRITE_SIZE_BYTES as f64,
        latency_ns,
        ci95_rel,
        duration_s: elapsed_s,
        outlier_fraction: if ops > 0 { outliers as f64 / ops as f64 } else { 0.0 },
        histogram_log2: histogram_log2(&latencies_ns),
        ..CaseResult::default()
    }
}

/// Percentiles of sorted latencies (nearest rank).
fn summarize(sorted: &[u64]) -> LatencyNs {
    let Some(&max) = sorted.last() else { return LatencyNs::default() };
    let n = sorted.len();
    let rank = |q: f64| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let mean = sorted.iter().map(|&l| l as f64).sum::<f64>() / n as f64;
    let variance = sorted.iter().map(|&l| (l as f64 - mean).powi(2)).sum::<f64>() / n as f64;
    LatencyNs {
        min: sorted[0],
        mean,
        p50: rank(0.50),
        p90: rank(0.90),
        p99: rank(0.99),
        p999: rank(0.999),
        max,
        stddev: variance.sqrt(),
    }
}

fn histogram_log2(latencies_ns: &[u64]) -> Vec<Log2Bucket> {
    let mut buckets: Vec<Log2Bucket> = Vec::new();
    for &l in latencies_ns {
        let lower_ns = if l == 0 { 0 } else { 1u64 << (63 - l.leading_zeros()) };
        match buckets.iter_mut().find(|b| b.lower_ns == lower_ns) {
            Some(b) => b.count += 1,
            None => buckets.push(Log2Bucket { lower_ns, count: 1 }),
        }
    }
    buckets.sort_by_key(|b| b.lower_ns);
    buckets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_latencies() {
        let lat: Vec<u64> = (1..=1000).collect();
        let s = summarize(&lat);
        assert_eq!((s.min, s.p50, s.p90, s.p99, s.p999, s.max), (1, 500, 900, 990, 999, 1000));
        assert!((s.mean - 500.5).abs() < 1e-9);
        assert_eq!(summarize(&[]), LatencyNs::default());
    }

    #[test]
    fn histogram_buckets_are_powers_of_two() {
        let h = histogram_log2(&[1, 2, 3, 4, 1000, 1023, 1024]);
        let pairs: Vec<(u64, u64)> = h.iter().map(|b| (b.lower_ns, b.count)).collect();
        assert_eq!(pairs, [(1, 1), (2, 2), (4, 1), (512, 2), (1024, 1)]);
    }

    #[test]
    fn burst_on_a_real_dir_counts_commits_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let r = fdatasync_burst(dir.path(), Duration::from_millis(50)).unwrap();
        assert!(r.ops > 0 && r.ops_per_s > 0.0);
        assert_eq!(r.histogram_log2.iter().map(|b| b.count).sum::<u64>(), r.ops);
        assert!(r.latency_ns.min <= r.latency_ns.p50 && r.latency_ns.p50 <= r.latency_ns.max);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "burst file left behind");
    }

    #[test]
    fn burst_in_a_missing_dir_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = fdatasync_burst(&dir.path().join("absent"), Duration::from_millis(10)).unwrap_err();
        assert!(matches!(err, BurstError::Create { .. }), "{err}");
    }
}
