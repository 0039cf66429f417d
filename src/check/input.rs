//! Reading what `jobgate check` is given: files, directories and stdin holding YAML (several
//! documents) or JSON (one or more values), each document a Job, CronJob, `List` or
//! AdmissionReview, or something else to skip.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::locate::{self, Position, Positions};

/// One readable input: its display name (`jobs.yaml`, `-` for stdin) and its text.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) name: String,
    pub(crate) text: String,
}

impl Source {
    pub(crate) fn named(name: &str, text: String) -> Source {
        Source {
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

/// Why an input could not be read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unreadable {
    pub(crate) location: String,
    pub(crate) reason: String,
}

/// Expands `paths` into readable files: a directory contributes its `*.yaml`, `*.yml` and
/// `*.json` files, recursively, in name order (hidden entries skipped).
pub(crate) fn expand(paths: &[PathBuf]) -> Vec<Result<PathBuf, Unreadable>> {
    let mut out = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => walk(path, &mut out),
            Ok(_) => out.push(Ok(path.clone())),
            Err(e) => out.push(Err(Unreadable {
                location: path.display().to_string(),
                reason: e.to_string(),
            })),
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<Result<PathBuf, Unreadable>>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            out.push(Err(Unreadable {
                location: dir.display().to_string(),
                reason: e.to_string(),
            }));
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
            out.push(Ok(path));
        }
    }
}

/// One document of a source: its value, and where its fields are written.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    pub(crate) value: Value,
    pub(crate) positions: Positions,
}

/// The documents of one source, numbered from 1 as they appear; a document that cannot be
/// parsed ends the source (a YAML stream cannot be resynchronized).
pub(crate) fn documents(source: &Source) -> (Vec<Document>, Option<Unreadable>) {
    let trimmed = source.text.trim_start();
    let json = trimmed.starts_with('{') || trimmed.starts_with('[');
    let mut docs = Vec::new();
    let fail = |at: Option<Position>, e: String| Unreadable {
        location: match at {
            Some(p) => format!("{}:{}:{}", source.name, p.line, p.column),
            None => source.name.clone(),
        },
        reason: e,
    };
    if json {
        // Unpaired surrogates read as U+FFFD, as by the webhook and kube-apiserver (`job::strict`).
        let text = crate::job::strict::go_surrogates(source.text.as_bytes());
        let text = std::str::from_utf8(&text).unwrap_or(&source.text);
        // One JSON value is YAML too; a stream of several is not, so only the first is located
        // field by field, the others by where they start.
        let mut located = match scan_yaml(text) {
            None => locate::positions(text).into_iter(),
            Some(_) => Vec::new().into_iter(),
        };
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        loop {
            let start = stream.byte_offset();
            let item = stream.next();
            let Some(item) = item else { break };
            let at = position_after_whitespace(text, start);
            match item {
                Ok(value) => {
                    let mut positions = located.next().unwrap_or_default();
                    positions.root.get_or_insert(at);
                    docs.push(Document { value, positions })
                }
                Err(e) => {
                    let at = Position {
                        line: e.line(),
                        column: e.column(),
                    };
                    let reason = crate::job::strict::without_position(&e);
                    return (
                        docs,
                        Some(fail(Some(at), format!("invalid JSON: {reason}"))),
                    );
                }
            }
        }
    } else {
        // Documents past a pathological one are not parsed at all (`scan_yaml`).
        let (text, refused) = match scan_yaml(&source.text) {
            Some(bad) => (&source.text[..bad.start], Some(bad)),
            None => (source.text.as_str(), None),
        };
        let mut located = locate::positions(text).into_iter();
        let stream = (!text.is_empty() || refused.is_none())
            .then(|| serde_yaml_ng::Deserializer::from_str(text));
        for doc in stream.into_iter().flatten() {
            match Value::deserialize(doc) {
                Ok(value) => docs.push(Document {
                    value,
                    positions: located.next().unwrap_or_default(),
                }),
                Err(e) => {
                    let at = e.location().map(|l| Position {
                        line: l.line(),
                        column: l.column(),
                    });
                    return (docs, Some(fail(at, format!("invalid YAML: {e}"))));
                }
            }
        }
        if let Some(bad) = refused {
            let at = position_after_whitespace(&source.text, bad.start);
            return (docs, Some(fail(Some(at), bad.reason)));
        }
    }
    (docs, None)
}

/// The line and column of the first non-blank character at or after byte `offset`.
fn position_after_whitespace(text: &str, offset: usize) -> Position {
    let offset = offset.min(text.len());
    let skipped = text[offset..]
        .find(|c: char| !c.is_whitespace())
        .map_or(text.len(), |n| offset + n);
    let before = &text[..skipped];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Position {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

/// kube-apiserver's request body limit (`--max-request-bytes`, 3 MiB): no larger document can be
/// applied, so none is read.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 3 * 1024 * 1024;

/// serde_yaml_ng's recursion limit; the YAML parser under it spends time quadratic in the
/// nesting of flow collections before it gets there (a 200 KB file of `[[[[...` took 16 s).
pub(crate) const MAX_FLOW_DEPTH: usize = 128;

/// A YAML document refused before parsing: where it starts, and why.
#[derive(Debug, PartialEq)]
struct Refused {
    start: usize,
    reason: String,
}

/// One linear pass over a YAML stream: the first document larger than `MAX_DOCUMENT_BYTES` or
/// nesting flow collections (`[`, `{`) deeper than `MAX_FLOW_DEPTH`, outside quotes and comments.
/// (Block scalars are not told apart, so a block scalar holding over 128 unclosed brackets is
/// refused too.) Aliases need no scan: serde_yaml_ng stops expanding them past 100 times the
/// document's own events, in time linear in the document.
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
                // A quoted scalar: skip to its end (`\\` escapes in double quotes, `''` in single).
                let quote = b;
                i += 1;
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
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> Source {
        Source {
            name: "t.yaml".into(),
            text: text.into(),
        }
    }

    #[test]
    fn yaml_multi_document_numbers_documents_from_one() {
        let (docs, err) = documents(&src("kind: Job\n---\n---\nkind: Pod\n"));
        assert!(err.is_none());
        let kinds: Vec<Value> = docs.into_iter().map(|d| d.value).collect();
        assert_eq!(
            kinds,
            [
                serde_json::json!({"kind": "Job"}),
                Value::Null,
                serde_json::json!({"kind": "Pod"})
            ]
        );
    }

    #[test]
    fn json_stream_and_array() {
        let (docs, err) = documents(&src("{\"kind\":\"Job\"}\n{\"kind\":\"CronJob\"}"));
        assert!(err.is_none());
        assert_eq!(docs.len(), 2);
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
        assert_eq!(err.location, "t.yaml:2:1");
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
        assert!(err.unwrap().reason.contains("repetition limit exceeded"));
    }

    #[test]
    fn broken_yaml_reports_the_document_and_reason() {
        let (docs, err) = documents(&src("kind: Job\n---\nkind: [\n"));
        assert_eq!(docs.len(), 1);
        let err = err.unwrap();
        // Where the parser gave up: the end of the unclosed flow sequence.
        assert_eq!(err.location, "t.yaml:4:1");
        assert!(err.reason.starts_with("invalid YAML: "), "{}", err.reason);
    }
}
