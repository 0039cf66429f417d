//! Job manifests the tests write, and merging JSON into them.

/// A Job with one container and `restartPolicy: Never`; `annotations` on the Job, `spec` merged
/// over the defaults.
pub fn job(
    name: &str,
    annotations: serde_json::Value,
    spec: serde_json::Value,
) -> serde_json::Value {
    let mut job = serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "template": { "spec": {
                "restartPolicy": "Never",
                "containers": [{ "name": "main", "image": "registry.example/trainer:1" }],
            }},
        },
    });
    merge(&mut job["spec"], spec);
    job
}

/// Deep-merges `from` into `into`: objects key by key, anything else replaced.
pub fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
    use serde_json::Value;
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}
