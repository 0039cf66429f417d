//! One document through the chain the cluster runs: kube-apiserver's strict decoding (unknown
//! and duplicate fields, as `kubectl apply --validate` asks for), the mutating webhook as the
//! deployed configuration calls it, the apiserver's defaulting, then `/validate`.

use serde_json::Value;

use super::input::Unreadable;
use super::locate::{Position, segments};
use super::report::{self, Checked, IgnoredDocument, Located, Location, Report};
use crate::check::schema;
use crate::embedded::Owner;
use crate::job::finding::Finding;
use crate::job::finding::Source;
use crate::job::mutate::RecoveryScope;
use crate::job::pipeline::{self, Stages};
use crate::job::review::Operation;
use crate::job::version::KubernetesVersion;
use crate::job::{self, Config, JobObject, Kind, finding};

/// `kubectl --validate`: what happens to unknown and duplicate fields (server-side field
/// validation, `metav1.FieldValidation{Strict,Warn,Ignore}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum FieldValidation {
    /// The request is refused (`kubectl apply`'s default).
    #[default]
    Strict,
    /// Accepted with a warning per field.
    Warn,
    /// Accepted silently.
    Ignore,
}

impl FieldValidation {
    /// kubectl's values: `strict` (or `true`), `warn`, `ignore` (or `false`).
    pub(crate) fn parse(s: &str) -> Result<FieldValidation, String> {
        match s {
            "strict" | "true" => Ok(FieldValidation::Strict),
            "warn" => Ok(FieldValidation::Warn),
            "ignore" | "false" => Ok(FieldValidation::Ignore),
            other => Err(format!(
                "invalid - validate option {other:?}; must be one of: strict (or true), warn, ignore (or false)"
            )),
        }
    }
}

/// How the cluster the documents go to is set up.
#[derive(Debug, Clone)]
pub(crate) struct Chain<'a> {
    pub(crate) config: &'a Config,
    /// Whether `/mutate` (or `/mutate/recovery`) runs first: `check` runs it, `audit` judges
    /// objects already stored.
    pub(crate) mutate: bool,
    /// Namespaces whose Jobs go to `/mutate/recovery` (labelled
    /// `jobgate.dev/failure-recovery=enabled` in the deployed configuration).
    pub(crate) recovery_namespaces: &'a [String],
    /// The namespace of an object that names none (kubectl's current namespace).
    pub(crate) default_namespace: &'a str,
    pub(crate) field_validation: FieldValidation,
    /// Say which controller recovers each opted-in Job's pods, for a reconciler run with this
    /// `--kueue-recovers` (`check`); `None`: say nothing (`audit`).
    pub(crate) kueue_recovers: Option<bool>,
}

impl Chain<'_> {
    /// Only `/validate`, as for objects already in a cluster.
    pub(crate) fn validate_only(config: &Config) -> Chain<'_> {
        Chain {
            config,
            mutate: false,
            recovery_namespaces: &[],
            default_namespace: "",
            field_validation: FieldValidation::Ignore,
            kueue_recovers: None,
        }
    }

    fn scope(&self, namespace: &str) -> RecoveryScope {
        if self.recovery_namespaces.iter().any(|n| n == namespace) {
            RecoveryScope::Namespace
        } else {
            RecoveryScope::JobAnnotation
        }
    }
}

/// Where a document (or an item inside one) is: its source's name, the document's number in it
/// (for locating its fields later), where it starts, the keys it repeats, and the path from the
/// document's root to this value.
#[derive(Debug, Clone)]
pub(crate) struct Place<'a> {
    pub(crate) name: &'a str,
    /// `None` for a document without text (`audit`).
    pub(crate) doc: Option<usize>,
    pub(crate) root: Option<Position>,
    pub(crate) duplicates: &'a [Vec<schema::Step>],
    pub(crate) prefix: Vec<String>,
}

