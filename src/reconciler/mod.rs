//! `jobgate reconcile`: the failure-recovery sidecar (Kueue KEP-6757). Owns the Kubernetes
//! client: watches, leader election, status patches, events, deletes. It asks
//! [`crate::recovery::decide`] what to do and does exactly that.
//!
//! Memory grows with *eligible* pods only: pods are watched metadata-only
//! (`PartialObjectMetadata`, listed in pages of 500) and every event is filtered on arrival; only
//! opted-in terminating pods are stored, stripped of managedFields, labels and foreign
//! annotations. Nodes are kept as name + taints. The full pod is read with one GET when a
//! pod is reconciled, which also gives the resourceVersion for the optimistic status patch.

pub mod args;
pub mod backoff_args;
pub mod cluster;
pub mod event;
pub mod job_state;
pub mod lease;
pub mod metrics;
pub mod status;
pub mod watch;

#[cfg(test)]
pub(crate) mod test_api;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event as KubeEvent;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::watcher;
use kube::runtime::{WatchStreamExt, controller::Action};
use kube::{Api, Client};
use prometheus_client::registry::Registry;

use crate::recovery::episode::{
    DuePod, EpisodeConfig, EpisodeDecision, JobKey, KnownPod, due_pods_of_job,
};
use crate::recovery::{self, Decision, NodeFacts, PodFacts, Recovery};
use crate::server::admin::{AdminState, Readiness};
pub use args::ReconcileArgs;
use event::{EventText, Regarding};
use job_state::{EpisodeStart, JobStateError};
use lease::{Leadership, LeaseConfig};
use metrics::{NodeLabels, RecoveryMetrics};
use watch::{NodeCache, PodKey, PodMeta};

/// The RBAC rules the reconciler needs, as (API group, resource, verbs). The deploy
/// ClusterRole is tested against this list.
pub const RBAC: &[(&str, &str, &[&str])] = &[
    // metadata-only list/watch of all pods, GET of one pod, forceful delete
    ("", "pods", &["get", "list", "watch", "delete"]),
    // phase Failed + KueueFailureRecovery condition (strategic merge patch)
    ("", "pods/status", &["patch"]),
    // node taints: watch for the cache, GET to confirm before acting
    ("", "nodes", &["get", "list", "watch"]),
    // Warning / dry-run Normal events
    ("events.k8s.io", "events", &["create"]),
    // per-Job recovery state annotation and --on-recovery-limit=suspend (issue 6)
    ("batch", "jobs", &["get", "patch"]),
    // leader election
    (
        "coordination.k8s.io",
        "leases",
        &["get", "create", "update"],
    ),
];

/// fieldManager of the status patch.
pub const FIELD_MANAGER: &str = "jobgate-reconciler";
/// Re-reads of the pod after a 409 Conflict within one reconcile, before backing off.
const CONFLICT_ATTEMPTS: u32 = 4;
/// Safety re-check of a pod waiting for its node, in case a node edge was missed.
const WAIT_FOR_NODE_RESYNC: Duration = Duration::from_secs(300);
/// Longest requeue; deadlines further out are re-read when it fires.
const MAX_REQUEUE: Duration = Duration::from_secs(3600);
/// Error backoff per pod: 1s, 2s, 4s, ... capped.
const MAX_ERROR_BACKOFF: Duration = Duration::from_secs(300);

/// How the executor behaves.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    pub dry_run: bool,
    pub no_delete: bool,
    /// `reportingInstance` of events and the Lease identity.
    pub identity: String,
}

/// What the reconciler remembers of one tracked pod.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tracked {
    /// `spec.nodeName` from the last GET, so a node edge finds its pods.
    pub node: Option<String>,
    /// Waiting for the deadline or for the node (counted in `jobgate_recovery_pending_pods`).
    pub waiting: Option<Waiting>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Waiting {
    Deadline(Timestamp),
    Node(String),
    /// Due, but its Job's previous recovery episode was too recent (issue 6).
    JobBackoff(Timestamp),
    /// Due, but its Job reached `--recovery-backoff-limit-count` (issue 6).
    JobRecoveryLimit,
}

