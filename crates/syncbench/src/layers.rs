//! The layer rule of this crate (ARCHITECTURE.md), checked over the source text: every `crate::` path,
//! grouped `use crate::{..}` tree and `super::` path that climbs out of its module is mapped to the
//! (layer, module) it names, and a module may only use modules of its own layer or of a lower one, with
//! no cycle between modules, nor between the files of one module. The test reads the files, so a new `use` is checked the moment it is written.

use std::collections::{BTreeMap, BTreeSet};

mod function_length;

/// The layers, bottom first. A module may use its own layer and the ones before it.
pub const LAYERS: [&str; 7] = ["core", "observe", "measure", "proof", "advise", "present", "cmd"];

/// One module at the second level: `("observe", "probe")` for everything under `src/observe/probe/`.
/// `advise` is a layer of one module; `cli.rs` and `main.rs` belong to `cmd`.
pub type Unit = (String, String);

/// What the checker found.
#[derive(Debug, Default)]
pub struct Findings {
    /// One line per broken rule, naming the file, the line and the path.
    pub problems: Vec<String>,
    /// The longest chain of module dependencies from `cmd` down to `core`.
    pub longest_path: Vec<Unit>,
}

/// One use of another module: where it is written and what it names.
struct Edge {
    from: Unit,
    to: Unit,
    at: String,
}

/// Checks the files given as (path under src/, text).
pub fn check(files: &[(String, String)]) -> Findings {
    let mut problems = Vec::new();
    let mut edges = Vec::new();
    let declared = modules_by_path_attribute(files);
    for (path, text) in files {
        let Some(module) = declared.get(path).cloned().or_else(|| module_of_file(path)) else { continue };
        let Some(from) = unit_of(&module) else {
            problems.push(format!("{path}: not in a layer — put it under one of {LAYERS:?} (see ARCHITECTURE.md)"));
            continue;
        };
        for (line, target) in paths_in(&module, text, path == "main.rs") {
            match unit_of(&target) {
                Some(to) if to != from => edges.push(Edge { from: from.clone(), to, at: format!("{path}:{line}") }),
                Some(_) => {}
                None => problems.push(format!("{path}:{line}: `crate::{}` is not in a layer", target.join("::"))),
            }
        }
    }
    problems.extend(upward_uses(&edges));
    let graph = graph_of(&edges);
    problems.extend(cycles(&graph, &edges));
    problems.extend(file_cycles(files, &declared));
    let longest_path = if problems.is_empty() { longest_path(&graph) } else { Vec::new() };
    Findings { problems, longest_path }
}

/// The module path a file defines: `observe/probe/mod.rs` → `[observe, probe]`; none for `lib.rs` (the
/// list of layers) and for this checker.
fn module_of_file(path: &str) -> Option<Vec<String>> {
    let stem = path.strip_suffix(".rs")?;
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    match parts.last().map(String::as_str) {
        _ if parts[0] == "layers" => return None,
        Some("lib") if parts.len() == 1 => return None,
        Some("main") if parts.len() == 1 => return Some(vec!["cmd".into(), "main".into()]),
        Some("mod") => {
            parts.pop();
        }
        _ => {}
    }
    Some(parts)
}

/// Files declared with `#[path = "file.rs"] mod name;` are the module `name` inside the declaring file's
/// module (the path is relative to the declaring file's directory).
fn modules_by_path_attribute(files: &[(String, String)]) -> BTreeMap<String, Vec<String>> {
    let mut found = BTreeMap::new();
    for (path, text) in files {
        let Some(module) = module_of_file(path) else { continue };
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[path = \"") {
            rest = &rest[at + "#[path = \"".len()..];
            let Some(end) = rest.find('"') else { break };
            let name = rest[end..].split("mod ").nth(1).and_then(|s| s.split(';').next());
            if let Some(name) = name {
                let file = if dir.is_empty() { rest[..end].to_string() } else { format!("{dir}/{}", &rest[..end]) };
                found.insert(file, [module.clone(), vec![name.trim().to_string()]].concat());
            }
        }
    }
    found
}

/// The (layer, module) a module path from the crate root belongs to; `None` outside every layer.
fn unit_of(path: &[String]) -> Option<Unit> {
    let first = path.first()?.as_str();
    let second = path.get(1).cloned();
    match first {
        "advise" => Some(("advise".into(), "advise".into())),
        "cli" => Some(("cmd".into(), "cli".into())),
        "cmd" => Some(("cmd".into(), second.unwrap_or_else(|| "mod".into()))),
        layer if LAYERS.contains(&layer) => Some((layer.into(), second.unwrap_or_else(|| "mod".into()))),
        _ => None,
    }
}

fn layer_rank(unit: &Unit) -> usize {
    LAYERS.iter().position(|l| *l == unit.0).expect("units are built from LAYERS")
}

