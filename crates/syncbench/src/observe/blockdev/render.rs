//! Device accounting in the terminal tables: compact per-commit columns and the notes under a table.

use super::account::DeviceAccounting;

/// Heading of the device columns (flushes, write requests and KiB per commit at the lowest disk, and the
/// device's time per commit when the tracepoints ran).
pub const HEADING: &str = "flush/c write/c KiB/c dev µs";

/// Headings of the device cells in a boxed table.
pub const CELL_HEADINGS: [&str; 4] = ["flush/c", "write/c", "KiB/c", "dev µs"];

/// The device cells of one measurement: flushes, write requests and KiB per commit at the lowest disk
/// (`*` after the KiB when other I/O made the counts unattributable), the device's time per commit.
pub fn cells(device: Option<&DeviceAccounting>) -> [String; 4] {
    let Some(d) = device else { return Default::default() };
    let Some(pc) = d.lowest_per_commit() else { return ["-", "-", "-", "-"].map(String::from) };
    let dev_us = d.device_ns_per_commit.map_or("-".to_string(), |ns| format!("{:.0}", ns / 1000.0));
    let star = if d.unattributable.is_some() { "*" } else { "" };
    [format!("{:.2}", pc.flushes), format!("{:.2}", pc.writes), format!("{:.1}{star}", pc.bytes / 1024.0), dev_us]
}

/// The device columns of one measurement, aligned under [`HEADING`]: blank without accounting.
pub fn columns(device: Option<&DeviceAccounting>) -> String {
    let [f, w, b, t] = cells(device);
    format!("{f:>7} {w:>7} {b:>5} {t:>6}")
}

/// The lines under a table with device columns: which device was counted, and which rows other I/O
/// disturbed (`label: sentence`). Empty when no row has accounting.
pub fn notes<'a>(rows: impl IntoIterator<Item = (&'a str, Option<&'a DeviceAccounting>)>) -> String {
    let rows: Vec<(&str, &DeviceAccounting)> = rows.into_iter().filter_map(|(l, d)| Some((l, d?))).collect();
    let Some((_, first)) = rows.first() else { return String::new() };
    let chain: Vec<&str> = first.devices.iter().map(|d| d.disk.as_str()).collect();
    let lowest = chain.last().copied().unwrap_or("?");
    let traced = if first.traced().is_some() && rows.iter().all(|(_, d)| d.requests_incomplete.is_none()) {
        "write requests and device time from the block tracepoints"
    } else if first.traced().is_some() {
        "write requests and device time from the block tracepoints, but for the rows below, where they may \
         have missed requests (their write requests are the kernel's counter, their device time left out)"
    } else {
        "no tracepoints (not root, or SYNCBENCH_TRACER=off), write requests are the kernel's counter (an fsync's empty flush carrier counts as one)"
    };
    let mut out = format!(
        "  device columns: per commit at {lowest} (chain {}), counters read outside the timed loop; {traced}\n",
        chain.join(" → ")
    );
    for (label, d) in &rows {
        if let Some(why) = &d.unattributable {
            out.push_str(&format!("  * {}: {why}\n", label.trim()));
        }
        if let Some(why) = &d.requests_incomplete {
            out.push_str(&format!("  {}: request counts incomplete: {why}\n", label.trim()));
        } else if d.trace_lost_samples > 0 {
            out.push_str(&format!(
                "  {}: the kernel dropped {} tracepoint samples: write requests and device time read low\n",
                label.trim(),
                d.trace_lost_samples
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::blockdev::DeviceReport;
    use crate::observe::blockdev::stat::StatDelta;

    fn acct(unattributable: bool) -> DeviceAccounting {
        let stat = StatDelta { writes: 40, flushes: 20, write_bytes: 20 * 8192, ..Default::default() };
        DeviceAccounting {
            commits: 20,
            devices: vec![DeviceReport { disk: "vda".into(), stat, ..Default::default() }],
            unattributable: unattributable.then(|| "vda served requests that were not the commits'".into()),
            ..Default::default()
        }
    }

    #[test]
    fn columns_are_per_commit_and_star_foreign_io() {
        assert_eq!(columns(Some(&acct(false))), "   1.00    2.00   8.0      -");
        assert_eq!(columns(Some(&acct(true))), "   1.00    2.00  8.0*      -");
        assert_eq!(columns(None).trim(), "");
        let n = notes([("fsync", Some(&acct(true))), ("write", None)]);
        assert!(n.contains("per commit at vda") && n.contains("* fsync: vda served"), "{n}");
        assert_eq!(notes([("write", None)]), "");
    }
}
