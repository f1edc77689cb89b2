//! Stopping a service on Ctrl-C or SIGTERM.

use std::{future::Future, time::Duration};

/// Completes on Ctrl-C or SIGTERM.
pub async fn signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("cannot listen for SIGTERM: {e}");
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// The signal to give a server for its graceful shutdown, and a future that completes `grace`
/// after that signal. A server waits for its open streams (gRPC server streams, live pages)
/// to end, and those follow the log until the client leaves: the caller stops waiting for the
/// server when the grace is over.
pub fn with_grace(
    grace: Duration,
) -> (
    impl Future<Output = ()> + Send + 'static,
    impl Future<Output = ()> + Send + 'static,
) {
    let (signalled, mut watching) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        signal().await;
        let _ = signalled.send(true);
    };
    let grace_over = async move {
        if watching.wait_for(|s| *s).await.is_ok() {
            tokio::time::sleep(grace).await;
            tracing::warn!("clients' streams still open {grace:?} after the signal: stopping");
        } else {
            // The server ended without a signal: nothing to wait for.
            std::future::pending::<()>().await;
        }
    };
    (shutdown, grace_over)
}
