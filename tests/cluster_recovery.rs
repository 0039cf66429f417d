//! Failure recovery end to end with the real Job controller: kube-apiserver, etcd and
//! kube-controller-manager (the Job, taint-eviction and garbage-collector controllers) built from
//! k8s.io/kubernetes (tests/support/controlplane.rs). The test plays the kubelet: it registers
//! nodes, binds the pods the Job controller creates and reports them Running. A node then goes
//! `unreachable` as the node lifecycle controller marks it (taint and `Ready=Unknown`); the
//! taint-eviction controller deletes its pods, which stay terminating because no kubelet confirms.
//! `jobgate reconcile` moves the opted-in ones to `Failed`, and the Job controller replaces them
//! as `podReplacementPolicy` says (KEP-3939), and not before.
//!
//! `jobgate reconcile` watches every namespace and the brake reads every node, so the scenarios
//! take turns ([`turn`]) and each uses zones of its own and removes its nodes.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::controlplane::ControlPlane;

const KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";

/// One scenario at a time (see the module comment).
fn turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The kubelet the tests play, and the reads they need.
struct Cluster {
    client: kube::Client,
    ns: String,
    nodes: Vec<String>,
}

impl Cluster {
    async fn new(cp: &ControlPlane, prefix: &str) -> Cluster {
        Cluster {
            client: cp.client().await,
            ns: cp.namespace(prefix),
            nodes: Vec::new(),
        }
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn node_api(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    /// Registers a Ready node in `zone`, as a kubelet does.
    async fn add_node(&mut self, name: &str, zone: &str) {
        let node: Node = serde_json::from_value(json!({
            "metadata": { "name": name, "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/region": "test",
                "topology.kubernetes.io/zone": zone,
            }},
        }))
        .expect("node");
        self.node_api()
            .create(&PostParams::default(), &node)
            .await
            .unwrap_or_else(|e| panic!("create node {name}: {e}"));
        self.node_api()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "conditions": [ready("True")] } })),
            )
            .await
            .unwrap_or_else(|e| panic!("node {name} Ready: {e}"));
        self.nodes.push(name.to_string());
    }

    /// What the node lifecycle controller does when a node stops reporting: `Ready=Unknown` and
    /// the `node.kubernetes.io/unreachable:NoExecute` taint (`doNoExecuteTaintingPass`).
    async fn cut_off(&self, names: &[&str]) {
        let now = now();
        for name in names {
            self.node_api()
                .patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": { "conditions": [ready("Unknown")] } })),
                )
                .await
                .unwrap_or_else(|e| panic!("node {name} Unknown: {e}"));
        }
        // All taints in one pass, as the controller's monitor loop does.
        for name in names {
            self.node_api()
                .patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "spec": { "taints": [{
                        "key": "node.kubernetes.io/unreachable",
                        "effect": "NoExecute",
                        "timeAdded": now,
                    }]}})),
                )
                .await
                .unwrap_or_else(|e| panic!("taint node {name}: {e}"));
        }
    }

    /// The node reports again: `Ready=True`, no taint.
    async fn heal(&self, name: &str) {
        self.node_api()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "taints": null } })),
            )
            .await
            .unwrap_or_else(|e| panic!("untaint node {name}: {e}"));
        self.node_api()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "conditions": [ready("True")] } })),
            )
            .await
            .unwrap_or_else(|e| panic!("node {name} Ready: {e}"));
    }

    async fn create_job(&self, job: Value) {
        let job: Job = serde_json::from_value(job).expect("job");
        self.jobs()
            .create(&PostParams::default(), &job)
            .await
            .unwrap_or_else(|e| panic!("create job: {e}"));
    }

    /// The Job's pods, oldest first.
    async fn job_pods(&self, job: &str) -> Vec<Pod> {
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
    async fn run_pods(&self, job: &str, count: usize, node: &str) -> Vec<String> {
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

    async fn bind(&self, pod: &Pod, node: &str) {
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

    async fn pod(&self, name: &str) -> Option<Pod> {
        self.pods().get_opt(name).await.expect("get pod")
    }

    /// Removes the scenario's nodes (cluster-scoped, so the next scenario's brake never sees them).
    async fn remove_nodes(&self) {
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

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// An opted-in training Job as the recovery page recommends it: `podReplacementPolicy: Failed`,
/// an `Ignore` rule on `DisruptionTarget`; it tolerates `unreachable` for one second so the
/// taint-eviction controller deletes its pods at once, and they have two seconds to terminate.
fn training_job(name: &str, parallelism: u32, replacement: &str, opted_in: bool) -> Value {
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
        spec["template"]["metadata"]["annotations"][KEY] = json!("true");
    }
    json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": { "name": name }, "spec": spec })
}

/// `jobgate reconcile` against the control plane; stopped (SIGKILL) when dropped.
struct Reconciler {
    child: Child,
    pub admin: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Reconciler {
    fn start(cp: &ControlPlane, lease_namespace: &str, extra: &[&str]) -> Reconciler {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let admin = format!("127.0.0.1:{port}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_jobgate"))
            .arg("reconcile")
            .arg("--kubeconfig")
            .arg(&cp.kubeconfig)
            .args(["--lease-namespace", lease_namespace, "--admin-addr", &admin])
            .args([
                "--forceful-termination-grace-period",
                "3s",
                "--log-format",
                "json",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start jobgate reconcile");
        let log = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    log.lock().expect("log").push(line);
                }
            });
        }
        Reconciler { child, admin, log }
    }

    fn log(&self) -> String {
        self.log.lock().expect("log").join("\n")
    }

    /// One metric's value from the admin port (0 when absent).
    fn metric(&self, name: &str) -> f64 {
        let reply = support::curl(&[&format!("http://{}/metrics", self.admin)]);
        reply
            .body
            .lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    fn ready(&self) -> bool {
        support::curl(&[&format!("http://{}/readyz", self.admin)]).status == 200
    }
}

impl Drop for Reconciler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn has_recovery_condition(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "KueueFailureRecovery" && c.status == "True")
        })
}

