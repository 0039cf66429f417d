//! TLS for the webhook port: PEM loading, rustls configuration (TLS 1.2+, ALPN h2 and http/1.1),
//! optional client-certificate authentication (`--client-ca`), and dev mode's throw-away CA and
//! `localhost` serving certificate.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls::{RootCertStore, ServerConfig};

/// Why a TLS configuration could not be built, or dev mode's files not written.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate, key or client CA file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A certificate or client CA file holds no PEM certificate.
    #[error("{}: no PEM certificate found", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// A certificate or client CA file has a PEM block that cannot be read.
    #[error("{}: not a PEM certificate chain: {message}", path.display())]
    BadCertificate {
        /// The file.
        path: PathBuf,
        /// The PEM parser's message.
        message: String,
    },
    /// The key file holds no private key rustls can read.
    #[error("{}: not a PEM private key (PKCS#8, PKCS#1 or SEC1): {message}", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
        /// The PEM parser's message.
        message: String,
    },
    /// rustls refuses the certificate and key as a pair (the key does not match, or is of an
    /// unsupported type).
    #[error("{} and {} do not match: {message}", cert.display(), key.display())]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls' message.
        message: String,
    },
    /// The `--client-ca` certificates cannot be used as trust anchors for client certificates.
    #[error("{}: not a client CA bundle: {message}", path.display())]
    BadClientCa {
        /// The `--client-ca` file.
        path: PathBuf,
        /// Which certificate is wrong and why, or the verifier's message.
        message: String,
    },
    /// The certificate does not name the host kube-apiserver dials (`--tls-server-name`).
    #[error("{} does not name {server_name}, the Service kube-apiserver calls: {detail}", cert.display())]
    WrongName {
        /// The certificate file.
        cert: PathBuf,
        /// `--tls-server-name`.
        server_name: String,
        /// The names it has instead.
        detail: String,
    },
    /// Dev mode cannot create its directory or write a file in it.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The directory or file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Dev mode cannot generate its CA and certificate.
    #[error("cannot generate the dev certificate: {0}")]
    Generate(String),
}

/// Installs rustls' `ring` provider as the process default. Call once at start-up; later calls
/// are no-ops (a second, different provider would make rustls panic when building configs).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Reads a PEM certificate chain and private key and builds the server configuration.
#[cfg(any(test, feature = "test-support"))]
pub fn load_server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let cert_pem = std::fs::read(cert).map_err(|source| TlsError::Read {
        path: cert.into(),
        source,
    })?;
    let key_pem = std::fs::read(key).map_err(|source| TlsError::Read {
        path: key.into(),
        source,
    })?;
    server_config_from_pem(&cert_pem, &key_pem, cert, key)
}

/// Builds the server configuration from PEM bytes; `cert`/`key` name the sources in errors.
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn server_config_from_pem(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert: &Path,
    key: &Path,
) -> Result<Arc<ServerConfig>, TlsError> {
    server_config_with_client_auth(cert_pem, key_pem, cert, key, None)
}

/// Builds the verifier `--client-ca` asks for: a client must present a certificate that chains to
/// one of the CA certificates in `ca_pem` (PEM, one or more) and is valid now. As Kubewarden's
/// policy-server `--client-ca-file`: rustls' `WebPkiClientVerifier` with the CAs as its only
/// roots, client authentication mandatory, no CRLs. `path` names the source in errors.
pub(crate) fn client_verifier_from_pem(
    ca_pem: &[u8],
    path: &Path,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let cas: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(ca_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::BadCertificate {
            path: path.into(),
            message: e.to_string(),
        })?;
    if cas.is_empty() {
        return Err(TlsError::NoCertificate { path: path.into() });
    }
    let bad = |message: String| TlsError::BadClientCa {
        path: path.into(),
        message,
    };
    let mut roots = RootCertStore::empty();
    for (i, ca) in cas.into_iter().enumerate() {
        // A PEM block that is not an X.509 certificate webpki can use as a trust anchor.
        roots
            .add(ca)
            .map_err(|e| bad(format!("certificate {}: {e}", i + 1)))?;
    }
    // The ring provider explicitly, as `install_crypto_provider` makes it the process default:
    // the verifier checks signatures with the same algorithms the server configuration offers.
    WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    )
    .build()
    .map_err(|e| bad(e.to_string()))
}

