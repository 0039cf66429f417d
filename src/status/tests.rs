//! `jobgate status`: rendering from snapshots, and the reads of `fetch` as a scripted API
//! conversation.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

use super::install::DEFAULT_LEASE_NAMESPACE;
use super::render::leader_line;
use super::snapshot::Snapshot;
use super::*;
use crate::recovery::episode::{
    EpisodeConfig, LimitAction, LimitExceeded, RECOVERY_STATE_ANNOTATION, RecoveryState,
};
use crate::recovery::facts::UNREACHABLE_TAINT_KEY;
use crate::runtime::scripted::{Exchange, exchange, mock, serve};

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn options() -> RenderOptions {
    RenderOptions {
        config: crate::recovery::RecoveryConfig {
            annotation_keys: crate::kueue::RECOVERY_ANNOTATION_KEYS
                .map(String::from)
                .to_vec(),
            grace_period: Duration::from_secs(60),
            kueue_recovers: true,
        },
        // The reconciler's limit flags for the Jobs of the snapshot: `etl` was suspended at its
        // limit of 3 episodes.
        episode: EpisodeConfig {
            limit_count: Some(3),
            on_limit: LimitAction::Suspend,
            ..EpisodeConfig::default()
        },
        brake: crate::recovery::brake::BrakeConfig::default(),
    }
}

fn job(ns: &str, name: &str, state: Option<String>, suspend: bool) -> Job {
    let mut annotations = serde_json::Map::new();
    if let Some(state) = state {
        annotations.insert(RECOVERY_STATE_ANNOTATION.into(), json!(state));
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"),
                     "annotations": annotations},
        "spec": {"suspend": suspend, "template": {"spec": {"containers": []}}},
    }))
    .unwrap()
}

fn pod(ns: &str, name: &str, job: Option<&str>, node: &str, deleted: &str) -> Pod {
    let owners: Vec<_> = job
        .map(|j| {
            json!({"apiVersion": "batch/v1", "kind": "Job", "name": j,
                   "uid": format!("uid-{j}"), "controller": true})
        })
        .into_iter()
        .collect();
    serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": ns, "ownerReferences": owners,
            "deletionTimestamp": deleted, "deletionGracePeriodSeconds": 30,
            "annotations": {"kueue.x-k8s.io/safe-to-forcefully-terminate": "true"},
        },
        "spec": {"nodeName": node, "containers": []},
    }))
    .unwrap()
}

fn node(name: &str, unreachable: bool) -> (String, Node) {
    let taints = if unreachable {
        json!([{"key": UNREACHABLE_TAINT_KEY, "effect": "NoExecute"}])
    } else {
        json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    };
    (
        name.to_string(),
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"taints": taints}}))
            .unwrap(),
    )
}

fn lease(holder: &str, renewed: &str) -> Lease {
    serde_json::from_value(json!({
        "metadata": {"name": DEFAULT_LEASE_NAME, "namespace": DEFAULT_LEASE_NAMESPACE},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                 "renewTime": format!("{renewed}.000000Z").replace("Z.", ".")},
    }))
    .unwrap()
}

