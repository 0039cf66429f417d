//! The reconciler at a training cluster's size, through the API of a running test control plane
//! (there is no kubelet: this program plays it, as the cluster tests do).
//!
//! It fills the cluster with `NODES` Nodes shaped like GPU nodes (region and zone labels,
//! capacity, the four pressure conditions, 50 images with their sizes, node info) and `PODS` pods
//! bound to them, reported `Running`, owned by Indexed Jobs of 10 completions each. The Jobs carry
//! `spec.managedBy`, so kube-controller-manager's Job controller leaves their pods alone (KEP-4368);
//! `OPT_IN_PERCENT` of the pods carry the recovery opt-in jobgate's mutation sets, and as many
//! again the key Kueue's controller reads (`kueue.rs`). Then it starts `jobgate reconcile`
//! against the cluster and reads, from `/proc` and the reconciler's `/metrics`:
//! - its peak RSS (`VmHWM`), RSS and CPU seconds when `/readyz` first answers (its lease round
//!   ended; the initial lists may still run) and a minute later, the initial lists included;
//! - the API requests served meanwhile, by verb and resource, from kube-apiserver's own
//!   `apiserver_request_total` (kube-controller-manager's requests of the same time included: the
//!   bench sends none then);
//! - then the same over a minute of kubelet churn (`churn.rs`: leases and node status), and the
//!   partitions (`partition.rs`: one node, 5 % of a zone, a whole zone, a whole unlabelled zone),
//!   with churn going on: how late each opted-in pod is `Failed`, the reconciler's writes per
//!   recovered pod, and what the brake holds;
//! - with `KUEUE=1`, Kueue's manager beside it, measured the same way on the same cluster, churn
//!   and partitions (`kueue.rs`).
//!
//! ```sh
//! export KUBECONFIG=$(tests/controlplane/start 1.37)
//! cargo build --release --bin jobgate
//! NODES=1000 PODS=10000 KUEUE=1 cargo bench --bench cluster_size
//! tests/controlplane/stop 1.37
//! ```
//!
//! The objects stay (a second run with the same sizes reuses them): stop the control plane to
//! drop them. Figures: docs/src/developer/benchmarks.md.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// The test suite's reader of Prometheus's text format, shared rather than written twice.
#[path = "../tests/support/prometheus.rs"]
pub mod prometheus;

#[path = "common/admin_http.rs"]
mod admin_http;
#[path = "common/apiserver.rs"]
mod apiserver;
#[path = "common/process.rs"]
mod process;
use process::usage;
#[path = "cluster_size/churn.rs"]
mod churn;
#[path = "cluster_size/kueue.rs"]
mod kueue;
#[path = "cluster_size/partition.rs"]
mod partition;

const NAMESPACE: &str = "bench-cluster-size";
const COMPLETIONS: usize = 10;
const ZONES: usize = 8;
/// Requests in flight while filling the cluster.
const IN_FLIGHT: usize = 64;
const OPT_IN_KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v:?} is not a count: {e}")),
        Err(_) => default,
    }
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and there is no cluster to
    // fill then.
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "cluster_size: a benchmark, run by `cargo bench --bench cluster_size` against a test control plane"
        );
        return;
    }
    let nodes = env_usize("NODES", 1000);
    let pods = env_usize("PODS", 10 * nodes);
    let opt_in_percent = env_usize("OPT_IN_PERCENT", 10);
    let jobgate = std::env::var("JOBGATE").unwrap_or_else(|_| "target/release/jobgate".into());
    let client = kube::Client::try_default()
        .await
        .expect("a cluster: export KUBECONFIG=$(tests/controlplane/start 1.37)");

    let started = Instant::now();
    fill_nodes(&client, nodes).await;
    println!("{nodes} nodes in {:.1}s", started.elapsed().as_secs_f64());
    let started = Instant::now();
    fill_pods(&client, nodes, pods, opt_in_percent).await;
    println!(
        "{pods} pods ({opt_in_percent}% opted in) in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let shape = partition::Shape {
        nodes,
        pods,
        opt_in_percent,
        kueue: std::env::var("KUEUE").is_ok_and(|v| v == "1"),
    };
    measure_reconciler(&client, &jobgate, shape).await;
}

