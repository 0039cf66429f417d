//! kube-apiserver's defaulting of the fields jobgate reads (kubernetes `pkg/apis/batch/v1/defaults.go`,
//! `pkg/apis/core/v1/defaults.go`). Mutation uses the KEP-3939 rule; `jobgate check` applies all of
//! them before validating, as the apiserver does before validation.

use super::version::{Cluster, FeatureGate};
use super::wire::interned::InternedStr;
use super::wire::model::{JobObject, JobSpec, Kind, Presence};

pub(crate) const FAILED: &str = "Failed";
pub(crate) const TERMINATING_OR_FAILED: &str = "TerminatingOrFailed";

/// KEP-3939: `Failed` when a podFailurePolicy is set (even `{}` or `rules: []`), else
/// `TerminatingOrFailed`. Only meaningful when `podReplacementPolicy` is absent or null.
pub(crate) fn pod_replacement_policy_default(spec: &JobSpec) -> &'static str {
    if spec.pod_failure_policy.is_set() {
        FAILED
    } else {
        TERMINATING_OR_FAILED
    }
}

/// Applies the apiserver's defaults that change what validation sees, as `cluster`'s release
/// does: `podReplacementPolicy` (absent or null only; with the 1.33 gate
/// `JobPodReplacementPolicy` off a Job's field is dropped instead, `dropDisabledFields`, and a
/// CronJob's is left as written),
/// `onPodConditions[].status` `""` -> `True` (in a CronJob's job template only from 1.34,
/// kubernetes#131525), and the pod template's `restartPolicy` `""` -> `Always`.
///
/// For a Job (not a CronJob's template: `SetDefaults_Job` takes a Job) also `SetDefaults_Job`'s
/// completions/parallelism (both 1 when both unset, else parallelism 1), `backoffLimit` (6, or
/// MaxInt32 with `backoffLimitPerIndex`), `completionMode: NonIndexed` and `suspend: false`.
pub(crate) fn apply_apiserver_defaults(object: &mut JobObject, cluster: &Cluster) {
    let job = object.kind == Kind::Job;
    let spec = &mut object.spec;
    if job {
        set_defaults_job(spec);
    }
    default_pod_replacement_policy(spec, job, cluster);
    if job || cluster.defaults_cron_job_pod_condition_status() {
        default_pod_condition_status(spec);
    }
    if spec
        .template
        .spec
        .restart_policy
        .as_deref()
        .unwrap_or("")
        .is_empty()
    {
        spec.template.spec.restart_policy = Some(InternedStr::from_static("Always"));
    }
}

/// `SetDefaults_Job`: completions/parallelism, `backoffLimit`, `completionMode`, `suspend`.
fn set_defaults_job(spec: &mut JobSpec) {
    if spec.completions.is_none() && spec.parallelism.is_none() {
        spec.completions = Some(1);
    }
    spec.parallelism.get_or_insert(1);
    if spec.backoff_limit.is_none() {
        spec.backoff_limit = Some(if spec.backoff_limit_per_index.is_some() {
            i32::MAX
        } else {
            6
        });
    }
    spec.completion_mode
        .get_or_insert(InternedStr::from_static("NonIndexed"));
    spec.suspend.get_or_insert(false);
}

/// `podReplacementPolicy`: defaulted (KEP-3939), or with the gate off dropped from a Job.
fn default_pod_replacement_policy(spec: &mut JobSpec, job: bool, cluster: &Cluster) {
    if !cluster.enabled(FeatureGate::JobPodReplacementPolicy) {
        // Only the Job strategy drops the field: a CronJob's job template keeps it, neither
        // defaulted nor dropped, and it is validated (pkg/registry/batch/cronjob, 1.33).
        if job {
            // Kept aside: on UPDATE the apiserver keeps the field when the old Job had one
            // (`dropDisabledFields`), which `validate` restores.
            let dropped = std::mem::replace(&mut spec.pod_replacement_policy, Presence::Absent);
            if dropped.is_set() {
                spec.dropped_pod_replacement_policy = Some(dropped);
            }
        }
    } else if !spec.pod_replacement_policy.is_set() {
        spec.pod_replacement_policy = Presence::Value(InternedStr::from_static(
            pod_replacement_policy_default(spec),
        ));
    }
}

/// `onPodConditions[].status`: `""` -> `True`.
fn default_pod_condition_status(spec: &mut JobSpec) {
    if let Presence::Value(policy) = &mut spec.pod_failure_policy {
        for pattern in policy
            .rules
            .iter_mut()
            .flat_map(|r| r.on_pod_conditions.iter_mut())
        {
            if pattern.status.as_deref().unwrap_or("").is_empty() {
                pattern.status = Some(InternedStr::from_static("True"));
            }
        }
    }
}