impl<'a> Place<'a> {
    /// A place with no text (`audit`: the namespace).
    pub(crate) fn unpositioned(name: &'a str) -> Place<'a> {
        Place {
            name,
            doc: None,
            root: None,
            duplicates: &[],
            prefix: Vec::new(),
        }
    }

    fn child(&self, segment: impl Into<String>) -> Place<'a> {
        let mut prefix = self.prefix.clone();
        prefix.push(segment.into());
        Place {
            prefix,
            ..self.clone()
        }
    }

    /// Where `path` (segments under this place) is written, once located.
    pub(super) fn at(&self, path: &[String]) -> Location {
        let mut full = self.prefix.clone();
        full.extend_from_slice(path);
        match self.doc.filter(|_| !full.is_empty()) {
            Some(doc) => Location {
                at: self.root,
                ..Location::field(self.name, doc, full)
            },
            None => Location {
                at: self.root,
                ..Location::file(self.name)
            },
        }
    }

    pub(super) fn location(&self) -> Location {
        self.at(&[])
    }

    pub(super) fn unreadable(&self, reason: String) -> Unreadable {
        Unreadable {
            location: self.location(),
            reason,
        }
    }
}

fn str_member<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Checks one document (a Job, CronJob, `List`, AdmissionReview, or something to skip).
pub(crate) fn check_document(
    place: &Place<'_>,
    doc: Value,
    chain: &Chain<'_>,
    report: &mut Report,
) {
    if doc.is_null() {
        return; // an empty YAML document (`---` alone)
    }
    if let Value::Array(items) = doc {
        for (i, item) in items.into_iter().enumerate() {
            check_document(&place.child(i.to_string()), item, chain, report);
        }
        return;
    }
    let api_version = str_member(&doc, "apiVersion");
    let kind = str_member(&doc, "kind");
    let batch_v1 = matches!(api_version, "" | "batch/v1");
    let owner = Owner::of(api_version, kind);
    match (kind, Kind::from_kind(kind), owner) {
        (_, Some(k), _) if batch_v1 => {
            let decoded = decode(place, k, &doc, chain);
            let object = Subject {
                operation: Operation::Create,
                kind: k,
                doc,
                old_doc: None,
                namespace_hint: String::new(),
                name_hint: String::new(),
                in_review: false,
                from_template: None,
            };
            check_object(place, object, decoded, chain, report)
        }
        (_, Some(k), _) if api_version.starts_with("batch/") => {
            unserved(place, k, api_version, &doc, chain, report)
        }
        (_, _, Some(owner)) => super::templates::check_owner(place, owner, doc, chain, report),
        ("AdmissionReview", _, _) if api_version.starts_with("admission.k8s.io/") => {
            check_review(place, doc, chain, report)
        }
        (k, _, _) if k.ends_with("List") && doc.get("items").is_some_and(Value::is_array) => {
            let items = place.child("items");
            if let Value::Object(mut list) = doc
                && let Some(Value::Array(list)) = list.remove("items")
            {
                for (i, item) in list.into_iter().enumerate() {
                    check_document(&items.child(i.to_string()), item, chain, report);
                }
            }
        }
        _ => report.ignored.push(IgnoredDocument {
            location: place.location(),
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            name: doc
                .get("metadata")
                .map(|m| str_member(m, "name").to_string())
                .unwrap_or_default(),
        }),
    }
}

