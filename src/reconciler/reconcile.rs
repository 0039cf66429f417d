//! One pod's reconcile, a thin executor of [`recovery::plan`](crate::recovery::plan): read the
//! pod (and, when the cache says it is due, its node afresh), plan, then do what the plan says:
//! requeue, hold (one Warning event), ask the Job's episode ([`job_gate`]), recover
//! ([`recover`]) through the writer. One retry level: a 409 on any write re-reads the pod and
//! plans again, up to [`CONFLICT_ATTEMPTS`] times; anything else goes to the error policy
//! ([`error_backoff`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::runtime::controller::Action;
use tracing::Instrument;

use super::context::{Context, EpisodeGate, Waiting, lock};
use super::event::{EventText, pod_reference};
use super::filter::PodKey;
use super::job_state::{self, EpisodeStart, JobStateError};
use super::metrics::NodeLabels;
use super::writer::Skipped;
use crate::recovery::brake::{self, Disruption, LastRelease};
use crate::recovery::episode::{DuePod, JobKey, KnownPod, PodGate, due_pods_of_job, pod_gate};
use crate::recovery::plan::{self, AfterEpisode, Plan, PlanFacts, after_episode};
use crate::recovery::{self, Decision, Ignored, NodeFacts, PodFacts, Recovery};

/// Re-reads of the pod after a 409 Conflict within one reconcile, before backing off.
pub(crate) const CONFLICT_ATTEMPTS: u32 = 4;
/// Safety re-check of a pod waiting for its node, in case a node edge was missed.
pub(crate) const WAIT_FOR_NODE_RESYNC: Duration = Duration::from_secs(300);
/// Longest requeue; deadlines further out are re-read when it fires.
const MAX_REQUEUE: Duration = Duration::from_secs(3600);
/// Error backoff per pod: 1s, 2s, 4s, ... capped.
const MAX_ERROR_BACKOFF: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("the pod kept changing: {0} conflicts in a row")]
    Conflicts(u32),
    #[error("job recovery state: {0}")]
    JobState(#[from] JobStateError),
}

impl ReconcileError {
    /// The `error` label of `jobgate_recovery_errors_total` (kube-rs `controller-rs`
    /// `metric_label`): a fixed word per kind.
    pub(crate) fn metric_label(&self) -> &'static str {
        match self {
            ReconcileError::Kube(_) => "reconcile_api",
            ReconcileError::Conflicts(_) => "reconcile_conflicts",
            ReconcileError::JobState(_) => "reconcile_job_state",
        }
    }
}

/// How a recovery attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecoveryOutcome {
    /// Recorded (and deleted unless `--no-delete`), reported under `--dry-run`, or the pod is
    /// gone.
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

fn record_decision(decision: &'static str) {
    tracing::Span::current().record("decision", decision);
}

/// Reconciles one pod in a `reconcile` span (pod, node, decision), timed into
/// `jobgate_recovery_reconcile_duration_seconds`.
pub(crate) async fn reconcile_pod(ctx: &Context, key: &PodKey) -> Result<Action, ReconcileError> {
    let span = tracing::info_span!(
        "reconcile",
        pod = %key,
        node = tracing::field::Empty,
        decision = tracing::field::Empty,
    );
    let started = Instant::now();
    let result = reconcile_inner(ctx, key).instrument(span).await;
    ctx.metrics
        .reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    result
}

