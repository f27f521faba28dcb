//! One point: a fresh log, client threads committing in a loop, a timed window in the middle.

use super::{CommitPoint, Plan, PointSpec, SEGMENT_BYTES};
use crate::core::exit::usage;
use crate::core::stats::Samples;
use crate::observe::blockdev::account::{Accountant, DeviceAccounting};
use crate::observe::probe::steal::StealMeter;
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};
use syncbench_engine::RealStorage;
use syncbench_engine::wal::{Wal, WalConfig, WalError};

const RECORD_KIND: u8 = 1;
/// Segments the log zero-fills ahead of the write position at open (and again each time one fills).
pub(super) const PREALLOCATE_SEGMENTS: u32 = 2;

/// The phases of a point, set by the timing thread and read by the clients before each commit: the window
/// is where that thread actually read the counters, so the clients' samples, the log's counters and the
/// devices' cover the same commits even when it wakes late on a loaded machine (the clients used to time
/// a nominal window of their own, and a late timing thread then saw a fraction of their commits).
const WARMING_UP: u8 = 0;
const TIMED: u8 = 1;
const DONE: u8 = 2;

fn wal_config(plan: &Plan, spec: &PointSpec) -> WalConfig {
    WalConfig {
        sync_method: plan.method,
        segment_bytes: SEGMENT_BYTES,
        preallocate_segments: PREALLOCATE_SEGMENTS,
        max_spare_segments: 4,
        group_commit: spec.group_commit,
        commit_delay: Duration::from_micros(spec.commit_delay_us),
        commit_siblings: plan.commit_siblings,
        commit_delay_count: spec.commit_delay_count,
        leader_extra_batches: plan.leader_extra_batches,
        rejoin_wait_pct: plan.rejoin_wait_pct,
        ..WalConfig::default()
    }
}

/// What each client thread brings back.
struct ClientTally {
    latency: Samples,
}

/// Run one point on a fresh log in `dir` (removed afterwards).
pub(super) fn point(plan: &Plan, spec: &PointSpec, dir: &Path) -> anyhow::Result<CommitPoint> {
    let (wal, _) = Wal::open(RealStorage, dir, wal_config(plan, spec)).map_err(|e| {
        usage(format!(
            "--method {} does not work in {}: {e}; pick another method",
            plan.method.name(),
            plan.dir.display()
        ))
    })?;
    let wal = Arc::new(wal);
    let warmup = Duration::from_secs_f64((plan.secs * 0.2).clamp(0.05, 1.0));
    let (start_at, secs) = (Instant::now() + warmup, Duration::from_secs_f64(plan.secs));
    let (stop, phase) = (AtomicBool::new(false), AtomicU8::new(WARMING_UP));
    let accountant = Accountant::for_dir(&plan.dir, crate::observe::blockdev::account::is_root());
    let (tallies, window) = std::thread::scope(|scope| {
        let checkpointer = scope.spawn(|| recycle_segments(&wal, &stop));
        let clients: Vec<_> = (0..spec.clients)
            .map(|c| {
                let (wal, phase) = (&wal, &phase);
                scope.spawn(move || run_client(wal, c, plan.record_size, phase))
            })
            .collect();
        let window = time_window(&wal, (start_at, secs), &phase, (&accountant, plan.record_size as u64));
        let tallies: Vec<Result<ClientTally, WalError>> =
            clients.into_iter().map(|h| h.join().expect("client thread panicked")).collect();
        stop.store(true, Ordering::Relaxed);
        let recycled = checkpointer.join().expect("checkpointer thread panicked");
        (tallies.into_iter().collect::<Result<Vec<_>, _>>().and_then(|t| recycled.map(|()| t)), window)
    });
    let tallies = tallies.context("the log failed during the measurement")?;
    drop(wal);
    std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    Ok(summarize(spec, &tallies, &window))
}

/// Counters at the start and end of the timed window.
struct Window {
    duration_s: f64,
    steal_pct: Option<f64>,
    flushes: u64,
    commits: u64,
    flush_ns: u64,
    device: Option<DeviceAccounting>,
    group: syncbench_engine::wal::GroupStats,
}

/// The timed window, read by this thread while the clients commit: the log's counters, steal, and the
/// devices (their counters are read here at the edges, never by a client). It opens at `start_at` or
/// when this thread wakes, lasts `secs` from then, and tells the clients through `phase`.
fn time_window<S: syncbench_engine::Storage>(
    wal: &Wal<S>,
    (start_at, secs): (Instant, Duration),
    phase: &AtomicU8,
    (accountant, record_bytes): (&Accountant, u64),
) -> Window {
    std::thread::sleep(start_at.saturating_duration_since(Instant::now()));
    let device = (!accountant.is_empty()).then(|| accountant.open());
    let (t0, s0, g0, steal) = (Instant::now(), wal.stats(), wal.group_stats(), StealMeter::start());
    phase.store(TIMED, Ordering::Release);
    std::thread::sleep(secs);
    let (t1, s1, g1) = (Instant::now(), wal.stats(), wal.group_stats());
    phase.store(DONE, Ordering::Release);
    let commits = s1.commits - s0.commits;
    let device = device.map(|w| accountant.close(w, commits, record_bytes).report());
    Window {
        device,
        duration_s: (t1 - t0).as_secs_f64(),
        steal_pct: steal.pct(),
        flushes: s1.flushes - s0.flushes,
        commits: s1.commits - s0.commits,
        flush_ns: s1.flush_ns_total - s0.flush_ns_total,
        group: g1.since(&g0),
    }
}

