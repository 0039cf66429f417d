//! The Workload API's delegation annotations on a Job and on a CronJob's job template, from 1.38
//! (`validateDelegationAnnotations`, pkg/apis/batch/validation/validation.go v1.38.0-beta.0,
//! called by `ValidateJobCreate`, `ValidateJobUpdate` and `ValidateJobTemplateSpec`): once
//! either `scheduling.k8s.io/workload-name` or `scheduling.k8s.io/group-template-name` is
//! present, both must be non-empty; an UPDATE that leaves both as they were passes. No gate
//! guards it. (The rule that pairs them with `spec.scheduling` is not mirrored, as nothing of
//! `spec.scheduling` is: docs/src/versions.md.)

use super::super::field::{FieldError, FieldPath};
use super::super::version::{Cluster, KubernetesVersion};
use super::super::wire::model::{JobObject, Kind, ObjectMeta};

/// `apischeduling.WorkloadNameAnnotation`, `apischeduling.GroupTemplateNameAnnotation`
/// (pkg/apis/scheduling/annotation_key_constants.go), in upstream's order.
const DELEGATION_ANNOTATIONS: [&str; 2] = [
    "scheduling.k8s.io/workload-name",
    "scheduling.k8s.io/group-template-name",
];

/// The errors of `object` (and, on UPDATE, `old`), in upstream's order.
pub(super) fn errors(
    object: &JobObject,
    old: Option<&JobObject>,
    cluster: &Cluster,
) -> Vec<FieldError> {
    if cluster.version() < KubernetesVersion::V1_38 {
        return Vec::new();
    }
    let (meta, old_meta, path) = match object.kind {
        Kind::Job => (
            Some(&object.metadata),
            old.map(|o| &o.metadata),
            object.metadata_path(),
        ),
        Kind::CronJob => (
            object.job_template_metadata.as_ref(),
            old.and_then(|o| o.job_template_metadata.as_ref()),
            FieldPath::new("spec.jobTemplate.metadata"),
        ),
    };
    let Some(meta) = meta else {
        return Vec::new();
    };
    let present = |m: &ObjectMeta, key: &str| m.annotation(key).is_some();
    if !DELEGATION_ANNOTATIONS.iter().any(|k| present(meta, k)) {
        return Vec::new();
    }
    let unchanged = old_meta.is_some_and(|old| {
        DELEGATION_ANNOTATIONS
            .iter()
            .all(|k| meta.annotation(k) == old.annotation(k))
    });
    if unchanged {
        return Vec::new();
    }
    let annotations = path.child("annotations");
    DELEGATION_ANNOTATIONS
        .iter()
        .filter(|k| meta.annotation(k).is_none_or(|v| v.is_empty()))
        .map(|k| {
            FieldError::required(
                annotations.key(k),
                format!(
                    "must be set to a non-empty value when {} or {} is set",
                    DELEGATION_ANNOTATIONS[0], DELEGATION_ANNOTATIONS[1]
                ),
            )
        })
        .collect()
}
