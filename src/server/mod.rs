//! Sockets, TLS, limits, timeouts, the admin port and graceful shutdown for `jobgate serve`.
//! No business rule lives here.

pub(crate) mod allocator;
mod args;
pub(crate) mod budget;
pub(crate) mod expiry;
pub(crate) mod extract;
pub(crate) mod leaf;
pub mod linger;
pub mod metrics;
pub(crate) mod rejection;
pub(crate) mod release;
pub mod reload;
pub(crate) mod server_name;
pub mod tls;
pub(crate) mod webhook;

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum_server::Handle;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use hyper_util::rt::TokioTimer;

use crate::job;
use crate::rule_flags::ConfigError;
use crate::runtime::{self, BindError};

pub use args::ServeArgs;

/// Where the serving certificate comes from.
#[derive(Debug, Clone)]
enum TlsSource {
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

/// What the flags come to: where the certificate comes from, the listen addresses (loopback in
/// dev mode), the rules loaded.
struct Setup {
    tls: TlsSource,
    addr: SocketAddr,
    admin_addr: SocketAddr,
    rules: job::Config,
    discovery: Option<release::Discovery>,
}

impl Setup {
    fn of(args: &ServeArgs) -> Result<Setup, ConfigError> {
        let localhost =
            |addr: SocketAddr| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port());
        let (tls, addr, admin_addr) = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => (
                TlsSource::Files {
                    cert: cert.clone(),
                    key: key.clone(),
                },
                args.addr,
                args.admin_addr,
            ),
            // clap's `requires` makes the flags come in pairs; no pair is dev mode.
            _ => (
                TlsSource::Dev {
                    dir: args.dev_certs_dir.clone(),
                },
                localhost(args.addr),
                localhost(args.admin_addr),
            ),
        };
        let rules = args.rules.load()?;
        if let Some(note) = rules.release_note() {
            tracing::warn!("{note}");
        }
        let discovery = release::Discovery::of(
            args.cluster_url.as_deref(),
            &args.cluster_ca,
            args.cluster_version_interval,
            |name| std::env::var(name).ok(),
        );
        Ok(Setup {
            tls,
            addr,
            admin_addr,
            rules,
            discovery,
        })
    }
}

/// Why `serve` could not start or stopped on its own.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The rule settings (`--config`, `--policy`, ...) cannot be read.
    #[error(transparent)]
    Config(#[from] ConfigError),
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
    args: ServeArgs,
    on_listening: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let setup = Setup::of(&args)?;
    allocator::configure();
    let mut builder = runtime::Builder::new(setup.admin_addr);
    let serving = ServingTls::load(&args, &setup.tls, builder.registry())?;
    let listener = bind(setup.addr)?;
    let metrics = metrics::ServerMetrics::register(builder.registry());
    let rules_info = metrics::RulesInfo::register(builder.registry());
    let (rules, follow) = release::follow(setup.rules, setup.discovery, rules_info).await;
    // Aborted when this function returns, however it returns.
    let _follow_task = follow.map(|task| AbortOnDrop(tokio::spawn(task)));
    let runtime = builder.bind(shutdown).await?;
    let listening = Listening {
        addr: listener.local_addr().map_err(ServeError::Serve)?,
        admin_addr: runtime.admin_addr(),
        dev: serving.dev,
    };

    let app = webhook::router(webhook_state(&args, rules, metrics));
    let handle: Handle<SocketAddr> = Handle::new();
    // The reload task is aborted when this function returns, however it returns.
    let (server_task, _reload_task) = start_https(
        listener,
        serving.reloader,
        serving.config,
        &args,
        app,
        handle.clone(),
    )?;

    // Aborted when shutdown begins.
    let mut ready_task = None;
    if handle.listening().await.is_some() {
        ready_task = become_ready(runtime.readiness(), serving.named);
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
    drain(&runtime, &handle, &args).await;
    runtime.stop().await;
    tracing::info!("stopped");
    Ok(())
}

/// The serving certificate as loaded at start: its reloader, the first configuration, whether
/// it names `--tls-server-name` (a reload may make it so), and dev mode's generated files.
struct ServingTls {
    reloader: reload::CertReloader,
    config: Arc<rustls::ServerConfig>,
    named: Option<tokio::sync::watch::Receiver<bool>>,
    dev: Option<tls::DevCertificates>,
}

impl ServingTls {
    fn load(
        args: &ServeArgs,
        source: &TlsSource,
        registry: &mut prometheus_client::registry::Registry,
    ) -> Result<ServingTls, ServeError> {
        let reload_metrics = reload::ReloadMetrics::register(registry);
        // Dev mode's generated files are watched like mounted ones: what matters there is that
        // `--client-ca` is reloaded the same way in both modes.
        let (cert, key, dev) = serving_files(source)?;
        let (mut reloader, config) = reload::CertReloader::load_with_client_ca(
            &cert,
            &key,
            args.client_ca.as_deref(),
            reload_metrics,
        )?;
        let named = args
            .tls_server_name
            .clone()
            .map(|host| reloader.require_server_name(host));
        Ok(ServingTls {
            reloader,
            config,
            named,
            dev,
        })
    }
}

/// Starts the webhook server on `listener`, its certificate reloaded every
/// `--tls-reload-interval` by the task returned (aborted when dropped).
fn start_https(
    listener: TcpListener,
    reloader: reload::CertReloader,
    config: Arc<rustls::ServerConfig>,
    args: &ServeArgs,
    app: axum::Router,
    handle: Handle<SocketAddr>,
) -> Result<(tokio::task::JoinHandle<std::io::Result<()>>, AbortOnDrop), ServeError> {
    let rustls_config = RustlsConfig::from_config(config);
    let reload_task = AbortOnDrop(tokio::spawn(
        reloader.run(rustls_config.clone(), args.tls_reload_interval),
    ));
    let server = https_server(
        listener,
        rustls_config,
        args.tls_handshake_timeout,
        args.header_read_timeout,
    )
    .map_err(ServeError::Serve)?
    .handle(handle);
    let server_task = tokio::spawn(server.serve(app.into_make_service()));
    Ok((server_task, reload_task))
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
fn webhook_state(
    args: &ServeArgs,
    rules: release::CurrentRules,
    metrics: metrics::ServerMetrics,
) -> webhook::WebhookState {
    webhook::WebhookState {
        config: rules,
        limits: extract::BodyLimits {
            body_timeout: args.body_timeout,
            max_body_bytes: webhook::MAX_BODY_BYTES,
            budget: budget::MemoryBudget::new(
                budget::BudgetLimits::new(
                    args.body_memory_budget,
                    webhook::MAX_BODY_BYTES,
                    args.body_budget_wait,
                    // A body already read may wait for review as long as a client may take to
                    // send it.
                    args.body_timeout,
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
async fn drain(runtime: &runtime::Runtime, handle: &Handle<SocketAddr>, args: &ServeArgs) {
    let connections_closed = async {
        tokio::time::sleep(args.shutdown_delay).await;
        handle.graceful_shutdown(Some(args.shutdown_timeout));
        while handle.connection_count() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let timeout = args.shutdown_delay + args.shutdown_timeout + Duration::from_secs(1);
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
