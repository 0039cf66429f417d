//! The plain-HTTP admin port: `/livez`, `/readyz`, `/metrics`, one per long-running command
//! (linkerd2's policy-controller and kubert keep it apart from the serving port, as here).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;

/// Readiness: false until the process can serve, false again once it is shutting down.
#[derive(Clone, Debug, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub(crate) fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::SeqCst);
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
pub(crate) struct AdminState {
    pub(crate) readiness: Readiness,
    pub(crate) registry: Arc<Registry>,
}

/// The admin port's server, one per long-running command (`serve`, `reconcile`), each with its
/// own registry and readiness.
pub(crate) struct AdminServer {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl AdminServer {
    /// Serves [`router`] on `listener` until [`AdminServer::stop`].
    pub(crate) fn spawn(listener: tokio::net::TcpListener, state: AdminState) -> AdminServer {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, router(state))
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
        });
        AdminServer { stop, task }
    }

    /// Stops serving: open connections get a second to finish (a scrape in progress), then
    /// the task is dropped.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let mut task = self.task;
        if tokio::time::timeout(std::time::Duration::from_secs(1), &mut task)
            .await
            .is_err()
        {
            task.abort();
        }
    }
}

/// The admin router. `/livez` answers as long as the process runs its event loop.
fn router(state: AdminState) -> Router {
    Router::new()
        .route("/livez", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn readyz(State(state): State<AdminState>) -> impl IntoResponse {
    if state.readiness.is_ready() {
        (StatusCode::OK, "ok\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

async fn metrics(State(state): State<AdminState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        encode(&state.registry),
    )
}

/// Renders a registry in the Prometheus text format (what `/metrics` answers).
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, registry).is_err() {
        out.clear();
    }
    out
}
