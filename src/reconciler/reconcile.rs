//! One pod's reconcile, a thin executor of the pure plan, shaped like kube-rs's controller-rs:
//! read the pod (and its node afresh when the cache says it is due), plan ([`plan::plan`]; for a
//! due pod of a Job also [`plan::plan_job`] over the Job as read), execute the plan's one step
//! through the writer, remember the [`Outcome`] in one write of the pod's state, and return
//! kube-runtime's `Action`. Every error, a 409 Conflict included, goes to the one error policy
//! ([`error_policy`]): a reconcile never sleeps and never retries on its own.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::runtime::controller::Action;
use tracing::Instrument;

use super::context::{Context, PodState, Waiting};
use super::event::{EventText, pod_reference};
use super::filter::PodKey;
use super::job_state::{self, JobStateError, ReadJob, Recorded};
use super::metrics::NodeLabels;
use super::watched_node::WatchedNode;
use super::writer::Skipped;
use crate::recovery::brake::{self, Disruption};
use crate::recovery::episode::{DuePod, JobKey};
use crate::recovery::plan::{self, JobFacts, JobPlan, JobRecord, Plan, PlanFacts};
use crate::recovery::{self, Decision, Ignored, PodFacts, Recovery};

/// Conflicts in a row that are read again soon (50 ms, 100 ms, 200 ms) before the error
/// backoff takes over: a 409 is optimistic concurrency at work (a sibling recorded its Job's
/// episode first, the kubelet updated the pod), not a failure.
pub(crate) const CONFLICT_ATTEMPTS: u32 = 4;
const CONFLICT_REQUEUE: Duration = Duration::from_millis(50);
/// Safety re-check of a pod waiting for its node, in case a node edge was missed.
pub(crate) const WAIT_FOR_NODE_RESYNC: Duration = Duration::from_secs(300);
/// Longest requeue; deadlines further out are re-read when it fires.
const MAX_REQUEUE: Duration = Duration::from_secs(3600);
/// Error backoff per pod: 1s, 2s, 4s, ... capped.
const MAX_ERROR_BACKOFF: Duration = Duration::from_secs(300);
/// Reason of the Warning event on a pod the partition brake holds.
pub(crate) const HELD_REASON: &str = "ForcefulTerminationHeld";
/// Reason of the Warning event on a recovered pod that finalizers keep after the force delete.
pub(crate) const FINALIZERS_REASON: &str = "ForcefulTerminationWaitingForFinalizers";

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The pod's status patch met a newer resourceVersion: read again and plan again.
    #[error("the pod changed since it was read (409 Conflict)")]
    Conflict,
    #[error("job recovery state: {0}")]
    JobState(#[from] JobStateError),
}

impl ReconcileError {
    /// The `error` label of `jobgate_recovery_errors_total` (kube-rs `controller-rs`
    /// `metric_label`): a fixed word per kind.
    pub(crate) fn metric_label(&self) -> &'static str {
        match self {
            ReconcileError::Kube(_) => "reconcile_api",
            ReconcileError::Conflict | ReconcileError::JobState(JobStateError::Conflict { .. }) => {
                "reconcile_conflicts"
            }
            ReconcileError::JobState(_) => "reconcile_job_state",
        }
    }

    /// A write met an object changed since it was read (the pod, or the Job).
    fn is_conflict(&self) -> bool {
        matches!(
            self,
            ReconcileError::Conflict | ReconcileError::JobState(JobStateError::Conflict { .. })
        )
    }
}

/// How one reconcile ends: the span's `decision`, what to remember of the pod (one write of its
/// [`PodState`]), and when to look again.
#[derive(Debug)]
struct Outcome {
    decision: &'static str,
    memory: Memory,
    action: Action,
}

#[derive(Debug)]
enum Memory {
    /// No longer eligible, or gone: forget the pod.
    Forget,
    /// Leadership ended before a write: remember nothing new.
    Keep,
    /// What the pod waits for (`None`: nothing), whether its recovery is recorded, and an event
    /// posted once per pod uid.
    Update {
        waiting: Option<Waiting>,
        recorded: bool,
        reported: Option<Reported>,
    },
}

/// An event posted once per pod uid.
#[derive(Debug)]
enum Reported {
    Held(String),
    DryRun(String),
    /// The "waiting for finalizers" event; the finalizers holding the pod.
    Finalizers(String, Vec<String>),
}

impl Outcome {
    fn forget(decision: &'static str) -> Outcome {
        Outcome {
            decision,
            memory: Memory::Forget,
            action: Action::await_change(),
        }
    }

