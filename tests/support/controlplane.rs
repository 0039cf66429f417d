//! A real Kubernetes control plane for the tests: etcd, kube-apiserver and kube-controller-manager
//! built from upstream's Go modules by `tests/controlplane/build` (pinned per minor in
//! `tests/controlplane/versions/`) and started on loopback by its `up` command, as envtest does
//! for Go projects. One control plane serves a test binary; its tests use namespaces of their own.
//!
//! A missing binary fails the test and says how to build it: `tests/run` (the README's test
//! command) builds what the tests need before `cargo test`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The minor the tests run against unless `JOBGATE_TEST_KUBERNETES` names another: the newest
/// release whose code the Go module proxy serves as a release.
const NEWEST: &str = "1.37";

/// The kubectl the tests drive the control plane with.
const KUBECTL: &str = "kubectl-1.37";

/// A running control plane.
pub struct ControlPlane {
    /// The Kubernetes minor it runs, `1.37`.
    pub minor: String,
    /// Certificates, logs (`logs/*.log`) and `kubeconfig`.
    pub dir: PathBuf,
    /// The administrator's kubeconfig (`system:masters`).
    pub kubeconfig: PathBuf,
    child: Mutex<Option<(Child, ChildStdin)>>,
    namespaces: AtomicUsize,
}

/// The repository's root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `target/controlplane/MINOR/NAME`, or a failure that says how to build it.
pub fn binary(minor: &str, name: &str) -> PathBuf {
    let path = repo().join("target/controlplane").join(minor).join(name);
    assert!(
        path.is_file(),
        "{} is not built: the tests against the real Kubernetes {minor} need it. Run tests/run \
         (the README's test command: it builds what the tests need, then runs cargo test), or \
         `tests/controlplane/build {minor}` (needs Go)",
        path.display()
    );
    path
}

/// The minor under test: `JOBGATE_TEST_KUBERNETES`, else [`NEWEST`].
pub fn minor_under_test() -> String {
    std::env::var("JOBGATE_TEST_KUBERNETES").unwrap_or_else(|_| NEWEST.to_string())
}

