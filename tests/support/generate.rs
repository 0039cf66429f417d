//! Generated Job and CronJob writes for the differential tests: a seeded generator (the same
//! seed gives the same cases on every machine and every run), covering what kube-apiserver's Job
//! validation reads and what changed between releases:
//!
//! - counts: `parallelism`, `completions`, `completionMode`, `backoffLimit`,
//!   `backoffLimitPerIndex`, `maxFailedIndexes` (with the Indexed limits), `activeDeadlineSeconds`,
//!   `ttlSecondsAfterFinished`, `suspend`;
//! - `podFailurePolicy` rules: every action (and wrong ones), `onExitCodes` with each operator,
//!   container names, ordered, unordered, duplicate, zero and too many values; `onPodConditions`
//!   with types (qualified names and not) and statuses (unset, wrong); both or neither;
//! - `podReplacementPolicy`, `successPolicy` (indexes, counts), `managedBy`;
//! - the pod template: `restartPolicy`, labels, annotations, init containers, resource quantities
//!   in several spellings (`1`, `1000m`, `1.0`, `0.5`, `1Gi`, `1024Mi`, `1073741824`, `1e9`,
//!   JSON numbers), the jobgate recovery opt-in;
//! - UPDATEs of a stored valid object, its `status` as the Job controller writes it (`startTime`,
//!   `active`, the `Suspended` condition): mutable and immutable fields, KEP-5440 changes of a
//!   suspended Job's template (scheduling directives, container resources), quantities respelled.
//!
//! Everything the Job rules do not read stays valid (names, images), so a verdict is about the
//! Job's own fields.

use serde_json::{Map, Value, json};

use super::cases::{Case, Write, merge_diff};

/// SplitMix64: small, seedable, the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// 0..n.
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True `percent`% of the time.
    fn percent(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

/// `creates` CREATE cases and `updates` UPDATE cases from `seed`; ids `gen:create:N`,
/// `gen:update:N`.
pub fn generated(seed: u64, creates: usize, updates: usize) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    let mut cases = Vec::with_capacity(creates + updates);
    for i in 0..creates {
        cases.push(Case {
            id: format!("gen:create:{i}"),
            // Half of them valid by construction, so that allowed and denied both abound.
            write: Write::Create(object(
                &mut rng,
                &format!("gc-{i}"),
                if i % 2 == 0 {
                    Validity::Valid
                } else {
                    Validity::Any
                },
            )),
        });
    }
    for i in 0..updates {
        let name = format!("gu-{i}");
        let mut old = object(&mut rng, &name, Validity::Valid);
        let mut new = old.clone();
        for _ in 0..1 + rng.below(3) {
            change(&mut rng, &mut new);
        }
        let spec = spec_of(&mut new);
        if spec["completionMode"] == "Indexed"
            && spec["successPolicy"].is_object()
            && spec["completions"].is_null()
        {
            // See `job_spec`: upstream's validation would panic.
            spec["completions"] = json!(1);
        }
        if old["kind"] == "Job" {
            old["status"] = status(&mut rng, &old);
        }
        let mut old_spec = old.clone();
        old_spec.as_object_mut().expect("object").remove("status");
        cases.push(Case {
            id: format!("gen:update:{i}"),
            write: Write::Update {
                patch: merge_diff(&old_spec, &new),
                old,
            },
        });
    }
    cases
}

/// Whether every choice must give an object the apiserver accepts (an UPDATE's stored object).
#[derive(Clone, Copy, PartialEq)]
enum Validity {
    Any,
    Valid,
}

/// A Job (mostly) or a CronJob named `name`.
fn object(rng: &mut Rng, name: &str, validity: Validity) -> Value {
    let spec = job_spec(rng, validity);
    let mut metadata = json!({ "name": name });
    if rng.percent(8) {
        metadata["annotations"] = json!({
            "jobgate.dev/failure-recovery": rng.pick(&["enabled", "disabled", "Enabled"]),
        });
    }
    if rng.percent(80) {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec})
    } else {
        let mut job_template = json!({ "spec": spec });
        if rng.percent(30) {
            job_template["metadata"] = json!({"labels": {"app": "nightly"}});
        }
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": metadata,
            "spec": {"schedule": rng.pick(&["*/5 * * * *", "0 3 * * *", "@hourly"]),
                "jobTemplate": job_template}})
    }
}

