//! Certificate rotation without a restart (`server::reload`), the way kubelet rotates a mounted
//! Secret: new files in a fresh `..<timestamp>` directory, the `..data` symlink renamed onto it,
//! the old directory removed. `tls.crt`/`tls.key` are symlinks through `..data`.
//!
//! While HTTP/1.1 and HTTP/2 keep-alive connections and a stream of new connections send
//! requests, the pair is rotated, then replaced by a bad pair: new connections get the new
//! certificate, then keep it; established connections keep working; no request fails.
//!
//! The server here is the same axum-server + `RustlsConfig` acceptor `jobgate serve` uses, with a
//! one-route app, so the test is about TLS and not about admission.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum_server::tls_rustls::RustlsConfig;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use jobgate::pki::Bundle;
use jobgate::server::reload::{CertReloader, ReloadMetrics};
use jobgate::server::tls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

const POLL: Duration = Duration::from_millis(50);
const PATIENCE: Duration = Duration::from_secs(15);

fn bundle(ca: &str) -> Bundle {
    jobgate::pki::generate(
        ca,
        &["localhost".to_string()],
        Duration::from_secs(3600),
        SystemTime::now(),
    )
    .expect("generate")
}

fn leaf_der(b: &Bundle) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(b.cert_pem.as_bytes()).expect("PEM certificate")
}

/// A Secret volume as kubelet's AtomicWriter lays it out.
struct SecretVolume {
    dir: PathBuf,
    generation: usize,
}

impl SecretVolume {
    fn new(dir: &Path, cert_pem: &str, key_pem: &str) -> SecretVolume {
        let mut v = SecretVolume {
            dir: dir.into(),
            generation: 0,
        };
        v.update(cert_pem, key_pem);
        std::os::unix::fs::symlink("..data/tls.crt", dir.join("tls.crt")).unwrap();
        std::os::unix::fs::symlink("..data/tls.key", dir.join("tls.key")).unwrap();
        v
    }

    fn data_dir(&self, generation: usize) -> PathBuf {
        self.dir
            .join(format!("..2026_11_21_20_00_00.{generation:09}"))
    }

    /// Writes the new payload, swaps `..data` onto it with one rename, removes the old payload.
    fn update(&mut self, cert_pem: &str, key_pem: &str) {
        self.generation += 1;
        let new = self.data_dir(self.generation);
        std::fs::create_dir(&new).unwrap();
        std::fs::write(new.join("tls.crt"), cert_pem).unwrap();
        std::fs::write(new.join("tls.key"), key_pem).unwrap();
        let tmp = self.dir.join("..data_tmp");
        std::os::unix::fs::symlink(new.file_name().unwrap(), &tmp).unwrap();
        std::fs::rename(&tmp, self.dir.join("..data")).unwrap();
        if self.generation > 1 {
            std::fs::remove_dir_all(self.data_dir(self.generation - 1)).unwrap();
        }
    }

    fn cert(&self) -> PathBuf {
        self.dir.join("tls.crt")
    }

    fn key(&self) -> PathBuf {
        self.dir.join("tls.key")
    }
}

enum Sender {
    Http1(hyper::client::conn::http1::SendRequest<Empty<Bytes>>),
    Http2(hyper::client::conn::http2::SendRequest<Empty<Bytes>>),
}

struct Connection {
    sender: Sender,
    /// The certificate the server presented in this connection's handshake.
    leaf: CertificateDer<'static>,
}

#[derive(Clone)]
struct Client {
    addr: std::net::SocketAddr,
    tls: Arc<rustls::ClientConfig>,
}

impl Client {
    fn new(addr: std::net::SocketAddr, cas: &[&Bundle]) -> Client {
        let mut roots = rustls::RootCertStore::empty();
        for b in cas {
            roots
                .add(CertificateDer::from_pem_slice(b.ca_cert_pem.as_bytes()).unwrap())
                .unwrap();
        }
        let tls = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Client {
            addr,
            tls: Arc::new(tls),
        }
    }

