//! jobgate beside the real Kueue: Kueue's manager (sigs.k8s.io/kueue, pinned in
//! tests/controlplane/versions/kueue) runs beside the real control plane with its CRDs and
//! webhooks (`ControlPlane::with_kueue`), and jobgate's webhooks are on the same apiserver's
//! admission path. The test plays the kubelet (tests/support/kubelet.rs).
//!
//! On a Kueue cluster Kueue writes to the Jobs jobgate judges as often as their users do: its Job
//! webhook suspends them on create; its admission writes the flavor's node selector and
//! tolerations into a suspended Job's template and unsuspends it; its preemption suspends the
//! Job, and once the Job controller cleared `startTime`, restores the template it had
//! (pkg/controller/jobframework/reconciler.go: StopJob, RestorePodSetsInfo). Every one of those
//! writes passes jobgate's `Fail` validating webhook. One refusal there that kube-apiserver would
//! not give stops every queued Job in the cluster.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod check_cli;
    pub mod controlplane;
    pub mod doc_shell;
    pub mod kubelet;
    pub mod kustomize;
    pub mod prometheus;
    pub mod reconciler;
    pub mod serve;
    pub mod shipped_webhooks;
    pub mod webhooks;
}

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use support::controlplane::{ControlPlane, control_plane_minors};
use support::doc_shell;
use support::kubelet::{Cluster, now};
use support::reconciler::Reconciler;
use support::serve::Jobgate;

/// One test at a time. Each starts its own control plane and Kueue manager (the first, one per
/// built minor); three at once on two cores failed the recovery test in three of four runs here,
/// once with the pods of zone `b` that kube-controller-manager's taint-eviction controller should
/// have deleted one second after their nodes' taint still undeleted 240 s later. Tokio's mutex:
/// the async tests hold it across awaits, the blocking one takes it with `blocking_lock`.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const QUEUE_NAME: &str = "kueue.x-k8s.io/queue-name";
const PRIORITY_CLASS: &str = "kueue.x-k8s.io/priority-class";
/// The ResourceFlavor's node label, which Kueue writes into an admitted Job's `nodeSelector`.
const FLAVOR_LABEL: &str = "cloud.example/flavor";
/// The ResourceFlavor's node taint, which a Job must tolerate to be admitted to it.
const FLAVOR_TAINT: &str = "cloud.example/gpu";
/// The toleration the ResourceFlavor adds to an admitted Job's template.
const FLAVOR_TOLERATION: &str = "cloud.example/maintenance";
/// The node the flavor's pods run on.
const NODE: &str = "a100-1";

/// Kueue's objects for the test: a ResourceFlavor with a node label, a taint and a toleration, a
/// ClusterQueue with one CPU of quota that preempts lower priorities, a LocalQueue `lq` in each
/// namespace, and the WorkloadPriorityClasses `low` and `high`.
fn kueue_queues(cp: &ControlPlane, namespaces: &[&str]) {
    let mut items = vec![
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": { "name": "a100" },
            "spec": {
                "nodeLabels": { FLAVOR_LABEL: "a100" },
                "nodeTaints": [{ "key": FLAVOR_TAINT, "value": "present", "effect": "NoSchedule" }],
                "tolerations": [{ "key": FLAVOR_TOLERATION, "operator": "Exists", "effect": "NoSchedule" }],
            },
        }),
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": { "name": "training" },
            "spec": {
                "namespaceSelector": {},
                "preemption": { "withinClusterQueue": "LowerPriority" },
                "resourceGroups": [{
                    "coveredResources": ["cpu"],
                    "flavors": [{ "name": "a100", "resources": [{ "name": "cpu", "nominalQuota": 1 }] }],
                }],
            },
        }),
        json!({ "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": { "name": "low" }, "value": 100 }),
        json!({ "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": { "name": "high" }, "value": 1000 }),
    ];
    for ns in namespaces {
        items.push(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": { "name": "lq", "namespace": ns },
            "spec": { "clusterQueue": "training" },
        }));
    }
    let list = json!({ "apiVersion": "v1", "kind": "List", "items": items });
    cp.kubectl_ok(&["apply", "-f", "-"], Some(&list.to_string()));
}

