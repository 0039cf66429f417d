//! Scripted API conversations against a mocked `kube::Client` (tower-test): every request the
//! reconciler and the elector send is checked in order (method, path, body), and answered with
//! the scripted status and body. An unexpected extra request makes the scenario time out.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::watched_node::WatchedNode;
use futures::StreamExt;
use hyper::{Request, Response};
use k8s_openapi::jiff::Timestamp;
use kube::client::Body;
use kube::runtime::controller::Action;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use serde_json::{Value, json};
use tower_test::mock::Handle;

use super::context::{EpisodeGate, PodState, Waiting, lock};
use super::filter::{PodKey, PodMetadata};
use super::metrics::{NodeLabels, RecoveryMetrics};
use super::reconcile::{
    CONFLICT_ATTEMPTS, ReconcileError, WAIT_FOR_NODE_RESYNC, error_policy, reconcile_pod,
};
use super::run::run_with_client;
use super::watch::drive_node_watch;
use super::*;
use crate::recovery::facts::UNREACHABLE_TAINT_KEY;
use crate::recovery::{self, NodeFacts};
use crate::runtime::Readiness;
use crate::runtime::lease::Leadership;
use crate::runtime::scripted::{
    Exchange, LEASE_PATH, LEASES_PATH, Received, exchange, lease_json, mock, receive, respond,
    serve, status_body,
};

const KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";
const NOW: &str = "2026-11-21T20:00:00Z";
/// When the test contexts' node list was delivered: long enough before `NOW` that the
/// partition brake judges a settled view.
const LISTED: &str = "2026-11-21T19:59:00Z";
const MESSAGE: &str = "Pod forcefully terminated after 90s grace period due to unreachable node `node-a` (triggered by `kueue.x-k8s.io/safe-to-forcefully-terminate` annotation)";

fn ts(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

fn node(name: &str, unreachable: bool) -> NodeFacts {
    NodeFacts::for_test(name, unreachable)
}

fn context(client: Client, options: Options, leadership: Leadership, now: &str) -> Context {
    let now = ts(now);
    let ctx = Context::new(
        client,
        recovery::RecoveryConfig::default(),
        Options {
            identity: "jobgate-test".into(),
            ..options
        },
        leadership,
        RecoveryMetrics::default(),
    )
    .with_clock(move || now);
    {
        let mut nodes = lock(&ctx.nodes);
        nodes.apply(Event::Init, ts(LISTED));
        nodes.apply(Event::InitApply(node("node-a", true)), ts(LISTED));
        nodes.apply(Event::InitApply(node("node-b", false)), ts(LISTED));
        nodes.apply(Event::InitDone, ts(LISTED));
    }
    ctx
}

fn pod_json(rv: &str, phase: &str, conditions: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "pod", "namespace": "ns", "uid": "uid-1", "resourceVersion": rv,
            "annotations": {KEY: "true"},
            "deletionTimestamp": "2026-11-21T19:57:00Z",
            "deletionGracePeriodSeconds": 30
        },
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": phase, "conditions": conditions}
    })
}

fn running_pod(rv: &str) -> Value {
    pod_json(rv, "Running", json!([]))
}

fn node_json(name: &str, unreachable: bool) -> Value {
    let taints = if unreachable {
        json!([{"key": UNREACHABLE_TAINT_KEY, "effect": "NoExecute", "timeAdded": "2026-11-21T19:56:00Z"}])
    } else {
        json!([])
    };
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"taints": taints}})
}

const POD_PATH: &str = "/api/v1/namespaces/ns/pods/pod";
const STATUS_PATH: &str = "/api/v1/namespaces/ns/pods/pod/status";
const NODE_PATH: &str = "/api/v1/nodes/node-a";
const EVENTS_PATH: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";

fn get_pod(response: Value) -> Exchange {
    exchange("GET", POD_PATH, 200, response)
}

fn get_node_a(unreachable: bool) -> Exchange {
    exchange("GET", NODE_PATH, 200, node_json("node-a", unreachable))
}

fn expected_patch(rv: &str) -> Value {
    json!({
        "metadata": {"resourceVersion": rv},
        "status": {
            "phase": "Failed",
            "conditions": [{
                "type": "KueueFailureRecovery",
                "status": "True",
                "reason": "KueueForcefullyTerminated",
                "message": MESSAGE,
                "lastTransitionTime": NOW,
            }]
        }
    })
}

fn patch_status(rv: &str, status: u16, response: Value) -> Exchange {
    let expected = expected_patch(rv);
    exchange("PATCH", STATUS_PATH, status, response).checking(move |query, content_type, body| {
        assert_eq!(content_type, Some("application/strategic-merge-patch+json"));
        assert!(query.contains("fieldManager=jobgate-reconciler"), "{query}");
        assert_eq!(body, &expected);
    })
}

fn warning_event(regarding_rv: &'static str) -> Exchange {
    exchange("POST", EVENTS_PATH, 201, json!({})).checking(move |_, _, body| {
        assert_eq!(body["type"], "Warning");
        assert_eq!(body["reason"], "KueueForcefullyTerminated");
        assert_eq!(body["action"], "ForcefulTermination");
        assert_eq!(body["note"], MESSAGE);
        assert_eq!(body["reportingController"], "jobgate.dev/reconciler");
        assert_eq!(body["reportingInstance"], "jobgate-test");
        assert_eq!(body["eventTime"], "2026-11-21T20:00:00.000000Z");
        assert_eq!(
            body["regarding"],
            json!({"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "pod",
                   "uid": "uid-1", "resourceVersion": regarding_rv})
        );
        assert_eq!(body["metadata"]["namespace"], "ns");
        assert!(
            body["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("pod."))
        );
    })
}

fn delete_pod(status: u16, response: Value) -> Exchange {
    exchange("DELETE", POD_PATH, status, response).checking(|_, _, body| {
        assert_eq!(body["gracePeriodSeconds"], 0, "{body}");
        assert_eq!(body["preconditions"], json!({"uid": "uid-1"}), "{body}");
    })
}

async fn run_scenario(
    ctx: &Context,
    handle: Handle<Request<Body>, Response<Body>>,
    script: Vec<Exchange>,
) -> Result<Action, ReconcileError> {
    let server = tokio::spawn(serve(handle, script));
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        reconcile_pod(ctx, &PodKey::new("ns", "pod")),
    )
    .await
    .expect("reconcile made an unscripted request (timed out waiting for a response)");
    server.await.expect("script failed");
    result
}

fn terminated(ctx: &Context, node: &str) -> u64 {
    ctx.metrics
        .terminated
        .get_or_create(&NodeLabels { node: node.into() })
        .get()
}

// KEP-6757 (docs/src/recovery.md, "What happens to a recovered pod, in order"): patch status with resourceVersion, then the Warning event
// (after the patch succeeded), then delete with grace period 0 (kueue#9649).
#[tokio::test]
async fn recovers_pod_patch_then_event_then_delete() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let script = vec![
        get_pod(running_pod("100")),
        get_node_a(true),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
        delete_pod(200, running_pod("102")),
    ];
    let action = run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
    assert_eq!(terminated(&ctx, "node-a"), 1);
    assert_eq!(ctx.metrics.pending.get(), 0);
}

/// A due pod read at resourceVersion 100 whose status patch meets a newer one.
fn conflicting_patch() -> Vec<Exchange> {
    vec![
        get_pod(running_pod("100")),
        get_node_a(true),
        patch_status("100", 409, status_body(409, "Conflict")),
    ]
}

// "Conflict or API error: retry with backoff; never act on stale data": a 409 ends the
// reconcile (no sleep, no second try inside it) with the error the one error policy reads again
// soon; the next reconcile re-reads the pod and patches with the new resourceVersion.
#[tokio::test]
async fn conflict_rereads_the_pod_and_patches_with_the_new_resource_version() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let err = run_scenario(&ctx, handle, conflicting_patch())
        .await
        .expect_err("conflict");
    assert!(matches!(err, ReconcileError::Conflict), "{err}");
    let key = PodKey::new("ns", "pod");
    assert_eq!(
        error_policy(&ctx, &key, &err),
        Action::requeue(Duration::from_millis(50))
    );
    let (client, handle) = mock();
    let ctx = ctx.with_client(client);
    let script = vec![
        get_pod(running_pod("105")),
        get_node_a(true),
        patch_status("105", 200, pod_json("106", "Failed", json!([]))),
        warning_event("106"),
        delete_pod(200, running_pod("107")),
    ];
    run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(terminated(&ctx, "node-a"), 1);
    // A conflict read again is no error; the run of failures ended with the recovery.
    assert_eq!(ctx.metrics.error_count("reconcile_conflicts"), 0);
    assert_eq!(ctx.pod_state(&key).map(|t| t.retries), Some(0));
}

// The one error policy: conflicts in a row are read again at 50, 100, 200 ms; the fourth is
// counted and backs off 1s, 2s, 4s, ... like any other error, and nothing is ever recovered
// on a conflicting pod.
#[tokio::test]
async fn persistent_conflicts_end_in_the_error_backoff() {
    let (client, _) = mock();
    let mut ctx = context(client, Options::default(), Leadership::always(), NOW);
    let key = PodKey::new("ns", "pod");
    let mut actions = vec![];
    for _ in 0..CONFLICT_ATTEMPTS + 2 {
        let (client, handle) = mock();
        ctx = ctx.with_client(client);
        let err = run_scenario(&ctx, handle, conflicting_patch())
            .await
            .expect_err("conflict");
        assert_eq!(err.metric_label(), "reconcile_conflicts");
        actions.push(error_policy(&ctx, &key, &err));
    }
    assert_eq!(
        actions,
        [50, 100, 200, 1000, 2000, 4000].map(|ms| Action::requeue(Duration::from_millis(ms)))
    );
    assert_eq!(ctx.metrics.error_count("reconcile_conflicts"), 3);
    assert_eq!(terminated(&ctx, "node-a"), 0);
}

// Any other error backs off from the first: 1s, 2s, 4s, counted by kind.
#[tokio::test]
async fn api_errors_back_off_from_the_first() {
    let (client, _) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let key = PodKey::new("ns", "pod");
    let err = ReconcileError::Kube(kube::Error::Api(
        serde_json::from_value(status_body(500, "InternalError")).expect("status"),
    ));
    let actions: Vec<Action> = (0..3).map(|_| error_policy(&ctx, &key, &err)).collect();
    assert_eq!(
        actions,
        [1, 2, 4].map(|s| Action::requeue(Duration::from_secs(s)))
    );
    assert_eq!(ctx.metrics.error_count("reconcile_api"), 3);
}

#[tokio::test]
async fn server_error_on_patch_is_an_error_and_nothing_else_happens() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let script = vec![
        get_pod(running_pod("100")),
        get_node_a(true),
        patch_status("100", 500, status_body(500, "InternalError")),
    ];
    let err = run_scenario(&ctx, handle, script).await.expect_err("500");
    assert!(matches!(err, ReconcileError::Kube(_)), "{err}");
}

#[tokio::test]
async fn delete_not_found_is_done() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let script = vec![
        get_pod(running_pod("100")),
        get_node_a(true),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
        delete_pod(404, status_body(404, "NotFound")),
    ];
    let action = run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
}

// The UID precondition fails with 409 when a same-named successor replaced the pod.
#[tokio::test]
async fn delete_uid_precondition_conflict_is_done() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let script = vec![
        get_pod(running_pod("100")),
        get_node_a(true),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
        delete_pod(409, status_body(409, "Conflict")),
    ];
    run_scenario(&ctx, handle, script).await.expect("reconcile");
}