    fn not_leader() -> Outcome {
        Outcome {
            decision: "not-leader",
            memory: Memory::Keep,
            action: Action::await_change(),
        }
    }

    fn update(decision: &'static str, waiting: Option<Waiting>, recorded: bool) -> Outcome {
        Outcome {
            decision,
            memory: Memory::Update {
                waiting,
                recorded,
                reported: None,
            },
            action: Action::await_change(),
        }
    }

    /// Nothing to wait for (never acted on in this state, or reported under `--dry-run`).
    fn idle(decision: &'static str) -> Outcome {
        Outcome::update(decision, None, false)
    }

    /// Waiting for `waiting`; looked at again after `after`.
    fn wait(decision: &'static str, waiting: Waiting, after: Duration) -> Outcome {
        Outcome {
            action: Action::requeue(after),
            ..Outcome::update(decision, Some(waiting), false)
        }
    }

    /// Recovered: recorded on the pod (and deleted unless `--no-delete`).
    fn recovered(decision: &'static str) -> Outcome {
        Outcome::update(decision, None, true)
    }

    fn reported(mut self, event: Option<Reported>) -> Outcome {
        if let Memory::Update { reported, .. } = &mut self.memory {
            *reported = event;
        }
        self
    }
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

/// GET the pod, plan, execute, remember. A follower does nothing (it is re-run for every
/// tracked pod when it becomes leader); the writer checks leadership again before every write.
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
    let Some(pod) = pods.get_opt(&key.name).await? else {
        return Ok(settle(ctx, key, None, Outcome::forget("pod-gone")));
    };
    let facts = recovery::read::pod_facts(&pod);
    if let Some(node) = &facts.node_name {
        tracing::Span::current().record("node", node.as_str());
    }
    let now = ctx.now();
    let plan = plan_pod(ctx, &pod, &facts, now).await?;
    tracing::debug!(?plan, "planned");
    let step = Execution {
        ctx,
        key,
        pod: &pod,
        facts: &facts,
        seen: ctx.remembered(key),
        now,
    };
    let outcome = step.execute(plan).await?;
    Ok(settle(ctx, key, facts.node_name.clone(), outcome))
}

/// The pod's plan. Its node is read afresh only when the cache says the pod is due (never act
/// on the cache alone), and the zones are counted only then: for any other pod `decide`, the
/// plan's first step over the same node, ends the plan before the brake.
async fn plan_pod(
    ctx: &Context,
    pod: &Pod,
    facts: &PodFacts,
    now: Timestamp,
) -> Result<Plan, kube::Error> {
    let cached = facts.node_name.as_deref().and_then(|n| ctx.cached_node(n));
    let due = matches!(
        recovery::decide(facts, cached.as_ref(), now, &ctx.config),
        Decision::Recover(_)
    );
    let node = match (&facts.node_name, due) {
        (Some(name), true) => Api::<WatchedNode>::all(ctx.client.clone())
            .get_opt(name)
            .await?
            .as_ref()
            .map(WatchedNode::facts),
        _ => cached,
    };
    let zones = if due { ctx.zones() } else { BTreeMap::new() };
    let last_release = node.as_ref().and_then(|n| ctx.last_release(&n.zone));
    let edges = node
        .as_ref()
        .map(|n| ctx.edges(&n.name))
        .unwrap_or_default();
    let job = job_state::pod_job(&pod.metadata);
    let facts = PlanFacts {
        pod: facts,
        node: node.as_ref(),
        zones: &zones,
        last_release: last_release.as_ref(),
        edges,
        job: job.as_ref(),
        now,
    };
    Ok(plan::plan(facts, &ctx.config, &ctx.brake))
}

/// The one write of a reconcile: what is remembered of the pod. A reconcile that ends here
/// ends the pod's run of errors.
fn settle(ctx: &Context, key: &PodKey, node: Option<String>, outcome: Outcome) -> Action {
    record_decision(outcome.decision);
    match outcome.memory {
        Memory::Forget => ctx.forget(key),
        Memory::Keep => {}
        Memory::Update {
            waiting,
            recorded,
            reported,
        } => ctx.update(key, |t| {
            t.node = node;
            t.waiting = waiting;
            t.recorded = recorded;
            t.retries = 0;
            match reported {
                Some(Reported::Held(uid)) => t.held_reported = Some(uid),
                Some(Reported::DryRun(uid)) => t.dry_run_reported = Some(uid),
                Some(Reported::Finalizers(uid, finalizers)) => {
                    t.finalizers_reported = Some(uid);
                    t.held_by_finalizers = Some(finalizers);
                }
                None => t.held_by_finalizers = None,
            }
        }),
    }
    outcome.action
}