/// A queued Job's spec: one pod of one CPU that tolerates the flavor's taint.
fn queued_spec(extra: Value) -> Value {
    let mut spec = json!({
        "parallelism": 1,
        "completions": 1,
        "template": { "spec": {
            "restartPolicy": "Never",
            "tolerations": [{ "key": FLAVOR_TAINT, "operator": "Exists", "effect": "NoSchedule" }],
            "containers": [{
                "name": "main",
                "image": "registry.example/trainer:1",
                "resources": { "requests": { "cpu": "1" } },
            }],
        }},
    });
    merge(&mut spec, extra);
    spec
}

fn queued_job(name: &str, priority: &str, extra: Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": name, "labels": { QUEUE_NAME: "lq", PRIORITY_CLASS: priority } },
        "spec": queued_spec(extra),
    })
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (k, v) in from {
                merge(into.entry(k).or_insert(Value::Null), v);
            }
        }
        (into, from) => *into = from,
    }
}

/// The Jobs of the cycle, as their users write them: each passes every jobgate policy at `deny`.
enum Submitted {
    Job(Value),
    /// A CronJob, and its Job made from it as `kubectl create job --from=cronjob/…` does.
    CronJob(Value),
}

/// What jobgate's policies ask of a Job whose pods are opted into recovery (docs/src/recovery.md).
fn recovery_ready() -> Value {
    json!({
        "podReplacementPolicy": "Failed",
        "podFailurePolicy": { "rules": [
            { "action": "Ignore", "onPodConditions": [{ "type": "DisruptionTarget" }] },
        ]},
    })
}

fn the_jobs() -> Vec<(&'static str, bool, Submitted)> {
    let indexed = json!({
        "completionMode": "Indexed",
        "completions": 2,
        "parallelism": 1,
        "backoffLimitPerIndex": 1,
        "maxFailedIndexes": 1,
        "podReplacementPolicy": "Failed",
        "podFailurePolicy": { "rules": [
            { "action": "Ignore", "onPodConditions": [{ "type": "DisruptionTarget" }] },
            { "action": "FailIndex", "onExitCodes": { "operator": "In", "values": [42] } },
        ]},
    });
    let mut nightly = queued_job("nightly", "low", json!({}));
    let cronjob = json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": { "name": "nightly" },
        "spec": {
            "schedule": "0 3 * * *",
            "jobTemplate": { "metadata": nightly["metadata"].take(), "spec": nightly["spec"].take() },
        },
    });
    vec![
        (
            "plain",
            false,
            Submitted::Job(queued_job("plain", "low", json!({}))),
        ),
        (
            "indexed",
            false,
            Submitted::Job(queued_job("indexed", "low", indexed)),
        ),
        // In the namespace labelled for recovery: jobgate injects the opt-in and its policies
        // want podReplacementPolicy: Failed and an Ignore rule on DisruptionTarget.
        (
            "opted-in",
            true,
            Submitted::Job(queued_job("opted-in", "low", recovery_ready())),
        ),
        ("nightly", false, Submitted::CronJob(cronjob)),
    ]
}

