//! The webhooks' `matchConditions` (deploy/base), evaluated as kube-apiserver evaluates them,
//! with a CEL engine (the `cel` crate): which requests reach jobgate at all.
//!
//! kube-apiserver binds `object` and `oldObject` (null on CREATE) as unstructured maps and
//! `request` as the AdmissionRequest without them (k8s.io/apiserver admission/plugin/cel
//! `CreateAdmissionRequest`). A webhook is called only when every condition is true; one false
//! condition skips it even when another errored; otherwise an error is handed to the webhook's
//! failurePolicy, so for the Fail webhook an error is a refused write (webhook/matchconditions
//! `Matcher.Match`). Every request below, and every AdmissionReview fixture, evaluates without
//! an error.
//!
//! The validating webhook is failurePolicy Fail: what is not sent cannot be refused by a jobgate
//! outage. Each "not sent" request is also reviewed by jobgate itself, which must find nothing
//! to report: not sending it loses no policy finding.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod kustomize;
}

use std::path::Path;
use std::sync::Arc;

use cel::{Context, Env, Program, Value as Cel};
use jobgate::admission::{Endpoint, review};
use jobgate::job::Config;
use serde_json::{Value, json};
use support::kustomize::{kubectl, render};

const RECOVERY_KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-terminate";
const NEW_RECOVERY_KEY: &str = "kueue.x-k8s.io/safe-to-forcefully-delete";

/// One webhook entry's compiled conditions.
struct Webhook {
    name: String,
    conditions: Vec<(String, Program)>,
}

/// kube-apiserver's limit (admissionregistration validation, `maxMatchConditions`).
const MAX_MATCH_CONDITIONS: usize = 64;

fn env() -> Arc<Env> {
    Arc::new(Env::stdlib())
}

fn webhooks(env: &Env) -> Vec<Webhook> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/base");
    let docs = render(kubectl(), &base);
    let mut out = Vec::new();
    for doc in docs.iter().filter(|d| {
        d["kind"]
            .as_str()
            .is_some_and(|k| k.ends_with("WebhookConfiguration"))
    }) {
        for w in doc["webhooks"].as_array().expect("webhooks") {
            let name = w["name"].as_str().expect("name").to_string();
            let list = w["matchConditions"].as_array().cloned().unwrap_or_default();
            assert!(
                list.len() <= MAX_MATCH_CONDITIONS,
                "{name}: {} conditions",
                list.len()
            );
            let conditions = list
                .iter()
                .map(|c| {
                    let cname = c["name"].as_str().expect("condition name").to_string();
                    let expr = c["expression"].as_str().expect("expression");
                    let program = env
                        .compile(expr)
                        .unwrap_or_else(|e| panic!("{name}/{cname} does not compile: {e}"));
                    (cname, program)
                })
                .collect();
            out.push(Webhook { name, conditions });
        }
    }
    out
}

fn webhook<'a>(all: &'a [Webhook], name: &str) -> &'a Webhook {
    all.iter()
        .find(|w| w.name == name)
        .unwrap_or_else(|| panic!("no webhook {name}"))
}

