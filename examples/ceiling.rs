//! The load test's ceiling: a server built by the same `jobgate::server::https_server` as
//! `jobgate serve` (axum + axum-server + rustls ring, same TLS, timeouts, HTTP/1.1 and HTTP/2
//! settings) that reads each POST's body, parses it with serde_json as little as any webhook
//! must (the whole body validated as JSON, only `request.uid` kept: serde skips every other
//! field as `IgnoredAny`) and answers an allowed review with that uid. That is the stack's own
//! cost (TLS, HTTP, reading the JSON body), which everything jobgate does comes on top of.
//! `benches/load.sh` loads it and jobgate in one run; jobgate's throughput divided by this one's
//! is the "ratio to ceiling" figure. (Answering without reading the body is not a fair ceiling:
//! over HTTP/2 the unread stream is reset, and oha counted ~0.05 % of such requests as failed.)
//!
//! Usage: ceiling ADDR CERT KEY

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;

#[derive(serde::Deserialize)]
struct Review {
    request: Request,
}

#[derive(serde::Deserialize)]
struct Request {
    uid: String,
}

/// Parses the review and answers it allowed, echoing its uid (`""` when it cannot be read).
fn answer(body: &[u8]) -> Vec<u8> {
    let uid = serde_json::from_slice::<Review>(body)
        .map(|r| r.request.uid)
        .unwrap_or_default();
    let response = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": true},
    });
    serde_json::to_vec(&response).unwrap_or_default()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, addr, cert, key] = &args[..] else {
        eprintln!("usage: ceiling ADDR CERT KEY");
        std::process::exit(2);
    };
    jobgate::server::tls::install_crypto_provider();
    let addr: SocketAddr = addr.parse().map_err(std::io::Error::other)?;
    let tls = jobgate::server::tls::load_server_config(cert.as_ref(), key.as_ref())
        .map_err(std::io::Error::other)?;
    let app = Router::new().fallback(post(|body: axum::body::Bytes| async move {
        ([("content-type", "application/json")], answer(&body))
    }));
    println!("ceiling: serving on https://{addr}");
    // The same TLS and HTTP settings as `jobgate serve`, with its default timeouts.
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let server = jobgate::server::https_server(
        listener,
        RustlsConfig::from_config(tls),
        Duration::from_secs(10),
        Duration::from_secs(10),
    )?;
    server.serve(app.into_make_service()).await
}