/// The minors whose control planes tests/run builds (`JOBGATE_TEST_CONTROL_PLANES`, default
/// `1.37 1.36 1.33`), for the tests that run on each.
pub fn control_plane_minors() -> Vec<String> {
    std::env::var("JOBGATE_TEST_CONTROL_PLANES")
        .unwrap_or_else(|_| "1.37 1.36 1.33".to_string())
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

impl ControlPlane {
    /// The control plane of this test binary, started on first use with the default controllers.
    pub fn shared() -> &'static ControlPlane {
        static SHARED: OnceLock<ControlPlane> = OnceLock::new();
        SHARED.get_or_init(|| ControlPlane::start(&minor_under_test(), &[]))
    }

    /// Starts a control plane of `minor` with extra `controlplane up` flags and waits until every
    /// component is ready. It stops when this value is dropped, or when the test process exits
    /// (its standard input closes).
    pub fn start(minor: &str, up_args: &[&str]) -> ControlPlane {
        let bin = binary(minor, "controlplane");
        let runs = repo().join("target/controlplane/runs");
        std::fs::create_dir_all(&runs).expect("create target/controlplane/runs");
        let dir = tempfile::Builder::new()
            .prefix(&format!("{minor}-"))
            .tempdir_in(&runs)
            .expect("run directory")
            .keep();
        let mut child = Command::new(&bin)
            .arg("up")
            .arg("--dir")
            .arg(&dir)
            .arg("--stdin")
            .args(up_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut kubeconfig = None;
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if let Some(path) = line.strip_prefix("kubeconfig: ") {
                kubeconfig = Some(PathBuf::from(path));
                break;
            }
        }
        let Some(kubeconfig) = kubeconfig else {
            let mut stderr = String::new();
            let _ = std::io::Read::read_to_string(
                &mut child.stderr.take().expect("stderr"),
                &mut stderr,
            );
            panic!(
                "the Kubernetes {minor} control plane did not start (logs in {}):\n{stderr}",
                dir.display()
            );
        };
        ControlPlane {
            minor: minor.to_string(),
            dir,
            kubeconfig,
            child: Mutex::new(Some((child, stdin))),
            namespaces: AtomicUsize::new(0),
        }
    }

    /// A control plane of `minor` with Kueue's manager beside it (`up --kueue`, as
    /// tests/controlplane/kueue starts it): Kueue's CRDs, its webhooks for Jobs and its own kinds
    /// (by url on 127.0.0.1), the batch/job integration, `FailureRecoveryPolicy` on. Its log is
    /// `logs/kueue.log` ([`ControlPlane::log_tail`]).
    pub fn with_kueue(minor: &str) -> ControlPlane {
        let kueue = repo().join("target/controlplane/kueue");
        assert!(
            kueue.join("kueue").is_file(),
            "{} is not built: the tests beside the real Kueue need it. Run tests/run (the \
             README's test command), or `tests/controlplane/build kueue` (needs Go)",
            kueue.join("kueue").display()
        );
        let kueue = kueue.display().to_string();
        ControlPlane::start(minor, &["--kueue", &kueue])
    }

    /// `kubectl-1.37 --kubeconfig …`: the newest control plane's own client (kubectl's skew
    /// policy is one minor), which tests/run installs under target/tools/bin.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(KUBECTL);
        cmd.arg("--kubeconfig").arg(&self.kubeconfig);
        cmd
    }

    /// Runs kubectl with `args` (and `stdin`, when given) and returns its output, whatever its
    /// exit status.
    pub fn kubectl_output(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = self.kubectl();
        cmd.args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| {
            panic!("cannot run {KUBECTL} ({e}): tests/run installs it under target/tools/bin")
        });
        if let Some(text) = stdin {
            use std::io::Write;
            let mut pipe = child.stdin.take().expect("kubectl stdin");
            pipe.write_all(text.as_bytes())
                .expect("write kubectl stdin");
        }
        child.wait_with_output().expect("kubectl output")
    }

    /// Runs kubectl and returns its standard output; fails the test when kubectl fails.
    pub fn kubectl_ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl_output(args, stdin);
        assert!(
            out.status.success(),
            "kubectl {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stdout).expect("UTF-8 kubectl output")
    }

    /// A new namespace whose name starts with `prefix`.
    pub fn namespace(&self, prefix: &str) -> String {
        let n = self.namespaces.fetch_add(1, Ordering::SeqCst);
        let name = format!("{prefix}-{n}");
        self.kubectl_ok(&["create", "namespace", &name], None);
        name
    }

    /// A kube-rs client for the administrator.
    pub async fn client(&self) -> kube::Client {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("client configuration");
        kube::Client::try_from(config).expect("client")
    }

    /// Installs a CRD that tests/run fetched into `target/crds/` (from its project's own
    /// module) and waits until the apiserver serves it.
    pub fn install_crd(&self, file: &str) {
        let path = repo().join("target/crds").join(file);
        assert!(
            path.is_file(),
            "{} is missing: tests/run fetches it",
            path.display()
        );
        let path = path.display().to_string();
        self.kubectl_ok(&["apply", "--server-side", "-f", &path], None);
        // `kubectl wait` fails at once, instead of waiting, while the CRD has no conditions yet.
        eventually("the CRD to be Established", Duration::from_secs(60), || {
            let args = [
                "wait",
                "--for=condition=Established",
                "--timeout=10s",
                "-f",
                &path,
            ];
            self.kubectl_output(&args, None)
                .status
                .success()
                .then_some(())
        });
    }

    /// Runs a kubectl invocation that must succeed and prints JSON, and returns what it printed
    /// to standard error with the parsed output (`-o json` is the caller's).
    pub fn kubectl_json(&self, args: &[&str], stdin: Option<&str>) -> (serde_json::Value, String) {
        let out = self.kubectl_output(args, stdin);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "kubectl {}: {stderr}", args.join(" "));
        let value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("kubectl {}: not JSON ({e})", args.join(" ")));
        (value, stderr)
    }

    /// kube-apiserver's URL, as the kubeconfig names it.
    pub fn server(&self) -> String {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig");
        kubeconfig
            .clusters
            .first()
            .and_then(|c| c.cluster.as_ref())
            .and_then(|c| c.server.clone())
            .expect("the kubeconfig names a server")
    }

    /// The file of the control plane's CA, which kube-apiserver's serving certificate chains to.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("pki/ca.crt")
    }

    /// The PEM of the control plane's CA (which also signs the administrator's certificate).
    pub fn ca_pem(&self) -> String {
        std::fs::read_to_string(self.dir.join("pki/ca.crt")).expect("ca.crt")
    }

    /// The end of a component's log (`etcd`, `kube-apiserver`, `kube-controller-manager`,
    /// `kueue`), for a failure message.
    pub fn log_tail(&self, component: &str, lines: usize) -> String {
        let text = std::fs::read_to_string(self.dir.join("logs").join(format!("{component}.log")))
            .unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.child.lock().ok().and_then(|mut c| c.take()) {
            drop(stdin);
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A directory holding `kubectl` (a link to [`KUBECTL`]), to put first on PATH when a test runs
/// the docs' commands as written.
pub fn kubectl_shim() -> PathBuf {
    let bin = repo().join("target/controlplane/runs/bin");
    std::fs::create_dir_all(&bin).expect("shim directory");
    let link = bin.join("kubectl");
    if !link.exists() {
        let _ = std::os::unix::fs::symlink(which(KUBECTL), &link);
    }
    bin
}

/// `name` found on PATH, or a failure that says tests/run installs it.
pub fn which(name: &str) -> PathBuf {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not on PATH: tests/run installs it"))
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Polls `check` every 200 ms until it returns `Some`, or fails after `within` saying `what`.
pub fn eventually<T>(what: &str, within: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A judge's message as jobgate can print it: 1.33 prints pointers inside composite values with
/// `%#v`, as their addresses (`(*int32)(0xc000123456)`), which differ from run to run; jobgate
/// prints `(*int32)(<pointer>)`.
pub fn without_addresses(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(")(0x") {
        let (head, tail) = rest.split_at(at + 2);
        let digits = tail[2..]
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(tail.len() - 2);
        out.push_str(head);
        if tail[2 + digits..].starts_with(')') && digits > 0 {
            out.push_str("<pointer>");
            rest = &tail[2 + digits..];
        } else {
            out.push_str("0x");
            rest = &tail[2..];
        }
    }
    out.push_str(rest);
    out
}