/// GET the pod, decide, act. A follower does nothing (it is re-run for every tracked pod when
/// it becomes leader); the writer checks leadership again before every write.
async fn reconcile_inner(ctx: &Context, key: &PodKey) -> Result<Action, ReconcileError> {
    if !ctx.leadership.is_leader() {
        record_decision("not-leader");
        return Ok(Action::await_change());
    }
    if !ctx.nodes_synced() {
        record_decision("nodes-not-synced");
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    for attempt in 0..CONFLICT_ATTEMPTS {
        let Some(pod) = pods.get_opt(&key.name).await? else {
            record_decision("pod-gone");
            ctx.forget(key);
            return Ok(Action::await_change());
        };
        let facts = recovery::pod_facts(&pod);
        let now = ctx.now();
        let cached = facts.node_name.as_deref().and_then(|n| ctx.cached_node(n));
        // Never act on the cache alone: a pod the cache says is due is planned again with a
        // fresh read of its node.
        let due = matches!(
            recovery::decide(&facts, cached.as_ref(), now, &ctx.config),
            Decision::Recover(_)
        );
        let node = match (&facts.node_name, due) {
            (Some(name), true) => nodes
                .get_opt(name)
                .await?
                .as_ref()
                .map(recovery::node_facts),
            _ => cached,
        };
        let job = ctx
            .episodes
            .as_ref()
            .and_then(|_| job_state::pod_job(&pod.metadata));
        let plan = plan_pod(ctx, &facts, node.as_ref(), job.as_ref(), due, now);
        let span = tracing::Span::current();
        if let Some(node) = &facts.node_name {
            span.record("node", node.as_str());
        }
        record_decision(plan_name(&plan));
        tracing::debug!(?plan, "planned");
        let node_name = facts.node_name.clone();
        let (recovery, gate) = match plan {
            Plan::Ignore(reason) => {
                match reason {
                    // No longer eligible: the watch drops it too; keep no state behind.
                    Ignored::NotOptedIn | Ignored::NotTerminating => ctx.forget(key),
                    Ignored::NotScheduled | Ignored::NodeNotFound => ctx.update(key, |t| {
                        t.node = node_name;
                        t.waiting = None;
                    }),
                }
                return Ok(Action::await_change());
            }
            Plan::WaitForDeadline(at) => {
                ctx.update(key, |t| {
                    t.node = node_name;
                    t.waiting = Some(Waiting::Deadline(at));
                });
                return Ok(Action::requeue(until(at, now)));
            }
            Plan::WaitForNode { node: waiting_for } => {
                ctx.update(key, |t| {
                    t.node = node_name;
                    t.waiting = Some(Waiting::Node(waiting_for));
                });
                return Ok(Action::requeue(WAIT_FOR_NODE_RESYNC));
            }
            Plan::Hold { disruption, until } => {
                ctx.update(key, |t| t.node = node_name);
                report_held(ctx, &pod, &disruption, now).await;
                let message = disruption.message();
                (
                    None,
                    Gate::Hold(Waiting::Held {
                        zone: disruption.zone,
                        message,
                        until,
                    }),
                )
            }
            Plan::Recover {
                recovery,
                recorded,
                release,
            } => {
                ctx.update(key, |t| t.node = node_name);
                remember_release(ctx, node.as_ref(), release);
                if recorded {
                    record_decision("recorded");
                }
                (Some(recovery), Gate::Recover)
            }
            Plan::AskJob {
                recovery,
                job,
                release,
            } => {
                ctx.update(key, |t| t.node = node_name);
                remember_release(ctx, node.as_ref(), release);
                let gate = job_gate(ctx, &pod, &job, &recovery, now).await?;
                (Some(recovery), gate)
            }
        };
        let recovery = match (gate, recovery) {
            (Gate::Recover, Some(recovery)) => recovery,
            (Gate::NotLeader, _) => {
                record_decision("not-leader");
                return Ok(Action::await_change());
            }
            (Gate::Conflict, _) => {
                tracing::debug!(attempt, "job state conflict; re-reading");
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                continue;
            }
            (Gate::Hold(waiting), _) => {
                let action = match &waiting {
                    Waiting::JobBackoff(at) => {
                        record_decision("job-backoff");
                        Action::requeue(until(*at, now))
                    }
                    Waiting::Held { until: at, .. } => {
                        record_decision("held");
                        // The node watch triggers held pods when their zone heals; the
                        // resync is a safety net.
                        Action::requeue(match at {
                            Some(at) => until(*at, now),
                            None => WAIT_FOR_NODE_RESYNC,
                        })
                    }
                    // No Job watch: look again to notice a reset (annotation removed,
                    // Job resumed).
                    Waiting::JobRecoveryLimit => {
                        record_decision("job-recovery-limit");
                        Action::requeue(WAIT_FOR_NODE_RESYNC)
                    }
                    Waiting::NotInEpisode => {
                        record_decision("not-in-episode");
                        Action::requeue(WAIT_FOR_NODE_RESYNC)
                    }
                    // Set before the gate, never returned by it.
                    Waiting::Deadline(_) | Waiting::Node(_) => {
                        Action::requeue(WAIT_FOR_NODE_RESYNC)
                    }
                };
                ctx.update(key, |t| t.waiting = Some(waiting));
                return Ok(action);
            }
            // A recovery gate always comes with its recovery.
            (Gate::Recover, None) => return Ok(Action::await_change()),
        };
        match recover(ctx, &pod, &facts, &recovery, now).await? {
            RecoveryOutcome::Done => {
                ctx.update(key, |t| {
                    t.waiting = None;
                    t.retries = 0;
                });
                return Ok(Action::await_change());
            }
            RecoveryOutcome::NotLeader => {
                record_decision("not-leader");
                return Ok(Action::await_change());
            }
            RecoveryOutcome::Conflict => {
                tracing::debug!(attempt, "status patch conflict; re-reading");
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
            }
        }
    }
    Err(ReconcileError::Conflicts(CONFLICT_ATTEMPTS))
}

/// The plan for the pod, with the node cache's zones and the zone's last throttled release.
/// Zones are counted only for a pod the cache found due: for any other, `decide` (the plan's
/// first step, over the same node) ends the plan before the brake.
fn plan_pod(
    ctx: &Context,
    facts: &PodFacts,
    node: Option<&NodeFacts>,
    job: Option<&JobKey>,
    due: bool,
    now: Timestamp,
) -> Plan {
    let zones = if due {
        let zones = brake::zones(lock(&ctx.nodes).nodes());
        ctx.metrics.disrupted_zones.set(
            i64::try_from(brake::disrupted_zones(&zones, &ctx.brake).len()).unwrap_or(i64::MAX),
        );
        zones
    } else {
        BTreeMap::new()
    };
    let last_release = node.and_then(|n| lock(&ctx.zone_releases).get(&n.zone).cloned());
    plan::plan(
        PlanFacts {
            pod: facts,
            node,
            zones: &zones,
            last_release: last_release.as_ref(),
            job,
            now,
        },
        &ctx.config,
        &ctx.brake,
    )
}

/// The short name of a plan, for the span's `decision` field.
fn plan_name(plan: &Plan) -> &'static str {
    match plan {
        Plan::Ignore(reason) => reason.as_str(),
        Plan::WaitForDeadline(_) => "wait-for-deadline",
        Plan::WaitForNode { .. } => "wait-for-node",
        Plan::Hold { .. } => "held",
        Plan::Recover { .. } | Plan::AskJob { .. } => "recover",
    }
}