/// A Job or CronJob in a `batch` version kube-apiserver does not serve: kubectl finds no
/// resource for it (`no matches for kind "CronJob" in version "batch/v1beta1"`) and nothing is
/// created. Where the version was removed, the release that removed it is named (k8s.io/api's
/// `APILifecycleRemoved`: batch/v1beta1 CronJob in 1.25; batch/v2alpha1, alpha, in 1.21), long
/// before any release jobgate supports.
fn unserved(
    place: &Place<'_>,
    kind: Kind,
    api_version: &str,
    doc: &Value,
    chain: &Chain<'_>,
    report: &mut Report,
) {
    let removed = match (api_version, kind) {
        ("batch/v1beta1", Kind::CronJob) => Some("1.25"),
        ("batch/v2alpha1", Kind::CronJob) => Some("1.21"),
        _ => None,
    };
    let mut message = format!(
        "no matches for kind {} in version {}",
        go_quoted(kind.as_str()),
        go_quoted(api_version)
    );
    if let Some(release) = removed {
        message.push_str(&format!(" (removed in Kubernetes {release}; use batch/v1)"));
    }
    let metadata = doc.get("metadata").unwrap_or(&Value::Null);
    let namespace = match str_member(metadata, "namespace") {
        "" => chain.default_namespace,
        ns => ns,
    };
    let name = match (
        str_member(metadata, "name"),
        str_member(metadata, "generateName"),
    ) {
        ("", "") => "<unnamed>",
        ("", generate) => generate,
        (n, _) => n,
    };
    report.objects.push(Checked {
        location: place.location(),
        namespace: namespace.to_string(),
        kind: kind.as_str(),
        name: name.to_string(),
        operation: Operation::Create.as_str(),
        findings: vec![Located {
            finding: Finding {
                source: Source::KubeApiserver,
                path: Some("apiVersion".into()),
                said: finding::Said::Rejected(message),
            },
            at: place.at(&["apiVersion".to_string()]),
        }],
        patch: json_patch::Patch::default(),
        mutation_changes: false,
        built: None,
    });
}

/// How kube-apiserver answers a write whose body it cannot decode, strict decoding errors
/// included: `transformDecodeError` (k8s.io/apiserver `pkg/endpoints/handlers/rest.go`) puts
/// `Job in version "v1" cannot be handled as a Job: ` before the decoder's error.
pub(super) fn cannot_be_handled(kind: &str, version: &str) -> String {
    format!(
        "{kind} in version {} cannot be handled as a {kind}: ",
        go_quoted(version)
    )
}

/// kube-apiserver's decoding of a document as `kind`, as the cluster's release decodes it: a
/// quantity it cannot parse fails the request whatever the field validation
/// (`Quantity.UnmarshalJSON`, `ParseQuantity`'s error behind [`cannot_be_handled`];
/// kube-apiserver stops at the first, `check` names each); then, unless
/// `--validate=ignore`, keys the text repeats (`duplicates`) and, as `--validate` asks, fields
/// the release's schema does not have (`unknown_field`). An AdmissionReview's object comes from
/// the apiserver, which has decoded it already, so it never gets here.
fn decode(place: &Place<'_>, kind: Kind, doc: &Value, chain: &Chain<'_>) -> Vec<Located> {
    let validation = chain.field_validation;
    let release = chain.config.cluster.release();
    let found = schema::decode_findings(kind, doc, release, &|v| {
        quantity_decode_error(v, release).is_some()
    });
    let handled_as = cannot_be_handled(kind.as_str(), "v1");
    let mut out: Vec<Located> = found
        .quantities
        .iter()
        .filter_map(|(path, value)| {
            let error = quantity_decode_error(value, release)?;
            Some(Located {
                finding: Finding {
                    source: Source::KubeApiserver,
                    path: Some(schema::printed(path)),
                    said: finding::Said::Rejected(format!("{handled_as}{error}")),
                },
                at: place.at(&schema::segments(path)),
            })
        })
        .collect();
    if validation == FieldValidation::Ignore {
        return out;
    }
    out.extend(duplicates(place, &place.prefix));
    let incomplete = schema::fields_may_be_incomplete(release);
    for f in &found.unknown {
        let at = place.at(&schema::segments(&f.0));
        out.push(unknown_field(
            schema::printed(&f.0),
            at,
            validation,
            &handled_as,
            incomplete.as_deref(),
        ));
    }
    out
}

