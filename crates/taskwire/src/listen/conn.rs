//! One connection: the socket wrapper that watches it, the watchdog that ends
//! idle and slow connections, and the service that counts requests in flight.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use super::graceful::{Control, Driven, ASK_DROP, ASK_GRACEFUL, GRACEFUL_CLOSE};
use super::incoming::{App, Shared};
use super::limits::{FrameBudget, ListenerConfig, ProgressBody};
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tower::Service;
use tracing::debug;

/// What a connection's IO and service record for its watchdog.
pub(crate) struct ConnState {
    /// When the connection was accepted (the origin of the millisecond clocks).
    pub(crate) accepted: Instant,
    /// Requests whose response has not been sent whole (or dropped).
    pub(crate) in_flight: AtomicUsize,
    /// Requests started on this connection.
    pub(crate) started: AtomicU64,
    /// Milliseconds after `accepted` (plus one) since which a write has been
    /// waiting for the socket; 0 while writes go through.
    pub(crate) write_blocked_since: AtomicU64,
    /// Set when the peer sent more HTTP/2 PING and SETTINGS frames than their
    /// budget allows.
    pub(crate) frames_over_budget: AtomicBool,
}

impl ConnState {
    pub(crate) fn new() -> Self {
        Self {
            accepted: Instant::now(),
            in_flight: AtomicUsize::new(0),
            started: AtomicU64::new(0),
            write_blocked_since: AtomicU64::new(0),
            frames_over_budget: AtomicBool::new(false),
        }
    }

    pub(crate) fn now_ms(&self) -> u64 {
        u64::try_from(self.accepted.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Why a connection is closed by its watchdog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Keep,
    /// No complete request within the handshake timeout.
    Handshake,
    /// No request in flight for the idle timeout.
    Idle,
    /// The peer has not read for the send timeout.
    Stalled,
}

/// A connection's clocks, looked at every [`ListenerConfig::check_interval`].
pub(crate) struct Watchdog {
    pub(crate) handshake: Duration,
    pub(crate) idle: Duration,
    pub(crate) send: Duration,
    /// `started` at the last look, and how long the connection has been idle.
    pub(crate) last_started: u64,
    pub(crate) idle_for: Duration,
}

impl Watchdog {
    pub(crate) fn new(config: &ListenerConfig) -> Self {
        Self {
            handshake: config.handshake_timeout,
            idle: config.idle_timeout,
            send: config.send_timeout,
            last_started: 0,
            idle_for: Duration::ZERO,
        }
    }

    pub(crate) fn look(&mut self, state: &ConnState, since_last: Duration) -> Verdict {
        let blocked = state.write_blocked_since.load(Ordering::Relaxed);
        if blocked != 0 {
            let for_ms = state.now_ms().saturating_sub(blocked - 1);
            if Duration::from_millis(for_ms) >= self.send {
                return Verdict::Stalled;
            }
        }
        let started = state.started.load(Ordering::Relaxed);
        if started == 0 {
            return if state.accepted.elapsed() >= self.handshake {
                Verdict::Handshake
            } else {
                Verdict::Keep
            };
        }
        if state.in_flight.load(Ordering::Relaxed) == 0 && started == self.last_started {
            self.idle_for += since_last;
        } else {
            self.idle_for = Duration::ZERO;
        }
        self.last_started = started;
        if self.idle_for >= self.idle {
            Verdict::Idle
        } else {
            Verdict::Keep
        }
    }
}

pub(crate) async fn connection(
    stream: TcpStream,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
    stop: CancellationToken,
) {
    if let Err(e) = stream.set_nodelay(true) {
        debug!(error = %e, "TCP_NODELAY not set");
    }
    let peer = stream.peer_addr().ok();
    let state = Arc::new(ConnState::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        state: state.clone(),
        frames: FrameBudget::new(shared.config.http2_max_control_frames),
    });
    let service = ConnService {
        app: shared.app.clone(),
        state: state.clone(),
        body_timeout: shared.config.body_timeout,
        peer,
    };
    let conn = shared.builder.serve_connection(io, service).into_owned();
    let control = Arc::new(Control::default());
    let watchdog = tokio::spawn(watch(
        state,
        control.clone(),
        shared.config.clone(),
        stop,
        peer,
    ));
    let driven = Driven {
        conn: Box::pin(conn),
        control,
        graceful_started: false,
    };
    match driven.await {
        Some(Err(e)) => debug!(?peer, error = %e, "connection ended"),
        Some(Ok(())) => {}
        None => debug!(?peer, "connection dropped"),
    }
    watchdog.abort();
}

/// A connection's watchdog task: looks at its clocks every
/// [`ListenerConfig::check_interval`] and asks it to close (see [`Verdict`]), and
/// asks for a graceful close when the server stops.
pub(crate) async fn watch(
    state: Arc<ConnState>,
    control: Arc<Control>,
    config: ListenerConfig,
    stop: CancellationToken,
    peer: Option<std::net::SocketAddr>,
) {
    let interval = config.check_interval();
    let mut watchdog = Watchdog::new(&config);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => {
                // The server's drain timeout bounds what follows.
                control.ask(ASK_GRACEFUL);
                return;
            }
            _ = tick.tick() => {}
        }
        if state.frames_over_budget.load(Ordering::Relaxed) {
            debug!(
                ?peer,
                "HTTP/2 control frames over the budget: connection dropped"
            );
            control.ask(ASK_DROP);
            return;
        }
        match watchdog.look(&state, interval) {
            Verdict::Keep => {}
            Verdict::Idle => {
                debug!(?peer, "idle connection closed");
                control.ask(ASK_GRACEFUL);
                tokio::select! {
                    _ = stop.cancelled() => {}
                    _ = tokio::time::sleep(GRACEFUL_CLOSE) => {
                        debug!(?peer, "connection still open after its graceful close: dropped");
                        control.ask(ASK_DROP);
                    }
                }
                return;
            }
            v @ (Verdict::Handshake | Verdict::Stalled) => {
                debug!(?peer, reason = ?v, "connection dropped");
                control.ask(ASK_DROP);
                return;
            }
        }
    }
}

