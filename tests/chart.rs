//! The Helm chart (charts/jobgate): `helm lint --strict` and its values schema, Helm 3 and Helm 4
//! alike, and every install promise (`tests/support/promises.rs`) kept for any release name, any
//! namespace and the values teams set: certificate sources, the reconciler off, pod settings, a
//! NetworkPolicy, monitoring labels, the pre-delete cleanup hook, every release and feature gate
//! jobgate knows.
//!
//! Needs helm 4 and Helm 3.14+ (`tests/run tools` installs both).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use jobgate::certs;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ResourceQuota, Secret, Service};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use support::certificate::verifies_for;
use support::chart::{
    chart, chart_dir, chart_release, fullname, helm_template, helm_template_with, helm3, is_hook,
};
use support::install::{
    NAMESPACE, OTHER_NAMESPACES, SERVICE, TLS_SECRET, assert_no_default_namespace,
    assert_no_default_namespace_unless, repo, str_at,
};
use support::kustomize::helm;
use support::promises::{
    check_cert_manager, check_issued_by_corporate_ca, check_least_privilege, check_rbac,
    check_webhook_configurations, check_workload, container, http_probe, mutating_webhooks,
    port_number, selector_matches, validating_webhooks,
};
use support::settings::{check_bad_annotation, cli_help};

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod certificate;
    pub mod chart;
    pub mod install;
    pub mod kustomize;
    pub mod promises;
    pub mod render;
    pub mod settings;
}

