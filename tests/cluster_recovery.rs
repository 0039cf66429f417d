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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::controlplane::ControlPlane;

const KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";

/// One scenario at a time (see the module comment); tokio's mutex, held across awaits, works
/// from each test's own runtime.
async fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TURN.lock().await
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
    async fn add_node(&mut self, name: &str, zone: &str) {
        self.add_node_labelled(name, Some(zone)).await;
    }

    /// Registers a Ready node, in `zone` or (`None`) without region or zone labels, as
    /// on-premises clusters often run.
    async fn add_node_labelled(&mut self, name: &str, zone: Option<&str>) {
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
    async fn cut_off(&self, names: &[&str]) {
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
    async fn heal(&self, name: &str) {
        self.set_taints(name, Value::Null).await;
        self.report_ready(name, "True").await;
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

    /// Binds the Job's pending pods one to a node, in order, and reports them Running; returns
    /// `(pod, node)` once every node has one.
    async fn run_pods_on(&self, job: &str, nodes: &[&str]) -> Vec<(String, String)> {
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
    async fn events(&self, reason: &str) -> Vec<String> {
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

    /// Starts it and waits until its `/readyz` answers.
    async fn start_ready(cp: &ControlPlane, lease_namespace: &str, extra: &[&str]) -> Reconciler {
        let reconciler = Reconciler::start(cp, lease_namespace, extra);
        until(
            "reconcile /readyz",
            Duration::from_secs(60),
            Some(&reconciler),
            || async { reconciler.ready().then_some(()) },
        )
        .await;
        reconciler
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
    let _turn = turn().await;
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

    let reconciler = Reconciler::start_ready(cp, &c.ns, &[]).await;

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
    let text = status(cp, &c.ns);
    assert!(
        text.contains("train"),
        "status does not name the recovered Job:\n{text}"
    );
    c.remove_nodes().await;
}

/// `jobgate status` over the scenario's namespace, as a user runs it: what it prints.
fn status(cp: &ControlPlane, ns: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .arg("status")
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .args(["-n", ns, "--lease-namespace", ns])
        .output()
        .expect("run jobgate status");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "jobgate status: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Waits until every pod in `pods` is terminating.
async fn all_terminating(c: &Cluster, pods: &[String], reconciler: &Reconciler) {
    for pod in pods {
        until(
            &format!("{pod} terminating"),
            Duration::from_secs(60),
            Some(reconciler),
            || async {
                c.pod(pod)
                    .await
                    .filter(|p| p.metadata.deletion_timestamp.is_some())
                    .map(|_| ())
            },
        )
        .await;
    }
}

/// Waits until `pod` is Failed with jobgate's recovery condition (or already deleted by it).
async fn recovered(c: &Cluster, pod: &str, reconciler: &Reconciler) {
    until(
        &format!("{pod} recovered"),
        Duration::from_secs(60),
        Some(reconciler),
        || async {
            match c.pod(pod).await {
                None => Some(()),
                Some(p) => (phase(&p) == "Failed" && has_recovery_condition(&p)).then_some(()),
            }
        },
    )
    .await;
}

/// A pod jobgate must not have touched: still there, terminating, not Failed.
async fn untouched(c: &Cluster, pod: &str) -> bool {
    c.pod(pod).await.is_some_and(|p| {
        p.metadata.deletion_timestamp.is_some()
            && phase(&p) != "Failed"
            && !has_recovery_condition(&p)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_unreachable_nodes_in_one_zone_is_held_as_a_partition_until_the_zone_heals() {
    burst_in_one_zone("brake", Some("brake-b")).await;
}

/// kube-controller-manager's `GetZoneKey` puts every node without region or zone labels into
/// one zone, `""`, and judges it like any other: ten such nodes, six cut off in one pass, are
/// held as a partition, as ten labelled ones are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_unreachable_nodes_without_zone_labels_is_held_as_one_zone() {
    burst_in_one_zone("unlabelled", None).await;
}

/// Ten nodes named `{prefix}-b{i}`, in `zone` or without zone labels; six cut off in one pass
/// are held until one heals.
async fn burst_in_one_zone(prefix: &str, zone: Option<&str>) {
    let _turn = turn().await;
    let cp = ControlPlane::shared();
    let mut c = Cluster::new(cp, prefix).await;
    let nodes: Vec<String> = (0..10).map(|i| format!("{prefix}-b{i}")).collect();
    for node in &nodes {
        c.add_node_labelled(node, zone).await;
    }
    // Another zone that stays healthy: not every zone is unreachable (that is a control-plane
    // partition, held for another reason).
    c.add_node(&format!("{prefix}-c0"), &format!("{prefix}-c"))
        .await;
    c.add_node(&format!("{prefix}-c1"), &format!("{prefix}-c"))
        .await;

    c.create_job(training_job("wide", 10, "Failed", true)).await;
    let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
    let placed = c.run_pods_on("wide", &nodes).await;
    let reconciler = Reconciler::start_ready(cp, &c.ns, &[]).await;

    // The pods the brake exists for: already terminating (deleted, their kubelets not yet
    // confirming) and past their deadline when the network splits, so every one is due the
    // moment its node turns unreachable.
    let pods: Vec<String> = placed.iter().map(|(p, _)| p.clone()).collect();
    for pod in &pods {
        c.pods()
            .delete(pod, &DeleteParams::default())
            .await
            .expect("delete pod");
    }
    all_terminating(&c, &pods, &reconciler).await;
    // deletionTimestamp (now + 2 s) + 3 s, and a margin.
    tokio::time::sleep(Duration::from_secs(7)).await;

    // Six of ten nodes of one zone in one monitor pass: kube-controller-manager takes the zone for
    // partially disrupted (more than 2 and at least 55 % unhealthy, a zone of at most 50 nodes)
    // and stops evictions there (node_lifecycle_controller.go handleDisruption): the pods on
    // those nodes may well still run.
    let cut: Vec<&str> = nodes[..6].to_vec();
    c.cut_off(&cut).await;
    let on = |wanted: &[&str]| -> Vec<String> {
        placed
            .iter()
            .filter(|(_, n)| wanted.contains(&n.as_str()))
            .map(|(p, _)| p.clone())
            .collect()
    };
    let cut_pods = on(&cut);
    let held = until(
        "ForcefulTerminationHeld events",
        Duration::from_secs(30),
        Some(&reconciler),
        || async {
            let events = c.events("ForcefulTerminationHeld").await;
            (events.len() >= cut_pods.len()).then_some(events)
        },
    )
    .await;
    // The zone as people read it (`region/zone`), or `` for the nodes without labels.
    let named = match zone {
        Some(zone) => format!("/{zone}` has 6/10"),
        None => "zone `` has 6/10".to_string(),
    };
    assert!(
        held.iter().all(|e| e.contains(&named)),
        "held events do not name {named}: {held:?}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    for pod in &cut_pods {
        assert!(
            untouched(&c, pod).await,
            "{pod} was force-failed in a partitioned zone; jobgate reconcile said:\n{}",
            reconciler.log()
        );
    }

    // One node comes back: 5 of 10 unreachable is below 55 %, no partition. The five pods still
    // on unreachable nodes are recovered at once; the pod of the node that came back, and those
    // of the nodes never cut off, are left alone.
    c.heal(cut[0]).await;
    for pod in on(&cut[1..]) {
        recovered(&c, &pod, &reconciler).await;
    }
    for pod in on(&cut[..1]).into_iter().chain(on(&nodes[6..])) {
        assert!(
            untouched(&c, &pod).await,
            "{pod} was recovered although its node is reachable"
        );
    }
    c.remove_nodes().await;
}

/// Two recoverers, one pod each: Kueue's failure-recovery controller (Kueue 0.15.6+,
/// FailureRecoveryPolicy) recovers the pods annotated `kueue.x-k8s.io/safe-to-forcefully-delete`,
/// so jobgate's reconciler leaves them to it by default and recovers those opted in with
/// jobgate's key; `jobgate status` says which is whose.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_opted_into_kueues_recovery_is_left_to_kueue_and_status_says_so() {
    let _turn = turn().await;
    let cp = ControlPlane::shared();
    let mut c = Cluster::new(cp, "owners").await;
    c.add_node("owners-a1", "owners-a").await;
    c.add_node("owners-a2", "owners-a").await;
    c.create_job(training_job("ours", 1, "Failed", true)).await;
    let mut kueues = training_job("kueues", 1, "Failed", false);
    kueues["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/safe-to-forcefully-delete"] =
        json!("true");
    c.create_job(kueues).await;
    let ours = c.run_pods("ours", 1, "owners-a1").await.remove(0);
    let theirs = c.run_pods("kueues", 1, "owners-a1").await.remove(0);
    let reconciler = Reconciler::start_ready(cp, &c.ns, &[]).await;

    c.cut_off(&["owners-a1"]).await;
    all_terminating(&c, &[ours.clone(), theirs.clone()], &reconciler).await;
    recovered(&c, &ours, &reconciler).await;
    // Past its deadline too (deletionTimestamp + 2 s + 3 s), on the same unreachable node.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(
        untouched(&c, &theirs).await,
        "{theirs}, opted into Kueue's recovery, was recovered by jobgate:\n{}",
        reconciler.log()
    );
    let text = status(cp, &c.ns);
    let row = text
        .lines()
        .find(|l| l.contains(&theirs))
        .unwrap_or_else(|| panic!("status has no row for {theirs}:\n{text}"));
    assert!(
        row.contains("left to Kueue"),
        "status does not say Kueue recovers {theirs}: {row}"
    );
    c.remove_nodes().await;
}

/// A force delete (grace period 0) cannot get past a pod's finalizers (Kueue's own pod finalizer
/// is one). The recovered pod that one keeps is reported as waiting for it, by name (an event,
/// `jobgate_recovery_finalizer_held_pods`, `jobgate status`), and is not deleted again in a
/// loop; once the finalizer goes, so does the pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_pod_a_finalizer_keeps_is_reported_as_held_by_it_and_not_deleted_again() {
    const FINALIZER: &str = "example.com/keep-for-audit";
    let _turn = turn().await;
    let cp = ControlPlane::shared();
    let mut c = Cluster::new(cp, "finalizers").await;
    c.add_node("finalizers-a1", "finalizers-a").await;
    c.add_node("finalizers-a2", "finalizers-a").await;
    c.create_job(training_job("kept", 1, "Failed", true)).await;
    let pod = c.run_pods("kept", 1, "finalizers-a1").await.remove(0);
    c.pods()
        .patch(
            &pod,
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    { "op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER },
                ]))
                .expect("patch"),
            ),
        )
        .await
        .expect("add the finalizer");
    let reconciler = Reconciler::start_ready(cp, &c.ns, &[]).await;
    c.cut_off(&["finalizers-a1"]).await;
    let event = until(
        "the finalizers event",
        Duration::from_secs(60),
        Some(&reconciler),
        || async {
            c.events("ForcefulTerminationWaitingForFinalizers")
                .await
                .into_iter()
                .find(|e| e.starts_with(&pod))
        },
    )
    .await;
    assert!(event.contains(&format!("`{FINALIZER}`")), "{event}");
    let held = c.pod(&pod).await.expect("the finalizer keeps the pod");
    assert_eq!(phase(&held), "Failed");
    assert!(has_recovery_condition(&held));
    assert_eq!(held.metadata.deletion_grace_period_seconds, Some(0));
    assert_eq!(
        reconciler.metric("jobgate_recovery_finalizer_held_pods"),
        1.0,
        "{}\n{}",
        reconciler.log(),
        support::curl(&[&format!("http://{}/metrics", reconciler.admin)]).body
    );

    // Not deleted again: the pod's updates (the Job controller removing its own finalizer, the
    // status) reconcile it without another delete.
    let deletes = || reconciler.metric("jobgate_recovery_writes_total{verb=\"delete_pod\"");
    let before = deletes();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(deletes(), before, "{}", reconciler.log());
    let text = status(cp, &c.ns);
    assert!(
        text.lines().any(|l| l.contains(&pod)
            && l.contains("waiting for finalizers")
            && l.contains(FINALIZER)),
        "{text}"
    );

    // The finalizer's controller lets go: the pod is gone and nothing is held.
    c.pods()
        .patch(
            &pod,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "finalizers": null } })),
        )
        .await
        .expect("remove the finalizers");
    until(
        &format!("{pod} gone"),
        Duration::from_secs(30),
        Some(&reconciler),
        || async { c.pod(&pod).await.is_none().then_some(()) },
    )
    .await;
    until(
        "no pod held by finalizers",
        Duration::from_secs(30),
        Some(&reconciler),
        || async {
            (reconciler.metric("jobgate_recovery_finalizer_held_pods") == 0.0).then_some(())
        },
    )
    .await;
    c.remove_nodes().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn episodes_back_off_and_stop_at_the_limit_which_suspends_the_job() {
    let _turn = turn().await;
    let cp = ControlPlane::shared();
    let mut c = Cluster::new(cp, "episodes").await;
    for node in ["episodes-1", "episodes-2", "episodes-3", "episodes-4"] {
        c.add_node(node, "episodes").await;
    }
    c.create_job(training_job("flaky", 1, "Failed", true)).await;
    let reconciler = Reconciler::start_ready(
        cp,
        &c.ns,
        &[
            "--recovery-backoff-base-seconds",
            "4",
            "--recovery-backoff-limit-count",
            "2",
            "--on-recovery-limit",
            "suspend",
        ],
    )
    .await;

    // Two episodes, each on a node that then comes back; the second waits out the backoff.
    let mut episode_times = Vec::new();
    for (n, node) in ["episodes-1", "episodes-2"].into_iter().enumerate() {
        let pod = c.run_pods_on("flaky", &[node]).await.remove(0).0;
        c.cut_off(&[node]).await;
        all_terminating(&c, std::slice::from_ref(&pod), &reconciler).await;
        recovered(&c, &pod, &reconciler).await;
        episode_times.push(Instant::now());
        let state = recovery_state(&c, "flaky").await;
        assert_eq!(state["count"], n + 1, "{state}");
        assert_eq!(state["lastNodes"], json!([node]), "{state}");
        c.heal(node).await;
    }
    assert!(
        episode_times[1] - episode_times[0] >= Duration::from_secs(4),
        "the second episode did not wait for the backoff (4 s after the first)"
    );

    // A third would exceed the limit of 2: nothing is recovered, the Job is suspended, and the
    // Job gets one RecoveryLimitExceeded warning.
    let pod = c.run_pods_on("flaky", &["episodes-3"]).await.remove(0).0;
    c.cut_off(&["episodes-3"]).await;
    all_terminating(&c, std::slice::from_ref(&pod), &reconciler).await;
    until(
        "the Job suspended at the limit",
        Duration::from_secs(60),
        Some(&reconciler),
        || async {
            let job = c.jobs().get("flaky").await.ok()?;
            (job.spec?.suspend == Some(true)).then_some(())
        },
    )
    .await;
    let state = recovery_state(&c, "flaky").await;
    assert_eq!(state["limitExceeded"]["action"], "Suspend", "{state}");
    assert!(
        untouched(&c, &pod).await,
        "a pod was recovered beyond the limit"
    );
    let warned = c.events("RecoveryLimitExceeded").await;
    assert_eq!(warned.len(), 1, "{warned:?}");
    c.remove_nodes().await;
}

