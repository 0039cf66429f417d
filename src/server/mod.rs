//! Sockets, TLS, limits, timeouts, the admin port and graceful shutdown for `jobgate serve`.
//! No business rule lives here.

pub(crate) mod allocator;
pub(crate) mod budget;
pub(crate) mod expiry;
pub(crate) mod extract;
pub(crate) mod leaf;
pub mod linger;
pub mod metrics;
pub(crate) mod rejection;
pub mod reload;
pub(crate) mod server_name;
pub mod tls;
pub(crate) mod webhook;

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum_server::Handle;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use hyper_util::rt::TokioTimer;

use crate::job;
use crate::runtime::{self, BindError};

/// Where the serving certificate comes from.
#[derive(Debug, Clone)]
pub enum TlsSource {
    /// PEM files (`--tls-cert`, `--tls-key`).
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
    /// Dev mode: generate a throw-away CA and `localhost` certificate into this directory.
    Dev {
        /// Where `ca.crt`, `tls.crt` and `tls.key` are written.
        dir: PathBuf,
    },
}

/// How `serve` runs: what `jobgate serve`'s flags say.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The webhook (HTTPS) listen address.
    pub addr: SocketAddr,
    /// The admin (plain HTTP) listen address: `/livez`, `/readyz`, `/metrics`.
    pub admin_addr: SocketAddr,
    /// Where the serving certificate comes from.
    pub tls: TlsSource,
    /// `--client-ca`: PEM CA bundle a client certificate must chain to on the webhook port
    /// (reloaded with the serving certificate). `None`: no client certificate asked for.
    pub client_ca: Option<PathBuf>,
    /// The rule settings the webhooks review with.
    pub rules: job::Config,
    /// Time allowed for a TLS handshake.
    pub handshake_timeout: Duration,
    /// How often the certificate, key and client CA files are read again (`reload`); 0: never.
    pub tls_reload_interval: Duration,
    /// Time allowed for an HTTP/1 request's headers to arrive.
    pub header_read_timeout: Duration,
    /// Time allowed for a request body to arrive once the headers did.
    pub body_timeout: Duration,
    /// After readiness turns false on shutdown, how long to keep serving before closing listeners
    /// (lets endpoints controllers and load balancers stop sending new requests).
    pub shutdown_delay: Duration,
    /// How long in-flight requests get to finish once listeners close.
    pub shutdown_timeout: Duration,
    /// `--tls-server-name`: the host kube-apiserver dials (`<service>.<namespace>.svc`). Not
    /// ready while the served certificate does not name it, and a new certificate that does not
    /// is never swapped in. `None`: not checked (dev mode, a `url` clientConfig).
    pub tls_server_name: Option<String>,
    /// Request-body bytes held in memory at once (`budget`).
    pub body_memory_budget: usize,
    /// How long a request waits for budget before it is answered 429.
    pub body_budget_wait: Duration,
}

/// Why `serve` could not start or stopped on its own.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The serving certificate, key or client CA cannot be loaded, or dev mode cannot write its
    /// certificates.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// The webhook address cannot be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The admin address cannot be listened on.
    #[error(transparent)]
    Admin(#[from] BindError),
    /// A server cannot start, or the webhook server stopped on its own (an accept-loop failure).
    #[error("webhook server failed: {0}")]
    Serve(std::io::Error),
}

/// What `serve` tells its caller once it listens (the real ports, when 0 was asked).
#[derive(Debug, Clone)]
pub struct Listening {
    /// The webhook port's address.
    pub addr: SocketAddr,
    /// The admin port's address.
    pub admin_addr: SocketAddr,
    /// Dev mode's generated files; `None` with `--tls-cert`/`--tls-key`.
    pub dev: Option<tls::DevCertificates>,
}

fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    let listener = TcpListener::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| ServeError::Bind { addr, source })?;
    Ok(listener)
}

/// The webhook port's server: rustls with a handshake timeout, TCP_NODELAY, a lingering close
/// (`linger`), HTTP/1.1 keep-alive
/// with a header read timeout, HTTP/2 keep-alive pings and a stream limit. `examples/ceiling.rs`
/// uses it too, so the load test's ceiling differs from `serve` only in what it answers.
pub fn https_server(
    listener: TcpListener,
    tls: RustlsConfig,
    handshake_timeout: Duration,
    header_read_timeout: Duration,
) -> std::io::Result<axum_server::Server<SocketAddr, RustlsAcceptor<linger::LingerAcceptor>>> {
    // TCP_NODELAY: a review is one small request and one small answer; without it, HTTP/2's
    // separate HEADERS and DATA writes wait on delayed ACKs (~40 ms p99 under load).
    let acceptor = RustlsAcceptor::new(tls)
        .handshake_timeout(handshake_timeout)
        .acceptor(linger::LingerAcceptor);
    let mut server = axum_server::from_tcp(listener)?.acceptor(acceptor);
    server
        .http_builder()
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        // hyper's read buffer grows to ~400 KB per connection by default; a body waiting for
        // budget sits in it, so keep it small (bodies are read frame by frame anyway).
        .max_buf_size(64 * 1024)
        .keep_alive(true);
    server
        .http_builder()
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10))
        // Flow-control windows bound what a client can make jobgate buffer before its body is
        // read (hyper's default is 1 MiB per connection, adaptive); 256 KiB per round trip is
        // plenty inside a cluster.
        .initial_connection_window_size(256 * 1024)
        .initial_stream_window_size(256 * 1024)
        .max_concurrent_streams(250);
    Ok(server)
}

