//! kube-apiserver's admission policy plugins, as far as jobgate's rendered objects use them,
//! over the `cel` crate: which requests a policy matches (`matchConstraints`: resource rules and
//! a namespace selector, `matchConditions`), its `variables`, a MutatingAdmissionPolicy's
//! `JSONPatch` expression and a ValidatingAdmissionPolicy's validations and bindings.
//!
//! What the CEL sees is what the apiserver binds (k8s.io/apiserver `admission/plugin/cel`,
//! `activation.go`, `CreateAdmissionRequest`, `CreateNamespaceObject`): `object` and
//! `oldObject` (null on CREATE), `request` (kind, resource, operation, namespace),
//! `namespaceObject`, `variables`; `JSONPatch` and `jsonpatch.escapeKey`
//! (`pkg/cel/library/jsonpatch.go`) and `strings.quote` (cel-go `ext.Strings`) are provided.
//! The patch is applied as `mutating/patch/json_patch.go` applies it (RFC 6902).
//!
//! Stricter than the apiserver where that finds mistakes sooner: every variable is evaluated,
//! referenced or not, and any evaluation error is reported to the caller (the apiserver would
//! apply the failure policy) so that a test can require there be none.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use cel::common::types::{CelString, CelStruct, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map};
use cel::{Context, Env, ExecutionError, Program, StructType, Value as Cel};
use serde_json::{Value, json};

use super::corpus::Admission;

static JSON_PATCH: Type = Type::new_struct_type("JSONPatch");

/// The `JSONPatch` type of MutatingAdmissionPolicy expressions (k8s.io/apiserver
/// `pkg/cel/mutation/jsonpatch.go`): `op`, `path` and `from` strings, `value` anything.
struct JsonPatchType;

impl StructType for JsonPatchType {
    fn get_type(&self) -> &Type {
        &JSON_PATCH
    }

    fn new_value<'b, 'v>(
        &self,
        fields: BTreeMap<String, CowVal<'b, 'v>>,
    ) -> Result<Box<dyn Val + 'v>, ExecutionError> {
        let mut patch = CelStruct::new("JSONPatch".to_string());
        for (name, value) in fields {
            match name.as_str() {
                "op" | "path" | "from" if value.downcast_ref::<CelString>().is_none() => {
                    return Err(ExecutionError::function_error(
                        "JSONPatch",
                        format!("field {name} must be a string"),
                    ));
                }
                "op" | "path" | "from" | "value" => patch.add_field_value(name, value),
                other => {
                    return Err(ExecutionError::function_error(
                        "JSONPatch",
                        format!("no such field {other}"),
                    ));
                }
            }
        }
        Ok(Box::new(patch))
    }
}

/// `jsonpatch.escapeKey`: `~` as `~0`, `/` as `~1` (RFC 6901).
fn escape_key(key: &CelString<'_>) -> CelString<'static> {
    key.inner().replace('~', "~0").replace('/', "~1").into()
}

fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    Arc::clone(ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        cel::extensions::strings(&mut env).expect("strings extension");
        cel::add_overload!(env, fn escape_key: (CelString) -> CelString, name = "jsonpatch.escapeKey")
            .expect("jsonpatch.escapeKey");
        env.add_type(JsonPatchType).expect("JSONPatch");
        Arc::new(env)
    }))
}

thread_local! {
    /// Programs by expression: the same expressions come back for every object.
    static PROGRAMS: RefCell<HashMap<String, Arc<Program>>> = RefCell::new(HashMap::new());
}

fn program(expression: &str) -> Result<Arc<Program>, String> {
    PROGRAMS.with(|programs| {
        if let Some(p) = programs.borrow().get(expression) {
            return Ok(Arc::clone(p));
        }
        let program = Arc::new(
            env()
                .compile(expression)
                .map_err(|e| format!("does not compile: {e}\n{expression}"))?,
        );
        programs
            .borrow_mut()
            .insert(expression.to_string(), Arc::clone(&program));
        Ok(program)
    })
}

