//! The binary as a user runs it: dev-mode TLS, curl over HTTP/1.1 and HTTP/2, every fixture,
//! bad input, slow clients, the admin port and graceful shutdown.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod serve;
}

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use support::serve::{Jobgate, Reply, curl, post_file, tls_client_config};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every `<dir>/<name>.request.json` with the webhook path its directory stands for.
fn fixtures() -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for (dir, path) in [
        ("mutate", "/mutate"),
        ("mutate-recovery", "/mutate/recovery"),
        ("validate", "/validate"),
    ] {
        let Ok(entries) = std::fs::read_dir(fixtures_dir().join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.to_string_lossy().ends_with(".request.json") {
                found.push((path.to_string(), p));
            }
        }
    }
    found.sort();
    found
}

fn sibling(request: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(request.to_string_lossy().replace(".request.json", suffix))
}

/// The response with its base64 patch decoded, as fixtures write it.
fn decode_patch(mut response: Value) -> Value {
    if let Some(patch) = response["response"]["patch"].as_str() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .expect("patch is base64");
        response["response"]["patch"] = serde_json::from_slice(&bytes).expect("patch is JSON");
    }
    response
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_fixture_over_http1_and_http2() {
    let jg = Jobgate::start(&[]);
    let fixtures = fixtures();
    assert!(
        fixtures.len() >= 8,
        "expected fixtures, found {}",
        fixtures.len()
    );
    for (path, request) in &fixtures {
        let expected = read_json(&sibling(request, ".response.json"));
        for (flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
            let reply = post_file(&jg, path, request, flag);
            let name = format!("{} over HTTP/{version}", request.display());
            assert_eq!(reply.status, 200, "{name}: {}", reply.body);
            assert_eq!(reply.http_version, version, "{name}");
            let got = reply.json();
            let patch_type = &got["response"]["patchType"];
            assert_eq!(
                got["response"]["patch"].is_string(),
                patch_type == "JSONPatch",
                "{name}: patch and patchType go together"
            );
            let got = decode_patch(got);
            assert_eq!(got, expected, "{name}");
            let patched = sibling(request, ".patched.json");
            if patched.exists() {
                let mut object = read_json(request)["request"]["object"].clone();
                let ops: json_patch::Patch =
                    serde_json::from_value(got["response"]["patch"].clone())
                        .expect("RFC 6902 patch");
                json_patch::patch(&mut object, &ops)
                    .unwrap_or_else(|e| panic!("{name}: patch does not apply: {e}"));
                assert_eq!(object, read_json(&patched), "{name}: patched object");
            }
        }
    }
}

#[test]
fn dev_mode_prints_a_curl_line_that_works() {
    let jg = Jobgate::start(&[]);
    let line = jg
        .stdout_lines
        .iter()
        .find(|l| l.trim_start().starts_with("curl "))
        .expect("curl line");
    assert!(line.contains("--cacert certs/dev/ca.crt"), "{line}");
    // Run the printed line from the repository root, with the CA from the server's directory.
    let line = line
        .trim()
        .replace("certs/dev/ca.crt", &jg.ca.display().to_string());
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{line} -sS"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("sh");
    let body: Value = serde_json::from_slice(&out.stdout).expect("JSON reply");
    assert_eq!(body["kind"], "AdmissionReview");
    assert_eq!(body["response"]["allowed"], true);
    for file in ["ca.crt", "tls.crt", "tls.key"] {
        assert!(
            jg.dir.path().join("certs/dev").join(file).exists(),
            "{file} written"
        );
    }
}

fn post_body(jg: &Jobgate, path: &str, content_type: &str, body: &str) -> Reply {
    let ca = jg.ca.display().to_string();
    let header = format!("Content-Type: {content_type}");
    curl(&[
        "--cacert",
        &ca,
        "-H",
        &header,
        "--data-binary",
        body,
        &jg.url(path),
    ])
}

#[test]
fn bodies_that_are_not_an_admission_review_get_400_with_the_reason() {
    let jg = Jobgate::start(&[]);
    let cases = [
        (
            "{not json",
            "request body is not an AdmissionReview: key must be a string at line 1 column 2",
        ),
        (
            r#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}"#,
            r#"unsupported apiVersion "admission.k8s.io/v1beta1": jobgate speaks "admission.k8s.io/v1""#,
        ),
        (
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"Job"}"#,
            r#"unsupported kind "Job": expected "AdmissionReview""#,
        ),
        (
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
            "request is required",
        ),
        (
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"kind":{"group":"batch","version":"v1","kind":"Job"}}}"#,
            "request.uid is required",
        ),
    ];
    for (body, message) in cases {
        let reply = post_body(&jg, "/validate", "application/json", body);
        assert_eq!(reply.status, 400, "{body}");
        let status = reply.json();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "BadRequest");
        assert_eq!(status["message"], message, "{body}");
    }
}

