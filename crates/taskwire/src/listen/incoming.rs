//! The accept loop: connections taken within the connection limit, accept
//! errors survived, each connection handed to `conn`.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use super::conn::connection;
use super::limits::{effective_max_connections, ListenerConfig};
use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error};

/// The service every connection calls: the server's whole layer stack.
pub(crate) type App = crate::edge::Edge;

/// What every connection task shares.
pub(crate) struct Shared {
    pub(crate) builder: auto::Builder<TokioExecutor>,
    pub(crate) app: App,
    pub(crate) config: ListenerConfig,
}

/// Serves connections from `listener` until `stop` is cancelled, then drains
/// them (see the module doc).
pub(crate) async fn serve(
    listener: TcpListener,
    app: App,
    config: ListenerConfig,
    stop: CancellationToken,
) -> io::Result<()> {
    let permits = Arc::new(Semaphore::new(effective_max_connections(
        config.max_connections,
    )));
    let shared = Arc::new(Shared {
        builder: config.builder(),
        app,
        config,
    });
    let mut conns = JoinSet::new();
    loop {
        // At the cap, stop accepting until a connection closes.
        let permit = tokio::select! {
            _ = stop.cancelled() => break,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let accepted = loop {
            tokio::select! {
                _ = stop.cancelled() => break None,
                a = listener.accept() => break Some(a),
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        };
        match accepted {
            None => break,
            Some(Ok((stream, peer))) => {
                debug!(%peer, "connection accepted");
                conns.spawn(connection(stream, shared.clone(), permit, stop.clone()));
            }
            Some(Err(e)) => accept_error(e).await,
        }
    }
    drop(listener);
    while conns.join_next().await.is_some() {}
    Ok(())
}

/// As hyper's server did: a connection that failed while being accepted is
/// skipped; any other error (out of file descriptors, say) is logged and the
/// loop pauses before accepting again.
pub(crate) async fn accept_error(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    error!("accept error: {e}");
    tokio::time::sleep(Duration::from_millis(200)).await;
}
