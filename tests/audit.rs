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
    assert!(
        stderr.contains("jobgate: cannot list from the Kubernetes API"),
        "{stderr}"
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
