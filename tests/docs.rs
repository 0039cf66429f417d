//! The documentation can be trusted: every relative link of README.md, the repository's other
//! Markdown files and the book under docs/ resolves (files and `#anchors`, offline), every page of
//! the book is in its SUMMARY.md, and the command-line reference is what the binary says.
//!
//! `JOBGATE_UPDATE_DOCS=1 cargo test --locked --test docs` rewrites docs/src/reference/cli.md from
//! the binary after a flag or a help text changed.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use support::help::{help, subcommands};

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod help;
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and the other top-level documents, examples' READMEs and every page of the book.
fn markdown_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        "README.md",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "SECURITY.md",
    ]
    .iter()
    .map(|f| root().join(f))
    .collect();
    collect_md(&root().join("docs"), &mut files);
    collect_md(&root().join("examples"), &mut files);
    files.sort();
    files
}

fn collect_md(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            // docs/book is mdbook's output, not a source.
            if path != root().join("docs/book") {
                collect_md(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
}

/// The Markdown outside code: fenced blocks and inline code spans are dropped (a `#` comment in
/// a YAML block is no heading, a `[x](y)` in a code span no link).
fn prose_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let marker: String = trimmed
                .chars()
                .take_while(|c| *c == '`' || *c == '~')
                .collect();
            fence = Some(marker);
            continue;
        }
        if line.starts_with("    ")
            && !line.trim().is_empty()
            && !trimmed.starts_with(['-', '*', '|'])
        {
            // An indented code block (four spaces), unless it continues a list item or a table.
            if lines
                .last()
                .is_none_or(|l: &String| l.trim().is_empty() || l.starts_with("    "))
            {
                lines.push(String::new());
                continue;
            }
        }
        lines.push(without_code_spans(line));
    }
    lines
}

fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(end) => {
                // Keep the span's text for heading anchors, but never as a link.
                out.push_str(&after[..end].replace(['[', ']', '(', ')'], " "));
                rest = &after[end + ticks..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// `[text](target)` and `[label]: target`, in order.
fn links(lines: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for line in lines {
        let bytes = line.as_bytes();
        let mut i = 0;
        while let Some(pos) = line[i..].find("](") {
            let start = i + pos + 2;
            let mut depth = 0;
            let mut end = start;
            while end < bytes.len() {
                match bytes[end] {
                    b'(' => depth += 1,
                    b')' if depth == 0 => break,
                    b')' => depth -= 1,
                    _ => {}
                }
                end += 1;
            }
            let target = line[start..end].trim();
            // A title after the target: [x](path "title").
            let target = target.split_whitespace().next().unwrap_or("");
            found.push(target.trim_matches(['<', '>']).to_string());
            i = end.min(bytes.len());
        }
        let t = line.trim_start();
        if t.starts_with('[')
            && let Some((_, target)) = t.split_once("]: ")
        {
            found.push(target.split_whitespace().next().unwrap_or("").to_string());
        }
    }
    found
}

/// The anchors of a page's headings, as GitHub and mdBook make them: lower case, letters,
/// digits, `-` and `_` kept, spaces to `-`, everything else dropped; repeats get `-1`, `-2`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose_lines(text) {
        let Some(title) = line
            .strip_prefix('#')
            .map(|l| l.trim_start_matches('#'))
            .filter(|l| l.starts_with(' '))
        else {
            continue;
        };
        let title = link_texts(title.trim());
        let slug: String = title
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_lowercase().next().unwrap_or(c))
                } else if c == ' ' {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// `[text](target)` becomes `text` (a heading's anchor is made from its visible text).
fn link_texts(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(open) = rest.find('[') {
        match rest[open..].find("](").zip(rest[open..].find(')')) {
            Some((mid, close)) if mid < close => {
                out.push_str(&rest[..open]);
                out.push_str(&rest[open + 1..open + mid]);
                rest = &rest[open + close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let files = markdown_files();
    assert!(
        files.iter().any(|f| f.ends_with("docs/src/SUMMARY.md")),
        "the book's SUMMARY.md is missing"
    );
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read Markdown");
        for target in links(&prose_lines(&text)) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else {
                normalize(&file.parent().expect("a directory").join(path))
            };
            if !dest.starts_with(root()) {
                broken.push(format!(
                    "{}: {target} leaves the repository",
                    relative(file)
                ));
            } else if !dest.exists() {
                broken.push(format!("{}: {target} does not exist", relative(file)));
            } else if let Some(fragment) = fragment
                && dest.extension().is_some_and(|e| e == "md")
            {
                let page = std::fs::read_to_string(&dest).expect("read link target");
                if !anchors(&page).contains(fragment) {
                    broken.push(format!(
                        "{}: {target}: no heading with anchor #{fragment} in {}",
                        relative(file),
                        relative(&dest)
                    ));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the parser broken?"
    );
    assert!(
        broken.is_empty(),
        "{} broken link(s):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let src = root().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("docs/src/SUMMARY.md");
    let listed: BTreeSet<PathBuf> = links(&prose_lines(&summary))
        .iter()
        .map(|l| normalize(&src.join(l)))
        .collect();
    let mut pages = Vec::new();
    collect_md(&src, &mut pages);
    let orphans: Vec<String> = pages
        .iter()
        .filter(|p| !p.ends_with("SUMMARY.md") && !listed.contains(*p))
        .map(|p| relative(p))
        .collect();
    assert!(orphans.is_empty(), "pages not in SUMMARY.md: {orphans:?}");
    for page in &listed {
        assert!(
            page.exists(),
            "SUMMARY.md lists {} which does not exist",
            relative(page)
        );
    }
}

#[test]
fn anchors_are_made_as_github_and_mdbook_make_them() {
    let page = "# jobgate\n## `jobgate check`: the same rules in CI\n```yaml\n# jobgate.yaml\n```\n## Why `Fail` for validation and `Ignore` for mutation\n## Flags\n### Flags\n## [Runbook](runbook.md)\n";
    let got = anchors(page);
    let want: BTreeSet<String> = [
        "jobgate",
        "jobgate-check-the-same-rules-in-ci",
        "why-fail-for-validation-and-ignore-for-mutation",
        "flags",
        "flags-1",
        "runbook",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(got, want);
    assert_eq!(
        links(&prose_lines(
            "see [a](b.md#c) and `[x](nope)` and\n[ref]: d/e.md\n"
        )),
        vec!["b.md#c".to_string(), "d/e.md".to_string()]
    );
}

/// `jobgate --help` and `jobgate <command> --help` for every command, as Markdown.
fn cli_reference() -> String {
    let top = help(&[]);
    let commands = subcommands();
    assert!(commands.len() >= 9, "{commands:?}");
    let mut doc = String::from(
        "# Command-line reference\n\n\
         <!-- Generated from the binary's --help by tests/docs.rs; do not edit by hand. After a flag\n\
         or help text changed: JOBGATE_UPDATE_DOCS=1 cargo test --locked --test docs -->\n\n\
         Every flag can also be set by the environment variable named next to it (`[env: ...]`); a\n\
         flag on the command line wins over the variable. `jobgate <command> --help` prints the same\n\
         text, and `jobgate man` the same as man pages.\n\n",
    );
    doc.push_str("Commands:");
    for c in &commands {
        doc.push_str(&format!(" [`{c}`](#jobgate-{c})"));
    }
    doc.push_str("\n\n## `jobgate`\n\n```text\n");
    doc.push_str(&top);
    doc.push_str("```\n");
    for c in &commands {
        doc.push_str(&format!("\n## `jobgate {c}`\n\n```text\n"));
        doc.push_str(&help(&[c]));
        doc.push_str("```\n");
    }
    doc
}

#[test]
fn cli_reference_is_what_the_binary_says() {
    let path = root().join("docs/src/reference/cli.md");
    let generated = cli_reference();
    if std::env::var_os("JOBGATE_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).expect("write docs/src/reference/cli.md");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/src/reference/cli.md differs from the binary's --help; regenerate it with\n  \
         JOBGATE_UPDATE_DOCS=1 cargo test --locked --test docs\nand commit it"
    );
}

/// The release workflow refuses a tag whose version has no changelog section; this says so on
/// every pull request instead of at release time.
#[test]
fn changelog_has_a_section_for_the_crate_version() {
    let changelog = std::fs::read_to_string(root().join("CHANGELOG.md")).expect("CHANGELOG.md");
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        changelog
            .lines()
            .any(|l| l.starts_with(&format!("## [{version}]"))),
        "CHANGELOG.md has no `## [{version}]` section"
    );
    // Keep a Changelog: every version heading links to its diff or tag at the bottom.
    for heading in changelog.lines().filter(|l| l.starts_with("## [")) {
        let name = &heading[4..heading.find(']').expect("closing bracket")];
        assert!(
            changelog.contains(&format!("\n[{name}]: https://")),
            "CHANGELOG.md: no link reference for [{name}]"
        );
    }
}
