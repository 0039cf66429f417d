//! The audit CronJob, as `deploy/audit/cronjob` (alone, or in one kustomization with the
//! install) and as the chart's `audit.enabled`: the same objects in the release namespace, its
//! own ServiceAccount with exactly the RBAC `jobgate audit --apply --prune` needs, the values
//! that shape it, and, run in the environment kubelet would give it against a stand-in API
//! server, the same verdict as `jobgate check` with the settings serve reads.
//!
//! Needs kubectl >= 1.35 and helm 4 (`tests/run tools` installs them).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{ConfigMap, Container, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use serde_json::Value;
use support::chart::{assert_same_objects, chart, helm_template};
use support::install::{
    NAMESPACE, OTHER_NAMESPACES, Rendered, Workspace, assert_no_default_namespace,
    assert_no_default_namespace_unless, str_at,
};
use support::kustomize::{kubectl, render};
use support::promises::{
    check_least_privilege, check_webhook_configurations, check_workload, container, expand,
};
use support::settings::{check_bad_annotation, check_settings_are_read, settings};

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod api_server;
    pub mod certificate;
    pub mod chart;
    pub mod install;
    pub mod kustomize;
    pub mod promises;
    pub mod render;
    pub mod settings;
}

/// `audit.enabled=true` adds deploy/audit/cronjob's objects and nothing else, in the release
/// namespace: the same objects as the cert-manager overlay plus `deploy/audit/cronjob` moved by
/// one `namespace:` line. The normalization is the one above (Helm's labels; the pod template's
/// `app.kubernetes.io/instance`, which lets two releases' audit pods be told apart).
#[test]
fn chart_audit_enabled_renders_deploy_audit_cronjob_in_the_release_namespace() {
    let kubectl = kubectl();
    for namespace in [NAMESPACE, OTHER_NAMESPACES[0], OTHER_NAMESPACES[1]] {
        let ws = Workspace::in_namespace(namespace);
        let audit = render(kubectl, &ws.overlay("audit/cronjob"));
        let moved = Rendered::in_namespace("audit/cronjob", namespace, audit.clone());
        assert_no_default_namespace_unless(&moved, namespace);
        check_audit(&moved, "jobgate-audit");
        // Built with the install in one kustomization, as docs/src/audit.md says, so that the
        // CronJob names the generated settings; its reference stays optional (the directory
        // can be applied alone), the chart's need not be.
        let mut kustomize = render(
            kubectl,
            &ws.overlay_of(&["overlays/cert-manager", "audit/cronjob"], &[]),
        );
        kustomize.iter_mut().for_each(settings_required);
        assert_same_objects(
            &format!("audit in {namespace}"),
            kustomize,
            helm_template(namespace, &["audit.enabled=true"]),
        );

        let r = chart(namespace, &["audit.enabled=true"]);
        assert_no_default_namespace_unless(&r, namespace);
        check_webhook_configurations(&r);
        check_workload(&r);
        check_least_privilege(&r);
        check_audit(&r, "jobgate-audit");
    }
}

