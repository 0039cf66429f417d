//! The leaf of a PEM certificate chain (rustls serves `chain[0]` as the end-entity certificate),
//! parsed once for what jobgate reads in it: its expiry, the names it covers.

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

/// Parses the first certificate of `cert_pem` and hands it to `read`.
pub(crate) fn with_leaf<T>(
    cert_pem: &[u8],
    read: impl FnOnce(&X509Certificate<'_>) -> Result<T, String>,
) -> Result<T, String> {
    let leaf = CertificateDer::pem_slice_iter(cert_pem)
        .next()
        .ok_or("no PEM certificate found")?
        .map_err(|e| e.to_string())?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
        .map_err(|e| format!("not an X.509 certificate: {e}"))?;
    read(&cert)
}

/// The certificate's subjectAltName DNS names, in order (none without the extension).
pub(crate) fn dns_names<'a>(cert: &'a X509Certificate<'_>) -> Result<Vec<&'a str>, String> {
    match cert.subject_alternative_name() {
        Ok(Some(san)) => Ok(san
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                GeneralName::DNSName(name) => Some(*name),
                _ => None,
            })
            .collect()),
        Ok(None) => Ok(Vec::new()),
        Err(e) => Err(format!("unreadable subjectAltName: {e}")),
    }
}
