//! The decision and the reply for one AdmissionReview v1: the request read by the wire
//! (`job::wire::envelope`), the review pipeline (`job::pipeline`) asked for its findings, the
//! response kube-apiserver expects rendered (`response`). Bytes in, bytes out; no sockets here.
//!
//! Bad input, by design:
//! - a body from which no `admission.k8s.io/v1` AdmissionReview with a `request.uid` can be read
//!   gets HTTP 400 with a `metav1.Status` body saying what is wrong: there is no uid to answer to,
//!   and kube-apiserver rejects a response whose uid or apiVersion does not match its request;
//! - a readable review whose object cannot be read gets HTTP 200, `allowed: false`, and a
//!   `status` (code 400, reason `BadRequest`) naming the field that is wrong.

mod response;

pub use crate::job::wire::envelope::parse;
use crate::job::wire::envelope::{ObjectIn, ParsedReview};
pub(crate) use response::{Denial, ENCODE_FAILED, render_error, render_status, render_verdict};

use axum::http::StatusCode;

use crate::job::mutate::RecoveryScope;
use crate::job::pipeline::{self, Stages};
use crate::job::template::WholeTemplate;
use crate::job::version::KubernetesVersion;
use crate::job::wire::envelope::Operation;
use crate::job::{self, Kind};

/// The webhook paths jobgate serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `POST /mutate`: defaults, and recovery opt-in by Job annotation.
    Mutate,
    /// `POST /mutate/recovery`: as `Mutate`, for namespaces an admin opted into recovery.
    MutateRecovery,
    /// `POST /validate`.
    Validate,
}

impl Endpoint {
    /// Every endpoint.
    pub const ALL: [Endpoint; 3] = [
        Endpoint::Mutate,
        Endpoint::MutateRecovery,
        Endpoint::Validate,
    ];

    /// The HTTP path kube-apiserver posts reviews to.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Mutate => "/mutate",
            Endpoint::MutateRecovery => "/mutate/recovery",
            Endpoint::Validate => "/validate",
        }
    }

    /// The metrics/log label.
    pub fn label(self) -> &'static str {
        match self {
            Endpoint::Mutate => "mutate",
            Endpoint::MutateRecovery => "mutate-recovery",
            Endpoint::Validate => "validate",
        }
    }
}

/// What happened to one review: the HTTP answer plus what logs and metrics record.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The HTTP status: 200 for an answered review, 400 for a body that is not one, 500 when
    /// the answer could not be encoded.
    pub http_status: StatusCode,
    /// The response body: the AdmissionReview answer, or a `metav1.Status` with a 400 or 500.
    pub body: Vec<u8>,
    pub(crate) summary: ReviewRecord,
}

/// The fields of a review that logs and metrics carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ReviewRecord {
    pub(crate) uid: String,
    /// `Job`, `CronJob`, `other` (a kind jobgate lets through), or `` when unreadable.
    pub(crate) kind: &'static str,
    pub(crate) operation: &'static str,
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) dry_run: bool,
    pub(crate) allowed: bool,
    pub(crate) patched: bool,
    pub(crate) warnings: usize,
}

/// Reviews one request body at `endpoint`.
pub fn review(endpoint: Endpoint, body: &[u8], config: &job::Config) -> Reply {
    // Unpaired surrogates read as U+FFFD, as kube-apiserver's decoder reads them (`job::wire::strict`).
    let body = &*crate::job::wire::strict::go_surrogates(body);
    let mut parsed = match parse(body) {
        Ok(p) => p,
        Err(error) => {
            return Reply::rendered(
                StatusCode::BAD_REQUEST,
                render_error(&error.to_string()),
                ReviewRecord::default(),
            );
        }
    };
    // The review goes on with the objects only; what the record keeps is moved, not copied.
    let mut summary = ReviewRecord {
        uid: std::mem::take(&mut parsed.uid),
        kind: "other",
        operation: parsed.operation.map(Operation::as_str).unwrap_or(""),
        namespace: parsed.namespace.take().unwrap_or_default(),
        name: parsed.name.take().unwrap_or_default(),
        dry_run: parsed.dry_run,
        allowed: true,
        patched: false,
        warnings: 0,
    };
    let mut object_name = String::new();
    let verdict = match decide(endpoint, body, &mut parsed, config) {
        Ruling::Untouched => job::review::Verdict::default(),
        Ruling::Reviewed(kind, name, verdict) => {
            summary.kind = kind.as_str();
            object_name = name;
            verdict
        }
        Ruling::Unreadable(kind, message) => {
            summary.kind = kind.map(Kind::as_str).unwrap_or("");
            summary.allowed = false;
            let body = render_verdict(&summary.uid, Some(&Denial::BadRequest(message)), &[], &[]);
            return Reply::rendered(StatusCode::OK, body, summary);
        }
    };
    summary.allowed = verdict.allowed();
    summary.patched = verdict.allowed() && !verdict.patch.0.is_empty();
    summary.warnings = verdict.warnings.len();
    let denial = (!verdict.allowed()).then(|| Denial::Invalid {
        kind: summary.kind,
        name: object_name,
        errors: verdict.errors.clone(),
    });
    let patch = if summary.patched {
        &verdict.patch.0[..]
    } else {
        &[]
    };
    let body = render_verdict(&summary.uid, denial.as_ref(), &verdict.warnings, patch);
    Reply::rendered(StatusCode::OK, body, summary)
}