/// The Job strategy's `PrepareForCreate` (pkg/registry/batch/job/strategy.go): with the gate
/// `JobManagedBy` off (beta in 1.33 and 1.34) a new Job's `spec.managedBy` is dropped before
/// validation. An UPDATE keeps it (it is immutable), and so does a CronJob's job template.
pub(crate) fn prepare_job_for_create(object: &mut JobObject, cluster: &Cluster) {
    if object.kind == Kind::Job && !cluster.enabled(FeatureGate::JobManagedBy) {
        object.spec.managed_by = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(json: &str) -> JobObject {
        JobObject::from_json(Kind::Job, json).unwrap()
    }

    #[test]
    fn kep_3939_default_is_failed_with_a_pod_failure_policy_even_empty() {
        for spec in [
            r#"{"podFailurePolicy":{}}"#,
            r#"{"podFailurePolicy":{"rules":[]}}"#,
        ] {
            let j = job(&format!(r#"{{"spec":{spec}}}"#));
            assert_eq!(pod_replacement_policy_default(&j.spec), FAILED, "{spec}");
        }
    }

    #[test]
    fn kep_3939_default_is_terminating_or_failed_without_a_pod_failure_policy() {
        for spec in [r#"{}"#, r#"{"podFailurePolicy":null}"#] {
            let j = job(&format!(r#"{{"spec":{spec}}}"#));
            assert_eq!(
                pod_replacement_policy_default(&j.spec),
                TERMINATING_OR_FAILED,
                "{spec}"
            );
        }
    }

    #[test]
    fn set_defaults_job_counts_mode_and_suspend_for_jobs_only() {
        let mut j = job(r#"{"spec":{"backoffLimitPerIndex":1}}"#);
        apply_apiserver_defaults(&mut j, &Cluster::default());
        assert_eq!((j.spec.completions, j.spec.parallelism), (Some(1), Some(1)));
        assert_eq!(j.spec.backoff_limit, Some(i32::MAX));
        assert_eq!(j.spec.completion_mode.as_deref(), Some("NonIndexed"));
        assert_eq!(j.spec.suspend, Some(false));
        let mut j = job(r#"{"spec":{"parallelism":3}}"#);
        apply_apiserver_defaults(&mut j, &Cluster::default());
        assert_eq!((j.spec.completions, j.spec.backoff_limit), (None, Some(6)));
        let mut cj =
            JobObject::from_json(Kind::CronJob, r#"{"spec":{"jobTemplate":{"spec":{}}}}"#).unwrap();
        apply_apiserver_defaults(&mut cj, &Cluster::default());
        assert_eq!((cj.spec.completions, cj.spec.completion_mode), (None, None));
    }

    /// With the 1.33 gate `JobPodReplacementPolicy` off only the Job strategy drops the field
    /// (`PrepareForCreate`); the CronJob strategy has no such drop, so a CronJob's job template
    /// keeps it, undefaulted, and validation sees it (k8s.io/kubernetes v1.33.13).
    #[test]
    fn with_the_1_33_gate_off_a_cron_job_keeps_its_pod_replacement_policy() {
        let off = Cluster::with_gates(
            crate::job::version::KubernetesVersion::V1_33,
            &[(FeatureGate::JobPodReplacementPolicy, false)].into(),
        )
        .unwrap();
        let mut j = job(r#"{"spec":{"podReplacementPolicy":"Bogus"}}"#);
        apply_apiserver_defaults(&mut j, &off);
        assert_eq!(j.spec.pod_replacement_policy, Presence::Absent);
        let cron_job = |spec: &str| {
            let text = format!(r#"{{"spec":{{"jobTemplate":{{"spec":{spec}}}}}}}"#);
            let mut cj = JobObject::from_json(Kind::CronJob, &text).unwrap();
            apply_apiserver_defaults(&mut cj, &off);
            cj.spec.pod_replacement_policy
        };
        assert_eq!(
            cron_job(r#"{"podReplacementPolicy":"Bogus"}"#),
            Presence::Value("Bogus".into())
        );
        assert_eq!(cron_job("{}"), Presence::Absent);
    }

    #[test]
    fn apiserver_defaults_never_overwrite_an_explicit_empty_pod_replacement_policy() {
        let mut j = job(r#"{"spec":{"podReplacementPolicy":""}}"#);
        apply_apiserver_defaults(&mut j, &Cluster::default());
        assert_eq!(
            j.spec.pod_replacement_policy,
            Presence::Value(InternedStr::default())
        );
        let mut j = job(
            r#"{"spec":{"podReplacementPolicy":null,"podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]}}}"#,
        );
        apply_apiserver_defaults(&mut j, &Cluster::default());
        assert_eq!(
            j.spec.pod_replacement_policy,
            Presence::Value("Failed".into())
        );
        let rules = &j.spec.pod_failure_policy.value().unwrap().rules;
        assert_eq!(
            rules[0].on_pod_conditions[0].status.as_deref(),
            Some("True")
        );
        assert_eq!(
            j.spec.template.spec.restart_policy.as_deref(),
            Some("Always")
        );
    }
}
