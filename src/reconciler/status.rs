//! `jobgate status`: what jobgate's reconciler is doing, for an operator at 3 a.m.
//!
//! Reads the cluster only: Jobs carrying `jobgate.dev/recovery-state`, pods waiting for recovery
//! (opted in with `"true"` and terminating) with their deadlines, nodes and what they wait for,
//! and who holds the reconciler's leader Lease. [`fetch`] does the reading, [`render`] is pure.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use clap::Args;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, ListParams};

use crate::reconciler::backoff_args::RecoveryBackoffArgs;
use crate::recovery::UNREACHABLE_TAINT_KEY;
use crate::recovery::episode::{
    DuePod, EpisodeConfig, EpisodeDecision, JobKey, JobView, LimitAction,
    RECOVERY_STATE_ANNOTATION, RecoveryState, decide_episode, group_by_job, job_owner,
    resumed_after_suspend,
};

/// Default `--lease-name` / `--lease-namespace` of `jobgate reconcile`.
pub const DEFAULT_LEASE_NAME: &str = "jobgate-reconciler";
pub const DEFAULT_LEASE_NAMESPACE: &str = "jobgate-system";

/// `jobgate status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub cluster: super::cluster::ClusterArgs,
    /// Only this namespace (default: the context's namespace).
    #[arg(long, short = 'n', conflicts_with = "all_namespaces")]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(long, short = 'A')]
    pub all_namespaces: bool,
    /// Pod annotation keys that opt pods into forced recovery (as for `reconcile`).
    #[arg(
        long = "recovery-annotation-key",
        env = "JOBGATE_RECOVERY_ANNOTATION_KEY",
        value_delimiter = ',',
        default_values_t = crate::job::DEFAULT_RECOVERY_ANNOTATION_KEYS.map(String::from)
    )]
    pub recovery_annotation_keys: Vec<String>,
    /// Time after deletionTimestamp before a pod may be recovered (as for `reconcile`).
    #[arg(
        long,
        env = "JOBGATE_FORCEFUL_TERMINATION_GRACE_PERIOD",
        default_value = "60s",
        value_parser = crate::duration::parse_duration
    )]
    pub forceful_termination_grace_period: Duration,
    /// The reconciler's leader-election Lease.
    #[arg(long, env = "JOBGATE_LEASE_NAME", default_value = DEFAULT_LEASE_NAME)]
    pub lease_name: String,
    #[arg(long, env = "JOBGATE_LEASE_NAMESPACE", default_value = DEFAULT_LEASE_NAMESPACE)]
    pub lease_namespace: String,
    /// The reconciler's backoff flags (pass the same values to predict its decisions).
    #[command(flatten)]
    pub backoff: RecoveryBackoffArgs,
}

/// What `jobgate status` shows, read from the cluster.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// `None`: every namespace.
    pub namespace: Option<String>,
    /// Jobs of the namespace(s); those without the state annotation are not shown.
    pub jobs: Vec<Job>,
    /// Pods that opted in and are terminating (the reconciler's candidates).
    pub pods: Vec<Pod>,
    /// The nodes those pods run on, by name (absent: the node does not exist).
    pub nodes: BTreeMap<String, Node>,
    pub lease_namespace: String,
    pub lease_name: String,
    /// `None`: the Lease does not exist (no reconciler ever led).
    pub lease: Option<Lease>,
}

/// Settings [`render`] needs to explain the pods.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    pub annotation_keys: Vec<String>,
    pub grace_period: Duration,
    /// The reconciler's backoff flags, to predict its episode decisions.
    pub episode: EpisodeConfig,
}

/// `jobgate status`: read the cluster, print the tables.
pub async fn run(args: StatusArgs) -> anyhow::Result<()> {
    let client = args
        .cluster
        .client(super::cluster::Prefer::Kubeconfig)
        .await?;
    let namespace = if args.all_namespaces {
        None
    } else {
        Some(
            args.namespace
                .clone()
                .unwrap_or_else(|| client.default_namespace().to_string()),
        )
    };
    let options = RenderOptions {
        annotation_keys: args.recovery_annotation_keys.clone(),
        grace_period: args.forceful_termination_grace_period,
        episode: args.backoff.episode_config(),
    };
    let snapshot = fetch(
        &client,
        namespace,
        &options,
        &args.lease_namespace,
        &args.lease_name,
    )
    .await?;
    print!("{}", render(&snapshot, &options, Timestamp::now()));
    Ok(())
}

