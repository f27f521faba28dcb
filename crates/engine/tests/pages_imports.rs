//! The files of `src/pages` use each other in one direction: no file-level import circle (two files that
//! use each other, directly or round a ring). The store owns its torn-page protection and calls it; the
//! protections reach the store only through `pages/access.rs`, below both; recovery and transactions use
//! the store, never the reverse. A circle makes every file in it depend on all the others, so none can
//! be read, tested or changed alone (ARCHITECTURE.md, "The engine's page store").
//!
//! The checker reads every `.rs` file under `src/pages`, skips comments, strings and the `#[cfg(test)]`
//! module at its end, and takes every `use` tree and every inline `crate::pages::…`, `super::…` and
//! `self::…` path (and `use` paths that start with a child module's name). Each is resolved to the file
//! that defines the item, through `pub use` re-exports of `mod.rs` files. A file may use an ancestor's
//! `mod.rs` (its module's interface): those edges are not counted. What it cannot see: inherent methods
//! called with no path (a method of `PageStore` defined in `recovery.rs` and called from `store.rs`);
//! `store.rs` calls none.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Files by module path (`["protection", "none"]`), with their text.
type Files = BTreeMap<Vec<String>, String>;

fn module_of(relative: &Path) -> Vec<String> {
    let mut segs: Vec<String> = relative.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    let last = segs.pop().expect("a file name");
    if last != "mod.rs" {
        segs.push(last.trim_end_matches(".rs").to_string());
    }
    segs
}

fn read_pages(dir: &Path, root: &Path, files: &mut Files) {
    for entry in std::fs::read_dir(dir).expect("read src/pages") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            read_pages(&path, root, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("read a source file");
            files.insert(module_of(path.strip_prefix(root).expect("under src/pages")), text);
        }
    }
}

fn file_name(module: &[String], files: &Files) -> String {
    let is_dir = files.keys().any(|k| k.len() > module.len() && k.starts_with(module));
    match (module.is_empty(), is_dir) {
        (true, _) => "mod.rs".to_string(),
        (false, true) => format!("{}/mod.rs", module.join("/")),
        (false, false) => format!("{}.rs", module.join("/")),
    }
}

/// The code of a file: comments, string literals and the trailing `#[cfg(test)] mod` removed.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    let (chars, mut out, mut i) = (text.chars().collect::<Vec<_>>(), String::new(), 0);
    while i < chars.len() {
        let next = chars.get(i + 1).copied();
        if chars[i] == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if chars[i] == '/' && next == Some('*') {
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if chars[i] == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// Expand a `use` tree (`a::{b, c::{d, e as f}}`) into its paths, each with the name it binds.
fn expand_tree(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = split_path(&tree[..open]);
        let inner = &tree[open + 1..tree.rfind('}').expect("closing brace")];
        let mut path = prefix.to_vec();
        path.extend(head);
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_tree(&path, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_tree(&path, &inner[start..], out);
    } else if !tree.is_empty() {
        let (path_text, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p, Some(a.trim().to_string())),
            None => (tree, None),
        };
        let mut path = prefix.to_vec();
        path.extend(split_path(path_text));
        if path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
        let name = alias.unwrap_or_else(|| path.last().cloned().unwrap_or_default());
        out.push((path, name));
    }
}

fn split_path(text: &str) -> Vec<String> {
    text.split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

/// Every `use` of a file's code: (path, bound name, re-exported).
fn use_trees(code: &str) -> Vec<(Vec<String>, String, bool)> {
    let mut out = Vec::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let item_like = |at: usize| {
            let before = statement[..at].trim_end();
            let boundary = statement[..at].chars().next_back().is_none_or(|c| c.is_whitespace() || c == ')');
            let after = statement[at + 4..].trim_start();
            boundary
                && [")", "pub", "}", "]", ""].iter().any(|end| before.ends_with(end))
                && after.starts_with(|c: char| c.is_alphabetic() || c == '{')
        };
        let Some(at) = statement.match_indices("use ").map(|(at, _)| at).find(|&at| item_like(at)) else { continue };
        let (before, tree) = statement.split_at(at);
        let before = before.trim();
        let mut paths = Vec::new();
        expand_tree(&[], &tree[4..], &mut paths);
        let exported = before.rsplit(['}', ';']).next().unwrap_or("").trim_start().starts_with("pub");
        out.extend(paths.into_iter().map(|(p, n)| (p, n, exported)));
    }
    out
}

/// Inline `crate::…`, `super::…`, `self::…` and `child::…` paths of a file's code (those in `use` trees
/// too), `children` being its child modules (a `mod.rs` calls them by name: `none::write_one`).
fn inline_paths(code: &str, children: &[String]) -> Vec<Vec<String>> {
    let mut starts: Vec<String> = ["crate::", "super::", "self::"].map(String::from).to_vec();
    starts.extend(children.iter().map(|c| format!("{c}::")));
    let code = code.replace("pub(in crate::pages)", "pub");
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let word_start = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == ':');
        let rest: String = chars[i..chars.len().min(i + 40)].iter().collect();
        if word_start && starts.iter().any(|s| rest.starts_with(s.as_str())) {
            let mut j = i;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_' || chars[j] == ':') {
                j += 1;
            }
            out.push(split_path(&chars[i..j].iter().collect::<String>()));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

struct Graph<'a> {
    files: &'a Files,
    /// Per module: the names its `pub use` lines re-export, and the path each stands for.
    exports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
}

