//! How kube-apiserver prints the internal `batch` values it puts in field errors: the
//! `json.Marshal` rendering of 1.34+ (kubernetes#132314) and the `%#v` rendering of 1.33, both
//! over the internal Go types (`pkg/apis/batch/types.go`: no json tags, so Go field names in
//! declaration order).
//!
//! `%#v` prints a non-nil pointer inside a struct as its address, `(*string)(0xc000123456)`;
//! that cannot be reproduced, and jobgate prints `(*string)(<pointer>)` in its place.

use serde_json::{Value, json};

use super::field::{BadValue, go_json_string, go_quote};
use super::wire::model::{OnExitCodes, PodFailurePolicy, Presence, SuccessPolicy};

/// Stands in for the address `%#v` prints for a non-nil pointer.
const POINTER: &str = "<pointer>";

fn s<T: std::ops::Deref<Target = str>>(v: &Option<T>) -> &str {
    v.as_deref().unwrap_or("")
}

/// A JSON array of already-rendered items; `null` for a nil slice (absent or `null` in JSON).
fn json_list(items: Vec<String>, nil: bool) -> String {
    if nil {
        "null".into()
    } else {
        format!("[{}]", items.join(","))
    }
}

/// `%#v` of a slice: `[]T{a, b}`, `[]T{}`, or `[]T(nil)`.
fn go_list(type_: &str, items: Vec<String>, nil: bool) -> String {
    if nil {
        format!("[]{type_}(nil)")
    } else {
        format!("[]{type_}{{{}}}", items.join(", "))
    }
}

/// `%#v` of a pointer field: `(*T)(nil)` or `(*T)(<pointer>)`.
fn go_pointer<T>(type_: &str, value: Option<T>) -> String {
    format!(
        "(*{type_})({})",
        if value.is_some() { POINTER } else { "nil" }
    )
}

/// `onExitCodes.values` (`[]int32`): `[3,1]` / `[]int32{3, 1}`; a nil slice `null` /
/// `[]int32(nil)`.
pub(crate) fn exit_codes(req: &OnExitCodes) -> BadValue {
    let go_items = req.values.iter().map(i32::to_string).collect();
    BadValue::Composite {
        json: if req.values_null {
            "null".into()
        } else {
            json!(req.values).to_string()
        },
        go: go_list("int32", go_items, req.values_null),
    }
}

/// `*batch.PodFailurePolicy`.
pub(crate) fn pod_failure_policy(policy: &Presence<PodFailurePolicy>) -> BadValue {
    match policy.value() {
        None => BadValue::null(),
        Some(policy) => BadValue::Composite {
            json: pod_failure_policy_json(policy),
            go: pod_failure_policy_go(policy),
        },
    }
}

