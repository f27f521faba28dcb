//! Formatting the report and the device lines share: a latency in human units, a target's directory.

/// Human units for a latency in ns.
pub fn fmt_ns(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// Split a target into (directory with trailing `/`, file name); descriptions stay whole.
pub fn split_target(target: &str) -> (String, String) {
    match target.rsplit_once('/') {
        Some((dir, file)) if target.starts_with('/') => (format!("{dir}/"), file.to_string()),
        _ => (target.to_string(), String::new()),
    }
}
