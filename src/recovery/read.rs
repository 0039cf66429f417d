//! The facts the decision reads ([`super::facts`]), taken from the Kubernetes API types: the one
//! place in `recovery` that reads a `Pod` or a `Node`.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::brake::{EXCLUDE_DISRUPTION_LABEL, zone_key};
use super::facts::{NodeFacts, PodCondition, PodFacts, Taint};

fn non_empty(s: Option<&String>) -> Option<String> {
    s.filter(|s| !s.is_empty()).cloned()
}

pub(crate) fn pod_facts(pod: &Pod) -> PodFacts {
    let meta = &pod.metadata;
    let status = pod.status.as_ref();
    PodFacts {
        annotations: meta.annotations.clone().unwrap_or_default(),
        deletion_timestamp: meta.deletion_timestamp.as_ref().map(|t| t.0),
        deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
        phase: non_empty(status.and_then(|s| s.phase.as_ref())),
        node_name: non_empty(pod.spec.as_ref().and_then(|s| s.node_name.as_ref())),
        conditions: status
            .and_then(|s| s.conditions.as_ref())
            .map(|cs| {
                cs.iter()
                    .map(|c| PodCondition {
                        type_: c.type_.clone(),
                        status: c.status.clone(),
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                        last_transition_time: c.last_transition_time.as_ref().map(|t| t.0),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        finalizers: meta.finalizers.clone().unwrap_or_default(),
    }
}

pub(crate) fn node_facts(node: &Node) -> NodeFacts {
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref());
    node_facts_of(&node.metadata, taints.unwrap_or_default())
}

/// The facts of a node from its metadata and taints, whichever type carried them.
pub(crate) fn node_facts_of(
    meta: &ObjectMeta,
    taints: &[k8s_openapi::api::core::v1::Taint],
) -> NodeFacts {
    let labels = meta.labels.as_ref();
    NodeFacts {
        zone: labels.map(zone_key).unwrap_or_default(),
        excluded_from_disruption: labels.is_some_and(|l| l.contains_key(EXCLUDE_DISRUPTION_LABEL)),
        name: meta.name.clone().unwrap_or_default(),
        taints: taints
            .iter()
            .map(|t| Taint {
                key: t.key.clone(),
                effect: t.effect.clone(),
            })
            .collect(),
    }
}