/// Pages through a list 500 objects at a time.
async fn list_all<K>(api: &Api<K>) -> Result<Vec<K>, kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut out = Vec::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        out.extend(page.items);
        match next {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

/// Reads Jobs, opted-in terminating pods, their nodes and the Lease.
pub async fn fetch(
    client: &Client,
    namespace: Option<String>,
    options: &RenderOptions,
    lease_namespace: &str,
    lease_name: &str,
) -> Result<Snapshot, kube::Error> {
    let (jobs_api, pods_api): (Api<Job>, Api<Pod>) = match &namespace {
        Some(ns) => (
            Api::namespaced(client.clone(), ns),
            Api::namespaced(client.clone(), ns),
        ),
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    let jobs = list_all(&jobs_api)
        .await?
        .into_iter()
        .filter(|j| has_annotation(&j.metadata.annotations, RECOVERY_STATE_ANNOTATION))
        .collect();
    let pods: Vec<Pod> = list_all(&pods_api)
        .await?
        .into_iter()
        .filter(|p| is_candidate(p, &options.annotation_keys))
        .collect();
    let nodes_api: Api<Node> = Api::all(client.clone());
    let mut nodes = BTreeMap::new();
    for name in pods.iter().filter_map(node_name) {
        if !nodes.contains_key(name)
            && let Some(node) = nodes_api.get_opt(name).await?
        {
            nodes.insert(name.to_string(), node);
        }
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), lease_namespace);
    let lease = leases.get_opt(lease_name).await?;
    Ok(Snapshot {
        namespace,
        jobs,
        pods,
        nodes,
        lease_namespace: lease_namespace.to_string(),
        lease_name: lease_name.to_string(),
        lease,
    })
}

fn has_annotation(annotations: &Option<BTreeMap<String, String>>, key: &str) -> bool {
    annotations.as_ref().is_some_and(|a| a.contains_key(key))
}

/// Opted in with exactly `"true"` under one of the keys, and terminating.
fn is_candidate(pod: &Pod, keys: &[String]) -> bool {
    let opted_in = pod.metadata.annotations.as_ref().is_some_and(|a| {
        keys.iter()
            .any(|k| a.get(k).map(String::as_str) == Some("true"))
    });
    opted_in && pod.metadata.deletion_timestamp.is_some()
}

fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn is_unreachable(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|taints| taints.iter().any(|t| t.key == UNREACHABLE_TAINT_KEY))
}

/// (namespace, name) -> (state, `spec.suspend`, annotation parse error).
type JobStates = BTreeMap<(String, String), (Option<RecoveryState>, bool, Option<String>)>;

/// The three sections as text.
pub fn render(snapshot: &Snapshot, options: &RenderOptions, now: Timestamp) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", leader_line(snapshot, now));
    let scope = match &snapshot.namespace {
        Some(ns) => format!("namespace {ns}"),
        None => "all namespaces".to_string(),
    };

    // Jobs with recovery state.
    let mut states = JobStates::new();
    for job in &snapshot.jobs {
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        let name = job.metadata.name.clone().unwrap_or_default();
        let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
        let (state, error) = match RecoveryState::from_annotation(job.metadata.annotations.as_ref())
        {
            Ok(state) => (state, None),
            Err(err) => (None, Some(err.to_string())),
        };
        if state.is_none() && error.is_none() {
            continue;
        }
        states.insert((ns, name), (state, suspended, error));
    }
    let _ = writeln!(out, "\nJobs with recovery state ({scope}):");
    if states.is_empty() {
        let _ = writeln!(out, "  none");
    } else {
        let rows = states
            .iter()
            .map(|((ns, name), (state, suspended, error))| {
                job_row(ns, name, state.as_ref(), *suspended, error.as_deref(), now)
            })
            .collect();
        out.push_str(&table(
            &[
                "NAMESPACE",
                "JOB",
                "EPISODES",
                "LAST RECOVERY",
                "LAST NODES",
                "NEXT EPISODE",
                "LIMIT",
            ],
            rows,
        ));
    }

    // Pods waiting for recovery.
    let mut views: Vec<PodView> = snapshot
        .pods
        .iter()
        .filter(|p| is_candidate(p, &options.annotation_keys))
        .map(|p| PodView::of(p, snapshot, options))
        .collect();
    views.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let _ = writeln!(out, "\nPods waiting for recovery ({scope}):");
    if views.is_empty() {
        let _ = writeln!(out, "  none");
    } else {
        let statuses = pod_statuses(&views, &states, options, now);
        let rows = views
            .into_iter()
            .zip(statuses)
            .map(|(v, status)| {
                vec![
                    v.namespace,
                    v.name,
                    v.job.map(|j| j.name).unwrap_or_else(|| "-".into()),
                    v.node.unwrap_or_else(|| "-".into()),
                    v.node_state.to_string(),
                    v.deadline
                        .map(|d| d.to_string())
                        .unwrap_or_else(|| "-".into()),
                    status,
                ]
            })
            .collect();
        out.push_str(&table(
            &[
                "NAMESPACE",
                "POD",
                "JOB",
                "NODE",
                "NODE STATE",
                "DEADLINE",
                "STATUS",
            ],
            rows,
        ));
    }
    out
}

