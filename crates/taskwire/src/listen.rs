//! The accept loop of `taskwire serve`: HTTP/1.1 through hyper, HTTP/2 with prior
//! knowledge (h2c, what gRPC clients speak) through [`crate::h2`], on one port.
//!
//! Each connection is told apart by its first bytes: the HTTP/2 client preface,
//! or anything else (HTTP/1.1). On shutdown the loop stops accepting, asks every
//! connection to finish gracefully (HTTP/1.1: after the request in progress;
//! HTTP/2: GOAWAY, then the open streams finish) and returns when all are gone.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use bytes::{Buf, Bytes, BytesMut};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tracing::{debug, error};

use crate::direct::Front;
use crate::h2;

/// Serves connections from `listener` until `stop` is cancelled, then drains
/// them (see the module doc).
pub(crate) async fn serve(
    listener: TcpListener,
    front: Front,
    h2_config: h2::Config,
    stop: CancellationToken,
) -> io::Result<()> {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    debug!(%peer, "connection accepted");
                    conns.spawn(connection(stream, front.clone(), h2_config, stop.clone()));
                }
                Err(e) => accept_error(e).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    while conns.join_next().await.is_some() {}
    Ok(())
}

/// As hyper's server did: a connection that failed while being accepted is
/// skipped; any other error (out of file descriptors, say) is logged and the
/// loop pauses a second before accepting again.
async fn accept_error(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    error!("accept error: {e}");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

async fn connection(
    mut stream: TcpStream,
    front: Front,
    h2_config: h2::Config,
    stop: CancellationToken,
) {
    if let Err(e) = stream.set_nodelay(true) {
        debug!(error = %e, "TCP_NODELAY not set");
    }
    // Read until the bytes are the whole HTTP/2 preface or cannot be.
    let mut read = BytesMut::with_capacity(16 * 1024);
    while read.len() < h2::PREFACE.len() && h2::PREFACE.starts_with(&read) {
        tokio::select! {
            _ = stop.cancelled() => return,
            n = stream.read_buf(&mut read) => match n {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
        }
    }
    if read.starts_with(h2::PREFACE) {
        read.advance(h2::PREFACE.len());
        if let Err(e) = h2::serve(stream, read, front, h2_config, stop).await {
            debug!(error = %e, "HTTP/2 connection ended");
        }
        return;
    }
    let io = TokioIo::new(Prefixed {
        prefix: read.freeze(),
        inner: stream,
    });
    let service =
        TowerToHyperService::new(front.map_request(|r: Request<Incoming>| r.map(Body::new)));
    let conn = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                debug!(error = %e, "HTTP/1 connection ended");
            }
            return;
        }
        _ = stop.cancelled() => conn.as_mut().graceful_shutdown(),
    }
    if let Err(e) = conn.await {
        debug!(error = %e, "HTTP/1 connection ended");
    }
}

/// A stream whose first bytes were already read: they are read again first.
struct Prefixed {
    prefix: Bytes,
    inner: TcpStream,
}

impl AsyncRead for Prefixed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
