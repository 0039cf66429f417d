//! The one builder of events.k8s.io/v1 Event bodies (pure: time is a parameter), for the pod
//! events and the Job events alike, within the events.k8s.io/v1 validation limits.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;

/// `reportingController` of every event jobgate's reconciler posts.
pub(crate) const REPORTING_CONTROLLER: &str = "jobgate.dev/reconciler";
/// events.k8s.io/v1 validation limit of `note`, in bytes
/// (`pkg/apis/events/validation`: `NoteLengthLimit = 1024`).
pub(crate) const NOTE_MAX_BYTES: usize = 1024;
/// events.k8s.io/v1 validation limit of `reportingInstance`, in bytes
/// (`ReportingInstanceLengthLimit = 128`).
pub(crate) const INSTANCE_MAX_BYTES: usize = 128;

/// What an event says.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EventText<'a> {
    /// `Normal` or `Warning`.
    pub(crate) type_: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) action: &'a str,
    pub(crate) note: &'a str,
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

/// The reference to a pod an event is about (with the resourceVersion the event describes).
pub(crate) fn pod_reference(
    namespace: &str,
    name: &str,
    uid: Option<String>,
    resource_version: Option<String>,
) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace.to_string()),
        name: Some(name.to_string()),
        uid,
        resource_version,
        ..ObjectReference::default()
    }
}

/// The nanoseconds an event's name adds for its reason: FNV-1a, folded to a byte.
fn name_offset(reason: &str) -> u8 {
    reason
        .bytes()
        .fold(0x811c_9dc5_u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        })
        .to_le_bytes()
        .iter()
        .fold(0, |a, b| a ^ b)
}

/// An events.k8s.io/v1 Event regarding `regarding`, named like client-go's event recorder does
/// (`<name>.<unix nanoseconds in hex>`), in the object's namespace. client-go reads the clock per
/// event; a pass here reads it once, so the nanoseconds are offset by the reason (at most 255 ns):
/// the events of one pass about one pod (recorded, then held by finalizers) never share a name. `note` is cut to 1 KiB and
/// `instance` (`reportingInstance`) to 128 bytes, at a character boundary, so a long identity or
/// a long list of pods never makes the apiserver refuse the event.
pub(crate) fn build(
    regarding: &ObjectReference,
    text: &EventText<'_>,
    instance: &str,
    now: Timestamp,
) -> Event {
    let nanos = u128::try_from(now.as_nanosecond())
        .unwrap_or(0)
        .saturating_add(u128::from(name_offset(text.reason)));
    let name = regarding.name.as_deref().unwrap_or("object");
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{name}.{nanos:x}")),
            namespace: regarding.namespace.clone(),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(now)),
        type_: Some(text.type_.to_string()),
        reason: Some(text.reason.to_string()),
        action: Some(text.action.to_string()),
        note: Some(truncate(text.note, NOTE_MAX_BYTES)),
        reporting_controller: Some(REPORTING_CONTROLLER.to_string()),
        reporting_instance: Some(truncate(instance, INSTANCE_MAX_BYTES)),
        regarding: Some(regarding.clone()),
        ..Event::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(note: &str) -> EventText<'_> {
        EventText {
            type_: "Warning",
            reason: "KueueForcefullyTerminated",
            action: "ForcefulTermination",
            note,
        }
    }

    #[test]
    fn warning_event_body() {
        let now: Timestamp = "2026-11-21T20:00:00.5Z".parse().expect("ts");
        let event = build(
            &pod_reference("ns", "pod", Some("u-1".into()), Some("8".into())),
            &text("msg"),
            "jobgate-0",
            now,
        );
        let body = serde_json::to_value(&event).expect("json");
        let nanos = u128::try_from(now.as_nanosecond()).expect("positive")
            + u128::from(name_offset("KueueForcefullyTerminated"));
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

    /// One pass reads the clock once: the events it may post about one pod get distinct names.
    #[test]
    fn the_reasons_of_one_pass_name_events_apart() {
        let reasons = [
            crate::kueue::REASON_FORCEFULLY_TERMINATED,
            crate::reconciler::reconcile::HELD_REASON,
            crate::reconciler::reconcile::FINALIZERS_REASON,
            crate::recovery::DRY_RUN_REASON,
        ];
        let offsets: std::collections::BTreeSet<u8> =
            reasons.iter().map(|r| name_offset(r)).collect();
        assert_eq!(offsets.len(), reasons.len(), "{reasons:?}");
    }

    #[test]
    fn long_note_is_cut_at_a_char_boundary() {
        let note = "é".repeat(600);
        let cut = truncate(&note, NOTE_MAX_BYTES);
        assert_eq!(cut.len(), 1024);
        assert!(cut.chars().all(|c| c == 'é'));
    }

    /// The two builders used to disagree: only pod events were cut. A Job event with a
    /// 200-byte identity and a 2 KiB note is within the limits too.
    #[test]
    fn job_events_are_cut_to_the_same_limits() {
        let job = ObjectReference {
            api_version: Some("batch/v1".into()),
            kind: Some("Job".into()),
            name: Some("train".into()),
            namespace: Some("team-a".into()),
            ..ObjectReference::default()
        };
        let identity = "x".repeat(200);
        let note = "n".repeat(2048);
        let event = build(
            &job,
            &text(&note),
            &identity,
            "2026-11-21T20:00:00Z".parse().expect("ts"),
        );
        assert_eq!(event.reporting_instance.map(|i| i.len()), Some(128));
        assert_eq!(event.note.map(|n| n.len()), Some(1024));
        assert_eq!(event.metadata.namespace.as_deref(), Some("team-a"));
    }
}
