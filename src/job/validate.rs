//! `/validate`: kube-apiserver's Job validation for the fields jobgate cares about, as an exact
//! twin of kubernetes `pkg/apis/batch/validation/validation.go` (1.31-1.34, default feature
//! gates), followed by jobgate's own policies (`policy.rs`).
//!
//! The order of errors is upstream's: `validateJobSpec` (counts, completion mode, pod failure
//! policy rule by rule, success policy, pod replacement policy, restart policy), then on UPDATE
//! of a Job `ValidateJobSpecUpdate`'s immutability checks. Paths of a CronJob are prefixed
//! `spec.jobTemplate.`; a CronJob's job template has no immutable fields (`ValidateCronJobUpdate`).
//!
//! The object is validated as received: kube-apiserver defaults before it validates, and so do
//! webhooks' objects; `jobgate check` calls `defaults::apply_apiserver_defaults` first.

use serde_json::{Value, json};

use super::field::{MAX_ERRORS, go_json_string};
use super::model::{
    Field, JobObject, JobSpec, OnExitCodes, OnPodConditionsPattern, PodFailurePolicy,
    PodFailurePolicyRule, SuccessPolicy,
};
use super::{BadValue, Config, FieldError, Kind, Operation, Review, Verdict, policy};

/// `maxParallelismForIndexedJob`, `maxFailedIndexesForIndexedJob`, `completionsSoftLimit`.
const MAX_PARALLELISM_FOR_INDEXED_JOB: i32 = 100_000;
const MAX_FAILED_INDEXES_FOR_INDEXED_JOB: i32 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i32 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;
const MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS: i32 = 10_000;
pub const MAX_POD_FAILURE_POLICY_RULES: usize = 20;
pub const MAX_ON_EXIT_CODES_VALUES: usize = 255;
pub const MAX_ON_POD_CONDITIONS_PATTERNS: usize = 20;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 64 * 1024;
const MAX_SUCCESS_POLICY_RULES: usize = 20;

/// `sets.List(...)`: sorted.
const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS: [&str; 2] = ["In", "NotIn"];
const CONDITION_STATUSES: [&str; 3] = ["False", "True", "Unknown"];
const POD_REPLACEMENT_POLICIES: [&str; 2] = ["Failed", "TerminatingOrFailed"];

const NON_INDEXED: &str = "NonIndexed";
const INDEXED: &str = "Indexed";
const IMMUTABLE: &str = "field is immutable";
const NEGATIVE: &str = "must be greater than or equal to 0";

pub fn validate(review: &Review<'_>, config: &Config) -> Verdict {
    let mut errors = validate_object(review.object);
    if let (Operation::Update, Some(old), Kind::Job) =
        (review.operation, review.old_object, review.object.kind)
    {
        errors.extend(validate_job_update(review.object, old));
    }
    let findings = policy::evaluate(review, config);
    errors.extend(findings.errors);
    let mut warnings = findings.warnings;
    if let (Operation::Update, Kind::Job) = (review.operation, review.object.kind) {
        warnings.extend(template_unreadable(review));
    }
    Verdict {
        errors,
        warnings,
        patch: json_patch::Patch::default(),
    }
}

/// kube-apiserver's `validateJobSpec`, restricted to the fields jobgate models.
pub fn validate_object(object: &JobObject) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_job_spec(&object.spec, object.kind.spec_path(), &mut errs);
    errs
}

fn nonnegative(errs: &mut Vec<FieldError>, value: Option<i64>, path: String) {
    if let Some(v) = value.filter(|v| *v < 0) {
        errs.push(FieldError::invalid(path, BadValue::int(v), NEGATIVE));
    }
}

