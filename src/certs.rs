//! `jobgate certs`: a CA and a serving certificate for the webhook Service, written where
//! `deploy/overlays/self-signed` reads them, with the kustomize patch that puts the CA in the
//! webhook configurations' `caBundle`.
//!
//! The certificates themselves are made by [`crate::pki::generate`]; [`run`] is the command.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use base64::Engine as _;

use crate::pki;

/// The name of both webhook configurations in `deploy/base`.
pub(crate) const WEBHOOK_CONFIGURATION_NAME: &str = "jobgate";
/// The entries of the MutatingWebhookConfiguration in `deploy/base`, in order.
pub const MUTATING_WEBHOOK_NAMES: [&str; 2] = ["mutate.jobgate.dev", "mutate-recovery.jobgate.dev"];
/// The entries of the ValidatingWebhookConfiguration in `deploy/base`.
pub const VALIDATING_WEBHOOK_NAMES: [&str; 1] = ["validate.jobgate.dev"];

/// The files `jobgate certs` writes into `--out`.
pub const CA_CERT_FILE: &str = "ca.crt";
/// The serving certificate's file in `--out`.
pub const TLS_CERT_FILE: &str = "tls.crt";
/// The serving key's file in `--out` (mode 0600).
pub const TLS_KEY_FILE: &str = "tls.key";
/// The caBundle kustomize patch's file in `--out`.
pub const CA_BUNDLE_PATCH_FILE: &str = "cabundle-patch.yaml";

/// Generate the webhook's CA, serving certificate and key, and the caBundle kustomize patch.
#[derive(Debug, Clone, clap::Args)]
pub struct CertsArgs {
    /// Name of the Service in front of the webhook. Default: the Service the certificate
    /// already in --out names (a rotation keeps it), else `jobgate`.
    #[arg(long, env = "JOBGATE_CERTS_SERVICE")]
    pub service: Option<String>,
    /// Namespace of the Service. Default: the namespace the certificate already in --out names
    /// (a rotation keeps it), else `jobgate-system`.
    #[arg(long, env = "JOBGATE_CERTS_NAMESPACE")]
    pub namespace: Option<String>,
    /// Directory to write ca.crt, tls.crt, tls.key (mode 0600) and cabundle-patch.yaml to
    /// (created if missing; existing files are replaced).
    #[arg(long, env = "JOBGATE_CERTS_OUT")]
    pub out: PathBuf,
    /// Validity of the CA and the serving certificate, in days.
    #[arg(long, env = "JOBGATE_CERTS_VALIDITY_DAYS", default_value_t = 365,
          value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub validity_days: u32,
    /// Keep trusting the CA of the previous run: the caBundle patch holds the new CA and the
    /// `ca.crt` found in `--out` before it is replaced. For rotation without a window in which
    /// kube-apiserver trusts only the new CA while pods still serve the old certificate (kubelet
    /// updates mounted Secrets up to a minute or two after an apply). Drop it at the next run.
    #[arg(long, env = "JOBGATE_CERTS_KEEP_PREVIOUS_CA")]
    pub keep_previous_ca: bool,
    /// Issue for --service/--namespace although the certificate already in --out names another
    /// Service: only when the install moves there too (otherwise kube-apiserver's calls to the
    /// Service it has fail the TLS handshake).
    #[arg(long, env = "JOBGATE_CERTS_ALLOW_RENAME")]
    pub allow_rename: bool,
}

/// The Service `jobgate certs` issues for when neither --out nor a flag names one.
pub(crate) const DEFAULT_SERVICE: &str = "jobgate";
/// The namespace `jobgate certs` issues for when neither --out nor a flag names one.
pub(crate) const DEFAULT_NAMESPACE: &str = "jobgate-system";

