//! Leader election on a coordination.k8s.io/v1 Lease, with client-go's `leaderelection`
//! semantics: a candidate takes the Lease only when its record has not changed for
//! `leaseDurationSeconds` as observed on the candidate's own monotonic clock (no trust in the
//! holder's wall clock), updates it with the Lease's resourceVersion (optimistic concurrency), and
//! a leader that cannot renew within `renew_deadline` stops acting before anyone may take over.
//!
//! Part of the runtime (olix0r/kubert keeps its `lease.rs` there too): the election knows nothing of
//! what the leader does. The command hands it the gauge its role sets and the counter of failed
//! rounds, under the command's own metric names.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

#[cfg(test)]
mod tests;

/// Timings of the election (client-go defaults: 15s / 10s / 2s).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LeaseConfig {
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) identity: String,
    pub(crate) lease_duration: Duration,
    pub(crate) renew_deadline: Duration,
    pub(crate) retry_period: Duration,
}

impl LeaseConfig {
    pub(crate) fn new(name: String, namespace: String, identity: String) -> LeaseConfig {
        LeaseConfig {
            name,
            namespace,
            identity,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// What the elector last knew of this replica's part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// No election round has ended yet.
    Candidate,
    /// Another replica holds the Lease (or ours lapsed).
    Following,
    /// We hold the Lease.
    Leading,
}

/// Whether this replica may act now, and its role as a watch channel (kubert's `LeaseManager`
/// hands out the same). Cheap to clone; shared by the elector, the reconciler and the watches.
#[derive(Clone, Debug)]
pub struct Leadership {
    /// Leader until this instant; `None` when not leader.
    valid_until: Arc<Mutex<Option<Instant>>>,
    role: Arc<tokio::sync::watch::Sender<Role>>,
    leader: Gauge,
}

impl Default for Leadership {
    fn default() -> Leadership {
        Leadership {
            valid_until: Arc::default(),
            role: Arc::new(tokio::sync::watch::Sender::new(Role::Candidate)),
            leader: Gauge::default(),
        }
    }
}

impl Leadership {
    /// A leadership not yet held, whose role `leader` follows.
    pub(crate) fn new(leader: Gauge) -> Leadership {
        Leadership {
            leader,
            ..Leadership::default()
        }
    }

    /// A leadership that is always held (tests).
    #[cfg(test)]
    pub(crate) fn always() -> Leadership {
        let l = Leadership::default();
        l.set_until(Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600));
        l
    }

    /// True while the last successful renewal is younger than the renew deadline. Checked
    /// before every write, so a replica that lost the Lease stops acting at once, before the
    /// elector's next round notices.
    pub(crate) fn is_leader(&self) -> bool {
        let until = *self.valid_until.lock().unwrap_or_else(|e| e.into_inner());
        until.is_some_and(|t| Instant::now() < t)
    }

    /// The role, changing as the elector's rounds end.
    pub(crate) fn role(&self) -> tokio::sync::watch::Receiver<Role> {
        self.role.subscribe()
    }

    fn set_until(&self, until: Instant) {
        *self.valid_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(until);
        self.set_role(Role::Leading);
    }

    fn clear(&self) {
        *self.valid_until.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.set_role(Role::Following);
    }

    /// The role and the leader gauge follow the elector's rounds.
    fn set_role(&self, role: Role) {
        self.role
            .send_if_modified(|r| std::mem::replace(r, role) != role);
        self.leader.set(i64::from(role == Role::Leading));
    }
}

/// What the candidate last saw of the Lease record, and when (its own monotonic clock).
#[derive(Clone, Debug, Default)]
pub(crate) struct Observed {
    record: Option<(Option<String>, Option<MicroTime>, Option<String>)>,
    at: Option<Instant>,
}

/// The result of one election round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Round {
    /// We hold the Lease (created, acquired or renewed).
    Leading,
    /// Someone else holds a live Lease, or won a race for it.
    Following { holder: Option<String> },
}

fn holder_of(spec: Option<&LeaseSpec>) -> Option<String> {
    spec.and_then(|s| s.holder_identity.clone())
        .filter(|h| !h.is_empty())
}

