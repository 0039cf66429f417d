//! The promises every install of jobgate keeps, kustomize or chart, in any namespace, checked on
//! a rendering: webhook paths the server serves, system namespaces never intercepted, no Job
//! mutated twice, least-privilege RBAC, no credential in the webhook container, certificates
//! wired to the webhook configurations.

use std::collections::{BTreeMap, BTreeSet};

use jobgate::admission::Endpoint;
use jobgate::certs;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::certificate::verifies_for;
use super::install::{NAMESPACE_NAME_LABEL, RECOVERY_LABEL, Rendered, Workspace, str_at};

/// (API group, resource, verbs) the reconciler's API calls need, as the reconciler declares them
/// next to the calls. Resources in [`NAMESPACED_RESOURCES`] must be granted by the Role in
/// jobgate-system, everything else by the ClusterRole.
const RECONCILER_RBAC: &[(&str, &str, &[&str])] = jobgate::reconciler::RBAC;

/// (API group, resource) granted only in jobgate's own namespace.
const NAMESPACED_RESOURCES: &[(&str, &str)] = &[("coordination.k8s.io", "leases")];

// ---------------------------------------------------------------------------------------------
// Label selectors, evaluated as kube-apiserver does for a webhook's namespaceSelector
// (k8s.io/apimachinery/pkg/apis/meta/v1.LabelSelectorAsSelector: matchLabels AND every
// matchExpression; NotIn and DoesNotExist match a missing label).

/// Whether `selector` matches a namespace with `labels`.
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<&str, &str>) -> bool {
    let labels_ok = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k.as_str()) == Some(&v.as_str()));
    let expressions_ok = selector.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(e.key.as_str());
        let values: Vec<&str> = e.values.iter().flatten().map(String::as_str).collect();
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            other => panic!("unknown selector operator {other}"),
        }
    });
    labels_ok && expressions_ok
}

/// True when no label set can match both selectors: some key is required to have a value in
/// `In` by one and forbidden those values by the other (`NotIn` ⊇ them, or `DoesNotExist`).
pub fn selectors_disjoint(a: &LabelSelector, b: &LabelSelector) -> bool {
    let required = |s: &LabelSelector| -> Vec<(String, BTreeSet<String>)> {
        let mut out: Vec<(String, BTreeSet<String>)> = s
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), BTreeSet::from([v.clone()])))
            .collect();
        out.extend(
            s.match_expressions
                .iter()
                .flatten()
                .filter(|e| e.operator == "In")
                .map(|e| (e.key.clone(), e.values.iter().flatten().cloned().collect())),
        );
        out
    };
    let forbids = |s: &LabelSelector, key: &str, values: &BTreeSet<String>| {
        s.match_expressions.iter().flatten().any(|e| {
            e.key == key
                && (e.operator == "DoesNotExist"
                    || (e.operator == "NotIn"
                        && values.is_subset(&e.values.iter().flatten().cloned().collect())))
        })
    };
    required(a).iter().any(|(k, vs)| forbids(b, k, vs))
        || required(b).iter().any(|(k, vs)| forbids(a, k, vs))
}

fn namespace_labels<'a>(name: &'a str, extra: &[(&'a str, &'a str)]) -> BTreeMap<&'a str, &'a str> {
    let mut labels = BTreeMap::from([(NAMESPACE_NAME_LABEL, name)]);
    labels.extend(extra.iter().copied());
    labels
}

// ---------------------------------------------------------------------------------------------
// Webhook configurations.

/// (resource, operation) pairs a webhook's rules intercept, all required to be batch/v1,
/// Namespaced.
fn intercepted(rules: &[RuleWithOperations]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for rule in rules {
        assert_eq!(rule.api_groups.as_deref(), Some(&["batch".to_string()][..]));
        assert_eq!(rule.api_versions.as_deref(), Some(&["v1".to_string()][..]));
        assert_eq!(rule.scope.as_deref(), Some("Namespaced"));
        for resource in rule.resources.iter().flatten() {
            for op in rule.operations.iter().flatten() {
                out.insert((resource.clone(), op.clone()));
            }
        }
    }
    out
}

