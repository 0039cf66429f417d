//! `jobgate status` as an operator runs it: a cluster it cannot read is one clear line that
//! names the API server, and a 403 is said as kubectl says it, with the RBAC that grants the
//! reads. What it prints for a readable cluster is tested in src/status/tests.rs.

use std::process::Command;

use support::api_server::{fake_api_server, kubeconfig_for};

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod api_server;
}

fn status(kubeconfig: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args([
            "status",
            "--kubeconfig",
            kubeconfig.to_str().expect("UTF-8 path"),
        ])
        .output()
        .expect("run jobgate")
}

#[test]
fn an_unreachable_api_server_is_named_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let (_dir, kubeconfig) = kubeconfig_for(port);
    let out = status(&kubeconfig);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "jobgate status: cannot read from the Kubernetes API at http://127.0.0.1:{port}/: "
        )),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_forbidden_read_is_said_as_kubectl_says_it_with_the_rbac_that_grants_it() {
    let message = r#"jobs.batch is forbidden: User "alice" cannot list resource "jobs" in API group "batch" in the namespace "default""#;
    let forbidden = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": "Forbidden",
        "details": {"group": "batch", "kind": "jobs"}, "code": 403})
    .to_string();
    let (_dir, kubeconfig, _) = fake_api_server(move |_, _| (403, forbidden.clone()));
    let out = status(&kubeconfig);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().next().unwrap_or("");
    assert!(
        first.starts_with(
            "jobgate status: cannot read from the Kubernetes API at http://127.0.0.1:"
        ) && first.ends_with(&format!(": Error from server (Forbidden): {message}")),
        "{stderr}"
    );
    assert!(
        stderr.lines().nth(1).is_some_and(
            |l| l.starts_with("hint: ") && l.contains("jobgate status needs list on jobs")
        ),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
}
