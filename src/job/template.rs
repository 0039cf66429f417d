//! What kube-apiserver's `spec.template` immutability check compares, read in one streaming pass
//! with memory bounded by the nesting depth, not by the template's size.
//!
//! `validatePodTemplateUpdate` (pkg/apis/batch/validation/validation.go) compares the old and new
//! templates with `apiequality.Semantic.DeepEqual`, after clearing, when the Job's state allows it
//! (`version.rs`), the scheduling directives (node affinity, node selector, tolerations, labels,
//! annotations, scheduling gates); with KEP-5440's `AllowMutablePodResources` it compares only the
//! pod specs, with the containers' new `resources` copied into the old ones
//! (`validatePodResourceUpdatesOnly`). Holding both templates as JSON trees costs up to ~30 bytes
//! per input byte (a dense `[1,1,...]` array), so a 7 MB review would take hundreds of megabytes;
//! instead each template is reduced to four 128-bit digests (as is, without the scheduling
//! directives, and its pod spec without the containers' `resources`, with and without the
//! scheduling directives), computed together in one pass (`one_pass.rs`), whose equality is
//! that comparison's:
//! - absent, `null` and `[]` members are the same (Go's nil pointer and nil slice);
//! - `{}` is absent where Go holds a map or a struct value, and every `resource.Quantity` is
//!   hashed by its value (`1Gi` is `1073741824`), as `schema.rs` and `quantity.rs` say;
//! - objects compare as sets of members (key order does not matter), arrays in order;
//! - `-0` is `0` (Go reads `-0` into an integer field as 0).
//!
//! The digests are keyed with random per-process keys (SipHash, `std::hash::RandomState`), so no
//! input can be crafted to collide with another.
//!
//! A template that cannot be read (a number out of range such as `1e400`, an unpaired surrogate,
//! nesting past 128 levels, a repeated key) is `Unreadable`: the rule must not pass silently.
//! A quantity kube-apiserver could not parse (`1x`) never reaches a webhook (the object fails to
//! decode); here it is compared by its text, which is never stricter than the apiserver.
//! `jobgate check` refuses such a manifest as the decoder does (`quantity::parse_error`).

mod digest;
mod one_pass;
pub(crate) mod quantity;
mod schema;

use serde::de::DeserializeSeed;

#[cfg(test)]
use digest::{Mode, Pos, Seed};
use one_pass::{Multi, MultiSeed};
use quantity::Parser;

use crate::job::version::KubernetesVersion;

/// A template as the immutability check sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WholeTemplate {
    Read {
        plain: u128,
        stripped: u128,
        pod_spec: u128,
        pod_spec_stripped: u128,
    },
    /// Why the template could not be read.
    Unreadable(String),
}

impl WholeTemplate {
    /// From the JSON text of `spec.template` (`null` when absent), in one pass, with quantities
    /// read as `release` reads them.
    pub(crate) fn from_json(text: &str, release: KubernetesVersion) -> WholeTemplate {
        let mut de = serde_json::Deserializer::from_str(text);
        let digests = MultiSeed(Multi::root(Parser::of(release)))
            .deserialize(&mut de)
            .and_then(|d| de.end().map(|()| d));
        WholeTemplate::from_one_pass(digests)
    }

    /// From an already parsed template (`jobgate check`), in one pass.
    pub(crate) fn from_value(
        value: &serde_json::Value,
        release: KubernetesVersion,
    ) -> WholeTemplate {
        WholeTemplate::from_one_pass(MultiSeed(Multi::root(Parser::of(release))).deserialize(value))
    }

    #[cfg(test)]
    fn from_json_1_37(text: &str) -> WholeTemplate {
        WholeTemplate::from_json(text, KubernetesVersion::V1_37)
    }

    #[cfg(test)]
    fn from_value_1_37(value: &serde_json::Value) -> WholeTemplate {
        WholeTemplate::from_value(value, KubernetesVersion::V1_37)
    }

