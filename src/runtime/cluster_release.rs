//! The release a cluster runs, read with the operator's own kubeconfig (`GET /version`), for the
//! commands that judge by it when told to look (`check --cluster`, `render --cluster`) or always
//! (`audit`). `serve` reads it too, without a credential (server/release.rs).

use crate::job::Config;
use crate::job::config::ReleaseSource;
use crate::job::version::{Cluster, KubernetesVersion};

use super::client::{ClusterArgs, Prefer};

/// Why the cluster's release could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The Kubernetes client cannot be set up (kubeconfig or in-cluster configuration).
    #[error("cannot set up the Kubernetes client: {0}")]
    Client(String),
    /// The API server's version (`GET /version`) cannot be read.
    #[error("cannot read the Kubernetes version from {server}: {source}")]
    Version {
        /// The API server's URL.
        server: String,
        /// What the client said.
        #[source]
        source: kube::Error,
    },
}

/// The defaults for the release `client`'s cluster reports, and what to say once about it (a
/// release newer than jobgate knows, or one `/version` does not name).
pub(crate) async fn defaults_for(
    client: &kube::Client,
    server: &str,
) -> Result<(Config, Option<String>), ReleaseError> {
    let info = client
        .apiserver_version()
        .await
        .map_err(|source| ReleaseError::Version {
            server: server.to_string(),
            source,
        })?;
    let (version, note) = KubernetesVersion::of_server(&info.git_version);
    let config = Config {
        cluster: Cluster::new(version),
        release_source: ReleaseSource::Cluster,
        ..Config::default()
    };
    Ok((config, note))
}

/// What `check --cluster` and `render --cluster` judge over: the defaults for the cluster's
/// release, unless `--kubernetes-version` names one; the note about it is said as `who`.
pub(crate) async fn base_for(
    rules: &crate::rule_flags::RuleArgs,
    cluster: &ClusterArgs,
    who: &str,
) -> Result<Config, String> {
    if rules
        .kubernetes_version()
        .map_err(|e| e.to_string())?
        .is_some()
    {
        return Ok(Config::default());
    }
    let (base, note) = cluster_defaults(cluster).await.map_err(|e| e.to_string())?;
    if let Some(note) = note {
        eprintln!("{who}: {note}");
    }
    Ok(base)
}

/// [`defaults_for`] the cluster `cluster` names (the operator's kubeconfig first).
pub(crate) async fn cluster_defaults(
    cluster: &ClusterArgs,
) -> Result<(Config, Option<String>), ReleaseError> {
    let kube_config = cluster
        .kube_config(Prefer::Kubeconfig)
        .await
        .map_err(|e| ReleaseError::Client(format!("{e:#}")))?;
    let server = kube_config.cluster_url.to_string();
    let client =
        kube::Client::try_from(kube_config).map_err(|e| ReleaseError::Client(format!("{e:#}")))?;
    defaults_for(&client, &server).await
}
