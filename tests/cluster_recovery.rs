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

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod controlplane;
    pub mod kubelet;
    pub mod reconciler;
    pub mod serve;
}

use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use support::controlplane::ControlPlane;
use support::kubelet::{Cluster, phase, training_job};
use support::reconciler::{Reconciler, has_recovery_condition, until};

/// One scenario at a time (see the module comment); tokio's mutex, held across awaits, works
/// from each test's own runtime.
async fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TURN.lock().await
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
    // on unreachable nodes are recovered once the heal has settled (no other node came back
    // within a settle period); the pod of the node that came back, and those of the nodes never
    // cut off, are left alone.
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

/// Kubeflow Trainer v2.3.0 lets a TrainJob patch its pods' `terminationGracePeriodSeconds`
/// (`spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.
/// template.spec`, `PodSpecPatch` in trainjob_types.go at v2.3.0). kube-apiserver puts a pod's
/// grace period inside its `deletionTimestamp`, so the recovery deadline (`deletionTimestamp` +
/// `--forceful-termination-grace-period`, 3 s here) moves with it: of two pods cut off together,
/// the one with 12 s is recovered after the one with 2 s, and not before its own deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recovery_deadline_follows_a_patched_termination_grace_period() {
    let _turn = turn().await;
    let cp = ControlPlane::shared();
    let mut c = Cluster::new(cp, "grace").await;
    c.add_node("grace-a1", "grace-a").await;
    c.add_node("grace-a2", "grace-a").await;
    let mut patched = training_job("patched", 1, "Failed", true);
    patched["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = json!(12);
    c.create_job(patched).await;
    c.create_job(training_job("stock", 1, "Failed", true)).await;
    let patched = c.run_pods("patched", 1, "grace-a1").await.remove(0);
    let stock = c.run_pods("stock", 1, "grace-a1").await.remove(0);
    let reconciler = Reconciler::start_ready(cp, &c.ns, &[]).await;

    let cut = Instant::now();
    c.cut_off(&["grace-a1"]).await;
    all_terminating(&c, &[patched.clone(), stock.clone()], &reconciler).await;
    let grace = c
        .pod(&patched)
        .await
        .and_then(|p| p.metadata.deletion_grace_period_seconds);
    assert_eq!(
        grace,
        Some(12),
        "the taint-eviction controller deleted it with its own grace"
    );
    recovered(&c, &stock, &reconciler).await;
    assert!(
        untouched(&c, &patched).await,
        "{patched} was recovered with {stock}, before its own deadline:\n{}",
        reconciler.log()
    );
    recovered(&c, &patched, &reconciler).await;
    // Toleration (1 s) + grace (12 s) + 3 s: never sooner than 12 s after the cut.
    assert!(
        cut.elapsed() >= Duration::from_secs(12),
        "{patched} recovered {:?} after the cut",
        cut.elapsed()
    );
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
        support::serve::curl(&[&format!("http://{}/metrics", reconciler.admin)]).body
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
    first.kill();
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
