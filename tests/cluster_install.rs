//! Every shipped install against a real kube-apiserver (tests/support/controlplane.rs), with the
//! deployment and ReplicaSet controllers running so the installs' pods exist (Pending: no
//! scheduler, no kubelet), and the CRDs the installs use (cert-manager, prometheus-operator,
//! wg-policy) from the projects' own modules (tests/run fetches them into target/crds/).
//!
//! Helm 4 and Helm 3 install the chart as release `jg` into `platform-jobs` and `legacy-jobs`,
//! kustomize installs an overlay into `team-a` and another into a namespace it does not own; the
//! apiserver accepts every object (the webhooks' CEL `matchConditions` compile), the runbook's
//! commands find each install by its own names, `jobgate status` finds its Lease, the emergency
//! off-switch and the uninstall commands do what the docs say, and the Helm cleanup hook's
//! account may delete exactly its own release's webhook configurations.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod controlplane;
    pub mod doc_shell;
    pub mod kustomize;
}

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};
use support::controlplane::{ControlPlane, copy_dir, eventually, repo};

/// The control plane of this binary: the default controllers plus the deployment and ReplicaSet
/// controllers, so a Deployment has pods `jobgate status` can find.
fn cluster() -> &'static ControlPlane {
    static CP: OnceLock<ControlPlane> = OnceLock::new();
    CP.get_or_init(|| {
        let cp = ControlPlane::start(
            &support::controlplane::minor_under_test(),
            &[
                "--controllers",
                "job-controller,garbage-collector-controller,taint-eviction-controller,\
                 node-lifecycle-controller,namespace-controller,deployment-controller,\
                 replicaset-controller",
            ],
        );
        for crd in [
            "cert-manager.io_certificates.yaml",
            "cert-manager.io_issuers.yaml",
            "monitoring.coreos.com_podmonitors.yaml",
            "monitoring.coreos.com_prometheusrules.yaml",
            "wgpolicyk8s.io_policyreports.yaml",
            "wgpolicyk8s.io_clusterpolicyreports.yaml",
        ] {
            cp.install_crd(crd);
        }
        cp
    })
}

/// The tests install cluster-scoped webhook configurations with `failurePolicy: Fail`: one
/// scenario at a time.
fn turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `script` with bash, `KUBECONFIG` set and kubectl 1.37 as `kubectl`; returns (success,
/// stdout, stderr).
fn sh(cp: &ControlPlane, script: &str) -> (bool, String, String) {
    let bin = support::controlplane::kubectl_shim();
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .env("KUBECONFIG", &cp.kubeconfig)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .current_dir(repo())
        .output()
        .expect("bash");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn sh_ok(cp: &ControlPlane, script: &str) -> String {
    let (ok, stdout, stderr) = sh(cp, script);
    assert!(ok, "failed:\n{script}\n{stdout}{stderr}");
    stdout
}

/// The fenced ```sh blocks of a page of the book.
fn sh_blocks(page: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("docs/src").join(page)).expect("page");
    text.split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("\n```").next())
        .map(str::to_string)
        .collect()
}

/// The runbook's first block: it sets `$JOBGATE_NAME` and `$JOBGATE_NS` from the webhook
/// configuration, for whatever install is in the cluster.
fn runbook_variables() -> String {
    let block = sh_blocks("runbook.md").remove(0);
    assert!(
        block.contains("JOBGATE_NAME=") && block.contains("JOBGATE_NS="),
        "{block}"
    );
    block
}

/// (name, namespace) the runbook's block finds.
fn found_by_the_runbook(cp: &ControlPlane) -> (String, String) {
    let out = sh_ok(
        cp,
        &format!(
            "{}\necho \"$JOBGATE_NAME $JOBGATE_NS\"",
            runbook_variables()
        ),
    );
    let last = out.lines().last().expect("output");
    let (name, ns) = last.split_once(' ').expect("two words");
    (name.to_string(), ns.to_string())
}

