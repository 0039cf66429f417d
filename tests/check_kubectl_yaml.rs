//! `jobgate check` reads YAML as kubectl reads it: the JSON kubectl would send for each document
//! (`kubectl label --local -f FILE ... -o json`, which decodes the file with cli-runtime's
//! builder, sigs.k8s.io/yaml over go-yaml v2, and prints the object without contacting a
//! cluster) is the JSON `check` judges, for YAML that go-yaml v2 reads differently from YAML 1.2:
//! YAML 1.1 scalars, keys that are not strings, merge keys in every order, aliases, repeated
//! keys, tags.
//!
//! Needs `kubectl` on PATH (`.ci/run` installs it); its YAML reader has been go-yaml v2 since
//! long before any release jobgate supports.

use std::process::Command;

use serde_json::Value;

/// Documents of a kind kubectl does not know, so it keeps every field as written.
const CASES: &str = r#"apiVersion: example.com/v1
kind: Thing
metadata: {name: scalars}
bools: [y, Y, yes, Yes, No, on, OFF, true, True, n]
nulls: [~, null, Null, ]
ints: [0644, 0x1F, 0o17, 0b101, 1_000, +12, -0, 08, 9223372036854775807, 9223372036854775808, -9223372036854775808]
floats: [1.0, 1e3, .5, 1.5, -0.0, 1e400, 1.5e-3, 6.02e23, 1e21, 123456789.0]
strings: ["yes", '0644', 2001-12-14, "12:30:00", 12:30:00, 1.2.3, 0x, +, .]
block: |
  line one
  line two
folded: >
  folded
  text
quoted: "tab\tnew\nline \u00e9 \x41"
tags: [!!str 12, !!float 1, !custom yes, !!int "7", !!str true]
---
apiVersion: example.com/v1
kind: Thing
metadata: {name: keys}
keys: {1: int, 1.5: float, 1e8: exp, 100000000: big, true: bool, y: yes-key, n: no-key, 0x10: hex, 0644: octal}
---
apiVersion: example.com/v1
kind: Thing
metadata: {name: merges}
base: &base {a: 1, b: 1}
other: &other {b: 2, c: 2}
after: {<<: *base, a: 9}
before: {a: 9, <<: *base}
list: {<<: [*base, *other]}
reversed: {<<: [*other, *base]}
inline: {<<: {x: 1}, z: 2}
quoted-merge: {"<<": {a: 1}}
nested:
  <<: *base
  deeper:
    <<: *other
    c: 3
template: &tpl
  spec:
    restartPolicy: Never
    containers: [{name: main, image: busybox}]
uses: [*tpl, *tpl]
---
apiVersion: example.com/v1
kind: Thing
metadata:
  name: first
  name: duplicates
spec:
  a: 1
  b: 2
  a: 3
"#;

fn kubectl_reads(file: &std::path::Path) -> Vec<Value> {
    let out = Command::new("kubectl")
        .args(["label", "--local", "-o", "json", "jobgate-test=x", "-f"])
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run kubectl ({e}): run .ci/run (it installs kubectl) or put one on PATH")
        });
    assert!(
        out.status.success(),
        "kubectl label --local: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<Value>()
        .map(|v| {
            let mut v = v.expect("kubectl's JSON");
            // The label kubectl was asked to add, and the map it made for it.
            let meta = v["metadata"].as_object_mut().expect("metadata");
            meta.remove("labels");
            v
        })
        .collect()
}

/// Numbers beyond 2^53 compared as float64: kubectl's unstructured decoder (apimachinery
/// `util/json`) turns an integer beyond int64 into a float64 and Go prints it with its shortest
/// digits (`9223372036854775808` is sent as `9223372036854776000`, the same float64), where
/// `check` keeps the integer: the same number for any Go field that reads it.
fn normalized(v: &Value) -> Value {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) if i.unsigned_abs() < (1 << 53) => v.clone(),
            (_, Some(f)) => serde_json::json!(f),
            _ => v.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), normalized(v))).collect())
        }
        other => other.clone(),
    }
}

#[test]
fn check_reads_each_document_as_kubectl_sends_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cases.yaml");
    std::fs::write(&file, CASES).unwrap();
    let kubectl = kubectl_reads(&file);
    let check = jobgate::check::yaml_as_kubectl_sends_it(CASES).expect("check reads it");
    assert_eq!(kubectl.len(), check.len());
    for (k, c) in kubectl.iter().zip(&check) {
        let (k, c) = (&normalized(k), &normalized(c));
        assert_eq!(
            c, k,
            "{}: check reads\n{c:#}\nkubectl sends\n{k:#}",
            k["metadata"]["name"]
        );
    }
}

/// What kubectl cannot read, `check` cannot either.
#[test]
fn what_kubectl_cannot_read_check_refuses() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\nx: .nan\n",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\n~: null-key\n",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\nx: {<<: 1}\n",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\nx: !!int abc\n",
    ] {
        let file = dir.path().join("bad.yaml");
        std::fs::write(&file, bad).unwrap();
        let out = Command::new("kubectl")
            .args(["label", "--local", "-o", "json", "jobgate-test=x", "-f"])
            .arg(&file)
            .output()
            .expect("kubectl");
        assert!(!out.status.success(), "kubectl read {bad:?}");
        assert!(
            jobgate::check::yaml_as_kubectl_sends_it(bad).is_err(),
            "check read {bad:?}"
        );
    }
}