impl<'a> Graph<'a> {
    fn new(files: &'a Files) -> Self {
        let mut exports = BTreeMap::new();
        for (module, text) in files {
            let names = use_trees(&code_of(text)).into_iter().filter(|(_, _, exported)| *exported);
            exports.insert(module.clone(), names.map(|(path, name, _)| (name, path)).collect());
        }
        Graph { files, exports }
    }

    /// The module a path used in `from` names or defines its item in; `None` outside `crate::pages`.
    fn resolve(&self, from: &[String], path: &[String], depth: usize) -> Option<Vec<String>> {
        assert!(depth < 16, "re-exports loop at {path:?}");
        let (mut module, rest) = match path.first().map(String::as_str) {
            Some("crate") if path.get(1).is_some_and(|s| s == "pages") => (Vec::new(), &path[2..]),
            Some("crate") => return None,
            Some("super") | Some("self") => {
                let mut module = from.to_vec();
                let ups = path.iter().take_while(|s| *s == "super").count();
                module.truncate(module.len().saturating_sub(ups));
                (module, &path[ups.max(usize::from(path[0] == "self"))..])
            }
            Some(first) if self.files.contains_key(&[from, &[first.to_string()]].concat()) => (from.to_vec(), path),
            _ => return None,
        };
        for (n, seg) in rest.iter().enumerate() {
            let child = [module.as_slice(), std::slice::from_ref(seg)].concat();
            if self.files.contains_key(&child) {
                module = child;
            } else if let Some(target) = self.exports.get(&module).and_then(|e| e.get(seg)) {
                let found = self.resolve(&module, target, depth + 1)?;
                let is_module = self.files.contains_key(&found) && found.last() == target.last();
                return if is_module { self.resolve_in(found, &rest[n + 1..], depth) } else { Some(found) };
            } else {
                break; // an item of `module`
            }
        }
        Some(module)
    }

    fn resolve_in(&self, module: Vec<String>, rest: &[String], depth: usize) -> Option<Vec<String>> {
        let mut path = vec!["crate".to_string(), "pages".to_string()];
        path.extend(module);
        path.extend(rest.iter().cloned());
        self.resolve(&[], &path, depth + 1)
    }

    /// Each file's uses of other files, ancestors' `mod.rs` left out.
    fn edges(&self) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
        let mut edges = BTreeMap::new();
        for (module, text) in self.files {
            let code = code_of(text);
            let mut paths: Vec<Vec<String>> = use_trees(&code).into_iter().map(|(p, _, _)| p).collect();
            let children: Vec<String> = (self.files.keys())
                .filter(|k| k.len() == module.len() + 1 && k.starts_with(module))
                .map(|k| k[module.len()].clone())
                .collect();
            paths.extend(inline_paths(&code, &children));
            let targets: BTreeSet<Vec<String>> = paths
                .iter()
                .filter_map(|p| self.resolve(module, p, 0))
                .filter(|t| t != module && !(module.starts_with(t) && self.is_dir(t)))
                .collect();
            edges.insert(module.clone(), targets);
        }
        edges
    }

    fn is_dir(&self, module: &[String]) -> bool {
        module.is_empty() || self.files.keys().any(|k| k.len() > module.len() && k.starts_with(module))
    }
}

/// `Err` naming the files of the first circle found, in order.
fn check(files: &Files) -> Result<(), String> {
    let edges = Graph::new(files).edges();
    let mut done = BTreeSet::new();
    for start in edges.keys() {
        let mut stack = Vec::new();
        if let Some(circle) = find_circle(start, &edges, &mut stack, &mut done) {
            let names: Vec<String> = circle.iter().map(|m| file_name(m, files)).collect();
            return Err(format!("import circle in src/pages: {}", names.join(" -> ")));
        }
    }
    Ok(())
}

