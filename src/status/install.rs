//! Which install `jobgate status` talks to when `--lease-namespace` is not given: the namespace
//! where jobgate's webhook pods run, found by the labels both installs put on them
//! (`app.kubernetes.io/name=jobgate`, `app.kubernetes.io/component=webhook`), whatever the
//! namespace or the Helm release is called. The reconciler's Lease lives there
//! (`JOBGATE_LEASE_NAMESPACE` is the pod's namespace in both installs).

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

/// The namespace `status` looks in when it cannot find the install.
pub(crate) const DEFAULT_LEASE_NAMESPACE: &str = "jobgate-system";

/// The label selector of jobgate's webhook pods, as deploy/base and the chart set them.
pub(crate) const POD_SELECTOR: &str =
    "app.kubernetes.io/name=jobgate,app.kubernetes.io/component=webhook";

/// Where `status` looks for the Lease, and what it says about how it chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseNamespace {
    pub(crate) namespace: String,
    /// Said on stderr when the namespace is a guess (nothing found, or not allowed to look).
    pub(crate) note: Option<String>,
}

/// Why the install could not be told.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// jobgate's pods run in more than one namespace: two installs.
    #[error(
        "jobgate's pods run in namespaces {}: pass --lease-namespace to say which install",
        .0.join(", ")
    )]
    Ambiguous(Vec<String>),
    /// Listing the pods failed for another reason than a refusal.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// `given` (the flag or `JOBGATE_LEASE_NAMESPACE`), else the one namespace where jobgate's pods
/// run. Not allowed to list pods in every namespace, or no pods found: `jobgate-system`, with a
/// note that says so.
pub(crate) async fn lease_namespace(
    client: &kube::Client,
    given: Option<&str>,
) -> Result<LeaseNamespace, FindError> {
    if let Some(namespace) = given {
        return Ok(LeaseNamespace {
            namespace: namespace.to_string(),
            note: None,
        });
    }
    let pods: Api<Pod> = Api::all(client.clone());
    let guess = |why: String| LeaseNamespace {
        namespace: DEFAULT_LEASE_NAMESPACE.to_string(),
        note: Some(format!(
            "{why}; looking for the Lease in {DEFAULT_LEASE_NAMESPACE} (pass --lease-namespace)"
        )),
    };
    let list = match pods
        .list_metadata(&ListParams::default().labels(POD_SELECTOR))
        .await
    {
        Ok(list) => list,
        Err(kube::Error::Api(status)) if status.code == 403 => {
            return Ok(guess(
                "not allowed to list pods in all namespaces to find jobgate's".to_string(),
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let mut namespaces: Vec<String> = list
        .items
        .into_iter()
        .filter_map(|p| p.metadata.namespace)
        .collect();
    namespaces.sort();
    namespaces.dedup();
    match namespaces.len() {
        0 => Ok(guess(format!(
            "no jobgate pods ({POD_SELECTOR}) in any namespace"
        ))),
        1 => Ok(LeaseNamespace {
            namespace: namespaces.remove(0),
            note: None,
        }),
        _ => Err(FindError::Ambiguous(namespaces)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::scripted::{exchange, mock, serve, status_body};
    use serde_json::json;

    const LIST: &str = "/api/v1/pods?&labelSelector=app.kubernetes.io%2Fname%3Djobgate%2Capp.kubernetes.io%2Fcomponent%3Dwebhook";

    fn pods(namespaces: &[&str]) -> serde_json::Value {
        let items: Vec<_> = namespaces
            .iter()
            .enumerate()
            .map(|(i, ns)| {
                json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                       "metadata": {"name": format!("jg-jobgate-{i}"), "namespace": ns}})
            })
            .collect();
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
               "metadata": {}, "items": items})
    }

    async fn find(status: u16, body: serde_json::Value) -> Result<LeaseNamespace, FindError> {
        let (client, handle) = mock();
        let server = tokio::spawn(serve(handle, vec![exchange("GET", LIST, status, body)]));
        let found = lease_namespace(&client, None).await;
        server.await.unwrap();
        found
    }

    /// An install in platform-jobs (any release name) is found by its pods' labels.
    #[tokio::test]
    async fn the_install_is_the_namespace_of_jobgates_pods() {
        let found = find(200, pods(&["platform-jobs", "platform-jobs"]))
            .await
            .unwrap();
        assert_eq!(
            found,
            LeaseNamespace {
                namespace: "platform-jobs".into(),
                note: None
            }
        );
    }

    #[tokio::test]
    async fn a_given_namespace_is_used_without_asking() {
        let (client, _handle) = mock();
        let found = lease_namespace(&client, Some("team-a")).await.unwrap();
        assert_eq!(found.namespace, "team-a");
        assert_eq!(found.note, None);
    }

    #[tokio::test]
    async fn two_installs_are_named_and_not_guessed() {
        let e = find(200, pods(&["team-b", "team-a"])).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "jobgate's pods run in namespaces team-a, team-b: pass --lease-namespace to say which install"
        );
    }

    #[tokio::test]
    async fn nothing_found_or_not_allowed_falls_back_to_the_default_and_says_so() {
        let none = find(200, pods(&[])).await.unwrap();
        assert_eq!(none.namespace, "jobgate-system");
        assert_eq!(
            none.note.as_deref(),
            Some(
                "no jobgate pods (app.kubernetes.io/name=jobgate,app.kubernetes.io/component=webhook) \
                 in any namespace; looking for the Lease in jobgate-system (pass --lease-namespace)"
            )
        );
        let forbidden = find(403, status_body(403, "Forbidden")).await.unwrap();
        assert_eq!(forbidden.namespace, "jobgate-system");
        assert!(
            forbidden
                .note
                .unwrap()
                .starts_with("not allowed to list pods in all namespaces")
        );
    }
}
