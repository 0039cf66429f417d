//! `/validate`: kube-apiserver's Job validation for the fields jobgate cares about, as an exact
//! twin of kubernetes `pkg/apis/batch/validation/validation.go` for the release and feature
//! gates in `Config::cluster` (1.33-1.38, `version.rs`), followed by jobgate's own policies
//! (`policy.rs`).
//!
//! The order of errors is upstream's: `validateJobSpec` (counts, `managedBy`, completion mode,
//! pod failure policy rule by rule, success policy, pod replacement policy, restart policy), then
//! on UPDATE of a Job `ValidateJobSpecUpdate`'s immutability checks. Paths of a CronJob are
//! prefixed `spec.jobTemplate.`; a CronJob's job template has no immutable fields
//! (`ValidateCronJobUpdate`).
//!
//! The object is validated as received: kube-apiserver defaults before it validates, and so do
//! webhooks' objects; `jobgate check` calls `defaults::apply_apiserver_defaults` first.

use super::template::Compare;

use super::field::{BadValue, FieldError};
use super::field::{FieldPath, MAX_ERRORS};
use super::go_values::{self, opt_int};
use super::review::Review;
use super::version::{Cluster, KubernetesVersion, OldJobState, TemplateUpdateOptions};
use super::wire::envelope::Operation;
use super::wire::interned::InternedStr;
use super::wire::model::Kind;
use super::wire::model::{
    JobObject, JobSpec, OnExitCodes, OnPodConditionsPattern, PodFailurePolicy,
    PodFailurePolicyRule, Presence, SuccessPolicy, SuccessPolicyRule,
};
use crate::names::{NameMessages, is_qualified_name};

mod declarative;
mod delegation;

/// `maxParallelismForIndexedJob`, `maxFailedIndexesForIndexedJob`, `completionsSoftLimit`.
const MAX_PARALLELISM_FOR_INDEXED_JOB: i32 = 100_000;
const MAX_FAILED_INDEXES_FOR_INDEXED_JOB: i32 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i32 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;
const MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;
pub(crate) const MAX_POD_FAILURE_POLICY_RULES: usize = 20;
pub(crate) const MAX_ON_EXIT_CODES_VALUES: usize = 255;
pub(crate) const MAX_ON_POD_CONDITIONS_PATTERNS: usize = 20;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 64 * 1024;
const MAX_SUCCESS_POLICY_RULES: usize = 20;
/// `maxManagedByLength`.
const MAX_MANAGED_BY_LENGTH: usize = 63;

/// `sets.List(...)`: sorted.
const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS: [&str; 2] = ["In", "NotIn"];
const CONDITION_STATUSES: [&str; 3] = ["False", "True", "Unknown"];
const POD_REPLACEMENT_POLICIES: [&str; 2] = ["Failed", "TerminatingOrFailed"];

const NON_INDEXED: &str = "NonIndexed";
const INDEXED: &str = "Indexed";
const IMMUTABLE: &str = "field is immutable";
const NEGATIVE: &str = "must be greater than or equal to 0";

/// kube-apiserver's errors for `review`: `validateJobSpec`, then on a Job's UPDATE
/// `ValidateJobSpecUpdate`, with values and messages as the cluster's release prints them.
pub(crate) fn apiserver_errors(review: &Review<'_>, cluster: &Cluster) -> Vec<FieldError> {
    let kept;
    let object = match kept_pod_replacement_policy(review, cluster) {
        Some(object) => {
            kept = object;
            &kept
        }
        None => review.object,
    };
    let mut errors = validate_object(object, cluster);
    match (review.operation, review.old_object, review.object.kind) {
        (Operation::Update, Some(old), Kind::Job) => {
            // Up to 1.36 the Job strategy's `ValidateUpdate` ran `ValidateJob` (the spec, then
            // the pod hostname) and then `ValidateJobUpdate`, which runs `validateJobSpec` again:
            // every spec error of an UPDATE is reported twice (pkg/registry/batch/job/
            // strategy.go, 1.33-1.36). 1.37 runs `ValidateJobUpdate` alone, which checks the pod
            // hostname last (`validateNameAllowsCompletions`).
            let hostname = indexed_pod_hostname(object);
            if cluster.version() < KubernetesVersion::V1_37 {
                let spec_errors = errors.clone();
                errors.extend(hostname);
                errors.extend(spec_errors);
                errors.extend(validate_job_update(review.object, old, cluster));
            } else {
                errors.extend(validate_job_update(review.object, old, cluster));
                errors.extend(delegation::errors(object, Some(old), cluster));
                errors.extend(hostname);
            }
        }
        (Operation::Create, _, Kind::Job) => {
            errors.extend(delegation::errors(object, None, cluster));
            errors.extend(indexed_pod_hostname(object));
        }
        (operation, old, Kind::CronJob) => {
            let old = old.filter(|_| operation == Operation::Update);
            errors.extend(delegation::errors(object, old, cluster));
        }
        _ => {}
    }
    declarative::apply(&mut errors, review, cluster);
    let style = cluster.value_style();
    for e in &mut errors {
        e.value = std::mem::replace(&mut e.value, BadValue::Omit).in_style(style);
    }
    errors
}

