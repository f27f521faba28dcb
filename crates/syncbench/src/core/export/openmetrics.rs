//! OpenMetrics text export (`--openmetrics FILE`): each command's headline numbers as gauges with labels,
//! for the Prometheus node_exporter textfile collector (write to `<dir>/syncbench.prom`). Only gauges and
//! plain samples are written, so the file is also valid Prometheus text format, which that collector reads.

use crate::core::schema::Envelope;
use std::fmt::Write;

/// One metric family: a name (units last, e.g. `syncbench_run_commit_latency_seconds`), its help text and
/// its samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// Metric name, `syncbench_<command>_<what>_<unit>`.
    pub name: &'static str,
    /// The unit the name ends with (`seconds`, `bytes`), for the `# UNIT` line; empty for ratios and rates.
    pub unit: &'static str,
    /// One sentence.
    pub help: &'static str,
    /// The samples.
    pub samples: Vec<Sample>,
}

/// One sample: labels and a value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Label names and values, in order.
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: f64,
}

impl Family {
    /// An empty family.
    pub fn new(name: &'static str, unit: &'static str, help: &'static str) -> Family {
        Family { name, unit, help, samples: Vec::new() }
    }

    /// Add a sample.
    pub fn push(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        self.samples.push(Sample { labels, value });
    }
}

/// The document's families as OpenMetrics text, every sample also labelled with the measured directory
/// and its file system (so one collector can hold several syncbench targets apart). Ends with `# EOF`.
pub fn render<T>(doc: &Envelope<T>, families: &[Family]) -> String {
    let common = [("dir", doc.environment.dir.clone()), ("fs_type", doc.environment.fs_type.clone())];
    let mut out = String::new();
    for family in families.iter().filter(|f| !f.samples.is_empty()) {
        let _ = writeln!(out, "# TYPE {} gauge", family.name);
        if !family.unit.is_empty() {
            let _ = writeln!(out, "# UNIT {} {}", family.name, family.unit);
        }
        let _ = writeln!(out, "# HELP {} {}", family.name, escape_help(family.help));
        for sample in &family.samples {
            let labels: Vec<String> = common
                .iter()
                .map(|(k, v)| (*k, v))
                .chain(sample.labels.iter().map(|(k, v)| (*k, v)))
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                .collect();
            let _ = writeln!(out, "{}{{{}}} {}", family.name, labels.join(","), number(sample.value));
        }
    }
    out.push_str("# EOF\n");
    out
}

/// Label values escape backslash, double quote and newline.
fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Help text escapes backslash and newline.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: integers without a fraction, `NaN`/`+Inf`/`-Inf` spelled as the format wants.
fn number(value: f64) -> String {
    match value {
        v if v.is_nan() => "NaN".to_string(),
        v if v == f64::INFINITY => "+Inf".to_string(),
        v if v == f64::NEG_INFINITY => "-Inf".to_string(),
        v if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        v => format!("{v}"),
    }
}

/// `run`'s families: commits per second and the median and 99th percentile commit latency of every case
/// that ran, labelled by what makes the case (section, method, write size, writes per commit, file state)
/// and by its label, which tells apart the cases of a section that share all of those (section d).
pub fn run_families(results: &[crate::core::schema::CaseResult]) -> Vec<Family> {
    let mut rate = Family::new("syncbench_run_commits_per_second", "", "Commits per second of one case.");
    let mut latency = Family::new("syncbench_run_commit_latency_seconds", "seconds", "Commit latency quantile.");
    for case in results.iter().filter(|c| c.supported && c.error.is_none() && c.ops > 0) {
        let labels = vec![
            ("section", case.section.name().to_string()),
            ("case", case.label.trim().to_string()),
            ("method", case.method.name().to_string()),
            ("write_size_bytes", case.write_size_bytes.to_string()),
            ("writes_per_commit", case.writes_per_commit.to_string()),
            ("file_state", case.file_state.name().to_string()),
            ("durable", case.durable.to_string()),
        ];
        rate.push(labels.clone(), case.ops_per_s);
        push_quantiles(&mut latency, &labels, &[("0.5", case.latency_ns.p50), ("0.99", case.latency_ns.p99)]);
    }
    vec![rate, latency]
}

/// One sample per quantile, labelled `quantile`, in seconds.
pub fn push_quantiles(family: &mut Family, labels: &[(&'static str, String)], quantiles: &[(&str, u64)]) {
    for &(q, ns) in quantiles {
        let mut with_q = labels.to_vec();
        with_q.push(("quantile", q.to_string()));
        family.push(with_q, seconds(ns));
    }
}

/// Nanoseconds as seconds (OpenMetrics' base unit).
pub fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::environment::Environment;

    #[test]
    fn families_render_with_type_unit_help_common_labels_and_eof() {
        let env = Environment { dir: "/data/wal \"x\"".into(), fs_type: "ext4".into(), ..Environment::default() };
        let doc = Envelope::new("t".into(), env, vec![], ());
        let mut latency = Family::new("syncbench_test_latency_seconds", "seconds", "Latency.\nTwo lines.");
        latency.push(vec![("method", "fdatasync".into()), ("quantile", "0.99".into())], 0.0015);
        let mut rate = Family::new("syncbench_test_commits_per_second", "", "Rate.");
        rate.push(vec![("clients", "4".into())], 900.0);
        let empty = Family::new("syncbench_test_nothing", "", "Skipped: no samples.");
        let text = render(&doc, &[latency, rate, empty]);
        assert_eq!(
            text,
            "# TYPE syncbench_test_latency_seconds gauge\n\
             # UNIT syncbench_test_latency_seconds seconds\n\
             # HELP syncbench_test_latency_seconds Latency.\\nTwo lines.\n\
             syncbench_test_latency_seconds{dir=\"/data/wal \\\"x\\\"\",fs_type=\"ext4\",method=\"fdatasync\",quantile=\"0.99\"} 0.0015\n\
             # TYPE syncbench_test_commits_per_second gauge\n\
             # HELP syncbench_test_commits_per_second Rate.\n\
             syncbench_test_commits_per_second{dir=\"/data/wal \\\"x\\\"\",fs_type=\"ext4\",clients=\"4\"} 900\n\
             # EOF\n"
        );
    }

    #[test]
    fn special_values_are_spelled_as_the_format_wants() {
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(-0.5), "-0.5");
        assert_eq!(number(3.0), "3");
        assert_eq!(escape_label("a\\b\nc"), "a\\\\b\\nc");
    }

    #[test]
    fn every_case_of_a_full_run_has_its_own_label_set() {
        // Prometheus refuses a file in which two samples of a family share their labels; section d
        // has two fsync cases that differ only in their label.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1/run.json");
        let doc: Envelope<crate::core::schema::RunPayload> = crate::core::export::read_any(&path).unwrap();
        for family in run_families(&doc.payload.results) {
            let mut seen = std::collections::HashSet::new();
            for sample in &family.samples {
                assert!(seen.insert(sample.labels.clone()), "{}: {:?} twice", family.name, sample.labels);
            }
            assert!(family.samples.len() > 20, "{}", family.name);
        }
    }
}