/// A throttled release of the zone, remembered for the zone's next pod.
fn remember_release(ctx: &Context, node: Option<&NodeFacts>, release: Option<LastRelease>) {
    if let (Some(node), Some(release)) = (node, release) {
        lock(&ctx.zone_releases).insert(node.zone.clone(), release);
    }
}

/// One Warning event per held pod (uid).
async fn report_held(ctx: &Context, pod: &Pod, disruption: &Disruption, now: Timestamp) {
    let message = disruption.message();
    let key = PodKey::of(&pod.metadata);
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let first = ctx.update(&key, |t| t.held_reported.as_deref() != Some(uid.as_str()));
    if !first {
        return;
    }
    tracing::warn!(pod = %key, zone = %brake::zone_name(&disruption.zone), "{message}");
    let regarding = pod_reference(
        &key.namespace,
        &key.name,
        pod.metadata.uid.clone(),
        pod.metadata.resource_version.clone(),
    );
    let text = EventText {
        type_: "Warning",
        reason: HELD_REASON,
        action: crate::kueue::EVENT_ACTION,
        note: &message,
    };
    // Posted (or dry run): not again for this pod. Not leader: the next leader posts it.
    if ctx.writer.event(&regarding, &text, now).await != Err(Skipped::NotLeader) {
        ctx.update(&key, |t| t.held_reported = Some(uid.clone()));
    }
}