fn pairs(list: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Fields every entry shares, mutating or validating.
#[allow(clippy::too_many_arguments)]
fn check_common(
    overlay: &str,
    namespace: &str,
    service_name: &str,
    name: &str,
    versions: &[String],
    side_effects: &str,
    timeout: Option<i32>,
    match_policy: Option<&str>,
    client: &WebhookClientConfig,
) -> String {
    assert_eq!(
        versions,
        ["v1"],
        "{overlay} {name}: admissionReviewVersions"
    );
    assert_eq!(side_effects, "None", "{overlay} {name}: sideEffects");
    assert_eq!(timeout, Some(5), "{overlay} {name}: timeoutSeconds");
    assert_eq!(
        match_policy,
        Some("Equivalent"),
        "{overlay} {name}: matchPolicy"
    );
    assert_eq!(client.url, None, "{overlay} {name}: a Service, not a URL");
    let service = client.service.as_ref().expect("clientConfig.service");
    assert_eq!(service.name, service_name, "{overlay} {name}");
    assert_eq!(service.namespace, namespace, "{overlay} {name}");
    assert_eq!(service.port, Some(443), "{overlay} {name}");
    let path = service.path.clone().unwrap_or_default();
    assert!(
        Endpoint::ALL.iter().any(|e| e.path() == path),
        "{overlay} {name}: path {path} is not served (admission::Endpoint::ALL)"
    );
    path
}

/// The webhooks of the install's MutatingWebhookConfiguration.
pub fn mutating_webhooks(r: &Rendered) -> Vec<MutatingWebhook> {
    r.one::<MutatingWebhookConfiguration>(&r.fullname)
        .webhooks
        .unwrap_or_default()
}

/// The webhooks of the install's ValidatingWebhookConfiguration.
pub fn validating_webhooks(r: &Rendered) -> Vec<ValidatingWebhook> {
    r.one::<ValidatingWebhookConfiguration>(&r.fullname)
        .webhooks
        .unwrap_or_default()
}

/// The webhook configurations: the names, paths and settings of every entry, and which
/// namespaces each entry sees (never kube-system or jobgate's own; no Job mutated twice).
pub fn check_webhook_configurations(r: &Rendered) {
    let overlay = r.name.as_str();
    let mutating = mutating_webhooks(r);
    let validating = validating_webhooks(r);
    let names: Vec<&str> = mutating.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, certs::MUTATING_WEBHOOK_NAMES, "{overlay}");
    let names: Vec<&str> = validating.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, certs::VALIDATING_WEBHOOK_NAMES, "{overlay}");

    let mut paths = BTreeSet::new();
    let mutate_rules = pairs(&[
        ("jobs", "CREATE"),
        ("cronjobs", "CREATE"),
        ("cronjobs", "UPDATE"),
    ]);
    for w in &mutating {
        let path = check_common(
            overlay,
            &r.namespace,
            &r.fullname,
            &w.name,
            &w.admission_review_versions,
            &w.side_effects,
            w.timeout_seconds,
            w.match_policy.as_deref(),
            &w.client_config,
        );
        paths.insert(path);
        // Mutation is best effort: jobgate down must not stop Jobs from being created.
        assert_eq!(
            w.failure_policy.as_deref(),
            Some("Ignore"),
            "{overlay} {}",
            w.name
        );
        // Another mutating webhook changing the Job after jobgate gets jobgate's defaults again.
        assert_eq!(
            w.reinvocation_policy.as_deref(),
            Some("IfNeeded"),
            "{overlay} {}",
            w.name
        );
        assert_eq!(
            intercepted(w.rules.as_deref().unwrap_or_default()),
            mutate_rules,
            "{overlay} {}",
            w.name
        );
        assert_eq!(w.object_selector, None, "{overlay} {}", w.name);
    }
    let validate_rules = pairs(&[
        ("jobs", "CREATE"),
        ("jobs", "UPDATE"),
        ("cronjobs", "CREATE"),
        ("cronjobs", "UPDATE"),
    ]);
    for w in &validating {
        let path = check_common(
            overlay,
            &r.namespace,
            &r.fullname,
            &w.name,
            &w.admission_review_versions,
            &w.side_effects,
            w.timeout_seconds,
            w.match_policy.as_deref(),
            &w.client_config,
        );
        paths.insert(path);
        assert_eq!(
            w.failure_policy.as_deref(),
            Some("Fail"),
            "{overlay} {}",
            w.name
        );
        assert_eq!(
            intercepted(w.rules.as_deref().unwrap_or_default()),
            validate_rules,
            "{overlay} {}",
            w.name
        );
    }
    let served: BTreeSet<String> = Endpoint::ALL.iter().map(|e| e.path().to_string()).collect();
    assert_eq!(paths, served, "{overlay}: every endpoint registered once");
    assert_eq!(
        mutating[0]
            .client_config
            .service
            .as_ref()
            .and_then(|s| s.path.as_deref()),
        Some(Endpoint::Mutate.path())
    );
    assert_eq!(
        mutating[1]
            .client_config
            .service
            .as_ref()
            .and_then(|s| s.path.as_deref()),
        Some(Endpoint::MutateRecovery.path())
    );

    // Which entries see a Job, by namespace.
    let selector = |s: &Option<LabelSelector>| s.clone().expect("a namespaceSelector");
    let (mutate, recovery, validate) = (
        selector(&mutating[0].namespace_selector),
        selector(&mutating[1].namespace_selector),
        selector(&validating[0].namespace_selector),
    );
    let enabled = [(RECOVERY_LABEL, "enabled")];
    let own = r.namespace.as_str();
    let cases: [(&str, BTreeMap<&str, &str>, [bool; 3]); 7] = [
        (
            "kube-system",
            namespace_labels("kube-system", &[]),
            [false, false, false],
        ),
        (
            "kube-system opted in",
            namespace_labels("kube-system", &enabled),
            [false, false, false],
        ),
        (
            "jobgate's own namespace",
            namespace_labels(own, &[]),
            [false, false, false],
        ),
        (
            "jobgate's own namespace opted in",
            namespace_labels(own, &enabled),
            [false, false, false],
        ),
        (
            "default",
            namespace_labels("default", &[]),
            [true, false, true],
        ),
        (
            "team-a opted in",
            namespace_labels("team-a", &enabled),
            [false, true, true],
        ),
        (
            "team-b other value",
            namespace_labels("team-b", &[(RECOVERY_LABEL, "disabled")]),
            [true, false, true],
        ),
    ];
    for (case, labels, expected) in cases {
        let got = [
            selector_matches(&mutate, &labels),
            selector_matches(&recovery, &labels),
            selector_matches(&validate, &labels),
        ];
        assert_eq!(
            got, expected,
            "{overlay}: namespace {case}: [/mutate, /mutate/recovery, /validate]"
        );
    }
    // No Job is mutated twice, for any namespace: the two mutating selectors are disjoint.
    assert!(
        selectors_disjoint(&mutate, &recovery),
        "{overlay}: mutating selectors overlap"
    );
}