impl Admission {
    fn resource(&self) -> &'static str {
        if self.kind == "CronJob" {
            "cronjobs"
        } else {
            "jobs"
        }
    }

    /// The AdmissionRequest fields CEL reads (`request`), without the objects.
    fn request(&self) -> Value {
        json!({
            "uid": "00000000-0000-4000-8000-000000000000",
            "kind": {"group": "batch", "version": "v1", "kind": self.kind},
            "resource": {"group": "batch", "version": "v1", "resource": self.resource()},
            "requestKind": {"group": "batch", "version": "v1", "kind": self.kind},
            "requestResource": {"group": "batch", "version": "v1", "resource": self.resource()},
            "name": self.object["metadata"]["name"],
            "namespace": self.namespace,
            "operation": self.operation,
            "dryRun": false,
        })
    }

    /// Every label of the namespace, `kubernetes.io/metadata.name` included (the apiserver
    /// sets it on every namespace).
    fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.namespace_labels.clone();
        labels.insert(
            "kubernetes.io/metadata.name".to_string(),
            self.namespace.clone(),
        );
        labels
    }

    /// A context with `object`, `oldObject`, `request` and `namespaceObject` bound.
    fn context(&self) -> Context<'static, 'static> {
        let mut ctx = Context::with_env(env());
        let bind = |v: &Value| cel::to_value(v).expect("JSON is a CEL value");
        ctx.add_variable_from_value("object", bind(&self.object));
        ctx.add_variable_from_value(
            "oldObject",
            self.old_object.as_ref().map_or(Cel::Null, bind),
        );
        ctx.add_variable_from_value("request", bind(&self.request()));
        ctx.add_variable_from_value("namespaceObject", bind(&self.namespace_object()));
        ctx
    }

    /// `namespaceObject`: the namespace's name and labels.
    fn namespace_object(&self) -> Value {
        json!({"metadata": {"name": self.namespace, "labels": self.labels()}})
    }
}

/// Whether `constraints` (a `matchConstraints`) match the request: a resource rule for its
/// resource and operation, and the namespace selector (`In`/`NotIn`/`Exists`/`DoesNotExist`
/// expressions and `matchLabels`).
fn constraints_match(constraints: &Value, admission: &Admission) -> bool {
    let rules = constraints["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ruled = rules.iter().any(|rule| {
        let has = |field: &str, want: &str| {
            rule[field]
                .as_array()
                .is_some_and(|v| v.iter().any(|x| x == want || x == "*"))
        };
        has("apiGroups", "batch")
            && has("apiVersions", "v1")
            && has("resources", admission.resource())
            && has("operations", admission.operation)
    });
    ruled && selector_matches(&constraints["namespaceSelector"], &admission.labels())
}

fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    let by_labels = selector["matchLabels"].as_object().is_none_or(|m| {
        m.iter()
            .all(|(k, v)| labels.get(k).map(String::as_str) == v.as_str())
    });
    let expressions = selector["matchExpressions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    by_labels
        && expressions.iter().all(|e| {
            let value = labels.get(e["key"].as_str().unwrap_or(""));
            let listed = |v: &str| {
                e["values"]
                    .as_array()
                    .is_some_and(|vs| vs.iter().any(|x| x == v))
            };
            match e["operator"].as_str() {
                Some("In") => value.is_some_and(|v| listed(v)),
                Some("NotIn") => !value.is_some_and(|v| listed(v)),
                Some("Exists") => value.is_some(),
                Some("DoesNotExist") => value.is_none(),
                _ => false,
            }
        })
}

/// A policy's context once its variables are evaluated: a scope of the request's.
struct Evaluation<'a> {
    ctx: Context<'a, 'static>,
}

impl Evaluation<'_> {
    fn eval(&self, expression: &str) -> Result<Cel, String> {
        program(expression)?
            .execute(&self.ctx)
            .map_err(|e| format!("{e}\n  in {expression}"))
    }
}

/// What a policy does with a request, before the expressions that do the work.
enum Matched<'a> {
    /// Not matched (constraints), or a match condition is false.
    Skipped,
    Evaluated(Evaluation<'a>),
}

