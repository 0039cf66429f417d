//! Where a field of a YAML (or JSON) document is written: `line:column` of a mapping key or a
//! sequence item, so a finding points at the offending field the way editors and CI
//! annotations read it (`jobs.yaml:14:7`), not at a document index.
//!
//! Only the fields findings name are looked for, after the documents are checked: one pass over
//! the events of the YAML parser (`granit-parser`, which reports a span for every event) follows
//! a trie of the wanted paths, so memory grows with the findings, not with the document (a table
//! of every node's position cost ~100 bytes per node). A key written twice is found where it is
//! written last (its value is the one kept); a key that comes from a merge key (`<<: *base`) is
//! found at the `<<`; anything else missing, at its nearest written parent.

use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle, Tag};

use super::yaml::{self, Position};

/// The state of a mapping between its keys and values.
enum Key {
    /// A key is expected next.
    Expected,
    /// The key read, as the trie node of its path (if wanted).
    Read(Option<usize>),
    /// A collection used as a key: its value is not addressable.
    IgnoredDocument,
}

/// An open collection, with the trie node of its path (if wanted).
enum Frame {
    Map {
        node: Option<usize>,
        key: Key,
    },
    Seq {
        node: Option<usize>,
        next: usize,
    },
    /// A collection used as a mapping key.
    IgnoredDocument,
}

/// One node of the trie of wanted paths.
#[derive(Default)]
struct Node {
    children: HashMap<String, usize>,
    /// Where this path is written (its last occurrence).
    at: Option<Position>,
    /// Where the mapping at this path has a merge key.
    merge_at: Option<Position>,
}

/// The paths wanted in each document of one text, answered in one pass.
#[derive(Default)]
pub(crate) struct Wanted {
    nodes: Vec<Node>,
    /// The trie root of each document that has wanted paths.
    roots: HashMap<usize, usize>,
}