#[tokio::test]
async fn pod_gone_is_forgotten_without_further_calls() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    ctx.update(&PodKey::new("ns", "pod"), |t| {
        t.waiting = Some(Waiting::Node("node-a".into()))
    });
    assert_eq!(ctx.metrics.pending.get(), 1);
    let script = vec![exchange("GET", POD_PATH, 404, status_body(404, "NotFound"))];
    let action = run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
    assert!(lock(&ctx.pods).is_empty());
    assert_eq!(ctx.metrics.pending.get(), 0);
}

#[tokio::test]
async fn no_delete_records_but_keeps_the_pod() {
    let (client, handle) = mock();
    let options = Options {
        no_delete: true,
        ..Options::default()
    };
    let ctx = context(client, options, Leadership::always(), NOW);
    let script = vec![
        get_pod(running_pod("100")),
        get_node_a(true),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
    ];
    run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(terminated(&ctx, "node-a"), 1);
}

// A retry after a partial run (status recorded, delete failed): no second patch, no second
// event, just the delete.
#[tokio::test]
async fn retry_after_partial_run_only_deletes() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let recorded = pod_json(
        "101",
        "Failed",
        json!([{"type": "KueueFailureRecovery", "status": "True", "reason": "KueueForcefullyTerminated",
                "message": MESSAGE, "lastTransitionTime": "2026-11-21T19:59:00Z"}]),
    );
    let script = vec![
        get_pod(recorded),
        get_node_a(true),
        delete_pod(200, json!({})),
    ];
    run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(
        terminated(&ctx, "node-a"),
        0,
        "counted once, on the first run"
    );
}

#[tokio::test]
async fn dry_run_emits_one_normal_event_and_changes_nothing() {
    let (client, handle) = mock();
    let options = Options {
        dry_run: true,
        ..Options::default()
    };
    let ctx = context(client, options, Leadership::always(), NOW);
    let dry_event = exchange("POST", EVENTS_PATH, 201, json!({})).checking(|_, _, body| {
        assert_eq!(body["type"], "Normal");
        assert_eq!(body["reason"], "WouldForcefullyTerminate");
        assert_eq!(body["action"], "ForcefulTermination");
        assert_eq!(
            body["note"],
            "Dry run: would forcefully terminate pod after 90s grace period due to unreachable node `node-a` (triggered by `kueue.x-k8s.io/safe-to-forcefully-terminate` annotation)"
        );
    });
    let script = vec![get_pod(running_pod("100")), get_node_a(true), dry_event];
    run_scenario(&ctx, handle, script).await.expect("reconcile");
    // The same pod again: still no change, and no second event.
    let (client2, handle2) = mock();
    let ctx2 = ctx.with_client(client2);
    let script = vec![get_pod(running_pod("100")), get_node_a(true)];
    run_scenario(&ctx2, handle2, script)
        .await
        .expect("reconcile");
    assert_eq!(terminated(&ctx2, "node-a"), 0);
}

// "only the leader acts": a follower makes no API call at all.
#[tokio::test]
async fn follower_makes_no_calls() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::default(), NOW);
    let action = run_scenario(&ctx, handle, vec![]).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
}

// The cache said unreachable, the fresh read says the node is back: do not act.
#[tokio::test]
async fn fresh_node_read_overrides_a_stale_cache() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let script = vec![get_pod(running_pod("100")), get_node_a(false)];
    let action = run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::requeue(WAIT_FOR_NODE_RESYNC));
    assert_eq!(
        lock(&ctx.pods).get(&PodKey::new("ns", "pod")),
        Some(&PodState {
            node: Some("node-a".into()),
            waiting: Some(Waiting::Node("node-a".into())),
            ..PodState::default()
        })
    );
    assert_eq!(ctx.metrics.pending.get(), 1);
}

// "The deadline is checked before the node": requeue at exactly the deadline, no node read.
#[tokio::test]
async fn before_the_deadline_requeues_at_the_deadline_without_reading_the_node() {
    let (client, handle) = mock();
    let ctx = context(
        client,
        Options::default(),
        Leadership::always(),
        "2026-11-21T19:57:30Z",
    );
    let script = vec![get_pod(running_pod("100"))];
    let action = run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::requeue(Duration::from_secs(30)));
    assert_eq!(ctx.metrics.pending.get(), 1);
}

// Pods on a node that is reachable in the cache are not recovered, and the node is not read.
#[tokio::test]
async fn reachable_node_in_cache_waits_without_acting() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let mut on_b = running_pod("100");
    on_b["spec"]["nodeName"] = json!("node-b");
    let action = run_scenario(&ctx, handle, vec![get_pod(on_b)])
        .await
        .expect("reconcile");
    assert_eq!(action, Action::requeue(WAIT_FOR_NODE_RESYNC));
}

// A pod whose node edge fires is found through the node recorded at its last GET.
#[tokio::test]
async fn node_edge_finds_pods_by_recorded_node() {
    let (client, _handle) = mock();
    let ctx = Context::new(
        client,
        recovery::RecoveryConfig::default(),
        Options::default(),
        Leadership::always(),
        RecoveryMetrics::default(),
    );
    let a = PodKey::new("ns", "a");
    let b = PodKey::new("ns", "b");
    let unknown = PodKey::new("ns", "c");
    ctx.update(&a, |t| t.node = Some("node-a".into()));
    ctx.update(&b, |t| t.node = Some("node-b".into()));
    let eligible = vec![a.clone(), b, unknown.clone()];
    assert_eq!(ctx.pods_on_node("node-a", &eligible), vec![a, unknown]);
}

#[test]
fn rbac_covers_every_call_the_reconciler_makes() {
    let has = |group: &str, resource: &str, verb: &str| {
        RBAC.iter()
            .any(|(g, r, vs)| *g == group && *r == resource && vs.contains(&verb))
    };
    for (g, r, v) in [
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "pods", "get"),
        ("", "pods", "delete"),
        ("", "pods/status", "patch"),
        ("", "nodes", "get"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("events.k8s.io", "events", "create"),
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
        ("batch", "jobs", "get"),
        ("batch", "jobs", "patch"),
        ("kueue.x-k8s.io", "workloads", "list"),
        ("kueue.x-k8s.io", "workloads", "patch"),
    ] {
        assert!(has(g, r, v), "{g}/{r} {v}");
    }
}

// ---- the watches, end to end over the mocked API ----

/// Answers list requests with `pages` in order (the caller sets `continue` tokens), then holds
/// the watch request open forever, like an idle apiserver.
async fn serve_list_then_idle(
    mut handle: Handle<Request<Body>, Response<Body>>,
    pages: Vec<Value>,
    accept: Option<&'static str>,
) {
    let mut pages = pages.into_iter();
    let mut held = vec![];
    while let Some((request, send)) = handle.next_request().await {
        let query = request.uri().query().unwrap_or("").to_string();
        if let Some(expected) = accept {
            let got = request
                .headers()
                .get("accept")
                .and_then(|v| v.to_str().ok());
            assert!(
                got.is_some_and(|a| a.contains(expected)),
                "accept header {got:?} lacks {expected}"
            );
        }
        if query.contains("watch=true") {
            held.push(send);
            continue;
        }
        let page = pages.next().expect("an unexpected extra list request");
        send.send_response(
            Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(&page).expect("json")))
                .expect("response"),
        );
    }
}

fn meta_item(name: &str, annotations: Value, deleting: bool) -> Value {
    let mut item = json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": "1",
                     "annotations": annotations,
                     "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}]}
    });
    if deleting {
        item["metadata"]["deletionTimestamp"] = json!("2026-11-21T19:57:00Z");
    }
    item
}

fn list_page(kind: &str, items: Vec<Value>, cont: &str) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": "1000", "continue": cont}, "items": items})
}

async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn pod_watch_stores_only_eligible_pods_and_triggers_them_after_the_list() {
    let (client, handle) = mock();
    let ctx = Arc::new(context(
        client.clone(),
        Options::default(),
        Leadership::always(),
        NOW,
    ));
    let pages = vec![
        list_page(
            "PartialObjectMetadataList",
            vec![
                meta_item("eligible-1", json!({KEY: "true"}), true),
                meta_item("not-deleting", json!({KEY: "true"}), false),
            ],
            "page-2",
        ),
        list_page(
            "PartialObjectMetadataList",
            vec![
                meta_item("wrong-value", json!({KEY: "True"}), true),
                meta_item(
                    "eligible-2",
                    json!({"kueue.x-k8s.io/safe-to-forcefully-delete": "true", "big": "x"}),
                    true,
                ),
            ],
            "",
        ),
    ];
    // Metadata-only: the apiserver sends no spec and no status.
    let server = tokio::spawn(serve_list_then_idle(
        handle,
        pages,
        Some("as=PartialObjectMetadata"),
    ));
    let mut writer: Writer<PodMetadata> = Writer::default();
    let store = writer.as_reader();
    let (tx, mut rx) = futures::channel::mpsc::unbounded();
    let synced = Arc::new(AtomicBool::new(false));
    let readiness = Readiness::default();
    // Left over from before a relist: the pod is gone and must be forgotten.
    let vanished = PodKey::new("ns", "vanished");
    ctx.update(&vanished, |t| {
        t.waiting = Some(Waiting::Node("node-a".into()))
    });
    let driver = tokio::spawn({
        let (ctx, synced, readiness) = (ctx.clone(), synced.clone(), readiness.clone());
        async move {
            drive_pod_watch(
                Api::<PodMetadata>::all(client),
                watcher::Config::default().page_size(2),
                &mut writer,
                ctx,
                tx,
                synced,
                readiness,
            )
            .await
        }
    });
    wait_until("the pod list", || synced.load(Ordering::SeqCst)).await;
    let mut stored: Vec<String> = store
        .state()
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    stored.sort();
    assert_eq!(stored, vec!["eligible-1", "eligible-2"]);
    for p in store.state() {
        assert_eq!(p.metadata.managed_fields, None, "managedFields stripped");
        assert_eq!(p.metadata.annotations.as_ref().map(|a| a.len()), Some(1));
    }
    let mut triggered = vec![rx.next().await.expect("t1"), rx.next().await.expect("t2")];
    triggered.sort();
    assert_eq!(
        triggered,
        vec![
            PodKey::new("ns", "eligible-1"),
            PodKey::new("ns", "eligible-2")
        ]
    );
    assert!(!lock(&ctx.pods).contains_key(&vanished));
    assert_eq!(ctx.metrics.pending.get(), 0);
    // Nodes were synced by `context`, pods now: ready.
    assert!(readiness.is_ready());
    driver.abort();
    server.abort();
}

