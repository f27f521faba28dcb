//! One module per subcommand: its flags (`Args`), validation, and `main`.

pub mod advise;
pub mod cleanup;
pub mod commit;
pub mod compare;
pub mod crashtest;
pub mod fsync_errors;
pub mod lab;
pub mod pages;
pub mod powercut;
pub mod probe;
pub mod report;
pub mod run;
pub mod trace;

use crate::core::method::SyncMethod;
use clap::builder::TypedValueParser as _;

/// The parser of a flag that takes one of `all` by its `name`: `--help` lists the names and a name not
/// among them is clap's usage error (exit 2).
pub fn names_parser<T: Copy + Send + Sync + 'static>(
    all: &[T],
    name: fn(T) -> &'static str,
) -> impl clap::builder::TypedValueParser<Value = T> {
    let all = all.to_vec();
    let names: Vec<&'static str> = all.iter().map(|&v| name(v)).collect();
    Trimmed(
        clap::builder::PossibleValuesParser::new(names)
            .map(move |text| all.iter().copied().find(|&v| name(v) == text).expect("clap accepted only listed names")),
    )
}

/// The parser of a `--method` flag that takes one of `allowed`: `--help` lists their names and a name not
/// among them is clap's usage error (exit 2). `aliases` are (old name, method) pairs still accepted.
pub fn method_parser(
    allowed: &[SyncMethod],
    aliases: &[(&'static str, SyncMethod)],
) -> impl clap::builder::TypedValueParser<Value = SyncMethod> {
    let values = allowed.iter().map(|&m| {
        let old = aliases.iter().filter(move |(_, to)| *to == m).map(|(name, _)| *name);
        clap::builder::PossibleValue::new(m.name()).aliases(old)
    });
    let aliases = aliases.to_vec();
    Trimmed(clap::builder::PossibleValuesParser::new(values.collect::<Vec<_>>()).map(move |name| {
        let name = aliases.iter().find(|(old, _)| *old == name).map_or(name.as_str(), |(_, m)| m.name());
        SyncMethod::from_name(name).expect("clap accepted only listed names")
    }))
}
/// A clap parser for `run`'s sections: each by its name or its letter, all listed in `--help`.
pub fn section_parser() -> impl clap::builder::TypedValueParser<Value = crate::core::suite::Section> {
    use crate::core::suite::Section;
    const LETTERS: [&str; 7] = ["a", "b", "c", "d", "e", "f", "g"];
    assert_eq!(Section::ALL.len(), LETTERS.len(), "a letter per section");
    let values =
        Section::ALL.iter().zip(LETTERS).map(|(s, letter)| clap::builder::PossibleValue::new(s.name()).alias(letter));
    Trimmed(
        clap::builder::PossibleValuesParser::new(values.collect::<Vec<_>>())
            .map(|name| Section::parse(&name).expect("clap accepted only listed names and letters")),
    )
}

/// A value parser that first drops the spaces around a value, so a list typed as `--methods "fsync,
/// fdatasync"` (comma and space, as people write lists) parses like `fsync,fdatasync`.
#[derive(Clone)]
pub struct Trimmed<P>(P);

impl<P: clap::builder::TypedValueParser> clap::builder::TypedValueParser for Trimmed<P> {
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let trimmed = value.to_str().map(|text| std::ffi::OsStr::new(text.trim()));
        self.0.parse_ref(cmd, arg, trimmed.unwrap_or(value))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        self.0.possible_values()
    }
}
/// The values in the order given, each once (`--mode fpw,dw,fpw` compares two).
pub fn first_of_each<T: Copy + PartialEq>(values: &[T]) -> Vec<T> {
    let mut once = Vec::new();
    for &v in values {
        if !once.contains(&v) {
            once.push(v);
        }
    }
    once
}

pub mod watch;

#[cfg(test)]
mod tests {
    /// A command's file holds its flags, their validation into a plan, the library call and the hand-over
    /// to output: short enough to read at a glance. Measurement and rendering live in library modules.
    const MAX_LINES: usize = 250;
    /// Files still being shortened by their owners; each must still be too long (remove it once it is not).
    const PENDING: [&str; 0] = [];

    #[test]
    fn no_command_file_is_longer_than_250_lines() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
        let mut too_long = Vec::new();
        let mut files = vec![dir.clone()];
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            let name = path.strip_prefix(&dir).unwrap().display().to_string();
            match (lines > MAX_LINES, PENDING.contains(&name.as_str())) {
                (true, false) => too_long.push(format!("{name}: {lines} lines")),
                (false, true) => too_long.push(format!("{name} is short now: remove it from PENDING")),
                _ => {}
            }
        }
        assert!(too_long.is_empty(), "cmd/ files over {MAX_LINES} lines: {too_long:?}");
    }

    #[test]
    fn a_list_typed_with_spaces_after_the_commas_parses_and_a_wrong_name_is_still_refused() {
        use crate::core::method::SyncMethod;
        use crate::core::suite::Section;
        let command = || {
            clap::Command::new("t")
                .arg(
                    clap::Arg::new("m")
                        .long("methods")
                        .value_delimiter(',')
                        .value_parser(super::method_parser(&[SyncMethod::Fsync, SyncMethod::Fdatasync], &[])),
                )
                .arg(clap::Arg::new("s").long("sections").value_delimiter(',').value_parser(super::section_parser()))
        };
        let matches = command().try_get_matches_from(["t", "--methods", "fsync, fdatasync", "--sections", "a, b"]);
        let matches = matches.expect("spaces after commas are accepted");
        let methods: Vec<SyncMethod> = matches.get_many("m").unwrap().copied().collect();
        assert_eq!(methods, [SyncMethod::Fsync, SyncMethod::Fdatasync]);
        let sections: Vec<Section> = matches.get_many("s").unwrap().copied().collect();
        assert_eq!(sections, [Section::ALL[0], Section::ALL[1]]);
        let wrong = command().try_get_matches_from(["t", "--methods", "fsync, fsnyc"]).unwrap_err();
        assert!(wrong.to_string().contains("fsnyc"), "{wrong}");
    }
}
