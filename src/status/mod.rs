//! `jobgate status`: what jobgate's reconciler is doing, for an operator at 3 a.m.
//!
//! Reads the cluster only ([`snapshot`]): Jobs carrying `jobgate.dev/recovery-state`, pods
//! waiting for recovery (opted in with `"true"` and terminating) with their deadlines, nodes and
//! what they wait for, and who holds the reconciler's leader Lease. The STATUS of each pod is
//! the reconciler's own decision ([`verdict`]: `recovery::decide`, the episode decision), so it is
//! by construction what `jobgate reconcile` with the same flags does; [`render`] prints it.

pub(crate) mod install;
pub(crate) mod json;
pub(crate) mod options;
pub(crate) mod render;
pub(crate) mod snapshot;
pub(crate) mod verdict;

#[cfg(test)]
mod tests;

use clap::Args;
use k8s_openapi::jiff::Timestamp;

use crate::reconciler::args::RecoveryArgs;
use crate::runtime::client::{ClusterArgs, ClusterError, Prefer};
pub(crate) use options::RenderOptions;
pub(crate) use render::render;
pub(crate) use snapshot::fetch;

/// Default `--lease-name` of `jobgate reconcile`.
pub(crate) const DEFAULT_LEASE_NAME: &str = "jobgate-reconciler";

/// `jobgate status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
    /// Only this namespace (default: the context's namespace).
    #[arg(long, short = 'n', conflicts_with = "all_namespaces")]
    pub(crate) namespace: Option<String>,
    /// Every namespace.
    #[arg(long, short = 'A')]
    pub(crate) all_namespaces: bool,
    /// The reconciler's recovery flags (pass the same values to predict its decisions).
    #[command(flatten)]
    pub(crate) recovery: RecoveryArgs,
    /// The reconciler's leader-election Lease.
    #[arg(long, env = "JOBGATE_LEASE_NAME", default_value = DEFAULT_LEASE_NAME)]
    pub(crate) lease_name: String,
    /// The namespace of the reconciler's Lease: the install's. Default: the namespace where
    /// jobgate's pods run (labels app.kubernetes.io/name=jobgate,
    /// app.kubernetes.io/component=webhook), whatever it and the Helm release are called; else
    /// jobgate-system.
    #[arg(long, env = "JOBGATE_LEASE_NAMESPACE")]
    pub(crate) lease_namespace: Option<String>,
    /// Output format: the tables, or one JSON document.
    #[arg(long, short = 'o', value_enum, default_value_t = StatusOutput::Text)]
    pub(crate) output: StatusOutput,
}

/// `jobgate status --output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum StatusOutput {
    /// the leader line and two tables
    #[default]
    Text,
    /// one JSON document: leader, jobs, pods
    Json,
}

/// Why `jobgate status` could not read the cluster.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// No Kubernetes client could be made.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The install (the Lease's namespace) could not be told.
    #[error("cannot tell which jobgate install to report on: {0}")]
    Install(install::FindError),
    /// A read from the Kubernetes API failed.
    #[error("cannot read from the Kubernetes API at {server}: {source}")]
    Api {
        /// The API server's URL (the kubeconfig's, or the in-cluster one).
        server: String,
        /// What the client said.
        #[source]
        source: kube::Error,
    },
}

/// `jobgate status`: read the cluster, print the tables.
pub async fn run(args: StatusArgs) -> Result<(), StatusError> {
    let kube_config = args.cluster.kube_config(Prefer::Kubeconfig).await?;
    let server = kube_config.cluster_url.to_string();
    let client = kube::Client::try_from(kube_config).map_err(ClusterError::Client)?;
    let namespace = if args.all_namespaces {
        None
    } else {
        Some(
            args.namespace
                .clone()
                .unwrap_or_else(|| client.default_namespace().to_string()),
        )
    };
    let options = RenderOptions {
        config: args.recovery.config(),
        episode: args.recovery.episode_config(),
        brake: args.recovery.brake_config(),
    };
    let lease = install::lease_namespace(&client, args.lease_namespace.as_deref())
        .await
        .map_err(|e| match e {
            install::FindError::Api(source) => StatusError::Api {
                server: server.clone(),
                source,
            },
            other => StatusError::Install(other),
        })?;
    let snapshot = fetch(
        &client,
        namespace,
        &options,
        &lease.namespace,
        &args.lease_name,
    )
    .await
    .map_err(|source| StatusError::Api { server, source })?;
    // Said once the cluster could be read: it explains the Leader line.
    if let Some(note) = &lease.note {
        eprintln!("jobgate status: {note}");
    }
    let now = Timestamp::now();
    match args.output {
        StatusOutput::Text => print!("{}", render(&snapshot, &options, now)),
        StatusOutput::Json => println!("{:#}", json::render_json(&snapshot, &options, now)),
    }
    Ok(())
}
