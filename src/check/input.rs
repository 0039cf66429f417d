//! Reading what `jobgate check` is given: files, directories and stdin holding YAML (several
//! documents) or JSON (one or more values), each document a Job, CronJob, `List` or
//! AdmissionReview, or something else to skip.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// One readable input: its display name (`jobs.yaml`, `-` for stdin) and its text.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub text: String,
}

/// Why an input could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub location: String,
    pub reason: String,
}

/// Expands `paths` into readable files: a directory contributes its `*.yaml`, `*.yml` and
/// `*.json` files, recursively, in name order (hidden entries skipped).
pub fn expand(paths: &[PathBuf]) -> Vec<Result<PathBuf, Unreadable>> {
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

/// The documents of one source, numbered from 1 as they appear; a document that cannot be
/// parsed ends the source (a YAML stream cannot be resynchronized).
pub fn documents(source: &Source) -> (Vec<(usize, Value)>, Option<Unreadable>) {
    let trimmed = source.text.trim_start();
    let json = trimmed.starts_with('{') || trimmed.starts_with('[');
    let mut docs = Vec::new();
    let fail = |n: usize, e: String| Unreadable {
        location: format!("{}:{n}", source.name),
        reason: e,
    };
    if json {
        let stream = serde_json::Deserializer::from_str(&source.text).into_iter::<Value>();
        for (i, item) in stream.enumerate() {
            match item {
                Ok(v) => docs.push((i + 1, v)),
                Err(e) => return (docs, Some(fail(i + 1, format!("invalid JSON: {e}")))),
            }
        }
    } else {
        for (i, doc) in serde_yaml_ng::Deserializer::from_str(&source.text).enumerate() {
            match Value::deserialize(doc) {
                Ok(v) => docs.push((i + 1, v)),
                Err(e) => return (docs, Some(fail(i + 1, format!("invalid YAML: {e}")))),
            }
        }
    }
    (docs, None)
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
        let kinds: Vec<(usize, Value)> = docs;
        assert_eq!(kinds[0], (1, serde_json::json!({"kind": "Job"})));
        assert_eq!(kinds[1], (2, Value::Null));
        assert_eq!(kinds[2], (3, serde_json::json!({"kind": "Pod"})));
    }

    #[test]
    fn json_stream_and_array() {
        let (docs, err) = documents(&src("{\"kind\":\"Job\"}\n{\"kind\":\"CronJob\"}"));
        assert!(err.is_none());
        assert_eq!(docs.len(), 2);
        let (docs, _) = documents(&src("[{\"kind\":\"Job\"}]"));
        assert_eq!(docs[0].1, serde_json::json!([{"kind": "Job"}]));
    }

    #[test]
    fn broken_yaml_reports_the_document_and_reason() {
        let (docs, err) = documents(&src("kind: Job\n---\nkind: [\n"));
        assert_eq!(docs.len(), 1);
        let err = err.unwrap();
        assert_eq!(err.location, "t.yaml:2");
        assert!(err.reason.starts_with("invalid YAML: "), "{}", err.reason);
    }
}