/// Sets `key` to `value` when `Some`.
fn set(spec: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        spec.insert(key.to_string(), v);
    }
}

fn job_spec(rng: &mut Rng, validity: Validity) -> Value {
    let valid = validity == Validity::Valid;
    let mut spec = Map::new();
    let indexed = rng.percent(40);
    // Counts: mostly small, sometimes at the Indexed limits or negative.
    let count = |rng: &mut Rng| -> Option<Value> {
        match rng.below(20) {
            0..=5 => None,
            6..=15 => Some(json!(rng.pick(&[0, 1, 2, 3, 4, 8]))),
            16 => Some(json!(rng.pick(&[100000, 100001, 10001, 200000]))),
            17 if !valid => Some(json!(-1)),
            _ => Some(json!(rng.pick(&[1, 5, 10]))),
        }
    };
    let completions = if indexed && (valid || rng.percent(90)) {
        Some(json!(if valid {
            rng.pick(&[1, 2, 4, 8])
        } else {
            rng.pick(&[1, 2, 4, 8, 100001, 0])
        }))
    } else {
        count(rng)
    };
    let parallelism = if valid {
        Some(json!(rng.pick(&[1, 2, 4])))
    } else {
        count(rng)
    };
    set(&mut spec, "parallelism", parallelism);
    set(&mut spec, "completions", completions.clone());
    if indexed {
        spec.insert("completionMode".into(), json!("Indexed"));
    } else if rng.percent(30) {
        let modes: &[&str] = if valid {
            &["NonIndexed"]
        } else {
            &["NonIndexed", "NonIndexed", "indexed", ""]
        };
        spec.insert("completionMode".into(), json!(rng.pick(modes)));
    }
    if rng.percent(30) {
        let limits: &[i64] = if valid { &[0, 3, 6] } else { &[0, 3, 6, -1] };
        spec.insert("backoffLimit".into(), json!(rng.pick(limits)));
    }
    if rng.percent(10) {
        spec.insert(
            "activeDeadlineSeconds".into(),
            json!(if valid { 600 } else { rng.pick(&[600, 0, -5]) }),
        );
    }
    if rng.percent(10) {
        spec.insert(
            "ttlSecondsAfterFinished".into(),
            json!(if valid { 100 } else { rng.pick(&[100, 0, -1]) }),
        );
    }
    let per_index = if (indexed || !valid) && rng.percent(if indexed { 45 } else { 8 }) {
        let v = if valid {
            rng.pick(&[0, 1, 2])
        } else {
            rng.pick(&[0, 1, 2, -1])
        };
        spec.insert("backoffLimitPerIndex".into(), json!(v));
        true
    } else {
        false
    };
    if (per_index || !valid) && rng.percent(if per_index { 50 } else { 6 }) {
        let c = completions.as_ref().and_then(Value::as_i64).unwrap_or(1);
        let v = if valid {
            rng.pick(&[0, c.min(1), c])
        } else {
            rng.pick(&[0, 1, c, c + 1, 100001, 10001, -1])
        };
        spec.insert("maxFailedIndexes".into(), json!(v));
    }
    if rng.percent(40) {
        spec.insert("suspend".into(), json!(rng.percent(60)));
    }
    let failure_policy = rng.percent(55);
    let init_container = rng.percent(35);
    if failure_policy {
        spec.insert(
            "podFailurePolicy".into(),
            pod_failure_policy(rng, valid, per_index, init_container),
        );
    }
    // An Indexed Job with a successPolicy and no completions panics kube-apiserver's
    // validateSuccessPolicyRule (it dereferences spec.completions; the request fails with a 500).
    let success_policy_crashes = indexed && completions.is_none();
    if rng.percent(if indexed { 30 } else { 5 }) && (indexed || !valid) && !success_policy_crashes {
        spec.insert(
            "successPolicy".into(),
            success_policy(rng, valid, completions.as_ref().and_then(Value::as_i64)),
        );
    }
    if rng.percent(45) {
        let choices: Vec<Value> = match (valid, failure_policy) {
            (true, true) => vec![json!("Failed")],
            (true, false) => vec![json!("Failed"), json!("TerminatingOrFailed")],
            _ => vec![
                json!("Failed"),
                json!("TerminatingOrFailed"),
                json!("TerminatingOrFailed"),
                json!(""),
                json!("Bogus"),
                Value::Null,
            ],
        };
        spec.insert("podReplacementPolicy".into(), rng.pick(&choices));
    }
    if rng.percent(12) {
        let choices: &[&str] = if valid {
            &[
                "kubernetes.io/job-controller",
                "kueue.x-k8s.io/multikueue",
                "example.com/ctl",
            ]
        } else {
            &[
                "kubernetes.io/job-controller",
                "kueue.x-k8s.io/multikueue",
                "example.com/ctl",
                "not a path",
                "",
                "controller",
                "example.com/a/b",
                "example.com/0123456789012345678901234567890123456789012345678901234",
            ]
        };
        spec.insert("managedBy".into(), json!(rng.pick(choices)));
    }
    spec.insert(
        "template".into(),
        pod_template(rng, valid, failure_policy, init_container),
    );
    Value::Object(spec)
}