// ---------------------------------------------------------------------------------------------
// RBAC.

/// Every (API group, resource, verb) `rules` grant, refusing wildcards and `resourceNames`.
pub fn expand(rules: &[PolicyRule]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in rules {
        assert!(
            rule.resource_names.is_none(),
            "resourceNames would hide a verb: {rule:?}"
        );
        assert!(rule.non_resource_urls.is_none(), "{rule:?}");
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    assert_ne!(verb, "*", "no wildcard verbs");
                    assert_ne!(resource, "*", "no wildcard resources");
                    out.insert((group.clone(), resource.clone(), verb.clone()));
                }
            }
        }
    }
    out
}

/// `RECONCILER_RBAC` expanded, split into (cluster-wide, in jobgate-system).
#[allow(clippy::type_complexity)]
fn permissions() -> (
    BTreeSet<(String, String, String)>,
    BTreeSet<(String, String, String)>,
) {
    let (mut cluster, mut namespaced) = (BTreeSet::new(), BTreeSet::new());
    for (group, resource, verbs) in RECONCILER_RBAC {
        let target = if NAMESPACED_RESOURCES.contains(&(*group, *resource)) {
            &mut namespaced
        } else {
            &mut cluster
        };
        for verb in *verbs {
            target.insert((group.to_string(), resource.to_string(), verb.to_string()));
        }
    }
    (cluster, namespaced)
}

