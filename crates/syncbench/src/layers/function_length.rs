//! No production function in the workspace is longer than 70 lines, counted from its `fn` to its closing
//! brace. Items under `#[cfg(test)]` or `#[test]`, files declared by a `#[cfg(test)] mod`, and the
//! crates' `tests/` folders are not production code and are not counted.

use std::path::{Path, PathBuf};

use super::tokens_of;

/// The longest a production function may be, in lines from `fn` to its closing brace.
pub const MAX_LINES: usize = 70;

/// One function: its name, the line of its `fn` and its length in lines.
#[derive(Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub line: usize,
    pub lines: usize,
}

/// What one file holds: its production functions and the files its `#[cfg(test)] mod x;` lines declare
/// (paths relative to the same root as the file's own).
#[derive(Debug, Default)]
pub struct FileScan {
    pub functions: Vec<Function>,
    pub test_files: Vec<String>,
}

type Tokens = [(usize, String)];

/// Scans one file (`path` relative to some root, for the `mod x;` files it declares).
pub fn scan(path: &str, text: &str) -> FileScan {
    let tokens = tokens_of(text);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = FileScan::default();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i].1 == "#" && is_test_attribute(&tokens, i) {
            let (end, declared) = skip_test_item(&tokens, i, &lines);
            if let Some((name, path_attr)) = declared {
                out.test_files.extend(declared_files(path, &name, path_attr.as_deref()));
            }
            i = end;
            continue;
        }
        if tokens[i].1 == "fn"
            && tokens.get(i + 1).is_some_and(|t| is_ident(&t.1))
            && let Some(close) = body_end(&tokens, i + 2)
        {
            let line = tokens[i].0;
            out.functions.push(Function { name: tokens[i + 1].1.clone(), line, lines: tokens[close].0 - line + 1 });
        }
        i += 1;
    }
    out
}

