//! jobgate's shipped webhook configurations (deploy/base) on a real kube-apiserver's admission
//! path, calling a running `jobgate serve` through a `url` clientConfig and its dev CA.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::controlplane::{ControlPlane, eventually, repo};
use super::prometheus::{label, samples};
use super::serve::Jobgate;

/// The shipped webhook configurations, rendered with kustomize and pointed at `jg`
/// (`shipped_webhooks::pointed_at`: limited to `namespaces`, so tests running at once in other
/// namespaces never meet this jobgate, with `keys`, the keys `jg` injects besides Kueue's, added
/// to the recovery keys of the `matchConditions`). Applied, and returned once the apiserver calls
/// them (a dry-run CronJob in `namespaces[0]` comes back mutated and reviewed).
pub fn install(
    cp: &ControlPlane,
    jg: &Jobgate,
    suffix: &str,
    namespaces: &[&str],
    keys: &[&str],
) -> Vec<Value> {
    let kubectl = super::kustomize::kubectl();
    let docs = super::kustomize::render(kubectl, &repo().join("deploy/base"));
    let ca = std::fs::read(&jg.ca).expect("dev CA");
    let configs = super::shipped_webhooks::pointed_at(docs, jg.port, &ca, suffix, namespaces, keys);
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