/// Whether kube-apiserver calls `webhook` for `request` (an AdmissionReview's `request`):
/// `Ok(true)` all conditions true, `Ok(false)` one false, `Err` an evaluation error.
fn sent(env: &Arc<Env>, webhook: &Webhook, request: &Value) -> Result<bool, String> {
    let mut ctx = Context::with_env(Arc::clone(env));
    let bind = |v: &Value| cel::to_value(v).expect("JSON is a CEL value");
    let mut bare = request.clone();
    let object = bare
        .as_object_mut()
        .and_then(|r| r.remove("object"))
        .unwrap_or(Value::Null);
    let old = bare
        .as_object_mut()
        .and_then(|r| r.remove("oldObject"))
        .unwrap_or(Value::Null);
    ctx.add_variable_from_value("object", bind(&object));
    ctx.add_variable_from_value("oldObject", bind(&old));
    ctx.add_variable_from_value("request", bind(&bare));
    let mut errors = Vec::new();
    for (name, program) in &webhook.conditions {
        match program.execute(&ctx) {
            Ok(Cel::Bool(false)) => return Ok(false),
            Ok(Cel::Bool(true)) => {}
            Ok(other) => errors.push(format!("{name}: not a bool: {other:?}")),
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(true)
    } else {
        Err(format!("{}: {}", webhook.name, errors.join("; ")))
    }
}

// ---------------------------------------------------------------------------------------------
// Requests as kube-apiserver sends them.

fn admission_request(operation: &str, object: &Value, old: Option<&Value>) -> Value {
    let kind = object["kind"].as_str().expect("kind");
    let resource = if kind == "Job" { "jobs" } else { "cronjobs" };
    let mut request = json!({
        "uid": "6b1c0d6e-0000-4000-8000-000000000001",
        "kind": {"group": "batch", "version": "v1", "kind": kind},
        "resource": {"group": "batch", "version": "v1", "resource": resource},
        "requestKind": {"group": "batch", "version": "v1", "kind": kind},
        "requestResource": {"group": "batch", "version": "v1", "resource": resource},
        "name": object["metadata"]["name"],
        "namespace": "ml-team",
        "operation": operation,
        "userInfo": {"username": "system:serviceaccount:kube-system:generic-garbage-collector"},
        "object": object,
        "dryRun": false,
    });
    if let Some(old) = old {
        request["oldObject"] = old.clone();
    }
    request
}

/// A Job opted into recovery that jobgate's default policies warn about (no
/// `podReplacementPolicy: Failed`, no Ignore rule on DisruptionTarget), as stored: defaulted,
/// with Kueue's queue label, suspended for Kueue, with the tracking finalizer's companions.
fn opted_in_job() -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "ml-team",
            "uid": "0b6c4a2e-5f0e-4f4e-9c1e-2f1f7c9d3a10",
            "resourceVersion": "4182",
            "generation": 1,
            "labels": {"kueue.x-k8s.io/queue-name": "team-a"},
            "annotations": {"team": "research"}
        },
        "spec": {
            "parallelism": 4,
            "completions": 4,
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
            "suspend": true,
            "manualSelector": false,
            "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "0b6c4a2e-5f0e-4f4e-9c1e-2f1f7c9d3a10"}},
            "template": {
                "metadata": {
                    "labels": {"batch.kubernetes.io/controller-uid": "0b6c4a2e-5f0e-4f4e-9c1e-2f1f7c9d3a10", "job-name": "train"},
                    "annotations": {RECOVERY_KEY: "true"}
                },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "trainer:1", "resources": {}}],
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler"
                }
            }
        },
        "status": {}
    })
}

fn cron_job() -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "ml-team", "uid": "c0", "resourceVersion": "7"},
        "spec": {
            "schedule": "0 3 * * *",
            "suspend": false,
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {
                "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
                "spec": {
                    "template": {
                        "metadata": {"annotations": {RECOVERY_KEY: "true"}},
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "etl:1"}]}
                    }
                }
            }
        },
        "status": {}
    })
}

/// `old`, changed by `edit`.
fn edited(old: &Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut new = old.clone();
    edit(&mut new);
    new
}

/// An object being deleted: deletionTimestamp set, finalizers left (the GC's by default).
fn deleting(job: &Value) -> Value {
    edited(job, |j| {
        j["metadata"]["deletionTimestamp"] = json!("2026-11-25T03:00:00Z");
        j["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        if j["metadata"]["finalizers"].is_null() {
            j["metadata"]["finalizers"] = json!(["foregroundDeletion", "orphan"]);
        }
    })
}

/// An everyday API call: its name (the docs' table rows), the AdmissionReview request, and
/// whether the validating webhook (Fail) is called after matchConditions.
struct Call {
    name: &'static str,
    request: Value,
    validated: bool,
}

fn update(name: &'static str, old: &Value, edit: impl FnOnce(&mut Value), validated: bool) -> Call {
    let new = edited(old, edit);
    Call {
        name,
        request: admission_request("UPDATE", &new, Some(old)),
        validated,
    }
}