fn leader_line(snapshot: &Snapshot, now: Timestamp) -> String {
    let lease = format!("lease {}/{}", snapshot.lease_namespace, snapshot.lease_name);
    let Some(spec) = snapshot.lease.as_ref().and_then(|l| l.spec.as_ref()) else {
        return format!("Leader: none ({lease} not found: is `jobgate reconcile` running?)");
    };
    let Some(holder) = spec.holder_identity.as_deref().filter(|h| !h.is_empty()) else {
        return format!("Leader: none ({lease} has no holder)");
    };
    let renewed = spec.renew_time.as_ref().map(|t| t.0);
    let expires = renewed.and_then(|r| {
        spec.lease_duration_seconds
            .and_then(|s| r.checked_add(SignedDuration::from_secs(i64::from(s))).ok())
    });
    let freshness = match (renewed, expires) {
        (Some(r), Some(e)) if e > now => {
            format!("renewed {}, valid for {}", ago(r, now), human(now, e))
        }
        (Some(r), Some(_)) => format!("renewed {}, EXPIRED: no replica is acting", ago(r, now)),
        (Some(r), None) => format!("renewed {}", ago(r, now)),
        _ => "never renewed".to_string(),
    };
    format!("Leader: {holder} ({lease}, {freshness})")
}

fn job_row(
    namespace: &str,
    name: &str,
    state: Option<&RecoveryState>,
    suspended: bool,
    error: Option<&str>,
    now: Timestamp,
) -> Vec<String> {
    let Some(state) = state else {
        let why = format!("unreadable state ({}): counts as 0", error.unwrap_or("?"));
        return vec![
            namespace.into(),
            name.into(),
            "?".into(),
            "-".into(),
            "-".into(),
            "now".into(),
            why,
        ];
    };
    let last = state
        .last_recovery_time
        .map(|t| format!("{t} ({})", ago(t, now)))
        .unwrap_or_else(|| "-".into());
    let nodes = if state.last_nodes.is_empty() {
        "-".to_string()
    } else {
        state.last_nodes.join(",")
    };
    let next = match state.requeue_at {
        Some(at) if at > now => format!("not before {at} (in {})", human(now, at)),
        _ => "now".to_string(),
    };
    let limit = match &state.limit_exceeded {
        None => "-".to_string(),
        Some(_) if resumed_after_suspend(state, suspended) => {
            "was suspended, resumed: count restarts at the next episode".to_string()
        }
        Some(l) => match l.action {
            LimitAction::Suspend => format!("EXCEEDED {}, Job suspended", l.time),
            LimitAction::Stop => format!("EXCEEDED {}, recovery stopped", l.time),
        },
    };
    vec![
        namespace.into(),
        name.into(),
        state.count.to_string(),
        last,
        nodes,
        next,
        limit,
    ]
}

/// What the status shows of one candidate pod.
struct PodView {
    namespace: String,
    name: String,
    job: Option<JobKey>,
    node: Option<String>,
    node_state: &'static str,
    deadline: Option<Timestamp>,
    /// Its recovery is already recorded on its status: only the delete is left, no episode.
    recorded: bool,
}

