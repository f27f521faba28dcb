//! The lab's text output: the profile table, a cut's report, the device's counters.

use super::model::Stats;
use super::profile;
use std::fmt::Write;

/// `lab stats`' first line: the profile, the parameters in force (the server's own: `lab set` may have
/// changed them since `up`), the file system and the mount point.
#[cfg(feature = "fuse")]
pub fn stats_header(state: &super::control::State, stats: &Stats) -> String {
    let params = stats.params.as_ref().unwrap_or(&state.params);
    format!("{} ({}) {} at {}", state.profile, profile::describe(params), state.fs, state.mount.display())
}

/// Every profile with its numbers and source.
pub fn profiles() -> String {
    let mut out = String::new();
    for p in profile::all() {
        let d = &p.params;
        let bw = d.bandwidth_bytes_per_s.map_or("unlimited".to_string(), |b| format!("{} MB/s", b / 1_000_000));
        let _ = write!(
            out,
            "{:<18} {:<13} flush {:>6} µs  write {:>4} µs  {:>10}  cache {:>4} MiB\n    {}\n    source: {}\n",
            p.name,
            d.honesty.name(),
            d.flush_ns / 1000,
            d.write_ns / 1000,
            bw,
            d.cache_bytes >> 20,
            p.class,
            p.source
        );
    }
    let c = &profile::STACK_COST;
    let _ = write!(
        out,
        "\nthe stack's own cost (FUSE, loop device, model), on top of every profile's numbers:\n    \
         write {} µs, flush {} µs; an 8 KiB write + fdatasync {} µs on `zero`: the fastest disk the lab can\n    \
         stand for commits in about that\n    measured: {}\n",
        c.write_us, c.flush_us, c.commit_8k_us, c.measured
    );
    out
}

/// What one cut did: the cache's losses and how the file system came back.
#[cfg(feature = "fuse")]
pub fn cut(outcome: &super::stack::CutOutcome) -> String {
    let d = &outcome.device;
    let mut out = format!("power cut (seed {}) and reboot in {} ms:\n", d.seed, outcome.reboot_ms);
    let _ = writeln!(
        out,
        "  cache held {} writes ({} acknowledged); {} reached the disk before the cut, {} of the rest were overwritten by those",
        d.cached_writes, d.acknowledged_writes, d.destaged_writes, d.superseded_writes
    );
    let _ = writeln!(
        out,
        "  the device lost {} writes, {} bytes: {} acknowledged, {} after a flush had reported them durable",
        d.lost_writes, d.lost_bytes, d.lost_acknowledged, d.lost_after_flush
    );
    let f = &outcome.files;
    let _ = writeln!(
        out,
        "  the page cache lost {} bytes of file data: {} of {} files shorter, {} gone (writes not yet synced die with the power)",
        f.bytes_lost, f.files_shrunk, f.files_before, f.files_gone
    );
    if let Some(a) = &outcome.aim {
        let _ = match &d.aimed_at {
            Some(w) if a.met => writeln!(
                out,
                "  aimed: cut as a {}-byte write at byte {} arrived, after {} ms ({})",
                w.len_bytes,
                w.offset,
                a.waited_ms,
                if w.torn { "torn below" } else { "within one untorn unit: kept whole or lost whole" }
            ),
            _ => writeln!(
                out,
                "  aimed: no write of at least {} bytes outside a sequential stream came in {} ms; cut then",
                a.aim.min_write_bytes, a.waited_ms
            ),
        };
    }
    if let Some(t) = &d.torn {
        let _ = writeln!(
            out,
            "  torn: the {}-byte write at byte {} kept its first {} bytes ({} of its {} units of {} bytes)",
            t.len_bytes, t.offset, t.persisted_bytes, t.units_persisted, t.units, t.unit_bytes
        );
    }
    if let Some(tool) = &outcome.repaired_with {
        let _ = writeln!(out, "  the file system did not mount after the cut; repaired with {tool}");
    }
    if outcome.detached_lazily {
        out.push_str("  open files kept the old mount busy: it was detached lazily (its users now get EIO)\n");
    }
    let _ = writeln!(out, "  mounted again on {}", outcome.loop_device);
    out
}

/// The device's counters and latency summaries under a one-line description of the lab.
pub fn stats(header: &str, stats: &Stats) -> String {
    let c = &stats.counters;
    let mut out = format!("{header}\n");
    let _ = writeln!(out, "  writes {}  bytes {}  reads {}", c.writes, c.write_bytes, c.reads);
    let _ = writeln!(
        out,
        "  flushes {} ({} with nothing to write)  FUA writes {}",
        c.flushes, c.empty_flushes, c.fua_writes
    );
    let _ = writeln!(
        out,
        "  background destages {}  in cache now {} bytes  power cuts {}",
        c.background_destages, c.cached_bytes, c.cuts
    );
    let latencies = [
        ("write", stats.writes_acknowledged, &stats.write_latency_ns),
        ("flush", stats.flushes_completed, &stats.flush_latency_ns),
    ];
    for (name, n, l) in latencies {
        let _ = writeln!(
            out,
            "  {name} latency charged: n {n}  mean {:.1} µs  p50 {:.1}  p99 {:.1}  max {:.1}",
            l.mean / 1e3,
            l.p50 as f64 / 1e3,
            l.p99 as f64 / 1e3,
            l.max as f64 / 1e3
        );
    }
    let late = &stats.reply_late_ns;
    let _ = writeln!(
        out,
        "  replies sent after their charged time by (the server's delay): p50 {:.1} µs  p90 {:.1}  p99 {:.1}  max {:.1}",
        late.p50 as f64 / 1e3,
        late.p90 as f64 / 1e3,
        late.p99 as f64 / 1e3,
        late.max as f64 / 1e3
    );
    let q = &stats.queue_depth_during_flush;
    let _ = writeln!(
        out,
        "  requests in flight while a flush ran (each flush's most at once, itself included): median {}  p90 {}  max {}  over {} flushes",
        q.p50, q.p90, q.max, q.flushes
    );
    for cut in &stats.cuts {
        let _ = writeln!(
            out,
            "  cut seed {}: lost {} writes ({} after a flush)",
            cut.seed, cut.lost_writes, cut.lost_after_flush
        );
    }
    out
}

#[cfg(all(test, feature = "fuse"))]
mod cut_tests {
    use super::super::model::CutReport;
    use super::super::stack::{CutOutcome, FilesLost};

    #[test]
    fn a_cut_says_what_the_device_and_the_page_cache_lost() {
        let outcome = CutOutcome {
            device: CutReport { seed: 7, cached_writes: 3, acknowledged_writes: 3, ..CutReport::default() },
            repaired_with: None,
            detached_lazily: false,
            loop_device: "/dev/loop3".into(),
            reboot_ms: 412,
            files: FilesLost { files_before: 2, files_shrunk: 1, files_gone: 0, bytes_lost: 204_800 },
            aim: None,
        };
        assert_eq!(
            super::cut(&outcome),
            "power cut (seed 7) and reboot in 412 ms:
  cache held 3 writes (3 acknowledged); 0 reached the disk before the cut, 0 of the rest were overwritten by those
  the device lost 0 writes, 0 bytes: 0 acknowledged, 0 after a flush had reported them durable
  the page cache lost 204800 bytes of file data: 1 of 2 files shorter, 0 gone (writes not yet synced die with the power)
  mounted again on /dev/loop3
"
        );
    }
}