const EXIT_CODES: [i64; 9] = [-1, 0, 1, 2, 3, 42, 127, 255, 137];

fn exit_codes(rng: &mut Rng, valid: bool, operator: &str) -> Value {
    if !valid && rng.percent(3) {
        // Too many: 256.
        return json!((1..=256).collect::<Vec<i64>>());
    }
    let n = if valid {
        1 + rng.below(4)
    } else {
        rng.below(5)
    };
    let mut values: Vec<i64> = (0..n).map(|_| rng.pick(&EXIT_CODES)).collect();
    if valid || rng.percent(60) {
        values.sort();
        values.dedup();
    }
    if valid && operator == "In" {
        values.retain(|v| *v != 0);
        if values.is_empty() {
            values.push(1);
        }
    }
    json!(values)
}

fn pod_failure_policy(rng: &mut Rng, valid: bool, per_index: bool, init_container: bool) -> Value {
    if !valid && rng.percent(5) {
        return rng.pick(&[json!({}), json!({"rules": []}), json!({"rules": null})]);
    }
    let n = if !valid && rng.percent(3) {
        21
    } else {
        1 + rng.below(3)
    };
    let mut rules = Vec::new();
    for _ in 0..n {
        let mut rule = Map::new();
        let actions: Vec<Option<&str>> = match (valid, per_index) {
            (true, true) => vec![
                Some("FailJob"),
                Some("FailIndex"),
                Some("Ignore"),
                Some("Count"),
            ],
            (true, false) => vec![Some("FailJob"), Some("Ignore"), Some("Count")],
            _ => vec![
                Some("FailJob"),
                Some("FailIndex"),
                Some("Ignore"),
                Some("Count"),
                Some("FailJob"),
                Some("Ignore"),
                Some(""),
                Some("failjob"),
                None,
            ],
        };
        if let Some(a) = rng.pick(&actions) {
            rule.insert("action".into(), json!(a));
        }
        let which = if valid { rng.below(2) } else { rng.below(12) };
        if matches!(which, 0 | 2..=6 | 10) {
            let operators: &[Option<&str>] = if valid {
                &[Some("In"), Some("NotIn")]
            } else {
                &[
                    Some("In"),
                    Some("NotIn"),
                    Some("In"),
                    Some(""),
                    Some("Between"),
                    None,
                ]
            };
            let operator = rng.pick(operators);
            let mut codes = Map::new();
            if rng.percent(40) {
                let names: &[&str] = match (valid, init_container) {
                    (true, true) => &["main", "init"],
                    (true, false) => &["main"],
                    _ => &["main", "init", "sidecar", ""],
                };
                codes.insert("containerName".into(), json!(rng.pick(names)));
            }
            if let Some(op) = operator {
                codes.insert("operator".into(), json!(op));
            }
            codes.insert(
                "values".into(),
                exit_codes(rng, valid, operator.unwrap_or("")),
            );
            rule.insert("onExitCodes".into(), Value::Object(codes));
        }
        if matches!(which, 1 | 7..=9 | 10) {
            let m = if !valid && rng.percent(3) {
                21
            } else {
                1 + rng.below(2)
            };
            let mut patterns = Vec::new();
            for _ in 0..m {
                let types: &[&str] = if valid {
                    &[
                        "DisruptionTarget",
                        "ConfigIssue",
                        "example.com/Custom-Condition_1",
                    ]
                } else {
                    &[
                        "DisruptionTarget",
                        "ConfigIssue",
                        "example.com/Custom",
                        "",
                        "bad type!",
                        "a/b/c",
                        "-leading",
                        "x123456789012345678901234567890123456789012345678901234567890123",
                    ]
                };
                let mut p = json!({ "type": rng.pick(types) });
                let statuses: &[Option<&str>] = if valid {
                    &[Some("True"), Some("False"), Some("Unknown"), None]
                } else {
                    &[
                        Some("True"),
                        Some("False"),
                        Some("Unknown"),
                        None,
                        Some(""),
                        Some("Maybe"),
                    ]
                };
                if let Some(s) = rng.pick(statuses) {
                    p["status"] = json!(s);
                }
                patterns.push(p);
            }
            rule.insert("onPodConditions".into(), json!(patterns));
        }
        rules.push(Value::Object(rule));
    }
    json!({ "rules": rules })
}