#[tokio::test]
async fn node_watch_rising_edge_triggers_the_pods_on_that_node() {
    let (client, handle) = mock();
    // A fresh context whose node cache is not synced yet.
    let ctx = Arc::new(Context::new(
        client.clone(),
        recovery::RecoveryConfig::default(),
        Options::default(),
        Leadership::always(),
        RecoveryMetrics::default(),
    ));
    let on_a = PodKey::new("ns", "on-a");
    let on_b = PodKey::new("ns", "on-b");
    ctx.update(&on_a, |t| t.node = Some("node-a".into()));
    ctx.update(&on_b, |t| t.node = Some("node-b".into()));
    let mut writer: Writer<PodMetadata> = Writer::default();
    for name in ["on-a", "on-b"] {
        let p: PodMetadata =
            serde_json::from_value(meta_item(name, json!({KEY: "true"}), true)).expect("meta");
        writer.apply_watcher_event(&Event::Apply(p));
    }
    let pages = vec![list_page(
        "NodeList",
        vec![node_json("node-a", true), node_json("node-b", false)],
        "",
    )];
    let server = tokio::spawn(serve_list_then_idle(handle, pages, None));
    let (tx, mut rx) = futures::channel::mpsc::unbounded();
    let synced = Arc::new(AtomicBool::new(true));
    let readiness = Readiness::default();
    let driver = tokio::spawn(drive_node_watch(
        Api::<WatchedNode>::all(client),
        ctx.clone(),
        writer.as_reader(),
        tx,
        synced,
        readiness.clone(),
    ));
    // node-a is unreachable in the initial list: its pod is re-checked (restart safety).
    assert_eq!(rx.next().await, Some(on_a));
    wait_until("readiness", || readiness.is_ready()).await;
    assert!(ctx.nodes_synced());
    assert!(rx.try_recv().is_err(), "node-b is reachable: nothing else");
    driver.abort();
    server.abort();
}

// A pod whose opt-in was removed since it was triggered leaves no state behind.
#[tokio::test]
async fn pod_no_longer_opted_in_is_forgotten() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let mut pod = running_pod("100");
    pod["metadata"]["annotations"][KEY] = json!("false");
    let action = run_scenario(&ctx, handle, vec![get_pod(pod)])
        .await
        .expect("reconcile");
    assert_eq!(action, Action::await_change());
    assert!(lock(&ctx.pods).is_empty());
}

// A missing node: nothing to do, no error (Kueue: client.IgnoreNotFound).
#[tokio::test]
async fn node_missing_from_cache_is_ignored_without_error() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let mut pod = running_pod("100");
    pod["spec"]["nodeName"] = json!("node-gone");
    let action = run_scenario(&ctx, handle, vec![get_pod(pod)])
        .await
        .expect("reconcile");
    assert_eq!(action, Action::await_change());
    assert_eq!(ctx.metrics.pending.get(), 0);
}

// The cache says unreachable but the node was deleted since: the fresh read decides.
#[tokio::test]
async fn node_deleted_since_the_cache_is_ignored() {
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let script = vec![
        get_pod(running_pod("100")),
        exchange("GET", NODE_PATH, 404, status_body(404, "NotFound")),
    ];
    let action = run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
    assert_eq!(terminated(&ctx, "node-a"), 0);
}

// ---- the whole sidecar over a mocked apiserver ----

/// A stateful fake apiserver for `run_with_client`: a Lease, one eligible pod on an unreachable
/// node and one pod without opt-in; records every request.
/// With `hold`, the answer to the status patch waits: the first sender says the patch arrived,
/// the receiver lets the answer go.
async fn fake_apiserver(
    mut handle: Handle<Request<Body>, Response<Body>>,
    log: Arc<Mutex<Vec<String>>>,
    lease: Option<Value>,
    deletion_timestamp: String,
    mut hold: Option<(
        tokio::sync::oneshot::Sender<()>,
        tokio::sync::oneshot::Receiver<()>,
    )>,
) {
    let mut lease = lease;
    let mut deleted = false;
    let mut held = vec![];
    let eligible_pod = |rv: &str, phase: &str| {
        let mut p = running_pod(rv);
        p["metadata"]["deletionTimestamp"] = json!(deletion_timestamp.clone());
        p["status"]["phase"] = json!(phase);
        p
    };
    while let Some((request, send)) = handle.next_request().await {
        let Received {
            method,
            path,
            query,
            body,
            ..
        } = receive(request).await;
        if query.contains("watch=true") {
            lock(&log).push(format!("WATCH {path}"));
            held.push(send);
            continue;
        }
        lock(&log).push(format!("{method} {path}"));
        let (status, response) = match (method.as_str(), path.as_str()) {
            ("GET", LEASE_PATH) => match &lease {
                Some(l) => (200, l.clone()),
                None => (404, status_body(404, "NotFound")),
            },
            ("POST", LEASES_PATH) | ("PUT", LEASE_PATH) => {
                let mut l = body.clone();
                let rv = lease
                    .as_ref()
                    .and_then(|l| l["metadata"]["resourceVersion"].as_str())
                    .and_then(|rv| rv.parse::<u64>().ok())
                    .unwrap_or(0);
                l["metadata"]["resourceVersion"] = json!((rv + 1).to_string());
                lease = Some(l.clone());
                (if method == "POST" { 201 } else { 200 }, l)
            }
            ("GET", "/api/v1/pods") => {
                let mut item = meta_item("pod", json!({KEY: "true"}), true);
                item["metadata"]["deletionTimestamp"] = json!(deletion_timestamp.clone());
                let items = if deleted {
                    vec![]
                } else {
                    vec![item, meta_item("bystander", json!({}), true)]
                };
                (200, list_page("PartialObjectMetadataList", items, ""))
            }
            ("GET", "/api/v1/nodes") => (
                200,
                // A reachable node too: one unreachable node alone would be every zone fully
                // disrupted, which the partition brake holds.
                list_page(
                    "NodeList",
                    vec![node_json("node-a", true), node_json("node-b", false)],
                    "",
                ),
            ),
            ("GET", NODE_PATH) => (200, node_json("node-a", true)),
            ("GET", POD_PATH) if !deleted => (200, eligible_pod("100", "Running")),
            ("GET", POD_PATH) => (404, status_body(404, "NotFound")),
            ("PATCH", STATUS_PATH) => (200, eligible_pod("101", "Failed")),
            ("POST", EVENTS_PATH) => (201, body.clone()),
            ("DELETE", POD_PATH) => {
                deleted = true;
                (200, eligible_pod("102", "Failed"))
            }
            _ => (404, status_body(404, "NotFound")),
        };
        if (method.as_str(), path.as_str()) == ("PATCH", STATUS_PATH)
            && let Some((arrived, release)) = hold.take()
        {
            let _ = arrived.send(());
            tokio::spawn(async move {
                let _ = release.await;
                respond(send, status, &response);
            });
            continue;
        }
        respond(send, status, &response);
    }
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("write");
    let mut out = String::new();
    stream.read_to_string(&mut out).await.expect("read");
    out
}

/// `jobgate reconcile` as replica-1 (Lease namespace `jobgate`, admin port on a free port, plus
/// `extra` flags) over `client`, until the returned sender fires; with its admin address.
async fn start_replica(
    client: Client,
    extra: &[&str],
) -> (
    tokio::task::JoinHandle<Result<(), RunError>>,
    tokio::sync::oneshot::Sender<()>,
    std::net::SocketAddr,
) {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ReconcileArgs,
    }
    let flags = [
        "jobgate",
        "--lease-namespace=jobgate",
        "--leader-election-id=replica-1",
        "--admin-addr=127.0.0.1:0",
    ];
    let args = Cli::try_parse_from(flags.iter().chain(extra))
        .expect("args")
        .args;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
    let replica = tokio::spawn(run_with_client(
        client,
        args,
        async move {
            let _ = stop_rx.await;
        },
        move |addr| {
            let _ = addr_tx.send(addr);
        },
    ));
    let admin = addr_rx.await.expect("admin address");
    (replica, stop_tx, admin)
}

#[tokio::test]
async fn sidecar_elects_itself_recovers_the_pod_and_releases_the_lease() {
    let (client, handle) = mock();
    let log = Arc::new(Mutex::new(Vec::new()));
    let deletion = Timestamp::now()
        .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(300))
        .expect("ts");
    let server = tokio::spawn(fake_apiserver(
        handle,
        log.clone(),
        None,
        recovery::record::rfc3339_seconds(deletion),
        None,
    ));
    // The node listed unreachable at the start is a fresh rising edge: the pod is recovered
    // once the node stream has settled (1 s here, 10 s by default), never before.
    let started = std::time::Instant::now();
    let (sidecar, stop_tx, admin) = start_replica(client, &["--partition-settle-period=1s"]).await;
    wait_until("the pod deleted", || {
        lock(&log)
            .iter()
            .any(|r| r == &format!("DELETE {POD_PATH}"))
    })
    .await;
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(http_get(admin, "/readyz").await.starts_with("HTTP/1.1 200"));
    let metrics = http_get(admin, "/metrics").await;
    assert!(
        metrics.contains("jobgate_recovery_pods_terminated_total{node=\"node-a\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("jobgate_recovery_leader 1"), "{metrics}");
    stop_tx.send(()).expect("stop");
    sidecar.await.expect("join").expect("run");

    let log = lock(&log).clone();
    let position = |r: &str| {
        log.iter()
            .position(|l| l == r)
            .unwrap_or_else(|| panic!("{r} missing in {log:?}"))
    };
    // Elected before acting; patch, then event, then delete; the bystander is never read.
    assert!(position(&format!("POST {LEASES_PATH}")) < position(&format!("PATCH {STATUS_PATH}")));
    assert!(position(&format!("PATCH {STATUS_PATH}")) < position(&format!("POST {EVENTS_PATH}")));
    assert!(position(&format!("POST {EVENTS_PATH}")) < position(&format!("DELETE {POD_PATH}")));
    assert!(!log.iter().any(|l| l.contains("bystander")), "{log:?}");
    assert_eq!(
        log.iter().filter(|l| l.starts_with("PATCH")).count(),
        1,
        "{log:?}"
    );
    // Released on shutdown: the last Lease write.
    assert_eq!(
        log.iter().rev().find(|l| l.contains("leases")),
        Some(&format!("PUT {LEASE_PATH}"))
    );
    server.abort();
}

// ---- KEP-1282 requeuing backoff: per-Job recovery episodes between the pod's decision and its recovery ----

use crate::recovery::backoff::Backoff;
use crate::recovery::episode::{
    EpisodeConfig, LimitAction, LimitExceeded, RECOVERY_STATE_ANNOTATION, RecoveryState,
};
use kube::runtime::reflector::store::Writer;

const JOB_PATH: &str = "/apis/batch/v1/namespaces/ns/jobs/train";

fn owned_by_train(mut pod: Value) -> Value {
    pod["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "uid-train",
        "controller": true, "blockOwnerDeletion": true
    }]);
    pod
}

fn job_json(rv: &str, state: Option<&RecoveryState>) -> Value {
    let annotations = match state {
        Some(s) => json!({RECOVERY_STATE_ANNOTATION: s.to_annotation()}),
        None => json!({}),
    };
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ns", "uid": "uid-train",
                     "resourceVersion": rv, "annotations": annotations},
        "spec": {"template": {"spec": {"containers": []}}}
    })
}

struct EpisodeHarness {
    ctx: Context,
    writer: Writer<PodMetadata>,
    triggers: futures::channel::mpsc::UnboundedReceiver<PodKey>,
}

fn episode_context(client: Client, config: EpisodeConfig) -> EpisodeHarness {
    let writer: Writer<PodMetadata> = Writer::default();
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let ctx =
        context(client, Options::default(), Leadership::always(), NOW).with_episodes(EpisodeGate {
            config,
            store: writer.as_reader(),
            triggers: tx,
            jitter: || 0.0,
        });
    EpisodeHarness {
        ctx,
        writer,
        triggers: rx,
    }
}