/// The kubelet the test plays, in the background: it binds each new pod of `clusters` to
/// [`NODE`] and reports it Running, and confirms each deletion (a pod being deleted is removed
/// at once, as a kubelet does once its containers stop).
fn play_kubelet(clusters: Vec<Cluster>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            for c in &clusters {
                let Ok(pods) = c.pods().list(&ListParams::default()).await else {
                    continue;
                };
                for pod in pods.items {
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    let bound = pod
                        .spec
                        .as_ref()
                        .and_then(|s| s.node_name.as_ref())
                        .is_some();
                    if pod.metadata.deletion_timestamp.is_some() {
                        let _ = c
                            .pods()
                            .delete(&name, &DeleteParams::default().grace_period(0))
                            .await;
                    } else if !bound {
                        c.bind(&pod, NODE).await;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

/// Reports the Job's running pods `Succeeded`, as the kubelet does when their containers exit 0.
async fn succeed_running(c: &Cluster, job: &str) {
    for pod in c.job_pods(job).await {
        let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        if !running || pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.metadata.name.clone().expect("name");
        let at = now();
        let _ = c
            .pods()
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": {
                    "phase": "Succeeded",
                    "conditions": [{ "type": "Ready", "status": "False", "lastTransitionTime": at }],
                    "containerStatuses": [{
                        "name": "main", "image": "registry.example/trainer:1", "imageID": "",
                        "ready": false, "restartCount": 0,
                        "state": { "terminated": { "exitCode": 0, "reason": "Completed",
                                                   "startedAt": at, "finishedAt": at } },
                    }],
                }})),
            )
            .await;
    }
}

/// The Kueue Workload of a Job (Kueue names it `job-NAME-HASH` and owns it by the Job).
fn workload(cp: &ControlPlane, ns: &str, job: &str) -> Option<Value> {
    let (list, _) = cp.kubectl_json(&["get", "workloads", "-n", ns, "-o", "json"], None);
    list["items"]
        .as_array()?
        .iter()
        .find(|w| {
            w.pointer("/metadata/ownerReferences/0/name")
                .and_then(Value::as_str)
                == Some(job)
        })
        .cloned()
}

fn condition(object: &Value, kind: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == kind && c["status"] == "True")
        })
}

fn stored_job(cp: &ControlPlane, ns: &str, job: &str) -> Value {
    cp.kubectl_json(&["get", "job", job, "-n", ns, "-o", "json"], None)
        .0
}

