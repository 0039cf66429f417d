//! Never stricter than the cluster, by default: with no release set, `jobgate serve` reads the
//! release the cluster runs from kube-apiserver's `/version`, with no credential (only the
//! cluster's CA), and judges by it. Proved on each built control plane (1.37, 1.36 and 1.33 in
//! CI): the shipped webhooks on the admission path, and every object from a release-dependent
//! row of docs/src/versions.md ("What changes by version") admitted with jobgate exactly when the
//! same apiserver admits it without.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod check_cli;
    pub mod controlplane;
    pub mod kustomize;
    pub mod manifest;
    pub mod prometheus;
    pub mod serve;
    pub mod shipped_webhooks;
    pub mod webhooks;
}

use serde_json::{Value, json};
use support::controlplane::{ControlPlane, control_plane_minors};
use support::manifest::job;
use support::serve::Jobgate;

/// One object for each release-dependent row of docs/src/versions.md that a CREATE can show
/// (the strict-decoding rows are kube-apiserver's own, refused before any webhook).
fn release_dependent_objects() -> Vec<(&'static str, Value)> {
    vec![
        // 1.38 `validateDelegationAnnotations`: both annotations once either is present.
        (
            "workload-name alone",
            job(
                "workload-name",
                json!({ "scheduling.k8s.io/workload-name": "train" }),
                json!({}),
            ),
        ),
        (
            "group-template-name alone",
            job(
                "group-template",
                json!({ "scheduling.k8s.io/group-template-name": "workers" }),
                json!({}),
            ),
        ),
        // kubernetes#131525 (1.34): a CronJob's job template gets the condition status default.
        (
            "CronJob onPodConditions without status",
            json!({
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": { "name": "nightly" },
                "spec": {
                    "schedule": "0 3 * * *",
                    "jobTemplate": { "spec": job("x", json!({}), json!({
                        "podReplacementPolicy": "Failed",
                        "podFailurePolicy": { "rules": [{
                            "action": "Ignore",
                            "onPodConditions": [{ "type": "DisruptionTarget" }],
                        }]},
                    }))["spec"].clone() },
                },
            }),
        ),
        // KEP-5073 (1.38, declarative): the message and its place change; refused everywhere.
        (
            "maxFailedIndexes without backoffLimitPerIndex",
            job(
                "max-failed",
                json!({}),
                json!({ "completionMode": "Indexed", "completions": 4, "maxFailedIndexes": 1 }),
            ),
        ),
        // Values in messages (kubernetes#132314, 1.34) and onPodConditions type messages (1.35).
        (
            "unordered exit codes and a bad condition type",
            job(
                "messages",
                json!({}),
                json!({ "podFailurePolicy": { "rules": [
                    { "action": "FailJob", "onExitCodes": { "operator": "In", "values": [3, 1] } },
                    { "action": "Ignore", "onPodConditions": [{ "type": "Not/A/Type", "status": "True" }] },
                ]}}),
            ),
        ),
        // managedBy: validated on every release (gate beta, on, in 1.33 and 1.34).
        (
            "managedBy of another controller",
            job(
                "managed",
                json!({}),
                json!({ "managedBy": "kueue.x-k8s.io/multikueue" }),
            ),
        ),
        // KEP-3939: podReplacementPolicy Failed with a podFailurePolicy, and the policy without
        // rules (accepted on every release).
        (
            "podFailurePolicy without rules",
            job(
                "no-rules",
                json!({}),
                json!({ "podReplacementPolicy": "Failed", "podFailurePolicy": {} }),
            ),
        ),
    ]
}