/// Episode 4, on node-c, started at 19:56:00, before the pod's deletion was asked (19:56:30):
/// the pod is not one of its leftovers and waits for its requeueAt (480 s later).
fn earlier_episode() -> RecoveryState {
    RecoveryState {
        count: 4,
        requeue_at: Some(ts("2026-11-21T20:04:00Z")),
        last_recovery_time: Some(ts("2026-11-21T19:56:00Z")),
        last_nodes: vec!["node-c".into()],
        limit_exceeded: None,
    }
}

fn first_state() -> RecoveryState {
    RecoveryState {
        count: 1,
        requeue_at: Some(ts("2026-11-21T20:01:00Z")),
        last_recovery_time: Some(ts(NOW)),
        last_nodes: vec!["node-a".into()],
        limit_exceeded: None,
    }
}

// docs/src/recovery-backoff.md: the first episode of a Job is recorded on the Job (state with the resourceVersion
// read, then the Normal event) before the pod is recovered as KEP-6757 says; a sibling that is due
// on the same dead node is triggered to join the same episode.
#[tokio::test]
async fn a_jobs_first_episode_is_recorded_before_its_pod_is_recovered() {
    let (client, handle) = mock();
    let mut h = episode_context(client, EpisodeConfig::default());
    // A sibling in the store, last seen on node-a, due since 19:58.
    let sibling: PodMetadata = serde_json::from_value(owned_by_train(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "sibling", "namespace": "ns", "uid": "uid-2",
                     "annotations": {KEY: "true"}, "deletionTimestamp": "2026-11-21T19:57:00Z"}
    })))
    .expect("sibling");
    h.writer.apply_watcher_event(&Event::Apply(sibling));
    h.ctx.update(&PodKey::new("ns", "sibling"), |t| {
        t.node = Some("node-a".into())
    });
    let state = RecoveryState {
        last_nodes: vec!["node-a".into()],
        ..first_state()
    };
    let script = vec![
        get_pod(owned_by_train(running_pod("100"))),
        get_node_a(true),
        exchange("GET", JOB_PATH, 200, job_json("7", None)),
        exchange("PATCH", JOB_PATH, 200, job_json("8", Some(&state))).checking(
            move |query, content_type, body| {
                assert_eq!(content_type, Some("application/merge-patch+json"));
                assert!(query.contains("fieldManager=jobgate-reconciler"), "{query}");
                assert_eq!(
                    body,
                    &json!({"metadata": {"resourceVersion": "7", "annotations": {
                        RECOVERY_STATE_ANNOTATION: state.to_annotation()}}})
                );
            },
        ),
        exchange("POST", EVENTS_PATH, 201, json!({})).checking(|_, _, body| {
            assert_eq!(body["type"], "Normal");
            assert_eq!(body["reason"], "RecoveryEpisode");
            assert_eq!(body["regarding"]["kind"], "Job");
            assert_eq!(
                body["note"],
                "Recovery episode 1: forcefully terminating 2 pod(s) on unreachable node(s) \
                 node-a: pod, sibling; next episode not before 2026-11-21T20:01:00Z"
            );
        }),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
        delete_pod(200, running_pod("102")),
    ];
    let action = run_scenario(&h.ctx, handle, script)
        .await
        .expect("reconcile");
    assert_eq!(action, Action::await_change());
    assert_eq!(terminated(&h.ctx, "node-a"), 1);
    assert_eq!(h.ctx.metrics.episodes.get(), 1);
    assert_eq!(h.ctx.metrics.limit_exceeded.get(), 0);
    assert_eq!(
        h.triggers.try_recv().ok(),
        Some(PodKey::new("ns", "sibling"))
    );
}

// Under --dry-run nothing is recorded on the Job, so an episode that would start triggers no
// sibling: each pod is reported once by its own reconcile. (Triggering them made two siblings
// trigger each other for ever: each found the Job still without state and "started" the episode
// again.)
#[tokio::test]
async fn a_dry_run_episode_triggers_no_sibling() {
    let (client, handle) = mock();
    let mut writer: Writer<PodMetadata> = Writer::default();
    let (tx, mut triggers) = futures::channel::mpsc::unbounded();
    let options = Options {
        dry_run: true,
        ..Options::default()
    };
    let ctx = context(client, options, Leadership::always(), NOW).with_episodes(EpisodeGate {
        config: EpisodeConfig::default(),
        store: writer.as_reader(),
        triggers: tx,
        jitter: || 0.0,
    });
    let sibling: PodMetadata = serde_json::from_value(owned_by_train(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "sibling", "namespace": "ns", "uid": "uid-2",
                     "annotations": {KEY: "true"}, "deletionTimestamp": "2026-11-21T19:57:00Z"}
    })))
    .expect("sibling");
    writer.apply_watcher_event(&Event::Apply(sibling));
    ctx.update(&PodKey::new("ns", "sibling"), |t| {
        t.node = Some("node-a".into())
    });
    let script = vec![
        get_pod(owned_by_train(running_pod("100"))),
        get_node_a(true),
        exchange("GET", JOB_PATH, 200, job_json("7", None)),
        exchange("POST", EVENTS_PATH, 201, json!({})).checking(|_, _, body| {
            assert_eq!(body["type"], "Normal");
            assert_eq!(body["reason"], "WouldForcefullyTerminate");
        }),
    ];
    let action = run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
    assert!(triggers.try_recv().is_err(), "a sibling was triggered");
    assert_eq!(ctx.metrics.episodes.get(), 0);
}

// docs/src/recovery-backoff.md: "Pods due earlier are requeued for requeueAt, not dropped": a pod of a Job whose last
// episode (on another node) is too recent waits without any write.
#[tokio::test]
async fn a_pod_due_during_its_jobs_backoff_is_requeued_for_requeue_at() {
    let (client, handle) = mock();
    let h = episode_context(client, EpisodeConfig::default());
    let script = vec![
        get_pod(owned_by_train(running_pod("100"))),
        get_node_a(true),
        exchange(
            "GET",
            JOB_PATH,
            200,
            job_json("7", Some(&earlier_episode())),
        ),
    ];
    let action = run_scenario(&h.ctx, handle, script)
        .await
        .expect("reconcile");
    assert_eq!(action, Action::requeue(Duration::from_secs(240)));
    assert_eq!(terminated(&h.ctx, "node-a"), 0);
    assert_eq!(h.ctx.metrics.pending.get(), 1);
    let tracked = lock(&h.ctx.pods).get(&PodKey::new("ns", "pod")).cloned();
    assert_eq!(
        tracked.and_then(|t| t.waiting),
        Some(Waiting::JobBackoff(ts("2026-11-21T20:04:00Z")))
    );
}

// A retried reconcile of a pod of the recorded episode (its recovery failed before) continues
// that episode: no Job write, the pod is recovered.
#[tokio::test]
async fn a_leftover_of_the_recorded_episode_is_recovered_without_a_job_write() {
    let (client, handle) = mock();
    let h = episode_context(client, EpisodeConfig::default());
    let script = vec![
        get_pod(owned_by_train(running_pod("100"))),
        get_node_a(true),
        exchange("GET", JOB_PATH, 200, job_json("8", Some(&first_state()))),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
        delete_pod(200, running_pod("102")),
    ];
    run_scenario(&h.ctx, handle, script)
        .await
        .expect("reconcile");
    assert_eq!(terminated(&h.ctx, "node-a"), 1);
    // Continuing the recorded episode is not a new one.
    assert_eq!(h.ctx.metrics.episodes.get(), 0);
}

// docs/src/recovery-backoff.md: "When the next episode would exceed N, jobgate does not recover; it emits Warning
// RecoveryLimitExceeded on the Job, records it in the state, and with
// --on-recovery-limit=suspend also sets spec.suspend: true".
#[tokio::test]
async fn at_the_limit_the_job_is_suspended_and_the_pod_is_left_alone() {
    let (client, handle) = mock();
    let config = EpisodeConfig {
        backoff: Backoff::default(),
        limit_count: Some(1),
        on_limit: LimitAction::Suspend,
    };
    let h = episode_context(client, config);
    let prior = RecoveryState {
        requeue_at: Some(ts("2026-11-21T19:59:00Z")),
        last_recovery_time: Some(ts("2026-11-21T19:58:00Z")),
        last_nodes: vec!["node-c".into()],
        ..first_state()
    };
    let recorded = RecoveryState {
        limit_exceeded: Some(LimitExceeded {
            time: ts(NOW),
            action: LimitAction::Suspend,
        }),
        ..prior.clone()
    };
    let script = vec![
        get_pod(owned_by_train(running_pod("100"))),
        get_node_a(true),
        exchange("GET", JOB_PATH, 200, job_json("7", Some(&prior))),
        exchange("PATCH", JOB_PATH, 200, job_json("8", Some(&recorded))).checking(
            move |_, _, body| {
                assert_eq!(body["spec"], json!({"suspend": true}));
                assert_eq!(body["metadata"]["resourceVersion"], "7");
                assert_eq!(
                    body["metadata"]["annotations"][RECOVERY_STATE_ANNOTATION],
                    recorded.to_annotation()
                );
            },
        ),
        exchange("POST", EVENTS_PATH, 201, json!({})).checking(|_, _, body| {
            assert_eq!(body["type"], "Warning");
            assert_eq!(body["reason"], "RecoveryLimitExceeded");
            assert_eq!(body["action"], "SuspendJob");
        }),
    ];
    let action = run_scenario(&h.ctx, handle, script)
        .await
        .expect("reconcile");
    assert_eq!(action, Action::requeue(WAIT_FOR_NODE_RESYNC));
    assert_eq!(terminated(&h.ctx, "node-a"), 0);
    assert_eq!(h.ctx.metrics.limit_exceeded.get(), 1);
    assert_eq!(h.ctx.metrics.episodes.get(), 0);
}

// A pod of a Job whose recovery is already recorded (Failed + KueueFailureRecovery: a delete that
// failed, a restart, or --no-delete) is reconciled again after the Job's backoff, with the limit
// reached: no new episode is counted, the Job is neither read nor suspended, the delete is
// finished.
#[tokio::test]
async fn a_recorded_pod_of_a_job_is_only_deleted_and_starts_no_episode() {
    let (client, handle) = mock();
    let config = EpisodeConfig {
        backoff: Backoff::default(),
        limit_count: Some(1),
        on_limit: LimitAction::Suspend,
    };
    let h = episode_context(client, config);
    let recorded = owned_by_train(pod_json(
        "101",
        "Failed",
        json!([{"type": "KueueFailureRecovery", "status": "True", "reason": "KueueForcefullyTerminated",
                "message": MESSAGE, "lastTransitionTime": "2026-11-21T19:58:00Z"}]),
    ));
    let script = vec![
        get_pod(recorded),
        get_node_a(true),
        delete_pod(200, json!({})),
    ];
    let action = run_scenario(&h.ctx, handle, script)
        .await
        .expect("reconcile");
    assert_eq!(action, Action::await_change());
    assert_eq!(terminated(&h.ctx, "node-a"), 0);
    // Remembered as recorded: it joins no episode of its siblings.
    let state = h.ctx.pod_state(&PodKey::new("ns", "pod"));
    assert_eq!(state.map(|t| t.recorded), Some(true));
}

// A pod without a Job owner is recovered as KEP-6757 says, without reading any Job.
#[tokio::test]
async fn a_pod_without_a_job_is_recovered_without_state() {
    let (client, handle) = mock();
    let h = episode_context(client, EpisodeConfig::default());
    let script = vec![
        get_pod(running_pod("100")),
        get_node_a(true),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
        delete_pod(200, running_pod("102")),
    ];
    run_scenario(&h.ctx, handle, script)
        .await
        .expect("reconcile");
    assert_eq!(terminated(&h.ctx, "node-a"), 1);
}

