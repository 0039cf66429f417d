//! `jobgate reconcile` run against a control plane, read through its log and admin port.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;

use super::controlplane::ControlPlane;

/// `jobgate reconcile` against the control plane; stopped (SIGKILL) when dropped.
pub struct Reconciler {
    child: Child,
    /// Its admin address, `127.0.0.1:PORT`.
    pub admin: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Reconciler {
    /// Starts `jobgate reconcile` against `cp` with its Lease in `lease_namespace` and `extra`
    /// flags, on a free admin port.
    pub fn start(cp: &ControlPlane, lease_namespace: &str, extra: &[&str]) -> Reconciler {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let admin = format!("127.0.0.1:{port}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_jobgate"))
            .arg("reconcile")
            .arg("--kubeconfig")
            .arg(&cp.kubeconfig)
            .args(["--lease-namespace", lease_namespace, "--admin-addr", &admin])
            .args([
                "--forceful-termination-grace-period",
                "3s",
                "--log-format",
                "json",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start jobgate reconcile");
        let log = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    log.lock().expect("log").push(line);
                }
            });
        }
        Reconciler { child, admin, log }
    }

    /// Starts it and waits until its `/readyz` answers.
    pub async fn start_ready(
        cp: &ControlPlane,
        lease_namespace: &str,
        extra: &[&str],
    ) -> Reconciler {
        let reconciler = Reconciler::start(cp, lease_namespace, extra);
        until(
            "reconcile /readyz",
            Duration::from_secs(60),
            Some(&reconciler),
            || async { reconciler.ready().then_some(()) },
        )
        .await;
        reconciler
    }

    /// What it has logged so far, one line each.
    pub fn log(&self) -> String {
        self.log.lock().expect("log").join("\n")
    }

    /// One metric's value from the admin port (0 when absent).
    pub fn metric(&self, name: &str) -> f64 {
        let reply = super::serve::curl(&[&format!("http://{}/metrics", self.admin)]);
        reply
            .body
            .lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Whether its `/readyz` answers 200.
    pub fn ready(&self) -> bool {
        super::serve::curl(&[&format!("http://{}/readyz", self.admin)]).status == 200
    }
}

impl Reconciler {
    /// Kills it (SIGKILL), as a node loss would: nothing is released.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Reconciler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the pod carries the `KueueFailureRecovery=True` condition jobgate's recovery sets.
pub fn has_recovery_condition(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "KueueFailureRecovery" && c.status == "True")
        })
}

/// Polls `check` every 200 ms until it returns `Some`; on timeout fails with `what` and the log.
pub async fn until<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    within: Duration,
    reconciler: Option<&Reconciler>,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!(
                "timed out after {within:?} waiting for {what}; jobgate reconcile said:\n{}",
                reconciler.map(Reconciler::log).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