/// Per-Job recovery episodes (issue 6): the backoff flags, the store of eligible pods (to find
/// a Job's other due pods) and the trigger channel (to reconcile them).
pub struct Episodes {
    pub config: EpisodeConfig,
    pub store: Store<PodMeta>,
    pub triggers: futures::channel::mpsc::UnboundedSender<PodKey>,
    /// The backoff jitter, a number in [0, 1) (`rand::random`; fixed in tests).
    pub jitter: fn() -> f64,
}

/// State shared by the watches, the elector and the reconciles.
pub struct Context {
    pub client: Client,
    pub config: recovery::Config,
    pub options: Options,
    pub leadership: Leadership,
    pub metrics: RecoveryMetrics,
    pub nodes: Mutex<NodeCache>,
    pub tracked: Mutex<HashMap<PodKey, Tracked>>,
    /// `None`: every due pod is recovered on its own, without Job state.
    pub episodes: Option<Episodes>,
    retries: Mutex<HashMap<PodKey, u32>>,
    dry_run_reported: Mutex<HashMap<PodKey, String>>,
    clock: Box<dyn Fn() -> Timestamp + Send + Sync>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Context {
    pub fn new(
        client: Client,
        config: recovery::Config,
        options: Options,
        leadership: Leadership,
        metrics: RecoveryMetrics,
    ) -> Context {
        Context {
            client,
            config,
            options,
            leadership,
            metrics,
            nodes: Mutex::default(),
            tracked: Mutex::default(),
            episodes: None,
            retries: Mutex::default(),
            dry_run_reported: Mutex::default(),
            clock: Box::new(Timestamp::now),
        }
    }

    /// Gates every due pod of a Job by its Job's recovery episodes (issue 6).
    pub fn with_episodes(mut self, episodes: Episodes) -> Context {
        self.episodes = Some(episodes);
        self
    }

    /// Replaces the clock (tests).
    pub fn with_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Context {
        self.clock = Box::new(clock);
        self
    }

    fn now(&self) -> Timestamp {
        (self.clock)()
    }

    fn cached_node(&self, name: &str) -> Option<NodeFacts> {
        lock(&self.nodes).get(name).cloned()
    }

    fn nodes_synced(&self) -> bool {
        lock(&self.nodes).synced()
    }

    fn update_tracked(&self, key: &PodKey, f: impl FnOnce(&mut Tracked)) {
        let mut tracked = lock(&self.tracked);
        f(tracked.entry(key.clone()).or_default());
        let pending = tracked.values().filter(|t| t.waiting.is_some()).count();
        self.metrics
            .pending
            .set(i64::try_from(pending).unwrap_or(i64::MAX));
    }

    /// Drops everything remembered about a pod that is gone or no longer eligible.
    pub fn forget(&self, key: &PodKey) {
        {
            let mut tracked = lock(&self.tracked);
            tracked.remove(key);
            let pending = tracked.values().filter(|t| t.waiting.is_some()).count();
            self.metrics
                .pending
                .set(i64::try_from(pending).unwrap_or(i64::MAX));
        }
        lock(&self.retries).remove(key);
        lock(&self.dry_run_reported).remove(key);
    }

    /// Forgets every tracked pod not in `listed` (after a relist).
    pub fn retain(&self, listed: &std::collections::HashSet<PodKey>) {
        let gone: Vec<PodKey> = lock(&self.tracked)
            .keys()
            .filter(|k| !listed.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            self.forget(&key);
        }
    }

    /// Tracked pods to re-check when `node` became unreachable: those last seen on it, and
    /// those whose node is not known yet.
    pub fn pods_on_node(&self, node: &str, eligible: &[PodKey]) -> Vec<PodKey> {
        let tracked = lock(&self.tracked);
        eligible
            .iter()
            .filter(|k| match tracked.get(*k).and_then(|t| t.node.as_deref()) {
                Some(n) => n == node,
                None => true,
            })
            .cloned()
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("the pod kept changing: {0} conflicts in a row")]
    Conflicts(u32),
    #[error("job recovery state: {0}")]
    JobState(#[from] JobStateError),
}

/// How a recovery attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Recorded (and deleted unless `--no-delete`), or the pod is gone.
    Done,
    /// The status patch met a newer resourceVersion: re-read and decide again.
    Conflict,
    /// Leadership was lost before a write: nothing more was done.
    NotLeader,
}

fn until(at: Timestamp, now: Timestamp) -> Duration {
    let d = Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO);
    d.min(MAX_REQUEUE)
}

