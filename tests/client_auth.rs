//! `--client-ca`: the webhook port asks for a client certificate, as kube-apiserver presents one
//! through its admission `kubeConfigFile` (Kubernetes docs, "Dynamic Admission Control",
//! "Authenticate apiservers"). The real binary in dev mode, curl as the client: no certificate
//! or one of another CA fails the handshake, one the CA signed gets its review answered over
//! HTTP/1.1 and HTTP/2, the admin port stays plain HTTP, and the CA file is reloaded like the
//! serving certificate.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod serve;
}

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::serve::{Jobgate, Reply, curl, replace_file};

/// A CA and a client certificate it signed (clientAuth), written as PEM files in `dir`.
struct ClientPki {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

impl ClientPki {
    fn generate(dir: &Path, name: &str) -> ClientPki {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
            IsCa, KeyPair, KeyUsagePurpose,
        };
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name
            .push(DnType::CommonName, format!("{name} CA"));
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        // What kube-apiserver's kubeconfig user entry would name in client-certificate.
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().unwrap();
        let leaf = leaf.signed_by(&key, &ca).unwrap();
        let pki = ClientPki {
            ca: dir.join(format!("{name}-ca.crt")),
            cert: dir.join(format!("{name}.crt")),
            key: dir.join(format!("{name}.key")),
        };
        std::fs::write(&pki.ca, ca.pem()).unwrap();
        std::fs::write(&pki.cert, leaf.pem()).unwrap();
        std::fs::write(&pki.key, key.serialize_pem()).unwrap();
        pki
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/validate")
        .join(name)
}

/// POSTs an allowed Job's review to /validate over `http`, with `client`'s certificate if any.
fn review(jg: &Jobgate, http: &str, client: Option<&ClientPki>) -> Reply {
    let data = format!("@{}", fixture("job-allowed.request.json").display());
    let ca = jg.ca.display().to_string();
    let url = jg.url("/validate");
    let (cert, key) = client.map_or((String::new(), String::new()), |c| {
        (c.cert.display().to_string(), c.key.display().to_string())
    });
    let mut args = vec![
        http,
        "--cacert",
        &ca,
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        &data,
    ];
    if client.is_some() {
        args.extend(["--cert", &cert, "--key", &key]);
    }
    args.push(&url);
    curl(&args)
}

fn assert_answered(reply: &Reply, version: &str, what: &str) {
    assert_eq!(reply.status, 200, "{what}: {reply:?}");
    assert_eq!(reply.http_version, version, "{what}");
    let body = reply.json();
    assert_eq!(body["kind"], "AdmissionReview", "{what}");
    assert_eq!(body["response"]["allowed"], true, "{what}");
}

/// The TLS alert rustls sends when no certificate comes (RFC 8446 `certificate_required`).
const NO_CERTIFICATE: &str = "alert certificate required";
/// ... and when the certificate does not chain to a client CA (`unknown_ca`).
const UNKNOWN_CA: &str = "alert unknown ca";

/// Sends a review that must not be answered: no HTTP status at all, as the TLS handshake (TLS
/// 1.2) or the first read after it (TLS 1.3: the server's alert follows the client's Finished)
/// fails. Over HTTP/1.1 curl reads the alert; over HTTP/2 it is still writing its preface when
/// the connection closes and says that instead (`Connection reset by peer`, `Transport endpoint
/// is not connected`), so the alert is checked over HTTP/1.1 only.
fn assert_refused(jg: &Jobgate, http: &str, client: Option<&ClientPki>, alert: &str, what: &str) {
    let reply = review(jg, http, client);
    assert_eq!(reply.status, 0, "{what}: {reply:?}");
    assert!(!reply.stderr.is_empty(), "{what}: {reply:?}");
    if http == "--http1.1" {
        assert!(reply.stderr.contains(alert), "{what}: {reply:?}");
    }
}
#[test]
fn only_a_certificate_of_the_client_ca_gets_a_review_answered() {
    let pki_dir = tempfile::tempdir().unwrap();
    let apiserver = ClientPki::generate(pki_dir.path(), "apiserver");
    let stranger = ClientPki::generate(pki_dir.path(), "stranger");
    let ca = apiserver.ca.display().to_string();
    let jg = Jobgate::start(&["--client-ca", &ca]);

    for (flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
        assert_refused(
            &jg,
            flag,
            None,
            NO_CERTIFICATE,
            &format!("no client certificate, HTTP/{version}"),
        );
        assert_refused(
            &jg,
            flag,
            Some(&stranger),
            UNKNOWN_CA,
            &format!("a certificate of another CA, HTTP/{version}"),
        );
        assert_answered(
            &review(&jg, flag, Some(&apiserver)),
            version,
            &format!("the client CA's certificate, HTTP/{version}"),
        );
    }
    // The admin port is plain HTTP and asks for nothing: kubelet probes and Prometheus scrapes.
    for path in ["/readyz", "/livez", "/metrics"] {
        let reply = curl(&[&jg.admin_url(path)]);
        assert_eq!(reply.status, 200, "{path}: {reply:?}");
    }
}

#[test]
fn without_the_flag_no_client_certificate_is_asked_for() {
    let jg = Jobgate::start(&[]);
    assert_answered(&review(&jg, "--http1.1", None), "1.1", "no --client-ca");
}

/// Waits until `check` holds, polling; false after `patience`.
fn eventually(patience: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn metric(jg: &Jobgate, line_prefix: &str) -> Option<String> {
    let text = curl(&[&jg.admin_url("/metrics")]).body;
    text.lines()
        .find(|l| l.starts_with(line_prefix))
        .map(str::to_string)
}

#[test]
fn the_client_ca_file_is_reloaded_and_a_bad_one_keeps_the_previous_cas() {
    let pki_dir = tempfile::tempdir().unwrap();
    let first = ClientPki::generate(pki_dir.path(), "first");
    let second = ClientPki::generate(pki_dir.path(), "second");
    let bundle = pki_dir.path().join("client-ca.crt");
    replace_file(&bundle, std::fs::read(&first.ca).unwrap());
    let bundle_arg = bundle.display().to_string();
    let mut jg = Jobgate::start(&["--client-ca", &bundle_arg, "--tls-reload-interval", "100ms"]);
    assert_answered(&review(&jg, "--http1.1", Some(&first)), "1.1", "first CA");
    assert_refused(
        &jg,
        "--http1.1",
        Some(&second),
        UNKNOWN_CA,
        "second CA, before",
    );

    // A rotated bundle: new handshakes trust the second CA and no longer the first.
    replace_file(&bundle, std::fs::read(&second.ca).unwrap());
    assert!(
        eventually(Duration::from_secs(15), || review(
            &jg,
            "--http2",
            Some(&second)
        )
        .status
            == 200),
        "the second CA is trusted after a reload"
    );
    assert_refused(
        &jg,
        "--http1.1",
        Some(&first),
        UNKNOWN_CA,
        "first CA, after",
    );
    assert_eq!(
        metric(&jg, "jobgate_tls_reloads_total{result=\"success\"}").as_deref(),
        Some("jobgate_tls_reloads_total{result=\"success\"} 1")
    );

    // A bundle that holds no certificate: the second CA stays trusted, the failure is counted
    // and logged once however many polls see it.
    replace_file(&bundle, "not a certificate\n");
    assert!(
        eventually(Duration::from_secs(15), || metric(
            &jg,
            "jobgate_tls_reload_failing"
        )
        .as_deref()
            == Some("jobgate_tls_reload_failing 1")),
        "the bad bundle is reported"
    );
    std::thread::sleep(Duration::from_millis(1000)); // ten more polls
    assert_eq!(
        metric(&jg, "jobgate_tls_reloads_total{result=\"failure\"}").as_deref(),
        Some("jobgate_tls_reloads_total{result=\"failure\"} 1")
    );
    assert_answered(
        &review(&jg, "--http1.1", Some(&second)),
        "1.1",
        "second CA, bad bundle on disk",
    );
    assert_refused(
        &jg,
        "--http1.1",
        None,
        NO_CERTIFICATE,
        "no certificate, bad bundle on disk",
    );

    assert!(jg.terminate(Duration::from_secs(20)).is_some());
    let stderr = jg.log_after_exit();
    assert_eq!(
        stderr.matches("new TLS files rejected").count(),
        1,
        "logged once: {stderr}"
    );
    assert!(
        stderr.contains("client-ca.crt: no PEM certificate found"),
        "{stderr}"
    );
}
