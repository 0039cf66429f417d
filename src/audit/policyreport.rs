//! `jobgate audit --output policyreport`: the audit as wg-policy `PolicyReport`s
//! (`wgpolicyk8s.io/v1alpha2`, kubernetes-sigs/wg-policy-prototypes `policy-report`), one per
//! namespace, ready for `kubectl apply` where the CRD is installed (Kyverno, Kubewarden and
//! policy-reporter install it). Jobs and CronJobs are namespaced, so no `ClusterPolicyReport`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::evaluate::{Audit, AuditFinding, Audited, PolicyResult};

/// Name of every report jobgate writes (one per namespace, so `kubectl apply` replaces the last).
pub(crate) const REPORT_NAME: &str = "jobgate-audit";
pub(crate) const SOURCE: &str = "jobgate";

/// The label every report carries, by which `--prune` finds the reports jobgate wrote.
pub(crate) const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "jobgate");

/// The reports as a YAML stream, namespaces in order; `now` is the results' timestamp (Unix
/// seconds).
pub(crate) fn render(audit: &Audit, now: i64) -> Result<String, serde_yaml_ng::Error> {
    let mut out = String::new();
    for report in reports(audit, now) {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&report)?);
    }
    Ok(out)
}

/// One report per namespace with Jobs or CronJobs, namespaces in order.
pub(crate) fn reports(audit: &Audit, now: i64) -> Vec<Value> {
    let mut by_namespace: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for object in &audit.audited {
        let results = by_namespace.entry(&object.namespace).or_default();
        if object.findings.is_empty() {
            results.push(result(
                object,
                SOURCE,
                "pass",
                "kube-apiserver's rules and jobgate's policies find nothing",
                now,
            ));
        }
        for f in &object.findings {
            results.push(finding(object, f, &f.message, now));
        }
    }
    for r in &audit.recovery {
        let Some(job) = audit
            .audited
            .iter()
            .find(|a| a.kind == "Job" && a.namespace == r.namespace && a.uid == r.uid)
        else {
            continue;
        };
        let results = by_namespace.entry(&r.namespace).or_default();
        for f in &r.findings {
            let message = format!(
                "pod(s) {} opted into recovery cannot benefit: {}",
                r.pods.join(", "),
                f.message
            );
            results.push(finding(job, f, &message, now));
        }
    }
    let mut out = Vec::new();
    for (namespace, results) in by_namespace {
        let count = |r: &str| results.iter().filter(|v| v["result"] == r).count();
        let report = json!({
            "apiVersion": "wgpolicyk8s.io/v1alpha2",
            "kind": "PolicyReport",
            "metadata": {
                "name": REPORT_NAME,
                "namespace": namespace,
                "labels": {MANAGED_BY.0: MANAGED_BY.1},
            },
            "summary": {
                "pass": count("pass"),
                "fail": count("fail"),
                "warn": count("warn"),
                "error": 0,
                "skip": 0,
            },
            "results": results,
        });
        out.push(report);
    }
    out
}

fn finding(object: &Audited, f: &AuditFinding, message: &str, now: i64) -> Value {
    let result_name = match f.result {
        PolicyResult::Fail => "fail",
        PolicyResult::Warn => "warn",
    };
    result(object, f.policy, result_name, message, now)
}

fn result(object: &Audited, policy: &str, result: &str, message: &str, now: i64) -> Value {
    json!({
        "source": SOURCE,
        "policy": policy,
        "result": result,
        "message": message,
        "scored": true,
        "timestamp": {"seconds": now, "nanos": 0},
        "resources": [{
            "apiVersion": object.api_version,
            "kind": object.kind,
            "namespace": object.namespace,
            "name": object.name,
            "uid": object.uid,
        }],
    })
}
