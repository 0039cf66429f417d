//! The one shutdown signal of a command: [`signal`] (SIGTERM, SIGINT) or a test's future, shared
//! by every task that stops on it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

/// Resolves on SIGTERM (kubelet stopping the pod) or SIGINT (Ctrl-C).
pub async fn signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await
            }
        }
    };
    tokio::select! {
        _ = terminate => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!("shutdown signal received");
}

/// A command's shutdown signal: cheap to clone, resolves for every clone once the signal it
/// was made from has (also for a clone taken later), and stays resolved.
#[derive(Clone)]
pub(crate) struct Shutdown(Shared<BoxFuture<'static, ()>>);

impl Shutdown {
    pub(crate) fn new(signal: impl Future<Output = ()> + Send + 'static) -> Shutdown {
        Shutdown(signal.boxed().shared())
    }
}

impl Future for Shutdown {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.poll_unpin(cx)
    }
}