#[test]
fn helm_lint_strict_passes_for_every_certificate_source() {
    let helm = helm();
    for sets in [
        vec![],
        vec!["certificates.source=generated"],
        vec![
            "certificates.source=secret",
            "certificates.secret.name=my-tls",
            "certificates.secret.caBundle=Zm9v",
        ],
        vec![
            "rollout.warnOnly=true",
            "monitoring.podMonitor.enabled=true",
            "monitoring.prometheusRule.enabled=true",
            "monitoring.dashboard.enabled=true",
        ],
        vec!["audit.enabled=true"],
        vec![
            "audit.enabled=true",
            "audit.schedule=*/30 * * * *",
            "certificates.source=generated",
        ],
    ] {
        let mut cmd = Command::new(helm);
        cmd.args(["lint", "--strict"]).arg(chart_dir());
        for set in &sets {
            cmd.args(["--set", set]);
        }
        let out = cmd.output().expect("helm lint");
        assert!(
            out.status.success(),
            "helm lint --strict {sets:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // values.schema.json refuses what jobgate would refuse at start.
    for bad in [
        "webhook.failurePolicy=Maybe",
        "kubernetes.version=1.32",
        "policies.no-such-policy=warn",
        "policies.recovery-needs-failed=strict",
        "certificates.source=vault",
        "audit.enabled=yes",
        "audit.schedule=",
        "audit.suspend=true",
    ] {
        let out = Command::new(helm)
            .args(["template", "jobgate"])
            .arg(chart_dir())
            .args(["--set", bad])
            .output()
            .expect("helm template");
        assert!(!out.status.success(), "{bad} was accepted");
    }
}

/// `kubernetes.version` takes every release jobgate knows and a newer one (`serve` judges it with
/// the newest known rules and says so), refuses what `serve` refuses, and is empty by default,
/// as the kustomize base leaves it: `serve` judges by the release the cluster reports.
#[test]
fn the_chart_takes_every_known_kubernetes_release_and_a_newer_one() {
    use jobgate::job::version::KubernetesVersion;
    let known: Vec<String> = KubernetesVersion::all().map(|v| v.to_string()).collect();
    for version in known.iter().map(String::as_str).chain(["1.39", "1.100"]) {
        let docs = helm_template(NAMESPACE, &[&format!("kubernetes.version={version}")]);
        let set = docs.iter().any(|d| {
            str_at(d, "/kind") == "ConfigMap"
                && str_at(d, "/data/JOBGATE_KUBERNETES_VERSION") == version
        });
        assert!(set, "kubernetes.version={version}");
        assert!(KubernetesVersion::parse(version).is_ok(), "{version}");
    }
    for bad in ["1.32", "1.0", "2.38", "1.38.1", "v1.38", "1.038"] {
        let out = Command::new(helm())
            .args(["template", "jobgate"])
            .arg(chart_dir())
            .args(["--set-string", &format!("kubernetes.version={bad}")])
            .output()
            .expect("helm template");
        assert!(
            !out.status.success(),
            "kubernetes.version={bad} was accepted"
        );
    }
    let docs = helm_template(NAMESPACE, &[]);
    assert!(
        docs.iter()
            .all(|d| d.pointer("/data/JOBGATE_KUBERNETES_VERSION").is_none()),
        "the chart sets a release by default"
    );
    let base = std::fs::read_to_string(repo().join("deploy/base/kustomization.yaml")).unwrap();
    assert!(
        !base.contains("\n      - JOBGATE_KUBERNETES_VERSION="),
        "deploy/base sets a release"
    );
}

#[test]
fn chart_and_cargo_release_the_same_version() {
    let chart: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(chart_dir().join("Chart.yaml")).expect("Chart.yaml"),
    )
    .expect("Chart.yaml YAML");
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(chart["appVersion"], env!("CARGO_PKG_VERSION"));
}

/// The chart in the default and in two other namespaces keeps every promise the kustomize
/// install keeps: webhooks, RBAC, workload, no token in serve, the cert-manager chain named for
/// `<service>.<ns>.svc`, no trace of jobgate-system elsewhere.
#[test]
fn chart_installs_into_any_namespace_with_every_install_check() {
    for namespace in [NAMESPACE, OTHER_NAMESPACES[0], OTHER_NAMESPACES[1]] {
        let r = chart(namespace, &[]);
        assert_no_default_namespace_unless(&r, namespace);
        check_webhook_configurations(&r);
        check_rbac(&r);
        check_workload(&r);
        check_least_privilege(&r);
        check_cert_manager(&r);
    }
}

/// `certificates.source=generated`: the chart's own CA signs a certificate for the Service
/// kube-apiserver dials, and every caBundle is that CA.
#[test]
fn chart_generated_certificates_cover_the_service_in_the_release_namespace() {
    let namespace = OTHER_NAMESPACES[1];
    let r = chart(namespace, &["certificates.source=generated"]);
    assert_no_default_namespace(&r);
    check_webhook_configurations(&r);
    let secret = r.one::<Secret>(TLS_SECRET);
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.unwrap_or_default();
    let (ca, tls) = (&data[certs::CA_CERT_FILE].0, &data[certs::TLS_CERT_FILE].0);
    assert!(verifies_for(ca, tls, &format!("{SERVICE}.{namespace}.svc")));
    assert!(!verifies_for(
        ca,
        tls,
        &format!("{SERVICE}.{NAMESPACE}.svc")
    ));
    let bundles = mutating_webhooks(&r)
        .into_iter()
        .map(|w| w.client_config.ca_bundle)
        .chain(
            validating_webhooks(&r)
                .into_iter()
                .map(|w| w.client_config.ca_bundle),
        );
    for bundle in bundles {
        assert_eq!(bundle.map(|b| b.0).as_ref(), Some(ca));
    }
}

/// The webhook configurations are release objects (a hook would be left behind by uninstall),
/// and the only hooks are the pre-delete cleanup's: a Job that deletes exactly this release's two
/// configurations, as a ServiceAccount allowed to delete exactly those, for Helm 3 and 4 (Flux)
/// and Argo CD (PreDelete). Helm 3 and Argo CD do not delete webhook configurations first.
#[test]
fn chart_uninstall_deletes_the_webhook_configurations_first_with_a_pre_delete_hook() {
    let release = "jg";
    let name = fullname(release);
    let docs = helm_template_with(
        helm(),
        release,
        "platform-jobs",
        &["monitoring.prometheusRule.enabled=true"],
    );
    let hooks: Vec<&Value> = docs.iter().filter(|d| is_hook(d)).collect();
    let kinds: BTreeSet<(&str, &str)> = hooks
        .iter()
        .map(|d| (str_at(d, "/kind"), str_at(d, "/metadata/name")))
        .collect();
    let cleanup = format!("{name}-webhooks-cleanup");
    assert_eq!(
        kinds,
        BTreeSet::from([
            ("ClusterRole", cleanup.as_str()),
            ("ClusterRoleBinding", cleanup.as_str()),
            ("Job", cleanup.as_str()),
            ("ServiceAccount", cleanup.as_str()),
        ])
    );
    for hook in &hooks {
        let what = format!(
            "{} {}",
            str_at(hook, "/kind"),
            str_at(hook, "/metadata/name")
        );
        assert_eq!(
            str_at(hook, "/metadata/annotations/helm.sh~1hook"),
            "pre-delete",
            "{what}"
        );
        assert_eq!(
            str_at(hook, "/metadata/annotations/argocd.argoproj.io~1hook"),
            "PreDelete",
            "{what}"
        );
        // The RBAC exists before the Job runs.
        let weight = str_at(hook, "/metadata/annotations/helm.sh~1hook-weight");
        let wave = str_at(hook, "/metadata/annotations/argocd.argoproj.io~1sync-wave");
        if str_at(hook, "/kind") == "Job" {
            assert_eq!((weight, wave), ("", ""), "{what}");
        } else {
            assert_eq!((weight, wave), ("-10", "-1"), "{what}");
        }
    }
    let role: ClusterRole = serde_json::from_value(
        (*hooks
            .iter()
            .find(|d| str_at(d, "/kind") == "ClusterRole")
            .unwrap())
        .clone(),
    )
    .unwrap();
    let rules = role.rules.unwrap_or_default();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].verbs, ["delete"]);
    assert_eq!(
        rules[0].resource_names.as_deref(),
        Some(&[name.clone()][..])
    );
    assert_eq!(
        rules[0].resources.as_deref(),
        Some(
            &[
                "mutatingwebhookconfigurations".to_string(),
                "validatingwebhookconfigurations".to_string()
            ][..]
        )
    );
    let job: k8s_openapi::api::batch::v1::Job = serde_json::from_value(
        (*hooks.iter().find(|d| str_at(d, "/kind") == "Job").unwrap()).clone(),
    )
    .unwrap();
    let pod = job.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.service_account_name.as_deref(), Some(cleanup.as_str()));
    assert_eq!(
        pod.containers[0].args.clone().unwrap_or_default(),
        [
            "delete".to_string(),
            format!("validatingwebhookconfiguration/{name}"),
            format!("mutatingwebhookconfiguration/{name}"),
            "--ignore-not-found".to_string(),
        ]
    );
    // Every other object is a release object, the webhook configurations included.
    for doc in docs.iter().filter(|d| !is_hook(d)) {
        assert!(
            doc.pointer("/metadata/annotations/argocd.argoproj.io~1hook")
                .is_none(),
            "{doc}"
        );
    }
    assert!(
        docs.iter()
            .any(|d| str_at(d, "/kind") == "ValidatingWebhookConfiguration" && !is_hook(d))
    );
    // Off, there are no hooks.
    let off = helm_template_with(
        helm(),
        release,
        "platform-jobs",
        &["webhooksCleanup.enabled=false"],
    );
    assert!(off.iter().all(|d| !is_hook(d)));
}

