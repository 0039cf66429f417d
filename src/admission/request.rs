//! Reading an AdmissionReview v1 request: only the envelope fields, the objects left raw for
//! `job::JobObject` to read the few fields the rules need.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::job::quick_read;
use crate::job::read::JobSeed;
use crate::job::review::Operation;
use crate::job::scan::{Scan, Seen};
use crate::job::strict::Strict;
use crate::job::{JobObject, Kind};

pub(crate) const API_VERSION: &str = "admission.k8s.io/v1";
pub(crate) const KIND: &str = "AdmissionReview";

/// Why no AdmissionReview v1 with a uid could be read: answered with HTTP 400 (there is no uid
/// to answer to).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReviewError {
    /// The body cannot be read as an AdmissionReview (not JSON, or the wrong shape); holds the
    /// parser's message.
    #[error("request body is not an AdmissionReview: {0}")]
    NotAReview(String),
    /// `apiVersion` is set but is not `admission.k8s.io/v1`; holds the one sent.
    #[error("unsupported apiVersion {0:?}: jobgate speaks {API_VERSION:?}")]
    UnsupportedApiVersion(String),
    /// `apiVersion` is missing.
    #[error("apiVersion is required: expected {API_VERSION:?}")]
    NoApiVersion,
    /// `kind` is set but is not `AdmissionReview`; holds the one sent.
    #[error("unsupported kind {0:?}: expected {KIND:?}")]
    UnsupportedKind(String),
    /// `kind` is missing.
    #[error("kind is required: expected {KIND:?}")]
    NoKind,
    /// `request` is missing or null.
    #[error("request is required")]
    NoRequest,
    /// `request.uid` is missing.
    #[error("request.uid is required")]
    NoUid,
}

/// The parts of a review jobgate uses. `job_kind` is `None` for kinds jobgate lets through.
#[derive(Debug)]
pub struct ParsedReview<'a> {
    pub(crate) uid: String,
    pub(crate) job_kind: Option<Kind>,
    pub(crate) operation: Option<Operation>,
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) dry_run: bool,
    pub(crate) object: ObjectIn<'a>,
    pub(crate) old_object: ObjectIn<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReviewIn<'a, R> {
    #[serde(default, borrow)]
    api_version: Option<BodyStr<'a>>,
    #[serde(default, borrow)]
    kind: Option<BodyStr<'a>>,
    request: Option<R>,
}

/// A string borrowed from the body unless it holds an escape. serde's own `Cow<str>` copies
/// every time (its `Deserialize` reads a `String`; only a struct field of exactly that type,
/// marked `borrow`, borrows), which cost one allocation per key of every request.
struct BodyStr<'a>(Cow<'a, str>);

impl std::ops::Deref for BodyStr<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for BodyStr<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(BodyStrVisitor(std::marker::PhantomData))
    }
}

