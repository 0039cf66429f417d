//! jobgate on the admission path of a real kube-apiserver (built from k8s.io/kubernetes, see
//! tests/support/controlplane.rs): the apiserver calls a running `jobgate serve` through the
//! shipped webhook configurations (deploy/base), pointed at it with a `url` clientConfig and the
//! test CA. What reaches the client (the stored object, warnings, denials) is what a user sees.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod controlplane;
    pub mod doc_shell;
    pub mod kustomize;
    pub mod manifest;
    pub mod prometheus;
    pub mod serve;
    pub mod shipped_webhooks;
    pub mod webhooks;
}

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use support::controlplane::ControlPlane;
use support::doc_shell;
use support::manifest::job;
use support::serve::Jobgate;
use support::webhooks::reviews;

/// The shipped webhook configurations, pointed at `jg` and limited to namespace `ns`
/// (`support::webhooks::install`), applied and returned.
fn install_webhooks(cp: &ControlPlane, jg: &Jobgate, ns: &str) -> Vec<Value> {
    support::webhooks::install(cp, jg, ns, &[ns], &[])
}

/// A CronJob whose job template is like [`job`]'s.
fn cronjob(name: &str, job_spec: Value) -> Value {
    let mut template = job(name, json!({}), job_spec);
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": { "name": name },
        "spec": {
            "schedule": "0 3 * * *",
            "jobTemplate": { "spec": template["spec"].take() },
        },
    })
}

/// Opted into recovery with `TerminatingOrFailed`: kube-apiserver accepts it (no
/// podFailurePolicy), jobgate's `recovery-needs-failed` policy does not.
fn opted_in_terminating() -> Value {
    job(
        "opted-in-terminating",
        json!({}),
        json!({
            "podReplacementPolicy": "TerminatingOrFailed",
            "template": { "metadata": { "annotations": {
                "kueue.x-k8s.io/safe-to-forcefully-terminate": "true",
            }}},
        }),
    )
}

/// kubectl's `Warning: ` lines on standard error.
fn warnings(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("Warning: "))
        .map(str::to_string)
        .collect()
}

/// How many more reviews each `endpoint/operation` has in `after` than in `before`.
fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(k, v)| {
            let d = v - before.get(k).copied().unwrap_or(0);
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}

