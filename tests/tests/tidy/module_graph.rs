//! The module graph of a crate's `src`, read from its text: which module's code names which
//! other module (`use super::x`, `use crate::a::{b, c}`, `super::x::f`, `crate::x::T`, a child's
//! `x::f`), so that a test can say the graph has no cycle and, when it has, show one. It reads
//! code as rustfmt lays it out (an inline `mod name {` closes on a `}` at its own indentation).

use std::collections::{BTreeMap, BTreeSet};

/// A module, as the path of names from the crate's root (the root is empty).
pub type Module = Vec<String>;

/// The module a file of `src` is: `worker/jobs.rs` and `worker/jobs/mod.rs` are `worker::jobs`,
/// `lib.rs` the root.
pub fn module_of(rel: &str) -> Module {
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut names: Module = rel.split('/').map(String::from).collect();
    if matches!(
        names.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        names.pop();
    }
    names
}

/// `text` with its comments, strings and character literals blanked (line breaks kept), so that
/// only code is read.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let find = |from: usize, pat: &str| {
        let pat: Vec<char> = pat.chars().collect();
        (from..c.len())
            .find(|&j| c[j..].starts_with(&pat))
            .map_or(c.len(), |j| j + pat.len())
    };
    let ident = |j: usize| j > 0 && (c[j - 1].is_alphanumeric() || c[j - 1] == '_');
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
        let raw = c[i] == 'r'
            && c.get(i + 1 + hashes) == Some(&'"')
            && (!ident(i) || (c[i - 1] == 'b' && !ident(i - 1)));
        let end = match (c[i], next) {
            ('/', Some('/')) => find(i, "\n") - 1,
            ('/', Some('*')) => find(i + 2, "*/"),
            ('r', _) if raw => find(i + 2 + hashes, &format!("\"{}", "#".repeat(hashes))),
            ('"', _) => {
                let mut j = i + 1;
                while j < c.len() && c[j] != '"' {
                    j += if c[j] == '\\' { 2 } else { 1 };
                }
                j + 1
            }
            ('\'', Some('\\')) => find(i + 3, "'"),
            ('\'', _) if c.get(i + 2) == Some(&'\'') => i + 3,
            _ => i + 1,
        };
        let end = end.clamp(i + 1, c.len());
        if end == i + 1 {
            out.push(c[i]);
        } else {
            out.extend(c[i..end].iter().map(|&x| if x == '\n' { x } else { ' ' }));
        }
        i = end;
    }
    out
}

/// Each `use` tree as the paths it names: `super::{a, b::{self, C}}` → `super::a`, `super::b`,
/// `super::b::C`.
fn use_paths(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let leaf = tree.split(" as ").next().unwrap_or(tree).trim();
        let path = format!("{prefix}{leaf}");
        let path = path.trim_end_matches("::*").trim_end_matches("::self");
        out.push(path.trim_end_matches("::").to_string());
        return;
    };
    let head = format!("{prefix}{}", &tree[..open]);
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut start) = (0, 0);
    for (at, ch) in inner.char_indices().chain([(inner.len(), ',')]) {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                if !inner[start..at].trim().is_empty() {
                    use_paths(&inner[start..at], &head, out);
                }
                start = at + 1;
            }
            _ => {}
        }
    }
}

/// Every path of a module's code that may name a module, with the line it is on: each `use`
/// tree's paths, then every other `a::b…` of the code the `use`s leave.
fn named_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut rest: Vec<char> = code.chars().collect();
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let line_of = |rest: &[char], at: usize| rest[..at].iter().filter(|&&ch| ch == '\n').count();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 4 < rest.len() {
        let starts_use = rest[i..i + 3] == ['u', 's', 'e'] && rest[i + 3].is_whitespace();
        if starts_use && (i == 0 || !is_ident(rest[i - 1])) {
            let end = (i..rest.len())
                .find(|&j| rest[j] == ';')
                .unwrap_or(rest.len());
            let tree: String = rest[i + 4..end].iter().collect();
            let mut paths = Vec::new();
            use_paths(
                &tree.split_whitespace().collect::<Vec<_>>().join(" "),
                "",
                &mut paths,
            );
            let line = line_of(&rest, i);
            for path in paths {
                out.push((
                    line,
                    path.split("::").map(|s| s.trim().to_string()).collect(),
                ));
            }
            for ch in &mut rest[i..end] {
                *ch = if *ch == '\n' { '\n' } else { ' ' };
            }
            i = end;
        }
        i += 1;
    }
    let text: String = rest.iter().collect();
    for (line, l) in text.lines().enumerate() {
        let mut from = 0;
        for (at, _) in l.match_indices("::") {
            let head = l[..at].trim_end_matches(is_ident);
            if at < from || head.ends_with("::") || head.len() == at {
                continue;
            }
            let tail = &l[head.len()..];
            let path: Vec<&str> = tail.split("::").collect();
            let mut segs = Vec::new();
            for seg in path {
                let word: String = seg.chars().take_while(|&ch| is_ident(ch)).collect();
                let whole = word.len() == seg.len();
                segs.push(word);
                if !whole {
                    break;
                }
            }
            from = head.len() + segs.iter().map(|s| s.len() + 2).sum::<usize>();
            out.push((line, segs));
        }
    }
    out
}

