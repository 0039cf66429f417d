//! When the serving certificate expires: the leaf's `notAfter`, for
//! `jobgate_tls_certificate_expiration_timestamp_seconds` (named like cert-manager's
//! `certmanager_certificate_expiration_timestamp_seconds`, so one alert shape fits both).

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// `notAfter` of the first certificate of a PEM chain (the leaf: rustls serves `chain[0]` as the
/// end-entity certificate), in seconds since the Unix epoch.
pub(crate) fn not_after(cert_pem: &[u8]) -> Result<i64, String> {
    let leaf = CertificateDer::pem_slice_iter(cert_pem)
        .next()
        .ok_or("no PEM certificate found")?
        .map_err(|e| e.to_string())?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
        .map_err(|e| format!("not an X.509 certificate: {e}"))?;
    Ok(cert.validity().not_after.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn bundle(validity_days: u64) -> crate::certs::Bundle {
        crate::certs::generate(
            "jobgate",
            &["localhost".into()],
            Duration::from_secs(validity_days * 86_400),
            UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        )
        .unwrap()
    }

    #[test]
    fn not_after_is_the_leafs_validity_end_in_unix_seconds() {
        let leaf = bundle(90);
        let expected = 1_800_000_000 + 90 * 86_400;
        assert_eq!(not_after(leaf.cert_pem.as_bytes()), Ok(expected));
        // Only the first certificate counts: a shorter-lived one after it changes nothing.
        let chain = format!("{}{}", leaf.cert_pem, bundle(1).cert_pem);
        assert_eq!(not_after(chain.as_bytes()), Ok(expected));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert_eq!(
            not_after(b"no pem here"),
            Err("no PEM certificate found".into())
        );
        let not_x509 = "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n";
        let err = not_after(not_x509.as_bytes()).unwrap_err();
        assert!(err.starts_with("not an X.509 certificate"), "{err}");
    }
}