/// Why `jobgate certs` failed.
#[derive(Debug, thiserror::Error)]
pub enum CertsError {
    /// `--service` or `--namespace` is not an RFC 1123 label.
    #[error(
        "--{flag} {value:?} is not a DNS label (RFC 1123: 1-63 of a-z, 0-9, '-', alphanumeric at both ends)"
    )]
    NotADnsLabel {
        /// The flag's name without dashes: `service` or `namespace`.
        flag: &'static str,
        /// The value given.
        value: String,
    },
    /// Key or certificate generation failed (rcgen), or `now + validity` is out of range.
    #[error(transparent)]
    Generate(#[from] pki::GenerateError),
    /// With `--keep-previous-ca`, the `ca.crt` in `--out` exists but cannot be read or holds no
    /// PEM certificate.
    #[error("--keep-previous-ca: {} is not a PEM certificate ({message})", path.display())]
    PreviousCa {
        /// The previous `ca.crt`.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// `--service`/`--namespace` name another Service than the certificate already in `--out`,
    /// without `--allow-rename`.
    #[error(
        "{} names {existing}, but --service/--namespace ask for {asked}: the new certificate would \
         not cover the Service kube-apiserver calls while the install stays where it is. Leave \
         --service and --namespace out to keep {existing}, or add --allow-rename when the install \
         moves to {asked}",
        path.display()
    )]
    Rename {
        /// The existing `tls.crt`.
        path: PathBuf,
        /// `<service>.<namespace>.svc` it names.
        existing: String,
        /// `<service>.<namespace>.svc` asked for.
        asked: String,
    },
    /// The `tls.crt` already in `--out` cannot be read as a certificate of a Service, so the
    /// Service to keep is unknown.
    #[error(
        "{}: {message}; pass --service and --namespace (and --allow-rename), or remove the file",
        path.display()
    )]
    Existing {
        /// The existing `tls.crt`.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Creating `--out` or writing a file in it failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The directory or file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The names kube-apiserver may use for a Service: `<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc` (what
/// it actually dials for a webhook `clientConfig.service`) and `<svc>.<ns>.svc.cluster.local`.
pub fn service_dns_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// The kustomize strategic-merge patch that sets `caBundle` on every entry of both webhook
/// configurations in `deploy/base` (entries are merged by `name`) to the concatenated PEM CAs.
pub(crate) fn ca_bundle_patch(ca_certs_pem: &str) -> String {
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_certs_pem);
    let entries = |names: &[&str]| -> String {
        names
            .iter()
            .map(|name| {
                format!("  - name: {name}\n    clientConfig:\n      caBundle: {ca_bundle}\n")
            })
            .collect()
    };
    format!(
        "# Written by `jobgate certs`: the CA that signed tls.crt, as the webhooks' caBundle.\n\
         apiVersion: admissionregistration.k8s.io/v1\n\
         kind: MutatingWebhookConfiguration\n\
         metadata:\n  name: {WEBHOOK_CONFIGURATION_NAME}\n\
         webhooks:\n{}\
         ---\n\
         apiVersion: admissionregistration.k8s.io/v1\n\
         kind: ValidatingWebhookConfiguration\n\
         metadata:\n  name: {WEBHOOK_CONFIGURATION_NAME}\n\
         webhooks:\n{}",
        entries(&MUTATING_WEBHOOK_NAMES),
        entries(&VALIDATING_WEBHOOK_NAMES),
    )
}

/// An RFC 1123 label, as Kubernetes requires of Service and Namespace names.
fn is_dns_label(s: &str) -> bool {
    crate::names::is_dns1123_label(s).is_empty()
}

/// What [`write`] wrote, for the command's output.
#[derive(Debug, Clone)]
pub struct WrittenFiles {
    /// The CA certificate file.
    pub ca_cert: PathBuf,
    /// The serving certificate file.
    pub tls_cert: PathBuf,
    /// The serving key file.
    pub tls_key: PathBuf,
    /// The caBundle patch file.
    pub(crate) ca_bundle_patch: PathBuf,
    /// The Service the certificate names.
    pub service: String,
    /// Its namespace.
    pub namespace: String,
}

