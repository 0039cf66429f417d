//! Job templates held by other objects, against the real kube-apiserver: what `jobgate check`
//! says of a JobSet or a Kubeflow Trainer runtime, and of each Job its controller would create,
//! is what kube-apiserver says, with the owners' own CRDs (sigs.k8s.io/jobset v0.12.0,
//! github.com/kubeflow/trainer/v2 v2.3.0, fetched by tests/run):
//! - the owner, created with `dryRun=All&fieldValidation=Strict` (kubectl's default): refused
//!   (strict decoding, the CRD's schema) exactly when `check` refuses it at the owner, with the
//!   same message, or with the same causes;
//! - each Job `jobgate::embedded::controller_jobs` builds from an owner the apiserver accepts
//!   (with jobgate's mutation, as `check` prints it, applied), created the same way: refused
//!   exactly when `check` refuses that template, with the same causes at the template's path.
//!
//! No JobSet or Trainer controller runs: what the controllers build is jobgate's reading of
//! their code (src/embedded/); the apiserver judges what that reading sends.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod check_cli;
    pub mod controlplane;
    pub mod manifest;
}

use std::collections::BTreeSet;

use serde_json::{Value, json};

use jobgate::embedded::{Owner, controller_jobs_as_sent};
use support::check_cli::check;
use support::controlplane::{ControlPlane, repo, without_addresses};
use support::manifest::merge;

/// What kube-apiserver's OpenAPI schema validator adds when a quantity is a number that is not
/// an integer (`cpu: 0.5`): the CRD's `anyOf` of integer and string reports each branch, and its
/// CEL rules are skipped. `check` names the type error alone (docs/src/check.md).
const SCHEMA_BRANCH_REPORTS: [&str; 4] = [
    "must validate at least one schema (anyOf)",
    "Checked value must be of type integer",
    "in body must be of type integer: ",
    "some validation rules were not checked because the object was invalid",
];

/// kube-apiserver's verdict on a dry-run create: `Ok` or the Status it refused with.
fn dry_run_create(
    runtime: &tokio::runtime::Runtime,
    client: &kube::Client,
    path: &str,
    body: &Value,
) -> Result<(), Value> {
    let params = kube::api::PostParams {
        dry_run: true,
        ..Default::default()
    };
    let mut request = kube::core::Request::new(path)
        .create(&params, serde_json::to_vec(body).expect("JSON"))
        .expect("request");
    // kubectl's default (`--validate=strict`), as `check`'s.
    let uri = format!("{}&fieldValidation=Strict", request.uri());
    *request.uri_mut() = uri.parse().expect("URI");
    match runtime.block_on(client.request::<Value>(request)) {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) => Err(serde_json::to_value(&*status).expect("Status")),
        Err(e) => panic!("POST {path}: {e}"),
    }
}

/// The errors of a refusal as `check` words them: a 422's causes as `field: message` (each
/// under `prefix`, the template's path), else the message itself.
fn refusal(status: &Value, prefix: &str) -> BTreeSet<String> {
    let causes = status["details"]["causes"].as_array();
    match causes {
        Some(causes) if status["code"] == 422 && !causes.is_empty() => causes
            .iter()
            .map(|c| {
                let field = c["field"].as_str().unwrap_or_default();
                let field = if prefix.is_empty() {
                    field.to_string()
                } else {
                    format!("{prefix}.{field}")
                };
                let message = c["message"].as_str().unwrap_or_default();
                format!("{field}: {}", without_addresses(message))
            })
            .collect(),
        _ => [status["message"].as_str().unwrap_or_default().to_string()].into(),
    }
}

/// `check`'s kube-apiserver errors, as kube-apiserver answers one request: strict decoding errors
/// joined behind their one prefix (`runtime.NewStrictDecodingError`), each other error alone.
fn check_errors(object: &Value) -> BTreeSet<String> {
    const STRICT: &str = "strict decoding error: ";
    let messages: Vec<&str> = object["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["source"] == "kube-apiserver" && f["severity"] == "error")
        .filter_map(|f| f["message"].as_str())
        .collect();
    let strict: Vec<(&str, &str)> = messages
        .iter()
        .filter_map(|m| m.split_once(STRICT))
        .collect();
    match strict.first() {
        Some((head, _)) if strict.len() == messages.len() => {
            let fields: Vec<&str> = strict.iter().map(|(_, f)| *f).collect();
            [format!("{head}{STRICT}{}", fields.join(", "))].into()
        }
        _ => messages.iter().map(|m| m.to_string()).collect(),
    }
}

/// A JobSet with one replicated job whose Job spec is `job_spec` (its pod template added).
fn jobset(name: &str, job_spec: Value, pod_spec: Value) -> Value {
    let mut spec = job_spec;
    let mut pod = json!({"containers": [{"name": "main", "image": "registry.example/trainer:1"}]});
    merge(&mut pod, pod_spec);
    merge(&mut spec, json!({"template": {"spec": pod}}));
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": spec}}]},
    })
}

