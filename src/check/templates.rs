//! Objects holding Job templates that their controllers turn into Jobs (`embedded`): a JobSet, a
//! Kubeflow Trainer `TrainingRuntime` or `ClusterTrainingRuntime`. Each goes through what the
//! cluster does with it:
//! 1. kube-apiserver decodes the object against its CRD (the whole object is refused, at
//!    `kubectl apply`): a field the templates' Job schema does not have under strict field
//!    validation (`unknown field "spec.replicatedJobs[0].template.spec.backofLimit"`, as the CRD
//!    pruning reports it), and a quantity the CRD's schema refuses (`x-kubernetes-int-or-string`
//!    with controller-gen's quantity pattern: a string that does not match it, a number that is
//!    not an integer);
//! 2. the controller builds its Jobs and sends them to kube-apiserver: each is reviewed as that
//!    Job (`/mutate`, the apiserver's defaulting, `/validate`), and its findings point at the
//!    template's fields. A refusal there is seen only in the controller's events
//!    (`JobCreationFailed` on the JobSet), retried, never in the terminal that applied the object.
//!
//! Fields of the owner itself (a JobSet's `network`, `failurePolicy`, ...) are its CRD's and
//! JobSet's own webhook's business; they are not checked here.

use serde_json::Value;

use super::decode::{cannot_be_handled, duplicates, unknown_field};
use super::object::{Chain, FieldValidation, FromTemplate, Place, Subject, check_object};
use super::report::{Checked, Located, Location, Report};
use crate::embedded::{self, Owner};
use crate::job::Kind;
use crate::job::field::{BadValue, FieldError, FieldPath};
use crate::job::finding;
use crate::job::finding::Finding;
use crate::job::finding::Source;
use crate::job::wire::envelope::Operation;
use crate::json_str::str_or_empty;
use crate::schema;

/// The pattern controller-gen gives a `resource.Quantity` in a CRD (jobset.x-k8s.io_jobsets.yaml,
/// trainer.kubeflow.org_trainingruntimes.yaml).
pub(crate) const CRD_QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// The owner's name as reported (its `generateName` when it has no name) and the namespace its
/// Jobs are created in (a ClusterTrainingRuntime's: the default namespace).
fn name_and_namespace(owner: Owner, doc: &Value, chain: &Chain<'_>) -> (String, String) {
    let name = match (
        str_or_empty(doc, "/metadata/name"),
        str_or_empty(doc, "/metadata/generateName"),
    ) {
        ("", "") => "<unnamed>".to_string(),
        ("", generate) => generate.to_string(),
        (n, _) => n.to_string(),
    };
    let namespace = match (owner, str_or_empty(doc, "/metadata/namespace")) {
        (Owner::ClusterTrainingRuntime, _) | (_, "") => chain.default_namespace.to_string(),
        (_, ns) => ns.to_string(),
    };
    (name, namespace)
}

/// Checks one object holding Job templates.
pub(super) fn check_owner(
    place: &Place<'_>,
    owner: Owner,
    doc: Value,
    chain: &Chain<'_>,
    report: &mut Report,
) {
    let (name, namespace) = name_and_namespace(owner, &doc, chain);
    let templates = embedded::template_paths(owner, &doc);
    let mut decoded: Vec<Vec<Located>> = templates
        .iter()
        .map(|(printed, at)| decode_template(place, &doc, printed, at, chain))
        .collect();
    let refused = decoded
        .iter()
        .flatten()
        .any(|f| f.finding.severity() == finding::Severity::Error);
    if refused || templates.is_empty() {
        // kube-apiserver refuses the object itself: no Job is ever built from it.
        let findings = decoded.into_iter().flatten().collect();
        report
            .objects
            .push(refused_owner(place, owner, name, namespace, findings));
        return;
    }
    let misplaced = misplaced_opt_in(place, owner, &doc, chain);
    let jobs =
        match embedded::controller_jobs(owner, doc, &namespace, chain.config.cluster.release()) {
            Ok(jobs) => jobs,
            Err(e) => {
                return report
                    .unreadable
                    .push(place.unreadable(format!("{}: {e}", owner.kind())));
            }
        };
    let mut misplaced = Some(misplaced);
    for built in jobs {
        let index = templates.iter().position(|(p, _)| *p == built.template);
        let mut found = index
            .map(|i| std::mem::take(&mut decoded[i]))
            .unwrap_or_default();
        // What the owner's own metadata says, once, with its first Job.
        found.extend(misplaced.take().into_iter().flatten());
        found.extend(delegation_from_jobset(
            place, owner, &built.job, &templates, index, chain,
        ));
        let segments = index.map(|i| templates[i].1.clone()).unwrap_or_default();
        let object = built_job(owner, &name, &namespace, built, segments);
        check_object(place, object, found, chain, report);
    }
}

