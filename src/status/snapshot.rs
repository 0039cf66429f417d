//! What `jobgate status` reads from the cluster: Jobs with recovery state, opted-in terminating
//! pods, their nodes and the reconciler's Lease. Reads only.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, ListParams};

use super::options::RenderOptions;
use crate::recovery;
use crate::recovery::episode::RECOVERY_STATE_ANNOTATION;

/// What `jobgate status` shows, read from the cluster.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// `None`: every namespace.
    pub(crate) namespace: Option<String>,
    /// Jobs of the namespace(s); those without the state annotation are not shown.
    pub(crate) jobs: Vec<Job>,
    /// Pods that opted in and are terminating (the reconciler's candidates).
    pub(crate) pods: Vec<Pod>,
    /// Every node, by name (a pod's node absent here does not exist).
    pub(crate) nodes: BTreeMap<String, Node>,
    pub(crate) lease_namespace: String,
    pub(crate) lease_name: String,
    /// `None`: the Lease does not exist (no reconciler ever led).
    pub(crate) lease: Option<Lease>,
}

/// Pages through a list 500 objects at a time.
async fn list_all<K>(api: &Api<K>) -> Result<Vec<K>, kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut out = Vec::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        out.extend(page.items);
        match next {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

/// Reads Jobs, opted-in terminating pods ([`recovery::is_eligible`]), the nodes and the Lease.
pub(crate) async fn fetch(
    client: &Client,
    namespace: Option<String>,
    options: &RenderOptions,
    lease_namespace: &str,
    lease_name: &str,
) -> Result<Snapshot, kube::Error> {
    let (jobs_api, pods_api): (Api<Job>, Api<Pod>) = match &namespace {
        Some(ns) => (
            Api::namespaced(client.clone(), ns),
            Api::namespaced(client.clone(), ns),
        ),
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    let jobs = list_all(&jobs_api)
        .await?
        .into_iter()
        .filter(|j| has_annotation(&j.metadata.annotations, RECOVERY_STATE_ANNOTATION))
        .collect();
    let pods: Vec<Pod> = list_all(&pods_api)
        .await?
        .into_iter()
        .filter(|p| recovery::is_eligible(&recovery::read::pod_facts(p), &options.config))
        .collect();
    // Every node: the partition brake judges the pods' zones by all their nodes.
    let nodes = list_all(&Api::<Node>::all(client.clone()))
        .await?
        .into_iter()
        .map(|n| (n.metadata.name.clone().unwrap_or_default(), n))
        .collect();
    let leases: Api<Lease> = Api::namespaced(client.clone(), lease_namespace);
    let lease = leases.get_opt(lease_name).await?;
    Ok(Snapshot {
        namespace,
        jobs,
        pods,
        nodes,
        lease_namespace: lease_namespace.to_string(),
        lease_name: lease_name.to_string(),
        lease,
    })
}

fn has_annotation(annotations: &Option<BTreeMap<String, String>>, key: &str) -> bool {
    annotations.as_ref().is_some_and(|a| a.contains_key(key))
}