fn find_circle(
    at: &Vec<String>,
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    stack: &mut Vec<Vec<String>>,
    done: &mut BTreeSet<Vec<String>>,
) -> Option<Vec<Vec<String>>> {
    if let Some(pos) = stack.iter().position(|m| m == at) {
        let mut circle = stack[pos..].to_vec();
        circle.push(at.clone());
        return Some(circle);
    }
    if done.contains(at) {
        return None;
    }
    stack.push(at.clone());
    for next in edges.get(at).into_iter().flatten() {
        if let Some(circle) = find_circle(next, edges, stack, done) {
            return Some(circle);
        }
    }
    stack.pop();
    done.insert(at.clone());
    None
}

fn real_pages() -> Files {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/pages");
    let mut files = Files::new();
    read_pages(&root, &root, &mut files);
    files
}

fn module(path: &str) -> Vec<String> {
    path.split('/').filter(|s| !s.is_empty()).map(String::from).collect()
}

#[test]
fn the_files_of_pages_use_each_other_in_one_direction() {
    let files = real_pages();
    assert!(files.contains_key(&module("store")) && files.contains_key(&module("protection")), "pages read");
    if let Err(circle) = check(&files) {
        panic!("{circle}: move what both need below them (pages/access.rs), see ARCHITECTURE.md");
    }
}

#[test]
fn a_protection_that_imports_the_store_back_is_refused() {
    let mut files = real_pages();
    files.get_mut(&module("protection/none")).unwrap().insert_str(0, "use crate::pages::store::PageStore;\n");
    let err = check(&files).unwrap_err();
    assert!(err.contains("store.rs") && err.contains("protection/none.rs"), "{err}");
}

#[test]
fn a_store_that_imports_recovery_back_is_refused() {
    let mut files = real_pages();
    files.get_mut(&module("store")).unwrap().insert_str(0, "fn planted() { super::recovery::check_settings(); }\n");
    let err = check(&files).unwrap_err();
    assert!(err.contains("store.rs") && err.contains("recovery.rs"), "{err}");
}

#[test]
fn a_circle_through_a_re_export_and_a_grouped_use_is_found() {
    let files: Files = [
        ("", "mod a;\nmod b;\npub use b::inner;\n"),
        ("a", "use super::{x::Y, inner::Z};\n"),
        ("b", "pub mod inner;\n"),
        ("b/inner", "pub struct Z;\nfn f() { crate::pages::a::g() }\n"),
    ]
    .into_iter()
    .map(|(m, text)| (module(m), text.to_string()))
    .collect();
    let err = check(&files).unwrap_err();
    assert!(err.contains("a.rs") && err.contains("b/inner.rs"), "{err}");
}

#[test]
fn comments_strings_tests_and_uses_of_an_ancestor_are_not_circles() {
    let files: Files = [
        ("", "mod a;\nmod b;\npub struct Config;\n"),
        ("a", "use super::Config;\nuse super::b::B;\n"),
        ("b", "// use super::a::A;\nconst S: &str = \"super::a::A\";\npub struct B;\n#[cfg(test)]\nmod tests {\n    use super::super::a::*;\n}\n"),
    ]
    .into_iter()
    .map(|(m, text)| (module(m), text.to_string()))
    .collect();
    assert_eq!(check(&files), Ok(()));
}

#[test]
fn the_checker_sees_the_uses_the_direction_rests_on() {
    let files = real_pages();
    let edges = Graph::new(&files).edges();
    let uses = |from: &str, to: &str| edges[&module(from)].contains(&module(to));
    // Grouped `use`, inline `child::` call, `use` through two re-exports, inline `super::` path.
    assert!(uses("store", "protection"), "store.rs owns its protection");
    assert!(uses("protection", "protection/none"), "protection/mod.rs calls none::");
    assert!(uses("pool", "protection/dw_pipelined/ring"), "pool.rs: super::dw_pipelined::RingCopy");
    assert!(uses("protection/fpw", "protection/none"), "fpw.rs: super::none::write_one");
    assert!(uses("protection/none", "access") && uses("tx", "store") && uses("recovery", "store"));
    assert!(!uses("protection/dw_pipelined/spool", "protection/dw_pipelined"), "a parent's mod.rs is not counted");
}
