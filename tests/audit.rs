//! `jobgate audit` as a user runs it: its help names the outputs, its read-only ClusterRole
//! (deploy/audit) grants exactly the calls it makes, and an unreachable API server is a clear
//! error, not a hang. The verdicts themselves are tested against scripted API responses in
//! src/audit/tests.rs.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

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
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: down\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             contexts:\n- name: down\n  context:\n    cluster: down\n    user: nobody\n\
             current-context: down\nusers:\n- name: nobody\n  user: {{}}\n"
        ),
    )
    .expect("kubeconfig");
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

/// A plain-HTTP stand-in for kube-apiserver: answers each request with `answer(path)` (status
/// line code and JSON body), one request per connection. Returns its kubeconfig's directory.
fn fake_api_server(
    answer: impl Fn(&str) -> (u16, String) + Send + 'static,
) -> (tempfile::TempDir, PathBuf) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header == "\r\n" => break,
                    Ok(_) => {}
                }
            }
            let path = request_line.split_whitespace().nth(1).unwrap_or("/");
            let (code, body) = answer(path);
            let _ = write!(
                stream,
                "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: alice\n\
             current-context: fake\nusers:\n- name: alice\n  user: {{}}\n"
        ),
    )
    .expect("kubeconfig");
    (dir, kubeconfig)
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
    let (_dir, kubeconfig) = fake_api_server(move |path| {
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
        let (_dir, kubeconfig) = fake_api_server(move |path| {
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
    // A release jobgate has no rules for: the nearest, with a note.
    let out = run("v1.40.0", &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("judging with 1.37's"),
        "{out:?}"
    );
}

#[test]
fn the_audit_cluster_role_grants_exactly_the_calls_audit_makes() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/audit");
    let out = match Command::new("kubectl").arg("kustomize").arg(&dir).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("SKIPPED: kubectl not found on PATH; deploy/audit is not rendered");
            return;
        }
        Err(e) => panic!("cannot run kubectl: {e}"),
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs: Vec<Value> =
        serde_yaml_ng::Deserializer::from_str(std::str::from_utf8(&out.stdout).expect("UTF-8"))
            .map(|d| serde::Deserialize::deserialize(d).expect("YAML document"))
            .collect();
    assert_eq!(docs.len(), 1, "only the ClusterRole: {docs:?}");
    let role = &docs[0];
    assert_eq!(role["kind"], "ClusterRole");
    assert_eq!(role["metadata"]["name"], "jobgate-audit");
    let mut granted = BTreeSet::new();
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
    let needed: BTreeSet<(String, String, String)> = jobgate::audit::RBAC
        .iter()
        .flat_map(|(g, r, verbs)| {
            verbs
                .iter()
                .map(move |v| (g.to_string(), r.to_string(), v.to_string()))
        })
        .collect();
    assert_eq!(granted, needed);
}