fn success_policy(rng: &mut Rng, valid: bool, completions: Option<i64>) -> Value {
    if !valid && rng.percent(10) {
        return json!({"rules": []});
    }
    let c = completions.unwrap_or(1).max(1);
    let mut rules = Vec::new();
    for _ in 0..1 + rng.below(2) {
        let mut rule = Map::new();
        let indexes: Vec<String> = if valid {
            vec!["0".into(), format!("0-{}", c - 1), format!("{}", c - 1)]
        } else {
            vec![
                "0".into(),
                format!("0-{}", c - 1),
                "1,3".into(),
                "2-1".into(),
                "0,0".into(),
                "x".into(),
                "5-10".into(),
                "0-1-2".into(),
                format!("{c}"),
                "".into(),
            ]
        };
        let with_indexes = rng.percent(70);
        if with_indexes {
            let i = rng.pick(&indexes);
            if valid && i == "0-0" {
                rule.insert("succeededIndexes".into(), json!("0"));
            } else {
                rule.insert("succeededIndexes".into(), json!(i));
            }
        }
        if !with_indexes || rng.percent(40) {
            let counts: Vec<i64> = if valid { vec![1] } else { vec![0, 1, 2, 5, -1] };
            rule.insert("succeededCount".into(), json!(rng.pick(&counts)));
        }
        if !valid && rng.percent(5) {
            rule.clear();
        }
        rules.push(Value::Object(rule));
    }
    json!({ "rules": rules })
}

/// One value in several spellings: `(resource, spellings)`.
const CPU: [&[&str]; 3] = [
    &["1", "1000m", "1.0", "#1"],
    &["500m", "0.5", "#0.5"],
    &["2", "2000m", "2e0", "#2"],
];
const MEMORY: [&[&str]; 3] = [
    &["1Gi", "1024Mi", "1073741824", "#1073741824"],
    &["512Mi", "0.5Gi", "536870912"],
    &["1G", "1000M", "1e9", "#1000000000"],
];
/// What kube-apiserver cannot decode as a quantity.
const NOT_QUANTITIES: [&str; 4] = ["1.5.5", "abc", "1 Gi", "1Gb"];

/// A spelling as JSON: `#n` is the JSON number n.
fn quantity(spelling: &str) -> Value {
    match spelling.strip_prefix('#') {
        Some(n) => serde_json::from_str(n).expect("a JSON number"),
        None => json!(spelling),
    }
}

fn resources(rng: &mut Rng, valid: bool) -> Value {
    let cpu = rng.pick(&CPU);
    let memory = rng.pick(&MEMORY);
    let mut requests = json!({
        "cpu": quantity(rng.pick(cpu)),
        "memory": quantity(rng.pick(memory)),
    });
    if !valid && rng.percent(3) {
        requests["cpu"] = json!(rng.pick(&NOT_QUANTITIES));
    }
    if rng.percent(30) {
        // Limits equal to the requests (in another spelling): never below them.
        let limits = json!({
            "cpu": quantity(rng.pick(cpu)),
            "memory": quantity(rng.pick(memory)),
        });
        json!({"requests": requests, "limits": limits})
    } else {
        json!({ "requests": requests })
    }
}