/// Reason of the Warning event on a pod the partition brake holds.
pub(crate) const HELD_REASON: &str = "ForcefulTerminationHeld";

/// What the Job gate lets a reconcile do with its due pod.
#[derive(Debug)]
enum Gate {
    Recover,
    Hold(Waiting),
    NotLeader,
    /// The Job's state write conflicted: re-read and plan again.
    Conflict,
}

/// Between the pod's decision and [`recover`]: a due pod of a Job is recovered only within one
/// of its Job's recovery episodes (see `job_state::begin_episode`), as [`pod_gate`] reads the
/// episode decision. Pods without a Job, or of a Job that is gone, pass.
async fn job_gate(
    ctx: &Context,
    pod: &Pod,
    job: &JobKey,
    recovery: &Recovery,
    now: Timestamp,
) -> Result<Gate, ReconcileError> {
    let Some(episodes) = &ctx.episodes else {
        return Ok(Gate::Recover);
    };
    let this = DuePod {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        node: recovery.node.clone(),
        deadline: recovery.deadline,
    };
    let due = due_with_siblings(ctx, episodes, job, this.clone(), now);
    let jitter = (episodes.jitter)();
    let start = job_state::begin_episode(
        &ctx.client,
        &ctx.writer,
        job,
        &due,
        &episodes.config,
        now,
        jitter,
    )
    .await?;
    let decision = match start {
        EpisodeStart::JobGone => return Ok(Gate::Recover),
        EpisodeStart::NotLeader => return Ok(Gate::NotLeader),
        EpisodeStart::Conflict => return Ok(Gate::Conflict),
        EpisodeStart::Decided { decision, .. } => decision,
    };
    tracing::debug!(job = %job.name, ?decision, "job episode decided");
    let gate = pod_gate(&decision, &this);
    if let PodGate::NewEpisode { episode } = gate
        && let recovery::episode::EpisodeDecision::Recover {
            pods, new_state, ..
        } = &decision
    {
        tracing::info!(
            job = %job.name,
            namespace = %job.namespace,
            episode,
            pods = pods.len(),
            nodes = ?new_state.last_nodes,
            requeue_at = ?new_state.requeue_at,
            "recovery episode"
        );
        // The other pods of the episode are recovered by their own reconciles, which
        // find them leftovers of the episode just recorded.
        for other in pods.iter().filter(|p| **p != this) {
            let _ = episodes
                .triggers
                .unbounded_send(PodKey::new(&other.namespace, &other.name));
        }
    }
    Ok(match after_episode(&gate) {
        AfterEpisode::Recover => Gate::Recover,
        AfterEpisode::Backoff(at) => Gate::Hold(Waiting::JobBackoff(at)),
        AfterEpisode::LimitReached => Gate::Hold(Waiting::JobRecoveryLimit),
        AfterEpisode::NotCovered => Gate::Hold(Waiting::NotInEpisode),
    })
}

