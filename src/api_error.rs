//! Errors of the commands that talk to a cluster (`audit`, `status`, `reconcile`), said once and
//! the way kubectl says them: an API error as `cmdutil.StandardErrorMessage` prints it
//! (`Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in
//! API group "" at the cluster scope`), with the server it came from and, for a 403, the
//! ClusterRole that grants the calls.

use std::error::Error;

/// kubectl's sentence for an API status (k8s.io/kubectl/pkg/cmd/util `StandardErrorMessage`):
/// `error: You must be logged in to the server (<message>)` for `Unauthorized`,
/// `Error from server (<reason>): <message>` when there is a reason, else
/// `Error from server: <message>`.
pub(crate) fn kubectl_sentence(status: &kube::core::Status) -> String {
    match status.reason.as_str() {
        "Unauthorized" => format!(
            "error: You must be logged in to the server ({})",
            status.message
        ),
        "" => format!("Error from server: {}", status.message),
        reason => format!("Error from server ({reason}): {}", status.message),
    }
}

/// The API status anywhere in `error`'s chain.
pub(crate) fn api_status<'e>(error: &'e (dyn Error + 'static)) -> Option<&'e kube::core::Status> {
    let mut at: Option<&'e (dyn Error + 'static)> = Some(error);
    while let Some(e) = at {
        if let Some(kube::Error::Api(status)) = e.downcast_ref::<kube::Error>() {
            return Some(status);
        }
        at = e.source();
    }
    None
}

/// `error` in one piece: an API status as kubectl prints it (after what was being done, when
/// the outermost error says so), else each message of the chain once: a message that already
/// ends with its source's is not followed by it again.
pub fn render(error: &(dyn Error + 'static)) -> String {
    if let Some(status) = api_status(error) {
        let doing = what_was_being_done(error);
        let sentence = kubectl_sentence(status);
        return match doing {
            Some(doing) => format!("{doing}: {sentence}"),
            None => sentence,
        };
    }
    let mut out = error.to_string();
    let mut at = error.source();
    while let Some(e) = at {
        let text = e.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        at = e.source();
    }
    out
}

/// The outermost message's own part, before the text of the error it wraps (`cannot list from
/// the Kubernetes API at https://...` of `cannot list ...: ApiError: ...`).
fn what_was_being_done(error: &(dyn Error + 'static)) -> Option<String> {
    let own = error.to_string();
    let inner = error.source()?.to_string();
    let cut = own.find(&inner)?;
    let doing = own[..cut].trim_end_matches([' ', ':']).to_string();
    (!doing.is_empty()).then_some(doing)
}

/// For a 403, `hint: <grants>` (which ClusterRole grants the command's calls).
pub fn rbac_hint(error: &(dyn Error + 'static), grants: &str) -> Option<String> {
    let status = api_status(error)?;
    (status.code == 403).then(|| format!("hint: {grants}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            reason: reason.into(),
            message: message.into(),
            ..Default::default()
        }))
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot list from the Kubernetes API at https://10.0.0.1:6443: {0}")]
    struct Listing(#[source] kube::Error);

    #[test]
    fn a_forbidden_list_reads_as_kubectl_prints_it_once_with_the_server() {
        let message = r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope"#;
        let e = Listing(status(403, "Forbidden", message));
        assert_eq!(
            render(&e),
            format!(
                "cannot list from the Kubernetes API at https://10.0.0.1:6443: Error from server (Forbidden): {message}"
            )
        );
        assert_eq!(
            rbac_hint(&e, "bind ClusterRole jobgate-audit").as_deref(),
            Some("hint: bind ClusterRole jobgate-audit")
        );
        let e = Listing(status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
        assert_eq!(rbac_hint(&e, "jobgate-audit"), None);
        assert!(render(&e).ends_with(
            "Error from server (NotFound): the server could not find the requested resource"
        ));
    }

    #[test]
    fn unauthorized_and_reasonless_statuses_as_kubectl() {
        let s = |r: &str| kube::core::Status {
            reason: r.into(),
            message: "m".into(),
            ..Default::default()
        };
        assert_eq!(
            kubectl_sentence(&s("Unauthorized")),
            "error: You must be logged in to the server (m)"
        );
        assert_eq!(kubectl_sentence(&s("")), "Error from server: m");
    }

    #[test]
    fn other_chains_say_each_message_once() {
        let io = std::io::Error::other("connection refused");
        #[derive(Debug, thiserror::Error)]
        #[error("reading the cluster: {0}")]
        struct Reading(#[source] std::io::Error);
        assert_eq!(
            render(&Reading(io)),
            "reading the cluster: connection refused"
        );
    }
}
