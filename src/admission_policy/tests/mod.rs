//! The rendered objects, and the proof that they do what the webhook does (`differential`,
//! `expected_differences`, over `engine`).

use serde_json::{Value, json};

use super::install::FailurePolicy;
use super::*;
use crate::job::levels::Level;
use crate::job::levels::Policies;
use crate::job::levels::PolicyName;
use crate::job::version::Cluster;

mod corpus;
mod differential;
mod engine;
mod expected_differences;
/// Where `corpus` finds the objects it builds requests from (as a sibling module when
/// tests/cluster_admission_policies.rs includes both files).
use crate::job::mutate::strategies;

fn for_release(release: KubernetesVersion) -> Config {
    Config {
        cluster: Cluster::new(release),
        ..Config::default()
    }
}

fn kinds_and_names(rendered: &Rendered) -> Vec<(String, String)> {
    rendered
        .objects
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_string(),
                o["metadata"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_mutating_policy_and_a_validating_policy_per_policy_not_off_each_with_its_binding() {
    let mut config = Config::default();
    config
        .policies
        .set(PolicyName::RecoveryNeedsFailed, Level::Deny);
    let rendered = render(&config, &Install::default()).unwrap();
    let mut expected = Vec::new();
    for name in ["jobgate-mutate", "jobgate-mutate-recovery"] {
        expected.push(("MutatingAdmissionPolicy".to_string(), name.to_string()));
        expected.push((
            "MutatingAdmissionPolicyBinding".to_string(),
            name.to_string(),
        ));
    }
    for p in PolicyName::ALL {
        if config.policies.level(p) != Level::Off {
            expected.push((
                "ValidatingAdmissionPolicy".to_string(),
                format!("jobgate-{p}"),
            ));
            expected.push((
                "ValidatingAdmissionPolicyBinding".to_string(),
                format!("jobgate-{p}"),
            ));
        }
    }
    assert_eq!(kinds_and_names(&rendered), expected);
    // indexed-terminating-or-failed is off by default: no policy, no binding.
    assert!(!expected.iter().any(|(_, n)| n.contains("indexed")));
    let actions: Vec<(&str, &Value)> = rendered
        .objects
        .iter()
        .filter(|o| o["kind"] == "ValidatingAdmissionPolicyBinding")
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap(),
                &o["spec"]["validationActions"],
            )
        })
        .collect();
    assert_eq!(
        actions,
        vec![
            ("jobgate-recovery-annotation-value", &json!(["Deny"])),
            ("jobgate-recovery-annotation-on-job", &json!(["Warn"])),
            ("jobgate-recovery-needs-failed", &json!(["Deny"])),
            ("jobgate-recovery-counts-toward-backoff", &json!(["Warn"])),
        ]
    );
    let map = &rendered.objects[0]["spec"];
    assert_eq!(map["failurePolicy"], "Ignore");
    assert_eq!(map["reinvocationPolicy"], "IfNeeded");
    assert_eq!(map["mutations"][0]["patchType"], "JSONPatch");
    assert_eq!(
        rendered.objects[1]["spec"],
        json!({"policyName": "jobgate-mutate"})
    );
}

#[test]
fn every_policy_off_renders_the_mutating_policies_alone() {
    let config = Config {
        policies: Policies::all(Level::Off),
        ..Config::default()
    };
    let rendered = render(&config, &Install::default()).unwrap();
    assert_eq!(rendered.objects.len(), 4);
}