/// Matches `spec` against the request, evaluates its match conditions (false wins over an
/// error, as `matchconditions.Matcher`; without `variables`, and with `namespaceObject` null, as
/// the matcher binds them) and its variables, in order.
fn prepare<'a>(
    spec: &Value,
    admission: &Admission,
    request: &'a Context<'static, 'static>,
) -> Result<Matched<'a>, String> {
    if !constraints_match(&spec["matchConstraints"], admission) {
        return Ok(Matched::Skipped);
    }
    let mut evaluation = Evaluation {
        ctx: request.new_inner_scope(),
    };
    let mut errors = Vec::new();
    evaluation
        .ctx
        .add_variable_from_value("namespaceObject", Cel::Null);
    for condition in spec["matchConditions"].as_array().into_iter().flatten() {
        let name = condition["name"].as_str().unwrap_or("");
        match evaluation.eval(condition["expression"].as_str().unwrap_or("")) {
            Ok(Cel::Bool(false)) => return Ok(Matched::Skipped),
            Ok(Cel::Bool(true)) => {}
            Ok(other) => errors.push(format!("matchCondition {name}: not a bool: {other:?}")),
            Err(e) => errors.push(format!("matchCondition {name}: {e}")),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    evaluation.ctx.add_variable_from_value(
        "namespaceObject",
        cel::to_value(admission.namespace_object()).expect("JSON is a CEL value"),
    );
    let mut variables: HashMap<Key, Cel> = HashMap::new();
    for variable in spec["variables"].as_array().into_iter().flatten() {
        let name = variable["name"].as_str().unwrap_or("");
        evaluation.ctx.add_variable_from_value(
            "variables",
            Cel::Map(Map {
                map: Arc::new(variables.clone()),
            }),
        );
        let value = evaluation
            .eval(variable["expression"].as_str().unwrap_or(""))
            .map_err(|e| format!("variable {name}: {e}"))?;
        variables.insert(Key::String(Arc::new(name.to_string())), value);
    }
    evaluation.ctx.add_variable_from_value(
        "variables",
        Cel::Map(Map {
            map: Arc::new(variables),
        }),
    );
    Ok(Matched::Evaluated(evaluation))
}

/// A CEL value as JSON (what `ConvertToNative` to `structpb.Value` then `json.Marshal` give).
pub(crate) fn json(value: &Cel) -> Result<Value, String> {
    Ok(match value {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => json!(i),
        Cel::UInt(u) => json!(u),
        Cel::Float(f) => json!(f),
        Cel::String(s) => Value::String(s.to_string()),
        Cel::List(items) => Value::Array(items.iter().map(json).collect::<Result<_, _>>()?),
        Cel::Map(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map.map.iter() {
                let Key::String(k) = k else {
                    return Err(format!("map key {k:?} is not a string"));
                };
                out.insert(k.to_string(), json(v)?);
            }
            Value::Object(out)
        }
        other => return Err(format!("{other:?} has no JSON form")),
    })
}

/// The RFC 6902 operation a `JSONPatch` value stands for, as `json_patch.go` builds it: `op`
/// and `path`, `from` when not empty, `value` when set.
fn operation(value: &Cel) -> Result<Value, String> {
    let Cel::Struct(patch) = value else {
        return Err(format!("not a JSONPatch: {value:?}"));
    };
    if patch.name() != "JSONPatch" {
        return Err(format!("not a JSONPatch: {}", patch.name()));
    }
    let field = |name: &str| -> Result<Option<Value>, String> {
        patch
            .field_value(name)
            .map(|v| {
                Cel::try_from(v)
                    .map_err(|e| e.to_string())
                    .and_then(|v| json(&v))
            })
            .transpose()
    };
    let mut op = serde_json::Map::new();
    op.insert("op".into(), field("op")?.unwrap_or(json!("")));
    op.insert("path".into(), field("path")?.unwrap_or(json!("")));
    if let Some(from) = field("from")?.filter(|f| f != "") {
        op.insert("from".into(), from);
    }
    if let Some(value) = field("value")? {
        op.insert("value".into(), value);
    }
    Ok(Value::Object(op))
}

/// What one MutatingAdmissionPolicy (bound once) does to a request.
#[derive(Debug, Clone, PartialEq)]
enum Mutation {
    /// Not matched, or a match condition is false.
    Skipped,
    /// The JSON Patch operations its expressions returned, in order.
    Patched(Vec<Value>),
}

/// Evaluates a MutatingAdmissionPolicy (`policy`, an object) for `admission`; `Err` for an
/// evaluation error (the policy's `failurePolicy` would apply).
fn mutate(
    policy: &Value,
    admission: &Admission,
    request: &Context<'static, 'static>,
) -> Result<Mutation, String> {
    let spec = &policy["spec"];
    let evaluation = match prepare(spec, admission, request)? {
        Matched::Skipped => return Ok(Mutation::Skipped),
        Matched::Evaluated(e) => e,
    };
    let mut ops = Vec::new();
    for mutation in spec["mutations"].as_array().into_iter().flatten() {
        if mutation["patchType"] != "JSONPatch" {
            return Err(format!("unsupported patchType {}", mutation["patchType"]));
        }
        let result = evaluation.eval(mutation["jsonPatch"]["expression"].as_str().unwrap_or(""))?;
        let Cel::List(items) = result else {
            return Err(format!("not a list of JSONPatch: {result:?}"));
        };
        for item in items.iter() {
            ops.push(operation(item)?);
        }
    }
    Ok(Mutation::Patched(ops))
}

/// One failed validation of a ValidatingAdmissionPolicy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PolicyFailure {
    /// The policy's name.
    pub(crate) policy: String,
    /// `messageExpression`'s result (trimmed; a multi-line or empty one falls back to `message`),
    /// as `validating/validator.go` decides it.
    pub(crate) message: String,
}

