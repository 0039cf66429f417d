//! The policy core (`src/job/`) imports in one direction only: no module reaches, through any
//! chain of `use`s or qualified paths, back to itself. Shared types live in leaf modules; a
//! circle means two files hold one idea between them.
//!
//! Read from the source, as `cargo modules dependencies` would draw it: every file is a module,
//! an edge is a path in production code (`super::x`, `crate::job::x`, `child::x`) that names
//! another module of `job/` or an item defined or re-exported in it. Test modules (`#[cfg(test)]
//! mod x;` files and inline `#[cfg(test)] mod x { ... }` blocks) are left out: they may see
//! everything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path below the crate root, `["job", "template", "one_pass"]`.
type Module = Vec<String>;

struct File {
    module: Module,
    /// Production code, comments removed.
    code: Vec<String>,
    /// Child modules declared for production code (`mod x;`, `pub(crate) mod x;`).
    children: Vec<String>,
}

fn read_tree(dir: &Path, module: Module, files: &mut Vec<File>) {
    let own = if module.len() == 1 {
        dir.join("mod.rs")
    } else {
        dir.with_extension("rs")
    };
    let text = std::fs::read_to_string(&own).unwrap_or_else(|e| panic!("{}: {e}", own.display()));
    let (code, children) = production_code(&text);
    for child in &children {
        let mut m = module.clone();
        m.push(child.clone());
        read_tree(&dir.join(child), m, files);
    }
    files.push(File {
        module,
        code,
        children,
    });
}

/// The lines of production code (comments and `#[cfg(test)]` modules removed) and the
/// production child modules.
fn production_code(text: &str) -> (Vec<String>, Vec<String>) {
    let mut code = Vec::new();
    let mut children = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if line == "#[cfg(test)]"
            && let Some(next) = lines.peek()
            && module_declaration(next).is_some()
        {
            let block = next.ends_with('{');
            lines.next();
            if block {
                // rustfmt closes a top-level block with `}` in column 0.
                for inner in lines.by_ref() {
                    if inner == "}" {
                        break;
                    }
                }
            }
            continue;
        }
        if let Some(name) = module_declaration(line)
            && !line.ends_with('{')
        {
            children.push(name);
        }
        let without_comment = match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        code.push(without_comment.to_string());
    }
    (code, children)
}

/// `x` for `mod x;`, `pub(crate) mod x {`, ...
fn module_declaration(line: &str) -> Option<String> {
    let rest = line
        .strip_prefix("pub(crate) ")
        .or_else(|| line.strip_prefix("pub(super) "))
        .or_else(|| line.strip_prefix("pub "))
        .unwrap_or(line);
    let name = rest.strip_prefix("mod ")?;
    let name = name.trim_end_matches([';', '{', ' ']);
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then(|| name.to_string())
}

/// Every path in `line` that starts with `super::`, `crate::job::` or one of `children`, as
/// segments (`{a, b}` groups expanded one level, which is all rustfmt leaves in `job/`).
fn paths(line: &str, children: &[String]) -> Vec<Vec<String>> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let after_colons = i >= 2 && &line[i - 2..i] == "::";
        if !starts_word || after_colons {
            i += 1;
            continue;
        }
        let rest = &line[i..];
        let known = ["super::", "crate::job::"]
            .into_iter()
            .map(str::to_string)
            .chain(children.iter().map(|c| format!("{c}::")))
            .any(|h| rest.starts_with(h.as_str()));
        if !known {
            i += 1;
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let path = &rest[..end];
        let segments: Vec<String> = path
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let group = rest[end..]
            .strip_prefix('{')
            .map(|g| &g[..g.find('}').unwrap_or(g.len())]);
        match group {
            Some(items) => {
                for item in items.split(',') {
                    let item = item.trim().split(" as ").next().unwrap_or("").trim();
                    let mut full = segments.clone();
                    full.extend(
                        item.split("::")
                            .filter(|s| !s.is_empty() && *s != "self")
                            .map(str::to_string),
                    );
                    out.push(full);
                }
            }
            None => {
                out.push(segments);
            }
        }
        i += end.max(1);
    }
    out
}

/// The module of `job/` a path from `from` lands in: the deepest module it names, or the module
/// whose item it names.
fn resolve(from: &Module, segments: &[String], modules: &BTreeSet<Module>) -> Module {
    let mut at: Module;
    let mut rest = segments;
    if rest.first().is_some_and(|s| s == "crate") {
        at = Vec::new();
        rest = &rest[1..];
    } else if rest.first().is_some_and(|s| s == "super") {
        at = from.clone();
        while rest.first().is_some_and(|s| s == "super") {
            at.pop();
            rest = &rest[1..];
        }
    } else {
        at = from.clone();
    }
    for segment in rest {
        let mut next = at.clone();
        next.push(segment.clone());
        if modules.contains(&next) {
            at = next;
        } else {
            break;
        }
    }
    at
}

fn edges(files: &[File]) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules: BTreeSet<Module> = files.iter().map(|f| f.module.clone()).collect();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for file in files {
        let targets = graph.entry(file.module.clone()).or_default();
        for line in &file.code {
            for segments in paths(line, &file.children) {
                let to = resolve(&file.module, &segments, &modules);
                if to != file.module && to.first().is_some_and(|s| s == "job") {
                    targets.insert(to);
                }
            }
        }
    }
    graph
}

/// One circle in `graph`, if there is one.
fn find_cycle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
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

fn job_files() -> Vec<File> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/job");
    let mut files = Vec::new();
    read_tree(&root, vec!["job".to_string()], &mut files);
    files
}

fn show(cycle: &[Module]) -> String {
    cycle
        .iter()
        .map(|m| m.join("::"))
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[test]
fn the_policy_core_has_no_import_circle() {
    let graph = edges(&job_files());
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import circle inside src/job: {}", show(&cycle));
    }
}

#[test]
fn the_graph_sees_the_imports_it_must_judge() {
    // The reader must find real edges, or the test above could pass on an empty graph.
    let graph = edges(&job_files());
    let m = |s: &str| s.split("::").map(str::to_string).collect::<Module>();
    let uses = |from: &str, to: &str| graph.get(&m(from)).is_some_and(|t| t.contains(&m(to)));
    assert!(graph.len() > 15, "{} modules read", graph.len());
    assert!(uses("job::version", "job::field"), "{graph:?}");
    assert!(uses("job::pipeline", "job::policy"), "{graph:?}");
    assert!(
        uses("job::template::digest", "job::template::quantity"),
        "{graph:?}"
    );
}

#[test]
fn a_circle_is_found_when_there_is_one() {
    let file = |module: &str, code: &str| {
        let (code, children) = production_code(code);
        File {
            module: module.split("::").map(str::to_string).collect(),
            code,
            children,
        }
    };
    let files = [
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
    let cycle = find_cycle(&edges(&files)).expect("a -> b -> a");
    assert_eq!(show(&cycle), "job::a -> job::b -> job::a");

    // Through the parent's re-export: job::a -> job -> job::a.
    let files = [
        file("job", "pub(crate) mod a;\npub use a::A;\n"),
        file("job::a", "use super::A as _;\n"),
    ];
    assert!(find_cycle(&edges(&files)).is_some());

    // Comments and test modules do not count.
    let files = [
        file("job", "pub(crate) mod a;\npub(crate) mod b;\n"),
        file("job::a", "use super::b::B;\n"),
        file(
            "job::b",
            "// super::a::A\n#[cfg(test)]\nmod tests {\n    use super::super::a::A;\n}\n",
        ),
    ];
    assert_eq!(find_cycle(&edges(&files)), None);
}
