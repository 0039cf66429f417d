//! `/mutate` and `/mutate/recovery`: KEP-3939 defaulting and the failure-recovery opt-in
//! (Kueue KEP-6757), as a minimal, idempotent RFC 6902 patch.
//!
//! Decisions beyond KEP-3939 and KEP-6757, and why:
//! - **CronJobs** are reviewed through `spec.jobTemplate`, and their opt-in annotation is read
//!   from `spec.jobTemplate.metadata.annotations`: the CronJob controller copies exactly those
//!   annotations to every Job it creates (`getJobFromTemplate2`: `copyAnnotations(&cj.Spec.JobTemplate)`),
//!   and each of those Jobs is reviewed again at its own CREATE. So a template is mutated exactly
//!   as its Jobs will be. The annotation on the CronJob's own metadata is *not* copied; honouring
//!   it would make `"disabled"` there a promise the Jobs break, so it is ignored with a warning.
//! - **UPDATE** is reviewed only for a CronJob whose `spec.jobTemplate` changed (compared as JSON
//!   with `oldObject`): a template being written is reviewed like a new one, while schedule,
//!   suspend or metadata edits leave it alone. A Job's UPDATE is never mutated.
//! - **An explicit `"false"`** on any configured pod annotation is the pod template's own opt-out:
//!   jobgate then adds none of the keys (adding the other key would let a newer Kueue override
//!   the `"false"`) and does not switch `podReplacementPolicy` to `Failed` (without forced
//!   termination, `Failed` makes a Job wait for pods stuck on a dead node). It says so in a warning.
//! - **Any other existing value** (`"True"`, `""`) is left as written, with a warning: Kueue
//!   compares the value with `"true"` exactly (`podOptedInToFailurePolicy`).
//! - **`podFailurePolicy` with an explicit `TerminatingOrFailed`** is left unchanged, with a
//!   warning: the apiserver rejects that combination (`validatePodReplacementPolicy` accepts only
//!   `Failed` with a podFailurePolicy), and a webhook that rewrote it would make the same manifest
//!   valid in an opted-in namespace and invalid everywhere else, hiding the user's mistake.
//! - **An object without containers** is invalid (the apiserver rejects it) and its `spec` or
//!   `template` may not exist for a patch to land in; it is not patched.
//! - **Unknown values** of `jobgate.dev/failure-recovery` do not opt in (a misspelt `disabled`
//!   must not force-terminate pods), with a warning.

use serde_json::{Map, Value};

use super::config::Config;
use super::defaults::{FAILED, TERMINATING_OR_FAILED, pod_replacement_policy_default};
use super::field::go_quote;
use super::finding::{Finding, Judgment, Source};
use super::patch::{add, pointer, replace};
use super::review::Review;
use super::version::FeatureGate;
use super::wire::envelope::Operation;
use super::wire::model::{JobObject, Kind, Presence};

/// The Job annotation that opts a Job in (`"enabled"`) or out (`"disabled"`) of failure recovery.
pub(crate) const FAILURE_RECOVERY: &str = "jobgate.dev/failure-recovery";
pub(crate) const FAILURE_RECOVERY_ENABLED: &str = "enabled";
pub(crate) const FAILURE_RECOVERY_DISABLED: &str = "disabled";

/// How a Job may opt into failure recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecoveryScope {
    /// `POST /mutate`: only Jobs annotated `jobgate.dev/failure-recovery: "enabled"`.
    JobAnnotation,
    /// `POST /mutate/recovery`: every Job not annotated `jobgate.dev/failure-recovery: "disabled"`.
    Namespace,
}

/// The value jobgate gives each recovery annotation on the pod template.
const TRUE: &str = "true";

/// A change the webhook made, or an opt-out it honoured: a note.
fn note(text: String) -> Finding {
    Finding::note(Source::Mutation, None, text)
}

/// Something the user should fix: a warning.
fn warning(text: String) -> Finding {
    Finding::warning(Source::Mutation, None, text)
}

