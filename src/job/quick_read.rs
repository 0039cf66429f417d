//! A Job read by `job::scan` into the `JobObject` the serde reader (`job::read`) builds from
//! the same text, or `None` when anything in it is not the common case (see `job::scan`): the
//! serde reader then reads it and decides. Field by field this is `job::model`'s and
//! `job::read`'s serde shapes, written out: `Option` fields take `null` as unset, a struct that
//! is not `Option` refuses `null`, a field given twice is refused, unknown fields are skipped.

use super::annotations::{AnnotationValue, Annotations};
use super::interned::InternedStr;
use super::model::{
    JobObject, JobSpec, NamedContainer, ObjectMeta, OnExitCodes, OnPodConditionsPattern,
    PodFailurePolicy, PodFailurePolicyRule, PodSpec, PodTemplateSpec, Presence, SuccessPolicy,
    SuccessPolicyRule, TemplateMeta,
};
use super::read::{JobCondition, JobDoc, JobStatus};
use super::scan::{Scan, Seen};
use super::strict::may_hold_surrogate_escape;

/// A Job object (`Some(Some(job))`) or `null` (`Some(None)`), as `job::read::JobSeed` reads it.
pub(crate) fn job(scan: &mut Scan<'_>) -> Option<Option<JobObject>> {
    scan.opt(|scan| {
        let mut seen = Seen::default();
        let mut doc = JobDoc {
            kind: None,
            metadata: ObjectMeta::default(),
            spec: JobSpec::default(),
            status: JobStatus::default(),
        };
        scan.object(|scan, key| {
            match key {
                "kind" => {
                    seen.first(0)?;
                    doc.kind = scan.opt(interned)?;
                    // `check_kind`: another kind is refused.
                    if doc.kind.as_ref().is_some_and(|k| k != "Job") {
                        return None;
                    }
                }
                "metadata" => {
                    seen.first(1)?;
                    doc.metadata = object_meta(scan)?;
                }
                "spec" => {
                    seen.first(2)?;
                    doc.spec = job_spec(scan)?;
                }
                "status" => {
                    seen.first(3)?;
                    doc.status = job_status(scan)?;
                }
                _ => scan.skip()?,
            }
            Some(())
        })?;
        Some(JobObject::from_job(doc))
    })
}

/// A string without escapes, owned.
pub(crate) fn string(scan: &mut Scan<'_>) -> Option<String> {
    scan.plain_str().map(str::to_owned)
}

fn interned(scan: &mut Scan<'_>) -> Option<InternedStr> {
    scan.plain_str().map(InternedStr::from_str)
}

/// `model::presence`: absent (the default), `null`, or a value.
fn presence<'a, T>(
    scan: &mut Scan<'a>,
    read: impl FnOnce(&mut Scan<'a>) -> Option<T>,
) -> Option<Presence<T>> {
    Some(match scan.opt(read)? {
        Some(value) => Presence::Value(value),
        None => Presence::Null,
    })
}

/// A list field: `None` for `null` (Go's nil slice).
fn list<'a, T>(
    scan: &mut Scan<'a>,
    mut read: impl FnMut(&mut Scan<'a>) -> Option<T>,
) -> Option<Option<Vec<T>>> {
    scan.opt(|scan| {
        let mut items = Vec::new();
        scan.array(|scan| {
            items.push(read(scan)?);
            Some(())
        })?;
        Some(items)
    })
}

