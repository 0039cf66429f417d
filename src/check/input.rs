//! Reading what `jobgate check` is given: files, directories and stdin holding YAML (several
//! documents) or JSON (one or more values), each document a Job, CronJob, `List` or
//! AdmissionReview, or something else to skip.

use std::path::{Path, PathBuf};

use std::borrow::Cow;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::locate::Wanted;
use super::report::{Location, Unreadable};
use super::yaml::{self, Position};
use crate::schema::Step;

/// One readable input: its display name (`jobs.yaml`, `-` for stdin) and its text.
#[derive(Debug, Clone)]
pub(crate) struct Input {
    pub(crate) name: String,
    pub(crate) text: String,
}

impl Input {
    pub(crate) fn named(name: &str, text: String) -> Input {
        Input {
            name: name.to_string(),
            text,
        }
    }
}

/// Whether `path` matches `glob`: `*` matches within one path segment, `**` across segments,
/// `?` one character other than `/`; the glob matches the whole path or any trailing part of
/// it made of whole segments (`*.json` matches `dir/a.json`).
pub(crate) fn glob_matches(glob: &str, path: &Path) -> bool {
    let path = path.to_string_lossy();
    let path: &str = path.strip_prefix("./").unwrap_or(&path);
    let glob = glob.strip_prefix("./").unwrap_or(glob);
    let mut starts = vec![0];
    starts.extend(path.match_indices('/').map(|(i, _)| i + 1));
    starts
        .into_iter()
        .any(|i| matches_at(glob.as_bytes(), &path.as_bytes()[i..]))
}

fn matches_at(glob: &[u8], text: &[u8]) -> bool {
    match glob {
        [] => text.is_empty(),
        [b'*', b'*', rest @ ..] => {
            let rest = rest.strip_prefix(b"/").unwrap_or(rest);
            (0..=text.len()).any(|i| matches_at(rest, &text[i..]))
        }
        [b'*', rest @ ..] => {
            let segment = text.iter().position(|&c| c == b'/').unwrap_or(text.len());
            (0..=segment).any(|i| matches_at(rest, &text[i..]))
        }
        [b'?', rest @ ..] => {
            text.first().is_some_and(|&c| c != b'/') && matches_at(rest, &text[1..])
        }
        [c, rest @ ..] => text.first() == Some(c) && matches_at(rest, &text[1..]),
    }
}

/// Expands `paths` into readable files: a directory contributes its `*.yaml`, `*.yml` and
/// `*.json` files, recursively, in name order (hidden entries skipped). Each file says whether
/// it was named itself (`true`) or found in a directory.
pub(crate) fn expand(paths: &[PathBuf]) -> Vec<Result<(PathBuf, bool), Unreadable>> {
    let mut out = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => walk(path, &mut out),
            Ok(_) => out.push(Ok((path.clone(), true))),
            Err(e) => out.push(Err(Unreadable::input(
                &path.display().to_string(),
                e.to_string(),
            ))),
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<Result<(PathBuf, bool), Unreadable>>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            out.push(Err(Unreadable::input(
                &dir.display().to_string(),
                e.to_string(),
            )));
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(Ok((path, false)));
        }
    }
}

/// One document of a source.
#[derive(Debug)]
pub(crate) struct Document {
    pub(crate) value: Value,
    /// Its number in the source, from 0 (what `Reader::locate` finds its fields by).
    pub(crate) index: usize,
    /// Where it starts.
    pub(crate) root: Option<Position>,
    /// Keys written twice in one object, by path.
    pub(crate) duplicates: Vec<Vec<Step>>,
}

/// Reads the documents of one source, one at a time (each is checked and dropped before the
/// next is built), then locates the fields the findings name.
pub(crate) struct Reader<'a> {
    source: &'a Input,
    format: Format<'a>,
    next_index: usize,
    /// Why reading stopped early.
    pub(crate) failure: Option<Unreadable>,
}

