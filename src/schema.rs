//! Which fields of a Job or CronJob kube-apiserver's types do not have: what its strict decoding
//! (`k8s.io/apimachinery/pkg/runtime/serializer/json`, over `sigs.k8s.io/json`'s
//! `UnmarshalStrict`) reports as `unknown field "spec.backofLimit"` when a client asks for field
//! validation (`kubectl apply`'s default, `--validate=strict`, GA in 1.27).
//!
//! The field names come from the real schema: k8s-openapi's types for the newest supported
//! release, each of which names its fields when deserialized (`deserialize_struct`'s `fields`).
//! [`unknown_fields`] drives those `Deserialize` impls over the document with a deserializer that
//! never fails on a value (a number where a string is expected reads as that string, anything
//! else as its zero value): only the shape is walked, every key compared with the fields its
//! struct names. Values are judged elsewhere (`model`, `validate`).
//!
//! k8s-openapi's types are 1.37's; the other releases differ from them by the fields in
//! `known_fields.rs`, generated from each release's own k8s.io/api Go types
//! (`tests/apifields/generate.sh`): a field a release does not have is unknown there
//! (`spec.scheduling` before 1.37), and one it has that 1.37 does not is known there
//! (`spec.template.spec.workloadRef` in 1.35 only). For a release newer than any jobgate read,
//! [`fields_may_be_incomplete`] says so, and `check` reports unknown fields as warnings: never
//! stricter than the cluster.

mod known_fields;

use std::cell::RefCell;

use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};

use crate::job::Kind;
use crate::job::version::KubernetesVersion;

/// Whether `release` has field `key` of the struct k8s-openapi names `name`, whose 1.37 fields
/// are `fields`.
fn has_field(release: KubernetesVersion, name: &str, fields: &[&str], key: &str) -> bool {
    let minor = release.rules().minor();
    match known_fields::VARYING_FIELDS
        .iter()
        .find(|(s, f, _, _)| *s == name && *f == key)
    {
        Some(&(_, _, first, last)) => (first..=last).contains(&minor),
        None => fields.contains(&key),
    }
}

/// Why the fields jobgate knows for `release` may be fewer than the cluster's: a release newer
/// than any whose types were read. `None` for a release that was read.
///
/// A release read from a pre-release tag (1.38, from k8s.io/api v0.38.0-beta.0, the newest the
/// Go module proxy serves) is taken as read: a field added after that tag is unknown there
/// until `known_fields.rs` is generated again from the release's own tag (docs/src/versions.md).
pub(crate) fn fields_may_be_incomplete(release: KubernetesVersion) -> Option<String> {
    let read = known_fields::RELEASES_READ;
    if read.iter().any(|(minor, _)| *minor == release.minor()) {
        return None;
    }
    let (newest, tag) = read.last().copied().unwrap_or((0, "none"));
    Some(format!(
        "Kubernetes {release} is newer than the releases whose fields jobgate read (the newest, \
         1.{newest}, from k8s.io/api {tag})"
    ))
}

/// One step of a path: a key of an object or an index of an array. Ordered as a traversal of
/// an object whose keys are sorted bytewise (Go's `encoding/json` map order) meets them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// A field the apiserver's types do not have, by its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownField(pub(crate) Vec<Step>);

impl UnknownField {
    /// The path as `sigs.k8s.io/json` prints it in strict errors: keys joined with `.`, indexes
    /// in brackets (`spec.template.spec.containers[0].imagePullPolcy`).
    #[cfg(test)]
    pub(crate) fn printed(&self) -> String {
        printed(&self.0)
    }
}

