//! kube-apiserver's own figures, read by the benches through the kube client they already hold.

/// kube-apiserver's `/metrics` page.
pub(crate) async fn metrics(client: &kube::Client) -> String {
    let request = axum::http::Request::get("/metrics")
        .body(Vec::new())
        .expect("a request");
    client
        .request_text(request)
        .await
        .unwrap_or_else(|e| panic!("kube-apiserver's /metrics: {e}"))
}
