//! When the serving certificate expires: the leaf's `notAfter`, for
//! `jobgate_tls_certificate_expiration_timestamp_seconds` (named like cert-manager's
//! `certmanager_certificate_expiration_timestamp_seconds`, so one alert shape fits both).

/// `notAfter` of the first certificate of a PEM chain (the leaf: rustls serves `chain[0]` as the
/// end-entity certificate), in seconds since the Unix epoch.
pub(crate) fn not_after(cert_pem: &[u8]) -> Result<i64, String> {
    super::leaf::with_leaf(cert_pem, |cert| Ok(cert.validity().not_after.timestamp()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn bundle(validity_days: u64) -> crate::pki::Bundle {
        crate::pki::generate(
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