/// The ClusterRole and the Role grant exactly what the reconciler calls, to its ServiceAccount.
pub fn check_rbac(r: &Rendered) {
    let overlay = r.name.as_str();
    let cluster_roles = r.all::<ClusterRole>();
    assert_eq!(cluster_roles.len(), 1, "{overlay}: one ClusterRole");
    assert_eq!(
        expand(cluster_roles[0].rules.as_deref().unwrap_or_default()),
        permissions().0,
        "{overlay}: the ClusterRole grants exactly what the reconciler calls"
    );
    let roles = r.all::<Role>();
    assert_eq!(roles.len(), 1, "{overlay}: one Role");
    assert_eq!(roles[0].metadata.namespace, Some(r.namespace.clone()));
    assert_eq!(
        expand(roles[0].rules.as_deref().unwrap_or_default()),
        permissions().1,
        "{overlay}: the Role is leader election only"
    );
    // Neither certificate mode needs Secret access: the certificate is a mounted volume.
    for doc in &r.docs {
        if str_at(doc, "/kind").ends_with("Role") {
            assert!(!doc.to_string().contains("secrets"), "{overlay}: {doc}");
        }
    }

    let sa = r.one::<ServiceAccount>(&r.fullname);
    assert_eq!(sa.metadata.namespace, Some(r.namespace.clone()));
    let subject_is_sa = |subjects: &Option<Vec<k8s_openapi::api::rbac::v1::Subject>>| {
        let subjects = subjects.clone().unwrap_or_default();
        subjects.len() == 1
            && subjects[0].kind == "ServiceAccount"
            && subjects[0].name == r.fullname
            && subjects[0].namespace.as_deref() == Some(r.namespace.as_str())
    };
    let crb = r.all::<ClusterRoleBinding>();
    assert_eq!(crb.len(), 1, "{overlay}");
    assert_eq!(crb[0].role_ref.kind, "ClusterRole");
    assert_eq!(
        Some(&crb[0].role_ref.name),
        cluster_roles[0].metadata.name.as_ref()
    );
    assert!(
        subject_is_sa(&crb[0].subjects),
        "{overlay}: {:?}",
        crb[0].subjects
    );
    let rb = r.all::<RoleBinding>();
    assert_eq!(rb.len(), 1, "{overlay}");
    assert_eq!(rb[0].metadata.namespace, Some(r.namespace.clone()));
    assert_eq!(rb[0].role_ref.kind, "Role");
    assert_eq!(Some(&rb[0].role_ref.name), roles[0].metadata.name.as_ref());
    assert!(
        subject_is_sa(&rb[0].subjects),
        "{overlay}: {:?}",
        rb[0].subjects
    );
}

// ---------------------------------------------------------------------------------------------
// Workload.

/// The container `name` of `containers`.
pub fn container<'a>(containers: &'a [Container], name: &str) -> &'a Container {
    containers
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("container {name}"))
}

/// The path and port of `c`'s `readiness` (or else liveness) HTTP probe.
pub fn http_probe(c: &Container, which: &str) -> (String, IntOrString) {
    let probe = match which {
        "readiness" => c.readiness_probe.as_ref(),
        _ => c.liveness_probe.as_ref(),
    }
    .unwrap_or_else(|| panic!("{}: {which} probe", c.name));
    let get = probe.http_get.as_ref().expect("httpGet probe");
    (get.path.clone().unwrap_or_default(), get.port.clone())
}

/// The number of `port` of `c`, looked up by name when it is one.
pub fn port_number(c: &Container, port: &IntOrString) -> i32 {
    match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(name) => {
            c.ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name))
                .unwrap_or_else(|| panic!("{}: port {name}", c.name))
                .container_port
        }
    }
}

