//! What the decision reads of a pod and a node, as plain data, and the predicates on it. A leaf
//! of `recovery`: the other files there use these facts, and this one uses none of them
//! ([`super::read`] takes the facts from the Kubernetes API types).

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;

/// The taint the node lifecycle controller puts on a node whose kubelet stopped reporting.
pub(crate) const UNREACHABLE_TAINT_KEY: &str = "node.kubernetes.io/unreachable";

/// What the decision reads of a pod.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PodFacts {
    pub(crate) annotations: BTreeMap<String, String>,
    /// `metadata.deletionTimestamp`: the apiserver sets it to the delete request time plus the
    /// pod's grace period, so the grace period is already inside it.
    pub(crate) deletion_timestamp: Option<Timestamp>,
    pub(crate) deletion_grace_period_seconds: Option<i64>,
    /// `status.phase`; `None` when absent or empty.
    pub(crate) phase: Option<String>,
    /// `spec.nodeName`; `None` when absent or empty.
    pub(crate) node_name: Option<String>,
    pub(crate) conditions: Vec<PodCondition>,
    /// `metadata.finalizers`: a pod with any is not removed by a delete, forced or not, until
    /// their controllers remove them (Kueue's pod finalizer, the Job controller's
    /// `batch.kubernetes.io/job-tracking`).
    pub(crate) finalizers: Vec<String>,
}

/// One entry of `status.conditions`, with the fields the recovery condition compares.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PodCondition {
    pub(crate) type_: String,
    pub(crate) status: String,
    pub(crate) reason: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) last_transition_time: Option<Timestamp>,
}

/// What the decision reads of a node.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NodeFacts {
    pub(crate) name: String,
    pub(crate) taints: Vec<Taint>,
    /// kube-controller-manager's zone key of the node (`brake::zone_key`), `""` without labels.
    pub(crate) zone: String,
    /// Labelled `node.kubernetes.io/exclude-disruption`: left out of the partition brake.
    pub(crate) excluded_from_disruption: bool,
}

#[cfg(test)]
impl NodeFacts {
    /// A node for tests: tainted `node.kubernetes.io/unreachable:NoExecute` when `unreachable`,
    /// else untainted.
    pub(crate) fn for_test(name: &str, unreachable: bool) -> Self {
        let taints = if unreachable {
            vec![Taint {
                key: UNREACHABLE_TAINT_KEY.into(),
                effect: "NoExecute".into(),
            }]
        } else {
            vec![]
        };
        NodeFacts {
            name: name.into(),
            taints,
            ..NodeFacts::default()
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Taint {
    pub(crate) key: String,
    pub(crate) effect: String,
}

/// The node carries the unreachable taint, with any effect (Kueue: `utiltaints.TaintKeyExists`).
/// `node.kubernetes.io/not-ready` alone does not count.
pub(crate) fn is_unreachable(node: &NodeFacts) -> bool {
    node.taints.iter().any(|t| t.key == UNREACHABLE_TAINT_KEY)
}

/// `Failed` or `Succeeded` (Kueue's `utilpod.IsTerminated`): the phase is kept as it is.
pub(crate) fn is_terminal_phase(phase: Option<&str>) -> bool {
    matches!(phase, Some("Failed") | Some("Succeeded"))
}
