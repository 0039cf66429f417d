//! The only code that calls the apiserver's write verbs for recovery: the pod status patch, the
//! pod delete, the Job patch, the Kueue Workload patch and event creation. Every write goes through [`Writer::permit`],
//! which checks leadership (once, right before the write) and `--dry-run` (the one place dry
//! run is honoured: nothing is written, the caller reports a `Normal` "would ..." event with
//! [`Writer::report_dry_run`]). The writer owns the field manager and posts every event through
//! the one builder, [`event::build`]. It counts each write by verb and result.
//!
//! (The Lease writes of leader election live in `lease`: they are what leadership is made of,
//! so they cannot be gated by it.)

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions,
};
use kube::{Api, Client};
use serde_json::Value;

use super::event::{self, EventText};
use super::metrics::{RecoveryMetrics, WriteLabels};
use crate::recovery;
use crate::recovery::plan::JobEvent;
use crate::runtime::Leadership;

/// `fieldManager` of every patch (visible in `managedFields`).
pub(crate) const FIELD_MANAGER: &str = "jobgate-reconciler";

/// A write that was not sent, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skipped {
    /// This replica does not hold the Lease (any more): it must not act.
    NotLeader,
    /// `--dry-run`: nothing is changed.
    DryRun,
}

/// The result of one write: the apiserver's answer, or why it was not sent.
pub(crate) type Written<T> = Result<T, Skipped>;

/// See the module docs.
#[derive(Clone)]
pub(crate) struct Writer {
    client: Client,
    leadership: Leadership,
    dry_run: bool,
    /// `reportingInstance` of events.
    identity: String,
    metrics: RecoveryMetrics,
}

/// Kueue's Workload at `version` (one of `kueue::WORKLOAD_VERSIONS`).
pub(crate) fn workload_resource(version: &str) -> ApiResource {
    ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: version.into(),
        api_version: format!("kueue.x-k8s.io/{version}"),
        kind: "Workload".into(),
        plural: "workloads".into(),
    }
}

/// The `result` label of a failed write.
fn failure(e: &kube::Error) -> &'static str {
    match e {
        kube::Error::Api(s) if s.is_conflict() => "conflict",
        kube::Error::Api(s) if s.is_not_found() => "not_found",
        kube::Error::Api(s) if s.code == 429 => "too_many_requests",
        kube::Error::Api(s) if s.code >= 500 => "server_error",
        kube::Error::Api(_) => "rejected",
        _ => "transport",
    }
}

impl Writer {
    /// `jobgate_recovery_episodes_total` / `jobgate_recovery_limit_exceeded_total`: counted once
    /// the record is written on the Job (never under dry run, never for a limit already
    /// recorded, which writes nothing).
    pub(crate) fn count_recorded(&self, event: JobEvent) {
        match event {
            JobEvent::Episode => self.metrics.episodes.inc(),
            JobEvent::LimitExceeded { .. } => self.metrics.limit_exceeded.inc(),
        };
    }

    pub(crate) fn new(
        client: Client,
        leadership: Leadership,
        dry_run: bool,
        identity: String,
        metrics: RecoveryMetrics,
    ) -> Writer {
        Writer {
            client,
            leadership,
            dry_run,
            identity,
            metrics,
        }
    }

    fn count(&self, verb: &'static str, result: &'static str) {
        self.metrics
            .writes
            .get_or_create(&WriteLabels { verb, result })
            .inc();
    }

    /// The leadership check of every write, right before it is sent.
    fn leader(&self, verb: &'static str) -> Result<(), Skipped> {
        if self.leadership.is_leader() {
            return Ok(());
        }
        self.count(verb, "not_leader");
        Err(Skipped::NotLeader)
    }

    /// Whether `verb` may be sent now: leadership, then `--dry-run` (the one place it is read).
    fn permit(&self, verb: &'static str) -> Result<(), Skipped> {
        self.leader(verb)?;
        if self.dry_run {
            self.count(verb, "dry_run");
            return Err(Skipped::DryRun);
        }
        Ok(())
    }