/// The report's entry for an owner kube-apiserver refuses (`findings` say why), or one that
/// holds no template.
fn refused_owner(
    place: &Place<'_>,
    owner: Owner,
    name: String,
    namespace: String,
    findings: Vec<Located>,
) -> Checked {
    Checked {
        location: place.location(),
        namespace,
        kind: owner.kind(),
        name,
        operation: Operation::Create.as_str(),
        findings,
        patch: json_patch::Patch::default(),
        mutation_changes: false,
        built: None,
    }
}

/// The Job the controller built from the template at `segments` of `owner` (named `name`), to
/// check as the Job it sends.
fn built_job(
    owner: Owner,
    name: &str,
    namespace: &str,
    built: embedded::ControllerJob,
    segments: Vec<String>,
) -> Subject {
    Subject {
        operation: Operation::Create,
        kind: Kind::Job,
        doc: built.job,
        old_doc: None,
        namespace_hint: namespace.to_string(),
        name_hint: String::new(),
        in_review: false,
        from_template: Some(FromTemplate {
            owner_kind: owner.kind(),
            owner_name: name.to_string(),
            segments,
            template: built.template,
            replicas: built.replicas,
        }),
    }
}

/// The recovery opt-in written on the owner's own `metadata.annotations`: neither JobSet's
/// `constructJob` nor Trainer copies them to the Jobs (only the templates' own), so it opts
/// nothing in. Said as `/mutate` says it of a CronJob's own annotation, and as the
/// `recovery-annotation-on-job` policy says it of a recovery key there (a warning at any level:
/// no webhook sees the owner).
fn misplaced_opt_in(
    place: &Place<'_>,
    owner: Owner,
    doc: &Value,
    chain: &Chain<'_>,
) -> Vec<Located> {
    let Some(annotations) = doc
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let jobs = match owner {
        Owner::JobSet => "spec.replicatedJobs[*].template",
        Owner::TrainingRuntime | Owner::ClusterTrainingRuntime => {
            "spec.template.spec.replicatedJobs[*].template"
        }
    };
    let at = |key: &str| place.at(&["metadata".into(), "annotations".into(), key.into()]);
    let mut out = Vec::new();
    if let Some(value) = annotations.get(crate::job::mutate::FAILURE_RECOVERY) {
        let path = format!(
            "metadata.annotations[{}]",
            crate::job::mutate::FAILURE_RECOVERY
        );
        let message = format!(
            "jobgate: ignored {path}={value} on the {}: its Jobs do not inherit it; set it in {jobs}.metadata.annotations",
            owner.kind()
        );
        out.push(Located {
            finding: Finding::warning(Source::Mutation, Some(path), message),
            at: at(crate::job::mutate::FAILURE_RECOVERY),
        });
    }
    out.extend(misplaced_recovery_keys(annotations, jobs, chain, at));
    out
}

/// The recovery keys (`recovery-annotation-on-job`'s) among an owner's own `annotations`, where
/// they have no effect: each belongs on the pod templates of its Jobs (at `jobs`).
fn misplaced_recovery_keys(
    annotations: &serde_json::Map<String, Value>,
    jobs: &str,
    chain: &Chain<'_>,
    at: impl Fn(&str) -> Location,
) -> Vec<Located> {
    let mut out = Vec::new();
    let policy = crate::job::levels::PolicyName::RecoveryAnnotationOnJob;
    let level = chain.config.policies.level(policy);
    for key in chain.config.recognized_recovery_keys() {
        let Some(value) = annotations.get(key) else {
            continue;
        };
        let path = format!("metadata.annotations[{key}]");
        let detail =
            format!("has no effect here; it belongs on {jobs}.spec.template.metadata.annotations");
        let value = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string);
        // A warning even at `deny`: no webhook sees the owner, so nothing would refuse it.
        if level == crate::job::levels::Level::Off {
            continue;
        }
        let finding = Finding::warning(
            Source::Policy(policy),
            Some(path.clone()),
            format!(
                "jobgate: {path}: {}: {detail}",
                crate::job::field::go_json_string(&value)
            ),
        );
        out.push(Located {
            finding,
            at: at(key),
        });
    }
    out
}