/// The audit CronJob runs `jobgate audit --apply --prune` as its own ServiceAccount in the
/// release namespace, bound to ClusterRoles granting exactly the calls it makes
/// (`jobgate::audit::RBAC` and `APPLY_RBAC`), no more.
fn check_audit(r: &Rendered, name: &str) -> CronJob {
    let what = r.name.as_str();
    let cron_job = r.one::<CronJob>(name);
    assert_eq!(cron_job.metadata.namespace, Some(r.namespace.clone()));
    let pod = cron_job
        .spec
        .job_template
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.clone())
        .expect("the CronJob's pod spec");
    assert_eq!(pod.service_account_name.as_deref(), Some(name));
    let account = r.one::<ServiceAccount>(name);
    assert_eq!(account.metadata.namespace, Some(r.namespace.clone()));
    let args = pod.containers[0].args.clone().unwrap_or_default();
    assert_eq!(args[..3], ["audit", "--apply", "--prune"], "{what}");
    // The install's settings serve reads, never its jobgate-kubernetes (the audit reads the
    // release from GET /version); a ConfigMap not installed with it must be optional.
    let reads = audit_config_maps(&cron_job);
    assert!(!reads.is_empty(), "{what}: the audit reads no settings");
    let maps = r.all::<ConfigMap>();
    for (map, optional) in &reads {
        match maps.iter().find(|m| m.metadata.name.as_ref() == Some(map)) {
            Some(installed) => {
                let serve = container(&r.pod_spec().containers, "serve").clone();
                assert!(
                    serve
                        .env_from
                        .iter()
                        .flatten()
                        .any(|e| e.config_map_ref.as_ref().is_some_and(|c| &c.name == map)),
                    "{what}: the audit reads {map}, serve does not"
                );
                assert!(
                    !installed
                        .data
                        .iter()
                        .flatten()
                        .any(|(key, _)| key == "JOBGATE_KUBERNETES_VERSION"),
                    "{what}: the audit reads the release from GET /version, not {map}"
                );
            }
            None => assert!(optional, "{what}: {map} is not installed with the audit"),
        }
    }

    let reports = format!("{name}-reports");
    let roles = [r.one::<ClusterRole>(name), r.one::<ClusterRole>(&reports)];
    let needed: BTreeSet<(String, String, String)> =
        [jobgate::audit::RBAC, jobgate::audit::APPLY_RBAC]
            .iter()
            .flat_map(|calls| calls.iter())
            .flat_map(|(group, resource, verbs)| {
                verbs
                    .iter()
                    .map(move |v| (group.to_string(), resource.to_string(), v.to_string()))
            })
            .collect();
    assert_eq!(
        roles
            .iter()
            .flat_map(|role| expand(role.rules.as_deref().unwrap_or_default()))
            .collect::<BTreeSet<_>>(),
        needed,
        "{what}: the audit's ClusterRoles grant exactly what `jobgate audit --apply --prune` calls"
    );
    for role in [name, reports.as_str()] {
        let binding = r.one::<ClusterRoleBinding>(role);
        assert_eq!(
            (
                binding.role_ref.kind.as_str(),
                binding.role_ref.name.as_str()
            ),
            ("ClusterRole", role)
        );
        let subjects = binding.subjects.unwrap_or_default();
        assert_eq!(subjects.len(), 1, "{what}: {role}");
        assert_eq!(
            (
                subjects[0].kind.as_str(),
                subjects[0].name.as_str(),
                subjects[0].namespace.as_deref()
            ),
            ("ServiceAccount", name, Some(r.namespace.as_str())),
            "{what}: {role}"
        );
    }
    cron_job
}

/// The audit's values reach the CronJob: the schedule, the resources, and the chart's image
/// (a digest pins it) and pull secrets.
#[test]
fn chart_audit_values_shape_the_cron_job() {
    let digest = format!("sha256:{}", "b".repeat(64));
    let r = chart(
        OTHER_NAMESPACES[1],
        &[
            "audit.enabled=true",
            "audit.schedule=*/10 * * * *",
            "audit.resources.limits.memory=512Mi",
            &format!("image.digest={digest}"),
            "image.pullPolicy=Always",
            "imagePullSecrets[0].name=registry",
        ],
    );
    assert_no_default_namespace(&r);
    let cron_job = check_audit(&r, "jobgate-audit");
    let spec = cron_job.spec;
    assert_eq!(spec.schedule, "*/10 * * * *");
    let pod = spec
        .job_template
        .spec
        .and_then(|s| s.template.spec)
        .expect("pod spec");
    let container = container(&pod.containers, "audit");
    assert_eq!(
        container.image.as_deref(),
        Some(format!("ghcr.io/jobgate/jobgate@{digest}").as_str())
    );
    assert_eq!(container.image_pull_policy.as_deref(), Some("Always"));
    let resources = container.resources.clone().expect("resources");
    assert_eq!(
        resources.limits.unwrap_or_default()["memory"].0,
        "512Mi",
        "the set limit"
    );
    assert_eq!(
        resources.requests.unwrap_or_default()["cpu"].0,
        "50m",
        "the default request is kept"
    );
    assert_eq!(
        pod.image_pull_secrets
            .unwrap_or_default()
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["registry"]
    );
}

/// The CronJob's container `audit`.
fn audit_container(cron_job: &CronJob) -> &Container {
    let pod = cron_job
        .spec
        .job_template
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("the CronJob's pod spec");
    container(&pod.containers, "audit")
}

/// The ConfigMaps a CronJob's audit container reads (envFrom), in order, with whether each is
/// optional.
fn audit_config_maps(cron_job: &CronJob) -> Vec<(String, bool)> {
    audit_container(cron_job)
        .env_from
        .iter()
        .flatten()
        .filter_map(|e| e.config_map_ref.as_ref())
        .map(|c| (c.name.clone(), c.optional.unwrap_or(false)))
        .collect()
}

