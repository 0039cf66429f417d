//! The release `serve` judges by: the one the cluster runs, read from kube-apiserver's
//! `/version` without a credential, unless a setting names one.
//!
//! Why no credential: `/version` is served to anyone. kube-apiserver's bootstrap RBAC binds
//! `system:public-info-viewer` (`/healthz`, `/livez`, `/readyz`, `/version`, `/version/`) to
//! `system:unauthenticated` as well as `system:authenticated`
//! (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, `ClusterRoleBindings`). So
//! `serve` asks with no token and no client certificate, trusting only the cluster's CA (the
//! `kube-root-ca.crt` ConfigMap every namespace has, mounted as a file): the webhook container,
//! which anything in the cluster can reach, keeps holding no Kubernetes credential. A cluster
//! that turned anonymous requests off answers 401 or 403; `serve` then judges by the newest
//! released minor and says so (log, `jobgate_kubernetes_rules_info{source="default"}`), and a
//! setting (`--kubernetes-version`) names the release instead.
//!
//! The release is read again every `--cluster-version-interval`, so that an upgrade of the
//! control plane moves the rules with it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::job;
use crate::job::config::ReleaseSource;
use crate::job::version::{Cluster, KubernetesVersion};

use super::metrics::RulesInfo;

/// The rules `serve` judges by now; replaced whole when the cluster's release changes. Cheap to
/// clone (one shared cell).
#[derive(Debug, Clone)]
pub(crate) struct CurrentRules(Arc<RwLock<Arc<job::Config>>>);

impl CurrentRules {
    pub(crate) fn new(config: job::Config) -> CurrentRules {
        CurrentRules(Arc::new(RwLock::new(Arc::new(config))))
    }

    /// The rules now; a review keeps the ones it started with.
    pub(crate) fn get(&self) -> Arc<job::Config> {
        // A writer only swaps an `Arc`: a poisoned lock still holds a whole value.
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, config: job::Config) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(config);
    }
}

/// Where `serve` reads the cluster's release: `--cluster-url` and `--cluster-ca`, or in a pod
/// the Service kubelet names in `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    pub(crate) url: String,
    pub(crate) ca: PathBuf,
    pub(crate) interval: Duration,
}

/// How long one read of `/version` may take: `serve` waits for the first before it listens.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

