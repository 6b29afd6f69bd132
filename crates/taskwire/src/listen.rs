//! The accept loop of `taskwire serve`: hyper-util's auto connection builder
//! (HTTP/1.1, and HTTP/2 with prior knowledge — h2c, what gRPC clients speak — on
//! one port) with a tokio timer, configured for hostile clients.
//!
//! Every resource a client can hold before it is even authenticated has a bound
//! ([`ListenerConfig`]): connections (accepting pauses at the cap), the time to the
//! first request, the time to read a request head, idle time, HTTP/2 streams,
//! decoded header bytes, reset streams (the Rapid Reset attack and the variant a
//! server provokes), bytes buffered per stream for a slow reader, a request body
//! that stops making progress, and a peer that stops reading its socket. A client
//! over a limit loses its own connection (HTTP/2: GOAWAY, ENHANCE_YOUR_CALM where
//! hyper's `h2` sends it); the others do not notice.
//!
//! On shutdown the loop stops accepting, asks every connection to finish
//! gracefully (HTTP/1.1: after the request in progress; HTTP/2: GOAWAY, then the
//! open streams finish) and returns when all are gone.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use futures::task::AtomicWaker;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;
use tower::Service;
use tracing::{debug, error, warn};

/// The limits of the listener. Every field has a `taskwire serve` flag (and an
/// environment variable); the defaults are safe for a server reachable by
/// clients that are not trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenerConfig {
    /// Most connections open at once; beyond it the listener stops accepting
    /// until one closes (the rest wait in the kernel's backlog).
    pub max_connections: usize,
    /// How long a new connection may take to send its first complete request
    /// head (HTTP/1.1) or its preface and first request (HTTP/2).
    pub handshake_timeout: Duration,
    /// How long hyper waits for an HTTP/1.1 request head once it waits for one
    /// (slowloris). hyper starts this timer as soon as it waits for the next
    /// request, so it also ends HTTP/1.1 keep-alive connections idle for longer.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed (HTTP/2:
    /// GOAWAY first).
    pub idle_timeout: Duration,
    /// HTTP/2 keep-alive: a PING after this long without a frame from the peer
    /// (`None`: no pings).
    pub http2_keepalive_interval: Option<Duration>,
    /// HTTP/2 keep-alive: the connection is closed if the PING is not
    /// acknowledged within this.
    pub http2_keepalive_timeout: Duration,
    /// HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS.
    pub http2_max_concurrent_streams: u32,
    /// Largest request head: HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE (decoded
    /// header list, RFC 9113 6.5.2) and the HTTP/1.1 read buffer for a head.
    pub max_header_bytes: usize,
    /// HTTP/2 streams a client may open and reset before the server accepted
    /// them (the Rapid Reset attack, CVE-2023-44487); more is GOAWAY
    /// ENHANCE_YOUR_CALM.
    pub http2_max_pending_reset_streams: usize,
    /// HTTP/2 streams the server may reset because of the client's protocol
    /// errors (the server-provoked variant of Rapid Reset); more is GOAWAY
    /// ENHANCE_YOUR_CALM.
    pub http2_max_local_reset_streams: usize,
    /// Bytes of a response queued per HTTP/2 stream for a peer whose flow-control
    /// window is closed; the response body is not read further meanwhile.
    pub http2_max_send_buffer: usize,
    /// A request body that delivers nothing for this long is abandoned (the
    /// handler sees a read error; the request gets the protocol's error).
    pub body_timeout: Duration,
    /// A connection whose writes make no progress for this long (the peer does
    /// not read its socket) is closed.
    pub send_timeout: Duration,
    /// HTTP/2 PING and SETTINGS frames (not acknowledgements) a client may send
    /// per second, on average, with bursts of twice as many; a client over it
    /// is disconnected. hyper's `h2` answers every PING and SETTINGS, so without
    /// this a client that floods them (and never reads the answers) costs the
    /// server CPU until the socket's send buffer is full.
    pub http2_max_control_frames: u32,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            http2_keepalive_interval: Some(Duration::from_secs(30)),
            http2_keepalive_timeout: Duration::from_secs(10),
            http2_max_concurrent_streams: 200,
            max_header_bytes: 32 * 1024,
            http2_max_pending_reset_streams: 20,
            http2_max_local_reset_streams: 200,
            http2_max_send_buffer: 256 * 1024,
            body_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_secs(30),
            http2_max_control_frames: 100,
        }
    }
}

