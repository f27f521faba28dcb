//! What a syncbench JSON file holds, and the one refusal every command that reads such files gives for a
//! file it cannot use: `<file> is <what it is>; <command> accepts <what it accepts>` — one line, exit 2.

/// The subcommand a file's recorded command line ran (`syncbench powercut lab …` → `powercut lab`).
fn subcommand(command_line: &str) -> Option<String> {
    let words: Vec<&str> = command_line.split_whitespace().skip(1).filter(|w| !w.starts_with('-')).collect();
    let first = *words.first()?;
    let two_words = matches!(first, "lab" | "powercut") && words.len() > 1;
    Some(if two_words { format!("{first} {}", words[1]) } else { first.to_string() })
}

/// `a run file`, `a commit file`, `an fsync-errors file`, or `a syncbench/v1 file with no results` when
/// neither its results nor its command line say which: `kind` is what the reader found in it, if anything.
pub fn describe(kind: Option<&str>, command_line: &str) -> String {
    match kind.map(str::to_string).or_else(|| subcommand(command_line)) {
        Some(name) => {
            let article = if name.starts_with(['a', 'e', 'i', 'o', 'u', 'f']) { "an" } else { "a" };
            format!("{article} {name} file")
        }
        None => format!("a {} file with no results", crate::core::schema::SCHEMA),
    }
}

/// The refusal: `file` is `given` (from [`describe`]); `command` accepts `accepted`; `hint` (may be empty)
/// says where such a file does go.
pub fn refusal(file: &str, given: &str, command: &str, accepted: &str, hint: &str) -> anyhow::Error {
    let hint = if hint.is_empty() { String::new() } else { format!("; {hint}") };
    crate::core::exit::usage(format!("{file} is {given}; {command} accepts {accepted}{hint}"))
}

/// What `compare`, `advise --from` and `trace --baseline` accept.
pub const RUN_FILES: &str = "run files (syncbench run --json or advise --json)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_named_by_what_it_holds_or_the_command_that_wrote_it() {
        assert_eq!(describe(Some("commit"), "syncbench run"), "a commit file");
        assert_eq!(describe(None, "/usr/bin/syncbench trace --all --secs 2 --json t.json"), "a trace file");
        assert_eq!(describe(None, "syncbench --quiet powercut lab --profile x"), "a powercut lab file");
        assert_eq!(describe(None, "syncbench fsync-errors --json f"), "an fsync-errors file");
        assert_eq!(describe(None, ""), "a syncbench/v1 file with no results");
    }

    #[test]
    fn the_refusal_is_one_line_naming_the_file_what_it_is_and_what_is_accepted() {
        let err = refusal("t.json", "a trace file", "compare", RUN_FILES, "");
        assert!(err.downcast_ref::<crate::core::exit::UsageError>().is_some());
        assert_eq!(
            err.to_string(),
            "t.json is a trace file; compare accepts run files (syncbench run --json or advise --json)"
        );
    }
}
