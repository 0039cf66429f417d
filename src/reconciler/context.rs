//! What the reconciles share: one per-pod state map ([`PodState`]), the node cache, the clock,
//! the decision's settings, the writer and the per-Job episode settings. A reconcile reads a
//! pod's state once ([`Context::remembered`]) and writes it once, at its end; the error policy
//! counts the failures in a row.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::runtime::reflector::Store;

use super::filter::{PodKey, PodMetadata};
use super::metrics::RecoveryMetrics;
use super::node_cache::NodeCache;
use super::writer::Writer;
use crate::recovery::brake::{self, BrakeConfig, Edges, LastRelease, Zone};
use crate::recovery::episode::{self, DuePod, EpisodeConfig, JobDue, JobKey, KnownPod};
use crate::recovery::{self, NodeFacts};
use crate::runtime::Leadership;

/// How the executor behaves.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    pub(crate) dry_run: bool,
    pub(crate) no_delete: bool,
    /// `reportingInstance` of events and the Lease identity.
    pub(crate) identity: String,
}

/// Everything the reconciler remembers of one pod, in one place.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PodState {
    /// `spec.nodeName` from the last GET, so a node edge finds its pods.
    pub(crate) node: Option<String>,
    /// Waiting for the deadline, the node or the Job (counted in `jobgate_recovery_pending_pods`).
    pub(crate) waiting: Option<Waiting>,
    /// Failed reconciles in a row (the error backoff's exponent).
    pub(crate) retries: u32,
    /// `--dry-run`: the uid of the pod whose "would ..." event was posted, so it is posted once.
    pub(crate) dry_run_reported: Option<String>,
    /// The uid of the pod whose "held" Warning event was posted, so it is posted once.
    pub(crate) held_reported: Option<String>,
    /// Recovered and force-deleted, but these finalizers hold it (counted in
    /// `jobgate_recovery_finalizer_held_pods`).
    pub(crate) held_by_finalizers: Option<Vec<String>>,
    /// The uid of the pod whose "waiting for finalizers" event was posted, so it is posted once.
    pub(crate) finalizers_reported: Option<String>,
    /// Its recovery is recorded on it (only the delete may be left): it joins no episode of its
    /// Job.
    pub(crate) recorded: bool,
}

/// What a pod that is not recovered yet waits for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Waiting {
    /// Its deadline (`deletionTimestamp` plus the grace period), not reached yet.
    Deadline(Timestamp),
    /// Past its deadline: its node (named) to become unreachable.
    Node(String),
    /// Due, but a node became unreachable within the settle period: the partition brake judges
    /// the zones at this time.
    Settle(Timestamp),
    /// Due, but its Job's previous recovery episode was too recent.
    JobBackoff(Timestamp),
    /// Due, but its Job reached `--recovery-backoff-limit-count`.
    JobRecoveryLimit,
    /// Due, but held by the partition brake: its zone (key) looks partitioned. `until`: a
    /// throttled zone releases another node then.
    Held {
        /// The zone's key, as upstream `GetZoneKey` (`brake::zone_key`).
        zone: String,
        /// Why it is held: the Warning event's note and `jobgate status` text.
        message: String,
        /// When a throttled zone may release its next node; `None` while the zone is held.
        until: Option<Timestamp>,
    },
}

/// Per-Job recovery episodes: the backoff flags, the store of eligible pods (to find a Job's
/// other due pods) and the trigger channel (to reconcile them).
pub(crate) struct EpisodeGate {
    pub(crate) config: EpisodeConfig,
    pub(crate) store: Store<PodMetadata>,
    pub(crate) triggers: futures::channel::mpsc::UnboundedSender<PodKey>,
    /// The backoff jitter, a number in [0, 1) (`rand::random`; fixed in tests).
    pub(crate) jitter: fn() -> f64,
}

impl EpisodeGate {
    /// `config` with an empty store of eligible pods and nobody listening to triggers.
    pub(crate) fn without_siblings(config: EpisodeConfig) -> EpisodeGate {
        let (triggers, _) = futures::channel::mpsc::unbounded();
        EpisodeGate {
            config,
            store: kube::runtime::reflector::store::Writer::default().as_reader(),
            triggers,
            jitter: rand::random::<f64>,
        }
    }
}

