//! `pages`'s table, CSV and Markdown.

use super::{PagesPayload, PagesRow, PagesTable};
use crate::core::export::Exportable;
use crate::core::export::openmetrics::{Family, push_quantiles};
use crate::core::schema::Envelope;
use crate::core::units::format_size;

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
    fn partial(&self) -> bool {
        self.partial
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

/// How a table words its cells: the text table pads them into columns, Markdown spells them out.
#[derive(Clone, Copy, PartialEq)]
enum Style {
    Text,
    Markdown,
}

/// The line above both tables.
fn workload_line(t: &PagesTable) -> String {
    let ring = t.dw_ring_batches.map_or(String::new(), |batches| {
        let bytes = (batches * t.dw_batch_pages * t.page_size_bytes) as u64;
        format!(", dw ring {batches} batches ({})", crate::core::units::format_size(bytes))
    });
    format!(
        "TPC-B-like, scale {}, {} clients, {}-byte pages, checkpoint every {} s, dw batch {} pages{ring}\n\n",
        t.scale,
        t.clients,
        t.page_size_bytes,
        crate::core::units::format_secs(t.checkpoint_secs),
        t.dw_batch_pages
    )
}

/// The cells of a row that ran, in column order, for both tables. They differ in four places: the text
/// table shows a lower bound as `≥` alone, the FPI share (without `%`) before the WAL bytes, and the data
/// written in KiB; Markdown says `≥ (disturbed)`, has the WAL bytes first and the data in bytes.
fn cells(t: &PagesTable, r: &PagesRow, style: Style) -> Vec<String> {
    let text = style == Style::Text;
    let ms = |ns: u64| format!("{:.2}", ns as f64 / 1e6);
    let wal = format!("{:.0}", r.wal_bytes_per_txn);
    let fpi = format!("{:.0}{}", r.fpi_share * 100.0, if text { "" } else { "%" });
    let (fpi_or_wal, wal_or_fpi) = if text { (fpi, wal) } else { (wal, fpi) };
    vec![
        r.label(),
        format_size(r.buffer_pool_bytes),
        format!("{:.0}", r.tps),
        if text && r.lower_bound { "≥".to_string() } else { r.noise_text() },
        versus_none(t, r),
        ms(r.latency_ns.p50),
        ms(r.latency_ns.p99),
        fpi_or_wal,
        wal_or_fpi,
        if text { format!("{:.1}", r.data_bytes_per_txn / 1024.0) } else { format!("{:.0}", r.data_bytes_per_txn) },
        format!("{:.2}", r.fsyncs_per_txn),
        format!("{:.3}", r.checkpoint_duration_s_mean),
        r.evictions_waited_for_dw.to_string(),
        format!("{:.3}", r.dw_syncs_per_txn),
        r.dw_pages_written_ahead.to_string(),
        r.dw_pages_rewritten_before_eviction.to_string(),
    ]
}

/// The device notes under either table (empty without device accounting).
fn device_notes(t: &PagesTable) -> String {
    let labels: Vec<String> =
        t.rows.iter().map(|r| format!("{} {}", r.label(), format_size(r.buffer_pool_bytes))).collect();
    crate::observe::blockdev::render::notes(
        labels.iter().map(String::as_str).zip(t.rows.iter().map(|r| r.device.as_ref())),
    )
}

pub fn to_markdown(t: &PagesTable) -> String {
    let mut out = workload_line(t);
    out += "| mode | buffer pool | tps | 95% re-run | vs none | p50 ms | p99 ms | WAL B/txn | FPI share | data B/txn | fsyncs/txn | checkpoint s | evictions waited for dw | dw syncs/txn | dw pages ahead | rewritten |\n";
    out += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    for r in &t.rows {
        if r.supported {
            out += &format!("| {} |\n", cells(t, r, Style::Markdown).join(" | "));
        } else {
            let (label, pool, error) = (r.label(), format_size(r.buffer_pool_bytes), r.error.as_deref().unwrap_or(""));
            out += &format!("| {label} | {pool} | unsupported: {error} ||||||||||||||\n");
        }
    }
    out + &device_notes(t)
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

/// The text table's headings and widths: the first column left-aligned, the others right.
const TEXT_COLUMNS: [(&str, usize); 16] = [
    ("mode", 12),
    ("pool", 8),
    ("tps", 9),
    ("re-run", 10),
    ("vs none", 9),
    ("p50 ms", 9),
    ("p99 ms", 9),
    ("fpi%", 5),
    ("WAL B/txn", 10),
    ("data KiB", 7),
    ("fsyncs", 8),
    ("ckpt s", 8),
    ("ev.wait", 8),
    ("dw sync", 8),
    ("dw ahead", 9),
    ("rewritten", 9),
];

/// `cells` padded to [`TEXT_COLUMNS`], one space apart.
fn text_line<S: AsRef<str>>(cells: impl IntoIterator<Item = S>) -> String {
    let padded = TEXT_COLUMNS.iter().zip(cells).enumerate().map(|(i, ((_, width), cell))| match i {
        0 => format!("{:<width$}", cell.as_ref()),
        _ => format!("{:>width$}", cell.as_ref()),
    });
    padded.collect::<Vec<_>>().join(" ")
}

pub fn to_table(t: &PagesTable) -> String {
    let mut out = workload_line(t);
    // Device accounting (a block device under the store): per transaction at the lowest disk.
    let device = t.rows.iter().any(|r| r.device.is_some());
    let device_heading = if device { format!(" {}", crate::observe::blockdev::render::HEADING) } else { String::new() };
    out += &format!("{}{device_heading}\n", text_line(TEXT_COLUMNS.map(|(heading, _)| heading)));
    for r in &t.rows {
        if !r.supported {
            let (label, pool, error) = (r.label(), format_size(r.buffer_pool_bytes), r.error.as_deref().unwrap_or(""));
            out += &format!("{label:<12} {pool:>8} unsupported: {error}\n");
            continue;
        }
        let columns = if device {
            format!(" {}", crate::observe::blockdev::render::columns(r.device.as_ref()))
        } else {
            String::new()
        };
        out += &format!("{}{columns}\n", text_line(cells(t, r, Style::Text)));
    }
    out += &device_notes(t);
    out += &disturbance_notes(t);
    out += "\nre-run = 95% interval in which a re-run's tps is expected (±, or ×/÷ a factor when wider than \
            ±50%), from the spread between the rounds (modes rotated between rounds); ≥ = disturbed, a lower bound; ~ = inside the noise (the two \
            rows' intervals overlap).\n";
    out += "\nev.wait = client evictions that waited for their own double-write and its sync; dw sync = \
            double-write syncs per transaction; dw ahead / rewritten = pages spooled ahead of eviction \
            (pipelined) and of those, spooled again in the cycle of their earlier copy, recycled first (wasted work).\n";
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
        crate::core::units::format_secs(t.checkpoint_secs),
        (t.checkpoint_secs * 1.2 * f64::from(super::ROUNDS)).ceil()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_line_gives_the_ring_only_for_pipelined_rows() {
        let t = PagesTable {
            scale: 10,
            clients: 8,
            page_size_bytes: 8192,
            checkpoint_secs: 5.0,
            dw_batch_pages: 64,
            ..Default::default()
        };
        assert!(!workload_line(&t).contains("ring"));
        let t = PagesTable { dw_ring_batches: Some(512), ..t };
        assert!(
            workload_line(&t).contains("dw batch 64 pages, dw ring 512 batches (256 MiB)\n"),
            "{}",
            workload_line(&t)
        );
    }

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

    /// A table with every kind of row: measured with an interval, inside the noise of none, disturbed (a
    /// lower bound, with device accounting and a disturbance), without an interval, unsupported.
    fn every_kind_of_row() -> PagesTable {
        use syncbench_engine::pages::{DwDesign, Mode};
        let measured = |mode, tps: f64, low: f64, high: f64| PagesRow {
            mode,
            supported: true,
            buffer_pool_bytes: 128 << 20,
            tps,
            tps_low: Some(low),
            tps_high: Some(high),
            latency_ns: crate::core::schema::LatencyNs { p50: 1_234_567, p99: 9_876_543, ..Default::default() },
            wal_bytes_per_txn: 412.6,
            fpi_share: 0.237,
            data_bytes_per_txn: 12_345.6,
            dw_bytes_per_txn: 6_172.8,
            fsyncs_per_txn: 1.046,
            checkpoint_duration_s_mean: 0.4321,
            checkpoints: 3,
            eviction_writes: 17,
            txns: 12_000,
            duration_s: 12.0,
            ..PagesRow::default()
        };
        let dw = PagesRow {
            dw_design: Some(DwDesign::Pipelined),
            evictions_waited_for_dw: 5,
            dw_syncs_per_txn: 0.125,
            dw_pages_written_ahead: 321,
            dw_pages_rewritten_before_eviction: 12,
            ..measured(Mode::Dw, 975.0, 930.0, 1_010.0)
        };
        let disturbed = PagesRow {
            lower_bound: true,
            buffer_pool_bytes: 1 << 30,
            device: Some(crate::observe::blockdev::account::DeviceAccounting::default()),
            disturbances: vec![crate::core::schema::Disturbance {
                kind: crate::core::schema::DisturbanceKind::DeviceIo,
                detail: "4 MiB written by others".into(),
                ..Default::default()
            }],
            ..measured(Mode::Fpw, 640.5, 600.0, 700.0)
        };
        let unsupported = PagesRow {
            mode: Mode::Atomic,
            buffer_pool_bytes: 128 << 20,
            error: Some("RWF_ATOMIC is not supported here".into()),
            ..PagesRow::default()
        };
        let rows = vec![
            measured(Mode::None, 1_000.0, 960.0, 1_050.0),
            measured(Mode::Fpw, 750.25, 700.0, 800.0),
            dw,
            disturbed,
            PagesRow { tps_low: None, tps_high: None, ..measured(Mode::None, 1_500.0, 0.0, 0.0) },
            unsupported,
        ];
        PagesTable {
            scale: 10,
            clients: 8,
            page_size_bytes: 8192,
            checkpoint_secs: 5.0,
            dw_batch_pages: 32,
            dw_ring_batches: None,
            rows,
        }
    }

    #[test]
    fn text_and_markdown_goldens() {
        let t = every_kind_of_row();
        assert_golden!("syncbench__pages__render__tests__pages_text", to_table(&t));
        assert_golden!("syncbench__pages__render__tests__pages_markdown", to_markdown(&t));
    }
}
