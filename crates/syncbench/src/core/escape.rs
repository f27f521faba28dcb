//! Untrusted names (file names, paths, mount sources) made safe to print on one line.

use std::borrow::Cow;
use std::fmt::Write;

/// A file name or path made safe for one line of a table: control characters (newline, tab, escape, …) and
/// the backslash written as escapes (`\n`, `\t`, `\u{1b}`, `\\`), so a name can neither break a row nor
/// send terminal escape sequences, and an escaped name cannot be mistaken for another; the rest unchanged.
pub fn escape_name(name: &str) -> Cow<'_, str> {
    if !name.chars().any(|c| c.is_control() || c == '\\') {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_to_one_line_without_control_characters() {
        assert!(matches!(escape_name("/var/lib/pg/wal.0001"), Cow::Borrowed(_)));
        assert_eq!(escape_name("bad\nname"), "bad\\nname");
        assert_eq!(escape_name("a\tb\rc\u{1b}[31m"), "a\\tb\\rc\\u{1b}[31m");
        // The backslash is escaped too, so `a\nb` (backslash, n) and `a<newline>b` stay different.
        assert_eq!(escape_name("a\\nb"), "a\\\\nb");
        assert_ne!(escape_name("a\\nb"), escape_name("a\nb"));
        assert_eq!(escape_name("über ünïcode"), "über ünïcode");
        assert!(!escape_name("x\u{85}y\u{7f}").chars().any(char::is_control));
    }
}