fn pod_template(rng: &mut Rng, valid: bool, failure_policy: bool, init_container: bool) -> Value {
    let mut metadata = Map::new();
    if rng.percent(40) {
        metadata.insert(
            "labels".into(),
            json!({"app": rng.pick(&["train", "etl"]), "team": "ml-a"}),
        );
    }
    if rng.percent(30) {
        let mut annotations = Map::new();
        annotations.insert("example.com/note".into(), json!("x"));
        if rng.percent(50) {
            annotations.insert(
                "kueue.x-k8s.io/safe-to-forcefully-terminate".into(),
                json!(rng.pick(&["true", "false", "True"])),
            );
        }
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    let restart: Vec<Option<&str>> = match (valid, failure_policy) {
        (true, true) => vec![Some("Never")],
        (true, false) => vec![Some("Never"), Some("OnFailure")],
        _ => vec![
            Some("Never"),
            Some("Never"),
            Some("Never"),
            Some("OnFailure"),
            Some("Always"),
            None,
            Some("Sometimes"),
        ],
    };
    let mut spec = Map::new();
    if let Some(r) = rng.pick(&restart) {
        spec.insert("restartPolicy".into(), json!(r));
    }
    let mut main = json!({"name": "main", "image": "registry.example/train:1"});
    if rng.percent(60) {
        main["resources"] = resources(rng, valid);
    }
    spec.insert("containers".into(), json!([main]));
    if init_container {
        let mut init = json!({"name": "init", "image": "registry.example/init:1"});
        if rng.percent(50) {
            init["resources"] = resources(rng, valid);
        }
        spec.insert("initContainers".into(), json!([init]));
    }
    if rng.percent(15) {
        spec.insert(
            "nodeSelector".into(),
            json!({"cloud.google.com/gke-accelerator": "nvidia-l4"}),
        );
    }
    let mut template = Map::new();
    if !metadata.is_empty() {
        template.insert("metadata".into(), Value::Object(metadata));
    }
    template.insert("spec".into(), Value::Object(spec));
    Value::Object(template)
}

/// The Job controller's `status` for a stored Job: never started, running, or suspended after
/// it started (the `Suspended` condition, pods gone or not yet).
fn status(rng: &mut Rng, job: &Value) -> Value {
    let suspended = job["spec"]["suspend"] == true;
    let started = json!("2026-11-21T19:30:01Z");
    let condition = json!({"type": "Suspended", "status": "True", "reason": "JobSuspended",
        "message": "Job suspended", "lastProbeTime": "2026-11-21T19:40:00Z",
        "lastTransitionTime": "2026-11-21T19:40:00Z"});
    match rng.below(6) {
        0 => json!({}),
        1 => json!({"startTime": started, "active": 1 + rng.below(3), "ready": 0}),
        2 if suspended => {
            json!({"startTime": started, "active": 0, "conditions": [condition]})
        }
        3 if suspended => json!({"startTime": started, "active": 1, "conditions": [condition]}),
        4 if suspended => json!({"active": 0, "conditions": [condition]}),
        5 => json!({"startTime": started, "active": 0}),
        _ => json!({"startTime": started, "active": 0, "conditions": [condition]}),
    }
}

/// The Job spec inside `object` (a Job's `spec`, a CronJob's `spec.jobTemplate.spec`).
fn spec_of(object: &mut Value) -> &mut Value {
    if object["kind"] == "CronJob" {
        &mut object["spec"]["jobTemplate"]["spec"]
    } else {
        &mut object["spec"]
    }
}

/// One change a client makes to a stored object.
fn change(rng: &mut Rng, object: &mut Value) {
    let cron_job = object["kind"] == "CronJob";
    if cron_job && rng.percent(10) {
        object["spec"]["schedule"] = json!(rng.pick(&["0 4 * * *", "*/10 * * * *"]));
        return;
    }
    let spec = spec_of(object);
    let completions = spec["completions"].as_i64();
    match rng.below(22) {
        0 => spec["parallelism"] = json!(rng.pick(&[0, 1, 3, 8, -1])),
        1 => spec["completions"] = json!(rng.pick(&[1, 3, 6])),
        2 => {
            // Elastic Indexed Jobs: completions with parallelism in tandem.
            let n = rng.pick(&[1, 2, 6]);
            spec["completions"] = json!(n);
            spec["parallelism"] = json!(n);
        }
        3 => {
            spec["completionMode"] = json!(if spec["completionMode"] == "Indexed" {
                "NonIndexed"
            } else {
                "Indexed"
            })
        }
        4 => spec["backoffLimitPerIndex"] = json!(rng.pick(&[0, 1, 3])),
        5 => spec["maxFailedIndexes"] = json!(rng.pick(&[0, 1, completions.unwrap_or(1)])),
        6 => {
            let per_index = !spec["backoffLimitPerIndex"].is_null();
            let init_container = spec["template"]["spec"]["initContainers"].is_array();
            spec["podFailurePolicy"] = pod_failure_policy(rng, true, per_index, init_container)
        }
        7 => {
            if let Some(m) = spec.as_object_mut() {
                m.remove("podFailurePolicy");
            }
        }
        8 => spec["successPolicy"] = success_policy(rng, true, completions),
        9 => {
            spec["managedBy"] =
                json!(rng.pick(&["example.com/other", "kubernetes.io/job-controller"]))
        }
        10 => {
            spec["podReplacementPolicy"] =
                json!(rng.pick(&["Failed", "TerminatingOrFailed", "Bogus"]))
        }
        11 => spec["suspend"] = json!(spec["suspend"] != true),
        12 => spec["activeDeadlineSeconds"] = json!(rng.pick(&[60, 3600])),
        13 => spec["backoffLimit"] = json!(rng.pick(&[0, 2, 10])),
        14 => {
            spec["template"]["metadata"]["labels"]["queue"] = json!(rng.pick(&["a", "b"]));
        }
        15 => {
            spec["template"]["metadata"]["annotations"]["example.com/note"] =
                json!(rng.pick(&["y", "z"]));
        }
        16 => {
            spec["template"]["spec"]["nodeSelector"] =
                json!({"cloud.google.com/gke-nodepool": rng.pick(&["a100", "h100"])});
        }
        17 => {
            spec["template"]["spec"]["tolerations"] = json!([{"key": "nvidia.com/gpu",
                "operator": "Exists", "effect": "NoSchedule"}]);
        }
        18 => {
            spec["template"]["spec"]["schedulingGates"] = json!([{"name": "example.com/gate"}]);
        }
        19 => change_resources(rng, &mut spec["template"]["spec"]["containers"][0]),
        20 => {
            spec["template"]["spec"]["containers"][0]["image"] = json!("registry.example/train:2")
        }
        _ => {
            if spec["template"]["spec"]["initContainers"].is_array() {
                change_resources(rng, &mut spec["template"]["spec"]["initContainers"][0]);
            } else {
                spec["template"]["spec"]["containers"][0]["env"] =
                    json!([{"name": "STEP", "value": "2"}]);
            }
        }
    }
}

/// Respells a container's quantities (the same values), or changes their values (requests and
/// limits alike, so limits never fall below requests).
fn change_resources(rng: &mut Rng, container: &mut Value) {
    let respell = rng.percent(50);
    let cpu = rng.pick(&CPU);
    let memory = rng.pick(&MEMORY);
    let resources = &mut container["resources"];
    for list in ["requests", "limits"] {
        if list == "limits" && resources["limits"].is_null() {
            continue;
        }
        for (name, groups) in [("cpu", cpu), ("memory", memory)] {
            let spelling = if respell {
                // The same value in another spelling, when the value is one of ours.
                let current = &resources[list][name];
                let group = CPU
                    .iter()
                    .chain(MEMORY.iter())
                    .find(|g| g.iter().any(|s| quantity(s) == *current))
                    .copied()
                    .unwrap_or(groups);
                rng.pick(group)
            } else {
                rng.pick(groups)
            };
            resources[list][name] = quantity(spelling);
        }
    }
}
