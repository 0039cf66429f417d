//! Reading an AdmissionReview v1 request: only the envelope fields, the objects left raw for
//! `job::JobObject` to read the few fields the rules need.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::job::{Kind, Operation};

pub const API_VERSION: &str = "admission.k8s.io/v1";
pub const KIND: &str = "AdmissionReview";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReviewError {
    /// No AdmissionReview v1 with a uid could be read: answered with HTTP 400.
    #[error("{0}")]
    Unanswerable(String),
}

/// The parts of a review jobgate uses. `job_kind` is `None` for kinds jobgate lets through.
#[derive(Debug)]
pub struct ParsedReview<'a> {
    pub uid: String,
    pub job_kind: Option<Kind>,
    pub operation: Option<Operation>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub dry_run: bool,
    pub object: Option<&'a RawValue>,
    pub old_object: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReviewIn<'a> {
    #[serde(default, borrow)]
    api_version: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    request: Option<RequestIn<'a>>,
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

/// Reads the envelope of an AdmissionReview v1 request.
pub fn parse(body: &[u8]) -> Result<ParsedReview<'_>, ReviewError> {
    let unanswerable = |m: String| ReviewError::Unanswerable(m);
    let review: ReviewIn<'_> = serde_json::from_slice(body)
        .map_err(|e| unanswerable(format!("request body is not an AdmissionReview: {e}")))?;
    match review.api_version.as_deref() {
        Some(API_VERSION) => {}
        Some(other) => {
            return Err(unanswerable(format!(
                "unsupported apiVersion {other:?}: jobgate speaks {API_VERSION:?}"
            )));
        }
        None => {
            return Err(unanswerable(format!(
                "apiVersion is required: expected {API_VERSION:?}"
            )));
        }
    }
    match review.kind.as_deref() {
        Some(KIND) => {}
        Some(other) => {
            return Err(unanswerable(format!(
                "unsupported kind {other:?}: expected {KIND:?}"
            )));
        }
        None => return Err(unanswerable(format!("kind is required: expected {KIND:?}"))),
    }
    let request = review
        .request
        .ok_or_else(|| unanswerable("request is required".into()))?;
    let uid = match request.uid {
        Some(uid) if !uid.is_empty() => uid,
        _ => return Err(unanswerable("request.uid is required".into())),
    };
    let job_kind = request
        .kind
        .as_ref()
        .filter(|gvk| gvk.group == "batch" && gvk.version == "v1")
        .and_then(|gvk| Kind::from_kind(&gvk.kind));
    Ok(ParsedReview {
        uid,
        job_kind,
        operation: request.operation.as_deref().and_then(Operation::parse),
        namespace: request.namespace,
        name: request.name,
        dry_run: request.dry_run.unwrap_or(false),
        object: request.object.filter(|raw| raw.get() != "null"),
        old_object: request.old_object.filter(|raw| raw.get() != "null"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> String {
        match parse(body.as_bytes()) {
            Err(ReviewError::Unanswerable(m)) => m,
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
