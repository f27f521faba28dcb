//! The one place where byte counts and durations are parsed and formatted, in every command's text, tables
//! and charts. Units are binary everywhere: `k`, `kb` and `KiB` all mean 1024 bytes (as PostgreSQL's `kB`
//! does), so a size means the same thing in every flag.
//!
//! Three styles, each for one use:
//! - short (`format_ns`, `format_bytes`, `format_duration`): three significant digits, trailing zeros
//!   dropped — sentences, chart labels;
//! - fixed (`format_ns_fixed`, `format_bytes_fixed`): a fixed number of decimals per unit — columns that
//!   line up (`trace`'s tables);
//! - exact-ish sizes (`format_size`): whole units or one decimal — sizes the user chose (`8 KiB`);
//! - plain seconds (`format_secs`): a number without a unit, no float noise (`0.1`, not `0.10000000000000002`).

/// Bytes per KiB.
pub const KIB: u64 = 1024;
/// Bytes per MiB.
pub const MIB: u64 = 1024 * KIB;
/// Bytes per GiB.
pub const GIB: u64 = 1024 * MIB;

/// Parse `8192`, `8k`, `8K`, `8KiB`, `16kb`, `1M`, `1MiB`, `2GiB` into bytes; `None` for anything else
/// (fractions, unknown units, overflow).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let number: u64 = digits.parse().ok()?;
    let multiplier = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        _ => return None,
    };
    number.checked_mul(multiplier)
}

/// `512 B`, `8 KiB`, `1.5 KiB`, `128 MiB`, `2 GiB`.
pub fn format_size(bytes: u64) -> String {
    let (value, unit) = match bytes {
        b if b >= GIB => (b as f64 / GIB as f64, "GiB"),
        b if b >= MIB => (b as f64 / MIB as f64, "MiB"),
        b if b >= KIB => (b as f64 / KIB as f64, "KiB"),
        b => return format!("{b} B"),
    };
    if value.fract() == 0.0 { format!("{value:.0} {unit}") } else { format!("{value:.1} {unit}") }
}

/// Parse a duration: `500ms`, `2s`, `5m`, `1h`, or a bare number of seconds (`300`); whole numbers only,
/// `None` for anything else.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let number: u64 = digits.parse().ok()?;
    let millis = match unit.trim() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    Some(std::time::Duration::from_millis(number.checked_mul(millis)?))
}

/// A duration in the unit that reads best, with at most three significant digits: `85 µs`, `1.25 ms`,
/// `3.5 s`, `5 min`, `2 h`.
pub fn format_duration(secs: f64) -> String {
    let (value, unit) = match secs {
        s if s >= 3600.0 => (s / 3600.0, "h"),
        s if s >= 60.0 => (s / 60.0, "min"),
        s if s >= 1.0 => (s, "s"),
        s if s >= 1e-3 => (s * 1e3, "ms"),
        s => (s * 1e6, "µs"),
    };
    format!("{} {unit}", trim_number(value))
}

/// A duration given in nanoseconds, in the unit that keeps it short: `850 ns`, `120 µs`, `4.5 ms`, `1.2 s`.
pub fn format_ns(ns: f64) -> String {
    let (scaled, unit) = match ns.abs() {
        v if v >= 1e9 => (ns / 1e9, "s"),
        v if v >= 1e6 => (ns / 1e6, "ms"),
        v if v >= 1e3 => (ns / 1e3, "µs"),
        _ => (ns, "ns"),
    };
    format!("{} {unit}", trim_number(scaled))
}

/// A size in bytes with a binary unit, three significant digits: `512 B`, `4 KiB`, `1.07 MiB`.
pub fn format_bytes(bytes: f64) -> String {
    let (scaled, unit) = match bytes.abs() {
        v if v >= GIB as f64 => (bytes / GIB as f64, "GiB"),
        v if v >= MIB as f64 => (bytes / MIB as f64, "MiB"),
        v if v >= KIB as f64 => (bytes / KIB as f64, "KiB"),
        _ => (bytes, "B"),
    };
    format!("{} {unit}", trim_number(scaled))
}