/// The Deployment, its pod, the PodDisruptionBudget and the Service: the promises of the
/// workload (security contexts, probes, the name the serving certificate must carry).
pub fn check_workload(r: &Rendered) {
    let overlay = r.name.as_str();
    // The chart installs into the release namespace and creates none (`--create-namespace`), and
    // so does kustomize with components/existing-namespace.
    if !r.name.starts_with("chart") && !r.name.contains("existing-namespace") {
        let ns = r.one::<Namespace>(&r.namespace);
        let ns_labels = ns.metadata.labels.unwrap_or_default();
        assert_eq!(
            ns_labels
                .get("pod-security.kubernetes.io/enforce")
                .map(String::as_str),
            Some("restricted"),
            "{overlay}"
        );
    }

    let deployment = r.one::<Deployment>(&r.fullname);
    assert_eq!(deployment.metadata.namespace, Some(r.namespace.clone()));
    // k8s-openapi v1_37: `Deployment.spec` is required, no longer an `Option`.
    let spec = deployment.spec;
    assert_eq!(spec.replicas, Some(3), "{overlay}");
    let template_labels = spec
        .template
        .metadata
        .clone()
        .unwrap_or_default()
        .labels
        .unwrap_or_default();
    let template_labels: BTreeMap<&str, &str> = template_labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert!(
        selector_matches(&spec.selector, &template_labels),
        "{overlay}: Deployment selector"
    );
    let pod = spec.template.spec.expect("pod spec");
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some(r.fullname.as_str())
    );
    assert_eq!(
        pod.priority_class_name.as_deref(),
        Some("system-cluster-critical")
    );
    let pod_security = pod.security_context.clone().expect("pod securityContext");
    assert_eq!(pod_security.run_as_non_root, Some(true));
    assert_eq!(
        pod_security.seccomp_profile.map(|s| s.type_),
        Some("RuntimeDefault".to_string())
    );
    let anti = pod
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .expect("podAntiAffinity");
    let terms = anti
        .preferred_during_scheduling_ignored_during_execution
        .clone()
        .unwrap_or_default();
    assert!(
        terms.iter().any(
            |t| t.pod_affinity_term.topology_key == "kubernetes.io/hostname"
                && t.pod_affinity_term
                    .label_selector
                    .as_ref()
                    .is_some_and(|s| selector_matches(s, &template_labels))
        ),
        "{overlay}: anti-affinity by hostname against its own pods"
    );

    assert_eq!(
        pod.containers
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["serve", "reconcile"]
    );
    for c in &pod.containers {
        let sc = c
            .security_context
            .as_ref()
            .expect("container securityContext");
        assert_eq!(sc.allow_privilege_escalation, Some(false), "{}", c.name);
        assert_eq!(sc.read_only_root_filesystem, Some(true), "{}", c.name);
        assert_eq!(sc.run_as_non_root, Some(true), "{}", c.name);
        assert_eq!(
            sc.capabilities.as_ref().and_then(|caps| caps.drop.clone()),
            Some(vec!["ALL".to_string()]),
            "{}",
            c.name
        );
        assert_eq!(sc.privileged, None, "{}", c.name);
        let resources = c.resources.as_ref().expect("resources");
        for key in ["cpu", "memory"] {
            assert!(
                resources
                    .requests
                    .as_ref()
                    .is_some_and(|r| r.contains_key(key)),
                "{} requests.{key}",
                c.name
            );
            // The webhook has no CPU limit: CFS throttling would stall reviews that race a
            // 5 s timeout under failurePolicy Fail (deployment.yaml says why).
            let limited = !(c.name == "serve" && key == "cpu");
            assert_eq!(
                resources
                    .limits
                    .as_ref()
                    .is_some_and(|r| r.contains_key(key)),
                limited,
                "{} limits.{key}",
                c.name
            );
        }
        // Both from one image.
        assert_eq!(c.image, pod.containers[0].image);
        assert_eq!(
            c.image.as_deref(),
            Some(concat!(
                "ghcr.io/jobgate/jobgate:",
                env!("CARGO_PKG_VERSION")
            )),
            "{overlay}: the image of this release"
        );
    }

    let serve = container(&pod.containers, "serve");
    // serve knows the name kube-apiserver dials, <service>.<pod's namespace>.svc (kubelet expands
    // $(POD_NAMESPACE) from the variable before it), and is not Ready while its certificate
    // does not name it.
    let env: Vec<_> = serve.env.iter().flatten().collect();
    let position = |name: &str| env.iter().position(|e| e.name == name);
    let pod_namespace = position("POD_NAMESPACE").expect("serve has POD_NAMESPACE");
    assert_eq!(
        env[pod_namespace]
            .value_from
            .as_ref()
            .and_then(|v| v.field_ref.as_ref())
            .map(|f| f.field_path.as_str()),
        Some("metadata.namespace"),
        "{overlay}"
    );
    let server_name =
        position("JOBGATE_TLS_SERVER_NAME").expect("serve has JOBGATE_TLS_SERVER_NAME");
    assert!(pod_namespace < server_name, "{overlay}: defined before use");
    let dialed = env[server_name]
        .value
        .as_deref()
        .unwrap_or_default()
        .replace("$(POD_NAMESPACE)", &r.namespace);
    assert_eq!(
        dialed,
        format!("{}.{}.svc", r.fullname, r.namespace),
        "{overlay}"
    );
    let args = serve.args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("serve"));
    for expected in [
        "--tls-cert=/etc/jobgate/tls/tls.crt",
        "--tls-key=/etc/jobgate/tls/tls.key",
        "--addr=0.0.0.0:8443",
        "--admin-addr=0.0.0.0:8080",
    ] {
        assert!(
            args.iter().any(|a| a == expected),
            "serve args {args:?} lack {expected}"
        );
    }
    let (path, port) = http_probe(serve, "readiness");
    assert_eq!(
        (path.as_str(), port_number(serve, &port)),
        ("/readyz", 8080)
    );
    let (path, port) = http_probe(serve, "liveness");
    assert_eq!((path.as_str(), port_number(serve, &port)), ("/livez", 8080));
    let mount = serve
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == "/etc/jobgate/tls")
        .expect("the TLS Secret is mounted at /etc/jobgate/tls");
    // A subPath mount is never updated by kubelet: rotation would need a restart.
    assert_eq!(mount.sub_path, None);
    let volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount.name)
        .expect("the mounted volume");
    assert_eq!(
        volume
            .secret
            .as_ref()
            .and_then(|s| s.secret_name.as_deref()),
        Some(r.object("-tls").as_str())
    );

    let reconcile = container(&pod.containers, "reconcile");
    let args = reconcile.args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("reconcile"));
    assert!(
        args.iter().any(|a| a == "--admin-addr=0.0.0.0:8081"),
        "{args:?}"
    );
    let (path, port) = http_probe(reconcile, "liveness");
    assert_eq!(
        (path.as_str(), port_number(reconcile, &port)),
        ("/livez", 8081)
    );
    // The reconciler's readiness must not gate the webhook Service (see deployment.yaml).
    assert!(reconcile.readiness_probe.is_none());

    let pdb = r.one::<PodDisruptionBudget>(&r.fullname);
    let pdb_spec = pdb.spec.expect("pdb spec");
    assert_eq!(pdb_spec.max_unavailable, Some(IntOrString::Int(1)));
    assert_eq!(
        pdb_spec.unhealthy_pod_eviction_policy.as_deref(),
        Some("AlwaysAllow")
    );
    assert!(selector_matches(
        &pdb_spec.selector.expect("pdb selector"),
        &template_labels
    ));

    let service = r.one::<Service>(&r.fullname);
    assert_eq!(service.metadata.namespace, Some(r.namespace.clone()));
    let svc = service.spec.expect("service spec");
    let svc_selector: BTreeMap<&str, &str> = svc
        .selector
        .iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert!(!svc_selector.is_empty());
    assert!(
        svc_selector
            .iter()
            .all(|(k, v)| template_labels.get(k) == Some(v)),
        "{overlay}: Service selects the pods"
    );
    let ports = svc.ports.unwrap_or_default();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].port, 443);
    let target = ports[0].target_port.clone().expect("targetPort");
    assert_eq!(
        port_number(serve, &target),
        8443,
        "{overlay}: 443 -> serve's 8443"
    );
}