/// One reconcile's step: the plan executed against the pod as read, what was remembered of it
/// before (`seen`) and the time of the plan.
struct Execution<'a> {
    ctx: &'a Context,
    key: &'a PodKey,
    pod: &'a Pod,
    facts: &'a PodFacts,
    seen: PodState,
    now: Timestamp,
}

impl Execution<'_> {
    async fn execute(&self, plan: Plan) -> Result<Outcome, ReconcileError> {
        let now = self.now;
        Ok(match plan {
            // No longer eligible: the watch drops it too; keep no state behind.
            Plan::Ignore(
                reason @ (Ignored::NotOptedIn | Ignored::NotTerminating | Ignored::KueueRecovers),
            ) => Outcome::forget(reason.as_str()),
            Plan::Ignore(reason @ (Ignored::NotScheduled | Ignored::NodeNotFound)) => {
                Outcome::idle(reason.as_str())
            }
            Plan::WaitForDeadline(at) => {
                Outcome::wait("wait-for-deadline", Waiting::Deadline(at), until(at, now))
            }
            Plan::WaitForNode { node } => {
                Outcome::wait("wait-for-node", Waiting::Node(node), WAIT_FOR_NODE_RESYNC)
            }
            Plan::WaitForSettle(at) => {
                Outcome::wait("settling", Waiting::Settle(at), until(at, now))
            }
            Plan::Hold { disruption, until } => self.hold(disruption, until).await,
            Plan::WaitForFinalizers(finalizers) => self.held_by_finalizers(finalizers).await,
            Plan::Recover {
                recovery,
                recorded,
                release,
            } => {
                self.ctx.remember_release(release);
                let decision = if recorded { "recorded" } else { "recover" };
                self.recover(&recovery, decision).await?
            }
            Plan::AskJob {
                recovery,
                job,
                release,
            } => {
                self.ctx.remember_release(release);
                self.ask_job(&recovery, &job).await?
            }
        })
    }

    /// The pod as its events regard it, at the resourceVersion read.
    fn regarding(&self) -> ObjectReference {
        pod_reference(
            &self.key.namespace,
            &self.key.name,
            self.pod.metadata.uid.clone(),
            self.pod.metadata.resource_version.clone(),
        )
    }

    /// Held by the partition brake: one Warning event per pod (uid). The node watch triggers
    /// held pods when their zone heals; the resync is a safety net.
    async fn hold(&self, disruption: Disruption, until_at: Option<Timestamp>) -> Outcome {
        let message = disruption.message();
        let uid = self.pod.metadata.uid.clone().unwrap_or_default();
        let mut reported = None;
        if self.seen.held_reported.as_deref() != Some(uid.as_str()) {
            let zone = brake::zone_name(&disruption.zone);
            tracing::warn!(pod = %self.key, zone = %zone, "{message}");
            if self.warn(HELD_REASON, &message).await {
                reported = Some(Reported::Held(uid));
            }
        }
        let after = until_at.map_or(WAIT_FOR_NODE_RESYNC, |at| until(at, self.now));
        let waiting = Waiting::Held {
            zone: disruption.zone,
            message,
            until: until_at,
        };
        Outcome::wait("held", waiting, after).reported(reported)
    }

    /// The Job's step for a due pod of a Job: read the Job, plan its step over the Job's due
    /// pods, write what the step records, then recover the pod or leave it waiting.
    async fn ask_job(&self, recovery: &Recovery, job: &JobKey) -> Result<Outcome, ReconcileError> {
        let episodes = &self.ctx.episodes;
        let this = DuePod {
            namespace: self.key.namespace.clone(),
            name: self.key.name.clone(),
            node: recovery.node.clone(),
            deadline: recovery.deadline,
            deletion_asked: recovery.deletion_asked(),
        };
        let due = self.ctx.due_pods(job, this, self.now);
        let read = job_state::read_job(&self.ctx.client, job)
            .await
            .map_err(JobStateError::from)?;
        let facts = JobFacts {
            job: read.as_ref().map(ReadJob::view),
            due: &due,
            now: self.now,
            jitter: (episodes.jitter)(),
        };
        let job_plan = plan::plan_job(facts, &episodes.config);
        tracing::debug!(job = %job.name, plan = ?job_plan, "job planned");
        let recorded = match job_plan.record() {
            Some(record) => {
                let (client, writer) = (&self.ctx.client, &self.ctx.writer);
                Some(job_state::record(client, writer, job, record, self.now).await?)
            }
            None => None,
        };
        if recorded == Some(Recorded::NotLeader) {
            return Ok(Outcome::not_leader());
        }
        Ok(match job_plan {
            JobPlan::Orphan | JobPlan::Leftover => self.recover(recovery, "recover").await?,
            JobPlan::Start(record) => {
                if recorded == Some(Recorded::Written) {
                    self.announce_episode(job, &record, due.this());
                }
                self.recover(recovery, "recover").await?
            }
            JobPlan::Backoff(at) => {
                Outcome::wait("job-backoff", Waiting::JobBackoff(at), until(at, self.now))
            }
            // No Job watch: look again to notice a reset (annotation removed, Job resumed).
            JobPlan::Limit(_) => Outcome::wait(
                "job-recovery-limit",
                Waiting::JobRecoveryLimit,
                WAIT_FOR_NODE_RESYNC,
            ),
        })
    }

    /// An episode was recorded: log it and trigger the episode's other pods, whose own
    /// reconciles find them leftovers of it.
    fn announce_episode(&self, job: &JobKey, record: &JobRecord, this: &DuePod) {
        tracing::info!(
            job = %job.name,
            namespace = %job.namespace,
            episode = record.state.count,
            pods = record.pods.len(),
            nodes = ?record.state.last_nodes,
            requeue_at = ?record.state.requeue_at,
            "recovery episode"
        );
        for other in record.pods.iter().filter(|p| *p != this) {
            let key = PodKey::new(&other.namespace, &other.name);
            let _ = self.ctx.episodes.triggers.unbounded_send(key);
        }
    }

    /// Executes a due recovery through the writer, each step idempotent: (1) patch `pods/status`
    /// with the pod's resourceVersion, (2) a Warning event once the patch succeeded and only
    /// when the condition is new, (3) delete with grace period 0 (kueue#9649) unless
    /// `--no-delete`. Under `--dry-run` the first write is skipped by the writer and the pod gets
    /// one `Normal` "would forcefully terminate" event instead (once per pod uid).
    async fn recover(
        &self,
        recovery: &Recovery,
        decision: &'static str,
    ) -> Result<Outcome, ReconcileError> {
        let (ctx, key) = (self.ctx, self.key);
        let mut regarding = self.regarding();
        let resource_version = self.pod.metadata.resource_version.clone();
        let change = recovery::record::status_change(
            self.facts,
            recovery,
            resource_version.as_deref().unwrap_or_default(),
            self.now,
        );
        if let Some(patch) = change.patch {
            let patched = ctx
                .writer
                .patch_pod_status(&key.namespace, &key.name, patch);
            match patched.await {
                Ok(Ok(patched)) => regarding.resource_version = patched.metadata.resource_version,
                Ok(Err(skipped)) => return Ok(self.skipped(&regarding, recovery, skipped).await),
                Err(kube::Error::Api(s)) if s.is_conflict() => {
                    return Err(ReconcileError::Conflict);
                }
                Err(kube::Error::Api(s)) if s.is_not_found() => {
                    return Ok(Outcome::forget("pod-gone"));
                }
                Err(e) => return Err(e.into()),
            }
        }
        if change.condition_changed {
            self.announce_termination(&regarding, recovery).await;
        }
        if !ctx.options.no_delete {
            match self.delete().await? {
                Err(skipped) => return Ok(self.skipped(&regarding, recovery, skipped).await),
                // Recorded and force-deleted, but not gone: not recovered yet.
                Ok(finalizers) if !finalizers.is_empty() => {
                    return Ok(self.held_by_finalizers(finalizers).await);
                }
                Ok(_) => {}
            }
        }
        tracing::info!(
            pod = %key,
            node = %recovery.node,
            deleted = !ctx.options.no_delete,
            "forcefully terminated pod on unreachable node"
        );
        Ok(Outcome::recovered(decision))
    }

    /// The pod's condition is new: count it in `jobgate_recovery_pods_terminated_total` and say it
    /// in a Warning event.
    async fn announce_termination(&self, regarding: &ObjectReference, recovery: &Recovery) {
        let node = recovery.node.clone();
        self.ctx
            .metrics
            .terminated
            .get_or_create(&NodeLabels { node })
            .inc();
        let note = recovery.message();
        let text = EventText {
            type_: "Warning",
            reason: crate::kueue::REASON_FORCEFULLY_TERMINATED,
            action: crate::kueue::EVENT_ACTION,
            note: &note,
        };
        // Not leader any more: the delete that follows is skipped for the same reason.
        let _ = self.ctx.writer.event(regarding, &text, self.now).await;
    }

    /// Recorded and force-deleted, but finalizers keep the pod: said once per pod uid (a Warning
    /// event naming them), counted in `jobgate_recovery_finalizer_held_pods`, never deleted
    /// again. Their controllers' update or the pod's removal triggers the next reconcile.
    async fn held_by_finalizers(&self, finalizers: Vec<String>) -> Outcome {
        let uid = self.pod.metadata.uid.clone().unwrap_or_default();
        let names = recovery::finalizer_names(&finalizers);
        let message = format!(
            "recorded as Failed and force-deleted, but still present: waiting for finalizers \
             {names} to be removed by their controllers"
        );
        let outcome = Outcome::update("wait-for-finalizers", None, true);
        let reported = self.seen.finalizers_reported.as_deref() == Some(uid.as_str());
        let held = Some(Reported::Finalizers(uid, finalizers));
        if reported {
            return outcome.reported(held);
        }
        tracing::warn!(pod = %self.key, "{message}");
        if !self.warn(FINALIZERS_REASON, &message).await {
            return outcome;
        }
        outcome.reported(held)
    }

    /// A Warning event about the pod, said once per pod uid by the caller: `true` when said
    /// (posted, or a dry run), `false` when not leader (the next leader says it).
    async fn warn(&self, reason: &'static str, note: &str) -> bool {
        let text = EventText {
            type_: "Warning",
            reason,
            action: crate::kueue::EVENT_ACTION,
            note,
        };
        let posted = self
            .ctx
            .writer
            .event(&self.regarding(), &text, self.now)
            .await;
        posted != Err(Skipped::NotLeader)
    }

    /// Deletes the pod with grace period 0 and its uid as precondition: the finalizers still
    /// holding it (empty when gone), or why the writer did not send it.
    async fn delete(&self) -> Result<Result<Vec<String>, Skipped>, kube::Error> {
        let key = self.key;
        let uid = self.pod.metadata.uid.clone();
        match self
            .ctx
            .writer
            .delete_pod(&key.namespace, &key.name, uid)
            .await
        {
            Ok(Ok(finalizers)) => Ok(Ok(finalizers)),
            Ok(Err(skipped)) => Ok(Err(skipped)),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(Ok(Vec::new())),
            Err(kube::Error::Api(s)) if s.is_conflict() => {
                tracing::info!(pod = %key, "pod was replaced (UID changed); not deleting the successor");
                Ok(Ok(Vec::new()))
            }
            Err(e) => Err(e),
        }
    }

    /// A write the writer did not send: a follower stops; a dry run reports what it would have
    /// done, once per pod uid.
    async fn skipped(
        &self,
        regarding: &ObjectReference,
        recovery: &Recovery,
        skipped: Skipped,
    ) -> Outcome {
        if skipped == Skipped::NotLeader {
            return Outcome::not_leader();
        }
        tracing::info!(pod = %self.key, node = %recovery.node, "dry run: would forcefully terminate");
        let uid = regarding.uid.clone().unwrap_or_default();
        if self.seen.dry_run_reported.as_deref() == Some(uid.as_str()) {
            return Outcome::idle("dry-run");
        }
        let note = recovery.dry_run_message();
        match self
            .ctx
            .writer
            .report_dry_run(regarding, &note, self.now)
            .await
        {
            // Not leader: report it on a later pass, as leader.
            Err(_) => Outcome::not_leader(),
            Ok(()) => Outcome::idle("dry-run").reported(Some(Reported::DryRun(uid))),
        }
    }
}

/// The one error policy (kube-runtime's `error_policy`, as in controller-rs), for every failed
/// reconcile of a pod: a conflict is read again soon, 50 ms, 100 ms, 200 ms; from the
/// [`CONFLICT_ATTEMPTS`]th conflict in a row, and for any other error, the pod backs off 1s, 2s,
/// 4s, ... up to 5 minutes and the error is counted by kind.
pub(crate) fn error_policy(ctx: &Context, key: &PodKey, error: &ReconcileError) -> Action {
    let streak = ctx.update(key, |t| {
        t.retries = t.retries.saturating_add(1);
        t.retries
    });
    let conflict = error.is_conflict();
    if conflict && streak < CONFLICT_ATTEMPTS {
        let delay = CONFLICT_REQUEUE * (1 << (streak - 1));
        tracing::debug!(pod = %key, error = %error, retry_in = ?delay, "conflict; reading again");
        return Action::requeue(delay);
    }
    ctx.metrics.error(error.metric_label());
    let exponent = if conflict {
        streak - CONFLICT_ATTEMPTS
    } else {
        streak - 1
    };
    let delay = Duration::from_secs(1u64 << exponent.min(16)).min(MAX_ERROR_BACKOFF);
    tracing::warn!(pod = %key, error = %error, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}