/// `dropDisabledFields` (pkg/registry/batch/job/strategy.go, 1.33) on UPDATE: with the gate
/// `JobPodReplacementPolicy` off the apiserver drops `spec.podReplacementPolicy` unless the old
/// Job already had one (`podReplacementPolicyInUse`), and then validates it. A review from the
/// apiserver carries the kept field; `jobgate check` dropped it while defaulting each object
/// (`defaults.rs`), which keeps what it dropped: the new Job is validated with it restored.
fn kept_pod_replacement_policy(review: &Review<'_>, cluster: &Cluster) -> Option<JobObject> {
    let old = review.old_object?;
    // A Job's strategy; a CronJob's job template is left as dropped (never stricter).
    if review.operation != Operation::Update
        || review.object.kind != Kind::Job
        || cluster.enabled(super::version::FeatureGate::JobPodReplacementPolicy)
    {
        return None;
    }
    let old_in_use = old.spec.pod_replacement_policy.is_set()
        || old.spec.dropped_pod_replacement_policy.is_some();
    let dropped = review.object.spec.dropped_pod_replacement_policy.as_ref()?;
    if !old_in_use {
        return None;
    }
    let mut object = review.object.clone();
    object.spec.pod_replacement_policy = dropped.clone();
    Some(object)
}

/// kube-apiserver's `validateJobSpec`, restricted to the fields jobgate models, with the
/// messages of `cluster`'s release.
pub(crate) fn validate_object(object: &JobObject, cluster: &Cluster) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_job_spec(&object.spec, &object.spec_path(), cluster, &mut errs);
    errs
}

/// `validateNameAllowsCompletions`, `ValidateJob`'s last check: an Indexed Job's pods take
/// `<name>-<index>` as their hostname, so the one of the largest index must be a DNS-1123 label
/// (pkg/apis/batch/validation/validation.go). A name still to be generated (`generateName`)
/// gets a random suffix the apiserver alone knows: left to it.
fn indexed_pod_hostname(object: &JobObject) -> Option<FieldError> {
    if object.spec.completion_mode.as_deref() != Some(INDEXED) {
        return None;
    }
    let completions = object.spec.completions.filter(|c| *c > 0)?;
    let name = object.metadata.name.as_deref().filter(|n| !n.is_empty())?;
    let hostname = format!("{name}-{}", completions - 1);
    if crate::names::is_dns1123_label(&hostname).is_empty() {
        return None;
    }
    Some(FieldError::invalid(
        object.metadata_path().child("name"),
        BadValue::str(name),
        format!("will not able to create pod with invalid DNS label: {hostname}"),
    ))
}

fn nonnegative(errs: &mut Vec<FieldError>, value: Option<i64>, path: FieldPath) {
    if let Some(v) = value.filter(|v| *v < 0) {
        errs.push(FieldError::invalid(path, BadValue::int(v), NEGATIVE));
    }
}

fn validate_job_spec(
    spec: &JobSpec,
    fld_path: &FieldPath,
    cluster: &Cluster,
    errs: &mut Vec<FieldError>,
) {
    let p = |child: &'static str| fld_path.child(child);
    validate_counts(spec, fld_path, errs);
    if let Some(managed_by) = &spec.managed_by {
        validate_managed_by(managed_by, p("managedBy"), errs);
    }
    validate_completion_mode(spec, fld_path, errs);
    if let Presence::Value(policy) = &spec.pod_failure_policy {
        validate_pod_failure_policy(spec, policy, &p("podFailurePolicy"), cluster, errs);
    }
    if let Some(success) = &spec.success_policy {
        if spec.completion_mode.as_deref() != Some(INDEXED) {
            errs.push(FieldError::invalid(
                p("successPolicy"),
                go_values::success_policy(Some(success)),
                "requires indexed completion mode",
            ));
        } else {
            validate_success_policy(spec, success, &p("successPolicy"), errs);
        }
    }
    validate_pod_replacement_policy(spec, p("podReplacementPolicy"), errs);
    validate_restart_policy(
        spec,
        p("template").child("spec").child("restartPolicy"),
        errs,
    );
}

