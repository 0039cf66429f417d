//! The two watch drivers: the metadata-only pod watch (filtered on arrival into the store of
//! eligible pods) and the node watch (the node cache and its rising edges). Both send the pods to
//! reconcile to the trigger channel and set readiness once synced. They run only while this
//! replica leads ([`drive_watches_while_leading`]): a standby holds no watch and no copy of the
//! cluster's pods or nodes.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use kube::Api;
use kube::runtime::reflector::{Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};

use super::context::{Context, lock};
use super::filter::{self, PodKey, PodMetadata};
use super::node_cache::{self, NodeCache};
use super::watched_node::WatchedNode;
use crate::recovery::brake;
use crate::runtime::Readiness;
use crate::runtime::lease::Role;

/// Runs the pod and node watches while `role` says this replica leads, and stops them when it
/// no longer does, forgetting what they built (the store of eligible pods, the node cache, the
/// per-pod state): the next leadership starts from a fresh list. Readiness: a follower is ready
/// once its first election round ended; a leader once both watches have listed.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn drive_watches_while_leading(
    pods: Api<PodMetadata>,
    nodes: Api<WatchedNode>,
    mut writer: Writer<PodMetadata>,
    ctx: Arc<Context>,
    triggers: futures::channel::mpsc::UnboundedSender<PodKey>,
    readiness: Readiness,
    mut role: tokio::sync::watch::Receiver<Role>,
) {
    let pods_synced = Arc::new(AtomicBool::new(false));
    loop {
        let current = *role.borrow_and_update();
        match current {
            Role::Candidate => readiness.set(false),
            Role::Following => readiness.set(true),
            Role::Leading => {
                readiness.set(false);
                let store = writer.as_reader();
                let watches = futures::future::join(
                    drive_pod_watch(
                        pods.clone(),
                        watcher::Config::default(),
                        &mut writer,
                        ctx.clone(),
                        triggers.clone(),
                        pods_synced.clone(),
                        readiness.clone(),
                    ),
                    drive_node_watch(
                        nodes.clone(),
                        ctx.clone(),
                        store,
                        triggers.clone(),
                        pods_synced.clone(),
                        readiness.clone(),
                    ),
                );
                tokio::select! {
                    _ = watches => {}
                    changed = role.wait_for(|r| *r != Role::Leading) => {
                        if changed.is_err() {
                            return;
                        }
                    }
                }
                tracing::info!("not leading: watches stopped");
                pods_synced.store(false, Ordering::SeqCst);
                writer.apply_watcher_event(&watcher::Event::Init);
                writer.apply_watcher_event(&watcher::Event::InitDone);
                *lock(&ctx.nodes) = NodeCache::new(ctx.brake.settle);
                ctx.retain(&HashSet::new());
                continue;
            }
        }
        if role.changed().await.is_err() {
            return;
        }
    }
}

fn update_readiness(ctx: &Context, pods_synced: &AtomicBool, readiness: &Readiness) {
    readiness.set(pods_synced.load(Ordering::SeqCst) && ctx.nodes_synced());
}

