//! Where each field of a YAML (or JSON) document is written: `line:column` of every mapping key
//! and sequence item, so a finding points at the offending field the way editors and CI
//! annotations read it (`jobs.yaml:14:7`), not at a document index.
//!
//! serde_yaml_ng reads the values but keeps no positions; the YAML event parser kube's own
//! kubeconfig reader uses (`granit-parser`, under `serde-saphyr`) reports a span for every
//! event, and one pass over the events maps each path to where it starts. The text is the one
//! `input::documents` already bounded (size, flow nesting), and aliases are not expanded here.

use std::collections::HashMap;

use granit_parser::{Event, Parser};

use crate::job::schema::Step;

/// A line (from 1) and column (from 1), as editors and CI annotations count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// The positions in one document: of its root node and of every key and item under it, by path
/// (mapping keys and sequence indexes as strings).
#[derive(Debug, Clone, Default)]
pub(crate) struct Positions {
    pub(crate) root: Option<Position>,
    at: HashMap<Vec<String>, Position>,
    /// Keys written twice in one mapping: the key's path and where the second one is.
    pub(crate) duplicates: Vec<(Vec<Step>, Position)>,
}

impl Positions {
    /// Where `path` is written, else where its nearest written ancestor is (a required field
    /// that is missing points at its parent).
    pub(crate) fn find(&self, path: &[String]) -> Option<Position> {
        (1..=path.len())
            .rev()
            .find_map(|n| self.at.get(&path[..n]).copied())
            .or(self.root)
    }
}

enum Frame {
    Map {
        path: Vec<String>,
        steps: Vec<Step>,
        /// The key just read, awaiting its value; `None` when a key is expected next.
        key: Option<String>,
    },
    Seq {
        path: Vec<String>,
        steps: Vec<Step>,
        next: usize,
    },
    /// A collection used as a mapping key: nothing under it is addressable.
    Skipped,
}

/// Collections nested deeper than this are not located inside (serde_yaml_ng refuses past 128
/// levels anyway); it bounds the work per node, which copies its path.
const MAX_DEPTH: usize = 256;

