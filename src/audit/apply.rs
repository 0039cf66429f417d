//! `jobgate audit --apply [--prune]`: the PolicyReports written with jobgate's own client, so a
//! CronJob (deploy/audit/cronjob) keeps them current without kubectl: each namespace's report
//! is server-side applied (field manager `jobgate-audit`, forced: the report is jobgate's alone),
//! and `--prune` deletes jobgate's reports in namespaces that no longer have a Job or CronJob.

use std::collections::BTreeSet;

use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::Value;

use super::policyreport::{MANAGED_BY, REPORT_NAME};

/// The field manager of the reports' server-side apply.
pub(crate) const FIELD_MANAGER: &str = "jobgate-audit";

/// `wgpolicyk8s.io/v1alpha2` `PolicyReport`.
fn policy_reports() -> ApiResource {
    ApiResource {
        group: "wgpolicyk8s.io".into(),
        version: "v1alpha2".into(),
        api_version: "wgpolicyk8s.io/v1alpha2".into(),
        kind: "PolicyReport".into(),
        plural: "policyreports".into(),
    }
}

/// What `--apply` did.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Applied {
    /// Namespaces whose report was written.
    pub(crate) written: Vec<String>,
    /// Namespaces whose stale report was deleted.
    pub(crate) pruned: Vec<String>,
}

/// Applies `reports` (one per namespace); with `prune`, deletes jobgate's reports in the other
/// namespaces of the audit's scope (`namespace`, or every namespace).
pub(crate) async fn apply(
    client: &Client,
    reports: &[Value],
    namespace: Option<&str>,
    prune: bool,
) -> Result<Applied, kube::Error> {
    let resource = policy_reports();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut applied = Applied::default();
    for report in reports {
        let Some(ns) = report
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        else {
            continue;
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
        api.patch(REPORT_NAME, &params, &Patch::Apply(report))
            .await?;
        applied.written.push(ns.to_string());
    }
    if !prune {
        return Ok(applied);
    }
    let written: BTreeSet<&str> = applied.written.iter().map(String::as_str).collect();
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let selector = format!("{}={}", MANAGED_BY.0, MANAGED_BY.1);
    let mut stale = Vec::new();
    let mut params = ListParams::default().labels(&selector).limit(500);
    loop {
        let page = api.list(&params).await?;
        for report in &page.items {
            let (Some(name), Some(ns)) = (&report.metadata.name, &report.metadata.namespace) else {
                continue;
            };
            if name == REPORT_NAME && !written.contains(ns.as_str()) {
                stale.push(ns.clone());
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    for ns in stale {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
        match api.delete(REPORT_NAME, &DeleteParams::default()).await {
            Ok(_) => applied.pruned.push(ns),
            // Deleted meanwhile: what pruning wanted.
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(applied)
}