impl Reply {
    /// An answer with `http_status`, or HTTP 500 with [`ENCODE_FAILED`] when it could not be
    /// encoded.
    fn rendered(
        http_status: StatusCode,
        body: Result<Vec<u8>, serde_json::Error>,
        summary: ReviewRecord,
    ) -> Reply {
        match body {
            Ok(body) => Reply {
                http_status,
                body,
                summary,
            },
            Err(error) => {
                tracing::error!(%error, uid = %summary.uid, "cannot encode the answer");
                Reply {
                    http_status: StatusCode::INTERNAL_SERVER_ERROR,
                    body: ENCODE_FAILED.to_vec(),
                    summary,
                }
            }
        }
    }
}

enum Ruling {
    /// Not ours to judge: another kind, DELETE, CONNECT.
    Untouched,
    /// The kind, the object's name (or generateName) when denied (else empty), and the verdict.
    Reviewed(Kind, String, job::review::Verdict),
    Unreadable(Option<Kind>, String),
}

fn decide(
    endpoint: Endpoint,
    body: &[u8],
    parsed: &mut ParsedReview<'_>,
    config: &job::Config,
) -> Ruling {
    let Some(kind) = parsed.job_kind else {
        return Ruling::Untouched;
    };
    let operation = match parsed.operation {
        Some(op @ (Operation::Create | Operation::Update)) => op,
        Some(Operation::Delete | Operation::Connect) => return Ruling::Untouched,
        None => {
            return Ruling::Unreadable(
                Some(kind),
                "request.operation must be one of CREATE, UPDATE, DELETE, CONNECT".into(),
            );
        }
    };
    let mut write = match read_write(kind, operation, parsed) {
        Ok(write) => write,
        Err(message) => return Ruling::Unreadable(Some(kind), message),
    };
    // kube-apiserver's `spec.template` immutability compares the whole template of a Job;
    // only a Job UPDATE at /validate pays for reading the templates as a whole.
    if let (Endpoint::Validate, Kind::Job, Some(old)) = (endpoint, kind, write.old_object.as_mut())
    {
        let (new_template, old_template) = whole_templates(body, config.cluster.release());
        write.object.spec.template.whole = Some(new_template);
        old.spec.template.whole = Some(old_template);
    }
    judge(endpoint, kind, write, config)
}

/// The object and, for an UPDATE, the old object, read into the rules' model (moved out of
/// `parsed`).
fn read_write(
    kind: Kind,
    operation: Operation,
    parsed: &mut ParsedReview<'_>,
) -> Result<pipeline::Write, String> {
    let object = std::mem::replace(&mut parsed.object, ObjectIn::Absent);
    let object = read_object(kind, "request.object", object)?;
    let old_object = match (
        operation,
        std::mem::replace(&mut parsed.old_object, ObjectIn::Absent),
    ) {
        (Operation::Update, ObjectIn::Absent) => {
            return Err("request.oldObject is required for UPDATE".to_string());
        }
        (Operation::Update, old) => Some(read_object(kind, "request.oldObject", old)?),
        _ => None,
    };
    Ok(pipeline::Write {
        operation,
        object,
        old_object,
    })
}

/// Runs the endpoint's stages of the one review pipeline `check` and `audit` run too; the
/// webhook only renders it.
fn judge(endpoint: Endpoint, kind: Kind, write: pipeline::Write, config: &job::Config) -> Ruling {
    let stages = match endpoint {
        Endpoint::Validate => Stages::Validate,
        Endpoint::Mutate => Stages::Mutate(RecoveryScope::JobAnnotation),
        Endpoint::MutateRecovery => Stages::Mutate(RecoveryScope::Namespace),
    };
    let Ok(judged) = pipeline::run::<std::convert::Infallible>(write, stages, config);
    let verdict = judged.judgment.into_verdict();
    // The name is for a denial's message only.
    let name = if verdict.allowed() {
        String::new()
    } else {
        judged.object.display_name().to_string()
    };
    Ruling::Reviewed(kind, name, verdict)
}

fn read_object(kind: Kind, at: &str, object: ObjectIn<'_>) -> Result<job::JobObject, String> {
    let raw = match object {
        ObjectIn::Parsed(job) => return Ok(*job),
        ObjectIn::Raw(raw) => raw,
        ObjectIn::Absent => return Err(format!("{at} is required for CREATE and UPDATE")),
    };
    job::JobObject::from_json(kind, raw.get()).map_err(|e| pipeline::unreadable(kind, at, &e))
}

/// `spec.template` of `request.object` and `request.oldObject`, reduced to what the
/// immutability check compares (`job::template`): a second read of the body that skips
/// everything else and keeps nothing in proportion to the templates' size.
fn whole_templates(body: &[u8], release: KubernetesVersion) -> (WholeTemplate, WholeTemplate) {
    #[derive(serde::Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        request: Request<'a>,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Request<'a> {
        #[serde(default, borrow)]
        object: Option<SpecOnly<'a>>,
        #[serde(default, borrow)]
        old_object: Option<SpecOnly<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct SpecOnly<'a> {
        #[serde(default, borrow)]
        spec: Option<Spec<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Spec<'a> {
        #[serde(default, borrow)]
        template: Option<&'a serde_json::value::RawValue>,
    }
    let template = |o: Option<SpecOnly<'_>>| {
        let text = o
            .and_then(|o| o.spec)
            .and_then(|s| s.template)
            .map_or("null", |t| t.get());
        WholeTemplate::from_json(text, release)
    };
    match serde_json::from_slice::<Body<'_>>(body) {
        Ok(b) => (template(b.request.object), template(b.request.old_object)),
        Err(e) => {
            let unreadable = WholeTemplate::Unreadable(e.to_string());
            (unreadable.clone(), unreadable)
        }
    }
}