fn apply(cp: &ControlPlane, manifests: &str) {
    let out = cp.kubectl_output(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(manifests),
    );
    assert!(
        out.status.success(),
        "the apiserver refused the install: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A copy of deploy/ and a user's overlay of `overlay` in `namespace` with `components`, as the
/// install page tells a platform team to write it (namespace and the namespace transformer).
fn user_overlay(dir: &Path, overlay: &str, namespace: &str, components: &[&str]) -> PathBuf {
    copy_dir(&repo().join("deploy"), &dir.join("deploy"));
    if overlay == "overlays/self-signed" {
        let out = Command::new(env!("CARGO_BIN_EXE_jobgate"))
            .args(["certs", "--namespace", namespace, "--out"])
            .arg(dir.join("deploy/overlays/self-signed/certs"))
            .output()
            .expect("jobgate certs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let user = dir.join("mine");
    std::fs::create_dir_all(&user).expect("overlay dir");
    let components: String = components
        .iter()
        .map(|c| format!("  - ../deploy/components/{c}\n"))
        .collect();
    std::fs::write(
        user.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: {namespace}\n\
             resources:\n  - ../deploy/{overlay}\n  - ../deploy/monitoring\ntransformers:\n  - ../deploy/namespace\n{}",
            if components.is_empty() { String::new() } else { format!("components:\n{components}") }
        ),
    )
    .expect("write overlay");
    user
}

fn kustomize(dir: &Path) -> String {
    let kubectl = support::kustomize::kubectl();
    let out = Command::new(kubectl)
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl kustomize");
    assert!(
        out.status.success(),
        "kustomize: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The webhook configurations of an install, as the apiserver stored them.
fn webhook_configurations(cp: &ControlPlane, name: &str) -> Vec<Value> {
    [
        "mutatingwebhookconfiguration",
        "validatingwebhookconfiguration",
    ]
    .iter()
    .map(|kind| {
        let out = cp.kubectl_ok(&["get", kind, name, "-o", "json"], None);
        serde_json::from_str(&out).expect("JSON")
    })
    .collect()
}

/// The reconciler's Lease, as `jobgate reconcile` would have taken it.
fn lease(cp: &ControlPlane, namespace: &str) {
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.000000Z")
        .to_string();
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": { "name": "jobgate-reconciler", "namespace": namespace },
        "spec": {
            "holderIdentity": "jobgate_test",
            "leaseDurationSeconds": 3600,
            "acquireTime": now,
            "renewTime": now,
        },
    });
    cp.kubectl_ok(&["apply", "-f", "-"], Some(&lease.to_string()));
}

/// Removes what a scenario installed, also when it fails: jobgate's cluster-scoped objects by
/// label, and the scenario's namespaces (so the next scenario finds one install, not two).
struct Cleanup<'a> {
    cp: &'a ControlPlane,
    namespaces: Vec<&'static str>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = self.cp.kubectl_output(
            &["delete", "validatingwebhookconfigurations,mutatingwebhookconfigurations,clusterroles,clusterrolebindings",
              "-l", "app.kubernetes.io/name=jobgate", "--ignore-not-found"],
            None,
        );
        for ns in &self.namespaces {
            let _ = self.cp.kubectl_output(
                &[
                    "delete",
                    "namespace",
                    ns,
                    "--ignore-not-found",
                    "--timeout=120s",
                ],
                None,
            );
        }
    }
}

fn status(cp: &ControlPlane) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .arg("status")
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .arg("-A")
        .output()
        .expect("jobgate status");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Waits until the Deployment's pods exist (created by the ReplicaSet controller).
fn pods_exist(cp: &ControlPlane, namespace: &str) {
    eventually(
        &format!("jobgate's pods in {namespace}"),
        std::time::Duration::from_secs(60),
        || {
            let out = cp.kubectl_ok(
                &[
                    "get",
                    "pods",
                    "-n",
                    namespace,
                    "-l",
                    "app.kubernetes.io/name=jobgate,app.kubernetes.io/component=webhook",
                    "-o",
                    "name",
                ],
                None,
            );
            (!out.trim().is_empty()).then_some(())
        },
    );
}

