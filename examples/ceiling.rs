//! The load test's ceiling: a server on the same stack as `jobgate serve` (axum + axum-server +
//! rustls ring, same TLS, timeouts and HTTP/1.1 and HTTP/2 settings) that answers every POST with a fixed allowed review,
//! without reading the request. `benches/load.sh` loads it and jobgate in one run; jobgate's
//! throughput divided by this one's is the "ratio to ceiling" figure.
//!
//! Usage: ceiling ADDR CERT KEY

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;
use hyper_util::rt::TokioTimer;

const RESPONSE: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","allowed":true}}"#;

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
    let app = Router::new().fallback(post(|| async {
        ([("content-type", "application/json")], RESPONSE)
    }));
    println!("ceiling: serving on https://{addr}");
    // The same acceptor and hyper settings as `jobgate serve` (src/server/mod.rs, defaults).
    let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(RustlsConfig::from_config(tls))
        .handshake_timeout(Duration::from_secs(10))
        .acceptor(axum_server::accept::NoDelayAcceptor::new());
    let mut server = axum_server::bind(addr).acceptor(acceptor);
    server
        .http_builder()
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .keep_alive(true);
    server
        .http_builder()
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10))
        .max_concurrent_streams(250);
    server.serve(app.into_make_service()).await
}
