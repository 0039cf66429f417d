//! `jobgate reconcile`: wiring on the [`runtime`](crate::runtime) (admin port, watches, elector,
//! the applier running [`reconcile_pod`]) and shutdown. On SIGTERM readiness drops, no new
//! reconcile starts, the in-flight ones get `--shutdown-timeout` to finish (kube-runtime's
//! `Controller::graceful_shutdown_on`: the trigger stream ends, the applier drains), then the
//! Lease is released and the watches stop.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::watched_node::WatchedNode;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};
use futures::{Stream, StreamExt};
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::{Api, Client};

use super::args::ReconcileArgs;
use super::context::{Context, EpisodeGate, Options};
use super::filter::{PodKey, PodMetadata};
use super::metrics::RecoveryMetrics;
use super::reconcile::{ReconcileError, error_policy, reconcile_pod};
use super::watch::drive_watches_while_leading;
use crate::runtime::client::{ClusterError, Prefer};
use crate::runtime::lease::{self, Leadership, LeaseConfig};
use crate::runtime::{self, BindError, Runtime};

/// Why `jobgate reconcile` could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No Kubernetes client could be made.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The admin address cannot be listened on.
    #[error(transparent)]
    Admin(#[from] BindError),
}

/// Leader-election identity: `$POD_NAME` (or `$HOSTNAME`) plus a random suffix, like client-go.
pub(crate) fn default_identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "jobgate".into());
    format!("{host}_{:08x}", rand::random::<u32>())
}

/// `jobgate reconcile` until SIGTERM/SIGINT.
pub async fn run(args: ReconcileArgs) -> Result<(), RunError> {
    let client = args.cluster.client(Prefer::InCluster).await?;
    run_with_client(client, args, runtime::signal(), |_| {}).await
}

/// `jobgate reconcile` over `client` until `shutdown` resolves; `on_listening` gets the bound
/// admin address.
pub(crate) async fn run_with_client(
    client: Client,
    args: ReconcileArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), RunError> {
    let lease = lease_config(&client, &args);
    let mut builder = runtime::Builder::new(args.admin_addr);
    let metrics = RecoveryMetrics::register(builder.registry());
    let runtime = builder.bind(shutdown).await?;
    on_listening(runtime.admin_addr());
    tracing::info!(admin = %runtime.admin_addr(), identity = %lease.identity, lease = %args.lease_name, namespace = %lease.namespace, dry_run = args.dry_run, no_delete = args.no_delete, "jobgate reconcile starting");

    let (trigger_tx, trigger_rx) = futures::channel::mpsc::unbounded::<PodKey>();
    let writer: Writer<PodMetadata> = Writer::default();
    let store = writer.as_reader();
    let leadership = Leadership::new(metrics.leader.clone());
    let episodes = episode_gate(&args, &store, &trigger_tx);
    let ctx = context(
        &client,
        &args,
        &lease.identity,
        &leadership,
        &metrics,
        episodes,
    );

    let watch_task = tokio::spawn(drive_watches_while_leading(
        Api::<PodMetadata>::all(client.clone()),
        Api::<WatchedNode>::all(client.clone()),
        writer,
        ctx.clone(),
        trigger_tx.clone(),
        runtime.readiness(),
        leadership.role(),
    ));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let elector = tokio::spawn(lease::run_elector(
        Api::namespaced(client.clone(), &lease.namespace),
        lease,
        leadership,
        metrics.lease_errors(),
        trigger_all(store.clone(), trigger_tx),
        stopped(stop_rx),
    ));
    reconcile_until_shutdown(&runtime, ctx, store, trigger_rx, args.shutdown_timeout).await;
    let _ = stop_tx.send(true);
    // Give the elector a moment to release the Lease so a standby takes over quickly.
    let _ = tokio::time::timeout(Duration::from_secs(5), elector).await;
    watch_task.abort();
    runtime.stop().await;
    Ok(())
}

