//! Serving-certificate rotation without a restart.
//!
//! The certificate and key are files of a mounted Secret. kubelet updates such a volume
//! atomically: it writes the new files into a fresh `..<timestamp>` directory and renames a
//! `..data` symlink onto it; `tls.crt` and `tls.key` are symlinks through `..data`. Polling the
//! two paths therefore sees either the old pair or the new pair, and every few seconds is soon
//! enough for certificates renewed weeks before they expire.
//!
//! On a change the new pair is parsed and checked (a chain, a key, the key matching the
//! certificate) before `RustlsConfig::reload_from_config` swaps it in. New TLS handshakes use the
//! new configuration; established connections keep theirs, so no in-flight request is dropped.
//! A bad new pair keeps the old configuration, is logged once, and shows in
//! `jobgate_tls_reloads_total{result="failure"}` and `jobgate_tls_reload_failing`.
//!
//! The client CA bundle of `--client-ca` is one more file of the same configuration: polled with
//! the pair, a change rebuilds the configuration with the new verifier, a bad bundle keeps the
//! previous configuration (previous CAs included) and is counted the same way.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rustls::ServerConfig;

use super::tls::{self, TlsError};

/// Labels of `jobgate_tls_reloads_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadLabels {
    /// `success` or `failure`.
    pub result: &'static str,
}

/// Metrics of certificate reloads; cheap to clone (handles are shared).
#[derive(Clone, Debug, Default)]
pub struct ReloadMetrics {
    /// Reload attempts after a change of the files, by result. A bad pair counts once however
    /// long it stays on disk.
    pub reloads: Family<ReloadLabels, Counter>,
    /// 1 while the files on disk are a bad pair and the previous certificate is still served.
    pub failing: Gauge,
    /// `notAfter` of the served leaf certificate, in seconds since the Unix epoch.
    pub(crate) expiration: Gauge,
}

impl ReloadMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> ReloadMetrics {
        let metrics = ReloadMetrics::default();
        registry.register(
            "jobgate_tls_reloads",
            "Serving certificate reloads after the files changed, by result",
            metrics.reloads.clone(),
        );
        registry.register(
            "jobgate_tls_reload_failing",
            "1 while the certificate files on disk cannot be loaded and the previous certificate is served",
            metrics.failing.clone(),
        );
        registry.register(
            "jobgate_tls_certificate_expiration_timestamp_seconds",
            "notAfter of the served certificate, in seconds since the Unix epoch",
            metrics.expiration.clone(),
        );
        // Both results exist from the start: a fresh install shows 0 reloads, not "No data".
        for result in ["success", "failure"] {
            metrics
                .reloads
                .get_or_create_owned(&ReloadLabels { result });
        }
        metrics
    }

    /// Records the expiry of `cert_pem`, the chain now served. One rustls accepted is X.509, so
    /// a parse failure is only logged (the gauge keeps the last value).
    pub(crate) fn served(&self, cert_pem: &[u8]) {
        match super::expiry::not_after(cert_pem) {
            Ok(at) => {
                self.expiration.set(at);
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the serving certificate's notAfter"),
        }
    }

    /// Reloads that succeeded so far (`result="success"`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn successes(&self) -> u64 {
        self.reloads
            .get_or_create(&ReloadLabels { result: "success" })
            .get()
    }

    /// Reloads that failed so far (`result="failure"`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn failures(&self) -> u64 {
        self.reloads
            .get_or_create(&ReloadLabels { result: "failure" })
            .get()
    }
}