/// Job templates kube-apiserver accepts or refuses in each of the ways a Job's validation,
/// a JobSet's CRD schema and strict decoding can, as JobSets.
fn generated() -> Vec<(String, Value)> {
    let never = json!({"restartPolicy": "Never"});
    let exit_codes = |values: Value| {
        json!({"podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": values}}]}})
    };
    let cases = [
        ("plain", json!({}), json!({})),
        ("never", json!({}), never.clone()),
        (
            "replacement-with-pod-failure-policy",
            {
                let mut s = exit_codes(json!([1, 42]));
                merge(
                    &mut s,
                    json!({"podReplacementPolicy": "TerminatingOrFailed"}),
                );
                s
            },
            never.clone(),
        ),
        (
            "unordered-exit-codes",
            exit_codes(json!([42, 1])),
            never.clone(),
        ),
        (
            "exit-code-zero-in",
            exit_codes(json!([0, 1])),
            never.clone(),
        ),
        (
            "pod-failure-policy-with-default-restart",
            exit_codes(json!([1])),
            json!({}),
        ),
        (
            "per-index-not-indexed",
            json!({"completionMode": "NonIndexed", "backoffLimitPerIndex": 1, "completions": 2}),
            never.clone(),
        ),
        (
            "max-failed-without-per-index",
            json!({"maxFailedIndexes": 1, "completions": 2}),
            never.clone(),
        ),
        (
            "fail-index-without-per-index",
            json!({"completions": 2, "podFailurePolicy": {"rules": [
                {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]}}),
            never.clone(),
        ),
        (
            "negative-parallelism",
            json!({"parallelism": -1}),
            never.clone(),
        ),
        (
            "success-policy-not-indexed",
            json!({"completionMode": "NonIndexed", "completions": 2,
                "successPolicy": {"rules": [{"succeededCount": 1}]}}),
            never.clone(),
        ),
        (
            "replacement-unknown-value",
            json!({"podReplacementPolicy": "Sometimes"}),
            never.clone(),
        ),
        (
            "unknown-fields",
            json!({"backofLimit": 3}),
            json!({"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "registry.example/trainer:1", "imagePullPolcy": "Always"}]}),
        ),
        (
            "unreadable-quantity",
            json!({}),
            json!({"restartPolicy": "Never", "containers": [{"name": "main",
                "image": "registry.example/trainer:1",
                "resources": {"limits": {"memory": "1 Gi", "cpu": 0.5}}}]}),
        ),
        (
            "quantities-as-written",
            json!({}),
            json!({"restartPolicy": "Never", "containers": [{"name": "main",
                "image": "registry.example/trainer:1",
                "resources": {"limits": {"memory": "1Gi", "cpu": "500m"}}}]}),
        ),
    ];
    let mut out: Vec<(String, Value)> = cases
        .into_iter()
        .map(|(id, job, pod)| (id.to_string(), jobset(id, job, pod)))
        .collect();
    // The Job's name (`<jobset>-<replicated job>-<index>`) and its pods' `job-name` label
    // outgrow 63 characters before the JobSet's own name does.
    let long = "l".repeat(52);
    out.push(("long-name".into(), jobset(&long, json!({}), never)));
    out
}

/// The repository's JobSets and runtimes: the examples and the controllers' fixtures.
fn repository() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for dir in [
        "examples/manifests/good",
        "examples/manifests/bad",
        "examples/manifests/warn",
        "tests/fixtures/controllers",
    ] {
        let mut files: Vec<_> = std::fs::read_dir(repo().join(dir))
            .expect("read dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("read");
            for (i, doc) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
                let value = <Value as serde::Deserialize>::deserialize(doc).expect("YAML");
                let owner = Owner::of(
                    value["apiVersion"].as_str().unwrap_or_default(),
                    value["kind"].as_str().unwrap_or_default(),
                );
                if owner.is_some() {
                    let name = file.file_name().unwrap().to_string_lossy();
                    out.push((format!("{dir}/{name}#{i}"), value));
                }
            }
        }
    }
    out
}

/// The plural of an owner kind, for its REST path.
fn resource(owner: Owner) -> &'static str {
    match owner {
        Owner::JobSet => "jobsets",
        Owner::TrainingRuntime => "trainingruntimes",
        Owner::ClusterTrainingRuntime => "clustertrainingruntimes",
    }
}