fn pod_failure_policy_json(policy: &PodFailurePolicy) -> String {
    let rules: Vec<String> = policy
        .rules
        .iter()
        .map(|r| {
            let codes = r.on_exit_codes.as_ref().map_or("null".into(), |c| {
                format!(
                    r#"{{"ContainerName":{},"Operator":{},"Values":{}}}"#,
                    c.container_name
                        .as_deref()
                        .map_or("null".into(), go_json_string),
                    go_json_string(s(&c.operator)),
                    if c.values_null {
                        Value::Null
                    } else {
                        json!(c.values)
                    }
                )
            });
            let patterns: Vec<String> = r
                .on_pod_conditions
                .iter()
                .map(|p| {
                    format!(
                        r#"{{"Type":{},"Status":{}}}"#,
                        go_json_string(s(&p.type_)),
                        go_json_string(s(&p.status))
                    )
                })
                .collect();
            format!(
                r#"{{"Action":{},"OnExitCodes":{codes},"OnPodConditions":{}}}"#,
                go_json_string(s(&r.action)),
                json_list(patterns, r.on_pod_conditions_null)
            )
        })
        .collect();
    format!(r#"{{"Rules":{}}}"#, json_list(rules, policy.rules_null))
}

fn pod_failure_policy_go(policy: &PodFailurePolicy) -> String {
    let rules: Vec<String> = policy
        .rules
        .iter()
        .map(|r| {
            let patterns: Vec<String> = r
                .on_pod_conditions
                .iter()
                .map(|p| {
                    format!(
                        "batch.PodFailurePolicyOnPodConditionsPattern{{Type:{}, Status:{}}}",
                        go_quote(s(&p.type_)),
                        go_quote(s(&p.status))
                    )
                })
                .collect();
            format!(
                "batch.PodFailurePolicyRule{{Action:{}, OnExitCodes:{}, OnPodConditions:{}}}",
                go_quote(s(&r.action)),
                go_pointer(
                    "batch.PodFailurePolicyOnExitCodesRequirement",
                    r.on_exit_codes.as_ref()
                ),
                go_list(
                    "batch.PodFailurePolicyOnPodConditionsPattern",
                    patterns,
                    r.on_pod_conditions_null
                )
            )
        })
        .collect();
    format!(
        "batch.PodFailurePolicy{{Rules:{}}}",
        go_list("batch.PodFailurePolicyRule", rules, policy.rules_null)
    )
}

/// `*batch.SuccessPolicy`.
pub(crate) fn success_policy(policy: Option<&SuccessPolicy>) -> BadValue {
    match policy {
        None => BadValue::null(),
        Some(policy) => BadValue::Composite {
            json: success_policy_json(policy),
            go: success_policy_go(policy),
        },
    }
}

fn success_policy_json(policy: &SuccessPolicy) -> String {
    let rules = policy
        .rules
        .iter()
        .map(|r| {
            format!(
                r#"{{"SucceededIndexes":{},"SucceededCount":{}}}"#,
                r.succeeded_indexes
                    .as_deref()
                    .map_or("null".into(), go_json_string),
                json!(r.succeeded_count)
            )
        })
        .collect();
    format!(r#"{{"Rules":{}}}"#, json_list(rules, policy.rules_null))
}

fn success_policy_go(policy: &SuccessPolicy) -> String {
    let rules = policy
        .rules
        .iter()
        .map(|r| {
            format!(
                "batch.SuccessPolicyRule{{SucceededIndexes:{}, SucceededCount:{}}}",
                go_pointer("string", r.succeeded_indexes.as_ref()),
                go_pointer("int32", r.succeeded_count.as_ref())
            )
        })
        .collect();
    format!(
        "batch.SuccessPolicy{{Rules:{}}}",
        go_list("batch.SuccessPolicyRule", rules, policy.rules_null)
    )
}

/// A `*int32` field.
pub(crate) fn opt_int(v: Option<i32>) -> BadValue {
    v.map_or_else(BadValue::null, BadValue::int)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::field::ValueStyle;
    use crate::job::{JobObject, Kind};

    fn spec(json: &str) -> crate::job::wire::model::JobSpec {
        JobObject::from_json(Kind::Job, json).unwrap().spec
    }

    fn both(v: &BadValue) -> (String, String) {
        (
            v.render(ValueStyle::Json).unwrap(),
            v.render(ValueStyle::GoSyntax).unwrap(),
        )
    }

    #[test]
    fn exit_codes_print_as_json_from_1_34_and_as_go_slices_in_1_33() {
        let s = spec(
            r#"{"spec":{"podFailurePolicy":{"rules":[
                {"action":"FailJob","onExitCodes":{"operator":"In","values":[3,1]}},
                {"action":"FailJob","onExitCodes":{"operator":"In","values":[]}},
                {"action":"FailJob","onExitCodes":{"operator":"In"}}]},
                "template":{"spec":{"containers":[{"name":"c"}]}}}}"#,
        );
        let rules = &s.pod_failure_policy.value().unwrap().rules;
        let codes = |i: usize| exit_codes(rules[i].on_exit_codes.as_ref().unwrap());
        assert_eq!(both(&codes(0)), ("[3,1]".into(), "[]int32{3, 1}".into()));
        assert_eq!(both(&codes(1)), ("[]".into(), "[]int32{}".into()));
        assert_eq!(both(&codes(2)), ("null".into(), "[]int32(nil)".into()));
    }

    #[test]
    fn nil_pointers_print_null_from_1_34_and_the_string_null_in_1_33() {
        assert_eq!(both(&opt_int(None)), ("null".into(), r#""null""#.into()));
        assert_eq!(both(&opt_int(Some(4))), ("4".into(), "4".into()));
        assert_eq!(
            both(&success_policy(None)),
            ("null".into(), r#""null""#.into())
        );
    }

    #[test]
    fn pod_failure_policy_prints_go_field_names_either_way() {
        let s = spec(
            r#"{"spec":{"podFailurePolicy":{"rules":[
                {"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget","status":"True"}]},
                {"action":"FailJob","onExitCodes":{"operator":"In","values":[42]}}]},
                "template":{"spec":{"containers":[{"name":"c"}]}}}}"#,
        );
        let (json, go) = both(&pod_failure_policy(&s.pod_failure_policy));
        assert_eq!(
            json,
            r#"{"Rules":[{"Action":"Ignore","OnExitCodes":null,"OnPodConditions":[{"Type":"DisruptionTarget","Status":"True"}]},{"Action":"FailJob","OnExitCodes":{"ContainerName":null,"Operator":"In","Values":[42]},"OnPodConditions":null}]}"#
        );
        assert_eq!(
            go,
            r#"batch.PodFailurePolicy{Rules:[]batch.PodFailurePolicyRule{batch.PodFailurePolicyRule{Action:"Ignore", OnExitCodes:(*batch.PodFailurePolicyOnExitCodesRequirement)(nil), OnPodConditions:[]batch.PodFailurePolicyOnPodConditionsPattern{batch.PodFailurePolicyOnPodConditionsPattern{Type:"DisruptionTarget", Status:"True"}}}, batch.PodFailurePolicyRule{Action:"FailJob", OnExitCodes:(*batch.PodFailurePolicyOnExitCodesRequirement)(<pointer>), OnPodConditions:[]batch.PodFailurePolicyOnPodConditionsPattern(nil)}}}"#
        );
    }

    #[test]
    fn success_policy_prints_pointers_as_placeholders_in_1_33() {
        let s = spec(
            r#"{"spec":{"successPolicy":{"rules":[{"succeededIndexes":"0-2"},{"succeededCount":1}]},
                "template":{"spec":{"containers":[{"name":"c"}]}}}}"#,
        );
        let (json, go) = both(&success_policy(s.success_policy.as_ref()));
        assert_eq!(
            json,
            r#"{"Rules":[{"SucceededIndexes":"0-2","SucceededCount":null},{"SucceededIndexes":null,"SucceededCount":1}]}"#
        );
        assert_eq!(
            go,
            "batch.SuccessPolicy{Rules:[]batch.SuccessPolicyRule{batch.SuccessPolicyRule{SucceededIndexes:(*string)(<pointer>), SucceededCount:(*int32)(nil)}, batch.SuccessPolicyRule{SucceededIndexes:(*string)(nil), SucceededCount:(*int32)(<pointer>)}}}"
        );
    }
}