/// What one poll did.
#[derive(Debug)]
pub(crate) enum Poll {
    /// The files hold what is served (or the bad pair already reported).
    Unchanged,
    /// A new pair is served from now on.
    Reloaded,
    /// A new pair could not be loaded (the error is logged and counted); the previous one is
    /// still served. The tests read the error.
    Rejected(#[cfg_attr(not(test), expect(dead_code))] TlsError),
}

/// Watches a certificate/key pair (and the client CA bundle, if any) and swaps a [`RustlsConfig`]
/// to it when it changes.
#[derive(Debug)]
pub struct CertReloader {
    cert: PathBuf,
    key: PathBuf,
    client_ca: Option<PathBuf>,
    /// The contents behind the served configuration.
    served: Contents,
    /// The last state of the files that failed to load, so one bad pair is reported once.
    rejected: Option<RejectedFiles>,
    metrics: ReloadMetrics,
    /// `--tls-server-name`, and whether the served certificate names it.
    server_name: Option<(String, tokio::sync::watch::Sender<bool>)>,
}

#[derive(Debug, PartialEq, Eq)]
struct Contents {
    cert: Vec<u8>,
    key: Vec<u8>,
    /// The `--client-ca` bundle, when client certificates are required.
    client_ca: Option<Vec<u8>>,
}

/// What was on disk when a reload failed.
#[derive(Debug, PartialEq, Eq)]
enum RejectedFiles {
    /// A pair that could be read but not loaded.
    Pair(Contents),
    /// Files that could not be read, by error message (a missing file, permissions).
    Unreadable(String),
}

impl CertReloader {
    /// Loads the pair for the first time; the returned configuration is what the server starts
    /// with (`RustlsConfig::from_config`) and what later polls compare against.
    #[cfg(any(test, feature = "test-support"))]
    pub fn load(
        cert: &Path,
        key: &Path,
        metrics: ReloadMetrics,
    ) -> Result<(CertReloader, Arc<ServerConfig>), TlsError> {
        CertReloader::load_with_client_ca(cert, key, None, metrics)
    }

    /// As [`CertReloader::load`]; with `client_ca`, the configuration requires a client
    /// certificate that chains to a CA in that PEM file, and the file is watched too.
    pub(crate) fn load_with_client_ca(
        cert: &Path,
        key: &Path,
        client_ca: Option<&Path>,
        metrics: ReloadMetrics,
    ) -> Result<(CertReloader, Arc<ServerConfig>), TlsError> {
        let contents = read(cert, key, client_ca)?;
        let config = build(&contents, cert, key, client_ca)?;
        metrics.served(&contents.cert);
        let reloader = CertReloader {
            cert: cert.into(),
            key: key.into(),
            client_ca: client_ca.map(Path::to_path_buf),
            served: contents,
            rejected: None,
            metrics,
            server_name: None,
        };
        Ok((reloader, config))
    }

    /// From now on a new certificate that does not name `host` (`--tls-server-name`, the
    /// `<service>.<namespace>.svc` kube-apiserver dials) is rejected like a bad pair, and the
    /// previous one stays served. The receiver says whether the served certificate names `host`:
    /// false only when the first one loaded does not (said here, once), until a reload brings one
    /// that does.
    pub(crate) fn require_server_name(
        &mut self,
        host: String,
    ) -> tokio::sync::watch::Receiver<bool> {
        let named = match super::server_name::names_host(&self.served.cert, &host) {
            Ok(()) => true,
            Err(detail) => {
                tracing::error!(
                    cert = %self.cert.display(),
                    server_name = %host,
                    "not ready: the serving certificate does not name {host}, the Service \
                     kube-apiserver calls ({detail}); waiting for a certificate that does"
                );
                false
            }
        };
        let (sender, receiver) = tokio::sync::watch::channel(named);
        self.server_name = Some((host, sender));
        receiver
    }

    /// Reads the files once; reloads `config` if they hold a new, good pair.
    pub(crate) fn poll(&mut self, config: &RustlsConfig) -> Poll {
        let contents = match read(&self.cert, &self.key, self.client_ca.as_deref()) {
            Ok(contents) => contents,
            // kubelet's swap is atomic, so an unreadable file is not a moment of a rotation.
            Err(e) => return self.reject(RejectedFiles::Unreadable(e.to_string()), e),
        };
        if contents == self.served {
            self.recovered();
            return Poll::Unchanged;
        }
        if matches!(&self.rejected, Some(RejectedFiles::Pair(bad)) if *bad == contents) {
            return Poll::Unchanged;
        }
        match build(&contents, &self.cert, &self.key, self.client_ca.as_deref()) {
            Ok(new) => {
                let new_cert = contents.cert != self.served.cert || contents.key != self.served.key;
                let changed_ca = contents.client_ca != self.served.client_ca;
                if let (true, Some((host, _))) = (new_cert, &self.server_name)
                    && let Err(detail) = super::server_name::names_host(&contents.cert, host)
                {
                    let error = TlsError::WrongName {
                        cert: self.cert.clone(),
                        server_name: host.clone(),
                        detail,
                    };
                    return self.reject(RejectedFiles::Pair(contents), error);
                }
                // Counted before the swap, so whoever sees the new certificate sees the count.
                self.metrics
                    .reloads
                    .get_or_create(&ReloadLabels { result: "success" })
                    .inc();
                self.metrics.served(&contents.cert);
                self.recovered();
                self.served = contents;
                config.reload_from_config(new);
                if new_cert {
                    tracing::info!(cert = %self.cert.display(), "serving a new TLS certificate");
                    if let Some((host, named)) = &self.server_name
                        && !*named.borrow()
                    {
                        tracing::info!(server_name = %host, "the serving certificate names {host}: ready");
                        named.send_replace(true);
                    }
                }
                if let (Some(path), true) = (&self.client_ca, changed_ca) {
                    tracing::info!(client_ca = %path.display(), "requiring client certificates from a new client CA bundle");
                }
                Poll::Reloaded
            }
            Err(e) => self.reject(RejectedFiles::Pair(contents), e),
        }
    }

