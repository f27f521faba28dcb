//! Formatting the report and the device lines share: a target's directory (units: `core::units`).

/// Split a target into (directory with trailing `/`, file name); descriptions stay whole.
pub fn split_target(target: &str) -> (String, String) {
    match target.rsplit_once('/') {
        Some((dir, file)) if target.starts_with('/') => (format!("{dir}/"), file.to_string()),
        _ => (target.to_string(), String::new()),
    }
}