/// `status.conditions` of a pod Kueue's own controller recovered with `reason`, in either
/// generation's form: before kueue#16033 appended on every reconcile (here twice) without a
/// `lastTransitionTime`; from it (v0.20.0) set once with one.
fn kueue_recorded(reason: &str, generation: &str) -> Value {
    let key = if reason == "KueueForcefullyDeleted" {
        "kueue.x-k8s.io/safe-to-forcefully-delete"
    } else {
        "kueue.x-k8s.io/safe-to-forcefully-terminate"
    };
    let condition = |transition: Value| {
        json!({"type": "KueueFailureRecovery", "status": "True", "reason": reason,
               "message": format!("Pod forcefully terminated after 1m0.00000003s grace period due to unreachable node `node-a` (triggered by `{key}` annotation)"),
               "lastProbeTime": null, "lastTransitionTime": transition})
    };
    match generation {
        "appended" => json!([condition(json!(null)), condition(json!(null))]),
        _ => json!([condition(json!("2026-11-21T19:58:00Z"))]),
    }
}

// kueue#9651 and kueue#16033: a pod Kueue's own controller already recovered (Failed + its
// condition, with the reason of Kueue up to 0.15.5 or from 0.15.6, appended on every reconcile
// before kueue#16033 or set once from it) but whose delete has not landed is, for jobgate, a
// recorded recovery: no status patch (no second condition), no second event, no episode (the
// Job is not read even at the limit), only the delete is finished.
#[tokio::test]
async fn a_pod_kueue_recovered_in_either_generation_gets_no_second_condition_event_or_episode() {
    let config = EpisodeConfig {
        backoff: Backoff::default(),
        limit_count: Some(0),
        on_limit: LimitAction::Suspend,
    };
    for reason in ["KueueForcefullyTerminated", "KueueForcefullyDeleted"] {
        for generation in ["appended", "set once"] {
            let (client, handle) = mock();
            let h = episode_context(client, config);
            let by_kueue = owned_by_train(pod_json(
                "101",
                "Failed",
                kueue_recorded(reason, generation),
            ));
            let script = vec![
                get_pod(by_kueue),
                get_node_a(true),
                delete_pod(200, json!({})),
            ];
            let action = run_scenario(&h.ctx, handle, script)
                .await
                .expect("reconcile");
            assert_eq!(action, Action::await_change(), "{reason}, {generation}");
            assert_eq!(terminated(&h.ctx, "node-a"), 0, "{reason}, {generation}");
        }
    }
}

// ---- `jobgate status` predicts the reconciler: both over one table of states ----

/// A stateful apiserver for one reconcile: answers reads from `pod`, `node_a`/`node_b` and `job`
/// (absent: 404) and records every write as `METHOD path` (with the event's reason).
async fn serve_world(
    mut handle: Handle<Request<Body>, Response<Body>>,
    pod: Value,
    job: Option<Value>,
    writes: Arc<Mutex<Vec<String>>>,
) {
    while let Some((request, send)) = handle.next_request().await {
        let Received {
            method, path, body, ..
        } = receive(request).await;
        let not_found = (404, status_body(404, "NotFound"));
        let (status, response) = match (method.as_str(), path.as_str()) {
            ("GET", POD_PATH) => (200, pod.clone()),
            ("GET", NODE_PATH) => (200, node_json("node-a", true)),
            ("GET", "/api/v1/nodes/node-b") => (200, node_json("node-b", false)),
            ("GET", JOB_PATH) => job.clone().map(|j| (200, j)).unwrap_or(not_found),
            ("GET", _) => not_found,
            _ => {
                let reason = body["reason"].as_str().unwrap_or("");
                lock(&writes).push(format!("{method} {path} {reason}").trim().to_string());
                match (method.as_str(), path.as_str()) {
                    ("PATCH", JOB_PATH) => (200, job.clone().unwrap_or(Value::Null)),
                    ("POST", EVENTS_PATH) => (201, body.clone()),
                    _ => (200, pod.clone()),
                }
            }
        };
        respond(send, status, &response);
    }
}

/// The verdict both sides are reduced to.
#[derive(Clone, Debug, PartialEq)]
enum Agreed {
    Deadline(Timestamp),
    Node,
    Never,
    Recover,
    Backoff(Timestamp),
    Limit,
    Held,
    Settle(Timestamp),
    Finalizers,
}

fn status_agreed(verdict: &crate::status::verdict::PodVerdict) -> Agreed {
    use crate::recovery::plan::JobPlan;
    use crate::status::verdict::PodVerdict as V;
    match verdict {
        V::WaitingForDeadline(d) => Agreed::Deadline(*d),
        V::NotScheduled | V::NodeMissing | V::KueueRecovers => Agreed::Never,
        V::WaitingForNode => Agreed::Node,
        V::Settling(at) => Agreed::Settle(*at),
        V::Recorded | V::DueWithoutJob => Agreed::Recover,
        V::HeldByFinalizers(_) => Agreed::Finalizers,
        V::Held(_) => Agreed::Held,
        V::Job { plan, .. } => match plan {
            JobPlan::Orphan | JobPlan::Leftover | JobPlan::Start(_) => Agreed::Recover,
            JobPlan::Backoff(at) => Agreed::Backoff(*at),
            JobPlan::Limit(_) => Agreed::Limit,
        },
    }
}

// Issue: "`status` has no decision logic of its own". Over pod deadline × recovery already
// recorded (none, jobgate's reason, Kueue's newer reason, Kueue's two generations of writing
// it) × node (unscheduled, missing,
// reachable, unreachable) × Job (none, no state, backoff after an episode elsewhere, leftover of
// the recorded episode, limit reached now, limit recorded) × a zone the partition brake holds or
// not × --dry-run, `jobgate status` and one
// real reconcile over a stateful mocked apiserver reach the same verdict; a pod status shows as
// recorded is recovered without a status patch, and the Job is written exactly when status says
// an episode starts or the limit is reached now (never under --dry-run).
#[tokio::test]
async fn status_and_reconciler_agree_over_the_state_table() {
    let config = EpisodeConfig {
        backoff: Backoff::default(),
        limit_count: Some(1),
        on_limit: LimitAction::Stop,
    };
    let past_limit = RecoveryState {
        requeue_at: Some(ts("2026-11-21T19:59:00Z")),
        last_recovery_time: Some(ts("2026-11-21T19:58:00Z")),
        ..first_state()
    };
    let jobs: Vec<(&str, Option<Value>)> = vec![
        ("no Job", None),
        ("Job without state", Some(job_json("7", None))),
        (
            "Job in backoff after an episode on node-c that started before the pod's deletion",
            Some(job_json("7", Some(&earlier_episode()))),
        ),
        (
            "episode on node-a recorded now",
            Some(job_json("7", Some(&first_state()))),
        ),
        ("limit reached now", Some(job_json("7", Some(&past_limit)))),
        (
            "limit recorded",
            Some(job_json(
                "7",
                Some(&RecoveryState {
                    limit_exceeded: Some(LimitExceeded {
                        time: ts("2026-11-21T19:59:30Z"),
                        action: LimitAction::Stop,
                    }),
                    ..past_limit.clone()
                }),
            )),
        ),
    ];
    let recorded = |reason: &str| {
        json!([{"type": "KueueFailureRecovery", "status": "True", "reason": reason,
                "message": MESSAGE, "lastTransitionTime": "2026-11-21T19:59:00Z"}])
    };
    let records: Vec<(&str, Option<Value>)> = vec![
        ("not recorded", None),
        (
            "recorded by jobgate",
            Some(recorded("KueueForcefullyTerminated")),
        ),
        (
            "recorded by Kueue 0.17",
            Some(recorded("KueueForcefullyDeleted")),
        ),
        (
            "recorded by Kueue 0.15.5, appended twice without a transition time",
            Some(kueue_recorded("KueueForcefullyTerminated", "appended")),
        ),
        (
            "recorded by Kueue 0.20, set once",
            Some(kueue_recorded("KueueForcefullyDeleted", "set once")),
        ),
    ];
    let nodes = [None, Some("node-x"), Some("node-b"), Some("node-a")];
    let mut cases = 0;
    let mut seen = std::collections::BTreeSet::new();
    for deletion in ["2026-11-21T19:57:00Z", "2026-11-21T19:59:30Z"] {
        for (record_name, record) in &records {
            for node in nodes {
                for (job_name, job) in &jobs {
                    for (crowded, dry_run) in
                        [(false, false), (false, true), (true, false), (true, true)]
                    {
                        let mut pod = match record {
                            Some(conditions) => pod_json("100", "Failed", conditions.clone()),
                            None => running_pod("100"),
                        };
                        pod["metadata"]["deletionTimestamp"] = json!(deletion);
                        match node {
                            Some(n) => pod["spec"]["nodeName"] = json!(n),
                            None => {
                                if let Some(spec) = pod["spec"].as_object_mut() {
                                    spec.remove("nodeName");
                                }
                            }
                        }
                        if job.is_some() {
                            pod = owned_by_train(pod);
                        }
                        let what = format!(
                            "deletion {deletion}, {record_name}, node {node:?}, {job_name}, dry run {dry_run}, crowded {crowded}"
                        );

                        // The reconciler.
                        let (client, handle) = mock();
                        let writes = Arc::new(Mutex::new(Vec::new()));
                        let server = tokio::spawn(serve_world(
                            handle,
                            pod.clone(),
                            job.clone(),
                            writes.clone(),
                        ));
                        let store: Writer<PodMetadata> = Writer::default();
                        let (tx, _rx) = futures::channel::mpsc::unbounded();
                        let options = Options {
                            dry_run,
                            ..Options::default()
                        };
                        let ctx = context(client, options, Leadership::always(), NOW)
                            .with_episodes(EpisodeGate {
                                config,
                                store: store.as_reader(),
                                triggers: tx,
                                jitter: || 0.0,
                            });
                        // Crowded: 3 more unreachable nodes, 4 of 5 in the one zone: the
                        // partition brake holds.
                        let crowd: Vec<(String, bool)> = if crowded {
                            (1..=3).map(|i| (format!("x-{i}"), true)).collect()
                        } else {
                            vec![]
                        };
                        for (name, unreachable) in &crowd {
                            lock(&ctx.nodes).apply(
                                Event::Apply(NodeFacts::for_test(name, *unreachable)),
                                ts(LISTED),
                            );
                        }
                        let key = PodKey::new("ns", "pod");
                        tokio::time::timeout(Duration::from_secs(10), reconcile_pod(&ctx, &key))
                            .await
                            .expect("reconcile hung")
                            .unwrap_or_else(|e| panic!("{what}: {e}"));
                        server.abort();
                        let writes = lock(&writes).clone();
                        let has = |w: &str| writes.iter().any(|l| l == w);
                        let status_patched = has(&format!("PATCH {STATUS_PATH}"));
                        let deleted = has(&format!("DELETE {POD_PATH}"));
                        let job_patched = has(&format!("PATCH {JOB_PATH}"));
                        let would = has(&format!("POST {EVENTS_PATH} WouldForcefullyTerminate"));
                        let reconciler = if status_patched || deleted || would {
                            Agreed::Recover
                        } else {
                            match ctx.pod_state(&key).and_then(|s| s.waiting) {
                                Some(Waiting::Deadline(d)) => Agreed::Deadline(d),
                                Some(Waiting::Node(_)) => Agreed::Node,
                                Some(Waiting::JobBackoff(at)) => Agreed::Backoff(at),
                                Some(Waiting::JobRecoveryLimit) => Agreed::Limit,
                                Some(Waiting::Held { .. }) => Agreed::Held,
                                Some(Waiting::Settle(at)) => Agreed::Settle(at),
                                None => Agreed::Never,
                            }
                        };

                        // `jobgate status` over the same objects.
                        let snapshot = crate::status::snapshot::Snapshot {
                            pods: vec![serde_json::from_value(pod.clone()).expect("pod")],
                            nodes: [("node-a".to_string(), true), ("node-b".to_string(), false)]
                                .into_iter()
                                .chain(crowd.clone())
                                .map(|(n, u)| {
                                    let node =
                                        serde_json::from_value(node_json(&n, u)).expect("node");
                                    (n, node)
                                })
                                .collect(),
                            jobs: job
                                .iter()
                                .map(|j| serde_json::from_value(j.clone()).expect("job"))
                                .collect(),
                            ..crate::status::snapshot::Snapshot::default()
                        };
                        let render_options = crate::status::RenderOptions {
                            config: recovery::RecoveryConfig::default(),
                            episode: config,
                            brake: ctx.brake,
                        };
                        let rows =
                            crate::status::verdict::pod_rows(&snapshot, &render_options, ts(NOW));
                        assert_eq!(rows.len(), 1, "{what}");
                        let verdict = &rows[0].verdict;
                        assert_eq!(reconciler, status_agreed(verdict), "{what}: {writes:?}");

                        use crate::recovery::plan::JobPlan;
                        use crate::status::verdict::PodVerdict;
                        if dry_run {
                            assert!(
                                !status_patched && !deleted && !job_patched,
                                "{what}: dry run wrote {writes:?}"
                            );
                        } else {
                            assert_eq!(
                                matches!(verdict, PodVerdict::Recorded),
                                reconciler == Agreed::Recover && !status_patched,
                                "{what}: {writes:?}"
                            );
                            assert_eq!(
                                matches!(
                                    verdict,
                                    PodVerdict::Job {
                                        plan: JobPlan::Start(_) | JobPlan::Limit(Some(_)),
                                        ..
                                    }
                                ),
                                job_patched,
                                "{what}: {writes:?}"
                            );
                        }
                        seen.insert(format!("{reconciler:?}"));
                        cases += 1;
                    }
                }
            }
        }
    }
    assert_eq!(cases, 2 * 5 * 4 * 6 * 2 * 2);
    // Every verdict occurs in the table.
    assert_eq!(seen.len(), 7, "{seen:?}");
}

