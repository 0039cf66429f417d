//! The settings an install gives jobgate (the generated `jobgate-settings` ConfigMap both
//! containers read), and what jobgate makes of them.

use std::collections::BTreeMap;
use std::process::Command;

use super::install::Rendered;

/// The generated `jobgate-settings` ConfigMap's data, which both containers read (envFrom).
pub fn settings(r: &Rendered) -> BTreeMap<String, String> {
    let map = r.generated_config_map("jobgate-settings");
    let name = map.metadata.name.clone().unwrap_or_default();
    let pod = r.pod_spec();
    for c in &pod.containers {
        assert!(
            c.env_from
                .iter()
                .flatten()
                .any(|e| e.config_map_ref.as_ref().is_some_and(|m| m.name == name)),
            "{}: {} does not read {name}",
            r.name,
            c.name
        );
    }
    map.data.unwrap_or_default().into_iter().collect()
}

/// `jobgate check` on a Job whose pod template says `safe-to-forcefully-terminate: "yes"`
/// (policy recovery-annotation-value, deny by default), with `env` set: (exit code, output).
pub fn check_bad_annotation(env: &BTreeMap<String, String>) -> (i32, String) {
    use std::io::Write as _;
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\nspec:\n  template:\n\
               \x20   metadata:\n      annotations: {kueue.x-k8s.io/safe-to-forcefully-terminate: \"yes\"}\n\
               \x20   spec:\n      restartPolicy: Never\n      containers: [{name: main, image: busybox}]\n";
    let mut child = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args(["check", "-"])
        .envs(env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run jobgate check");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(job.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("jobgate check");
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `jobgate <subcommand> --help`.
pub fn cli_help(subcommand: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_jobgate"))
        .args([subcommand, "--help"])
        .output()
        .expect("run jobgate --help");
    assert!(out.status.success(), "jobgate {subcommand} --help");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every settings key is a variable one of the two containers reads, and the audit CronJob,
/// which reads the same ConfigMap, reads exactly those serve reads: the rule settings, never a
/// reconciler setting that could change what it does, but for `JOBGATE_KUEUE_RECOVERS`, which it
/// reads to say which controller recovers each Job's pods as the reconciler decides it.
pub fn check_settings_are_read(r: &Rendered, data: &BTreeMap<String, String>) {
    const AUDIT_SAYS_WHAT_THE_RECONCILER_DOES: [&str; 1] = ["JOBGATE_KUEUE_RECOVERS"];
    let (serve, reconcile, audit) = (cli_help("serve"), cli_help("reconcile"), cli_help("audit"));
    for key in data.keys() {
        let env = format!("[env: {key}=");
        assert!(
            serve.contains(&env) || reconcile.contains(&env),
            "{}: neither serve nor reconcile reads {key}",
            r.name
        );
        if AUDIT_SAYS_WHAT_THE_RECONCILER_DOES.contains(&key.as_str()) {
            assert!(reconcile.contains(&env) && audit.contains(&env), "{key}");
            continue;
        }
        assert_eq!(
            audit.contains(&env),
            serve.contains(&env),
            "{}: {key}: serve reads it: {}, audit reads it: {}",
            r.name,
            serve.contains(&env),
            audit.contains(&env)
        );
    }
}
