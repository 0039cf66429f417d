//! Rendering AdmissionReview v1 responses exactly as kube-apiserver checks them.
//!
//! `patch` is the base64 of an RFC 6902 array with `patchType: JSONPatch`, both or neither.
//! (`kube::core::admission::AdmissionResponse` serializes the patch as an array of numbers,
//! kube-rs#1781, which kube-apiserver rejects; so the response is written here.)

use axum::http::StatusCode;
use base64::Engine;
use serde::Serialize;

use crate::job::field::FieldError;
use crate::job::field::{MAX_ERRORS, go_quote};

use crate::job::wire::envelope::{API_VERSION, KIND};

/// Why a review is not allowed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Denial {
    /// The rules found field errors: a 422 `Invalid` status like kube-apiserver's own.
    Invalid {
        kind: &'static str,
        name: String,
        errors: Vec<FieldError>,
    },
    /// The object could not be read: a 400 `BadRequest` status with the reason.
    BadRequest(String),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

/// `metav1.Status`, as kube-apiserver serializes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<&'static str>,
    metadata: Empty,
    status: &'static str,
    message: String,
    reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Details<'a>>,
    code: u16,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
struct Details<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
    group: &'static str,
    kind: &'static str,
    causes: Vec<Cause<'a>>,
}

#[derive(Serialize)]
struct Cause<'a> {
    reason: &'static str,
    message: String,
    field: &'a str,
}

/// Causes listed in a denial, and messages in its aggregate. kube-apiserver lists every error
/// (`errors.NewInvalid` copies the whole `field.ErrorList` into `details.causes`, and
/// `ErrorList.ToAggregate` only drops repeated messages), and kubectl prints every cause; jobgate
/// keeps the first 100 and says how many more there were, so one review cannot produce an answer
/// of hundreds of megabytes.
pub(crate) const MAX_CAUSES: usize = 100;

/// Bytes of one cause's message kept (an invalid value is echoed in it, and a value can be as
/// large as the object).
pub(crate) const MAX_CAUSE_BYTES: usize = 1024;

/// `s` cut to `MAX_CAUSE_BYTES` at a character boundary, saying how much was cut.
fn bounded(s: String) -> String {
    if s.len() <= MAX_CAUSE_BYTES {
        return s;
    }
    let mut cut = MAX_CAUSE_BYTES;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} bytes truncated)", &s[..cut], s.len() - cut)
}

/// `utilerrors.NewAggregate(errs).Error()` over the first `MAX_CAUSES` errors (one message as
/// is, several as `[a, b]`, repeats once), then `and N more errors` when some were left out.
/// Validation stops at `MAX_ERRORS`, so at that count there may have been more.
fn bounded_aggregate(errors: &[FieldError]) -> String {
    let shown = &errors[..errors.len().min(MAX_CAUSES)];
    let mut seen = std::collections::HashSet::new();
    let mut msgs: Vec<String> = shown
        .iter()
        .map(|e| bounded(e.to_string()))
        .filter(|m| seen.insert(m.clone()))
        .collect();
    let more = errors.len() - shown.len();
    if more > 0 {
        let at_least = if errors.len() >= MAX_ERRORS {
            "at least "
        } else {
            ""
        };
        msgs.push(format!("and {at_least}{more} more errors"));
    }
    match msgs.len() {
        1 => msgs.into_iter().next().unwrap_or_default(),
        _ => format!("[{}]", msgs.join(", ")),
    }
}

fn status(denial: &Denial) -> Status<'_> {
    match denial {
        Denial::Invalid { kind, name, errors } => Status {
            kind: None,
            api_version: None,
            metadata: Empty {},
            status: "Failure",
            // apierrors.NewInvalid: `<Kind>.<group> "<name>" is invalid: <aggregate>`
            message: format!(
                "{kind}.batch {} is invalid: {}",
                go_quote(name),
                bounded_aggregate(errors)
            ),
            reason: "Invalid",
            details: Some(Details {
                name,
                group: "batch",
                kind,
                causes: errors
                    .iter()
                    .take(MAX_CAUSES)
                    .map(|e| Cause {
                        reason: e.kind.cause(),
                        message: bounded(e.body()),
                        field: e.path.as_str(),
                    })
                    .collect(),
            }),
            code: 422,
        },
        Denial::BadRequest(message) => Status {
            kind: None,
            api_version: None,
            metadata: Empty {},
            status: "Failure",
            message: message.clone(),
            reason: "BadRequest",
            details: None,
            code: 400,
        },
    }
}

/// The body sent when an answer cannot be encoded. These plain types always encode; should one
/// not, the apiserver gets an HTTP 500 with a reason (its failurePolicy applies), never an empty
/// or partial answer.
pub(crate) const ENCODE_FAILED: &[u8] = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"jobgate could not encode its answer","reason":"InternalError","code":500}"#;