/// Drives the metadata-only pod watch: filters every event (see [`filter::filter_pod_event`]),
/// keeps eligible pods in `writer`'s store, forgets the rest, and sends pods to reconcile to
/// `triggers` (pods of a (re)list only once the list is complete and the store swapped in).
pub async fn drive_pod_watch(
    api: Api<PodMetadata>,
    watch_config: watcher::Config,
    writer: &mut Writer<PodMetadata>,
    ctx: Arc<Context>,
    triggers: futures::channel::mpsc::UnboundedSender<PodKey>,
    pods_synced: Arc<AtomicBool>,
    readiness: Readiness,
) {
    let mut stream = std::pin::pin!(watcher(api, watch_config).default_backoff());
    let mut listing = false;
    let mut listed: Vec<PodKey> = Vec::new();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                ctx.metrics.error("watch_pods");
                tracing::warn!(error = %e, "pod watch error");
                continue;
            }
        };
        let init_done = matches!(event, watcher::Event::InitDone);
        if matches!(event, watcher::Event::Init) {
            listing = true;
            listed.clear();
        }
        let filtered = filter::filter_pod_event(event, &ctx.config);
        if let Some(e) = &filtered.store_event {
            writer.apply_watcher_event(e);
        }
        if let Some(key) = &filtered.forget {
            ctx.forget(key);
        }
        if let Some(key) = filtered.trigger {
            // The store swaps in the listed pods at InitDone; trigger them after that.
            if listing {
                listed.push(key);
            } else {
                let _ = triggers.unbounded_send(key);
            }
        }
        if init_done {
            listing = false;
            // Pods that vanished while the watch was down leave no state behind.
            ctx.retain(&listed.iter().cloned().collect());
            for key in listed.drain(..) {
                let _ = triggers.unbounded_send(key);
            }
            pods_synced.store(true, Ordering::SeqCst);
            update_readiness(&ctx, &pods_synced, &readiness);
        }
    }
}

/// Drives the node watch: keeps name and taints per node in `ctx.nodes`, and on each rising
/// edge of the unreachable taint sends the tracked pods on that node to `triggers`.
pub(crate) async fn drive_node_watch(
    api: Api<WatchedNode>,
    ctx: Arc<Context>,
    store: Store<PodMetadata>,
    triggers: futures::channel::mpsc::UnboundedSender<PodKey>,
    pods_synced: Arc<AtomicBool>,
    readiness: Readiness,
) {
    let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
    let mut held_zones = BTreeSet::new();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                ctx.metrics.error("watch_nodes");
                tracing::warn!(error = %e, "node watch error");
                continue;
            }
        };
        let init_done = matches!(event, watcher::Event::InitDone);
        let (edges, disrupted) = {
            let mut nodes = lock(&ctx.nodes);
            let edges = nodes.apply(node_cache::node_event_facts(event), ctx.now());
            let disrupted = brake::disrupted_zones(&brake::zones(nodes.nodes()), &ctx.brake);
            (edges, disrupted)
        };
        ctx.metrics
            .disrupted_zones
            .set(i64::try_from(disrupted.len()).unwrap_or(i64::MAX));
        trigger_released(&ctx, &held_zones, &disrupted, &triggers);
        held_zones = disrupted;
        trigger_unreachable(&ctx, &store, edges, &triggers);
        if init_done {
            update_readiness(&ctx, &pods_synced, &readiness);
        }
    }
}

/// Held pods whose zone the brake let go (held before, not `disrupted` now) are recovered now,
/// with their deadlines unchanged (pods on healed nodes find their node reachable and are left
/// alone).
fn trigger_released(
    ctx: &Context,
    held_zones: &BTreeSet<String>,
    disrupted: &BTreeSet<String>,
    triggers: &UnboundedSender<PodKey>,
) {
    let released: HashSet<String> = held_zones
        .iter()
        .filter(|z| !disrupted.contains(*z))
        .cloned()
        .collect();
    if !released.is_empty() {
        for key in ctx.held_in(&released) {
            let _ = triggers.unbounded_send(key);
        }
    }
}

/// The tracked pods on each node whose unreachable taint just rose (`edges`) are due a look.
fn trigger_unreachable(
    ctx: &Context,
    store: &Store<PodMetadata>,
    edges: Vec<String>,
    triggers: &UnboundedSender<PodKey>,
) {
    if edges.is_empty() {
        return;
    }
    let eligible: Vec<PodKey> = store
        .state()
        .iter()
        .map(|p| PodKey::of(&p.metadata))
        .collect();
    for node in edges {
        let pods = ctx.pods_on_node(&node, &eligible);
        tracing::info!(node = %node, pods = pods.len(), "node became unreachable; re-checking its pods");
        for key in pods {
            let _ = triggers.unbounded_send(key);
        }
    }
}