impl Discovery {
    /// The URL given, else the in-cluster Service's; `None` outside a pod with no URL given.
    pub(crate) fn of(
        url: Option<&str>,
        ca: &Path,
        interval: Duration,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<Discovery> {
        let url = match url {
            Some(url) => url.to_string(),
            None => {
                // As client-go's rest.InClusterConfig builds it (net.JoinHostPort: an IPv6 host
                // in brackets).
                let host = env("KUBERNETES_SERVICE_HOST").filter(|h| !h.is_empty())?;
                let port = env("KUBERNETES_SERVICE_PORT").filter(|p| !p.is_empty())?;
                match host.contains(':') {
                    true => format!("https://[{host}]:{port}"),
                    false => format!("https://{host}:{port}"),
                }
            }
        };
        Some(Discovery {
            url,
            ca: ca.to_path_buf(),
            interval,
        })
    }

    /// `/version`'s `gitVersion`, asked with no credential.
    async fn git_version(&self) -> Result<String, String> {
        let pem = std::fs::read(&self.ca)
            .map_err(|e| format!("cannot read the cluster CA {}: {e}", self.ca.display()))?;
        let roots = CertificateDer::pem_slice_iter(&pem)
            .map(|c| c.map(|c| c.to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the cluster CA {}: {e}", self.ca.display()))?;
        if roots.is_empty() {
            return Err(format!(
                "the cluster CA {} holds no certificate",
                self.ca.display()
            ));
        }
        let uri = self
            .url
            .parse()
            .map_err(|e| format!("--cluster-url {:?}: {e}", self.url))?;
        let mut config = kube::Config::new(uri);
        config.root_cert = Some(roots);
        config.connect_timeout = Some(READ_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        let client = kube::Client::try_from(config).map_err(|e| format!("{e}"))?;
        let info = tokio::time::timeout(READ_TIMEOUT, client.apiserver_version())
            .await
            .map_err(|_| format!("no answer within {READ_TIMEOUT:?}"))?
            .map_err(|e| format!("{e}"))?;
        Ok(info.git_version)
    }
}

/// The rules for the release `git_version` names, on top of the configured settings; `Err`
/// says why they cannot be (a gate override the reported release does not have).
fn rules_for(base: &job::Config, git_version: &str) -> Result<job::Config, String> {
    let (release, note) = KubernetesVersion::of_server(git_version);
    if let Some(note) = note {
        tracing::warn!("{note}");
    }
    let cluster = Cluster::with_gates(release, base.cluster.overrides())?;
    Ok(job::Config {
        cluster,
        release_source: ReleaseSource::Cluster,
        ..base.clone()
    })
}

/// Follows the cluster's release: reads it now (before `serve` listens) and returns the rules,
/// plus the task that reads it again every interval and replaces the rules when it changes.
/// Without a discovery, or with a release set, the configured rules stay.
pub(crate) async fn follow(
    base: job::Config,
    discovery: Option<Discovery>,
    info: RulesInfo,
) -> (CurrentRules, Option<BoxFuture<'static, ()>>) {
    let given = base.release_source == ReleaseSource::Setting;
    let discovery = match discovery {
        Some(d) if !given => d,
        _ => {
            if !given {
                tracing::warn!(
                    "the cluster's release is unknown (no --cluster-url, and not in a pod): \
                     judging by {}, the newest released minor jobgate knows; set \
                     --kubernetes-version to choose",
                    base.cluster.release()
                );
            }
            info.show(&base);
            return (CurrentRules::new(base), None);
        }
    };
    let first = read(&discovery, &base, None).await;
    let current = first.clone().unwrap_or_else(|| base.clone());
    info.show(&current);
    let rules = CurrentRules::new(current);
    let task = {
        let rules = rules.clone();
        Box::pin(async move {
            let mut last = first.map(|c| c.cluster.release());
            if discovery.interval.is_zero() {
                return;
            }
            loop {
                tokio::time::sleep(discovery.interval).await;
                let Some(config) = read(&discovery, &base, last).await else {
                    continue;
                };
                if Some(config.cluster.release()) != last {
                    last = Some(config.cluster.release());
                    info.show(&config);
                    rules.set(config);
                }
            }
        })
    };
    (rules, Some(task))
}

/// One read; the rules for the release read, or `None` (said in the log) when it failed. A
/// failure keeps the rules of the last release read (`last`), or the default's at start.
async fn read(
    discovery: &Discovery,
    base: &job::Config,
    last: Option<KubernetesVersion>,
) -> Option<job::Config> {
    let keeping = match last {
        Some(release) => format!("keeping {release}'s rules, read before"),
        None => format!(
            "judging by {}, the newest released minor jobgate knows; set --kubernetes-version \
             to choose",
            base.cluster.release()
        ),
    };
    let failed = |why: String| -> Option<job::Config> {
        tracing::warn!(
            url = %discovery.url,
            "cannot read the cluster's release from /version: {why}; {keeping}"
        );
        None
    };
    let git_version = match discovery.git_version().await {
        Ok(v) => v,
        Err(why) => return failed(why),
    };
    match rules_for(base, &git_version) {
        Ok(config) => {
            if last != Some(config.cluster.release()) {
                tracing::info!(
                    git_version,
                    "judging by Kubernetes {}, the release the cluster reports",
                    config.cluster.release()
                );
                if let Some(note) = config.release_note() {
                    tracing::warn!("{note}");
                }
            }
            Some(config)
        }
        Err(why) => failed(format!("the cluster reports {git_version}, but {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    /// client-go's `rest.InClusterConfig`: `https://` + `net.JoinHostPort(host, port)`.
    #[test]
    fn in_a_pod_the_kubernetes_service_is_asked() {
        let ca = Path::new("/ca.crt");
        let of = |vars: &[(&str, &str)]| {
            Discovery::of(None, ca, Duration::ZERO, env(vars)).map(|d| d.url)
        };
        assert_eq!(
            of(&[
                ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
                ("KUBERNETES_SERVICE_PORT", "443")
            ])
            .as_deref(),
            Some("https://10.96.0.1:443")
        );
        assert_eq!(
            of(&[
                ("KUBERNETES_SERVICE_HOST", "fd00::1"),
                ("KUBERNETES_SERVICE_PORT", "443")
            ])
            .as_deref(),
            Some("https://[fd00::1]:443")
        );
        assert_eq!(of(&[("KUBERNETES_SERVICE_HOST", "10.96.0.1")]), None);
        assert_eq!(of(&[]), None);
        let given = Discovery::of(Some("https://127.0.0.1:6443"), ca, Duration::ZERO, env(&[]));
        assert_eq!(
            given.map(|d| d.url).as_deref(),
            Some("https://127.0.0.1:6443")
        );
    }

    /// The reported release replaces the default's and keeps the configured policies and gate
    /// overrides; a gate the reported release does not have is an error, not a crash.
    #[test]
    fn the_reported_release_keeps_the_other_settings() {
        let base = job::Config {
            recovery_annotation_keys: vec!["example.com/recover".into()],
            ..job::Config::default()
        };
        let rules = rules_for(&base, "v1.36.3").unwrap();
        assert_eq!(rules.cluster.release(), KubernetesVersion::V1_36);
        assert_eq!(rules.release_source, ReleaseSource::Cluster);
        assert_eq!(
            rules.recovery_annotation_keys,
            base.recovery_annotation_keys
        );

        let gates =
            crate::job::version::parse_feature_gates("MutablePodResourcesForSuspendedJobs=false")
                .unwrap();
        let base = job::Config {
            cluster: Cluster::with_gates(KubernetesVersion::V1_37, &gates).unwrap(),
            ..job::Config::default()
        };
        let why = rules_for(&base, "v1.34.2").unwrap_err();
        assert!(why.contains("MutablePodResourcesForSuspendedJobs"), "{why}");
    }
}