/// deploy/audit/cronjob's settings reference with `optional: true` removed (after checking it is
/// there), to compare with the chart's, which is required.
fn settings_required(doc: &mut Value) {
    if str_at(doc, "/kind") != "CronJob" {
        return;
    }
    let refs = doc
        .pointer_mut("/spec/jobTemplate/spec/template/spec/containers/0/envFrom")
        .and_then(Value::as_array_mut)
        .expect("the audit's envFrom");
    for r in refs {
        let map = r
            .get_mut("configMapRef")
            .and_then(Value::as_object_mut)
            .expect("a configMapRef");
        assert_eq!(map.remove("optional"), Some(Value::Bool(true)), "{map:?}");
    }
}

/// The audit container's environment as kubelet makes it: each ConfigMap it reads that the
/// rendering installs (envFrom, later ones win; a missing one must be optional), then `env`.
fn audit_environment(r: &Rendered, cron_job: &CronJob) -> BTreeMap<String, String> {
    let maps = r.all::<ConfigMap>();
    let mut env = BTreeMap::new();
    for (name, optional) in audit_config_maps(cron_job) {
        match maps
            .iter()
            .find(|m| m.metadata.name.as_ref() == Some(&name))
        {
            Some(map) => env.extend(map.data.clone().unwrap_or_default()),
            None => assert!(optional, "{}: the audit's {name} is not installed", r.name),
        }
    }
    for var in audit_container(cron_job).env.iter().flatten() {
        if let Some(value) = &var.value {
            env.insert(var.name.clone(), value.clone());
        }
    }
    env
}

