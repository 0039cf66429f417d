//! The parts of a `batch/v1` Job (or CronJob) that jobgate's rules read, and nothing more.
//!
//! Admission reviews carry whole objects (often with `managedFields` and a
//! `last-applied-configuration` copy of themselves); deserializing only these fields keeps a review
//! at a few microseconds. Unknown fields are skipped, never rejected. String fields whose values
//! upstream enumerates (`restartPolicy`, `completionMode`, ...) are [`InternedStr`]s: reading one
//! of those values allocates nothing.

use std::borrow::Cow;

use super::annotations::{AnnotationValue, Annotations};
use super::interned::InternedStr;
use crate::job::field::FieldPath;
use serde::{Deserialize, Deserializer};

/// A field whose absence, explicit `null` and value mean different things
/// (KEP-3939 defaults `podReplacementPolicy` only when it is absent or null, never over `""`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Presence<T> {
    /// The field is not in the object.
    #[default]
    Absent,
    /// The field is an explicit `null`.
    Null,
    /// The field has a value.
    Value(T),
}

impl<T> Presence<T> {
    /// The value, if one is set (absent and null are both "not set").
    pub(crate) fn value(&self) -> Option<&T> {
        match self {
            Presence::Value(v) => Some(v),
            Presence::Absent | Presence::Null => None,
        }
    }

    pub(crate) fn is_set(&self) -> bool {
        matches!(self, Presence::Value(_))
    }
}

/// `#[serde(default, deserialize_with = "presence")]`: missing -> `Absent`, `null` -> `Null`.
fn presence<'de, D, T>(deserializer: D) -> Result<Presence<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(match Option::<T>::deserialize(deserializer)? {
        Some(v) => Presence::Value(v),
        None => Presence::Null,
    })
}

/// `null` lists decode as empty, like Go's nil slices.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Which top-level kind carried the Job spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A `batch/v1` Job.
    Job,
    /// A `batch/v1` CronJob (its Job spec is `spec.jobTemplate.spec`).
    CronJob,
}

impl Kind {
    pub(crate) fn from_kind(kind: &str) -> Option<Kind> {
        match kind {
            "Job" => Some(Kind::Job),
            "CronJob" => Some(Kind::CronJob),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Job => "Job",
            Kind::CronJob => "CronJob",
        }
    }

    /// Field path of the Job spec, as kube-apiserver builds it (`spec`, `spec.jobTemplate.spec`).
    pub(crate) fn spec_path(self) -> FieldPath<'static> {
        match self {
            Kind::Job => FieldPath::new("spec"),
            // `NewPath("spec", "jobTemplate", "spec")`: one root that prints with its dots.
            Kind::CronJob => FieldPath::new("spec.jobTemplate.spec"),
        }
    }

    /// JSON Pointer tokens of the Job spec inside the object (`/spec`, `/spec/jobTemplate/spec`).
    pub(crate) fn spec_pointer(self) -> &'static [&'static str] {
        match self {
            Kind::Job => &["spec"],
            Kind::CronJob => &["spec", "jobTemplate", "spec"],
        }
    }
}

/// A Job or a CronJob, reduced to what the rules need.
#[derive(Debug, Clone, PartialEq)]
pub struct JobObject {
    pub(crate) kind: Kind,
    /// The object's own metadata (the Job's, or the CronJob's).
    pub(crate) metadata: ObjectMeta,
    /// For a CronJob, `spec.jobTemplate.metadata` (the metadata its Jobs are created with).
    pub(crate) job_template_metadata: Option<ObjectMeta>,
    /// For a CronJob, the JSON text of `spec.jobTemplate` as received, so that an UPDATE can tell
    /// whether the template changed (mutation re-reviews a CronJob only then).
    pub(crate) job_template_json: Option<String>,
    pub(crate) spec: JobSpec,
    /// A Job's `status.startTime` is set: the Job has started (false for CronJobs).
    pub(crate) started: bool,
    /// A Job's `status.conditions` holds `Suspended` with status `"True"` (`batch.JobSuspended`).
    pub(crate) suspended_condition: bool,
    /// A Job's `status.active` (absent is 0).
    pub(crate) active: i64,
    /// For a Job another controller builds from a template (a JobSet's), where that template is
    /// in the object the user wrote: findings name its fields there.
    pub(crate) template_at: Option<TemplateAt>,
}