    async fn connect(&self, http2: bool) -> Result<Connection, String> {
        let mut config = (*self.tls).clone();
        config.alpn_protocols = vec![if http2 {
            b"h2".to_vec()
        } else {
            b"http/1.1".to_vec()
        }];
        let tcp = tokio::net::TcpStream::connect(self.addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .map_err(|e| format!("TLS handshake: {e}"))?;
        let leaf = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .ok_or("no peer certificate")?
            .clone()
            .into_owned();
        let io = TokioIo::new(stream);
        let sender = if http2 {
            let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                .await
                .map_err(|e| format!("h2 handshake: {e}"))?;
            tokio::spawn(conn);
            Sender::Http2(sender)
        } else {
            let (sender, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|e| format!("http/1.1 handshake: {e}"))?;
            tokio::spawn(conn);
            Sender::Http1(sender)
        };
        Ok(Connection { sender, leaf })
    }
}

impl Connection {
    async fn get(&mut self) -> Result<(), String> {
        let request = || {
            hyper::Request::get("https://localhost/")
                .header(hyper::header::HOST, "localhost")
                .body(Empty::<Bytes>::new())
                .unwrap()
        };
        let response = match &mut self.sender {
            Sender::Http1(s) => {
                s.ready().await.map_err(|e| format!("not ready: {e}"))?;
                s.send_request(request()).await
            }
            Sender::Http2(s) => {
                s.ready().await.map_err(|e| format!("not ready: {e}"))?;
                s.send_request(request()).await
            }
        }
        .map_err(|e| format!("request: {e}"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        if status != 200 || body != "ok" {
            return Err(format!("{status} {body:?}"));
        }
        Ok(())
    }
}

/// Requests sent by the background traffic, and every failure.
#[derive(Default)]
struct Traffic {
    requests: AtomicUsize,
    failures: Mutex<Vec<String>>,
}

impl Traffic {
    fn record(&self, what: &str, result: Result<(), String>) {
        self.requests.fetch_add(1, Ordering::SeqCst);
        if let Err(e) = result {
            self.failures.lock().unwrap().push(format!("{what}: {e}"));
        }
    }
}

async fn until(what: &str, mut condition: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlink_swap_rotates_new_connections_keeps_old_ones_and_drops_no_request() {
    tls::install_crypto_provider();
    let (a, b) = (bundle("CA a"), bundle("CA b"));
    let tmp = tempfile::tempdir().unwrap();
    let mut volume = SecretVolume::new(tmp.path(), &a.cert_pem, &a.key_pem);

    let metrics = ReloadMetrics::default();
    let (reloader, initial) =
        CertReloader::load(&volume.cert(), &volume.key(), metrics.clone()).unwrap();
    let config = RustlsConfig::from_config(initial);
    let reloader_task = tokio::spawn(reloader.run(config.clone(), POLL));

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    let handle = axum_server::Handle::new();
    let server = axum_server::from_tcp_rustls(listener, config)
        .unwrap()
        .handle(handle.clone());
    tokio::spawn(server.serve(app.into_make_service()));
    handle.listening().await.expect("listening");

    // The client trusts both CAs, so every handshake is fully verified.
    let client = Client::new(addr, &[&a, &b]);
    let mut http1 = client.connect(false).await.unwrap();
    let mut http2 = client.connect(true).await.unwrap();
    assert_eq!(http1.leaf, leaf_der(&a));
    assert_eq!(http2.leaf, leaf_der(&a));
    http1.get().await.unwrap();
    http2.get().await.unwrap();

    // Background traffic for the whole rotation: both keep-alive connections in use, and new
    // connections one after another, each remembering which certificate it got.
    let traffic = Arc::new(Traffic::default());
    let stop = Arc::new(AtomicBool::new(false));
    let seen_leaves = Arc::new(Mutex::new(Vec::<CertificateDer<'static>>::new()));
    let keep_alive_task = {
        let (traffic, stop) = (traffic.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                traffic.record("keep-alive http/1.1", http1.get().await);
                traffic.record("keep-alive h2", http2.get().await);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (http1, http2)
        })
    };
    let new_connections_task = {
        let (traffic, stop, seen, client) = (
            traffic.clone(),
            stop.clone(),
            seen_leaves.clone(),
            client.clone(),
        );
        tokio::spawn(async move {
            let mut n = 0usize;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let http2 = n.is_multiple_of(2);
                match client.connect(http2).await {
                    Ok(mut c) => {
                        seen.lock().unwrap().push(c.leaf.clone());
                        traffic.record("new connection", c.get().await);
                    }
                    Err(e) => traffic.record("new connection", Err(e)),
                }
            }
        })
    };

    // Rotate to b.
    volume.update(&b.cert_pem, &b.key_pem);
    until(
        "a new connection to present certificate b",
        async || matches!(client.connect(false).await, Ok(c) if c.leaf == leaf_der(&b)),
    )
    .await;
    assert_eq!((metrics.successes(), metrics.failures()), (1, 0));

    // A bad pair (a's certificate, b's key): rejected, b still served, the failure counted.
    volume.update(&a.cert_pem, &b.key_pem);
    until("the bad pair to be rejected", async || {
        metrics.failures() == 1
    })
    .await;
    assert_eq!(metrics.failing.get(), 1);
    for http2 in [false, true] {
        let mut c = client.connect(http2).await.unwrap();
        assert_eq!(
            c.leaf,
            leaf_der(&b),
            "the previous good certificate is kept"
        );
        c.get().await.unwrap();
    }

    // Let traffic run over a few more polls of the bad pair, then stop it.
    tokio::time::sleep(POLL * 5).await;
    stop.store(true, Ordering::SeqCst);
    let (mut http1, mut http2) = keep_alive_task.await.unwrap();
    new_connections_task.await.unwrap();

    let failures = traffic.failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "requests failed: {failures:?}");
    assert!(traffic.requests.load(Ordering::SeqCst) > 10);
    let seen = seen_leaves.lock().unwrap().clone();
    let (saw_a, saw_b) = (
        seen.iter().any(|l| *l == leaf_der(&a)),
        seen.iter().any(|l| *l == leaf_der(&b)),
    );
    assert!(saw_b, "new connections got b");
    // Once a connection saw b, no later one saw a again.
    if saw_a {
        let first_b = seen.iter().position(|l| *l == leaf_der(&b)).unwrap();
        assert!(seen[first_b..].iter().all(|l| *l == leaf_der(&b)));
    }
    // The keep-alive connections were never re-established: they still carry a's handshake.
    assert_eq!(http1.leaf, leaf_der(&a));
    assert_eq!(http2.leaf, leaf_der(&a));
    http1.get().await.unwrap();
    http2.get().await.unwrap();
    assert_eq!((metrics.successes(), metrics.failures()), (1, 1));

    // Fixed on disk: the gauge clears and the fixed pair is served.
    volume.update(&a.cert_pem, &a.key_pem);
    until(
        "the fixed pair to be served",
        async || matches!(client.connect(true).await, Ok(c) if c.leaf == leaf_der(&a)),
    )
    .await;
    assert_eq!(metrics.failing.get(), 0);
    assert_eq!((metrics.successes(), metrics.failures()), (2, 1));

    reloader_task.abort();
    handle.shutdown();
}

/// `jobgate serve --tls-cert --tls-key` as deployed: the binary itself picks up a rotated pair
/// and reports it on the admin port's /metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobgate_serve_reloads_a_rotated_mounted_secret_and_counts_it() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    tls::install_crypto_provider();
    let (a, b) = (bundle("CA a"), bundle("CA b"));
    let tmp = tempfile::tempdir().unwrap();
    let mut volume = SecretVolume::new(tmp.path(), &a.cert_pem, &a.key_pem);
    let mut child = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .arg("serve")
        .args(["--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"])
        .arg("--tls-cert")
        .arg(volume.cert())
        .arg("--tls-key")
        .arg(volume.key())
        .args(["--tls-reload-interval", "100ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn jobgate");
    let stdout = child.stdout.take().unwrap();
    let banner = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find(|l| l.starts_with("jobgate: serving webhooks on https://"))
    })
    .await
    .unwrap()
    .expect("jobgate reports where it listens");
    // "jobgate: serving webhooks on https://127.0.0.1:P (admin http://127.0.0.1:Q)"
    let mut addrs = banner
        .split([' ', '(', ')'])
        .filter_map(|w| w.rsplit("//").next()?.parse::<std::net::SocketAddr>().ok());
    let (addr, admin) = (addrs.next().unwrap(), addrs.next().unwrap());