/// The Service (name, namespace) a serving certificate names: its `<service>.<namespace>.svc`
/// subjectAltName, the one kube-apiserver dials. `None` when it names none.
pub fn service_of(cert_pem: &[u8]) -> Result<Option<(String, String)>, String> {
    crate::server::leaf::with_leaf(cert_pem, |cert| {
        Ok(crate::server::leaf::dns_names(cert)?
            .into_iter()
            .find_map(|dns| {
                let (service, namespace) = dns.strip_suffix(".svc")?.split_once('.')?;
                (is_dns_label(service) && is_dns_label(namespace))
                    .then(|| (service.to_string(), namespace.to_string()))
            }))
    })
}

/// The Service to issue for: the flags, else the one the certificate in `--out` names (a
/// rotation keeps it), else the defaults. Flags naming another Service than that certificate are
/// refused unless `--allow-rename`.
fn service_to_issue_for(args: &CertsArgs) -> Result<(String, String), CertsError> {
    let path = args.out.join(TLS_CERT_FILE);
    let existing = match std::fs::read(&path) {
        Ok(pem) => match service_of(&pem) {
            Ok(found) => found,
            Err(message) if !args.allow_rename => {
                return Err(CertsError::Existing { path, message });
            }
            Err(_) => None,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(CertsError::Existing {
                path,
                message: e.to_string(),
            });
        }
    };
    let (kept_service, kept_namespace) = existing
        .clone()
        .unwrap_or_else(|| (DEFAULT_SERVICE.to_string(), DEFAULT_NAMESPACE.to_string()));
    let service = args.service.clone().unwrap_or(kept_service);
    let namespace = args.namespace.clone().unwrap_or(kept_namespace);
    if let Some((old_service, old_namespace)) = existing
        && (old_service != service || old_namespace != namespace)
        && !args.allow_rename
    {
        return Err(CertsError::Rename {
            path,
            existing: format!("{old_service}.{old_namespace}.svc"),
            asked: format!("{service}.{namespace}.svc"),
        });
    }
    Ok((service, namespace))
}

/// Generates the bundle for `args` at time `now` and writes the four files. Returns what was
/// written and the Service it was issued for.
pub fn write(args: &CertsArgs, now: SystemTime) -> Result<WrittenFiles, CertsError> {
    for (flag, value) in [("service", &args.service), ("namespace", &args.namespace)] {
        if let Some(value) = value
            && !is_dns_label(value)
        {
            return Err(CertsError::NotADnsLabel {
                flag,
                value: value.clone(),
            });
        }
    }
    let (service, namespace) = service_to_issue_for(args)?;
    let sans = service_dns_names(&service, &namespace);
    let ca_common_name = format!("jobgate CA for {service}.{namespace}.svc");
    let validity = Duration::from_secs(u64::from(args.validity_days) * 86_400);
    let previous_ca = if args.keep_previous_ca {
        previous_ca(&args.out.join(CA_CERT_FILE))?
    } else {
        None
    };
    let bundle = pki::generate(&ca_common_name, &sans, validity, now)?;
    let mut trusted = bundle.ca_cert_pem.clone();
    if let Some(previous) = previous_ca {
        if !trusted.ends_with('\n') {
            trusted.push('\n');
        }
        trusted.push_str(&previous);
    }

    std::fs::create_dir_all(&args.out).map_err(|source| CertsError::Write {
        path: args.out.clone(),
        source,
    })?;
    let written = WrittenFiles {
        ca_cert: args.out.join(CA_CERT_FILE),
        tls_cert: args.out.join(TLS_CERT_FILE),
        tls_key: args.out.join(TLS_KEY_FILE),
        ca_bundle_patch: args.out.join(CA_BUNDLE_PATCH_FILE),
        service,
        namespace,
    };
    // The key first: a failure later leaves a directory that the overlay will not render from,
    // never a new certificate next to an old key.
    write_atomically(&written.tls_key, bundle.key_pem.as_bytes(), 0o600)?;
    write_atomically(&written.tls_cert, bundle.cert_pem.as_bytes(), 0o644)?;
    write_atomically(&written.ca_cert, bundle.ca_cert_pem.as_bytes(), 0o644)?;
    write_atomically(
        &written.ca_bundle_patch,
        ca_bundle_patch(&trusted).as_bytes(),
        0o644,
    )?;
    Ok(written)
}