#[test]
fn an_unreadable_job_gets_allowed_false_with_the_field_path() {
    let jg = Jobgate::start(&[]);
    let review = json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
        "uid":"u-1","kind":{"group":"batch","version":"v1","kind":"Job"},"operation":"CREATE",
        "object":{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"},
                  "spec":{"template":{"spec":{"containers":[{"name":["not","a","string"]}]}}}}}});
    let reply = post_body(&jg, "/mutate", "application/json", &review.to_string());
    assert_eq!(reply.status, 200);
    let got = reply.json();
    assert_eq!(got["response"]["uid"], "u-1");
    assert_eq!(got["response"]["allowed"], false);
    assert_eq!(got["response"]["status"]["code"], 400);
    assert_eq!(
        got["response"]["status"]["message"],
        "request.object.spec.template.spec.containers[0].name: invalid type: sequence, expected a string"
    );
    // A CREATE without an object.
    let review = json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
        "uid":"u-2","kind":{"group":"batch","version":"v1","kind":"Job"},"operation":"CREATE"}});
    let got = post_body(&jg, "/validate", "application/json", &review.to_string()).json();
    assert_eq!(got["response"]["allowed"], false);
    assert_eq!(
        got["response"]["status"]["message"],
        "request.object is required for CREATE and UPDATE"
    );
}

#[test]
fn http_errors_say_what_is_wrong() {
    let jg = Jobgate::start(&[]);
    let ca = jg.ca.display().to_string();

    let reply = curl(&["--cacert", &ca, "-i", &jg.url("/validate")]);
    assert_eq!(reply.status, 405);
    assert!(
        reply.body.to_ascii_lowercase().contains("allow: post"),
        "{}",
        reply.body
    );
    assert!(
        reply
            .body
            .contains("method GET is not allowed at /validate: use POST"),
        "{}",
        reply.body
    );

    let reply = post_body(&jg, "/nope", "application/json", "{}");
    assert_eq!(reply.status, 404, "{reply:?}");
    assert_eq!(
        reply.json()["message"],
        "no webhook at /nope: jobgate serves /mutate, /mutate/recovery, /validate"
    );

    let reply = post_body(&jg, "/validate", "text/plain", "{}");
    assert_eq!(reply.status, 415);
    assert_eq!(
        reply.json()["message"],
        r#"unsupported Content-Type "text/plain": send application/json"#
    );

    let big = jg.dir.path().join("big.json");
    std::fs::write(&big, vec![b' '; 7 * 1024 * 1024 + 1]).unwrap();
    let reply = post_file(&jg, "/validate", &big, "--http1.1");
    assert_eq!(reply.status, 413);
    assert_eq!(
        reply.json()["message"],
        "request body exceeds 7340032 bytes"
    );
    // curl 7.88 reports an HTTP/2 response sent before the whole body as a stream error, so
    // HTTP/2 is checked with hyper's client: once with Content-Length, once streamed without.
    for declare_length in [true, false] {
        let (status, body) = h2_post_large(&jg, 7 * 1024 * 1024 + 1, declare_length);
        assert_eq!(
            status, 413,
            "HTTP/2, Content-Length declared: {declare_length}"
        );
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["message"], "request body exceeds 7340032 bytes");
    }
    // Exactly the limit is read (and then judged as JSON).
    std::fs::write(&big, vec![b' '; 7 * 1024 * 1024]).unwrap();
    let reply = post_file(&jg, "/validate", &big, "--http2");
    assert_eq!(reply.status, 400);
}

/// POSTs `len` bytes over HTTP/2 with hyper, in 64 KiB frames, and returns status and body.
fn h2_post_large(jg: &Jobgate, len: usize, declare_length: bool) -> (u16, Vec<u8>) {
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::{Bytes, Frame};
    jobgate::server::tls::install_crypto_provider();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = Arc::new(tls_client_config(jg, b"h2"));
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", jg.port))
            .await
            .unwrap();
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect("localhost".try_into().unwrap(), tcp)
            .await
            .unwrap();
        let (mut sender, conn) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tls),
        )
        .await
        .unwrap();
        tokio::spawn(conn);
        let chunks = (0..len.div_ceil(65536)).map(move |i| {
            let n = 65536.min(len - i * 65536);
            Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(vec![b' '; n])))
        });
        let body = StreamBody::new(futures::stream::iter(chunks));
        let mut request =
            hyper::Request::post(jg.url("/validate")).header("content-type", "application/json");
        if declare_length {
            request = request.header("content-length", len.to_string());
        }
        let response = sender
            .send_request(request.body(body).unwrap())
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes().to_vec())
            .unwrap_or_default();
        (status, body)
    })
}

