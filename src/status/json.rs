//! `jobgate status -o json`: the same snapshot and verdicts as the tables, as one JSON document
//! for scripts and dashboards. Pure: the snapshot and `now` in, a value out.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::options::RenderOptions;
use super::render::{leader_line, verdict_text};
use super::snapshot::Snapshot;
use super::verdict::{job_states, pod_rows};

/// `{"leader", "namespace", "jobs", "pods"}`: the Lease's holder (and the text line), each Job
/// with recovery state (its `jobgate.dev/recovery-state`, or why it cannot be read), each pod
/// waiting for recovery with the reconciler's verdict in words (the STATUS column).
pub(crate) fn render_json(snapshot: &Snapshot, options: &RenderOptions, now: Timestamp) -> Value {
    let spec = snapshot.lease.as_ref().and_then(|l| l.spec.as_ref());
    let leader = json!({
        "lease": format!("{}/{}", snapshot.lease_namespace, snapshot.lease_name),
        "holder": spec.and_then(|s| s.holder_identity.as_deref()).filter(|h| !h.is_empty()),
        "renewTime": spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0.to_string()),
        "leaseDurationSeconds": spec.and_then(|s| s.lease_duration_seconds),
        "summary": leader_line(snapshot, now),
    });
    let jobs: Vec<Value> = job_states(snapshot)
        .into_iter()
        .map(|((namespace, name), (state, suspended, error))| {
            json!({
                "namespace": namespace,
                "name": name,
                "suspended": suspended,
                "recoveryState": state,
                "error": error,
            })
        })
        .collect();
    let pods: Vec<Value> = pod_rows(snapshot, options, now)
        .into_iter()
        .map(|p| {
            let status = verdict_text(&p.verdict, now);
            json!({
                "namespace": p.namespace,
                "name": p.name,
                "job": p.job.map(|j| j.name),
                "node": p.node,
                "nodeState": p.node_state.as_str(),
                "deadline": p.deadline.map(|d| d.to_string()),
                "status": status,
            })
        })
        .collect();
    json!({
        "leader": leader,
        "namespace": snapshot.namespace,
        "jobs": jobs,
        "pods": pods,
    })
}
