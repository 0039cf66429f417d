//! The one harness for scripted API conversations against a mocked `kube::Client`
//! (tower-test, as kube-rs `controller-rs` tests its reconciler): every request is checked in
//! order (method, path, query when the script gives one, content type and body through
//! [`Exchange::checking`]) and answered with the scripted status and body. A missing request
//! fails the step; an unexpected extra one makes the scenario time out.

use http_body_util::BodyExt;
use hyper::{Request, Response};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock::{Handle, SendResponse};

pub(crate) type MockHandle = Handle<Request<Body>, Response<Body>>;

/// Checks on a request: query string, content type, JSON body (`Null` when empty).
pub(crate) type RequestCheck = Box<dyn FnOnce(&str, Option<&str>, &Value) + Send>;

/// One request/response of a script.
pub(crate) struct Exchange {
    pub(crate) method: &'static str,
    pub(crate) path: String,
    /// The exact query string, when the script gave `path?query`.
    pub(crate) query: Option<String>,
    pub(crate) check: RequestCheck,
    pub(crate) status: u16,
    pub(crate) response: Value,
}

/// An exchange: `method` on `path` (with `?query` to also require that exact query string),
/// answered with `status` and `response`.
pub(crate) fn exchange(method: &'static str, path: &str, status: u16, response: Value) -> Exchange {
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (path.to_string(), None),
    };
    Exchange {
        method,
        path,
        query,
        check: Box::new(|_, _, _| {}),
        status,
        response,
    }
}

impl Exchange {
    /// Adds checks on the request (query string, content type, JSON body).
    pub(crate) fn checking(
        mut self,
        check: impl FnOnce(&str, Option<&str>, &Value) + Send + 'static,
    ) -> Self {
        self.check = Box::new(check);
        self
    }

    /// Requires this exact JSON body.
    pub(crate) fn with_body(self, expected: Value) -> Self {
        self.checking(move |_, _, body| assert_eq!(body, &expected))
    }
}

/// A `metav1.Status` failure body.
pub(crate) fn status_body(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("scripted {reason}"), "reason": reason, "code": code})
}

/// A request as a fake apiserver reads it.
pub(crate) struct Received {
    pub(crate) method: String,
    pub(crate) path: String,
    /// The query string, `""` without one.
    pub(crate) query: String,
    pub(crate) content_type: Option<String>,
    /// The JSON body, `Null` when empty or not JSON.
    pub(crate) body: Value,
}

/// Reads `request` whole.
pub(crate) async fn receive(request: Request<Body>) -> Received {
    let method = request.method().to_string();
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or("").to_string();
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Received {
        method,
        path,
        query,
        content_type,
        body,
    }
}

/// Answers with `status` and the JSON `body`.
pub(crate) fn respond(send: SendResponse<Response<Body>>, status: u16, body: &Value) {
    let response = Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(body).expect("json")))
        .expect("response");
    send.send_response(response);
}

/// A client whose requests the returned handle answers.
pub(crate) fn mock() -> (Client, MockHandle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), handle)
}

/// Answers `script` in order; panics (failing the test) on any mismatch.
pub(crate) async fn serve(mut handle: MockHandle, script: Vec<Exchange>) {
    for (i, step) in script.into_iter().enumerate() {
        let Some((request, send)) = handle.next_request().await else {
            panic!(
                "step {i}: client went away before {} {}",
                step.method, step.path
            );
        };
        let Received {
            method,
            path,
            query,
            content_type,
            body,
        } = receive(request).await;
        assert_eq!(
            (method.as_str(), path.as_str()),
            (step.method, step.path.as_str()),
            "step {i}: unexpected request (body {body})"
        );
        if let Some(expected) = &step.query {
            assert_eq!(&query, expected, "step {i}: query of {method} {path}");
        }
        (step.check)(&query, content_type.as_deref(), &body);
        respond(send, step.status, &step.response);
    }
}

/// The Lease `jobgate reconcile` elects on in the tests (`--lease-namespace=jobgate`, the default
/// name), and its collection.
pub(crate) const LEASE_PATH: &str =
    "/apis/coordination.k8s.io/v1/namespaces/jobgate/leases/jobgate-reconciler";
pub(crate) const LEASES_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/jobgate/leases";

/// That Lease as the API returns it, held by `holder` and last renewed at 19:59:58.
pub(crate) fn lease_json(holder: &str, rv: &str, transitions: i32) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "jobgate-reconciler", "namespace": "jobgate", "resourceVersion": rv},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                 "acquireTime": "2026-11-21T19:00:00.000000Z", "renewTime": "2026-11-21T19:59:58.000000Z",
                 "leaseTransitions": transitions}
    })
}