/// Polls `check` every 200 ms until it returns `Some`; on timeout fails with `what` and the log.
async fn until<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    within: Duration,
    reconciler: Option<&Reconciler>,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!(
                "timed out after {within:?} waiting for {what}; jobgate reconcile said:\n{}",
                reconciler.map(Reconciler::log).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_stuck_terminating_on_an_unreachable_node_is_failed_by_jobgate_and_only_then_replaced()
 {
    let _turn = turn();
    let cp = ControlPlane::shared();
    let mut c = Cluster::new(cp, "recovery").await;
    c.add_node("recovery-a1", "recovery-a").await;
    c.add_node("recovery-a2", "recovery-a").await;

    // KEP-3939: `Failed` waits for a terminal pod; `TerminatingOrFailed` replaces a terminating one.
    c.create_job(training_job("train", 1, "Failed", true)).await;
    c.create_job(training_job("eager", 1, "TerminatingOrFailed", false))
        .await;
    c.create_job(training_job("not-opted-in", 1, "Failed", false))
        .await;
    let train = c.run_pods("train", 1, "recovery-a1").await.remove(0);
    let eager = c.run_pods("eager", 1, "recovery-a1").await.remove(0);
    let other = c.run_pods("not-opted-in", 1, "recovery-a1").await.remove(0);

    let reconciler = Reconciler::start(cp, &c.ns, &[]);
    until(
        "reconcile /readyz",
        Duration::from_secs(60),
        Some(&reconciler),
        || async { reconciler.ready().then_some(()) },
    )
    .await;

    c.cut_off(&["recovery-a1"]).await;
    // The taint-eviction controller deletes the pods; nothing confirms, so they stay terminating.
    for pod in [&train, &eager, &other] {
        until(
            &format!("{pod} terminating"),
            Duration::from_secs(60),
            Some(&reconciler),
            || async {
                c.pod(pod)
                    .await
                    .filter(|p| p.metadata.deletion_timestamp.is_some())
                    .map(|_| ())
            },
        )
        .await;
    }
    // TerminatingOrFailed: the Job controller replaces the terminating pod at once.
    until(
        "a replacement for the eager Job",
        Duration::from_secs(30),
        Some(&reconciler),
        || async { (c.job_pods("eager").await.len() == 2).then_some(()) },
    )
    .await;

    // Failed: no replacement while the pod is terminating; jobgate fails it after
    // deletionTimestamp + 3 s, and only then does the Job controller create one.
    let replacement = until("the train pod recovered and replaced", Duration::from_secs(60), Some(&reconciler), || async {
        let pods = c.job_pods("train").await;
        let original = pods.iter().find(|p| p.metadata.name.as_deref() == Some(train.as_str()));
        let others: Vec<&Pod> = pods.iter().filter(|p| p.metadata.name.as_deref() != Some(train.as_str())).collect();
        if let Some(original) = original
            && !others.is_empty()
        {
            assert!(
                phase(original) == "Failed" && has_recovery_condition(original),
                "the Job controller replaced {train} while it was still terminating (phase {:?})",
                phase(original)
            );
        }
        others.first().map(|p| p.metadata.name.clone().expect("name"))
    })
    .await;
    assert_ne!(replacement, train);

    // jobgate then deletes the recorded pod (grace period 0); the replacement runs elsewhere.
    until(
        &format!("{train} deleted"),
        Duration::from_secs(60),
        Some(&reconciler),
        || async { c.pod(&train).await.is_none().then_some(()) },
    )
    .await;
    c.run_pods("train", 1, "recovery-a2").await;

    // The pod that did not opt in is left alone: still terminating, not Failed, not replaced.
    let untouched = c
        .pod(&other)
        .await
        .expect("the not-opted-in pod still exists");
    assert!(untouched.metadata.deletion_timestamp.is_some());
    assert_ne!(phase(&untouched), "Failed");
    assert!(!has_recovery_condition(&untouched));
    assert_eq!(
        c.job_pods("not-opted-in").await.len(),
        1,
        "a pod that did not opt in was replaced"
    );

    // What the Job records: one episode, on the node that went away.
    let job = c.jobs().get("train").await.expect("train job");
    let state: Value = serde_json::from_str(
        job.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("jobgate.dev/recovery-state"))
            .expect("jobgate.dev/recovery-state on the Job"),
    )
    .expect("recovery state JSON");
    assert_eq!(state["count"], 1, "{state}");
    assert_eq!(state["lastNodes"], json!(["recovery-a1"]), "{state}");
    assert!(reconciler.metric("jobgate_recovery_pods_terminated_total") >= 1.0);

    // `jobgate status` reads the same cluster: the leader and the Job's recorded episode.
    let status = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .arg("status")
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .args(["-n", &c.ns, "--lease-namespace", &c.ns])
        .output()
        .expect("run jobgate status");
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.status.success(),
        "jobgate status: {text}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(
        text.contains("train"),
        "status does not name the recovered Job:\n{text}"
    );
    c.remove_nodes().await;
}