/// `recoveryAnnotationKeys` reaches both containers and the validating webhook's
/// matchConditions, next to both of Kueue's keys (an UPDATE setting a configured key must be
/// sent: the policies read it).
#[test]
fn chart_recovery_annotation_keys_reach_the_settings_and_the_match_conditions() {
    let docs = helm_template(
        NAMESPACE,
        &["recoveryAnnotationKeys={example.com/recover,kueue.x-k8s.io/safe-to-forcefully-delete}"],
    );
    let settings = docs
        .iter()
        .find(|d| {
            str_at(d, "/kind") == "ConfigMap" && str_at(d, "/metadata/name") == "jobgate-settings"
        })
        .expect("jobgate-settings");
    // The keys /mutate sets are the keys the reconciler reads, each under its own flag's
    // variable (the deprecated shared JOBGATE_RECOVERY_ANNOTATION_KEY would warn in both).
    let keys = "example.com/recover,kueue.x-k8s.io/safe-to-forcefully-delete";
    let data: BTreeMap<String, String> =
        serde_json::from_value(settings["data"].clone()).expect("string data");
    assert_eq!(
        data,
        BTreeMap::from([
            (
                "JOBGATE_INJECT_RECOVERY_ANNOTATION_KEY".to_string(),
                keys.to_string()
            ),
            (
                "JOBGATE_READ_RECOVERY_ANNOTATION_KEY".to_string(),
                keys.to_string()
            ),
        ])
    );
    let (inject, read) = (cli_help("serve"), cli_help("reconcile"));
    assert!(inject.contains("[env: JOBGATE_INJECT_RECOVERY_ANNOTATION_KEY="));
    assert!(read.contains("[env: JOBGATE_READ_RECOVERY_ANNOTATION_KEY="));
    let (_, out) = check_bad_annotation(&data);
    assert!(!out.contains("deprecated"), "{out}");
    let validating = docs
        .iter()
        .find(|d| str_at(d, "/kind") == "ValidatingWebhookConfiguration")
        .expect("validating webhook");
    let expression = str_at(validating, "/webhooks/0/matchConditions/1/expression");
    let keys = "['example.com/recover', 'kueue.x-k8s.io/safe-to-forcefully-delete', \
                'kueue.x-k8s.io/safe-to-forcefully-terminate']";
    assert_eq!(expression.matches(keys).count(), 3, "{expression}");
}