fn snapshot() -> Snapshot {
    let in_backoff = RecoveryState {
        count: 2,
        requeue_at: Some(ts("2026-11-21T03:04:00Z")),
        last_recovery_time: Some(ts("2026-11-21T03:00:00Z")),
        last_nodes: vec!["node-a".into(), "node-b".into()],
        limit_exceeded: None,
    };
    let suspended = RecoveryState {
        count: 3,
        requeue_at: Some(ts("2026-11-21T02:10:00Z")),
        last_recovery_time: Some(ts("2026-11-21T02:00:00Z")),
        last_nodes: vec!["node-c".into()],
        limit_exceeded: Some(LimitExceeded {
            time: ts("2026-11-21T02:30:00Z"),
            action: LimitAction::Suspend,
        }),
    };
    Snapshot {
        namespace: None,
        jobs: vec![
            job("team-a", "train", Some(in_backoff.to_annotation()), false),
            job("team-b", "etl", Some(suspended.to_annotation()), true),
            job("team-a", "quiet", None, false),
            job("team-c", "edited", Some("{oops".into()), false),
        ],
        pods: vec![
            // Deleted before episode 2 started: a leftover of it.
            pod(
                "team-a",
                "train-2",
                Some("train"),
                "node-b",
                "2026-11-21T02:58:00Z",
            ),
            // A Job without state: its first episode.
            pod(
                "team-a",
                "fresh-0",
                Some("fresh"),
                "node-a",
                "2026-11-21T03:00:00Z",
            ),
            pod(
                "team-a",
                "train-3",
                Some("train"),
                "node-a",
                "2026-11-21T03:01:00Z",
            ),
            pod(
                "team-a",
                "train-4",
                Some("train"),
                "node-a",
                "2026-11-21T03:02:30Z",
            ),
            pod(
                "team-a",
                "train-5",
                Some("train"),
                "node-d",
                "2026-11-21T02:00:00Z",
            ),
            pod(
                "team-b",
                "etl-0",
                Some("etl"),
                "node-c",
                "2026-11-21T02:40:00Z",
            ),
            pod("team-c", "bare", None, "node-a", "2026-11-21T02:00:00Z"),
            pod("team-c", "gone", None, "node-x", "2026-11-21T02:00:00Z"),
        ],
        nodes: BTreeMap::from([
            node("node-a", true),
            node("node-b", true),
            node("node-c", true),
            node("node-d", false),
            // Enough healthy nodes that the partition brake holds nothing (3 of 8 unreachable).
            node("node-e", false),
            node("node-f", false),
            node("node-g", false),
            node("node-h", false),
        ]),
        lease_namespace: DEFAULT_LEASE_NAMESPACE.into(),
        lease_name: DEFAULT_LEASE_NAME.into(),
        lease: Some(lease("jobgate-7d9f-abcde", "2026-11-21T03:02:55Z")),
    }
}

