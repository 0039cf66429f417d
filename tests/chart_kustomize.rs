//! The chart and the kustomize install are one install: for the same settings they render the
//! same objects (Helm's own labels, hooks and kustomize's hash suffixes aside), the chart's
//! monitoring files are deploy/monitoring's, the kustomize rollout steps are the chart's values
//! and the priority-class quota follows the replicas in both.
//!
//! Needs kubectl >= 1.35 and helm 4 (`tests/run tools` installs them).

use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ResourceQuota;
use support::chart::{assert_same_objects, chart, chart_dir, helm_template};
use support::install::{NAMESPACE, OTHER_NAMESPACES, Rendered, SERVICE, Workspace, repo, str_at};
use support::kustomize::{helm, kubectl, render};

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod chart;
    pub mod install;
    pub mod kustomize;
    pub mod render;
}

#[test]
fn chart_monitoring_files_are_deploy_monitorings() {
    for (copy, original) in [
        ("files/prometheusrule.yaml", "prometheusrule.yaml"),
        ("files/dashboard.json", "dashboard.json"),
    ] {
        assert_eq!(
            std::fs::read(chart_dir().join(copy)).expect("chart file"),
            std::fs::read(repo().join("deploy/monitoring").join(original)).expect("deploy file"),
            "charts/jobgate/{copy} differs from deploy/monitoring/{original}: copy it over"
        );
    }
}

/// For the same settings, the chart and the kustomize install render the same objects:
/// defaults (cert-manager overlay + deploy/monitoring), the rollout step, every policy off.
#[test]
fn chart_and_kustomize_render_the_same_objects_for_the_same_settings() {
    let kubectl = kubectl();
    let monitoring = [
        "monitoring.podMonitor.enabled=true",
        "monitoring.prometheusRule.enabled=true",
        "monitoring.dashboard.enabled=true",
    ];
    for namespace in [NAMESPACE, OTHER_NAMESPACES[0]] {
        let ws = Workspace::in_namespace(namespace);
        let mut kustomize = render(kubectl, &ws.overlay("overlays/cert-manager"));
        kustomize.extend(render(kubectl, &ws.overlay("monitoring")));
        assert_same_objects(
            &format!("defaults in {namespace}"),
            kustomize,
            helm_template(namespace, &monitoring),
        );
        for (component, sets) in [
            ("rollout-warn", vec!["rollout.warnOnly=true"]),
            ("kueue-recovers", vec!["recoveredBy=kueue"]),
            (
                "policies-off",
                vec![
                    "policies.recovery-annotation-value=off",
                    "policies.recovery-annotation-on-job=off",
                    "policies.recovery-needs-failed=off",
                    "policies.recovery-counts-toward-backoff=off",
                    "policies.indexed-terminating-or-failed=off",
                ],
            ),
        ] {
            let dir = ws.overlay_with("overlays/cert-manager", &[component]);
            assert_same_objects(
                &format!("{component} in {namespace}"),
                render(kubectl, &dir),
                helm_template(namespace, &sets),
            );
        }
    }
}

/// The first rollout steps exist for kustomize as for Helm: components/failure-policy-ignore is
/// `webhook.failurePolicy=Ignore`, and the patch docs/src/install.md gives for extra excluded
/// namespaces is `webhook.excludedNamespaces`, object for object.
#[test]
fn kustomize_rollout_steps_are_the_charts_values() {
    let kubectl = kubectl();
    for namespace in [NAMESPACE, OTHER_NAMESPACES[0]] {
        let ws = Workspace::in_namespace(namespace);
        let dir = ws.overlay_with("overlays/cert-manager", &["failure-policy-ignore"]);
        let kustomize = render(kubectl, &dir);
        let validating = kustomize
            .iter()
            .find(|d| str_at(d, "/kind") == "ValidatingWebhookConfiguration")
            .expect("validating webhook");
        assert_eq!(str_at(validating, "/webhooks/0/failurePolicy"), "Ignore");
        assert_same_objects(
            &format!("failure-policy-ignore in {namespace}"),
            kustomize,
            helm_template(namespace, &["webhook.failurePolicy=Ignore"]),
        );

        let dir = ws.overlay_with("overlays/cert-manager", &[]);
        let mut kustomization = std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap();
        kustomization.push_str(EXCLUDED_NAMESPACES_PATCH);
        std::fs::write(dir.join("kustomization.yaml"), kustomization).unwrap();
        let kustomize = render(kubectl, &dir);
        assert_same_objects(
            &format!("excluded namespaces in {namespace}"),
            kustomize,
            helm_template(namespace, &["webhook.excludedNamespaces={legacy-batch}"]),
        );
    }
    let install = std::fs::read_to_string(repo().join("docs/src/install.md")).unwrap();
    assert!(
        install.contains(EXCLUDED_NAMESPACES_PATCH),
        "docs/src/install.md does not show the tested patch:\n{EXCLUDED_NAMESPACES_PATCH}"
    );
}

/// The `patches:` docs/src/install.md gives for namespaces the webhooks never see (besides
/// kube-system and jobgate's own), as written there.
const EXCLUDED_NAMESPACES_PATCH: &str = r#"patches:
  - target: {kind: MutatingWebhookConfiguration, name: jobgate}
    patch: |-
      - {op: add, path: /webhooks/0/namespaceSelector/matchExpressions/0/values/-, value: legacy-batch}
      - {op: add, path: /webhooks/1/namespaceSelector/matchExpressions/0/values/-, value: legacy-batch}
  - target: {kind: ValidatingWebhookConfiguration, name: jobgate}
    patch: |-
      - {op: add, path: /webhooks/0/namespaceSelector/matchExpressions/0/values/-, value: legacy-batch}
"#;

/// The priority-class quota leaves room for a rolling update at any replica count: twice the
/// replicas plus 4 (deploy/base/resourcequota.yaml says why), computed by the chart, and written
/// for 3 in the kustomize base; a value too small for the surge pod is refused.
#[test]
fn the_priority_class_quota_follows_replicas() {
    let kubectl = kubectl();
    let ws = Workspace::new();
    let base = Rendered::new("base", render(kubectl, &ws.overlay("base")));
    let replicas = base.one::<Deployment>(SERVICE).spec.replicas.unwrap();
    let quota = |r: &Rendered| -> String {
        let q = r.all::<ResourceQuota>().remove(0);
        match &q.spec.unwrap().hard.unwrap()["pods"] {
            k8s_openapi::apimachinery::pkg::api::resource::Quantity(pods) => pods.clone(),
        }
    };
    assert_eq!(quota(&base), (2 * replicas + 4).to_string());
    for (replicas, pods) in [(3, "10"), (5, "14"), (10, "24")] {
        let r = chart(NAMESPACE, &[&format!("replicas={replicas}")]);
        assert_eq!(quota(&r), pods, "replicas {replicas}");
    }
    let r = chart(NAMESPACE, &["replicas=5", "priorityClassQuota.pods=30"]);
    assert_eq!(quota(&r), "30");
    let out = Command::new(helm())
        .args(["template", "jobgate"])
        .arg(chart_dir())
        .args(["--set", "replicas=5", "--set", "priorityClassQuota.pods=5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("less than replicas + 1 (6)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
