//! Rendering deploy/ and the chart as a user does: `kubectl kustomize`, kubectl from PATH
//! (>= 1.35), and helm 4 from PATH.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The oldest kubectl whose kustomize (v5.7) the install is tested with; `tests/run` installs it.
const KUBECTL_MIN_MINOR: u32 = 35;

/// `kubectl` from PATH, at least 1.[`KUBECTL_MIN_MINOR`]. Missing or older, the test fails and
/// says how to get it: the install is never left untested because a tool is absent.
pub fn kubectl() -> &'static str {
    let out = match Command::new("kubectl")
        .args(["version", "--client", "-o", "json"])
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!(
            "cannot run kubectl ({e}): deploy/ is rendered with kubectl >= 1.{KUBECTL_MIN_MINOR}; \
             run tests/run (it installs kubectl and helm) or put one first on PATH"
        ),
    };
    assert!(
        out.status.success(),
        "`kubectl version --client` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let version: Value = serde_json::from_slice(&out.stdout).expect("kubectl version JSON");
    let minor: u32 = version
        .pointer("/clientVersion/minor")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim_end_matches('+')
        .parse()
        .unwrap_or(0);
    assert!(
        minor >= KUBECTL_MIN_MINOR,
        "kubectl 1.{minor} is too old (kustomize differs); need >= 1.{KUBECTL_MIN_MINOR}: run \
         tests/run (it installs it under target/tools) or put a newer kubectl first on PATH"
    );
    "kubectl"
}

/// The documents `kubectl kustomize dir` renders, as JSON values.
pub fn render(kubectl: &str, dir: &Path) -> Vec<Value> {
    let out = Command::new(kubectl)
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("run kubectl kustomize");
    assert!(
        out.status.success(),
        "kubectl kustomize {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8(out.stdout).expect("UTF-8 output");
    serde_yaml_ng::Deserializer::from_str(&yaml)
        .map(|doc| {
            let value: Value = serde::Deserialize::deserialize(doc).expect("a YAML document");
            value
        })
        .filter(|v| !v.is_null())
        .map(unwrap_secret_data)
        .collect()
}

/// kustomize wraps a generated Secret's base64 `data` at 76 columns; kube-apiserver's decoder
/// (Go's encoding/base64) skips the newlines, k8s-openapi's does not, so drop them here.
fn unwrap_secret_data(mut doc: Value) -> Value {
    if doc.get("kind").and_then(Value::as_str) == Some("Secret")
        && let Some(data) = doc.get_mut("data").and_then(Value::as_object_mut)
    {
        for value in data.values_mut() {
            if let Some(s) = value.as_str() {
                *value = Value::String(s.replace(['\n', '\r'], ""));
            }
        }
    }
    doc
}

/// `helm` from PATH, version 4; missing or older, the test fails and says how to get it.
pub fn helm() -> &'static str {
    let out = Command::new("helm")
        .args(["version", "--short"])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run helm ({e}): run tests/run (it installs helm 4) or put helm 4 on PATH"
            )
        });
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && version.starts_with("v4."),
        "helm 4 is needed, found {version:?}: run tests/run (it installs it under target/tools)"
    );
    "helm"
}
