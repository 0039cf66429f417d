//! Reading what the audit needs: every Job and CronJob and the metadata of every pod, of one
//! namespace or all, 500 per page (`limit`/`continue`, as kubectl's chunked lists).

use std::future::Future;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, ObjectList};
use serde_json::Value;

use super::evaluate::{AuditedPod, Inventory, OwnerJob};

pub(crate) const PAGE_SIZE: u32 = 500;

/// Every page of a list.
async fn all_pages<T, F, Fut>(mut list: F) -> Result<Vec<T>, kube::Error>
where
    T: Clone,
    F: FnMut(ListParams) -> Fut,
    Fut: Future<Output = Result<ObjectList<T>, kube::Error>>,
{
    let mut out = Vec::new();
    let mut params = ListParams::default().limit(PAGE_SIZE);
    loop {
        let page = list(params.clone()).await?;
        let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        out.extend(page.items);
        match next {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

fn api(client: &Client, namespace: Option<&str>, resource: &ApiResource) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

/// Jobs, CronJobs and pod metadata of `namespace` (`None`: every namespace).
pub(crate) async fn fetch(
    client: &Client,
    namespace: Option<&str>,
) -> Result<Inventory, kube::Error> {
    let mut objects = Vec::new();
    for resource in [
        ApiResource::erase::<Job>(&()),
        ApiResource::erase::<CronJob>(&()),
    ] {
        let api = api(client, namespace, &resource);
        for item in all_pages(|p| {
            let api = api.clone();
            async move { api.list(&p).await }
        })
        .await?
        {
            let mut doc = serde_json::to_value(item).map_err(kube::Error::SerdeError)?;
            // List items carry no apiVersion/kind of their own.
            if let Value::Object(map) = &mut doc {
                map.insert("apiVersion".into(), resource.api_version.clone().into());
                map.insert("kind".into(), resource.kind.clone().into());
            }
            objects.push(doc);
        }
    }
    let pods: Api<Pod> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let pods = all_pages(|p| {
        let pods = pods.clone();
        async move { pods.list_metadata(&p).await }
    })
    .await?
    .into_iter()
    .map(|p| {
        let meta = p.metadata;
        let job = meta.owner_references.iter().flatten().find_map(|o| {
            (o.controller == Some(true) && o.api_version == "batch/v1" && o.kind == "Job").then(
                || OwnerJob {
                    name: o.name.clone(),
                    uid: o.uid.clone(),
                },
            )
        });
        AuditedPod {
            namespace: meta.namespace.unwrap_or_default(),
            name: meta.name.unwrap_or_default(),
            annotations: meta.annotations.unwrap_or_default(),
            job,
        }
    })
    .collect();
    Ok(Inventory { objects, pods })
}
