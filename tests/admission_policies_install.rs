//! The webhook-less install (docs/src/admission-policies.md): `jobgate render` as a user runs
//! it, deploy/components/admission-policies and the chart's `admissionMode: policies` install
//! exactly what `jobgate render` prints for the same settings, instead of the webhook
//! configurations, the serve container, the Service (chart) and the certificates; the
//! reconciler stays. kubectl (kustomize) and helm as tests/deploy.rs runs them.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod controlplane;
    pub mod kustomize;
    pub mod render;
}

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::controlplane::repo;
use support::kustomize::{helm, kubectl, render};
use support::render::{documents, jobgate_render, rendered};

fn is_policy_object(doc: &Value) -> bool {
    doc["kind"]
        .as_str()
        .is_some_and(|k| k.ends_with("AdmissionPolicy") || k.ends_with("AdmissionPolicyBinding"))
}

/// What kube-apiserver keeps of a policy object, whoever installed it: apiVersion, kind, name
/// and spec. Labels are the installer's; kustomize's `namespace:` also stamps a namespace on
/// these cluster-scoped kinds, which kube-apiserver clears (`EnsureObjectNamespaceMatchesRequestNamespace`).
fn essence(docs: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = docs
        .iter()
        .filter(|d| is_policy_object(d))
        .map(|d| {
            serde_json::json!({
                "apiVersion": d["apiVersion"], "kind": d["kind"],
                "name": d["metadata"]["name"], "spec": d["spec"],
            })
        })
        .collect();
    out.sort_by_key(|v| (v["kind"].to_string(), v["name"].to_string()));
    out
}

/// `actual` is `expected`, object for object; a difference names its object and shows both.
fn assert_same(actual: &[Value], expected: &[Value], what: &str) {
    let names = |v: &[Value]| -> Vec<String> {
        v.iter()
            .map(|o| format!("{}/{}", o["kind"], o["name"]))
            .collect()
    };
    assert_eq!(names(actual), names(expected), "{what}: other objects");
    for (a, e) in actual.iter().zip(expected) {
        assert!(
            a == e,
            "{what}: {}/{} differs\n--- installed\n{}\n--- jobgate render\n{}",
            e["kind"],
            e["name"],
            serde_json::to_string_pretty(a).unwrap_or_default(),
            serde_json::to_string_pretty(e).unwrap_or_default(),
        );
    }
    assert!(!expected.is_empty(), "{what}: nothing rendered");
}

fn kinds(docs: &[Value]) -> Vec<String> {
    let mut kinds: Vec<String> = docs
        .iter()
        .filter_map(|d| d["kind"].as_str().map(String::from))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

fn deployment(docs: &[Value]) -> &Value {
    docs.iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment")
}

/// Only the reconciler runs: no serve container, no certificate volume.
fn assert_reconciler_only(docs: &[Value]) {
    let pod = &deployment(docs)["spec"]["template"];
    let containers: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(containers, ["reconcile"]);
    let volumes: Vec<&str> = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v["name"].as_str().expect("name"))
        .collect();
    assert!(!volumes.contains(&"tls"), "{volumes:?}");
    assert_eq!(
        pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"],
        "reconcile"
    );
}

// ---------------------------------------------------------------------------------------------
// jobgate render, as a user runs it.

#[test]
fn render_prints_policies_for_kubectl_apply_and_reads_the_settings_serve_reads() {
    let (code, out, err) = jobgate_render(
        &["--kubernetes-version", "1.36"],
        &[
            ("JOBGATE_POLICY", "indexed-terminating-or-failed=deny"),
            (
                "JOBGATE_INJECT_RECOVERY_ANNOTATION_KEY",
                "kueue.x-k8s.io/safe-to-forcefully-delete",
            ),
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.starts_with("# jobgate "), "{out}");
    let docs = documents(&out);
    let names: Vec<&str> = docs
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"jobgate-indexed-terminating-or-failed"),
        "{names:?}"
    );
    let binding = docs
        .iter()
        .find(|d| {
            d["kind"] == "ValidatingAdmissionPolicyBinding"
                && d["metadata"]["name"] == "jobgate-indexed-terminating-or-failed"
        })
        .unwrap();
    assert_eq!(
        binding["spec"]["validationActions"],
        serde_json::json!(["Deny"])
    );
    assert!(
        out.contains(r#"["kueue.x-k8s.io/safe-to-forcefully-delete"].filter("#),
        "{out}"
    );
    assert!(
        docs.iter()
            .all(|d| d["apiVersion"] == "admissionregistration.k8s.io/v1")
    );
}

