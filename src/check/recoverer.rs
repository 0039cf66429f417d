//! Which controller recovers the pods of a Job `check` judged, once one is stuck terminating on
//! an unreachable node: Kueue's failure-recovery controller or jobgate's reconciler. Read from
//! the pod template as jobgate's mutation leaves it, with the reconciler's own reading
//! ([`recovery::recoverer`]), so `check` and `jobgate status` never disagree.

use std::collections::BTreeMap;

use crate::job::config::Config;
use crate::job::finding::{Finding, Source};
use crate::job::wire::model::JobObject;
use crate::kueue::SAFE_TO_FORCEFULLY_DELETE;
use crate::recovery::{self, PodFacts, Recoverer, RecoveryConfig};

/// A note naming the controller that recovers `object`'s pods, when they are opted in; the
/// reconciler reads the keys the rules recognize and runs with `kueue_recovers`.
pub(crate) fn note(object: &JobObject, config: &Config, kueue_recovers: bool) -> Option<Finding> {
    let mut keys: Vec<&str> = config.recognized_recovery_keys();
    let annotation_keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    keys.push(SAFE_TO_FORCEFULLY_DELETE);
    let template = &object.spec.template;
    let annotations: BTreeMap<String, String> = keys
        .iter()
        .filter_map(|k| Some((k.to_string(), template.annotation(k)?.into_owned())))
        .collect();
    let pod = PodFacts {
        annotations,
        ..PodFacts::default()
    };
    let reconciler = RecoveryConfig {
        annotation_keys,
        kueue_recovers,
        ..RecoveryConfig::default()
    };
    let at = |key: &str| {
        object
            .spec_path()
            .child("template")
            .child("metadata")
            .child("annotations")
            .key(key)
            .to_string()
    };
    let (path, text) = match recovery::recoverer(&pod, &reconciler)? {
        Recoverer::Kueue => (
            at(SAFE_TO_FORCEFULLY_DELETE),
            format!(
                "recovered by Kueue: its failure-recovery controller (Kueue 0.15.6+, 0.16.3+, 0.17+, \
                 feature gate FailureRecoveryPolicy) reads {SAFE_TO_FORCEFULLY_DELETE}=\"true\" \
                 and jobgate's reconciler leaves these pods to it (--kueue-recovers)"
            ),
        ),
        Recoverer::Jobgate { key } => (
            at(key),
            format!(
                "recovered by jobgate's reconciler ({key}=\"true\"), with its partition brake, \
                 backoff and limit"
            ),
        ),
    };
    Some(Finding::note(Source::Recovery, Some(path), text))
}