enum Format<'a> {
    /// YAML documents, up to a document refused before parsing (`scan_yaml`).
    Yaml {
        documents: Box<yaml::Documents<'a>>,
        /// The text parsed.
        text: &'a str,
        refused: Option<Refused>,
    },
    /// One or more JSON values, each located within its own text.
    Json(JsonValues<'a>),
}

/// The JSON values of a text, read one at a time.
struct JsonValues<'a> {
    text: Cow<'a, str>,
    offset: usize,
    cursor: LineCursor,
    /// Each value's byte range and where it starts.
    values: Vec<(std::ops::Range<usize>, Position)>,
}

/// Where a document that cannot be read fails, and why.
type Failed = (Option<Position>, String);

impl<'a> Reader<'a> {
    pub(crate) fn new(source: &'a Input) -> Reader<'a> {
        let trimmed = source.text.trim_start();
        let format = if trimmed.starts_with('{') || trimmed.starts_with('[') {
            // Unpaired surrogates read as U+FFFD, as by the webhook and kube-apiserver
            // (`job::wire::strict`).
            let text = match crate::job::wire::strict::go_surrogates(source.text.as_bytes()) {
                Cow::Borrowed(_) => Cow::Borrowed(source.text.as_str()),
                Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
            };
            Format::Json(JsonValues {
                text,
                offset: 0,
                cursor: LineCursor::default(),
                values: Vec::new(),
            })
        } else {
            // Documents past a pathological one are not parsed at all (`scan_yaml`).
            let (text, refused) = match scan_yaml(&source.text) {
                Some(bad) => (&source.text[..bad.start], Some(bad)),
                None => (source.text.as_str(), None),
            };
            Format::Yaml {
                documents: Box::new(yaml::documents(text)),
                text,
                refused,
            }
        };
        Reader {
            source,
            format,
            next_index: 0,
            failure: None,
        }
    }

    fn fail(&self, at: Option<Position>, reason: String) -> Unreadable {
        Unreadable {
            location: Location {
                file: self.source.name.clone(),
                at,
                field: None,
            },
            reason,
        }
    }

    /// The next document; `None` at the end or at the first one that cannot be read
    /// (`failure` then says why: a YAML stream cannot be resynchronized).
    pub(crate) fn next_document(&mut self) -> Option<Document> {
        let index = self.next_index;
        let read = match &mut self.format {
            Format::Yaml {
                documents, refused, ..
            } => next_yaml(documents, refused, &self.source.text, index),
            Format::Json(values) => values.next_value(index),
        }?;
        match read {
            Ok(doc) => {
                self.next_index += 1;
                Some(doc)
            }
            Err((at, reason)) => {
                self.failure = Some(self.fail(at, reason));
                None
            }
        }
    }

    /// Finds where the fields of `locations` (unlocated ones, `Location::field`) are written.
    pub(crate) fn locate<'l>(&self, locations: impl IntoIterator<Item = &'l mut Location>) {
        let mut pending: Vec<&mut Location> = locations
            .into_iter()
            .filter(|l| l.field.is_some())
            .collect();
        if pending.is_empty() {
            return;
        }
        match &self.format {
            Format::Yaml { text, .. } => {
                let mut wanted = Wanted::default();
                for l in &pending {
                    if let Some(f) = &l.field {
                        wanted.add(f.doc, &f.path);
                    }
                }
                wanted.locate(text, Position { line: 1, column: 1 });
                for l in &mut pending {
                    if let Some(f) = l.field.take() {
                        l.at = wanted.find(f.doc, &f.path).or(l.at);
                    }
                }
            }
            Format::Json(JsonValues { text, values, .. }) => {
                for (doc, (range, at)) in values.iter().enumerate() {
                    let mut wanted = Wanted::default();
                    for l in &pending {
                        if let Some(f) = l.field.as_ref().filter(|f| f.doc == doc) {
                            wanted.add(0, &f.path);
                        }
                    }
                    if wanted.is_empty() {
                        continue;
                    }
                    wanted.locate(&text[range.clone()], *at);
                    for l in &mut pending {
                        if l.field.as_ref().is_some_and(|f| f.doc == doc)
                            && let Some(f) = l.field.take()
                        {
                            l.at = wanted.find(0, &f.path).or(l.at);
                        }
                    }
                }
            }
        }
        // Whatever was not found keeps the position it had (its document's start).
        for l in pending {
            l.field = None;
        }
    }
}