impl PodView {
    fn of(pod: &Pod, snapshot: &Snapshot, options: &RenderOptions) -> PodView {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let job = pod
            .metadata
            .owner_references
            .as_deref()
            .and_then(|refs| job_owner(&namespace, refs));
        let node = node_name(pod);
        let node_state = match node {
            None => "not scheduled",
            Some(n) => match snapshot.nodes.get(n) {
                None => "missing",
                Some(node) if is_unreachable(node) => "unreachable",
                Some(_) => "reachable",
            },
        };
        let deadline = pod.metadata.deletion_timestamp.as_ref().and_then(|t| {
            SignedDuration::try_from(options.grace_period)
                .ok()
                .and_then(|g| t.0.checked_add(g).ok())
        });
        PodView {
            namespace,
            name: pod.metadata.name.clone().unwrap_or_default(),
            job,
            node: node.map(str::to_string),
            node_state,
            deadline,
            recorded: crate::recovery::recovery_recorded(&crate::recovery::pod_facts(pod)),
        }
    }

    /// Due now by the pod's own rule: past the deadline, on an unreachable node.
    fn due(&self, now: Timestamp) -> Option<DuePod> {
        let deadline = self.deadline.filter(|d| *d <= now)?;
        let node = self
            .node
            .clone()
            .filter(|_| self.node_state == "unreachable")?;
        Some(DuePod {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            node,
            deadline,
        })
    }
}

/// The STATUS column of every candidate pod, in `views` order. The order is the reconciler's:
/// the pod's deadline, then its node, then its Job's episode decision (computed with
/// [`decide_episode`] over all due pods of the Job, as the reconciler would).
fn pod_statuses(
    views: &[PodView],
    states: &JobStates,
    options: &RenderOptions,
    now: Timestamp,
) -> Vec<String> {
    let due: Vec<Option<DuePod>> = views.iter().map(|v| v.due(now)).collect();
    let episodes = group_by_job(
        views
            .iter()
            .zip(&due)
            .filter(|(v, _)| !v.recorded)
            .filter_map(|(v, d)| d.clone().map(|d| (v.job.clone(), d))),
    );
    let mut decisions = BTreeMap::new();
    for (job, pods) in &episodes.by_job {
        let (state, suspended) = match states.get(&(job.namespace.clone(), job.name.clone())) {
            Some((state, suspended, _)) => (state.as_ref(), *suspended),
            None => (None, false),
        };
        let mut config = options.episode;
        // A recorded limit stays in force when status is run without the limit flag.
        if config.limit_count.is_none()
            && let Some(state) = state.filter(|s| s.limit_exceeded.is_some())
        {
            config.limit_count = Some(state.count);
        }
        let view = JobView { suspended, state };
        let decision = decide_episode(pods, view, &config, now, 0.0);
        decisions.insert(job.clone(), (decision, state.map_or(0, |s| s.count)));
    }
    views
        .iter()
        .zip(&due)
        .map(|(view, due)| match (view.deadline, view.node_state, due) {
            (Some(d), _, _) if now < d => {
                format!("waiting for the deadline (in {})", human(now, d))
            }
            (_, "not scheduled", _) => "never recovered: not scheduled on a node".into(),
            (_, "missing", _) => "never recovered: node missing".into(),
            (_, "reachable", _) => "waiting for the node to become unreachable".into(),
            (_, _, Some(_)) if view.recorded => {
                "recovered (recorded on the pod): only the delete is left, no episode".into()
            }
            (_, _, Some(pod)) => match view.job.as_ref().and_then(|j| decisions.get(j)) {
                None => "due: recovered on the next pass (no Job: no backoff)".into(),
                Some((decision, count)) => job_pod_status(pod, decision, *count, now),
            },
            _ => "-".into(),
        })
        .collect()
}

fn job_pod_status(pod: &DuePod, decision: &EpisodeDecision, count: u32, now: Timestamp) -> String {
    let backoff = |at: Timestamp| {
        format!(
            "waiting for the Job's backoff until {at} (in {})",
            human(now, at)
        )
    };
    match decision {
        EpisodeDecision::Recover { new_state, .. } => {
            format!("due: episode {} on the next pass", new_state.count)
        }
        EpisodeDecision::Continue { pods, .. } if pods.contains(pod) => {
            format!("due: leftover of episode {count}, recovered on the next pass")
        }
        EpisodeDecision::Continue {
            others_wait_until: Some(at),
            ..
        }
        | EpisodeDecision::WaitUntil(at) => backoff(*at),
        EpisodeDecision::LimitExceeded {
            new_state: Some(_),
            suspend,
        } => format!(
            "not recovered: the Job reaches its recovery limit on the next pass{}",
            if *suspend { " (and is suspended)" } else { "" }
        ),
        EpisodeDecision::LimitExceeded { .. } => {
            "not recovered: Job's recovery limit exceeded".into()
        }
        EpisodeDecision::Continue { .. } | EpisodeDecision::NothingDue => "-".into(),
    }
}