/// `scheduling.k8s.io/group-template-name` without `scheduling.k8s.io/workload-name` on a
/// JobSet's Job, which kube-apiserver refuses from 1.38 (`validateDelegationAnnotations`): the
/// refusal is the Job's, at the template; this note says which JobSet feature writes the pair
/// that way, so the fix is plain. JobSet's workload-aware scheduling (its docs' example for
/// Kubernetes 1.38+, site/static/examples/workload-aware-scheduling/job-level-scheduling, and
/// `constructJob` behind the alpha gate `JobSetWorkloadAwareSchedulingAPI`, both in the
/// kubernetes-sigs/jobset repository for v0.13, not released) sets only the template name.
fn delegation_from_jobset(
    place: &Place<'_>,
    owner: Owner,
    job: &Value,
    templates: &[(String, Vec<String>)],
    index: Option<usize>,
    chain: &Chain<'_>,
) -> Option<Located> {
    const GROUP_TEMPLATE: &str = "scheduling.k8s.io/group-template-name";
    const WORKLOAD: &str = "scheduling.k8s.io/workload-name";
    if owner != Owner::JobSet
        || chain.config.cluster.version() < crate::job::version::KubernetesVersion::V1_38
    {
        return None;
    }
    let annotations = job.pointer("/metadata/annotations")?.as_object()?;
    let named = |key: &str| {
        annotations
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
    };
    if !named(GROUP_TEMPLATE) || named(WORKLOAD) {
        return None;
    }
    let (printed, segments) = templates.get(index?)?;
    let path = format!("{printed}.metadata.annotations[{GROUP_TEMPLATE}]");
    let mut at = segments.clone();
    at.extend([
        "metadata".into(),
        "annotations".into(),
        GROUP_TEMPLATE.into(),
    ]);
    let message = format!(
        "JobSet: this template sets {GROUP_TEMPLATE} without {WORKLOAD}, as JobSet's \
         workload-aware scheduling writes it (its docs' example for Kubernetes 1.38+; the \
         controller behind the alpha gate JobSetWorkloadAwareSchedulingAPI, JobSet v0.13); \
         kube-apiserver {} refuses its Jobs: set {WORKLOAD} to the Workload's name in the \
         template's metadata.annotations too",
        chain.config.cluster.release()
    );
    Some(Located {
        finding: Finding::note(Source::Template, Some(path), message),
        at: place.at(&at),
    })
}

/// The CRD's decoding of the template at `at` (`printed`): quantities its schema refuses, then,
/// as `--validate` asks, keys written twice and fields a Job template does not have.
fn decode_template(
    place: &Place<'_>,
    doc: &Value,
    printed: &str,
    at: &[String],
    chain: &Chain<'_>,
) -> Vec<Located> {
    let release = chain.config.cluster.release();
    let Some(template) = at.iter().try_fold(doc, |v, s| match v {
        Value::Object(m) => m.get(s),
        Value::Array(a) => s.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    }) else {
        return Vec::new();
    };
    let within = Within { place, printed, at };
    let found = schema::decode_findings(Kind::Job, template, release, &|v| {
        crd_quantity_error(v).is_some()
    });
    let mut out: Vec<Located> = found
        .quantities
        .iter()
        .filter_map(|(steps, value)| refused_quantity(&within, steps, value))
        .collect();
    if chain.field_validation == FieldValidation::Ignore {
        return out;
    }
    let mut prefix = place.prefix.clone();
    prefix.extend_from_slice(at);
    out.extend(duplicates(place, &prefix));
    out.extend(unknown_template_fields(
        &within,
        doc,
        template,
        found.unknown,
        chain,
    ));
    out
}

/// A template's place: in the document at `place`, at `at` (printed `printed`).
struct Within<'a, 'p> {
    place: &'a Place<'p>,
    printed: &'a str,
    at: &'a [String],
}

impl Within<'_, '_> {
    /// A path under the template, printed from the owner's root.
    fn printed(&self, steps: &[schema::Step]) -> String {
        format!("{}.{}", self.printed, schema::printed(steps))
    }

    /// Where a path under the template is written.
    fn at(&self, steps: &[schema::Step]) -> Location {
        let mut path = self.at.to_vec();
        path.extend(schema::segments(steps));
        self.place.at(&path)
    }
}

/// A quantity at `steps` of the template, if the CRD's schema refuses `value`.
fn refused_quantity(
    within: &Within<'_, '_>,
    steps: &[schema::Step],
    value: &Value,
) -> Option<Located> {
    let (bad, detail) = crd_quantity_error(value)?;
    let path = within.printed(steps);
    let error = FieldError::invalid(
        FieldPath::new(&path),
        BadValue::str(bad),
        format!("{path} in body {detail}"),
    );
    Some(Located {
        finding: Finding::error(Source::KubeApiserver, error),
        at: within.at(steps),
    })
}

