//! What `/validate` and the policies say about the Jobs and CronJobs already in a cluster, and
//! which opted-in pods' Jobs cannot benefit from recovery. Pure: the objects in, the verdicts out,
//! through `jobgate check`'s path (`check::check_document`, `/validate`'s stage only: stored
//! objects are past mutation), never a copy of a rule. Each object is reviewed once; every
//! finding names its source (`job::finding::Source`).
//!
//! Each object is reviewed as a CREATE, as Gatekeeper's audit does: what would be said if it were
//! applied today. (An UPDATE of it reports only what it did not already have, so an existing
//! object is never blocked from updates by a finding listed here.)

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::check::{self, Chain, Place, Report};
use crate::job::Config;
use crate::job::finding::Severity;
use crate::job::finding::Source;
use crate::job::levels::Level;
use crate::job::levels::Policies;
use crate::job::levels::PolicyName;
use crate::json_str::str_or_empty;
use crate::recovery::{self, PodFacts, Recoverer, RecoveryConfig};

/// What was read from the cluster.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inventory {
    /// Jobs and CronJobs as the API returned them, `apiVersion` and `kind` set.
    pub(crate) objects: Vec<Value>,
    /// The metadata of the pods that matter here.
    pub(crate) pods: Vec<AuditedPod>,
}

/// What the audit reads of a pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AuditedPod {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) annotations: BTreeMap<String, String>,
    /// The controlling `batch/v1` Job, if any.
    pub(crate) job: Option<OwnerJob>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OwnerJob {
    pub(crate) name: String,
    pub(crate) uid: String,
}

/// `fail` (would be denied) or `warn` (would be allowed with a warning), as wg-policy names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PolicyResult {
    Fail,
    Warn,
}

/// One thing said about one object, and who says it: `kube-apiserver` (its validation rules, as
/// `/validate` mirrors them) or a jobgate policy's name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct AuditFinding {
    pub(crate) policy: &'static str,
    pub(crate) result: PolicyResult,
    pub(crate) message: String,
}

/// One object reviewed, with its findings attributed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Audited {
    pub(crate) namespace: String,
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) findings: Vec<AuditFinding>,
}

/// A Job with pods opted into recovery that the recovery policies say cannot benefit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RecoveryFinding {
    pub(crate) namespace: String,
    pub(crate) job: String,
    pub(crate) uid: String,
    /// The opted-in pods, by name.
    pub(crate) pods: Vec<String>,
    pub(crate) findings: Vec<AuditFinding>,
}

/// The controller that recovers a Job's opted-in pods.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RecoveredBy {
    pub(crate) namespace: String,
    pub(crate) job: String,
    /// The opted-in pods, by name.
    pub(crate) pods: Vec<String>,
    /// `kueue` (its failure-recovery controller) or `jobgate` (its reconciler).
    pub(crate) controller: &'static str,
    /// The annotation that decides it.
    pub(crate) key: String,
}

/// Everything the audit found.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Audit {
    /// `jobgate check`'s report (objects, skipped, unreadable); `location` is the namespace.
    #[serde(flatten)]
    pub(crate) report: Report,
    /// Jobs whose opted-in pods cannot benefit from recovery.
    pub(crate) recovery: Vec<RecoveryFinding>,
    /// Which controller recovers the opted-in pods of each Job ([`recovered_by`]).
    #[serde(rename = "recoveredBy")]
    pub(crate) recovered_by: Vec<RecoveredBy>,
    /// The same verdicts per policy, for PolicyReports.
    #[serde(skip)]
    pub(crate) audited: Vec<Audited>,
}

/// The policies that decide whether an opted-in pod's Job gets anything from recovery.
const RECOVERY_POLICIES: [PolicyName; 2] = [
    PolicyName::RecoveryNeedsFailed,
    PolicyName::RecoveryCountsTowardBackoff,
];

