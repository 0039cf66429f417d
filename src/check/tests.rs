//! `jobgate check` on files, directories and stdin, through `run_with`.

use super::*;
use crate::rule_flags::RuleArgs;
use serde_json::Value;

const KEY: &str = crate::kueue::SAFE_TO_FORCEFULLY_TERMINATE;

fn args(paths: &[&str], output: OutputFormat) -> CheckArgs {
    CheckArgs {
        paths: paths.iter().map(PathBuf::from).collect(),
        output,
        validate: FieldValidation::Strict,
        recovery_namespaces: Vec::new(),
        namespace: "default".into(),
        fail_on: FailOn::Error,
        stdin_filename: None,
        exclude: Vec::new(),
        list_policies: false,
        kueue: Default::default(),
        cluster: false,
        kube: Default::default(),
        rules: RuleArgs::default(),
    }
}

/// (exit code, stdout, stderr)
fn run_on(args: &CheckArgs, stdin: &str) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with(args, &mut stdin.as_bytes(), false, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

const GOOD_JOB: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl
"#;

/// `restartPolicy` left out: defaulted to `Always`, which a Job may not use.
const BAD_JOB: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: broken
spec:
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions:
      - type: DisruptionTarget
  template:
    spec:
      containers:
      - name: main
        image: busybox
"#;

fn warned_cron_job() -> String {
    format!(
        r#"apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          annotations:
            {KEY}: "true"
        spec:
          restartPolicy: Never
          containers:
          - name: train
            image: trainer
"#
    )
}

const CONFIG_MAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n";

#[test]
fn stdin_multi_document_yaml_denied_warned_and_skipped() {
    let input = format!(
        "{GOOD_JOB}---\n{BAD_JOB}---\n{}---\n{CONFIG_MAP}",
        warned_cron_job()
    );
    let (code, out, err) = run_on(&args(&[], OutputFormat::Text), &input);
    assert_eq!(code, EXIT_DENIED);
    assert_eq!(
        out,
        concat!(
            // The missing restartPolicy points at the template's `spec:`; the CronJob's
            // podReplacementPolicy and podFailurePolicy at its job template's `spec:`.
            "-:24:5 Job/broken: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"\n",
            "-:36:5 CronJob/nightly: Warning: jobgate: spec.jobTemplate.spec.podReplacementPolicy: \"TerminatingOrFailed\": recovery needs \"Failed\", else replacements start early\n",
            "-:36:5 CronJob/nightly: Warning: jobgate: spec.jobTemplate.spec.podFailurePolicy: no Ignore rule on DisruptionTarget; each recovered pod counts toward backoffLimit\n",
            "-:40:13 CronJob/nightly: Note: recovered by jobgate's reconciler (kueue.x-k8s.io/safe-to-forcefully-terminate=\"true\"), with its partition brake, backoff and limit\n",
        )
    );
    assert_eq!(
        err,
        "jobgate check: 3 checked, 1 denied, 1 with warnings, 1 skipped (v1/ConfigMap: 1), 0 unreadable\n"
    );
}

#[test]
fn all_passing_exits_zero_even_with_warnings() {
    let (code, out, _) = run_on(&args(&["-"], OutputFormat::Text), &warned_cron_job());
    assert_eq!(code, EXIT_OK);
    // Two warnings, and the note naming the controller that recovers its pods.
    assert_eq!(out.lines().count(), 3);
    let (code, out, _) = run_on(&args(&["-"], OutputFormat::Text), GOOD_JOB);
    assert_eq!((code, out.as_str()), (EXIT_OK, ""));
}

#[test]
fn files_and_directories_recursively_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("team");
    std::fs::create_dir(&nested).unwrap();
    std::fs::write(dir.path().join("a.yaml"), GOOD_JOB).unwrap();
    std::fs::write(nested.join("b.yml"), BAD_JOB).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "kind: Job\n").unwrap();
    std::fs::write(dir.path().join(".hidden.yaml"), BAD_JOB).unwrap();
    let d = dir.path().to_str().unwrap();
    let (code, out, err) = run_on(&args(&[d], OutputFormat::Text), "");
    assert_eq!(code, EXIT_DENIED);
    assert_eq!(
        out,
        format!(
            "{d}/team/b.yml:12:5 Job/broken: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"\n"
        )
    );
    assert!(
        err.ends_with("2 checked, 1 denied, 0 with warnings, 0 skipped, 0 unreadable\n"),
        "{err}"
    );
    // A single file works the same.
    let file = dir.path().join("a.yaml");
    let (code, _, _) = run_on(&args(&[file.to_str().unwrap()], OutputFormat::Text), "");
    assert_eq!(code, EXIT_OK);
}

#[test]
fn unreadable_input_exits_two_with_the_reason_and_wins_over_denied() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, format!("{BAD_JOB}---\nkind: [\n")).unwrap();
    let missing = dir.path().join("missing.yaml");
    let (code, out, err) = run_on(
        &args(
            &[bad.to_str().unwrap(), missing.to_str().unwrap()],
            OutputFormat::Text,
        ),
        "",
    );
    assert_eq!(code, EXIT_UNREADABLE);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        // At the bracket left open.
        err.contains(&format!(
            "{}:17:7: error: invalid YAML: unclosed bracket '['",
            bad.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}: error: No such file or directory",
            missing.display()
        )),
        "{err}"
    );
}