fn name(unit: &Unit) -> String {
    if unit.0 == unit.1 { unit.0.clone() } else { format!("{}::{}", unit.0, unit.1) }
}

fn upward_uses(edges: &[Edge]) -> Vec<String> {
    edges
        .iter()
        .filter(|e| layer_rank(&e.to) > layer_rank(&e.from))
        .map(|e| {
            format!(
                "{}: {} uses {} — `{}` is above `{}`: move the shared part down or pass it in",
                e.at,
                name(&e.from),
                name(&e.to),
                e.to.0,
                e.from.0
            )
        })
        .collect()
}

type Graph = BTreeMap<Unit, BTreeSet<Unit>>;

fn graph_of(edges: &[Edge]) -> Graph {
    let mut graph = Graph::new();
    for e in edges {
        graph.entry(e.from.clone()).or_default().insert(e.to.clone());
        graph.entry(e.to.clone()).or_default();
    }
    graph
}

/// One line per cycle: the modules around it and, for each step, the first place that takes it.
fn cycles(graph: &Graph, edges: &[Edge]) -> Vec<String> {
    let mut reported = BTreeSet::new();
    let mut problems = Vec::new();
    for start in graph.keys() {
        let Some(cycle) = cycle_through(graph, start) else { continue };
        let key: BTreeSet<Unit> = cycle.iter().cloned().collect();
        if !reported.insert(key) {
            continue;
        }
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                let at = edges.iter().find(|e| e.from == w[0] && e.to == w[1]).map_or("?", |e| e.at.as_str());
                format!("{} -> {} ({at})", name(&w[0]), name(&w[1]))
            })
            .collect();
        problems.push(format!("import cycle: {}", steps.join(", ")));
    }
    problems
}

/// Files of one module that use each other, directly or round a ring (`probe/rules.rs` and
/// `probe/device_rules.rs` once did): one job split in two, or a shared part that wants a file of its
/// own. A file may use its ancestors (a `mod.rs` is its children's interface), so a path into a parent
/// is no edge; uses between modules are [`cycles`]' business.
fn file_cycles(files: &[(String, String)], declared: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let module_of = |path: &String| declared.get(path).cloned().or_else(|| module_of_file(path));
    let known: BTreeSet<Vec<String>> = files.iter().filter_map(|(path, _)| module_of(path)).collect();
    let file_unit = |m: &[String]| (m[0].clone(), m[1..].join("::"));
    let mut edges = Vec::new();
    for (path, text) in files {
        let Some(module) = module_of(path).filter(|m| m.len() > 1) else { continue };
        for (line, target) in paths_in(&module, text, path == "main.rs") {
            let Some(to) = (2..=target.len()).rev().map(|n| &target[..n]).find(|p| known.contains(*p)) else {
                continue;
            };
            if module.starts_with(to) || unit_of(to) != unit_of(&module) {
                continue;
            }
            edges.push(Edge { from: file_unit(&module), to: file_unit(to), at: format!("{path}:{line}") });
        }
    }
    cycles(&graph_of(&edges), &edges)
}