/// The response to a review with a uid. `patch` is sent only when allowed and non-empty.
pub(crate) fn render_verdict(
    uid: &str,
    denial: Option<&Denial>,
    warnings: &[String],
    patch: &[json_patch::PatchOperation],
) -> Result<Vec<u8>, serde_json::Error> {
    let patch = if denial.is_none() && !patch.is_empty() {
        let json = serde_json::to_vec(patch)?;
        Some(base64::engine::general_purpose::STANDARD.encode(json))
    } else {
        None
    };
    let out = ReviewOut {
        api_version: API_VERSION,
        kind: KIND,
        response: ResponseOut {
            uid,
            allowed: denial.is_none(),
            status: denial.map(status),
            patch_type: patch.as_ref().map(|_| "JSONPatch"),
            patch,
            warnings,
        },
    };
    serde_json::to_vec(&out)
}

/// The HTTP 400 body for a request that is not an answerable review: a `metav1.Status`.
pub(crate) fn render_error(message: &str) -> Result<Vec<u8>, serde_json::Error> {
    render_status(StatusCode::BAD_REQUEST, "BadRequest", message)
}

/// A `metav1.Status` failure body: the one shape of every HTTP error jobgate answers.
pub(crate) fn render_status(
    status: StatusCode,
    reason: &'static str,
    message: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&Status {
        kind: Some("Status"),
        api_version: Some("v1"),
        metadata: Empty {},
        status: "Failure",
        message: message.to_string(),
        reason,
        details: None,
        code: status.as_u16(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::field::BadValue;
    use crate::job::field::FieldPath;
    use serde_json::{Value, json};

    fn parse(bytes: Result<Vec<u8>, serde_json::Error>) -> Value {
        serde_json::from_slice(&bytes.unwrap()).unwrap()
    }

    #[test]
    fn the_encode_failure_body_is_a_500_status() {
        let v: Value = serde_json::from_slice(ENCODE_FAILED).unwrap();
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["code"], 500);
        assert_eq!(v["reason"], "InternalError");
    }

    #[test]
    fn allowed_without_patch_has_neither_patch_nor_patch_type() {
        let v = parse(render_verdict("u1", None, &[], &[]));
        assert_eq!(
            v,
            json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u1","allowed":true}})
        );
    }

    #[test]
    fn patch_is_base64_of_a_json_array_with_patch_type() {
        let ops: json_patch::Patch = serde_json::from_value(
            json!([{"op":"add","path":"/spec/podReplacementPolicy","value":"Failed"}]),
        )
        .unwrap();
        let v = parse(render_verdict("u1", None, &["jobgate: w".into()], &ops.0));
        assert_eq!(v["response"]["patchType"], "JSONPatch");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(v["response"]["patch"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            parse(Ok(decoded)),
            json!([{"op":"add","path":"/spec/podReplacementPolicy","value":"Failed"}])
        );
        assert_eq!(v["response"]["warnings"], json!(["jobgate: w"]));
    }

    #[test]
    fn invalid_denial_is_a_422_status_with_causes_like_kube_apiserver() {
        let errors = vec![
            FieldError::required(
                FieldPath::new("spec")
                    .child("template")
                    .child("spec")
                    .child("restartPolicy"),
                r#"valid values: "OnFailure", "Never""#,
            ),
            FieldError::not_supported(
                FieldPath::new("spec").child("podReplacementPolicy"),
                BadValue::str("x"),
                &["Failed"],
            ),
        ];
        let denial = Denial::Invalid {
            kind: "Job",
            name: "pi".into(),
            errors,
        };
        let ops: json_patch::Patch =
            serde_json::from_value(json!([{"op":"add","path":"/a","value":1}])).unwrap();
        let v = parse(render_verdict("u2", Some(&denial), &[], &ops.0));
        assert_eq!(
            v["response"],
            json!({
                "uid": "u2",
                "allowed": false,
                "status": {
                    "metadata": {},
                    "status": "Failure",
                    "message": "Job.batch \"pi\" is invalid: [spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\", spec.podReplacementPolicy: Unsupported value: \"x\": supported values: \"Failed\"]",
                    "reason": "Invalid",
                    "details": {"name": "pi", "group": "batch", "kind": "Job", "causes": [
                        {"reason": "FieldValueRequired", "message": "Required value: valid values: \"OnFailure\", \"Never\"", "field": "spec.template.spec.restartPolicy"},
                        {"reason": "FieldValueNotSupported", "message": "Unsupported value: \"x\": supported values: \"Failed\"", "field": "spec.podReplacementPolicy"}
                    ]},
                    "code": 422
                }
            })
        );
    }

    #[test]
    fn unanswerable_body_is_a_bad_request_status() {
        let v = parse(render_error("request is required"));
        assert_eq!(
            v,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"request is required","reason":"BadRequest","code":400})
        );
    }
}