/// hyper refuses an HTTP/1.1 read buffer smaller than this.
const MIN_HTTP1_BUFFER: usize = 8192;

impl ListenerConfig {
    /// The connection builder for these limits.
    fn builder(&self) -> auto::Builder<TokioExecutor> {
        let mut b = auto::Builder::new(TokioExecutor::new());
        b.http1()
            .timer(TokioTimer::new())
            .header_read_timeout(self.header_read_timeout)
            .max_buf_size(self.max_header_bytes.max(MIN_HTTP1_BUFFER))
            .keep_alive(true);
        let header_list = u32::try_from(self.max_header_bytes).unwrap_or(u32::MAX);
        b.http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(self.http2_keepalive_interval)
            .keep_alive_timeout(self.http2_keepalive_timeout)
            .max_concurrent_streams(self.http2_max_concurrent_streams)
            .max_header_list_size(header_list)
            .max_pending_accept_reset_streams(self.http2_max_pending_reset_streams)
            .max_local_error_reset_streams(self.http2_max_local_reset_streams)
            .max_send_buf_size(self.http2_max_send_buffer)
            // The HTTP/2 `Date` header is the layer stack's, on every answer
            // but gRPC's (crate::edge): hyper's costs an HPACK field per
            // gRPC answer too.
            .auto_date_header(false);
        b
    }

    /// How often a connection's watchdog looks at its clocks: often enough to
    /// enforce the shortest timeout within a quarter of it, at most once per
    /// 50 ms and at least once per second.
    fn check_interval(&self) -> Duration {
        let shortest = self
            .handshake_timeout
            .min(self.idle_timeout)
            .min(self.send_timeout);
        (shortest / 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
    }
}

/// The service every connection calls: the server's whole layer stack.
pub(crate) type App = crate::edge::Edge;

/// What every connection task shares.
struct Shared {
    builder: auto::Builder<TokioExecutor>,
    app: App,
    config: ListenerConfig,
}

/// Raises the soft limit on open files to the hard limit, so that the connection
/// cap, not the process's descriptor table, is what bounds connections; returns
/// the soft limit now in force (`None` where it cannot be read).
fn raise_open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit only read and write the struct passed.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return None;
            }
            if lim.rlim_cur < lim.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: lim.rlim_max,
                    rlim_max: lim.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    lim = raised;
                }
            }
        }
        Some(lim.rlim_cur)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Descriptors kept free of connections: the store, its WAL, outbound push and
/// upstream connections, logs.
const RESERVED_FILES: u64 = 128;

