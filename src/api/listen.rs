//! The connection loop: HTTP/1.1 with a header read timeout.
//!
//! `axum::serve` gives hyper no timer, so hyper's header read timeout is
//! off there and a client that trickles its request line and headers
//! (slowloris) keeps its connection as long as it likes; the request
//! timeout layer only starts once the headers are in. This loop is the same
//! accept-and-serve as `axum::serve` with a timer and
//! [`Config::header_read_timeout`](super::Config::header_read_timeout) set,
//! and graceful shutdown: stop accepting, let in-flight requests finish
//! (each is bounded by the request timeout), close idle connections.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tracing::{debug, warn};

/// Serve `app` on `listener` until `shutdown` completes, then drain for at
/// most `drain` (in-flight requests are already bounded by the request
/// timeout; this only guards against a connection that never closes).
pub(super) async fn serve_http1(
    listener: TcpListener,
    app: Router,
    header_read_timeout: Duration,
    drain: Duration,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little
                    // instead of spinning, as axum::serve does.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(app.clone());
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            // A client that hangs up or is cut by the header timeout ends
            // here; it is not a server error.
            if let Err(e) = conn.await {
                debug!(%peer, error = %e, "connection closed with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(drain, graceful.shutdown())
        .await
        .is_err()
    {
        warn!(
            seconds = drain.as_secs(),
            "connections still open after the drain time; closing them"
        );
    }
    Ok(())
}