/// Serves until `shutdown` resolves, then drains: readiness false, `shutdown_delay`, listeners
/// closed, in-flight reviews given `shutdown_timeout` to finish. `on_listening` is called once
/// both ports listen.
pub async fn serve(
    options: ServeOptions,
    on_listening: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    allocator::configure();
    let mut builder = runtime::Builder::new(options.admin_addr);
    let reload_metrics = reload::ReloadMetrics::register(builder.registry());
    // Dev mode's generated files are watched like mounted ones: what matters there is that
    // `--client-ca` is reloaded the same way in both modes.
    let (cert, key, dev) = serving_files(&options.tls)?;
    let (mut reloader, tls_config) = reload::CertReloader::load_with_client_ca(
        &cert,
        &key,
        options.client_ca.as_deref(),
        reload_metrics,
    )?;
    let named = options
        .tls_server_name
        .clone()
        .map(|host| reloader.require_server_name(host));
    let listener = bind(options.addr)?;
    let metrics = metrics::ServerMetrics::register(builder.registry());
    metrics::register_rules_info(builder.registry(), options.rules.cluster.release());
    let runtime = builder.bind(shutdown).await?;
    let listening = Listening {
        addr: listener.local_addr().map_err(ServeError::Serve)?,
        admin_addr: runtime.admin_addr(),
        dev,
    };

    let app = webhook::router(webhook_state(&options, metrics));
    let handle: Handle<SocketAddr> = Handle::new();
    let rustls_config = RustlsConfig::from_config(tls_config);
    // Aborted when this function returns, however it returns.
    let _reload_task = AbortOnDrop(tokio::spawn(
        reloader.run(rustls_config.clone(), options.tls_reload_interval),
    ));
    let server = https_server(
        listener,
        rustls_config,
        options.handshake_timeout,
        options.header_read_timeout,
    )
    .map_err(ServeError::Serve)?
    .handle(handle.clone());
    let server_task = tokio::spawn(server.serve(app.into_make_service()));

    // Aborted when shutdown begins.
    let mut ready_task = None;
    if handle.listening().await.is_some() {
        ready_task = become_ready(runtime.readiness(), named);
        on_listening(&listening);
        tracing::info!(addr = %listening.addr, admin_addr = %listening.admin_addr, "serving");
    }

    tokio::select! {
        _ = runtime.shutdown() => drop(ready_task),
        result = wait(server_task) => {
            // The server stopped on its own: an accept-loop failure.
            runtime.stop().await;
            return result;
        }
    }
    drain(&runtime, &handle, &options).await;
    runtime.stop().await;
    tracing::info!("stopped");
    Ok(())
}

/// Ready once listening, and (with --tls-server-name) once the served certificate names the
/// Service: at once, or when a reload brings one that does (the task returned waits for it).
fn become_ready(
    readiness: runtime::Readiness,
    named: Option<tokio::sync::watch::Receiver<bool>>,
) -> Option<AbortOnDrop> {
    match named {
        Some(mut named) if !*named.borrow() => Some(AbortOnDrop(tokio::spawn(async move {
            // Err: the reloader is gone (no reloads); never ready then.
            if named.wait_for(|named| *named).await.is_ok() {
                readiness.set(true);
            }
        }))),
        _ => {
            readiness.set(true);
            None
        }
    }
}

/// The serving certificate and key, and dev mode's generated files.
fn serving_files(
    source: &TlsSource,
) -> Result<(PathBuf, PathBuf, Option<tls::DevCertificates>), ServeError> {
    Ok(match source {
        TlsSource::Files { cert, key } => (cert.clone(), key.clone(), None),
        TlsSource::Dev { dir } => {
            let files = tls::DevCertificates::generate(dir)?;
            (files.tls_cert.clone(), files.tls_key.clone(), Some(files))
        }
    })
}

/// What the webhook handlers share: the rules, the body limits and budget, the metrics.
fn webhook_state(options: &ServeOptions, metrics: metrics::ServerMetrics) -> webhook::WebhookState {
    webhook::WebhookState {
        config: Arc::new(options.rules.clone()),
        limits: extract::BodyLimits {
            body_timeout: options.body_timeout,
            max_body_bytes: webhook::MAX_BODY_BYTES,
            budget: budget::MemoryBudget::new(
                budget::BudgetLimits::new(
                    options.body_memory_budget,
                    webhook::MAX_BODY_BYTES,
                    options.body_budget_wait,
                    // A body already read may wait for review as long as a client may take to
                    // send it.
                    options.body_timeout,
                ),
                metrics.body_bytes_reserved.clone(),
            ),
        },
        metrics,
        reviewer: crate::admission::review,
    }
}

/// Not ready from now on; the listener stays open `shutdown_delay` longer (endpoints and load
/// balancers stop sending), then closes, and connections get `shutdown_timeout`.
/// graceful_shutdown closes them after the timeout at the latest; the extra second bounds the
/// wait even if a connection task is slow to notice.
async fn drain(runtime: &runtime::Runtime, handle: &Handle<SocketAddr>, options: &ServeOptions) {
    let connections_closed = async {
        tokio::time::sleep(options.shutdown_delay).await;
        handle.graceful_shutdown(Some(options.shutdown_timeout));
        while handle.connection_count() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let timeout = options.shutdown_delay + options.shutdown_timeout + Duration::from_secs(1);
    if !runtime.drain(timeout, connections_closed).await {
        tracing::warn!(
            connections = handle.connection_count(),
            "connections still open after the shutdown timeout"
        );
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn wait(task: tokio::task::JoinHandle<std::io::Result<()>>) -> Result<(), ServeError> {
    match task.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(ServeError::Serve(e)),
        Err(e) => Err(ServeError::Serve(std::io::Error::other(e))),
    }
}
