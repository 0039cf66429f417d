//! The library (`src/`) imports in one direction only, at every level of its tree.
//!
//! - **No circle between files:** no module reaches, through any chain of `use`s or qualified
//!   paths, back to itself. Shared types live in leaf modules; a circle means two files hold one
//!   idea between them.
//! - **No arrow back up:** below any module, its children, each taken whole with everything under
//!   it, import in one direction too. `check` using `embedded` while something in `embedded`
//!   reaches into `check` is such an arrow even when no two files form a circle.
//!
//! Read from the source, as `cargo modules dependencies` would draw it: every file is a module
//! (`src/lib.rs` is the crate), an edge is a path in production code (`crate::x`, `super::x`,
//! `self::x`, `child::x`, in `use` trees and in code) that names another module or an item
//! defined or re-exported in it. Code gated by `#[cfg(test)]` (test modules, files declared by
//! them, gated items) is left out: tests may see everything. `src/main.rs` is its own crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path below the crate root, `["job", "template", "one_pass"]`; `[]` is the crate.
type Module = Vec<String>;
type Graph = BTreeMap<Module, BTreeSet<Module>>;

struct File {
    module: Module,
    /// Production code, comments, string contents and `#[cfg(test)]` items removed.
    code: String,
    /// Child modules declared for production code (`mod x;`, `pub(crate) mod x;`).
    children: Vec<String>,
}

fn read_tree(path: &Path, module: Module, files: &mut Vec<File>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let code = production_code(&strip_comments_and_strings(&text));
    let children = declared_modules(&code);
    // A file's children live in the folder named after it (`a.rs` -> `a/`), or beside it for
    // `lib.rs` and `mod.rs`.
    let folder = match path.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "mod.rs") => path.parent().map(Path::to_path_buf),
        _ => Some(path.with_extension("")),
    }
    .expect("a folder");
    for child in &children {
        let mut m = module.clone();
        m.push(child.clone());
        let file = folder.join(format!("{child}.rs"));
        let own = if file.exists() {
            file
        } else {
            folder.join(child).join("mod.rs")
        };
        read_tree(&own, m, files);
    }
    files.push(File {
        module,
        code,
        children,
    });
}

