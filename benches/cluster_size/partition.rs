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
//! With Kueue's manager beside it (`KUEUE=1`), Kueue's share of the pods on the same nodes is
//! deleted in the same burst and judged against Kueue's own deadline (grace + its fixed minute).
//!
//! The scenarios, on the nodes the fill made (zone `i % 8` for node `i`; all ten pods of a node
//! carry jobgate's key when `i % 100 < OPT_IN_PERCENT`, Kueue's when it is below twice that):
//! - one node of zone 0 (one for each recoverer): recovered, each pod within its deadline plus
//!   the recoverer's delay;
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

use super::admin_http::admin_get;
use super::churn::Churn;
use super::kueue::{self, Kueue};
use super::{IN_FLIGHT, NAMESPACE, ZONES, node_name, opt_in_key, pod_name, prometheus, usage};

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
    /// Kueue's manager runs beside jobgate (`KUEUE=1`) and recovers its share of the pods.
    pub(crate) kueue: bool,
}

/// Who recovers a pod: jobgate's reconciler, or Kueue's failure-recovery controller.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Recoverer {
    Jobgate,
    Kueue,
}

impl Recoverer {
    fn threshold(self) -> u64 {
        match self {
            Recoverer::Jobgate => THRESHOLD_SECONDS,
            Recoverer::Kueue => kueue::THRESHOLD_SECONDS,
        }
    }

    /// When a pod deleted at `deleted` with [`GRACE`] is due.
    fn deadline(self, deleted: Instant) -> Instant {
        deleted + Duration::from_secs(GRACE + self.threshold())
    }
}

impl Shape {
    /// The pods on `node` that `by` recovers.
    fn pods_on(&self, node: usize, by: Recoverer) -> Vec<String> {
        let key = match by {
            Recoverer::Jobgate => super::OPT_IN_KEY,
            Recoverer::Kueue => kueue::OPT_IN_KEY,
        };
        (node..self.pods)
            .step_by(self.nodes)
            .filter(|p| opt_in_key(*p, self.opt_in_percent) == Some(key))
            .map(pod_name)
            .collect()
    }

    fn recoverers(&self) -> Vec<Recoverer> {
        if self.kueue {
            vec![Recoverer::Jobgate, Recoverer::Kueue]
        } else {
            vec![Recoverer::Jobgate]
        }
    }