    fn reject(&mut self, rejected: RejectedFiles, error: TlsError) -> Poll {
        if self.rejected.as_ref() == Some(&rejected) {
            return Poll::Unchanged;
        }
        tracing::error!(error = %error, "new TLS files rejected; still serving the previous certificate and client CAs");
        self.rejected = Some(rejected);
        self.metrics.failing.set(1);
        self.metrics
            .reloads
            .get_or_create(&ReloadLabels { result: "failure" })
            .inc();
        Poll::Rejected(error)
    }

    /// The files are back to what is served (or to a new good pair): not failing any more.
    fn recovered(&mut self) {
        self.rejected = None;
        self.metrics.failing.set(0);
    }

    /// Polls every `interval` forever; spawn it and abort the task on shutdown. Reading two small
    /// files from a tmpfs volume does not need a blocking-pool thread.
    pub async fn run(mut self, config: RustlsConfig, interval: Duration) {
        if interval.is_zero() {
            // `--tls-reload-interval 0`: no polling (tokio's `interval` panics on a zero period).
            return;
        }
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            ticker.tick().await;
            self.poll(&config);
        }
    }
}

fn read(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<Contents, TlsError> {
    let read_file = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            path: path.into(),
            source,
        })
    };
    let mut contents = read_pair(cert, key, read_file)?;
    // The bundle is a file of its own (often another Secret or ConfigMap): one read is a whole
    // bundle, as kubelet swaps it atomically too.
    contents.client_ca = client_ca.map(read_file).transpose()?;
    Ok(contents)
}

/// The configuration `contents` stand for; `cert`, `key` and `client_ca` name the files in errors.
fn build(
    contents: &Contents,
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let verifier = contents
        .client_ca
        .as_deref()
        .zip(client_ca)
        .map(|(pem, path)| tls::client_verifier_from_pem(pem, path))
        .transpose()?;
    tls::server_config_with_client_auth(&contents.cert, &contents.key, cert, key, verifier)
}

