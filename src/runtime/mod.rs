//! The one runtime of the two long-running commands, `serve` and `reconcile` (as olix0r/kubert's
//! `runtime.rs` is for linkerd's controllers): the admin port with the command's own metrics,
//! readiness, the one shutdown signal, and for `reconcile` the Kubernetes client and the Lease.
//!
//! A command takes a [`Builder`], registers its metrics, [`Builder::bind`]s the admin port with
//! its shutdown signal, sets [`Runtime::readiness`] from its own state (the webhook listening; the
//! watches listed, or the election round ended), drains its work on [`Runtime::shutdown`] within
//! [`Runtime::drain`], and ends with [`Runtime::stop`].
//!
//! - [`admin`]: `/livez`, `/readyz`, `/metrics` on plain HTTP;
//! - [`shutdown`]: SIGTERM/SIGINT, and the shared signal every task of a command waits on;
//! - [`client`]: how `reconcile`, `status` and `audit` reach the cluster (`serve` holds no
//!   credential and never makes one);
//! - [`lease`]: leader election, leadership as a watch channel;
//! - [`cluster_release`]: the release a cluster runs, for `check --cluster`, `render --cluster`
//!   and `audit`.

pub(crate) mod admin;
pub(crate) mod client;
pub mod cluster_release;
pub(crate) mod lease;
pub(crate) mod shutdown;

#[cfg(test)]
pub(crate) mod scripted;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;

pub use admin::{Readiness, encode};
pub use client::ClusterError;
pub use lease::Leadership;
use shutdown::Shutdown;
pub use shutdown::signal;

/// The admin port cannot be listened on.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on admin address {addr}: {source}")]
pub struct BindError {
    /// The admin address asked for.
    pub addr: SocketAddr,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

/// Configures a [`Runtime`]: where the admin port listens and what its `/metrics` serves.
pub(crate) struct Builder {
    admin_addr: SocketAddr,
    registry: Registry,
}

impl Builder {
    pub(crate) fn new(admin_addr: SocketAddr) -> Builder {
        let mut registry = Registry::default();
        register_build_info(&mut registry);
        Builder {
            admin_addr,
            registry,
        }
    }

    /// The registry the command's metrics register in; `/metrics` serves it, and only it.
    pub(crate) fn registry(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// Binds the admin port and serves it (not ready yet); `shutdown` becomes the command's one
    /// signal, [`Runtime::shutdown`].
    pub(crate) async fn bind(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Runtime, BindError> {
        let error = |source| BindError {
            addr: self.admin_addr,
            source,
        };
        let listener = tokio::net::TcpListener::bind(self.admin_addr)
            .await
            .map_err(error)?;
        let admin_addr = listener.local_addr().map_err(error)?;
        let readiness = Readiness::default();
        let admin = admin::AdminServer::spawn(
            listener,
            admin::AdminState {
                readiness: readiness.clone(),
                registry: Arc::new(self.registry),
            },
        );
        Ok(Runtime {
            admin,
            admin_addr,
            readiness,
            shutdown: Shutdown::new(shutdown),
        })
    }
}

/// Labels of `jobgate_build_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct BuildInfoLabels {
    version: &'static str,
    revision: &'static str,
}

/// `jobgate_build_info{version, revision} 1`, as Prometheus' own `prometheus_build_info` and
/// kube-state-metrics' `kube_state_metrics_build_info`: which build each pod runs, to join on
/// (`* on (pod) group_left(version) jobgate_build_info`) and to see a rollout's progress.
fn register_build_info(registry: &mut Registry) {
    let info = prometheus_client::metrics::family::Family::<
        BuildInfoLabels,
        prometheus_client::metrics::gauge::Gauge,
    >::default();
    info.get_or_create(&BuildInfoLabels {
        version: env!("CARGO_PKG_VERSION"),
        revision: env!("JOBGATE_GIT_COMMIT"),
    })
    .set(1);
    registry.register(
        "jobgate_build_info",
        "1, labelled with the version and the git commit (revision) of the running jobgate",
        info,
    );
}

/// A command's admin port, readiness and shutdown signal, from [`Builder::bind`] to
/// [`Runtime::stop`].
pub(crate) struct Runtime {
    admin: admin::AdminServer,
    admin_addr: SocketAddr,
    readiness: Readiness,
    shutdown: Shutdown,
}

impl Runtime {
    /// The address the admin port listens on (the real port when 0 was asked).
    pub(crate) fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// What `/readyz` answers; the command sets it from its own state.
    pub(crate) fn readiness(&self) -> Readiness {
        self.readiness.clone()
    }

    /// The command's shutdown signal: resolves once, for every clone, and stays resolved.
    pub(crate) fn shutdown(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Shutting down: `/readyz` fails from now on, and `work` (the command's in-flight work
    /// ending) gets `timeout`. False when it did not end in time (the caller says what was left).
    pub(crate) async fn drain(&self, timeout: Duration, work: impl Future) -> bool {
        self.readiness.set(false);
        tracing::info!(?timeout, "shutting down: draining in-flight work");
        tokio::time::timeout(timeout, work).await.is_ok()
    }

    /// Not ready, and the admin port closed (a scrape in progress gets a second).
    pub(crate) async fn stop(self) {
        self.readiness.set(false);
        self.admin.stop().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(addr: SocketAddr, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut out = String::new();
        stream.read_to_string(&mut out).await.expect("read");
        out
    }

    /// The admin port serves the command's registry and nothing else, is not ready until the
    /// command says so, and is not ready again once it drains.
    #[tokio::test]
    async fn the_admin_port_follows_the_commands_readiness_and_serves_its_metrics() {
        let mut builder = Builder::new("127.0.0.1:0".parse().expect("addr"));
        let gauge = prometheus_client::metrics::gauge::Gauge::<i64>::default();
        builder
            .registry()
            .register("jobgate_test_value", "A test gauge", gauge.clone());
        gauge.set(7);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = builder
            .bind(async move {
                let _ = stopped.await;
            })
            .await
            .expect("bind");
        let addr = runtime.admin_addr();
        assert_ne!(addr.port(), 0);
        assert!(get(addr, "/livez").await.starts_with("HTTP/1.1 200"));
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        runtime.readiness().set(true);
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        let metrics = get(addr, "/metrics").await;
        assert!(metrics.contains("jobgate_test_value 7"), "{metrics}");
        let build_info = format!(
            "jobgate_build_info{{version=\"{}\",revision=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION"),
            env!("JOBGATE_GIT_COMMIT")
        );
        assert!(metrics.contains(&build_info), "{metrics}");
        assert!(!metrics.contains("jobgate_webhook"), "{metrics}");

        // The signal reaches every clone, also one taken after it fired.
        let early = runtime.shutdown();
        stop.send(()).expect("signal");
        early.await;
        runtime.shutdown().await;

        assert!(runtime.drain(Duration::from_secs(1), async {}).await);
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        assert!(
            !runtime
                .drain(Duration::from_millis(10), std::future::pending::<()>())
                .await
        );
        runtime.stop().await;
        assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    }

    #[tokio::test]
    async fn an_admin_address_in_use_is_said_with_the_address() {
        let taken = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = taken.local_addr().expect("addr");
        let Err(error) = Builder::new(addr).bind(std::future::pending()).await else {
            panic!("bound an address in use");
        };
        assert!(
            error
                .to_string()
                .starts_with(&format!("cannot listen on admin address {addr}: ")),
            "{error}"
        );
    }
}
