//! What every rendered object is made of: a Kubernetes object as JSON, jobgate's metadata and
//! the batch/v1 `resourceRules` its policies match.

use serde_json::{Value, json};

/// A Kubernetes object, as JSON.
pub(crate) type Object = Value;

/// `metadata` with `name` and the labels of every jobgate object.
pub(crate) fn named_metadata(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {
            "app.kubernetes.io/name": "jobgate",
            "app.kubernetes.io/part-of": "jobgate",
            "app.kubernetes.io/component": "admission-policy",
        },
    })
}

/// `resourceRules` for batch/v1 resources, each with its operations.
pub(crate) fn resource_rules(rules: &[(&str, &[&str])]) -> Value {
    rules
        .iter()
        .map(|(resource, operations)| {
            json!({
                "apiGroups": ["batch"],
                "apiVersions": ["v1"],
                "operations": operations,
                "resources": [resource],
                "scope": "Namespaced",
            })
        })
        .collect()
}
