//! The listener's HTTP/2 server (h2c, prior knowledge): what gRPC clients speak.
//!
//! One task per connection, no task per stream: the connection reads frames,
//! hands each complete request (head and whole body) to the listener's service,
//! and writes the responses' frames as they come, everything it has to write in
//! one write per turn. Requests are dispatched once their body is complete (the
//! routes read whole bodies anyway), bounded by `Config::max_body`.
//!
//! Why not hyper's HTTP/2 (the `h2` crate): for a unary gRPC call it cost about
//! three times the A2A handler's own work (callgrind: ~28k instructions in the
//! connection, plus a task and several boxed futures per stream), which put
//! GetTask over gRPC at 12 µs of server CPU against the 10 µs this project
//! targets. This server implements RFC 9113 as a server needs it: the preface
//! and SETTINGS, HPACK (RFC 7541, with the decoder's dynamic table), flow control
//! in both directions, stream states with RST_STREAM, CONTINUATION, PING,
//! GOAWAY (graceful on shutdown), malformed-request and protocol-error handling.
//! It does not push, and it ignores priorities (as RFC 9113 allows).

mod hpack;

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::body::HttpBody as _;
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::request::Parts;
use axum::http::{Method, Request, Response, StatusCode, Uri, Version};
use bytes::{Buf, Bytes, BytesMut};
use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tower::Service;

use hpack::{Decoder, Name, Pseudo};

/// The client connection preface (RFC 9113 3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The largest frame payload this server accepts (the default; not advertised).
const MAX_FRAME: usize = 16_384;
/// The receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE).
const STREAM_WINDOW: u32 = 1 << 20;
/// The receive window of the connection.
const CONN_WINDOW: u32 = 1 << 24;
/// The largest header block (compressed, HEADERS and CONTINUATION together).
const MAX_HEADER_BLOCK: usize = 64 * 1024;
/// How many closed streams a connection remembers (to tell a late frame on a
/// stream it reset, which it ignores, from one on a stream closed normally, a
/// peer error, or on an id never used, a protocol error).
const CLOSED_MEMORY: usize = 64;
/// Output beyond which the connection stops reading until the peer has taken
/// some (backpressure against a peer that sends but does not read).
const WRITE_HIGH: usize = 1 << 20;

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const PRIORITY: u8 = 0x2;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY_FLAG: u8 = 0x20;

/// RFC 9113 7: error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum Code {
    NoError = 0,
    Protocol = 1,
    Internal = 2,
    FlowControl = 3,
    StreamClosed = 5,
    FrameSize = 6,
    RefusedStream = 7,
    Compression = 9,
    EnhanceYourCalm = 11,
}

/// A connection error: GOAWAY with the code, then close.
#[derive(Debug)]
struct ConnError(Code, &'static str);

/// The server's settings for each connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    /// The largest request body buffered before dispatch; larger requests are
    /// answered 413 as the routes' body limits answer them. At least the largest
    /// body limit of any route.
    pub(crate) max_body: usize,
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub(crate) max_streams: u32,
}

type Answer = Pin<Box<dyn Future<Output = (u32, Option<Response<Body>>)> + Send>>;

/// Where a stream is.
enum Phase {
    /// Receiving the request body.
    Body {
        parts: Box<Parts>,
        body: BytesMut,
        content_length: Option<u64>,
    },
    /// The service has the request.
    Waiting(AbortHandle),
    /// Sending the response body.
    Sending {
        body: Body,
        pending: Bytes,
        end: bool,
        trailers: Option<HeaderMap>,
    },
}

struct Stream {
    phase: Phase,
    /// What this server may still send (the peer's window for the stream).
    send_window: i64,
    /// What the peer may still send.
    recv_window: i64,
    /// The peer has ended its side (END_STREAM).
    recv_closed: bool,
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Phase::Waiting(h) = &self.phase {
            h.abort();
        }
    }
}

/// Serves one HTTP/2 connection whose client preface has been read; `read` holds
/// what was read after it. Returns when the connection ends: the peer closed it,
/// a connection error was sent, or after `shutdown` its streams have finished.
pub(crate) async fn serve<I, S>(
    io: I,
    read: BytesMut,
    service: S,
    config: Config,
    shutdown: CancellationToken,
) -> io::Result<()>
where
    I: AsyncRead + AsyncWrite + Unpin,
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone,
    S::Future: Send + 'static,
{
    let mut conn = Conn {
        io,
        rbuf: read,
        wbuf: Vec::with_capacity(16 * 1024),
        written: 0,
        hpack: Decoder::default(),
        service,
        config,
        streams: Streams::default(),
        sending: Vec::new(),
        answers: FuturesUnordered::new(),
        last_id: 0,
        got_settings: false,
        peer_max_frame: MAX_FRAME,
        peer_window: 65_535,
        send_window: 65_535,
        recv_unacked: 0,
        buffered: 0,
        continuation: None,
        table_size_update: false,
        uri_cache: None,
        goaway_sent: false,
        closing: false,
        closed: VecDeque::with_capacity(CLOSED_MEMORY),
        peer_gone: false,
        shutdown: Box::pin(shutdown.cancelled_owned()),
    };
    conn.preface();
    std::future::poll_fn(|cx| conn.poll(cx)).await
}