/// The counts that must not be negative, and `maxFailedIndexes` only with
/// `backoffLimitPerIndex`.
fn validate_counts(spec: &JobSpec, fld_path: &FieldPath, errs: &mut Vec<FieldError>) {
    let p = |child: &'static str| fld_path.child(child);
    nonnegative(errs, spec.parallelism.map(i64::from), p("parallelism"));
    nonnegative(errs, spec.completions.map(i64::from), p("completions"));
    nonnegative(
        errs,
        spec.active_deadline_seconds,
        p("activeDeadlineSeconds"),
    );
    nonnegative(errs, spec.backoff_limit.map(i64::from), p("backoffLimit"));
    nonnegative(
        errs,
        spec.ttl_seconds_after_finished.map(i64::from),
        p("ttlSecondsAfterFinished"),
    );
    nonnegative(
        errs,
        spec.backoff_limit_per_index.map(i64::from),
        p("backoffLimitPerIndex"),
    );
    if let Some(mfi) = spec.max_failed_indexes {
        nonnegative(errs, Some(i64::from(mfi)), p("maxFailedIndexes"));
        if spec.backoff_limit_per_index.is_none() {
            errs.push(FieldError::required(
                p("backoffLimitPerIndex"),
                declarative::HANDWRITTEN_REQUIRED_WITH_MAX_FAILED_INDEXES,
            ));
        }
    }
}

/// `completionMode` is `NonIndexed` or `Indexed`; the Indexed limits, and the per-index fields
/// only in Indexed mode.
fn validate_completion_mode(spec: &JobSpec, fld_path: &FieldPath, errs: &mut Vec<FieldError>) {
    let p = |child: &'static str| fld_path.child(child);
    if let Some(mode) = spec.completion_mode.as_deref() {
        if mode != NON_INDEXED && mode != INDEXED {
            errs.push(FieldError::not_supported(
                p("completionMode"),
                BadValue::named_str(mode),
                &[NON_INDEXED, INDEXED],
            ));
        }
        if mode == INDEXED {
            validate_indexed_limits(spec, fld_path, errs);
        }
    }
    if matches!(spec.completion_mode.as_deref(), None | Some(NON_INDEXED)) {
        if let Some(v) = spec.backoff_limit_per_index {
            errs.push(FieldError::invalid(
                p("backoffLimitPerIndex"),
                BadValue::int(v),
                "requires indexed completion mode",
            ));
        }
        if let Some(v) = spec.max_failed_indexes {
            errs.push(FieldError::invalid(
                p("maxFailedIndexes"),
                BadValue::int(v),
                "requires indexed completion mode",
            ));
        }
    }
}

/// KEP-4368 `spec.managedBy`: apimachinery's `IsDomainPrefixedPath` (a DNS-1123 subdomain, `/`,
/// a non-empty HTTP path), then at most `maxManagedByLength` bytes.
fn validate_managed_by(value: &str, path: FieldPath, errs: &mut Vec<FieldError>) {
    match value.split_once('/') {
        _ if value.is_empty() => errs.push(FieldError::required(path, "")),
        Some((host, rest)) if !host.is_empty() && !rest.is_empty() => {
            for msg in crate::names::is_dns1123_subdomain(host) {
                errs.push(FieldError::invalid(path, BadValue::str(host), msg));
            }
            if let Some(msg) = crate::names::http_path_error(rest) {
                errs.push(FieldError::invalid(path, BadValue::str(rest), msg));
            }
        }
        _ => errs.push(FieldError::invalid(
            path,
            BadValue::str(value),
            r#"must be a domain-prefixed path (such as "acme.io/foo")"#,
        )),
    }
    if value.len() > MAX_MANAGED_BY_LENGTH {
        errs.push(FieldError::too_long(path, MAX_MANAGED_BY_LENGTH));
    }
}

fn validate_indexed_limits(spec: &JobSpec, fld_path: &FieldPath, errs: &mut Vec<FieldError>) {
    let p = |child: &'static str| fld_path.child(child);
    if spec.completions.is_none() {
        errs.push(FieldError::required(
            p("completions"),
            "when completion mode is Indexed",
        ));
    }
    if let Some(par) = spec
        .parallelism
        .filter(|v| *v > MAX_PARALLELISM_FOR_INDEXED_JOB)
    {
        errs.push(FieldError::invalid(
            p("parallelism"),
            BadValue::int(par),
            format!(
                "must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when completion mode is Indexed"
            ),
        ));
    }
    if let (Some(c), Some(mfi)) = (spec.completions, spec.max_failed_indexes)
        && mfi > c
    {
        errs.push(FieldError::invalid(
            p("maxFailedIndexes"),
            BadValue::int(mfi),
            "must be less than or equal to completions",
        ));
    }
    if let Some(mfi) = spec
        .max_failed_indexes
        .filter(|v| *v > MAX_FAILED_INDEXES_FOR_INDEXED_JOB)
    {
        errs.push(FieldError::invalid(
            p("maxFailedIndexes"),
            BadValue::int(mfi),
            format!("must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}"),
        ));
    }
    let high = spec.completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT);
    if high && spec.backoff_limit_per_index.is_some() {
        validate_high_completions_limits(spec, fld_path, errs);
    }
}

