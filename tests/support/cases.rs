//! Job and CronJob writes for the differential tests (the per-release parity with upstream's
//! code, the admission-policy twin): every manifest and AdmissionReview the repository has, read
//! as the write a client would send, plus the seeded generator in `generate`.
//!
//! A case is a CREATE of a manifest, or an UPDATE: a stored object (with the `status` the Job
//! controller would have written) and the JSON merge patch a client sends (`kubectl patch
//! --type=merge`); an update is a patch of the stored object so the server-set fields (selector,
//! template labels) stay what the server made them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// A write of a Job or CronJob.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// A manifest as a client sends it.
    Create(Value),
    /// `old` is the stored object's manifest (with `status`); `patch` an RFC 7386 merge patch.
    Update {
        /// The stored object.
        old: Value,
        /// The merge patch.
        patch: Value,
    },
}

/// One case: a stable id (where it comes from) and the write.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Where the case comes from: `fixture:GROUP/NAME`, `PREFIX:FILE#N`, `gen:create:N`, ...
    pub id: String,
    /// The write a client sends.
    pub write: Write,
}

impl Case {
    /// `Job` or `CronJob`.
    pub fn kind(&self) -> &str {
        let object = match &self.write {
            Write::Create(o) => o,
            Write::Update { old, .. } => old,
        };
        object["kind"].as_str().unwrap_or_default()
    }

    /// Whether the write is an UPDATE.
    pub fn is_update(&self) -> bool {
        matches!(self.write, Write::Update { .. })
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every Job and CronJob write the repository has, each once (the first id wins), in a stable
/// order: the AdmissionReview fixtures (`tests/fixtures/*/`), the example manifests
/// (`examples/manifests/**`), the shipped manifests under `deploy/`, the YAML blocks of the
/// book (`docs/src/**.md`), and the manifests written inline in `tests/*.rs`.
pub fn repository_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let fixtures = repo().join("tests/fixtures");
    for dir in sorted_dir(&fixtures) {
        let group = dir.file_name().unwrap().to_string_lossy().to_string();
        for file in sorted_files(&dir, &[".request.json"]) {
            let name = file.file_name().unwrap().to_string_lossy();
            let name = name.trim_end_matches(".request.json");
            let review: Value = serde_json::from_slice(&std::fs::read(&file).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if let Some(write) = review_write(&review) {
                cases.push(Case {
                    id: format!("fixture:{group}/{name}"),
                    write,
                });
            }
        }
    }
    for (root, prefix) in [
        ("examples/manifests", "example"),
        ("deploy", "deploy"),
        ("docs/src", "docs"),
    ] {
        let mut files = Vec::new();
        walk(&repo().join(root), &mut files);
        files.sort();
        for file in files {
            let rel = file.strip_prefix(repo().join(root)).unwrap();
            let rel = rel.to_string_lossy().to_string();
            let text = std::fs::read_to_string(&file).unwrap();
            let docs = if rel.ends_with(".md") {
                markdown_yaml_blocks(&text)
                    .iter()
                    .flat_map(|b| yaml_documents(b))
                    .collect()
            } else if rel.ends_with(".yaml") || rel.ends_with(".yml") {
                yaml_documents(&text)
            } else {
                continue;
            };
            for (i, doc) in docs.into_iter().filter(is_job_or_cron_job).enumerate() {
                cases.push(Case {
                    id: format!("{prefix}:{rel}#{i}"),
                    write: Write::Create(doc),
                });
            }
        }
    }
    for file in sorted_files(&repo().join("tests"), &[".rs"]) {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        let mut named: BTreeMap<String, usize> = BTreeMap::new();
        for literal in string_literals(&text) {
            let written = match serde_json::from_str::<Value>(&literal) {
                Ok(review) if review["kind"] == "AdmissionReview" => review_write(&review),
                Ok(doc) => Some(Write::Create(doc)),
                Err(_) => yaml_documents(&literal)
                    .into_iter()
                    .next()
                    .map(Write::Create),
            };
            let Some(write) = written.filter(|w| match w {
                Write::Create(doc) => is_job_or_cron_job(doc),
                Write::Update { old, .. } => is_job_or_cron_job(old),
            }) else {
                continue;
            };
            // Named after the object (and its rank among the file's objects of that name), so
            // that the id survives edits elsewhere in the file.
            let object = match &write {
                Write::Create(doc) => doc,
                Write::Update { old, .. } => old,
            };
            let object_name = object["metadata"]["name"]
                .as_str()
                .unwrap_or("-")
                .to_string();
            let n = named.entry(object_name.clone()).or_default();
            *n += 1;
            let id = if *n == 1 {
                format!("tests:{name}:{object_name}")
            } else {
                format!("tests:{name}:{object_name}#{n}")
            };
            cases.push(Case { id, write });
        }
    }
    let mut seen = BTreeSet::new();
    cases.retain(|c| seen.insert(format!("{:?}", c.write)));
    cases
}

fn is_job_or_cron_job(doc: &Value) -> bool {
    matches!(doc["apiVersion"].as_str(), Some("batch/v1"))
        && matches!(doc["kind"].as_str(), Some("Job" | "CronJob"))
}

/// The write an AdmissionReview stands for: its object as the client's manifest (CREATE), or
/// its oldObject stored and the difference to its object as a merge patch (UPDATE). Other
/// operations and kinds have none.
fn review_write(review: &Value) -> Option<Write> {
    let request = &review["request"];
    let object = request.get("object").filter(|o| o.is_object())?;
    if !is_job_or_cron_job(object) {
        return None;
    }
    match request["operation"].as_str()? {
        "CREATE" => Some(Write::Create(client_manifest(object, false))),
        "UPDATE" => {
            let old = request.get("oldObject").filter(|o| o.is_object())?;
            let old = client_manifest(old, true);
            let new = client_manifest(object, false);
            let mut old_spec_only = old.clone();
            if let Some(m) = old_spec_only.as_object_mut() {
                m.remove("status");
            }
            Some(Write::Update {
                patch: merge_diff(&old_spec_only, &new),
                old,
            })
        }
        _ => None,
    }
}

/// An object as a client writes it: without the fields the server sets on create (uid,
/// resourceVersion, generation, creationTimestamp, managedFields, the generated selector and the
/// labels that go with it) and, unless `keep_status`, without `status`.
fn client_manifest(object: &Value, keep_status: bool) -> Value {
    let mut o = object.clone();
    let Some(m) = o.as_object_mut() else {
        return o;
    };
    if !keep_status {
        m.remove("status");
    }
    if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(k);
        }
        strip_generated_labels(meta);
    }
    let spec = if m["kind"] == "CronJob" {
        m.get_mut("spec")
            .and_then(|s| s.get_mut("jobTemplate"))
            .and_then(|t| t.get_mut("spec"))
    } else {
        m.get_mut("spec")
    };
    if let Some(spec) = spec.and_then(Value::as_object_mut) {
        if spec.get("manualSelector") != Some(&Value::Bool(true)) {
            spec.remove("selector");
            spec.remove("manualSelector");
        }
        if let Some(meta) = spec
            .get_mut("template")
            .and_then(|t| t.get_mut("metadata"))
            .and_then(Value::as_object_mut)
        {
            meta.remove("creationTimestamp");
            strip_generated_labels(meta);
        }
    }
    o
}

