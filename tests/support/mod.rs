//! Starting the real `jobgate` binary for integration tests, and talking to it with curl.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) mod api_server;
pub(crate) mod cases;
pub(crate) mod check_cli;
pub(crate) mod controlplane;
pub(crate) mod doc_shell;
pub(crate) mod generate;
pub(crate) mod judge;
pub(crate) mod keep_alive;
pub(crate) mod kubelet;
pub(crate) mod kustomize;
pub(crate) mod reconciler;
pub(crate) mod render;
pub(crate) mod webhooks;

pub(crate) struct Jobgate {
    pub child: Child,
    pub port: u16,
    pub admin_port: u16,
    pub dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub stdout_lines: Vec<String>,
    /// The last lines of the server's log (stderr).
    pub stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<std::thread::JoinHandle<()>>,
}

/// How many lines of a server's log `Jobgate::stderr_tail` keeps.
const STDERR_TAIL: usize = 200;

impl Jobgate {
    /// Starts `jobgate serve` in dev mode on free ports, in a temporary working directory.
    pub(crate) fn start(extra: &[&str]) -> Jobgate {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_jobgate"))
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--admin-addr",
                "127.0.0.1:0",
            ])
            .args(extra)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn jobgate");
        // Keep draining stderr (the log), so that a busy server never blocks on a full pipe;
        // its last lines are kept for failure messages.
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr = child.stderr.take().expect("stderr");
        let tail = stderr_tail.clone();
        let stderr_thread = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut tail = tail.lock().expect("stderr tail");
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = Vec::new();
        let (mut port, mut admin_port) = (0, 0);
        let mut reader = BufReader::new(stdout);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if let Some(rest) = line.strip_prefix("jobgate: serving webhooks on https://127.0.0.1:")
            {
                let (p, rest) = rest.split_once(' ').expect("port");
                port = p.parse().expect("port number");
                let a = rest
                    .trim()
                    .trim_start_matches("(admin http://127.0.0.1:")
                    .trim_end_matches(')');
                admin_port = a.parse().expect("admin port number");
            }
            lines.push(line.trim_end().to_string());
            if lines.iter().any(|l| l.starts_with("  curl ")) {
                break;
            }
        }
        assert!(
            port != 0,
            "jobgate did not report its port; stdout: {lines:?}"
        );
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in reader.lines() {});
        let ca = dir.path().join("certs/dev/ca.crt");
        Jobgate {
            child,
            port,
            admin_port,
            dir,
            ca,
            stdout_lines: lines,
            stderr_tail,
            stderr_thread: Some(stderr_thread),
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{}", self.port, path)
    }

    pub(crate) fn admin_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.admin_port, path)
    }

    /// The end of the server's log (its last 200 lines), once the server has exited (after
    /// `terminate`): every line it wrote is read by then.
    pub(crate) fn log_after_exit(&mut self) -> String {
        if let Some(drain) = self.stderr_thread.take() {
            let _ = drain.join();
        }
        let tail = self.stderr_tail.lock().expect("stderr tail");
        tail.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Sends SIGTERM and waits for the exit status (at most `within`).
    pub(crate) fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Jobgate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP exchange as curl saw it.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub http_version: String,
    pub body: String,
    /// curl's own complaints (empty when the exchange worked).
    pub stderr: String,
}

impl Reply {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Replaces the file at `path` with `contents` in one rename, as kubelet swaps a mounted Secret
/// or ConfigMap: a poll sees the old bytes or the new ones, never a file cut short mid-write
/// (`std::fs::write` truncates first, and a poll in between reads an empty file).
pub(crate) fn replace_file(path: &Path, contents: impl AsRef<[u8]>) {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, contents).expect("write the new file");
    std::fs::rename(&tmp, path).expect("rename the new file into place");
}

/// Runs curl with `args` plus a trailer that reports status and HTTP version.
pub(crate) fn curl(args: &[&str]) -> Reply {
    let out = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "20",
            "-w",
            "\n%{http_code} %{http_version}",
        ])
        .args(args)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, trailer) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (status, version) = trailer.split_once(' ').unwrap_or(("0", ""));
    Reply {
        status: status.parse().unwrap_or(0),
        http_version: version.to_string(),
        body: body.to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

/// POSTs a file as JSON to jobgate over TLS, verifying the dev CA.
pub(crate) fn post_file(jg: &Jobgate, path: &str, file: &Path, http: &str) -> Reply {
    let data = format!("@{}", file.display());
    let ca = jg.ca.display().to_string();
    curl(&[
        http,
        "--cacert",
        &ca,
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        &data,
        &jg.url(path),
    ])
}

/// `jobgate ARGS --help`, with no JOBGATE_* variable set (clap prints a variable's current
/// value next to its flag).
pub(crate) fn help(args: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jobgate"));
    cmd.args(args).arg("--help");
    for (key, _) in std::env::vars() {
        if key.starts_with("JOBGATE_") {
            cmd.env_remove(key);
        }
    }
    let out = cmd.output().expect("run jobgate --help");
    assert!(out.status.success(), "jobgate {args:?} --help failed");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The commands `jobgate --help` lists, in its order (clap's own `help` left out).
pub(crate) fn subcommands() -> Vec<String> {
    help(&[])
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// A rustls client configuration that trusts `jg`'s dev CA and offers `alpn` (`b"h2"`,
/// `b"http/1.1"`), for tests that drive TLS themselves.
pub(crate) fn tls_client_config(jg: &Jobgate, alpn: &[u8]) -> rustls::ClientConfig {
    jobgate::server::tls::install_crypto_provider();
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(&jg.ca).expect("dev CA");
    use rustls::pki_types::pem::PemObject;
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert.expect("CA certificate")).expect("add CA");
    }
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config
}

/// `field: message` of each cause of a denial in an AdmissionReview `response`, in order.
pub(crate) fn denial_causes(response: &serde_json::Value) -> Vec<String> {
    response["status"]["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// The `*.request.json` AdmissionReviews under `tests/fixtures/<dir>`, in name order.
pub(crate) fn fixture_requests(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".request.json"))
        .collect();
    paths.sort();
    paths
}

/// A judge's message as jobgate can print it: 1.33 prints pointers inside composite values with
/// `%#v`, as their addresses (`(*int32)(0xc000123456)`), which differ from run to run; jobgate
/// prints `(*int32)(<pointer>)`.
pub(crate) fn without_addresses(message: &str) -> String {
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

/// A Job with one container and `restartPolicy: Never`; `annotations` on the Job, `spec` merged
/// over the defaults.
pub(crate) fn job(
    name: &str,
    annotations: serde_json::Value,
    spec: serde_json::Value,
) -> serde_json::Value {
    let mut job = serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "template": { "spec": {
                "restartPolicy": "Never",
                "containers": [{ "name": "main", "image": "registry.example/trainer:1" }],
            }},
        },
    });
    merge(&mut job["spec"], spec);
    job
}

/// Deep-merges `from` into `into`: objects key by key, anything else replaced.
pub(crate) fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
    use serde_json::Value;
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}