    /// The opted-in pods on `node`, each with who recovers it.
    fn targets_on(&self, node: usize) -> Vec<(String, Recoverer)> {
        self.recoverers()
            .into_iter()
            .flat_map(|by| self.pods_on(node, by).into_iter().map(move |p| (p, by)))
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
    let has_pods = |n: &usize| !shape.targets_on(*n).is_empty();
    // One node for each recoverer.
    let one = shape
        .recoverers()
        .into_iter()
        .filter_map(|by| {
            shape
                .zone(0)
                .into_iter()
                .find(|n| !shape.pods_on(*n, by).is_empty())
        })
        .collect();
    let mut zone1 = shape.zone(1);
    zone1.sort_by_key(|n| !has_pods(n));
    let five_percent = zone1.len().div_ceil(20);
    zone1.truncate(five_percent);
    vec![
        Scenario {
            name: "one node (one of each recoverer's)",
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

/// Runs every scenario with the reconciler `pid` (admin port `admin`) running, and Kueue's
/// manager when `kueue` is given.
pub(crate) async fn run(
    client: &kube::Client,
    shape: Shape,
    churn: &Churn,
    admin: &str,
    pid: u32,
    kueue: Option<&Kueue>,
) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let nodes: Api<Node> = Api::all(client.clone());
    let failed = record_failures(pods.clone()).await;
    let (_, _, cpu_before) = usage(pid);
    let kueue_cpu_before = kueue.map(|k| usage(k.pid).2);
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
        let targets: HashMap<String, Recoverer> =
            s.nodes.iter().flat_map(|n| shape.targets_on(*n)).collect();
        let names_of_targets: Vec<String> = targets.keys().cloned().collect();
        let deleted = delete_pods(&pods, &names_of_targets, Some(GRACE as u32)).await;
        let last_deadline = targets
            .iter()
            .filter_map(|(p, by)| Some(by.deadline(*deleted.get(p)?)))
            .max()
            .unwrap_or_else(Instant::now);
        loop {
            let done = {
                let failed = failed.lock().expect("lock");
                targets.keys().all(|p| failed.contains_key(p))
            };
            if done || Instant::now() > last_deadline + PAST_DEADLINE {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let writes_after = reconciler_counts(admin).await;
        println!(
            "{} ({} nodes tainted in {:.1}s; {} opted-in pods deleted, grace {GRACE}s{}):",
            s.name,
            names.len(),
            burst.as_secs_f64(),
            targets.len(),
            if s.held { "; expected held" } else { "" },
        );
        println!("  {}", episodes(client).await);
        for by in shape.recoverers() {
            let mine: Vec<String> = targets
                .iter()
                .filter(|(_, b)| **b == by)
                .map(|(p, _)| p.clone())
                .collect();
            let writes = (by == Recoverer::Jobgate).then(|| writes_after.since(&writes_before));
            report(by, &mine, &deleted, &failed, writes.as_ref());
        }

        // Put the cluster back: the pods left terminating go (the next fill recreates them),
        // then the taints, then the labels.
        delete_pods(&pods, &names_of_targets, Some(0)).await;
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
    if let (Some(k), Some(before)) = (kueue, kueue_cpu_before) {
        let (peak, rss, cpu) = usage(k.pid);
        println!(
            "  Kueue's manager: peak RSS {peak:.1} MiB, RSS {rss:.1} MiB, CPU {:.2}s during them",
            cpu - before
        );
    }
}

/// One recoverer's figures for a scenario: how many of its pods were `Failed`, how long after
/// each one's deadline (delete + grace + its threshold), and its writes per recovered pod when
/// they are counted (jobgate's).
fn report(
    by: Recoverer,
    targets: &[String],
    deleted: &HashMap<String, Instant>,
    failed: &FailedAt,
    writes: Option<&Counts>,
) {
    let failed = failed.lock().expect("lock");
    let mut late: Vec<f64> = targets
        .iter()
        .filter_map(|p| {
            let at = failed.get(p)?;
            let deadline = by.deadline(*deleted.get(p)?);
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
    let writes = writes.map(|w| {
        let total: f64 = w.writes.values().sum();
        let by_verb: Vec<String> = w
            .writes
            .iter()
            .filter(|(_, n)| **n > 0.0)
            .map(|(v, n)| format!("{v} {n}"))
            .collect();
        format!(
            "; {:.2} writes per recovered pod ({total} writes: {}; {} recovered)",
            total / w.recovered.max(1.0),
            by_verb.join(", "),
            w.recovered
        )
    });
    println!(
        "  {by:?} (threshold {}s): {} of {} force-failed{}",
        by.threshold(),
        late.len(),
        targets.len(),
        if late.is_empty() {
            String::new()
        } else {
            format!(
                "; after the deadline p50 {:.2}s, p99 {:.2}s, max {:.2}s{}",
                quantile(0.5),
                quantile(0.99),
                quantile(1.0),
                writes.unwrap_or_default()
            )
        }
    );
}

/// How many Jobs of the namespace have had how many recovery episodes so far (the `count` of
/// jobgate's `jobgate.dev/recovery-state` annotation): a Job whose pods on two nodes of one
/// burst made two episodes shows here.
async fn episodes(client: &kube::Client) -> String {
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(client.clone(), NAMESPACE);
    let list = jobs
        .list_metadata(&ListParams::default())
        .await
        .expect("list Jobs");
    let mut by_count: BTreeMap<u64, usize> = BTreeMap::new();
    for job in list.items {
        let count = job
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("jobgate.dev/recovery-state"))
            .and_then(|v| serde_json::from_str::<Value>(v).ok())
            .and_then(|v| v["count"].as_u64());
        if let Some(count) = count {
            *by_count.entry(count).or_insert(0) += 1;
        }
    }
    let counts: Vec<String> = by_count
        .iter()
        .map(|(episodes, jobs)| format!("{jobs} with {episodes}"))
        .collect();
    format!(
        "Jobs by jobgate recovery episodes so far: {}",
        counts.join(", ")
    )
}

/// What the reconciler's `/metrics` counts: its writes that went through, by verb, and the pods
/// it recovered.
#[derive(Default)]
struct Counts {
    writes: BTreeMap<String, f64>,
    recovered: f64,
}

impl Counts {
    fn since(&self, before: &Counts) -> Counts {
        Counts {
            writes: self
                .writes
                .iter()
                .map(|(v, n)| (v.clone(), n - before.writes.get(v).copied().unwrap_or(0.0)))
                .collect(),
            recovered: self.recovered - before.recovered,
        }
    }
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