fn validate_job_spec(spec: &JobSpec, base: &str, errs: &mut Vec<FieldError>) {
    let p = |child: &str| format!("{base}.{child}");
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
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(mode) = spec.completion_mode.as_deref() {
        if mode != NON_INDEXED && mode != INDEXED {
            errs.push(FieldError::not_supported(
                p("completionMode"),
                BadValue::named_str(mode),
                &[NON_INDEXED, INDEXED],
            ));
        }
        if mode == INDEXED {
            validate_indexed_limits(spec, &p, errs);
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
    if let Field::Value(policy) = &spec.pod_failure_policy {
        validate_pod_failure_policy(spec, policy, &p("podFailurePolicy"), errs);
    }
    if let Some(success) = &spec.success_policy {
        if spec.completion_mode.as_deref() != Some(INDEXED) {
            errs.push(FieldError::invalid(
                p("successPolicy"),
                BadValue::Raw(success_policy_go_json(success)),
                "requires indexed completion mode",
            ));
        } else {
            validate_success_policy(spec, success, &p("successPolicy"), errs);
        }
    }
    validate_pod_replacement_policy(spec, p("podReplacementPolicy"), errs);
    validate_restart_policy(spec, p("template.spec.restartPolicy"), errs);
}

fn validate_indexed_limits(spec: &JobSpec, p: &dyn Fn(&str) -> String, errs: &mut Vec<FieldError>) {
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
}

/// `fmt.Sprintf("valid values: %q", list)`: Go prints a quoted slice as `["a" "b"]`.
fn valid_values(list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| super::field::go_quote(s)).collect();
    format!("valid values: [{}]", quoted.join(" "))
}

fn validate_pod_failure_policy(
    spec: &JobSpec,
    policy: &PodFailurePolicy,
    base: &str,
    errs: &mut Vec<FieldError>,
) {
    let rules_path = format!("{base}.rules");
    if policy.rules.len() > MAX_POD_FAILURE_POLICY_RULES {
        errs.push(FieldError::too_many(
            rules_path.clone(),
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
            &format!("{rules_path}[{i}]"),
            &container_names,
            errs,
        );
    }
}

fn validate_rule(
    spec: &JobSpec,
    rule: &PodFailurePolicyRule,
    rule_path: &str,
    container_names: &[&str],
    errs: &mut Vec<FieldError>,
) {
    let action_path = format!("{rule_path}.action");
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
            &format!("{rule_path}.onExitCodes"),
            container_names,
            errs,
        );
    }
    if !rule.on_pod_conditions.is_empty() {
        validate_on_pod_conditions(
            &rule.on_pod_conditions,
            &format!("{rule_path}.onPodConditions"),
            errs,
        );
    }
    match (
        rule.on_exit_codes.is_some(),
        !rule.on_pod_conditions.is_empty(),
    ) {
        (true, true) => errs.push(FieldError::invalid(
            rule_path,
            BadValue::Omit,
            "specifying both OnExitCodes and OnPodConditions is not supported",
        )),
        (false, false) => errs.push(FieldError::invalid(
            rule_path,
            BadValue::Omit,
            "specifying one of OnExitCodes and OnPodConditions is required",
        )),
        _ => {}
    }
}

