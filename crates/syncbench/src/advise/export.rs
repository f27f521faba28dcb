//! `advise`'s exports: one CSV row per (setting, measurement behind it), Markdown with one table of settings
//! per database, and OpenMetrics where a recommended value is a word, not a number: an info-style gauge
//! (`…_setting_info`, always 1) whose labels carry the database, the setting, its value and whether the
//! rules were validated against the database itself, plus etcd's pass/fail as 1/0.

use crate::advise::{AdvisePayload, DatabaseAdvice, evidence};
use crate::core::export::Exportable;
use crate::core::export::markdown::escape;
use crate::core::export::openmetrics::Family;
use crate::core::schema::Envelope;
use std::fmt::Write;

impl Exportable for AdvisePayload {
    fn csv(doc: &Envelope<Self>) -> anyhow::Result<String> {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER)?;
        for (a, validated) in with_evidence(&doc.payload) {
            for s in &a.settings {
                let head = [&a.database, &a.version, pass(a.pass), validated, &s.name, &s.value, &s.reason];
                let head = head.map(str::to_string);
                if s.evidence.is_empty() {
                    w.write_record(head.iter().cloned().chain(vec![String::new(); 5]))?;
                }
                for e in &s.evidence {
                    let numbers = [e.ops_per_s.to_string(), e.latency_ns_p50.to_string(), e.latency_ns_p99.to_string()];
                    w.write_record(head.iter().cloned().chain([e.case.clone(), e.method.clone()]).chain(numbers))?;
                }
            }
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    fn markdown(doc: &Envelope<Self>) -> String {
        let p = &doc.payload;
        let mut md = format!("## syncbench advise: {} ({})\n\n", escape(&p.dir), escape(&doc.environment.fs_type));
        let _ = writeln!(md, "Measurements: {}\n", escape(&p.source));
        for (i, (a, level)) in p.advice.iter().zip(levels(p)).enumerate() {
            let verdict = match a.pass {
                Some(true) => " — PASS",
                Some(false) => " — FAIL",
                None => "",
            };
            let _ = writeln!(md, "### {} {}{verdict}\n", escape(&a.database), escape(&a.version));
            let _ = writeln!(md, "Evidence: {}\n", escape(&level.level));
            let _ = writeln!(md, "Power cuts: {}\n", escape(&power_cuts(p, i).summary));
            if let Some(w) = &a.storage_warning {
                let _ = writeln!(md, "> **Storage:** {}\n", escape(w));
            }
            if !a.settings.is_empty() {
                md.push_str("| Setting | Value | Why |\n|:---|:---|:---|\n");
                for s in &a.settings {
                    let _ = writeln!(md, "| `{}` | `{}` | {} |", escape(&s.name), escape(&s.value), escape(&s.reason));
                }
                md.push('\n');
            }
            for c in &a.caveats {
                let _ = writeln!(md, "- note: {}", escape(c));
            }
            if !a.caveats.is_empty() {
                md.push('\n');
            }
        }
        md
    }

    fn metrics(doc: &Envelope<Self>) -> Vec<Family> {
        let mut info = Family::new(
            "syncbench_advise_setting_info",
            "",
            "A recommended setting (always 1): database, version, setting, value and the evidence level.",
        );
        let mut passed = Family::new(
            "syncbench_advise_pass",
            "",
            "1 when the storage passes the database's own rule (etcd's p99), 0 when it fails.",
        );
        for (a, validated) in with_evidence(&doc.payload) {
            for s in &a.settings {
                let labels = vec![
                    ("database", a.database.clone()),
                    ("version", a.version.clone()),
                    ("setting", s.name.clone()),
                    ("value", s.value.clone()),
                    ("evidence", validated.to_string()),
                ];
                info.push(labels, 1.0);
            }
            if let Some(ok) = a.pass {
                passed.push(
                    vec![("database", a.database.clone()), ("version", a.version.clone())],
                    f64::from(u8::from(ok)),
                );
            }
        }
        vec![info, passed]
    }
}

const HEADER: [&str; 12] = [
    "database",
    "version",
    "pass",
    "evidence",
    "setting",
    "value",
    "reason",
    "evidence_case",
    "evidence_method",
    "ops_per_s",
    "latency_ns_p50",
    "latency_ns_p99",
];

fn pass(p: Option<bool>) -> &'static str {
    match p {
        Some(true) => "pass",
        Some(false) => "fail",
        None => "",
    }
}

