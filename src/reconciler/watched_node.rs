//! A Node as the reconciler reads it: its name, the labels the partition brake reads (zone,
//! region, exclusion) and its taints. A real GPU node's object is mostly status (images,
//! capacity, conditions, node info), managedFields and feature-discovery labels, none of which
//! the reconciler reads; decoded as `k8s_openapi`'s `Node`, a list page of 500 of them is tens
//! of MiB held at once. serde skips what this type does not declare, so a page costs its bytes
//! and the facts. The wire is the Node API (`/api/v1/nodes`), the same requests as for `Node`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};

use crate::recovery::brake::NODE_LABELS_READ;
use crate::recovery::{self, NodeFacts};

/// A Node, trimmed on decoding to what [`NodeFacts`] reads (and what the watcher needs of the
/// metadata: name, uid, resourceVersion).
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct WatchedNode {
    #[serde(deserialize_with = "trimmed_metadata")]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: WatchedNodeSpec,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct WatchedNodeSpec {
    #[serde(default)]
    taints: Vec<Taint>,
}

impl WatchedNode {
    pub(crate) fn facts(&self) -> NodeFacts {
        recovery::read::node_facts_of(&self.metadata, &self.spec.taints)
    }
}

super::resource_view::resource_view!(WatchedNode, Node);

/// The metadata's name, uid and resourceVersion, and of its labels only those the brake reads;
/// managedFields, annotations and every other label are skipped unallocated.
fn trimmed_metadata<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Metadata {
        name: Option<String>,
        uid: Option<String>,
        resource_version: Option<String>,
        #[serde(default, deserialize_with = "labels_read")]
        labels: Option<BTreeMap<String, String>>,
    }
    let m = Metadata::deserialize(d)?;
    Ok(ObjectMeta {
        name: m.name,
        uid: m.uid,
        resource_version: m.resource_version,
        labels: m.labels,
        ..ObjectMeta::default()
    })
}

fn labels_read<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    Ok(Option::<LabelsRead>::deserialize(d)?.map(|l| l.0))
}

/// A node's labels, only those in [`NODE_LABELS_READ`] kept.
struct LabelsRead(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for LabelsRead {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Labels;
        impl<'de> Visitor<'de> for Labels {
            type Value = LabelsRead;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of label keys to values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LabelsRead, A::Error> {
                let mut kept = BTreeMap::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if NODE_LABELS_READ.contains(&key.as_ref()) {
                        kept.insert(key.into_owned(), map.next_value()?);
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(LabelsRead(kept))
            }
        }
        d.deserialize_map(Labels)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::recovery::read::node_facts;

    /// A GPU node as the API serves it, with what the reconciler does not read.
    fn gpu_node() -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "gpu-0017",
                "uid": "6f0c2b1e-0000-4000-8000-000000000017",
                "resourceVersion": "4711",
                "labels": {
                    "topology.kubernetes.io/zone": "us-east-1a",
                    "topology.kubernetes.io/region": "us-east-1",
                    "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
                    "node.kubernetes.io/exclude-disruption": "",
                    "nvidia.com/gpu.product": "H100-SXM5-80GB",
                    "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
                },
                "annotations": { "node.alpha.kubernetes.io/ttl": "0" },
                "managedFields": [{ "manager": "kubelet", "operation": "Update" }],
            },
            "spec": {
                "providerID": "aws:///us-east-1a/i-0017",
                "taints": [
                    { "key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                      "timeAdded": "2026-11-28T10:00:00Z" },
                    { "key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule" },
                ],
            },
            "status": {
                "capacity": { "cpu": "96", "nvidia.com/gpu": "8" },
                "conditions": [{ "type": "Ready", "status": "Unknown" }],
                "images": [{ "names": ["registry.example/trainer:1"], "sizeBytes": 1 }],
            },
        })
    }

    #[test]
    fn a_watched_node_gives_the_facts_of_the_whole_node() {
        let whole: Node = serde_json::from_value(gpu_node()).unwrap();
        let trimmed: WatchedNode = serde_json::from_value(gpu_node()).unwrap();
        assert_eq!(trimmed.facts(), node_facts(&whole));
        assert_eq!(trimmed.facts().zone, "us-east-1:\0:us-east-1a");
        assert!(trimmed.facts().excluded_from_disruption);
        assert_eq!(trimmed.facts().taints.len(), 2);
    }

    #[test]
    fn a_watched_node_keeps_only_what_the_watcher_and_the_brake_read() {
        let trimmed: WatchedNode = serde_json::from_value(gpu_node()).unwrap();
        let meta = &trimmed.metadata;
        assert_eq!(meta.name.as_deref(), Some("gpu-0017"));
        assert_eq!(meta.resource_version.as_deref(), Some("4711"));
        assert!(meta.uid.is_some());
        let labels: Vec<&str> = meta
            .labels
            .iter()
            .flatten()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(
            labels,
            [
                "failure-domain.beta.kubernetes.io/zone",
                "node.kubernetes.io/exclude-disruption",
                "topology.kubernetes.io/region",
                "topology.kubernetes.io/zone",
            ]
        );
        assert!(meta.annotations.is_none() && meta.managed_fields.is_none());
    }

    #[test]
    fn a_node_without_labels_spec_or_taints_is_one_of_the_unlabelled_zone() {
        for node in [
            json!({ "metadata": { "name": "bare" } }),
            json!({ "metadata": { "name": "bare", "labels": null }, "spec": {} }),
            json!({ "metadata": { "name": "bare", "labels": {} }, "spec": { "taints": [] } }),
        ] {
            let whole: Node = serde_json::from_value(node.clone()).unwrap();
            let trimmed: WatchedNode = serde_json::from_value(node).unwrap();
            assert_eq!(trimmed.facts(), node_facts(&whole));
            assert_eq!(trimmed.facts().zone, "");
        }
    }

    #[test]
    fn a_watched_node_is_read_from_the_node_api() {
        use kube::Resource;
        assert_eq!(WatchedNode::url_path(&(), None), Node::url_path(&(), None));
        assert_eq!(WatchedNode::api_version(&()), "v1");
        assert_eq!(WatchedNode::kind(&()), "Node");
    }
}