/// Reads the certificate, the key, then the certificate again, until the two certificate reads
/// agree: kubelet's swap may land between the two files, and a certificate from before the swap
/// with a key from after it is no pair anyone wrote (it would be rejected and counted as a
/// failure). A new key always comes with a new certificate, so re-reading the certificate is
/// enough. After a few tries the last read stands; the next poll reads again.
fn read_pair(
    cert: &Path,
    key: &Path,
    mut read: impl FnMut(&Path) -> Result<Vec<u8>, TlsError>,
) -> Result<Contents, TlsError> {
    let mut contents = Contents {
        cert: read(cert)?,
        key: read(key)?,
        client_ca: None,
    };
    for _ in 0..3 {
        let again = read(cert)?;
        if again == contents.cert {
            break;
        }
        contents = Contents {
            cert: again,
            key: read(key)?,
            client_ca: None,
        };
    }
    Ok(contents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki;
    use std::time::SystemTime;

    /// kubelet swaps `..data` between the certificate read and the key read: the pair read is
    /// the new one, not the old certificate with the new key.
    #[test]
    fn a_swap_between_the_two_reads_reads_the_new_pair() {
        let (cert, key) = (Path::new("tls.crt"), Path::new("tls.key"));
        let mut reads = 0;
        let contents = read_pair(cert, key, |path| {
            reads += 1;
            let generation = if reads == 1 { "old" } else { "new" };
            Ok(format!("{generation} {}", path.display()).into_bytes())
        })
        .unwrap();
        assert_eq!(contents.cert, b"new tls.crt");
        assert_eq!(contents.key, b"new tls.key");
        // cert (old), key (new), cert (new, differs), key (new), cert (new, agrees).
        assert_eq!(reads, 5);
    }

    #[test]
    fn without_a_swap_the_certificate_is_read_twice_and_the_key_once() {
        let (cert, key) = (Path::new("tls.crt"), Path::new("tls.key"));
        let mut reads = Vec::new();
        let contents = read_pair(cert, key, |path| {
            reads.push(path.to_path_buf());
            Ok(path.display().to_string().into_bytes())
        })
        .unwrap();
        assert_eq!(
            (contents.cert.as_slice(), contents.key.as_slice()),
            (&b"tls.crt"[..], &b"tls.key"[..])
        );
        assert_eq!(reads, [cert, key, cert]);
    }

    fn bundle(name: &str) -> crate::pki::Bundle {
        bundle_valid_for(name, Duration::from_secs(3600))
    }

    fn bundle_valid_for(name: &str, validity: Duration) -> crate::pki::Bundle {
        pki::generate(name, &["localhost".into()], validity, SystemTime::now()).unwrap()
    }

    fn write_pair(dir: &Path, b: &crate::pki::Bundle) {
        std::fs::write(dir.join("tls.crt"), &b.cert_pem).unwrap();
        std::fs::write(dir.join("tls.key"), &b.key_pem).unwrap();
    }

    fn served_cert(config: &RustlsConfig) -> Arc<ServerConfig> {
        config.get_inner()
    }

    #[test]
    fn a_new_pair_is_served_a_bad_one_keeps_the_old_and_is_counted_once() {
        tls::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        // b outlives a by a day, so the expiry gauge tells which one is served.
        let (a, b) = (
            bundle("a"),
            bundle_valid_for("b", Duration::from_secs(3600 + 86_400)),
        );
        write_pair(dir.path(), &a);
        let metrics = ReloadMetrics::default();
        let (mut reloader, initial) = CertReloader::load(
            &dir.path().join("tls.crt"),
            &dir.path().join("tls.key"),
            metrics.clone(),
        )
        .unwrap();
        let config = RustlsConfig::from_config(initial.clone());

        assert!(matches!(reloader.poll(&config), Poll::Unchanged));
        assert!(Arc::ptr_eq(&served_cert(&config), &initial));
        let expiry =
            |b: &crate::pki::Bundle| super::super::expiry::not_after(b.cert_pem.as_bytes());
        assert_eq!(Ok(metrics.expiration.get()), expiry(&a));

        write_pair(dir.path(), &b);
        assert!(matches!(reloader.poll(&config), Poll::Reloaded));
        let after_b = served_cert(&config);
        assert!(!Arc::ptr_eq(&after_b, &initial));
        assert_eq!((metrics.successes(), metrics.failures()), (1, 0));
        assert_eq!(Ok(metrics.expiration.get()), expiry(&b));

        // a's certificate with b's key: rejected, b still served, counted once over many polls.
        std::fs::write(dir.path().join("tls.crt"), &a.cert_pem).unwrap();
        match reloader.poll(&config) {
            Poll::Rejected(e) => assert!(e.to_string().contains("do not match"), "{e}"),
            other => panic!("expected Rejected, got {other:?}"),
        }
        assert!(matches!(reloader.poll(&config), Poll::Unchanged));
        assert!(Arc::ptr_eq(&served_cert(&config), &after_b));
        assert_eq!((metrics.successes(), metrics.failures()), (1, 1));
        assert_eq!(metrics.failing.get(), 1);
        // A rejected pair does not change what is served, nor its expiry.
        assert_eq!(Ok(metrics.expiration.get()), expiry(&b));

        // A missing key file: a different failure, reported.
        std::fs::remove_file(dir.path().join("tls.key")).unwrap();
        assert!(matches!(
            reloader.poll(&config),
            Poll::Rejected(TlsError::Read { .. })
        ));
        assert_eq!(metrics.failures(), 2);

        // Fixed: the good pair a is served and the failure gauge clears.
        write_pair(dir.path(), &a);
        assert!(matches!(reloader.poll(&config), Poll::Reloaded));
        assert_eq!((metrics.successes(), metrics.failures()), (2, 2));
        assert_eq!(metrics.failing.get(), 0);
    }

    /// `--client-ca` is reloaded as the pair is: a new bundle is swapped in, a bad one keeps the
    /// previous configuration and is counted once, the same metrics tell.
    #[test]
    fn a_changed_client_ca_is_swapped_in_a_bad_one_keeps_the_previous() {
        tls::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let pair = bundle("serving");
        write_pair(dir.path(), &pair);
        let ca_path = dir.path().join("client-ca.crt");
        // The CA of a `pki::generate` bundle is a CA like any other.
        let (ca_a, ca_b) = (bundle("client a"), bundle("client b"));
        std::fs::write(&ca_path, &ca_a.ca_cert_pem).unwrap();
        let metrics = ReloadMetrics::default();
        let (mut reloader, initial) = CertReloader::load_with_client_ca(
            &dir.path().join("tls.crt"),
            &dir.path().join("tls.key"),
            Some(&ca_path),
            metrics.clone(),
        )
        .unwrap();
        let config = RustlsConfig::from_config(initial.clone());
        assert!(matches!(reloader.poll(&config), Poll::Unchanged));

        std::fs::write(&ca_path, &ca_b.ca_cert_pem).unwrap();
        assert!(matches!(reloader.poll(&config), Poll::Reloaded));
        let after_b = served_cert(&config);
        assert!(!Arc::ptr_eq(&after_b, &initial));
        assert_eq!((metrics.successes(), metrics.failures()), (1, 0));

        // A key where the bundle should be: rejected, named, counted once over many polls.
        std::fs::write(&ca_path, &pair.key_pem).unwrap();
        match reloader.poll(&config) {
            Poll::Rejected(e) => assert_eq!(
                e.to_string(),
                format!("{}: no PEM certificate found", ca_path.display())
            ),
            other => panic!("expected Rejected, got {other:?}"),
        }
        assert!(matches!(reloader.poll(&config), Poll::Unchanged));
        assert!(Arc::ptr_eq(&served_cert(&config), &after_b));
        assert_eq!((metrics.successes(), metrics.failures()), (1, 1));
        assert_eq!(metrics.failing.get(), 1);

        // The bundle gone: another failure, reported.
        std::fs::remove_file(&ca_path).unwrap();
        match reloader.poll(&config) {
            Poll::Rejected(TlsError::Read { path, .. }) => assert_eq!(path, ca_path),
            other => panic!("expected Rejected(Read), got {other:?}"),
        }
        assert_eq!(metrics.failures(), 2);

        // Back to b, what is served: nothing to reload, not failing any more.
        std::fs::write(&ca_path, &ca_b.ca_cert_pem).unwrap();
        assert!(matches!(reloader.poll(&config), Poll::Unchanged));
        assert!(Arc::ptr_eq(&served_cert(&config), &after_b));
        assert_eq!(metrics.failing.get(), 0);

        // The serving pair still rotates on its own, with the bundle kept.
        let rotated = bundle("serving, rotated");
        write_pair(dir.path(), &rotated);
        assert!(matches!(reloader.poll(&config), Poll::Reloaded));
        assert_eq!((metrics.successes(), metrics.failures()), (2, 2));
    }

    #[test]
    fn metrics_render_with_the_jobgate_prefix() {
        let mut registry = Registry::default();
        let metrics = ReloadMetrics::register(&mut registry);
        metrics
            .reloads
            .get_or_create(&ReloadLabels { result: "failure" })
            .inc();
        let text = crate::runtime::encode(&registry);
        assert!(
            text.contains("jobgate_tls_reloads_total{result=\"failure\"} 1"),
            "{text}"
        );
        assert!(text.contains("jobgate_tls_reload_failing 0"), "{text}");
        assert!(
            text.contains("jobgate_tls_certificate_expiration_timestamp_seconds 0"),
            "{text}"
        );
    }
}