/// As `server_config_from_pem`, requiring a client certificate `client_auth` accepts when it is
/// given (`--client-ca`).
pub(crate) fn server_config_with_client_auth(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert: &Path,
    key: &Path,
    client_auth: Option<Arc<dyn ClientCertVerifier>>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::BadCertificate {
            path: cert.into(),
            message: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate { path: cert.into() });
    }
    let private_key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::BadKey {
        path: key.into(),
        message: e.to_string(),
    })?;
    let builder = ServerConfig::builder_with_protocol_versions(&[
        &rustls::version::TLS13,
        &rustls::version::TLS12,
    ]);
    let builder = match client_auth {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let mut config =
        builder
            .with_single_cert(chain, private_key)
            .map_err(|e| TlsError::Mismatch {
                cert: cert.into(),
                key: key.into(),
                message: e.to_string(),
            })?;
    // kube-apiserver speaks HTTP/1.1 with keep-alive; curl and most tools prefer h2.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Dev mode's files: a throw-away CA and a serving certificate for `localhost` and `127.0.0.1`.
#[derive(Debug, Clone)]
pub struct DevCertificates {
    /// The directory the files are in.
    pub dir: PathBuf,
    /// The CA certificate file (`ca.crt`), for a client to trust.
    pub ca_cert: PathBuf,
    pub(crate) tls_cert: PathBuf,
    pub(crate) tls_key: PathBuf,
}

impl DevCertificates {
    /// Generates a new CA and `localhost` certificate and writes `ca.crt`, `tls.crt`, `tls.key`
    /// to `dir` (created if missing; the key is written with mode 0600).
    pub(crate) fn generate(dir: &Path) -> Result<DevCertificates, TlsError> {
        let bundle = generate_dev_bundle()?;
        std::fs::create_dir_all(dir).map_err(|source| TlsError::Write {
            path: dir.into(),
            source,
        })?;
        let files = DevCertificates {
            dir: dir.into(),
            ca_cert: dir.join("ca.crt"),
            tls_cert: dir.join("tls.crt"),
            tls_key: dir.join("tls.key"),
        };
        write_file(&files.ca_cert, bundle.ca_cert_pem.as_bytes(), 0o644)?;
        write_file(&files.tls_cert, bundle.cert_pem.as_bytes(), 0o644)?;
        write_file(&files.tls_key, bundle.key_pem.as_bytes(), 0o600)?;
        Ok(files)
    }
}

/// Dev mode's CA and certificate: a year is plenty for a throw-away.
const DEV_VALIDITY: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);

fn generate_dev_bundle() -> Result<crate::pki::Bundle, TlsError> {
    let sans = ["localhost".to_string(), "127.0.0.1".to_string()];
    crate::pki::generate(
        "jobgate dev CA (throw-away)",
        &sans,
        DEV_VALIDITY,
        std::time::SystemTime::now(),
    )
    .map_err(|e| TlsError::Generate(e.to_string()))
}

fn write_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(path)?;
        f.write_all(contents)
    };
    write().map_err(|source| TlsError::Write {
        path: path.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CA and a client certificate it signs (clientAuth), as kube-apiserver would present.
    fn client_pki(ca_name: &str) -> (String, CertificateDer<'static>) {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
            IsCa, KeyPair, KeyUsagePurpose,
        };
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name.push(DnType::CommonName, ca_name);
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let leaf = leaf.signed_by(&KeyPair::generate().unwrap(), &ca).unwrap();
        (ca.pem(), leaf.der().clone())
    }

    #[test]
    fn the_client_verifier_accepts_certificates_of_its_cas_only() {
        let (ca_a, client_a) = client_pki("client CA a");
        let (ca_b, client_b) = client_pki("client CA b");
        let now = rustls::pki_types::UnixTime::now();
        let path = Path::new("client-ca.crt");
        let only_a = client_verifier_from_pem(ca_a.as_bytes(), path).unwrap();
        assert!(only_a.client_auth_mandatory());
        assert!(only_a.verify_client_cert(&client_a, &[], now).is_ok());
        let e = only_a.verify_client_cert(&client_b, &[], now).unwrap_err();
        assert!(e.to_string().contains("UnknownIssuer"), "{e}");
        // A bundle of both CAs trusts both.
        let both = client_verifier_from_pem(format!("{ca_a}{ca_b}").as_bytes(), path).unwrap();
        assert!(both.verify_client_cert(&client_a, &[], now).is_ok());
        assert!(both.verify_client_cert(&client_b, &[], now).is_ok());
    }

    #[test]
    fn a_bad_client_ca_bundle_is_an_error_naming_the_file() {
        let path = Path::new("/etc/jobgate/client-ca/ca.crt");
        let e = |pem: &[u8]| {
            client_verifier_from_pem(pem, path)
                .err()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            e(b""),
            "/etc/jobgate/client-ca/ca.crt: no PEM certificate found"
        );
        let key = generate_dev_bundle().unwrap().key_pem;
        assert_eq!(
            e(key.as_bytes()),
            "/etc/jobgate/client-ca/ca.crt: no PEM certificate found"
        );
        // A CERTIFICATE block whose DER is no certificate.
        let garbage = "-----BEGIN CERTIFICATE-----\nAAECAwQF\n-----END CERTIFICATE-----\n";
        let got = e(garbage.as_bytes());
        assert!(
            got.starts_with(
                "/etc/jobgate/client-ca/ca.crt: not a client CA bundle: certificate 1:"
            ),
            "{got}"
        );
    }

    #[test]
    fn dev_certificates_load_into_a_server_config_with_alpn() {
        install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let files = DevCertificates::generate(dir.path()).unwrap();
        let config = load_server_config(&files.tls_cert, &files.tls_key).unwrap();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn errors_name_the_file() {
        install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let files = DevCertificates::generate(dir.path()).unwrap();
        let missing = dir.path().join("nope.crt");
        let e = load_server_config(&missing, &files.tls_key)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("cannot read {}", missing.display())),
            "{e}"
        );
        // A key that is not the certificate's.
        let other = generate_dev_bundle().unwrap();
        let other_key = dir.path().join("other.key");
        std::fs::write(&other_key, other.key_pem).unwrap();
        let e = load_server_config(&files.tls_cert, &other_key)
            .unwrap_err()
            .to_string();
        assert!(e.contains("do not match"), "{e}");
        assert!(e.contains("other.key"), "{e}");
        // A certificate file that holds no certificate.
        let e = load_server_config(&files.tls_key, &files.tls_key)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no PEM certificate found"), "{e}");
        let e = load_server_config(&files.tls_cert, &files.tls_cert)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a PEM private key"), "{e}");
    }
}
