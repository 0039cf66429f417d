//! One document: what it is (a Job or CronJob, an object holding Job templates, a `List`, an
//! AdmissionReview, or something to skip) and kube-apiserver's strict decoding of it (unknown and
//! duplicate fields, as `kubectl apply --validate` asks for); each Job or CronJob then goes
//! through the rest of the chain the cluster runs (`object`).

use serde_json::Value;

use super::decode::{cannot_be_handled, duplicates, unknown_field};
use super::object::{Chain, FieldValidation, Place, Subject, check_object};
use super::report::{Checked, IgnoredDocument, Located, Report};
use super::templates;
use crate::embedded::Owner;
use crate::job::Kind;
use crate::job::field::go_quote;
use crate::job::finding::{self, Finding, Source};
use crate::job::wire::envelope::Operation;
use crate::schema;

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
        (_, Some(k), _) if batch_v1 => check_batch_v1(place, k, doc, chain, report),
        (_, Some(k), _) if api_version.starts_with("batch/") => {
            unserved(place, k, api_version, &doc, chain, report)
        }
        (_, _, Some(owner)) => templates::check_owner(place, owner, doc, chain, report),
        ("AdmissionReview", _, _) if api_version.starts_with("admission.k8s.io/") => {
            check_review(place, doc, chain, report)
        }
        (k, _, _) if k.ends_with("List") && doc.get("items").is_some_and(Value::is_array) => {
            check_list(place, doc, chain, report)
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

/// A Job or CronJob of `batch/v1` (or no `apiVersion`), as `kubectl apply` sends it: decoded by
/// kube-apiserver, then through the chain.
fn check_batch_v1(
    place: &Place<'_>,
    kind: Kind,
    doc: Value,
    chain: &Chain<'_>,
    report: &mut Report,
) {
    let decoded = decode(place, kind, &doc, chain);
    let object = Subject {
        operation: Operation::Create,
        kind,
        doc,
        old_doc: None,
        namespace_hint: String::new(),
        name_hint: String::new(),
        in_review: false,
        from_template: None,
    };
    check_object(place, object, decoded, chain, report)
}

/// Each of a `List`'s `items`, as a document of its own.
fn check_list(place: &Place<'_>, doc: Value, chain: &Chain<'_>, report: &mut Report) {
    let items = place.child("items");
    if let Value::Object(mut list) = doc
        && let Some(Value::Array(list)) = list.remove("items")
    {
        for (i, item) in list.into_iter().enumerate() {
            check_document(&items.child(i.to_string()), item, chain, report);
        }
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
        go_quote(kind.as_str()),
        go_quote(api_version)
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

fn check_review(place: &Place<'_>, doc: Value, chain: &Chain<'_>, report: &mut Report) {
    // The envelope is read by the webhook's own reader, so `check` and `/validate` agree on
    // which reviews can be answered at all (a v1 AdmissionReview, a request object, a uid).
    let bytes = serde_json::to_vec(&doc).unwrap_or_default();
    let parsed = match crate::job::wire::envelope::parse(&bytes) {
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