/// Reviews every object of `inventory` with `config`, and every Job with opted-in pods with the
/// recovery policies.
pub(crate) fn audit(inventory: &Inventory, config: &Config) -> Audit {
    let mut audit = Audit::default();
    for doc in &inventory.objects {
        let namespace = str_or_empty(doc, "/metadata/namespace");
        let Some(findings) = review(namespace, doc, config, &mut audit.report, |_| true) else {
            continue; // unreadable: reported as such
        };
        audit.audited.push(Audited {
            namespace: namespace.to_string(),
            api_version: str_or_empty(doc, "/apiVersion").to_string(),
            kind: str_or_empty(doc, "/kind").to_string(),
            name: str_or_empty(doc, "/metadata/name").to_string(),
            uid: str_or_empty(doc, "/metadata/uid").to_string(),
            findings,
        });
    }
    audit.recovery = recovery(inventory, config);
    audit
}

/// Reviews `doc` once into `report` and returns its findings from the sources `keep` accepts;
/// `None` when it could not be read.
fn review(
    namespace: &str,
    doc: &Value,
    config: &Config,
    report: &mut Report,
    keep: impl Fn(Source) -> bool,
) -> Option<Vec<AuditFinding>> {
    let before = report.objects.len();
    let place = Place::unpositioned(namespace);
    check::check_document(&place, doc.clone(), &Chain::validate_only(config), report);
    let checked = report.objects.get(before)?;
    Some(
        checked
            .findings
            .iter()
            .filter(|f| keep(f.finding.source))
            .filter_map(|f| {
                let result = match f.finding.severity() {
                    Severity::Error => PolicyResult::Fail,
                    Severity::Warning => PolicyResult::Warn,
                    // What a mutation changed: the audit judges stored objects, never mutates.
                    Severity::Note => return None,
                };
                Some(AuditFinding {
                    policy: f.finding.source.as_str(),
                    result,
                    message: f.finding.message(),
                })
            })
            .collect(),
    )
}

/// The key that opts `pod` in (`"true"` under one of the keys the rules recognize), if any.
fn opting_key<'a>(pod: &AuditedPod, config: &'a Config) -> Option<&'a str> {
    config
        .recognized_recovery_keys()
        .into_iter()
        .find(|k| pod.annotations.get(*k).map(String::as_str) == Some("true"))
}

/// Jobs with opted-in pods, reviewed as if their pod template were opted in the way the pods
/// are, with only the recovery policies on (at `warn`: this is about the pods, whatever the
/// policies' levels in admission).
fn recovery(inventory: &Inventory, config: &Config) -> Vec<RecoveryFinding> {
    let recovery_config = recovery_policies_only(config);
    opted_in_jobs(inventory, config)
        .into_iter()
        .filter_map(|job| review_opted_in(inventory, job, &recovery_config))
        .collect()
}

/// A Job with opted-in pods.
struct OptedIn<'a> {
    namespace: &'a str,
    owner: &'a OwnerJob,
    /// The key that opts its first listed pod in.
    key: &'a str,
    pods: Vec<String>,
}

/// Jobs with opted-in pods, in the order their first pod was listed.
fn opted_in_jobs<'a>(inventory: &'a Inventory, config: &'a Config) -> Vec<OptedIn<'a>> {
    let mut jobs: Vec<OptedIn> = Vec::new();
    for pod in &inventory.pods {
        let (Some(owner), Some(key)) = (&pod.job, opting_key(pod, config)) else {
            continue;
        };
        match jobs
            .iter_mut()
            .find(|j| j.namespace == pod.namespace && j.owner == owner)
        {
            Some(j) => j.pods.push(pod.name.clone()),
            None => jobs.push(OptedIn {
                namespace: &pod.namespace,
                owner,
                key,
                pods: vec![pod.name.clone()],
            }),
        }
    }
    jobs
}