fn is_ident(token: &str) -> bool {
    token.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// `#[test]`, `#[cfg(test)]` (also `#[cfg(all(test, ..))]`) start at `tokens[i]`.
fn is_test_attribute(tokens: &Tokens, i: usize) -> bool {
    let words: Vec<&str> = tokens[i..].iter().take(6).map(|t| t.1.as_str()).collect();
    matches!(words.as_slice(), ["#", "[", "test", "]", ..])
        || matches!(words.as_slice(), ["#", "[", "cfg", "(", "test", ")"])
        || matches!(words.as_slice(), ["#", "[", "cfg", "(", "all", "("]) && attribute_mentions_test(tokens, i)
}

fn attribute_mentions_test(tokens: &Tokens, i: usize) -> bool {
    let end = matching(tokens, i + 1, "[", "]").unwrap_or(tokens.len());
    tokens[i..end].iter().any(|t| t.1 == "test")
}

/// The index of the token closing the bracket opened at `tokens[open]`.
fn matching(tokens: &Tokens, open: usize, opener: &str, closer: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (j, (_, tok)) in tokens.iter().enumerate().skip(open) {
        if tok == opener {
            depth += 1;
        } else if tok == closer {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// Skips the item a test attribute at `tokens[i]` applies to (its other attributes included). Returns
/// the index after it and, for `mod name;`, the name and its `#[path = ".."]` if any.
fn skip_test_item(tokens: &Tokens, mut i: usize, lines: &[&str]) -> (usize, Option<(String, Option<String>)>) {
    let mut path_attr = None;
    while tokens.get(i).is_some_and(|t| t.1 == "#") {
        let close = matching(tokens, i + 1, "[", "]").unwrap_or(tokens.len() - 1);
        if tokens.get(i + 2).is_some_and(|t| t.1 == "path") {
            path_attr = lines.get(tokens[i].0 - 1).and_then(|l| l.split('"').nth(1)).map(str::to_string);
        }
        i = close + 1;
    }
    let mut j = i;
    while j < tokens.len() {
        match tokens[j].1.as_str() {
            ";" => {
                let declared = (j >= 2 && tokens[j - 2].1 == "mod").then(|| (tokens[j - 1].1.clone(), path_attr));
                return (j + 1, declared);
            }
            "{" => return (matching(tokens, j, "{", "}").map_or(tokens.len(), |c| c + 1), None),
            "(" | "[" => j = matching(tokens, j, &tokens[j].1, if tokens[j].1 == "(" { ")" } else { "]" }).unwrap_or(j),
            _ => {}
        }
        j += 1;
    }
    (tokens.len(), None)
}

/// The files `mod name;` in `path` may mean (Rust's rules: beside a `mod.rs`/`lib.rs`/`main.rs`, in a
/// folder named after any other file; a `#[path]` is relative to the declaring file's folder).
fn declared_files(path: &str, name: &str, path_attr: Option<&str>) -> Vec<String> {
    let file = Path::new(path);
    let dir = file.parent().unwrap_or(Path::new(""));
    if let Some(p) = path_attr {
        return vec![dir.join(p).display().to_string()];
    }
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let base: PathBuf = if matches!(stem, "mod" | "lib" | "main") { dir.to_path_buf() } else { dir.join(stem) };
    vec![base.join(format!("{name}.rs")).display().to_string(), base.join(name).join("mod.rs").display().to_string()]
}

/// For a `fn` whose signature starts at `tokens[i]`: the index of its body's closing brace, or none for a
/// declaration without a body (`fn f();` in a trait or an `extern` block).
fn body_end(tokens: &Tokens, mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    while i < tokens.len() {
        match tokens[i].1.as_str() {
            "(" | "[" => depth += 1,
            ")" | "]" => depth = depth.saturating_sub(1),
            ";" if depth == 0 => return None,
            "{" if depth == 0 => return matching(tokens, i, "{", "}"),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Every production function over `MAX_LINES` under `crates/*/src` of the workspace at `root`, as
/// `path:line fn name: N lines`.
pub fn too_long_in_workspace(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(root.join("crates")).unwrap().map(|e| e.unwrap().path().join("src")).collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                files.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    too_long(&files)
}

/// Every production function over `MAX_LINES` in the files given as (path, text).
pub fn too_long(files: &[(String, String)]) -> Vec<String> {
    let scans: Vec<(&String, FileScan)> = files.iter().map(|(p, t)| (p, scan(p, t))).collect();
    let test_files: Vec<&String> = scans.iter().flat_map(|(_, s)| &s.test_files).collect();
    let mut found = Vec::new();
    for (path, scan) in &scans {
        if test_files.contains(path) {
            continue;
        }
        for f in scan.functions.iter().filter(|f| f.lines > MAX_LINES) {
            found.push(format!("{path}:{} fn {}: {} lines", f.line, f.name, f.lines));
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(name: &str, body_lines: usize) -> String {
        format!("fn {name}(a: [u8; 2]) -> u8 {{\n{}    a[0]\n}}\n", "    let _ = \"}\"; // {\n".repeat(body_lines - 1))
    }

    /// Functions still being split on another branch, as "path fn name"; each must still be too long here:
    /// remove it once it is not.
    const PENDING: [&str; 0] = [];

    #[test]
    fn no_production_function_is_longer_than_70_lines() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let found = too_long_in_workspace(&root);
        let pending = |f: &String| {
            PENDING.iter().any(|p| {
                p.split_once(' ')
                    .is_some_and(|(file, name)| f.starts_with(&format!("{file}:")) && f.contains(&format!(" {name}: ")))
            })
        };
        let mut problems: Vec<String> = found.iter().filter(|f| !pending(f)).cloned().collect();
        for p in PENDING {
            if !found.iter().any(|f| pending(f) && f.contains(p.split_once(' ').unwrap().1)) {
                problems.push(format!("{p} is short now (or gone): remove it from PENDING"));
            }
        }
        assert!(
            problems.is_empty(),
            "production functions over {MAX_LINES} lines (split them):\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn a_planted_long_function_is_counted_from_fn_to_its_closing_brace() {
        let text = format!("//! doc\n\n{}{}", function("short", 68), function("long", 69));
        let scan = scan("lib.rs", &text);
        assert_eq!(
            scan.functions,
            [
                Function { name: "short".into(), line: 3, lines: 70 },
                Function { name: "long".into(), line: 73, lines: 71 },
            ]
        );
        let found = too_long(&[("a/lib.rs".to_string(), text)]);
        assert_eq!(found, ["a/lib.rs:73 fn long: 71 lines"]);
    }

    #[test]
    fn test_code_and_bodiless_declarations_are_not_counted() {
        let long = function("long", 80);
        let text = format!(
            "trait T {{ fn f(&self) -> [u8; 3]; }}\n#[cfg(test)]\nmod tests {{\n{long}}}\n#[test]\n{long}\
             #[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod x_tests;\n#[cfg(test)]\nmod more;\n"
        );
        let files = [
            ("src/a.rs".to_string(), text),
            ("src/x_tests.rs".to_string(), long.clone()),
            ("src/a/more.rs".to_string(), long.clone()),
            ("src/b.rs".to_string(), long),
        ];
        assert_eq!(scan("src/a.rs", &files[0].1).functions, []);
        assert_eq!(too_long(&files), ["src/b.rs:1 fn long: 82 lines"]);
    }
}