/// Fields of `template` a Job template does not have (`unknown`, from the schema's walk, and
/// keys beside `metadata` and `spec`), as `--validate` asks, in the words of the owner's
/// decoding (`doc`'s kind and version).
fn unknown_template_fields(
    within: &Within<'_, '_>,
    doc: &Value,
    template: &Value,
    unknown: Vec<schema::UnknownField>,
    chain: &Chain<'_>,
) -> Vec<Located> {
    // A Job template has `metadata` and `spec` only.
    let extra = template
        .as_object()
        .into_iter()
        .flat_map(|t| t.keys())
        .filter(|k| !matches!(k.as_str(), "metadata" | "spec"))
        .map(|k| vec![schema::Step::Key(k.clone())]);
    let unknown = unknown
        .into_iter()
        .filter(|f| !matches!(f.0.first(), Some(schema::Step::Key(k)) if matches!(k.as_str(), "apiVersion" | "kind" | "status")))
        .map(|f| f.0);
    let incomplete = schema::fields_may_be_incomplete(chain.config.cluster.release());
    let field = |name: &str| doc.get(name).and_then(Value::as_str).unwrap_or_default();
    let version = field("apiVersion").rsplit('/').next().unwrap_or_default();
    let handled_as = cannot_be_handled(field("kind"), version);
    extra
        .chain(unknown)
        .map(|steps| {
            unknown_field(
                within.printed(&steps),
                within.at(&steps),
                chain.field_validation,
                &handled_as,
                incomplete.as_deref(),
            )
        })
        .collect()
}

/// What a CRD's schema says of a quantity (`x-kubernetes-int-or-string` and
/// [`CRD_QUANTITY_PATTERN`]), as kube-apiserver's CRD validation prints it after the path: the
/// bad value and the detail. An integer or a matching string is fine.
pub(crate) fn crd_quantity_error(value: &Value) -> Option<(String, String)> {
    match value {
        Value::Null => None,
        Value::Number(n) if n.is_i64() || n.is_u64() => None,
        Value::String(s) if matches_crd_quantity(s) => None,
        Value::String(s) => Some((s.clone(), format!("should match '{CRD_QUANTITY_PATTERN}'"))),
        other => {
            let ty = match other {
                Value::Number(_) => "number",
                Value::Bool(_) => "boolean",
                Value::Array(_) => "array",
                _ => "object",
            };
            Some((
                ty.to_string(),
                format!("must be of type integer,string: {ty:?}"),
            ))
        }
    }
}

/// Whether `s` matches [`CRD_QUANTITY_PATTERN`].
fn matches_crd_quantity(s: &str) -> bool {
    // `(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))`: the length of the number at the start of `s`.
    fn number(s: &[u8]) -> Option<usize> {
        let digits = |from: usize| s[from..].iter().take_while(|c| c.is_ascii_digit()).count();
        let int = digits(0);
        if int > 0 {
            if s.get(int) == Some(&b'.') {
                return Some(int + 1 + digits(int + 1));
            }
            return Some(int);
        }
        if s.first() == Some(&b'.') {
            let frac = digits(1);
            return (frac > 0).then_some(1 + frac);
        }
        None
    }
    let b = s.as_bytes();
    let signed = |b: &'_ [u8]| -> usize { usize::from(matches!(b.first(), Some(b'+' | b'-'))) };
    let start = signed(b);
    let Some(len) = number(&b[start..]) else {
        return false;
    };
    let suffix = &b[start + len..];
    match suffix {
        [] => true,
        [b'K' | b'M' | b'G' | b'T' | b'P' | b'E', b'i'] => true,
        [c] if b"numkMGTPE".contains(c) => true,
        [b'e' | b'E', rest @ ..] => {
            let rest = &rest[signed(rest)..];
            number(rest) == Some(rest.len())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_quantity_pattern_as_a_regular_expression_engine_reads_it() {
        for ok in [
            "1", "1Gi", "500m", "1.5", ".5", "1.", "+1", "-1", "1e3", "1E-3", "1e+3.5", "1Ei", "2E",
        ] {
            assert!(matches_crd_quantity(ok), "{ok}");
        }
        // ParseQuantity trims " 1"; the CRD's pattern does not.
        for bad in [
            "1 Gi", " 1", "1Gb", "", ".", "1e", "1mi", "Gi", "1.2.3", "+",
        ] {
            assert!(!matches_crd_quantity(bad), "{bad}");
        }
    }

    #[test]
    fn crd_quantities_are_integers_or_matching_strings() {
        assert_eq!(crd_quantity_error(&serde_json::json!(2)), None);
        assert_eq!(
            crd_quantity_error(&serde_json::json!(0.5)),
            Some((
                "number".into(),
                "must be of type integer,string: \"number\"".into()
            ))
        );
        assert!(crd_quantity_error(&serde_json::json!("1 Gi")).is_some());
    }
}