/// Up to three significant digits, without trailing zeros: `201`, `12.5`, `1.5`, `0.25`.
pub fn trim_number(value: f64) -> String {
    let decimals = match value.abs() {
        v if v >= 100.0 || v == 0.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    let text = format!("{value:.decimals$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

/// A latency in ns with fixed decimals per unit, for columns: `850 ns`, `12.3 µs`, `1.25 ms`, `2.00 s`.
pub fn format_ns_fixed(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// Bytes with one decimal, for columns: `512 B`, `8.0 KiB`, `1.5 MiB`.
pub fn format_bytes_fixed(bytes: f64) -> String {
    if bytes >= MIB as f64 {
        format!("{:.1} MiB", bytes / MIB as f64)
    } else if bytes >= KIB as f64 {
        format!("{:.1} KiB", bytes / KIB as f64)
    } else {
        format!("{bytes:.0} B")
    }
}

/// Bytes in MiB with one decimal, whatever the size (`0.5 MiB`, `1024.0 MiB`): amounts compared in one list.
pub fn format_mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

/// A latency in whole µs, or in ms with one decimal from 10 ms on (`85 µs`, `9500 µs`, `12.5 ms`).
pub fn format_us_or_ms(ns: u64) -> String {
    if ns >= 10_000_000 { format!("{:.1} ms", ns as f64 / 1e6) } else { format!("{:.0} µs", ns as f64 / 1e3) }
}

/// A latency in ms with two decimals from 1 ms on, else in whole µs (`850 µs`, `1.25 ms`): advice sentences.
pub fn format_ms_or_us(ns: f64) -> String {
    if ns >= 1e6 { format!("{:.2} ms", ns / 1e6) } else { format!("{:.0} µs", ns / 1e3) }
}

/// A latency in whole µs below 1 ms, ms with one decimal below 10 ms, whole ms above (`170 µs`, `3.8 ms`,
/// `12 ms`): regimes and tails.
pub fn format_latency(ns: u64) -> String {
    let us = ns as f64 / 1e3;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 10_000.0 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{:.0} ms", us / 1e3)
    }
}

/// Whole µs as a bare number, for columns headed `µs` (`850`).
pub fn format_us_number(ns: u64) -> String {
    format!("{:.0}", ns as f64 / 1000.0)
}

/// Seconds as a plain number: `0.1`, `2`, `1.5`, `0.003`, `12.346` — rounded to milliseconds (to three
/// significant digits below 1 ms), trailing zeros dropped.
pub fn format_secs(secs: f64) -> String {
    if !secs.is_finite() {
        return secs.to_string();
    }
    let digits = if secs.abs() >= 0.001 || secs == 0.0 { 3 } else { 3 - secs.abs().log10().floor() as i32 - 1 };
    let text = format!("{secs:.*}", digits.max(3) as usize);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" { "0".to_string() } else { text.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_style_prints_as_documented() {
        assert_eq!(format_ns(201_000.0), "201 µs");
        assert_eq!(format_ns(1_500.0), "1.5 µs");
        assert_eq!(format_ns(12_000_000.0), "12 ms");
        assert_eq!(format_bytes(8192.0), "8 KiB");
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(1100.0 * 1024.0), "1.07 MiB");
        assert_eq!(format_ns_fixed(850), "850 ns");
        assert_eq!(format_ns_fixed(12_345), "12.3 µs");
        assert_eq!(format_ns_fixed(1_250_000), "1.25 ms");
        assert_eq!(format_ns_fixed(2_000_000_000), "2.00 s");
        assert_eq!(format_bytes_fixed(8192.0), "8.0 KiB");
        assert_eq!(format_bytes_fixed(100.0), "100 B");
        assert_eq!((format_mib(512 * KIB), format_mib(GIB)), ("0.5 MiB".into(), "1024.0 MiB".into()));
        assert_eq!((format_us_or_ms(85_000), format_us_or_ms(9_500_000)), ("85 µs".into(), "9500 µs".into()));
        assert_eq!(format_us_or_ms(12_500_000), "12.5 ms");
        assert_eq!((format_ms_or_us(850_000.0), format_ms_or_us(1_250_000.0)), ("850 µs".into(), "1.25 ms".into()));
        assert_eq!((format_latency(170_000), format_latency(3_800_000)), ("170 µs".into(), "3.8 ms".into()));
        assert_eq!((format_latency(12_400_000), format_us_number(850_400)), ("12 ms".into(), "850".into()));
        assert_eq!(
            (trim_number(0.0), trim_number(12.34), trim_number(0.25)),
            ("0".into(), "12.3".into(), "0.25".into())
        );
    }

    #[test]
    fn seconds_read_as_a_person_would_write_them() {
        assert_eq!(format_secs(0.1 * 3.0 / 3.0 + 1e-17), "0.1");
        assert_eq!(format_secs(0.10000000000000002), "0.1");
        assert_eq!(format_secs(2.0), "2");
        assert_eq!(format_secs(1.5), "1.5");
        assert_eq!(format_secs(12.3456), "12.346");
        assert_eq!(format_secs(0.003), "0.003");
        assert_eq!(format_secs(0.00012345), "0.000123");
        assert_eq!(format_secs(0.0), "0");
    }

    #[test]
    fn durations_parse_and_print_with_sane_precision() {
        use std::time::Duration;
        assert_eq!(parse_duration("5m"), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("300"), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("2s"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        for bad in ["", "1.5s", "5 parsecs", "-1s", "99999999999999999999h"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
        assert_eq!(format_duration(0.10000000000000002), "100 ms");
        assert_eq!(format_duration(0.000085), "85 µs");
        assert_eq!(format_duration(0.00125), "1.25 ms");
        assert_eq!(format_duration(3.5), "3.5 s");
        assert_eq!(format_duration(300.0), "5 min");
        assert_eq!(format_duration(7200.0), "2 h");
    }

    #[test]
    fn every_spelling_of_a_unit_is_binary() {
        for text in ["16kb", "16KB", "16k", "16KiB", "16 KiB", "16384"] {
            assert_eq!(parse_size(text), Some(16 * KIB), "{text}");
        }
        assert_eq!(parse_size("2MB"), Some(2 * MIB));
        assert_eq!(parse_size("1gb"), Some(GIB));
        for bad in ["1.5k", "k", "3x", "12 parsecs", "", "99999999999999999999G", "-1k"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn formatting_picks_the_largest_unit_and_round_trips() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(128 * MIB), "128 MiB");
        assert_eq!(format_size(2 * GIB), "2 GiB");
        for bytes in [512, 4 * KIB, 160 * KIB, 16 * MIB, 3 * GIB] {
            let text = format_size(bytes).replace(' ', "");
            assert_eq!(parse_size(&text), Some(bytes), "{text}");
        }
    }
}