/// The Lease this replica campaigns for: `--lease-name` in `--lease-namespace` (default: the
/// client's namespace), as `--leader-election-id` (default: [`default_identity`]).
fn lease_config(client: &Client, args: &ReconcileArgs) -> LeaseConfig {
    let identity = args
        .leader_election_id
        .clone()
        .unwrap_or_else(default_identity);
    let namespace = args
        .lease_namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    LeaseConfig::new(args.lease_name.clone(), namespace, identity)
}

/// The [`reconciles`] of the triggered pods until shutdown; then the in-flight ones get
/// `timeout` to finish.
async fn reconcile_until_shutdown(
    runtime: &Runtime,
    ctx: Arc<Context>,
    store: Store<PodMetadata>,
    triggers: UnboundedReceiver<PodKey>,
    timeout: Duration,
) {
    // The trigger stream ends at shutdown: the applier starts no new reconcile and ends once
    // the running ones are done.
    let reconciles = reconciles(ctx, store, triggers.take_until(runtime.shutdown()));
    let mut reconciles = std::pin::pin!(reconciles);
    tokio::select! {
        _ = &mut reconciles => {}
        _ = runtime.shutdown() => {
            if !runtime.drain(timeout, &mut reconciles).await {
                tracing::warn!("in-flight reconciles did not finish within the shutdown timeout");
            }
        }
    }
}

/// Per-Job recovery episodes as `args` set them, over the tracked pods (a Job's other due pods)
/// and the trigger channel (to reconcile them).
fn episode_gate(
    args: &ReconcileArgs,
    store: &Store<PodMetadata>,
    triggers: &UnboundedSender<PodKey>,
) -> EpisodeGate {
    EpisodeGate {
        config: args.recovery.episode_config(),
        store: store.clone(),
        triggers: triggers.clone(),
        jitter: rand::random::<f64>,
    }
}

/// The reconciles' shared context, as `args` sets it.
fn context(
    client: &Client,
    args: &ReconcileArgs,
    identity: &str,
    leadership: &Leadership,
    metrics: &RecoveryMetrics,
    episodes: EpisodeGate,
) -> Arc<Context> {
    let options = Options {
        dry_run: args.dry_run,
        no_delete: args.no_delete,
        identity: identity.to_string(),
    };
    let ctx = Context::new(
        client.clone(),
        args.recovery.config(),
        options,
        leadership.clone(),
        metrics.clone(),
    );
    Arc::new(
        ctx.with_brake(args.recovery.brake_config())
            .with_episodes(episodes),
    )
}

/// On becoming leader: every tracked pod is due a look (restart safety).
fn trigger_all(
    store: Store<PodMetadata>,
    triggers: UnboundedSender<PodKey>,
) -> impl Fn() + Send + Sync + 'static {
    move || {
        for pod in store.state() {
            let _ = triggers.unbounded_send(PodKey::of(&pod.metadata));
        }
    }
}

/// Resolves once `stop` turns true (or its sender is gone).
async fn stopped(mut stop: tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// kube-runtime's applier over the triggered pods: [`reconcile_pod`] with [`error_policy`], at
/// most 8 at once, until `triggers` ends.
fn reconciles(
    ctx: Arc<Context>,
    store: Store<PodMetadata>,
    triggers: impl Stream<Item = PodKey> + Send + 'static,
) -> impl Future<Output = ()> + Send {
    kube::runtime::applier(
        |obj: Arc<PodMetadata>, ctx: Arc<Context>| {
            Box::pin(async move { reconcile_pod(&ctx, &PodKey::of(&obj.metadata)).await })
        },
        |obj: Arc<PodMetadata>, err: &ReconcileError, ctx: Arc<Context>| {
            error_policy(&ctx, &PodKey::of(&obj.metadata), err)
        },
        ctx,
        store,
        triggers.map(|key| {
            Ok::<_, Infallible>(ObjectRef::<PodMetadata>::new(&key.name).within(&key.namespace))
        }),
        kube::runtime::Config::default().concurrency(8),
    )
    .for_each(|result| {
        if let Err(e) = result
            && !matches!(e, kube::runtime::controller::Error::ObjectNotFound(_))
        {
            tracing::debug!(error = %e, "reconcile");
        }
        std::future::ready(())
    })
}