/// The CA certificates in `path`, if it exists; an error if it exists but holds none.
fn previous_ca(path: &Path) -> Result<Option<String>, CertsError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let pem = match std::fs::read_to_string(path) {
        Ok(pem) => pem,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CertsError::PreviousCa {
                path: path.into(),
                message: e.to_string(),
            });
        }
    };
    let certs: Result<Vec<CertificateDer<'_>>, _> =
        CertificateDer::pem_slice_iter(pem.as_bytes()).collect();
    match certs {
        Ok(certs) if !certs.is_empty() => Ok(Some(pem)),
        Ok(_) => Err(CertsError::PreviousCa {
            path: path.into(),
            message: "no certificate".into(),
        }),
        Err(e) => Err(CertsError::PreviousCa {
            path: path.into(),
            message: e.to_string(),
        }),
    }
}

/// `jobgate certs`.
pub fn run(args: &CertsArgs) -> Result<(), CertsError> {
    let written = write(args, SystemTime::now())?;
    println!(
        "jobgate certs: CA and serving certificate for {} valid for {} days:",
        service_dns_names(&written.service, &written.namespace).join(", "),
        args.validity_days
    );
    for path in [
        &written.ca_cert,
        &written.tls_cert,
        &written.tls_key,
        &written.ca_bundle_patch,
    ] {
        println!("  {}", path.display());
    }
    println!("never commit tls.key; {}", install_hint(&written));
    Ok(())
}

/// How to install with these files: the self-signed overlay installs into `jobgate-system`;
/// another namespace needs an overlay of it that says so (docs/src/install.md).
fn install_hint(written: &WrittenFiles) -> String {
    if written.service != DEFAULT_SERVICE {
        return format!(
            "the installs name the Service {DEFAULT_SERVICE}: kube-apiserver will call \
             {DEFAULT_SERVICE}.{}.svc, not {}.{}.svc, unless your install renames it",
            written.namespace, written.service, written.namespace
        );
    }
    if written.namespace == DEFAULT_NAMESPACE {
        return "install with: kubectl apply -k deploy/overlays/self-signed".to_string();
    }
    format!(
        "install into {ns} with an overlay of deploy/overlays/self-signed that sets \
         `namespace: {ns}` and the transformer deploy/namespace (docs/src/install.md, \
         \"Another namespace\"); deploy/overlays/self-signed alone installs into {DEFAULT_NAMESPACE}, \
         where this certificate does not fit",
        ns = written.namespace
    )
}

