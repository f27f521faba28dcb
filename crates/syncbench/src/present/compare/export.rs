//! `compare`'s exports. JSON is the `syncbench/v1` envelope (the baseline's environment) with the comparison
//! in it, so `parse_any` reads it like every other file; CSV has one row per (case, candidate); Markdown is
//! compare's own; OpenMetrics has each candidate's headline ratio (geometric mean of the durable cases'
//! commits/s ratios) with its 95% interval, and how many cases were faster, slower or within noise.

use crate::core::export::Exportable;
use crate::core::export::openmetrics::Family;
use crate::core::schema::Envelope;
use crate::present::compare::{Comparison, case_name, render};
use serde::ser::{Error, Serialize, Serializer};

/// The comparison as an envelope's payload: everything but `schema` and `command`, which the envelope says.
#[derive(Clone, Debug)]
pub struct ComparePayload(pub Comparison);

impl Serialize for ComparePayload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(&self.0).map_err(S::Error::custom)?;
        if let Some(fields) = value.as_object_mut() {
            fields.remove("schema");
            fields.remove("command");
        }
        value.serialize(serializer)
    }
}

impl Exportable for ComparePayload {
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String> {
        let cmp = &doc.payload.0;
        let mut w = ::csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER)?;
        let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        for c in &cmp.cases {
            let k = &c.case.key;
            let head = [
                case_name(k, c.case.durable),
                k.section.name().to_string(),
                k.method.name().to_string(),
                k.write_size_bytes.to_string(),
                k.writes_per_commit.to_string(),
                k.file_state.name().to_string(),
                c.case.durable.to_string(),
                cmp.files[0].clone(),
            ];
            let base = &c.case.cells[0];
            for (i, r) in c.ratios.iter().enumerate() {
                let cell = &c.case.cells[i + 1];
                let ratio = r.as_ref().map(|r| {
                    let direction = serde_json::to_value(r.ratio.direction).ok();
                    let direction = direction.and_then(|d| d.as_str().map(str::to_string)).unwrap_or_default();
                    [r.ratio.ratio.to_string(), r.ratio.ci95.to_string(), direction]
                });
                let numbers = [opt(base.ops_per_s), opt(base.ci95_rel), opt(cell.ops_per_s), opt(cell.ci95_rel)];
                w.write_record(
                    head.iter()
                        .cloned()
                        .chain([cmp.files[i + 1].clone()])
                        .chain(numbers)
                        .chain(ratio.unwrap_or_default()),
                )?;
            }
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    fn markdown(doc: &Envelope<Self>) -> String {
        render::markdown(&doc.payload.0)
    }

    fn metrics(doc: &Envelope<Self>) -> Vec<Family> {
        let mut ratio = Family::new(
            "syncbench_compare_durable_ratio",
            "",
            "Candidate commits/s over the baseline's: geometric mean over the durable cases.",
        );
        let mut low = Family::new(
            "syncbench_compare_durable_ratio_ci95_low",
            "",
            "Lower end of the headline ratio's 95% interval (above 1: faster beyond noise).",
        );
        let mut high = Family::new(
            "syncbench_compare_durable_ratio_ci95_high",
            "",
            "Upper end of the headline ratio's 95% interval (below 1: slower beyond noise).",
        );
        let mut cases =
            Family::new("syncbench_compare_cases", "", "Shared cases by outcome against the baseline, per candidate.");
        let cmp = &doc.payload.0;
        for s in &cmp.summaries {
            let labels = vec![("baseline", cmp.files[0].clone()), ("candidate", s.candidate.clone())];
            if let (Some(gm), Some(rel)) = (s.durable_geometric_mean_ratio, s.durable_geometric_mean_ci95_rel) {
                ratio.push(labels.clone(), gm);
                // Multiplicative, as the headline prints it: never below zero.
                let range = crate::core::stats::Estimate::from_rel(gm, rel);
                low.push(labels.clone(), range.low);
                high.push(labels.clone(), range.high);
            }
            let outcomes = [
                ("faster", s.faster),
                ("slower", s.slower),
                ("within_noise", s.within_noise),
                ("not_comparable", s.not_comparable),
            ];
            for (outcome, n) in outcomes {
                let mut l = labels.clone();
                l.push(("outcome", outcome.to_string()));
                cases.push(l, n as f64);
            }
        }
        vec![ratio, low, high, cases]
    }
}

const HEADER: [&str; 16] = [
    "case",
    "section",
    "method",
    "write_size_bytes",
    "writes_per_commit",
    "file_state",
    "durable",
    "baseline",
    "candidate",
    "baseline_ops_per_s",
    "baseline_ci95_rel",
    "candidate_ops_per_s",
    "candidate_ci95_rel",
    "ratio",
    "ratio_ci95",
    "direction",
];

/// The comparison of `runs` (baseline first) as the document `compare` writes: the baseline's environment.
pub fn document(started_at: String, runs: &[crate::present::report::input::RunFile]) -> Envelope<ComparePayload> {
    let comparison = crate::present::compare::compare(runs);
    let environment = runs.first().map(|r| r.environment.clone()).unwrap_or_default();
    Envelope::new(started_at, environment, Vec::new(), ComparePayload(comparison))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::report::input;

    /// The fixture runs ext4.json (baseline) and xfs.json.
    fn doc() -> Envelope<ComparePayload> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs");
        let runs: Vec<_> = ["ext4.json", "xfs.json"]
            .iter()
            .map(|f| {
                let mut run = input::load(&dir.join(f)).unwrap();
                run.name = f.to_string();
                run
            })
            .collect();
        let mut doc = document("2026-11-21T00:00:00Z".into(), &runs);
        doc.command = "syncbench compare ext4.json xfs.json".into();
        doc.version = "0.1.0".into();
        doc
    }

    #[test]
    fn exports_golden() {
        let d = doc();
        assert_golden!("syncbench__export__compare__tests__compare_csv", ComparePayload::csv(&d).unwrap());
        assert_golden!(
            "syncbench__export__compare__tests__compare_openmetrics",
            crate::core::export::openmetrics::render(&d, &ComparePayload::metrics(&d))
        );
    }

    /// Markdown is compare's own rendering (its golden is the integration test's).
    #[test]
    fn markdown_is_compares_own() {
        let d = doc();
        assert_eq!(ComparePayload::markdown(&d), render::markdown(&d.payload.0));
    }

    /// The JSON export passes the one reader's checks (schema, version) and keeps every field of the
    /// comparison; the envelope's fields are not doubled.
    #[test]
    fn json_round_trips_through_parse_any() {
        let d = doc();
        let text = crate::core::export::to_json(&d).unwrap();
        let back = crate::core::export::parse_any::<serde_json::Value>("c.json", &text).unwrap();
        assert_eq!(back.payload, serde_json::to_value(&d.payload).unwrap());
        assert_eq!(back.environment.fs_type, d.environment.fs_type);
        assert_eq!(back.payload["files"], serde_json::json!(["ext4.json", "xfs.json"]));
        assert_eq!(text.matches("\"schema\"").count(), 1, "{text}");
    }

    /// Every CSV row has the header's width, with a ratio or without one.
    #[test]
    fn rows_have_the_header_width() {
        let csv = ComparePayload::csv(&doc()).unwrap();
        let mut r = ::csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<_> = r.records().map(Result::unwrap).collect();
        assert!(rows.len() > 10);
        assert!(rows.iter().all(|row| row.len() == HEADER.len()));
    }
}
