//! The figures of a report: each module turns one kind of result into charts.

pub mod commit_scaling;
pub mod file_state;
pub mod latency;
pub mod latency_over_time;
pub mod method_bars;
pub mod size_sweep;

use crate::core::schema::CaseResult;
use crate::core::suite::Section;

/// One chart ready to embed or write: its SVG and the file name stem it gets with `--svg DIR`.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// File name without `.svg`; also the element id prefix inside the page.
    pub stem: String,
    /// The title (repeated as the figure caption's accessible name).
    pub title: String,
    /// The standalone SVG document.
    pub svg: String,
}

/// Sections drawn as one bar per case (and one latency chart), in the order `run` measures them.
pub const BAR_SECTIONS: [&str; 5] = ["one_write", "two_writes", "write_sizes", "close_then_sync", "no_sync"];

/// A human title for a suite section.
pub fn section_title(section: &str) -> String {
    match section {
        "one_write" => "One write per commit".to_string(),
        "two_writes" => "Two writes per commit".to_string(),
        "write_sizes" => "Write sizes (same bytes per commit)".to_string(),
        "close_then_sync" => "Sync from another descriptor after close".to_string(),
        "no_sync" => "Writes without sync (not durable)".to_string(),
        "size_sweep" => "Write-size sweep".to_string(),
        "file_state" => "File state: overwrite, append, fallocate".to_string(),
        other => other.replace('_', " "),
    }
}

/// The sections present in `results`, in first-seen order, that are not drawn by a dedicated figure.
pub fn bar_sections(results: &[CaseResult]) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    for case in results {
        if case.section != Section::SizeSweep && case.section != Section::FileState && !sections.contains(&case.section)
        {
            sections.push(case.section);
        }
    }
    sections.sort_by_key(|s| BAR_SECTIONS.iter().position(|known| *known == s.name()).unwrap_or(BAR_SECTIONS.len()));
    sections
}

/// How a case is named inside its section: the method, or the label when several cases share a method.
pub fn case_names(cases: &[&CaseResult]) -> Vec<String> {
    let mut methods: Vec<&str> = cases.iter().map(|c| c.method.name()).collect();
    methods.sort_unstable();
    let methods_unique = methods.windows(2).all(|w| w[0] != w[1]);
    cases
        .iter()
        .map(|c| {
            let base = if methods_unique || c.label.is_empty() { c.method.name().to_string() } else { c.label.clone() };
            if c.durable || base.contains("not durable") { base } else { format!("{base} (not durable)") }
        })
        .collect()
}

/// A measured value worth drawing: supported, no error, positive.
pub fn measured(case: &CaseResult) -> bool {
    case.supported && case.error.is_none() && case.ops_per_s > 0.0
}

/// Why a case has no bar: its error, or "unsupported".
pub fn missing_note(case: &CaseResult) -> String {
    match &case.error {
        Some(error) => format!("not measured: {error}"),
        None if !case.supported => "unsupported here".to_string(),
        None => "no commits measured".to_string(),
    }
}

/// Make `text` safe as part of a file name and element id: lowercase ASCII letters, digits, `-`, `_`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(section: &str, method: &str, label: &str, durable: bool) -> CaseResult {
        CaseResult {
            section: section.parse().unwrap(),
            method: method.parse().unwrap(),
            label: label.into(),
            durable,
            ..CaseResult::default()
        }
    }

    #[test]
    fn cases_are_named_by_method_unless_methods_repeat() {
        let a = case("one_write", "fsync", "1 x 8 KiB fsync", true);
        let b = case("one_write", "write", "1 x 8 KiB write", false);
        assert_eq!(case_names(&[&a, &b]), vec!["fsync", "write (not durable)"]);
        let c = case("write_sizes", "open_sync", "1 x 16 KiB", true);
        let d = case("write_sizes", "open_sync", "2 x 8 KiB", true);
        assert_eq!(case_names(&[&c, &d]), vec!["1 x 16 KiB", "2 x 8 KiB"]);
    }

    #[test]
    fn known_sections_come_in_suite_order_and_dedicated_ones_are_left_out() {
        let cases = [
            case("no_sync", "write", "", false),
            case("size_sweep", "fsync", "", true),
            case("one_write", "fsync", "", true),
            case("one_write", "fdatasync", "", true),
        ];
        assert_eq!(bar_sections(&cases), vec![Section::OneWrite, Section::NoSync]);
    }

    #[test]
    fn slugs_are_safe_file_names() {
        assert_eq!(slug("../Runs/ext4 run.json"), "runs-ext4-run-json");
        assert_eq!(slug("open_datasync+direct"), "open_datasync-direct");
    }
}