/// The labels the Job strategy adds from the Job's uid and name (`generateSelector`).
fn strip_generated_labels(meta: &mut Map<String, Value>) {
    if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
        for k in [
            "batch.kubernetes.io/controller-uid",
            "batch.kubernetes.io/job-name",
            "controller-uid",
            "job-name",
        ] {
            labels.remove(k);
        }
        if labels.is_empty() {
            meta.remove("labels");
        }
    }
}

/// The RFC 7386 merge patch that turns `old` into `new`: changed members, `null` for removed
/// ones; arrays and scalars are replaced whole.
pub fn merge_diff(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut patch = Map::new();
            for (k, v) in b {
                match a.get(k) {
                    Some(o) if o == v => {}
                    Some(o) if o.is_object() && v.is_object() => {
                        patch.insert(k.clone(), merge_diff(o, v));
                    }
                    _ => {
                        patch.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in a.keys() {
                if !b.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

/// RFC 7386: `patch` applied to `doc`.
pub fn merge_patch(doc: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *doc = patch.clone();
        return;
    };
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let d = doc.as_object_mut().expect("an object");
    for (k, v) in p {
        if v.is_null() {
            d.remove(k);
        } else {
            merge_patch(d.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn sorted_dir(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

fn sorted_files(dir: &Path, suffixes: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && suffixes.iter().any(|s| p.to_string_lossy().ends_with(s)))
        .collect();
    out.sort();
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The documents of a YAML stream, as JSON, up to the first that is not YAML.
fn yaml_documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    // After an error the stream yields that error forever: stop at the first.
    serde_yaml_ng::Deserializer::from_str(text)
        .map_while(|d| Value::deserialize(d).ok())
        .filter(|v| !v.is_null())
        .collect()
}

/// The bodies of the ```yaml blocks of a Markdown page.
fn markdown_yaml_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let fence = line.trim_start();
        match &mut current {
            None if fence.starts_with("```yaml") || fence.starts_with("```yml") => {
                current = Some(String::new())
            }
            Some(body) if fence.starts_with("```") => {
                blocks.push(std::mem::take(body));
                current = None;
            }
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// The string literals of a Rust source that hold a batch/v1 manifest or an AdmissionReview
/// (plain `"..."` with its escapes read, or raw `r#"..."#`), in order. Literals that are
/// `format!` templates are left out: their `{}` are not the manifest's.
fn string_literals(source: &str) -> Vec<String> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"//") {
            i += memchr_newline(&bytes[i..]);
            continue;
        }
        let raw = bytes[i..].starts_with(b"r#\"");
        let plain = bytes[i] == b'"' && (i == 0 || bytes[i - 1] != b'\'');
        if !(raw || plain) {
            i += 1;
            continue;
        }
        let start = i;
        let (body, end) = if raw {
            let body_start = i + 3;
            let Some(len) = source[body_start..].find("\"#") else {
                break;
            };
            (
                source[body_start..body_start + len].to_string(),
                body_start + len + 2,
            )
        } else {
            match plain_literal(&source[i + 1..]) {
                Some((body, len)) => (body, i + 1 + len + 1),
                None => break,
            }
        };
        let before = source[..start].trim_end();
        let templated = before.ends_with("format!(") || before.ends_with("concat!(");
        let trimmed = body.trim_start();
        let manifest = trimmed.starts_with("apiVersion: batch/v1")
            || trimmed.starts_with("{\"apiVersion\":\"batch/v1\"")
            || trimmed.starts_with("{\"apiVersion\":\"admission.k8s.io/v1\"");
        if manifest && !templated {
            out.push(body);
        }
        i = end;
    }
    out
}

fn memchr_newline(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|b| *b == b'\n')
        .unwrap_or(bytes.len())
}

/// A plain Rust string literal's value from just after its opening quote, and the length of
/// its source up to the closing quote.
fn plain_literal(s: &str) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Some((out, at)),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                '\'' => out.push('\''),
                '\n' => {
                    // A line continuation skips the newline and the next line's indentation.
                    while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                        chars.next();
                    }
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            },
            c => out.push(c),
        }
    }
    None
}