/// The tighter limits of an Indexed Job with more than `completionsSoftLimit` completions and
/// a `backoffLimitPerIndex`: `maxFailedIndexes` required, parallelism and `maxFailedIndexes`
/// capped lower.
fn validate_high_completions_limits(
    spec: &JobSpec,
    fld_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let p = |child: &'static str| fld_path.child(child);
    if spec.max_failed_indexes.is_none() {
        errs.push(FieldError::required(
            p("maxFailedIndexes"),
            format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
        ));
    }
    if let Some(par) = spec
        .parallelism
        .filter(|v| *v > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS)
    {
        errs.push(FieldError::invalid(
            p("parallelism"),
            BadValue::int(par),
            format!(
                "must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
            ),
        ));
    }
    if let Some(mfi) = spec
        .max_failed_indexes
        .filter(|v| *v > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS)
    {
        errs.push(FieldError::invalid(
            p("maxFailedIndexes"),
            BadValue::int(mfi),
            format!(
                "must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
            ),
        ));
    }
}

/// `fmt.Sprintf("valid values: %q", list)`: Go prints a quoted slice as `["a" "b"]`.
fn valid_values(list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| super::field::go_quote(s)).collect();
    format!("valid values: [{}]", quoted.join(" "))
}

fn validate_pod_failure_policy(
    spec: &JobSpec,
    policy: &PodFailurePolicy,
    fld_path: &FieldPath,
    cluster: &Cluster,
    errs: &mut Vec<FieldError>,
) {
    let rules_path = fld_path.child("rules");
    if policy.rules.len() > MAX_POD_FAILURE_POLICY_RULES {
        errs.push(FieldError::too_many(
            rules_path,
            policy.rules.len(),
            MAX_POD_FAILURE_POLICY_RULES,
        ));
    }
    let pod = &spec.template.spec;
    let container_names: Vec<&str> = pod
        .containers
        .iter()
        .chain(pod.init_containers.iter())
        .map(|c| c.name.as_str())
        .collect();
    for (i, rule) in policy.rules.iter().enumerate() {
        if errs.len() >= MAX_ERRORS {
            break; // a bounded answer: `field::MAX_ERRORS`
        }
        validate_rule(
            spec,
            rule,
            &rules_path.index(i),
            &container_names,
            cluster.name_messages(),
            errs,
        );
    }
}

fn validate_rule(
    spec: &JobSpec,
    rule: &PodFailurePolicyRule,
    rule_path: &FieldPath,
    container_names: &[&str],
    name_messages: NameMessages,
    errs: &mut Vec<FieldError>,
) {
    let action_path = rule_path.child("action");
    match rule.action.as_deref().unwrap_or("") {
        "" => errs.push(FieldError::required(action_path, valid_values(&ACTIONS))),
        "FailIndex" if spec.backoff_limit_per_index.is_none() => errs.push(FieldError::invalid(
            action_path,
            BadValue::named_str("FailIndex"),
            "requires the backoffLimitPerIndex to be set",
        )),
        a if !ACTIONS.contains(&a) => errs.push(FieldError::not_supported(
            action_path,
            BadValue::named_str(a),
            &ACTIONS,
        )),
        _ => {}
    }
    if let Some(on_exit_codes) = &rule.on_exit_codes {
        validate_on_exit_codes(
            on_exit_codes,
            &rule_path.child("onExitCodes"),
            container_names,
            errs,
        );
    }
    if !rule.on_pod_conditions.is_empty() {
        validate_on_pod_conditions(
            &rule.on_pod_conditions,
            &rule_path.child("onPodConditions"),
            name_messages,
            errs,
        );
    }
    match (
        rule.on_exit_codes.is_some(),
        !rule.on_pod_conditions.is_empty(),
    ) {
        (true, true) => errs.push(FieldError::invalid(
            *rule_path,
            BadValue::Omit,
            "specifying both OnExitCodes and OnPodConditions is not supported",
        )),
        (false, false) => errs.push(FieldError::invalid(
            *rule_path,
            BadValue::Omit,
            "specifying one of OnExitCodes and OnPodConditions is required",
        )),
        _ => {}
    }
}

