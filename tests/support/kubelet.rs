//! The kubelet the control-plane tests play (there is none): nodes that register and report
//! Ready, pods bound to them and reported Running, and the reads the scenarios need.

use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::controlplane::ControlPlane;

/// The kubelet the tests play, and the reads they need.
#[derive(Clone)]
pub struct Cluster {
    /// The administrator's client.
    pub client: kube::Client,
    /// The scenario's namespace.
    pub ns: String,
    /// The nodes the scenario registered.
    pub nodes: Vec<String>,
}

impl Cluster {
    /// A fresh namespace whose name starts with `prefix`, and no nodes yet.
    pub async fn new(cp: &ControlPlane, prefix: &str) -> Cluster {
        Cluster {
            client: cp.client().await,
            ns: cp.namespace(prefix),
            nodes: Vec::new(),
        }
    }

    /// The pods of the scenario's namespace.
    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// The Jobs of the scenario's namespace.
    pub fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn node_api(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    /// Writes the node's `Ready` condition, as a kubelet (`True`) or the node lifecycle
    /// controller (`Unknown`) does.
    async fn report_ready(&self, name: &str, status: &str) {
        self.node_api()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "conditions": [ready(status)] } })),
            )
            .await
            .unwrap_or_else(|e| panic!("node {name} Ready={status}: {e}"));
    }

    /// Replaces the node's taints (`null`: none).
    async fn set_taints(&self, name: &str, taints: Value) {
        self.node_api()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "taints": taints } })),
            )
            .await
            .unwrap_or_else(|e| panic!("taints of node {name}: {e}"));
    }

    /// Registers a Ready node in `zone`, as a kubelet does.
    pub async fn add_node(&mut self, name: &str, zone: &str) {
        self.add_node_labelled(name, Some(zone)).await;
    }

    /// Registers a Ready node, in `zone` or (`None`) without region or zone labels, as
    /// on-premises clusters often run.
    pub async fn add_node_labelled(&mut self, name: &str, zone: Option<&str>) {
        let mut labels = json!({ "kubernetes.io/hostname": name });
        if let Some(zone) = zone {
            labels["topology.kubernetes.io/region"] = json!("test");
            labels["topology.kubernetes.io/zone"] = json!(zone);
        }
        let node: Node = serde_json::from_value(json!({
            "metadata": { "name": name, "labels": labels },
        }))
        .expect("node");
        self.node_api()
            .create(&PostParams::default(), &node)
            .await
            .unwrap_or_else(|e| panic!("create node {name}: {e}"));
        self.report_ready(name, "True").await;
        self.nodes.push(name.to_string());
    }

    /// What the node lifecycle controller does when a node stops reporting: `Ready=Unknown` and
    /// the `node.kubernetes.io/unreachable:NoExecute` taint (`doNoExecuteTaintingPass`).
    pub async fn cut_off(&self, names: &[&str]) {
        let now = now();
        for name in names {
            self.report_ready(name, "Unknown").await;
        }
        // All taints in one pass, as the controller's monitor loop does.
        for name in names {
            let taint = json!([{
                "key": "node.kubernetes.io/unreachable",
                "effect": "NoExecute",
                "timeAdded": now,
            }]);
            self.set_taints(name, taint).await;
        }
    }

    /// The node reports again: `Ready=True`, no taint.
    pub async fn heal(&self, name: &str) {
        self.set_taints(name, Value::Null).await;
        self.report_ready(name, "True").await;
    }

    /// Creates `job` (a manifest) in the scenario's namespace.
    pub async fn create_job(&self, job: Value) {
        let job: Job = serde_json::from_value(job).expect("job");
        self.jobs()
            .create(&PostParams::default(), &job)
            .await
            .unwrap_or_else(|e| panic!("create job: {e}"));
    }

    /// The Job's pods, oldest first.
    pub async fn job_pods(&self, job: &str) -> Vec<Pod> {
        let mut pods = self
            .pods()
            .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
            .await
            .expect("list pods")
            .items;
        pods.sort_by_key(|p| p.metadata.creation_timestamp.clone().map(|t| t.0));
        pods
    }

    /// Binds the Job's pending pods to `node` and reports them Running, as the scheduler and the
    /// kubelet would; returns their names once `count` pods run.
    pub async fn run_pods(&self, job: &str, count: usize, node: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let pods = self.job_pods(job).await;
            for pod in pods
                .iter()
                .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_none())
            {
                self.bind(pod, node).await;
            }
            let running: Vec<String> = self
                .job_pods(job)
                .await
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .map(|p| p.metadata.name.expect("name"))
                .collect();
            if running.len() >= count && pods.len() >= count {
                return running;
            }
            assert!(
                Instant::now() < deadline,
                "the Job controller did not create {count} pods of {job}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Binds the Job's pending pods one to a node, in order, and reports them Running; returns
    /// `(pod, node)` once every node has one.
    pub async fn run_pods_on(&self, job: &str, nodes: &[&str]) -> Vec<(String, String)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut placed: Vec<(String, String)> = Vec::new();
        while placed.len() < nodes.len() {
            for pod in self.job_pods(job).await {
                let name = pod.metadata.name.clone().expect("name");
                let bound = pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_ref())
                    .is_some();
                if !bound && placed.len() < nodes.len() {
                    let node = nodes[placed.len()];
                    self.bind(&pod, node).await;
                    placed.push((name, node.to_string()));
                }
            }
            assert!(
                Instant::now() < deadline,
                "the Job controller did not create {} pods of {job}",
                nodes.len()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        placed
    }

    /// Events whose reason is `reason`, about objects of this namespace, as `name: note` lines.
    pub async fn events(&self, reason: &str) -> Vec<String> {
        let api: Api<k8s_openapi::api::events::v1::Event> =
            Api::namespaced(self.client.clone(), &self.ns);
        api.list(&ListParams::default())
            .await
            .expect("list events")
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .map(|e| {
                format!(
                    "{}: {}",
                    e.regarding.and_then(|r| r.name).unwrap_or_default(),
                    e.note.unwrap_or_default()
                )
            })
            .collect()
    }

    /// Binds `pod` to `node`, as the scheduler would, and reports it Running and Ready, as the
    /// kubelet would.
    pub async fn bind(&self, pod: &Pod, node: &str) {
        let name = pod.metadata.name.clone().expect("name");
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": { "name": name },
            "target": { "apiVersion": "v1", "kind": "Node", "name": node },
        });
        let bound: Result<Value, _> = self
            .pods()
            .create_subresource("binding", &name, &PostParams::default(), &binding)
            .await;
        bound.unwrap_or_else(|e| panic!("bind {name} to {node}: {e}"));
        let started = now();
        self.pods()
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": {
                    "phase": "Running",
                    "startTime": started,
                    "conditions": [
                        { "type": "PodScheduled", "status": "True", "lastTransitionTime": started },
                        { "type": "Ready", "status": "True", "lastTransitionTime": started },
                    ],
                    "containerStatuses": [{
                        "name": "main", "image": "registry.example/trainer:1", "imageID": "",
                        "ready": true, "restartCount": 0,
                        "state": { "running": { "startedAt": started } },
                    }],
                }})),
            )
            .await
            .unwrap_or_else(|e| panic!("report {name} Running: {e}"));
    }

    /// The pod `name`, if it exists.
    pub async fn pod(&self, name: &str) -> Option<Pod> {
        self.pods().get_opt(name).await.expect("get pod")
    }

    /// Removes the scenario's nodes (cluster-scoped, so the next scenario's brake never sees them).
    pub async fn remove_nodes(&self) {
        for name in &self.nodes {
            let _ = self.node_api().delete(name, &DeleteParams::default()).await;
        }
    }
}