async fn recovery_state(c: &Cluster, job: &str) -> Value {
    let job = c.jobs().get(job).await.expect("job");
    let text = job
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("jobgate.dev/recovery-state"))
        .cloned()
        .unwrap_or_else(|| panic!("no jobgate.dev/recovery-state on the Job"));
    serde_json::from_str(&text).expect("recovery state JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_takes_over_when_the_leader_dies_and_recovers_what_is_due() {
    let _turn = turn().await;
    let cp = ControlPlane::shared();
    let mut c = Cluster::new(cp, "handover").await;
    c.add_node("handover-1", "handover").await;
    c.add_node("handover-2", "handover").await;
    c.create_job(training_job("steady", 1, "Failed", true))
        .await;
    let pod = c.run_pods_on("steady", &["handover-1"]).await.remove(0).0;

    let mut first = Reconciler::start(cp, &c.ns, &[]);
    until(
        "a leader",
        Duration::from_secs(60),
        Some(&first),
        || async { (first.metric("jobgate_recovery_leader") == 1.0).then_some(()) },
    )
    .await;
    let second = Reconciler::start(cp, &c.ns, &[]);
    until(
        "the standby ready",
        Duration::from_secs(60),
        Some(&second),
        || async { second.ready().then_some(()) },
    )
    .await;
    assert_eq!(second.metric("jobgate_recovery_leader"), 0.0, "two leaders");

    // The leader dies without releasing its Lease (SIGKILL): the standby takes over once the
    // Lease expires (15 s) and recovers the pod that became due meanwhile.
    let _ = first.child.kill();
    let _ = first.child.wait();
    c.cut_off(&["handover-1"]).await;
    all_terminating(&c, std::slice::from_ref(&pod), &second).await;
    until(
        "the standby to lead",
        Duration::from_secs(60),
        Some(&second),
        || async { (second.metric("jobgate_recovery_leader") == 1.0).then_some(()) },
    )
    .await;
    recovered(&c, &pod, &second).await;
    c.remove_nodes().await;
}