/// Values that change the workload: no reconciler means no token and no RBAC at all; an
/// existing Secret is mounted and its CA trusted; a digest pins the image.
#[test]
fn chart_values_shape_the_workload() {
    let digest = format!("sha256:{}", "a".repeat(64));
    let r = chart(
        OTHER_NAMESPACES[0],
        &[
            "reconciler.enabled=false",
            "certificates.source=secret",
            "certificates.secret.name=team-tls",
            "certificates.secret.caBundle=Zm9vCg==",
            &format!("image.digest={digest}"),
            "priorityClassName=",
        ],
    );
    let pod = r.pod_spec();
    assert_eq!(pod.automount_service_account_token, Some(false));
    assert_eq!(
        pod.containers
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["serve"]
    );
    assert!(
        pod.volumes.iter().flatten().all(|v| v.projected.is_none()),
        "no token volume without a reconciler"
    );
    assert!(r.all::<ClusterRole>().is_empty() && r.all::<Role>().is_empty());
    assert!(r.all::<ResourceQuota>().is_empty(), "no priority, no quota");
    assert_eq!(pod.priority_class_name, None);
    let tls = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "tls")
        .and_then(|v| v.secret.as_ref())
        .and_then(|s| s.secret_name.clone());
    assert_eq!(tls.as_deref(), Some("team-tls"));
    assert_eq!(
        pod.containers[0].image.as_deref(),
        Some(format!("ghcr.io/jobgate/jobgate@{digest}").as_str())
    );
    for bundle in mutating_webhooks(&r)
        .into_iter()
        .map(|w| w.client_config.ca_bundle)
        .chain(
            validating_webhooks(&r)
                .into_iter()
                .map(|w| w.client_config.ca_bundle),
        )
    {
        assert_eq!(bundle.map(|b| b.0), Some(b"foo\n".to_vec()));
    }
}