    fn from_one_pass(digests: Result<one_pass::Digests, serde_json::Error>) -> WholeTemplate {
        match digests {
            Ok(
                [
                    Some(plain),
                    Some(stripped),
                    Some(pod_spec),
                    Some(pod_spec_stripped),
                ],
            ) => WholeTemplate::Read {
                plain: plain.hash,
                stripped: stripped.hash,
                pod_spec: pod_spec.hash,
                pod_spec_stripped: pod_spec_stripped.hash,
            },
            // The root is kept by every comparison, so each has a digest.
            Ok(_) => WholeTemplate::Unreadable("a comparison left the template out".into()),
            Err(e) => WholeTemplate::Unreadable(e.to_string()),
        }
    }

    /// The four digests in four passes, one comparison each: the one-pass reading's oracle.
    #[cfg(test)]
    fn four_passes(text: &str) -> WholeTemplate {
        let digest = |mode| {
            let mut de = serde_json::Deserializer::from_str(text);
            let d = Seed(Pos::root(mode, Parser::UpTo1_37)).deserialize(&mut de)?;
            de.end()?;
            Ok::<_, serde_json::Error>(d.hash)
        };
        WholeTemplate::from_digests(digest)
            .unwrap_or_else(|e| WholeTemplate::Unreadable(e.to_string()))
    }

    #[cfg(test)]
    fn from_digests<E>(digest: impl Fn(Mode) -> Result<u128, E>) -> Result<WholeTemplate, E> {
        Ok(WholeTemplate::Read {
            plain: digest(Mode::Plain)?,
            stripped: digest(Mode::Template)?,
            pod_spec: digest(Mode::PodSpecOnly { scheduling: true })?,
            pod_spec_stripped: digest(Mode::PodSpecOnly { scheduling: false })?,
        })
    }

    /// Whether `self` (new) differs from `old` as `compare` says. `Err` names why one of them
    /// cannot be compared.
    pub(crate) fn differs(&self, old: &WholeTemplate, compare: Compare) -> Result<bool, String> {
        let pick = |t: &WholeTemplate| match (t, compare) {
            (WholeTemplate::Unreadable(e), _) => Err(e.clone()),
            (
                WholeTemplate::Read { plain, .. },
                Compare::Template {
                    without_scheduling: false,
                },
            ) => Ok(*plain),
            (
                WholeTemplate::Read { stripped, .. },
                Compare::Template {
                    without_scheduling: true,
                },
            ) => Ok(*stripped),
            (
                WholeTemplate::Read { pod_spec, .. },
                Compare::PodSpecWithoutResources {
                    without_scheduling: false,
                },
            ) => Ok(*pod_spec),
            (
                WholeTemplate::Read {
                    pod_spec_stripped, ..
                },
                Compare::PodSpecWithoutResources {
                    without_scheduling: true,
                },
            ) => Ok(*pod_spec_stripped),
        };
        let new = pick(self)?;
        let old = pick(old).map_err(|e| format!("oldObject: {e}"))?;
        Ok(new != old)
    }
}

