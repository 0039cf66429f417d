//! `jobgate audit` as a user runs it: its help names the outputs, its read-only ClusterRole
//! (deploy/audit) grants exactly the calls it makes, and an unreachable API server is a clear
//! error, not a hang. The verdicts themselves are tested against scripted API responses in
//! src/audit/tests.rs.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::api_server::{fake_api_server, kubeconfig_for};

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod api_server;
}

fn jobgate(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args(args)
        .output()
        .expect("run jobgate")
}

#[test]
fn help_documents_the_three_outputs_and_the_namespace() {
    let out = jobgate(&["audit", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "--namespace <NAMESPACE>",
        "--output <OUTPUT>",
        "text",
        "json",
        "policyreport",
        "wgpolicyk8s.io/v1alpha2",
        "--policy",
        "--kubeconfig",
    ] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
}

#[test]
fn an_unreachable_api_server_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let (_dir, kubeconfig) = kubeconfig_for(port);
    let started = Instant::now();
    let out = jobgate(&[
        "audit",
        "--kubeconfig",
        kubeconfig.to_str().expect("UTF-8 path"),
    ]);
    assert!(started.elapsed() < Duration::from_secs(60));
    // 1 would mean "something would be denied".
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Said once, naming the server.
    assert!(
        stderr.starts_with(&format!(
            "jobgate audit: cannot read the Kubernetes version from http://127.0.0.1:{port}/: "
        )),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

fn version(git_version: &str) -> String {
    serde_json::json!({"major": "1", "minor": "33", "gitVersion": git_version, "gitCommit": "x",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24",
        "compiler": "gc", "platform": "linux/amd64"})
    .to_string()
}

/// kubectl's sentence for a 403, once, with the server, and the ClusterRole that grants the
/// calls.
#[test]
fn a_forbidden_list_is_said_as_kubectl_says_it_with_the_rbac_that_grants_it() {
    let message = r#"jobs.batch is forbidden: User "alice" cannot list resource "jobs" in API group "batch" at the cluster scope"#;
    let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": "Forbidden",
        "details": {"group": "batch", "kind": "jobs"}, "code": 403})
    .to_string();
    let (_dir, kubeconfig, _) = fake_api_server(move |_, path| {
        if path == "/version" {
            (200, version("v1.35.2"))
        } else {
            (403, status.clone())
        }
    });
    let out = jobgate(&["audit", "--kubeconfig", kubeconfig.to_str().expect("UTF-8")]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let server = stderr
        .split("at ")
        .nth(1)
        .and_then(|s| s.split(": ").next())
        .unwrap_or("");
    assert!(server.starts_with("http://127.0.0.1:"), "{stderr}");
    assert_eq!(
        stderr.lines().next(),
        Some(
            format!(
                "jobgate audit: cannot list from the Kubernetes API at {server}: Error from server (Forbidden): {message}"
            )
            .as_str()
        )
    );
    assert!(
        stderr.lines().nth(1).is_some_and(|l| l.starts_with(
            "hint: the ClusterRole jobgate-audit (kubectl apply -k deploy/audit) grants"
        )),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
}

/// Without --kubernetes-version the rules are the cluster's own release (`GET /version`): a
/// CronJob whose onPodConditions entry has no status is denied by 1.33's rules only
/// (kubernetes#131525).
#[test]
fn the_rules_follow_the_version_the_cluster_reports() {
    let cron_job = serde_json::json!({"metadata": {"name": "nightly", "namespace": "ml", "uid": "u1"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {
            "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}}});
    let run = |git_version: &'static str, extra: &[&str]| {
        let cron_job = cron_job.clone();
        let (_dir, kubeconfig, _) = fake_api_server(move |_, path| {
            let list = |kind: &str, items: Vec<Value>| {
                serde_json::json!({"apiVersion": "v1", "kind": kind, "metadata": {}, "items": items})
                    .to_string()
            };
            match path.split('?').next().unwrap_or("") {
                "/version" => (200, version(git_version)),
                "/apis/batch/v1/cronjobs" => (200, list("CronJobList", vec![cron_job.clone()])),
                "/apis/batch/v1/jobs" => (200, list("JobList", vec![])),
                "/api/v1/pods" => (200, list("PartialObjectMetadataList", vec![])),
                _ => (404, "{}".to_string()),
            }
        });
        let mut args = vec!["audit", "--kubeconfig", kubeconfig.to_str().expect("UTF-8")];
        args.extend_from_slice(extra);
        jobgate(&args)
    };
    let out = run("v1.33.4+k3s1", &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("onPodConditions[0].status: Required value"),
        "{out:?}"
    );
    assert_eq!(run("v1.35.2", &[]).status.code(), Some(0));
    // Told otherwise, the flag wins.
    assert_eq!(
        run("v1.35.2", &["--kubernetes-version", "1.33"])
            .status
            .code(),
        Some(1)
    );
    // A release newer than jobgate knows: the newest rules, with a note said once.
    let out = run("v1.40.0", &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let note = "jobgate audit: Kubernetes 1.40 is newer than the releases jobgate knows (1.33 to \
                1.38): judging with 1.38's rules";
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).matches(note).count(),
        1,
        "{out:?}"
    );
}

/// `kubectl kustomize` of a directory under deploy/, as YAML documents.
fn render(dir: &str) -> Vec<Value> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run kubectl (tests/run installs it): {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_yaml_ng::Deserializer::from_str(std::str::from_utf8(&out.stdout).expect("UTF-8"))
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML document"))
        .collect()
}

/// (group, resource, verb) granted by the ClusterRoles among `docs`.
fn granted(docs: &[&Value]) -> BTreeSet<(String, String, String)> {
    let mut granted = BTreeSet::new();
    for role in docs {
        for rule in role["rules"].as_array().expect("rules") {
            for group in rule["apiGroups"].as_array().expect("apiGroups") {
                for resource in rule["resources"].as_array().expect("resources") {
                    for verb in rule["verbs"].as_array().expect("verbs") {
                        granted.insert((
                            group.as_str().expect("group").to_string(),
                            resource.as_str().expect("resource").to_string(),
                            verb.as_str().expect("verb").to_string(),
                        ));
                    }
                }
            }
        }
    }
    granted
}

fn needed(calls: &[&[(&str, &str, &[&str])]]) -> BTreeSet<(String, String, String)> {
    calls
        .iter()
        .flat_map(|c| c.iter())
        .flat_map(|(g, r, verbs)| {
            verbs
                .iter()
                .map(move |v| (g.to_string(), r.to_string(), v.to_string()))
        })
        .collect()
}

#[test]
fn the_audit_cluster_role_grants_exactly_the_calls_audit_makes() {
    let docs = render("deploy/audit");
    assert_eq!(docs.len(), 1, "only the ClusterRole: {docs:?}");
    let role = &docs[0];
    assert_eq!(role["kind"], "ClusterRole");
    assert_eq!(role["metadata"]["name"], "jobgate-audit");
    assert_eq!(granted(&[role]), needed(&[jobgate::audit::RBAC]));
}

/// deploy/audit/cronjob: `jobgate audit --apply --prune` on a schedule, as a ServiceAccount
/// bound to exactly the calls it makes (list, and the reports' apply and prune).
#[test]
fn the_audit_cron_job_runs_apply_and_prune_with_exactly_its_rbac() {
    let docs = render("deploy/audit/cronjob");
    let of = |kind: &str| -> Vec<&Value> { docs.iter().filter(|d| d["kind"] == kind).collect() };
    let cron_job = of("CronJob");
    assert_eq!(cron_job.len(), 1);
    let cron_job = cron_job[0];
    let namespace = cron_job["metadata"]["namespace"]
        .as_str()
        .expect("namespace");
    let pod = &cron_job["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let account = pod["serviceAccountName"]
        .as_str()
        .expect("serviceAccountName");
    let container = &pod["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(&args[..3], ["audit", "--apply", "--prune"]);
    // The image is the release's, as deploy/base names it.
    assert_eq!(
        container["image"],
        format!("ghcr.io/jobgate/jobgate:{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        of("ServiceAccount")
            .iter()
            .map(|a| (
                a["metadata"]["name"].as_str(),
                a["metadata"]["namespace"].as_str()
            ))
            .collect::<Vec<_>>(),
        [(Some(account), Some(namespace))]
    );
    let roles = of("ClusterRole");
    for binding in of("ClusterRoleBinding") {
        assert_eq!(
            binding["subjects"],
            serde_json::json!([{"kind": "ServiceAccount", "name": account, "namespace": namespace}])
        );
        assert!(
            roles
                .iter()
                .any(|r| r["metadata"]["name"] == binding["roleRef"]["name"]),
            "{binding}"
        );
    }
    assert_eq!(of("ClusterRoleBinding").len(), roles.len());
    assert_eq!(
        granted(&roles),
        needed(&[jobgate::audit::RBAC, jobgate::audit::APPLY_RBAC])
    );
}

/// `--apply --prune`: each namespace's report server-side applied with jobgate's field manager,
/// the stale report of a namespace without Jobs deleted, and findings leave the exit status 0
/// (they are in the reports).
#[test]
fn apply_writes_each_namespaces_report_and_prune_deletes_stale_ones() {
    let job = serde_json::json!({"metadata": {"name": "bad", "namespace": "ml", "uid": "u1"},
        "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}});
    let (_dir, kubeconfig, seen) = fake_api_server(move |method, path| {
        let list = |kind: &str, items: Vec<Value>| {
            serde_json::json!({"apiVersion": "v1", "kind": kind, "metadata": {}, "items": items})
                .to_string()
        };
        let report = |ns: &str| {
            serde_json::json!({"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
                "metadata": {"name": "jobgate-audit", "namespace": ns}})
        };
        match (method, path.split('?').next().unwrap_or("")) {
            ("GET", "/version") => (200, version("v1.35.2")),
            ("GET", "/apis/batch/v1/jobs") => (200, list("JobList", vec![job.clone()])),
            ("GET", "/apis/batch/v1/cronjobs") => (200, list("CronJobList", vec![])),
            ("GET", "/api/v1/pods") => (200, list("PartialObjectMetadataList", vec![])),
            (
                "PATCH",
                "/apis/wgpolicyk8s.io/v1alpha2/namespaces/ml/policyreports/jobgate-audit",
            ) => (200, report("ml").to_string()),
            ("GET", "/apis/wgpolicyk8s.io/v1alpha2/policyreports") => (
                200,
                list("PolicyReportList", vec![report("ml"), report("gone")]),
            ),
            (
                "DELETE",
                "/apis/wgpolicyk8s.io/v1alpha2/namespaces/gone/policyreports/jobgate-audit",
            ) => (
                200,
                serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})
                    .to_string(),
            ),
            _ => (404, "{}".to_string()),
        }
    });
    let out = jobgate(&[
        "audit",
        "--apply",
        "--prune",
        "--kubeconfig",
        kubeconfig.to_str().expect("UTF-8"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("jobgate audit: applied 1 PolicyReport(s) (ml), pruned 1 (gone)"),
        "{stderr}"
    );
    // The Job is reported (restartPolicy is required).
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("ml Job/bad: spec.template.spec.restartPolicy"),
        "{out:?}"
    );
    let seen = seen.lock().expect("record").clone();
    let writes: Vec<&String> = seen.iter().filter(|r| !r.starts_with("GET")).collect();
    assert_eq!(writes.len(), 2, "{seen:?}");
    assert!(
        writes[0].starts_with(
            "PATCH /apis/wgpolicyk8s.io/v1alpha2/namespaces/ml/policyreports/jobgate-audit?"
        ) && writes[0].contains("fieldManager=jobgate-audit")
            && writes[0].contains("force=true"),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(
            |r| r.starts_with("GET /apis/wgpolicyk8s.io/v1alpha2/policyreports?")
                && r.contains("labelSelector=app.kubernetes.io%2Fmanaged-by%3Djobgate")
        ),
        "{seen:?}"
    );
    assert_eq!(
        writes[1].split('?').next(),
        Some("DELETE /apis/wgpolicyk8s.io/v1alpha2/namespaces/gone/policyreports/jobgate-audit")
    );
}
