//! Whether a certificate chains to a CA and is valid for a name, as a TLS client decides
//! (rustls, webpki).

/// The certificates of a PEM file.
pub fn pem_certs(pem: &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .expect("PEM certificates")
}

/// `cert_pem` chains to `ca_pem` and is valid now for `name` (rustls/webpki, as a TLS client).
pub fn verifies_for(ca_pem: &[u8], cert_pem: &[u8], name: &str) -> bool {
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::{ServerName, UnixTime};
    jobgate::server::tls::install_crypto_provider();
    let mut roots = rustls::RootCertStore::empty();
    for ca in pem_certs(ca_pem) {
        roots.add(ca).expect("CA certificate");
    }
    let verifier = rustls::client::WebPkiServerVerifier::builder(roots.into())
        .build()
        .expect("verifier");
    let chain = pem_certs(cert_pem);
    verifier
        .verify_server_cert(
            &chain[0],
            &chain[1..],
            &ServerName::try_from(name.to_string()).expect("a DNS name"),
            &[],
            UnixTime::now(),
        )
        .is_ok()
}