#[test]
fn a_wrongly_typed_field_is_unreadable_with_its_path() {
    let input =
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {backoffLimit: many}\n";
    let (code, _, err) = run_on(&args(&[], OutputFormat::Text), input);
    assert_eq!(code, EXIT_UNREADABLE);
    assert!(
        err.starts_with(
            "-:1:1: error: not a valid Job: spec.backoffLimit: invalid type: string \"many\""
        ),
        "{err}"
    );
}

/// A resource quantity kube-apiserver's decoder cannot read (`resource.Quantity`'s
/// `UnmarshalJSON`) refuses the whole request, whatever `--validate` says.
#[test]
fn an_unreadable_quantity_is_refused_as_the_decoder_refuses_it() {
    let input = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: q}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: i, resources: {requests: {memory: 1Gb}}}]\n";
    for validate in [FieldValidation::Strict, FieldValidation::Ignore] {
        let mut a = args(&[], OutputFormat::Text);
        a.validate = validate;
        let (code, out, _) = run_on(&a, input);
        assert_eq!(code, EXIT_DENIED, "{validate:?}");
        assert_eq!(
            out,
            "-:8:63 Job/q: Job in version \"v1\" cannot be handled as a Job: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'\n",
            "{validate:?}"
        );
    }
}

#[test]
fn json_output_for_tools() {
    let input = format!("{BAD_JOB}---\n{CONFIG_MAP}");
    let (code, out, err) = run_on(&args(&[], OutputFormat::Json), &input);
    assert_eq!(code, EXIT_DENIED);
    assert_eq!(err, "");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "schemaVersion": 1,
            "objects": [{
                "location": "-:1:1", "file": "-", "line": 1, "column": 1, "namespace": "default",
                "kind": "Job", "name": "broken", "operation": "CREATE", "allowed": false,
                "findings": [{"source": "kube-apiserver", "severity": "error",
                    "field": "spec.template.spec.restartPolicy", "reason": "FieldValueRequired",
                    "message": "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
                    "file": "-", "line": 12, "column": 5}],
                // /mutate's patch, which only writes what the apiserver defaults anyway.
                "patch": [{"op": "add", "path": "/spec/podReplacementPolicy", "value": "Failed"}],
                "mutated": false
            }],
            "ignored": [{"location": "-:17:1", "apiVersion": "v1", "kind": "ConfigMap", "name": "settings"}],
            "unreadable": [],
            "summary": {"checked": 1, "denied": 1, "warned": 0, "errors": 1, "warnings": 0, "notes": 0, "skipped": 1, "skippedKinds": {"v1/ConfigMap": 1}, "unreadable": 0}
        })
    );
}

#[test]
fn lists_json_streams_and_arrays() {
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        serde_yaml_ng::from_str::<Value>(GOOD_JOB).unwrap(),
        serde_yaml_ng::from_str::<Value>(BAD_JOB).unwrap(),
    ]});
    let (code, out, _) = run_on(&args(&[], OutputFormat::Text), &list.to_string());
    assert_eq!(code, EXIT_DENIED);
    // One line of JSON: the column says where the item's field is.
    assert!(out.starts_with("-:1:378 Job/broken: "), "{out}");
    let array = serde_json::json!([serde_yaml_ng::from_str::<Value>(BAD_JOB).unwrap()]);
    let (_, out, _) = run_on(&args(&[], OutputFormat::Text), &array.to_string());
    assert!(out.starts_with("-:1:"), "{out}");
}

#[test]
fn admission_review_update_uses_old_object() {
    let job = |pfp: Value| {
        serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"podFailurePolicy": pfp, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}}}})
    };
    let review = serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": "batch", "version": "v1", "kind": "Job"}, "operation": "UPDATE",
            "name": "j", "object": job(serde_json::json!({"rules": []})), "oldObject": job(Value::Null)}});
    let (code, out, _) = run_on(&args(&[], OutputFormat::Text), &review.to_string());
    assert_eq!(code, EXIT_DENIED);
    assert_eq!(
        out,
        "-:1:216 Job/j: spec.podFailurePolicy: Invalid value: {\"Rules\":[]}: field is immutable\n"
    );
}

#[test]
fn policy_flags_change_the_verdict() {
    let mut a = args(&[], OutputFormat::Text);
    a.rules.policies = vec![(
        crate::job::levels::PolicyName::RecoveryNeedsFailed,
        crate::job::levels::Level::Deny,
    )];
    let (code, out, _) = run_on(&a, &warned_cron_job());
    assert_eq!(code, EXIT_DENIED);
    assert!(out.starts_with("-:8:5 CronJob/nightly: spec.jobTemplate.spec.podReplacementPolicy: Invalid value: \"TerminatingOrFailed\""), "{out}");
}

