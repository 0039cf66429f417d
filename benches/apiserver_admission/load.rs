//! The load: Job creates on a fixed schedule (open loop: a slow answer does not slow the
//! schedule), spread over many kube clients, each with its own connections.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

/// Creates in flight at most; beyond it the schedule waits (and the create counts as late).
const MAX_IN_FLIGHT: usize = 2000;

pub(crate) struct Load {
    apis: Vec<Api<Job>>,
    /// Names are unique across phases and runs.
    run: String,
    phase: Mutex<usize>,
}

/// What the clients saw in one phase.
#[derive(Default)]
pub(crate) struct Outcome {
    pub(crate) sent: usize,
    pub(crate) created: usize,
    pub(crate) late: usize,
    pub(crate) elapsed: Duration,
    pub(crate) errors: BTreeMap<String, usize>,
    latencies_ms: Vec<f64>,
}

impl Outcome {
    /// The `q` quantile of the creates' round trips (nearest rank), ms.
    pub(crate) fn latency_ms(&self, q: f64) -> f64 {
        if self.latencies_ms.is_empty() {
            return f64::NAN;
        }
        let n = self.latencies_ms.len();
        self.latencies_ms[((n as f64 * q).ceil() as usize).clamp(1, n) - 1]
    }
}

impl Load {
    pub(crate) async fn new(clients: usize, namespace: &str) -> Load {
        let mut apis = Vec::with_capacity(clients);
        for _ in 0..clients {
            let client = kube::Client::try_default().await.expect("a kube client");
            apis.push(Api::namespaced(client, namespace));
        }
        let run = format!(
            "{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
                % 0x10000
        );
        Load {
            apis,
            run,
            phase: Mutex::new(0),
        }
    }

    /// `rate` creates a second for `duration`, the i-th sent at `start + i / rate`.
    pub(crate) async fn run(&self, rate: f64, duration: Duration) -> Outcome {
        let phase = {
            let mut p = self.phase.lock().expect("lock");
            *p += 1;
            *p
        };
        let total = (rate * duration.as_secs_f64()).round() as usize;
        let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
        let seen: Arc<Mutex<Outcome>> = Arc::default();
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        let mut late = 0;
        for i in 0..total {
            let due = start + Duration::from_secs_f64(i as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
            let permit = in_flight.clone().acquire_owned().await.expect("semaphore");
            if due.elapsed() > Duration::from_millis(100) {
                late += 1;
            }
            let api = self.apis[i % self.apis.len()].clone();
            let name = format!("load-{}-{phase}-{i:06}", self.run);
            let seen = seen.clone();
            tasks.spawn(async move {
                let job: Job = serde_json::from_value(job(&name)).expect("a Job");
                let sent = Instant::now();
                let result = api.create(&PostParams::default(), &job).await;
                let ms = sent.elapsed().as_secs_f64() * 1e3;
                drop(permit);
                let mut seen = seen.lock().expect("lock");
                match result {
                    Ok(_) => {
                        seen.created += 1;
                        seen.latencies_ms.push(ms);
                    }
                    Err(e) => *seen.errors.entry(error_kind(&e)).or_insert(0) += 1,
                }
            });
        }
        while tasks.join_next().await.is_some() {}
        let mut outcome = std::mem::take(&mut *seen.lock().expect("lock"));
        outcome.elapsed = start.elapsed();
        outcome.sent = total;
        outcome.late = late;
        outcome.latencies_ms.sort_by(f64::total_cmp);
        outcome
    }
}

/// A failed create, without what differs between them (names).
fn error_kind(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        other => other.to_string(),
    }
}

/// A suspended Indexed training Job as JobSet or Kueue would create it: 8 workers of 8 GPUs,
/// a pod failure policy, no podReplacementPolicy (the webhook sets it).
pub(crate) fn job(name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "trainer",
                                              "team": "research"}},
        "spec": {
            "suspend": true,
            "completionMode": "Indexed",
            "completions": 8,
            "parallelism": 8,
            "backoffLimitPerIndex": 1,
            "maxFailedIndexes": 2,
            "podFailurePolicy": {"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                {"action": "FailIndex", "onExitCodes": {"containerName": "trainer",
                    "operator": "In", "values": [42]}},
            ]},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "trainer"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "trainer",
                        "image": "registry.example.com/ml/train:v1.4.0",
                        "command": ["torchrun", "--nnodes=8", "--nproc-per-node=8", "train.py"],
                        "env": [{"name": "NCCL_DEBUG", "value": "WARN"},
                                {"name": "MASTER_PORT", "value": "29500"}],
                        "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "90",
                                                 "memory": "1500Gi"}},
                    }],
                },
            },
        },
    })
}