fn everyday_calls() -> Vec<Call> {
    let job = opted_in_job();
    let running = edited(&job, |j| j["spec"]["suspend"] = json!(false));
    let cron = cron_job();
    let being_deleted = deleting(&running);
    vec![
        Call {
            name: "create a Job",
            request: admission_request("CREATE", &job, None),
            validated: true,
        },
        Call {
            name: "create a CronJob",
            request: admission_request("CREATE", &cron, None),
            validated: true,
        },
        // Kueue admits the Workload: spec.suspend true -> false and the flavor's node selector,
        // tolerations, labels and annotations merged into the template (podset.Merge).
        update(
            "Kueue unsuspends an admitted Job (suspend false, template nodeSelector)",
            &job,
            |j| {
                j["spec"]["suspend"] = json!(false);
                let t = &mut j["spec"]["template"];
                t["spec"]["nodeSelector"] =
                    json!({"cloud.google.com/gke-accelerator": "nvidia-h100"});
                t["spec"]["tolerations"] = json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]);
                t["metadata"]["labels"]["kueue.x-k8s.io/podset"] = json!("main");
                t["metadata"]["annotations"]["kueue.x-k8s.io/workload"] = json!("job-train-3f2a1");
            },
            false,
        ),
        update(
            "suspend a running Job (Kueue preemption, kubectl patch)",
            &running,
            |j| {
                j["spec"]["suspend"] = json!(true);
                j["spec"]["template"]["spec"]
                    .as_object_mut()
                    .expect("pod spec")
                    .remove("nodeSelector");
            },
            false,
        ),
        update(
            "garbage collector removes a finalizer from a Job being deleted",
            &being_deleted,
            |j| j["metadata"]["finalizers"] = json!(["foregroundDeletion"]),
            false,
        ),
        update(
            "a controller removes its own finalizer from a Job being deleted",
            &deleting(&edited(&running, |j| {
                j["metadata"]["finalizers"] = json!(["example.com/cleanup"])
            })),
            |j| {
                j["metadata"]
                    .as_object_mut()
                    .expect("metadata")
                    .remove("finalizers");
            },
            false,
        ),
        update(
            "label a Job",
            &running,
            |j| j["metadata"]["labels"]["owner"] = json!("alice"),
            false,
        ),
        update(
            "annotate a Job with an unrelated annotation",
            &running,
            |j| j["metadata"]["annotations"]["note"] = json!("rerun"),
            false,
        ),
        update(
            "scale a Job (spec.parallelism)",
            &running,
            |j| j["spec"]["parallelism"] = json!(8),
            false,
        ),
        update(
            "Kueue's partial admission lowers parallelism while suspended",
            &job,
            |j| j["spec"]["parallelism"] = json!(2),
            false,
        ),
        update(
            "change a CronJob's schedule",
            &cron,
            |c| c["spec"]["schedule"] = json!("0 4 * * *"),
            false,
        ),
        update(
            "change the image in a CronJob's job template",
            &cron,
            |c| {
                c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] =
                    json!("etl:2")
            },
            false,
        ),
        update(
            "suspend a CronJob",
            &cron,
            |c| c["spec"]["suspend"] = json!(true),
            false,
        ),
        update(
            "garbage collector removes a finalizer from a CronJob being deleted",
            &deleting(&cron),
            |c| c["metadata"]["finalizers"] = json!(["foregroundDeletion"]),
            false,
        ),
        // What a policy reads changes: sent.
        update(
            "add the recovery annotation to a Job's pod template",
            &edited(&running, |j| {
                j["spec"]["template"]["metadata"]
                    .as_object_mut()
                    .expect("template metadata")
                    .remove("annotations");
            }),
            |j| j["spec"]["template"]["metadata"]["annotations"] = json!({RECOVERY_KEY: "yes"}),
            true,
        ),
        update(
            "set Kueue's newer recovery annotation on a Job's pod template",
            &running,
            |j| j["spec"]["template"]["metadata"]["annotations"][NEW_RECOVERY_KEY] = json!("maybe"),
            true,
        ),
        update(
            "put the recovery annotation on the Job's own metadata",
            &running,
            |j| j["metadata"]["annotations"][RECOVERY_KEY] = json!("true"),
            true,
        ),
        update(
            "change a Job's podReplacementPolicy",
            &running,
            |j| j["spec"]["podReplacementPolicy"] = json!("Failed"),
            true,
        ),
        update(
            "set podReplacementPolicy in a CronJob's job template",
            &cron,
            |c| c["spec"]["jobTemplate"]["spec"]["podReplacementPolicy"] = json!("Failed"),
            true,
        ),
        update(
            "put the recovery annotation on a CronJob's job template metadata",
            &cron,
            |c| c["spec"]["jobTemplate"]["metadata"]["annotations"] = json!({RECOVERY_KEY: "true"}),
            true,
        ),
        update(
            "change the recovery annotation in a CronJob's pod template",
            &cron,
            |c| {
                c["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]
                    [RECOVERY_KEY] = json!("on")
            },
            true,
        ),
        update(
            "put the recovery annotation on a CronJob's own metadata",
            &cron,
            |c| c["metadata"]["annotations"] = json!({RECOVERY_KEY: "true"}),
            true,
        ),
    ]
}