#[test]
fn thousands_of_documents_are_checked_quickly() {
    let input = vec![GOOD_JOB; 5000].join("---\n");
    let started = std::time::Instant::now();
    let (code, _, err) = run_on(&args(&[], OutputFormat::Text), &input);
    assert_eq!(code, EXIT_OK);
    assert!(err.contains("5000 checked"), "{err}");
    // Generous even for a debug build on a busy machine.
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn admission_reviews_of_deletes_and_other_kinds_are_skipped_and_counted() {
    let review = serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": "batch", "version": "v1", "kind": "Job"}, "operation": "DELETE",
            "name": "j", "oldObject": {"kind": "Job"}}});
    let (code, out, err) = run_on(&args(&[], OutputFormat::Text), &review.to_string());
    assert_eq!((code, out.as_str()), (EXIT_OK, ""));
    assert_eq!(
        err,
        "jobgate check: 0 checked, 0 denied, 0 with warnings, 1 skipped (admission.k8s.io/v1/AdmissionReview (DELETE batch/v1 Job): 1), 0 unreadable\n"
    );
}

/// `jobgate check` alone on a terminal says how to use it instead of waiting on stdin; `-`
/// still reads a terminal's stdin on purpose.
#[test]
fn no_input_on_a_terminal_is_a_usage_error() {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with(
        &args(&[], OutputFormat::Text),
        &mut GOOD_JOB.as_bytes(),
        true,
        &mut out,
        &mut err,
    );
    assert_eq!(code, EXIT_UNREADABLE);
    let err = String::from_utf8(err).unwrap();
    assert!(err.starts_with("jobgate check: no input: "), "{err}");
    assert!(err.contains("usage: jobgate check"), "{err}");
    let code = run_with(
        &args(&["-"], OutputFormat::Text),
        &mut GOOD_JOB.as_bytes(),
        true,
        &mut Vec::new(),
        &mut Vec::new(),
    );
    assert_eq!(code, EXIT_OK);
}

#[test]
fn globs_match_whole_segments() {
    let m = |g: &str, p: &str| input::glob_matches(g, std::path::Path::new(p));
    assert!(m("*.json", "dir/a.json"));
    assert!(m("vendor/**", "./vendor/x/a.yaml"));
    assert!(m("**/test-*.yaml", "a/b/test-1.yaml"));
    assert!(m("a/?.yaml", "a/b.yaml"));
    assert!(!m("*.json", "dir/a.yaml"));
    assert!(!m("a/*.yaml", "a/b/c.yaml"));
    assert!(!m("endor/**", "vendor/x.yaml"));
}

/// Which controller recovers an opted-in Job's pods, read as the reconciler reads them:
/// Kueue's key with `--kueue-recovers` (the default) is Kueue's; any other key, or Kueue's with
/// `--kueue-recovers=false`, is jobgate's; a Job opted out, or not in, gets no note.
#[test]
fn each_opted_in_job_names_the_controller_that_recovers_its_pods() {
    let job = |annotations: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\nspec:\n  podReplacementPolicy: Failed\n  podFailurePolicy:\n    rules: [{{action: Ignore, onPodConditions: [{{type: DisruptionTarget}}]}}]\n  template:\n    metadata:\n      annotations: {{{annotations}}}\n    spec:\n      restartPolicy: Never\n      containers: [{{name: main, image: trainer}}]\n"
        )
    };
    let delete = crate::kueue::SAFE_TO_FORCEFULLY_DELETE;
    let note = |input: String, kueue_recovers: bool| {
        let mut a = args(&["-"], OutputFormat::Text);
        a.kueue.kueue_recovers = kueue_recovers;
        let (code, out, _) = run_on(&a, &input);
        assert_eq!(code, EXIT_OK, "{out}");
        out.lines()
            .filter_map(|l| l.split_once("Note: ").map(|(_, n)| n.to_string()))
            .collect::<Vec<_>>()
    };
    let kueues = note(job(&format!("{delete}: \"true\"")), true);
    assert_eq!(kueues.len(), 1, "{kueues:?}");
    assert!(kueues[0].starts_with("recovered by Kueue: "), "{kueues:?}");
    let both = note(job(&format!("{KEY}: \"true\", {delete}: \"true\"")), true);
    assert!(both[0].starts_with("recovered by Kueue: "), "{both:?}");
    assert_eq!(
        note(job(&format!("{delete}: \"true\"")), false),
        vec![format!(
            "recovered by jobgate's reconciler ({delete}=\"true\"), with its partition brake, backoff and limit"
        )]
    );
    assert_eq!(
        note(job(&format!("{KEY}: \"true\"")), true),
        vec![format!(
            "recovered by jobgate's reconciler ({KEY}=\"true\"), with its partition brake, backoff and limit"
        )]
    );
    assert_eq!(
        note(job(&format!("{KEY}: \"false\"")), true),
        Vec::<String>::new()
    );
    assert_eq!(note(job(""), true), Vec::<String>::new());
}
