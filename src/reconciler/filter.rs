//! What the pod watch keeps: only eligible pods (opted in and terminating), stripped to the
//! metadata the reconciler reads. Pure: events in, store events and triggers out.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::core::ObjectMeta;
use kube::runtime::watcher::Event;
use serde::{Deserialize, Deserializer};

use crate::recovery::{self, PodFacts};

/// A pod as the metadata-only watch delivers it (`as=PartialObjectMetadata`), decoded without
/// what the reconciler never reads: managedFields (often most of a pod's metadata: the
/// controller's, the scheduler's and the kubelet's entries), labels, finalizers. A list page of
/// 500 pods is then its bytes and little more.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PodMetadata {
    /// The metadata, without what [`metadata_read`] skips.
    #[serde(deserialize_with = "metadata_read")]
    pub metadata: ObjectMeta,
}

super::resource_view::resource_view!(PodMetadata, Pod, metadata_api);

/// The metadata fields [`strip`] keeps, and annotations (which it then filters by key).
fn metadata_read<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Read {
        name: Option<String>,
        namespace: Option<String>,
        uid: Option<String>,
        resource_version: Option<String>,
        deletion_timestamp: Option<Time>,
        deletion_grace_period_seconds: Option<i64>,
        owner_references: Option<Vec<OwnerReference>>,
        annotations: Option<BTreeMap<String, String>>,
    }
    let r = Read::deserialize(d)?;
    Ok(ObjectMeta {
        name: r.name,
        namespace: r.namespace,
        uid: r.uid,
        resource_version: r.resource_version,
        deletion_timestamp: r.deletion_timestamp,
        deletion_grace_period_seconds: r.deletion_grace_period_seconds,
        owner_references: r.owner_references,
        annotations: r.annotations,
        ..ObjectMeta::default()
    })
}

