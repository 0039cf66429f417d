//! `jobgate serve` started for a test (the real binary, dev mode, free ports), and curl and
//! rustls to talk to it.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `jobgate serve` (dev mode, free ports), killed when dropped.
pub struct Jobgate {
    /// The process.
    pub child: Child,
    /// The webhook port (HTTPS).
    pub port: u16,
    /// The admin port (HTTP: `/livez`, `/readyz`, `/metrics`).
    pub admin_port: u16,
    /// Its working directory (dev mode writes `certs/dev/` there).
    pub dir: tempfile::TempDir,
    /// The dev CA that signs its serving certificate.
    pub ca: PathBuf,
    /// What it printed on start.
    pub stdout_lines: Vec<String>,
    /// The last lines of the server's log (stderr).
    pub stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<std::thread::JoinHandle<()>>,
}

/// How many lines of a server's log `Jobgate::stderr_tail` keeps.
const STDERR_TAIL: usize = 200;

impl Jobgate {
    /// Starts `jobgate serve` in dev mode on free ports, in a temporary working directory.
    pub fn start(extra: &[&str]) -> Jobgate {
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

    /// `https://localhost:PORT{path}` on the webhook port.
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{}", self.port, path)
    }

    /// `http://127.0.0.1:PORT{path}` on the admin port.
    pub fn admin_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.admin_port, path)
    }

    /// The end of the server's log (its last 200 lines), once the server has exited (after
    /// `terminate`): every line it wrote is read by then.
    pub fn log_after_exit(&mut self) -> String {
        if let Some(drain) = self.stderr_thread.take() {
            let _ = drain.join();
        }
        let tail = self.stderr_tail.lock().expect("stderr tail");
        tail.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Sends SIGTERM and waits for the exit status (at most `within`).
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
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
pub struct Reply {
    /// The HTTP status (0 when there was no answer).
    pub status: u16,
    /// The HTTP version curl spoke (`1.1`, `2`).
    pub http_version: String,
    /// The body.
    pub body: String,
    /// curl's own complaints (empty when the exchange worked).
    pub stderr: String,
}

impl Reply {
    /// The body as JSON; fails the test when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Replaces the file at `path` with `contents` in one rename, as kubelet swaps a mounted Secret
/// or ConfigMap: a poll sees the old bytes or the new ones, never a file cut short mid-write
/// (`std::fs::write` truncates first, and a poll in between reads an empty file).
pub fn replace_file(path: &Path, contents: impl AsRef<[u8]>) {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, contents).expect("write the new file");
    std::fs::rename(&tmp, path).expect("rename the new file into place");
}

/// Runs curl with `args` plus a trailer that reports status and HTTP version.
pub fn curl(args: &[&str]) -> Reply {
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
pub fn post_file(jg: &Jobgate, path: &str, file: &Path, http: &str) -> Reply {
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

/// A rustls client configuration that trusts `jg`'s dev CA and offers `alpn` (`b"h2"`,
/// `b"http/1.1"`), for tests that drive TLS themselves.
pub fn tls_client_config(jg: &Jobgate, alpn: &[u8]) -> rustls::ClientConfig {
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