    fn counted<T>(
        &self,
        verb: &'static str,
        result: Result<T, kube::Error>,
    ) -> Result<T, kube::Error> {
        self.count(
            verb,
            match &result {
                Ok(_) => "ok",
                Err(e) => failure(e),
            },
        );
        result
    }

    fn params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        }
    }

    /// Strategic-merge patch of `pods/status` (the patch carries the resourceVersion read).
    pub(crate) async fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> Result<Written<Pod>, kube::Error> {
        const VERB: &str = "patch_pod_status";
        if let Err(skipped) = self.permit(VERB) {
            return Ok(Err(skipped));
        }
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let result = pods
            .patch_status(name, &self.params(), &Patch::Strategic(patch))
            .await;
        self.counted(VERB, result).map(Ok)
    }

    /// Deletes the pod with grace period 0 (kueue#9649) and a UID precondition, so a
    /// same-named successor (StatefulSet-style pods) is never deleted.
    pub(crate) async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<String>,
    ) -> Result<Written<Vec<String>>, kube::Error> {
        const VERB: &str = "delete_pod";
        if let Err(skipped) = self.permit(VERB) {
            return Ok(Err(skipped));
        }
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid,
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        // The pod as the delete left it: still there with finalizers, or gone.
        let result = pods.delete(name, &params).await.map(|deleted| {
            deleted
                .left()
                .and_then(|pod| pod.metadata.finalizers)
                .unwrap_or_default()
        });
        self.counted(VERB, result).map(Ok)
    }

    /// JSON merge patch of a Job (the recovery state carries the resourceVersion read).
    pub(crate) async fn patch_job(
        &self,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> Result<Written<Job>, kube::Error> {
        const VERB: &str = "patch_job";
        if let Err(skipped) = self.permit(VERB) {
            return Ok(Err(skipped));
        }
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), namespace);
        let result = jobs
            .patch(name, &self.params(), &Patch::Merge(&patch))
            .await;
        self.counted(VERB, result).map(Ok)
    }

    /// JSON merge patch of a Kueue Workload (at the API version it was found at; served by every Kueue
    /// release with failure recovery; no Kueue crate, a dynamic API).
    pub(crate) async fn patch_workload(
        &self,
        namespace: &str,
        name: &str,
        version: &str,
        patch: Value,
    ) -> Result<Written<DynamicObject>, kube::Error> {
        const VERB: &str = "patch_workload";
        if let Err(skipped) = self.permit(VERB) {
            return Ok(Err(skipped));
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &workload_resource(version));
        let result = api.patch(name, &self.params(), &Patch::Merge(&patch)).await;
        self.counted(VERB, result).map(Ok)
    }

    /// Posts an event about `regarding`. A failure is counted and logged, never returned: the
    /// status condition and the Job annotation are the durable records, and a retry would not
    /// post the event again.
    pub(crate) async fn event(
        &self,
        regarding: &ObjectReference,
        text: &EventText<'_>,
        now: Timestamp,
    ) -> Written<()> {
        self.permit("create_event")?;
        self.post(regarding, text, now).await;
        Ok(())
    }

    /// The one write `--dry-run` makes: a `Normal` `WouldForcefullyTerminate` event saying what
    /// would have been done. Leadership is still required.
    pub(crate) async fn report_dry_run(
        &self,
        regarding: &ObjectReference,
        note: &str,
        now: Timestamp,
    ) -> Written<()> {
        self.leader("create_event")?;
        let text = EventText {
            type_: "Normal",
            reason: recovery::DRY_RUN_REASON,
            action: crate::kueue::EVENT_ACTION,
            note,
        };
        self.post(regarding, &text, now).await;
        Ok(())
    }

    async fn post(&self, regarding: &ObjectReference, text: &EventText<'_>, now: Timestamp) {
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let body = event::build(regarding, text, &self.identity, now);
        let result = api.create(&PostParams::default(), &body).await;
        if let Err(e) = self.counted("create_event", result) {
            self.metrics.error("event");
            tracing::warn!(
                namespace,
                name = regarding.name.as_deref().unwrap_or(""),
                kind = regarding.kind.as_deref().unwrap_or(""),
                reason = text.reason,
                error = %e,
                "could not create event"
            );
        }
    }
}
