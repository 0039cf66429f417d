//! Kueue's manager beside jobgate, on the same cluster (`KUEUE=1`): started after jobgate's idle
//! minute by `tests/controlplane/kueue` (its CRDs, its webhooks by url, the batch/job integration,
//! feature gate FailureRecoveryPolicy on), and measured the same way: `/proc` for its memory and
//! CPU, kube-apiserver's `apiserver_request_total` for its requests. Its writes per recovered pod
//! are not counted: Kueue 0.17's manager exports no client-go request metrics
//! (`rest_client_requests_total`), and kube-apiserver's counts do not say who asked.
//!
//! Kueue 0.17's failure-recovery controller reads `kueue.x-k8s.io/safe-to-forcefully-delete`
//! (`constants.SafeToForcefullyDeleteAnnotationKey`), jobgate's reconciler leaves those pods to it
//! (`--kueue-recovers`, on by default), and the fill gives that key to its own share of the pods:
//! the two recover disjoint pods of the same Jobs, nodes and partitions. Kueue's threshold is a
//! fixed minute after the pod's `deletionTimestamp`
//! (`pkg/controller/failurerecovery/pod_termination_controller.go`, `defaultOptions`).

use std::path::{Path, PathBuf};

/// The annotation Kueue 0.17 reads.
pub(crate) const OPT_IN_KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-delete";
/// Kueue's `forcefulTerminationGracePeriod`, not configurable in 0.17.
pub(crate) const THRESHOLD_SECONDS: u64 = 60;

pub(crate) struct Kueue {
    pub(crate) pid: u32,
}

/// The control plane's directory: the kubeconfig's (`target/controlplane/dev/MINOR/kubeconfig`).
fn plane_dir() -> PathBuf {
    let kubeconfig = std::env::var("KUBECONFIG")
        .expect("KUBECONFIG=target/controlplane/dev/MINOR/kubeconfig (tests/controlplane/start)");
    Path::new(&kubeconfig)
        .parent()
        .expect("the kubeconfig's directory")
        .to_path_buf()
}

/// Starts Kueue's manager beside the running control plane and returns once it is ready.
pub(crate) fn start() -> Kueue {
    let dir = plane_dir();
    let minor = dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a MINOR directory")
        .to_string();
    let status = std::process::Command::new("tests/controlplane/kueue")
        .arg(&minor)
        .status()
        .expect("tests/controlplane/kueue");
    assert!(status.success(), "tests/controlplane/kueue {minor} failed");
    Kueue {
        pid: manager_pid(&dir.join("kueue/config.yaml")),
    }
}

/// The manager's process: the one started with `--config=<config>`.
fn manager_pid(config: &Path) -> u32 {
    let flag = format!("--config={}", config.display());
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == flag.as_bytes()))
        })
        .expect("Kueue's manager process")
}
