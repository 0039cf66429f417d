//! `jobgate render` as a user runs it, and its YAML read back.

use std::process::Command;

use serde_json::Value;

/// `jobgate render args...` with the settings' variables of the environment the tests run in
/// removed (they are not the test's) and `env` set: exit status, stdout, stderr.
pub fn jobgate_render(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jobgate"));
    cmd.arg("render").args(args);
    for var in [
        "JOBGATE_POLICY",
        "JOBGATE_INJECT_RECOVERY_ANNOTATION_KEY",
        "JOBGATE_CONFIG",
        "JOBGATE_KUBERNETES_VERSION",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("run jobgate render");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8"),
        String::from_utf8(out.stderr).expect("UTF-8"),
    )
}

/// The documents of a YAML stream.
pub fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|d| serde::Deserialize::deserialize(d).expect("a YAML document"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// The objects `jobgate render args` prints; fails the test when it exits non-zero.
pub fn rendered(args: &[&str]) -> Vec<Value> {
    let (code, out, err) = jobgate_render(args, &[]);
    assert_eq!(code, 0, "jobgate render {args:?}: {err}");
    documents(&out)
}