// kube-runtime's graceful shutdown (`Controller::graceful_shutdown_on`): on SIGTERM no new
// reconcile starts, but the one in flight (here held at its status patch) finishes its event and
// delete before the Lease is released and `run` returns.
#[tokio::test]
async fn shutdown_drains_the_reconcile_in_flight_then_releases_the_lease() {
    let (client, handle) = mock();
    let log = Arc::new(Mutex::new(Vec::new()));
    let deletion = Timestamp::now()
        .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(300))
        .expect("ts");
    let (arrived_tx, arrived_rx) = tokio::sync::oneshot::channel();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(fake_apiserver(
        handle,
        log.clone(),
        None,
        recovery::record::rfc3339_seconds(deletion),
        Some((arrived_tx, release_rx)),
    ));
    let (sidecar, stop_tx, _) = start_replica(
        client,
        &["--shutdown-timeout=5s", "--partition-settle-period=0s"],
    )
    .await;
    arrived_rx.await.expect("the status patch is sent");
    stop_tx.send(()).expect("stop");
    // SIGTERM is in; the patch answer comes only now.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !sidecar.is_finished(),
        "run returned with a reconcile in flight"
    );
    release_tx.send(()).expect("release");
    tokio::time::timeout(Duration::from_secs(10), sidecar)
        .await
        .expect("run returns after the drain")
        .expect("join")
        .expect("run");
    let log = lock(&log).clone();
    let position = |r: &str| {
        log.iter()
            .position(|l| l == r)
            .unwrap_or_else(|| panic!("{r} missing in {log:?}"))
    };
    assert!(position(&format!("POST {EVENTS_PATH}")) < position(&format!("DELETE {POD_PATH}")));
    assert_eq!(
        log.iter().rev().find(|l| l.contains("leases")),
        Some(&format!("PUT {LEASE_PATH}")),
        "the Lease is released after the drain: {log:?}"
    );
    assert!(position(&format!("DELETE {POD_PATH}")) < log.len() - 1);
    server.abort();
}

/// Collects the fields recorded on `reconcile` spans.
#[derive(Clone, Default)]
struct SpanFields(Arc<Mutex<Vec<(String, String)>>>);

impl tracing::field::Visit for SpanFields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        lock(&self.0).push((field.name().to_string(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        lock(&self.0).push((field.name().to_string(), value.to_string()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanFields {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().name() == "reconcile" {
            attrs.record(&mut self.clone());
        }
    }
    fn on_record(
        &self,
        _: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        values.record(&mut self.clone());
    }
}

// Design "Logs": a span per reconcile with pod, node and decision; and each reconcile is timed
// into the duration histogram.
#[tokio::test]
async fn each_reconcile_has_a_span_with_pod_node_and_decision_and_is_timed() {
    use tracing_subscriber::layer::SubscriberExt;
    let fields = SpanFields::default();
    let subscriber = tracing_subscriber::registry().with(fields.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let (client, handle) = mock();
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let script = vec![
        get_pod(running_pod("100")),
        get_node_a(true),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
        delete_pod(200, running_pod("102")),
    ];
    run_scenario(&ctx, handle, script).await.expect("reconcile");
    let recorded = lock(&fields.0).clone();
    for (name, value) in [
        ("pod", "ns/pod"),
        ("node", "node-a"),
        ("decision", "recover"),
    ] {
        assert!(
            recorded.iter().any(|(n, v)| n == name && v == value),
            "{name}={value} in {recorded:?}"
        );
    }
    let text = {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register(
            "jobgate_recovery_reconcile_duration_seconds",
            "d",
            ctx.metrics.reconcile_duration.clone(),
        );
        crate::runtime::encode(&registry)
    };
    assert!(
        text.contains("jobgate_recovery_reconcile_duration_seconds_count 1"),
        "{text}"
    );
}

// ---- the partition brake (kube-controller-manager's zone logic) over the scripted API ----

const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

fn zoned_node_json(name: &str, zone: &str, unreachable: bool) -> Value {
    let mut node = node_json(name, unreachable);
    node["metadata"]["labels"] = json!({ZONE_LABEL: zone});
    node
}

/// A context whose node cache holds zone `a` of 10 nodes (`node-a` and `a-1`..`a-9`) with
/// `unreachable_in_a` unreachable (node-a first), and zone `b` of 10 nodes (`node-b` and
/// `b-1`..`b-9`) with `unreachable_in_b` unreachable.
fn zoned_context(client: Client, unreachable_in_a: u32, unreachable_in_b: u32) -> Context {
    let ctx = context(client, Options::default(), Leadership::always(), NOW);
    let mut nodes = lock(&ctx.nodes);
    nodes.apply(Event::Init, ts(LISTED));
    for (zone, first, unreachable) in [
        ("a", "node-a", unreachable_in_a),
        ("b", "node-b", unreachable_in_b),
    ] {
        for i in 0..10u32 {
            let name = if i == 0 {
                first.to_string()
            } else {
                format!("{zone}-{i}")
            };
            let node: k8s_openapi::api::core::v1::Node =
                serde_json::from_value(zoned_node_json(&name, zone, i < unreachable))
                    .expect("node");
            nodes.apply(
                Event::InitApply(recovery::read::node_facts(&node)),
                ts(LISTED),
            );
        }
    }
    nodes.apply(Event::InitDone, ts(LISTED));
    drop(nodes);
    ctx
}

fn held_event(note: &'static str) -> Exchange {
    exchange("POST", EVENTS_PATH, 201, json!({})).checking(move |_, _, body| {
        assert_eq!(body["type"], "Warning");
        assert_eq!(body["reason"], "ForcefulTerminationHeld");
        assert_eq!(body["note"], note);
        assert_eq!(body["regarding"]["name"], "pod");
    })
}

// Issue "Recovery safety beyond Kueue", done when: with default flags, one zone with 6 of 10
// nodes unreachable has 0 pods force-failed (one Warning per held pod, once); healing to 3 of 10
// recovers the pod on its still-unreachable node, with its deadline (and message) unchanged.
#[tokio::test]
async fn six_of_ten_unreachable_holds_and_healing_to_three_recovers() {
    let (client, handle) = mock();
    let ctx = zoned_context(client, 6, 0);
    let script = vec![
        get_pod(running_pod("100")),
        exchange("GET", NODE_PATH, 200, zoned_node_json("node-a", "a", true)),
        held_event("held: zone `a` has 6/10 nodes unreachable"),
    ];
    let action = run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::requeue(WAIT_FOR_NODE_RESYNC));
    assert_eq!(terminated(&ctx, "node-a"), 0);
    assert_eq!(ctx.metrics.held.get(), 1);
    assert_eq!(ctx.metrics.disrupted_zones.get(), 1);
    assert_eq!(
        ctx.held_in(&[":\0:a".to_string()].into()),
        vec![PodKey::new("ns", "pod")]
    );
    // Looked at again while still disrupted: no second event, no write.
    let (client, handle) = mock();
    let ctx = ctx.with_client(client);
    let script = vec![
        get_pod(running_pod("100")),
        exchange("GET", NODE_PATH, 200, zoned_node_json("node-a", "a", true)),
    ];
    run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(terminated(&ctx, "node-a"), 0);

    // Zone a heals to 3 of 10 unreachable (a-3..a-5 come back); node-a stays unreachable.
    {
        let mut nodes = lock(&ctx.nodes);
        for i in 3..6 {
            let node: k8s_openapi::api::core::v1::Node =
                serde_json::from_value(zoned_node_json(&format!("a-{i}"), "a", false))
                    .expect("node");
            nodes.apply(Event::Apply(recovery::read::node_facts(&node)), ts(LISTED));
        }
    }
    let (client, handle) = mock();
    let ctx = ctx.with_client(client);
    let script = vec![
        get_pod(running_pod("100")),
        exchange("GET", NODE_PATH, 200, zoned_node_json("node-a", "a", true)),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
        delete_pod(200, running_pod("102")),
    ];
    run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(terminated(&ctx, "node-a"), 1);
    assert_eq!(ctx.metrics.held.get(), 0);
}

// The pod's node became unreachable 2 s ago and another node of its zone 1 s ago: the pod's
// reconcile writes nothing and looks again when the node stream has been quiet for the settle
// period (10 s by default); then the brake judges the zone on everything delivered by then.
#[tokio::test]
async fn a_due_pod_waits_for_the_node_stream_to_settle() {
    let (client, handle) = mock();
    let ctx = zoned_context(client, 0, 0);
    for (name, at) in [
        ("node-a", "2026-11-21T19:59:58Z"),
        ("a-5", "2026-11-21T19:59:59Z"),
    ] {
        let node: k8s_openapi::api::core::v1::Node =
            serde_json::from_value(zoned_node_json(name, "a", true)).expect("node");
        lock(&ctx.nodes).apply(Event::Apply(recovery::read::node_facts(&node)), ts(at));
    }
    let script = vec![
        get_pod(running_pod("100")),
        exchange("GET", NODE_PATH, 200, zoned_node_json("node-a", "a", true)),
    ];
    let action = run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::requeue(Duration::from_secs(9)));
    assert_eq!(
        ctx.pod_state(&PodKey::new("ns", "pod"))
            .and_then(|t| t.waiting),
        Some(Waiting::Settle(ts("2026-11-21T20:00:09Z")))
    );
    assert_eq!(terminated(&ctx, "node-a"), 0);
    assert_eq!(ctx.metrics.pending.get(), 1);
    assert_eq!(ctx.metrics.held.get(), 0);
}

// A second zone is not held by a disrupted first zone; 2 of 10 unreachable is no disruption.
#[tokio::test]
async fn another_zone_and_two_of_ten_are_recovered_normally() {
    for (in_a, in_b, pod_node) in [(1, 6, "node-a"), (2, 0, "node-a")] {
        let (client, handle) = mock();
        let ctx = zoned_context(client, in_a, in_b);
        let script = vec![
            get_pod(running_pod("100")),
            exchange("GET", NODE_PATH, 200, zoned_node_json(pod_node, "a", true)),
            patch_status("100", 200, pod_json("101", "Failed", json!([]))),
            warning_event("101"),
            delete_pod(200, running_pod("102")),
        ];
        run_scenario(&ctx, handle, script).await.expect("reconcile");
        assert_eq!(
            terminated(&ctx, "node-a"),
            1,
            "{in_a}/10 in a, {in_b}/10 in b"
        );
        assert_eq!(ctx.metrics.held.get(), 0);
    }
}

// `--partition-brake=false` acts as before the brake; and a held pod under --dry-run gets no
// Warning (the writer skips it) and no write.
#[tokio::test]
async fn the_brake_can_be_turned_off_and_dry_run_holds_silently() {
    let (client, handle) = mock();
    let ctx = zoned_context(client, 6, 0).with_brake(crate::recovery::brake::BrakeConfig {
        enabled: false,
        ..Default::default()
    });
    let script = vec![
        get_pod(running_pod("100")),
        exchange("GET", NODE_PATH, 200, zoned_node_json("node-a", "a", true)),
        patch_status("100", 200, pod_json("101", "Failed", json!([]))),
        warning_event("101"),
        delete_pod(200, running_pod("102")),
    ];
    run_scenario(&ctx, handle, script).await.expect("reconcile");
    assert_eq!(terminated(&ctx, "node-a"), 1);

    let (client, handle) = mock();
    let mut dry = zoned_context(client.clone(), 6, 0);
    dry.options.dry_run = true;
    let dry = dry.with_client(client);
    let script = vec![
        get_pod(running_pod("100")),
        exchange("GET", NODE_PATH, 200, zoned_node_json("node-a", "a", true)),
    ];
    let action = run_scenario(&dry, handle, script).await.expect("reconcile");
    assert_eq!(action, Action::requeue(WAIT_FOR_NODE_RESYNC));
    assert_eq!(dry.metrics.held.get(), 1);
}

// When the zone heals below the threshold, the node watch re-checks the pods the brake held in
// it at once (not at the 5-minute resync).
#[tokio::test]
async fn the_node_watch_releases_held_pods_when_their_zone_heals() {
    let (client, mut handle) = mock();
    let ctx = Arc::new(context(
        client.clone(),
        Options::default(),
        Leadership::always(),
        NOW,
    ));
    let held = PodKey::new("ns", "held");
    ctx.update(&held, |t| {
        t.waiting = Some(Waiting::Held {
            zone: ":\0:a".into(),
            message: "held".into(),
            until: None,
        })
    });
    let nodes: Vec<Value> = (0..10)
        .map(|i| zoned_node_json(&format!("a-{i}"), "a", i < 6))
        .collect();
    // Watch events carry a resourceVersion (the watcher resumes from it).
    let healed: Vec<Value> = (3..6)
        .map(|i| {
            let mut n = zoned_node_json(&format!("a-{i}"), "a", false);
            n["metadata"]["resourceVersion"] = json!(format!("{}", 1000 + i));
            n
        })
        .collect();
    let server = tokio::spawn(async move {
        let mut held_watches = vec![];
        let mut watches = 0;
        while let Some((request, send)) = handle.next_request().await {
            let query = request.uri().query().unwrap_or("").to_string();
            let body = if query.contains("watch=true") {
                watches += 1;
                if watches > 1 {
                    held_watches.push(send);
                    continue;
                }
                // One watch response: the three nodes come back, then the stream ends.
                healed
                    .iter()
                    .map(|n| json!({"type": "MODIFIED", "object": n}).to_string() + "\n")
                    .collect::<String>()
                    .into_bytes()
            } else {
                serde_json::to_vec(&list_page("NodeList", nodes.clone(), "")).expect("json")
            };
            send.send_response(
                Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Body::from(body))
                    .expect("response"),
            );
        }
    });
    let (tx, mut rx) = futures::channel::mpsc::unbounded();
    let writer: Writer<PodMetadata> = Writer::default();
    let driver = tokio::spawn(drive_node_watch(
        Api::<WatchedNode>::all(client),
        ctx.clone(),
        writer.as_reader(),
        tx,
        Arc::new(AtomicBool::new(true)),
        Readiness::default(),
    ));
    let released = tokio::time::timeout(Duration::from_secs(3), rx.next()).await;
    let released = released.unwrap_or_else(|_| {
        let a3 = lock(&ctx.nodes).get("a-3").cloned();
        panic!(
            "not triggered; a-3: {a3:?}, disrupted {}",
            ctx.metrics.disrupted_zones.get()
        )
    });
    assert_eq!(released, Some(held));
    assert_eq!(ctx.metrics.disrupted_zones.get(), 0);
    driver.abort();
    server.abort();
}

// ---- a burst of taints: the brake decides on a settled view ----

/// The cluster a burst scenario runs against: zoned nodes, one opted-in pod terminating on each
/// (bare pods: no Job step), and what the reconciler wrote.
struct PartitionWorld {
    /// Node name -> (zone, unreachable).
    nodes: BTreeMap<String, (String, bool)>,
    /// Pods recovered (status patched) or deleted, by name.
    failed: BTreeSet<String>,
    deleted: BTreeSet<String>,
    /// Pods that got the brake's Warning event.
    held: BTreeSet<String>,
    lease: Option<Value>,
}

fn partition_pod_json(node: &str, deletion: &str, phase: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("pod-{node}"), "namespace": "ns", "uid": format!("uid-{node}"),
            "resourceVersion": "100", "annotations": {KEY: "true"},
            "deletionTimestamp": deletion, "deletionGracePeriodSeconds": 30
        },
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": phase}
    })
}