// ---------------------------------------------------------------------------------------------
// Certificates and credentials.

/// The cert-manager chain, named for the Service in `r.namespace`, injected into both webhook
/// configurations.
pub fn check_cert_manager(r: &Rendered) {
    let namespace = r.namespace.as_str();
    let selfsigned = r.cert_manager("Issuer", &r.object("-selfsigned"));
    assert!(
        selfsigned
            .pointer("/spec/selfSigned")
            .is_some_and(Value::is_object)
    );
    let ca = r.cert_manager("Certificate", &r.object("-ca"));
    assert_eq!(ca.pointer("/spec/isCA"), Some(&Value::Bool(true)));
    assert_eq!(str_at(ca, "/spec/issuerRef/kind"), "Issuer");
    assert_eq!(str_at(ca, "/spec/issuerRef/name"), r.object("-selfsigned"));
    let ca_issuer = r.cert_manager("Issuer", &r.object("-ca"));
    assert_eq!(
        str_at(ca_issuer, "/spec/ca/secretName"),
        str_at(ca, "/spec/secretName")
    );
    let serving = r.cert_manager("Certificate", &r.object("-serving"));
    assert_eq!(str_at(serving, "/spec/issuerRef/name"), r.object("-ca"));
    assert_eq!(str_at(serving, "/spec/secretName"), r.object("-tls"));
    let dns_names: Vec<&str> = serving
        .pointer("/spec/dnsNames")
        .and_then(Value::as_array)
        .expect("dnsNames")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(dns_names, certs::service_dns_names(&r.fullname, namespace));
    for doc in r
        .docs
        .iter()
        .filter(|d| str_at(d, "/apiVersion") == "cert-manager.io/v1")
    {
        assert_eq!(str_at(doc, "/metadata/namespace"), namespace, "{doc}");
    }

    let inject = format!("{namespace}/{}", r.object("-serving"));
    let annotation = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        meta.annotations
            .as_ref()
            .and_then(|a| a.get("cert-manager.io/inject-ca-from"))
            .cloned()
    };
    let m = r.one::<MutatingWebhookConfiguration>(&r.fullname);
    assert_eq!(annotation(&m.metadata), Some(inject.clone()));
    let v = r.one::<ValidatingWebhookConfiguration>(&r.fullname);
    assert_eq!(annotation(&v.metadata), Some(inject));
}