fn validate_on_pod_conditions(
    patterns: &[OnPodConditionsPattern],
    path: &FieldPath,
    name_messages: NameMessages,
    errs: &mut Vec<FieldError>,
) {
    if patterns.len() > MAX_ON_POD_CONDITIONS_PATTERNS {
        errs.push(FieldError::too_many(
            *path,
            patterns.len(),
            MAX_ON_POD_CONDITIONS_PATTERNS,
        ));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        if errs.len() >= MAX_ERRORS {
            break; // a bounded answer: `field::MAX_ERRORS`
        }
        let pattern_path = path.index(j);
        // `ValidateQualifiedName(string(pattern.Type))`: a plain string, printed with `%q`;
        // apimachinery's wording changed in 1.35 (`content.IsLabelKey`).
        let type_ = pattern.type_.as_deref().unwrap_or("");
        for msg in is_qualified_name(type_, name_messages) {
            errs.push(FieldError::invalid(
                pattern_path.child("type"),
                BadValue::str(type_),
                msg,
            ));
        }
        let status_path = pattern_path.child("status");
        match pattern.status.as_deref().unwrap_or("") {
            "" => errs.push(FieldError::required(
                status_path,
                valid_values(&CONDITION_STATUSES),
            )),
            s if !CONDITION_STATUSES.contains(&s) => errs.push(FieldError::not_supported(
                status_path,
                BadValue::named_str(s),
                &CONDITION_STATUSES,
            )),
            _ => {}
        }
    }
}