/// As the webhook configuration's two webhooks (`/mutate`, `/mutate/recovery`): the namespace
/// opt-in label splits the namespaces between the two mutating policies.
#[test]
fn the_mutating_policies_split_the_namespaces_by_the_opt_in_label_as_the_webhooks_do() {
    let rendered = render(&Config::default(), &Install::default()).unwrap();
    let label = |name: &str| {
        let policy = rendered
            .objects
            .iter()
            .find(|o| o["kind"] == "MutatingAdmissionPolicy" && o["metadata"]["name"] == name)
            .unwrap();
        policy["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][1].clone()
    };
    assert_eq!(
        label("jobgate-mutate"),
        json!({"key": "jobgate.dev/failure-recovery", "operator": "NotIn", "values": ["enabled"]})
    );
    assert_eq!(
        label("jobgate-mutate-recovery"),
        json!({"key": "jobgate.dev/failure-recovery", "operator": "In", "values": ["enabled"]})
    );
}

/// kube-apiserver refuses a match condition that names `variables` ("undeclared reference") and
/// binds `namespaceObject` to null there (k8s.io/apiserver `admission/plugin/webhook/
/// matchconditions/matcher.go` passes no namespace).
#[test]
fn match_conditions_read_neither_variables_nor_the_namespace() {
    let config = Config {
        policies: Policies::all(Level::Warn),
        ..Config::default()
    };
    let rendered = render(&config, &Install::default()).unwrap();
    for object in &rendered.objects {
        for condition in object["spec"]["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let expression = condition["expression"].as_str().unwrap();
            assert!(
                !expression.contains("variables.") && !expression.contains("namespaceObject"),
                "{}: {expression}",
                object["metadata"]["name"]
            );
        }
    }
}

/// No `Object{...}` initializer in a patch (kubernetes#142181): values are map literals.
#[test]
fn patch_values_are_map_literals_never_object_initializers() {
    let config = Config {
        recovery_annotation_keys: vec!["a/b".into(), "c~d".into()],
        ..Config::default()
    };
    let rendered = render(&config, &Install::default()).unwrap();
    let patch = rendered.objects[0]["spec"]["mutations"][0]["jsonPatch"]["expression"]
        .as_str()
        .unwrap();
    assert!(
        !patch.contains("Object{") && !patch.contains("Object."),
        "{patch}"
    );
    assert!(
        patch.contains(r#"{"a/b": "true", "c~d": "true"}"#),
        "{patch}"
    );
}

#[test]
fn v1beta1_with_the_apiserver_flags_named_for_1_34_and_1_35_v1_from_1_36() {
    for release in KubernetesVersion::all() {
        let result = render(&for_release(release), &Install::default());
        if release < KubernetesVersion::V1_34 {
            let error = result.unwrap_err();
            assert_eq!(error, RenderError::NoMutatingAdmissionPolicy(release));
            assert!(error.to_string().contains("v1alpha1"), "{error}");
            continue;
        }
        let rendered = result.unwrap();
        let yaml = rendered.to_yaml();
        let mutating = if release >= KubernetesVersion::V1_36 {
            "admissionregistration.k8s.io/v1"
        } else {
            "admissionregistration.k8s.io/v1beta1"
        };
        for object in &rendered.objects {
            let expected = if object["kind"].as_str().unwrap().starts_with("Mutating") {
                mutating
            } else {
                "admissionregistration.k8s.io/v1"
            };
            assert_eq!(object["apiVersion"], expected, "{release}");
        }
        let flags = "--feature-gates=MutatingAdmissionPolicy=true";
        let runtime = "--runtime-config=admissionregistration.k8s.io/v1beta1=true";
        let beta = release < KubernetesVersion::V1_36;
        assert_eq!(
            yaml.contains(flags) && yaml.contains(runtime),
            beta,
            "{release}"
        );
        assert!(!yaml.contains("v1alpha1"), "{release}");
    }
}

#[test]
fn the_header_says_what_the_policies_cannot_do() {
    let yaml = render(&Config::default(), &Install::default())
        .unwrap()
        .to_yaml();
    let header: Vec<&str> = yaml.lines().take_while(|l| l.starts_with('#')).collect();
    assert!(header.iter().all(|l| l.len() <= 100), "{header:#?}");
    let header = header.join("\n");
    for words in [
        "Warn about a mutation",
        "Word messages exactly",
        "Give every cause of a denial",
        "  recovery-annotation-value=deny",
        "Never in: kube-system, jobgate-system",
    ] {
        assert!(header.contains(words), "{words}:\n{header}");
    }
}

#[test]
fn names_namespaces_and_the_failure_policy_follow_the_install() {
    let install = Install {
        name: "batch-gate".into(),
        namespace: "platform".into(),
        excluded_namespaces: vec!["ci".into()],
        failure_policy: FailurePolicy::Ignore,
    };
    let rendered = render(&Config::default(), &install).unwrap();
    for object in &rendered.objects {
        let name = object["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("batch-gate-"), "{name}");
        if let Some(policy) = object["spec"]["policyName"].as_str() {
            assert_eq!(policy, name);
        } else {
            assert_eq!(
                object["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0],
                json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                       "values": ["kube-system", "platform", "ci"]})
            );
            assert_eq!(object["spec"]["failurePolicy"], "Ignore");
        }
    }
    let fail = render(&Config::default(), &Install::default()).unwrap();
    let policies: Vec<&Value> = fail
        .objects
        .iter()
        .map(|o| &o["spec"]["failurePolicy"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(policies[..2], ["Ignore", "Ignore"], "the mutating policies");
    assert!(policies[2..].iter().all(|f| *f == "Fail"));
}

#[test]
fn the_yaml_reads_back_as_the_objects() {
    let config = Config {
        recovery_annotation_keys: strategies::KEYS.iter().map(|k| k.to_string()).collect(),
        policies: Policies::all(Level::Deny),
        ..Config::default()
    };
    let rendered = render(&config, &Install::default()).unwrap();
    let yaml = rendered.to_yaml();
    let back: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&yaml)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .collect();
    assert_eq!(back, rendered.objects);
}

/// Every object reads as the API type of its `apiVersion` and `kind` (k8s-openapi's, generated
/// from kube-apiserver's OpenAPI) and writes back the same: no field the API does not have, none
/// of the wrong type.
#[test]
fn every_object_is_the_api_type_it_names() {
    use k8s_openapi::api::admissionregistration::{v1, v1beta1};
    fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(object: &Value) -> Value {
        let typed: T =
            serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("{e}: {object:#}"));
        serde_json::to_value(typed).expect("serializes")
    }
    let config = Config {
        recovery_annotation_keys: vec!["a/b".into(), "c~d".into()],
        policies: Policies::all(Level::Warn),
        ..Config::default()
    };
    for release in [KubernetesVersion::V1_35, KubernetesVersion::V1_37] {
        let config = Config {
            cluster: Cluster::new(release),
            ..config.clone()
        };
        for object in render(&config, &Install::default()).unwrap().objects {
            let kind = (
                object["apiVersion"].as_str().unwrap(),
                object["kind"].as_str().unwrap(),
            );
            let back = match kind {
                ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy") => {
                    round_trip::<v1::MutatingAdmissionPolicy>(&object)
                }
                ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding") => {
                    round_trip::<v1::MutatingAdmissionPolicyBinding>(&object)
                }
                ("admissionregistration.k8s.io/v1beta1", "MutatingAdmissionPolicy") => {
                    round_trip::<v1beta1::MutatingAdmissionPolicy>(&object)
                }
                ("admissionregistration.k8s.io/v1beta1", "MutatingAdmissionPolicyBinding") => {
                    round_trip::<v1beta1::MutatingAdmissionPolicyBinding>(&object)
                }
                ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") => {
                    round_trip::<v1::ValidatingAdmissionPolicy>(&object)
                }
                ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding") => {
                    round_trip::<v1::ValidatingAdmissionPolicyBinding>(&object)
                }
                other => panic!("unexpected {other:?}"),
            };
            assert_eq!(back, object, "{release} {kind:?}");
        }
    }
}