/// `config` with every policy off but the recovery policies, at `warn`.
fn recovery_policies_only(config: &Config) -> Config {
    let mut recovery_config = config.clone();
    recovery_config.policies = Policies::all(Level::Off);
    for p in RECOVERY_POLICIES {
        recovery_config.policies.set(p, Level::Warn);
    }
    recovery_config
}

/// The recovery policies' findings on `job` as stored, its pod template opted in by the pods'
/// key; `None` when they say nothing, or the Job is not in the inventory.
fn review_opted_in(
    inventory: &Inventory,
    job: OptedIn<'_>,
    recovery_config: &Config,
) -> Option<RecoveryFinding> {
    let OptedIn {
        namespace,
        owner,
        key,
        pods,
    } = job;
    let (name, uid) = (&owner.name, &owner.uid);
    // A Job that is gone (or replaced under the same name) has no spec to judge: its pods are
    // recovered without per-Job state.
    let doc = inventory.objects.iter().find(|d| {
        str_or_empty(d, "/kind") == "Job"
            && str_or_empty(d, "/metadata/namespace") == namespace
            && str_or_empty(d, "/metadata/name") == name.as_str()
            && str_or_empty(d, "/metadata/uid") == uid.as_str()
    })?;
    let mut opted = doc.clone();
    set_template_annotation(&mut opted, key);
    let recovery_policy =
        |s: Source| matches!(s, Source::Policy(p) if RECOVERY_POLICIES.contains(&p));
    let mut scratch = Report::default();
    let findings = review(
        namespace,
        &opted,
        recovery_config,
        &mut scratch,
        recovery_policy,
    )
    .unwrap_or_default();
    (!findings.is_empty()).then(|| RecoveryFinding {
        namespace: namespace.to_string(),
        job: name.clone(),
        uid: uid.clone(),
        pods,
        findings,
    })
}

/// Which controller recovers each Job's opted-in pods, read as `jobgate reconcile` reads a pod
/// ([`recovery::recoverer`]) for a reconciler that reads the keys the rules recognize and runs
/// with `kueue_recovers`: one entry per Job and controller, in the order the pods were listed.
pub(crate) fn recovered_by(
    inventory: &Inventory,
    config: &Config,
    kueue_recovers: bool,
) -> Vec<RecoveredBy> {
    let reconciler = RecoveryConfig {
        annotation_keys: config
            .recognized_recovery_keys()
            .into_iter()
            .map(str::to_string)
            .collect(),
        kueue_recovers,
        ..RecoveryConfig::default()
    };
    let mut out: Vec<RecoveredBy> = Vec::new();
    for pod in &inventory.pods {
        let Some(owner) = &pod.job else { continue };
        let facts = PodFacts {
            annotations: pod.annotations.clone(),
            ..PodFacts::default()
        };
        let (controller, key) = match recovery::recoverer(&facts, &reconciler) {
            None => continue,
            Some(Recoverer::Kueue) => ("kueue", crate::kueue::SAFE_TO_FORCEFULLY_DELETE),
            Some(Recoverer::Jobgate { key }) => ("jobgate", key),
        };
        match out.iter_mut().find(|r| {
            r.namespace == pod.namespace && r.job == owner.name && r.controller == controller
        }) {
            Some(r) => r.pods.push(pod.name.clone()),
            None => out.push(RecoveredBy {
                namespace: pod.namespace.clone(),
                job: owner.name.clone(),
                pods: vec![pod.name.clone()],
                controller,
                key: key.to_string(),
            }),
        }
    }
    out
}

/// `spec.template.metadata.annotations[key] = "true"`, creating what is missing.
fn set_template_annotation(job: &mut Value, key: &str) {
    let mut at = job;
    for field in ["spec", "template", "metadata", "annotations"] {
        if !at.get(field).is_some_and(Value::is_object) {
            at[field] = Value::Object(Default::default());
        }
        at = &mut at[field];
    }
    at[key] = Value::String("true".into());
}