    let client = Client::new(addr, &[&a, &b]);
    let mut keep_alive = client.connect(true).await.unwrap();
    assert_eq!(keep_alive.leaf, leaf_der(&a));

    volume.update(&b.cert_pem, &b.key_pem);
    until(
        "jobgate serve to present certificate b",
        async || matches!(client.connect(false).await, Ok(c) if c.leaf == leaf_der(&b)),
    )
    .await;

    // The h2 keep-alive connection made before the rotation still gets answers (404: jobgate
    // serves only the webhook paths; the point is an HTTP answer on the old TLS session).
    let response = match &mut keep_alive.sender {
        Sender::Http2(s) => s
            .send_request(
                hyper::Request::get("https://localhost/livez")
                    .body(Empty::<Bytes>::new())
                    .unwrap(),
            )
            .await
            .expect("the pre-rotation connection still works"),
        Sender::Http1(_) => unreachable!("connected with h2"),
    };
    assert!(response.status().is_client_error(), "{}", response.status());

    let tcp = tokio::net::TcpStream::connect(admin).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let metrics = sender
        .send_request(
            hyper::Request::get("/metrics")
                .header(hyper::header::HOST, "localhost")
                .body(Empty::<Bytes>::new())
                .unwrap(),
        )
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes();
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains("jobgate_tls_reloads_total{result=\"success\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("jobgate_tls_reload_failing 0"),
        "{metrics}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// `GET path` on the admin port: (status, body).
async fn admin_get(admin: std::net::SocketAddr, path: &str) -> (u16, String) {
    let tcp = tokio::net::TcpStream::connect(admin).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let response = sender
        .send_request(
            hyper::Request::get(path)
                .header(hyper::header::HOST, "localhost")
                .body(Empty::<Bytes>::new())
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// A certificate for the Service `jobgate` in `namespace` (and `localhost`, which the test
/// client dials).
fn service_bundle(namespace: &str) -> Bundle {
    let mut names = vec!["localhost".to_string()];
    names.extend(jobgate::certs::service_dns_names("jobgate", namespace));
    jobgate::pki::generate("CA", &names, Duration::from_secs(3600), SystemTime::now())
        .expect("generate")
}

/// `--tls-server-name`: a certificate issued for another namespace (a rotation run without the
/// install's namespace) makes kube-apiserver's handshake fail. `serve` starting with one is not
/// ready and says why on stderr, in plain text when stderr is not a terminal; a reload to the
/// right one makes it ready; a later rotation back to a wrong one is refused and the right one
/// kept, so the webhook keeps answering while jobgate_tls_reload_failing says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobgate_serve_is_ready_only_with_a_certificate_naming_its_service() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};
    tls::install_crypto_provider();
    let (wrong, right) = (
        service_bundle("jobgate-system"),
        service_bundle("platform-jobs"),
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut volume = SecretVolume::new(tmp.path(), &wrong.cert_pem, &wrong.key_pem);
    let mut child = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .arg("serve")
        .args(["--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"])
        .arg("--tls-cert")
        .arg(volume.cert())
        .arg("--tls-key")
        .arg(volume.key())
        .args(["--tls-server-name", "jobgate.platform-jobs.svc"])
        .args(["--tls-reload-interval", "100ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn jobgate");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let banner = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find(|l| l.starts_with("jobgate: serving webhooks on https://"))
    })
    .await
    .unwrap()
    .expect("jobgate reports where it listens");
    let mut addrs = banner
        .split([' ', '(', ')'])
        .filter_map(|w| w.rsplit("//").next()?.parse::<std::net::SocketAddr>().ok());
    let (addr, admin) = (addrs.next().unwrap(), addrs.next().unwrap());
    let client = Client::new(addr, &[&wrong, &right]);

    // Listening, serving the wrong certificate, and not ready.
    assert_eq!(client.connect(false).await.unwrap().leaf, leaf_der(&wrong));
    assert_eq!(admin_get(admin, "/readyz").await.0, 503);

    volume.update(&right.cert_pem, &right.key_pem);
    until("jobgate serve to become ready", async || {
        admin_get(admin, "/readyz").await.0 == 200
    })
    .await;
    assert_eq!(client.connect(false).await.unwrap().leaf, leaf_der(&right));

    let other = service_bundle("team-a");
    volume.update(&other.cert_pem, &other.key_pem);
    until("the wrong rotation to be refused", async || {
        admin_get(admin, "/metrics")
            .await
            .1
            .lines()
            .any(|l| l == "jobgate_tls_reload_failing 1")
    })
    .await;
    assert_eq!(client.connect(false).await.unwrap().leaf, leaf_der(&right));
    assert_eq!(admin_get(admin, "/readyz").await.0, 200);

    let _ = child.kill();
    let _ = child.wait();
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    assert!(
        log.contains(
            "not ready: the serving certificate does not name jobgate.platform-jobs.svc, the \
             Service kube-apiserver calls (it names localhost, jobgate, jobgate.jobgate-system,"
        ),
        "{log}"
    );
    assert!(
        log.contains("does not name jobgate.platform-jobs.svc, the Service kube-apiserver calls: it names localhost, jobgate, jobgate.team-a,"),
        "{log}"
    );
    // stderr is a pipe here, as in a container: no terminal colour codes.
    assert!(
        !log.contains('\u{1b}'),
        "colour escapes in a log file: {log:?}"
    );
}