/// The shortest way from `start` back to itself, as the list of modules (first = last = `start`).
fn cycle_through(graph: &Graph, start: &Unit) -> Option<Vec<Unit>> {
    let mut came_from: BTreeMap<&Unit, &Unit> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for next in &graph[at] {
            if next == start {
                let mut path = vec![start.clone(), at.clone()];
                let mut step = at;
                while step != start {
                    step = came_from[step];
                    path.push(step.clone());
                }
                path.reverse();
                return Some(path);
            }
            if !came_from.contains_key(next) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

/// The longest dependency chain (in steps) starting in `cmd` and ending in `core`; the graph is acyclic.
fn longest_path(graph: &Graph) -> Vec<Unit> {
    fn from<'g>(graph: &'g Graph, at: &'g Unit, memo: &mut BTreeMap<&'g Unit, Vec<Unit>>) -> Vec<Unit> {
        if let Some(known) = memo.get(at) {
            return known.clone();
        }
        let best = graph[at]
            .iter()
            .map(|next| from(graph, next, memo))
            .filter(|tail| tail.last().is_some_and(|u| u.0 == "core"))
            .max_by_key(Vec::len)
            .unwrap_or_default();
        let path = if best.is_empty() && at.0 != "core" { Vec::new() } else { [vec![at.clone()], best].concat() };
        memo.insert(at, path.clone());
        path
    }
    let mut memo = BTreeMap::new();
    graph.keys().filter(|u| u.0 == "cmd").map(|u| from(graph, u, &mut memo)).max_by_key(Vec::len).unwrap_or_default()
}

/// Every module path a file names, with its line: `crate::` paths and grouped trees (`syncbench::` in
/// main.rs), and `super::` paths resolved against the file's module and the inline `mod` blocks around
/// them. Comments and string literals are skipped.
fn paths_in(module: &[String], text: &str, is_main: bool) -> Vec<(usize, Vec<String>)> {
    let tokens = tokens_of(text);
    let root = if is_main { "syncbench" } else { "crate" };
    let mut found = Vec::new();
    let mut inline_mods: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let (line, tok) = (tokens[i].0, tokens[i].1.as_str());
        match tok {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline_mods.last().is_some_and(|(_, d)| *d == depth) {
                    inline_mods.pop();
                }
            }
            "mod" if tokens.get(i + 2).is_some_and(|t| t.1 == "{") => {
                inline_mods.push((tokens[i + 1].1.clone(), depth));
            }
            _ if (tok == root || tok == "$crate") && is_sep(&tokens, i + 1) => {
                let (paths, next) = use_tree(&tokens, i + 2, Vec::new());
                found.extend(paths.into_iter().map(|p| (line, p)));
                i = next;
                continue;
            }
            "super" if is_sep(&tokens, i + 1) && (i == 0 || !is_sep(&tokens, i - 1)) => {
                let mut here: Vec<String> = module.to_vec();
                here.extend(inline_mods.iter().map(|(m, _)| m.clone()));
                let mut j = i;
                while tokens.get(j).is_some_and(|t| t.1 == "super") && is_sep(&tokens, j + 1) {
                    here.pop();
                    j += 2;
                }
                let (paths, next) = use_tree(&tokens, j, here);
                found.extend(paths.into_iter().map(|p| (line, p)));
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

fn is_sep(tokens: &[(usize, String)], i: usize) -> bool {
    tokens.get(i).is_some_and(|t| t.1 == "::")
}

/// Reads a path or use tree starting at `tokens[i]` below `prefix`: `a::b::c`, `a::{b, c::d}`, `{a, b}`.
/// Returns the full paths it names and the index after it.
fn use_tree(tokens: &[(usize, String)], mut i: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    loop {
        let Some((_, tok)) = tokens.get(i) else { return (vec![path], i) };
        if tok == "{" {
            let mut all = Vec::new();
            i += 1;
            while tokens.get(i).is_some_and(|t| t.1 != "}") {
                if tokens[i].1 == "," {
                    i += 1;
                    continue;
                }
                let (paths, next) = use_tree(tokens, i, path.clone());
                all.extend(paths);
                i = next;
            }
            return (all, i + 1);
        }
        if !tok.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return (vec![path], i);
        }
        path.push(tok.clone());
        if !is_sep(tokens, i + 1) {
            return (vec![path], i + 1);
        }
        i += 2;
    }
}

/// The text as (line, token): identifiers, `::`, and single punctuation; comments, strings and char
/// literals are dropped (a lifetime's `'` is dropped and its name kept).
fn tokens_of(text: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let start_line = line;
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i = skip_block_comment(&chars, i, &mut line);
        } else if c == '"' || (c == 'r' && matches!(next, Some('"' | '#')) && raw_string_start(&chars, i)) {
            i = skip_string(&chars, i, &mut line);
        } else if c == '\'' {
            i = skip_char_literal(&chars, i);
        } else if c == ':' && next == Some(':') {
            tokens.push((start_line, "::".to_string()));
            i += 2;
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let word_start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                i += 1;
            }
            tokens.push((start_line, chars[word_start..i].iter().collect()));
        } else {
            if !c.is_whitespace() {
                tokens.push((start_line, c.to_string()));
            }
            i += 1;
        }
    }
    tokens
}

fn skip_block_comment(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
            ('*', Some('/')) => {
                (depth, i) = (depth - 1, i + 2);
                if depth == 0 {
                    return i;
                }
            }
            ('\n', _) => (*line, i) = (*line + 1, i + 1),
            _ => i += 1,
        }
    }
    i
}

/// `r"`, `r#"`, `r##"`: a raw string starts here (and not an identifier ending in r).
fn raw_string_start(chars: &[char], i: usize) -> bool {
    let before_is_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    !before_is_ident && chars.get(j) == Some(&'"')
}

fn skip_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    if chars[i] == 'r' {
        let mut hashes = 0;
        i += 1;
        while chars[i] == '#' {
            hashes += 1;
            i += 1;
        }
        i += 1;
        while i < chars.len() {
            if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                return i + 1 + hashes;
            }
            *line += usize::from(chars[i] == '\n');
            i += 1;
        }
        return i;
    }
    i += 1;
    while i < chars.len() && chars[i] != '"' {
        *line += usize::from(chars[i] == '\n');
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// `'x'`, `'\n'`, `'\u{..}'` are skipped whole; a lifetime `'a` only loses its quote.
fn skip_char_literal(chars: &[char], i: usize) -> usize {
    if chars.get(i + 1) == Some(&'\\') {
        let mut j = i + 3;
        while j < chars.len() && chars[j] != '\'' {
            j += 1;
        }
        return j + 1;
    }
    if chars.get(i + 2) == Some(&'\'') { i + 3 } else { i + 1 }
}

#[cfg(test)]
mod tests;