/// Reconciles one pod: GET it, decide, act. The leader check comes first and again before
/// every write.
pub async fn reconcile_pod(ctx: &Context, key: &PodKey) -> Result<Action, ReconcileError> {
    if !ctx.leadership.is_leader() {
        // Re-run for every tracked pod when leadership is acquired.
        return Ok(Action::await_change());
    }
    if !ctx.nodes_synced() {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    for attempt in 0..CONFLICT_ATTEMPTS {
        let Some(pod) = pods.get_opt(&key.name).await? else {
            ctx.forget(key);
            return Ok(Action::await_change());
        };
        let facts = recovery::pod_facts(&pod);
        let now = ctx.now();
        let cached = facts.node_name.as_deref().and_then(|n| ctx.cached_node(n));
        let mut decision = recovery::decide(&facts, cached.as_ref(), now, &ctx.config);
        if let Decision::Recover(r) = &decision {
            // Never act on the cache alone: confirm the taint with a fresh read of the node.
            let fresh = nodes.get_opt(&r.node).await?;
            let fresh = fresh.as_ref().map(recovery::node_facts);
            decision = recovery::decide(&facts, fresh.as_ref(), now, &ctx.config);
        }
        tracing::debug!(pod = %key, node = ?facts.node_name, ?decision, "decided");
        let node = facts.node_name.clone();
        match decision {
            Decision::Ignore(reason) => {
                tracing::debug!(pod = %key, reason = reason.as_str(), "ignored");
                match reason {
                    // No longer eligible: the watch drops it too; keep no state behind.
                    recovery::Ignored::NotOptedIn | recovery::Ignored::NotTerminating => {
                        ctx.forget(key)
                    }
                    recovery::Ignored::NotScheduled | recovery::Ignored::NodeNotFound => ctx
                        .update_tracked(key, |t| {
                            t.node = node;
                            t.waiting = None;
                        }),
                }
                return Ok(Action::await_change());
            }
            Decision::RequeueAt(at) => {
                ctx.update_tracked(key, |t| {
                    t.node = node;
                    t.waiting = Some(Waiting::Deadline(at));
                });
                return Ok(Action::requeue(until(at, now)));
            }
            Decision::WaitForNode { node: waiting_for } => {
                ctx.update_tracked(key, |t| {
                    t.node = node;
                    t.waiting = Some(Waiting::Node(waiting_for));
                });
                return Ok(Action::requeue(WAIT_FOR_NODE_RESYNC));
            }
            Decision::Recover(recovery) => {
                ctx.update_tracked(key, |t| t.node = node);
                // A recovery already recorded on the pod (its delete failed, a restart, or
                // --no-delete) is no new intervention: it never starts or counts an episode.
                let gate = if recovery::recovery_recorded(&facts) {
                    Gate::Recover
                } else {
                    job_gate(ctx, &pod, &recovery, now).await?
                };
                match gate {
                    Gate::Recover => {}
                    Gate::NotLeader => return Ok(Action::await_change()),
                    Gate::Hold(waiting) => {
                        let action = match &waiting {
                            Waiting::JobBackoff(at) => Action::requeue(until(*at, now)),
                            // No Job watch: look again to notice a reset (annotation removed,
                            // Job resumed).
                            _ => Action::requeue(WAIT_FOR_NODE_RESYNC),
                        };
                        ctx.update_tracked(key, |t| t.waiting = Some(waiting));
                        return Ok(action);
                    }
                }
                match recover_pod(ctx, &pods, &pod, &facts, &recovery, now).await? {
                    Outcome::Done => {
                        ctx.update_tracked(key, |t| t.waiting = None);
                        lock(&ctx.retries).remove(key);
                        return Ok(Action::await_change());
                    }
                    Outcome::NotLeader => return Ok(Action::await_change()),
                    Outcome::Conflict => {
                        tracing::debug!(pod = %key, attempt, "status patch conflict; re-reading");
                        tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                    }
                }
            }
        }
    }
    Err(ReconcileError::Conflicts(CONFLICT_ATTEMPTS))
}

/// What the Job gate lets a reconcile do with its due pod.
#[derive(Debug)]
enum Gate {
    Recover,
    Hold(Waiting),
    NotLeader,
}

/// Issue 6 between the pod's decision and [`recover_pod`]: a due pod of a Job is recovered only
/// within one of its Job's recovery episodes (see `job_state::begin_episode`). Pods without a Job,
/// or of a Job that is gone, pass.
async fn job_gate(
    ctx: &Context,
    pod: &Pod,
    recovery: &Recovery,
    now: Timestamp,
) -> Result<Gate, ReconcileError> {
    let Some(episodes) = &ctx.episodes else {
        return Ok(Gate::Recover);
    };
    let Some(job) = job_state::pod_job(&pod.metadata) else {
        return Ok(Gate::Recover);
    };
    let this = DuePod {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        node: recovery.node.clone(),
        deadline: recovery.deadline,
    };
    let due = due_with_siblings(ctx, episodes, &job, this.clone(), now);
    if !ctx.leadership.is_leader() {
        return Ok(Gate::NotLeader);
    }
    let reporter = job_state::Reporter {
        instance: ctx.options.identity.clone(),
    };
    let jitter = (episodes.jitter)();
    let start = if ctx.options.dry_run {
        job_state::peek_episode(&ctx.client, &job, &due, &episodes.config, now, jitter).await?
    } else {
        job_state::begin_episode(
            &ctx.client,
            &reporter,
            &job,
            &due,
            &episodes.config,
            now,
            jitter,
        )
        .await?
    };
    let decision = match start {
        EpisodeStart::JobGone => return Ok(Gate::Recover),
        EpisodeStart::Decided { decision, .. } => decision,
    };
    tracing::debug!(pod = %this.name, job = %job.name, ?decision, "job episode decided");
    // begin_episode wrote these to the Job (peek_episode, --dry-run, wrote nothing).
    if !ctx.options.dry_run {
        match &decision {
            EpisodeDecision::Recover { .. } => {
                ctx.metrics.episodes.inc();
            }
            EpisodeDecision::LimitExceeded {
                new_state: Some(_), ..
            } => {
                ctx.metrics.limit_exceeded.inc();
            }
            _ => {}
        }
    }
    Ok(match decision {
        EpisodeDecision::Recover {
            pods, new_state, ..
        } => {
            tracing::info!(
                job = %job.name,
                namespace = %job.namespace,
                episode = new_state.count,
                pods = pods.len(),
                nodes = ?new_state.last_nodes,
                requeue_at = ?new_state.requeue_at,
                "recovery episode"
            );
            // The other pods of the episode are recovered by their own reconciles, which find
            // them leftovers of the episode just recorded.
            for other in pods.iter().filter(|p| **p != this) {
                let _ = episodes
                    .triggers
                    .unbounded_send(PodKey::new(&other.namespace, &other.name));
            }
            Gate::Recover
        }
        EpisodeDecision::Continue { pods, .. } if pods.contains(&this) => Gate::Recover,
        EpisodeDecision::Continue {
            others_wait_until: Some(at),
            ..
        }
        | EpisodeDecision::WaitUntil(at) => Gate::Hold(Waiting::JobBackoff(at)),
        EpisodeDecision::LimitExceeded { .. } => Gate::Hold(Waiting::JobRecoveryLimit),
        // Cannot happen (`due` holds this pod); never act on what was not decided.
        EpisodeDecision::Continue { .. } | EpisodeDecision::NothingDue => {
            Gate::Hold(Waiting::JobRecoveryLimit)
        }
    })
}

/// `this` plus the Job's other due pods, from the store of eligible pods, the nodes last read
/// for them and the node cache. (Siblings whose node was not read yet are left out; they join
/// the episode as leftovers only if on one of its nodes.)
fn due_with_siblings(
    ctx: &Context,
    episodes: &Episodes,
    job: &JobKey,
    this: DuePod,
    now: Timestamp,
) -> Vec<DuePod> {
    let pods = episodes.store.state();
    let pod_nodes: Vec<Option<String>> = {
        let tracked = lock(&ctx.tracked);
        pods.iter()
            .map(|p| {
                tracked
                    .get(&PodKey::of(&p.metadata))
                    .and_then(|t| t.node.clone())
            })
            .collect()
    };
    let unreachable: Vec<bool> = {
        let nodes = lock(&ctx.nodes);
        pod_nodes
            .iter()
            .map(|n| {
                n.as_deref()
                    .and_then(|n| nodes.get(n))
                    .is_some_and(recovery::is_unreachable)
            })
            .collect()
    };
    let known = pods
        .iter()
        .zip(&pod_nodes)
        .zip(&unreachable)
        .map(|((p, node), unreachable)| KnownPod {
            meta: &p.metadata,
            node: node.as_deref(),
            node_unreachable: *unreachable,
        });
    let mut due = due_pods_of_job(job, known, ctx.config.grace_period, now);
    due.retain(|p| p.name != this.name || p.namespace != this.namespace);
    due.push(this);
    due.sort();
    due
}

/// Executes a due recovery, each step idempotent: (1) patch `pods/status` with the pod's
/// resourceVersion, (2) a Warning event once the patch succeeded, (3) delete with grace period
/// 0 (kueue#9649). This is the only function that changes the cluster; per-Job gates (issue 6)
/// go between the decision and this call.
pub async fn recover_pod(
    ctx: &Context,
    pods: &Api<Pod>,
    pod: &Pod,
    facts: &PodFacts,
    recovery: &Recovery,
    now: Timestamp,
) -> Result<Outcome, kube::Error> {
    let key = PodKey::of(&pod.metadata);
    let uid = pod.metadata.uid.clone();
    let mut regarding = Regarding {
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        uid: uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
    };
    if ctx.options.dry_run {
        let first = {
            let mut reported = lock(&ctx.dry_run_reported);
            let uid = uid.clone().unwrap_or_default();
            reported.insert(key.clone(), uid.clone()).as_deref() != Some(uid.as_str())
        };
        tracing::info!(pod = %key, node = %recovery.node, "dry run: would forcefully terminate");
        if first {
            if !ctx.leadership.is_leader() {
                return Ok(Outcome::NotLeader);
            }
            let note = recovery.dry_run_message();
            let text = EventText {
                type_: "Normal",
                reason: recovery::DRY_RUN_REASON,
                action: recovery::EVENT_ACTION,
                note: &note,
            };
            emit(ctx, &regarding, &text, now).await;
        }
        return Ok(Outcome::Done);
    }

    let resource_version = pod.metadata.resource_version.clone().unwrap_or_default();
    let change = recovery::status_change(facts, recovery, &resource_version, now);
    if let Some(patch) = change.patch {
        if !ctx.leadership.is_leader() {
            return Ok(Outcome::NotLeader);
        }
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        match pods
            .patch_status(&key.name, &params, &Patch::Strategic(patch))
            .await
        {
            Ok(patched) => regarding.resource_version = patched.metadata.resource_version,
            Err(kube::Error::Api(s)) if s.is_conflict() => return Ok(Outcome::Conflict),
            Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(Outcome::Done),
            Err(e) => return Err(e),
        }
        if change.condition_changed {
            ctx.metrics
                .terminated
                .get_or_create(&NodeLabels {
                    node: recovery.node.clone(),
                })
                .inc();
        }
    }
    if change.condition_changed && ctx.leadership.is_leader() {
        let note = recovery.message();
        let text = EventText {
            type_: "Warning",
            reason: recovery::REASON,
            action: recovery::EVENT_ACTION,
            note: &note,
        };
        emit(ctx, &regarding, &text, now).await;
    }
    if !ctx.options.no_delete {
        if !ctx.leadership.is_leader() {
            return Ok(Outcome::NotLeader);
        }
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            // Never delete a same-named successor (StatefulSet-style pods).
            preconditions: Some(Preconditions {
                uid: uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match pods.delete(&key.name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(kube::Error::Api(s)) if s.is_conflict() => {
                tracing::info!(pod = %key, "pod was replaced (UID changed); not deleting the successor");
            }
            Err(e) => return Err(e),
        }
    }
    tracing::info!(
        pod = %key,
        node = %recovery.node,
        deleted = !ctx.options.no_delete,
        "forcefully terminated pod on unreachable node"
    );
    Ok(Outcome::Done)
}

/// Creates an event; a failure is counted and logged, never retried (the status condition is
/// the durable record).
async fn emit(ctx: &Context, regarding: &Regarding, text: &EventText<'_>, now: Timestamp) {
    let api: Api<KubeEvent> = Api::namespaced(ctx.client.clone(), &regarding.namespace);
    let body = event::pod_event(regarding, text, &ctx.options.identity, now);
    if let Err(e) = api.create(&PostParams::default(), &body).await {
        ctx.metrics.errors.inc();
        tracing::warn!(pod = %regarding.name, namespace = %regarding.namespace, error = %e, "could not create event");
    }
}

/// Backoff after a failed reconcile: 1s, 2s, 4s, ... up to 5 minutes, per pod.
pub fn error_backoff(ctx: &Context, key: &PodKey) -> Duration {
    ctx.metrics.errors.inc();
    let mut retries = lock(&ctx.retries);
    let n = retries.entry(key.clone()).or_insert(0);
    let delay = Duration::from_secs(1u64 << (*n).min(16)).min(MAX_ERROR_BACKOFF);
    *n = n.saturating_add(1);
    delay
}

/// The reconciler's registry and readiness, for the admin port (`server::admin::router`).
#[derive(Clone)]
pub struct Admin {
    pub registry: Arc<Registry>,
    pub readiness: Readiness,
}

impl Admin {
    pub fn state(&self) -> AdminState {
        AdminState {
            readiness: self.readiness.clone(),
            registry: self.registry.clone(),
        }
    }
}

/// Leader-election identity: `$POD_NAME` (or `$HOSTNAME`) plus a random suffix, like client-go.
pub fn default_identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "jobgate".into());
    format!("{host}_{:08x}", rand::random::<u32>())
}

/// `jobgate reconcile` until SIGTERM/SIGINT.
pub async fn run(args: ReconcileArgs) -> anyhow::Result<()> {
    run_until(args, shutdown_signal()).await
}

/// `jobgate reconcile` until `shutdown` resolves: admin port, watches, elector, reconciles.
pub async fn run_until(
    args: ReconcileArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let client = args.cluster.client(cluster::Prefer::InCluster).await?;
    run_with_client(client, args, shutdown, |_| {}).await
}

/// [`run_until`] with a given client; `on_listening` gets the bound admin address.
pub async fn run_with_client(
    client: Client,
    args: ReconcileArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(std::net::SocketAddr),
) -> anyhow::Result<()> {
    let identity = args
        .leader_election_id
        .clone()
        .unwrap_or_else(default_identity);
    let lease_namespace = args
        .lease_namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());

    let mut registry = Registry::default();
    let metrics = RecoveryMetrics::register(&mut registry);
    let admin = Admin {
        registry: Arc::new(registry),
        readiness: Readiness::default(),
    };
    let listener = tokio::net::TcpListener::bind(args.admin_addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on admin address {}: {e}", args.admin_addr))?;
    let admin_addr = listener.local_addr()?;
    on_listening(admin_addr);
    tracing::info!(admin = %admin_addr, identity = %identity, lease = %args.lease_name, namespace = %lease_namespace, dry_run = args.dry_run, no_delete = args.no_delete, "jobgate reconcile starting");
    let router = crate::server::admin::router(admin.state());
    let admin_task = tokio::spawn(async move { axum::serve(listener, router).await });

    let (trigger_tx, trigger_rx) = futures::channel::mpsc::unbounded::<PodKey>();
    let writer: Writer<PodMeta> = Writer::default();
    let store = writer.as_reader();
    let leadership = Leadership::new(metrics.clone());
    let ctx = Arc::new(
        Context::new(
            client.clone(),
            recovery::Config {
                annotation_keys: args.recovery_annotation_keys.clone(),
                grace_period: args.forceful_termination_grace_period,
            },
            Options {
                dry_run: args.dry_run,
                no_delete: args.no_delete,
                identity: identity.clone(),
            },
            leadership.clone(),
            metrics.clone(),
        )
        .with_episodes(Episodes {
            config: args.backoff.episode_config(),
            store: store.clone(),
            triggers: trigger_tx.clone(),
            jitter: rand::random::<f64>,
        }),
    );

    let pods_synced = Arc::new(AtomicBool::new(false));

    let pod_task = tokio::spawn(drive_pod_watch(
        Api::<PodMeta>::all(client.clone()),
        watcher::Config::default(),
        writer,
        ctx.clone(),
        trigger_tx.clone(),
        pods_synced.clone(),
        admin.readiness.clone(),
    ));
    let node_task = tokio::spawn(drive_node_watch(
        Api::<Node>::all(client.clone()),
        ctx.clone(),
        store.clone(),
        trigger_tx.clone(),
        pods_synced.clone(),
        admin.readiness.clone(),
    ));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let elector = {
        let store = store.clone();
        let trigger_tx = trigger_tx.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(lease::run_elector(
            Api::namespaced(client.clone(), &lease_namespace),
            LeaseConfig::new(args.lease_name.clone(), lease_namespace.clone(), identity),
            leadership,
            metrics.clone(),
            move || {
                // Leadership acquired: every tracked pod is due a look (restart safety).
                for pod in store.state() {
                    let _ = trigger_tx.unbounded_send(PodKey::of(&pod.metadata));
                }
            },
            async move {
                let _ = stop.wait_for(|s| *s).await;
            },
        ))
    };

    let reconciles = kube::runtime::applier(
        |obj: Arc<PodMeta>, ctx: Arc<Context>| {
            Box::pin(async move { reconcile_pod(&ctx, &PodKey::of(&obj.metadata)).await })
        },
        |obj: Arc<PodMeta>, err: &ReconcileError, ctx: Arc<Context>| {
            let key = PodKey::of(&obj.metadata);
            let delay = error_backoff(&ctx, &key);
            tracing::warn!(pod = %key, error = %err, retry_in = ?delay, "reconcile failed");
            Action::requeue(delay)
        },
        ctx.clone(),
        store,
        trigger_rx.map(|key| {
            Ok::<_, Infallible>(ObjectRef::<PodMeta>::new(&key.name).within(&key.namespace))
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
    });

    tokio::select! {
        _ = reconciles => {}
        _ = shutdown => tracing::info!("shutting down"),
    }
    admin.readiness.set(false);
    let _ = stop_tx.send(true);
    // Give the elector a moment to release the Lease so a standby takes over quickly.
    let _ = tokio::time::timeout(Duration::from_secs(5), elector).await;
    pod_task.abort();
    node_task.abort();
    admin_task.abort();
    Ok(())
}

fn update_readiness(ctx: &Context, pods_synced: &AtomicBool, readiness: &Readiness) {
    readiness.set(pods_synced.load(Ordering::SeqCst) && ctx.nodes_synced());
}

/// Drives the metadata-only pod watch: filters every event (see [`watch::filter_pod_event`]),
/// keeps eligible pods in `writer`'s store, forgets the rest, and sends pods to reconcile to
/// `triggers` (pods of a (re)list only once the list is complete and the store swapped in).
pub async fn drive_pod_watch(
    api: Api<PodMeta>,
    watch_config: watcher::Config,
    mut writer: Writer<PodMeta>,
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
                ctx.metrics.errors.inc();
                tracing::warn!(error = %e, "pod watch error");
                continue;
            }
        };
        let init_done = matches!(event, watcher::Event::InitDone);
        if matches!(event, watcher::Event::Init) {
            listing = true;
            listed.clear();
        }
        let filtered = watch::filter_pod_event(event, &ctx.config);
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
pub async fn drive_node_watch(
    api: Api<Node>,
    ctx: Arc<Context>,
    store: Store<PodMeta>,
    triggers: futures::channel::mpsc::UnboundedSender<PodKey>,
    pods_synced: Arc<AtomicBool>,
    readiness: Readiness,
) {
    let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                ctx.metrics.errors.inc();
                tracing::warn!(error = %e, "node watch error");
                continue;
            }
        };
        let init_done = matches!(event, watcher::Event::InitDone);
        let edges = lock(&ctx.nodes).apply(watch::node_event_facts(event));
        if !edges.is_empty() {
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
        if init_done {
            update_readiness(&ctx, &pods_synced, &readiness);
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = terminate => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
