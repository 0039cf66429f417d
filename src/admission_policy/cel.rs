//! CEL text: literals for values known when the policies are rendered (annotation keys), and the
//! expressions both kinds of policy share.
//!
//! A string literal is written as Go's `%q` writes it (`strconv.Quote`): every escape it uses
//! (`\"`, `\\`, `\n`, `\xHH`, `\uHHHH`, `\UHHHHHHHH`, ...) is one CEL's string literals read
//! (cel-spec `langdef.md`, "String and Bytes Values"), and Helm's `quote` writes the same, so the
//! chart's policies are byte for byte `jobgate render`'s.

use crate::job::field::go_quote;

/// A CEL string literal holding `s`.
pub(crate) fn string(s: &str) -> String {
    go_quote(s)
}

/// A CEL list literal of strings: `["a", "b"]`.
pub(crate) fn string_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<String> = items.into_iter().map(string).collect();
    format!("[{}]", items.join(", "))
}

/// A CEL map literal giving each key the string `"true"`: `{"a": "true"}`.
pub(crate) fn true_map<'a>(keys: impl IntoIterator<Item = &'a str>) -> String {
    let entries: Vec<String> = keys
        .into_iter()
        .map(|k| format!("{}: \"true\"", string(k)))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

/// `{target}.?{field}`, a list, as a list: `[]` when it is absent, `null` or empty. kube-apiserver
/// hands admission a list field without `omitempty` as `null` when it has no items
/// (`podFailurePolicy.rules`, a pod's `containers`), and `.orValue([])` alone keeps that `null`.
pub(crate) fn list(target: &str, field: &str) -> String {
    format!("optional.ofNonZeroValue({target}.?{field}.orValue([])).orValue([])")
}

/// `request.kind.kind`, not `object.kind`: the AdmissionRequest always names the object's kind,
/// while a typed object's `apiVersion` and `kind` may be empty when CEL reads it.
pub(crate) const CRON_JOB: &str = "request.kind.kind == 'CronJob'";

/// The Job spec under review: a Job's own, a CronJob's job template's (which the CronJob
/// controller copies into every Job it creates); `cron_job` says which.
pub(crate) fn spec(cron_job: &str) -> String {
    format!(
        "{cron_job} ? object.spec.?jobTemplate.?spec.orValue({{}}) : object.?spec.orValue({{}})"
    )
}

/// The optional value of the annotation `key` where it opts a Job in: the Job's own, a CronJob's
/// job template's (the CronJob's own is not copied to its Jobs); `cron_job` says which.
pub(crate) fn opt_in(cron_job: &str, key: &str) -> String {
    let key = string(key);
    format!(
        "{cron_job} ? object.spec.?jobTemplate.?metadata.?annotations[?{key}] \
         : object.metadata.?annotations[?{key}]"
    )
}

/// The object is not being deleted: an object being deleted starts no pods, and the webhooks
/// are not called for it either (their `matchConditions`).
pub(crate) const NOT_BEING_DELETED: &str = "!has(object.metadata.deletionTimestamp)";

/// KEP-3939's default of `podReplacementPolicy` for the spec `spec` (a CEL expression): `Failed`
/// with a `podFailurePolicy`, else `TerminatingOrFailed`; what the Job runs with when the field
/// is unset.
pub(crate) fn replacement_policy(spec: &str) -> String {
    format!(
        "{spec}.?podReplacementPolicy.orValue({spec}.?podFailurePolicy.hasValue() ? 'Failed' : 'TerminatingOrFailed')"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_what_go_quote_escapes() {
        assert_eq!(string("a/b"), r#""a/b""#);
        assert_eq!(string("say \"x\"\\"), r#""say \"x\"\\""#);
        assert_eq!(string_list(["a", "b"]), r#"["a", "b"]"#);
        assert_eq!(string_list([]), "[]");
        assert_eq!(true_map(["k/1", "k2"]), r#"{"k/1": "true", "k2": "true"}"#);
        assert_eq!(true_map([]), "{}");
    }
}