fn validate_on_exit_codes(
    req: &OnExitCodes,
    path: &FieldPath,
    container_names: &[&str],
    errs: &mut Vec<FieldError>,
) {
    let operator = req.operator.as_deref().unwrap_or("");
    let operator_path = path.child("operator");
    if operator.is_empty() {
        errs.push(FieldError::required(
            operator_path,
            valid_values(&OPERATORS),
        ));
    } else if !OPERATORS.contains(&operator) {
        errs.push(FieldError::not_supported(
            operator_path,
            BadValue::named_str(operator),
            &OPERATORS,
        ));
    }
    if let Some(name) = &req.container_name
        && !container_names.contains(&name.as_str())
    {
        errs.push(FieldError::invalid(
            path.child("containerName"),
            BadValue::str(name.as_str()),
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    validate_exit_code_values(req, operator, path.child("values"), errs);
}

/// `onExitCodes.values`: at least one and at most `maxOnExitCodesValues`, no 0 for `In`, no
/// duplicates, in order.
fn validate_exit_code_values(
    req: &OnExitCodes,
    operator: &str,
    values_path: FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if req.values.is_empty() {
        errs.push(FieldError::invalid(
            values_path,
            go_values::exit_codes(req),
            "at least one value is required",
        ));
    } else if req.values.len() > MAX_ON_EXIT_CODES_VALUES {
        errs.push(FieldError::too_many(
            values_path,
            req.values.len(),
            MAX_ON_EXIT_CODES_VALUES,
        ));
    }
    let mut ordered = true;
    let mut seen = std::collections::HashSet::with_capacity(req.values.len());
    for (j, &value) in req.values.iter().enumerate() {
        // Past `field::MAX_ERRORS` nothing more is reported (a bounded answer); the loop still
        // finds out whether the values are ordered.
        let report = errs.len() < MAX_ERRORS;
        let value_path = values_path.index(j);
        if report && operator == "In" && value == 0 {
            errs.push(FieldError::invalid(
                value_path,
                BadValue::int(value),
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(value) && report {
            errs.push(FieldError::duplicate(value_path, BadValue::int(value)));
        }
        if j > 0 && req.values[j - 1] > value {
            ordered = false;
        }
    }
    if !ordered {
        errs.push(FieldError::invalid(
            values_path,
            go_values::exit_codes(req),
            "must be ordered",
        ));
    }
}

fn validate_success_policy(
    spec: &JobSpec,
    policy: &SuccessPolicy,
    fld_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let rules_path = fld_path.child("rules");
    if policy.rules.is_empty() {
        errs.push(FieldError::required(
            rules_path,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if policy.rules.len() > MAX_SUCCESS_POLICY_RULES {
        errs.push(FieldError::too_many(
            rules_path,
            policy.rules.len(),
            MAX_SUCCESS_POLICY_RULES,
        ));
    }
    for (i, rule) in policy.rules.iter().enumerate() {
        if errs.len() >= MAX_ERRORS {
            break; // a bounded answer: `field::MAX_ERRORS`
        }
        validate_success_policy_rule(rule, rules_path.index(i), spec.completions, errs);
    }
}

/// One `successPolicy.rules[i]`: `succeededIndexes` read against the completions, then
/// `succeededCount` against the completions and the number of those indexes.
fn validate_success_policy_rule(
    rule: &SuccessPolicyRule,
    rule_path: FieldPath,
    completions: Option<i32>,
    errs: &mut Vec<FieldError>,
) {
    if rule.succeeded_count.is_none() && rule.succeeded_indexes.is_none() {
        errs.push(FieldError::required(
            rule_path,
            "at least one of succeededCount or succeededIndexes must be specified",
        ));
    }
    // Upstream dereferences `spec.completions` here; an Indexed Job without completions
    // already has a Required error (and would crash that apiserver handler), so skip.
    let Some(completions) = completions else {
        return;
    };
    let total = rule.succeeded_indexes.as_ref().map(|indexes| {
        validate_succeeded_indexes(
            indexes,
            rule_path.child("succeededIndexes"),
            completions,
            errs,
        )
    });
    if let Some(count) = rule.succeeded_count {
        validate_succeeded_count(
            count,
            rule_path.child("succeededCount"),
            completions,
            total,
            errs,
        );
    }
}

/// `succeededIndexes`: its length, and the number of indexes it names (0 when it cannot be
/// read).
fn validate_succeeded_indexes(
    indexes: &str,
    path: FieldPath,
    completions: i32,
    errs: &mut Vec<FieldError>,
) -> i32 {
    if indexes.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
        errs.push(FieldError::too_long(path, MAX_SUCCEEDED_INDEXES_LENGTH));
    }
    indexes_total(indexes, completions).unwrap_or_else(|e| {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(indexes),
            format!("error parsing succeededIndexes: {e}"),
        ));
        0
    })
}

/// `succeededCount`: not negative, at most the completions and, with `succeededIndexes`, at
/// most the `total` number of indexes it names.
fn validate_succeeded_count(
    count: i32,
    path: FieldPath,
    completions: i32,
    total: Option<i32>,
    errs: &mut Vec<FieldError>,
) {
    nonnegative(errs, Some(i64::from(count)), path);
    if count > completions {
        errs.push(FieldError::invalid(
            path,
            BadValue::int(count),
            format!(
                "must be less than or equal to {completions} (the number of specified completions)"
            ),
        ));
    }
    if let Some(total) = total.filter(|total| count > *total) {
        errs.push(FieldError::invalid(
            path,
            BadValue::int(count),
            format!(
                "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
            ),
        ));
    }
}

/// `validateIndexesFormat`: the number of indexes in `0,2-4`, or why it cannot be read.
fn indexes_total(indexes: &str, completions: i32) -> Result<i32, String> {
    if indexes.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0i32;
    for interval in indexes.split(',') {
        let (x, y) = index_interval(interval, completions)?;
        if let Some(l) = last
            && l >= x
        {
            return Err(format!("non-increasing order, previous: {l}, current: {x}"));
        }
        // Go adds in int32 and wraps.
        total = total.wrapping_add((y - x + 1) as i32);
        last = Some(y);
    }
    Ok(total)
}

/// `strconv.Atoi`: optional sign, ASCII digits, within int64.
fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

fn index_interval(interval: &str, completions: i32) -> Result<(i64, i64), String> {
    let limits: Vec<&str> = interval.split('-').collect();
    let go = super::field::go_quote;
    if limits.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            go(interval)
        ));
    }
    let parse = |s: &str| {
        atoi(s).ok_or_else(|| format!("cannot convert string to integer for index: {}", go(s)))
    };
    let x = parse(limits[0])?;
    if x >= i64::from(completions) {
        return Err(format!("too large index: {}", go(limits[0])));
    }
    if let Some(second) = limits.get(1) {
        let y = parse(second)?;
        if y >= i64::from(completions) {
            return Err(format!("too large index: {}", go(second)));
        }
        if x >= y {
            return Err(format!("non-increasing order, previous: {x}, current: {y}"));
        }
        return Ok((x, y));
    }
    Ok((x, x))
}

fn validate_pod_replacement_policy(spec: &JobSpec, path: FieldPath, errs: &mut Vec<FieldError>) {
    let Some(value) = spec.pod_replacement_policy.value() else {
        return;
    };
    if spec.pod_failure_policy.is_set() {
        if value != "Failed" {
            errs.push(FieldError::not_supported(
                path,
                BadValue::named_str(value),
                &["Failed"],
            ));
        }
    } else if !POD_REPLACEMENT_POLICIES.contains(&value.as_str()) {
        errs.push(FieldError::not_supported(
            path,
            BadValue::named_str(value),
            &POD_REPLACEMENT_POLICIES,
        ));
    }
}

/// The pod template's own `validateRestartPolicy` (core validation, inside
/// `ValidatePodTemplateSpec`, which upstream runs just before the Job's check) and then the Job's:
/// a value neither accepts is reported by both, Pod's first. An unset value is `Always` by the
/// time upstream validates (`SetDefaults_PodSpec`), so it meets only the Job's check: one
/// `Required value: valid values: "OnFailure", "Never"`, as for `Always`.
fn validate_restart_policy(spec: &JobSpec, path: FieldPath, errs: &mut Vec<FieldError>) {
    let restart_policy = spec.template.spec.restart_policy.as_deref().unwrap_or("");
    match restart_policy {
        "" | "Always" | "OnFailure" | "Never" => {}
        other => errs.push(FieldError::not_supported(
            path,
            BadValue::named_str(other),
            &["Always", "OnFailure", "Never"],
        )),
    }
    match restart_policy {
        "" | "Always" => errs.push(FieldError::required(
            path,
            r#"valid values: "OnFailure", "Never""#,
        )),
        "Never" => {}
        "OnFailure" => {
            if spec.pod_failure_policy.is_set() {
                errs.push(FieldError::invalid(
                    path,
                    BadValue::named_str("OnFailure"),
                    r#"only "Never" is supported when podFailurePolicy is specified"#,
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            path,
            BadValue::named_str(other),
            &["OnFailure", "Never"],
        )),
    }
}

/// `ValidateJobSpecUpdate` after `ValidateJobSpec`: completions (elastic Indexed Jobs),
/// template, completionMode, podFailurePolicy, backoffLimitPerIndex, managedBy, successPolicy.
/// What may change in the template depends on the old Job's state and the cluster
/// (`version.rs`).
pub(crate) fn validate_job_update(
    new: &JobObject,
    old: &JobObject,
    cluster: &Cluster,
) -> Vec<FieldError> {
    let (spec, old_spec) = (&new.spec, &old.spec);
    let fld_path = new.spec_path();
    let p = |child: &'static str| fld_path.child(child);
    let options = template_update_options(old, cluster);
    [
        validate_completions_update(spec, old_spec, &fld_path),
        validate_pod_template_update(spec, old_spec, &fld_path, options)
            .ok()
            .flatten(),
        immutable(
            p("completionMode"),
            &old_spec.completion_mode,
            &spec.completion_mode,
        ),
        immutable(
            p("podFailurePolicy"),
            &old_spec.pod_failure_policy,
            &spec.pod_failure_policy,
        ),
        immutable(
            p("backoffLimitPerIndex"),
            &old_spec.backoff_limit_per_index,
            &spec.backoff_limit_per_index,
        ),
        immutable(p("managedBy"), &old_spec.managed_by, &spec.managed_by),
        immutable(
            p("successPolicy"),
            &old_spec.success_policy,
            &spec.success_policy,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// An Indexed Job's completions may change together with its parallelism (elastic Indexed
/// Jobs); any other Job's are immutable.
fn validate_completions_update(
    spec: &JobSpec,
    old_spec: &JobSpec,
    fld_path: &FieldPath,
) -> Option<FieldError> {
    let path = fld_path.child("completions");
    if spec.completion_mode.as_deref() != Some(INDEXED) {
        return immutable(path, &old_spec.completions, &spec.completions);
    }
    let c = spec
        .completions
        .filter(|&c| spec.completions != old_spec.completions && Some(c) != spec.parallelism)?;
    Some(FieldError::invalid(
        path,
        BadValue::int(c),
        format!(
            "can only be modified in tandem with {}",
            fld_path.child("parallelism")
        ),
    ))
}

/// apimachinery's `ValidateImmutableField(newVal, oldVal, fldPath)`: `field is immutable`,
/// with the new value, when the new value differs from the old.
fn immutable<T: ImmutableField>(path: FieldPath, old: &T, new: &T) -> Option<FieldError> {
    (!new.same(old)).then(|| FieldError::invalid(path, new.bad_value(), IMMUTABLE))
}

/// A field `ValidateImmutableField` guards: whether `apiequality.Semantic.DeepEqual` finds two
/// values equal, and how the error prints the new one.
trait ImmutableField {
    fn same(&self, old: &Self) -> bool;
    fn bad_value(&self) -> BadValue;
}

/// `completions`, `backoffLimitPerIndex`: `*int32`.
impl ImmutableField for Option<i32> {
    fn same(&self, old: &Self) -> bool {
        self == old
    }
    fn bad_value(&self) -> BadValue {
        opt_int(*self)
    }
}

/// `completionMode` (a `*CompletionMode`) and `managedBy` (a `*string`): `json.Marshal`ed from
/// 1.34, dereferenced and `%q`-quoted before.
impl ImmutableField for Option<InternedStr> {
    fn same(&self, old: &Self) -> bool {
        self == old
    }
    fn bad_value(&self) -> BadValue {
        self.as_deref()
            .map_or_else(BadValue::null, BadValue::named_str)
    }
}

impl ImmutableField for Presence<PodFailurePolicy> {
    fn same(&self, old: &Self) -> bool {
        same_pod_failure_policy(self, old)
    }
    fn bad_value(&self) -> BadValue {
        go_values::pod_failure_policy(self)
    }
}

impl ImmutableField for Option<SuccessPolicy> {
    fn same(&self, old: &Self) -> bool {
        same_success_policy(self.as_ref(), old.as_ref())
    }
    fn bad_value(&self) -> BadValue {
        go_values::success_policy(self.as_ref())
    }
}

/// `apiequality.Semantic.DeepEqual` on the internal types: absent, null and `""` strings are
/// all Go's zero value, and nil slices equal empty ones.
fn same_pod_failure_policy(a: &Presence<PodFailurePolicy>, b: &Presence<PodFailurePolicy>) -> bool {
    match (a.value(), b.value()) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.rules.len() == b.rules.len()
                && a.rules.iter().zip(&b.rules).all(|(x, y)| same_rule(x, y))
        }
        _ => false,
    }
}

fn s<T: std::ops::Deref<Target = str>>(v: &Option<T>) -> &str {
    v.as_deref().unwrap_or("")
}

fn same_rule(a: &PodFailurePolicyRule, b: &PodFailurePolicyRule) -> bool {
    let codes = match (&a.on_exit_codes, &b.on_exit_codes) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            x.container_name == y.container_name
                && s(&x.operator) == s(&y.operator)
                && x.values == y.values
        }
        _ => false,
    };
    s(&a.action) == s(&b.action)
        && codes
        && a.on_pod_conditions.len() == b.on_pod_conditions.len()
        && a.on_pod_conditions
            .iter()
            .zip(&b.on_pod_conditions)
            .all(|(x, y)| s(&x.type_) == s(&y.type_) && s(&x.status) == s(&y.status))
}

fn same_success_policy(a: Option<&SuccessPolicy>, b: Option<&SuccessPolicy>) -> bool {
    match (a, b) {
        (None, None) => true,
        // Semantic DeepEqual: a nil slice equals an empty one.
        (Some(a), Some(b)) => a.rules == b.rules,
        _ => false,
    }
}

/// The template-mutability options for an UPDATE of `old` on `cluster` (`version.rs`).
fn template_update_options(old: &JobObject, cluster: &Cluster) -> TemplateUpdateOptions {
    cluster.template_update_options(&OldJobState {
        suspended: old.spec.suspend == Some(true),
        started: old.started,
        suspended_condition: old.suspended_condition,
        active: old.active,
    })
}

/// `validatePodTemplateUpdate`: with `AllowMutableSchedulingDirectives` the old template takes
/// the new node affinity, node selector, tolerations, labels, annotations and scheduling gates;
/// then, for a suspended Job with `AllowMutablePodResources` (KEP-5440, kubernetes#132441),
/// `validatePodResourceUpdatesOnly` compares the pod specs alone (`spec.template.spec`), else
/// the whole templates are compared (`spec.template`). The templates are compared as digests
/// (`job::template`). Without both whole templates nothing is compared; when one cannot be read
/// the answer is `Err` (a warning from `validate`, never a silent pass and never a denial).
fn validate_pod_template_update(
    spec: &JobSpec,
    old_spec: &JobSpec,
    fld_path: &FieldPath,
    options: TemplateUpdateOptions,
) -> Result<Option<FieldError>, String> {
    let (Some(new), Some(old)) = (&spec.template.whole, &old_spec.template.whole) else {
        return Ok(None);
    };
    let without_scheduling = options.allow_mutable_scheduling_directives;
    let suspended = old_spec.suspend == Some(true);
    let template = fld_path.child("template");
    let template_spec = template.child("spec");
    let (compare, path) = if suspended && options.allow_mutable_pod_resources {
        (
            Compare::PodSpecWithoutResources { without_scheduling },
            template_spec,
        )
    } else {
        (Compare::Template { without_scheduling }, template)
    };
    Ok(new
        .differs(old, compare)?
        .then(|| FieldError::invalid(path, BadValue::Omit, IMMUTABLE)))
}

/// The warning for a Job UPDATE whose templates cannot be compared.
pub(crate) fn template_unreadable(review: &Review<'_>, cluster: &Cluster) -> Option<String> {
    if (review.operation, review.object.kind) != (Operation::Update, Kind::Job) {
        return None;
    }
    let old = review.old_object?;
    let spec_path = review.object.spec_path();
    let options = template_update_options(old, cluster);
    let reason =
        validate_pod_template_update(&review.object.spec, &old.spec, &spec_path, options).err()?;
    Some(format!(
        "{spec_path}.template: the templates cannot be compared, so this update was not checked \
         for changes to the immutable template: {reason}"
    ))
}

#[cfg(test)]
mod tests;
