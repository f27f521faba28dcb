//! The one reader's checks (`core::export::parse_any`) as `report` and `compare` meet them: any document
//! read as [`AnyPayload`], defaults for what older files lack, one-line refusals naming the file.

use super::AnyPayload;
use crate::core::export::parse_any;
use crate::core::schema::RunPayload;

fn usage_message(text: &str) -> String {
    let err = parse_any::<AnyPayload>("f.json", text).unwrap_err();
    assert!(err.downcast_ref::<crate::core::exit::UsageError>().is_some(), "{err}");
    let message = err.to_string();
    assert!(message.contains("f.json") && !message.contains('\n'), "{message}");
    message
}

#[test]
fn missing_fields_take_defaults_and_unknown_fields_are_ignored() {
    let text = r#"{"schema":"syncbench/v1","from_the_future":[1],"results":[{"section":"one_write",
        "method":"fsync","file_state":"append","ops_per_s":10.5,"new_field":true,"latency_ns":{"p50":7}}]}"#;
    let doc = parse_any::<AnyPayload>("t.json", text).unwrap();
    let case = &doc.payload.results[0];
    assert_eq!((case.method.name(), case.ops_per_s, case.latency_ns.p50), ("fsync", 10.5, 7));
    assert_eq!((case.write_size_bytes, case.latency_ns.p99), (0, 0));
    assert!(doc.version.is_empty() && doc.verdicts.is_empty());
}

#[test]
fn optional_flags_missing_from_an_older_file_keep_their_meaning() {
    let text = r#"{"schema":"syncbench/v1","commit":{"method":"fdatasync","points":[{"clients":4}]},
        "pages":{"rows":[{"mode":"fpw","tps":10}]}}"#;
    let doc = parse_any::<AnyPayload>("t.json", text).unwrap();
    let commit = doc.payload.commit.unwrap();
    assert!(commit.durable, "a commit file that does not say was durable");
    assert_eq!(commit.points[0].clients, 4);
    let pages = doc.payload.pages.unwrap();
    assert!(pages.rows[0].supported, "a row that does not say ran");
}

#[test]
fn what_makes_a_file_unreadable_is_one_line_naming_it() {
    assert!(usage_message("not json").contains("not JSON"));
    assert!(usage_message("[1,2]").contains("expected an object"));
    assert!(usage_message(r#"{"results":[]}"#).contains("no \"schema\""));
    let old = usage_message(r#"{"schema":"syncbench/v0"}"#);
    assert!(old.contains("syncbench/v0") && old.contains("syncbench/v1"), "{old}");
    assert!(usage_message(r#"{"schema":"syncbench/v1","version":"tuesday"}"#).contains("version"));
    assert!(usage_message(r#"{"schema":"syncbench/v1","version":7}"#).contains("version"));
    let case = r#""section":"one_write","method":"fsync","file_state":"overwrite""#;
    let wrong = usage_message(&format!(r#"{{"schema":"syncbench/v1","results":[{{{case},"ops":"many"}}]}}"#));
    assert!(wrong.contains("not a valid syncbench document") && wrong.contains("invalid type"), "{wrong}");
    let mode = usage_message(r#"{"schema":"syncbench/v1","pages":{"rows":[{"mode":"raid"}]}}"#);
    assert!(mode.contains("unknown mode \"raid\"; expected none, fpw, dw or atomic"), "{mode}");
}

/// A case says which case it is: without its section, method or file state it is refused, not filed
/// as a one_write/fdatasync/overwrite case.
#[test]
fn a_case_without_what_identifies_it_is_refused_naming_the_field() {
    let full = [r#""section":"two_writes""#, r#""method":"fsync""#, r#""file_state":"append""#];
    let doc = |fields: &[&str]| format!(r#"{{"schema":"syncbench/v1","results":[{{{}}}]}}"#, fields.join(","));
    let read = parse_any::<RunPayload>("t.json", &doc(&full)).unwrap();
    let case = &read.payload.results[0];
    assert_eq!((case.section.name(), case.method.name(), case.file_state.name()), ("two_writes", "fsync", "append"));
    for (i, field) in ["section", "method", "file_state"].iter().enumerate() {
        let mut without = full.to_vec();
        without.remove(i);
        let text = doc(&without);
        let message = usage_message(&text);
        assert!(message.contains(&format!("missing field `{field}`")), "{message}");
        // Every reader refuses it: `report` and `compare` (AnyPayload) as `run`'s (RunPayload).
        assert!(parse_any::<RunPayload>("t.json", &text).is_err());
    }
}