/// A GPU node's status as a kubelet reports it, about 6 KiB of JSON.
fn node_status(name: &str) -> Value {
    let images: Vec<Value> = (0..50)
        .map(|i| {
            json!({
                "names": [
                    format!("registry.example.com/ml/train-{i:02}@sha256:{:064x}", i * 7919),
                    format!("registry.example.com/ml/train-{i:02}:v1.{i}.0"),
                ],
                "sizeBytes": 1_500_000_000u64 + i as u64 * 10_000_000,
            })
        })
        .collect();
    let condition = |type_: &str, status: &str, reason: &str| {
        json!({"type": type_, "status": status, "reason": reason,
               "lastHeartbeatTime": "2026-11-28T00:00:00Z",
               "lastTransitionTime": "2026-11-28T00:00:00Z"})
    };
    let resources = json!({"cpu": "96", "memory": "1584Gi", "nvidia.com/gpu": "8",
                           "ephemeral-storage": "3840Gi", "pods": "110"});
    json!({
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID"),
            condition("Ready", "True", "KubeletReady"),
        ],
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                      {"type": "Hostname", "address": name}],
        "nodeInfo": {"machineID": "0", "systemUUID": "0", "bootID": "0",
                     "kernelVersion": "6.8.0", "osImage": "Ubuntu 24.04",
                     "containerRuntimeVersion": "containerd://2.0.0",
                     "kubeletVersion": "v1.37.0", "kubeProxyVersion": "",
                     "operatingSystem": "linux", "architecture": "amd64"},
        "images": images,
    })
}

fn node_name(i: usize) -> String {
    format!("gpu-{i:05}")
}

async fn fill_nodes(client: &kube::Client, count: usize) {
    let api: Api<Node> = Api::all(client.clone());
    stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let name = node_name(i);
                let node: Node = serde_json::from_value(json!({"metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "topology.kubernetes.io/region": "bench",
                        "topology.kubernetes.io/zone": format!("zone-{}", i % ZONES),
                        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                    },
                }}))
                .expect("a node");
                create_once(api.create(&PostParams::default(), &node).await, &name);
                // The kubelet reports its status after it registers.
                api.patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": node_status(&name)})),
                )
                .await
                .unwrap_or_else(|e| panic!("status of node {name}: {e}"));
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
}

/// A create that found the object there already (a second run) is fine.
fn create_once<T>(result: kube::Result<T>, name: &str) {
    match result {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create {name}: {e}"),
    }
}

