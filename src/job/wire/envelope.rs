//! Reading an AdmissionReview v1 request with serde, in one pass: the envelope fields jobgate
//! uses, a Job object read into `JobObject` as it streams by (`read::JobSeed`), any other object
//! kept raw. A body that fails that pass is read again with every object kept raw, so the answer
//! can say what is wrong and where. The admission `Operation` is defined here, where it is read.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::model::{JobObject, Kind};
use super::read::JobSeed;
use super::strict::Strict;

pub(crate) const API_VERSION: &str = "admission.k8s.io/v1";
pub(crate) const KIND: &str = "AdmissionReview";

/// The admission operation under review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub(crate) fn parse(s: &str) -> Option<Operation> {
        match s {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            "CONNECT" => Some(Operation::Connect),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

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
///
/// serde reads every review, once: a second, hand-written JSON reader would be a second place
/// where jobgate and kube-apiserver could read the same body differently.
pub fn parse(body: &[u8]) -> Result<ParsedReview<'_>, ReviewError> {
    // A body that is UTF-8 throughout (as every body kube-apiserver sends: Go's encoder writes
    // U+FFFD for invalid bytes) is read as text, which spares serde_json its UTF-8 check of each
    // string read (~100 instructions for each of the ~90 names and values of a 4 KB review, a
    // tenth of its instructions); one check of the whole body costs far less. Any other body is
    // read as bytes, exactly as before.
    let text = std::str::from_utf8(body).ok();
    read_with_serde(body, text)
}

/// `parse`'s reading: the fast shape first, then the slow one that keeps the objects raw.
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

/// `serde_json::from_slice` through `job::wire::strict`: objects only where Kubernetes has objects
/// (`"request": ["a"]` is not a request whose uid is "a"), the same reading as the objects get.
fn from_slice<'a, T: Deserialize<'a>>(body: &'a [u8]) -> serde_json::Result<T> {
    read(serde_json::Deserializer::from_slice(body))
}

/// The whole document `de` reads, through `job::wire::strict`.
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
}