/// `this` plus the Job's other due pods, from the store of eligible pods, the nodes last read
/// for them and the node cache. (Siblings whose node was not read yet are left out; they join
/// the episode as leftovers only if on one of its nodes.)
fn due_with_siblings(
    ctx: &Context,
    episodes: &EpisodeGate,
    job: &JobKey,
    this: DuePod,
    now: Timestamp,
) -> Vec<DuePod> {
    let pods = episodes.store.state();
    let pod_nodes: Vec<Option<String>> = {
        let states = lock(&ctx.pods);
        pods.iter()
            .map(|p| {
                states
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

/// Executes a due recovery through the writer, each step idempotent: (1) patch `pods/status`
/// with the pod's resourceVersion, (2) a Warning event once the patch succeeded and only when
/// the condition is new, (3) delete with grace period 0 (kueue#9649) unless `--no-delete`.
/// Under `--dry-run` the first write is skipped by the writer and the pod gets one `Normal`
/// "would forcefully terminate" event instead (once per pod uid).
pub(crate) async fn recover(
    ctx: &Context,
    pod: &Pod,
    facts: &PodFacts,
    recovery: &Recovery,
    now: Timestamp,
) -> Result<RecoveryOutcome, kube::Error> {
    let key = PodKey::of(&pod.metadata);
    let uid = pod.metadata.uid.clone();
    let mut regarding = pod_reference(
        &key.namespace,
        &key.name,
        uid.clone(),
        pod.metadata.resource_version.clone(),
    );
    let resource_version = pod.metadata.resource_version.clone().unwrap_or_default();
    let change = recovery::status_change(facts, recovery, &resource_version, now);
    if let Some(patch) = change.patch {
        match ctx
            .writer
            .patch_pod_status(&key.namespace, &key.name, patch)
            .await
        {
            Ok(Ok(patched)) => regarding.resource_version = patched.metadata.resource_version,
            Ok(Err(skipped)) => {
                return skipped_outcome(ctx, &key, &regarding, recovery, skipped, now).await;
            }
            Err(kube::Error::Api(s)) if s.is_conflict() => return Ok(RecoveryOutcome::Conflict),
            Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(RecoveryOutcome::Done),
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
    if change.condition_changed {
        let note = recovery.message();
        let text = EventText {
            type_: "Warning",
            reason: crate::kueue::REASON_FORCEFULLY_TERMINATED,
            action: crate::kueue::EVENT_ACTION,
            note: &note,
        };
        // Not leader any more: the delete below is skipped for the same reason.
        let _ = ctx.writer.event(&regarding, &text, now).await;
    }
    if !ctx.options.no_delete {
        match ctx
            .writer
            .delete_pod(&key.namespace, &key.name, uid.clone())
            .await
        {
            Ok(Ok(())) => {}
            Ok(Err(skipped)) => {
                return skipped_outcome(ctx, &key, &regarding, recovery, skipped, now).await;
            }
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
    Ok(RecoveryOutcome::Done)
}

/// A write the writer did not send: a follower stops; a dry run reports what it would have done,
/// once per pod uid.
async fn skipped_outcome(
    ctx: &Context,
    key: &PodKey,
    regarding: &k8s_openapi::api::core::v1::ObjectReference,
    recovery: &Recovery,
    skipped: Skipped,
    now: Timestamp,
) -> Result<RecoveryOutcome, kube::Error> {
    match skipped {
        Skipped::NotLeader => Ok(RecoveryOutcome::NotLeader),
        Skipped::DryRun => {
            let uid = regarding.uid.clone().unwrap_or_default();
            let first = ctx.update(key, |t| {
                let before = std::mem::take(&mut t.dry_run_reported);
                t.dry_run_reported = Some(uid.clone());
                before.as_deref() != Some(uid.as_str())
            });
            record_decision("dry-run");
            tracing::info!(pod = %key, node = %recovery.node, "dry run: would forcefully terminate");
            if first
                && ctx
                    .writer
                    .report_dry_run(regarding, &recovery.dry_run_message(), now)
                    .await
                    .is_err()
            {
                // Not leader: report it on a later pass, as leader.
                ctx.update(key, |t| t.dry_run_reported = None);
                return Ok(RecoveryOutcome::NotLeader);
            }
            Ok(RecoveryOutcome::Done)
        }
    }
}

/// Backoff after a failed reconcile: 1s, 2s, 4s, ... up to 5 minutes, per pod; counts the error
/// by kind.
pub(crate) fn error_backoff(ctx: &Context, key: &PodKey, error: &ReconcileError) -> Duration {
    ctx.metrics.error(error.metric_label());
    ctx.update(key, |t| {
        let delay = Duration::from_secs(1u64 << t.retries.min(16)).min(MAX_ERROR_BACKOFF);
        t.retries = t.retries.saturating_add(1);
        delay
    })
}