#[test]
fn check_says_what_kube_apiserver_says_of_jobsets_runtimes_and_their_jobs() {
    let failures: Vec<String> = support::controlplane::control_plane_minors()
        .iter()
        .flat_map(|minor| compare_on(minor))
        .collect();
    assert!(
        failures.is_empty(),
        "check and kube-apiserver disagree:\n{}",
        failures.join("\n")
    );
}

/// Every case on a control plane of `minor`: what `check` and kube-apiserver disagree on.
fn compare_on(minor: &str) -> Vec<String> {
    let started = std::time::Instant::now();
    let cp = ControlPlane::start(minor, &["--controllers="]);
    for crd in [
        "jobset.x-k8s.io_jobsets.yaml",
        "trainer.kubeflow.org_trainingruntimes.yaml",
        "trainer.kubeflow.org_clustertrainingruntimes.yaml",
    ] {
        cp.install_crd(crd);
    }
    let ns = cp.namespace("templates");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = runtime.block_on(cp.client());
    let release = jobgate::job::version::KubernetesVersion::parse(minor).expect("a release");
    let mut cases = repository();
    cases.extend(generated());
    let (mut owners_refused, mut jobs, mut jobs_refused) = (0, 0, 0);
    let mut failures = Vec::new();
    for (id, mut object) in cases {
        let owner = Owner::of(
            object["apiVersion"].as_str().unwrap(),
            object["kind"].as_str().unwrap(),
        )
        .unwrap();
        let (group_version, plural) = (owner.api_version(), resource(owner));
        let path = if owner == Owner::ClusterTrainingRuntime {
            format!("/apis/{group_version}/{plural}")
        } else {
            object["metadata"]["namespace"] = json!(ns);
            format!("/apis/{group_version}/namespaces/{ns}/{plural}")
        };
        let out = check(
            &["-o", "json", "--kubernetes-version", minor, "-"],
            &object.to_string(),
            &[],
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{id}: check gave no JSON ({e}): {}",
                support::check_cli::text(&out.stderr)
            )
        });
        let objects = report["objects"].as_array().expect("objects");
        let at_owner: BTreeSet<String> = objects
            .iter()
            .filter(|o| o["template"].is_null())
            .flat_map(check_errors)
            .collect();
        let verdict = dry_run_create(&runtime, &client, &path, &object);
        match &verdict {
            Err(status) => {
                owners_refused += 1;
                let mut apiserver = refusal(status, "");
                apiserver.retain(|cause| !SCHEMA_BRANCH_REPORTS.iter().any(|r| cause.contains(r)));
                if apiserver != at_owner {
                    failures.push(format!(
                        "{id}: kube-apiserver refuses the {} with {apiserver:?}; check says {at_owner:?}",
                        owner.kind()
                    ));
                }
                continue;
            }
            Ok(()) if !at_owner.is_empty() => {
                failures.push(format!(
                    "{id}: kube-apiserver accepts the {}; check refuses it: {at_owner:?}",
                    owner.kind()
                ));
                continue;
            }
            Ok(()) => {}
        }
        let built = controller_jobs_as_sent(owner, object.clone(), &ns, release)
            .unwrap_or_else(|e| panic!("{id}: the controller's Jobs: {e}"));
        for (template, job) in built {
            jobs += 1;
            let Some(said) = objects.iter().find(|o| o["template"] == template.as_str()) else {
                failures.push(format!("{id}: check says nothing of {}", template));
                continue;
            };
            // What jobgate's mutating webhook would send on: `check`'s patch on the Job.
            let mut sent = job;
            let patch: json_patch::Patch =
                serde_json::from_value(said["patch"].clone()).expect("check's patch");
            json_patch::patch(&mut sent, &patch).expect("check's patch applies to the Job");
            let expected = check_errors(said);
            let path = format!("/apis/batch/v1/namespaces/{ns}/jobs");
            match dry_run_create(&runtime, &client, &path, &sent) {
                Ok(()) if expected.is_empty() => {}
                Ok(()) => failures.push(format!(
                    "{id} {}: kube-apiserver accepts the Job; check refuses it: {expected:?}",
                    template
                )),
                Err(status) => {
                    jobs_refused += 1;
                    let apiserver = refusal(&status, &template);
                    if apiserver != expected {
                        failures.push(format!(
                            "{id} {}: kube-apiserver refuses the Job with {apiserver:?}; check says {expected:?}",
                            template
                        ));
                    }
                }
            }
        }
    }
    println!(
        "Kubernetes {minor}: {owners_refused} owners refused, {jobs} controller Jobs ({jobs_refused} refused) compared with check ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    failures
        .into_iter()
        .map(|f| format!("{minor} {f}"))
        .collect()
}