/// The inline modules around each line (`mod tests {` … `}`), outermost first.
fn inline_modules(code: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = code.lines().collect();
    let mut around = vec![Vec::new(); lines.len()];
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let body = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .fold(body, |b, p| b.strip_prefix(p).unwrap_or(b));
        let Some(name) = body.strip_prefix("mod ").and_then(|b| b.strip_suffix(" {")) else {
            continue;
        };
        let close = lines[i + 1..]
            .iter()
            .position(|l| l.strip_prefix(indent).is_some_and(|r| r.starts_with('}')))
            .map_or(lines.len(), |c| i + 1 + c);
        for inside in &mut around[i + 1..close] {
            inside.push(name.trim().to_string());
        }
    }
    around
}

/// The module a path names from module `here` (`crate::a::b::T` → `a::b` when `a::b` is a
/// module): the longest known module it starts with; `None` for other crates and plain names.
fn resolve(path: &[String], here: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let first = path.first()?.as_str();
    let (mut at, rest): (Module, &[String]) = match first {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (here.to_vec(), &path[1..]),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            (here[..here.len().checked_sub(ups)?].to_vec(), &path[ups..])
        }
        name if modules.contains(&[here, &[name.to_string()]].concat()) => (here.to_vec(), path),
        _ => return None,
    };
    for name in rest {
        let next = [at.as_slice(), std::slice::from_ref(name)].concat();
        if !modules.contains(&next) {
            break;
        }
        at = next;
    }
    // `self` and `super` inside an inline module land in it; it belongs to its file's module.
    while !modules.contains(&at) {
        at.pop()?;
    }
    Some(at)
}

/// The graph of `files` (path under `src`, text): each module with the other modules its code
/// names.
pub fn graph(files: &[(String, String)]) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules: BTreeSet<Module> = files.iter().map(|(rel, _)| module_of(rel)).collect();
    // The root's re-exports (`pub use validate::ValidSpec;`): `crate::ValidSpec` names the module
    // the item is in, not the root.
    let mut reexports: BTreeMap<String, Module> = BTreeMap::new();
    for (_, text) in files.iter().filter(|(rel, _)| module_of(rel).is_empty()) {
        let code = code_only(text);
        for item in code.split(';') {
            let item = item.split_whitespace().collect::<Vec<_>>().join(" ");
            let Some(at) = item.find("pub use ") else {
                continue;
            };
            let mut paths = Vec::new();
            use_paths(&item[at + "pub use ".len()..], "", &mut paths);
            for path in paths {
                let segs: Vec<String> = path.split("::").map(|s| s.trim().to_string()).collect();
                if let (Some(name), Some(target)) = (
                    segs.last(),
                    resolve(&segs, &[], &modules).filter(|t| !t.is_empty()),
                ) {
                    reexports.insert(name.clone(), target);
                }
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (rel, text) in files {
        let module = module_of(rel);
        let code = code_only(text);
        let around = inline_modules(&code);
        let mut named = BTreeSet::new();
        for (line, path) in named_paths(&code) {
            let here = [
                module.as_slice(),
                around.get(line).map_or(&[][..], Vec::as_slice),
            ]
            .concat();
            let target = resolve(&path, &here, &modules).map(|t| {
                match (t.is_empty(), path.first().map(String::as_str), path.get(1)) {
                    (true, Some("crate"), Some(name)) => reexports.get(name).cloned().unwrap_or(t),
                    _ => t,
                }
            });
            if let Some(target) = target.filter(|t| *t != module) {
                named.insert(target);
            }
        }
        graph.insert(module, named);
    }
    graph
}

/// A cycle of the graph, as the modules along it with the first one again at the end.
pub fn cycle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit<'a>(
        node: &'a Module,
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        done: &mut BTreeSet<&'a Module>,
        path: &mut Vec<&'a Module>,
    ) -> Option<Vec<Module>> {
        if let Some(at) = path.iter().position(|m| *m == node) {
            return Some(
                path[at..]
                    .iter()
                    .chain([&node])
                    .map(|m| m.to_vec())
                    .collect(),
            );
        }
        if !done.insert(node) {
            return None;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, done, path) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|start| visit(start, graph, &mut done, &mut Vec::new()))
}

/// Every two-way tie of the graph: each pair of modules that can reach each other, once, as
/// the groups of modules that all reach each other (strongly connected components of more than
/// one module), so that a count of cycles means the same thing from one change to the next.
pub fn tangles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let reach = |from: &Module| {
        let mut seen: BTreeSet<&Module> = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(m) = todo.pop() {
            for next in graph.get(m).into_iter().flatten() {
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&Module, BTreeSet<&Module>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut placed: BTreeSet<&Module> = BTreeSet::new();
    let mut out = Vec::new();
    for m in graph.keys() {
        if placed.contains(m) || !reached[m].contains(m) {
            continue;
        }
        let group: Vec<Module> = reached[m]
            .iter()
            .filter(|o| reached.get(*o).is_some_and(|r| r.contains(m)))
            .map(|o| o.to_vec())
            .collect();
        placed.extend(reached[m].iter().filter(|o| group.contains(o)));
        out.push(group);
    }
    out
}