/// Evaluates a ValidatingAdmissionPolicy for `admission`: its failed validations in order.
fn validate(
    policy: &Value,
    admission: &Admission,
    request: &Context<'static, 'static>,
) -> Result<Vec<PolicyFailure>, String> {
    let spec = &policy["spec"];
    let name = policy["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let evaluation = match prepare(spec, admission, request)? {
        Matched::Skipped => return Ok(Vec::new()),
        Matched::Evaluated(e) => e,
    };
    let mut failures = Vec::new();
    for validation in spec["validations"].as_array().into_iter().flatten() {
        match evaluation.eval(validation["expression"].as_str().unwrap_or(""))? {
            Cel::Bool(true) => {}
            Cel::Bool(false) => {
                let fallback = validation["message"].as_str().unwrap_or("").to_string();
                let message = match validation["messageExpression"].as_str() {
                    Some(expression) => match evaluation.eval(expression)? {
                        Cel::String(s) if !s.trim().is_empty() && !s.contains('\n') => {
                            s.trim().to_string()
                        }
                        _ => fallback,
                    },
                    None => fallback,
                };
                failures.push(PolicyFailure {
                    policy: name.clone(),
                    message,
                });
            }
            other => return Err(format!("validation is not a bool: {other:?}")),
        }
    }
    Ok(failures)
}

/// What kube-apiserver answers after running every ValidatingAdmissionPolicy and its bindings
/// (`validating/dispatcher.go`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Answer {
    /// Each failure bound with `Deny`, by policy, in order.
    pub(crate) denials: Vec<PolicyFailure>,
    /// Each failure bound with `Warn`, by policy, in order.
    pub(crate) warnings: Vec<PolicyFailure>,
}

impl Answer {
    /// The message of the 403/422 kube-apiserver answers: the first denial only.
    pub(crate) fn denial_message(&self) -> Option<String> {
        self.denials.first().map(|d| {
            format!(
                "ValidatingAdmissionPolicy '{0}' with binding '{0}' denied request: {1}",
                d.policy, d.message
            )
        })
    }

    /// The warnings as kube-apiserver adds them to the response.
    pub(crate) fn warning_texts(&self) -> Vec<String> {
        self.warnings
            .iter()
            .map(|w| {
                format!(
                    "Validation failed for ValidatingAdmissionPolicy '{0}' with binding '{0}': {1}",
                    w.policy, w.message
                )
            })
            .collect()
    }
}

/// The rendered objects, as kube-apiserver would hold them.
pub(crate) struct RenderedPolicies {
    mutating: Vec<Value>,
    validating: Vec<(Value, Vec<String>)>,
}

impl RenderedPolicies {
    /// The policies of `objects` that have a binding (by `policyName`, named as the policy).
    pub(crate) fn new(objects: &[Value]) -> RenderedPolicies {
        let bound = |kind: &str, name: &str| {
            objects
                .iter()
                .find(|o| o["kind"] == kind && o["spec"]["policyName"] == name)
                .cloned()
        };
        let mut cluster = RenderedPolicies {
            mutating: Vec::new(),
            validating: Vec::new(),
        };
        for object in objects {
            let name = object["metadata"]["name"].as_str().unwrap_or("");
            match object["kind"].as_str() {
                Some("MutatingAdmissionPolicy")
                    if bound("MutatingAdmissionPolicyBinding", name).is_some() =>
                {
                    cluster.mutating.push(object.clone());
                }
                Some("ValidatingAdmissionPolicy") => {
                    if let Some(binding) = bound("ValidatingAdmissionPolicyBinding", name) {
                        let actions = binding["spec"]["validationActions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|a| a.as_str().map(String::from))
                            .collect();
                        cluster.validating.push((object.clone(), actions));
                    }
                }
                _ => {}
            }
        }
        cluster
    }

    /// The mutating policies' operations for `admission` (one policy: its operations), `None`
    /// when no policy matched.
    pub(crate) fn mutate(&self, admission: &Admission) -> Result<Option<Vec<Value>>, String> {
        let mut result = None;
        let request = admission.context();
        for policy in &self.mutating {
            if let Mutation::Patched(ops) = mutate(policy, admission, &request)? {
                result.get_or_insert_with(Vec::new).extend(ops);
            }
        }
        Ok(result)
    }

    /// Every validating policy's failures, sorted by the binding's actions.
    pub(crate) fn validate(&self, admission: &Admission) -> Result<Answer, String> {
        let mut answer = Answer::default();
        let request = admission.context();
        for (policy, actions) in &self.validating {
            for failure in validate(policy, admission, &request)? {
                for action in actions {
                    match action.as_str() {
                        "Deny" => answer.denials.push(failure.clone()),
                        "Warn" => answer.warnings.push(failure.clone()),
                        other => return Err(format!("unexpected validationAction {other}")),
                    }
                }
            }
        }
        Ok(answer)
    }
}