/// The positions of every document in `text`, in order; parsing stops at the first error (the
/// documents before it, and the part of that one before it, keep their positions).
pub(crate) fn positions(text: &str) -> Vec<Positions> {
    let mut docs = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut current = Positions::default();
    let mut parser = Parser::new_from_str(text);
    while let Some(Ok((event, span))) = parser.next_event() {
        let at = Position {
            line: span.start.line(),
            column: span.start.col() + 1,
        };
        match event {
            Event::DocumentStart(..) => {
                current = Positions::default();
                stack.clear();
            }
            Event::DocumentEnd => docs.push(std::mem::take(&mut current)),
            Event::Scalar(value, ..) => {
                if let Some(Frame::Map {
                    path,
                    steps,
                    key: key @ None,
                }) = stack.last_mut()
                {
                    let mut full = path.clone();
                    full.push(value.to_string());
                    match current.at.entry(full) {
                        std::collections::hash_map::Entry::Occupied(_) => {
                            let mut steps = steps.clone();
                            steps.push(Step::Key(value.to_string()));
                            current.duplicates.push((steps, at));
                        }
                        std::collections::hash_map::Entry::Vacant(v) => {
                            v.insert(at);
                        }
                    }
                    *key = Some(value.into_owned());
                } else {
                    node(&mut stack, &mut current, at);
                }
            }
            Event::Alias(_) => {
                node(&mut stack, &mut current, at);
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let is_map = matches!(event, Event::MappingStart(..));
                let frame = match stack.last_mut() {
                    Some(Frame::Map {
                        key: key @ None, ..
                    }) => {
                        *key = Some(String::new());
                        Frame::Skipped
                    }
                    Some(Frame::Skipped) => Frame::Skipped,
                    _ => match node(&mut stack, &mut current, at) {
                        _ if stack.len() >= MAX_DEPTH => Frame::Skipped,
                        Some((path, steps)) if is_map => Frame::Map {
                            path,
                            steps,
                            key: None,
                        },
                        Some((path, steps)) => Frame::Seq {
                            path,
                            steps,
                            next: 0,
                        },
                        None => Frame::Skipped,
                    },
                };
                stack.push(frame);
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    // A document the parser gave up in keeps what was located before the error.
    if current.root.is_some() {
        docs.push(current);
    }
    docs
}

/// Records a value node at `at` under the frame on top of `stack`; returns its path, as
/// segments and as steps.
fn node(
    stack: &mut [Frame],
    current: &mut Positions,
    at: Position,
) -> Option<(Vec<String>, Vec<Step>)> {
    match stack.last_mut() {
        None => {
            current.root.get_or_insert(at);
            Some((Vec::new(), Vec::new()))
        }
        Some(Frame::Map { path, steps, key }) => {
            let key = key.take()?;
            let mut steps = steps.clone();
            steps.push(Step::Key(key.clone()));
            let mut full = path.clone();
            full.push(key);
            Some((full, steps))
        }
        Some(Frame::Seq { path, steps, next }) => {
            let mut full = path.clone();
            full.push(next.to_string());
            let mut steps = steps.clone();
            steps.push(Step::Index(*next));
            *next += 1;
            current.at.entry(full.clone()).or_insert(at);
            Some((full, steps))
        }
        Some(Frame::Skipped) => None,
    }
}

/// The segments of a printed `field.Path` (`spec.containers[0].env[FOO]` -> `spec`,
/// `containers`, `0`, `env`, `FOO`).
pub(crate) fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in path.chars() {
        match c {
            '[' if depth == 0 => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                depth = 1;
            }
            ']' if depth == 1 => {
                out.push(std::mem::take(&mut current));
                depth = 0;
            }
            '.' if depth == 0 => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: usize, column: usize) -> Option<Position> {
        Some(Position { line, column })
    }

    fn path(s: &str) -> Vec<String> {
        segments(s)
    }

    #[test]
    fn keys_and_items_are_found_where_they_are_written() {
        let text = "apiVersion: batch/v1\nkind: Job\nspec:\n  backofLimit: 3\n  template:\n    spec:\n      containers:\n      - name: a\n        image: x\n---\n# second\nkind: Pod\n";
        let docs = positions(text);
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].root, p(1, 1));
        assert_eq!(docs[0].find(&path("spec.backofLimit")), p(4, 3));
        assert_eq!(
            docs[0].find(&path("spec.template.spec.containers[0]")),
            p(8, 9)
        );
        assert_eq!(
            docs[0].find(&path("spec.template.spec.containers[0].image")),
            p(9, 9)
        );
        // A missing field points at its nearest written parent.
        assert_eq!(
            docs[0].find(&path("spec.template.spec.restartPolicy")),
            p(6, 5)
        );
        assert_eq!(docs[1].root, p(12, 1));
        assert!(docs[0].duplicates.is_empty());
    }

    #[test]
    fn keys_written_twice_in_one_mapping_are_duplicates() {
        let docs = positions(
            "spec:\n  backoffLimit: 1\n  template:\n    spec:\n      containers:\n      - name: a\n        name: b\n  backoffLimit: 2\n",
        );
        let found: Vec<(String, Position)> = docs[0]
            .duplicates
            .iter()
            .map(|(steps, at)| (crate::job::schema::printed(steps), *at))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "spec.template.spec.containers[0].name".to_string(),
                    Position { line: 7, column: 9 }
                ),
                (
                    "spec.backoffLimit".to_string(),
                    Position { line: 8, column: 3 }
                ),
            ]
        );
    }

    #[test]
    fn json_is_located_too() {
        let docs = positions("{\"kind\": \"Job\",\n \"spec\": {\"backoffLimit\": -1}}\n");
        assert_eq!(docs[0].find(&path("spec.backoffLimit")), p(2, 11));
    }

    proptest::proptest! {
        /// Any text: positions or none, never a panic.
        #[test]
        fn any_text_is_located_without_panicking(text in "[ -~\n\t]{0,200}") {
            let _ = positions(&text);
        }
    }

    #[test]
    fn deep_nesting_is_located_down_to_the_bound_only() {
        let depth = MAX_DEPTH + 50;
        let mut text = String::new();
        for i in 0..depth {
            text.push_str(&" ".repeat(i));
            text.push_str("a:\n");
        }
        text.push_str(&" ".repeat(depth));
        text.push_str("b: 1\n");
        let docs = positions(&text);
        let deep = vec!["a".to_string(); depth];
        // Keys are located down to (about) the bound, deeper than serde_yaml_ng reads; below
        // it, the nearest located parent answers.
        let found = docs[0].find(&deep).expect("a parent");
        assert!(
            (128..=MAX_DEPTH + 1).contains(&found.line) && found.column == found.line,
            "{found:?}"
        );
    }

    #[test]
    fn field_paths_split_like_field_path_prints_them() {
        assert_eq!(
            segments("spec.template.metadata.annotations[kueue.x-k8s.io/a]"),
            [
                "spec",
                "template",
                "metadata",
                "annotations",
                "kueue.x-k8s.io/a"
            ]
        );
        assert_eq!(segments("a.b[0].c"), ["a", "b", "0", "c"]);
    }
}