/// `jobgate certs --namespace <ns>` output in the Secret and every caBundle, and the serving
/// certificate valid for the name kube-apiserver dials, `<service>.<ns>.svc`.
pub fn check_self_signed(ws: &Workspace, r: &Rendered) {
    let ca = ws.certs_file(certs::CA_CERT_FILE);
    let mutating = mutating_webhooks(r);
    let validating = validating_webhooks(r);
    // The patch merges by name: a name missing from the base would add an entry instead.
    assert_eq!(mutating.len() + validating.len(), 3);
    for (name, bundle) in mutating
        .iter()
        .map(|w| (&w.name, &w.client_config.ca_bundle))
        .chain(
            validating
                .iter()
                .map(|w| (&w.name, &w.client_config.ca_bundle)),
        )
    {
        assert_eq!(
            bundle.as_ref().map(|b| &b.0),
            Some(&ca),
            "{name}: caBundle is ca.crt"
        );
    }
    let secret = r.one::<Secret>(&r.object("-tls"));
    assert_eq!(secret.metadata.namespace, Some(r.namespace.clone()));
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.unwrap_or_default();
    for file in [
        certs::TLS_CERT_FILE,
        certs::TLS_KEY_FILE,
        certs::CA_CERT_FILE,
    ] {
        assert_eq!(
            data.get(file).map(|b| &b.0),
            Some(&ws.certs_file(file)),
            "{file}"
        );
    }
    let (ca, tls) = (&data[certs::CA_CERT_FILE].0, &data[certs::TLS_CERT_FILE].0);
    let dialed = format!("{}.{}.svc", r.fullname, r.namespace);
    assert!(
        verifies_for(ca, tls, &dialed),
        "{}: the Secret's certificate is not valid for {dialed}",
        r.name
    );
}

