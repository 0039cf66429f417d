//! deploy/base's webhook configurations, as rendered, pointed at a `jobgate serve` on loopback:
//! the rewrite the cluster tests (`webhooks::install`) and the admission bench share.

use serde_json::{Value, json};

/// The recovery keys deploy/base's `matchConditions` list, as written there.
pub const KUEUE_KEYS: &str =
    "['kueue.x-k8s.io/safe-to-forcefully-terminate', 'kueue.x-k8s.io/safe-to-forcefully-delete']";

/// The mutating and validating configurations among `docs` (deploy/base rendered), each renamed
/// `<name>-<suffix>`, every webhook called at `https://127.0.0.1:<port><its path>` with `ca_pem`
/// as its CA bundle and limited to `namespaces` (one more `namespaceSelector` expression;
/// deploy/base's own exclusions still apply), with `keys` added to the recovery keys of the
/// `matchConditions`, as deploy/base says to.
pub fn pointed_at(
    docs: Vec<Value>,
    port: u16,
    ca_pem: &[u8],
    suffix: &str,
    namespaces: &[&str],
    keys: &[&str],
) -> Vec<Value> {
    let mut recognized: Vec<String> = keys.iter().map(|k| format!("'{k}'")).collect();
    recognized.push(KUEUE_KEYS.trim_matches(['[', ']']).to_string());
    let recognized = format!("[{}]", recognized.join(", "));
    let ca = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(ca_pem)
    };
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
                "url": format!("https://127.0.0.1:{port}{path}"),
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
    configs
}