/// The next YAML document, as document `index`; after the last, the document refused before
/// parsing (`scan_yaml`), if any. `None` at the end.
fn next_yaml(
    documents: &mut yaml::Documents<'_>,
    refused: &mut Option<Refused>,
    source: &str,
    index: usize,
) -> Option<Result<Document, Failed>> {
    match documents.next() {
        Some(Ok(doc)) => Some(Ok(Document {
            value: doc.value,
            index,
            root: doc.root,
            duplicates: doc.duplicates,
        })),
        Some(Err(f)) => Some(Err((f.at, f.reason))),
        None => refused.take().map(|bad| {
            let at = position_after_whitespace(source, bad.start);
            Err((Some(at), bad.reason))
        }),
    }
}

impl JsonValues<'_> {
    /// The next value, as document `index`; `None` at the end.
    fn next_value(&mut self, index: usize) -> Option<Result<Document, Failed>> {
        let rest = &self.text[self.offset..];
        let skipped = rest.len() - rest.trim_start().len();
        if skipped == rest.len() {
            return None;
        }
        let start = self.offset + skipped;
        let at = self.cursor.advance_to(&self.text, start);
        let mut stream =
            serde_json::Deserializer::from_str(&self.text[start..]).into_iter::<Tracked>();
        let read = stream.next();
        let end = start + stream.byte_offset();
        Some(
            match read.unwrap_or_else(|| Ok(Tracked(Value::Null, Vec::new()))) {
                Ok(Tracked(value, duplicates)) => {
                    self.offset = end;
                    self.values.push((start..end, at));
                    Ok(Document {
                        value,
                        index,
                        root: Some(at),
                        duplicates,
                    })
                }
                Err(e) => {
                    let error_at = Position {
                        line: e.line(),
                        column: e.column(),
                    }
                    .within(at);
                    let reason = crate::job::wire::strict::without_position(&e);
                    Err((Some(error_at), format!("invalid JSON: {reason}")))
                }
            },
        )
    }
}

/// Counts lines and columns up to a byte offset, moving forward only.
#[derive(Debug, Default)]
struct LineCursor {
    offset: usize,
    line: usize,
    line_start: usize,
}

impl LineCursor {
    fn advance_to(&mut self, text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        for (i, b) in text.as_bytes()[self.offset..offset].iter().enumerate() {
            if *b == b'\n' {
                self.line += 1;
                self.line_start = self.offset + i + 1;
            }
        }
        self.offset = offset;
        Position {
            line: self.line + 1,
            column: text[self.line_start..offset].chars().count() + 1,
        }
    }
}

/// A JSON value and the keys its objects repeat.
struct Tracked(Value, Vec<Vec<Step>>);

impl<'de> serde::Deserialize<'de> for Tracked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tracked, D::Error> {
        let mut duplicates = Vec::new();
        let value = ValueSeed {
            path: &mut Vec::new(),
            duplicates: &mut duplicates,
        }
        .deserialize(d)?;
        Ok(Tracked(value, duplicates))
    }
}