/// A path as `sigs.k8s.io/json` prints it in strict errors: keys joined with `.`, indexes in
/// brackets.
pub(crate) fn printed(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The steps as strings (keys, and indexes in decimal).
pub(crate) fn segments(steps: &[Step]) -> Vec<String> {
    steps
        .iter()
        .map(|s| match s {
            Step::Key(k) => k.clone(),
            Step::Index(i) => i.to_string(),
        })
        .collect()
}

/// The fields of `object` (a Job or CronJob as JSON) that `kind`'s schema in `release` does not
/// have, in key order (a parsed document keeps its keys sorted; sigs.k8s.io/json reports them in
/// the order written). `apiVersion` and `kind` are known at the top.
pub(crate) fn unknown_fields(
    kind: Kind,
    object: &Value,
    release: KubernetesVersion,
) -> Vec<UnknownField> {
    decode_findings(kind, object, release, &|_| false).unknown
}

/// What the walk of [`decode_findings`] found.
#[derive(Debug, Default)]
pub(crate) struct DecodeFindings {
    /// As [`unknown_fields`].
    pub(crate) unknown: Vec<UnknownField>,
    /// Every `resource.Quantity` of the object that the caller's `refused` picked, by path,
    /// with its value (a quantity is a string or a number in JSON; `null` is none). Nothing
    /// under an unknown field: strict decoding skips its value.
    pub(crate) quantities: Vec<(Vec<Step>, Value)>,
}

/// [`unknown_fields`], and in the same walk the quantities `refused` picks (for the message of
/// the decoder that refuses them: `ParseQuantity`'s for a Job, a CRD's pattern for a JobSet).
pub(crate) fn decode_findings(
    kind: Kind,
    object: &Value,
    release: KubernetesVersion,
    refused: &dyn Fn(&Value) -> bool,
) -> DecodeFindings {
    use k8s_openapi::api::batch::v1 as batch;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let found = Found {
        unknown: RefCell::new(Vec::new()),
        quantities: RefCell::new(Vec::new()),
        refused,
    };
    let Some(map) = object.as_object() else {
        return DecodeFindings::default();
    };
    for (key, value) in map {
        let at = Walk {
            value: Some(value),
            path: vec![Step::Key(key.clone())],
            found: &found,
            release,
        };
        // A value that cannot be walked stops only its own subtree.
        let _ = match (key.as_str(), kind) {
            ("apiVersion" | "kind", _) => Ok(()),
            ("metadata", _) => walk::<ObjectMeta>(at),
            ("spec", Kind::Job) => walk::<batch::JobSpec>(at),
            ("status", Kind::Job) => walk::<batch::JobStatus>(at),
            ("spec", Kind::CronJob) => walk::<batch::CronJobSpec>(at),
            ("status", Kind::CronJob) => walk::<batch::CronJobStatus>(at),
            _ => {
                found.unknown.borrow_mut().push(UnknownField(at.path));
                Ok(())
            }
        };
    }
    let mut unknown = found.unknown.into_inner();
    // kubectl sends JSON with every object's keys sorted (it decodes a manifest into Go maps and
    // encodes them again, sigs.k8s.io/yaml and encoding/json), and the apiserver's strict decoder
    // reports unknown fields as it meets them: in that order.
    unknown.sort_by(|a, b| a.0.cmp(&b.0));
    DecodeFindings {
        unknown,
        quantities: found.quantities.into_inner(),
    }
}

/// What a walk collects.
struct Found<'r> {
    unknown: RefCell<Vec<UnknownField>>,
    quantities: RefCell<Vec<(Vec<Step>, Value)>>,
    refused: &'r dyn Fn(&Value) -> bool,
}

fn walk<'de, T: serde::Deserialize<'de>>(at: Walk<'de, '_>) -> Result<(), WalkError> {
    T::deserialize(at).map(drop)
}

/// Why a walk stopped (a value no zero value satisfies, such as a malformed timestamp).
#[derive(Debug)]
struct WalkError(String);

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WalkError {}

impl de::Error for WalkError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        WalkError(msg.to_string())
    }
}

/// A value being walked; `None` stands for a field the document leaves out, read as its zero
/// value so that a required field's absence does not stop the walk.
struct Walk<'de, 'f> {
    value: Option<&'de Value>,
    path: Vec<Step>,
    found: &'f Found<'f>,
    release: KubernetesVersion,
}

impl<'de, 'f> Walk<'de, 'f> {
    fn child(&self, step: Step, value: Option<&'de Value>) -> Walk<'de, 'f> {
        let mut path = self.path.clone();
        path.push(step);
        Walk {
            value,
            path,
            found: self.found,
            release: self.release,
        }
    }

