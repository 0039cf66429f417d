//! `jobgate certs`: the CA and the serving certificate it writes chain, name exactly the
//! Service's DNS names and expire when asked, as rustls (webpki) and `openssl` (Debian's, which
//! `tests/run` installs) verify them; the command as a user runs it.

use std::process::Command;
use std::time::{Duration, SystemTime};

use jobgate::certs::{self, CertsArgs};
use support::certificate::pem_certs;

/// The Service the certificates are for, as deploy/ installs it (`tests/support/install.rs`).
const SERVICE: &str = "jobgate";
/// Its namespace.
const NAMESPACE: &str = "jobgate-system";

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod certificate;
}

#[test]
fn certs_output_chains_to_its_ca_for_every_service_name_and_nothing_else() {
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::{ServerName, UnixTime};
    jobgate::server::tls::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let args = CertsArgs {
        service: Some(SERVICE.into()),
        namespace: Some(NAMESPACE.into()),
        out: dir.path().join("out"),
        validity_days: 90,
        keep_previous_ca: false,
        allow_rename: false,
    };
    let now = SystemTime::now();
    let written = certs::write(&args, now).unwrap();

    let mut roots = rustls::RootCertStore::empty();
    for ca in pem_certs(&std::fs::read(&written.ca_cert).unwrap()) {
        roots.add(ca).unwrap();
    }
    let verifier = rustls::client::WebPkiServerVerifier::builder(roots.into())
        .build()
        .unwrap();
    let chain = pem_certs(&std::fs::read(&written.tls_cert).unwrap());
    assert_eq!(chain.len(), 1);
    let verify = |name: &str, at: SystemTime| {
        verifier.verify_server_cert(
            &chain[0],
            &[],
            &ServerName::try_from(name.to_string()).unwrap(),
            &[],
            UnixTime::since_unix_epoch(at.duration_since(SystemTime::UNIX_EPOCH).unwrap()),
        )
    };
    for name in certs::service_dns_names(SERVICE, NAMESPACE) {
        verify(&name, now).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    for wrong in [
        "jobgate.default.svc",
        "other.jobgate-system.svc",
        "localhost",
    ] {
        assert!(verify(wrong, now).is_err(), "{wrong} must not verify");
    }
    // Valid for --validity-days, not a day more.
    verify(
        "jobgate.jobgate-system.svc",
        now + Duration::from_secs(89 * 86_400),
    )
    .unwrap();
    assert!(
        verify(
            "jobgate.jobgate-system.svc",
            now + Duration::from_secs(91 * 86_400)
        )
        .is_err()
    );

    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&written.tls_key)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "tls.key is private");
    // The key is the certificate's: rustls refuses a mismatched pair.
    jobgate::server::tls::load_server_config(&written.tls_cert, &written.tls_key).unwrap();
}

fn openssl(args: &[&str]) -> String {
    match Command::new("openssl").args(args).output() {
        Ok(out) => {
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).expect("UTF-8")
        }
        Err(e) => panic!("cannot run openssl ({e}): tests/run installs it (Debian's openssl)"),
    }
}

#[test]
fn certs_output_verifies_with_openssl() {
    let dir = tempfile::tempdir().unwrap();
    let args = CertsArgs {
        service: Some(SERVICE.into()),
        namespace: Some(NAMESPACE.into()),
        out: dir.path().to_path_buf(),
        validity_days: 365,
        keep_previous_ca: false,
        allow_rename: false,
    };
    let w = certs::write(&args, SystemTime::now()).unwrap();
    let (ca, crt, key) = (
        w.ca_cert.to_str().unwrap(),
        w.tls_cert.to_str().unwrap(),
        w.tls_key.to_str().unwrap(),
    );
    let verified = openssl(&["verify", "-purpose", "sslserver", "-CAfile", ca, crt]);
    assert_eq!(verified.trim(), format!("{crt}: OK"));
    let san = openssl(&["x509", "-noout", "-ext", "subjectAltName", "-in", crt]);
    assert_eq!(
        san.lines().nth(1).map(str::trim),
        Some(
            "DNS:jobgate, DNS:jobgate.jobgate-system, DNS:jobgate.jobgate-system.svc, \
             DNS:jobgate.jobgate-system.svc.cluster.local"
        ),
        "{san}"
    );
    let cert_pubkey = openssl(&["x509", "-noout", "-pubkey", "-in", crt]);
    let key_pubkey = openssl(&["pkey", "-pubout", "-in", key]);
    assert_eq!(cert_pubkey, key_pubkey, "tls.key is the key of tls.crt");
    let leaf_text = openssl(&["x509", "-noout", "-text", "-in", crt]);
    let usage_after = |header: &str| -> Option<String> {
        let mut lines = leaf_text.lines();
        lines.find(|l| l.trim().starts_with(header))?;
        lines.next().map(|l| l.trim().to_string())
    };
    assert_eq!(
        usage_after("X509v3 Key Usage").as_deref(),
        Some("Digital Signature")
    );
    assert_eq!(
        usage_after("X509v3 Extended Key Usage").as_deref(),
        Some("TLS Web Server Authentication")
    );
    let ca_text = openssl(&["x509", "-noout", "-text", "-in", ca]);
    assert!(ca_text.contains("CA:TRUE"), "{ca_text}");
}

/// The command as a user runs it: flags, files, and what it prints.
#[test]
fn jobgate_certs_command_writes_the_four_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("certs");
    let run = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args([
            "certs",
            "--service",
            SERVICE,
            "--namespace",
            NAMESPACE,
            "--out",
        ])
        .arg(&out)
        .args(["--validity-days", "7"])
        .output()
        .expect("run jobgate certs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("jobgate.jobgate-system.svc.cluster.local"),
        "{stdout}"
    );
    for file in [
        certs::CA_CERT_FILE,
        certs::TLS_CERT_FILE,
        certs::TLS_KEY_FILE,
        certs::CA_BUNDLE_PATCH_FILE,
    ] {
        assert!(
            stdout.contains(&out.join(file).display().to_string()),
            "{stdout}"
        );
    }
    jobgate::server::tls::install_crypto_provider();
    jobgate::server::tls::load_server_config(&out.join("tls.crt"), &out.join("tls.key")).unwrap();

    // Names that are not Service/Namespace names are refused before anything is written.
    let bad = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args(["certs", "--namespace", "Jobgate_System", "--out"])
        .arg(dir.path().join("bad"))
        .output()
        .expect("run jobgate certs");
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr)
            .contains("--namespace \"Jobgate_System\" is not a DNS label"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert!(!dir.path().join("bad").exists());
}