/// The socket, with the time its writes have been waiting recorded for the
/// watchdog, and HTTP/2 control frames counted against their budget.
pub(crate) struct Watched {
    pub(crate) inner: TcpStream,
    pub(crate) state: Arc<ConnState>,
    pub(crate) frames: FrameBudget,
}

impl Watched {
    pub(crate) fn record<T>(&self, poll: &Poll<io::Result<T>>) {
        let blocked = &self.state.write_blocked_since;
        match poll {
            Poll::Pending => {
                if blocked.load(Ordering::Relaxed) == 0 {
                    blocked.store(self.state.now_ms() + 1, Ordering::Relaxed);
                }
            }
            Poll::Ready(_) => {
                if blocked.load(Ordering::Relaxed) != 0 {
                    blocked.store(0, Ordering::Relaxed);
                }
            }
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let p = Pin::new(&mut this.inner).poll_read(cx, buf);
        if p.is_ready() && this.frames.watching() {
            let read = &buf.filled()[before..];
            if !this.frames.scan(read, Instant::now()) {
                this.state.frames_over_budget.store(true, Ordering::Relaxed);
                return Poll::Ready(Err(io::Error::other(
                    "HTTP/2 control frames over the budget",
                )));
            }
        }
        p
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.record(&p);
        p
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.record(&p);
        p
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.inner).poll_flush(cx);
        self.record(&p);
        p
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// hyper's service for one connection: counts requests in flight (until the
/// response body is sent or dropped), bounds the request body's progress, and
/// calls the server's layer stack.
#[derive(Clone)]
pub(crate) struct ConnService {
    pub(crate) app: App,
    pub(crate) state: Arc<ConnState>,
    pub(crate) body_timeout: Duration,
    /// The peer's address: each request carries it as axum's `ConnectInfo`,
    /// which tells connections apart (MCP `tasks/stream` allows one stream per
    /// task per connection).
    pub(crate) peer: Option<std::net::SocketAddr>,
}

/// Marks a request in flight until dropped.
pub(crate) struct InFlight(Arc<ConnState>);

impl InFlight {
    pub(crate) fn new(state: &Arc<ConnState>) -> Self {
        state.started.fetch_add(1, Ordering::Relaxed);
        state.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(state.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl hyper::service::Service<hyper::Request<Incoming>> for ConnService {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = ConnFuture;

    fn call(&self, req: hyper::Request<Incoming>) -> Self::Future {
        let guard = InFlight::new(&self.state);
        let timeout = self.body_timeout;
        let mut req = req.map(|body| Body::new(ProgressBody::new(body, timeout)));
        if let Some(peer) = self.peer {
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        ConnFuture {
            inner: self.app.serve(req),
            guard: Some(guard),
        }
    }
}

/// The future of [`ConnService::call`].
pub(crate) struct ConnFuture {
    pub(crate) inner: <App as Service<Request>>::Future,
    pub(crate) guard: Option<InFlight>,
}

impl Future for ConnFuture {
    type Output = Result<Response<Tracked>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let res = match ready!(Pin::new(&mut self.inner).poll(cx)) {
            Ok(res) => res,
            Err(never) => match never {},
        };
        let guard = self.guard.take();
        Poll::Ready(Ok(res.map(|body| Tracked {
            inner: body,
            _guard: guard,
        })))
    }
}

/// A response body that keeps its request counted in flight until it is sent
/// whole or dropped.
pub(crate) struct Tracked {
    pub(crate) inner: Body,
    pub(crate) _guard: Option<InFlight>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