    /// A map, or the struct `name` with (1.37) `fields`.
    fn map<V: Visitor<'de>>(
        self,
        strukt: Option<(&'static str, &'static [&'static str])>,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        let entries = match self.value {
            Some(Value::Object(m)) => m,
            _ => &*EMPTY,
        };
        let fields = strukt.map(|(_, fields)| fields);
        // Strict decoding skips an unknown field's value: nothing under it is reported.
        let mut unknown: Vec<&'de str> = Vec::new();
        if let Some((name, fields)) = strukt {
            for key in entries.keys() {
                if !has_field(self.release, name, fields, key) {
                    let mut path = self.path.clone();
                    path.push(Step::Key(key.clone()));
                    self.found.unknown.borrow_mut().push(UnknownField(path));
                    unknown.push(key);
                }
            }
        }
        let missing: Vec<&'static str> = fields
            .unwrap_or_default()
            .iter()
            .copied()
            .filter(|f| !entries.contains_key(*f))
            .collect();
        visitor.visit_map(MapWalk {
            at: self,
            entries: entries.iter(),
            missing: missing.into_iter(),
            unknown,
            pending: None,
        })
    }
}

struct MapWalk<'de, 'f> {
    at: Walk<'de, 'f>,
    entries: serde_json::map::Iter<'de>,
    missing: std::vec::IntoIter<&'static str>,
    /// Keys reported unknown, whose values are walked as absent.
    unknown: Vec<&'de str>,
    pending: Option<(String, Option<&'de Value>)>,
}

impl<'de> MapAccess<'de> for MapWalk<'de, '_> {
    type Error = WalkError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, WalkError> {
        let (key, value) = match self.entries.next() {
            Some((k, _)) if self.unknown.contains(&k.as_str()) => (k.clone(), None),
            Some((k, v)) => (k.clone(), Some(v)),
            None => match self.missing.next() {
                Some(k) => (k.to_string(), None),
                None => return Ok(None),
            },
        };
        let read = seed.deserialize(key.as_str().into_deserializer())?;
        self.pending = Some((key, value));
        Ok(Some(read))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, WalkError> {
        let (key, value) = self
            .pending
            .take()
            .ok_or_else(|| WalkError("a value without a key".into()))?;
        seed.deserialize(self.at.child(Step::Key(key), value))
    }
}

struct SeqWalk<'de, 'f> {
    at: Walk<'de, 'f>,
    items: std::iter::Enumerate<std::slice::Iter<'de, Value>>,
}

impl<'de> SeqAccess<'de> for SeqWalk<'de, '_> {
    type Error = WalkError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, WalkError> {
        // A scalar item holds no field: it is not walked (a long list would otherwise be built
        // again as the typed list).
        match self
            .items
            .find(|(_, v)| matches!(v, Value::Object(_) | Value::Array(_)))
        {
            Some((i, v)) => seed
                .deserialize(self.at.child(Step::Index(i), Some(v)))
                .map(Some),
            None => Ok(None),
        }
    }
}

macro_rules! zero_or {
    ($($method:ident => $visit:ident($zero:expr)),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
                visitor.$visit($zero)
            }
        )*
    };
}

