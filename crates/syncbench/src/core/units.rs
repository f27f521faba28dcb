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

#[cfg(test)]
mod tests {
    use super::*;

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
