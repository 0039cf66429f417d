//! Scripted request/response scenarios against a mocked `kube::Client` (tower-test).

use hyper::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::Value;
use tower_test::mock::Handle;

pub type MockHandle = Handle<Request<Body>, Response<Body>>;

/// One scripted exchange: the expected request, the canned response.
pub struct Exchange {
    pub method: Method,
    pub path_and_query: &'static str,
    /// Compared with the request body when present.
    pub body: Option<Value>,
    pub status: u16,
    pub response: Value,
}

/// Serves `script` in order and fails the test on any unexpected request.
pub fn serve(mut handle: MockHandle, script: Vec<Exchange>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for (i, step) in script.into_iter().enumerate() {
            let (request, send) = handle
                .next_request()
                .await
                .unwrap_or_else(|| panic!("step {i}: no request"));
            assert_eq!(request.method(), step.method, "step {i}");
            let uri = request
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string());
            assert_eq!(uri.as_deref(), Some(step.path_and_query), "step {i}");
            if step.method == Method::PATCH {
                assert_eq!(
                    request
                        .headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok()),
                    Some("application/merge-patch+json"),
                    "step {i}"
                );
            }
            let bytes = request.into_body().collect_bytes().await.unwrap();
            if let Some(expected) = step.body {
                let actual: Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(actual, expected, "step {i}");
            }
            let response = Response::builder()
                .status(StatusCode::from_u16(step.status).unwrap())
                .body(Body::from(serde_json::to_vec(&step.response).unwrap()))
                .unwrap();
            send.send_response(response);
        }
    })
}
