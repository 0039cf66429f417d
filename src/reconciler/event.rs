//! events.k8s.io/v1 Event bodies about a pod (pure: time is a parameter).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;

/// `reportingController` of every event jobgate emits.
pub const REPORTING_CONTROLLER: &str = "jobgate.dev/reconciler";
/// events.k8s.io/v1 validation limit of `note`, in bytes.
const NOTE_MAX_BYTES: usize = 1024;
/// events.k8s.io/v1 validation limit of `reportingInstance`.
const INSTANCE_MAX_BYTES: usize = 128;

/// The pod an event is about.
#[derive(Clone, Debug, PartialEq)]
pub struct Regarding {
    pub namespace: String,
    pub name: String,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// What an event says.
#[derive(Clone, Debug, PartialEq)]
pub struct EventText<'a> {
    /// `Normal` or `Warning`.
    pub type_: &'a str,
    pub reason: &'a str,
    pub action: &'a str,
    pub note: &'a str,
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// An events.k8s.io/v1 Event regarding a pod, named like client-go's event recorder does
/// (`<name>.<unix nanoseconds in hex>`).
pub fn pod_event(
    regarding: &Regarding,
    text: &EventText<'_>,
    instance: &str,
    now: Timestamp,
) -> Event {
    let nanos = u128::try_from(now.as_nanosecond()).unwrap_or(0);
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{}.{:x}", regarding.name, nanos)),
            namespace: Some(regarding.namespace.clone()),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(now)),
        type_: Some(text.type_.to_string()),
        reason: Some(text.reason.to_string()),
        action: Some(text.action.to_string()),
        note: Some(truncate(text.note, NOTE_MAX_BYTES)),
        reporting_controller: Some(REPORTING_CONTROLLER.to_string()),
        reporting_instance: Some(truncate(instance, INSTANCE_MAX_BYTES)),
        regarding: Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some(regarding.namespace.clone()),
            name: Some(regarding.name.clone()),
            uid: regarding.uid.clone(),
            resource_version: regarding.resource_version.clone(),
            ..ObjectReference::default()
        }),
        ..Event::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn warning_event_body() {
        let now: Timestamp = "2026-11-21T20:00:00.5Z".parse().expect("ts");
        let event = pod_event(
            &Regarding {
                namespace: "ns".into(),
                name: "pod".into(),
                uid: Some("u-1".into()),
                resource_version: Some("8".into()),
            },
            &EventText {
                type_: "Warning",
                reason: "KueueForcefullyTerminated",
                action: "ForcefulTermination",
                note: "msg",
            },
            "jobgate-0",
            now,
        );
        let body = serde_json::to_value(&event).expect("json");
        let nanos = u128::try_from(now.as_nanosecond()).expect("positive");
        assert_eq!(
            body,
            json!({
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": format!("pod.{nanos:x}"), "namespace": "ns"},
                "eventTime": "2026-11-21T20:00:00.500000Z",
                "type": "Warning",
                "reason": "KueueForcefullyTerminated",
                "action": "ForcefulTermination",
                "note": "msg",
                "reportingController": "jobgate.dev/reconciler",
                "reportingInstance": "jobgate-0",
                "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "pod", "uid": "u-1", "resourceVersion": "8"},
            })
        );
    }

    #[test]
    fn long_note_is_cut_at_a_char_boundary() {
        let note = "é".repeat(600);
        let cut = truncate(&note, NOTE_MAX_BYTES);
        assert_eq!(cut.len(), 1024);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
