//! The certificates jobgate makes: a CA and a serving certificate it signs (rcgen). Both
//! `jobgate certs` (an install's pair) and `serve`'s dev mode (a throw-away pair) make theirs
//! here, so neither the command nor the server reaches into the other for it.

use std::time::{Duration, SystemTime};

/// A CA certificate and a serving certificate and key it signed, all PEM: what `jobgate certs`
/// writes, and what dev mode serves with.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The self-signed CA certificate.
    pub ca_cert_pem: String,
    /// The serving certificate, signed by the CA.
    pub cert_pem: String,
    /// The serving certificate's private key (PKCS#8).
    pub key_pem: String,
}

/// Key or certificate generation failed (rcgen), or `now + validity` is out of range.
#[derive(Debug, thiserror::Error)]
#[error("cannot generate the certificates: {0}")]
pub struct GenerateError(String);

/// Certificates are valid from this long before they are made, for clocks a little behind.
const CLOCK_SKEW_ALLOWANCE: Duration = Duration::from_secs(3600);

/// Generates a CA named `ca_common_name` and a serving certificate it signs for `sans` (DNS names
/// or IP addresses; the first is also the subject's common name), both valid from
/// `now - CLOCK_SKEW_ALLOWANCE` to `now + validity`. Keys are ECDSA P-256; the key is PKCS#8 PEM.
pub fn generate(
    ca_common_name: &str,
    sans: &[String],
    validity: Duration,
    now: SystemTime,
) -> Result<Bundle, GenerateError> {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
        IsCa, KeyPair, KeyUsagePurpose,
    };
    let err = |e: rcgen::Error| GenerateError(e.to_string());
    let not_before = now
        .checked_sub(CLOCK_SKEW_ALLOWANCE)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let not_after = now
        .checked_add(validity)
        .ok_or_else(|| GenerateError(format!("validity {validity:?} is too long")))?;

    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, ca_common_name);
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_before = not_before.into();
    ca_params.not_after = not_after.into();
    let ca =
        CertifiedIssuer::self_signed(ca_params, KeyPair::generate().map_err(err)?).map_err(err)?;

    let mut leaf_params = CertificateParams::new(sans.to_vec()).map_err(err)?;
    if let Some(first) = sans.first() {
        leaf_params
            .distinguished_name
            .push(DnType::CommonName, first.as_str());
    }
    // ECDSA keys sign; keyEncipherment is for RSA key transport (RFC 5480 section 3).
    leaf_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf_params.not_before = not_before.into();
    leaf_params.not_after = not_after.into();
    let leaf_key = KeyPair::generate().map_err(err)?;
    let leaf = leaf_params.signed_by(&leaf_key, &ca).map_err(err)?;
    Ok(Bundle {
        ca_cert_pem: ca.pem(),
        cert_pem: leaf.pem(),
        key_pem: leaf_key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    use super::*;

    #[test]
    fn generated_pair_loads_into_a_rustls_server_config() {
        let sans = ["jobgate.jobgate-system.svc".to_string()];
        let bundle = generate(
            "test CA",
            &sans,
            Duration::from_secs(86_400),
            SystemTime::now(),
        )
        .unwrap();
        assert!(bundle.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let chain = CertificateDer::pem_slice_iter(bundle.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(bundle.key_pem.as_bytes()).unwrap();
        // rustls checks that the key is the certificate's.
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    }

    #[test]
    fn a_validity_past_the_end_of_time_is_an_error_not_a_panic() {
        let e = generate("CA", &[], Duration::MAX, SystemTime::now()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot generate the certificates: validity"),
            "{e}"
        );
    }
}