fn object_meta(scan: &mut Scan<'_>) -> Option<ObjectMeta> {
    let mut seen = Seen::default();
    let mut meta = ObjectMeta::default();
    scan.object(|scan, key| {
        match key {
            "name" => {
                seen.first(0)?;
                meta.name = scan.opt(string)?;
            }
            "generateName" => {
                seen.first(1)?;
                meta.generate_name = scan.opt(string)?;
            }
            "namespace" => {
                seen.first(2)?;
                meta.namespace = scan.opt(string)?;
            }
            "deletionTimestamp" => {
                seen.first(3)?;
                meta.deletion_timestamp = scan.opt(string)?;
            }
            "annotations" => {
                seen.first(4)?;
                meta.annotations = presence(scan, annotations)?;
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some(meta)
}

/// `job::annotations`: values kept as their literals; a later key wins, as in a `BTreeMap`.
fn annotations(scan: &mut Scan<'_>) -> Option<Annotations> {
    let mut map = Annotations::new();
    scan.object(|scan, key| {
        let literal = scan.str_literal()?;
        // A surrogate escape is checked by decoding it; that is serde's to do.
        if may_hold_surrogate_escape(literal.as_bytes()) {
            return None;
        }
        map.insert(
            key.to_owned(),
            AnnotationValue::from_checked_literal(literal),
        );
        Some(())
    })?;
    Some(map)
}

fn job_spec(scan: &mut Scan<'_>) -> Option<JobSpec> {
    let mut seen = Seen::default();
    let mut spec = JobSpec::default();
    scan.object(|scan, key| {
        match key {
            "parallelism" => {
                seen.first(0)?;
                spec.parallelism = scan.opt(Scan::i32)?;
            }
            "completions" => {
                seen.first(1)?;
                spec.completions = scan.opt(Scan::i32)?;
            }
            "activeDeadlineSeconds" => {
                seen.first(2)?;
                spec.active_deadline_seconds = scan.opt(Scan::int)?;
            }
            "backoffLimit" => {
                seen.first(3)?;
                spec.backoff_limit = scan.opt(Scan::i32)?;
            }
            "ttlSecondsAfterFinished" => {
                seen.first(4)?;
                spec.ttl_seconds_after_finished = scan.opt(Scan::i32)?;
            }
            "backoffLimitPerIndex" => {
                seen.first(5)?;
                spec.backoff_limit_per_index = scan.opt(Scan::i32)?;
            }
            "maxFailedIndexes" => {
                seen.first(6)?;
                spec.max_failed_indexes = scan.opt(Scan::i32)?;
            }
            "completionMode" => {
                seen.first(7)?;
                spec.completion_mode = scan.opt(interned)?;
            }
            "managedBy" => {
                seen.first(8)?;
                spec.managed_by = scan.opt(interned)?;
            }
            "suspend" => {
                seen.first(9)?;
                spec.suspend = scan.opt(Scan::bool)?;
            }
            "podFailurePolicy" => {
                seen.first(10)?;
                spec.pod_failure_policy = presence(scan, pod_failure_policy)?;
            }
            "podReplacementPolicy" => {
                seen.first(11)?;
                spec.pod_replacement_policy = presence(scan, interned)?;
            }
            "successPolicy" => {
                seen.first(12)?;
                spec.success_policy = scan.opt(success_policy)?;
            }
            "template" => {
                seen.first(13)?;
                spec.template = pod_template(scan)?;
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some(spec)
}

fn pod_failure_policy(scan: &mut Scan<'_>) -> Option<PodFailurePolicy> {
    let mut seen = Seen::default();
    let mut rules = None;
    scan.object(|scan, key| match key {
        "rules" => {
            seen.first(0)?;
            rules = list(scan, pod_failure_policy_rule)?;
            Some(())
        }
        _ => scan.skip(),
    })?;
    Some(PodFailurePolicy {
        rules_null: rules.is_none(),
        rules: rules.unwrap_or_default(),
    })
}

fn pod_failure_policy_rule(scan: &mut Scan<'_>) -> Option<PodFailurePolicyRule> {
    let mut seen = Seen::default();
    let mut rule = PodFailurePolicyRule::default();
    let mut conditions = None;
    scan.object(|scan, key| {
        match key {
            "action" => {
                seen.first(0)?;
                rule.action = scan.opt(interned)?;
            }
            "onExitCodes" => {
                seen.first(1)?;
                rule.on_exit_codes = scan.opt(on_exit_codes)?;
            }
            "onPodConditions" => {
                seen.first(2)?;
                conditions = list(scan, on_pod_conditions_pattern)?;
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    rule.on_pod_conditions_null = conditions.is_none();
    rule.on_pod_conditions = conditions.unwrap_or_default();
    Some(rule)
}

fn on_exit_codes(scan: &mut Scan<'_>) -> Option<OnExitCodes> {
    let mut seen = Seen::default();
    let mut codes = OnExitCodes::default();
    let mut values = None;
    scan.object(|scan, key| {
        match key {
            "containerName" => {
                seen.first(0)?;
                codes.container_name = scan.opt(string)?;
            }
            "operator" => {
                seen.first(1)?;
                codes.operator = scan.opt(interned)?;
            }
            "values" => {
                seen.first(2)?;
                values = list(scan, Scan::i32)?;
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    codes.values_null = values.is_none();
    codes.values = values.unwrap_or_default();
    Some(codes)
}

/// A `type` and a `status`: `onPodConditions` patterns and the Job's own conditions.
fn type_and_status(scan: &mut Scan<'_>) -> Option<(Option<InternedStr>, Option<InternedStr>)> {
    let mut seen = Seen::default();
    let (mut type_, mut status) = (None, None);
    scan.object(|scan, key| {
        match key {
            "type" => {
                seen.first(0)?;
                type_ = scan.opt(interned)?;
            }
            "status" => {
                seen.first(1)?;
                status = scan.opt(interned)?;
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some((type_, status))
}

fn on_pod_conditions_pattern(scan: &mut Scan<'_>) -> Option<OnPodConditionsPattern> {
    let (type_, status) = type_and_status(scan)?;
    Some(OnPodConditionsPattern { type_, status })
}

fn success_policy(scan: &mut Scan<'_>) -> Option<SuccessPolicy> {
    let mut seen = Seen::default();
    let mut rules = None;
    scan.object(|scan, key| match key {
        "rules" => {
            seen.first(0)?;
            rules = list(scan, success_policy_rule)?;
            Some(())
        }
        _ => scan.skip(),
    })?;
    Some(SuccessPolicy {
        rules_null: rules.is_none(),
        rules: rules.unwrap_or_default(),
    })
}

fn success_policy_rule(scan: &mut Scan<'_>) -> Option<SuccessPolicyRule> {
    let mut seen = Seen::default();
    let mut rule = SuccessPolicyRule::default();
    scan.object(|scan, key| {
        match key {
            "succeededIndexes" => {
                seen.first(0)?;
                rule.succeeded_indexes = scan.opt(string)?;
            }
            "succeededCount" => {
                seen.first(1)?;
                rule.succeeded_count = scan.opt(Scan::i32)?;
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some(rule)
}

fn pod_template(scan: &mut Scan<'_>) -> Option<PodTemplateSpec> {
    let mut seen = Seen::default();
    let mut template = PodTemplateSpec::default();
    scan.object(|scan, key| {
        match key {
            "metadata" => {
                seen.first(0)?;
                template.metadata = presence(scan, template_meta)?;
            }
            "spec" => {
                seen.first(1)?;
                template.spec = pod_spec(scan)?;
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some(template)
}

fn template_meta(scan: &mut Scan<'_>) -> Option<TemplateMeta> {
    let mut seen = Seen::default();
    let mut meta = TemplateMeta::default();
    scan.object(|scan, key| match key {
        "annotations" => {
            seen.first(0)?;
            meta.annotations = presence(scan, annotations)?;
            Some(())
        }
        _ => scan.skip(),
    })?;
    Some(meta)
}

fn pod_spec(scan: &mut Scan<'_>) -> Option<PodSpec> {
    let mut seen = Seen::default();
    let mut spec = PodSpec::default();
    scan.object(|scan, key| {
        match key {
            "restartPolicy" => {
                seen.first(0)?;
                spec.restart_policy = scan.opt(interned)?;
            }
            // `model::null_as_default`: `null` is an empty list.
            "containers" => {
                seen.first(1)?;
                spec.containers = list(scan, named_container)?.unwrap_or_default();
            }
            "initContainers" => {
                seen.first(2)?;
                spec.init_containers = list(scan, named_container)?.unwrap_or_default();
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some(spec)
}

/// `name` is a `String`, not an `Option`: `null` is refused.
fn named_container(scan: &mut Scan<'_>) -> Option<NamedContainer> {
    let mut seen = Seen::default();
    let mut container = NamedContainer::default();
    scan.object(|scan, key| match key {
        "name" => {
            seen.first(0)?;
            container.name = string(scan)?;
            Some(())
        }
        _ => scan.skip(),
    })?;
    Some(container)
}

fn job_status(scan: &mut Scan<'_>) -> Option<JobStatus> {
    let mut seen = Seen::default();
    let mut status = JobStatus::default();
    scan.object(|scan, key| {
        match key {
            "startTime" => {
                seen.first(0)?;
                status.start_time = scan.opt(string)?;
            }
            "active" => {
                seen.first(1)?;
                status.active = scan.opt(Scan::i32)?;
            }
            "conditions" => {
                seen.first(2)?;
                status.conditions = list(scan, |scan| {
                    let (type_, status) = type_and_status(scan)?;
                    Some(JobCondition { type_, status })
                })?;
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some(status)
}
