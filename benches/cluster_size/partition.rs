//! The partitions: what the reconciler does when nodes turn unreachable, at the cluster's size.
//!
//! Each scenario cuts its nodes off as the node lifecycle controller sees it (their heartbeats
//! stop, `Ready=Unknown`, then the `node.kubernetes.io/unreachable:NoExecute` taint, all in one
//! burst as the controller taints a whole monitor pass; kube-controller-manager lifts that taint
//! again from a node still `Ready=True`), then deletes the opted-in pods on them
//! with a grace period of [`GRACE`] as the taint-eviction controller would (the bench's pods carry
//! no toleration of their own; the others it leaves running: the reconciler's watch drops them on
//! arrival either way). The reconciler runs with `--forceful-termination-grace-period`
//! [`THRESHOLD`], so each pod is due [`GRACE`] + [`THRESHOLD`] after its delete. A watch on the
//! namespace records when each pod turns `Failed`; the reconciler's `/metrics` gives its writes.
//!
//! The scenarios, on the nodes the fill made (zone `i % 8` for node `i`; all ten pods of a node
//! are opted in when `i % 100 < OPT_IN_PERCENT`):
//! - one node of zone 0: recovered, each pod within its deadline plus the reconciler's delay;
//! - 5 % of zone 1 (its nodes with opted-in pods first): a normal zone, recovered;
//! - all of zone 2: a whole zone cut off, held (0 pods force-failed);
//! - all of zone 3, its zone and region labels removed first: a whole unlabelled zone (`""`),
//!   held as one zone.
//!
//! After each, the held pods are force-deleted before the taints are lifted (so the next run's
//! fill recreates them), and the labels put back.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use super::churn::Churn;
use super::{IN_FLIGHT, NAMESPACE, ZONES, admin_get, node_name, pod_name, prometheus, usage};

/// The pods' grace period on delete, seconds.
const GRACE: u64 = 5;
/// The reconciler's `--forceful-termination-grace-period`.
pub(crate) const THRESHOLD: &str = "10s";
const THRESHOLD_SECONDS: u64 = 10;
/// How long past the last pod's deadline a scenario waits for pods that are not held.
const PAST_DEADLINE: Duration = Duration::from_secs(30);

/// The filled cluster's shape.
#[derive(Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) nodes: usize,
    pub(crate) pods: usize,
    pub(crate) opt_in_percent: usize,
}

impl Shape {
    fn opted_in_pods_on(&self, node: usize) -> Vec<String> {
        (node..self.pods)
            .step_by(self.nodes)
            .filter(|p| p % 100 < self.opt_in_percent)
            .map(pod_name)
            .collect()
    }

    fn zone(&self, zone: usize) -> Vec<usize> {
        (0..self.nodes).filter(|n| n % ZONES == zone).collect()
    }
}

struct Scenario {
    name: &'static str,
    nodes: Vec<usize>,
    unlabel: bool,
    held: bool,
}

fn scenarios(shape: Shape) -> Vec<Scenario> {
    let has_pods = |n: &usize| !shape.opted_in_pods_on(*n).is_empty();
    let one = shape
        .zone(0)
        .into_iter()
        .find(has_pods)
        .into_iter()
        .collect();
    let mut zone1 = shape.zone(1);
    zone1.sort_by_key(|n| !has_pods(n));
    let five_percent = zone1.len().div_ceil(20);
    zone1.truncate(five_percent);
    vec![
        Scenario {
            name: "one node",
            nodes: one,
            unlabel: false,
            held: false,
        },
        Scenario {
            name: "5 % of a zone",
            nodes: zone1,
            unlabel: false,
            held: false,
        },
        Scenario {
            name: "a whole zone",
            nodes: shape.zone(2),
            unlabel: false,
            held: true,
        },
        Scenario {
            name: "a whole zone without zone labels",
            nodes: shape.zone(3),
            unlabel: true,
            held: true,
        },
    ]
}

/// When each pod of the namespace was first seen `Failed`.
type FailedAt = Arc<Mutex<HashMap<String, Instant>>>;