/// A stateful apiserver for `jobgate reconcile`: every node reachable at the start; the node
/// watch then delivers `burst` (nodes gaining the unreachable taint, in order) one event per
/// watch response, `gap` apart, as kube-controller-manager's workers taint the nodes of one
/// monitor pass; then it idles.
/// One change of the node stream: `node` gains (`unreachable`) or loses the unreachable taint,
/// delivered `after` the previous one.
struct NodeStep {
    node: String,
    unreachable: bool,
    after: Duration,
}

/// Each of `nodes` tainted (or the taint lifted) `gap` after the previous one.
fn steps(nodes: &[String], unreachable: bool, gap: Duration) -> Vec<NodeStep> {
    nodes
        .iter()
        .map(|node| NodeStep {
            node: node.clone(),
            unreachable,
            after: gap,
        })
        .collect()
}

async fn partition_apiserver(
    mut handle: Handle<Request<Body>, Response<Body>>,
    world: Arc<Mutex<PartitionWorld>>,
    deletion: String,
    burst: Vec<NodeStep>,
) {
    let mut burst = burst.into_iter();
    let mut idle = vec![];
    while let Some((request, send)) = handle.next_request().await {
        let Received {
            method,
            path,
            query,
            body,
            ..
        } = receive(request).await;
        let node_of = |w: &PartitionWorld, name: &str| {
            w.nodes.get(name).map(|(zone, unreachable)| {
                let mut node = zoned_node_json(name, zone, *unreachable);
                node["metadata"]["resourceVersion"] = json!("1000");
                node
            })
        };
        if query.contains("watch=true") {
            let Some(next) = (path == "/api/v1/nodes").then(|| burst.next()).flatten() else {
                idle.push(send);
                continue;
            };
            // Change the next node of the pass and deliver it `after` the last one (the watcher
            // asks for the next event once it has this one).
            let world = world.clone();
            tokio::spawn(async move {
                tokio::time::sleep(next.after).await;
                let event = {
                    let mut w = lock(&world);
                    if let Some(node) = w.nodes.get_mut(&next.node) {
                        node.1 = next.unreachable;
                    }
                    json!({"type": "MODIFIED", "object": node_of(&w, &next.node)})
                };
                send.send_response(
                    Response::builder()
                        .status(200)
                        .header("content-type", "application/json")
                        .body(Body::from(format!("{event}\n").into_bytes()))
                        .expect("response"),
                );
            });
            continue;
        }
        let mut w = lock(&world);
        let pod_name = path
            .strip_prefix("/api/v1/namespaces/ns/pods/")
            .map(|p| p.trim_end_matches("/status").to_string());
        let node_name = pod_name
            .as_deref()
            .and_then(|p| p.strip_prefix("pod-"))
            .map(String::from);
        let (status, response) = match (method.as_str(), path.as_str()) {
            ("GET", LEASE_PATH) => match &w.lease {
                Some(l) => (200, l.clone()),
                None => (404, status_body(404, "NotFound")),
            },
            ("POST", LEASES_PATH) | ("PUT", LEASE_PATH) => {
                let mut l = body.clone();
                l["metadata"]["resourceVersion"] = json!("2");
                w.lease = Some(l.clone());
                (if method == "POST" { 201 } else { 200 }, l)
            }
            ("GET", "/api/v1/pods") => {
                let items = w
                    .nodes
                    .keys()
                    .filter(|n| !w.deleted.contains(&format!("pod-{n}")))
                    .map(|n| {
                        let mut item = meta_item(&format!("pod-{n}"), json!({KEY: "true"}), true);
                        item["metadata"]["deletionTimestamp"] = json!(deletion.clone());
                        item
                    })
                    .collect();
                (200, list_page("PartialObjectMetadataList", items, ""))
            }
            ("GET", "/api/v1/nodes") => {
                let items = w.nodes.keys().filter_map(|n| node_of(&w, n)).collect();
                (200, list_page("NodeList", items, ""))
            }
            ("GET", p) if p.starts_with("/api/v1/nodes/") => {
                match node_of(&w, &p["/api/v1/nodes/".len()..]) {
                    Some(node) => (200, node),
                    None => (404, status_body(404, "NotFound")),
                }
            }
            ("POST", EVENTS_PATH) => {
                if body["reason"] == "ForcefulTerminationHeld" {
                    let pod = body["regarding"]["name"].as_str().unwrap_or("").to_string();
                    w.held.insert(pod);
                }
                (201, body.clone())
            }
            (method, _) => match (method, pod_name, node_name) {
                ("GET", Some(pod), Some(node)) if !w.deleted.contains(&pod) => {
                    let phase = if w.failed.contains(&pod) {
                        "Failed"
                    } else {
                        "Running"
                    };
                    (200, partition_pod_json(&node, &deletion, phase))
                }
                ("PATCH", Some(pod), Some(node)) => {
                    w.failed.insert(pod);
                    (200, partition_pod_json(&node, &deletion, "Failed"))
                }
                ("DELETE", Some(pod), Some(node)) => {
                    w.deleted.insert(pod);
                    (200, partition_pod_json(&node, &deletion, "Failed"))
                }
                _ => (404, status_body(404, "NotFound")),
            },
        };
        drop(w);
        respond(send, status, &response);
    }
}