/// docs/src/recovery-backoff.md: "prints a table of Jobs with recovery state, pods currently waiting for recovery
/// with their deadlines and nodes, and leader identity".
#[test]
fn status_shows_leader_jobs_with_state_and_waiting_pods() {
    let text = render(&snapshot(), &options(), ts("2026-11-21T03:03:00Z"));
    let expected = "\
Leader: jobgate-7d9f-abcde (lease jobgate-system/jobgate-reconciler, renewed 5s ago, valid for 10s)

Jobs with recovery state (all namespaces):
NAMESPACE   JOB      EPISODES   LAST RECOVERY                     LAST NODES      NEXT EPISODE                                LIMIT
team-a      train    2          2026-11-21T03:00:00Z (3m0s ago)   node-a,node-b   not before 2026-11-21T03:04:00Z (in 1m0s)   -
team-b      etl      3          2026-11-21T02:00:00Z (1h3m ago)   node-c          now                                         EXCEEDED 2026-11-21T02:30:00Z, Job suspended
team-c      edited   ?          -                                 -               now                                         unreadable state (key must be a string at line 1 column 2): counts as 0

Pods waiting for recovery (all namespaces):
NAMESPACE   POD       JOB     NODE     NODE STATE    DEADLINE               STATUS
team-a      fresh-0   fresh   node-a   unreachable   2026-11-21T03:01:00Z   due: episode 1 on the next pass
team-a      train-2   train   node-b   unreachable   2026-11-21T02:59:00Z   due: leftover of episode 2, recovered on the next pass
team-a      train-3   train   node-a   unreachable   2026-11-21T03:02:00Z   waiting for the Job's backoff until 2026-11-21T03:04:00Z (in 1m0s)
team-a      train-4   train   node-a   unreachable   2026-11-21T03:03:30Z   waiting for the deadline (in 30s)
team-a      train-5   train   node-d   reachable     2026-11-21T02:01:00Z   waiting for the node to become unreachable
team-b      etl-0     etl     node-c   unreachable   2026-11-21T02:41:00Z   not recovered: Job's recovery limit exceeded
team-c      bare      -       node-a   unreachable   2026-11-21T02:01:00Z   due: recovered on the next pass (no Job: no backoff)
team-c      gone      -       node-x   missing       2026-11-21T02:01:00Z   never recovered: node missing
";
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn a_resumed_job_shows_that_its_count_restarts() {
    let mut snap = snapshot();
    let etl = snap.jobs.get_mut(1).unwrap();
    etl.spec.as_mut().unwrap().suspend = Some(false);
    let text = render(&snap, &options(), ts("2026-11-21T03:03:00Z"));
    assert!(text.contains("was suspended, resumed: count restarts at the next episode"));
    assert!(text.contains("etl-0     etl     node-c   unreachable   2026-11-21T02:41:00Z   due: episode 1 on the next pass"), "{text}");
}

/// A pod whose recovery is recorded (Failed + KueueFailureRecovery) starts no episode in the
/// reconciler, so status neither counts it into one nor shows it as one.
#[test]
fn a_recorded_pod_is_shown_as_recovered_and_joins_no_episode() {
    let mut snap = snapshot();
    let mut recorded = pod(
        "team-a",
        "fresh-1",
        Some("fresh"),
        "node-a",
        "2026-11-21T03:00:00Z",
    );
    recorded.status = serde_json::from_value(json!({
        "phase": "Failed",
        "conditions": [{"type": "KueueFailureRecovery", "status": "True",
                        "reason": "KueueForcefullyTerminated", "message": "m"}],
    }))
    .unwrap();
    snap.pods.push(recorded);
    let mut options = options();
    options.episode.limit_count = Some(0);
    options.episode.on_limit = LimitAction::Stop;
    let text = render(&snap, &options, ts("2026-11-21T03:03:00Z"));
    assert!(
        text.contains("fresh-1   fresh   node-a   unreachable   2026-11-21T03:01:00Z   recovered (recorded on the pod): only the delete is left, no episode"),
        "{text}"
    );
    assert!(
        text.contains("fresh-0   fresh   node-a   unreachable   2026-11-21T03:01:00Z   not recovered: the Job reaches its recovery limit on the next pass\n"),
        "{text}"
    );
}

/// kueue#9651 and kueue#16033: a pod Kueue recovered is shown as recovered, like one jobgate
/// recovered, whatever Kueue wrote: reason `KueueForcefullyTerminated` (up to 0.15.5) or
/// `KueueForcefullyDeleted` (0.15.6+, 0.16.3+, 0.17+), the condition appended on every reconcile
/// without a `lastTransitionTime` (before v0.20.0) or set once with one (from v0.20.0); its
/// sibling still starts its own episode.
#[test]
fn a_pod_kueue_recovered_in_either_generation_is_shown_as_recovered() {
    let condition = |reason: &str, transition: serde_json::Value| {
        json!({"type": "KueueFailureRecovery", "status": "True", "reason": reason,
               "message": "Pod forcefully terminated after 1m0.00000003s grace period due to unreachable node `node-a` (triggered by `kueue.x-k8s.io/safe-to-forcefully-delete` annotation)",
               "lastProbeTime": null, "lastTransitionTime": transition})
    };
    for reason in ["KueueForcefullyTerminated", "KueueForcefullyDeleted"] {
        for conditions in [
            json!([
                condition(reason, json!(null)),
                condition(reason, json!(null))
            ]),
            json!([condition(reason, json!("2026-11-21T03:01:30Z"))]),
        ] {
            let mut snap = snapshot();
            let mut by_kueue = pod(
                "team-a",
                "fresh-1",
                Some("fresh"),
                "node-a",
                "2026-11-21T03:00:00Z",
            );
            by_kueue.status = serde_json::from_value(
                json!({"phase": "Failed", "conditions": conditions.clone()}),
            )
            .unwrap();
            snap.pods.push(by_kueue);
            let text = render(&snap, &options(), ts("2026-11-21T03:03:00Z"));
            assert!(
                text.contains("fresh-1   fresh   node-a   unreachable   2026-11-21T03:01:00Z   recovered (recorded on the pod): only the delete is left, no episode"),
                "{conditions}\n{text}"
            );
            assert!(
                text.contains("fresh-0   fresh   node-a   unreachable   2026-11-21T03:01:00Z   due: episode 1 on the next pass\n"),
                "{conditions}\n{text}"
            );
        }
    }
}

/// With the reconciler's limit flags, status predicts the episode that trips the limit.
#[test]
fn status_predicts_the_limit_with_the_reconcilers_flags() {
    let mut options = options();
    options.episode.limit_count = Some(2);
    options.episode.on_limit = LimitAction::Suspend;
    let text = render(&snapshot(), &options, ts("2026-11-21T03:05:00Z"));
    assert!(
        text.contains("train-3   train   node-a   unreachable   2026-11-21T03:02:00Z   not recovered: the Job reaches its recovery limit on the next pass (and is suspended)"),
        "{text}"
    );
    assert!(text.contains("fresh-0   fresh   node-a   unreachable   2026-11-21T03:01:00Z   due: episode 1 on the next pass"), "{text}");
}

#[test]
fn leader_line_says_when_there_is_no_acting_replica() {
    let mut snap = snapshot();
    snap.lease = Some(lease("jobgate-old", "2026-11-21T03:00:00Z"));
    assert_eq!(
        leader_line(&snap, ts("2026-11-21T03:03:00Z")),
        "Leader: jobgate-old (lease jobgate-system/jobgate-reconciler, renewed 3m0s ago, \
         EXPIRED: no replica is acting)"
    );
    snap.lease = None;
    assert_eq!(
        leader_line(&snap, ts("2026-11-21T03:03:00Z")),
        "Leader: none (lease jobgate-system/jobgate-reconciler not found: is `jobgate \
         reconcile` running?)"
    );
}

#[test]
fn pods_not_opted_in_with_exactly_true_or_not_terminating_are_not_listed() {
    let mut snap = Snapshot {
        namespace: Some("team-a".into()),
        lease_namespace: "ns".into(),
        lease_name: "l".into(),
        ..Snapshot::default()
    };
    let mut not_true = pod("team-a", "p1", None, "n", "2026-11-21T02:00:00Z");
    not_true.metadata.annotations = Some(BTreeMap::from([(
        "kueue.x-k8s.io/safe-to-forcefully-terminate".to_string(),
        "True".to_string(),
    )]));
    let mut running = pod("team-a", "p2", None, "n", "2026-11-21T02:00:00Z");
    running.metadata.deletion_timestamp = None;
    snap.pods = vec![not_true, running];
    let text = render(&snap, &options(), ts("2026-11-21T03:03:00Z"));
    assert!(
        text.ends_with("Pods waiting for recovery (namespace team-a):\n  none\n"),
        "{text}"
    );
    assert!(text.contains("Jobs with recovery state (namespace team-a):\n  none\n"));
}

fn get(path_and_query: &'static str, status: u16, response: serde_json::Value) -> Exchange {
    exchange("GET", path_and_query, status, response)
}

fn list(kind: &str, items: Vec<serde_json::Value>, next: Option<&str>) -> serde_json::Value {
    json!({"kind": kind, "apiVersion": "v1", "metadata": {"continue": next}, "items": items})
}

/// `fetch` pages through lists (500 at a time), keeps only Jobs with state and candidate
/// pods, reads each of their nodes once, and tolerates a missing Lease.
#[tokio::test]
async fn fetch_pages_lists_and_reads_only_what_status_shows() {
    let with_state = serde_json::to_value(job(
        "team-a",
        "train",
        Some(RecoveryState::default().to_annotation()),
        false,
    ))
    .unwrap();
    let without = serde_json::to_value(job("team-a", "quiet", None, false)).unwrap();
    let candidate = |name: &str| {
        serde_json::to_value(pod(
            "team-a",
            name,
            Some("train"),
            "node-a",
            "2026-11-21T02:00:00Z",
        ))
        .unwrap()
    };
    let mut running = candidate("running");
    running["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("deletionTimestamp");
    let script = vec![
        get(
            "/apis/batch/v1/namespaces/team-a/jobs?&limit=500",
            200,
            list("JobList", vec![with_state], Some("tok-1")),
        ),
        get(
            "/apis/batch/v1/namespaces/team-a/jobs?&limit=500&continue=tok-1",
            200,
            list("JobList", vec![without], None),
        ),
        get(
            "/api/v1/namespaces/team-a/pods?&limit=500",
            200,
            list(
                "PodList",
                vec![candidate("p-0"), running, candidate("p-1")],
                None,
            ),
        ),
        get(
            "/api/v1/nodes?&limit=500",
            200,
            list(
                "NodeList",
                vec![serde_json::to_value(node("node-a", true).1).unwrap()],
                None,
            ),
        ),
        get(
            "/apis/coordination.k8s.io/v1/namespaces/jobgate-system/leases/jobgate-reconciler",
            404,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "reason": "NotFound", "code": 404}),
        ),
    ];
    let (client, handle) = mock();
    let server = tokio::spawn(serve(handle, script));
    let snap = fetch(
        &client,
        Some("team-a".into()),
        &options(),
        DEFAULT_LEASE_NAMESPACE,
        DEFAULT_LEASE_NAME,
    )
    .await
    .unwrap();
    server.await.unwrap();
    let names = |v: Vec<Option<String>>| v.into_iter().flatten().collect::<Vec<_>>();
    assert_eq!(
        names(snap.jobs.iter().map(|j| j.metadata.name.clone()).collect()),
        ["train"]
    );
    assert_eq!(
        names(snap.pods.iter().map(|p| p.metadata.name.clone()).collect()),
        ["p-0", "p-1"]
    );
    assert_eq!(snap.nodes.keys().collect::<Vec<_>>(), ["node-a"]);
    assert!(snap.lease.is_none());
}