/// What the mutating webhook does with `review` at `scope`: the patch, and a finding for each
/// change it made (a note) and each thing it left for the user to fix (a warning), in order.
pub(crate) fn mutate(review: &Review<'_>, config: &Config, scope: RecoveryScope) -> Judgment {
    let object = review.object;
    if object.metadata.deletion_timestamp.is_some()
        || !is_reviewed(review)
        || object.spec.template.spec.containers.is_empty()
    {
        return Judgment::default();
    }
    let spec = &object.spec;
    let spec_tokens = object.kind.spec_pointer();
    let spec_path = object.spec_path();
    let mut told = Vec::new();
    let mut annotation_ops = Vec::new();
    let mut added_keys: Vec<&str> = Vec::new();

    // With the 1.33 gate JobPodReplacementPolicy off the apiserver drops the field
    // (`dropDisabledFields`): jobgate neither defaults nor changes it.
    let replacement_policy_exists = config.cluster.enabled(FeatureGate::JobPodReplacementPolicy);
    // KEP-3939: the default applies only when the field is absent or null, never over "".
    let mut policy = match &spec.pod_replacement_policy {
        Presence::Value(v) => v.as_str(),
        Presence::Absent | Presence::Null => pod_replacement_policy_default(spec),
    };

    if opted_in(object, scope, &mut told) && !left_opted_out(object, config, &mut told) {
        added_keys = add_missing_annotations(object, config, &mut told, &mut annotation_ops);
        policy = policy_for_recovery(object, policy, replacement_policy_exists, &mut told);
    }

    // Every change is explained, in the patch's order (the policy, then the annotations).
    for key in added_keys {
        told.push(note(format!(
            "jobgate: set {spec_path}.template.metadata.annotations[{key}]=\"{TRUE}\" because \
             failure recovery is enabled"
        )));
    }

    let mut patch = Vec::new();
    let policy_path = || pointer(spec_tokens.iter().copied().chain(["podReplacementPolicy"]));
    match &spec.pod_replacement_policy {
        _ if !replacement_policy_exists => {}
        Presence::Value(v) if v == policy => {}
        Presence::Value(_) => patch.push(replace(policy_path(), Value::from(policy))),
        Presence::Absent | Presence::Null => patch.push(add(policy_path(), Value::from(policy))),
    }
    patch.extend(annotation_ops);
    Judgment {
        findings: told,
        patch: json_patch::Patch(patch),
    }
}

/// A "false" under any key jobgate's reconciler or Kueue reads is an opt-out, not only under the
/// keys this webhook sets: it is left as it is, with a warning each.
fn left_opted_out(object: &JobObject, config: &Config, told: &mut Vec<Finding>) -> bool {
    let spec_path = object.spec_path();
    let opted_out: Vec<&str> = config
        .recognized_recovery_keys()
        .into_iter()
        .filter(|k| object.spec.template.annotation(k).as_deref() == Some("false"))
        .collect();
    for key in &opted_out {
        told.push(note(format!(
            "jobgate: left {spec_path}.template.metadata.annotations[{key}]=\"false\" unchanged: \
             the pods opted out of forced termination, so failure recovery is not applied"
        )));
    }
    !opted_out.is_empty()
}

/// The recovery annotations the webhook sets that the pod template lacks, added to `ops`; a
/// value other than "true" is left, with a warning.
fn add_missing_annotations<'c>(
    object: &JobObject,
    config: &'c Config,
    told: &mut Vec<Finding>,
    ops: &mut Vec<json_patch::PatchOperation>,
) -> Vec<&'c str> {
    let spec_path = object.spec_path();
    let mut missing = Vec::new();
    for key in config.injected_recovery_keys() {
        match object.spec.template.annotation(key).as_deref() {
            None => missing.push(key),
            Some(TRUE) => {}
            Some(other) => told.push(warning(format!(
                "jobgate: left {spec_path}.template.metadata.annotations[{key}]={} unchanged: \
                 Kueue forcefully terminates only pods annotated \"true\"",
                go_quote(other)
            ))),
        }
    }
    add_template_annotations(object, &missing, ops);
    missing
}

/// Recovery needs `podReplacementPolicy: Failed`: set where the apiserver accepts it, else
/// left with a warning saying why.
fn policy_for_recovery<'a>(
    object: &JobObject,
    policy: &'a str,
    replacement_policy_exists: bool,
    told: &mut Vec<Finding>,
) -> &'a str {
    let spec_path = object.spec_path();
    if !replacement_policy_exists {
        told.push(warning(format!(
            "jobgate: left {spec_path}.podReplacementPolicy unchanged although failure recovery \
             is enabled: the cluster's JobPodReplacementPolicy feature gate is off, so the \
             apiserver drops the field"
        )));
    } else if policy == TERMINATING_OR_FAILED {
        if object.spec.pod_failure_policy.is_set() {
            // Only an explicit value gets here: with a podFailurePolicy the default is Failed.
            told.push(warning(format!(
                "jobgate: left {spec_path}.podReplacementPolicy=TerminatingOrFailed unchanged \
                 although failure recovery is enabled: with {spec_path}.podFailurePolicy set, \
                 the apiserver accepts only Failed"
            )));
        } else {
            told.push(note(format!(
                "jobgate: set {spec_path}.podReplacementPolicy=Failed because failure recovery is enabled"
            )));
            return FAILED;
        }
    }
    policy
}