/// jobgate's own answer at `/validate` with the default policy levels: (policy warnings,
/// policy denial causes).
fn policy_findings(request: &Value) -> Vec<String> {
    let body = serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    }))
    .expect("JSON");
    let outcome = review(Endpoint::Validate, &body, &Config::default());
    assert_eq!(outcome.http_status, 200);
    let answer: Value = serde_json::from_slice(&outcome.body).expect("JSON answer");
    policy_output(&answer)
}

/// The parts of an AdmissionReview answer that come from jobgate's policies: `jobgate:`
/// warnings and denial causes naming a jobgate policy.
fn policy_output(answer: &Value) -> Vec<String> {
    let response = &answer["response"];
    let warnings = response["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|w| w.starts_with("jobgate:"))
        .map(str::to_string);
    let causes = response["status"]["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["message"].as_str())
        .filter(|m| m.contains("(jobgate policy "))
        .map(str::to_string);
    warnings.chain(causes).collect()
}

// ---------------------------------------------------------------------------------------------
// The tests.

#[test]
fn every_condition_compiles_and_the_webhooks_carry_them() {
    let env = env();
    let all = webhooks(&env);
    let names: Vec<&str> = all.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mutate.jobgate.dev",
            "mutate-recovery.jobgate.dev",
            "validate.jobgate.dev"
        ]
    );
    for w in &all {
        assert!(!w.conditions.is_empty(), "{}: no matchConditions", w.name);
    }
}

/// The calls in docs/src/install.md's table: only the ones that change what a policy reads
/// reach the validating (Fail) webhook; the rest never wait on jobgate.
#[test]
fn only_writes_a_policy_can_judge_reach_the_fail_webhook() {
    let env = env();
    let all = webhooks(&env);
    let validate = webhook(&all, "validate.jobgate.dev");
    for call in everyday_calls() {
        let got = sent(&env, validate, &call.request)
            .unwrap_or_else(|e| panic!("{}: evaluation error (a Fail refusal): {e}", call.name));
        assert_eq!(got, call.validated, "{}: sent to /validate", call.name);
    }
}

/// Not sending a request loses nothing: jobgate itself, given every call that is not sent,
/// reports no policy finding (its policies ratchet on UPDATE). The sent UPDATEs of this list
/// each get a finding, so the list exercises what the conditions let through.
#[test]
fn requests_not_sent_are_ones_jobgates_policies_have_nothing_to_say_about() {
    let env = env();
    let all = webhooks(&env);
    let validate = webhook(&all, "validate.jobgate.dev");
    for call in everyday_calls() {
        let findings = policy_findings(&call.request);
        let sent = sent(&env, validate, &call.request).expect("no evaluation error");
        if !sent {
            assert!(
                findings.is_empty(),
                "{}: not sent, but jobgate reports {findings:?}",
                call.name
            );
        } else if call.request["operation"] == "UPDATE" && call.name.contains("recovery") {
            assert!(
                !findings.is_empty(),
                "{}: sent, and jobgate has a finding",
                call.name
            );
        }
    }
}