/// Writes `contents` to a temporary file next to `path`, then renames it over `path`, so a reader
/// sees the old file or the new one, never half of one.
fn write_atomically(path: &Path, contents: &[u8], mode: u32) -> Result<(), CertsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{file_name}.tmp"));
    let result = (|| -> std::io::Result<()> {
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        CertsError::Write {
            path: path.into(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_dns_names_are_the_four_forms_kube_apiserver_may_dial() {
        assert_eq!(
            service_dns_names("jobgate", "jobgate-system"),
            [
                "jobgate",
                "jobgate.jobgate-system",
                "jobgate.jobgate-system.svc",
                "jobgate.jobgate-system.svc.cluster.local"
            ]
        );
    }

    #[test]
    fn dns_labels_follow_rfc_1123() {
        for ok in ["jobgate", "jobgate-system", "a", "0x", &"a".repeat(63)] {
            assert!(is_dns_label(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "Jobgate", "a.b", "a_b", &"a".repeat(64)] {
            assert!(!is_dns_label(bad), "{bad}");
        }
    }

    #[test]
    fn write_refuses_a_service_that_is_not_a_dns_label() {
        let dir = tempfile::tempdir().unwrap();
        let args = CertsArgs {
            service: Some("Job_Gate".into()),
            namespace: None,
            out: dir.path().join("out"),
            validity_days: 1,
            keep_previous_ca: false,
            allow_rename: false,
        };
        let e = write(&args, SystemTime::now()).unwrap_err().to_string();
        assert!(
            e.starts_with("--service \"Job_Gate\" is not a DNS label"),
            "{e}"
        );
        assert!(!args.out.exists());
    }

    #[test]
    fn ca_bundle_patch_names_every_webhook_entry_with_the_base64_ca() {
        let patch = ca_bundle_patch("-----BEGIN CERTIFICATE-----\nAB\n-----END CERTIFICATE-----\n");
        let b64 = base64::engine::general_purpose::STANDARD
            .encode("-----BEGIN CERTIFICATE-----\nAB\n-----END CERTIFICATE-----\n");
        let docs: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&patch)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["kind"], "MutatingWebhookConfiguration");
        assert_eq!(docs[1]["kind"], "ValidatingWebhookConfiguration");
        let names = |doc: &serde_json::Value| -> Vec<String> {
            doc["webhooks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| {
                    assert_eq!(w["clientConfig"]["caBundle"], b64.as_str());
                    w["name"].as_str().unwrap().to_string()
                })
                .collect()
        };
        assert_eq!(names(&docs[0]), MUTATING_WEBHOOK_NAMES);
        assert_eq!(names(&docs[1]), VALIDATING_WEBHOOK_NAMES);
    }

    fn ca_bundle_of(patch: &str) -> Vec<u8> {
        let first_line = patch
            .lines()
            .find_map(|l| l.trim().strip_prefix("caBundle: "))
            .unwrap();
        base64::engine::general_purpose::STANDARD
            .decode(first_line)
            .unwrap()
    }

    #[test]
    fn keep_previous_ca_trusts_the_old_and_the_new_ca_then_only_the_newer_two() {
        let dir = tempfile::tempdir().unwrap();
        let mut args = CertsArgs {
            service: None,
            namespace: Some("platform-jobs".into()),
            out: dir.path().to_path_buf(),
            validity_days: 1,
            keep_previous_ca: true,
            allow_rename: false,
        };
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        // First run: nothing to keep.
        let w = write(&args, SystemTime::now()).unwrap();
        let first_ca = read(&w.ca_cert);
        assert_eq!(ca_bundle_of(&read(&w.ca_bundle_patch)), first_ca.as_bytes());
        // Rotation: new CA first, then the previous one.
        write(&args, SystemTime::now()).unwrap();
        let second_ca = read(&w.ca_cert);
        assert_ne!(first_ca, second_ca);
        assert_eq!(
            ca_bundle_of(&read(&w.ca_bundle_patch)),
            format!("{second_ca}{first_ca}").as_bytes()
        );
        // Without the flag only the new CA is trusted.
        args.keep_previous_ca = false;
        write(&args, SystemTime::now()).unwrap();
        assert_eq!(
            ca_bundle_of(&read(&w.ca_bundle_patch)),
            read(&w.ca_cert).as_bytes()
        );
        // Every rotation kept the namespace of the first run, given once.
        assert_eq!(
            service_of(read(&w.tls_cert).as_bytes()).unwrap(),
            Some(("jobgate".to_string(), "platform-jobs".to_string()))
        );
        // A ca.crt that is not a certificate is an error, and nothing is replaced.
        args.keep_previous_ca = true;
        std::fs::write(&w.ca_cert, "garbage").unwrap();
        let key_before = read(&w.tls_key);
        let e = write(&args, SystemTime::now()).unwrap_err().to_string();
        assert!(e.contains("is not a PEM certificate"), "{e}");
        assert_eq!(read(&w.tls_key), key_before);
    }

    fn sans_of(path: &Path) -> Vec<String> {
        let pem = std::fs::read(path).unwrap();
        let der = {
            use rustls::pki_types::CertificateDer;
            use rustls::pki_types::pem::PemObject;
            CertificateDer::from_pem_slice(&pem).unwrap()
        };
        let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).unwrap();
        cert.subject_alternative_name()
            .unwrap()
            .unwrap()
            .value
            .general_names
            .iter()
            .map(|n| match n {
                x509_parser::extensions::GeneralName::DNSName(d) => d.to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    /// The yearly rotation as documented, `jobgate certs --keep-previous-ca --out DIR`, reissues
    /// for the Service the certificate in DIR names, not for the defaults; naming another one is
    /// refused (nothing written) unless the install moves (`--allow-rename`).
    #[test]
    fn a_rotation_keeps_the_service_the_certificate_names_and_refuses_another_unless_moving() {
        let dir = tempfile::tempdir().unwrap();
        let args = |service: Option<&str>, namespace: Option<&str>, allow_rename| CertsArgs {
            service: service.map(str::to_string),
            namespace: namespace.map(str::to_string),
            out: dir.path().to_path_buf(),
            validity_days: 30,
            keep_previous_ca: true,
            allow_rename,
        };
        let first = write(
            &args(Some("jg"), Some("platform-jobs"), false),
            SystemTime::now(),
        )
        .unwrap();
        assert_eq!(
            (first.service.as_str(), first.namespace.as_str()),
            ("jg", "platform-jobs")
        );
        let issued = sans_of(&first.tls_cert);
        assert_eq!(issued, service_dns_names("jg", "platform-jobs"));

        let rotated = write(&args(None, None, false), SystemTime::now()).unwrap();
        assert_eq!(
            sans_of(&rotated.tls_cert),
            issued,
            "the rotation kept the names"
        );
        // Naming the same Service again is no rename.
        write(&args(Some("jg"), None, false), SystemTime::now()).unwrap();

        let before = std::fs::read(&rotated.tls_cert).unwrap();
        let e = write(
            &args(None, Some("jobgate-system"), false),
            SystemTime::now(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.ends_with(
                "names jg.platform-jobs.svc, but --service/--namespace ask for \
                 jg.jobgate-system.svc: the new certificate would not cover the Service \
                 kube-apiserver calls while the install stays where it is. Leave --service and \
                 --namespace out to keep jg.platform-jobs.svc, or add --allow-rename when the \
                 install moves to jg.jobgate-system.svc"
            ),
            "{e}"
        );
        assert_eq!(
            std::fs::read(&rotated.tls_cert).unwrap(),
            before,
            "nothing written"
        );

        let moved = write(&args(None, Some("team-a"), true), SystemTime::now()).unwrap();
        assert_eq!(sans_of(&moved.tls_cert), service_dns_names("jg", "team-a"));
    }

    #[test]
    fn the_install_hint_names_the_namespace_the_certificate_is_for() {
        let written = |service: &str, namespace: &str| WrittenFiles {
            ca_cert: "ca.crt".into(),
            tls_cert: "tls.crt".into(),
            tls_key: "tls.key".into(),
            ca_bundle_patch: "cabundle-patch.yaml".into(),
            service: service.into(),
            namespace: namespace.into(),
        };
        assert_eq!(
            install_hint(&written("jobgate", "jobgate-system")),
            "install with: kubectl apply -k deploy/overlays/self-signed"
        );
        let other = install_hint(&written("jobgate", "platform-jobs"));
        assert!(
            other.starts_with("install into platform-jobs with an overlay"),
            "{other}"
        );
        assert!(other.contains("`namespace: platform-jobs`"), "{other}");
        let renamed = install_hint(&written("jg", "platform-jobs"));
        assert!(
            renamed.contains("jobgate.platform-jobs.svc, not jg.platform-jobs.svc"),
            "{renamed}"
        );
    }
}