/// State shared by the watches, the elector and the reconciles.
pub struct Context {
    /// For reads; every write goes through `writer`.
    pub(crate) client: Client,
    pub(crate) config: recovery::RecoveryConfig,
    pub(crate) options: Options,
    pub(crate) writer: Writer,
    pub(crate) leadership: Leadership,
    pub(crate) metrics: RecoveryMetrics,
    pub(crate) nodes: Mutex<NodeCache>,
    pub(crate) pods: Mutex<HashMap<PodKey, PodState>>,
    /// The Jobs' recovery episodes.
    pub(crate) episodes: EpisodeGate,
    /// The partition brake's settings.
    pub(crate) brake: BrakeConfig,
    /// The last node released per throttled zone (partially disrupted large zones).
    pub(crate) zone_releases: Mutex<HashMap<String, LastRelease>>,
    clock: Box<dyn Fn() -> Timestamp + Send + Sync>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Context {
    /// A context with the defaults of the episode flags (and no store of sibling pods: each due
    /// pod of a Job is its Job's only known due pod) and of the brake, and the system clock.
    pub fn new(
        client: Client,
        config: recovery::RecoveryConfig,
        options: Options,
        leadership: Leadership,
        metrics: RecoveryMetrics,
    ) -> Context {
        let writer = Writer::new(
            client.clone(),
            leadership.clone(),
            options.dry_run,
            options.identity.clone(),
            metrics.clone(),
        );
        Context {
            client,
            config,
            options,
            writer,
            leadership,
            metrics,
            nodes: Mutex::new(NodeCache::new(BrakeConfig::default().settle)),
            pods: Mutex::default(),
            episodes: EpisodeGate::without_siblings(EpisodeConfig::default()),
            brake: BrakeConfig::default(),
            zone_releases: Mutex::default(),
            clock: Box::new(Timestamp::now),
        }
    }

    /// Sets the episode flags, the store of eligible pods and the trigger channel.
    pub(crate) fn with_episodes(mut self, episodes: EpisodeGate) -> Context {
        self.episodes = episodes;
        self
    }

    /// Sets the partition brake.
    pub(crate) fn with_brake(mut self, brake: BrakeConfig) -> Context {
        lock(&self.nodes).set_settle(brake.settle);
        self.brake = brake;
        self
    }

    /// Replaces the clock (tests).
    #[cfg(test)]
    pub(crate) fn with_clock(
        mut self,
        clock: impl Fn() -> Timestamp + Send + Sync + 'static,
    ) -> Context {
        self.clock = Box::new(clock);
        self
    }

    /// Replaces the client, for reads and writes (tests: a second scripted conversation with
    /// the same remembered state).
    #[cfg(test)]
    pub(crate) fn with_client(mut self, client: Client) -> Context {
        self.writer = Writer::new(
            client.clone(),
            self.leadership.clone(),
            self.options.dry_run,
            self.options.identity.clone(),
            self.metrics.clone(),
        );
        self.client = client;
        self
    }

    /// The clock, read once per decision.
    pub(crate) fn now(&self) -> Timestamp {
        (self.clock)()
    }

    pub(crate) fn cached_node(&self, name: &str) -> Option<NodeFacts> {
        lock(&self.nodes).get(name).cloned()
    }

    pub(crate) fn nodes_synced(&self) -> bool {
        lock(&self.nodes).synced()
    }

    /// What is remembered of `key` (the defaults when nothing is).
    pub(crate) fn remembered(&self, key: &PodKey) -> PodState {
        lock(&self.pods).get(key).cloned().unwrap_or_default()
    }

    /// What is remembered of `key`, if anything.
    #[cfg(test)]
    pub(crate) fn pod_state(&self, key: &PodKey) -> Option<PodState> {
        lock(&self.pods).get(key).cloned()
    }

    /// Every zone of the node cache, for the partition brake; refreshes the disrupted-zones gauge.
    pub(crate) fn zones(&self) -> BTreeMap<String, Zone> {
        let zones = brake::zones(lock(&self.nodes).nodes());
        let disrupted = brake::disrupted_zones(&zones, &self.brake).len();
        self.metrics
            .disrupted_zones
            .set(i64::try_from(disrupted).unwrap_or(i64::MAX));
        zones
    }

    /// When the node stream delivered its last rising edge, anywhere and on `node`.
    pub(crate) fn edges(&self, node: &str) -> Edges {
        lock(&self.nodes).edges(node)
    }

    /// The last throttled release of `zone`.
    pub(crate) fn last_release(&self, zone: &str) -> Option<LastRelease> {
        lock(&self.zone_releases).get(zone).cloned()
    }

    /// Remembers a throttled release as its zone's last.
    pub(crate) fn remember_release(&self, release: Option<LastRelease>) {
        if let Some(release) = release {
            lock(&self.zone_releases).insert(release.zone.clone(), release);
        }
    }

    /// The due pods of `job` as `this` sees them ([`episode::due_pods`]), its siblings from the
    /// store of eligible pods, the node last read for each and the node cache. A sibling whose
    /// node was not read yet is left out; it joins the episode as a leftover only if on one of
    /// its nodes.
    pub(crate) fn due_pods(&self, job: &JobKey, this: DuePod, now: Timestamp) -> JobDue {
        let pods = self.episodes.store.state();
        let remembered: Vec<(Option<String>, bool)> = {
            let states = lock(&self.pods);
            pods.iter()
                .map(|p| match states.get(&PodKey::of(&p.metadata)) {
                    Some(t) => (t.node.clone(), t.recorded),
                    None => (None, false),
                })
                .collect()
        };
        let unreachable: Vec<bool> = {
            let nodes = lock(&self.nodes);
            remembered
                .iter()
                .map(|(node, _)| {
                    node.as_deref()
                        .and_then(|n| nodes.get(n))
                        .is_some_and(recovery::is_unreachable)
                })
                .collect()
        };
        let known = pods.iter().zip(&remembered).zip(&unreachable).map(
            |((p, (node, recorded)), unreachable)| KnownPod {
                meta: &p.metadata,
                node: node.as_deref(),
                node_unreachable: *unreachable,
                recorded: *recorded,
            },
        );
        episode::due_pods(this, job, known, self.config.grace_period, now)
    }

    /// Changes what is remembered of `key` (creating it) and refreshes the pending gauge.
    pub(crate) fn update<R>(&self, key: &PodKey, f: impl FnOnce(&mut PodState) -> R) -> R {
        let mut pods = lock(&self.pods);
        let result = f(pods.entry(key.clone()).or_default());
        self.set_pending(&pods);
        result
    }

    fn set_pending(&self, pods: &HashMap<PodKey, PodState>) {
        let pending = pods.values().filter(|t| t.waiting.is_some()).count();
        self.metrics
            .pending
            .set(i64::try_from(pending).unwrap_or(i64::MAX));
        let held = pods
            .values()
            .filter(|t| matches!(t.waiting, Some(Waiting::Held { .. })))
            .count();
        self.metrics
            .held
            .set(i64::try_from(held).unwrap_or(i64::MAX));
        let by_finalizers = pods
            .values()
            .filter(|t| t.held_by_finalizers.is_some())
            .count();
        self.metrics
            .finalizer_held
            .set(i64::try_from(by_finalizers).unwrap_or(i64::MAX));
    }

    /// Drops everything remembered about a pod that is gone or no longer eligible.
    pub(crate) fn forget(&self, key: &PodKey) {
        let mut pods = lock(&self.pods);
        pods.remove(key);
        self.set_pending(&pods);
    }

    /// Forgets every pod not in `listed` (after a relist).
    pub(crate) fn retain(&self, listed: &HashSet<PodKey>) {
        let mut pods = lock(&self.pods);
        pods.retain(|k, _| listed.contains(k));
        self.set_pending(&pods);
    }

    /// Held pods of the zones in `released` (zones whose brake let go).
    pub(crate) fn held_in(&self, released: &HashSet<String>) -> Vec<PodKey> {
        lock(&self.pods)
            .iter()
            .filter(|(_, t)| {
                matches!(&t.waiting, Some(Waiting::Held { zone, .. }) if released.contains(zone))
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Tracked pods to re-check when `node` became unreachable: those last seen on it, and
    /// those whose node is not known yet.
    pub(crate) fn pods_on_node(&self, node: &str, eligible: &[PodKey]) -> Vec<PodKey> {
        let pods = lock(&self.pods);
        eligible
            .iter()
            .filter(|k| match pods.get(*k).and_then(|t| t.node.as_deref()) {
                Some(n) => n == node,
                None => true,
            })
            .cloned()
            .collect()
    }
}