fn validate_on_pod_conditions(
    patterns: &[OnPodConditionsPattern],
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    if patterns.len() > MAX_ON_POD_CONDITIONS_PATTERNS {
        errs.push(FieldError::too_many(
            path,
            patterns.len(),
            MAX_ON_POD_CONDITIONS_PATTERNS,
        ));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        if errs.len() >= MAX_ERRORS {
            break; // a bounded answer: `field::MAX_ERRORS`
        }
        let pattern_path = format!("{path}[{j}]");
        // `ValidateQualifiedName(string(pattern.Type))`: a plain string, printed with `%q`.
        let type_ = pattern.type_.as_deref().unwrap_or("");
        for msg in is_qualified_name(type_) {
            errs.push(FieldError::invalid(
                format!("{pattern_path}.type"),
                BadValue::str(type_),
                msg,
            ));
        }
        let status_path = format!("{pattern_path}.status");
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
    path: &str,
    container_names: &[&str],
    errs: &mut Vec<FieldError>,
) {
    let operator = req.operator.as_deref().unwrap_or("");
    let operator_path = format!("{path}.operator");
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
            format!("{path}.containerName"),
            BadValue::str(name.as_str()),
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    let values_path = format!("{path}.values");
    if req.values.is_empty() {
        errs.push(FieldError::invalid(
            values_path.clone(),
            exit_codes_value(req),
            "at least one value is required",
        ));
    } else if req.values.len() > MAX_ON_EXIT_CODES_VALUES {
        errs.push(FieldError::too_many(
            values_path.clone(),
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
        let value_path = format!("{values_path}[{j}]");
        if report && operator == "In" && value == 0 {
            errs.push(FieldError::invalid(
                value_path.clone(),
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
            exit_codes_value(req),
            "must be ordered",
        ));
    }
}

/// `onExitCode.Values` as `ErrorBody` prints a `[]int32`: `null` when nil, else a JSON array.
fn exit_codes_value(req: &OnExitCodes) -> BadValue {
    if req.values_null {
        BadValue::null()
    } else {
        BadValue::json(&json!(req.values))
    }
}

fn validate_success_policy(
    spec: &JobSpec,
    policy: &SuccessPolicy,
    base: &str,
    errs: &mut Vec<FieldError>,
) {
    let rules_path = format!("{base}.rules");
    if policy.rules.is_empty() {
        errs.push(FieldError::required(
            rules_path.clone(),
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if policy.rules.len() > MAX_SUCCESS_POLICY_RULES {
        errs.push(FieldError::too_many(
            rules_path.clone(),
            policy.rules.len(),
            MAX_SUCCESS_POLICY_RULES,
        ));
    }
    for (i, rule) in policy.rules.iter().enumerate() {
        if errs.len() >= MAX_ERRORS {
            break; // a bounded answer: `field::MAX_ERRORS`
        }
        let rule_path = format!("{rules_path}[{i}]");
        if rule.succeeded_count.is_none() && rule.succeeded_indexes.is_none() {
            errs.push(FieldError::required(
                rule_path.clone(),
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
        // Upstream dereferences `spec.completions` here; an Indexed Job without completions
        // already has a Required error (and would crash that apiserver handler), so skip.
        let Some(completions) = spec.completions else {
            continue;
        };
        let mut total = 0i32;
        if let Some(indexes) = &rule.succeeded_indexes {
            let path = format!("{rule_path}.succeededIndexes");
            if indexes.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
                errs.push(FieldError::too_long(
                    path.clone(),
                    MAX_SUCCEEDED_INDEXES_LENGTH,
                ));
            }
            match indexes_total(indexes, completions) {
                Ok(t) => total = t,
                Err(e) => errs.push(FieldError::invalid(
                    path,
                    BadValue::str(indexes.as_str()),
                    format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(count) = rule.succeeded_count {
            let path = format!("{rule_path}.succeededCount");
            nonnegative(errs, Some(i64::from(count)), path.clone());
            if count > completions {
                errs.push(FieldError::invalid(
                    path.clone(),
                    BadValue::int(count),
                    format!(
                        "must be less than or equal to {completions} (the number of specified completions)"
                    ),
                ));
            }
            if rule.succeeded_indexes.is_some() && count > total {
                errs.push(FieldError::invalid(
                    path,
                    BadValue::int(count),
                    format!(
                        "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
                    ),
                ));
            }
        }
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

fn validate_pod_replacement_policy(spec: &JobSpec, path: String, errs: &mut Vec<FieldError>) {
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
fn validate_restart_policy(spec: &JobSpec, path: String, errs: &mut Vec<FieldError>) {
    let restart_policy = spec.template.spec.restart_policy.as_deref().unwrap_or("");
    match restart_policy {
        "" | "Always" | "OnFailure" | "Never" => {}
        other => errs.push(FieldError::not_supported(
            path.clone(),
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
/// template, completionMode, podFailurePolicy, backoffLimitPerIndex, successPolicy.
pub fn validate_job_update(new: &JobObject, old: &JobObject) -> Vec<FieldError> {
    let (spec, old_spec) = (&new.spec, &old.spec);
    let base = new.kind.spec_path();
    let mut errs = Vec::new();
    if spec.completions != old_spec.completions {
        let indexed = spec.completion_mode.as_deref() == Some(INDEXED);
        if !indexed {
            errs.push(FieldError::invalid(
                format!("{base}.completions"),
                opt_int(spec.completions),
                IMMUTABLE,
            ));
        } else if let Some(c) = spec.completions
            && Some(c) != spec.parallelism
        {
            errs.push(FieldError::invalid(
                format!("{base}.completions"),
                BadValue::int(c),
                format!("can only be modified in tandem with {base}.parallelism"),
            ));
        }
    }
    // Scheduling directives stay mutable while a Job is suspended and has never started.
    let allow_scheduling = old_spec.suspend == Some(true) && !old.started;
    if template_changed(spec, old_spec, allow_scheduling) == Ok(true) {
        errs.push(FieldError::invalid(
            format!("{base}.template"),
            BadValue::Omit,
            IMMUTABLE,
        ));
    }
    if spec.completion_mode != old_spec.completion_mode {
        errs.push(FieldError::invalid(
            format!("{base}.completionMode"),
            match &spec.completion_mode {
                Some(m) => BadValue::named_str(m),
                None => BadValue::null(),
            },
            IMMUTABLE,
        ));
    }
    if !same_pod_failure_policy(&spec.pod_failure_policy, &old_spec.pod_failure_policy) {
        errs.push(FieldError::invalid(
            format!("{base}.podFailurePolicy"),
            BadValue::Raw(pod_failure_policy_go_json(&spec.pod_failure_policy)),
            IMMUTABLE,
        ));
    }
    if spec.backoff_limit_per_index != old_spec.backoff_limit_per_index {
        errs.push(FieldError::invalid(
            format!("{base}.backoffLimitPerIndex"),
            opt_int(spec.backoff_limit_per_index),
            IMMUTABLE,
        ));
    }
    if !same_success_policy(
        spec.success_policy.as_ref(),
        old_spec.success_policy.as_ref(),
    ) {
        errs.push(FieldError::invalid(
            format!("{base}.successPolicy"),
            match &spec.success_policy {
                Some(s) => BadValue::Raw(success_policy_go_json(s)),
                None => BadValue::null(),
            },
            IMMUTABLE,
        ));
    }
    errs
}

fn opt_int(v: Option<i32>) -> BadValue {
    v.map_or_else(BadValue::null, BadValue::int)
}

/// `apiequality.Semantic.DeepEqual` on the internal types: absent, null and `""` strings are
/// all Go's zero value, and nil slices equal empty ones.
fn same_pod_failure_policy(a: &Field<PodFailurePolicy>, b: &Field<PodFailurePolicy>) -> bool {
    match (a.value(), b.value()) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.rules.len() == b.rules.len()
                && a.rules.iter().zip(&b.rules).all(|(x, y)| same_rule(x, y))
        }
        _ => false,
    }
}

fn s(v: &Option<String>) -> &str {
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

/// `json.Marshal` of the internal `*batch.PodFailurePolicy`: no json tags, so Go field names in
/// declaration order (serde_json's `Value` would sort keys), and Go's string escaping
/// (`go_json_string`: `<` is `\u003c`). A list given as `[]` prints `[]`, a missing or `null`
/// one `null`, as the apiserver's decoded slice would.
fn pod_failure_policy_go_json(policy: &Field<PodFailurePolicy>) -> String {
    let Some(policy) = policy.value() else {
        return "null".into();
    };
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
                go_list(patterns, r.on_pod_conditions_null)
            )
        })
        .collect();
    format!(r#"{{"Rules":{}}}"#, go_list(rules, policy.rules_null))
}

/// A JSON array of already-rendered items; `null` for a nil slice (absent or `null` in JSON).
fn go_list(items: Vec<String>, nil: bool) -> String {
    if nil {
        "null".into()
    } else {
        format!("[{}]", items.join(","))
    }
}

/// `json.Marshal` of the internal `batch.SuccessPolicy`.
fn success_policy_go_json(policy: &SuccessPolicy) -> String {
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
    format!(r#"{{"Rules":{}}}"#, go_list(rules, policy.rules_null))
}

/// `validatePodTemplateUpdate`: is the template different, ignoring what a suspended,
/// never-started Job may change (node affinity, node selector, tolerations, labels,
/// annotations, scheduling gates)? Needs both whole templates (`PodTemplateSpec::whole`, read by
/// `job::template`); without them nothing is compared, and when one cannot be read the answer is
/// `Err` (a warning from `validate`, never a silent pass and never a denial).
fn template_changed(
    spec: &JobSpec,
    old_spec: &JobSpec,
    allow_scheduling: bool,
) -> Result<bool, String> {
    let (Some(new), Some(old)) = (&spec.template.whole, &old_spec.template.whole) else {
        return Ok(false);
    };
    new.differs(old, allow_scheduling)
}

/// The warning for a Job UPDATE whose templates cannot be compared.
fn template_unreadable(review: &Review<'_>) -> Option<String> {
    let old = review.old_object?;
    let (spec, old_spec) = (&review.object.spec, &old.spec);
    let allow_scheduling = old_spec.suspend == Some(true) && !old.started;
    let reason = template_changed(spec, old_spec, allow_scheduling).err()?;
    Some(format!(
        "{}.template: the templates cannot be compared, so this update was not checked for \
         changes to the immutable template: {reason}",
        review.object.kind.spec_path()
    ))
}

/// `validation.IsQualifiedName`, message for message.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    const QNAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
    const QNAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    let qname_regex_error = || regex_error(QNAME_MSG, QNAME_FMT, &["MyName", "my.name", "123-abc"]);
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                qname_regex_error()
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {}", qname_regex_error()));
    }
    errs
}

fn is_qualified_name_part(name: &str) -> bool {
    let b = name.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsDNS1123Subdomain`.
fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    const FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
    const MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        matches!((b.first(), b.last()), (Some(f), Some(z)) if is_lower_alnum(*f) && is_lower_alnum(*z))
            && b.iter().all(|c| is_lower_alnum(*c) || *c == b'-')
    };
    if !value.split('.').all(label_ok) {
        errs.push(regex_error(MSG, FMT, &["example.com"]));
    }
    errs
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `validation.RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