/// The webhook server, reachable by anything in the cluster, holds no Kubernetes credential:
/// the pod does not automount the ServiceAccount token, and the projected token volume (what
/// kube-apiserver's ServiceAccount admission plugin would add, `TokenVolumeSource`) is mounted
/// into the reconcile container only, at the path in-cluster clients read.
pub fn check_least_privilege(r: &Rendered) {
    let overlay = r.name.as_str();
    let pod = r.pod_spec();
    assert_eq!(
        pod.automount_service_account_token,
        Some(false),
        "{overlay}: the pod automounts the ServiceAccount token into every container"
    );
    let token_volumes: Vec<&str> = pod
        .volumes
        .iter()
        .flatten()
        .filter(|v| {
            v.projected.as_ref().is_some_and(|p| {
                p.sources
                    .iter()
                    .flatten()
                    .any(|s| s.service_account_token.is_some())
            }) || v.secret.as_ref().is_some_and(|s| {
                s.secret_name
                    .as_deref()
                    .is_some_and(|n| n.contains("token"))
            })
        })
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(token_volumes, ["kube-api-access"], "{overlay}");
    let volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "kube-api-access")
        .and_then(|v| v.projected.clone())
        .expect("projected");
    let sources = volume.sources.unwrap_or_default();
    let token = sources
        .iter()
        .find_map(|s| s.service_account_token.clone())
        .expect("a serviceAccountToken source");
    assert_eq!(token.path, "token");
    // Bound, short-lived, refreshed by kubelet; no audience: kube-apiserver's own.
    assert_eq!(token.expiration_seconds, Some(3607));
    assert_eq!(token.audience, None);
    let config_map = sources
        .iter()
        .find_map(|s| s.config_map.clone())
        .expect("the cluster CA source");
    assert_eq!(config_map.name, "kube-root-ca.crt");
    let items = config_map.items.unwrap_or_default();
    assert_eq!(
        (items[0].key.as_str(), items[0].path.as_str()),
        ("ca.crt", "ca.crt")
    );
    let downward = sources
        .iter()
        .find_map(|s| s.downward_api.clone())
        .expect("the namespace source");
    let items = downward.items.unwrap_or_default();
    assert_eq!(items[0].path, "namespace");
    assert_eq!(
        items[0].field_ref.as_ref().map(|f| f.field_path.as_str()),
        Some("metadata.namespace")
    );
    for c in pod
        .containers
        .iter()
        .chain(pod.init_containers.iter().flatten())
    {
        let mounts: Vec<_> = c
            .volume_mounts
            .iter()
            .flatten()
            .filter(|m| m.name == "kube-api-access")
            .collect();
        if c.name == "reconcile" {
            assert_eq!(mounts.len(), 1, "{overlay}: reconcile mounts the token");
            assert_eq!(
                mounts[0].mount_path,
                "/var/run/secrets/kubernetes.io/serviceaccount"
            );
            assert_eq!(mounts[0].read_only, Some(true));
        } else {
            assert!(mounts.is_empty(), "{overlay}: {} holds the token", c.name);
        }
    }
    // The Lease lives where the pod runs, whatever the namespace.
    let reconcile = container(&pod.containers, "reconcile");
    let lease = reconcile
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "JOBGATE_LEASE_NAMESPACE")
        .and_then(|e| e.value_from.as_ref())
        .and_then(|v| v.field_ref.as_ref())
        .map(|f| f.field_path.clone());
    assert_eq!(lease.as_deref(), Some("metadata.namespace"), "{overlay}");
}

/// The only cert-manager object is the serving Certificate, issued by the ClusterIssuer
/// `corporate-ca` for the install's Service; the webhooks keep every promise.
pub fn check_issued_by_corporate_ca(r: &Rendered) {
    let serving_name = r.object("-serving");
    let cert_manager: Vec<(&str, &str)> = r
        .docs
        .iter()
        .filter(|d| str_at(d, "/apiVersion") == "cert-manager.io/v1")
        .map(|d| (str_at(d, "/kind"), str_at(d, "/metadata/name")))
        .collect();
    assert_eq!(cert_manager, [("Certificate", serving_name.as_str())]);
    let serving = r.cert_manager("Certificate", &serving_name);
    assert_eq!(str_at(serving, "/spec/issuerRef/kind"), "ClusterIssuer");
    assert_eq!(str_at(serving, "/spec/issuerRef/name"), "corporate-ca");
    assert_eq!(str_at(serving, "/spec/issuerRef/group"), "cert-manager.io");
    assert_eq!(
        serving["spec"]["dnsNames"],
        serde_json::json!(certs::service_dns_names(&r.fullname, &r.namespace))
    );
    check_webhook_configurations(r);
}