fn tls_client(jg: &Jobgate) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    jobgate::server::tls::install_crypto_provider();
    let config = tls_client_config(jg, b"http/1.1");
    let conn =
        rustls::ClientConnection::new(Arc::new(config), "localhost".try_into().unwrap()).unwrap();
    let sock = TcpStream::connect(("127.0.0.1", jg.port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    rustls::StreamOwned::new(conn, sock)
}

/// Reads until the peer closes; returns what arrived and how long it took.
fn read_until_closed(stream: &mut impl Read) -> (String, Duration) {
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = stream.read_to_end(&mut buf);
    (String::from_utf8_lossy(&buf).to_string(), started.elapsed())
}

#[test]
fn slow_clients_cannot_hold_sockets() {
    let jg = Jobgate::start(&[
        "--tls-handshake-timeout",
        "1s",
        "--header-read-timeout",
        "1s",
        "--body-timeout",
        "1s",
    ]);
    // No TLS handshake at all: the server hangs up.
    let mut raw = TcpStream::connect(("127.0.0.1", jg.port)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let (_, took) = read_until_closed(&mut raw);
    assert!(
        took < Duration::from_secs(10),
        "handshake timeout closed after {took:?}"
    );

    // Headers that never finish.
    let mut tls = tls_client(&jg);
    tls.write_all(b"POST /validate HTTP/1.1\r\nHost: localhost\r\n")
        .unwrap();
    tls.flush().unwrap();
    let (_, took) = read_until_closed(&mut tls);
    assert!(
        took < Duration::from_secs(10),
        "header read timeout closed after {took:?}"
    );

    // A body that never arrives: 408 with the reason.
    let mut tls = tls_client(&jg);
    tls.write_all(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{").unwrap();
    tls.flush().unwrap();
    let (reply, _) = read_until_closed(&mut tls);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(
        reply.contains("request body not received within 1s"),
        "{reply}"
    );
}

#[test]
fn admin_port_reports_liveness_readiness_and_metrics() {
    let jg = Jobgate::start(&[]);
    assert_eq!(curl(&[&jg.admin_url("/livez")]).status, 200);
    assert_eq!(curl(&[&jg.admin_url("/readyz")]).status, 200);
    let request = fixtures_dir().join("validate/job-allowed.request.json");
    assert_eq!(post_file(&jg, "/validate", &request, "--http2").status, 200);
    let metrics = curl(&[&jg.admin_url("/metrics")]);
    assert_eq!(metrics.status, 200);
    let text = metrics.body;
    assert!(
        text.contains(r#"jobgate_admission_requests_total{endpoint="validate",kind="Job",operation="CREATE",allowed="true",patched="false"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"jobgate_admission_duration_seconds_bucket{le="0.0001",endpoint="validate"}"#
        ),
        "{text}"
    );
    assert!(
        text.contains("jobgate_admission_in_flight_requests 0"),
        "{text}"
    );
    // Dev mode, outside a pod: no cluster to ask, so the newest released minor judges.
    let released = jobgate::job::version::KubernetesVersion::default();
    assert!(
        text.contains(&format!(
            r#"jobgate_kubernetes_rules_info{{kubernetes_version="{released}",rules_version="{released}",known="true",source="default"}} 1"#
        )),
        "{text}"
    );
}

/// A cluster upgraded past what jobgate knows does not stop the webhook: `serve` starts,
/// judges with the newest known rules, and says so once in its log and in
/// `jobgate_kubernetes_rules_info`. A value that names no release fails start-up naming the
/// environment variable it came from.
#[test]
fn a_newer_kubernetes_release_is_served_with_the_newest_rules_and_said_once() {
    let mut jg = Jobgate::start(&["--kubernetes-version", "1.39"]);
    let request = fixtures_dir().join("validate/job-allowed.request.json");
    let reply = post_file(&jg, "/validate", &request, "--http2");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["response"]["allowed"], true);
    let metrics = curl(&[&jg.admin_url("/metrics")]).body;
    assert!(
        metrics.contains(
            r#"jobgate_kubernetes_rules_info{kubernetes_version="1.39",rules_version="1.38",known="false",source="setting"} 1"#
        ),
        "{metrics}"
    );
    jg.terminate(Duration::from_secs(10))
        .expect("exits within 10s");
    let stderr = jg.log_after_exit();
    let note = "Kubernetes 1.39 is newer than the releases jobgate knows (1.33 to 1.38): judging \
                with 1.38's rules";
    assert_eq!(stderr.matches(note).count(), 1, "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--admin-addr",
            "127.0.0.1:0",
        ])
        .env("JOBGATE_KUBERNETES_VERSION", "1.x")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "jobgate serve: JOBGATE_KUBERNETES_VERSION: unsupported Kubernetes version \"1.x\""
        ),
        "{stderr}"
    );
}

