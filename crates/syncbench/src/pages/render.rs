//! `pages`'s table, CSV and Markdown.

use super::{PagesPayload, PagesRow, PagesTable};
use crate::export::Exportable;
use crate::export::openmetrics::{Family, push_quantiles};
use crate::schema::Envelope;
use crate::size::format_size;

impl Exportable for PagesPayload {
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String> {
        to_csv(&doc.payload.pages.rows)
    }
    fn markdown(doc: &Envelope<Self>) -> String {
        to_markdown(&doc.payload.pages)
    }
    fn metrics(doc: &Envelope<Self>) -> Vec<Family> {
        metrics(&doc.payload.pages.rows)
    }
}

/// Transactions per second, commit latency quantiles and syncs per transaction of every row that ran.
fn metrics(rows: &[PagesRow]) -> Vec<Family> {
    let mut tps = Family::new("syncbench_pages_transactions_per_second", "", "Acknowledged transactions per second.");
    let mut latency = Family::new("syncbench_pages_commit_latency_seconds", "seconds", "Commit latency quantile.");
    let mut syncs = Family::new("syncbench_pages_syncs_per_transaction", "", "fsync/fdatasync calls per transaction.");
    let mut data = Family::new("syncbench_pages_data_written_per_transaction_bytes", "bytes", "Page bytes written.");
    for r in rows.iter().filter(|r| r.supported && r.error.is_none() && r.txns > 0) {
        let mut labels =
            vec![("mode", r.mode.name().to_string()), ("buffer_pool_bytes", r.buffer_pool_bytes.to_string())];
        labels.extend(r.dw_design.map(|d| ("dw_design", d.name().to_string())));
        tps.push(labels.clone(), r.tps);
        push_quantiles(&mut latency, &labels, &[("0.5", r.latency_ns.p50), ("0.99", r.latency_ns.p99)]);
        syncs.push(labels.clone(), r.fsyncs_per_txn);
        data.push(labels, r.data_bytes_per_txn);
    }
    vec![tps, latency, syncs, data]
}

/// `-35%` beyond the noise, `~+3%` inside it (the two rows' intervals overlap), `-` without a none row.
fn versus_none(t: &PagesTable, r: &PagesRow) -> String {
    match super::versus_none(t, r) {
        Some(v) if v.beyond_noise == Some(false) => format!("~{:+.0}%", v.pct),
        Some(v) => format!("{:+.0}%", v.pct),
        None => "-".to_string(),
    }
}

pub fn to_markdown(t: &PagesTable) -> String {
    let mut out = format!(
        "TPC-B-like, scale {}, {} clients, {}-byte pages, checkpoint every {} s, dw batch {} pages\n\n",
        t.scale, t.clients, t.page_size_bytes, t.checkpoint_secs, t.dw_batch_pages
    );
    out += "| mode | buffer pool | tps | ± (95%, re-run) | vs none | p50 ms | p99 ms | WAL B/txn | FPI share | data B/txn | fsyncs/txn | checkpoint s | evictions waited for dw | dw syncs/txn | dw pages ahead | rewritten |\n";
    out += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    for r in &t.rows {
        let pool = format_size(r.buffer_pool_bytes);
        if !r.supported {
            out += &format!(
                "| {} | {pool} | unsupported: {} ||||||||||||||\n",
                r.label(),
                r.error.as_deref().unwrap_or("")
            );
            continue;
        }
        out += &format!(
            "| {} | {pool} | {:.0} | {} | {} | {:.2} | {:.2} | {:.0} | {:.0}% | {:.0} | {:.2} | {:.3} | {} | {:.3} | {} | {} |\n",
            r.label(),
            r.tps,
            r.noise_text(),
            versus_none(t, r),
            r.latency_ns.p50 as f64 / 1e6,
            r.latency_ns.p99 as f64 / 1e6,
            r.wal_bytes_per_txn,
            r.fpi_share * 100.0,
            r.data_bytes_per_txn,
            r.fsyncs_per_txn,
            r.checkpoint_duration_s_mean,
            r.evictions_waited_for_dw,
            r.dw_syncs_per_txn,
            r.dw_pages_written_ahead,
            r.dw_pages_rewritten_before_eviction,
        );
    }
    let labels: Vec<String> =
        t.rows.iter().map(|r| format!("{} {}", r.label(), format_size(r.buffer_pool_bytes))).collect();
    out += &crate::blockdev::render::notes(
        labels.iter().map(String::as_str).zip(t.rows.iter().map(|r| r.device.as_ref())),
    );
    out
}