/// CREATE of a Job or CronJob; UPDATE of a CronJob whose `spec.jobTemplate` changed.
fn is_reviewed(review: &Review<'_>) -> bool {
    match (review.operation, review.object.kind) {
        (Operation::Create, _) => true,
        (Operation::Update, Kind::CronJob) => review
            .old_object
            .is_some_and(|old| job_template_changed(old, review.object)),
        _ => false,
    }
}

fn job_template_changed(old: &JobObject, new: &JobObject) -> bool {
    match (&old.job_template_json, &new.job_template_json) {
        (None, None) => false,
        (Some(a), Some(b)) if a == b => false,
        // Same text is the same template; different text may still be the same JSON.
        (Some(a), Some(b)) => {
            match (
                serde_json::from_str::<Value>(a),
                serde_json::from_str::<Value>(b),
            ) {
                (Ok(a), Ok(b)) => a != b,
                _ => true,
            }
        }
        _ => true,
    }
}

/// Whether the Job opted into failure recovery at this scope; warns about annotations it ignores.
fn opted_in(object: &JobObject, scope: RecoveryScope, told: &mut Vec<Finding>) -> bool {
    let (value, at) = match object.kind {
        Kind::Job => (object.metadata.annotation(FAILURE_RECOVERY), "metadata"),
        Kind::CronJob => (
            object
                .job_template_metadata
                .as_ref()
                .and_then(|m| m.annotation(FAILURE_RECOVERY)),
            "spec.jobTemplate.metadata",
        ),
    };
    if object.kind == Kind::CronJob
        && let Some(own) = object.metadata.annotation(FAILURE_RECOVERY)
        && value.as_ref() != Some(&own)
    {
        told.push(warning(format!(
            "jobgate: ignored metadata.annotations[{FAILURE_RECOVERY}]={} on the CronJob: \
             its Jobs do not inherit it; set it in spec.jobTemplate.metadata.annotations",
            go_quote(&own)
        )));
    }
    match value.as_deref() {
        Some(FAILURE_RECOVERY_ENABLED) => true,
        Some(FAILURE_RECOVERY_DISABLED) => false,
        Some(other) => {
            told.push(warning(format!(
                "jobgate: ignored {at}.annotations[{FAILURE_RECOVERY}]={}: expected \"enabled\" or \
                 \"disabled\"; failure recovery is not enabled",
                go_quote(other)
            )));
            false
        }
        None => scope == RecoveryScope::Namespace,
    }
}

/// `add`s each missing key with "true": the whole `metadata` or `annotations` map when that is
/// absent or null, else one member per key, so existing annotations are never replaced.
fn add_template_annotations(
    object: &JobObject,
    missing: &[&str],
    ops: &mut Vec<json_patch::PatchOperation>,
) {
    if missing.is_empty() {
        return;
    }
    let template = object
        .kind
        .spec_pointer()
        .iter()
        .copied()
        .chain(["template"]);
    let map = || {
        Value::Object(
            missing
                .iter()
                .map(|k| (k.to_string(), Value::from(TRUE)))
                .collect::<Map<_, _>>(),
        )
    };
    match &object.spec.template.metadata {
        Presence::Absent | Presence::Null => {
            let mut metadata = Map::new();
            metadata.insert("annotations".into(), map());
            ops.push(add(
                pointer(template.chain(["metadata"])),
                Value::Object(metadata),
            ));
        }
        Presence::Value(meta) => match &meta.annotations {
            Presence::Absent | Presence::Null => {
                ops.push(add(
                    pointer(template.chain(["metadata", "annotations"])),
                    map(),
                ));
            }
            Presence::Value(_) => {
                for key in missing {
                    ops.push(add(
                        pointer(
                            template
                                .clone()
                                .chain(["metadata", "annotations"])
                                .chain([*key]),
                        ),
                        Value::from(TRUE),
                    ));
                }
            }
        },
    }
}

#[cfg(test)]
mod properties;
#[cfg(test)]
pub(crate) mod strategies;
#[cfg(test)]
mod tests;