#[test]
fn sigterm_turns_readiness_off_and_exits_zero() {
    let mut jg = Jobgate::start(&["--shutdown-delay", "2s"]);
    assert_eq!(curl(&[&jg.admin_url("/readyz")]).status, 200);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &jg.child.id().to_string()])
        .status();
    std::thread::sleep(Duration::from_millis(500));
    // During the delay: still serving reviews, but not ready.
    assert_eq!(curl(&[&jg.admin_url("/readyz")]).status, 503);
    let request = fixtures_dir().join("validate/job-allowed.request.json");
    assert_eq!(
        post_file(&jg, "/validate", &request, "--http1.1").status,
        200
    );
    let status = jg
        .terminate(Duration::from_secs(10))
        .expect("exits within 10s");
    assert!(status.success(), "{status:?}");
}

#[test]
fn unreadable_or_mismatched_certificates_fail_start_up_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = |cert: &Path, key: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_jobgate"))
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--admin-addr",
                "127.0.0.1:0",
                "--tls-cert",
            ])
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .output()
            .unwrap()
    };
    let missing = dir.path().join("missing.crt");
    let out = run(&missing, &missing);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot read {}", missing.display())),
        "{stderr}"
    );

    let generate = |name: &str| {
        let (validity, now) = (Duration::from_secs(3600), std::time::SystemTime::now());
        jobgate::pki::generate(name, &["localhost".into()], validity, now).unwrap()
    };
    let (a, b) = (generate("a"), generate("b"));
    let (cert, key) = (dir.path().join("a.crt"), dir.path().join("b.key"));
    std::fs::write(&cert, a.cert_pem).unwrap();
    std::fs::write(&key, b.key_pem).unwrap();
    let out = run(&cert, &key);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("do not match") && stderr.contains("b.key"),
        "{stderr}"
    );
}

#[test]
fn only_tls_1_2_and_later_are_accepted() {
    let jg = Jobgate::start(&[]);
    let ca = jg.ca.display().to_string();
    let url = jg.url("/livez");
    // TLS 1.1 at most: the handshake fails (curl exit 35 -> status 000).
    let reply = curl(&["--cacert", &ca, "--tlsv1.0", "--tls-max", "1.1", &url]);
    assert_eq!(reply.status, 0);
    let reply = curl(&["--cacert", &ca, "--tlsv1.2", "--tls-max", "1.2", &url]);
    assert_eq!(
        reply.status, 404,
        "TLS 1.2 works (and /livez lives on the admin port)"
    );
}

#[test]
fn the_curl_fixtures_script_passes_against_a_running_jobgate() {
    let jg = Jobgate::start(&[]);
    for http in ["--http1.1", "--http2"] {
        let out = std::process::Command::new("bash")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/curl-fixtures.sh"))
            .args([&jg.url(""), &jg.ca.display().to_string(), http])
            .output()
            .expect("run tests/curl-fixtures.sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{http}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = format!("{} passed, 0 failed", fixtures().len());
        assert!(stdout.contains(&summary), "{http}: {stdout}");
    }
}

/// `serve --kubernetes-version` answers for that release: the KEP-5440 resize of a suspended Job
/// is denied on 1.34 on `spec.template` and allowed with no flag (the newest release).
#[test]
fn kubernetes_version_flag_decides_the_kep_5440_resize() {
    let request = fixtures_dir()
        .join("validate-by-version/job-update-kep-5440-resources-never-started.request.json");
    let path = request.display().to_string();
    for (args, allowed, field) in [
        (
            &["--kubernetes-version", "1.34"][..],
            false,
            "spec.template",
        ),
        (&[][..], true, ""),
    ] {
        let jg = Jobgate::start(args);
        let reply = post_file(&jg, "/validate", &request, "--http2");
        assert_eq!(reply.status, 200, "{args:?} {path}: {}", reply.body);
        let got = reply.json();
        assert_eq!(got["response"]["allowed"], allowed, "{args:?}");
        if !allowed {
            assert_eq!(
                got["response"]["status"]["details"]["causes"][0]["field"],
                field
            );
        }
    }
}