/// Nodes `{zone}-{i}` of `zones`, all reachable, each with one opted-in pod past its deadline,
/// served by a mocked apiserver that delivers `changes` on the node watch; and a replica of
/// `jobgate reconcile --partition-settle-period=<settle>` against it.
async fn partition_scenario(
    zones: &[(&str, usize)],
    changes: Vec<NodeStep>,
    settle: &str,
) -> (
    Arc<Mutex<PartitionWorld>>,
    tokio::task::JoinHandle<Result<(), RunError>>,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let nodes = zones
        .iter()
        .flat_map(|(zone, size)| {
            (0..*size).map(move |i| (format!("{zone}-{i}"), (zone.to_string(), false)))
        })
        .collect();
    let world = Arc::new(Mutex::new(PartitionWorld {
        nodes,
        failed: BTreeSet::new(),
        deleted: BTreeSet::new(),
        held: BTreeSet::new(),
        lease: None,
    }));
    let deletion = Timestamp::now()
        .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(300))
        .expect("ts");
    let (client, handle) = mock();
    let server = tokio::spawn(partition_apiserver(
        handle,
        world.clone(),
        recovery::record::rfc3339_seconds(deletion),
        changes,
    ));
    let flag = format!("--partition-settle-period={settle}");
    let (replica, stop_tx, _) = start_replica(client, &[flag.as_str()]).await;
    (world, replica, stop_tx, server)
}

/// What becomes of the pods when `burst` (node names) gains the unreachable taint 100 ms apart,
/// within one node monitor pass, under `jobgate reconcile --partition-settle-period=<settle>`:
/// the pods force-failed and the pods held, once the view has settled.
async fn burst(
    zones: &[(&str, usize)],
    burst: &[String],
    settle: &str,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let changes = steps(burst, true, Duration::from_millis(100));
    let (world, replica, stop_tx, server) = partition_scenario(zones, changes, settle).await;
    // Every pod of the burst is decided: recovered, or held by the brake.
    wait_until("every pod of the burst decided", || {
        let w = lock(&world);
        burst
            .iter()
            .all(|n| w.held.contains(&format!("pod-{n}")) || w.failed.contains(&format!("pod-{n}")))
    })
    .await;
    // No late change of mind once the view has settled.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop_tx.send(()).expect("stop");
    replica.await.expect("join").expect("run");
    server.abort();
    let w = lock(&world);
    (w.failed.clone(), w.held.clone())
}

// A zone heals as it broke, in one node monitor pass: 6 of 10 nodes of zone a tainted, their
// pods held; then the six taints lifted 300 ms apart. Judged as each lift arrives, the zone
// drops to 3/10 with three nodes still to come back, the brake lets their pods go, and they are
// force-failed beside nodes coming back in the same pass. Judged on the settled view (the lifts
// are a run of changes like the taints), every node is back and nothing is force-failed.
#[tokio::test]
async fn a_zone_healing_in_one_pass_releases_no_pod_before_the_pass_is_over() {
    let tainted: Vec<String> = (0..6).map(|i| format!("a-{i}")).collect();
    let mut changes = steps(&tainted, true, Duration::from_millis(100));
    let mut lifts = steps(&tainted, false, Duration::from_millis(300));
    // The pods are held 1 s after the last taint (the settle period); the lifting starts later.
    lifts[0].after = Duration::from_millis(2500);
    changes.extend(lifts);
    let (world, replica, stop_tx, server) = partition_scenario(&[("a", 10)], changes, "1s").await;
    wait_until("the six pods held", || {
        lock(&world).held == names("pod-", tainted.clone())
    })
    .await;
    wait_until("every taint lifted", || {
        lock(&world)
            .nodes
            .values()
            .all(|(_, unreachable)| !unreachable)
    })
    .await;
    // A settle period after the last lift, and a margin: the view the brake judges now.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    stop_tx.send(()).expect("stop");
    replica.await.expect("join").expect("run");
    server.abort();
    let w = lock(&world);
    assert_eq!(
        w.failed,
        BTreeSet::new(),
        "force-failed while the zone healed"
    );
}

fn names(prefix: &str, nodes: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    nodes.into_iter().map(|n| format!("{prefix}{n}")).collect()
}

// The partition brake decides on the zone state of a whole node monitor pass, as
// kube-controller-manager's `monitorNodeHealth` calls `handleDisruption` once per pass: 10 nodes
// in zone a, one due opted-in pod on each, 6 nodes tainted `unreachable` 100 ms apart (one
// pass). Judged on the settled view, 6/10 is a partially disrupted small zone: all 6 pods are
// held, none is force-failed. Judged as each taint arrives (`--partition-settle-period=0s`, the
// old behaviour), the first taints look like 1/10, 2/10, ... and their pods are force-failed.
#[tokio::test]
async fn a_burst_of_six_of_ten_taints_in_one_zone_is_held() {
    let tainted: Vec<String> = (0..6).map(|i| format!("a-{i}")).collect();
    let (failed, held) = burst(&[("a", 10)], &tainted, "1s").await;
    assert_eq!(failed, BTreeSet::new(), "force-failed in a partition");
    assert_eq!(held, names("pod-", tainted.clone()));

    let (failed, _) = burst(&[("a", 10)], &tainted, "0s").await;
    assert!(
        failed.contains("pod-a-0"),
        "judged one taint at a time, the first pod is force-failed: {failed:?}"
    );
}

// A control-plane partition taints every node of every zone in one pass, the zones interleaved:
// judged on the settled view every zone is fully disrupted and everything is held. Judged as
// the taints arrive, the first nodes to go down look like one or two dead nodes beside healthy
// zones, and their pods are force-failed. And a burst in two zones at once (6 of 10 in each) holds both.
#[tokio::test]
async fn a_burst_of_taints_in_several_zones_is_judged_on_the_whole_pass() {
    let zones = [("a", 3), ("b", 3), ("c", 3)];
    let everything: Vec<String> = (0..3)
        .flat_map(|i| ["a", "b", "c"].map(|z| format!("{z}-{i}")))
        .collect();
    let (failed, held) = burst(&zones, &everything, "1s").await;
    assert_eq!(failed, BTreeSet::new(), "force-failed in a partition");
    assert_eq!(held, names("pod-", everything.clone()));

    let (failed, _) = burst(&zones, &everything, "0s").await;
    assert!(
        !failed.is_empty(),
        "judged one taint at a time, some pod is force-failed"
    );

    let two: Vec<String> = (0..6)
        .flat_map(|i| ["a", "b"].map(|z| format!("{z}-{i}")))
        .collect();
    let (failed, held) = burst(&[("a", 10), ("b", 10)], &two, "1s").await;
    assert_eq!(failed, BTreeSet::new(), "force-failed in a partition");
    assert_eq!(held, names("pod-", two));
}

// One retry level: a Job whose state write always meets a newer resourceVersion is read once per
// reconcile (pod, node and Job read again each time, never a stale decision): each reconcile
// ends at its conflict with the error for the one error policy, which reads again soon, then
// counts the conflicts and backs off. It used to be read up to 4 × 5 times in one reconcile.
#[tokio::test]
async fn a_job_that_keeps_conflicting_is_read_once_per_attempt() {
    let (client, mut handle) = mock();
    let requests = Arc::new(Mutex::new(Vec::<String>::new()));
    let server = tokio::spawn({
        let requests = requests.clone();
        async move {
            while let Some((request, send)) = handle.next_request().await {
                let line = format!("{} {}", request.method(), request.uri().path());
                lock(&requests).push(line.clone());
                let (status, body) = match line.as_str() {
                    l if l == format!("GET {POD_PATH}") => {
                        (200, owned_by_train(running_pod("100")))
                    }
                    l if l == format!("GET {NODE_PATH}") => (200, node_json("node-a", true)),
                    l if l == format!("GET {JOB_PATH}") => (200, job_json("7", None)),
                    _ => (409, status_body(409, "Conflict")),
                };
                send.send_response(
                    Response::builder()
                        .status(status)
                        .header("content-type", "application/json")
                        .body(Body::from(serde_json::to_vec(&body).expect("json")))
                        .expect("response"),
                );
            }
        }
    });
    let h = episode_context(client, EpisodeConfig::default());
    let key = PodKey::new("ns", "pod");
    let mut actions = vec![];
    for attempt in 1..=CONFLICT_ATTEMPTS as usize {
        let err = tokio::time::timeout(Duration::from_secs(10), reconcile_pod(&h.ctx, &key))
            .await
            .expect("reconcile hung")
            .expect_err("conflicts");
        assert_eq!(err.metric_label(), "reconcile_conflicts");
        // One reconcile: one read of the pod, its node and the Job, one state write.
        assert_eq!(lock(&requests).len(), 4 * attempt, "{:?}", lock(&requests));
        actions.push(error_policy(&h.ctx, &key, &err));
    }
    server.abort();
    assert_eq!(
        actions,
        [50, 100, 200, 1000].map(|ms| Action::requeue(Duration::from_millis(ms)))
    );
    assert_eq!(h.ctx.metrics.error_count("reconcile_conflicts"), 1);
    let requests = lock(&requests).clone();
    let count = |line: String| requests.iter().filter(|r| **r == line).count();
    let attempts = CONFLICT_ATTEMPTS as usize;
    assert_eq!(count(format!("GET {JOB_PATH}")), attempts, "{requests:?}");
    assert_eq!(count(format!("PATCH {JOB_PATH}")), attempts, "{requests:?}");
    assert_eq!(count(format!("GET {POD_PATH}")), attempts, "{requests:?}");
    assert_eq!(requests.len(), 4 * attempts, "{requests:?}");
}

// Standbys watch nothing: with another replica holding a live Lease, a replica sends only its
// election rounds (a Lease read every retry period) and lists or watches no pod and no node, so
// three replicas hold one copy of the cluster's pods and nodes, not three. It is ready (a
// follower) and reports itself not leader.
#[tokio::test]
async fn a_standby_opens_no_watch_and_lists_nothing() {
    let (client, handle) = mock();
    let log = Arc::new(Mutex::new(Vec::new()));
    let server = tokio::spawn(fake_apiserver(
        handle,
        log.clone(),
        Some(lease_json("replica-0", "5", 0)),
        NOW.to_string(),
        None,
    ));
    let (standby, stop_tx, admin) = start_replica(client, &[]).await;
    // Two election rounds (retry period 2 s), well within the Lease's 15 s.
    wait_until("two election rounds", || {
        lock(&log)
            .iter()
            .filter(|l| **l == format!("GET {LEASE_PATH}"))
            .count()
            >= 2
    })
    .await;
    let ready = http_get(admin, "/readyz").await;
    let metrics = http_get(admin, "/metrics").await;
    stop_tx.send(()).expect("stop");
    standby.await.expect("join").expect("run");
    server.abort();
    let log = lock(&log).clone();
    assert!(
        log.iter().all(|l| *l == format!("GET {LEASE_PATH}")),
        "a standby sent more than Lease reads: {log:?}"
    );
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    assert!(metrics.contains("jobgate_recovery_leader 0"), "{metrics}");
}
