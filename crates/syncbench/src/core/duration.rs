//! The one formatter for seconds in text: at most three significant digits after the point and no float
//! noise (`--quick`'s budget is 0.1 s, not 0.10000000000000002 s).

/// `0.1`, `2`, `1.5`, `0.003`, `12.35`: rounded to milliseconds (to 3 significant digits below 1 ms),
/// trailing zeros dropped.
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
    use super::format_secs;

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
}