struct BodyStrVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> serde::de::Visitor<'de> for BodyStrVisitor<'a> {
    type Value = BodyStr<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(BodyStr(Cow::Borrowed(v)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(BodyStr(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(BodyStr(Cow::Owned(v)))
    }
}

/// The request's object: read in the same pass when the request's `kind` came first (as
/// kube-apiserver writes it), else kept raw and read afterwards.
#[derive(Debug)]
pub(crate) enum ObjectIn<'a> {
    /// No object, or `null` (as `oldObject` on CREATE, `object` on DELETE).
    Absent,
    /// The object's JSON, read afterwards (CronJobs, and every object on the slow path).
    Raw(&'a RawValue),
    /// A Job, read in the same pass as the envelope.
    Parsed(Box<JobObject>),
}

/// The single-pass request: Job objects are read as they stream by.
#[derive(Default)]
struct FastRequestIn<'a> {
    uid: Option<String>,
    kind: Option<(Cow<'a, str>, Cow<'a, str>, Cow<'a, str>)>,
    operation: Option<Cow<'a, str>>,
    namespace: Option<String>,
    name: Option<String>,
    dry_run: Option<bool>,
    object: Option<ObjectIn<'a>>,
    old_object: Option<ObjectIn<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for FastRequestIn<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FastRequestVisitor(std::marker::PhantomData))
    }
}

struct FastRequestVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> serde::de::Visitor<'de> for FastRequestVisitor<'a> {
    type Value = FastRequestIn<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an AdmissionRequest object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = FastRequestIn::default();
        while let Some(key) = map.next_key::<BodyStr<'de>>()? {
            match &*key {
                "uid" => out.uid = map.next_value()?,
                "kind" => {
                    let gvk: Option<GroupVersionKind<'de>> = map.next_value()?;
                    out.kind = gvk.map(|g| (g.group, g.version, g.kind));
                }
                "operation" => {
                    out.operation = map.next_value::<Option<BodyStr<'de>>>()?.map(|o| o.0);
                }
                "namespace" => out.namespace = map.next_value()?,
                "name" => out.name = map.next_value()?,
                "dryRun" => out.dry_run = map.next_value()?,
                "object" | "oldObject" => {
                    // CronJobs keep their raw text (mutation compares `spec.jobTemplate`
                    // texts on UPDATE), so only Jobs are read in this pass.
                    let kind = out.kind.as_ref().and_then(|(g, v, k)| job_kind(g, v, k));
                    let object = match kind.filter(|k| *k == Kind::Job) {
                        Some(kind) => match map.next_value_seed(JobSeed(kind))? {
                            Some(job) => ObjectIn::Parsed(Box::new(job)),
                            None => ObjectIn::Absent,
                        },
                        None => match map.next_value::<Option<&'de RawValue>>()? {
                            Some(raw) if raw.get() != "null" => ObjectIn::Raw(raw),
                            _ => ObjectIn::Absent,
                        },
                    };
                    if &*key == "object" {
                        out.object = Some(object);
                    } else {
                        out.old_object = Some(object);
                    }
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

fn job_kind(group: &str, version: &str, kind: &str) -> Option<Kind> {
    if group == "batch" && version == "v1" {
        Kind::from_kind(kind)
    } else {
        None
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestIn<'a> {
    #[serde(default)]
    uid: Option<String>,
    #[serde(default, borrow)]
    kind: Option<GroupVersionKind<'a>>,
    #[serde(default, borrow)]
    operation: Option<Cow<'a, str>>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    dry_run: Option<bool>,
    #[serde(default, borrow)]
    object: Option<&'a RawValue>,
    #[serde(default, borrow)]
    old_object: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct GroupVersionKind<'a> {
    #[serde(default, borrow)]
    group: Cow<'a, str>,
    #[serde(default, borrow)]
    version: Cow<'a, str>,
    #[serde(default, borrow)]
    kind: Cow<'a, str>,
}

/// Reads an AdmissionReview v1 request in one pass. When anything in it cannot be read, reads it
/// again the slow way, with the objects kept raw, so the answer can say what and where.
pub fn parse(body: &[u8]) -> Result<ParsedReview<'_>, ReviewError> {
    // A body that is UTF-8 throughout (as every body kube-apiserver sends: Go's encoder writes
    // U+FFFD for invalid bytes) is read as text: first by `job::scan` (a Job review as
    // kube-apiserver writes it), else by serde, which spares serde_json its UTF-8 check of each
    // string read (~100 instructions for each of the ~90 names and values of a 4 KB review, a
    // tenth of its instructions); one check of the whole body costs far less. Any other body is
    // read as bytes, exactly as before.
    let text = std::str::from_utf8(body).ok();
    if let Some((api_version, kind, request)) = text.and_then(quick) {
        return finish(api_version, kind, request);
    }
    read_with_serde(body, text)
}

/// `parse` without `job::scan`: serde decides.
fn read_with_serde<'a>(
    body: &'a [u8],
    text: Option<&'a str>,
) -> Result<ParsedReview<'a>, ReviewError> {
    let fast: serde_json::Result<ReviewIn<'_, FastRequestIn<'_>>> = match text {
        Some(text) => read(serde_json::Deserializer::from_str(text)),
        None => read(serde_json::Deserializer::from_slice(body)),
    };
    if let Ok(review) = fast {
        let (api_version, kind) = (review.api_version, review.kind);
        let request = review.request.map(|r| {
            let (group, version, kind) = r.kind.unwrap_or_default();
            Envelope {
                uid: r.uid,
                job_kind: job_kind(&group, &version, &kind),
                operation: r.operation,
                namespace: r.namespace,
                name: r.name,
                dry_run: r.dry_run,
                object: r.object.unwrap_or(ObjectIn::Absent),
                old_object: r.old_object.unwrap_or(ObjectIn::Absent),
            }
        });
        return finish(api_version.as_deref(), kind.as_deref(), request);
    }
    let review: ReviewIn<'_, RequestIn<'_>> =
        from_slice(body).map_err(|e| ReviewError::NotAReview(e.to_string()))?;
    let request = review.request.map(|r| Envelope {
        uid: r.uid,
        job_kind: r
            .kind
            .as_ref()
            .and_then(|g| job_kind(&g.group, &g.version, &g.kind)),
        operation: r.operation,
        namespace: r.namespace,
        name: r.name,
        dry_run: r.dry_run,
        object: raw_object(r.object),
        old_object: raw_object(r.old_object),
    });
    finish(
        review.api_version.as_deref(),
        review.kind.as_deref(),
        request,
    )
}

/// What `parse` reads before `finish`: `apiVersion`, `kind` and the request.
type Read<'a> = (Option<&'a str>, Option<&'a str>, Option<Envelope<'a>>);

