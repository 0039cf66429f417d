//! Steady churn as kubelets make it, with no kubelet: each node's Lease in `kube-node-lease`
//! renewed every 10 s (the kubelet's renew interval, a quarter of `nodeLeaseDurationSeconds`
//! 40) and its status reported every 5 minutes (`nodeStatusReportFrequency`, the Ready
//! condition's heartbeat), both spread evenly over the nodes. What this machine cannot keep up
//! with (more than [`IN_FLIGHT`] requests waiting) is skipped and counted, so the rates printed
//! are the ones achieved. Nodes cut off ([`Churn::silence`]) report nothing until they are
//! let go again.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio::sync::Semaphore;

use super::{IN_FLIGHT, node_name};

const LEASE_RENEW: Duration = Duration::from_secs(10);
const STATUS_REPORT: Duration = Duration::from_secs(300);

#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    skipped: AtomicU64,
}

pub(crate) struct Churn {
    stop: Arc<AtomicBool>,
    silent: Arc<Mutex<HashSet<usize>>>,
    leases: Arc<Counts>,
    statuses: Arc<Counts>,
    started: Instant,
}

/// Starts renewing leases and reporting node status for `nodes` nodes.
pub(crate) fn start(client: &kube::Client, nodes: usize) -> Churn {
    let churn = Churn {
        stop: Arc::default(),
        silent: Arc::default(),
        leases: Arc::default(),
        statuses: Arc::default(),
        started: Instant::now(),
    };
    let in_flight = Arc::new(Semaphore::new(IN_FLIGHT));
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let statuses: Api<Node> = Api::all(client.clone());
    spawn_every(
        LEASE_RENEW,
        nodes,
        churn.stop.clone(),
        churn.silent.clone(),
        churn.leases.clone(),
        in_flight.clone(),
        move |name| {
            let api = leases.clone();
            async move {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(name.clone()),
                        lease_duration_seconds: Some(40),
                        renew_time: Some(MicroTime(Timestamp::now())),
                        ..LeaseSpec::default()
                    }),
                };
                let params = PatchParams::apply("kubelet").force();
                let _ = api.patch(&name, &params, &Patch::Apply(&lease)).await;
            }
        },
    );
    spawn_every(
        STATUS_REPORT,
        nodes,
        churn.stop.clone(),
        churn.silent.clone(),
        churn.statuses.clone(),
        in_flight,
        move |name| {
            let api = statuses.clone();
            async move {
                let now = Timestamp::now().to_string();
                let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True",
                    "reason": "KubeletReady", "lastHeartbeatTime": now}]}});
                let _ = api
                    .patch_status(&name, &PatchParams::default(), &Patch::Strategic(status))
                    .await;
            }
        },
    );
    churn
}

/// Calls `send` for each of `nodes` nodes once per `period`, evenly spread, until `stop`; a
/// `silent` node's turn passes.
#[allow(clippy::too_many_arguments)]
fn spawn_every<F, Fut>(
    period: Duration,
    nodes: usize,
    stop: Arc<AtomicBool>,
    silent: Arc<Mutex<HashSet<usize>>>,
    counts: Arc<Counts>,
    in_flight: Arc<Semaphore>,
    send: F,
) where
    F: Fn(String) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    if nodes == 0 {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period / u32::try_from(nodes).unwrap_or(u32::MAX));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let mut node = 0;
        while !stop.load(Ordering::Relaxed) {
            tick.tick().await;
            let turn = node;
            node = (node + 1) % nodes;
            if silent.lock().expect("lock").contains(&turn) {
                continue;
            }
            let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                counts.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let request = send(node_name(turn));
            let counts = counts.clone();
            tokio::spawn(async move {
                request.await;
                counts.sent.fetch_add(1, Ordering::Relaxed);
                drop(permit);
            });
        }
    });
}

impl Churn {
    /// The rates achieved so far, and what was skipped.
    pub(crate) fn rates(&self) -> String {
        let seconds = self.started.elapsed().as_secs_f64().max(1.0);
        let rate = |c: &Counts| {
            let sent = c.sent.load(Ordering::Relaxed) as f64;
            let skipped = c.skipped.load(Ordering::Relaxed);
            format!("{:.1}/s ({skipped} skipped)", sent / seconds)
        };
        format!(
            "lease renewals {}, node status reports {}",
            rate(&self.leases),
            rate(&self.statuses)
        )
    }

    /// `nodes` stop reporting (cut off), or (`false`) report again.
    pub(crate) fn silence(&self, nodes: &[usize], silent: bool) {
        let mut set = self.silent.lock().expect("lock");
        for n in nodes {
            if silent {
                set.insert(*n);
            } else {
                set.remove(n);
            }
        }
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
