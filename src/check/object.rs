//! One Job or CronJob through the chain the cluster runs, once it is known what it is and where
//! it is: read as the webhook reads it, `/mutate` as the deployed configuration calls it, the
//! apiserver's defaulting, `/validate`. A document (`document`) and a Job a controller builds from
//! a template (`templates`) both come here.

use serde_json::Value;

use super::locate::segments;
use super::recoverer;
use super::report::{self, Checked, Located, Location, Report, Unreadable};
use super::yaml::Position;
use crate::job::mutate::RecoveryScope;
use crate::job::pipeline::{self, Stages};
use crate::job::version::KubernetesVersion;
use crate::job::wire::envelope::Operation;
use crate::job::{self, Config, JobObject, Kind, finding};
use crate::schema;

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

    pub(super) fn child(&self, segment: impl Into<String>) -> Place<'a> {
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
        object.template_at = Some(job::wire::model::TemplateAt::new(&t.template));
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
    match judge(place, &mut o, write, scope, chain) {
        Ok(judged) => {
            record_judgment(place, &mut checked, judged, chain);
            report.objects.push(checked);
        }
        Err(u) => report.unreadable.push(u),
    }
}

/// What the stages `chain` runs (the webhooks, the apiserver's defaulting) say about `write`,
/// read from `o`.
fn judge(
    place: &Place<'_>,
    o: &mut Subject,
    write: pipeline::Write,
    scope: RecoveryScope,
    chain: &Chain<'_>,
) -> Result<pipeline::Judged, Unreadable> {
    let release = chain.config.cluster.release();
    // kube-apiserver applies the webhook's patch and decodes the object again. The document is
    // patched in place: it is not needed unpatched any more, and a copy of a large one costs as
    // much again.
    let mut reread = |patch: &json_patch::Patch| {
        json_patch::patch(&mut o.doc, &patch.0)
            .map_err(|e| place.unreadable(format!("jobgate's own patch does not apply: {e}")))?;
        read(place, o, &o.doc, o.object_at(), release)
    };
    let stages = match chain.mutate {
        true => Stages::MutateThenValidate(scope, &mut reread),
        false => Stages::Validate,
    };
    pipeline::run(write, stages, chain.config)
}

/// `judged` into `checked`: its findings where their fields are written, the patch, and which
/// controller recovers the Job's pods.
fn record_judgment(
    place: &Place<'_>,
    checked: &mut Checked,
    judged: pipeline::Judged,
    chain: &Chain<'_>,
) {
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
        && let Some(finding) = recoverer::note(&judged.object, chain.config, kueue_recovers)
    {
        let at = finding
            .field()
            .map_or_else(|| location.clone(), |p| place.at(&segments(p)));
        checked.findings.push(Located { finding, at });
    }
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