/// A review of a `batch/v1` Job as kube-apiserver writes it (the request's `kind` before its
/// objects), read by `job::scan` into what serde would read from it; `None` for any other, which
/// serde then reads. The `Seen` numbers stand for serde's duplicate-field refusal.
fn quick(text: &str) -> Option<Read<'_>> {
    let mut scan = Scan::new(text);
    let mut seen = Seen::default();
    let (mut api_version, mut kind, mut request) = (None, None, None);
    scan.object(|scan, key| match key {
        "apiVersion" => {
            seen.first(0)?;
            api_version = scan.opt(Scan::plain_str)?;
            Some(())
        }
        "kind" => {
            seen.first(1)?;
            kind = scan.opt(Scan::plain_str)?;
            Some(())
        }
        "request" => {
            seen.first(2)?;
            request = scan.opt(quick_request)?;
            Some(())
        }
        _ => scan.skip(),
    })?;
    scan.end()?;
    Some((api_version, kind, request))
}

fn quick_request<'a>(scan: &mut Scan<'a>) -> Option<Envelope<'a>> {
    let mut seen = Seen::default();
    let mut request = Envelope {
        uid: None,
        job_kind: None,
        operation: None,
        namespace: None,
        name: None,
        dry_run: None,
        object: ObjectIn::Absent,
        old_object: ObjectIn::Absent,
    };
    scan.object(|scan, key| {
        match key {
            "uid" => {
                seen.first(0)?;
                request.uid = scan.opt(quick_read::string)?;
            }
            "kind" => {
                seen.first(1)?;
                request.job_kind = scan.opt(quick_kind)?.flatten();
                // Only a Job is read here; its objects come after its kind.
                if request.job_kind != Some(Kind::Job) {
                    return None;
                }
            }
            "operation" => {
                seen.first(2)?;
                request.operation = scan.opt(Scan::plain_str)?.map(Cow::Borrowed);
            }
            "namespace" => {
                seen.first(3)?;
                request.namespace = scan.opt(quick_read::string)?;
            }
            "name" => {
                seen.first(4)?;
                request.name = scan.opt(quick_read::string)?;
            }
            "dryRun" => {
                seen.first(5)?;
                request.dry_run = scan.opt(Scan::bool)?;
            }
            "object" | "oldObject" => {
                seen.first(if key == "object" { 6 } else { 7 })?;
                if request.job_kind != Some(Kind::Job) {
                    return None;
                }
                let object = match quick_read::job(scan)? {
                    Some(job) => ObjectIn::Parsed(Box::new(job)),
                    None => ObjectIn::Absent,
                };
                if key == "object" {
                    request.object = object;
                } else {
                    request.old_object = object;
                }
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some(request)
}

/// `GroupVersionKind`: three strings, each refusing `null`.
fn quick_kind(scan: &mut Scan<'_>) -> Option<Option<Kind>> {
    let mut seen = Seen::default();
    let (mut group, mut version, mut kind) = ("", "", "");
    scan.object(|scan, key| {
        match key {
            "group" => {
                seen.first(0)?;
                group = scan.plain_str()?;
            }
            "version" => {
                seen.first(1)?;
                version = scan.plain_str()?;
            }
            "kind" => {
                seen.first(2)?;
                kind = scan.plain_str()?;
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some(job_kind(group, version, kind))
}

/// Whether `job::scan` reads `body` (`Ok(true)`), and if it does, that it reads what serde
/// reads, the object included: the invariant between `parse`'s two readers, which the fuzz
/// targets check on every input.
pub(crate) fn quick_reading_agrees(body: &[u8]) -> Result<bool, String> {
    let Ok(text) = std::str::from_utf8(body) else {
        return Ok(false);
    };
    let Some((api_version, kind, request)) = quick(text) else {
        return Ok(false);
    };
    let quick = finish(api_version, kind, request).map(readable);
    let serde = read_with_serde(body, Some(text)).map(readable);
    if quick == serde {
        Ok(true)
    } else {
        Err(format!(
            "job::scan and serde read the review differently:\n{quick:?}\n{serde:?}"
        ))
    }
}

/// A parsed review with its objects read, to compare two readings.
type Readable = (
    String,
    Option<Kind>,
    Option<Operation>,
    Option<String>,
    Option<String>,
    bool,
    [Option<Result<JobObject, String>>; 2],
);

fn readable(p: ParsedReview<'_>) -> Readable {
    let kind = p.job_kind;
    let object = |o: ObjectIn<'_>| match o {
        ObjectIn::Absent => None,
        ObjectIn::Parsed(job) => Some(Ok(*job)),
        ObjectIn::Raw(raw) => Some(
            kind.ok_or_else(|| "not a Job or CronJob".to_string())
                .and_then(|k| JobObject::from_json(k, raw.get()).map_err(|e| e.to_string())),
        ),
    };
    (
        p.uid,
        p.job_kind,
        p.operation,
        p.namespace,
        p.name,
        p.dry_run,
        [object(p.object), object(p.old_object)],
    )
}

/// `serde_json::from_slice` through `job::strict`: objects only where Kubernetes has objects
/// (`"request": ["a"]` is not a request whose uid is "a"), the same reading as the objects get.
fn from_slice<'a, T: Deserialize<'a>>(body: &'a [u8]) -> serde_json::Result<T> {
    read(serde_json::Deserializer::from_slice(body))
}

/// The whole document `de` reads, through `job::strict`.
fn read<'a, R: serde_json::de::Read<'a>, T: Deserialize<'a>>(
    mut de: serde_json::Deserializer<R>,
) -> serde_json::Result<T> {
    let value = T::deserialize(Strict(&mut de))?;
    de.end()?;
    Ok(value)
}

fn raw_object(raw: Option<&RawValue>) -> ObjectIn<'_> {
    match raw {
        Some(raw) if raw.get() != "null" => ObjectIn::Raw(raw),
        _ => ObjectIn::Absent,
    }
}

/// The request fields both readings produce.
struct Envelope<'a> {
    uid: Option<String>,
    job_kind: Option<Kind>,
    operation: Option<Cow<'a, str>>,
    namespace: Option<String>,
    name: Option<String>,
    dry_run: Option<bool>,
    object: ObjectIn<'a>,
    old_object: ObjectIn<'a>,
}

fn finish<'a>(
    api_version: Option<&str>,
    kind: Option<&str>,
    request: Option<Envelope<'a>>,
) -> Result<ParsedReview<'a>, ReviewError> {
    match api_version {
        Some(API_VERSION) => {}
        Some(other) => return Err(ReviewError::UnsupportedApiVersion(other.to_string())),
        None => return Err(ReviewError::NoApiVersion),
    }
    match kind {
        Some(KIND) => {}
        Some(other) => return Err(ReviewError::UnsupportedKind(other.to_string())),
        None => return Err(ReviewError::NoKind),
    }
    let request = request.ok_or(ReviewError::NoRequest)?;
    let uid = match request.uid {
        Some(uid) if !uid.is_empty() => uid,
        _ => return Err(ReviewError::NoUid),
    };
    Ok(ParsedReview {
        uid,
        job_kind: request.job_kind,
        operation: request.operation.as_deref().and_then(Operation::parse),
        namespace: request.namespace,
        name: request.name,
        dry_run: request.dry_run.unwrap_or(false),
        object: request.object,
        old_object: request.old_object,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> String {
        match parse(body.as_bytes()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("parsed: {body}"),
        }
    }

    #[test]
    fn bodies_without_a_v1_review_and_uid_are_unanswerable() {
        assert!(
            err("not json").starts_with("request body is not an AdmissionReview: expected ident")
        );
        assert_eq!(
            err(r#"{"kind":"AdmissionReview"}"#),
            r#"apiVersion is required: expected "admission.k8s.io/v1""#
        );
        assert_eq!(
            err(
                r#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}"#
            ),
            r#"unsupported apiVersion "admission.k8s.io/v1beta1": jobgate speaks "admission.k8s.io/v1""#
        );
        assert_eq!(
            err(r#"{"apiVersion":"admission.k8s.io/v1","kind":"Job"}"#),
            r#"unsupported kind "Job": expected "AdmissionReview""#
        );
        assert_eq!(
            err(r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#),
            "request is required"
        );
        assert_eq!(
            err(
                r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":""}}"#
            ),
            "request.uid is required"
        );
    }

    /// A body that is not UTF-8 throughout is read as bytes, as before: a string that is read must
    /// be UTF-8, a string that is skipped is not checked (so the Job is still read in one pass).
    #[test]
    fn bodies_that_are_not_utf8_read_as_they_did() {
        let body = |name: &[u8], username: &[u8]| {
            let mut b = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"batch","version":"v1","kind":"Job"},"userInfo":{"username":""#.to_vec();
            b.extend_from_slice(username);
            b.extend_from_slice(br#""},"name":""#);
            b.extend_from_slice(name);
            b.extend_from_slice(br#"","object":{"spec":{"backoffLimit":1}}}}"#);
            b
        };
        let read = |b: &[u8]| {
            parse(b).map(|p| {
                (
                    p.name,
                    matches!(p.object, ObjectIn::Parsed(ref j) if j.spec.backoff_limit == Some(1)),
                )
            })
        };
        assert_eq!(
            read(&body("é".as_bytes(), b"a")),
            Ok((Some("é".into()), true))
        );
        assert_eq!(read(&body(b"job", b"\xff")), Ok((Some("job".into()), true)));
        let refused = read(&body(b"\xff", b"a")).unwrap_err().to_string();
        assert!(
            refused
                .starts_with("request body is not an AdmissionReview: invalid unicode code point"),
            "{refused}"
        );
    }

    #[test]
    fn body_strings_are_borrowed_unless_escaped() {
        let read = |json| match serde_json::from_str::<BodyStr<'_>>(json).unwrap().0 {
            Cow::Borrowed(s) => ("borrowed", s.to_owned()),
            Cow::Owned(s) => ("owned", s),
        };
        assert_eq!(read(r#""object""#), ("borrowed", "object".into()));
        assert_eq!(read(r#""obj\u0065ct""#), ("owned", "object".into()));
        let e = serde_json::from_str::<BodyStr<'_>>("1").err().unwrap();
        assert_eq!(
            e.to_string(),
            "invalid type: integer `1`, expected a string at line 1 column 1"
        );
    }

    #[test]
    fn job_objects_are_read_in_the_same_pass_when_kind_comes_first() {
        let first = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"batch","version":"v1","kind":"Job"},"operation":"CREATE","object":{"spec":{"backoffLimit":1}}}}"#;
        assert!(matches!(
            parse(first.as_bytes()).unwrap().object,
            ObjectIn::Parsed(_)
        ));
        let last = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":{"spec":{"backoffLimit":1}},"kind":{"group":"batch","version":"v1","kind":"Job"},"operation":"CREATE"}}"#;
        assert!(matches!(
            parse(last.as_bytes()).unwrap().object,
            ObjectIn::Raw(_)
        ));
        // An unreadable object still yields the envelope (the object raw), so the answer can say why.
        let bad = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"batch","version":"v1","kind":"Job"},"operation":"CREATE","object":{"spec":{"backoffLimit":"x"}}}}"#;
        let parsed = parse(bad.as_bytes()).unwrap();
        assert_eq!(parsed.uid, "u");
        assert!(matches!(parsed.object, ObjectIn::Raw(_)));
    }

    #[test]
    fn only_batch_v1_jobs_and_cronjobs_are_ours() {
        let body = |g: &str, v: &str, k: &str| {
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","kind":{{"group":"{g}","version":"{v}","kind":"{k}"}},"operation":"CREATE","object":null}}}}"#
            )
        };
        let kind = |g, v, k| parse(body(g, v, k).as_bytes()).unwrap().job_kind;
        assert_eq!(kind("batch", "v1", "Job"), Some(Kind::Job));
        assert_eq!(kind("batch", "v1", "CronJob"), Some(Kind::CronJob));
        assert_eq!(kind("", "v1", "Pod"), None);
        assert_eq!(kind("apps", "v1", "Job"), None);
    }

    fn fixture_reviews() -> Vec<(String, Vec<u8>)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut out = Vec::new();
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.to_string_lossy().ends_with(".request.json") {
                    out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    /// The fixtures as kube-apiserver wrote them: `job::scan` reads every Job review among them
    /// whose objects serde reads, into what serde reads.
    #[test]
    fn job_scan_reads_every_readable_job_fixture_as_serde_does() {
        let reviews = fixture_reviews();
        assert!(reviews.len() > 40, "{}", reviews.len());
        let mut read = 0;
        for (name, body) in reviews {
            let quick = quick_reading_agrees(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
            let serde = read_with_serde(&body, std::str::from_utf8(&body).ok()).map(readable);
            let readable_job = serde
                .is_ok_and(|r| r.1 == Some(Kind::Job) && r.6.iter().flatten().all(Result::is_ok));
            assert_eq!(quick, readable_job, "{name}");
            read += usize::from(quick);
        }
        assert!(read > 20, "{read}");
    }

    /// A Job review holding every field `job::model` reads, each replaced in turn by values of
    /// every shape (as text, so `-0` and `01` go through) and given twice: wherever `job::scan`
    /// reads the result, it reads what serde reads.
    #[test]
    fn job_scan_agrees_with_serde_on_every_field_in_every_shape() {
        let object = serde_json::json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "generateName": "train-", "namespace": "ml",
                "deletionTimestamp": "2026-01-01T00:00:00Z", "uid": "x",
                "annotations": {"a": "b", "kubectl.kubernetes.io/last-applied-configuration": "{\"a\":\"b\"}"},
                "managedFields": [{"fieldsV1": {"f:spec": {"k:{\"name\":\"c\"}": {}}}}]},
            "spec": {"parallelism": 2, "completions": 4, "activeDeadlineSeconds": 600,
                "backoffLimit": 3, "ttlSecondsAfterFinished": 60, "backoffLimitPerIndex": 1,
                "maxFailedIndexes": 2, "completionMode": "Indexed", "managedBy": "kubernetes.io/job-controller",
                "suspend": false, "podReplacementPolicy": "Failed",
                "podFailurePolicy": {"rules": [
                    {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [1, 2]}},
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
                "successPolicy": {"rules": [{"succeededIndexes": "0-2", "succeededCount": 1}]},
                "template": {"metadata": {"labels": {"l": "v"}, "annotations": {"t": "v"}},
                    "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "i", "env": [{"name": "E", "value": "v"}]}],
                        "initContainers": [{"name": "init"}]}}},
            "status": {"startTime": "2026-01-01T00:00:00Z", "active": 2,
                "conditions": [{"type": "Suspended", "status": "True", "message": "a \"b\""}]}
        });
        let review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
                "name": "train", "namespace": "ml", "operation": "UPDATE", "dryRun": false,
                "userInfo": {"username": "u"}, "object": object, "oldObject": object}
        });
        assert_eq!(
            quick_reading_agrees(review.to_string().as_bytes()),
            Ok(true)
        );
        let values = [
            "null",
            "true",
            "false",
            "0",
            "1",
            "-1",
            "-0",
            "01",
            "1.0",
            "1e2",
            "2147483648",
            "-2147483649",
            "99999999999999999999",
            r#""""#,
            r#""x""#,
            r#""Indexed""#,
            r#""Suspended""#,
            r#""True""#,
            r#""Job""#,
            r#""batch""#,
            r#""v1""#,
            r#""In\u0064exed""#,
            r#""a\"b""#,
            r#""\ud800""#,
            r#""\ud83d\ude00""#,
            "\"é\"",
            "[]",
            "[null]",
            "[1]",
            r#"["a"]"#,
            "[{}]",
            r#"[{"name":"n","type":"Suspended","status":"True"}]"#,
            "{}",
            r#"{"a":1}"#,
            r#"{"rules":null}"#,
            r#"{"rules":[]}"#,
            " 7 ",
            "tru",
            "[1,]",
        ];
        const MARK: &str = "jobgate-mark-\u{1}";
        let marked = serde_json::to_string(MARK).unwrap();
        let mut pointers = Vec::new();
        collect_pointers(&review, String::new(), &mut pointers);
        let (mut read, mut tried) = (0, 0);
        for pointer in &pointers {
            let mut tree = review.clone();
            let original = tree.pointer(pointer).unwrap().to_string();
            *tree.pointer_mut(pointer).unwrap() = serde_json::Value::String(MARK.into());
            let text = tree.to_string();
            let mut bodies: Vec<String> = values
                .iter()
                .map(|v| text.replacen(&marked, v, 1))
                .collect();
            // The field given twice.
            if let Some(key) = pointer.rsplit('/').next().filter(|_| !pointer.is_empty()) {
                let key =
                    serde_json::to_string(&key.replace("~1", "/").replace("~0", "~")).unwrap();
                let member = format!("{key}:{marked}");
                bodies.push(text.replacen(
                    &member,
                    &format!("{key}:{original},{key}:{original}"),
                    1,
                ));
            }
            for body in bodies {
                tried += 1;
                match quick_reading_agrees(body.as_bytes()) {
                    Ok(quick) => read += usize::from(quick),
                    Err(e) => panic!("at {pointer}: {body}\n{e}"),
                }
            }
        }
        // Not a test that cannot fail: many of these are read by `job::scan` and compared.
        assert!(read * 4 > tried, "{read} of {tried}");
    }

    fn collect_pointers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
        out.push(at.clone());
        match v {
            serde_json::Value::Object(m) => {
                for (k, c) in m {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    collect_pointers(c, format!("{at}/{k}"), out);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    collect_pointers(c, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
}
