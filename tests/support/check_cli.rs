//! Running `jobgate check` as a user does: the built binary, arguments, stdin, a clean
//! environment.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `jobgate check ARGS` with `stdin` written to it and `env` set (jobgate's own variables
/// cleared first).
pub fn check(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jobgate"));
    cmd.arg("check")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for key in [
        "JOBGATE_CONFIG",
        "JOBGATE_POLICY",
        "JOBGATE_RECOVERY_ANNOTATION_KEY",
        "JOBGATE_OUTPUT",
        "JOBGATE_KUBERNETES_VERSION",
        "JOBGATE_FEATURE_GATES",
        "JOBGATE_RECOVERY_NAMESPACES",
        "JOBGATE_KUEUE_RECOVERS",
        "GITHUB_WORKSPACE",
    ] {
        cmd.env_remove(key);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run jobgate");
    // A usage error exits before reading stdin: a broken pipe then is expected, not a failure.
    match child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write stdin: {e}"),
        _ => {}
    }
    child.wait_with_output().expect("wait")
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