/// A database recycles log segments behind its checkpoints; so does the benchmark, so the disk use stays
/// bounded and new segments come from renamed spares rather than fresh zero-filled files.
fn recycle_segments<S: syncbench_engine::Storage>(wal: &Wal<S>, stop: &AtomicBool) -> Result<(), WalError> {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
        match wal.truncate_before(wal.flushed_lsn()) {
            Ok(_) => {}
            Err(e) if e.is_poisoned() => return Ok(()), // the clients report the failure
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One client: append a record, wait until durable, repeat until the window has closed. Commits that
/// start inside the window are timed.
fn run_client<S: syncbench_engine::Storage>(
    wal: &Wal<S>,
    client: u32,
    record_size: usize,
    phase: &AtomicU8,
) -> Result<ClientTally, WalError> {
    let mut latency = Samples::new();
    let payload: Vec<u8> = (0..record_size).map(|i| (i as u32 ^ client) as u8).collect();
    loop {
        let now = phase.load(Ordering::Acquire);
        if now == DONE {
            return Ok(ClientTally { latency });
        }
        let began = Instant::now();
        let lsn = wal.append(RECORD_KIND, &payload)?;
        wal.commit(lsn)?;
        if now == TIMED {
            let ns = began.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
            latency.record(ns);
        }
    }
}

/// A point from its window. Commits, flushes and time all come from the window's edges, read together by
/// the timing thread; the clients' samples (commits they began inside the same window, see [`TIMED`])
/// give the latency distribution. Counting the samples over a window of the clients' own once made a
/// round 1000x too fast and the naive log 1.8 commits per flush when that thread woke late.
fn summarize(spec: &PointSpec, tallies: &[ClientTally], window: &Window) -> CommitPoint {
    let mut all = Samples::new();
    for t in tallies {
        all.merge(&t.latency);
    }
    let commits = window.commits;
    let duration_s = window.duration_s.max(f64::MIN_POSITIVE);
    CommitPoint {
        clients: spec.clients,
        commit_delay_us: spec.commit_delay_us,
        commit_delay_count: spec.commit_delay_count,
        group_commit: spec.group_commit,
        commits,
        commits_per_s: commits as f64 / duration_s,
        syncs_per_s: window.flushes as f64 / duration_s,
        commits_per_sync: per_flush(window.commits, window.flushes),
        sync_latency_ns_mean: per_flush(window.flush_ns, window.flushes),
        latency_ns: all.latency(),
        duration_s: window.duration_s,
        cpu_steal_pct: window.steal_pct,
        rounds_commits_per_s: Vec::new(),
        ci95_rel: None,
        device: window.device.clone(),
        disturbances: Vec::new(),
        lower_bound: false,
        group: spec.group_commit.then(|| super::group::GroupFlow::from(&window.group)),
    }
}

fn per_flush(total: u64, flushes: u64) -> f64 {
    if flushes == 0 { 0.0 } else { total as f64 / flushes as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_window() {
        let h = Samples::of(&[1000, 2000, 3000, 4000]);
        let spec = PointSpec { clients: 2, commit_delay_us: 0, group_commit: true, commit_delay_count: 0 };
        let p = summarize(
            &spec,
            &[ClientTally { latency: h }],
            &Window {
                duration_s: 2.0,
                steal_pct: Some(12.5),
                flushes: 2,
                commits: 4,
                flush_ns: 300,
                device: None,
                group: Default::default(),
            },
        );
        assert_eq!(p.commits, 4);
        assert_eq!(p.commits_per_s, 2.0);
        assert_eq!(p.syncs_per_s, 1.0);
        assert_eq!(p.commits_per_sync, 2.0);
        assert_eq!(p.sync_latency_ns_mean, 150.0);
        assert_eq!(p.cpu_steal_pct, Some(12.5));
        assert!(p.group.is_some(), "a group point carries where its commits went");
        assert_eq!((p.latency_ns.min, p.latency_ns.max, p.latency_ns.mean), (1000, 4000, 2500.0));
    }

    #[test]
    fn a_window_opened_late_counts_only_its_own_commits() {
        // The clients timed 1000 commits over the nominal window; the timing thread woke late and its
        // window (0.1 s) saw 100 commits and 100 flushes of the naive log.
        let samples = Samples::of(&vec![1000; 1000]);
        let spec = PointSpec { clients: 3, commit_delay_us: 0, group_commit: false, commit_delay_count: 0 };
        let late = Window {
            duration_s: 0.1,
            steal_pct: None,
            flushes: 100,
            commits: 100,
            flush_ns: 0,
            device: None,
            group: Default::default(),
        };
        let p = summarize(&spec, &[ClientTally { latency: samples }], &late);
        assert_eq!((p.commits, p.commits_per_s, p.commits_per_sync), (100, 1000.0, 1.0));
        assert_eq!(p.latency_ns.p50, 1000, "the latency distribution is still the clients'");
        assert_eq!(p.group, None, "the naive log has no group commit to describe");
    }
}