/// Every AdmissionReview fixture the webhooks' rules match evaluates without an error; every
/// one whose recorded answer carries a policy finding is sent to /validate, and every one whose
/// recorded /mutate answer patches is sent to the mutating webhooks.
#[test]
fn every_fixture_evaluates_and_every_answer_with_jobgate_output_is_sent() {
    let env = env();
    let all = webhooks(&env);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut checked = 0;
    let mut policy_answers = 0;
    let mut patches = 0;
    for (dir, webhook_names) in [
        ("validate", &["validate.jobgate.dev"][..]),
        ("validate-by-version", &["validate.jobgate.dev"][..]),
        (
            "mutate",
            &["mutate.jobgate.dev", "mutate-recovery.jobgate.dev"][..],
        ),
        (
            "mutate-recovery",
            &["mutate.jobgate.dev", "mutate-recovery.jobgate.dev"][..],
        ),
    ] {
        let dir = fixtures.join(dir);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("fixtures")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
            let Some(stem) = file.strip_suffix(".request.json") else {
                continue;
            };
            let review: Value =
                serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
            let request = &review["request"];
            let resource = request["resource"]["resource"].as_str().unwrap_or("");
            let operation = request["operation"].as_str().unwrap_or("");
            // The rules: batch/v1 jobs and cronjobs, CREATE and UPDATE (mutation: CronJob
            // UPDATE, Job CREATE).
            if !matches!(resource, "jobs" | "cronjobs")
                || !matches!(operation, "CREATE" | "UPDATE")
                || request["object"].is_null()
            {
                continue;
            }
            let answers: Vec<Value> = std::fs::read_dir(&dir)
                .expect("fixtures")
                .map(|e| e.expect("entry").path())
                .filter(|p| {
                    p.file_name().and_then(|f| f.to_str()).is_some_and(|f| {
                        f.starts_with(&format!("{stem}.")) && f.ends_with("response.json")
                    })
                })
                .map(|p| serde_json::from_slice(&std::fs::read(p).expect("read")).expect("JSON"))
                .collect();
            assert!(!answers.is_empty(), "{file}: no recorded answer");
            for name in webhook_names {
                let w = webhook(&all, name);
                let got = sent(&env, w, request)
                    .unwrap_or_else(|e| panic!("{file}: evaluation error on {name}: {e}"));
                checked += 1;
                if name.starts_with("validate") {
                    if answers.iter().any(|a| !policy_output(a).is_empty()) {
                        policy_answers += 1;
                        assert!(got, "{file}: a policy finding, but not sent to {name}");
                    }
                } else if answers.iter().any(|a| {
                    // The fixtures keep the patch decoded, as a JSON Patch array.
                    a["response"]["patch"]
                        .as_array()
                        .is_some_and(|p| !p.is_empty())
                }) {
                    patches += 1;
                    assert!(got, "{file}: patched, but not sent to {name}");
                }
            }
        }
    }
    eprintln!("{checked} evaluations, {policy_answers} policy answers, {patches} patches");
    assert!(checked >= 40, "only {checked} fixture evaluations");
    assert!(policy_answers >= 3, "only {policy_answers} policy answers");
    assert!(patches >= 5, "only {patches} patched answers");
}

/// Malformed or unusual objects the apiserver may still hand over (no template metadata, no
/// annotations anywhere, a CronJob without a job template's metadata) never make a condition
/// error: for the Fail webhook an error would be a refused write.
#[test]
fn sparse_objects_never_make_a_condition_error() {
    let env = env();
    let all = webhooks(&env);
    let bare_job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "c"}], "restartPolicy": "Never"}}}});
    let bare_cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {}}}}}});
    let requests = [
        admission_request("CREATE", &bare_job, None),
        admission_request("UPDATE", &bare_job, Some(&bare_job)),
        admission_request(
            "UPDATE",
            &edited(&bare_job, |j| j["spec"]["template"]["metadata"] = json!({})),
            Some(&bare_job),
        ),
        admission_request("CREATE", &bare_cron, None),
        admission_request("UPDATE", &bare_cron, Some(&bare_cron)),
        admission_request("UPDATE", &deleting(&bare_cron), Some(&bare_cron)),
    ];
    for request in &requests {
        for w in &all {
            sent(&env, w, request).unwrap_or_else(|e| panic!("{}: {e}\n{request}", w.name));
        }
    }
}
