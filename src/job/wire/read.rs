//! The three readers of a Job or CronJob: [`JobObject::from_json`] (a request body's object),
//! [`JobObject::from_value`] (`jobgate check`'s decoded YAML) and [`JobSeed`] (the object read in
//! the same pass as its AdmissionReview), plus the whole-template capture an UPDATE needs. Each
//! reads through `job::wire::strict` into the shapes of `job::wire::model` and reports failures with the
//! field path where they happened.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::interned::InternedStr;
use super::model::{JobObject, JobSpec, Kind, ObjectMeta};
use super::strict::{Strict, without_position};

#[derive(Deserialize)]
#[serde(expecting = "a Job object")]
/// A Job as the reader takes it in.
pub(crate) struct JobDoc {
    #[serde(default)]
    pub(crate) kind: Option<InternedStr>,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default)]
    pub(crate) spec: JobSpec,
    #[serde(default)]
    pub(crate) status: JobStatus,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobStatus {
    #[serde(default)]
    pub(crate) start_time: Option<String>,
    #[serde(default)]
    pub(crate) active: Option<i32>,
    #[serde(default)]
    pub(crate) conditions: Option<Vec<JobCondition>>,
}

#[derive(Deserialize)]
pub(crate) struct JobCondition {
    #[serde(default, rename = "type")]
    pub(crate) type_: Option<InternedStr>,
    #[serde(default)]
    pub(crate) status: Option<InternedStr>,
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
    kind: Option<InternedStr>,
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

/// `serde_json::from_str` through `job::wire::strict` (objects only, `-0` as 0).
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
    #[cfg(test)]
    pub(crate) fn from_value(
        kind: Kind,
        value: serde_json::Value,
    ) -> Result<JobObject, ParseError> {
        JobObject::from_value_ref(kind, &value)
    }

    /// `from_value` without taking the document (`jobgate check` keeps it for the patch and the
    /// strict decoding, and a copy of a large one costs as much again).
    pub(crate) fn from_value_ref(
        kind: Kind,
        value: &serde_json::Value,
    ) -> Result<JobObject, ParseError> {
        if !value.is_object() {
            let first = match value {
                serde_json::Value::Array(_) => '[',
                serde_json::Value::String(_) => '"',
                serde_json::Value::Null => 'n',
                serde_json::Value::Bool(_) => 't',
                _ => '0',
            };
            return Err(not_an_object(kind, Some(first)));
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

    pub(crate) fn from_job(d: JobDoc) -> JobObject {
        JobObject {
            kind: Kind::Job,
            metadata: d.metadata,
            job_template_metadata: None,
            job_template_json: None,
            spec: d.spec,
            started: d.status.start_time.as_ref().is_some_and(|t| !t.is_empty()),
            suspended_condition: d.status.suspended_condition(),
            active: d.status.active.map_or(0, i64::from),
            template_at: None,
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
            template_at: None,
        }
    }

    /// Keeps the whole `spec.template` of `document` (this object's JSON) for the UPDATE
    /// immutability check, which compares every field of the template, not only those modeled.
    pub(crate) fn keep_whole_template(
        &mut self,
        document: &serde_json::Value,
        release: crate::job::version::KubernetesVersion,
    ) {
        let mut at = Some(document);
        for token in self.kind.spec_pointer() {
            at = at.and_then(|v| v.get(token));
        }
        let template = at.and_then(|spec| spec.get("template"));
        self.spec.template.whole = Some(crate::job::template::WholeTemplate::from_value(
            template.unwrap_or(&serde_json::Value::Null),
            release,
        ));
    }
}

/// Reads a Job or CronJob straight out of an enclosing document (the AdmissionReview's
/// `request.object`) in the same pass, so a review is parsed once. Accepts a JSON object or `null`
/// (`None`). Errors carry no field path: callers fall back to [`JobObject::from_json`] for that.
pub(crate) struct JobSeed(pub(crate) Kind);

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
        // `job::wire::strict`: structs from objects only, `-0` as 0, as everywhere objects are read.
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
    use crate::job::wire::model::Presence;

    #[test]
    fn absent_null_and_empty_pod_replacement_policy_are_distinct() {
        let absent = JobObject::from_json(Kind::Job, r#"{"spec":{}}"#).unwrap();
        let null =
            JobObject::from_json(Kind::Job, r#"{"spec":{"podReplacementPolicy":null}}"#).unwrap();
        let empty =
            JobObject::from_json(Kind::Job, r#"{"spec":{"podReplacementPolicy":""}}"#).unwrap();
        assert_eq!(absent.spec.pod_replacement_policy, Presence::Absent);
        assert_eq!(null.spec.pod_replacement_policy, Presence::Null);
        assert_eq!(
            empty.spec.pod_replacement_policy,
            Presence::Value(InternedStr::default())
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