impl<'de, 'f> Deserializer<'de> for Walk<'de, 'f> {
    type Error = WalkError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        match self.value {
            None => visitor.visit_str(""),
            Some(Value::Null) => visitor.visit_unit(),
            Some(Value::Bool(b)) => visitor.visit_bool(*b),
            Some(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => visitor.visit_i64(i),
                (_, Some(u)) => visitor.visit_u64(u),
                _ => visitor.visit_f64(n.as_f64().unwrap_or(0.0)),
            },
            Some(Value::String(s)) => visitor.visit_borrowed_str(s),
            Some(Value::Array(_)) => self.deserialize_seq(visitor),
            Some(Value::Object(_)) => self.map(None, visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        match self.value {
            None | Some(Value::Null) => visitor.visit_none(),
            Some(_) => visitor.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        self.map(Some((name, fields)), visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        self.map(None, visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        let items: &'de [Value] = match self.value {
            Some(Value::Array(items)) => items,
            _ => &[],
        };
        visitor.visit_seq(SeqWalk {
            at: self,
            items: items.iter().enumerate(),
        })
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        match self.value {
            Some(Value::String(s)) => visitor.visit_borrowed_str(s),
            // `cpu: 1` is a quantity the apiserver reads from a number.
            Some(Value::Number(n)) => visitor.visit_string(n.to_string()),
            _ => visitor.visit_str(""),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, WalkError> {
        // k8s-openapi's `Quantity` names itself here. Its visitor reads a string or a number
        // only; anything else is read as a zero quantity so the walk goes on.
        if name == "Quantity" {
            let value = self.value.filter(|v| !v.is_null());
            if let Some(v) = value.filter(|v| (self.found.refused)(v)) {
                let entry = (self.path.clone(), v.clone());
                self.found.quantities.borrow_mut().push(entry);
            }
            if !matches!(value, None | Some(Value::String(_) | Value::Number(_))) {
                return visitor
                    .visit_newtype_struct(IntoDeserializer::<WalkError>::into_deserializer("0"));
            }
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_unit()
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, WalkError> {
        visitor.visit_unit()
    }

    zero_or!(
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i64(0),
        deserialize_i16 => visit_i64(0),
        deserialize_i32 => visit_i64(0),
        deserialize_i64 => visit_i64(0),
        deserialize_u8 => visit_u64(0),
        deserialize_u16 => visit_u64(0),
        deserialize_u32 => visit_u64(0),
        deserialize_u64 => visit_u64(0),
        deserialize_f32 => visit_f64(0.0),
        deserialize_f64 => visit_f64(0.0),
    );

    serde::forward_to_deserialize_any! {
        i128 u128 char bytes byte_buf unit_struct tuple tuple_struct enum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn unknown(kind: Kind, doc: Value) -> Vec<String> {
        unknown_in(KubernetesVersion::default(), kind, doc)
    }

    fn unknown_in(release: KubernetesVersion, kind: Kind, doc: Value) -> Vec<String> {
        unknown_fields(kind, &doc, release)
            .iter()
            .map(UnknownField::printed)
            .collect()
    }

    fn job_spec(spec: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec})
    }

    /// KEP-5547's `spec.scheduling` is in k8s.io/api `batch/v1/types.go` from v0.37 (not in
    /// v0.33.13-v0.36.3; in v0.37.2 and v0.38.0-beta.0): kubectl's strict decoding refuses it
    /// below 1.37 as an unknown field, and skips its value (nothing under it is reported); from
    /// 1.37 its own fields are checked.
    #[test]
    fn kep_5547_spec_scheduling_is_unknown_before_1_37_and_known_from_1_37() {
        let scheduling = json!({"schedulingPolicy": {"gang": {"minCount": 2}}, "bogus": 1});
        let job = job_spec(json!({"scheduling": scheduling, "template": {}}));
        let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"scheduling": scheduling}}}});
        for release in KubernetesVersion::all() {
            let (job_unknown, cron_unknown) = if release < KubernetesVersion::V1_37 {
                ("spec.scheduling", "spec.jobTemplate.spec.scheduling")
            } else {
                (
                    "spec.scheduling.bogus",
                    "spec.jobTemplate.spec.scheduling.bogus",
                )
            };
            assert_eq!(
                unknown_in(release, Kind::Job, job.clone()),
                [job_unknown],
                "{release}"
            );
            assert_eq!(
                unknown_in(release, Kind::CronJob, cron.clone()),
                [cron_unknown],
                "{release}"
            );
        }
    }

    /// Fields a release has that k8s-openapi's 1.37 types do not are known there, and fields
    /// added later are unknown before: `workloadRef` was a pod spec field in 1.35 only (replaced
    /// by `schedulingGroup` in 1.36), `hostnameOverride` came in 1.34.
    #[test]
    fn the_pod_spec_fields_of_each_release_follow_its_own_types() {
        let job =
            |field: &str| job_spec(json!({"template": {"spec": {field: {}, "containers": []}}}));
        let releases_knowing = |field: &str| -> Vec<String> {
            KubernetesVersion::all()
                .filter(|r| unknown_in(*r, Kind::Job, job(field)).is_empty())
                .map(|r| r.to_string())
                .collect()
        };
        assert_eq!(releases_knowing("workloadRef"), ["1.35"]);
        assert_eq!(
            releases_knowing("schedulingGroup"),
            ["1.36", "1.37", "1.38"]
        );
        assert_eq!(
            unknown_in(KubernetesVersion::V1_34, Kind::Job, job("workloadRef")),
            ["spec.template.spec.workloadRef"]
        );
        let hostname = job_spec(json!({"template": {"spec": {"hostnameOverride": "h"}}}));
        assert_eq!(
            unknown_in(KubernetesVersion::V1_33, Kind::Job, hostname.clone()),
            ["spec.template.spec.hostnameOverride"]
        );
        assert!(unknown_in(KubernetesVersion::V1_34, Kind::Job, hostname).is_empty());
    }

    #[test]
    fn the_fields_of_a_newer_release_may_be_incomplete() {
        let v = |s: &str| KubernetesVersion::parse(s).unwrap();
        for read in KubernetesVersion::all() {
            assert_eq!(fields_may_be_incomplete(read), None, "{read}");
        }
        assert_eq!(
            fields_may_be_incomplete(v("1.39")).as_deref(),
            Some(
                "Kubernetes 1.39 is newer than the releases whose fields jobgate read (the newest, \
                 1.38, from k8s.io/api v0.38.0-beta.0)"
            )
        );
        // A newer release is walked with the newest fields read.
        let scheduling = job_spec(json!({"scheduling": {}}));
        assert!(unknown_in(v("1.39"), Kind::Job, scheduling).is_empty());
    }

    /// `known_fields.rs` is generated by `tests/apifields/generate.sh`, which builds
    /// `tests/apifields/main.go` against each release's k8s.io/api (the tags in
    /// `RELEASES_READ`) and lists every JSON field of every struct a Job and a CronJob hold, as
    /// Go's reflection sees them. Its 1.37 column must be what k8s-openapi's `v1_37` types name:
    /// the same struct names, present where it says 1.37 has the field, absent where not.
    #[test]
    fn the_generated_field_table_agrees_with_k8s_openapi_1_37() {
        let structs = openapi::structs();
        assert!(structs.contains_key("PodSpec") && structs.contains_key("JobSpec"));
        assert_eq!(
            known_fields::RELEASES_READ.first().map(|r| r.0),
            Some(KubernetesVersion::OLDEST.minor())
        );
        assert_eq!(
            known_fields::RELEASES_READ.last().map(|r| r.0),
            Some(KubernetesVersion::NEWEST.minor())
        );
        for &(name, field, first, last) in known_fields::VARYING_FIELDS {
            let fields = structs
                .get(name)
                .unwrap_or_else(|| panic!("{name} is not a struct k8s-openapi reaches"));
            assert!(first <= last, "{name}.{field}");
            assert_eq!(
                fields.contains(&field),
                (first..=last).contains(&37),
                "{name}.{field} ({first}..={last}) against k8s-openapi v1_37"
            );
        }
    }

    /// Every struct k8s-openapi's types reach from a Job and a CronJob, with the fields each
    /// names, found by deserializing them from a source that offers every field at every depth.
    mod openapi {
        use std::cell::RefCell;
        use std::collections::BTreeMap;

        use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

        type Structs = BTreeMap<&'static str, &'static [&'static str]>;

        /// From what `unknown_fields` walks: a Job's and a CronJob's metadata, spec and status.
        pub(super) fn structs() -> Structs {
            use k8s_openapi::api::batch::v1 as batch;
            use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
            let found = RefCell::new(Structs::new());
            let src = Everything(&found);
            ObjectMeta::deserialize(src).expect("ObjectMeta");
            batch::JobSpec::deserialize(src).expect("JobSpec");
            batch::JobStatus::deserialize(src).expect("JobStatus");
            batch::CronJobSpec::deserialize(src).expect("CronJobSpec");
            batch::CronJobStatus::deserialize(src).expect("CronJobStatus");
            found.into_inner()
        }

        use serde::Deserialize;

        /// The walk's own error: nothing here fails but a type that refuses every value.
        type Error = super::super::WalkError;

        #[derive(Clone, Copy)]
        struct Everything<'f>(&'f RefCell<Structs>);

        struct Fields<'f> {
            src: Everything<'f>,
            keys: std::slice::Iter<'static, &'static str>,
        }

        impl<'de> MapAccess<'de> for Fields<'_> {
            type Error = Error;

            fn next_key_seed<K: DeserializeSeed<'de>>(
                &mut self,
                seed: K,
            ) -> Result<Option<K::Value>, Error> {
                match self.keys.next() {
                    Some(k) => seed
                        .deserialize(de::value::StrDeserializer::<Error>::new(k))
                        .map(Some),
                    None => Ok(None),
                }
            }

            fn next_value_seed<V: DeserializeSeed<'de>>(
                &mut self,
                seed: V,
            ) -> Result<V::Value, Error> {
                seed.deserialize(self.src)
            }
        }

        /// One element (a list) or one entry (a map).
        struct One<'f>(Option<Everything<'f>>, bool);

        impl<'de> SeqAccess<'de> for One<'_> {
            type Error = Error;

            fn next_element_seed<T: DeserializeSeed<'de>>(
                &mut self,
                seed: T,
            ) -> Result<Option<T::Value>, Error> {
                self.0.take().map(|src| seed.deserialize(src)).transpose()
            }
        }

        impl<'de> MapAccess<'de> for One<'_> {
            type Error = Error;

            fn next_key_seed<K: DeserializeSeed<'de>>(
                &mut self,
                seed: K,
            ) -> Result<Option<K::Value>, Error> {
                if self.1 {
                    return Ok(None);
                }
                self.1 = true;
                seed.deserialize(de::value::StrDeserializer::<Error>::new("k"))
                    .map(Some)
            }

            fn next_value_seed<V: DeserializeSeed<'de>>(
                &mut self,
                seed: V,
            ) -> Result<V::Value, Error> {
                let src = self
                    .0
                    .take()
                    .ok_or_else(|| <Error as de::Error>::custom("no value"))?;
                seed.deserialize(src)
            }
        }

        impl<'de> Deserializer<'de> for Everything<'_> {
            type Error = Error;

            fn deserialize_struct<V: Visitor<'de>>(
                self,
                name: &'static str,
                fields: &'static [&'static str],
                visitor: V,
            ) -> Result<V::Value, Error> {
                if let Some(other) = self.0.borrow_mut().insert(name, fields) {
                    // The table keys structs by name: one name, one struct.
                    assert_eq!(other, fields, "two structs named {name}");
                }
                visitor.visit_map(Fields {
                    src: self,
                    keys: fields.iter(),
                })
            }

            fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.visit_some(self)
            }

            fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.visit_seq(One(Some(self), false))
            }

            fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.visit_map(One(Some(self), false))
            }

            fn deserialize_newtype_struct<V: Visitor<'de>>(
                self,
                _name: &'static str,
                visitor: V,
            ) -> Result<V::Value, Error> {
                visitor.visit_newtype_struct(self)
            }

            /// A timestamp every time type takes; any string is a valid string or quantity.
            fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.visit_borrowed_str("2026-12-16T00:00:00Z")
            }

            fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.visit_bool(false)
            }

            fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.visit_i64(0)
            }

            fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.visit_i64(0)
            }

            fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                visitor.visit_f64(0.0)
            }

            serde::forward_to_deserialize_any! {
                i8 i16 i128 u8 u16 u32 u64 u128 f32 char str string bytes byte_buf unit
                unit_struct tuple tuple_struct enum identifier ignored_any
            }
        }
    }

    #[test]
    fn typos_are_unknown_fields_with_sigs_k8s_io_json_paths() {
        let doc = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "labelz": {}},
            "spec": {
                "backofLimit": 3,
                "podFailurePolicy": {"rule": []},
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "a", "image": "x", "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}},
                        {"name": "b", "imagePullPolcy": "Always", "ports": [{"containerPort": "80"}]}
                    ]
                }}
            },
            "extra": true
        });
        // In key order (a parsed document keeps its keys sorted).
        assert_eq!(
            unknown(Kind::Job, doc),
            [
                "extra",
                "metadata.labelz",
                "spec.backofLimit",
                "spec.podFailurePolicy.rule",
                "spec.template.spec.containers[1].imagePullPolcy",
            ]
        );
    }

    #[test]
    fn a_correct_job_and_cron_job_have_none() {
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "creationTimestamp": null, "annotations": {"a": "b"}},
            "spec": {"backoffLimit": 3, "podReplacementPolicy": "Failed",
                "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                "template": {"metadata": {"labels": {"x": "y"}}, "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "a", "image": "x", "env": [{"name": "A", "value": "1"}],
                        "livenessProbe": {"httpGet": {"port": 8080, "path": "/"}}}]}}},
            "status": {"active": 1}
        });
        assert_eq!(unknown(Kind::Job, job), Vec::<String>::new());
        let cron = json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "n"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"metadata": {"annotations": {}},
                "spec": {"template": {"spec": {"containers": [{"name": "a"}]}}, "backofLimit": 1}}}
        });
        assert_eq!(
            unknown(Kind::CronJob, cron),
            ["spec.jobTemplate.spec.backofLimit"]
        );
    }
}