/// Release `jg` in `platform-jobs`: every object is named after the release (jg-jobgate), the
/// certificate names the Service kube-apiserver calls, jg-jobgate.platform-jobs.svc, and nothing
/// names jobgate-system or the Service `jobgate`.
#[test]
fn chart_as_release_jg_in_platform_jobs_names_everything_after_the_release() {
    let (release, namespace) = ("jg", OTHER_NAMESPACES[0]);
    let r = chart_release(release, namespace, &[]);
    assert_no_default_namespace(&r);
    check_webhook_configurations(&r);
    check_rbac(&r);
    check_workload(&r);
    check_least_privilege(&r);
    check_cert_manager(&r);
    for doc in &r.docs {
        let name = str_at(doc, "/metadata/name");
        assert!(
            name.starts_with("jg-jobgate"),
            "{} {name}",
            str_at(doc, "/kind")
        );
    }
    let generated = chart_release(release, namespace, &["certificates.source=generated"]);
    let secret = generated.one::<Secret>("jg-jobgate-tls");
    let data = secret.data.unwrap_or_default();
    let (ca, tls) = (&data[certs::CA_CERT_FILE].0, &data[certs::TLS_CERT_FILE].0);
    assert!(verifies_for(ca, tls, "jg-jobgate.platform-jobs.svc"));
    assert!(!verifies_for(ca, tls, "jobgate.platform-jobs.svc"));
    // What `serve --tls-server-name` checks: the served certificate names the Service.
    assert_eq!(
        certs::service_of(tls).unwrap(),
        Some(("jg-jobgate".to_string(), namespace.to_string()))
    );
}

/// cert-manager with your own issuer (corporate PKI): only the serving Certificate, issued by it,
/// for the release's Service; no self-signed chain; the CA still injected from its Secret.
#[test]
fn chart_cert_manager_with_an_existing_issuer_makes_only_the_serving_certificate() {
    let r = chart_release(
        "jg",
        "platform-jobs",
        &[
            "certificates.certManager.issuerRef.kind=ClusterIssuer",
            "certificates.certManager.issuerRef.name=corporate-ca",
        ],
    );
    check_issued_by_corporate_ca(&r);
    let inject = r
        .one::<ValidatingWebhookConfiguration>("jg-jobgate")
        .metadata
        .annotations
        .unwrap_or_default();
    assert_eq!(
        inject
            .get("cert-manager.io/inject-ca-from")
            .map(String::as_str),
        Some("platform-jobs/jg-jobgate-serving")
    );
}

/// The values teams need, under Kueue's and Kyverno's names, reach the pod and keep every
/// promise: pod annotations and labels (never the selector's), security contexts, extra flags
/// (ones the binary knows) and env, the node's network with its own ports, affinity, a
/// NetworkPolicy, name overrides.
#[test]
fn chart_values_open_the_pod_where_teams_need_it() {
    let r = chart_release(
        "jg",
        "platform-jobs",
        &[
            "fullnameOverride=batch-gate",
            "podAnnotations.example\\.com/owner=ml-platform",
            "podLabels.team=ml",
            "hostNetwork=true",
            "ports.webhook=10260",
            "ports.admin=10261",
            "ports.reconcileAdmin=10262",
            "extraArgs.serve={--body-memory-budget=64Mi}",
            "extraEnv.reconcile[0].name=JOBGATE_LOG_LEVEL",
            "extraEnv.reconcile[0].value=debug",
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=node-role.kubernetes.io/platform",
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
            "podSecurityContext.runAsUser=1000700000",
            "networkPolicy.enabled=true",
        ],
    )
    .named("batch-gate");
    check_webhook_configurations(&r);
    check_rbac(&r);
    check_least_privilege(&r);
    let deployment = r.one::<Deployment>("batch-gate");
    let template = deployment.spec.template.clone();
    let meta = template.metadata.unwrap();
    let labels = meta.labels.unwrap();
    assert_eq!(labels.get("team").map(String::as_str), Some("ml"));
    assert_eq!(
        labels
            .get("app.kubernetes.io/component")
            .map(String::as_str),
        Some("webhook")
    );
    assert_eq!(
        meta.annotations
            .unwrap()
            .get("example.com/owner")
            .map(String::as_str),
        Some("ml-platform")
    );
    let pod = template.spec.unwrap();
    assert_eq!(pod.host_network, Some(true));
    assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirstWithHostNet"));
    assert_eq!(pod.security_context.unwrap().run_as_user, Some(1000700000));
    assert!(pod.affinity.unwrap().node_affinity.is_some());
    let serve = container(&pod.containers, "serve");
    let args = serve.args.clone().unwrap();
    assert!(
        args.contains(&"--addr=0.0.0.0:10260".to_string()),
        "{args:?}"
    );
    assert!(
        args.contains(&"--admin-addr=0.0.0.0:10261".to_string()),
        "{args:?}"
    );
    assert!(
        args.contains(&"--body-memory-budget=64Mi".to_string()),
        "{args:?}"
    );
    assert!(cli_help("serve").contains("--body-memory-budget <"));
    let (_, port) = http_probe(serve, "readiness");
    assert_eq!(port_number(serve, &port), 10261);
    let reconcile = container(&pod.containers, "reconcile");
    assert!(
        reconcile
            .args
            .clone()
            .unwrap()
            .contains(&"--admin-addr=0.0.0.0:10262".to_string())
    );
    assert!(
        reconcile
            .env
            .iter()
            .flatten()
            .any(|e| e.name == "JOBGATE_LOG_LEVEL" && e.value.as_deref() == Some("debug"))
    );
    let service = r.one::<Service>("batch-gate").spec.unwrap();
    let target = service.ports.unwrap()[0].target_port.clone().unwrap();
    assert_eq!(port_number(serve, &target), 10260);

    let policy = r
        .docs
        .iter()
        .find(|d| str_at(d, "/kind") == "NetworkPolicy")
        .expect("a NetworkPolicy");
    let policy: k8s_openapi::api::networking::v1::NetworkPolicy =
        serde_json::from_value(policy.clone()).unwrap();
    let spec = policy.spec.unwrap();
    assert!(selector_matches(
        &spec.pod_selector.unwrap(),
        &labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    ));
    let ports: BTreeSet<String> = spec
        .ingress
        .unwrap()
        .iter()
        .flat_map(|rule| rule.ports.clone().unwrap_or_default())
        .map(|p| match p.port.unwrap() {
            IntOrString::String(name) => name,
            IntOrString::Int(n) => n.to_string(),
        })
        .collect();
    assert_eq!(
        ports,
        BTreeSet::from([
            "admin".to_string(),
            "admin-reconcile".to_string(),
            "https".to_string()
        ])
    );
}

