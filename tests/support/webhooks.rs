//! jobgate's shipped webhook configurations (deploy/base) on a real kube-apiserver's admission
//! path, calling a running `jobgate serve` through a `url` clientConfig and its dev CA.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::controlplane::{ControlPlane, eventually, repo};
use super::prometheus::{label, samples};
use super::serve::Jobgate;

/// The shipped webhook configurations, rendered with kustomize, each renamed `<name>-<suffix>`,
/// pointed at `jg` and limited to `namespaces` (one more `namespaceSelector` expression, so
/// tests running at once in other namespaces never meet this jobgate; deploy/base's own
/// exclusions still apply), with `keys` (the keys `jg` injects besides Kueue's) added to the
/// recovery keys of the validating webhook's `matchConditions`, as deploy/base says to. Applied,
/// and returned once the apiserver calls them (a dry-run CronJob in `namespaces[0]` comes back
/// mutated and reviewed).
pub fn install(
    cp: &ControlPlane,
    jg: &Jobgate,
    suffix: &str,
    namespaces: &[&str],
    keys: &[&str],
) -> Vec<Value> {
    const KUEUE_KEYS: &str = "['kueue.x-k8s.io/safe-to-forcefully-terminate', 'kueue.x-k8s.io/safe-to-forcefully-delete']";
    let mut recognized: Vec<String> = keys.iter().map(|k| format!("'{k}'")).collect();
    recognized.push(KUEUE_KEYS.trim_matches(['[', ']']).to_string());
    let recognized = format!("[{}]", recognized.join(", "));
    let kubectl = super::kustomize::kubectl();
    let docs = super::kustomize::render(kubectl, &repo().join("deploy/base"));
    let ca = base64(&std::fs::read(&jg.ca).expect("dev CA"));
    let mut configs = Vec::new();
    let mut key_lists = 0;
    for mut doc in docs {
        let kind = doc["kind"].as_str().unwrap_or_default().to_string();
        if !kind.ends_with("WebhookConfiguration") {
            continue;
        }
        let name = format!(
            "{}-{suffix}",
            doc["metadata"]["name"].as_str().expect("name")
        );
        doc["metadata"] = json!({ "name": name });
        for webhook in doc["webhooks"].as_array_mut().expect("webhooks") {
            for condition in webhook["matchConditions"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                if let Some(expression) = condition["expression"].as_str()
                    && expression.contains(KUEUE_KEYS)
                {
                    condition["expression"] = json!(expression.replace(KUEUE_KEYS, &recognized));
                    key_lists += 1;
                }
            }
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .expect("a service path")
                .to_string();
            webhook["clientConfig"] = json!({
                "url": format!("https://127.0.0.1:{}{path}", jg.port),
                "caBundle": ca,
            });
            webhook["namespaceSelector"]["matchExpressions"]
                .as_array_mut()
                .expect("matchExpressions")
                .push(json!({
                    "key": "kubernetes.io/metadata.name",
                    "operator": "In",
                    "values": namespaces,
                }));
        }
        configs.push(doc);
    }
    assert_eq!(
        configs.len(),
        2,
        "deploy/base has a mutating and a validating configuration"
    );
    assert!(
        key_lists > 0,
        "deploy/base's matchConditions no longer list Kueue's keys as {KUEUE_KEYS}"
    );
    let list = json!({ "apiVersion": "v1", "kind": "List", "items": configs });
    cp.kubectl_ok(&["apply", "-f", "-"], Some(&list.to_string()));
    // The apiserver's webhook informers take a moment: wait until a dry-run create is mutated
    // and reviewed.
    let probe = json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": { "name": "probe" },
        "spec": {
            "schedule": "0 3 * * *",
            "jobTemplate": { "spec": { "template": { "spec": {
                "restartPolicy": "Never",
                "containers": [{ "name": "main", "image": "registry.example/trainer:1" }],
            }}}},
        },
    });
    eventually(
        "the apiserver to call jobgate's webhooks",
        Duration::from_secs(30),
        || {
            let before = reviews(jg);
            let out = cp.kubectl_output(
                &[
                    "create",
                    "--dry-run=server",
                    "-n",
                    namespaces[0],
                    "-o",
                    "json",
                    "-f",
                    "-",
                ],
                Some(&probe.to_string()),
            );
            let stored: Value = serde_json::from_slice(&out.stdout).ok()?;
            let reviewed = reviews(jg).get("validate/CREATE") > before.get("validate/CREATE");
            (reviewed
                && stored
                    .pointer("/spec/jobTemplate/spec/podReplacementPolicy")
                    .is_some())
            .then_some(())
        },
    );
    configs
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `jobgate_admission_requests_total` by `endpoint/operation`, read from jobgate's admin port.
pub fn reviews(jg: &Jobgate) -> BTreeMap<String, u64> {
    let reply = super::serve::curl(&[&jg.admin_url("/metrics")]);
    assert_eq!(reply.status, 200, "GET /metrics: {reply:?}");
    let mut counts = BTreeMap::new();
    for (labels, value) in samples(&reply.body, "jobgate_admission_requests_total") {
        let key = format!(
            "{}/{}",
            label(labels, "endpoint"),
            label(labels, "operation")
        );
        *counts.entry(key).or_default() += value as u64;
    }
    counts
}