/// Watches the namespace's pods from now on and records when each turns `Failed`.
async fn record_failures(api: Api<Pod>) -> FailedAt {
    let failed: FailedAt = Arc::default();
    let mut version = api
        .list_metadata(&ListParams::default().limit(1))
        .await
        .expect("list pods")
        .metadata
        .resource_version
        .unwrap_or_default();
    let seen = failed.clone();
    tokio::spawn(async move {
        loop {
            let params = WatchParams::default().timeout(290);
            let Ok(events) = api.watch(&params, &version).await else {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            };
            let mut events = events.boxed();
            while let Ok(Some(event)) = events.try_next().await {
                match event {
                    WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                        version = p.metadata.resource_version.clone().unwrap_or(version);
                        let is_failed =
                            p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed");
                        if let (true, Some(name)) = (is_failed, p.metadata.name) {
                            let mut seen = seen.lock().expect("lock");
                            seen.entry(name).or_insert_with(Instant::now);
                        }
                    }
                    WatchEvent::Deleted(p) => {
                        version = p.metadata.resource_version.unwrap_or(version);
                    }
                    WatchEvent::Bookmark(b) => version = b.metadata.resource_version,
                    WatchEvent::Error(e) => panic!("the pod watch ended: {e:?}"),
                }
            }
        }
    });
    failed
}