/// `1h2m`, `4m5s`, `35s` from `from` to `to` (0s when negative).
fn human(from: Timestamp, to: Timestamp) -> String {
    let secs = to.as_second().saturating_sub(from.as_second()).max(0);
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

fn ago(t: Timestamp, now: Timestamp) -> String {
    if t > now {
        format!("in {}", human(now, t))
    } else {
        format!("{} ago", human(t, now))
    }
}

/// kubectl-style columns: left-aligned, three spaces apart.
fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<w$}   ");
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(headers.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconciler::test_api::{Exchange, serve};
    use crate::recovery::episode::LimitExceeded;
    use serde_json::json;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn options() -> RenderOptions {
        RenderOptions {
            annotation_keys: crate::job::DEFAULT_RECOVERY_ANNOTATION_KEYS
                .map(String::from)
                .to_vec(),
            grace_period: Duration::from_secs(60),
            episode: EpisodeConfig::default(),
        }
    }

    fn job(ns: &str, name: &str, state: Option<String>, suspend: bool) -> Job {
        let mut annotations = serde_json::Map::new();
        if let Some(state) = state {
            annotations.insert(RECOVERY_STATE_ANNOTATION.into(), json!(state));
        }
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"),
                         "annotations": annotations},
            "spec": {"suspend": suspend, "template": {"spec": {"containers": []}}},
        }))
        .unwrap()
    }

    fn pod(ns: &str, name: &str, job: Option<&str>, node: &str, deleted: &str) -> Pod {
        let owners: Vec<_> = job
            .map(|j| {
                json!({"apiVersion": "batch/v1", "kind": "Job", "name": j,
                       "uid": format!("uid-{j}"), "controller": true})
            })
            .into_iter()
            .collect();
        serde_json::from_value(json!({
            "metadata": {
                "name": name, "namespace": ns, "ownerReferences": owners,
                "deletionTimestamp": deleted, "deletionGracePeriodSeconds": 30,
                "annotations": {"kueue.x-k8s.io/safe-to-forcefully-terminate": "true"},
            },
            "spec": {"nodeName": node, "containers": []},
        }))
        .unwrap()
    }

    fn node(name: &str, unreachable: bool) -> (String, Node) {
        let taints = if unreachable {
            json!([{"key": UNREACHABLE_TAINT_KEY, "effect": "NoExecute"}])
        } else {
            json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
        };
        (
            name.to_string(),
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"taints": taints}}))
                .unwrap(),
        )
    }

    fn lease(holder: &str, renewed: &str) -> Lease {
        serde_json::from_value(json!({
            "metadata": {"name": DEFAULT_LEASE_NAME, "namespace": DEFAULT_LEASE_NAMESPACE},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                     "renewTime": format!("{renewed}.000000Z").replace("Z.", ".")},
        }))
        .unwrap()
    }

    fn snapshot() -> Snapshot {
        let in_backoff = RecoveryState {
            count: 2,
            requeue_at: Some(ts("2026-11-21T03:04:00Z")),
            last_recovery_time: Some(ts("2026-11-21T03:00:00Z")),
            last_nodes: vec!["node-a".into(), "node-b".into()],
            limit_exceeded: None,
        };
        let suspended = RecoveryState {
            count: 3,
            requeue_at: Some(ts("2026-11-21T02:10:00Z")),
            last_recovery_time: Some(ts("2026-11-21T02:00:00Z")),
            last_nodes: vec!["node-c".into()],
            limit_exceeded: Some(LimitExceeded {
                time: ts("2026-11-21T02:30:00Z"),
                action: LimitAction::Suspend,
            }),
        };
        Snapshot {
            namespace: None,
            jobs: vec![
                job("team-a", "train", Some(in_backoff.to_annotation()), false),
                job("team-b", "etl", Some(suspended.to_annotation()), true),
                job("team-a", "quiet", None, false),
                job("team-c", "edited", Some("{oops".into()), false),
            ],
            pods: vec![
                // Due before episode 2 started, on one of its nodes: a leftover of it.
                pod(
                    "team-a",
                    "train-2",
                    Some("train"),
                    "node-b",
                    "2026-11-21T02:58:00Z",
                ),
                // A Job without state: its first episode.
                pod(
                    "team-a",
                    "fresh-0",
                    Some("fresh"),
                    "node-a",
                    "2026-11-21T03:00:00Z",
                ),
                pod(
                    "team-a",
                    "train-3",
                    Some("train"),
                    "node-a",
                    "2026-11-21T03:01:00Z",
                ),
                pod(
                    "team-a",
                    "train-4",
                    Some("train"),
                    "node-a",
                    "2026-11-21T03:02:30Z",
                ),
                pod(
                    "team-a",
                    "train-5",
                    Some("train"),
                    "node-d",
                    "2026-11-21T02:00:00Z",
                ),
                pod(
                    "team-b",
                    "etl-0",
                    Some("etl"),
                    "node-c",
                    "2026-11-21T02:40:00Z",
                ),
                pod("team-c", "bare", None, "node-a", "2026-11-21T02:00:00Z"),
                pod("team-c", "gone", None, "node-x", "2026-11-21T02:00:00Z"),
            ],
            nodes: BTreeMap::from([
                node("node-a", true),
                node("node-b", true),
                node("node-c", true),
                node("node-d", false),
            ]),
            lease_namespace: DEFAULT_LEASE_NAMESPACE.into(),
            lease_name: DEFAULT_LEASE_NAME.into(),
            lease: Some(lease("jobgate-7d9f-abcde", "2026-11-21T03:02:55Z")),
        }
    }

    /// Issue 6: "prints a table of Jobs with recovery state, pods currently waiting for recovery
    /// with their deadlines and nodes, and leader identity".
    #[test]
    fn status_shows_leader_jobs_with_state_and_waiting_pods() {
        let text = render(&snapshot(), &options(), ts("2026-11-21T03:03:00Z"));
        let expected = "\
Leader: jobgate-7d9f-abcde (lease jobgate-system/jobgate-reconciler, renewed 5s ago, valid for 10s)

Jobs with recovery state (all namespaces):
NAMESPACE   JOB      EPISODES   LAST RECOVERY                     LAST NODES      NEXT EPISODE                                LIMIT
team-a      train    2          2026-11-21T03:00:00Z (3m0s ago)   node-a,node-b   not before 2026-11-21T03:04:00Z (in 1m0s)   -
team-b      etl      3          2026-11-21T02:00:00Z (1h3m ago)   node-c          now                                         EXCEEDED 2026-11-21T02:30:00Z, Job suspended
team-c      edited   ?          -                                 -               now                                         unreadable state (key must be a string at line 1 column 2): counts as 0

Pods waiting for recovery (all namespaces):
NAMESPACE   POD       JOB     NODE     NODE STATE    DEADLINE               STATUS
team-a      fresh-0   fresh   node-a   unreachable   2026-11-21T03:01:00Z   due: episode 1 on the next pass
team-a      train-2   train   node-b   unreachable   2026-11-21T02:59:00Z   due: leftover of episode 2, recovered on the next pass
team-a      train-3   train   node-a   unreachable   2026-11-21T03:02:00Z   waiting for the Job's backoff until 2026-11-21T03:04:00Z (in 1m0s)
team-a      train-4   train   node-a   unreachable   2026-11-21T03:03:30Z   waiting for the deadline (in 30s)
team-a      train-5   train   node-d   reachable     2026-11-21T02:01:00Z   waiting for the node to become unreachable
team-b      etl-0     etl     node-c   unreachable   2026-11-21T02:41:00Z   not recovered: Job's recovery limit exceeded
team-c      bare      -       node-a   unreachable   2026-11-21T02:01:00Z   due: recovered on the next pass (no Job: no backoff)
team-c      gone      -       node-x   missing       2026-11-21T02:01:00Z   never recovered: node missing
";
        assert_eq!(text, expected, "\n{text}");
    }

    #[test]
    fn a_resumed_job_shows_that_its_count_restarts() {
        let mut snap = snapshot();
        let etl = snap.jobs.get_mut(1).unwrap();
        etl.spec.as_mut().unwrap().suspend = Some(false);
        let text = render(&snap, &options(), ts("2026-11-21T03:03:00Z"));
        assert!(text.contains("was suspended, resumed: count restarts at the next episode"));
        assert!(text.contains("etl-0     etl     node-c   unreachable   2026-11-21T02:41:00Z   due: episode 1 on the next pass"), "{text}");
    }

    /// A pod whose recovery is recorded (Failed + KueueFailureRecovery) starts no episode in the
    /// reconciler, so status neither counts it into one nor shows it as one.
    #[test]
    fn a_recorded_pod_is_shown_as_recovered_and_joins_no_episode() {
        let mut snap = snapshot();
        let mut recorded = pod(
            "team-a",
            "fresh-1",
            Some("fresh"),
            "node-a",
            "2026-11-21T03:00:00Z",
        );
        recorded.status = serde_json::from_value(json!({
            "phase": "Failed",
            "conditions": [{"type": "KueueFailureRecovery", "status": "True",
                            "reason": "KueueForcefullyTerminated", "message": "m"}],
        }))
        .unwrap();
        snap.pods.push(recorded);
        let mut options = options();
        options.episode.limit_count = Some(0);
        let text = render(&snap, &options, ts("2026-11-21T03:03:00Z"));
        assert!(
            text.contains("fresh-1   fresh   node-a   unreachable   2026-11-21T03:01:00Z   recovered (recorded on the pod): only the delete is left, no episode"),
            "{text}"
        );
        assert!(
            text.contains("fresh-0   fresh   node-a   unreachable   2026-11-21T03:01:00Z   not recovered: the Job reaches its recovery limit on the next pass\n"),
            "{text}"
        );
    }

    /// kueue#9651: a pod Kueue 0.15.6+/0.16.3+/0.17+ recovered (reason KueueForcefullyDeleted)
    /// is shown as recovered, like one jobgate recovered, and joins no episode.
    #[test]
    fn a_pod_kueue_recorded_as_forcefully_deleted_is_shown_as_recovered() {
        let mut snap = snapshot();
        let mut by_kueue = pod(
            "team-a",
            "fresh-1",
            Some("fresh"),
            "node-a",
            "2026-11-21T03:00:00Z",
        );
        by_kueue.status = serde_json::from_value(json!({
            "phase": "Failed",
            "conditions": [{"type": "KueueFailureRecovery", "status": "True",
                            "reason": "KueueForcefullyDeleted", "message": "m"}],
        }))
        .unwrap();
        snap.pods.push(by_kueue);
        let text = render(&snap, &options(), ts("2026-11-21T03:03:00Z"));
        assert!(
            text.contains("fresh-1   fresh   node-a   unreachable   2026-11-21T03:01:00Z   recovered (recorded on the pod): only the delete is left, no episode"),
            "{text}"
        );
        assert!(
            text.contains("fresh-0   fresh   node-a   unreachable   2026-11-21T03:01:00Z   due: episode 1 on the next pass\n"),
            "{text}"
        );
    }

    /// With the reconciler's limit flags, status predicts the episode that trips the limit.
    #[test]
    fn status_predicts_the_limit_with_the_reconcilers_flags() {
        let mut options = options();
        options.episode.limit_count = Some(2);
        options.episode.on_limit = LimitAction::Suspend;
        let text = render(&snapshot(), &options, ts("2026-11-21T03:05:00Z"));
        assert!(
            text.contains("train-3   train   node-a   unreachable   2026-11-21T03:02:00Z   not recovered: the Job reaches its recovery limit on the next pass (and is suspended)"),
            "{text}"
        );
        assert!(text.contains("fresh-0   fresh   node-a   unreachable   2026-11-21T03:01:00Z   due: episode 1 on the next pass"), "{text}");
    }

    #[test]
    fn leader_line_says_when_there_is_no_acting_replica() {
        let mut snap = snapshot();
        snap.lease = Some(lease("jobgate-old", "2026-11-21T03:00:00Z"));
        assert_eq!(
            leader_line(&snap, ts("2026-11-21T03:03:00Z")),
            "Leader: jobgate-old (lease jobgate-system/jobgate-reconciler, renewed 3m0s ago, \
             EXPIRED: no replica is acting)"
        );
        snap.lease = None;
        assert_eq!(
            leader_line(&snap, ts("2026-11-21T03:03:00Z")),
            "Leader: none (lease jobgate-system/jobgate-reconciler not found: is `jobgate \
             reconcile` running?)"
        );
    }

    #[test]
    fn pods_not_opted_in_with_exactly_true_or_not_terminating_are_not_listed() {
        let mut snap = Snapshot {
            namespace: Some("team-a".into()),
            lease_namespace: "ns".into(),
            lease_name: "l".into(),
            ..Snapshot::default()
        };
        let mut not_true = pod("team-a", "p1", None, "n", "2026-11-21T02:00:00Z");
        not_true.metadata.annotations = Some(BTreeMap::from([(
            "kueue.x-k8s.io/safe-to-forcefully-terminate".to_string(),
            "True".to_string(),
        )]));
        let mut running = pod("team-a", "p2", None, "n", "2026-11-21T02:00:00Z");
        running.metadata.deletion_timestamp = None;
        snap.pods = vec![not_true, running];
        let text = render(&snap, &options(), ts("2026-11-21T03:03:00Z"));
        assert!(
            text.ends_with("Pods waiting for recovery (namespace team-a):\n  none\n"),
            "{text}"
        );
        assert!(text.contains("Jobs with recovery state (namespace team-a):\n  none\n"));
    }

    fn get(path_and_query: &'static str, status: u16, response: serde_json::Value) -> Exchange {
        Exchange {
            method: hyper::Method::GET,
            path_and_query,
            body: None,
            status,
            response,
        }
    }

    fn list(kind: &str, items: Vec<serde_json::Value>, next: Option<&str>) -> serde_json::Value {
        json!({"kind": kind, "apiVersion": "v1", "metadata": {"continue": next}, "items": items})
    }

    /// `fetch` pages through lists (500 at a time), keeps only Jobs with state and candidate
    /// pods, reads each of their nodes once, and tolerates a missing Lease.
    #[tokio::test]
    async fn fetch_pages_lists_and_reads_only_what_status_shows() {
        let with_state = serde_json::to_value(job(
            "team-a",
            "train",
            Some(RecoveryState::default().to_annotation()),
            false,
        ))
        .unwrap();
        let without = serde_json::to_value(job("team-a", "quiet", None, false)).unwrap();
        let candidate = |name: &str| {
            serde_json::to_value(pod(
                "team-a",
                name,
                Some("train"),
                "node-a",
                "2026-11-21T02:00:00Z",
            ))
            .unwrap()
        };
        let mut running = candidate("running");
        running["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("deletionTimestamp");
        let script = vec![
            get(
                "/apis/batch/v1/namespaces/team-a/jobs?&limit=500",
                200,
                list("JobList", vec![with_state], Some("tok-1")),
            ),
            get(
                "/apis/batch/v1/namespaces/team-a/jobs?&limit=500&continue=tok-1",
                200,
                list("JobList", vec![without], None),
            ),
            get(
                "/api/v1/namespaces/team-a/pods?&limit=500",
                200,
                list(
                    "PodList",
                    vec![candidate("p-0"), running, candidate("p-1")],
                    None,
                ),
            ),
            get(
                "/api/v1/nodes/node-a",
                200,
                serde_json::to_value(node("node-a", true).1).unwrap(),
            ),
            get(
                "/apis/coordination.k8s.io/v1/namespaces/jobgate-system/leases/jobgate-reconciler",
                404,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "reason": "NotFound", "code": 404}),
            ),
        ];
        let (service, handle) = tower_test::mock::pair();
        let server = serve(handle, script);
        let client = Client::new(service, "default");
        let snap = fetch(
            &client,
            Some("team-a".into()),
            &options(),
            DEFAULT_LEASE_NAMESPACE,
            DEFAULT_LEASE_NAME,
        )
        .await
        .unwrap();
        server.await.unwrap();
        let names = |v: Vec<Option<String>>| v.into_iter().flatten().collect::<Vec<_>>();
        assert_eq!(
            names(snap.jobs.iter().map(|j| j.metadata.name.clone()).collect()),
            ["train"]
        );
        assert_eq!(
            names(snap.pods.iter().map(|p| p.metadata.name.clone()).collect()),
            ["p-0", "p-1"]
        );
        assert_eq!(snap.nodes.keys().collect::<Vec<_>>(), ["node-a"]);
        assert!(snap.lease.is_none());
    }
}
