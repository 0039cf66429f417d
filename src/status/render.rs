//! `jobgate status` as text: the leader line, the Jobs with recovery state, and the pods with
//! the reconciler's verdict ([`super::verdict`]). Pure: the snapshot and `now` in, text out.

use std::fmt::Write as _;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::options::RenderOptions;
use super::snapshot::Snapshot;
use super::verdict::{PodRow, PodVerdict, job_states, pod_rows};
use crate::recovery::episode::{LimitAction, RecoveryState, resumed_after_suspend};
use crate::recovery::plan::JobPlan;

/// The three sections as text.
pub(crate) fn render(snapshot: &Snapshot, options: &RenderOptions, now: Timestamp) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", leader_line(snapshot, now));
    let scope = match &snapshot.namespace {
        Some(ns) => format!("namespace {ns}"),
        None => "all namespaces".to_string(),
    };
    let jobs = job_states(snapshot)
        .iter()
        .map(|((ns, name), (state, suspended, error))| {
            job_row(ns, name, state.as_ref(), *suspended, error.as_deref(), now)
        })
        .collect();
    section(
        &mut out,
        &format!("Jobs with recovery state ({scope})"),
        &[
            "NAMESPACE",
            "JOB",
            "EPISODES",
            "LAST RECOVERY",
            "LAST NODES",
            "NEXT EPISODE",
            "LIMIT",
        ],
        jobs,
    );
    let pods = pod_rows(snapshot, options, now)
        .into_iter()
        .map(|p| pod_row(p, now))
        .collect();
    section(
        &mut out,
        &format!("Pods waiting for recovery ({scope})"),
        &[
            "NAMESPACE",
            "POD",
            "JOB",
            "NODE",
            "NODE STATE",
            "DEADLINE",
            "STATUS",
        ],
        pods,
    );
    out
}

/// One section: a blank line, its title, then its table, or `none` without rows.
fn section(out: &mut String, title: &str, headers: &[&str], rows: Vec<Vec<String>>) {
    let _ = writeln!(out, "\n{title}:");
    if rows.is_empty() {
        let _ = writeln!(out, "  none");
    } else {
        out.push_str(&table(headers, rows));
    }
}

/// A row of the pods' table.
fn pod_row(p: PodRow, now: Timestamp) -> Vec<String> {
    let status = verdict_text(&p.verdict, now);
    vec![
        p.namespace,
        p.name,
        p.job.map(|j| j.name).unwrap_or_else(|| "-".into()),
        p.node.unwrap_or_else(|| "-".into()),
        p.node_state.as_str().to_string(),
        p.deadline
            .map(|d| d.to_string())
            .unwrap_or_else(|| "-".into()),
        status,
    ]
}

/// The STATUS column: the verdict in words.
pub(crate) fn verdict_text(verdict: &PodVerdict, now: Timestamp) -> String {
    match verdict {
        PodVerdict::WaitingForDeadline(d) => {
            format!("waiting for the deadline (in {})", human(now, *d))
        }
        PodVerdict::NotScheduled => "never recovered: not scheduled on a node".into(),
        PodVerdict::NodeMissing => "never recovered: node missing".into(),
        PodVerdict::KueueRecovers => format!(
            "left to Kueue: its failure-recovery controller recovers pods annotated {}",
            crate::kueue::SAFE_TO_FORCEFULLY_DELETE
        ),
        PodVerdict::WaitingForNode => "waiting for the node to become unreachable".into(),
        PodVerdict::Settling(at) => format!(
            "due: the partition brake judges its zone at {at} (in {}), once the nodes settle",
            human(now, *at)
        ),
        PodVerdict::Recorded => {
            "recovered (recorded on the pod): only the delete is left, no episode".into()
        }
        PodVerdict::Held(d) => format!("not recovered: {}", d.message()),
        PodVerdict::HeldByFinalizers(finalizers) => format!(
            "recovered and force-deleted, still present: waiting for finalizers {} to be removed",
            crate::recovery::finalizer_names(finalizers)
        ),
        PodVerdict::DueWithoutJob => "due: recovered on the next pass (no Job: no backoff)".into(),
        PodVerdict::Job { plan, count } => job_text(plan, *count, now),
    }
}

/// The STATUS column of a due pod of a Job: its Job's step.
fn job_text(plan: &JobPlan, count: u32, now: Timestamp) -> String {
    match plan {
        JobPlan::Orphan => "due: recovered on the next pass (its Job is gone: no backoff)".into(),
        JobPlan::Start(record) => format!("due: episode {} on the next pass", record.state.count),
        JobPlan::Leftover => {
            format!("due: leftover of episode {count}, recovered on the next pass")
        }
        JobPlan::Backoff(at) => format!(
            "waiting for the Job's backoff until {at} (in {})",
            human(now, *at)
        ),
        JobPlan::Limit(Some(record)) => format!(
            "not recovered: the Job reaches its recovery limit on the next pass{}",
            match (record.suspend, record.deactivate_workload) {
                (true, _) => " (and is suspended)",
                (false, true) => {
                    " (and its Kueue Workload is deactivated, or without one it is suspended)"
                }
                (false, false) => "",
            }
        ),
        JobPlan::Limit(None) => "not recovered: Job's recovery limit exceeded".into(),
    }
}

pub(crate) fn leader_line(snapshot: &Snapshot, now: Timestamp) -> String {
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
            LimitAction::DeactivateWorkload => {
                format!("EXCEEDED {}, Kueue Workload deactivated", l.time)
            }
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