/// Status has no rule of its own: without the limit flag it predicts a reconciler without the
/// flag, which starts the next episode of a Job whose limit was recorded (the Job is still
/// suspended, so the count is not reset: episode 4).
#[test]
fn without_the_limit_flag_status_predicts_a_new_episode_as_the_reconciler_would() {
    let mut options = options();
    options.episode.limit_count = None;
    let text = render(&snapshot(), &options, ts("2026-11-21T03:03:00Z"));
    assert!(
        text.contains("etl-0     etl     node-c   unreachable   2026-11-21T02:41:00Z   due: episode 4 on the next pass"),
        "{text}"
    );
}

/// Issue "Recovery safety beyond Kueue": `jobgate status` shows the pods the partition brake
/// holds, with the reason. Without the healthy nodes, 3 of 4 nodes are unreachable in the one
/// (unlabelled) zone: at least 3 and at least 55 %.
#[test]
fn held_pods_are_shown_with_the_reason() {
    let mut snap = snapshot();
    snap.nodes
        .retain(|name, _| ["node-a", "node-b", "node-c", "node-d"].contains(&name.as_str()));
    let text = render(&snap, &options(), ts("2026-11-21T03:03:00Z"));
    assert!(
        text.contains("team-c      bare      -       node-a   unreachable   2026-11-21T02:01:00Z   not recovered: held: zone `` has 3/4 nodes unreachable"),
        "{text}"
    );
    assert!(
        text.contains("train-5   train   node-d   reachable     2026-11-21T02:01:00Z   waiting for the node to become unreachable"),
        "{text}"
    );
    let mut off = options();
    off.brake.enabled = false;
    let text = render(&snap, &off, ts("2026-11-21T03:03:00Z"));
    assert!(
        text.contains("due: recovered on the next pass (no Job: no backoff)"),
        "{text}"
    );
}