#[test]
fn the_stored_objects_carry_jobgates_mutation_and_the_client_sees_its_warnings() {
    let cp = ControlPlane::shared();
    let ns = cp.namespace("mutation");
    let jg = Jobgate::start(&[]);
    install_webhooks(cp, &jg, &ns);

    // KEP-3939's default inside a CronJob's job template, which kube-apiserver does not default
    // (batch/v1 SetDefaults_Job runs on Jobs only): only jobgate's patch can put it there.
    let (stored, _) = cp.kubectl_json(
        &["create", "-n", &ns, "-o", "json", "-f", "-"],
        Some(&cronjob("nightly", json!({})).to_string()),
    );
    assert_eq!(
        stored.pointer("/spec/jobTemplate/spec/podReplacementPolicy"),
        Some(&json!("TerminatingOrFailed")),
        "the stored CronJob: {stored:#}"
    );

    // The recovery opt-in: jobgate's annotation on the Job puts Kueue's on the pod template.
    let opted_in = job(
        "opted-in",
        json!({ "jobgate.dev/failure-recovery": "enabled" }),
        json!({
            "podReplacementPolicy": "Failed",
            "podFailurePolicy": { "rules": [{
                "action": "Ignore",
                "onPodConditions": [{ "type": "DisruptionTarget" }],
            }]},
        }),
    );
    let (stored, _) = cp.kubectl_json(
        &["create", "-n", &ns, "-o", "json", "-f", "-"],
        Some(&opted_in.to_string()),
    );
    assert_eq!(
        stored.pointer(
            "/spec/template/metadata/annotations/kueue.x-k8s.io~1safe-to-forcefully-terminate"
        ),
        Some(&json!("true")),
        "the stored Job: {stored:#}"
    );
    let read_back = cp.kubectl_ok(
        &["get", "job", "opted-in", "-n", &ns, "-o",
          "jsonpath={.spec.template.metadata.annotations.kueue\\.x-k8s\\.io/safe-to-forcefully-terminate}"],
        None,
    );
    assert_eq!(read_back, "true", "what etcd holds");

    // A policy at `warn` (recovery-counts-toward-backoff, by default): the object is stored and
    // kubectl prints jobgate's warning.
    let counted = job(
        "opted-in-counted",
        json!({ "jobgate.dev/failure-recovery": "enabled" }),
        json!({ "podReplacementPolicy": "Failed" }),
    );
    let out = cp.kubectl_output(
        &["create", "-n", &ns, "-f", "-"],
        Some(&counted.to_string()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = warnings(&out.stderr);
    assert!(
        said.iter()
            .any(|w| w
                .starts_with("jobgate: spec.podFailurePolicy: no Ignore rule on DisruptionTarget")),
        "kubectl printed no jobgate warning: {said:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_denial_reaches_the_client_with_jobgates_message_as_check_prints_it() {
    let cp = ControlPlane::shared();
    let ns = cp.namespace("denial");
    let jg = Jobgate::start(&["--policy", "recovery-needs-failed=deny"]);
    install_webhooks(cp, &jg, &ns);

    // Accepted by kube-apiserver's own rules (no podFailurePolicy, so TerminatingOrFailed is
    // valid), refused only by jobgate's policy: the denial is jobgate's and nobody else's.
    let manifest = opted_in_terminating();
    let without_jobgate = cp.namespace("denial-control");
    cp.kubectl_ok(
        &[
            "create",
            "--dry-run=server",
            "-n",
            &without_jobgate,
            "-f",
            "-",
        ],
        Some(&manifest.to_string()),
    );

    // kubectl prints a 422 with causes as `The Job "…" is invalid: <causes>`.
    let out = cp.kubectl_output(
        &["create", "-n", &ns, "-f", "-"],
        Some(&manifest.to_string()),
    );
    assert!(
        !out.status.success(),
        "jobgate's deny policy let the Job through"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("The Job \"opted-in-terminating\" is invalid: "),
        "{stderr}"
    );
    // The Status itself names the webhook (what a kube-rs or client-go caller reads).
    let jobs: kube::Api<k8s_openapi::api::batch::v1::Job> =
        kube::Api::namespaced(cp.client().await, &ns);
    let refused = jobs
        .create(
            &Default::default(),
            &serde_json::from_value(manifest.clone()).expect("Job"),
        )
        .await
        .expect_err("the policy denies it");
    let kube::Error::Api(status) = refused else {
        panic!("not an API error: {refused}")
    };
    assert_eq!(status.code, 422, "{status:?}");
    assert!(
        status
            .message
            .contains("admission webhook \"validate.jobgate.dev\" denied the request"),
        "{status:?}"
    );

    // `jobgate check` with the same policy level prints the same message.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("job.json");
    std::fs::write(&file, manifest.to_string()).expect("write manifest");
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args([
            "check",
            "--policy",
            "recovery-needs-failed=deny",
            "-o",
            "json",
        ])
        .arg(&file)
        .output()
        .expect("run jobgate check");
    assert_eq!(
        check.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let report: Value = serde_json::from_slice(&check.stdout).expect("check's JSON");
    let messages: Vec<String> = findings(&report)
        .filter(|f| f["severity"] == "error")
        .filter_map(|f| f["message"].as_str().map(str::to_string))
        .collect();
    assert!(!messages.is_empty(), "check found no error: {report:#}");
    for m in &messages {
        assert!(
            stderr.contains(m.as_str()),
            "the client did not see check's {m:?}:\n{stderr}"
        );
    }
}

/// Every finding of a `check -o json` report.
fn findings(report: &Value) -> impl Iterator<Item = &Value> {
    report["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|o| o["findings"].as_array().into_iter().flatten())
}

/// A write a cluster makes every day, and whether jobgate's `Fail` webhook should see it.
struct Write {
    what: &'static str,
    reaches_validate: bool,
    /// kubectl arguments after `-n NS` (the object named `{job}`).
    args: Vec<String>,
}

fn everyday_writes(job: &str) -> Vec<Write> {
    let patch = |what, reaches_validate, patch: Value| Write {
        what,
        reaches_validate,
        args: vec![
            "patch".into(),
            "job".into(),
            job.into(),
            "--type=merge".into(),
            "-p".into(),
            patch.to_string(),
        ],
    };
    vec![
        Write {
            what: "label",
            reaches_validate: false,
            args: vec!["label".into(), "job".into(), job.into(), "team=ml".into()],
        },
        patch(
            "scale (parallelism)",
            false,
            json!({ "spec": { "parallelism": 2 } }),
        ),
        // Kueue admits a suspended Job: unsuspend and inject the flavor's node selector
        // (batch/v1 validation allows it on a suspended Job that never started).
        patch(
            "Kueue's unsuspend with a nodeSelector",
            false,
            json!({ "spec": { "suspend": false, "template": { "spec": {
                "nodeSelector": { "cloud.example/flavor": "a100" },
            }}}}),
        ),
        patch("suspend", false, json!({ "spec": { "suspend": true } })),
        patch(
            "the recovery opt-in annotation changes",
            true,
            json!({ "metadata": { "annotations": {
                "kueue.x-k8s.io/safe-to-forcefully-terminate": "true",
            }}}),
        ),
    ]
}

#[test]
fn only_the_writes_a_policy_can_judge_reach_the_fail_webhook_and_only_they_fail_without_jobgate() {
    let cp = ControlPlane::shared();
    let ns = cp.namespace("blast-radius");
    let mut jg = Jobgate::start(&[]);
    install_webhooks(cp, &jg, &ns);

    let suspended = |name: &str| {
        job(
            name,
            json!({}),
            json!({ "suspend": true, "parallelism": 1 }),
        )
    };
    let before = reviews(&jg);
    cp.kubectl_ok(
        &["create", "-n", &ns, "-f", "-"],
        Some(&suspended("served").to_string()),
    );
    let created = delta(&before, &reviews(&jg));
    assert_eq!(
        created.get("validate/CREATE"),
        Some(&1),
        "a create is judged: {created:?}"
    );

    for write in everyday_writes("served") {
        let before = reviews(&jg);
        let mut args = vec!["-n".to_string(), ns.clone()];
        args.extend(write.args.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cp.kubectl_ok(&args, None);
        let seen = delta(&before, &reviews(&jg));
        assert_eq!(
            seen.contains_key("validate/UPDATE"),
            write.reaches_validate,
            "{}: the Fail webhook {} it ({seen:?})",
            write.what,
            if write.reaches_validate {
                "did not get"
            } else {
                "got"
            },
        );
    }

    // Foreground deletion: the apiserver adds the foregroundDeletion finalizer and the garbage
    // collector removes it once the Job's dependents are gone, an UPDATE of an object being
    // deleted, which the Fail webhook never gets.
    let before = reviews(&jg);
    cp.kubectl_ok(
        &[
            "delete",
            "job",
            "served",
            "-n",
            &ns,
            "--cascade=foreground",
            "--wait=true",
            "--timeout=60s",
        ],
        None,
    );
    let seen = delta(&before, &reviews(&jg));
    assert!(
        !seen.contains_key("validate/UPDATE"),
        "GC's finalizer removal was sent: {seen:?}"
    );

    // Without jobgate: the same writes on an object created while it served. Only those the Fail
    // webhook gets are refused; the others, and the garbage collector, carry on.
    cp.kubectl_ok(
        &["create", "-n", &ns, "-f", "-"],
        Some(&suspended("orphaned").to_string()),
    );
    jg.terminate(Duration::from_secs(20))
        .expect("jobgate stops on SIGTERM");
    for write in everyday_writes("orphaned") {
        let mut args = vec!["-n".to_string(), ns.clone()];
        args.extend(write.args.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = cp.kubectl_output(&args, None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if write.reaches_validate {
            assert!(
                !out.status.success()
                    && stderr.contains("failed calling webhook \"validate.jobgate.dev\""),
                "{}: without jobgate it should fail closed: {stderr}",
                write.what
            );
        } else {
            assert!(
                out.status.success(),
                "{}: refused without jobgate: {stderr}",
                write.what
            );
        }
    }
    let out = cp.kubectl_output(
        &["create", "-n", &ns, "-f", "-"],
        Some(&suspended("new").to_string()),
    );
    assert!(
        !out.status.success(),
        "a create went through without the Fail webhook"
    );
    cp.kubectl_ok(
        &[
            "delete",
            "job",
            "orphaned",
            "-n",
            &ns,
            "--cascade=foreground",
            "--wait=true",
            "--timeout=60s",
        ],
        None,
    );
}

#[test]
fn audit_reads_the_clusters_jobs_and_writes_policy_reports() {
    let cp = ControlPlane::shared();
    // No webhook here: the Job was created before jobgate was installed, which is what audit is for.
    let ns = cp.namespace("audit");
    let manifest = opted_in_terminating();
    cp.kubectl_ok(
        &["create", "-n", &ns, "-f", "-"],
        Some(&manifest.to_string()),
    );
    let audit = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_jobgate"))
            .arg("audit")
            .arg("--kubeconfig")
            .arg(&cp.kubeconfig)
            .args(["-n", &ns, "--policy", "recovery-needs-failed=deny"])
            .args(extra)
            .output()
            .expect("run jobgate audit");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, stdout, stderr) = audit(&["-o", "json"]);
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("audit JSON ({e}): {stdout}{stderr} (exit {code:?})"));
    let sources: Vec<&str> = findings(&report)
        .filter_map(|f| f["source"].as_str())
        .collect();
    assert!(
        sources.contains(&"recovery-needs-failed"),
        "audit did not report the policy: {report:#}"
    );

    // --apply writes a PolicyReport per namespace with server-side apply.
    cp.install_crd("wgpolicyk8s.io_policyreports.yaml");
    let (code, stdout, stderr) = audit(&["--apply"]);
    assert!(
        matches!(code, Some(0 | 1)),
        "audit --apply: exit {code:?}\n{stdout}{stderr}"
    );
    let stored = cp.kubectl_ok(
        &[
            "get",
            "policyreports.wgpolicyk8s.io",
            "-n",
            &ns,
            "-o",
            "json",
        ],
        None,
    );
    let stored: Value = serde_json::from_str(&stored).expect("PolicyReport list");
    let results: Vec<&Value> = stored["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["results"].as_array().into_iter().flatten())
        .collect();
    assert!(
        results
            .iter()
            .any(|r| r["policy"] == "recovery-needs-failed" && r["result"] == "fail"),
        "no failing result for the Job in the stored PolicyReport: {stored:#}"
    );
}

/// The README's "First use" blocks, run as written against the real apiserver with jobgate's
/// webhooks in place (kubectl 1.37 as `kubectl`, the namespace of the test as the kubeconfig's):
/// what they print is what the README says they print, and without jobgate the denied Job is
/// created, as the README claims.
#[test]
fn the_readmes_first_use_prints_what_the_readme_says() {
    let cp = ControlPlane::shared();
    let ns = cp.namespace("first-use");
    let jg = Jobgate::start(&[]);
    install_webhooks(cp, &jg, &ns);

    let readme =
        std::fs::read_to_string(support::controlplane::repo().join("README.md")).expect("README");
    let section = readme
        .split("\n## First use\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README has a First use section");
    let blocks = doc_shell::sh_blocks(section);
    assert!(
        blocks.len() >= 2,
        "README's First use has a denial block and a mutation block"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let shell =
        |namespace: &str, command: &str| doc_shell::run_in(cp, dir.path(), namespace, command);
    for block in &blocks[..2] {
        let (_, output) = shell(&ns, &doc_shell::commands(block));
        assert_eq!(
            doc_shell::squash(&output),
            doc_shell::squash(&doc_shell::said(block)),
            "README block:\n{block}\nprinted:\n{output}"
        );
    }
    // The denial is jobgate's alone: the apiserver by itself creates that Job.
    let without = cp.namespace("first-use-without");
    let command = blocks[0]
        .lines()
        .find(|l| !l.starts_with('#'))
        .expect("a command");
    let (created, output) = shell(&without, command);
    assert!(
        created,
        "without jobgate the README's first command should pass:\n{output}"
    );
}