/// Namespace and name of a pod.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodKey {
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl PodKey {
    pub(crate) fn new(namespace: &str, name: &str) -> PodKey {
        PodKey {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    pub(crate) fn of(meta: &ObjectMeta) -> PodKey {
        PodKey {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for PodKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The decision's view of a pod's metadata (annotations and deletion timestamp are all
/// eligibility needs).
pub(crate) fn meta_facts(meta: &ObjectMeta) -> PodFacts {
    PodFacts {
        annotations: meta.annotations.clone().unwrap_or_default(),
        deletion_timestamp: meta.deletion_timestamp.as_ref().map(|t| t.0),
        deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
        ..PodFacts::default()
    }
}

/// Keeps what the reconciler reads: identity, deletion fields, owners (recovery episodes group by Job),
/// and only the configured annotation keys (the decoding already dropped the rest).
pub(crate) fn strip(pod: &PodMetadata, config: &recovery::RecoveryConfig) -> PodMetadata {
    let m = &pod.metadata;
    let annotations: BTreeMap<String, String> = m
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| config.annotation_keys.iter().any(|c| c == *k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    PodMetadata {
        metadata: ObjectMeta {
            name: m.name.clone(),
            namespace: m.namespace.clone(),
            uid: m.uid.clone(),
            resource_version: m.resource_version.clone(),
            deletion_timestamp: m.deletion_timestamp.clone(),
            deletion_grace_period_seconds: m.deletion_grace_period_seconds,
            owner_references: m.owner_references.clone(),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
    }
}

/// One pod watch event after filtering.
#[derive(Debug, Default)]
pub(crate) struct Filtered {
    /// What to apply to the store of eligible pods.
    pub(crate) store_event: Option<Event<PodMetadata>>,
    /// A pod to reconcile.
    pub(crate) trigger: Option<PodKey>,
    /// A pod the reconciler may forget (gone, or no longer eligible).
    pub(crate) forget: Option<PodKey>,
}

/// Filters one pod watch event: eligible pods enter the store (stripped) and are triggered;
/// a pod that stops being eligible (its opt-in annotation removed) leaves the store as if
/// deleted; ineligible pods of the initial list are dropped on the floor.
pub(crate) fn filter_pod_event(
    event: Event<PodMetadata>,
    config: &recovery::RecoveryConfig,
) -> Filtered {
    let eligible = |p: &PodMetadata| recovery::is_eligible(&meta_facts(&p.metadata), config);
    match event {
        Event::Init => Filtered {
            store_event: Some(Event::Init),
            ..Filtered::default()
        },
        Event::InitDone => Filtered {
            store_event: Some(Event::InitDone),
            ..Filtered::default()
        },
        Event::InitApply(p) if eligible(&p) => Filtered {
            trigger: Some(PodKey::of(&p.metadata)),
            store_event: Some(Event::InitApply(strip(&p, config))),
            forget: None,
        },
        Event::InitApply(_) => Filtered::default(),
        Event::Apply(p) if eligible(&p) => Filtered {
            trigger: Some(PodKey::of(&p.metadata)),
            store_event: Some(Event::Apply(strip(&p, config))),
            forget: None,
        },
        Event::Apply(p) | Event::Delete(p) => Filtered {
            forget: Some(PodKey::of(&p.metadata)),
            store_event: Some(Event::Delete(strip(&p, config))),
            trigger: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(annotations: serde_json::Value, deleting: bool) -> PodMetadata {
        let mut meta = json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "5",
                "labels": {"app": "x"},
                "annotations": annotations,
                "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1"}],
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "ju"}]
            }
        });
        if deleting {
            meta["metadata"]["deletionTimestamp"] = json!("2026-11-21T19:00:00Z");
            meta["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        }
        serde_json::from_value(meta).expect("pod meta")
    }

    const KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";

    #[test]
    fn eligible_pods_enter_the_store_stripped() {
        let config = recovery::RecoveryConfig::default();
        let p = pod(json!({KEY: "true", "other": "big value"}), true);
        let f = filter_pod_event(Event::Apply(p), &config);
        assert_eq!(f.trigger, Some(PodKey::new("ns", "p")));
        let Some(Event::Apply(stored)) = f.store_event else {
            panic!("expected Apply");
        };
        let m = &stored.metadata;
        assert_eq!(m.managed_fields, None);
        assert_eq!(m.labels, None);
        assert_eq!(
            m.annotations,
            Some([(KEY.to_string(), "true".to_string())].into())
        );
        assert_eq!(m.uid.as_deref(), Some("u"));
        assert_eq!(m.resource_version.as_deref(), Some("5"));
        assert_eq!(m.deletion_grace_period_seconds, Some(30));
        assert!(m.deletion_timestamp.is_some());
        assert_eq!(m.owner_references.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn ineligible_pods_never_enter_the_store() {
        let config = recovery::RecoveryConfig::default();
        for p in [
            pod(json!({KEY: "true"}), false),
            pod(json!({KEY: "True"}), true),
            pod(json!({}), true),
        ] {
            let f = filter_pod_event(Event::InitApply(p.clone()), &config);
            assert!(f.store_event.is_none() && f.trigger.is_none() && f.forget.is_none());
            // An update to an ineligible state removes it (if it was there) and forgets it.
            let f = filter_pod_event(Event::Apply(p), &config);
            assert!(matches!(f.store_event, Some(Event::Delete(_))));
            assert_eq!(f.forget, Some(PodKey::new("ns", "p")));
            assert!(f.trigger.is_none());
        }
    }

    // kueue TestUpdateEventFilter, adapted. Kueue enqueues an update only when the pod becomes
    // eligible (`!eligible(old) && eligible(new)`); the watch here sees only the new object, so
    // every update of an eligible pod is a trigger. "pod is annotated and was marked for
    // deletion": triggered. "updated object is not annotated": not triggered, forgotten. "pod was
    // already deleted": Kueue skips it, jobgate decides again (idempotent), which also notices a
    // deletionTimestamp that a second, shorter delete moved earlier.
    #[test]
    fn kueue_update_event_filter_cases() {
        let config = recovery::RecoveryConfig::default();
        let marked = pod(json!({KEY: "true"}), true);
        let f = filter_pod_event(Event::Apply(marked.clone()), &config);
        assert_eq!(f.trigger, Some(PodKey::new("ns", "p")));
        assert!(matches!(f.store_event, Some(Event::Apply(_))));

        let not_annotated = pod(json!({KEY: "false"}), true);
        let f = filter_pod_event(Event::Apply(not_annotated), &config);
        assert_eq!(f.trigger, None);
        assert_eq!(f.forget, Some(PodKey::new("ns", "p")));

        let mut shortened = marked;
        shortened.metadata.resource_version = Some("6".into());
        shortened.metadata.deletion_grace_period_seconds = Some(0);
        let f = filter_pod_event(Event::Apply(shortened), &config);
        assert_eq!(f.trigger, Some(PodKey::new("ns", "p")));
        assert_eq!(f.forget, None);
    }

    #[test]
    fn deletes_forget_the_pod() {
        let config = recovery::RecoveryConfig::default();
        let f = filter_pod_event(Event::Delete(pod(json!({KEY: "true"}), true)), &config);
        assert!(matches!(f.store_event, Some(Event::Delete(_))));
        assert_eq!(f.forget, Some(PodKey::new("ns", "p")));
    }
}