/// With `--on-recovery-limit=deactivate-workload`, status says what reaching the limit does.
#[test]
fn status_names_the_workload_deactivation_at_the_limit() {
    let mut options = options();
    options.episode.limit_count = Some(2);
    options.episode.on_limit = LimitAction::DeactivateWorkload;
    let text = render(&snapshot(), &options, ts("2026-11-21T03:05:00Z"));
    assert!(
        text.contains("train-3   train   node-a   unreachable   2026-11-21T03:02:00Z   not recovered: the Job reaches its recovery limit on the next pass (and its Kueue Workload is deactivated, or without one it is suspended)"),
        "{text}"
    );
}

#[test]
fn json_output_carries_the_same_leader_jobs_and_verdicts_as_the_tables() {
    let now = ts("2026-11-21T03:03:00Z");
    let snap = snapshot();
    let text = render(&snap, &options(), now);
    let v = super::json::render_json(&snap, &options(), now);
    assert_eq!(v["leader"]["summary"], text.lines().next().unwrap_or(""));
    let pods = v["pods"].as_array().expect("pods");
    assert!(!pods.is_empty());
    for p in pods {
        let (name, status) = (p["name"].as_str().unwrap(), p["status"].as_str().unwrap());
        assert!(
            text.lines()
                .any(|l| l.contains(&format!(" {name} ")) && l.trim_end().ends_with(status)),
            "{name}: {status}\n{text}"
        );
    }
    let jobs = v["jobs"].as_array().expect("jobs");
    assert!(!jobs.is_empty());
    for j in jobs {
        let name = j["name"].as_str().unwrap();
        assert!(text.contains(name), "{name}");
    }
}