fn ready(status: &str) -> Value {
    json!({
        "type": "Ready",
        "status": status,
        "reason": if status == "True" { "KubeletReady" } else { "NodeStatusUnknown" },
        "lastHeartbeatTime": now(),
        "lastTransitionTime": now(),
    })
}

/// Now, as Kubernetes writes a time (RFC 3339, seconds).
pub fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The pod's phase (`""` when it has none).
pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// What a recoverer reads of a pod, on one line: phase, deletion, finalizers, conditions.
pub fn describe(pod: &Pod) -> String {
    let meta = &pod.metadata;
    let conditions: Vec<String> = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}={} {}",
                c.type_,
                c.status,
                c.reason.as_deref().unwrap_or("")
            )
        })
        .collect();
    format!(
        "phase {:?}, deletionTimestamp {:?} (grace {:?}), finalizers {:?}, conditions {:?}",
        phase(pod),
        meta.deletion_timestamp.as_ref().map(|t| t.0.to_string()),
        meta.deletion_grace_period_seconds,
        meta.finalizers.as_deref().unwrap_or_default(),
        conditions
    )
}

/// The key jobgate injects by default, which jobgate's reconciler recovers.
const OPT_IN_KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";

/// An opted-in training Job as the recovery page recommends it: `podReplacementPolicy: Failed`,
/// an `Ignore` rule on `DisruptionTarget`; it tolerates `unreachable` for one second so the
/// taint-eviction controller deletes its pods at once, and they have two seconds to terminate.
pub fn training_job(name: &str, parallelism: u32, replacement: &str, opted_in: bool) -> Value {
    let mut spec = json!({
        "parallelism": parallelism,
        "completions": parallelism,
        "backoffLimit": 6,
        "podReplacementPolicy": replacement,
        "template": {
            "metadata": { "annotations": {} },
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 2,
                "tolerations": [{
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 1,
                }],
                "containers": [{ "name": "main", "image": "registry.example/trainer:1" }],
            },
        },
    });
    if replacement == "Failed" {
        spec["podFailurePolicy"] = json!({ "rules": [{
            "action": "Ignore",
            "onPodConditions": [{ "type": "DisruptionTarget" }],
        }]});
    }
    if opted_in {
        spec["template"]["metadata"]["annotations"][OPT_IN_KEY] = json!("true");
    }
    json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": { "name": name }, "spec": spec })
}
