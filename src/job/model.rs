//! The parts of a `batch/v1` Job (or CronJob) that jobgate's rules read, and nothing more.
//!
//! Admission reviews carry whole objects (often with `managedFields` and a
//! `last-applied-configuration` copy of themselves); deserializing only these fields keeps a review
//! at a few microseconds. Unknown fields are skipped, never rejected.

use std::borrow::Cow;

use super::annotations::{AnnotationValue, Annotations};
use super::field::FieldPath;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::strict::{Strict, without_position};

/// A field whose absence, explicit `null` and value mean different things
/// (KEP-3939 defaults `podReplacementPolicy` only when it is absent or null, never over `""`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Field<T> {
    /// The field is not in the object.
    #[default]
    Absent,
    /// The field is an explicit `null`.
    Null,
    /// The field has a value.
    Value(T),
}

impl<T> Field<T> {
    /// The value, if one is set (absent and null are both "not set").
    pub(crate) fn value(&self) -> Option<&T> {
        match self {
            Field::Value(v) => Some(v),
            Field::Absent | Field::Null => None,
        }
    }

    pub(crate) fn is_set(&self) -> bool {
        matches!(self, Field::Value(_))
    }
}

/// `#[serde(default, deserialize_with = "field")]`: missing -> `Absent`, `null` -> `Null`.
fn field<'de, D, T>(deserializer: D) -> Result<Field<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(match Option::<T>::deserialize(deserializer)? {
        Some(v) => Field::Value(v),
        None => Field::Null,
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
    pub(crate) fn spec_path(self) -> FieldPath {
        let spec = FieldPath::new("spec");
        match self {
            Kind::Job => spec,
            Kind::CronJob => spec.child("jobTemplate").child("spec"),
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
    #[serde(default, deserialize_with = "field")]
    pub(crate) annotations: Field<Annotations>,
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
    pub(crate) completion_mode: Option<String>,
    #[serde(default)]
    pub(crate) suspend: Option<bool>,
    #[serde(default, deserialize_with = "field")]
    pub(crate) pod_failure_policy: Field<PodFailurePolicy>,
    #[serde(default, deserialize_with = "field")]
    pub(crate) pod_replacement_policy: Field<String>,
    /// What `defaults::apply_apiserver_defaults` dropped from `podReplacementPolicy` with the
    /// 1.33 gate `JobPodReplacementPolicy` off; an UPDATE may keep it (`dropDisabledFields`).
    #[serde(skip)]
    pub(crate) dropped_pod_replacement_policy: Option<Field<String>>,
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
    pub(crate) action: Option<String>,
    pub(crate) on_exit_codes: Option<OnExitCodes>,
    pub(crate) on_pod_conditions: Vec<OnPodConditionsPattern>,
    pub(crate) on_pod_conditions_null: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodFailurePolicyRuleWire {
    #[serde(default)]
    action: Option<String>,
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
    pub(crate) operator: Option<String>,
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
    operator: Option<String>,
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
    pub(crate) type_: Option<String>,
    #[serde(default)]
    pub(crate) status: Option<String>,
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
    #[serde(default, deserialize_with = "field")]
    pub(crate) metadata: Field<TemplateMeta>,
    #[serde(default)]
    pub(crate) spec: PodSpec,
    /// The whole template as the immutability check compares it (`job::template` digests),
    /// kept only where a Job UPDATE needs it (kube-apiserver's `spec.template` immutability
    /// compares every field); `None` on the fast CREATE path.
    #[serde(skip)]
    pub(crate) whole: Option<super::template::WholeTemplate>,
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
    #[serde(default, deserialize_with = "field")]
    pub(crate) annotations: Field<Annotations>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSpec {
    #[serde(default)]
    pub(crate) restart_policy: Option<String>,
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

#[derive(Deserialize)]
#[serde(expecting = "a Job object")]
struct JobDoc {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: JobSpec,
    #[serde(default)]
    status: JobStatus,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobStatus {
    #[serde(default)]
    start_time: Option<String>,
    #[serde(default)]
    active: Option<i32>,
    #[serde(default)]
    conditions: Option<Vec<JobCondition>>,
}

#[derive(Deserialize)]
struct JobCondition {
    #[serde(default, rename = "type")]
    type_: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

impl JobStatus {
    /// `batchvalidation.IsConditionTrue(status.Conditions, batch.JobSuspended)`.
    fn suspended_condition(&self) -> bool {
        self.conditions
            .iter()
            .flatten()
            .any(|c| c.type_.as_deref() == Some("Suspended") && c.status.as_deref() == Some("True"))
    }
}

#[derive(Deserialize)]
#[serde(expecting = "a CronJob object")]
struct CronJobDoc {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: CronJobSpec,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CronJobSpec {
    #[serde(default)]
    job_template: JobTemplateSpec,
}

/// `spec.jobTemplate` of a CronJob, left as text.
#[derive(Deserialize)]
struct CronJobTemplateText<'a> {
    #[serde(default, borrow)]
    spec: Option<CronJobSpecText<'a>>,
}

#[derive(Deserialize)]
struct CronJobSpecText<'a> {
    #[serde(default, borrow, rename = "jobTemplate")]
    job_template: Option<&'a RawValue>,
}

#[derive(Default, Deserialize)]
struct JobTemplateSpec {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: JobSpec,
}

/// Why an object could not be read; `path` is where (`spec.template.spec.containers[0].name`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() || path == "." { String::new() } else { format!("{path}: ") })]
pub struct ParseError {
    pub(crate) path: String,
    pub(crate) message: String,
}

fn not_an_object(kind: Kind, first: Option<char>) -> ParseError {
    let found = match first {
        Some('[') => "an array",
        Some('"') => "a string",
        Some('n') => "null",
        Some('t' | 'f') => "a boolean",
        Some(_) => "a number",
        None => "nothing",
    };
    ParseError {
        path: String::new(),
        message: format!("expected a {} object, got {found}", kind.as_str()),
    }
}

/// `serde_json::from_str` through `job::strict` (objects only, `-0` as 0).
fn strict_from_str<'de, T: Deserialize<'de>>(json: &'de str) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value = T::deserialize(Strict(&mut de))?;
    de.end()?;
    Ok(value)
}

/// An object whose own `kind` names another kind is not what the request said it is.
fn check_kind(expected: Kind, found: Option<&str>) -> Result<(), ParseError> {
    match found {
        Some(k) if k != expected.as_str() => Err(ParseError {
            path: "kind".into(),
            message: format!("expected {}, got {k:?}", expected.as_str()),
        }),
        _ => Ok(()),
    }
}

impl JobObject {
    /// Parses a Job or CronJob from JSON, reading only the fields jobgate uses.
    pub fn from_json(kind: Kind, json: &str) -> Result<JobObject, ParseError> {
        // serde's derived structs also accept arrays; an object is the only valid shape.
        if !json.trim_start().starts_with('{') {
            return Err(not_an_object(kind, json.trim_start().chars().next()));
        }
        let fast = match kind {
            Kind::Job => {
                strict_from_str::<JobDoc>(json).map(|d| (d.kind.clone(), JobObject::from_job(d)))
            }
            Kind::CronJob => strict_from_str::<CronJobDoc>(json)
                .map(|d| (d.kind.clone(), JobObject::from_cron_job(d))),
        };
        // The fast path carries no field path in its error; re-read to say where it failed.
        let (found, object) = fast.map_err(|_| match kind {
            Kind::Job => Self::locate::<JobDoc>(json),
            Kind::CronJob => Self::locate::<CronJobDoc>(json),
        })?;
        check_kind(kind, found.as_deref())?;
        let mut object = object;
        if kind == Kind::CronJob {
            // Skims the text again for the template's span; it borrows, so nothing is rebuilt.
            object.job_template_json = serde_json::from_str::<CronJobTemplateText<'_>>(json)
                .ok()
                .and_then(|t| t.spec)
                .and_then(|s| s.job_template)
                .map(|raw| raw.get().to_string());
        }
        Ok(object)
    }

    /// Builds from an already-decoded JSON value (`jobgate check` reads YAML into values).
    pub(crate) fn from_value(
        kind: Kind,
        value: serde_json::Value,
    ) -> Result<JobObject, ParseError> {
        if !value.is_object() {
            return Err(not_an_object(kind, value.to_string().chars().next()));
        }
        let job_template_json = match kind {
            Kind::CronJob => value
                .pointer("/spec/jobTemplate")
                .filter(|t| !t.is_null())
                .map(|t| t.to_string()),
            Kind::Job => None,
        };
        let result = match kind {
            Kind::Job => serde_path_to_error::deserialize::<_, JobDoc>(Strict(value))
                .map(|d| (d.kind.clone(), JobObject::from_job(d))),
            Kind::CronJob => serde_path_to_error::deserialize::<_, CronJobDoc>(Strict(value))
                .map(|d| (d.kind.clone(), JobObject::from_cron_job(d))),
        };
        let (found, mut object) = result.map_err(|e| ParseError {
            path: e.path().to_string(),
            message: without_position(e.inner()),
        })?;
        check_kind(kind, found.as_deref())?;
        object.job_template_json = job_template_json;
        Ok(object)
    }

    fn locate<T: for<'de> Deserialize<'de>>(json: &str) -> ParseError {
        let mut de = serde_json::Deserializer::from_str(json);
        match serde_path_to_error::deserialize::<_, T>(Strict(&mut de)) {
            Ok(_) => ParseError {
                path: String::new(),
                message: "trailing data after the object".into(),
            },
            Err(e) => ParseError {
                path: e.path().to_string(),
                message: without_position(e.inner()),
            },
        }
    }

    fn from_job(d: JobDoc) -> JobObject {
        JobObject {
            kind: Kind::Job,
            metadata: d.metadata,
            job_template_metadata: None,
            job_template_json: None,
            spec: d.spec,
            started: d.status.start_time.as_ref().is_some_and(|t| !t.is_empty()),
            suspended_condition: d.status.suspended_condition(),
            active: d.status.active.map_or(0, i64::from),
        }
    }

    fn from_cron_job(d: CronJobDoc) -> JobObject {
        JobObject {
            kind: Kind::CronJob,
            metadata: d.metadata,
            job_template_metadata: Some(d.spec.job_template.metadata),
            job_template_json: None,
            spec: d.spec.job_template.spec,
            started: false,
            suspended_condition: false,
            active: 0,
        }
    }

    /// Keeps the whole `spec.template` of `document` (this object's JSON) for the UPDATE
    /// immutability check, which compares every field of the template, not only those modeled.
    pub(crate) fn keep_whole_template(&mut self, document: &serde_json::Value) {
        let mut at = Some(document);
        for token in self.kind.spec_pointer() {
            at = at.and_then(|v| v.get(token));
        }
        let template = at.and_then(|spec| spec.get("template"));
        self.spec.template.whole = Some(super::template::WholeTemplate::from_value(
            template.unwrap_or(&serde_json::Value::Null),
        ));
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

/// Reads a Job or CronJob straight out of an enclosing document (the AdmissionReview's
/// `request.object`) in the same pass, so a review is parsed once. Accepts a JSON object or `null`
/// (`None`). Errors carry no field path: callers fall back to [`JobObject::from_json`] for that.
pub(crate) struct JobSeed(pub Kind);

impl<'de> serde::de::DeserializeSeed<'de> for JobSeed {
    type Value = Option<JobObject>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(JobSeedVisitor(self.0))
    }
}

struct JobSeedVisitor(Kind);

impl<'de> serde::de::Visitor<'de> for JobSeedVisitor {
    type Value = Option<JobObject>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a {} object or null", self.0.as_str())
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        // `job::strict`: structs from objects only, `-0` as 0, as everywhere objects are read.
        let de = Strict(serde::de::value::MapAccessDeserializer::new(map));
        let (found, object) = match self.0 {
            Kind::Job => {
                JobDoc::deserialize(de).map(|d| (d.kind.clone(), JobObject::from_job(d)))?
            }
            Kind::CronJob => CronJobDoc::deserialize(de)
                .map(|d| (d.kind.clone(), JobObject::from_cron_job(d)))?,
        };
        check_kind(self.0, found.as_deref()).map_err(serde::de::Error::custom)?;
        Ok(Some(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_null_and_empty_pod_replacement_policy_are_distinct() {
        let absent = JobObject::from_json(Kind::Job, r#"{"spec":{}}"#).unwrap();
        let null =
            JobObject::from_json(Kind::Job, r#"{"spec":{"podReplacementPolicy":null}}"#).unwrap();
        let empty =
            JobObject::from_json(Kind::Job, r#"{"spec":{"podReplacementPolicy":""}}"#).unwrap();
        assert_eq!(absent.spec.pod_replacement_policy, Field::Absent);
        assert_eq!(null.spec.pod_replacement_policy, Field::Null);
        assert_eq!(
            empty.spec.pod_replacement_policy,
            Field::Value(String::new())
        );
    }

    #[test]
    fn cron_job_spec_is_the_job_template_spec() {
        let cj = JobObject::from_json(
            Kind::CronJob,
            r#"{"metadata":{"name":"nightly"},"spec":{"schedule":"0 0 * * *","jobTemplate":{"metadata":{"annotations":{"a":"b"}},"spec":{"backoffLimit":3}}}}"#,
        )
        .unwrap();
        assert_eq!(cj.spec.backoff_limit, Some(3));
        assert_eq!(
            cj.job_template_metadata.unwrap().annotation("a").as_deref(),
            Some("b")
        );
    }

    #[test]
    fn a_cron_job_keeps_its_job_template_text_from_json_and_from_value() {
        let text = r#"{"spec":{"schedule":"@daily","jobTemplate": {"spec":{"backoffLimit":3}}}}"#;
        let cj = JobObject::from_json(Kind::CronJob, text).unwrap();
        assert_eq!(
            cj.job_template_json.as_deref(),
            Some(r#"{"spec":{"backoffLimit":3}}"#)
        );
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let cj = JobObject::from_value(Kind::CronJob, value).unwrap();
        assert_eq!(
            cj.job_template_json.as_deref(),
            Some(r#"{"spec":{"backoffLimit":3}}"#)
        );
        let job = JobObject::from_json(Kind::Job, r#"{"spec":{}}"#).unwrap();
        assert_eq!(job.job_template_json, None);
        let cj = JobObject::from_json(Kind::CronJob, r#"{"spec":{}}"#).unwrap();
        assert_eq!(cj.job_template_json, None);
    }

    #[test]
    fn a_wrongly_typed_field_is_reported_with_its_path() {
        let err = JobObject::from_json(
            Kind::Job,
            r#"{"spec":{"template":{"spec":{"containers":[{"name":7}]}}}}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "spec.template.spec.containers[0].name");
        assert!(
            err.message.contains("invalid type: integer `7`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn an_object_of_another_kind_is_rejected() {
        let err = JobObject::from_json(Kind::Job, r#"{"kind":"Pod","spec":{}}"#).unwrap_err();
        assert_eq!(err.to_string(), r#"kind: expected Job, got "Pod""#);
        let err = JobObject::from_json(Kind::Job, "[1]").unwrap_err();
        assert_eq!(err.to_string(), "expected a Job object, got an array");
    }

    #[test]
    fn the_seed_reads_objects_and_null_and_refuses_other_shapes() {
        use serde::de::DeserializeSeed;
        let read = |json: &str| {
            JobSeed(Kind::Job).deserialize(&mut serde_json::Deserializer::from_str(json))
        };
        let job = read(r#"{"kind":"Job","spec":{"backoffLimit":2}}"#)
            .unwrap()
            .unwrap();
        assert_eq!(job.spec.backoff_limit, Some(2));
        assert!(read("null").unwrap().is_none());
        assert!(read("[1]").is_err());
        assert!(read(r#"{"kind":"Pod"}"#).is_err());
        assert_eq!(
            job,
            JobObject::from_json(Kind::Job, r#"{"kind":"Job","spec":{"backoffLimit":2}}"#).unwrap()
        );
    }

    #[test]
    fn exit_codes_outside_int32_are_rejected() {
        let err = JobObject::from_json(
            Kind::Job,
            r#"{"spec":{"podFailurePolicy":{"rules":[{"action":"FailJob","onExitCodes":{"operator":"In","values":[2147483648]}}]}}}"#,
        )
        .unwrap_err();
        assert_eq!(
            err.path,
            "spec.podFailurePolicy.rules[0].onExitCodes.values[0]"
        );
    }
}
