//! How `reconcile`, `status` and `audit` reach the cluster: `--kubeconfig` / `--context`, else the
//! environment (in-cluster config or `$KUBECONFIG` / `~/.kube/config`).

use std::path::PathBuf;

use clap::Args;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ClusterArgs {
    /// Path of a kubeconfig file. Without it and without --context, the environment decides
    /// (in-cluster config for `reconcile`; $KUBECONFIG, ~/.kube/config, then in-cluster for `status`).
    #[arg(long, env = "JOBGATE_KUBECONFIG")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// kubeconfig context to use (default: the current context).
    #[arg(long, env = "JOBGATE_CONTEXT")]
    pub(crate) context: Option<String>,
}

/// Which configuration wins when no flag names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prefer {
    /// A sidecar: the pod's service account first.
    InCluster,
    /// An operator's command: their kubeconfig first.
    Kubeconfig,
}

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// With `--kubeconfig` or `--context`: the kubeconfig cannot be read, or has no usable
    /// context.
    #[error("cannot read the kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// Neither a kubeconfig nor the in-cluster service account gives a configuration.
    #[error("no usable cluster configuration: {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// The configuration was read, but kube-rs cannot build a client from it.
    #[error("cannot build a Kubernetes client: {0}")]
    Client(#[from] kube::Error),
}

impl ClusterArgs {
    pub(crate) async fn client(&self, prefer: Prefer) -> Result<Client, ClusterError> {
        Ok(Client::try_from(self.kube_config(prefer).await?)?)
    }

    /// The configuration `client` builds its client from (its `cluster_url` names the server in
    /// error messages).
    pub(crate) async fn kube_config(&self, prefer: Prefer) -> Result<kube::Config, ClusterError> {
        let config = if self.kubeconfig.is_some() || self.context.is_some() {
            let options = KubeConfigOptions {
                context: self.context.clone(),
                ..KubeConfigOptions::default()
            };
            match &self.kubeconfig {
                Some(path) => {
                    kube::Config::from_custom_kubeconfig(Kubeconfig::read_from(path)?, &options)
                        .await?
                }
                None => kube::Config::from_kubeconfig(&options).await?,
            }
        } else {
            match (prefer, kube::Config::incluster()) {
                (Prefer::InCluster, Ok(config)) => config,
                _ => kube::Config::infer().await?,
            }
        };
        Ok(config)
    }
}