/// A JSON value read as `serde_json::Value` reads it, noting the keys an object repeats (Go's
/// decoder, like serde_json, keeps the last value; kube-apiserver's strict decoding reports them).
struct ValueSeed<'p> {
    path: &'p mut Vec<Step>,
    duplicates: &'p mut Vec<Vec<Step>>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.path.push(Step::Index(items.len()));
            let item = seq.next_element_seed(ValueSeed {
                path: self.path,
                duplicates: self.duplicates,
            });
            self.path.pop();
            match item? {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.path.push(Step::Key(key));
            let value = map.next_value_seed(ValueSeed {
                path: self.path,
                duplicates: self.duplicates,
            });
            let Some(Step::Key(key)) = self.path.pop() else {
                unreachable!("pushed above")
            };
            if object.insert(key.clone(), value?).is_some() {
                let mut at = self.path.clone();
                at.push(Step::Key(key));
                self.duplicates.push(at);
            }
        }
        Ok(Value::Object(object))
    }
}

/// The line and column of the first non-blank character at or after byte `offset`.
fn position_after_whitespace(text: &str, offset: usize) -> Position {
    let offset = offset.min(text.len());
    let skipped = text[offset..]
        .find(|c: char| !c.is_whitespace())
        .map_or(text.len(), |n| offset + n);
    LineCursor::default().advance_to(text, skipped)
}

/// kube-apiserver's request body limit (`--max-request-bytes`, 3 MiB): no larger document can be
/// applied, so none is read.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 3 * 1024 * 1024;

/// The reader's nesting limit (`yaml::MAX_DEPTH`), checked on the text first: a YAML parser can
/// spend time quadratic in the nesting of flow collections (a 200 KB file of `[[[[...` took 16 s
/// in the one serde_yaml_ng uses).
pub(crate) const MAX_FLOW_DEPTH: usize = yaml::MAX_DEPTH;

/// A YAML document refused before parsing: where it starts, and why.
#[derive(Debug, PartialEq)]
struct Refused {
    start: usize,
    reason: String,
}