#[test]
fn render_names_the_apiserver_flags_1_35_needs_and_refuses_1_33() {
    let (code, out, err) = jobgate_render(&["--kubernetes-version", "1.35"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err,
        "jobgate render: Kubernetes 1.35: MutatingAdmissionPolicy is beta and off by default; every \
         kube-apiserver needs --feature-gates=MutatingAdmissionPolicy=true \
         --runtime-config=admissionregistration.k8s.io/v1beta1=true\n"
    );
    assert!(
        out.contains("#   --feature-gates=MutatingAdmissionPolicy=true\n")
            && out.contains("#   --runtime-config=admissionregistration.k8s.io/v1beta1=true\n"),
        "{out}"
    );
    assert!(out.contains(
        "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingAdmissionPolicy\n"
    ));
    let (code, out, err) = jobgate_render(&["--kubernetes-version", "1.33"], &[]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(
        err.starts_with("jobgate render: Kubernetes 1.33 serves MutatingAdmissionPolicy only as admissionregistration.k8s.io/v1alpha1"),
        "{err}"
    );
    let (code, _, err) = jobgate_render(&["--policy", "recovery-needs-faild=warn"], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown policy"), "{err}");
}

/// With `kubernetes.version` unset (the default), what the chart renders by release follows the
/// cluster Helm installs into: MutatingAdmissionPolicy `v1beta1` for a 1.35 cluster, `v1` for 1.36
/// and later, a refusal for 1.33; a set version overrides it.
#[test]
fn the_chart_follows_the_clusters_release_unless_told_otherwise() {
    let api = |cluster: &str, sets: &[&str]| -> Result<String, String> {
        let docs = chart_on(cluster, "jobgate", "jobgate-system", sets)?;
        let policy = docs
            .iter()
            .find(|d| d["kind"] == "MutatingAdmissionPolicy")
            .expect("a MutatingAdmissionPolicy");
        Ok(policy["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    };
    let v1beta1 = "admissionregistration.k8s.io/v1beta1";
    let v1 = "admissionregistration.k8s.io/v1";
    assert_eq!(api("v1.35.2", &[]).as_deref(), Ok(v1beta1));
    assert_eq!(api("v1.36.0", &[]).as_deref(), Ok(v1));
    assert_eq!(api("v1.37.2", &[]).as_deref(), Ok(v1));
    let refused = api("v1.34.0", &["kubernetes.version=1.33"]).unwrap_err();
    assert!(
        refused.contains("Kubernetes 1.33 serves only v1alpha1"),
        "{refused}"
    );
    assert_eq!(
        api("v1.37.2", &["kubernetes.version=1.35"]).as_deref(),
        Ok(v1beta1)
    );
}

// ---------------------------------------------------------------------------------------------
// deploy/components/admission-policies.

const COMPONENT: &str = "deploy/components/admission-policies";

/// The component's policies are `jobgate render`'s, the namespace left to kustomize.
#[test]
fn the_components_policies_are_jobgate_renders_output() {
    let path = repo().join(COMPONENT).join("admission-policies.yaml");
    let (code, expected, err) = jobgate_render(&[], &[]);
    assert_eq!(code, 0, "{err}");
    let actual = std::fs::read_to_string(&path).expect("the component's policies");
    assert!(
        actual == expected,
        "{} is not `jobgate render`'s output: regenerate it with\n  \
         cargo run -- render > {COMPONENT}/admission-policies.yaml",
        path.display()
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            if entry.file_name() != "certs" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A user's overlay: deploy/base with the component, in `namespace`.
fn component_install(namespace: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&repo().join("deploy"), &dir.path().join("deploy"));
    let user = dir.path().join("user");
    std::fs::create_dir_all(&user).expect("mkdir");
    std::fs::write(
        user.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             namespace: {namespace}\nresources:\n  - ../deploy/base\n\
             components:\n  - ../deploy/components/admission-policies\n\
             transformers:\n  - ../deploy/namespace\n"
        ),
    )
    .expect("write overlay");
    (dir, user)
}

#[test]
fn the_component_installs_the_policies_instead_of_the_webhook_in_any_namespace() {
    let kubectl = kubectl();
    for namespace in ["jobgate-system", "platform-jobs"] {
        let (_dir, user) = component_install(namespace);
        let docs = render(kubectl, &user);
        let kinds = kinds(&docs);
        for gone in [
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "Certificate",
            "Secret",
        ] {
            assert!(!kinds.iter().any(|k| k == gone), "{gone} in {kinds:?}");
        }
        assert_reconciler_only(&docs);
        // The policies keep out kube-system and the namespace the overlay chose.
        assert_same(
            &essence(&docs),
            &essence(&rendered(&["--namespace", namespace])),
            namespace,
        );
        // The settings ConfigMap is the reconciler's still.
        assert!(docs.iter().any(|d| {
            d["kind"] == "ConfigMap"
                && d["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("jobgate-settings"))
        }));
    }
}

// ---------------------------------------------------------------------------------------------
// The chart's admissionMode: policies.

/// `helm template <release> charts/jobgate -n <namespace> --set admissionMode=policies --set ...`.
fn chart(release: &str, namespace: &str, sets: &[&str]) -> Result<Vec<Value>, String> {
    // The cluster `helm template` pretends to install into (`.Capabilities.KubeVersion`, which the
    // chart follows while `kubernetes.version` is unset): the release `jobgate render` judges by
    // without a setting.
    let cluster = format!("v{}.0", jobgate::job::version::KubernetesVersion::default());
    chart_on(&cluster, release, namespace, sets)
}

/// `helm template` of the chart with `admissionMode: policies` for a cluster of `cluster`
/// (`--kube-version`).
fn chart_on(
    cluster: &str,
    release: &str,
    namespace: &str,
    sets: &[&str],
) -> Result<Vec<Value>, String> {
    let mut cmd = Command::new(helm());
    cmd.args(["template", release])
        .arg(repo().join("charts/jobgate"))
        .args(["--kube-version", cluster])
        .args(["--namespace", namespace, "--set", "admissionMode=policies"]);
    for set in sets {
        cmd.args(["--set", set]);
    }
    let out = cmd.output().expect("run helm template");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(documents(&String::from_utf8(out.stdout).expect("UTF-8")))
}

/// Chart values and the `jobgate render` flags that say the same.
struct Case {
    release: &'static str,
    fullname: &'static str,
    namespace: &'static str,
    sets: &'static [&'static str],
    flags: &'static [&'static str],
}

const CASES: [Case; 6] = [
    Case {
        release: "jobgate",
        fullname: "jobgate",
        namespace: "jobgate-system",
        sets: &[],
        flags: &[],
    },
    Case {
        release: "batch",
        fullname: "batch-jobgate",
        namespace: "platform",
        sets: &[
            "kubernetes.version=1.35",
            "webhook.excludedNamespaces={ci,sandbox}",
            "webhook.failurePolicy=Ignore",
        ],
        flags: &[
            "--kubernetes-version=1.35",
            "--exclude-namespace=ci,sandbox",
            "--failure-policy=Ignore",
        ],
    },
    Case {
        release: "jobgate",
        fullname: "jobgate",
        namespace: "jg",
        sets: &[
            "kubernetes.version=1.34",
            "policies.recovery-annotation-value=warn",
            "policies.recovery-needs-failed=deny",
            "policies.recovery-annotation-on-job=off",
            "policies.indexed-terminating-or-failed=deny",
            "recoveryAnnotationKeys={kueue.x-k8s.io/safe-to-forcefully-delete,example.com/odd~key}",
        ],
        flags: &[
            "--kubernetes-version=1.34",
            "--policy=recovery-annotation-value=warn,recovery-needs-failed=deny,recovery-annotation-on-job=off,indexed-terminating-or-failed=deny",
            "--inject-recovery-annotation-key=kueue.x-k8s.io/safe-to-forcefully-delete,example.com/odd~key",
        ],
    },
    Case {
        release: "jobgate",
        fullname: "jobgate",
        namespace: "jg",
        sets: &["rollout.warnOnly=true", "kubernetes.version=1.36"],
        flags: &[
            "--kubernetes-version=1.36",
            "--policy=recovery-annotation-value=warn,recovery-annotation-on-job=warn,recovery-needs-failed=warn,recovery-counts-toward-backoff=warn,indexed-terminating-or-failed=warn",
        ],
    },
    Case {
        release: "jobgate",
        fullname: "jobgate",
        namespace: "jg",
        sets: &[
            "policies.recovery-annotation-value=off",
            "policies.recovery-annotation-on-job=off",
            "policies.recovery-needs-failed=off",
            "policies.recovery-counts-toward-backoff=off",
            "policies.indexed-terminating-or-failed=off",
        ],
        flags: &[
            "--policy=recovery-annotation-value=off,recovery-annotation-on-job=off,recovery-needs-failed=off,recovery-counts-toward-backoff=off,indexed-terminating-or-failed=off",
        ],
    },
    Case {
        release: "jobgate",
        fullname: "jobgate",
        namespace: "jg",
        sets: &[
            "recoveryAnnotationKeys={kueue.x-k8s.io/safe-to-forcefully-terminate,kueue.x-k8s.io/safe-to-forcefully-delete,kueue.x-k8s.io/safe-to-forcefully-terminate}",
            "policies.indexed-terminating-or-failed=warn",
        ],
        flags: &[
            "--inject-recovery-annotation-key=kueue.x-k8s.io/safe-to-forcefully-terminate,kueue.x-k8s.io/safe-to-forcefully-delete,kueue.x-k8s.io/safe-to-forcefully-terminate",
            "--policy=indexed-terminating-or-failed=warn",
        ],
    },
];

#[test]
fn the_chart_installs_what_jobgate_render_prints_for_its_values() {
    for case in &CASES {
        let docs = chart(case.release, case.namespace, case.sets)
            .unwrap_or_else(|e| panic!("{:?}: {e}", case.sets));
        let mut flags = vec!["--name", case.fullname, "--namespace", case.namespace];
        flags.extend(case.flags);
        assert_same(
            &essence(&docs),
            &essence(&rendered(&flags)),
            &format!("{:?}", case.sets),
        );
    }
}

#[test]
fn the_chart_in_policies_mode_has_no_webhook_service_or_certificate_and_keeps_the_reconciler() {
    for source in ["cert-manager", "generated"] {
        let source_set = format!("certificates.source={source}");
        let docs = chart("jobgate", "jg", &[&source_set]).unwrap();
        let kinds = kinds(&docs);
        for gone in [
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "Service",
            "Certificate",
            "Issuer",
            "Secret",
        ] {
            assert!(
                !kinds.iter().any(|k| k == gone),
                "{gone} in {kinds:?} ({source})"
            );
        }
        assert_reconciler_only(&docs);
    }
    // Without the reconciler nothing is left to run: no Deployment, no PodDisruptionBudget.
    let docs = chart("jobgate", "jg", &["reconciler.enabled=false"]).unwrap();
    let kinds = kinds(&docs);
    assert!(
        !kinds
            .iter()
            .any(|k| k == "Deployment" || k == "PodDisruptionBudget"),
        "{kinds:?}"
    );
    assert!(
        kinds.iter().any(|k| k == "MutatingAdmissionPolicy"),
        "{kinds:?}"
    );
    // Before 1.34 there is no MutatingAdmissionPolicy to install: the chart says so.
    let error = chart("jobgate", "jg", &["kubernetes.version=1.33"]).unwrap_err();
    assert!(
        error.contains("admissionMode: policies needs MutatingAdmissionPolicy"),
        "{error}"
    );
}

#[test]
fn the_chart_in_policies_mode_passes_helm_lint_strict() {
    let out = Command::new(helm())
        .args(["lint", "--strict"])
        .arg(repo().join("charts/jobgate"))
        .args(["--set", "admissionMode=policies"])
        .output()
        .expect("run helm lint");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
