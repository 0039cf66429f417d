//! The one signal future `serve` and `reconcile` stop on.

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