/// One linear pass over a YAML stream: the first document larger than `MAX_DOCUMENT_BYTES` or
/// nesting flow collections (`[`, `{`) deeper than `MAX_FLOW_DEPTH`, outside quotes and comments.
/// (Block scalars are not told apart, so a block scalar holding over 128 unclosed brackets is
/// refused too.) Aliases need no scan: `yaml` stops expanding them at go-yaml's "excessive
/// aliasing" ratio.
fn scan_yaml(text: &str) -> Option<Refused> {
    let bytes = text.as_bytes();
    let mut doc_start = 0;
    let mut depth = 0usize;
    let mut line_start = true;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if line_start
            && (bytes[i..].starts_with(b"---") || bytes[i..].starts_with(b"..."))
            && bytes.get(i + 3).is_none_or(|c| c.is_ascii_whitespace())
        {
            doc_start = i;
            depth = 0;
        }
        if i - doc_start > MAX_DOCUMENT_BYTES {
            return Some(Refused {
                start: doc_start,
                reason: format!(
                    "document larger than {MAX_DOCUMENT_BYTES} bytes (kube-apiserver's request limit)"
                ),
            });
        }
        line_start = b == b'\n';
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return Some(Refused {
                        start: doc_start,
                        reason: format!(
                            "invalid YAML: flow collections nested deeper than {MAX_FLOW_DEPTH}"
                        ),
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'#' if i == 0 || bytes[i - 1].is_ascii_whitespace() => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' if i == 0 || !bytes[i - 1].is_ascii_alphanumeric() => {
                // A quoted scalar: skip to its end.
                i = closing_quote(bytes, i);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where the quoted scalar opened at `open` ends: the index of its closing quote (`\\` escapes in
/// double quotes, `''` in single), or past the end of `bytes`.
fn closing_quote(bytes: &[u8], open: usize) -> usize {
    let quote = bytes[open];
    let mut i = open + 1;
    while i < bytes.len() {
        if quote == b'"' && bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] == quote {
            if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            break;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> Input {
        Input {
            name: "t.yaml".into(),
            text: text.into(),
        }
    }

    /// Every document's value, and why reading stopped.
    fn documents(source: &Input) -> (Vec<Document>, Option<Unreadable>) {
        let mut reader = Reader::new(source);
        let mut docs = Vec::new();
        while let Some(doc) = reader.next_document() {
            docs.push(doc);
        }
        (docs, reader.failure)
    }

    #[test]
    fn yaml_multi_document_numbers_documents_from_zero() {
        let (docs, err) = documents(&src("kind: Job\n---\n---\nkind: Pod\n"));
        assert!(err.is_none());
        let kinds: Vec<(usize, Value)> = docs.into_iter().map(|d| (d.index, d.value)).collect();
        assert_eq!(
            kinds,
            [
                (0, serde_json::json!({"kind": "Job"})),
                (1, Value::Null),
                (2, serde_json::json!({"kind": "Pod"}))
            ]
        );
    }

    #[test]
    fn json_stream_and_array_each_located_in_its_own_text() {
        let source = src("{\"kind\":\"Job\"}\n  {\"kind\":\"CronJob\",\n \"a\":1, \"a\": 2}");
        let (docs, err) = documents(&source);
        assert!(err.is_none());
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].root, Some(Position { line: 2, column: 3 }));
        assert_eq!(docs[1].duplicates, [vec![Step::Key("a".into())]]);
        let mut reader = Reader::new(&source);
        while reader.next_document().is_some() {}
        let mut location = Location::field("t.yaml", 1, vec!["a".into()]);
        reader.locate([&mut location]);
        // The last `a`, where the value kept is written.
        assert_eq!(location.at, Some(Position { line: 3, column: 9 }));
        let (docs, _) = documents(&src("[{\"kind\":\"Job\"}]"));
        assert_eq!(docs[0].value, serde_json::json!([{"kind": "Job"}]));
    }

    #[test]
    fn deep_flow_nesting_is_refused_in_linear_time() {
        let deep = format!(
            "kind: Job\n---\na: {}1{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let started = std::time::Instant::now();
        let (docs, err) = documents(&src(&deep));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        assert_eq!(docs.len(), 1);
        let err = err.unwrap();
        // Where the refused document starts: its `---`.
        assert_eq!(err.location.to_string(), "t.yaml:2:1");
        assert_eq!(
            err.reason,
            "invalid YAML: flow collections nested deeper than 128"
        );
        // Brackets inside quotes and comments do not count; 128 levels are fine.
        let ok = format!(
            "a: '{}'\nb: \"{}\" # {}\nc: {}1{}\n",
            "[".repeat(200),
            "[".repeat(200),
            "[".repeat(200),
            "[".repeat(100),
            "]".repeat(100)
        );
        let (docs, err) = documents(&src(&ok));
        assert!(err.is_none(), "{err:?}");
        assert_eq!(docs.len(), 1);
    }

    #[test]
    fn a_document_over_kube_apiservers_request_limit_is_refused_unread() {
        let dense = format!("a: [{}1]\n", "1,".repeat(3_500_000));
        let (docs, err) = documents(&src(&dense));
        assert!(docs.is_empty());
        assert_eq!(
            err.unwrap().reason,
            "document larger than 3145728 bytes (kube-apiserver's request limit)"
        );
    }

    #[test]
    fn alias_expansion_is_bounded() {
        let mut laughs = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (i, c) in ('b'..='i').enumerate() {
            let prev = (b'a' + i as u8) as char;
            laughs.push_str(&format!("{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
        }
        let started = std::time::Instant::now();
        let (_, err) = documents(&src(&laughs));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(
            err.unwrap().reason,
            "invalid YAML: document contains excessive aliasing"
        );
    }

    #[test]
    fn broken_yaml_reports_the_document_and_reason() {
        let (docs, err) = documents(&src("kind: Job\n---\nkind: [\n"));
        assert_eq!(docs.len(), 1);
        let err = err.unwrap();
        // Where the parser gave up: the flow sequence left open.
        assert_eq!(err.location.to_string(), "t.yaml:3:7");
        assert!(err.reason.starts_with("invalid YAML: "), "{}", err.reason);
    }
}
