//! `jobgate check` on objects whose controllers create the Jobs: a JobSet and Kubeflow Trainer's
//! runtimes (tests/fixtures/controllers, written from `jobset.x-k8s.io/v1alpha2` and
//! `trainer.kubeflow.org/v1alpha1`'s API types). Each Job template is reviewed as the Job the
//! controller sends to kube-apiserver, and its findings point at the template's fields.

/// The parts of `tests/support/` this binary uses.
pub mod support {
    pub mod check_cli;
}

use support::check_cli::text;

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/controllers/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn check(args: &[&str], stdin: &str) -> std::process::Output {
    support::check_cli::check(args, stdin, &[])
}

/// The JobSet is accepted by the cluster; its workers' Jobs are refused by kube-apiserver, one
/// JobSet controller retry after another. `check` says so, at the template's fields.
#[test]
fn a_jobset_whose_workers_jobs_the_apiserver_refuses_is_denied_at_the_template_fields() {
    let f = fixture("jobset-refused-workers.yaml");
    let out = check(&[&f], "");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{f}:35:15 JobSet/train: spec.replicatedJobs[1].template.spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [3,1]: must be ordered\n\
             {f}:28:9 JobSet/train: spec.replicatedJobs[1].template.spec.podReplacementPolicy: Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\"\n"
        )
    );
    assert!(
        text(&out.stderr).ends_with(
            "jobgate check: 2 checked, 1 denied, 0 with warnings, 0 skipped, 0 unreadable\n"
        ),
        "{}",
        text(&out.stderr)
    );
    // One object per template, named after the JobSet, with the Job built from it.
    let out = check(&["-o", "json", &f], "");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let objects = v["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["kind"], "JobSet");
    assert_eq!(objects[0]["name"], "train");
    assert_eq!(objects[0]["namespace"], "ml");
    assert_eq!(objects[0]["allowed"], true);
    assert_eq!(objects[0]["template"], "spec.replicatedJobs[0].template");
    assert_eq!(objects[0]["job"], "train-driver-0");
    assert_eq!(objects[1]["job"], "train-workers-0");
    assert_eq!(objects[1]["replicas"], 4);
    assert_eq!(
        (&objects[1]["line"], &objects[1]["column"]),
        (&serde_json::json!(23), &serde_json::json!(5))
    );
    assert_eq!(
        objects[1]["findings"][1]["field"],
        "spec.replicatedJobs[1].template.spec.podReplacementPolicy"
    );
    assert_eq!(
        objects[1]["findings"][1]["reason"],
        "FieldValueNotSupported"
    );
}

/// JobSet's defaulting webhook runs before its controller builds the Jobs.
#[test]
fn jobsets_defaults_decide_the_jobs_verdict() {
    let f = fixture("jobset-defaults.yaml");
    let out = check(&[&f], "");
    assert_eq!(out.status.code(), Some(1));
    // backoffLimitPerIndex is valid: completionMode defaults to Indexed. The pod's restartPolicy
    // defaults to OnFailure, which a podFailurePolicy refuses. (The containers are an alias.)
    assert_eq!(
        text(&out.stdout),
        format!(
            "{f}:30:11 JobSet/defaults: spec.replicatedJobs[1].template.spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified\n"
        )
    );
}

/// A runtime's `spec.template` is a JobSet template: reviewed as the Jobs of the JobSet a
/// TrainJob using it becomes. A quantity its CRD's schema refuses refuses the runtime itself.
#[test]
fn trainer_runtimes_are_reviewed_as_the_jobs_of_the_jobset_a_train_job_becomes() {
    let f = fixture("trainingruntime.yaml");
    let out = check(&["-o", "json", &f], "");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let objects = v["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["kind"], "ClusterTrainingRuntime");
    assert_eq!(objects[0]["job"], "torch-distributed-node-0");
    assert_eq!(
        objects[0]["findings"][0]["message"],
        "spec.template.spec.replicatedJobs[0].template.spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"
    );
    assert_eq!(
        (
            &objects[0]["findings"][0]["line"],
            &objects[0]["findings"][0]["column"]
        ),
        (&serde_json::json!(24), &serde_json::json!(13))
    );
    // The namespaced runtime is refused by its CRD's quantity schema: no Job is built.
    assert_eq!(objects[1]["kind"], "TrainingRuntime");
    assert_eq!(objects[1]["namespace"], "research");
    assert!(objects[1].get("job").is_none());
    let messages: Vec<&str> = objects[1]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    let at = "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits";
    assert_eq!(
        messages,
        [
            format!(
                "{at}.cpu: Invalid value: \"number\": {at}.cpu in body must be of type integer,string: \"number\""
            ),
            format!(
                "{at}.memory: Invalid value: \"1 Gi\": {at}.memory in body should match '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'"
            ),
        ]
    );
}

const JOBSET_WITH_TYPO: &str = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: typo\nspec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        backofLimit: 3\n        template:\n          spec:\n            restartPolicy: Never\n            containers: [{name: main, image: busybox, imagePullPolcy: Always}]\n";

/// The JobSet's CRD prunes what a Job template does not have; under strict field validation
/// (kubectl's default) kube-apiserver refuses the JobSet, naming each field by its full path.
#[test]
fn unknown_fields_of_a_template_refuse_the_jobset_under_strict_validation() {
    let out = check(&["-"], JOBSET_WITH_TYPO);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "-:10:9 JobSet/typo: JobSet in version \"v1alpha2\" cannot be handled as a JobSet: strict decoding error: unknown field \"spec.replicatedJobs[0].template.spec.backofLimit\"\n\
         -:14:55 JobSet/typo: JobSet in version \"v1alpha2\" cannot be handled as a JobSet: strict decoding error: unknown field \"spec.replicatedJobs[0].template.spec.template.spec.containers[0].imagePullPolcy\"\n"
    );
    // warn: the JobSet is stored without them, its Jobs are reviewed.
    let out = check(&["--validate=warn", "-o", "json", "-"], JOBSET_WITH_TYPO);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["objects"][0]["job"], "typo-w-0");
    assert_eq!(
        v["objects"][0]["findings"][0]["message"],
        "unknown field \"spec.replicatedJobs[0].template.spec.backofLimit\""
    );
}

