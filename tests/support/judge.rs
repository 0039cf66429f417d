//! kube-apiserver's own Job and CronJob create/update path, without the rest of an apiserver:
//! `target/controlplane/MINOR/judge`, built by `tests/controlplane/build MINOR judge` from the
//! pinned `k8s.io/kubernetes` module (`tests/controlplane/cmd/judge`: strict decoding, defaulting,
//! the batch strategies' `PrepareFor*`, `Validate*` and `Warnings*`). The parity harness runs it
//! over JSON lines; its doc comment has the format.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// One request to the judge.
#[derive(Debug, Clone)]
pub enum JudgeRequest<'a> {
    /// Create `object` as sent by a client.
    Create {
        /// The object.
        object: &'a Value,
    },
    /// Store `old_object` (created, then its `status` written as the Job controller would), and
    /// update it with the JSON merge patch `merge_patch` (what `kubectl patch --type=merge`
    /// sends).
    Update {
        /// The object stored before the update.
        old_object: &'a Value,
        /// The JSON merge patch the client sends.
        merge_patch: &'a Value,
    },
}

/// What kube-apiserver's create or update path says about one request.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeVerdict {
    /// Whether the write is admitted.
    pub allowed: bool,
    /// HTTP status of a refusal: 400 (the body cannot be decoded) or 422 (invalid).
    pub code: u16,
    /// The refusal's message (empty when allowed).
    pub message: String,
    /// `(field, message)` of each `metav1.StatusCause`, in order.
    pub causes: Vec<(String, String)>,
    /// The warnings the write gets.
    pub warnings: Vec<String>,
    /// The new object after defaulting and `PrepareFor*`: what a validating webhook is sent.
    /// `None` when the body could not be decoded.
    pub object: Option<Value>,
    /// The stored old object of an UPDATE.
    pub old_object: Option<Value>,
}

impl JudgeVerdict {
    /// The old object of an UPDATE could not be created: the release refuses it, so no update
    /// of it exists (the judge then has no stored old object to show).
    pub fn old_object_refused(&self) -> bool {
        !self.allowed && self.old_object.is_none()
    }
}

/// Runs the judge of `minor` with kube-apiserver's `--feature-gates` value `gates` over
/// `requests`; one verdict each, in order. Fails the test (with how to build it) when the judge
/// is missing, and with the judge's own words when it refuses the gates.
pub fn judge(minor: &str, gates: &str, requests: &[JudgeRequest<'_>]) -> Vec<JudgeVerdict> {
    let bin = super::controlplane::binary(minor, "judge");
    let mut input = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        let line = match request {
            JudgeRequest::Create { object } => {
                json!({"id": i.to_string(), "operation": "CREATE", "object": object})
            }
            JudgeRequest::Update {
                old_object,
                merge_patch,
            } => json!({"id": i.to_string(), "operation": "UPDATE",
                "oldObject": old_object, "mergePatch": merge_patch}),
        };
        serde_json::to_writer(&mut input, &line).expect("a judge request");
        input.push(b'\n');
    }
    let mut child = Command::new(&bin)
        .arg(format!("--feature-gates={gates}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    let mut stdin = child.stdin.take().expect("judge stdin");
    let writer = std::thread::spawn(move || {
        // A judge that refuses its flags exits before reading: a broken pipe is its answer.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("judge output");
    let _ = writer.join();
    assert!(
        out.status.success(),
        "the Kubernetes {minor} judge (--feature-gates={gates}) failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts: Vec<JudgeVerdict> = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|line| {
            let v: Value = serde_json::from_slice(line).expect("a judge verdict is JSON");
            parse_verdict(&v)
        })
        .collect();
    assert_eq!(
        verdicts.len(),
        requests.len(),
        "the Kubernetes {minor} judge answered {} of {} requests",
        verdicts.len(),
        requests.len()
    );
    verdicts
}

/// Whether the judge of `minor` starts with `--feature-gates=gates` (kube-apiserver's own
/// `featureGate.Set`), and its complaint when not.
pub fn accepts_gates(minor: &str, gates: &str) -> Result<(), String> {
    let bin = super::controlplane::binary(minor, "judge");
    let out = Command::new(&bin)
        .arg(format!("--feature-gates={gates}"))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn parse_verdict(v: &Value) -> JudgeVerdict {
    let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    let object = |k: &str| v.get(k).filter(|o| o.is_object()).cloned();
    JudgeVerdict {
        allowed: v["allowed"] == true,
        code: v["code"].as_u64().unwrap_or(0) as u16,
        message: text("message"),
        causes: v["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["field"].as_str().unwrap_or_default().to_string(),
                    c["message"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
        warnings: v["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_string))
            .collect(),
        object: object("object"),
        old_object: object("oldObject"),
    }
}
