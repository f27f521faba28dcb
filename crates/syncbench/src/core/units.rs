//! The one size parser and formatter. Units are binary everywhere: `k`, `kb` and `KiB` all mean 1024 bytes
//! (as PostgreSQL's `kB` does), so a size means the same thing in every flag.

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
    let text = if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    };
    let trimmed = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    format!("{trimmed} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

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