async fn fill_pods(client: &kube::Client, nodes: usize, pods: usize, opt_in_percent: usize) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).expect("a namespace");
    create_once(
        namespaces.create(&PostParams::default(), &ns).await,
        NAMESPACE,
    );
    let jobs: Api<Job> = Api::namespaced(client.clone(), NAMESPACE);
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let job_count = pods.div_ceil(COMPLETIONS);
    let uids: BTreeMap<usize, String> = stream::iter(0..job_count)
        .map(|j| {
            let jobs = jobs.clone();
            async move { (j, create_job(&jobs, j).await) }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    stream::iter(0..pods)
        .map(|p| {
            let api = pod_api.clone();
            let (job, index) = (p / COMPLETIONS, p % COMPLETIONS);
            let uid = uids[&job].clone();
            let opt_in = opt_in_key(p, opt_in_percent);
            async move { create_pod(&api, job, index, &uid, node_name(p % nodes), opt_in).await }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await
        .unwrap_or_else(|e: kube::Error| panic!("pods: {e}"));
}

/// The recovery key pod `p` carries: jobgate's share (`p % 100 < percent`) the key jobgate's
/// mutation sets, the next share the key Kueue's controller reads (jobgate leaves those to it).
fn opt_in_key(p: usize, percent: usize) -> Option<&'static str> {
    match p % 100 {
        c if c < percent => Some(OPT_IN_KEY),
        c if c < 2 * percent => Some(kueue::OPT_IN_KEY),
        _ => None,
    }
}

/// The name of pod `p` (index `p % COMPLETIONS` of Job `p / COMPLETIONS`).
fn pod_name(p: usize) -> String {
    format!("{}-{}", job_name(p / COMPLETIONS), p % COMPLETIONS)
}

fn job_name(j: usize) -> String {
    format!("train-{j:05}")
}

/// An Indexed Job another controller manages (`spec.managedBy`): its uid, for its pods' owner.
async fn create_job(jobs: &Api<Job>, j: usize) -> String {
    let name = job_name(j);
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "completionMode": "Indexed",
            "completions": COMPLETIONS,
            "parallelism": COMPLETIONS,
            "managedBy": "bench.jobgate.dev/cluster-size",
            "podFailurePolicy": {"rules": [{"action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget"}]}]},
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "trainer", "image": "registry.example.com/ml/train-00:v1.0.0"}]}},
        },
    }))
    .expect("a job");
    create_once(jobs.create(&PostParams::default(), &job).await, &name);
    jobs.get(&name)
        .await
        .unwrap_or_else(|e| panic!("job {name}: {e}"))
        .metadata
        .uid
        .expect("a stored Job has a uid")
}

/// One pod of the Job, bound to `node` and reported `Running`, as the scheduler and the
/// kubelet would.
async fn create_pod(
    api: &Api<Pod>,
    job: usize,
    index: usize,
    uid: &str,
    node: String,
    opt_in: Option<&str>,
) -> kube::Result<()> {
    let name = pod_name(job * COMPLETIONS + index);
    let job = job_name(job);
    let mut annotations = json!({"batch.kubernetes.io/job-completion-index": index.to_string()});
    if let Some(key) = opt_in {
        annotations[key] = json!("true");
    }
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {"batch.kubernetes.io/job-name": job,
                       "batch.kubernetes.io/job-completion-index": index.to_string()},
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                 "uid": uid, "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {"nodeName": node, "restartPolicy": "Never",
                 "containers": [{"name": "trainer", "image": "registry.example.com/ml/train-00:v1.0.0",
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
    }))
    .expect("a pod");
    match api.create(&PostParams::default(), &pod).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
        Err(e) => return Err(e),
    }
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]}})),
    )
    .await
    .map(|_| ())
}

/// kube-apiserver's `apiserver_request_total`, summed by verb and resource.
async fn apiserver_requests(client: &kube::Client) -> BTreeMap<(String, String), f64> {
    let text = apiserver::metrics(client).await;
    let mut out = BTreeMap::new();
    for (labels, count) in prometheus::samples(&text, "apiserver_request_total") {
        let key = (
            prometheus::label(labels, "verb"),
            prometheus::label(labels, "resource"),
        );
        *out.entry(key).or_insert(0.0) += count;
    }
    out
}