/// kube-prometheus-stack finds the PodMonitor and the PrometheusRule only with its release label:
/// additionalLabels puts it on them. The alerts select this release's Service by name.
#[test]
fn chart_monitoring_carries_its_labels_and_selects_the_releases_service() {
    let docs = helm_template_with(
        helm(),
        "jg",
        "platform-jobs",
        &[
            "monitoring.podMonitor.enabled=true",
            "monitoring.podMonitor.additionalLabels.release=kube-prometheus-stack",
            "monitoring.prometheusRule.enabled=true",
            "monitoring.prometheusRule.additionalLabels.release=kube-prometheus-stack",
            "monitoring.dashboard.enabled=true",
            "monitoring.dashboard.additionalLabels.grafana-folder=platform",
        ],
    );
    for (kind, label, value) in [
        ("PodMonitor", "release", "kube-prometheus-stack"),
        ("PrometheusRule", "release", "kube-prometheus-stack"),
        ("ConfigMap", "grafana-folder", "platform"),
    ] {
        let doc = docs
            .iter()
            .find(|d| {
                str_at(d, "/kind") == kind
                    && (kind != "ConfigMap"
                        || str_at(d, "/metadata/name") == "jg-jobgate-dashboard")
            })
            .unwrap_or_else(|| panic!("a {kind}"));
        assert_eq!(
            str_at(doc, &format!("/metadata/labels/{label}")),
            value,
            "{kind}"
        );
    }
    let rule = docs
        .iter()
        .find(|d| str_at(d, "/kind") == "PrometheusRule")
        .unwrap()
        .to_string();
    assert!(rule.contains(r#"endpoint=\"jg-jobgate\""#), "{rule}");
    assert!(!rule.contains(r#"endpoint=\"jobgate\""#), "{rule}");
    assert!(!rule.contains("namespace=\\\""), "{rule}");
}

/// Helm 3 (3.14+) and Helm 4 both lint the chart strictly and render the same objects, for the
/// release jg in platform-jobs and the value sets the docs use (the generated certificates, random
/// by nature, only lint).
#[test]
fn helm_3_and_helm_4_lint_and_template_the_chart_alike() {
    let (helm3, helm4) = (helm3(), helm());
    let sets: [&[&str]; 6] = [
        &[],
        &["certificates.source=generated"],
        &[
            "certificates.source=secret",
            "certificates.secret.name=my-tls",
            "certificates.secret.caBundle=Zm9v",
        ],
        &[
            "rollout.warnOnly=true",
            "webhook.failurePolicy=Ignore",
            "webhook.excludedNamespaces={legacy-batch}",
            "monitoring.podMonitor.enabled=true",
            "monitoring.prometheusRule.enabled=true",
            "monitoring.prometheusRule.additionalLabels.release=kube-prometheus-stack",
            "monitoring.dashboard.enabled=true",
        ],
        &[
            "audit.enabled=true",
            "networkPolicy.enabled=true",
            "replicas=5",
        ],
        &[
            "certificates.certManager.issuerRef.kind=ClusterIssuer",
            "certificates.certManager.issuerRef.name=corporate-ca",
            "hostNetwork=true",
        ],
    ];
    for set in sets {
        for helm in [helm3.as_str(), helm4] {
            let mut cmd = Command::new(helm);
            cmd.args([
                "lint",
                "--strict",
                "--namespace",
                "platform-jobs",
                "--kube-version",
                "1.35.0",
            ])
            .arg(chart_dir());
            for s in set {
                cmd.args(["--set", s]);
            }
            let out = cmd.output().expect("helm lint");
            assert!(
                out.status.success(),
                "{helm} lint --strict {set:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        if set.contains(&"certificates.source=generated") {
            continue;
        }
        // The same objects; the order of kinds Helm does not know differs between the two.
        let by_name = |docs: Vec<Value>| -> Vec<Value> {
            let mut docs = docs;
            docs.sort_by_key(|d| {
                (
                    str_at(d, "/kind").to_string(),
                    str_at(d, "/metadata/name").to_string(),
                )
            });
            docs
        };
        let (three, four) = (
            by_name(helm_template_with(&helm3, "jg", "platform-jobs", set)),
            by_name(helm_template_with(helm4, "jg", "platform-jobs", set)),
        );
        assert_eq!(three.len(), four.len(), "{set:?}");
        for (a, b) in three.iter().zip(&four) {
            assert!(
                a == b,
                "{set:?}: Helm 3 and Helm 4 render {} {} differently",
                str_at(a, "/kind"),
                str_at(a, "/metadata/name")
            );
        }
    }
    // Helm 3's schema validation refuses what Helm 4's does.
    for bad in ["webhook.failurePolicy=Maybe", "nope=1", "ports.webhook=0"] {
        let out = Command::new(&helm3)
            .args(["template", "jg"])
            .arg(chart_dir())
            .args(["--kube-version", "1.35.0", "--set", bad])
            .output()
            .unwrap();
        assert!(!out.status.success(), "Helm 3 accepted {bad}");
    }
}

/// `featureGates` in values.schema.json takes exactly the gates `jobgate` knows (the list its
/// `unrecognized feature gate` error gives), so a gate the binary takes is never refused by the
/// chart, nor one it refuses let through to a crash-looping pod.
#[test]
fn the_chart_takes_every_feature_gate_jobgate_knows() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(chart_dir().join("values.schema.json")).unwrap(),
    )
    .unwrap();
    let mut in_chart: Vec<String> = schema
        .pointer("/properties/kubernetes/properties/featureGates/propertyNames/enum")
        .and_then(serde_json::Value::as_array)
        .expect("featureGates.propertyNames.enum")
        .iter()
        .map(|g| g.as_str().unwrap().to_string())
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args(["check", "--feature-gates", "NoSuchGate=true", "-"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("jobgate check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let known = stderr
        .split("jobgate knows the Job gates ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no gate list in: {stderr}"));
    let mut known: Vec<String> = known.split(", ").map(str::to_string).collect();
    in_chart.sort();
    known.sort();
    assert_eq!(in_chart, known);
}
