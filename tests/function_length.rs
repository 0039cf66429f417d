//! No production function in `src/` reaches 60 lines: a longer one holds steps that want names
//! of their own. Tests (`tests.rs` files, `#[cfg(test)]` modules and items) are left out.
//!
//! Read from the source as rustfmt lays it out: a function runs from its `fn` line to the `}` at
//! the same indentation.

use std::path::{Path, PathBuf};

const LIMIT: usize = 60;

/// `(lines, file:line, name)` of every production function in `text`.
fn functions(text: &str, file: &str) -> Vec<(usize, String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start().len();
        if line.trim() == "#[cfg(test)]" {
            // The item it gates: a declaration, or a block closed at its indentation.
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim_start().starts_with("#[") {
                j += 1;
            }
            let Some(item) = lines.get(j) else { break };
            i = if item.trim_end().ends_with(';') {
                j + 1
            } else {
                closing(&lines, j, item.len() - item.trim_start().len()) + 1
            };
            continue;
        }
        if let Some(name) = function_name(line.trim_start()) {
            let mut end = i;
            while end < lines.len() && !lines[end].trim_end().ends_with(['{', ';', '}']) {
                end += 1;
            }
            let Some(signature_end) = lines.get(end) else {
                break;
            };
            if !signature_end.trim_end().ends_with(';') {
                if !signature_end.trim_end().ends_with('}') {
                    end = closing(&lines, end, indent);
                }
                out.push((end - i + 1, format!("{file}:{}", i + 1), name));
            }
        }
        i += 1;
    }
    out
}

/// The line of the `}` at `indent` that closes the block opened at or after `from`.
fn closing(lines: &[&str], from: usize, indent: usize) -> usize {
    let close = format!("{}}}", " ".repeat(indent));
    (from + 1..lines.len())
        .find(|&k| lines[k].trim_end() == close)
        .unwrap_or(lines.len() - 1)
}

/// `name` for `fn name(`, `pub(crate) async fn name<T>(`, ...
fn function_name(trimmed: &str) -> Option<String> {
    let mut rest = trimmed;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Child modules declared for tests only (`#[cfg(test)] mod x;`).
fn test_modules(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].trim() == "#[cfg(test)]")
        .filter_map(|w| {
            let decl = w[1].trim();
            let decl = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .fold(decl, |d, p| d.strip_prefix(p).unwrap_or(d));
            decl.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect()
}

/// The production `.rs` files under `dir`. `skipped` carries the test modules declared by a file
/// into the directory of its children (`mutate.rs` declares `mutate/properties.rs`).
fn production_files(dir: &Path, out: &mut Vec<PathBuf>, skipped: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in &entries {
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(path).expect("source file");
            let parent = if path
                .file_name()
                .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
            {
                dir.to_path_buf()
            } else {
                path.with_extension("")
            };
            for m in test_modules(&text) {
                skipped.push(parent.join(&m));
                skipped.push(parent.join(format!("{m}.rs")));
            }
        }
    }
    for path in entries {
        if skipped.contains(&path) || path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        if path.is_dir() {
            production_files(&path, out, skipped);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_production_function_reaches_60_lines() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    production_files(&root.join("src"), &mut files, &mut Vec::new());
    assert!(files.len() > 50, "{} files read", files.len());
    let mut all = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("source file");
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        all.extend(functions(&text, &shown));
    }
    assert!(all.len() > 500, "{} functions read", all.len());
    let mut long: Vec<_> = all.into_iter().filter(|f| f.0 >= LIMIT).collect();
    long.sort();
    assert!(
        long.is_empty(),
        "functions of {LIMIT} lines or more (split them along their steps): {long:#?}"
    );
}

#[test]
fn lengths_are_measured_as_rustfmt_lays_them_out() {
    let body = "        x += 1;\n".repeat(80);
    let text = format!(
        "pub(crate) fn short() -> u8 {{ 1 }}\n\
         impl A {{\n    pub(crate) async fn long(\n        x: u8,\n    ) {{\n{body}    }}\n}}\n\
         fn declared();\n\
         #[cfg(test)]\nfn helper() {{\n{body}}}\n\
         #[cfg(test)]\nmod tests {{\n    fn case() {{\n{body}    }}\n}}\n"
    );
    let found = functions(&text, "x.rs");
    let summary: Vec<(usize, &str)> = found.iter().map(|f| (f.0, f.2.as_str())).collect();
    assert_eq!(summary, [(1, "short"), (84, "long")]);
    assert_eq!(
        test_modules(
            "#[cfg(test)]\nmod tests;\n#[cfg(test)]\npub(crate) mod properties;\nmod kept;\n"
        ),
        ["tests", "properties"]
    );
}
