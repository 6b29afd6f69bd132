//! The listener's limits: [`ListenerConfig`], the open-files limit, the
//! body-progress timeout ([`BodyTimeout`]) and the HTTP/2 frame budget.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::time::Sleep;
use tracing::warn;

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
pub(crate) const MIN_HTTP1_BUFFER: usize = 8192;

impl ListenerConfig {
    /// The connection builder for these limits.
    pub(crate) fn builder(&self) -> auto::Builder<TokioExecutor> {
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
    pub(crate) fn check_interval(&self) -> Duration {
        let shortest = self
            .handshake_timeout
            .min(self.idle_timeout)
            .min(self.send_timeout);
        (shortest / 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
    }
}

/// Raises the soft limit on open files to the hard limit, so that the connection
/// cap, not the process's descriptor table, is what bounds connections; returns
/// the soft limit now in force (`None` where it cannot be read).
pub(crate) fn raise_open_files_limit() -> Option<u64> {
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
pub(crate) const RESERVED_FILES: u64 = 128;

/// The connection cap in force: the configured one, lowered (with a warning)
/// when the process may not open that many files.
pub(crate) fn effective_max_connections(configured: usize) -> usize {
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

/// The error of a request body that made no progress for the body timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body made no progress for {0:?}")]
pub struct BodyTimeout(Duration);

/// A request body that fails with [`BodyTimeout`] when nothing arrives for the
/// timeout. The timer is only armed while the body waits for the peer, so a body
/// that came with its head costs no timer.
pub(crate) struct ProgressBody {
    pub(crate) inner: Incoming,
    pub(crate) timeout: Duration,
    /// Made the first time the body waits, reset each later time.
    pub(crate) sleep: Option<Pin<Box<Sleep>>>,
    /// Whether `sleep` runs for the current wait.
    pub(crate) armed: bool,
}

impl ProgressBody {
    pub(crate) fn new(inner: Incoming, timeout: Duration) -> Self {
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
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// HTTP/2 frame types counted by [`FrameBudget`].
pub(crate) const FRAME_SETTINGS: u8 = 0x4;

pub(crate) const FRAME_PING: u8 = 0x6;

/// The ACK flag of SETTINGS and PING.
pub(crate) const FLAG_ACK: u8 = 0x1;

/// Counts the PING and SETTINGS frames a client sends, from the bytes read off
/// its socket: only the 9-octet frame headers are looked at (payloads are
/// skipped), and nothing is changed — hyper's `h2` still parses and answers every
/// frame. A token bucket holds `2 × rate` frames and refills `rate` a second.
/// Inactive from the first bytes on for a connection that is not HTTP/2.
pub(crate) struct FrameBudget {
    /// 0 = undecided (matching the preface), 1 = HTTP/2, 2 = not watching.
    pub(crate) mode: u8,
    /// Preface octets matched so far.
    pub(crate) preface: usize,
    /// The frame header being collected, and how much of it.
    pub(crate) head: [u8; 9],
    pub(crate) head_len: usize,
    /// Payload octets still to skip.
    pub(crate) skip: usize,
    pub(crate) rate: f64,
    pub(crate) tokens: f64,
    pub(crate) last: Option<Instant>,
}

impl FrameBudget {
    pub(crate) fn new(rate: u32) -> Self {
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

    pub(crate) fn watching(&self) -> bool {
        self.mode != 2
    }

    /// Scans bytes read; false when the budget is exhausted.
    pub(crate) fn scan(&mut self, mut bytes: &[u8], now: Instant) -> bool {
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