struct Conn<I, S> {
    io: I,
    rbuf: BytesMut,
    wbuf: Vec<u8>,
    written: usize,
    hpack: Decoder,
    service: S,
    config: Config,
    streams: Streams,
    /// The streams in [`Phase::Sending`].
    sending: Vec<u32>,
    answers: FuturesUnordered<Answer>,
    /// The highest stream id the client has opened.
    last_id: u32,
    got_settings: bool,
    peer_max_frame: usize,
    /// The peer's SETTINGS_INITIAL_WINDOW_SIZE.
    peer_window: i64,
    /// What this server may still send on the connection.
    send_window: i64,
    /// Connection-level bytes received and not yet given back.
    recv_unacked: u32,
    /// Request body bytes buffered across streams.
    buffered: usize,
    /// A header block waiting for CONTINUATION.
    continuation: Option<Pending>,
    /// The peer lowered SETTINGS_HEADER_TABLE_SIZE: start the next block with a
    /// dynamic table size update to 0 (this encoder never uses the table).
    table_size_update: bool,
    uri_cache: UriCache,
    goaway_sent: bool,
    /// A connection error was sent: write what is left, then close.
    closing: bool,
    /// Recently closed streams, and whether this server reset them.
    closed: VecDeque<(u32, bool)>,
    /// The peer sent GOAWAY: finish the open streams, then close.
    peer_gone: bool,
    shutdown: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

/// The open streams by id. Stream ids need no DoS-resistant hash (at most
/// `max_streams` live at once), so a multiplicative one saves SipHash's cost.
type Streams = HashMap<u32, Stream, BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.0 = u64::from(v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

fn u32_at(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl<I, S> Conn<I, S>
where
    I: AsyncRead + AsyncWrite + Unpin,
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone,
    S::Future: Send + 'static,
{
    /// The server preface: SETTINGS, and the connection window opened.
    fn preface(&mut self) {
        let settings: [(u16, u32); 3] = [
            (0x3, self.config.max_streams),
            (0x4, STREAM_WINDOW),
            (0x6, MAX_HEADER_BLOCK as u32),
        ];
        frame_head(&mut self.wbuf, settings.len() * 6, SETTINGS, 0, 0);
        for (id, v) in settings {
            self.wbuf.extend_from_slice(&id.to_be_bytes());
            self.wbuf.extend_from_slice(&v.to_be_bytes());
        }
        self.window_update(0, CONN_WINDOW - 65_535);
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut progress = false;
            if !self.goaway_sent && !self.closing && self.shutdown.as_mut().poll(cx).is_ready() {
                self.goaway(Code::NoError, "shutting down");
                progress = true;
            }
            if !self.closing && self.wbuf.len() - self.written < WRITE_HIGH {
                self.rbuf.reserve(16 * 1024);
                match tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.rbuf) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Ok(())),
                    Poll::Ready(Ok(_)) => {
                        progress = true;
                        if let Err(ConnError(code, why)) = self.frames() {
                            tracing::debug!(?code, why, "HTTP/2 connection error");
                            self.goaway(code, why);
                            self.closing = true;
                        }
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {}
                }
            }
            while let Poll::Ready(Some((id, res))) = self.answers.poll_next_unpin(cx) {
                progress = true;
                if let Some(res) = res {
                    self.respond(id, res);
                }
            }
            if self.wbuf.len() - self.written < WRITE_HIGH {
                progress |= self.poll_bodies(cx);
            }
            while self.written < self.wbuf.len() {
                match Pin::new(&mut self.io).poll_write(cx, &self.wbuf[self.written..]) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Poll::Ready(Ok(n)) => self.written += n,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => break,
                }
            }
            if self.written == self.wbuf.len() && self.written > 0 {
                self.wbuf.clear();
                self.written = 0;
                if let Poll::Ready(Err(e)) = Pin::new(&mut self.io).poll_flush(cx) {
                    return Poll::Ready(Err(e));
                }
                if self.closing {
                    return Poll::Ready(Ok(()));
                }
            }
            let winding_down = self.goaway_sent || self.peer_gone;
            if winding_down && self.streams.is_empty() && self.wbuf.is_empty() {
                return Poll::Ready(Ok(()));
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }

    /// Handles every complete frame in the read buffer.
    fn frames(&mut self) -> Result<(), ConnError> {
        while self.rbuf.len() >= 9 {
            let len = u32::from_be_bytes([0, self.rbuf[0], self.rbuf[1], self.rbuf[2]]) as usize;
            if len > MAX_FRAME {
                return Err(ConnError(
                    Code::FrameSize,
                    "frame larger than SETTINGS_MAX_FRAME_SIZE",
                ));
            }
            if self.rbuf.len() < 9 + len {
                break;
            }
            let (kind, flags) = (self.rbuf[3], self.rbuf[4]);
            let id = u32_at(&self.rbuf[5..9]) & 0x7fff_ffff;
            self.rbuf.advance(9);
            let payload = self.rbuf.split_to(len).freeze();
            self.frame(kind, flags, id, payload)?;
            if self.closing {
                break;
            }
        }
        Ok(())
    }

    fn frame(&mut self, kind: u8, flags: u8, id: u32, payload: Bytes) -> Result<(), ConnError> {
        if !self.got_settings {
            if kind != SETTINGS || flags & ACK != 0 {
                return Err(ConnError(
                    Code::Protocol,
                    "the preface must be followed by SETTINGS",
                ));
            }
            self.got_settings = true;
        }
        if let Some(p) = &self.continuation {
            if kind != CONTINUATION || p.id != id {
                return Err(ConnError(Code::Protocol, "a header block was interrupted"));
            }
        }
        match kind {
            DATA => self.data(flags, id, payload),
            HEADERS => self.headers(flags, id, payload),
            PRIORITY => {
                if id == 0 {
                    return Err(ConnError(Code::Protocol, "PRIORITY on stream 0"));
                }
                if payload.len() != 5 {
                    self.reset(id, Code::FrameSize);
                } else if u32_at(&payload) & 0x7fff_ffff == id {
                    // A stream cannot depend on itself (RFC 9113 5.3.1).
                    self.reset(id, Code::Protocol);
                }
                Ok(())
            }
            RST_STREAM => {
                if id == 0 {
                    return Err(ConnError(Code::Protocol, "RST_STREAM on stream 0"));
                }
                if payload.len() != 4 {
                    return Err(ConnError(Code::FrameSize, "RST_STREAM of the wrong size"));
                }
                if id > self.last_id {
                    return Err(ConnError(Code::Protocol, "RST_STREAM on an idle stream"));
                }
                self.remove(id);
                Ok(())
            }
            SETTINGS => self.settings(flags, id, &payload),
            PUSH_PROMISE => Err(ConnError(Code::Protocol, "a client may not push")),
            PING => {
                if id != 0 {
                    return Err(ConnError(Code::Protocol, "PING on a stream"));
                }
                if payload.len() != 8 {
                    return Err(ConnError(Code::FrameSize, "PING of the wrong size"));
                }
                if flags & ACK == 0 {
                    frame_head(&mut self.wbuf, 8, PING, ACK, 0);
                    self.wbuf.extend_from_slice(&payload);
                }
                Ok(())
            }
            GOAWAY => {
                if id != 0 {
                    return Err(ConnError(Code::Protocol, "GOAWAY on a stream"));
                }
                self.peer_gone = true;
                Ok(())
            }
            WINDOW_UPDATE => self.window_update_frame(id, &payload),
            CONTINUATION => {
                let Some(mut p) = self.continuation.take() else {
                    return Err(ConnError(Code::Protocol, "CONTINUATION without HEADERS"));
                };
                p.block.extend_from_slice(&payload);
                if p.block.len() > MAX_HEADER_BLOCK {
                    return Err(ConnError(Code::EnhanceYourCalm, "header block too large"));
                }
                if flags & END_HEADERS != 0 {
                    self.header_block(p.id, p.end, p.self_dependent, Bytes::from(p.block))
                } else {
                    self.continuation = Some(p);
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    fn settings(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), ConnError> {
        if id != 0 {
            return Err(ConnError(Code::Protocol, "SETTINGS on a stream"));
        }
        if flags & ACK != 0 {
            if !payload.is_empty() {
                return Err(ConnError(Code::FrameSize, "SETTINGS ACK with a payload"));
            }
            return Ok(());
        }
        if !payload.len().is_multiple_of(6) {
            return Err(ConnError(Code::FrameSize, "SETTINGS of the wrong size"));
        }
        for s in payload.chunks_exact(6) {
            let v = u32_at(&s[2..]);
            match u16::from_be_bytes([s[0], s[1]]) {
                0x1 if (v as usize) < hpack::TABLE_LIMIT => self.table_size_update = true,
                0x2 if v > 1 => return Err(ConnError(Code::Protocol, "ENABLE_PUSH not 0 or 1")),
                0x4 => {
                    if v > 0x7fff_ffff {
                        return Err(ConnError(
                            Code::FlowControl,
                            "INITIAL_WINDOW_SIZE too large",
                        ));
                    }
                    let delta = i64::from(v) - self.peer_window;
                    self.peer_window = i64::from(v);
                    for s in self.streams.values_mut() {
                        s.send_window += delta;
                        if s.send_window > 0x7fff_ffff {
                            return Err(ConnError(Code::FlowControl, "stream window overflow"));
                        }
                    }
                }
                0x5 => {
                    if !(16_384..=16_777_215).contains(&v) {
                        return Err(ConnError(Code::Protocol, "MAX_FRAME_SIZE out of range"));
                    }
                    self.peer_max_frame = v as usize;
                }
                _ => {}
            }
        }
        frame_head(&mut self.wbuf, 0, SETTINGS, ACK, 0);
        Ok(())
    }

    fn window_update_frame(&mut self, id: u32, payload: &[u8]) -> Result<(), ConnError> {
        if payload.len() != 4 {
            return Err(ConnError(
                Code::FrameSize,
                "WINDOW_UPDATE of the wrong size",
            ));
        }
        let inc = i64::from(u32_at(payload) & 0x7fff_ffff);
        if id == 0 {
            if inc == 0 {
                return Err(ConnError(Code::Protocol, "WINDOW_UPDATE of 0"));
            }
            self.send_window += inc;
            if self.send_window > 0x7fff_ffff {
                return Err(ConnError(Code::FlowControl, "connection window overflow"));
            }
            return Ok(());
        }
        if id > self.last_id {
            return Err(ConnError(Code::Protocol, "WINDOW_UPDATE on an idle stream"));
        }
        let Some(s) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        if inc == 0 {
            self.reset(id, Code::Protocol);
            return Ok(());
        }
        s.send_window += inc;
        if s.send_window > 0x7fff_ffff {
            self.reset(id, Code::FlowControl);
        }
        Ok(())
    }

    fn data(&mut self, flags: u8, id: u32, payload: Bytes) -> Result<(), ConnError> {
        if id == 0 {
            return Err(ConnError(Code::Protocol, "DATA on stream 0"));
        }
        let flow_len = payload.len() as u32;
        self.recv_unacked += flow_len;
        if self.recv_unacked > CONN_WINDOW {
            return Err(ConnError(
                Code::FlowControl,
                "the peer overran the connection window",
            ));
        }
        let data = unpad(flags, payload)?;
        let Some(s) = self.streams.get_mut(&id) else {
            if id > self.last_id {
                return Err(ConnError(Code::Protocol, "DATA on an idle stream"));
            }
            // A stream this server has reset (or answered early, 413): what the
            // peer had in flight is ignored (RFC 9113 5.4.2). On a stream closed
            // otherwise it is a stream error STREAM_CLOSED (5.1).
            if !self.reset_by_us(id) {
                self.reset(id, Code::StreamClosed);
            }
            self.give_back();
            return Ok(());
        };
        if s.recv_closed {
            self.reset(id, Code::StreamClosed);
            self.give_back();
            return Ok(());
        }
        s.recv_window -= i64::from(flow_len);
        if s.recv_window < 0 {
            self.reset(id, Code::FlowControl);
            self.give_back();
            return Ok(());
        }
        let end = flags & END_STREAM != 0;
        let mut too_large = false;
        if let Phase::Body { body, .. } = &mut s.phase {
            if body.len() + data.len() > self.config.max_body {
                too_large = true;
            } else {
                body.extend_from_slice(&data);
                self.buffered += data.len();
            }
        }
        if too_large {
            self.too_large(id);
            self.give_back();
            return Ok(());
        }
        if end {
            s.recv_closed = true;
            self.dispatch(id);
        } else if s.recv_window < i64::from(STREAM_WINDOW / 2) {
            let inc = i64::from(STREAM_WINDOW) - s.recv_window;
            s.recv_window = i64::from(STREAM_WINDOW);
            self.window_update(id, inc as u32);
        }
        self.give_back();
        Ok(())
    }

    /// Gives the connection window back once half of it is used, unless the
    /// buffered request bodies are over budget (then at the next dispatch).
    fn give_back(&mut self) {
        let budget = self
            .config
            .max_body
            .saturating_mul(2)
            .max(CONN_WINDOW as usize);
        if self.recv_unacked >= CONN_WINDOW / 2 && self.buffered < budget {
            let n = self.recv_unacked;
            self.recv_unacked = 0;
            self.window_update(0, n);
        }
    }

    fn window_update(&mut self, id: u32, inc: u32) {
        frame_head(&mut self.wbuf, 4, WINDOW_UPDATE, 0, id);
        self.wbuf.extend_from_slice(&inc.to_be_bytes());
    }

    fn headers(&mut self, flags: u8, id: u32, payload: Bytes) -> Result<(), ConnError> {
        if id == 0 || id.is_multiple_of(2) {
            return Err(ConnError(
                Code::Protocol,
                "HEADERS on stream 0 or a server stream",
            ));
        }
        let mut block = unpad(flags, payload)?;
        let mut self_dependent = false;
        if flags & PRIORITY_FLAG != 0 {
            if block.len() < 5 {
                return Err(ConnError(Code::FrameSize, "HEADERS priority truncated"));
            }
            self_dependent = u32_at(&block) & 0x7fff_ffff == id;
            block.advance(5);
        }

        if flags & END_HEADERS == 0 {
            if block.len() > MAX_HEADER_BLOCK {
                return Err(ConnError(Code::EnhanceYourCalm, "header block too large"));
            }
            self.continuation = Some(Pending {
                id,
                end: flags & END_STREAM != 0,
                self_dependent,
                block: block.to_vec(),
            });
            return Ok(());
        }
        self.header_block(id, flags & END_STREAM != 0, self_dependent, block)
    }

    /// A complete header block: a new request, or a request's trailers. `end`:
    /// its HEADERS frame ended the stream; `self_dependent`: its priority named
    /// its own stream (a stream error once the block is decoded).
    fn header_block(
        &mut self,
        id: u32,
        end: bool,
        self_dependent: bool,
        block: Bytes,
    ) -> Result<(), ConnError> {
        let mut fields = Vec::with_capacity(12);
        self.hpack
            .decode(&block, |f| fields.push(f))
            .map_err(|_| ConnError(Code::Compression, "header block not decodable"))?;
        if let Some(s) = self.streams.get_mut(&id) {
            // Trailers: they end the request; this server has no use for them.
            if s.recv_closed {
                self.reset(id, Code::StreamClosed);
                return Ok(());
            }
            if !end || fields.iter().any(|f| matches!(f.name, Name::Pseudo(_))) {
                self.reset(id, Code::Protocol);
                return Ok(());
            }
            s.recv_closed = true;
            self.dispatch(id);
            return Ok(());
        }
        if id <= self.last_id {
            return match self.closed.iter().find(|(c, _)| *c == id) {
                // In flight when this server reset the stream: ignored (5.4.2).
                Some((_, true)) => Ok(()),
                Some((_, false)) => {
                    Err(ConnError(Code::StreamClosed, "HEADERS on a closed stream"))
                }
                None => Err(ConnError(
                    Code::Protocol,
                    "a stream id lower than one already used",
                )),
            };
        }
        self.last_id = id;
        if self.goaway_sent {
            return Ok(());
        }
        if self_dependent {
            self.reset(id, Code::Protocol);
            return Ok(());
        }
        if self.streams.len() >= self.config.max_streams as usize {
            self.reset(id, Code::RefusedStream);
            return Ok(());
        }
        let (parts, content_length) = match request_head(fields, &mut self.uri_cache) {
            Ok(h) => h,
            Err(Malformed::Reset) => {
                self.reset(id, Code::Protocol);
                return Ok(());
            }
            Err(Malformed::Answer(status)) => {
                let mut res = Response::new(Body::empty());
                *res.status_mut() = status;
                self.respond_head(id, res.status(), res.headers_mut(), true);
                if end {
                    self.forget(id, false);
                } else {
                    self.reset(id, Code::NoError);
                }
                return Ok(());
            }
        };
        self.streams.insert(
            id,
            Stream {
                phase: Phase::Body {
                    parts: Box::new(parts),
                    body: BytesMut::new(),
                    content_length,
                },
                send_window: self.peer_window,
                recv_window: i64::from(STREAM_WINDOW),
                recv_closed: end,
            },
        );
        if end {
            self.dispatch(id);
        }
        Ok(())
    }

    /// Hands a complete request to the service.
    fn dispatch(&mut self, id: u32) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let (abort, registration) = AbortHandle::new_pair();
        let Phase::Body {
            parts,
            body,
            content_length,
        } = std::mem::replace(&mut s.phase, Phase::Waiting(abort))
        else {
            return;
        };
        self.buffered -= body.len();
        if content_length.is_some_and(|n| n != body.len() as u64) {
            // RFC 9113 8.1.1: a body that disagrees with content-length.
            self.reset(id, Code::Protocol);
            return;
        }
        let req = Request::from_parts(*parts, Body::from(body.freeze()));
        let fut = self.service.call(req);
        self.answers.push(Box::pin(
            Abortable::new(fut, registration).map(move |r| (id, r.ok().map(|Ok(res)| res))),
        ));
    }

    /// Answers 413 before the body is complete, as the routes' body limits do,
    /// and stops the rest of the request (RFC 9113 8.1: a complete response,
    /// then RST_STREAM with NO_ERROR).
    fn too_large(&mut self, id: u32) {
        let window = self.streams.get(&id).map_or(0, |s| s.send_window);
        self.forget(id, true);
        let text = crate::direct::TOO_LARGE.as_bytes();
        if window.min(self.send_window) >= text.len() as i64 {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(text.len()));
            self.respond_head(id, StatusCode::PAYLOAD_TOO_LARGE, &mut headers, false);
            frame_head(&mut self.wbuf, text.len(), DATA, END_STREAM, id);
            self.wbuf.extend_from_slice(text);
            self.send_window -= text.len() as i64;
        }
        frame_head(&mut self.wbuf, 4, RST_STREAM, 0, id);
        self.wbuf
            .extend_from_slice(&(Code::NoError as u32).to_be_bytes());
    }

    /// Starts a response: its head, and its body to send.
    fn respond(&mut self, id: u32, res: Response<Body>) {
        if !self.streams.contains_key(&id) {
            return;
        }
        let (mut parts, body) = res.into_parts();
        let end = body.is_end_stream();
        // As hyper does: a body of known size gets its content-length, an empty
        // one (a gRPC trailers-only answer, say) none.
        if let (false, Some(n)) = (end, body.size_hint().exact()) {
            if !parts.headers.contains_key(header::CONTENT_LENGTH) {
                parts
                    .headers
                    .insert(header::CONTENT_LENGTH, HeaderValue::from(n));
            }
        }
        self.respond_head(id, parts.status, &mut parts.headers, end);
        if end {
            self.finished(id);
            return;
        }
        if let Some(s) = self.streams.get_mut(&id) {
            s.phase = Phase::Sending {
                body,
                pending: Bytes::new(),
                end: false,
                trailers: None,
            };
            self.sending.push(id);
        }
    }

    fn respond_head(&mut self, id: u32, status: StatusCode, headers: &mut HeaderMap, end: bool) {
        if !headers.contains_key(header::DATE) {
            headers.insert(header::DATE, date());
        }
        let block = self.encode_block(Some(status), headers);
        self.header_frames(id, &block, if end { END_STREAM } else { 0 });
    }

    /// A response head (with `status`) or trailers (without) as a header block.
    fn encode_block(&mut self, status: Option<StatusCode>, headers: &HeaderMap) -> Vec<u8> {
        let mut block = Vec::with_capacity(128);
        if std::mem::take(&mut self.table_size_update) {
            block.push(0x20);
        }
        if let Some(status) = status {
            hpack::put_status(&mut block, status.as_u16());
        }
        for (name, value) in headers {
            // HTTP/2 has no connection-specific fields (RFC 9113 8.2.2).
            if !is_connection_header(name) {
                hpack::put_header(&mut block, name, value);
            }
        }
        block
    }

    /// Writes a header block as HEADERS and as many CONTINUATION frames as the
    /// peer's frame size needs.
    fn header_frames(&mut self, id: u32, block: &[u8], flags: u8) {
        let mut chunks = block.chunks(self.peer_max_frame).peekable();
        let first = chunks.next().unwrap_or(&[]);
        let last = chunks.peek().is_none();
        frame_head(
            &mut self.wbuf,
            first.len(),
            HEADERS,
            flags | if last { END_HEADERS } else { 0 },
            id,
        );
        self.wbuf.extend_from_slice(first);
        while let Some(c) = chunks.next() {
            let last = chunks.peek().is_none();
            frame_head(
                &mut self.wbuf,
                c.len(),
                CONTINUATION,
                if last { END_HEADERS } else { 0 },
                id,
            );
            self.wbuf.extend_from_slice(c);
        }
    }

    /// Moves the response bodies along as far as the windows allow.
    fn poll_bodies(&mut self, cx: &mut Context<'_>) -> bool {
        let mut progress = false;
        let mut i = 0;
        while i < self.sending.len() {
            let id = self.sending[i];
            match self.poll_body(id, cx) {
                BodyStep::Done => {
                    progress = true;
                    // A reset while polling has already taken the stream out.
                    if self.sending.get(i) == Some(&id) {
                        self.sending.swap_remove(i);
                    }
                    self.finished(id);
                }
                BodyStep::Moved => progress = true,
                BodyStep::Waiting => i += 1,
            }
        }
        progress
    }

    fn poll_body(&mut self, id: u32, cx: &mut Context<'_>) -> BodyStep {
        let mut moved = false;
        loop {
            let Some(s) = self.streams.get_mut(&id) else {
                return BodyStep::Done;
            };
            let Phase::Sending {
                body,
                pending,
                end,
                trailers,
            } = &mut s.phase
            else {
                return BodyStep::Done;
            };
            if !pending.is_empty() {
                let n = pending
                    .len()
                    .min(self.peer_max_frame)
                    .min(self.send_window.max(0) as usize)
                    .min(s.send_window.max(0) as usize);
                if n == 0 {
                    return if moved {
                        BodyStep::Moved
                    } else {
                        BodyStep::Waiting
                    };
                }
                let chunk = pending.split_to(n);
                let last = pending.is_empty() && *end && trailers.is_none();
                frame_head(
                    &mut self.wbuf,
                    n,
                    DATA,
                    if last { END_STREAM } else { 0 },
                    id,
                );
                self.wbuf.extend_from_slice(&chunk);
                self.send_window -= n as i64;
                s.send_window -= n as i64;
                moved = true;
                if last {
                    return BodyStep::Done;
                }
                continue;
            }
            if *end {
                match trailers.take() {
                    Some(t) => {
                        let block = self.encode_block(None, &t);
                        self.header_frames(id, &block, END_STREAM);
                    }
                    None => frame_head(&mut self.wbuf, 0, DATA, END_STREAM, id),
                }
                return BodyStep::Done;
            }
            match Pin::new(&mut *body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    moved = true;
                    match frame.into_data() {
                        Ok(data) => {
                            *pending = data;
                            *end = body.is_end_stream();
                        }
                        Err(frame) => {
                            if let Ok(t) = frame.into_trailers() {
                                *trailers = Some(t);
                                *end = true;
                            }
                        }
                    }
                }
                Poll::Ready(None) => {
                    moved = true;
                    *end = true;
                }
                Poll::Ready(Some(Err(e))) => {
                    tracing::debug!(error = %e, stream = id, "response body failed");
                    self.reset(id, Code::Internal);
                    return BodyStep::Done;
                }
                Poll::Pending => {
                    return if moved {
                        BodyStep::Moved
                    } else {
                        BodyStep::Waiting
                    };
                }
            }
        }
    }

    /// Our side of the stream has ended; the stream is closed when the peer's
    /// has too (it always has: requests are dispatched at END_STREAM).
    fn finished(&mut self, id: u32) {
        if self.streams.get(&id).is_some_and(|s| s.recv_closed) {
            self.remove(id);
        }
    }

    /// The stream closed: forgotten, and remembered as closed (`by_reset`: this
    /// server reset it).
    fn remove(&mut self, id: u32) {
        self.forget(id, false);
    }

    fn forget(&mut self, id: u32, by_reset: bool) {
        if let Some(entry) = self.closed.iter_mut().find(|(c, _)| *c == id) {
            entry.1 |= by_reset;
        } else if self.streams.contains_key(&id) || by_reset {
            if self.closed.len() == CLOSED_MEMORY {
                self.closed.pop_front();
            }
            self.closed.push_back((id, by_reset));
        }
        if let Some(s) = self.streams.remove(&id) {
            if let Phase::Body { body, .. } = &s.phase {
                self.buffered -= body.len();
            }
            if matches!(s.phase, Phase::Sending { .. }) {
                self.sending.retain(|&x| x != id);
            }
        }
    }

    fn reset_by_us(&self, id: u32) -> bool {
        self.closed.iter().any(|&(c, by_reset)| c == id && by_reset)
    }

    /// A stream error: RST_STREAM, and the stream forgotten.
    fn reset(&mut self, id: u32, code: Code) {
        self.forget(id, true);
        frame_head(&mut self.wbuf, 4, RST_STREAM, 0, id);
        self.wbuf.extend_from_slice(&(code as u32).to_be_bytes());
    }

    fn goaway(&mut self, code: Code, why: &str) {
        self.goaway_sent = true;
        frame_head(&mut self.wbuf, 8 + why.len(), GOAWAY, 0, 0);
        self.wbuf.extend_from_slice(&self.last_id.to_be_bytes());
        self.wbuf.extend_from_slice(&(code as u32).to_be_bytes());
        self.wbuf.extend_from_slice(why.as_bytes());
        if code != Code::NoError {
            // Nothing more will be answered.
            self.streams.clear();
            self.sending.clear();
        }
    }
}

/// A header block whose HEADERS frame lacked END_HEADERS.
struct Pending {
    id: u32,
    end: bool,
    self_dependent: bool,
    block: Vec<u8>,
}

enum BodyStep {
    /// The stream's response has ended.
    Done,
    /// Frames were written; poll again.
    Moved,
    /// Waiting for the body or for window.
    Waiting,
}

fn unpad(flags: u8, mut payload: Bytes) -> Result<Bytes, ConnError> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let Some(&pad) = payload.first() else {
        return Err(ConnError(
            Code::FrameSize,
            "padded frame without its pad length",
        ));
    };
    let pad = usize::from(pad);
    if pad + 1 > payload.len() {
        return Err(ConnError(Code::Protocol, "padding longer than the frame"));
    }
    payload.advance(1);
    payload.truncate(payload.len() - pad);
    Ok(payload)
}

enum Malformed {
    /// RST_STREAM with PROTOCOL_ERROR (RFC 9113 8.1.1).
    Reset,
    /// A well-formed request this server answers itself.
    Answer(StatusCode),
}

/// The request head from its decoded fields (RFC 9113 8.3).
/// The last request target of a connection and its parsed URI: clients repeat
/// the same `:scheme`, `:authority` and `:path` (a gRPC client calling one
/// method), and parsing them costs more than comparing them.
type UriCache = Option<(HeaderValue, HeaderValue, Option<HeaderValue>, Uri)>;

fn request_head(
    fields: Vec<hpack::Field>,
    cache: &mut UriCache,
) -> Result<(Parts, Option<u64>), Malformed> {
    let (mut method, mut scheme, mut authority, mut path) = (None, None, None, None);
    let mut headers = HeaderMap::with_capacity(fields.len());
    let mut regular = false;
    let mut content_length: Option<u64> = None;
    for f in fields {
        let value = f.value.ok_or(Malformed::Reset)?;
        match f.name {
            Name::Pseudo(p) => {
                if regular {
                    return Err(Malformed::Reset);
                }
                let slot = match p {
                    Pseudo::Method => &mut method,
                    Pseudo::Scheme => &mut scheme,
                    Pseudo::Authority => &mut authority,
                    Pseudo::Path => &mut path,
                    Pseudo::Protocol | Pseudo::Status | Pseudo::Unknown => {
                        return Err(Malformed::Reset)
                    }
                };
                if slot.replace(value).is_some() {
                    return Err(Malformed::Reset);
                }
            }
            Name::Header(name) => {
                regular = true;
                if is_connection_specific(&name, &value) {
                    return Err(Malformed::Reset);
                }
                if name == header::CONTENT_LENGTH {
                    let n = value
                        .to_str()
                        .ok()
                        .and_then(|s| s.trim().parse::<u64>().ok())
                        .ok_or(Malformed::Reset)?;
                    if content_length.replace(n).is_some_and(|m| m != n) {
                        return Err(Malformed::Reset);
                    }
                }
                headers.append(name, value);
            }
            Name::Invalid => return Err(Malformed::Reset),
        }
    }
    let method = Method::from_bytes(method.ok_or(Malformed::Reset)?.as_bytes())
        .map_err(|_| Malformed::Reset)?;
    if method == Method::CONNECT {
        return Err(Malformed::Answer(StatusCode::METHOD_NOT_ALLOWED));
    }
    let (Some(scheme), Some(path)) = (scheme, path) else {
        return Err(Malformed::Reset);
    };
    if path.is_empty() {
        return Err(Malformed::Reset);
    }
    let authority = authority.or_else(|| headers.get(header::HOST).cloned());
    let uri = match cache {
        Some((s, p, a, uri)) if *s == scheme && *p == path && *a == authority => uri.clone(),
        _ => {
            let mut uri = Uri::builder()
                .scheme(scheme.as_bytes())
                .path_and_query(path.as_bytes());
            if let Some(a) = &authority {
                uri = uri.authority(a.as_bytes());
            }
            let uri = match uri.build() {
                Ok(u) => u,
                // No authority (allowed: RFC 9113 8.3.1), or a path that is not
                // origin-form: the path alone.
                Err(_) => Uri::try_from(path.as_bytes()).map_err(|_| Malformed::Reset)?,
            };
            *cache = Some((scheme, path, authority, uri.clone()));
            uri
        }
    };
    let (mut parts, ()) = Request::new(()).into_parts();
    parts.method = method;
    parts.uri = uri;
    parts.version = Version::HTTP_2;
    parts.headers = headers;
    Ok((parts, content_length))
}

fn is_connection_specific(name: &HeaderName, value: &HeaderValue) -> bool {
    if name == header::TE {
        return value.as_bytes() != b"trailers";
    }
    is_connection_header(name)
}

fn is_connection_header(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection" | "transfer-encoding" | "upgrade" | "keep-alive" | "proxy-connection"
    )
}

/// The `date` header, formatted once per second.
fn date() -> HeaderValue {
    use std::cell::RefCell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local! {
        static CACHED: RefCell<(u64, Option<HeaderValue>)> = const { RefCell::new((0, None)) };
    }
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    CACHED.with(|c| {
        let mut c = c.borrow_mut();
        match &c.1 {
            Some(v) if c.0 == secs => v.clone(),
            _ => {
                let v = HeaderValue::from_str(&httpdate::fmt_http_date(now))
                    .unwrap_or_else(|_| HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"));
                *c = (secs, Some(v.clone()));
                v
            }
        }
    })
}

#[cfg(test)]
mod tests;