impl Wanted {
    /// Asks for `path` (segments from the document's root) in document `doc`.
    pub(crate) fn add(&mut self, doc: usize, path: &[String]) {
        let mut at = match self.roots.get(&doc) {
            Some(&root) => root,
            None => {
                self.nodes.push(Node::default());
                let root = self.nodes.len() - 1;
                self.roots.insert(doc, root);
                root
            }
        };
        for segment in path {
            at = match self.nodes[at].children.get(segment) {
                Some(&child) => child,
                None => {
                    self.nodes.push(Node::default());
                    let child = self.nodes.len() - 1;
                    self.nodes[at].children.insert(segment.clone(), child);
                    child
                }
            };
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// Where `path` of document `doc` is written, else where its nearest written parent (or the
    /// merge key it comes from) is; `None` when the document was not located.
    pub(crate) fn find(&self, doc: usize, path: &[String]) -> Option<Position> {
        let mut node = *self.roots.get(&doc)?;
        let mut best = self.nodes[node].at;
        for segment in path {
            let Some(&child) = self.nodes[node].children.get(segment) else {
                break;
            };
            match self.nodes[child].at {
                Some(at) => best = Some(at),
                None => {
                    if let Some(merge) = self.nodes[node].merge_at {
                        best = Some(merge);
                    }
                    break;
                }
            }
            node = child;
        }
        best
    }

    /// Looks for every wanted path in `text` (documents numbered from 0 as the parser finds
    /// them), whose first character is at `base` of the input. Stops at a syntax error, keeping
    /// what was found before it.
    pub(crate) fn locate(&mut self, text: &str, base: Position) {
        let mut stack: Vec<Frame> = Vec::new();
        let mut doc: Option<usize> = None;
        let mut next_doc = 0;
        let mut parser = Parser::new_from_str(text);
        while let Some(Ok((event, span))) = parser.next_event() {
            let at = Position {
                line: span.start.line(),
                column: span.start.col() + 1,
            }
            .within(base);
            match event {
                Event::DocumentStart(..) => {
                    stack.clear();
                    doc = self.roots.get(&next_doc).copied();
                    next_doc += 1;
                }
                Event::DocumentEnd => stack.clear(),
                Event::Scalar(ref value, style, _, ref tag) => {
                    self.scalar(&mut stack, doc, at, value, style, tag.as_deref());
                }
                Event::Alias(_) => {
                    self.value(&mut stack, doc, at);
                }
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let is_map = matches!(event, Event::MappingStart(..));
                    let frame = self.open(&mut stack, doc, at, is_map);
                    stack.push(frame);
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                }
                _ => {}
            }
        }
    }

    /// A scalar at `at`: a mapping's key (recorded when its path is wanted; a merge key marks the
    /// mapping), or a value.
    fn scalar(
        &mut self,
        stack: &mut [Frame],
        doc: Option<usize>,
        at: Position,
        value: &str,
        style: ScalarStyle,
        tag: Option<&Tag>,
    ) {
        match stack.last_mut() {
            Some(Frame::Map {
                node,
                key: key @ Key::Expected,
            }) => {
                if yaml::is_merge_key(value, style, tag) {
                    if let Some(n) = *node {
                        self.nodes[n].merge_at.get_or_insert(at);
                    }
                    *key = Key::Read(None);
                } else {
                    let found = yaml::key_text(value, style, tag).and_then(|k| {
                        (*node).and_then(|p| self.nodes[p].children.get(&k).copied())
                    });
                    if let Some(c) = found {
                        self.nodes[c].at = Some(at);
                    }
                    *key = Key::Read(found);
                }
            }
            _ => {
                self.value(stack, doc, at);
            }
        }
    }

    /// A mapping (`is_map`) or sequence starts at `at`: its frame. One used as a mapping key, and
    /// all inside it, are skipped.
    fn open(
        &mut self,
        stack: &mut [Frame],
        doc: Option<usize>,
        at: Position,
        is_map: bool,
    ) -> Frame {
        match stack.last_mut() {
            Some(Frame::Map {
                key: key @ Key::Expected,
                ..
            }) => {
                *key = Key::IgnoredDocument;
                Frame::IgnoredDocument
            }
            Some(Frame::IgnoredDocument) => Frame::IgnoredDocument,
            _ => {
                let node = self.value(stack, doc, at);
                if is_map {
                    Frame::Map {
                        node,
                        key: Key::Expected,
                    }
                } else {
                    Frame::Seq { node, next: 0 }
                }
            }
        }
    }

    /// A value node starts at `at`: records it when its path is wanted (a mapping value's key
    /// was recorded already); returns its trie node.
    fn value(&mut self, stack: &mut [Frame], doc: Option<usize>, at: Position) -> Option<usize> {
        match stack.last_mut() {
            None => {
                let root = doc?;
                self.nodes[root].at = Some(at);
                Some(root)
            }
            Some(Frame::Map { key, .. }) => match std::mem::replace(key, Key::Expected) {
                Key::Read(node) => node,
                Key::Expected | Key::IgnoredDocument => None,
            },
            Some(Frame::Seq { node, next }) => {
                let index = *next;
                *next += 1;
                let parent = (*node)?;
                if self.nodes[parent].children.is_empty() {
                    return None;
                }
                let child = self.nodes[parent]
                    .children
                    .get(&index.to_string())
                    .copied()?;
                self.nodes[child].at = Some(at);
                Some(child)
            }
            Some(Frame::IgnoredDocument) => None,
        }
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

    /// Where each path of each document is, located in one pass.
    fn located(text: &str, wanted: &[(usize, &str)]) -> Vec<Option<Position>> {
        let mut w = Wanted::default();
        for (doc, path) in wanted {
            w.add(*doc, &segments(path));
        }
        w.locate(text, Position { line: 1, column: 1 });
        wanted
            .iter()
            .map(|(doc, path)| w.find(*doc, &segments(path)))
            .collect()
    }

    #[test]
    fn keys_and_items_are_found_where_they_are_written() {
        let text = "apiVersion: batch/v1\nkind: Job\nspec:\n  backofLimit: 3\n  template:\n    spec:\n      containers:\n      - name: a\n        image: x\n---\n# second\nkind: Pod\n";
        assert_eq!(
            located(
                text,
                &[
                    (0, ""),
                    (0, "spec.backofLimit"),
                    (0, "spec.template.spec.containers[0]"),
                    (0, "spec.template.spec.containers[0].image"),
                    // A missing field points at its nearest written parent.
                    (0, "spec.template.spec.restartPolicy"),
                    (1, ""),
                    (1, "kind"),
                ]
            ),
            [
                p(1, 1),
                p(4, 3),
                p(8, 9),
                p(9, 9),
                p(6, 5),
                p(12, 1),
                p(12, 1)
            ]
        );
    }

    #[test]
    fn a_key_written_twice_is_found_where_it_is_written_last() {
        let text = "spec:\n  backoffLimit: 1\n  template: {}\n  backoffLimit: 2\n";
        assert_eq!(located(text, &[(0, "spec.backoffLimit")]), [p(4, 3)]);
    }

    #[test]
    fn merged_keys_are_found_at_their_merge_key_and_keys_are_read_like_kubectl() {
        let text = "base: &b {restartPolicy: Never}\nspec:\n  <<: *b\n  yes: 1\n  0x10: 2\n";
        assert_eq!(
            located(
                text,
                &[(0, "spec.restartPolicy"), (0, "spec.true"), (0, "spec.16")]
            ),
            [p(3, 3), p(4, 3), p(5, 3)]
        );
    }

    #[test]
    fn json_is_located_too_and_offsets_apply() {
        let text = "{\"kind\": \"Job\",\n \"spec\": {\"backoffLimit\": -1}}\n";
        assert_eq!(located(text, &[(0, "spec.backoffLimit")]), [p(2, 11)]);
        let mut w = Wanted::default();
        w.add(0, &segments("spec"));
        w.locate("{\"spec\": 1}", Position { line: 3, column: 5 });
        assert_eq!(w.find(0, &segments("spec")), p(3, 6));
    }

    #[test]
    fn a_dense_list_is_walked_without_looking_at_its_items() {
        let text = format!("spec:\n  junk: [{}1]\n", "1,".repeat(100_000));
        assert_eq!(located(&text, &[(0, "spec.junk")]), [p(2, 3)]);
    }

    proptest::proptest! {
        /// Any text: positions or none, never a panic.
        #[test]
        fn any_text_is_located_without_panicking(text in "[ -~\n\t]{0,200}") {
            let _ = located(&text, &[(0, "a.b[0]"), (1, "")]);
        }
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