async fn measure_reconciler(client: &kube::Client, jobgate: &str, shape: partition::Shape) {
    let before = apiserver_requests(client).await;
    let admin = "127.0.0.1:18090";
    let mut child = process::Started(
        std::process::Command::new(jobgate)
            .args([
                "reconcile",
                "--admin-addr",
                admin,
                "--lease-namespace",
                NAMESPACE,
                "--log-level",
                "warn",
                "--forceful-termination-grace-period",
                partition::THRESHOLD,
            ])
            .spawn()
            .unwrap_or_else(|e| panic!("{jobgate}: {e} (cargo build --release --bin jobgate)")),
    );
    let pid = child.0.id();
    let started = Instant::now();
    loop {
        if admin_http::admin_get(admin, "/readyz")
            .await
            .map(|(s, _)| s)
            == Some(200)
        {
            break;
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            panic!("the reconciler exited: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the reconciler was not ready within 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = started.elapsed();
    let (peak, rss, cpu) = usage(pid);
    println!(
        "reconciler ready (/readyz) in {:.1}s: peak RSS {peak:.1} MiB, RSS {rss:.1} MiB, CPU {cpu:.2}s",
        listed.as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    let (peak, rss, cpu_after) = usage(pid);
    println!(
        "a minute later (initial lists included): peak RSS {peak:.1} MiB, RSS {rss:.1} MiB, CPU {:.2}s in the minute",
        cpu_after - cpu
    );
    println!("API requests served while it listed and then idled a minute (verb resource: count):");
    print_requests(&before, &apiserver_requests(client).await);
    let kueue = if shape.kueue {
        Some(measure_kueue_start(client).await)
    } else {
        None
    };

    let churn = churn::start(client, shape.nodes);
    let cpu = usage(pid).2;
    let kueue_cpu = kueue.as_ref().map(|k| usage(k.pid).2);
    let before = apiserver_requests(client).await;
    let machine = process::machine_ticks();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let (peak, rss, cpu_after) = usage(pid);
    let (busy, total) = process::machine_ticks();
    println!(
        "a minute of churn ({}; the machine {:.0} % busy): peak RSS {peak:.1} MiB, RSS {rss:.1} MiB, CPU {:.2}s in the minute",
        churn.rates(),
        (busy - machine.0) as f64 * 100.0 / (total - machine.1).max(1) as f64,
        cpu_after - cpu
    );
    if let (Some(k), Some(cpu)) = (&kueue, kueue_cpu) {
        let (peak, rss, cpu_after) = usage(k.pid);
        println!(
            "  Kueue's manager in the same minute: peak RSS {peak:.1} MiB, RSS {rss:.1} MiB, CPU {:.2}s",
            cpu_after - cpu
        );
    }
    print_requests(&before, &apiserver_requests(client).await);

    partition::run(client, shape, &churn, admin, pid, kueue.as_ref()).await;
    churn.stop();
    drop(child);
    // The objects are left for the next run; list one kind to show what the cluster holds.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let held = pods
        .list_metadata(&ListParams::default().limit(1))
        .await
        .map(|l| l.metadata.remaining_item_count.unwrap_or(0) + l.items.len() as i64)
        .unwrap_or(-1);
    println!("the cluster holds {held} pods in {NAMESPACE}");
}

/// Kueue's manager started beside the idle reconciler, measured as the reconciler was: at ready
/// and a minute later, with the requests served meanwhile (the reconciler's lease renewals
/// included).
async fn measure_kueue_start(client: &kube::Client) -> kueue::Kueue {
    let before = apiserver_requests(client).await;
    let started = Instant::now();
    let kueue = kueue::start();
    let (peak, rss, cpu) = usage(kueue.pid);
    println!(
        "Kueue's manager ready in {:.1}s (tests/controlplane/kueue, CRDs and webhooks included): peak RSS {peak:.1} MiB, RSS {rss:.1} MiB, CPU {cpu:.2}s",
        started.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    let (peak, rss, cpu_after) = usage(kueue.pid);
    println!(
        "  a minute later: peak RSS {peak:.1} MiB, RSS {rss:.1} MiB, CPU {:.2}s in the minute",
        cpu_after - cpu
    );
    println!("  API requests served while it started and idled a minute (verb resource: count):");
    print_requests(&before, &apiserver_requests(client).await);
    kueue
}

/// The requests served between two readings of `apiserver_request_total`, by verb and resource.
fn print_requests(
    before: &BTreeMap<(String, String), f64>,
    after: &BTreeMap<(String, String), f64>,
) {
    for (key, count) in after {
        let delta = count - before.get(key).copied().unwrap_or(0.0);
        if delta >= 1.0 {
            println!("  {} {}: {delta}", key.0, key.1);
        }
    }
}