/// Polls `check` every 300 ms until it returns `Some`; on timeout fails with `what` and the end of
/// Kueue's log.
async fn until<T>(
    cp: &ControlPlane,
    what: &str,
    within: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "Kubernetes {}: timed out after {within:?} waiting for {what}; the end of Kueue's log:\n{}",
            cp.minor,
            cp.log_tail("kueue", 30)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Kueue admitted the Job: its Workload is `Admitted`, and the Job is unsuspended with the
/// flavor's node selector and toleration in its template.
async fn admitted(cp: &ControlPlane, ns: &str, job: &str) {
    until(
        cp,
        &format!("Kueue to admit {ns}/{job}"),
        Duration::from_secs(60),
        || {
            let stored = stored_job(cp, ns, job);
            let template = &stored["spec"]["template"]["spec"];
            let tolerations = template["tolerations"].to_string();
            (workload(cp, ns, job).is_some_and(|w| condition(&w, "Admitted"))
                && stored["spec"]["suspend"] == false
                && template["nodeSelector"][FLAVOR_LABEL] == "a100"
                && tolerations.contains(FLAVOR_TOLERATION))
            .then_some(())
        },
    )
    .await;
}

/// The shipped validating webhook sends only the writes a jobgate policy can judge
/// (`policy-input-changed`), and Kueue's writes change none of its inputs, so they never reach it.
/// To judge every one of them anyway, a second copy of it goes without that condition: each write
/// of Kueue's then passes jobgate's `/validate`, which must allow all.
fn every_write_to_validate(cp: &ControlPlane, configs: &[Value]) {
    let mut every = configs
        .iter()
        .find(|c| c["kind"] == "ValidatingWebhookConfiguration")
        .expect("a validating configuration")
        .clone();
    every["metadata"]["name"] = json!("jobgate-every-write");
    for webhook in every["webhooks"].as_array_mut().expect("webhooks") {
        webhook["name"] = json!(format!(
            "every-write.{}",
            webhook["name"].as_str().expect("name")
        ));
        let conditions = webhook["matchConditions"]
            .as_array_mut()
            .expect("matchConditions");
        let before = conditions.len();
        conditions.retain(|c| c["name"] != "policy-input-changed");
        assert_eq!(
            conditions.len() + 1,
            before,
            "deploy/base's validating webhook has no policy-input-changed condition"
        );
    }
    cp.kubectl_ok(&["apply", "-f", "-"], Some(&every.to_string()));
}

/// `jobgate_admission_requests_total` refusals (`allowed="false"`), by endpoint and operation.
fn refusals(jg: &Jobgate) -> BTreeMap<String, u64> {
    let reply = support::serve::curl(&[&jg.admin_url("/metrics")]);
    let mut out = BTreeMap::new();
    for line in reply.body.lines() {
        if line.starts_with("jobgate_admission_requests_total{")
            && line.contains("allowed=\"false\"")
        {
            let (labels, value) = line.rsplit_once(' ').expect("a sample");
            let n = value.parse::<f64>().expect("a number") as u64;
            if n > 0 {
                out.insert(labels.to_string(), n);
            }
        }
    }
    out
}

/// Kueue's log lines that say a webhook refused one of its writes, or could not be called.
fn kueue_webhook_errors(cp: &ControlPlane) -> Vec<String> {
    cp.log_tail("kueue", usize::MAX)
        .lines()
        .filter(|l| l.contains("admission webhook") || l.contains("failed calling webhook"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kueues_admission_preemption_and_readmission_pass_jobgates_webhooks_on_every_built_minor() {
    let _turn = TURN.lock().await;
    for minor in control_plane_minors() {
        admission_preemption_readmission(&minor).await;
    }
}

async fn admission_preemption_readmission(minor: &str) {
    let cp = ControlPlane::with_kueue(minor);
    let plain = Cluster::new(&cp, "kueue-jobs").await;
    let mut recovery = Cluster::new(&cp, "kueue-recovery").await;
    cp.kubectl_ok(
        &[
            "label",
            "namespace",
            &recovery.ns,
            "jobgate.dev/failure-recovery=enabled",
        ],
        None,
    );
    let ca = cp.ca_file().display().to_string();
    let jg = Jobgate::start(&[
        "--cluster-url",
        &cp.server(),
        "--cluster-ca",
        &ca,
        "--policy",
        "recovery-annotation-value=deny",
        "--policy",
        "recovery-annotation-on-job=deny",
        "--policy",
        "recovery-needs-failed=deny",
        "--policy",
        "recovery-counts-toward-backoff=deny",
        "--policy",
        "indexed-terminating-or-failed=deny",
    ]);
    let configs = support::webhooks::install(&cp, &jg, "kueue", &[&plain.ns, &recovery.ns], &[]);
    every_write_to_validate(&cp, &configs);
    kueue_queues(&cp, &[&plain.ns, &recovery.ns]);
    recovery.add_node_labelled(NODE, None).await;
    cp.kubectl_ok(
        &["label", "node", NODE, &format!("{FLAVOR_LABEL}=a100")],
        None,
    );
    cp.kubectl_ok(
        &[
            "taint",
            "node",
            NODE,
            &format!("{FLAVOR_TAINT}=present:NoSchedule"),
        ],
        None,
    );
    let kubelet = play_kubelet(vec![plain.clone(), recovery.clone()]);

    for (name, opted_in, submitted) in the_jobs() {
        let c = if opted_in { &recovery } else { &plain };
        let ns = c.ns.as_str();
        // The user's create: Kueue's webhook suspends it, jobgate's sets podReplacementPolicy
        // (and, in the recovery namespace, the opt-in); both in the stored object.
        let created = match submitted {
            Submitted::Job(job) => {
                cp.kubectl_json(
                    &["create", "-n", ns, "-o", "json", "-f", "-"],
                    Some(&job.to_string()),
                )
                .0
            }
            Submitted::CronJob(cronjob) => {
                cp.kubectl_ok(&["create", "-n", ns, "-f", "-"], Some(&cronjob.to_string()));
                let from = format!("--from=cronjob/{name}");
                cp.kubectl_json(
                    &["create", "job", name, &from, "-n", ns, "-o", "json"],
                    None,
                )
                .0
            }
        };
        assert_eq!(
            created["spec"]["suspend"], true,
            "{minor} {name}: Kueue's webhook did not suspend it: {created}"
        );
        assert!(
            created["spec"]["podReplacementPolicy"].is_string(),
            "{minor} {name}: jobgate's mutation is missing: {created}"
        );
        if opted_in {
            assert_eq!(
                created["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/safe-to-forcefully-terminate"],
                "true",
                "{minor} {name}: jobgate's recovery opt-in is missing: {created}"
            );
        }

        // Kueue admits it: the flavor's node selector and toleration, then unsuspend.
        admitted(&cp, ns, name).await;
        until(
            &cp,
            &format!("{name}'s pod to run"),
            Duration::from_secs(60),
            || {
                let stored = stored_job(&cp, ns, name);
                (stored["status"]["active"].as_u64() == Some(1)).then_some(())
            },
        )
        .await;

        // A higher priority Workload preempts it: Kueue suspends the Job, and once the Job
        // controller cleared startTime, restores the template it had before admission.
        let urgent = format!("{name}-urgent");
        cp.kubectl_ok(
            &["create", "-n", ns, "-f", "-"],
            Some(&queued_job(&urgent, "high", recovery_ready()).to_string()),
        );
        until(
            &cp,
            &format!("Kueue to preempt {name} and restore its template"),
            Duration::from_secs(90),
            || {
                let stored = stored_job(&cp, ns, name);
                let template = &stored["spec"]["template"]["spec"];
                (stored["spec"]["suspend"] == true
                    && template
                        .get("nodeSelector")
                        .is_none_or(|s| s.get(FLAVOR_LABEL).is_none())
                    && !template["tolerations"]
                        .to_string()
                        .contains(FLAVOR_TOLERATION))
                .then_some(())
            },
        )
        .await;
        admitted(&cp, ns, &urgent).await;
        finish(&cp, c, &urgent).await;

        // Re-admitted once the quota is free, and run to the end.
        admitted(&cp, ns, name).await;
        finish(&cp, c, name).await;
    }

    // MultiKueue's managedBy: the Job controller leaves the Job to MultiKueue; Kueue still
    // suspends, admits and writes the template, through jobgate's webhooks.
    let managed = queued_job(
        "managed",
        "low",
        json!({ "managedBy": "kueue.x-k8s.io/multikueue" }),
    );
    let created = cp
        .kubectl_json(
            &["create", "-n", &plain.ns, "-o", "json", "-f", "-"],
            Some(&managed.to_string()),
        )
        .0;
    assert_eq!(created["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
    assert_eq!(
        created["spec"]["suspend"], true,
        "{minor} managed: {created}"
    );
    admitted(&cp, &plain.ns, "managed").await;

    kubelet.abort();
    let reviewed = support::webhooks::reviews(&jg);
    assert!(
        reviewed.get("validate/UPDATE").copied().unwrap_or(0) > 0,
        "Kubernetes {minor}: no write of Kueue's reached /validate: {reviewed:?}"
    );
    assert_eq!(
        refusals(&jg),
        BTreeMap::new(),
        "Kubernetes {minor}: jobgate refused a write"
    );
    assert_eq!(
        kueue_webhook_errors(&cp),
        Vec::<String>::new(),
        "Kubernetes {minor}: Kueue met a webhook error"
    );
    recovery.remove_nodes().await;
}

/// Runs the Job's pods to success, then waits for the Job to complete and Kueue to mark its
/// Workload `Finished`.
async fn finish(cp: &ControlPlane, c: &Cluster, job: &str) {
    let ns = c.ns.clone();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        succeed_running(c, job).await;
        let stored = stored_job(cp, &ns, job);
        let finished = workload(cp, &ns, job).is_some_and(|w| condition(&w, "Finished"));
        if condition(&stored, "Complete") && finished {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Kubernetes {}: {ns}/{job} did not finish: {}\nthe end of Kueue's log:\n{}",
            cp.minor,
            stored["status"],
            cp.log_tail("kueue", 30)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A training Job for the recovery scenario (`training_job`, as the recovery page recommends it)
/// with `annotations` on its pod template.
fn recovering_job(name: &str, parallelism: u32, annotations: Value) -> Value {
    let mut job = support::kubelet::training_job(name, parallelism, "Failed", false);
    job["spec"]["template"]["metadata"]["annotations"] = annotations;
    job
}

/// Who recorded a recovery event about each pod of the namespace: `kueue` (Kueue's
/// `KueueForcefullyDeleted`) or `jobgate` (its reconciler, `jobgate.dev/reconciler`).
async fn recoverers(c: &Cluster) -> BTreeMap<String, Vec<String>> {
    let api: kube::Api<k8s_openapi::api::core::v1::Event> =
        kube::Api::namespaced(c.client.clone(), &c.ns);
    let mut by_pod: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in api
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
    {
        let reason = e.reason.clone().unwrap_or_default();
        if !reason.starts_with("KueueForcefully") {
            continue;
        }
        let who = if e.reporting_component.as_deref() == Some("jobgate.dev/reconciler") {
            "jobgate"
        } else {
            "kueue"
        };
        let pod = e.involved_object.name.clone().unwrap_or_default();
        by_pod
            .entry(pod)
            .or_default()
            .push(format!("{who}: {reason}"));
    }
    by_pod
}

/// Two recoverers on one cluster, each pod acted on once. jobgate's mutating webhook injects the
/// key Kueue reads (`--inject-recovery-annotation-key kueue.x-k8s.io/safe-to-forcefully-delete`,
/// the "Kueue recovers" set-up) in one namespace; in another, a team opts in with jobgate's
/// default key, which Kueue does not read. jobgate's reconciler runs with its defaults
/// (`--kueue-recovers`). Two zones lose nodes at once: one node of five in zone `a` (no
/// partition), three of four in zone `b` (a partition, by kube-controller-manager's rule).
///
/// Kueue's controller (pkg/controller/failurerecovery) moves each of its pods to `Failed` and
/// deletes it one minute after its deletion time, in both zones: it has no brake. jobgate's
/// reconciler recovers its pod in zone `a`, holds its pods in zone `b`, and never touches
/// Kueue's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kueue_recovers_the_pods_jobgate_opts_in_with_its_key_and_jobgate_the_rest_each_once() {
    const KUEUES_KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-delete";
    const JOBGATES_KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";
    let _turn = TURN.lock().await;
    let cp = ControlPlane::with_kueue(&support::controlplane::minor_under_test());
    let mut kueues = Cluster::new(&cp, "kueue-recovers").await;
    let ours = Cluster::new(&cp, "jobgate-recovers").await;
    cp.kubectl_ok(
        &[
            "label",
            "namespace",
            &kueues.ns,
            "jobgate.dev/failure-recovery=enabled",
        ],
        None,
    );
    let jg = Jobgate::start(&["--inject-recovery-annotation-key", KUEUES_KEY]);
    support::webhooks::install(&cp, &jg, "recovery", &[&kueues.ns, &ours.ns], &[]);

    let a: Vec<String> = (0..5).map(|i| format!("a{i}")).collect();
    let b: Vec<String> = (0..4).map(|i| format!("b{i}")).collect();
    for node in &a {
        kueues.add_node(node, "a").await;
    }
    for node in &b {
        kueues.add_node(node, "b").await;
    }
    // Through jobgate's webhooks: the first is opted in by injection, the second by its user.
    let job = recovering_job("sweep", 4, json!({}));
    let created = cp
        .kubectl_json(
            &["create", "-n", &kueues.ns, "-o", "json", "-f", "-"],
            Some(&job.to_string()),
        )
        .0;
    assert_eq!(
        created["spec"]["template"]["metadata"]["annotations"][KUEUES_KEY], "true",
        "jobgate did not inject Kueue's key: {created}"
    );
    let job = recovering_job("train", 4, json!({ JOBGATES_KEY: "true" }));
    cp.kubectl_ok(
        &["create", "-n", &ours.ns, "-f", "-"],
        Some(&job.to_string()),
    );
    // `jobgate check` on the stored Jobs names the controller that then recovers their pods.
    for (ns, job, says) in [
        (&kueues.ns, "sweep", "recovered by Kueue"),
        (&ours.ns, "train", "recovered by jobgate's reconciler"),
    ] {
        let stored = cp.kubectl_ok(&["get", "job", job, "-n", ns, "-o", "json"], None);
        let out = support::check_cli::check(&["-o", "json", "-"], &stored, &[]);
        let report: Value = serde_json::from_slice(&out.stdout).expect("check's JSON");
        let notes: Vec<&str> = report["objects"][0]["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["source"] == "jobgate-recovery")
            .filter_map(|f| f["message"].as_str())
            .collect();
        assert!(
            notes.len() == 1 && notes[0].starts_with(says),
            "check on {ns}/{job}: {notes:?}"
        );
    }
    let on: Vec<&str> = ["a0", "b0", "b1", "b2"].to_vec();
    let kueue_pods = kueues.run_pods_on("sweep", &on).await;
    let our_pods = ours.run_pods_on("train", &on).await;
    // `jobgate audit` on the running pods says the same.
    let audit = std::process::Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args(["audit", "-o", "json", "--kubeconfig"])
        .arg(&cp.kubeconfig)
        .output()
        .expect("jobgate audit");
    let audit: Value = serde_json::from_slice(&audit.stdout).expect("audit's JSON");
    let mut by: Vec<String> = audit["recoveredBy"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["namespace"] == kueues.ns.as_str() || r["namespace"] == ours.ns.as_str())
        .map(|r| {
            format!(
                "{} {} {}",
                r["job"],
                r["pods"].as_array().map_or(0, Vec::len),
                r["controller"]
            )
        })
        .collect();
    by.sort();
    assert_eq!(
        by,
        [r#""sweep" 4 "kueue""#, r#""train" 4 "jobgate""#],
        "{audit}"
    );
    let reconciler = Reconciler::start_ready(&cp, &ours.ns, &[]).await;

    kueues.cut_off(&["a0", "b0", "b1", "b2"]).await;

    // Kueue: all four, one minute after each pod's deletion time (two seconds after the taint),
    // then gone once the Job controller has taken its tracking finalizer off. The wait is long:
    // CI runs this binary's control planes side by side on two cores.
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let mut left = Vec::new();
        for (pod, node) in &kueue_pods {
            if let Some(p) = kueues.pod(pod).await {
                left.push(format!(
                    "{pod} on {node}: {}",
                    support::kubelet::describe(&p)
                ));
            }
        }
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Kueue did not recover:\n{}\nthe Job: {}\nthe end of Kueue's log:\n{}",
            left.join("\n"),
            cp.kubectl_ok(
                &[
                    "get",
                    "job",
                    "sweep",
                    "-n",
                    &kueues.ns,
                    "-o",
                    "jsonpath={.status}"
                ],
                None
            ),
            cp.log_tail("kueue", 30)
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let by_kueue = recoverers(&kueues).await;
    for (pod, node) in &kueue_pods {
        assert_eq!(
            by_kueue.get(pod).cloned().unwrap_or_default(),
            vec!["kueue: KueueForcefullyDeleted".to_string()],
            "{pod} on {node}: one recovery, by Kueue ({by_kueue:?}); jobgate reconcile said:\n{}",
            reconciler.log()
        );
    }

    // jobgate: its pod in zone a; those in zone b held as a partition, untouched by either.
    let by_jobgate = recoverers(&ours).await;
    for (pod, node) in &our_pods {
        let want: Vec<String> = if node == "a0" {
            vec!["jobgate: KueueForcefullyTerminated".to_string()]
        } else {
            Vec::new()
        };
        assert_eq!(
            by_jobgate.get(pod).cloned().unwrap_or_default(),
            want,
            "{pod} on {node} ({by_jobgate:?}); jobgate reconcile said:\n{}",
            reconciler.log()
        );
    }
    let held = ours.events("ForcefulTerminationHeld").await;
    for (pod, node) in our_pods.iter().filter(|(_, n)| n != "a0") {
        assert!(
            held.iter().any(|e| e.starts_with(&format!("{pod}:"))),
            "{pod} on {node} was not held: {held:?}"
        );
        let still = ours.pod(pod).await.expect("a held pod stays");
        assert!(
            still.metadata.deletion_timestamp.is_some()
                && support::kubelet::phase(&still) != "Failed",
            "{pod} on {node} was acted on"
        );
    }
    assert_eq!(
        reconciler.metric("jobgate_recovery_pods_terminated_total"),
        1.0
    );
    assert_eq!(
        reconciler.metric("jobgate_recovery_errors_total"),
        0.0,
        "{}",
        reconciler.log()
    );
    let kueue_errors: Vec<String> = cp
        .log_tail("kueue", usize::MAX)
        .lines()
        .filter(|l| l.contains("\"level\":\"error\"") && l.contains("pod_termination"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        kueue_errors,
        Vec::<String>::new(),
        "Kueue's recovery logged errors"
    );
    kueues.remove_nodes().await;
}

/// docs/src/kueue.md's "Try it", as a reader runs it: jobgate in the "Kueue recovers" set-up,
/// the page's blocks in a namespace labelled for recovery, each printing what the page says.
#[test]
fn the_kueue_pages_commands_print_what_it_says() {
    let _turn = TURN.blocking_lock();
    let cp = ControlPlane::with_kueue(&support::controlplane::minor_under_test());
    let ns = cp.namespace("kueue-page");
    cp.kubectl_ok(
        &[
            "label",
            "namespace",
            &ns,
            "jobgate.dev/failure-recovery=enabled",
        ],
        None,
    );
    let page = std::fs::read_to_string(support::controlplane::repo().join("docs/src/kueue.md"))
        .expect("docs/src/kueue.md");
    let section = page
        .split("\n## 4. Try it\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the Kueue page has a Try it section");
    assert!(
        section
            .contains("--inject-recovery-annotation-key kueue.x-k8s.io/safe-to-forcefully-delete"),
        "the page's set-up is no longer the one this test serves"
    );
    let jg = Jobgate::start(&[
        "--inject-recovery-annotation-key",
        "kueue.x-k8s.io/safe-to-forcefully-delete",
    ]);
    support::webhooks::install(&cp, &jg, "page", &[&ns], &[]);

    // The chart sees Kueue's API on this cluster, and its NOTES say what the page's section 2 says.
    for crd in [
        "cert-manager.io_certificates.yaml",
        "cert-manager.io_issuers.yaml",
    ] {
        cp.install_crd(crd);
    }
    let chart = support::controlplane::repo().join("charts/jobgate");
    let out = std::process::Command::new("helm")
        .args(["install", "jg", &chart.display().to_string(), "-n", &ns])
        .args(["--dry-run=server", "--kubeconfig"])
        .arg(&cp.kubeconfig)
        .output()
        .expect("helm: tests/run installs it");
    let notes = String::from_utf8_lossy(&out.stdout);
    assert!(
        notes.contains(&format!(
            "Kueue is installed: if its manageJobsWithoutQueueName is true, keep {ns} out of its"
        )),
        "helm install's NOTES do not warn about Kueue: {notes}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        section.contains("jobgate on a Kueue cluster")
            || page.contains("## 2. Keep jobgate's namespace out of Kueue's management")
    );

    let blocks = doc_shell::sh_blocks(section);
    assert_eq!(blocks.len(), 3, "a queue, a Job, the admitted Job");
    let dir = tempfile::tempdir().expect("tempdir");
    for block in &blocks {
        let (ok, output) = doc_shell::run_in(&cp, dir.path(), &ns, &doc_shell::commands(block));
        assert!(ok, "the page's block failed:\n{block}\n{output}");
        assert_eq!(
            doc_shell::squash(&output),
            doc_shell::squash(&doc_shell::said(block)),
            "the page's block:\n{block}\nprinted:\n{output}"
        );
    }
}