/// Where the Job template a Job is built from is, printed (`spec.replicatedJobs[0].template`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TemplateAt {
    spec: String,
    metadata: String,
}

impl TemplateAt {
    /// The template at `path` (printed as `field.Path` prints it).
    pub(crate) fn new(path: &str) -> TemplateAt {
        TemplateAt {
            spec: format!("{path}.spec"),
            metadata: format!("{path}.metadata"),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ObjectMeta {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) generate_name: Option<String>,
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    #[serde(default)]
    pub(crate) deletion_timestamp: Option<String>,
    #[serde(default, deserialize_with = "presence")]
    pub(crate) annotations: Presence<Annotations>,
}

impl ObjectMeta {
    pub(crate) fn annotation(&self, key: &str) -> Option<Cow<'_, str>> {
        self.annotations
            .value()
            .and_then(|a| a.get(key))
            .map(AnnotationValue::text)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobSpec {
    #[serde(default)]
    pub(crate) parallelism: Option<i32>,
    #[serde(default)]
    pub(crate) completions: Option<i32>,
    #[serde(default)]
    pub(crate) active_deadline_seconds: Option<i64>,
    #[serde(default)]
    pub(crate) backoff_limit: Option<i32>,
    #[serde(default, rename = "ttlSecondsAfterFinished")]
    pub(crate) ttl_seconds_after_finished: Option<i32>,
    #[serde(default)]
    pub(crate) backoff_limit_per_index: Option<i32>,
    #[serde(default)]
    pub(crate) max_failed_indexes: Option<i32>,
    #[serde(default)]
    pub(crate) completion_mode: Option<InternedStr>,
    /// KEP-4368: the controller that reconciles the Job (`kubernetes.io/job-controller` when
    /// unset).
    #[serde(default)]
    pub(crate) managed_by: Option<InternedStr>,
    #[serde(default)]
    pub(crate) suspend: Option<bool>,
    #[serde(default, deserialize_with = "presence")]
    pub(crate) pod_failure_policy: Presence<PodFailurePolicy>,
    #[serde(default, deserialize_with = "presence")]
    pub(crate) pod_replacement_policy: Presence<InternedStr>,
    /// What `defaults::apply_apiserver_defaults` dropped from `podReplacementPolicy` with the
    /// 1.33 gate `JobPodReplacementPolicy` off; an UPDATE may keep it (`dropDisabledFields`).
    #[serde(skip)]
    pub(crate) dropped_pod_replacement_policy: Option<Presence<InternedStr>>,
    #[serde(default)]
    pub(crate) success_policy: Option<SuccessPolicy>,
    #[serde(default)]
    pub(crate) template: PodTemplateSpec,
}

/// `rules: []` and a missing or `null` list validate alike, but kube-apiserver prints the
/// decoded empty slice as `[]` and the nil one as `null` (`{"Rules":[]}`), so `*_null` keeps
/// which it was, as `OnExitCodes::values_null` does.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(from = "PodFailurePolicyWire")]
pub(crate) struct PodFailurePolicy {
    pub(crate) rules: Vec<PodFailurePolicyRule>,
    pub(crate) rules_null: bool,
}

#[derive(Deserialize)]
struct PodFailurePolicyWire {
    #[serde(default)]
    rules: Option<Vec<PodFailurePolicyRule>>,
}

impl From<PodFailurePolicyWire> for PodFailurePolicy {
    fn from(w: PodFailurePolicyWire) -> PodFailurePolicy {
        PodFailurePolicy {
            rules_null: w.rules.is_none(),
            rules: w.rules.unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(from = "PodFailurePolicyRuleWire")]
pub(crate) struct PodFailurePolicyRule {
    pub(crate) action: Option<InternedStr>,
    pub(crate) on_exit_codes: Option<OnExitCodes>,
    pub(crate) on_pod_conditions: Vec<OnPodConditionsPattern>,
    pub(crate) on_pod_conditions_null: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodFailurePolicyRuleWire {
    #[serde(default)]
    action: Option<InternedStr>,
    #[serde(default)]
    on_exit_codes: Option<OnExitCodes>,
    #[serde(default)]
    on_pod_conditions: Option<Vec<OnPodConditionsPattern>>,
}

impl From<PodFailurePolicyRuleWire> for PodFailurePolicyRule {
    fn from(w: PodFailurePolicyRuleWire) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: w.action,
            on_exit_codes: w.on_exit_codes,
            on_pod_conditions_null: w.on_pod_conditions.is_none(),
            on_pod_conditions: w.on_pod_conditions.unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(from = "OnExitCodesWire")]
pub(crate) struct OnExitCodes {
    pub(crate) container_name: Option<String>,
    pub(crate) operator: Option<InternedStr>,
    pub(crate) values: Vec<i32>,
    /// `values` was absent or null (Go's nil slice), not `[]`: kube-apiserver prints the two
    /// differently (`null`, `[]`) in "at least one value is required".
    pub(crate) values_null: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OnExitCodesWire {
    #[serde(default)]
    container_name: Option<String>,
    #[serde(default)]
    operator: Option<InternedStr>,
    #[serde(default)]
    values: Option<Vec<i32>>,
}

impl From<OnExitCodesWire> for OnExitCodes {
    fn from(w: OnExitCodesWire) -> OnExitCodes {
        OnExitCodes {
            container_name: w.container_name,
            operator: w.operator,
            values_null: w.values.is_none(),
            values: w.values.unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OnPodConditionsPattern {
    #[serde(default, rename = "type")]
    pub(crate) type_: Option<InternedStr>,
    #[serde(default)]
    pub(crate) status: Option<InternedStr>,
}

/// `rules_null`: see `PodFailurePolicy`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(from = "SuccessPolicyWire")]
pub(crate) struct SuccessPolicy {
    pub(crate) rules: Vec<SuccessPolicyRule>,
    pub(crate) rules_null: bool,
}

#[derive(Deserialize)]
struct SuccessPolicyWire {
    #[serde(default)]
    rules: Option<Vec<SuccessPolicyRule>>,
}

impl From<SuccessPolicyWire> for SuccessPolicy {
    fn from(w: SuccessPolicyWire) -> SuccessPolicy {
        SuccessPolicy {
            rules_null: w.rules.is_none(),
            rules: w.rules.unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SuccessPolicyRule {
    #[serde(default)]
    pub(crate) succeeded_indexes: Option<String>,
    #[serde(default)]
    pub(crate) succeeded_count: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodTemplateSpec {
    #[serde(default, deserialize_with = "presence")]
    pub(crate) metadata: Presence<TemplateMeta>,
    #[serde(default)]
    pub(crate) spec: PodSpec,
    /// The whole template as the immutability check compares it (`job::template` digests),
    /// kept only where a Job UPDATE needs it (kube-apiserver's `spec.template` immutability
    /// compares every field); `None` on the fast CREATE path.
    #[serde(skip)]
    pub(crate) whole: Option<crate::job::template::WholeTemplate>,
}

impl PodTemplateSpec {
    pub(crate) fn annotation(&self, key: &str) -> Option<Cow<'_, str>> {
        self.metadata
            .value()
            .and_then(|m| m.annotations.value())
            .and_then(|a| a.get(key))
            .map(AnnotationValue::text)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TemplateMeta {
    #[serde(default, deserialize_with = "presence")]
    pub(crate) annotations: Presence<Annotations>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSpec {
    #[serde(default)]
    pub(crate) restart_policy: Option<InternedStr>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) containers: Vec<NamedContainer>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) init_containers: Vec<NamedContainer>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct NamedContainer {
    #[serde(default)]
    pub(crate) name: String,
}

impl JobObject {
    /// Where the Job spec is, as findings name it: `spec`, a CronJob's `spec.jobTemplate.spec`,
    /// or the template's `spec` for a Job built from one.
    pub(crate) fn spec_path(&self) -> FieldPath<'_> {
        match &self.template_at {
            Some(t) => FieldPath::new(&t.spec),
            None => self.kind.spec_path(),
        }
    }

    /// Where the object's own metadata is: `metadata`, or the template's for a Job built from
    /// one.
    pub(crate) fn metadata_path(&self) -> FieldPath<'_> {
        match &self.template_at {
            Some(t) => FieldPath::new(&t.metadata),
            None => FieldPath::new("metadata"),
        }
    }

    /// The name kube-apiserver uses in messages: `metadata.name`, else `generateName`.
    pub(crate) fn display_name(&self) -> &str {
        match (&self.metadata.name, &self.metadata.generate_name) {
            (Some(n), _) if !n.is_empty() => n,
            (_, Some(g)) => g,
            _ => "",
        }
    }
}