/// A field the release's schema does not have, as `--validate` asks: refused under `strict`
/// (`runtime.NewStrictDecodingError`'s prefix behind `handled_as`, [`cannot_be_handled`]'s
/// words), else a warning. Where the release may have
/// fields jobgate did not read (newer than any it read), a warning too: never stricter than the
/// cluster.
pub(super) fn unknown_field(
    printed: String,
    at: Location,
    validation: FieldValidation,
    handled_as: &str,
    incomplete: Option<&str>,
) -> Located {
    let message = format!("unknown field {}", go_quoted(&printed));
    let finding = match (validation, incomplete) {
        (FieldValidation::Strict, None) => Finding {
            source: Source::KubeApiserver,
            path: Some(printed),
            said: finding::Said::Rejected(format!("{handled_as}strict decoding error: {message}")),
        },
        (FieldValidation::Strict, Some(why)) => Finding::warning(
            Source::KubeApiserver,
            Some(printed),
            format!("{message} ({why}; the cluster may know it)"),
        ),
        _ => Finding::warning(Source::KubeApiserver, Some(printed), message),
    };
    Located { finding, at }
}

/// Keys written twice in one object under `prefix` (segments from the document's root). kubectl
/// reads a manifest into a map (`sigs.k8s.io/yaml` for YAML, `encoding/json` for JSON: the last
/// value wins) and sends that map re-encoded, so kube-apiserver's strict decoding never sees a
/// duplicate from `kubectl apply`, `create` or `--server-side`: a warning, not a refusal, that
/// the first value is lost.
pub(super) fn duplicates(place: &Place<'_>, prefix: &[String]) -> Vec<Located> {
    place
        .duplicates
        .iter()
        .filter(|steps| schema::segments(steps).starts_with(prefix))
        .map(|steps| {
            let path = schema::printed(&steps[place.prefix.len()..]);
            let message = format!(
                "duplicate field {}: kubectl sends only the last value",
                go_quoted(&path)
            );
            Located {
                finding: Finding::warning(Source::Kubectl, Some(path), message),
                at: place.at(&schema::segments(&steps[place.prefix.len()..])),
            }
        })
        .collect()
}

/// The error `Quantity.UnmarshalJSON` returns for a JSON value in `release`: a string is parsed
/// trimmed, a number always parses, any other value is read as its JSON text (which no quantity
/// matches).
pub(crate) fn quantity_decode_error(
    value: &Value,
    release: crate::job::version::KubernetesVersion,
) -> Option<&'static str> {
    use crate::job::template::quantity;
    match value {
        Value::Null | Value::Number(_) => None,
        Value::String(s) => quantity::parse_error(s.trim(), release),
        Value::Bool(_) | Value::Array(_) | Value::Object(_) => Some(quantity::ERR_FORMAT_WRONG),
    }
}

fn go_quoted(s: &str) -> String {
    crate::job::field::go_quote(s)
}

/// A Job or CronJob to check, as read from a document or an AdmissionReview, or built by a
/// controller from a template.
pub(super) struct Subject {
    pub(super) operation: Operation,
    pub(super) kind: Kind,
    pub(super) doc: Value,
    pub(super) old_doc: Option<Value>,
    /// The review's `request.namespace`, when the object came in one.
    pub(super) namespace_hint: String,
    /// The review's `request.name`.
    pub(super) name_hint: String,
    /// Whether it came in an AdmissionReview: messages then name `request.object` and
    /// `request.oldObject`, as the webhook's do.
    pub(super) in_review: bool,
    pub(super) from_template: Option<FromTemplate>,
}

impl Subject {
    /// Where the object is in what was read, for messages.
    fn object_at(&self) -> &'static str {
        if self.in_review { "request.object" } else { "" }
    }
}