/// The uninstall hook's pod never runs here (no kubelet), as it never does with an image the
/// cluster cannot pull or a quota it exceeds. `helm uninstall` (4 and 3) stops once the hook's Job
/// gives up (`webhooksCleanup.activeDeadlineSeconds`, 10 s here), saying the hook failed; the
/// uninstall page's two commands then finish it: no release, no webhook configuration left.
#[test]
fn an_uninstall_whose_hook_pod_never_runs_fails_fast_and_the_uninstall_page_finishes_it() {
    let cp = cluster();
    let _turn = turn();
    let _cleanup = Cleanup {
        cp,
        namespaces: vec!["hookless-4", "hookless-3"],
    };
    let chart = repo().join("charts/jobgate").display().to_string();
    let page = std::fs::read_to_string(repo().join("docs/src/uninstall.md")).expect("uninstall.md");
    let finish = support::doc_shell::sh_blocks(&page)
        .into_iter()
        .find(|b| b.contains("--no-hooks"))
        .expect("uninstall.md says how to finish an uninstall whose hook cannot run");
    for (helm, namespace) in [("helm", "hookless-4"), ("helm3", "hookless-3")] {
        cp.kubectl_ok(&["create", "namespace", namespace], None);
        let install = Command::new(helm)
            .args(["install", "jg", &chart, "-n", namespace, "--kubeconfig"])
            .arg(&cp.kubeconfig)
            .args(["--set", "webhooksCleanup.activeDeadlineSeconds=10"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {helm} ({e}): tests/run installs it"));
        assert!(
            install.status.success(),
            "{helm} install: {}",
            String::from_utf8_lossy(&install.stderr)
        );
        let started = std::time::Instant::now();
        let uninstall = Command::new(helm)
            .args(["uninstall", "jg", "-n", namespace, "--kubeconfig"])
            .arg(&cp.kubeconfig)
            .output()
            .expect("helm uninstall");
        let took = started.elapsed();
        let said = String::from_utf8_lossy(&uninstall.stderr).to_string();
        assert!(
            !uninstall.status.success()
                && said.contains("jg-jobgate-webhooks-cleanup")
                && said.contains("ailed"),
            "{helm} uninstall should stop on the hook, saying so: {said}"
        );
        // Helm's own --timeout is 5 minutes; the hook gave up after its 10 s (and Helm's poll).
        assert!(
            took < std::time::Duration::from_secs(90),
            "{helm} uninstall took {took:?}: {said}"
        );
        let script = format!(
            "{}\n{}",
            runbook_variables(),
            finish.replace("helm uninstall RELEASE", &format!("{helm} uninstall jg"))
        );
        sh_ok(cp, &script);
        let status = Command::new(helm)
            .args(["status", "jg", "-n", namespace, "--kubeconfig"])
            .arg(&cp.kubeconfig)
            .output()
            .expect("helm status");
        assert!(
            !status.status.success(),
            "{helm}: the release is still there: {}",
            String::from_utf8_lossy(&status.stdout)
        );
        let left = cp.kubectl_ok(
            &[
                "get",
                "validatingwebhookconfiguration,mutatingwebhookconfiguration",
                "jg-jobgate",
                "--ignore-not-found",
                "-o",
                "name",
            ],
            None,
        );
        assert_eq!(left.trim(), "", "{helm}: webhook configurations left");
        let _ = cp.kubectl_output(
            &[
                "delete",
                "lease",
                "jobgate-reconciler",
                "-n",
                namespace,
                "--ignore-not-found",
            ],
            None,
        );
    }
}

#[test]
fn helm_4_and_3_install_the_chart_as_jg_and_the_runbook_status_and_cleanup_find_it() {
    let cp = cluster();
    let _turn = turn();
    let _cleanup = Cleanup {
        cp,
        namespaces: vec!["platform-jobs", "legacy-jobs"],
    };
    let chart = repo().join("charts/jobgate").display().to_string();
    for (helm, namespace) in [("helm", "platform-jobs"), ("helm3", "legacy-jobs")] {
        cp.kubectl_ok(&["create", "namespace", namespace], None);
        let out = Command::new(helm)
            .args(["install", "jg", &chart, "-n", namespace, "--kubeconfig"])
            .arg(&cp.kubeconfig)
            .args([
                "--set",
                "monitoring.podMonitor.enabled=true",
                "--set",
                "monitoring.prometheusRule.enabled=true",
                "--set",
                "monitoring.dashboard.enabled=true",
                "--set",
                "audit.enabled=true",
                "--set",
                "networkPolicy.enabled=true",
            ])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {helm} ({e}): tests/run installs it"));
        assert!(
            out.status.success(),
            "{helm} install: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // The configurations are stored (their matchConditions compiled) under the release's names.
        for config in webhook_configurations(cp, "jg-jobgate") {
            for webhook in config["webhooks"].as_array().expect("webhooks") {
                assert_eq!(
                    webhook["clientConfig"]["service"]["namespace"], namespace,
                    "{webhook:#}"
                );
                assert_eq!(
                    webhook["clientConfig"]["service"]["name"], "jg-jobgate",
                    "{webhook:#}"
                );
            }
        }
        assert_eq!(
            found_by_the_runbook(cp),
            ("jg-jobgate".to_string(), namespace.to_string())
        );

        pods_exist(cp, namespace);
        lease(cp, namespace);
        let (ok, said) = status(cp);
        assert!(ok, "jobgate status -A: {said}");
        assert!(
            said.contains(&format!(
                "Leader: jobgate_test (lease {namespace}/jobgate-reconciler"
            )),
            "status did not find the Lease:\n{said}"
        );

        // The pre-delete hook's account may delete its own release's configurations and no
        // other. Helm creates the hook's ServiceAccount and RBAC at uninstall, before its Job:
        // applied here as Helm would (the Job's pod would need a kubelet).
        let hook = Command::new(helm)
            .args([
                "template",
                "jg",
                &chart,
                "-n",
                namespace,
                "--show-only",
                "templates/webhooks-cleanup.yaml",
                "--kube-version",
                &cp.minor,
            ])
            .output()
            .expect("helm template");
        assert!(
            hook.status.success(),
            "{}",
            String::from_utf8_lossy(&hook.stderr)
        );
        let rbac: Vec<String> = String::from_utf8_lossy(&hook.stdout)
            .split("\n---")
            .filter(|doc| !doc.contains("\nkind: Job\n"))
            .map(str::to_string)
            .collect();
        cp.kubectl_ok(&["apply", "-f", "-"], Some(&rbac.join("\n---\n")));
        let account = format!("system:serviceaccount:{namespace}:jg-jobgate-webhooks-cleanup");
        let can = |what: &str| {
            cp.kubectl_output(&["auth", "can-i", "delete", what, "--as", &account], None)
                .stdout
                .starts_with(b"yes")
        };
        assert!(can("validatingwebhookconfigurations/jg-jobgate"));
        assert!(can("mutatingwebhookconfigurations/jg-jobgate"));
        assert!(!can("validatingwebhookconfigurations/someone-else"));
        assert!(!can("secrets"));
        cp.kubectl_ok(
            &[
                "delete",
                "validatingwebhookconfiguration/jg-jobgate",
                "mutatingwebhookconfiguration/jg-jobgate",
                "--as",
                &account,
            ],
            None,
        );
        // With the hook's work done (no kubelet runs its pod here), the rest goes with the release.
        let out = Command::new(helm)
            .args([
                "uninstall",
                "jg",
                "-n",
                namespace,
                "--no-hooks",
                "--kubeconfig",
            ])
            .arg(&cp.kubeconfig)
            .output()
            .expect("helm uninstall");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        cp.kubectl_ok(
            &["delete", "lease", "jobgate-reconciler", "-n", namespace],
            None,
        );
    }
}

#[test]
fn kustomize_installs_into_any_namespace_and_the_runbook_off_switch_and_uninstall_work() {
    let cp = cluster();
    let _turn = turn();
    let _cleanup = Cleanup {
        cp,
        namespaces: vec!["team-a", "shared"],
    };
    let dir = tempfile::tempdir().expect("tempdir");

    // team-a: the cert-manager overlay, owning its namespace.
    let team_a = user_overlay(
        &dir.path().join("a"),
        "overlays/cert-manager",
        "team-a",
        &[],
    );
    apply(cp, &kustomize(&team_a));
    assert_eq!(
        found_by_the_runbook(cp),
        ("jobgate".to_string(), "team-a".to_string())
    );
    pods_exist(cp, "team-a");
    lease(cp, "team-a");

    let (ok, said) = status(cp);
    assert!(ok, "jobgate status -A: {said}");
    assert!(
        said.contains("Leader: jobgate_test (lease team-a/jobgate-reconciler"),
        "status did not find the Lease:\n{said}"
    );

    // The emergency off-switch, as the runbook has it, for team-a.
    let off = sh_blocks("runbook.md")
        .into_iter()
        .find(|b| b.contains("failurePolicy") && b.contains("JOBGATE_DRY_RUN=true"))
        .expect("the runbook's off-switch block");
    sh_ok(cp, &format!("{}\n{off}", runbook_variables()));
    for kind in [
        "validatingwebhookconfiguration",
        "mutatingwebhookconfiguration",
    ] {
        let out = cp.kubectl_output(&["get", kind, "jobgate"], None);
        assert!(!out.status.success(), "the off-switch left the {kind}");
    }
    let env = cp.kubectl_ok(
        &["get", "deployment", "jobgate", "-n", "team-a", "-o",
          "jsonpath={.spec.template.spec.containers[?(@.name=='reconcile')].env[?(@.name=='JOBGATE_DRY_RUN')].value}"],
        None,
    );
    assert_eq!(env, "true", "the reconciler is not in dry-run");

    // Put back, then uninstall as the uninstall page says, by label and variables.
    apply(cp, &kustomize(&team_a));
    let uninstall = sh_blocks("uninstall.md").remove(0);
    let uninstall = uninstall.replace("path/to/your/overlay", &team_a.display().to_string());
    sh_ok(cp, &format!("{}\n{uninstall}", runbook_variables()));
    for kind in [
        "validatingwebhookconfiguration",
        "mutatingwebhookconfiguration",
    ] {
        assert!(
            !cp.kubectl_output(&["get", kind, "jobgate"], None)
                .status
                .success(),
            "{kind} left behind"
        );
    }
    let left = cp.kubectl_ok(
        &[
            "get",
            "clusterrole,clusterrolebinding",
            "-l",
            "app.kubernetes.io/name=jobgate",
            "-o",
            "name",
        ],
        None,
    );
    assert!(
        left.trim().is_empty(),
        "cluster-wide objects left behind: {left}"
    );

    // shared: a namespace the platform team does not own, self-signed, failing open; removed
    // with the troubleshooting page's label commands, the namespace stays.
    cp.kubectl_ok(&["create", "namespace", "shared"], None);
    let shared = user_overlay(
        &dir.path().join("s"),
        "overlays/self-signed",
        "shared",
        &["existing-namespace", "failure-policy-ignore"],
    );
    let rendered = kustomize(&shared);
    assert!(
        !rendered.contains("\nkind: Namespace\n"),
        "existing-namespace renders no Namespace"
    );
    apply(cp, &rendered);
    assert_eq!(
        found_by_the_runbook(cp),
        ("jobgate".to_string(), "shared".to_string())
    );
    let validating = &webhook_configurations(cp, "jobgate")[1];
    assert_eq!(
        validating["webhooks"][0]["failurePolicy"], "Ignore",
        "failure-policy-ignore: {validating:#}"
    );
    let troubleshooting = sh_blocks("troubleshooting.md")
        .into_iter()
        .find(|b| {
            b.contains("delete validatingwebhookconfigurations,mutatingwebhookconfigurations -l")
        })
        .expect("troubleshooting's delete-by-label block");
    sh_ok(cp, &troubleshooting);
    let out = cp.kubectl_ok(
        &[
            "get",
            "validatingwebhookconfigurations,mutatingwebhookconfigurations",
            "-l",
            "app.kubernetes.io/name=jobgate",
            "-o",
            "name",
        ],
        None,
    );
    assert!(out.trim().is_empty(), "{out}");
    cp.kubectl_ok(&["get", "namespace", "shared"], None);
    // PolicyReports jobgate wrote are found across namespaces by label.
    sh_ok(
        cp,
        "kubectl delete policyreports.wgpolicyk8s.io -A -l app.kubernetes.io/managed-by=jobgate",
    );
}