/// One `tryAcquireOrRenew`: read the Lease, then create, renew or take it.
/// `now` stamps `acquireTime`/`renewTime`; `instant` is the monotonic time of this round.
pub(crate) async fn try_acquire_or_renew(
    api: &Api<Lease>,
    config: &LeaseConfig,
    observed: &mut Observed,
    now: Timestamp,
    instant: Instant,
) -> Result<Round, kube::Error> {
    let duration_secs = i32::try_from(config.lease_duration.as_secs()).unwrap_or(i32::MAX);
    let Some(current) = api.get_opt(&config.name).await? else {
        return create(api, config, duration_secs, now).await;
    };
    let spec = current.spec.as_ref();
    let holder = holder_of(spec);
    let record = (
        holder.clone(),
        spec.and_then(|s| s.renew_time.clone()),
        current.metadata.resource_version.clone(),
    );
    if observed.record.as_ref() != Some(&record) || observed.at.is_none() {
        observed.record = Some(record);
        observed.at = Some(instant);
    }
    let held_by_us = holder.as_deref() == Some(config.identity.as_str());
    if let Some(other) = holder.as_ref().filter(|_| !held_by_us) {
        let their_duration = spec
            .and_then(|s| s.lease_duration_seconds)
            .and_then(|s| u64::try_from(s).ok())
            .map(Duration::from_secs)
            .unwrap_or(config.lease_duration);
        let observed_at = observed.at.unwrap_or(instant);
        if instant < observed_at + their_duration {
            return Ok(Round::Following {
                holder: Some(other.clone()),
            });
        }
    }
    let mut lease = current.clone();
    lease.spec = Some(renewed(spec, config, duration_secs, held_by_us, now));
    // `replace` sends metadata.resourceVersion: a concurrent writer makes this a 409.
    match api
        .replace(&config.name, &PostParams::default(), &lease)
        .await
    {
        Ok(_) => Ok(Round::Leading),
        Err(kube::Error::Api(s)) if s.is_conflict() => Ok(Round::Following { holder }),
        Err(e) => Err(e),
    }
}

/// A new Lease held by us, created; lost to whoever created it first.
async fn create(
    api: &Api<Lease>,
    config: &LeaseConfig,
    duration_secs: i32,
    now: Timestamp,
) -> Result<Round, kube::Error> {
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(config.name.clone()),
            namespace: Some(config.namespace.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(config.identity.clone()),
            lease_duration_seconds: Some(duration_secs),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        }),
    };
    match api.create(&PostParams::default(), &lease).await {
        Ok(_) => Ok(Round::Leading),
        Err(kube::Error::Api(s)) if s.is_already_exists() || s.is_conflict() => {
            Ok(Round::Following { holder: None })
        }
        Err(e) => Err(e),
    }
}

/// The Lease's spec renewed by us (`held_by_us`) or taken over: a takeover sets `acquireTime`
/// and counts a transition.
fn renewed(
    spec: Option<&LeaseSpec>,
    config: &LeaseConfig,
    duration_secs: i32,
    held_by_us: bool,
    now: Timestamp,
) -> LeaseSpec {
    let old = spec.cloned().unwrap_or_default();
    let transitions = old.lease_transitions.unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: Some(duration_secs),
        acquire_time: if held_by_us {
            old.acquire_time.clone()
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if held_by_us {
            transitions
        } else {
            transitions.saturating_add(1)
        }),
        ..old
    }
}

/// Gives the Lease up on shutdown (client-go `ReleaseOnCancel`): the next candidate takes over
/// after 1 s instead of a whole lease duration. Only when we still hold it.
pub(crate) async fn release(
    api: &Api<Lease>,
    config: &LeaseConfig,
    now: Timestamp,
) -> Result<(), kube::Error> {
    let Some(mut lease) = api.get_opt(&config.name).await? else {
        return Ok(());
    };
    if holder_of(lease.spec.as_ref()).as_deref() != Some(config.identity.as_str()) {
        return Ok(());
    }
    let old = lease.spec.take().unwrap_or_default();
    lease.spec = Some(LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        ..old
    });
    match api
        .replace(&config.name, &PostParams::default(), &lease)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_conflict() || s.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Runs rounds every `retry_period` until `shutdown` resolves, keeping `leadership` current
/// and calling `on_acquired` on each transition to leader. Releases the Lease at the end.
pub(crate) async fn run_elector(
    api: Api<Lease>,
    config: LeaseConfig,
    leadership: Leadership,
    failed_rounds: Counter,
    on_acquired: impl Fn() + Send,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut observed = Observed::default();
    let mut was_leader = false;
    tokio::pin!(shutdown);
    loop {
        let instant = Instant::now();
        match try_acquire_or_renew(&api, &config, &mut observed, Timestamp::now(), instant).await {
            Ok(Round::Leading) => {
                leadership.set_until(instant + config.renew_deadline);
                if !was_leader {
                    tracing::info!(lease = %config.name, identity = %config.identity, "became leader");
                    on_acquired();
                }
                was_leader = true;
            }
            Ok(Round::Following { holder }) => {
                if was_leader {
                    tracing::warn!(lease = %config.name, ?holder, "lost the lease; stopped acting");
                }
                leadership.clear();
                was_leader = false;
            }
            Err(e) => {
                failed_rounds.inc();
                tracing::warn!(lease = %config.name, error = %e, "lease round failed");
                // Leadership expires by itself at the renew deadline (writes stop then); the
                // role follows here, within one retry period.
                if was_leader && !leadership.is_leader() {
                    tracing::warn!(lease = %config.name, "renew deadline passed; stopped acting");
                    leadership.clear();
                    was_leader = false;
                }
            }
        }
        tokio::select! {
            _ = &mut shutdown => break,
            _ = tokio::time::sleep(config.retry_period) => {}
        }
    }
    let leading = leadership.is_leader();
    leadership.clear();
    if leading && let Err(e) = release(&api, &config, Timestamp::now()).await {
        tracing::warn!(lease = %config.name, error = %e, "could not release the lease");
    }
}