/// A Job a controller builds from a template held in another object (`embedded`).
pub(super) struct FromTemplate {
    /// The object holding the template, by kind and name.
    pub(super) owner_kind: &'static str,
    pub(super) owner_name: String,
    /// Where the template is in it, printed and as segments.
    pub(super) template: String,
    pub(super) segments: Vec<String>,
    /// How many Jobs are built from it.
    pub(super) replicas: u32,
}

fn check_review(place: &Place<'_>, doc: Value, chain: &Chain<'_>, report: &mut Report) {
    // The envelope is read by the webhook's own reader, so `check` and `/validate` agree on
    // which reviews can be answered at all (a v1 AdmissionReview, a request object, a uid).
    let bytes = serde_json::to_vec(&doc).unwrap_or_default();
    let parsed = match crate::admission::parse(&bytes) {
        Ok(p) => p,
        Err(e) => return report.unreadable.push(place.unreadable(e.to_string())),
    };
    let request = &doc["request"];
    let gvk = request.get("kind").cloned().unwrap_or(Value::Null);
    let kind = str_member(&gvk, "kind");
    let name = parsed.name.clone().unwrap_or_default();
    let (Some(k), Some(op @ (Operation::Create | Operation::Update))) =
        (parsed.job_kind, parsed.operation)
    else {
        report.ignored.push(IgnoredDocument {
            location: place.location(),
            api_version: str_member(&doc, "apiVersion").to_string(),
            kind: format!(
                "AdmissionReview ({} {}/{} {kind})",
                str_member(request, "operation"),
                str_member(&gvk, "group"),
                str_member(&gvk, "version")
            ),
            name,
        });
        return;
    };
    let object = request.get("object").cloned().unwrap_or(Value::Null);
    let old = request.get("oldObject").cloned().filter(|v| !v.is_null());
    if op == Operation::Update && old.is_none() {
        return report
            .unreadable
            .push(place.unreadable("request.oldObject is required for UPDATE".into()));
    }
    let object = Subject {
        operation: op,
        kind: k,
        doc: object,
        old_doc: old,
        namespace_hint: parsed.namespace.clone().unwrap_or_default(),
        name_hint: name,
        in_review: true,
        from_template: None,
    };
    check_object(
        &place.child("request").child("object"),
        object,
        Vec::new(),
        chain,
        report,
    );
}

/// Reads `doc` as `kind` the way the webhook reads `request.object` (`at`: empty for a document
/// that is the object).
fn read(
    place: &Place<'_>,
    o: &Subject,
    doc: &Value,
    at: &str,
    release: KubernetesVersion,
) -> Result<JobObject, Unreadable> {
    let mut object =
        JobObject::from_value_ref(o.kind, doc).map_err(|e| match &o.from_template {
            Some(t) => place.unreadable(format!(
                "{}: the Job built from it is not a valid Job: {e}",
                t.template
            )),
            None => place.unreadable(pipeline::unreadable(o.kind, at, &e)),
        })?;
    if let Some(t) = &o.from_template {
        object.template_at = Some(job::model::TemplateAt::new(&t.template));
    }
    // kube-apiserver's `spec.template` immutability compares the whole template of a Job (a
    // template that cannot be compared is a warning from `/validate`, as at the webhook).
    if o.operation == Operation::Update && o.kind == Kind::Job {
        object.keep_whole_template(doc, release);
    }
    Ok(object)
}