/// The connection cap in force: the configured one, lowered (with a warning)
/// when the process may not open that many files.
fn effective_max_connections(configured: usize) -> usize {
    let Some(files) = raise_open_files_limit() else {
        return configured;
    };
    let room = usize::try_from(files.saturating_sub(RESERVED_FILES).max(1)).unwrap_or(usize::MAX);
    if room < configured {
        warn!(
            configured,
            open_files_limit = files,
            using = room,
            "--max-connections is above what the open-files limit allows; lowered (raise `ulimit -n` to allow more)"
        );
        room
    } else {
        configured
    }
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
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// What a connection's IO and service record for its watchdog.
struct ConnState {
    /// When the connection was accepted (the origin of the millisecond clocks).
    accepted: Instant,
    /// Requests whose response has not been sent whole (or dropped).
    in_flight: AtomicUsize,
    /// Requests started on this connection.
    started: AtomicU64,
    /// Milliseconds after `accepted` (plus one) since which a write has been
    /// waiting for the socket; 0 while writes go through.
    write_blocked_since: AtomicU64,
    /// Set when the peer sent more HTTP/2 PING and SETTINGS frames than their
    /// budget allows.
    frames_over_budget: AtomicBool,
}

impl ConnState {
    fn new() -> Self {
        Self {
            accepted: Instant::now(),
            in_flight: AtomicUsize::new(0),
            started: AtomicU64::new(0),
            write_blocked_since: AtomicU64::new(0),
            frames_over_budget: AtomicBool::new(false),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.accepted.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Why a connection is closed by its watchdog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Keep,
    /// No complete request within the handshake timeout.
    Handshake,
    /// No request in flight for the idle timeout.
    Idle,
    /// The peer has not read for the send timeout.
    Stalled,
}

/// A connection's clocks, looked at every [`ListenerConfig::check_interval`].
struct Watchdog {
    handshake: Duration,
    idle: Duration,
    send: Duration,
    /// `started` at the last look, and how long the connection has been idle.
    last_started: u64,
    idle_for: Duration,
}

impl Watchdog {
    fn new(config: &ListenerConfig) -> Self {
        Self {
            handshake: config.handshake_timeout,
            idle: config.idle_timeout,
            send: config.send_timeout,
            last_started: 0,
            idle_for: Duration::ZERO,
        }
    }

    fn look(&mut self, state: &ConnState, since_last: Duration) -> Verdict {
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

/// After a graceful close (GOAWAY) begins, how long open streams and a slow peer
/// get before the connection is dropped.
const GRACEFUL_CLOSE: Duration = Duration::from_secs(5);

/// What a connection's watchdog asks of it: nothing, a graceful close, or to be
/// dropped at once.
const ASK_NONE: u8 = 0;
const ASK_GRACEFUL: u8 = 1;
const ASK_DROP: u8 = 2;

/// The channel from a connection's watchdog task to the connection: a flag and
/// the connection task's waker. The connection looks at the flag once per poll
/// (one atomic load), so its hot path polls no timer.
#[derive(Default)]
struct Control {
    ask: AtomicU8,
    waker: AtomicWaker,
}

impl Control {
    fn ask(&self, what: u8) {
        self.ask.fetch_max(what, Ordering::AcqRel);
        self.waker.wake();
    }
}

/// The connection future under the watchdog's control.
struct Driven<C> {
    conn: Pin<Box<C>>,
    control: Arc<Control>,
    graceful_started: bool,
}

/// A connection future that can be asked to close gracefully.
trait GracefulConn: Future {
    fn start_graceful(self: Pin<&mut Self>);
}

impl GracefulConn for auto::Connection<'static, TokioIo<Watched>, ConnService, TokioExecutor> {
    fn start_graceful(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<C: GracefulConn> Future for Driven<C> {
    type Output = Option<C::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        this.control.waker.register(cx.waker());
        match this.control.ask.load(Ordering::Acquire) {
            ASK_NONE => {}
            ASK_GRACEFUL => {
                if !this.graceful_started {
                    this.graceful_started = true;
                    this.conn.as_mut().start_graceful();
                }
            }
            _ => return Poll::Ready(None),
        }
        this.conn.as_mut().poll(cx).map(Some)
    }
}

async fn connection(
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
async fn watch(
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
struct Watched {
    inner: TcpStream,
    state: Arc<ConnState>,
    frames: FrameBudget,
}

impl Watched {
    fn record<T>(&self, poll: &Poll<io::Result<T>>) {
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
struct ConnService {
    app: App,
    state: Arc<ConnState>,
    body_timeout: Duration,
}

/// Marks a request in flight until dropped.
struct InFlight(Arc<ConnState>);

impl InFlight {
    fn new(state: &Arc<ConnState>) -> Self {
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
        let req = req.map(|body| Body::new(ProgressBody::new(body, timeout)));
        ConnFuture {
            inner: self.app.serve(req),
            guard: Some(guard),
        }
    }
}

/// The future of [`ConnService::call`].
struct ConnFuture {
    inner: <App as Service<Request>>::Future,
    guard: Option<InFlight>,
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
struct Tracked {
    inner: Body,
    _guard: Option<InFlight>,
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

/// The error of a request body that made no progress for the body timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body made no progress for {0:?}")]
pub struct BodyTimeout(Duration);

/// A request body that fails with [`BodyTimeout`] when nothing arrives for the
/// timeout. The timer is only armed while the body waits for the peer, so a body
/// that came with its head costs no timer.
struct ProgressBody {
    inner: Incoming,
    timeout: Duration,
    /// Made the first time the body waits, reset each later time.
    sleep: Option<Pin<Box<Sleep>>>,
    /// Whether `sleep` runs for the current wait.
    armed: bool,
}

impl ProgressBody {
    fn new(inner: Incoming, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            sleep: None,
            armed: false,
        }
    }
}

impl HttpBody for ProgressBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.armed = false;
                Poll::Ready(frame.map(|r| r.map_err(Into::into)))
            }
            Poll::Pending => {
                let timeout = this.timeout;
                let deadline = tokio::time::Instant::now() + timeout;
                let sleep = match &mut this.sleep {
                    Some(s) => {
                        if !this.armed {
                            s.as_mut().reset(deadline);
                        }
                        s
                    }
                    None => this
                        .sleep
                        .insert(Box::pin(tokio::time::sleep_until(deadline))),
                };
                this.armed = true;
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        this.armed = false;
                        Poll::Ready(Some(Err(Box::new(BodyTimeout(timeout)))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The HTTP/2 client connection preface (RFC 9113, 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// HTTP/2 frame types counted by [`FrameBudget`].
const FRAME_SETTINGS: u8 = 0x4;
const FRAME_PING: u8 = 0x6;
/// The ACK flag of SETTINGS and PING.
const FLAG_ACK: u8 = 0x1;

/// Counts the PING and SETTINGS frames a client sends, from the bytes read off
/// its socket: only the 9-octet frame headers are looked at (payloads are
/// skipped), and nothing is changed — hyper's `h2` still parses and answers every
/// frame. A token bucket holds `2 × rate` frames and refills `rate` a second.
/// Inactive from the first bytes on for a connection that is not HTTP/2.
struct FrameBudget {
    /// 0 = undecided (matching the preface), 1 = HTTP/2, 2 = not watching.
    mode: u8,
    /// Preface octets matched so far.
    preface: usize,
    /// The frame header being collected, and how much of it.
    head: [u8; 9],
    head_len: usize,
    /// Payload octets still to skip.
    skip: usize,
    rate: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl FrameBudget {
    fn new(rate: u32) -> Self {
        let rate = f64::from(rate.max(1));
        Self {
            mode: 0,
            preface: 0,
            head: [0; 9],
            head_len: 0,
            skip: 0,
            rate,
            tokens: rate * 2.0,
            last: None,
        }
    }

    fn watching(&self) -> bool {
        self.mode != 2
    }

    /// Scans bytes read; false when the budget is exhausted.
    fn scan(&mut self, mut bytes: &[u8], now: Instant) -> bool {
        if self.mode == 0 {
            let n = (PREFACE.len() - self.preface).min(bytes.len());
            if bytes[..n] != PREFACE[self.preface..self.preface + n] {
                self.mode = 2;
                return true;
            }
            self.preface += n;
            bytes = &bytes[n..];
            if self.preface < PREFACE.len() {
                return true;
            }
            self.mode = 1;
        }
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (9 - self.head_len).min(bytes.len());
            self.head[self.head_len..self.head_len + n].copy_from_slice(&bytes[..n]);
            self.head_len += n;
            bytes = &bytes[n..];
            if self.head_len < 9 {
                break;
            }
            self.head_len = 0;
            let len = usize::from(self.head[0]) << 16
                | usize::from(self.head[1]) << 8
                | usize::from(self.head[2]);
            self.skip = len;
            let (kind, flags) = (self.head[3], self.head[4]);
            if (kind == FRAME_PING || kind == FRAME_SETTINGS) && flags & FLAG_ACK == 0 {
                if let Some(last) = self.last {
                    let refill = now.saturating_duration_since(last).as_secs_f64() * self.rate;
                    self.tokens = (self.tokens + refill).min(self.rate * 2.0);
                }
                self.last = Some(now);
                if self.tokens < 1.0 {
                    return false;
                }
                self.tokens -= 1.0;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn config() -> ListenerConfig {
        ListenerConfig {
            handshake_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(3),
            send_timeout: Duration::from_secs(4),
            ..ListenerConfig::default()
        }
    }

    #[test]
    fn idle_time_accumulates_only_without_requests() {
        let mut w = Watchdog::new(&config());
        let s = ConnState::new();
        s.started.store(1, Ordering::Relaxed);
        let step = Duration::from_secs(1);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        // A request started meanwhile resets the idle time.
        s.started.store(2, Ordering::Relaxed);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        assert_eq!(w.look(&s, step), Verdict::Keep);
        assert_eq!(w.look(&s, step), Verdict::Idle);
        // A request in flight (a stream being answered) is not idle.
        let mut w = Watchdog::new(&config());
        s.in_flight.store(1, Ordering::Relaxed);
        for _ in 0..10 {
            assert_eq!(w.look(&s, step), Verdict::Keep);
        }
    }

    #[test]
    fn a_stalled_writer_is_dropped_after_the_send_timeout() {
        let mut w = Watchdog::new(&config());
        let s = ConnState::new();
        s.started.store(1, Ordering::Relaxed);
        s.in_flight.store(1, Ordering::Relaxed);
        // Blocked since "5 s before now" (the clock starts at acceptance, so
        // pretend with an offset).
        let s = ConnState {
            accepted: Instant::now() - Duration::from_secs(10),
            ..s
        };
        s.write_blocked_since.store(5_000 + 1, Ordering::Relaxed);
        assert_eq!(w.look(&s, Duration::from_secs(1)), Verdict::Stalled);
        s.write_blocked_since.store(8_000 + 1, Ordering::Relaxed);
        assert_eq!(w.look(&s, Duration::from_secs(1)), Verdict::Keep);
    }

    #[test]
    fn no_request_within_the_handshake_timeout_is_dropped() {
        let mut w = Watchdog::new(&config());
        let s = ConnState::new();
        assert_eq!(w.look(&s, Duration::from_secs(1)), Verdict::Keep);
        let s = ConnState {
            accepted: Instant::now() - Duration::from_secs(3),
            ..ConnState::new()
        };
        assert_eq!(w.look(&s, Duration::from_secs(1)), Verdict::Handshake);
    }

    fn frame(kind: u8, flags: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![
            (payload >> 16) as u8,
            (payload >> 8) as u8,
            payload as u8,
            kind,
            flags,
            0,
            0,
            0,
            0,
        ];
        f.resize(9 + payload, 0xAA);
        f
    }

    #[test]
    fn the_frame_budget_counts_pings_and_settings_only() {
        let now = Instant::now();
        let mut b = FrameBudget::new(10);
        let mut bytes = PREFACE.to_vec();
        // 20 PINGs (the burst), acknowledgements and other frames free.
        for _ in 0..20 {
            bytes.extend(frame(FRAME_PING, 0, 8));
            bytes.extend(frame(FRAME_PING, FLAG_ACK, 8));
            bytes.extend(frame(0x0, 0, 1000)); // DATA
        }
        // Fed in odd-sized pieces, as reads come.
        for chunk in bytes.chunks(7) {
            assert!(b.scan(chunk, now));
        }
        // The next one is over the budget...
        assert!(!b.scan(&frame(FRAME_SETTINGS, 0, 6), now));
        // ...until time refills it.
        assert!(b.scan(&frame(FRAME_SETTINGS, 0, 6), now + Duration::from_secs(1)));
    }

    #[test]
    fn the_frame_budget_ignores_http1() {
        let mut b = FrameBudget::new(1);
        assert!(b.scan(b"GET / HTTP/1.1\r\n", Instant::now()));
        assert!(!b.watching());
    }

    #[test]
    fn the_check_interval_follows_the_shortest_timeout() {
        assert_eq!(config().check_interval(), Duration::from_millis(500));
        assert_eq!(
            ListenerConfig::default().check_interval(),
            Duration::from_secs(1)
        );
        let tiny = ListenerConfig {
            handshake_timeout: Duration::from_millis(10),
            ..ListenerConfig::default()
        };
        assert_eq!(tiny.check_interval(), Duration::from_millis(50));
    }
}