/// `kubectl create --dry-run=server` of `object` in `ns`: admitted, and what kubectl printed.
fn dry_run(cp: &ControlPlane, ns: &str, object: &Value) -> (bool, String) {
    let out = cp.kubectl_output(
        &[
            "create",
            "--dry-run=server",
            "-n",
            ns,
            "-o",
            "name",
            "-f",
            "-",
        ],
        Some(&object.to_string()),
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// jobgate's `jobgate_kubernetes_rules_info` series.
fn rules_info(jg: &Jobgate) -> String {
    support::serve::curl(&[&jg.admin_url("/metrics")])
        .body
        .lines()
        .filter(|l| l.starts_with("jobgate_kubernetes_rules_info{"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn with_no_release_set_jobgate_judges_by_the_clusters_own_and_agrees_with_it() {
    let mut failures = Vec::new();
    for minor in control_plane_minors() {
        let cp = ControlPlane::start(&minor, &[]);
        let server = cp.server();
        let ca = cp.ca_file();
        let jg = Jobgate::start(&[
            "--cluster-url",
            &server,
            "--cluster-ca",
            ca.to_str().expect("UTF-8 path"),
        ]);
        // Read before serving, from /version, with no credential.
        assert_eq!(
            rules_info(&jg),
            format!(
                r#"jobgate_kubernetes_rules_info{{kubernetes_version="{minor}",rules_version="{minor}",known="true",source="cluster"}} 1"#
            ),
            "Kubernetes {minor}"
        );
        let with = cp.namespace("with-jobgate");
        let bare = cp.namespace("bare");
        support::webhooks::install(&cp, &jg, "release", &[&with], &[]);
        let kubeconfig = cp.kubeconfig.to_str().expect("UTF-8 path");
        for (case, object) in release_dependent_objects() {
            let (admitted, said) = dry_run(&cp, &with, &object);
            let (alone, alone_said) = dry_run(&cp, &bare, &object);
            if admitted != alone {
                failures.push(format!(
                    "Kubernetes {minor}, {case}: with jobgate admitted={admitted} ({}), \
                     kube-apiserver alone admitted={alone} ({})",
                    said.trim(),
                    alone_said.trim()
                ));
            }
            // `check --cluster` reads the same release with the operator's kubeconfig.
            let checked = support::check_cli::check(
                &["--cluster", "--kubeconfig", kubeconfig, "-"],
                &object.to_string(),
                &[],
            );
            if (checked.status.code() == Some(0)) != alone {
                failures.push(format!(
                    "Kubernetes {minor}, {case}: check --cluster exited {:?} ({}), kube-apiserver \
                     alone admitted={alone}",
                    checked.status.code(),
                    support::check_cli::text(&checked.stdout).trim()
                ));
            }
        }
        // `render --cluster` renders for the cluster's release: MutatingAdmissionPolicy is v1
        // from 1.36, only v1alpha1 on 1.33 (refused, naming the release).
        let render = std::process::Command::new(env!("CARGO_BIN_EXE_jobgate"))
            .args(["render", "--cluster", "--kubeconfig", kubeconfig])
            .output()
            .expect("jobgate render");
        let (stdout, stderr) = (
            support::check_cli::text(&render.stdout),
            support::check_cli::text(&render.stderr),
        );
        let rendered_for_it = match minor.as_str() {
            "1.33" => !render.status.success() && stderr.contains("Kubernetes 1.33"),
            _ => {
                render.status.success()
                    && stdout.contains("apiVersion: admissionregistration.k8s.io/v1\n")
            }
        };
        if !rendered_for_it {
            failures.push(format!(
                "Kubernetes {minor}: render --cluster did not render for it: {stderr}{}",
                &stdout[..stdout.len().min(400)]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The test above can fail: judged by 1.38's pre-release rules (the old default), jobgate
/// refuses on a 1.37 cluster the Job that cluster accepts.
#[test]
fn judged_by_a_pre_release_the_same_job_is_refused() {
    let cp = ControlPlane::shared();
    let jg = Jobgate::start(&["--kubernetes-version", "1.38"]);
    assert!(
        rules_info(&jg).contains(r#"rules_version="1.38",known="true",source="setting""#),
        "{}",
        rules_info(&jg)
    );
    let with = cp.namespace("pre-release");
    let bare = cp.namespace("bare");
    support::webhooks::install(cp, &jg, "pre-release", &[&with], &[]);
    let (_, object) = release_dependent_objects().swap_remove(0);
    let (alone, said) = dry_run(cp, &bare, &object);
    assert!(alone, "kube-apiserver {} alone: {said}", cp.minor);
    let (admitted, said) = dry_run(cp, &with, &object);
    assert!(!admitted, "jobgate judged by 1.38 admitted it");
    assert!(
        said.contains(
            "metadata.annotations[scheduling.k8s.io/group-template-name]: Required value"
        ),
        "{said}"
    );
}

/// A cluster whose release cannot be read (here: a CA it does not chain to) is judged by the
/// newest released minor, with a warning in the log and `source="default"`; never 1.38.
#[test]
fn a_release_that_cannot_be_read_is_the_newest_released_with_a_warning() {
    let cp = ControlPlane::shared();
    let dir = tempfile::tempdir().expect("tempdir");
    let wrong = dir.path().join("ca.crt");
    // Some other CA: jobgate's dev CA from another run.
    let other = Jobgate::start(&[]);
    std::fs::copy(&other.ca, &wrong).expect("copy a CA");
    let mut jg = Jobgate::start(&[
        "--cluster-url",
        &cp.server(),
        "--cluster-ca",
        wrong.to_str().expect("UTF-8 path"),
    ]);
    let released = jobgate::job::version::KubernetesVersion::default();
    assert_eq!(released.to_string(), "1.37");
    assert_eq!(
        rules_info(&jg),
        format!(
            r#"jobgate_kubernetes_rules_info{{kubernetes_version="{released}",rules_version="{released}",known="true",source="default"}} 1"#
        )
    );
    jg.terminate(std::time::Duration::from_secs(10))
        .expect("exits within 10s");
    let log = jg.log_after_exit();
    assert!(
        log.contains("cannot read the cluster's release from /version")
            && log.contains("judging by 1.37, the newest released minor jobgate knows"),
        "{log}"
    );
}