/// Where warnings and patches go: to the Job the controller creates; the note says which.
#[test]
fn the_mutation_of_a_built_job_is_noted_with_the_job_it_patches() {
    let out = check(
        &[
            "--recovery-namespace",
            "ml",
            &fixture("jobset-refused-workers.yaml"),
        ],
        "",
    );
    assert!(
        text(&out.stderr).contains(": note: jobgate's mutating webhook would add /spec/podReplacementPolicy \"Failed\" on Job train-driver-0\n"),
        "{}",
        text(&out.stderr)
    );
    // The recovery policies judge the opted-in workers too.
    assert!(
        text(&out.stdout).contains("JobSet/train: Warning: jobgate: spec.replicatedJobs[1].template.spec.podFailurePolicy: no Ignore rule on DisruptionTarget"),
        "{}",
        text(&out.stdout)
    );
}

/// A JobSet's own annotations are not copied to its Jobs (only its templates' are): the opt-in
/// there opts nothing in, and `check` says where it belongs.
#[test]
fn an_opt_in_on_the_jobset_itself_is_said_to_belong_in_its_templates() {
    let jobset = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: t\n  annotations:\n    jobgate.dev/failure-recovery: enabled\n    kueue.x-k8s.io/safe-to-forcefully-terminate: \"true\"\nspec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        template:\n          spec:\n            containers: [{name: a, image: b}]\n";
    let out = check(&["-"], jobset);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        "-:6:5 JobSet/t: Warning: jobgate: ignored metadata.annotations[jobgate.dev/failure-recovery]=\"enabled\" on the JobSet: its Jobs do not inherit it; set it in spec.replicatedJobs[*].template.metadata.annotations\n\
         -:7:5 JobSet/t: Warning: jobgate: metadata.annotations[kueue.x-k8s.io/safe-to-forcefully-terminate]: \"true\": has no effect here; it belongs on spec.replicatedJobs[*].template.spec.template.metadata.annotations\n"
    );
    // Opted in where it belongs: the Job-level annotation, copied to the Job, is what /mutate
    // reads.
    let opted = jobset
        .replace("  annotations:\n    jobgate.dev/failure-recovery: enabled\n    kueue.x-k8s.io/safe-to-forcefully-terminate: \"true\"\n", "")
        .replace("    template:\n      spec:\n", "    template:\n      metadata:\n        annotations: {jobgate.dev/failure-recovery: enabled}\n      spec:\n");
    let out = check(&["-"], &opted);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).starts_with("-:8:5 JobSet/t: Note: jobgate: set spec.replicatedJobs[0].template.spec.podReplacementPolicy=Failed because failure recovery is enabled\n"),
        "{}",
        text(&out.stdout)
    );
}

/// JobSet's workload-aware scheduling (its repository's docs example for Kubernetes 1.38+, and
/// its controller behind the alpha gate `JobSetWorkloadAwareSchedulingAPI`, for JobSet v0.13)
/// puts only `scheduling.k8s.io/group-template-name` on a Job. kube-apiserver 1.33 to 1.37
/// accept it; 1.38 (v1.38.0-beta.0 `validateDelegationAnnotations`) refuses it, and `check` says
/// which JobSet feature wrote it and what to add, next to the refusal.
#[test]
fn check_names_the_jobset_feature_whose_jobs_1_38_refuses() {
    let f = fixture("jobset-v0.13-group-template-name-only.yaml");
    for release in ["1.33", "1.36", "1.37"] {
        let out = check(&["--kubernetes-version", release, &f], "");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{release}: {}",
            text(&out.stdout)
        );
        assert_eq!(text(&out.stdout), "", "{release}");
    }
    let out = check(&["--kubernetes-version", "1.38", &f], "");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains(&format!(
            "{f}:18:9 JobSet/js-delegated: spec.replicatedJobs[0].template.metadata.annotations[scheduling.k8s.io/workload-name]: Required value: must be set to a non-empty value when scheduling.k8s.io/workload-name or scheduling.k8s.io/group-template-name is set"
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "{f}:19:11 JobSet/js-delegated: Note: JobSet: this template sets scheduling.k8s.io/group-template-name without scheduling.k8s.io/workload-name, as JobSet's workload-aware scheduling writes it"
        )) && said.contains("JobSetWorkloadAwareSchedulingAPI")
            && said.contains("kube-apiserver 1.38 refuses its Jobs"),
        "{said}"
    );
}