/// `text` with comments removed and string and char literals emptied, so that a path in a
/// message or a doc comment is not read as an import. Lines are kept.
fn strip_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                if chars[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !ident_before(&chars, i) {
            // A raw string: r"..." or r#"..."#.
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let closing: String = std::iter::once('"')
                .chain((0..hashes).map(|_| '#'))
                .collect();
            let closing: Vec<char> = closing.chars().collect();
            while j < chars.len() && chars[j..].get(..closing.len()) != Some(&closing[..]) {
                if chars[j] == '\n' {
                    out.push('\n');
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j + closing.len();
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                } else if chars[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' && char_literal_end(&chars, i).is_some() {
            out.push_str("' '");
            i = char_literal_end(&chars, i).unwrap_or(i) + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// The closing quote of a char literal opened at `i` (`'a'`, `'\n'`, `'\u{..}'`), not a lifetime.
fn char_literal_end(chars: &[char], i: usize) -> Option<usize> {
    if chars.get(i + 1) == Some(&'\\') {
        (i + 2..chars.len().min(i + 12)).find(|&j| chars[j] == '\'')
    } else {
        (chars.get(i + 2) == Some(&'\'')).then_some(i + 2)
    }
}

/// `code` without the items `#[cfg(test)]` gates: a declaration up to its `;`, or a block up to
/// the `}` at its indentation (as rustfmt lays it out).
fn production_code(code: &str) -> String {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            out.push_str(lines[i]);
            out.push('\n');
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < lines.len() && lines[j].trim_start().starts_with("#[") {
            j += 1;
        }
        let Some(item) = lines.get(j) else { break };
        let indent = item.len() - item.trim_start().len();
        let mut end = j;
        while end < lines.len() && !lines[end].trim_end().ends_with([';', '{']) {
            end += 1;
        }
        if lines.get(end).is_some_and(|l| l.trim_end().ends_with('{')) {
            end += 1;
            while end < lines.len() && lines[end] != format!("{}}}", " ".repeat(indent)) {
                end += 1;
            }
        }
        i = end + 1;
    }
    out
}

/// `x` for every `mod x;` (any visibility) in production code.
fn declared_modules(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|line| {
            let rest = line.trim_start();
            let rest = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .fold(rest, |r, p| r.strip_prefix(p).unwrap_or(r));
            let name = rest.strip_prefix("mod ")?.strip_suffix(';')?;
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
                .then(|| name.to_string())
        })
        .collect()
}

/// Every path of `code` that starts at `crate`, `super`, `self` or one of `children`, as
/// segments: the leaves of `use` trees (`use a::{b, c::{d, e}}` gives `a::b`, `a::c::d`,
/// `a::c::e`) and the qualified paths written in code.
fn paths(code: &str, children: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    let mut outside_uses = String::new();
    while let Some(at) = find_keyword(rest, "use ") {
        outside_uses.push_str(&rest[..at]);
        let tree = &rest[at + 4..];
        let end = tree.find(';').unwrap_or(tree.len());
        use_tree_leaves(&tree[..end], Vec::new(), &mut out);
        rest = &tree[end..];
    }
    outside_uses.push_str(rest);
    out.retain(|p| starts_locally(p, children));
    out.extend(code_paths(&outside_uses, children));
    out
}

/// Where the keyword `word` starts in `text`, as a whole word.
fn find_keyword(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        if at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

fn starts_locally(path: &[String], children: &[String]) -> bool {
    path.first()
        .is_some_and(|s| s == "crate" || s == "super" || s == "self" || children.contains(s))
}

fn use_tree_leaves(tree: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim().trim_start_matches("::");
    match tree.find('{') {
        Some(open) => {
            let mut head = prefix;
            head.extend(segments(&tree[..open]));
            let close = tree.rfind('}').unwrap_or(tree.len());
            for part in split_top_level(&tree[open + 1..close]) {
                use_tree_leaves(part, head.clone(), out);
            }
        }
        None => {
            let name = tree.split(" as ").next().unwrap_or("").trim();
            let mut full = prefix;
            full.extend(segments(name).into_iter().filter(|s| s != "*"));
            if full.last().is_some_and(|s| s == "self") && full.len() > 1 {
                full.pop();
            }
            if !full.is_empty() {
                out.push(full);
            }
        }
    }
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The comma-separated parts of a `use` group, braces nested.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&group[start..]);
    parts.retain(|p| !p.trim().is_empty());
    parts
}

/// The qualified paths in code: `super::a::B`, `crate::x::y`, `child::f`.
fn code_paths(code: &str, children: &[String]) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let heads: Vec<String> = ["super", "crate", "self"]
        .iter()
        .map(|s| s.to_string())
        .chain(children.iter().cloned())
        .map(|h| format!("{h}::"))
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let after_colons = i >= 2 && &code[i - 2..i] == "::";
        let rest = &code[i..];
        if !starts_word || after_colons || !heads.iter().any(|h| rest.starts_with(h.as_str())) {
            i += 1;
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        out.push(segments(&rest[..end]));
        i += end.max(1);
    }
    out
}

/// The module a path from `from` lands in: the deepest module it names, or the module whose
/// item it names.
fn resolve(from: &Module, segments: &[String], modules: &BTreeSet<Module>) -> Module {
    let mut at = from.clone();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            at = Vec::new();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().is_some_and(|s| s == "super") {
        at.pop();
        rest = &rest[1..];
    }
    for segment in rest {
        let mut next = at.clone();
        next.push(segment.clone());
        if !modules.contains(&next) {
            break;
        }
        at = next;
    }
    at
}

/// File-level edges: which module each file's production code names.
fn edges(files: &[File]) -> Graph {
    let modules: BTreeSet<Module> = files.iter().map(|f| f.module.clone()).collect();
    let mut graph = Graph::new();
    for file in files {
        let targets = graph.entry(file.module.clone()).or_default();
        for segments in paths(&file.code, &file.children) {
            let to = resolve(&file.module, &segments, &modules);
            if to != file.module {
                targets.insert(to);
            }
        }
    }
    graph
}

/// The graph among the children of `parent`, each child standing for everything under it. An
/// edge from or to `parent`'s own file is left out: those are judged at file level.
fn among_children(graph: &Graph, parent: &Module) -> Graph {
    let child_of = |m: &Module| -> Option<Module> {
        (m.len() > parent.len() && m.starts_with(parent)).then(|| m[..=parent.len()].to_vec())
    };
    let mut out = Graph::new();
    for (from, targets) in graph {
        let Some(a) = child_of(from) else { continue };
        out.entry(a.clone()).or_default();
        for to in targets {
            if let Some(b) = child_of(to)
                && b != a
            {
                out.entry(a.clone()).or_default().insert(b);
            }
        }
    }
    out
}

/// One circle in `graph`, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        graph: &Graph,
        state: &mut BTreeMap<Module, u8>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        state.insert(node.clone(), 1);
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next) {
                Some(1) => {
                    let from = stack.iter().position(|m| m == next).unwrap_or(0);
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node)
            && let Some(c) = visit(node, graph, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

/// The strongly connected parts of `graph` with more than one module: each holds a circle.
fn knots(graph: &Graph) -> Vec<BTreeSet<Module>> {
    let reaches = |from: &Module| {
        let mut seen = BTreeSet::from([from.clone()]);
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let mut knots: Vec<BTreeSet<Module>> = Vec::new();
    for node in graph.keys() {
        if knots.iter().any(|k| k.contains(node)) {
            continue;
        }
        let knot: BTreeSet<Module> = reaches(node)
            .into_iter()
            .filter(|other| reaches(other).contains(node))
            .collect();
        if knot.len() > 1 {
            knots.push(knot);
        }
    }
    knots
}

/// One circle through each knot of `graph`.
fn cycles(graph: &Graph) -> Vec<(BTreeSet<Module>, Vec<Module>)> {
    knots(graph)
        .into_iter()
        .map(|knot| {
            let inside: Graph = knot
                .iter()
                .map(|m| {
                    let targets = graph[m].iter().filter(|t| knot.contains(*t)).cloned();
                    (m.clone(), targets.collect())
                })
                .collect();
            let cycle = find_cycle(&inside).expect("a knot holds a circle");
            (knot, cycle)
        })
        .collect()
}

/// Every circle the two rules find: at file level, then among the children of each module (a
/// knot of leaf files already found at file level is not said twice).
fn circles(files: &[File]) -> Vec<String> {
    let graph = edges(files);
    let between_files = cycles(&graph);
    let mut found: Vec<String> = between_files
        .iter()
        .map(|(k, c)| format!("between files: {}{}", show(c), others(k, c)))
        .collect();
    for parent in files.iter().map(|f| &f.module) {
        for (knot, cycle) in cycles(&among_children(&graph, parent)) {
            if between_files.iter().any(|(k, _)| *k == knot) {
                continue;
            }
            let below = if parent.is_empty() {
                "the crate".to_string()
            } else {
                parent.join("::")
            };
            found.push(format!(
                "below {below}: {}{}",
                show(&cycle),
                others(&knot, &cycle)
            ));
        }
    }
    found
}

/// The modules of `knot` that `cycle` does not pass through: they circle with it too.
fn others(knot: &BTreeSet<Module>, cycle: &[Module]) -> String {
    let rest: Vec<Module> = knot
        .iter()
        .filter(|m| !cycle.contains(m))
        .cloned()
        .collect();
    if rest.is_empty() {
        String::new()
    } else {
        format!(" (in one knot with {})", show(&rest).replace(" -> ", ", "))
    }
}

fn library() -> Vec<File> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let mut files = Vec::new();
    read_tree(&root, Vec::new(), &mut files);
    files
}

fn show(cycle: &[Module]) -> String {
    cycle
        .iter()
        .map(|m| {
            if m.is_empty() {
                "crate".to_string()
            } else {
                m.join("::")
            }
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[test]
fn the_library_has_no_import_circle_and_no_arrow_back_up() {
    let found = circles(&library());
    assert!(
        found.is_empty(),
        "import circles in src/ (move what both sides share into a leaf below them):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_graph_sees_the_imports_it_must_judge() {
    // The reader must find real edges, or the test above could pass on an empty graph.
    let files = library();
    let graph = edges(&files);
    let m = |s: &str| s.split("::").map(str::to_string).collect::<Module>();
    let uses = |from: &str, to: &str| graph.get(&m(from)).is_some_and(|t| t.contains(&m(to)));
    assert!(graph.len() > 100, "{} modules read", graph.len());
    assert!(uses("job::version", "job::field"), "{graph:?}");
    assert!(uses("job::pipeline", "job::policy"), "{graph:?}");
    assert!(
        uses("job::template::digest", "job::template::quantity"),
        "{graph:?}"
    );
    // Multi-line `use` trees and paths written in code, across the crate.
    let top = among_children(&graph, &Vec::new());
    let top_uses = |from: &str, to: &str| top.get(&m(from)).is_some_and(|t| t.contains(&m(to)));
    assert!(top_uses("admission", "job"), "{top:?}");
    assert!(top_uses("check", "job"), "{top:?}");
    assert!(top_uses("reconciler", "recovery"), "{top:?}");
    assert!(!top_uses("job", "reconciler"), "{top:?}");
}

fn file(module: &str, code: &str) -> File {
    let code = production_code(&strip_comments_and_strings(code));
    File {
        module: module
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        children: declared_modules(&code),
        code,
    }
}

#[test]
fn a_circle_between_files_is_found() {
    let files = [
        file("", "pub mod job;\n"),
        file(
            "job",
            "pub(crate) mod a;\npub(crate) mod b;\npub use a::A;\n",
        ),
        file(
            "job::a",
            "use super::b::B;\n#[cfg(test)]\nmod tests {\n    use crate::job::A;\n}\n",
        ),
        file(
            "job::b",
            "// use super::a;\nfn f() -> super::a::A { todo!() }\n",
        ),
    ];
    assert_eq!(
        circles(&files),
        ["between files: job::a -> job::b -> job::a"]
    );

    // Through the parent's re-export: job::a -> job -> job::a.
    let files = [
        file("job", "pub(crate) mod a;\npub use a::A;\n"),
        file("job::a", "use super::A as _;\n"),
    ];
    assert!(find_cycle(&edges(&files)).is_some());

    // A multi-line `use` tree with nested groups.
    let files = [
        file("", "mod a;\nmod b;\n"),
        file(
            "a",
            "use crate::{\n    b::{\n        X,\n        Y as Z,\n    },\n};\n",
        ),
        file(
            "b",
            "pub(crate) struct X;\nfn f() {\n    let _ = crate::a::g();\n}\n",
        ),
    ];
    assert_eq!(circles(&files), ["between files: a -> b -> a"]);
}

#[test]
fn an_arrow_back_up_is_found_where_no_two_files_circle() {
    // check::templates -> embedded, embedded -> check::schema: no file circle, but `check` and
    // `embedded` import each other.
    let files = [
        file("", "pub mod check;\npub mod embedded;\n"),
        file("check", "mod schema;\nmod templates;\n"),
        file("check::schema", "pub(crate) struct Schema;\n"),
        file("check::templates", "use crate::embedded::jobset;\n"),
        file("embedded", "use crate::check::schema::Schema;\n"),
    ];
    assert_eq!(find_cycle(&edges(&files)), None);
    assert_eq!(
        circles(&files),
        ["below the crate: check -> embedded -> check"]
    );
}

#[test]
fn comments_strings_and_test_code_do_not_count() {
    let files = [
        file("", "mod a;\nmod b;\n"),
        file("a", "use super::b::B;\n"),
        file(
            "b",
            "// super::a::A\n/* crate::a */\nconst M: &str = \"crate::a::x\";\n\
             const R: &str = r#\"super::a\"#;\n\
             #[cfg(test)]\nmod tests {\n    use super::super::a::A;\n}\n\
             #[cfg(test)]\nuse crate::a::A;\n\
             #[cfg(test)]\nfn helper() {\n    crate::a::f();\n}\n",
        ),
    ];
    assert_eq!(circles(&files), Vec::<String>::new());
}