pub fn to_csv(rows: &[PagesRow]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "mode",
        "supported",
        "error",
        "buffer_pool_bytes",
        "tps",
        "latency_ns_p50",
        "latency_ns_p99",
        "wal_bytes_per_txn",
        "fpi_share",
        "data_bytes_per_txn",
        "dw_bytes_per_txn",
        "fsyncs_per_txn",
        "checkpoint_duration_s_mean",
        "checkpoints",
        "eviction_writes",
        "txns",
        "duration_s",
        "dw_design",
        "evictions_waited_for_dw",
        "dw_syncs_per_txn",
        "dw_pages_written_ahead",
        "dw_pages_rewritten_before_eviction",
        "tps_low",
        "tps_high",
        "lower_bound",
    ])?;
    for r in rows {
        w.write_record([
            r.mode.name().to_string(),
            r.supported.to_string(),
            r.error.clone().unwrap_or_default(),
            r.buffer_pool_bytes.to_string(),
            format!("{:.1}", r.tps),
            r.latency_ns.p50.to_string(),
            r.latency_ns.p99.to_string(),
            format!("{:.1}", r.wal_bytes_per_txn),
            format!("{:.4}", r.fpi_share),
            format!("{:.1}", r.data_bytes_per_txn),
            format!("{:.1}", r.dw_bytes_per_txn),
            format!("{:.3}", r.fsyncs_per_txn),
            format!("{:.4}", r.checkpoint_duration_s_mean),
            r.checkpoints.to_string(),
            r.eviction_writes.to_string(),
            r.txns.to_string(),
            format!("{:.3}", r.duration_s),
            r.dw_design.map(|d| d.name().to_string()).unwrap_or_default(),
            r.evictions_waited_for_dw.to_string(),
            format!("{:.4}", r.dw_syncs_per_txn),
            r.dw_pages_written_ahead.to_string(),
            r.dw_pages_rewritten_before_eviction.to_string(),
            r.tps_low.map(|x| format!("{x:.1}")).unwrap_or_default(),
            r.tps_high.map(|x| format!("{x:.1}")).unwrap_or_default(),
            r.lower_bound.to_string(),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

pub fn to_table(t: &PagesTable) -> String {
    let mut out = format!(
        "TPC-B-like, scale {}, {} clients, {}-byte pages, checkpoint every {} s, dw batch {} pages\n\n",
        t.scale, t.clients, t.page_size_bytes, t.checkpoint_secs, t.dw_batch_pages
    );
    // Device accounting (a block device under the store): per transaction at the lowest disk.
    let device = t.rows.iter().any(|r| r.device.is_some());
    let device_heading = if device { format!(" {}", crate::blockdev::render::HEADING) } else { String::new() };
    out += &format!(
        "{:<12} {:>8} {:>9} {:>6} {:>9} {:>9} {:>9} {:>5} {:>10} {:>7} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}{device_heading}\n",
        "mode",
        "pool",
        "tps",
        "±",
        "vs none",
        "p50 ms",
        "p99 ms",
        "fpi%",
        "WAL B/txn",
        "data KiB",
        "fsyncs",
        "ckpt s",
        "ev.wait",
        "dw sync",
        "dw ahead",
        "rewritten"
    );
    for r in &t.rows {
        let pool = format_size(r.buffer_pool_bytes);
        if !r.supported {
            out += &format!("{:<12} {:>8} unsupported: {}\n", r.label(), pool, r.error.as_deref().unwrap_or(""));
            continue;
        }
        let versus = versus_none(t, r);
        let columns =
            if device { format!(" {}", crate::blockdev::render::columns(r.device.as_ref())) } else { String::new() };
        out += &format!(
            "{:<12} {:>8} {:>9.0} {:>6} {:>9} {:>9.2} {:>9.2} {:>5.0} {:>10.0} {:>7.1} {:>8.2} {:>8.3} {:>8} {:>8.3} {:>9} {:>9}{columns}\n",
            r.label(),
            pool,
            r.tps,
            if r.lower_bound { "≥".to_string() } else { r.noise_text() },
            versus,
            r.latency_ns.p50 as f64 / 1e6,
            r.latency_ns.p99 as f64 / 1e6,
            r.fpi_share * 100.0,
            r.wal_bytes_per_txn,
            r.data_bytes_per_txn / 1024.0,
            r.fsyncs_per_txn,
            r.checkpoint_duration_s_mean,
            r.evictions_waited_for_dw,
            r.dw_syncs_per_txn,
            r.dw_pages_written_ahead,
            r.dw_pages_rewritten_before_eviction,
        );
    }
    let labels: Vec<String> =
        t.rows.iter().map(|r| format!("{} {}", r.label(), format_size(r.buffer_pool_bytes))).collect();
    out += &crate::blockdev::render::notes(
        labels.iter().map(String::as_str).zip(t.rows.iter().map(|r| r.device.as_ref())),
    );
    out += &disturbance_notes(t);
    out += "\n± = 95% interval in which a re-run's tps is expected, from the spread between the rounds \
            (modes rotated between rounds); ≥ = disturbed, a lower bound; ~ = inside the noise (the two \
            rows' intervals overlap).\n";
    out += "\nev.wait = client evictions that waited for their own double-write and its sync; dw sync = \
            double-write syncs per transaction; dw ahead / rewritten = pages spooled ahead of eviction \
            (pipelined) and of those, spooled again before their copy was used (wasted work).\n";
    out += "none is unsafe (no torn-page protection); data KiB = page bytes written per transaction \
            (home + double-write); fsyncs per transaction include the log.\n";
    out += &no_checkpoint_note(t);
    out
}

/// One line per disturbance of a row (foreign device I/O, CPU steal), as `run` names them.
fn disturbance_notes(t: &PagesTable) -> String {
    let mut out = String::new();
    for r in &t.rows {
        for d in &r.disturbances {
            out += &format!("{} {}: {}: {}\n", r.label(), format_size(r.buffer_pool_bytes), d.kind, d.detail);
        }
    }
    out
}

/// Modes that completed no checkpoint wrote no data pages and (after the first) no full-page images: their
/// rows compare WAL only, so "vs none" says little about torn-page protection. Said, with what to do.
fn no_checkpoint_note(t: &PagesTable) -> String {
    let without: Vec<String> = t
        .rows
        .iter()
        .filter(|r| r.supported && r.checkpoints == 0)
        .map(|r| format!("{} ({})", r.mode, format_size(r.buffer_pool_bytes)))
        .collect();
    if without.is_empty() {
        return String::new();
    }
    format!(
        "NO CHECKPOINT measured for {}: no data pages or double-write batches were written, so these rows \
         compare the log only — make each of the 3 rounds longer than --checkpoint-secs ({} s), e.g. --secs {}.\n",
        without.join(", "),
        t.checkpoint_secs,
        (t.checkpoint_secs * 1.2 * f64::from(super::ROUNDS)).ceil()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_without_a_checkpoint_are_said_to_compare_the_log_only() {
        let row = |mode: &str, checkpoints| PagesRow {
            mode: syncbench_engine::pages::Mode::from_name(mode).expect("a mode name"),
            supported: true,
            buffer_pool_bytes: 128 << 20,
            tps: 1000.0,
            checkpoints,
            ..PagesRow::default()
        };
        let mut t =
            PagesTable { checkpoint_secs: 5.0, rows: vec![row("none", 1), row("dw", 0)], ..PagesTable::default() };
        let text = to_table(&t);
        assert!(
            text.contains(
                "NO CHECKPOINT measured for dw (128 MiB): no data pages or double-write batches were written"
            ),
            "{text}"
        );
        assert!(text.contains("longer than --checkpoint-secs (5 s), e.g. --secs 18."), "{text}");
        t.rows[1].checkpoints = 2;
        assert!(!to_table(&t).contains("NO CHECKPOINT"));
    }
}