/// Each database's evidence level: the one saved in the payload, or (files written before it was saved)
/// computed again from the database and version.
fn levels(p: &AdvisePayload) -> Vec<evidence::EvidenceLevel> {
    p.advice.iter().enumerate().map(|(i, a)| p.evidence.get(i).cloned().unwrap_or_else(|| evidence::of(a))).collect()
}

/// A database's power-cut evidence: the one saved in the payload, or (files written before it was saved)
/// computed again from the advice.
fn power_cuts(p: &AdvisePayload, i: usize) -> crate::advise::safety::PowerCutEvidence {
    p.power_cuts.get(i).cloned().unwrap_or_else(|| crate::advise::safety::of(&p.advice[i]))
}

/// Each database's advice with its evidence level as a label value.
fn with_evidence(p: &AdvisePayload) -> Vec<(&DatabaseAdvice, &'static str)> {
    let words = levels(p).into_iter().map(|l| if l.validated { "validated" } else { "not_validated" });
    p.advice.iter().zip(words).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::{Evidence, Setting};

    fn setting(name: &str, value: &str, evidence: Vec<Evidence>) -> Setting {
        Setting { name: name.into(), value: value.into(), reason: format!("{name} | measured"), evidence }
    }

    /// PostgreSQL 15 (one setting with its measurement, one without) and a failing etcd (nothing measured).
    fn doc() -> Envelope<AdvisePayload> {
        let measured = Evidence {
            case: "one_write/fdatasync".into(),
            method: "fdatasync".into(),
            ops_per_s: 1520.5,
            latency_ns_p50: 610_000,
            latency_ns_p99: 1_900_000,
        };
        let postgres = DatabaseAdvice {
            database: "postgres".into(),
            version: "15".into(),
            storage_warning: None,
            settings: vec![
                setting("wal_sync_method", "fdatasync", vec![measured]),
                setting("wal_init_zero", "on", Vec::new()),
            ],
            caveats: vec!["keep full_page_writes on".into()],
            pass: None,
        };
        let etcd = DatabaseAdvice {
            database: "etcd".into(),
            version: "3.5".into(),
            storage_warning: Some("the disk lies about flushes".into()),
            settings: vec![setting("--unsafe-no-fsync", "false", Vec::new())],
            caveats: Vec::new(),
            pass: Some(false),
        };
        let advice = vec![postgres, etcd];
        let evidence = advice.iter().map(evidence::of).collect();
        let payload = AdvisePayload {
            dir: "/data".into(),
            source: "run.json".into(),
            advice,
            evidence,
            power_cuts: Vec::new(),
            results: Vec::new(),
            background_writes: None,
        };
        crate::core::export::golden_doc(
            crate::core::export::ext4_at("/data"),
            "syncbench advise --for postgres:15,etcd --from run.json",
            payload,
        )
    }

    #[test]
    fn exports_golden() {
        crate::core::export::assert_exports_golden!("advise", &doc());
    }

    /// What the JSON export writes reads back into the same advice (the one reader every command uses).
    #[test]
    fn json_round_trips_through_parse_any() {
        let d = doc();
        let back =
            crate::core::export::parse_any::<AdvisePayload>("a.json", &crate::core::export::to_json(&d).unwrap())
                .unwrap();
        assert_eq!(back.payload.advice, d.payload.advice);
        assert_eq!(back.payload.evidence, d.payload.evidence);
    }

    /// A file written before the evidence levels were saved still labels every setting (computed again
    /// from the database and version: unvalidated when the rules were never held against it).
    #[test]
    fn a_file_without_evidence_levels_still_labels_every_setting() {
        let mut d = doc();
        d.payload.evidence.clear();
        d.payload.advice[1].database = "cockroach".into();
        let text = crate::core::export::openmetrics::render(&d, &AdvisePayload::metrics(&d));
        assert_eq!(text.matches("syncbench_advise_setting_info{").count(), 3, "{text}");
        assert!(text.contains("setting=\"wal_sync_method\",value=\"fdatasync\",evidence=\"validated\""), "{text}");
        assert!(text.contains("value=\"false\",evidence=\"not_validated\""), "{text}");
    }
}