/// Runs every scenario with the reconciler `pid` (admin port `admin`) running.
pub(crate) async fn run(client: &kube::Client, shape: Shape, churn: &Churn, admin: &str, pid: u32) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let nodes: Api<Node> = Api::all(client.clone());
    let failed = record_failures(pods.clone()).await;
    let (_, _, cpu_before) = usage(pid);
    for s in scenarios(shape) {
        let names: Vec<String> = s.nodes.iter().map(|n| node_name(*n)).collect();
        if s.unlabel {
            patch_nodes(&nodes, &names, |_| {
                json!({"metadata": {"labels": {"topology.kubernetes.io/zone": null,
                                               "topology.kubernetes.io/region": null}}})
            })
            .await;
        }
        let writes_before = reconciler_counts(admin).await;
        let started = Instant::now();
        churn.silence(&s.nodes, true);
        report_ready(&nodes, &names, "Unknown").await;
        patch_nodes(&nodes, &names, |_| {
            json!({"spec": {"taints": [{"key": "node.kubernetes.io/unreachable",
                "effect": "NoExecute", "timeAdded": k8s_openapi::jiff::Timestamp::now()}]}})
        })
        .await;
        let burst = started.elapsed();
        let targets: Vec<String> = s
            .nodes
            .iter()
            .flat_map(|n| shape.opted_in_pods_on(*n))
            .collect();
        let deleted = delete_pods(&pods, &targets, Some(GRACE as u32)).await;
        let last_deadline = deleted.values().max().copied().unwrap_or_else(Instant::now)
            + Duration::from_secs(GRACE + THRESHOLD_SECONDS);
        loop {
            let done = {
                let failed = failed.lock().expect("lock");
                targets.iter().all(|p| failed.contains_key(p))
            };
            if done || Instant::now() > last_deadline + PAST_DEADLINE {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let writes_after = reconciler_counts(admin).await;
        report(
            &s,
            &names,
            burst,
            &targets,
            &deleted,
            &failed,
            writes_before,
            writes_after,
        );

        // Put the cluster back: the pods left terminating go (the next fill recreates them),
        // then the taints, then the labels.
        delete_pods(&pods, &targets, Some(0)).await;
        report_ready(&nodes, &names, "True").await;
        patch_nodes(&nodes, &names, |_| json!({"spec": {"taints": null}})).await;
        churn.silence(&s.nodes, false);
        if s.unlabel {
            patch_nodes(&nodes, &names, |name| {
                let i: usize = name.trim_start_matches("gpu-").parse().unwrap_or(0);
                json!({"metadata": {"labels": {"topology.kubernetes.io/region": "bench",
                    "topology.kubernetes.io/zone": format!("zone-{}", i % ZONES)}}})
            })
            .await;
        }
        // Two settle periods: the next burst is judged on its own.
        tokio::time::sleep(Duration::from_secs(20)).await;
    }
    let (peak, rss, cpu) = usage(pid);
    println!(
        "after the partitions: peak RSS {peak:.1} MiB, RSS {rss:.1} MiB, CPU {:.2}s during them",
        cpu - cpu_before
    );
}

#[allow(clippy::too_many_arguments)]
fn report(
    s: &Scenario,
    names: &[String],
    burst: Duration,
    targets: &[String],
    deleted: &HashMap<String, Instant>,
    failed: &FailedAt,
    before: Counts,
    after: Counts,
) {
    let failed = failed.lock().expect("lock");
    // How long after its deadline (delete + grace + threshold) each pod was seen Failed.
    let mut late: Vec<f64> = targets
        .iter()
        .filter_map(|p| {
            let at = failed.get(p)?;
            let deadline = *deleted.get(p)? + Duration::from_secs(GRACE + THRESHOLD_SECONDS);
            Some(at.saturating_duration_since(deadline).as_secs_f64())
        })
        .collect();
    late.sort_by(f64::total_cmp);
    let quantile = |q: f64| -> f64 {
        if late.is_empty() {
            return f64::NAN;
        }
        let i = ((late.len() as f64 * q).ceil() as usize).clamp(1, late.len()) - 1;
        late[i]
    };
    let recovered = after.recovered - before.recovered;
    let by_verb: Vec<(String, f64)> = after
        .writes
        .iter()
        .map(|(verb, n)| {
            (
                verb.clone(),
                n - before.writes.get(verb).copied().unwrap_or(0.0),
            )
        })
        .filter(|(_, n)| *n > 0.0)
        .collect();
    let writes: f64 = by_verb.iter().map(|(_, n)| n).sum();
    let by_verb: Vec<String> = by_verb.iter().map(|(v, n)| format!("{v} {n}")).collect();
    println!(
        "{} ({} nodes tainted in {:.1}s; {} opted-in pods deleted, grace {GRACE}s, threshold \
         {THRESHOLD}{}): {} force-failed{}",
        s.name,
        names.len(),
        burst.as_secs_f64(),
        targets.len(),
        if s.held { ", expected held" } else { "" },
        late.len(),
        if late.is_empty() {
            String::new()
        } else {
            format!(
                "; after the deadline p50 {:.2}s, p99 {:.2}s, max {:.2}s; {:.2} writes per recovered pod ({writes} writes: {}; {recovered} recovered)",
                quantile(0.5),
                quantile(0.99),
                quantile(1.0),
                writes / recovered.max(1.0),
                by_verb.join(", ")
            )
        }
    );
}

/// What the reconciler's `/metrics` counts: its writes that went through, by verb, and the pods
/// it recovered.
#[derive(Default)]
struct Counts {
    writes: BTreeMap<String, f64>,
    recovered: f64,
}

async fn reconciler_counts(admin: &str) -> Counts {
    let text = admin_get(admin, "/metrics")
        .await
        .map(|(_, body)| body)
        .unwrap_or_default();
    let mut writes = BTreeMap::new();
    for (labels, v) in prometheus::samples(&text, "jobgate_recovery_writes_total") {
        if prometheus::label(labels, "result") == "ok" {
            *writes
                .entry(prometheus::label(labels, "verb"))
                .or_insert(0.0) += v;
        }
    }
    let recovered = prometheus::samples(&text, "jobgate_recovery_pods_terminated_total")
        .into_iter()
        .map(|(_, v)| v)
        .sum();
    Counts { writes, recovered }
}

/// The nodes' `Ready` condition set to `status` (`Unknown`: as the node lifecycle controller
/// marks a node whose heartbeats stopped).
async fn report_ready(api: &Api<Node>, names: &[String], status: &str) {
    stream::iter(names)
        .map(|name| async move {
            let reason = if status == "True" {
                "KubeletReady"
            } else {
                "NodeStatusUnknown"
            };
            let patch = json!({"status": {"conditions": [{"type": "Ready", "status": status,
                "reason": reason, "lastTransitionTime": k8s_openapi::jiff::Timestamp::now()}]}});
            api.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
                .unwrap_or_else(|e| panic!("status of node {name}: {e}"));
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
}

async fn patch_nodes(api: &Api<Node>, names: &[String], patch: impl Fn(&str) -> Value) {
    stream::iter(names)
        .map(|name| {
            let body = patch(name);
            async move {
                api.patch(name, &PatchParams::default(), &Patch::Merge(body))
                    .await
                    .unwrap_or_else(|e| panic!("patch node {name}: {e}"));
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
}

/// Deletes `names` with `grace` seconds (a pod already gone is fine); when each delete was sent.
async fn delete_pods(
    api: &Api<Pod>,
    names: &[String],
    grace: Option<u32>,
) -> HashMap<String, Instant> {
    let params = DeleteParams {
        grace_period_seconds: grace,
        ..DeleteParams::default()
    };
    stream::iter(names)
        .map(|name| {
            let params = params.clone();
            async move {
                let sent = Instant::now();
                match api.delete(name, &params).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => panic!("delete pod {name}: {e}"),
                }
                (name.clone(), sent)
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await
}