/// `jobgate audit` with the CronJob's flags (without `--apply --prune`, which would put the
/// findings in reports and exit 0) and `env`, against a stand-in API server of release 1.37
/// holding the Job of [`check_bad_annotation`]: (exit code, output).
fn audit_bad_annotation(cron_job: &CronJob, env: &BTreeMap<String, String>) -> (i32, String) {
    let job = serde_json::json!({"metadata": {"name": "train", "namespace": "ml", "uid": "u1"},
        "spec": {"template": {
            "metadata": {"annotations": {"kueue.x-k8s.io/safe-to-forcefully-terminate": "yes"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}});
    let (_dir, kubeconfig, _) = support::api_server::fake_api_server(move |_, path| {
        let list = |kind: &str, items: Vec<Value>| {
            serde_json::json!({"apiVersion": "v1", "kind": kind, "metadata": {}, "items": items})
                .to_string()
        };
        match path.split('?').next().unwrap_or("") {
            "/version" => (
                200,
                serde_json::json!({"major": "1", "minor": "37", "gitVersion": "v1.37.0",
                    "gitCommit": "x", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                    "goVersion": "go1.25", "compiler": "gc", "platform": "linux/amd64"})
                .to_string(),
            ),
            "/apis/batch/v1/jobs" => (200, list("JobList", vec![job.clone()])),
            "/apis/batch/v1/cronjobs" => (200, list("CronJobList", vec![])),
            "/api/v1/pods" => (200, list("PartialObjectMetadataList", vec![])),
            _ => (404, "{}".to_string()),
        }
    });
    let args: Vec<String> = audit_container(cron_job)
        .args
        .iter()
        .flatten()
        .filter(|a| !["--apply", "--prune"].contains(&a.as_str()))
        .cloned()
        .collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jobgate"));
    cmd.args(&args).arg("--kubeconfig").arg(&kubeconfig);
    for (key, _) in std::env::vars() {
        if key.starts_with("JOBGATE_") {
            cmd.env_remove(key);
        }
    }
    let out = cmd.envs(env).output().expect("run jobgate audit");
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The CronJob's audit, in the environment kubelet gives it, judges the Job of
/// [`check_bad_annotation`] as `jobgate check` (the cluster's and /validate's verdict) does with
/// the settings serve reads: the same exit code, `expected`, and the same finding.
fn assert_audit_judges_as_serve(
    r: &Rendered,
    cron_job: &CronJob,
    serve_settings: &BTreeMap<String, String>,
    expected: i32,
) {
    let (audit, audit_out) = audit_bad_annotation(cron_job, &audit_environment(r, cron_job));
    let (check, check_out) = check_bad_annotation(serve_settings);
    assert_eq!(
        (audit, check),
        (expected, expected),
        "{}:\naudit: {audit_out}\ncheck: {check_out}",
        r.name
    );
    let finding = "must be \"true\" or \"false\"";
    assert_eq!(
        audit_out.contains(finding),
        check_out.contains(finding),
        "{}:\naudit: {audit_out}\ncheck: {check_out}",
        r.name
    );
    assert!(!audit_out.contains("deprecated"), "{audit_out}");
}

/// deploy/audit/cronjob built in one kustomization with the install (docs/src/audit.md): the
/// audit reads the generated jobgate-settings both containers read, as the components change it,
/// and judges as serve does: deny by default, warn with rollout-warn, nothing with policies-off.
#[test]
fn kustomize_audit_cron_job_judges_with_the_settings_serve_reads() {
    let kubectl = kubectl();
    for namespace in [NAMESPACE, OTHER_NAMESPACES[0]] {
        let ws = Workspace::in_namespace(namespace);
        for (components, expected) in [
            (&[][..], 1),
            (&["rollout-warn"][..], 0),
            (&["policies-off"][..], 0),
        ] {
            let dir = ws.overlay_of(&["overlays/cert-manager", "audit/cronjob"], components);
            let r = Rendered::in_namespace(
                &format!("cert-manager+audit/cronjob+{components:?}"),
                namespace,
                render(kubectl, &dir),
            );
            assert_no_default_namespace_unless(&r, namespace);
            let data = settings(&r);
            check_settings_are_read(&r, &data);
            let cron_job = check_audit(&r, "jobgate-audit");
            let generated = r.generated_config_map("jobgate-settings").metadata.name;
            assert_eq!(
                audit_config_maps(&cron_job),
                [(generated.unwrap_or_default(), true)],
                "{}",
                r.name
            );
            assert_audit_judges_as_serve(&r, &cron_job, &data, expected);
        }
    }
}

/// Applied alone (`kubectl apply -k deploy/audit/cronjob`), nothing names a settings ConfigMap
/// of the CronJob's: the reference is optional, and the audit judges with jobgate's defaults.
#[test]
fn kustomize_audit_cron_job_alone_judges_with_jobgates_defaults() {
    let kubectl = kubectl();
    let ws = Workspace::new();
    let r = Rendered::new(
        "audit/cronjob",
        render(kubectl, &ws.overlay("audit/cronjob")),
    );
    assert!(r.all::<ConfigMap>().is_empty());
    let cron_job = check_audit(&r, "jobgate-audit");
    assert_eq!(
        audit_config_maps(&cron_job),
        [("jobgate-settings".to_string(), true)]
    );
    assert_audit_judges_as_serve(&r, &cron_job, &BTreeMap::new(), 1);
}

/// The chart's audit CronJob reads the release's `<fullname>-settings`, the ConfigMap serve
/// reads (required: the chart always installs it), and judges as serve does with it.
#[test]
fn chart_audit_cron_job_judges_with_the_release_settings() {
    let every_policy_off = [
        "policies.recovery-annotation-value=off",
        "policies.recovery-annotation-on-job=off",
        "policies.recovery-needs-failed=off",
        "policies.recovery-counts-toward-backoff=off",
        "policies.indexed-terminating-or-failed=off",
    ];
    for (sets, expected) in [
        (vec![], 1),
        (vec!["rollout.warnOnly=true"], 0),
        (every_policy_off.to_vec(), 0),
        (
            vec![
                "policies.recovery-annotation-value=warn",
                "recoveryAnnotationKeys={example.com/recover}",
                "reconciler.dryRun=true",
                "reconciler.partitionBrake=false",
                "reconciler.kueueRecovers=false",
                "reconciler.recoveryLimit=3",
                "reconciler.onRecoveryLimit=suspend",
            ],
            0,
        ),
    ] {
        let mut sets = sets;
        sets.push("audit.enabled=true");
        let r = chart(OTHER_NAMESPACES[0], &sets);
        let cron_job = check_audit(&r, "jobgate-audit");
        assert_eq!(
            audit_config_maps(&cron_job),
            [("jobgate-settings".to_string(), false)],
            "{}",
            r.name
        );
        let data = r
            .one::<ConfigMap>("jobgate-settings")
            .data
            .unwrap_or_default();
        check_settings_are_read(&r, &data);
        assert_audit_judges_as_serve(&r, &cron_job, &data, expected);
    }
}
