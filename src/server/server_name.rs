//! Whether the serving certificate names the host kube-apiserver dials for a webhook
//! `clientConfig.service`: `<service>.<namespace>.svc` (k8s.io/apiserver/pkg/util/webhook,
//! `ServiceResolver` and the client's `ServerName`). A certificate that does not name it fails
//! every handshake, and with `failurePolicy: Fail` every Job write with it, so `serve` reports
//! not-ready with it (`--tls-server-name`) and never swaps it in on a reload.

use super::leaf::{dns_names, with_leaf};

/// `Ok` when the leaf of `cert_pem` (the first certificate, the one rustls serves) names `host`
/// in its subjectAltName DNS names, as a TLS client checks it (RFC 6125 section 6.4: ASCII
/// case-insensitive, a `*` only as the whole left-most label, matching exactly one label).
/// `Err` lists the names it has instead.
pub(crate) fn names_host(cert_pem: &[u8], host: &str) -> Result<(), String> {
    with_leaf(cert_pem, |cert| {
        let names = dns_names(cert)?;
        if names.iter().any(|name| dns_name_matches(name, host)) {
            return Ok(());
        }
        Err(if names.is_empty() {
            "it has no DNS subjectAltName".to_string()
        } else {
            format!("it names {}", names.join(", "))
        })
    })
}

fn dns_name_matches(pattern: &str, host: &str) -> bool {
    let (pattern, host) = (pattern.trim_end_matches('.'), host.trim_end_matches('.'));
    match pattern.strip_prefix("*.") {
        Some(parent) => host
            .split_once('.')
            .is_some_and(|(label, rest)| !label.is_empty() && rest.eq_ignore_ascii_case(parent)),
        None => pattern.eq_ignore_ascii_case(host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn cert(sans: &[&str]) -> String {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        crate::pki::generate(
            "test CA",
            &sans,
            Duration::from_secs(86_400),
            SystemTime::now(),
        )
        .unwrap()
        .cert_pem
    }

    #[test]
    fn the_service_name_kube_apiserver_dials_must_be_a_dns_san() {
        // The four names `jobgate certs` issues for a Service.
        let pem = cert(&[
            "jobgate",
            "jobgate.platform-jobs",
            "jobgate.platform-jobs.svc",
            "jobgate.platform-jobs.svc.cluster.local",
        ]);
        assert_eq!(
            names_host(pem.as_bytes(), "jobgate.platform-jobs.svc"),
            Ok(())
        );
        assert_eq!(
            names_host(pem.as_bytes(), "JOBGATE.platform-jobs.svc."),
            Ok(())
        );
        let err = names_host(pem.as_bytes(), "jobgate.jobgate-system.svc").unwrap_err();
        assert_eq!(
            err,
            "it names jobgate, jobgate.platform-jobs, jobgate.platform-jobs.svc, \
             jobgate.platform-jobs.svc.cluster.local"
        );
    }

    #[test]
    fn a_wildcard_covers_one_left_most_label_only() {
        let pem = cert(&["*.platform-jobs.svc"]);
        assert_eq!(names_host(pem.as_bytes(), "jg.platform-jobs.svc"), Ok(()));
        assert!(names_host(pem.as_bytes(), "a.jg.platform-jobs.svc").is_err());
        assert!(names_host(pem.as_bytes(), "platform-jobs.svc").is_err());
    }

    #[test]
    fn ip_addresses_and_garbage_name_no_host() {
        let pem = cert(&["127.0.0.1"]);
        assert_eq!(
            names_host(pem.as_bytes(), "jobgate.ns.svc"),
            Err("it has no DNS subjectAltName".into())
        );
        assert_eq!(
            names_host(b"nothing", "jobgate.ns.svc"),
            Err("no PEM certificate found".into())
        );
    }
}