/// What the immutability check compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compare {
    /// The whole templates, optionally without the scheduling directives.
    Template { without_scheduling: bool },
    /// Only the pod specs, without the containers' and init containers' `resources`
    /// (`validatePodResourceUpdatesOnly`: it copies the new resources into the old spec where a
    /// container list has the same length and a container the same name at the same index; where
    /// they do not, the specs differ anyway), optionally without the scheduling directives.
    PodSpecWithoutResources { without_scheduling: bool },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn differs(new: &str, old: &str, without_scheduling: bool) -> Result<bool, String> {
        WholeTemplate::from_json_1_37(new).differs(
            &WholeTemplate::from_json_1_37(old),
            Compare::Template { without_scheduling },
        )
    }

    fn pod_specs_differ(new: &str, old: &str, without_scheduling: bool) -> Result<bool, String> {
        WholeTemplate::from_json_1_37(new).differs(
            &WholeTemplate::from_json_1_37(old),
            Compare::PodSpecWithoutResources { without_scheduling },
        )
    }

    /// `validatePodResourceUpdatesOnly`: container and init-container `resources` may differ;
    /// the rest of the pod spec may not; the template's metadata is not compared.
    #[test]
    fn pod_specs_without_resources_ignore_resources_and_metadata_only() {
        let old = r#"{"metadata":{"labels":{"a":"1"}},"spec":{"nodeSelector":{"x":"y"},"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"1"}}}],"initContainers":[{"name":"init"}]}}"#;
        let resized = r#"{"metadata":{"labels":{"a":"2"}},"spec":{"nodeSelector":{"x":"y"},"containers":[{"name":"c","image":"i","resources":{"limits":{"nvidia.com/gpu":"2"}}}],"initContainers":[{"name":"init","resources":{"requests":{"memory":"1Gi"}}}]}}"#;
        assert_eq!(pod_specs_differ(resized, old, false), Ok(false));
        assert_eq!(differs(resized, old, false), Ok(true));
        let image = r#"{"spec":{"nodeSelector":{"x":"y"},"containers":[{"name":"c","image":"j"}],"initContainers":[{"name":"init"}]}}"#;
        assert_eq!(pod_specs_differ(image, old, false), Ok(true));
        let renamed = r#"{"spec":{"nodeSelector":{"x":"y"},"containers":[{"name":"d","image":"i"}],"initContainers":[{"name":"init"}]}}"#;
        assert_eq!(pod_specs_differ(renamed, old, false), Ok(true));
        let added = r#"{"spec":{"nodeSelector":{"x":"y"},"containers":[{"name":"c","image":"i"},{"name":"e"}],"initContainers":[{"name":"init"}]}}"#;
        assert_eq!(pod_specs_differ(added, old, false), Ok(true));
        // Scheduling directives: only when they are mutable too.
        let moved = r#"{"spec":{"nodeSelector":{"x":"z"},"containers":[{"name":"c","image":"i"}],"initContainers":[{"name":"init"}]}}"#;
        assert_eq!(pod_specs_differ(moved, old, false), Ok(true));
        assert_eq!(pod_specs_differ(moved, old, true), Ok(false));
        // Pod-level `spec.resources` is not a container's: it stays immutable.
        let pod_level = r#"{"spec":{"nodeSelector":{"x":"y"},"resources":{"requests":{"cpu":"2"}},"containers":[{"name":"c","image":"i"}],"initContainers":[{"name":"init"}]}}"#;
        assert_eq!(pod_specs_differ(pod_level, old, false), Ok(true));
    }

    #[test]
    fn semantic_deep_equal_ignores_key_order_and_treats_null_and_empty_lists_as_absent() {
        let a = r#"{"metadata":{"labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i"}],"volumes":[]}}"#;
        let b = r#"{"spec":{"volumes":null,"containers":[{"image":"i","name":"c"}]},"metadata":{"labels":{"a":"1"}}}"#;
        assert_eq!(differs(a, b, false), Ok(false));
        let c =
            r#"{"spec":{"containers":[{"image":"j","name":"c"}]},"metadata":{"labels":{"a":"1"}}}"#;
        assert_eq!(differs(a, c, false), Ok(true));
        // Order inside arrays matters.
        assert_eq!(differs("[1,2]", "[2,1]", false), Ok(true));
        // `-0` is Go's 0.
        assert_eq!(differs(r#"{"x":-0}"#, r#"{"x":0}"#, false), Ok(false));
        assert_eq!(differs("null", "null", false), Ok(false));
    }

    #[test]
    fn a_suspended_never_started_job_may_change_scheduling_directives_only() {
        let old = r#"{"metadata":{"labels":{"a":"1"}},"spec":{"nodeSelector":{"x":"y"},"affinity":{"nodeAffinity":{}},"containers":[{"name":"c"}]}}"#;
        let new = r#"{"metadata":{"annotations":{"b":"2"}},"spec":{"tolerations":[{"key":"k"}],"schedulingGates":[{"name":"g"}],"containers":[{"name":"c"}]}}"#;
        assert_eq!(differs(new, old, true), Ok(false));
        assert_eq!(differs(new, old, false), Ok(true));
        let image = r#"{"spec":{"containers":[{"name":"d"}]}}"#;
        assert_eq!(differs(image, old, true), Ok(true));
        // `metadata: {}` is Go's zero `ObjectMeta` (a struct value), stripped or not.
        assert_eq!(
            differs(r#"{"metadata":{},"spec":{}}"#, r#"{"spec":{}}"#, true),
            Ok(false)
        );
        assert_eq!(
            differs(r#"{"metadata":{},"spec":{}}"#, r#"{"spec":{}}"#, false),
            Ok(false)
        );
    }

    /// Every `resource.Quantity` position of a PodTemplateSpec (`schema.rs`), with `Q` where
    /// the quantity goes.
    const QUANTITY_FIELDS: [(&str, &str); 13] = [
        (
            "containers[].resources.limits",
            r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{"memory":Q}}}]}}"#,
        ),
        (
            "containers[].resources.requests",
            r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":Q}}}]}}"#,
        ),
        (
            "initContainers[].resources.requests",
            r#"{"spec":{"initContainers":[{"name":"i","resources":{"requests":{"memory":Q}}}],"containers":[{"name":"c"}]}}"#,
        ),
        (
            "ephemeralContainers[].resources.limits",
            r#"{"spec":{"ephemeralContainers":[{"name":"e","resources":{"limits":{"memory":Q}}}],"containers":[{"name":"c"}]}}"#,
        ),
        (
            "resources.limits (pod-level)",
            r#"{"spec":{"resources":{"limits":{"memory":Q}},"containers":[{"name":"c"}]}}"#,
        ),
        (
            "resources.requests (pod-level)",
            r#"{"spec":{"resources":{"requests":{"cpu":Q}},"containers":[{"name":"c"}]}}"#,
        ),
        (
            "overhead",
            r#"{"spec":{"overhead":{"memory":Q},"containers":[{"name":"c"}]}}"#,
        ),
        (
            "volumes[].emptyDir.sizeLimit",
            r#"{"spec":{"volumes":[{"name":"v","emptyDir":{"medium":"Memory","sizeLimit":Q}}],"containers":[{"name":"c"}]}}"#,
        ),
        (
            "volumes[].ephemeral.volumeClaimTemplate.spec.resources.requests",
            r#"{"spec":{"volumes":[{"name":"v","ephemeral":{"volumeClaimTemplate":{"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":Q}}}}}}],"containers":[{"name":"c"}]}}"#,
        ),
        (
            "volumes[].ephemeral.volumeClaimTemplate.spec.resources.limits",
            r#"{"spec":{"volumes":[{"name":"v","ephemeral":{"volumeClaimTemplate":{"spec":{"resources":{"limits":{"storage":Q}}}}}}],"containers":[{"name":"c"}]}}"#,
        ),
        (
            "containers[].env[].valueFrom.resourceFieldRef.divisor",
            r#"{"spec":{"containers":[{"name":"c","env":[{"name":"M","valueFrom":{"resourceFieldRef":{"resource":"limits.memory","divisor":Q}}}]}]}}"#,
        ),
        (
            "volumes[].downwardAPI.items[].resourceFieldRef.divisor",
            r#"{"spec":{"volumes":[{"name":"v","downwardAPI":{"items":[{"path":"m","resourceFieldRef":{"containerName":"c","resource":"limits.memory","divisor":Q}}]}}],"containers":[{"name":"c"}]}}"#,
        ),
        (
            "volumes[].projected.sources[].downwardAPI.items[].resourceFieldRef.divisor",
            r#"{"spec":{"volumes":[{"name":"v","projected":{"sources":[{"downwardAPI":{"items":[{"path":"m","resourceFieldRef":{"containerName":"c","resource":"limits.memory","divisor":Q}}]}}]}}],"containers":[{"name":"c"}]}}"#,
        ),
    ];

    /// Both ways in: the AdmissionReview's text (`/validate`) and a parsed document (`check`).
    fn quantity_fields_differ(field: &str, new: &str, old: &str, compare: Compare) -> bool {
        let (new, old) = (field.replace('Q', new), field.replace('Q', old));
        let by_text = WholeTemplate::from_json_1_37(&new)
            .differs(&WholeTemplate::from_json_1_37(&old), compare);
        let value = |t: &str| WholeTemplate::from_value_1_37(&serde_json::from_str(t).unwrap());
        let by_value = value(&new).differs(&value(&old), compare);
        assert_eq!(by_text, by_value, "{new} / {old}");
        by_text.unwrap()
    }

    /// `apiequality.Semantic`: `func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }`.
    /// kube-apiserver re-encodes each quantity in its own format (`1Gi` stays BinarySI,
    /// `1073741824` DecimalSI, `1e9` DecimalExponent), so a re-applied Job's `object` and
    /// `oldObject` can spell one value two ways.
    /// apimachinery v0.38.0-beta.0 keeps 29 significant digits of a quantity and rounds the rest
    /// away from zero (`decFromDigits`), so from 1.38 two limits that differ only past the 29th
    /// digit are the same value to `apiequality.Semantic.DeepEqual`; to 1.37 they differ.
    #[test]
    fn quantities_compare_as_the_clusters_release_parses_them() {
        let template = |cpu: &str| {
            format!(
                r#"{{"spec":{{"containers":[{{"name":"c","resources":{{"limits":{{"cpu":"{cpu}"}}}}}}]}}}}"#
            )
        };
        let (a, b) = (
            template("1234567890123456789012345678901"),
            template("1234567890123456789012345678902"),
        );
        let compare = Compare::Template {
            without_scheduling: false,
        };
        for (release, differ) in [
            (KubernetesVersion::V1_37, true),
            (KubernetesVersion::V1_38, false),
        ] {
            let new = WholeTemplate::from_json(&a, release);
            let old = WholeTemplate::from_json(&b, release);
            assert_eq!(new.differs(&old, compare), Ok(differ), "{release}");
            let value = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
            let new = WholeTemplate::from_value(&value(&a), release);
            let old = WholeTemplate::from_value(&value(&b), release);
            assert_eq!(new.differs(&old, compare), Ok(differ), "{release}");
        }
    }

    #[test]
    fn quantities_compare_by_value_in_every_quantity_field_of_the_template() {
        let same = [
            (r#""1Gi""#, r#""1073741824""#),
            (r#""1Gi""#, r#""1024Mi""#),
            (r#""1Gi""#, "1073741824"),
            (r#""1G""#, r#""1e9""#),
            (r#""1G""#, "1e9"),
            (r#""1G""#, r#""1000M""#),
            (r#""500m""#, r#""0.5""#),
            (r#""500m""#, "0.5"),
            (r#""1""#, r#""1.0""#),
            (r#""1""#, "1"),
            (r#""2""#, r#"" 2 ""#),
        ];
        let different = [
            (r#""1Gi""#, r#""1G""#),
            (r#""500m""#, r#""0.6""#),
            (r#""1""#, r#""2""#),
            (r#""1Gi""#, "1000000000"),
        ];
        for (name, field) in QUANTITY_FIELDS {
            for without_scheduling in [false, true] {
                let compare = Compare::Template { without_scheduling };
                for (a, b) in same {
                    assert!(
                        !quantity_fields_differ(field, a, b, compare),
                        "{name}: {a} == {b}"
                    );
                }
                for (a, b) in different {
                    assert!(
                        quantity_fields_differ(field, a, b, compare),
                        "{name}: {a} != {b}"
                    );
                }
            }
        }
    }

    /// `validatePodResourceUpdatesOnly` ignores container resources, but compares the rest of
    /// the pod spec, quantities included, with Semantic.DeepEqual.
    #[test]
    fn pod_specs_without_resources_compare_the_other_quantities_by_value() {
        for (name, field) in QUANTITY_FIELDS {
            // Ephemeral containers' resources are not copied over: they stay compared.
            let container_resources = name.starts_with("containers[].resources")
                || name.starts_with("initContainers[].resources");
            for without_scheduling in [false, true] {
                let compare = Compare::PodSpecWithoutResources { without_scheduling };
                assert!(!quantity_fields_differ(
                    field,
                    r#""1Gi""#,
                    r#""1073741824""#,
                    compare
                ));
                assert_eq!(
                    quantity_fields_differ(field, r#""1Gi""#, r#""1G""#, compare),
                    !container_resources,
                    "{name}"
                );
            }
        }
    }

    /// A quantity kube-apiserver cannot parse never reaches a webhook; compared by its text.
    #[test]
    fn a_value_that_is_not_a_quantity_compares_as_text() {
        let compare = Compare::Template {
            without_scheduling: false,
        };
        let field = QUANTITY_FIELDS[0].1;
        assert!(!quantity_fields_differ(
            field, r#""1x""#, r#""1x""#, compare
        ));
        assert!(quantity_fields_differ(field, r#""1x""#, r#""1""#, compare));
        assert!(quantity_fields_differ(field, r#""1x""#, r#""1y""#, compare));
    }

    /// Go's zero values where the type says so: a `null` map value is kept (the zero quantity,
    /// `""`), a nil `*Quantity` is absent, a zero `Quantity` value is its zero value.
    #[test]
    fn null_and_absent_quantities_as_go_decodes_them() {
        let t = Compare::Template {
            without_scheduling: false,
        };
        let limits = QUANTITY_FIELDS[0].1;
        assert!(!quantity_fields_differ(limits, "null", r#""0""#, t));
        assert!(quantity_fields_differ(limits, "null", r#""1""#, t));
        let no_limits = r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{}}}]}}"#;
        assert_eq!(
            differs(&limits.replace('Q', "null"), no_limits, false),
            Ok(true)
        );
        let size_limit = QUANTITY_FIELDS[7].1;
        assert!(!quantity_fields_differ(size_limit, "null", "[]", t));
        assert!(quantity_fields_differ(size_limit, "null", r#""0""#, t));
        let divisor = QUANTITY_FIELDS[10].1;
        assert!(!quantity_fields_differ(divisor, "null", r#""0""#, t));
        assert!(!quantity_fields_differ(divisor, "null", r#""0Mi""#, t));
        assert!(quantity_fields_differ(divisor, "null", r#""1Mi""#, t));
        let no_divisor = r#"{"spec":{"containers":[{"name":"c","env":[{"name":"M","valueFrom":{"resourceFieldRef":{"resource":"limits.memory"}}}]}]}}"#;
        assert_eq!(
            differs(&divisor.replace('Q', r#""0""#), no_divisor, false),
            Ok(false)
        );
    }

    /// `Equalities.DeepEqual`: nil and empty maps are equal, and so are a struct value and its
    /// zero value; a nil pointer and a pointer to an empty struct are not.
    #[test]
    fn empty_maps_and_struct_values_are_absent_and_pointers_to_empty_structs_are_not() {
        let bare = r#"{"spec":{"containers":[{"name":"c"}]}}"#;
        for equal in [
            r#"{"metadata":{},"spec":{"containers":[{"name":"c"}]}}"#,
            r#"{"metadata":{"labels":{},"annotations":{}},"spec":{"containers":[{"name":"c"}]}}"#,
            r#"{"metadata":{"creationTimestamp":null},"spec":{"containers":[{"name":"c"}]}}"#,
            r#"{"spec":{"nodeSelector":{},"overhead":{},"containers":[{"name":"c"}]}}"#,
            r#"{"spec":{"containers":[{"name":"c","resources":{}}]}}"#,
            r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{},"requests":{}}}]}}"#,
            r#"{"spec":{"containers":[{"name":"c","env":[]}],"volumes":[]}}"#,
        ] {
            assert_eq!(differs(equal, bare, false), Ok(false), "{equal}");
        }
        for different in [
            r#"{"spec":{"securityContext":{},"containers":[{"name":"c"}]}}"#,
            r#"{"spec":{"resources":{},"containers":[{"name":"c"}]}}"#,
            r#"{"spec":{"affinity":{},"containers":[{"name":"c"}]}}"#,
            r#"{"spec":{"containers":[{"name":"c","securityContext":{}}]}}"#,
            r#"{"metadata":{"labels":{"a":null}},"spec":{"containers":[{"name":"c"}]}}"#,
        ] {
            assert_eq!(differs(different, bare, false), Ok(true), "{different}");
        }
        let empty_volume =
            r#"{"spec":{"volumes":[{"name":"v","emptyDir":{}}],"containers":[{"name":"c"}]}}"#;
        let no_source = r#"{"spec":{"volumes":[{"name":"v"}],"containers":[{"name":"c"}]}}"#;
        assert_eq!(differs(empty_volume, no_source, false), Ok(true));
        // A `null` label value is Go's `""`, and the key stays.
        assert_eq!(
            differs(
                r#"{"metadata":{"labels":{"a":null}}}"#,
                r#"{"metadata":{"labels":{"a":""}}}"#,
                false
            ),
            Ok(false)
        );
        // Matched labels of a selector are a map too.
        assert_eq!(
            differs(
                r#"{"spec":{"topologySpreadConstraints":[{"maxSkew":1,"labelSelector":{"matchLabels":{}}}]}}"#,
                r#"{"spec":{"topologySpreadConstraints":[{"maxSkew":1,"labelSelector":{}}]}}"#,
                false
            ),
            Ok(false)
        );
        // `null` and `{}` for the whole template: Go's zero `PodTemplateSpec`.
        assert_eq!(differs("{}", "null", false), Ok(false));
    }

    /// The one-pass reading gives each comparison the digest its own pass gives.
    #[test]
    fn one_pass_equals_four_passes() {
        let mut templates: Vec<String> = QUANTITY_FIELDS
            .iter()
            .flat_map(|(_, f)| [f.replace('Q', r#""1Gi""#), f.replace('Q', "null")])
            .collect();
        templates.extend(
            [
                "null",
                "{}",
                "[]",
                "1",
                r#""x""#,
                r#"{"metadata":{"labels":{"a":"1"},"annotations":{"b":"2"},"name":"n"},"spec":{"nodeSelector":{"x":"y"},"tolerations":[{"key":"k"}],"schedulingGates":[{"name":"g"}],"affinity":{"nodeAffinity":{"x":1},"podAffinity":{"y":2}},"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1"}}}],"initContainers":[{"name":"i","resources":{}}]}}"#,
                r#"{"metadata":{},"spec":{"affinity":{"nodeAffinity":{}},"containers":[]}}"#,
                r#"{"spec":null,"metadata":null}"#,
                r#"{"spec":{"containers":[null,{"name":"c"}],"x":[[1,2],{"a":[]}]}}"#,
            ]
            .map(str::to_string),
        );
        for t in &templates {
            assert_eq!(
                WholeTemplate::from_json_1_37(t),
                WholeTemplate::four_passes(t),
                "{t}"
            );
        }
        for bad in [r#"{"spec":{"x":1,"x":2}}"#, r#"{"metadata":{"a":1e400}}"#] {
            assert!(matches!(
                WholeTemplate::from_json_1_37(bad),
                WholeTemplate::Unreadable(_)
            ));
        }
    }

    proptest::proptest! {
        /// Any JSON a template can hold, with the keys the comparisons treat specially.
        #[test]
        fn one_pass_equals_four_passes_on_arbitrary_json(value in json_value()) {
            let text = value.to_string();
            proptest::prop_assert_eq!(
                WholeTemplate::from_json_1_37(&text),
                WholeTemplate::four_passes(&text)
            );
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let key = prop::sample::select(vec![
            "metadata",
            "spec",
            "labels",
            "annotations",
            "nodeSelector",
            "tolerations",
            "schedulingGates",
            "affinity",
            "nodeAffinity",
            "containers",
            "initContainers",
            "resources",
            "limits",
            "requests",
            "name",
            "x",
        ]);
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            prop::sample::select(vec!["1Gi", "1073741824", "500m", "0.5", "", "x"])
                .prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map(key.clone(), inner, 0..5).prop_map(|m| {
                    serde_json::Value::Object(
                        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                    )
                }),
            ]
        })
    }

    #[test]
    fn text_and_parsed_values_agree() {
        let text = r#"{"metadata":{"name":"n"},"spec":{"containers":[{"name":"c","args":["1",2,2.5,-3,true,null]}]}}"#;
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            WholeTemplate::from_json_1_37(text),
            WholeTemplate::from_value_1_37(&value)
        );
    }

    #[test]
    fn what_cannot_be_read_is_unreadable_not_equal() {
        for bad in [
            r#"{"x":1e400}"#,
            r#"{"x":"\ud800"}"#,
            r#"{"x":1,"x":1}"#,
            &format!("{}{}", "[".repeat(200), "]".repeat(200)),
        ] {
            assert!(
                matches!(
                    WholeTemplate::from_json_1_37(bad),
                    WholeTemplate::Unreadable(_)
                ),
                "{bad}"
            );
            assert!(differs(bad, bad, false).is_err(), "{bad}");
        }
    }
}