/// `o` through the chain `chain` stands for, after kube-apiserver's decoding said `decoded`.
pub(super) fn check_object(
    place: &Place<'_>,
    mut o: Subject,
    decoded: Vec<Located>,
    chain: &Chain<'_>,
    report: &mut Report,
) {
    let release = chain.config.cluster.release();
    let (object, old_object) = match read_new_and_old(place, &o, release) {
        Ok(both) => both,
        Err(u) => return report.unreadable.push(u),
    };
    let mut checked = checked_object(place, &o, &object, chain);
    let rejected = decoded
        .iter()
        .any(|f| f.finding.severity() == finding::Severity::Error);
    checked.findings = decoded;
    if rejected {
        // kube-apiserver refuses the request before any admission webhook is called.
        report.objects.push(checked);
        return;
    }
    let write = pipeline::Write {
        operation: o.operation,
        object,
        old_object,
    };
    let scope = chain.scope(&checked.namespace);
    // kube-apiserver applies the webhook's patch and decodes the object again. The document is
    // patched in place: it is not needed unpatched any more, and a copy of a large one costs as
    // much again.
    let mut reread = |patch: &json_patch::Patch| {
        json_patch::patch(&mut o.doc, &patch.0)
            .map_err(|e| place.unreadable(format!("jobgate's own patch does not apply: {e}")))?;
        read(place, &o, &o.doc, o.object_at(), release)
    };
    let stages = match chain.mutate {
        true => Stages::MutateThenValidate(scope, &mut reread),
        false => Stages::Validate,
    };
    let judged = match pipeline::run(write, stages, chain.config) {
        Ok(judged) => judged,
        Err(u) => return report.unreadable.push(u),
    };
    checked.mutation_changes = judged.mutation_changes;
    let location = checked.location.clone();
    let judgment = judged.judgment;
    checked
        .findings
        .extend(judgment.findings.into_iter().map(|finding| {
            let at = match finding.field() {
                Some(p) => place.at(&segments(p)),
                None => location.clone(),
            };
            Located { finding, at }
        }));
    checked.patch = judgment.patch;
    // A Job the cluster refuses runs no pods to recover.
    let denied = checked
        .findings
        .iter()
        .any(|f| f.finding.severity() == finding::Severity::Error);
    if let Some(kueue_recovers) = chain.kueue_recovers
        && !denied
        && let Some(finding) = super::recoverer::note(&judged.object, chain.config, kueue_recovers)
    {
        let at = finding
            .field()
            .map_or_else(|| location.clone(), |p| place.at(&segments(p)));
        checked.findings.push(Located { finding, at });
    }
    report.objects.push(checked);
}

/// The object and, for an UPDATE, the old object, read as the rules see them.
fn read_new_and_old(
    place: &Place<'_>,
    o: &Subject,
    release: KubernetesVersion,
) -> Result<(JobObject, Option<JobObject>), Unreadable> {
    let object = read(place, o, &o.doc, o.object_at(), release)?;
    let old = o
        .old_doc
        .as_ref()
        .map(|d| read(place, o, d, "request.oldObject", release))
        .transpose()?;
    Ok((object, old))
}

/// The report's entry for `object`, before any finding: where it is and what it is called. A
/// Job built from a template is reported as the object holding it, at the template.
fn checked_object(
    place: &Place<'_>,
    o: &Subject,
    object: &JobObject,
    chain: &Chain<'_>,
) -> Checked {
    let namespace = match (
        object.metadata.namespace.as_deref(),
        o.namespace_hint.as_str(),
    ) {
        (Some(ns), _) if !ns.is_empty() => ns.to_string(),
        (_, "") => chain.default_namespace.to_string(),
        (_, hint) => hint.to_string(),
    };
    let name = match (object.display_name(), o.name_hint.as_str()) {
        ("", "") => "<unnamed>".to_string(),
        ("", hint) => hint.to_string(),
        (n, _) => n.to_string(),
    };
    let (kind, name, location, built) = match &o.from_template {
        Some(t) => (
            t.owner_kind,
            t.owner_name.clone(),
            place.at(&t.segments),
            Some(report::Built {
                template: t.template.clone(),
                job: name,
                replicas: t.replicas,
            }),
        ),
        None => (o.kind.as_str(), name, place.location(), None),
    };
    Checked {
        location,
        namespace,
        kind,
        name,
        operation: o.operation.as_str(),
        findings: Vec::new(),
        patch: json_patch::Patch::default(),
        mutation_changes: false,
        built,
    }
}
