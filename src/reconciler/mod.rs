//! `jobgate reconcile`: the failure-recovery sidecar (Kueue KEP-6757). Owns the Kubernetes
//! client: watches, leader election, status patches, events, deletes. It asks
//! [`crate::recovery::decide`] and the episode decision what to do and does exactly that.
//!
//! One idea a file, in the order a pod travels:
//! - [`filter`]: what the pod watch keeps (eligible pods, stripped); [`node_cache`]: node taints
//!   and their rising edges; [`watch`]: the two watch drivers;
//! - [`context`]: the shared state, one [`PodState`] per pod, the clock;
//! - [`reconcile`]: pod -> decision -> Job gate -> recover; [`job_state`]: the Job's episode;
//! - [`writer`]: the only caller of write verbs (leadership, dry run, field manager, events
//!   through the one builder in [`event`]);
//! - [`run`]: wiring on the [`runtime`](crate::runtime) (admin port, client, Lease, shutdown) and
//!   the drain; [`args`], [`metrics`].
//!
//! Memory grows with *eligible* pods only: pods are watched metadata-only
//! (`PartialObjectMetadata`, listed in pages of 500) and every event is filtered on arrival; only
//! opted-in terminating pods are stored, stripped of managedFields, labels and foreign
//! annotations. Nodes are read trimmed ([`watched_node`]: name, the brake's labels, taints) and
//! kept as facts. The full pod is read with one GET when a pod is reconciled, which also gives
//! the resourceVersion for the optimistic status patch.

pub(crate) mod args;
pub(crate) mod backoff_args;
pub(crate) mod context;
pub(crate) mod event;
pub mod filter;
pub(crate) mod job_state;
pub mod metrics;
pub(crate) mod node_cache;
pub(crate) mod reconcile;
mod resource_view;
pub(crate) mod run;
pub(crate) mod watch;
pub(crate) mod watched_node;
pub(crate) mod writer;

#[cfg(test)]
mod tests;

pub use args::ReconcileArgs;
pub use context::{Context, Options};
pub use run::{RunError, run};
pub use watch::drive_pod_watch;

/// The RBAC rules the reconciler needs, as (API group, resource, verbs). The deploy
/// ClusterRole is tested against this list.
pub const RBAC: &[(&str, &str, &[&str])] = &[
    // metadata-only list/watch of all pods, GET of one pod, forceful delete
    ("", "pods", &["get", "list", "watch", "delete"]),
    // phase Failed + KueueFailureRecovery condition (strategic merge patch)
    ("", "pods/status", &["patch"]),
    // node taints: watch for the cache, GET to confirm before acting
    ("", "nodes", &["get", "list", "watch"]),
    // Warning / dry-run Normal events
    ("events.k8s.io", "events", &["create"]),
    // per-Job recovery state annotation and --on-recovery-limit=suspend
    ("batch", "jobs", &["get", "patch"]),
    // --on-recovery-limit=deactivate-workload: find the Job's Workload, set spec.active=false
    ("kueue.x-k8s.io", "workloads", &["list", "patch"]),
    // leader election
    (
        "coordination.k8s.io",
        "leases",
        &["get", "create", "update"],
    ),
];
