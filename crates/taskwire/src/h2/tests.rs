//! The HTTP/2 server frame by frame: a raw client writes frames and reads what
//! the server answers, over an in-memory duplex stream.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Request, Response};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::hpack::{self, Decoder, Name, Pseudo};
use super::*;

/// What the test service saw and can be told.
#[derive(Default)]
struct Probe {
    /// Set when a `/slow` request's future is dropped.
    dropped: AtomicBool,
    /// Releases `/slow` requests.
    release: Notify,
}

struct DropFlag(Arc<Probe>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
    }
}

type Answered = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

fn service(
    probe: Arc<Probe>,
) -> impl Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future = Answered> + Clone
{
    tower::service_fn(move |req: Request<Body>| {
        let probe = probe.clone();
        let fut: Answered = Box::pin(async move {
            let path = req.uri().path().to_string();
            let query = req.uri().query().unwrap_or("").to_string();
            let method = req.method().to_string();
            let uri = req.uri().to_string();
            let header_x = req
                .headers()
                .get("x-test")
                .map(|v| v.to_str().unwrap_or("").to_string());
            let body = http_body_util::BodyExt::collect(req.into_body())
                .await
                .unwrap()
                .to_bytes();
            let res = match path.as_str() {
                "/echo" => Response::builder()
                    .header("x-method", method)
                    .header("x-uri", uri)
                    .header("x-test", header_x.unwrap_or_default())
                    .body(Body::from(body))
                    .unwrap(),
                "/big" => {
                    let n: usize = query.parse().unwrap();
                    Response::new(Body::from(vec![b'x'; n]))
                }
                "/trailers" => {
                    let frames = futures::stream::iter(vec![
                        Ok::<_, Infallible>(hyper::body::Frame::data(Bytes::from_static(b"abc"))),
                        Ok(hyper::body::Frame::trailers({
                            let mut t = HeaderMap::new();
                            t.insert("grpc-status", HeaderValue::from_static("0"));
                            t
                        })),
                    ]);
                    Response::new(Body::new(http_body_util::StreamBody::new(frames)))
                }
                "/slow" => {
                    let _flag = DropFlag(probe.clone());
                    probe.release.notified().await;
                    Response::new(Body::from("released"))
                }
                _ => Response::builder().status(404).body(Body::empty()).unwrap(),
            };
            Ok(res)
        });
        fut
    })
}

struct Client {
    io: DuplexStream,
    buf: BytesMut,
    hpack: Decoder,
}

#[derive(Debug)]
struct Frame {
    kind: u8,
    flags: u8,
    id: u32,
    payload: Bytes,
}

fn config() -> Config {
    Config {
        max_body: 1 << 16,
        max_streams: 4,
    }
}

/// Starts a server on one end of a duplex stream; the client has sent the
/// preface and an empty SETTINGS, and has read the server's SETTINGS and
/// WINDOW_UPDATE.
async fn start(
    probe: Arc<Probe>,
    cfg: Config,
    stop: CancellationToken,
) -> (Client, tokio::task::JoinHandle<io::Result<()>>) {
    start_with_settings(probe, cfg, stop, &[]).await
}

async fn start_with_settings(
    probe: Arc<Probe>,
    cfg: Config,
    stop: CancellationToken,
    settings: &[(u16, u32)],
) -> (Client, tokio::task::JoinHandle<io::Result<()>>) {
    let (client, server) = tokio::io::duplex(1 << 20);
    let task = tokio::spawn(serve(server, BytesMut::new(), service(probe), cfg, stop));
    let mut c = Client {
        io: client,
        buf: BytesMut::new(),
        hpack: Decoder::default(),
    };
    let mut payload = Vec::new();
    for (id, v) in settings {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&v.to_be_bytes());
    }
    c.send(SETTINGS, 0, 0, &payload).await;
    let s = c.read().await;
    assert_eq!((s.kind, s.flags), (SETTINGS, 0));
    let w = c.read().await;
    assert_eq!(w.kind, WINDOW_UPDATE);
    let ack = c.read().await;
    assert_eq!(
        (ack.kind, ack.flags),
        (SETTINGS, ACK),
        "our SETTINGS acknowledged"
    );
    (c, task)
}

impl Client {
    async fn send(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) {
        let mut out = Vec::new();
        frame_head(&mut out, payload.len(), kind, flags, id);
        out.extend_from_slice(payload);
        self.io.write_all(&out).await.unwrap();
    }

    async fn read(&mut self) -> Frame {
        self.try_read().await.expect("the connection closed")
    }

    /// The next frame, or None when the server closed the connection.
    async fn try_read(&mut self) -> Option<Frame> {
        loop {
            if self.buf.len() >= 9 {
                let len = u32::from_be_bytes([0, self.buf[0], self.buf[1], self.buf[2]]) as usize;
                if self.buf.len() >= 9 + len {
                    let head = self.buf.split_to(9);
                    let payload = self.buf.split_to(len).freeze();
                    return Some(Frame {
                        kind: head[3],
                        flags: head[4],
                        id: u32_at(&head[5..9]) & 0x7fff_ffff,
                        payload,
                    });
                }
            }
            let n = tokio::time::timeout(Duration::from_secs(5), self.io.read_buf(&mut self.buf))
                .await
                .expect("no frame within 5 s")
                .unwrap();
            if n == 0 {
                return None;
            }
        }
    }

    /// A header block for a request: `:method`, `:scheme http`, `:path`,
    /// `:authority`, then `extra`.
    fn block(method: &str, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        for (n, v) in [
            (":method", method),
            (":scheme", "http"),
            (":path", path),
            (":authority", "test"),
        ]
        .iter()
        .chain(extra.iter())
        {
            b.push(0x00);
            hpack::put_str(&mut b, n.as_bytes());
            hpack::put_str(&mut b, v.as_bytes());
        }
        b
    }

    fn fields(&mut self, block: &Bytes) -> Vec<(String, String)> {
        let mut out = Vec::new();
        self.hpack
            .decode(block, |f| {
                let n = match f.name {
                    Name::Pseudo(Pseudo::Status) => ":status".to_string(),
                    Name::Pseudo(p) => format!("{p:?}"),
                    Name::Header(h) => h.as_str().to_string(),
                    Name::Invalid => "<invalid>".into(),
                };
                out.push((
                    n,
                    String::from_utf8_lossy(f.value.unwrap().as_bytes()).into_owned(),
                ));
            })
            .unwrap();
        out
    }

    /// Reads one whole response on stream `id`: head fields, body, trailers.
    async fn response(
        &mut self,
        id: u32,
    ) -> (Vec<(String, String)>, Vec<u8>, Vec<(String, String)>) {
        let (mut head, mut body, mut trailers) = (None, Vec::new(), Vec::new());
        loop {
            let f = self.read().await;
            if f.id != id {
                continue;
            }
            match f.kind {
                HEADERS => {
                    assert!(f.flags & END_HEADERS != 0);
                    let fields = self.fields(&f.payload);
                    if head.is_none() {
                        head = Some(fields);
                    } else {
                        trailers = fields;
                    }
                }
                DATA => body.extend_from_slice(&f.payload),
                RST_STREAM => panic!("stream {id} reset: {}", u32_at(&f.payload)),
                _ => {}
            }
            if f.flags & END_STREAM != 0 {
                return (head.unwrap(), body, trailers);
            }
        }
    }

    /// Reads frames until one of `kind` on stream `id`.
    async fn until(&mut self, kind: u8, id: u32) -> Frame {
        loop {
            let f = self.read().await;
            if f.kind == kind && f.id == id {
                return f;
            }
        }
    }
}

fn get<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn ping_is_answered_and_settings_acknowledged() {
    let (mut c, _t) = start(Arc::default(), config(), CancellationToken::new()).await;
    c.send(PING, 0, 0, b"12345678").await;
    let f = c.read().await;
    assert_eq!(
        (f.kind, f.flags, &f.payload[..]),
        (PING, ACK, &b"12345678"[..])
    );
    c.send(SETTINGS, 0, 0, &[0, 5, 0, 0, 0x80, 0]).await;
    let f = c.read().await;
    assert_eq!((f.kind, f.flags), (SETTINGS, ACK));
}

#[tokio::test]
async fn a_request_in_several_frames_is_answered_whole() {
    let (mut c, _t) = start(Arc::default(), config(), CancellationToken::new()).await;
    let block = Client::block("POST", "/echo?q=1", &[("x-test", "yes")]);
    // HEADERS split by CONTINUATION, the body in two DATA frames.
    let (a, b) = block.split_at(7);
    c.send(HEADERS, 0, 1, a).await;
    c.send(CONTINUATION, END_HEADERS, 1, b).await;
    c.send(DATA, 0, 1, b"hello ").await;
    c.send(DATA, END_STREAM, 1, b"world").await;
    let (head, body, _) = c.response(1).await;
    assert_eq!(get(&head, ":status"), Some("200"));
    assert_eq!(get(&head, "x-method"), Some("POST"));
    assert_eq!(get(&head, "x-uri"), Some("http://test/echo?q=1"));
    assert_eq!(get(&head, "x-test"), Some("yes"));
    assert_eq!(get(&head, "content-length"), Some("11"));
    assert!(get(&head, "date").is_some());
    assert_eq!(body, b"hello world");
    // The connection serves the next stream; a padded DATA frame is unpadded.
    c.send(
        HEADERS,
        END_HEADERS,
        3,
        &Client::block("POST", "/echo", &[]),
    )
    .await;
    c.send(DATA, END_STREAM | PADDED, 3, b"\x03abc\0\0\0").await;
    let (head, body, _) = c.response(3).await;
    assert_eq!(body, b"abc");
    // Not the previous request's target (the connection caches the last URI).
    assert_eq!(get(&head, "x-uri"), Some("http://test/echo"));
    c.send(
        HEADERS,
        END_HEADERS | END_STREAM,
        5,
        &Client::block("GET", "/echo", &[]),
    )
    .await;
    let (head, _, _) = c.response(5).await;
    assert_eq!(get(&head, "x-uri"), Some("http://test/echo"));
    assert_eq!(get(&head, "x-method"), Some("GET"));
}

#[tokio::test]
async fn trailers_end_the_stream() {
    let (mut c, _t) = start(Arc::default(), config(), CancellationToken::new()).await;
    c.send(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &Client::block("GET", "/trailers", &[]),
    )
    .await;
    let (head, body, trailers) = c.response(1).await;
    assert_eq!(get(&head, ":status"), Some("200"));
    assert_eq!(body, b"abc");
    assert_eq!(get(&trailers, "grpc-status"), Some("0"));
}

#[tokio::test]
async fn malformed_requests_are_reset_and_the_connection_lives_on() {
    let (mut c, _t) = start(Arc::default(), config(), CancellationToken::new()).await;
    let cases: [Vec<u8>; 5] = [
        // An upper-case field name.
        Client::block("GET", "/echo", &[("X-Test", "1")]),
        // A connection-specific field.
        Client::block("GET", "/echo", &[("connection", "keep-alive")]),
        // te other than trailers.
        Client::block("GET", "/echo", &[("te", "gzip")]),
        // No :path.
        {
            let mut b = Vec::new();
            for (n, v) in [(":method", "GET"), (":scheme", "http")] {
                b.push(0);
                hpack::put_str(&mut b, n.as_bytes());
                hpack::put_str(&mut b, v.as_bytes());
            }
            b
        },
        // A pseudo-header after a regular one.
        {
            let mut b = Client::block("GET", "/echo", &[("x-a", "1")]);
            b.push(0);
            hpack::put_str(&mut b, b":path");
            hpack::put_str(&mut b, b"/again");
            b
        },
    ];
    let mut id = 1;
    for block in cases {
        c.send(HEADERS, END_HEADERS | END_STREAM, id, &block).await;
        let f = c.until(RST_STREAM, id).await;
        assert_eq!(u32_at(&f.payload), Code::Protocol as u32, "stream {id}");
        id += 2;
    }
    // A body that disagrees with content-length.
    c.send(
        HEADERS,
        END_HEADERS,
        id,
        &Client::block("POST", "/echo", &[("content-length", "5")]),
    )
    .await;
    c.send(DATA, END_STREAM, id, b"abc").await;
    let f = c.until(RST_STREAM, id).await;
    assert_eq!(u32_at(&f.payload), Code::Protocol as u32);
    id += 2;
    c.send(
        HEADERS,
        END_HEADERS | END_STREAM,
        id,
        &Client::block("GET", "/echo", &[]),
    )
    .await;
    let (head, _, _) = c.response(id).await;
    assert_eq!(get(&head, ":status"), Some("200"));
}

#[tokio::test]
async fn responses_wait_for_the_peers_windows() {
    // The client grants 100 bytes per stream.
    let (mut c, _t) = start_with_settings(
        Arc::default(),
        config(),
        CancellationToken::new(),
        &[(4, 100)],
    )
    .await;
    c.send(
        HEADERS,
        END_HEADERS | END_STREAM,
        3,
        &Client::block("GET", "/big?1000", &[]),
    )
    .await;
    let head = c.until(HEADERS, 3).await;
    assert_eq!(head.flags & END_STREAM, 0);
    let mut got = 0;
    let mut f = c.until(DATA, 3).await;
    got += f.payload.len();
    assert_eq!(got, 100, "no more than the stream window");
    // Nothing more until the window opens.
    c.send(PING, 0, 0, b"probe---").await;
    let p = c.read().await;
    assert_eq!(p.kind, PING, "no DATA beyond the window: {p:?}");
    c.send(WINDOW_UPDATE, 0, 3, &400u32.to_be_bytes()).await;
    while got < 500 {
        f = c.until(DATA, 3).await;
        got += f.payload.len();
    }
    assert_eq!(got, 500);
    assert_eq!(f.flags & END_STREAM, 0);
    c.send(WINDOW_UPDATE, 0, 3, &1000u32.to_be_bytes()).await;
    while f.flags & END_STREAM == 0 {
        f = c.until(DATA, 3).await;
        got += f.payload.len();
    }
    assert_eq!(got, 1000);
}

#[tokio::test]
async fn a_body_over_the_limit_is_answered_413() {
    let (mut c, _t) = start(Arc::default(), config(), CancellationToken::new()).await;
    c.send(
        HEADERS,
        END_HEADERS,
        1,
        &Client::block("POST", "/echo", &[]),
    )
    .await;
    let chunk = vec![b'a'; 16_384];
    for _ in 0..5 {
        c.send(DATA, 0, 1, &chunk).await;
    }
    let head = c.until(HEADERS, 1).await;
    let fields = c.fields(&head.payload);
    assert_eq!(get(&fields, ":status"), Some("413"));
    let data = c.until(DATA, 1).await;
    assert_eq!(&data.payload[..], crate::direct::TOO_LARGE.as_bytes());
    let rst = c.until(RST_STREAM, 1).await;
    assert_eq!(u32_at(&rst.payload), Code::NoError as u32);
}

#[tokio::test]
async fn a_reset_stream_drops_its_request() {
    let probe = Arc::new(Probe::default());
    let (mut c, _t) = start(probe.clone(), config(), CancellationToken::new()).await;
    c.send(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &Client::block("GET", "/slow", &[]),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!probe.dropped.load(Ordering::SeqCst));
    c.send(RST_STREAM, 0, 1, &8u32.to_be_bytes()).await;
    // The server notices on its next turn.
    c.send(PING, 0, 0, b"afterrst").await;
    let _ = c.until(PING, 0).await;
    assert!(
        probe.dropped.load(Ordering::SeqCst),
        "the request's future was dropped"
    );
}

#[tokio::test]
async fn streams_over_the_limit_are_refused() {
    let probe = Arc::new(Probe::default());
    let (mut c, _t) = start(probe.clone(), config(), CancellationToken::new()).await;
    for id in [1, 3, 5, 7] {
        c.send(
            HEADERS,
            END_HEADERS | END_STREAM,
            id,
            &Client::block("GET", "/slow", &[]),
        )
        .await;
    }
    c.send(
        HEADERS,
        END_HEADERS | END_STREAM,
        9,
        &Client::block("GET", "/slow", &[]),
    )
    .await;
    let f = c.until(RST_STREAM, 9).await;
    assert_eq!(u32_at(&f.payload), Code::RefusedStream as u32);
    probe.release.notify_waiters();
    let mut bodies: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut ended = 0;
    while ended < 4 {
        let f = c.read().await;
        if f.kind == DATA {
            bodies
                .entry(f.id)
                .or_default()
                .extend_from_slice(&f.payload);
            if f.flags & END_STREAM != 0 {
                ended += 1;
            }
        }
    }
    for id in [1, 3, 5, 7] {
        assert_eq!(bodies[&id], b"released");
    }
}

#[tokio::test]
async fn shutdown_sends_goaway_and_lets_open_streams_finish() {
    let probe = Arc::new(Probe::default());
    let stop = CancellationToken::new();
    let (mut c, task) = start(probe.clone(), config(), stop.clone()).await;
    c.send(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &Client::block("GET", "/slow", &[]),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    stop.cancel();
    let g = c.until(GOAWAY, 0).await;
    assert_eq!(u32_at(&g.payload[..4]), 1, "last stream id");
    assert_eq!(u32_at(&g.payload[4..8]), Code::NoError as u32);
    // A stream opened after GOAWAY is ignored; the open one finishes.
    c.send(
        HEADERS,
        END_HEADERS | END_STREAM,
        3,
        &Client::block("GET", "/echo", &[]),
    )
    .await;
    probe.release.notify_waiters();
    let (_, body, _) = c.response(1).await;
    assert_eq!(body, b"released");
    assert!(c.try_read().await.is_none(), "closed after the last stream");
    task.await.unwrap().unwrap();
}

/// Sends `frames` after the handshake; the server must end the connection with
/// GOAWAY of `code`.
async fn expect_goaway(frames: &[(u8, u8, u32, Vec<u8>)], code: Code) {
    let (mut c, task) = start(Arc::default(), config(), CancellationToken::new()).await;
    for (kind, flags, id, payload) in frames {
        c.send(*kind, *flags, *id, payload).await;
    }
    let g = c.until(GOAWAY, 0).await;
    assert_eq!(u32_at(&g.payload[4..8]), code as u32, "{frames:?}");
    assert!(c.try_read().await.is_none());
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn protocol_errors_end_the_connection() {
    let req = Client::block("GET", "/echo", &[]);
    expect_goaway(&[(DATA, 0, 0, b"x".to_vec())], Code::Protocol).await;
    expect_goaway(&[(DATA, 0, 5, b"x".to_vec())], Code::Protocol).await;
    expect_goaway(&[(HEADERS, END_HEADERS, 2, req.clone())], Code::Protocol).await;
    expect_goaway(&[(HEADERS, END_HEADERS, 1, vec![0xbe])], Code::Compression).await;
    expect_goaway(
        &[(HEADERS, 0, 1, req.clone()), (PING, 0, 0, vec![0; 8])],
        Code::Protocol,
    )
    .await;
    expect_goaway(&[(PING, 0, 0, vec![0; 7])], Code::FrameSize).await;
    expect_goaway(&[(SETTINGS, 0, 0, vec![0; 5])], Code::FrameSize).await;
    expect_goaway(&[(SETTINGS, 0, 0, vec![0, 5, 0, 0, 0, 1])], Code::Protocol).await;
    expect_goaway(&[(WINDOW_UPDATE, 0, 0, vec![0; 4])], Code::Protocol).await;
    expect_goaway(
        &[(WINDOW_UPDATE, 0, 0, 0x7fff_ffffu32.to_be_bytes().to_vec())],
        Code::FlowControl,
    )
    .await;
    expect_goaway(
        &[(PUSH_PROMISE, END_HEADERS, 1, vec![0; 4])],
        Code::Protocol,
    )
    .await;
    expect_goaway(&[(DATA, 0, 1, vec![0; MAX_FRAME + 1])], Code::FrameSize).await;
    // A stream id lower than one already used, never opened.
    expect_goaway(
        &[
            (HEADERS, END_HEADERS | END_STREAM, 5, req.clone()),
            (HEADERS, END_HEADERS | END_STREAM, 3, req.clone()),
        ],
        Code::Protocol,
    )
    .await;
    // HEADERS again on a stream that has closed normally.
    let (mut c, _t) = start(Arc::default(), config(), CancellationToken::new()).await;
    c.send(HEADERS, END_HEADERS | END_STREAM, 1, &req).await;
    let _ = c.response(1).await;
    c.send(HEADERS, END_HEADERS | END_STREAM, 1, &req).await;
    let g = c.until(GOAWAY, 0).await;
    assert_eq!(u32_at(&g.payload[4..8]), Code::StreamClosed as u32);
}

#[tokio::test]
async fn late_frames_on_closed_streams() {
    let req = Client::block("GET", "/echo", &[]);
    let (mut c, _t) = start(Arc::default(), config(), CancellationToken::new()).await;
    // DATA on a stream that closed normally: STREAM_CLOSED.
    c.send(HEADERS, END_HEADERS | END_STREAM, 1, &req).await;
    let _ = c.response(1).await;
    c.send(DATA, 0, 1, b"late").await;
    let f = c.until(RST_STREAM, 1).await;
    assert_eq!(u32_at(&f.payload), Code::StreamClosed as u32);
    // DATA on a stream this server reset: ignored, no RST_STREAM back.
    c.send(
        HEADERS,
        END_HEADERS,
        3,
        &Client::block("GET", "/echo", &[("X-Bad", "1")]),
    )
    .await;
    let f = c.until(RST_STREAM, 3).await;
    assert_eq!(u32_at(&f.payload), Code::Protocol as u32);
    c.send(DATA, END_STREAM, 3, b"in flight").await;
    c.send(PING, 0, 0, b"after-3!").await;
    let f = c.read().await;
    assert_eq!(f.kind, PING, "the late DATA got no answer: {f:?}");
    // A priority on its own stream: PROTOCOL_ERROR, as PRIORITY or in HEADERS.
    c.send(PRIORITY, 0, 5, &[0, 0, 0, 5, 16]).await;
    let f = c.until(RST_STREAM, 5).await;
    assert_eq!(u32_at(&f.payload), Code::Protocol as u32);
    let mut block = vec![0, 0, 0, 7, 16];
    block.extend_from_slice(&req);
    c.send(HEADERS, END_HEADERS | END_STREAM | PRIORITY_FLAG, 7, &block)
        .await;
    let f = c.until(RST_STREAM, 7).await;
    assert_eq!(u32_at(&f.payload), Code::Protocol as u32);
    // A priority on another stream is accepted and ignored.
    let mut block = vec![0, 0, 0, 1, 16];
    block.extend_from_slice(&req);
    c.send(HEADERS, END_HEADERS | END_STREAM | PRIORITY_FLAG, 9, &block)
        .await;
    let (head, _, _) = c.response(9).await;
    assert_eq!(get(&head, ":status"), Some("200"));
}

#[tokio::test]
async fn the_first_frame_must_be_settings() {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let task = tokio::spawn(serve(
        server,
        BytesMut::new(),
        service(Arc::default()),
        config(),
        CancellationToken::new(),
    ));
    let mut out = Vec::new();
    frame_head(&mut out, 8, PING, 0, 0);
    out.extend_from_slice(&[0; 8]);
    client.write_all(&out).await.unwrap();
    let mut c = Client {
        io: client,
        buf: BytesMut::new(),
        hpack: Decoder::default(),
    };
    let g = c.until(GOAWAY, 0).await;
    assert_eq!(u32_at(&g.payload[4..8]), Code::Protocol as u32);
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn arbitrary_bytes_never_panic_the_server() {
    use proptest::strategy::{Strategy, ValueTree};
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let frames = proptest::collection::vec(
        (
            0u8..12,
            any_u8(),
            0u32..8,
            proptest::collection::vec(proptest::num::u8::ANY, 0..40),
        ),
        1..12,
    );
    for _ in 0..200 {
        let case = frames.new_tree(&mut runner).unwrap().current();
        let (mut c, task) = start(Arc::default(), config(), CancellationToken::new()).await;
        for (kind, flags, id, payload) in &case {
            c.send(*kind, *flags, *id, payload).await;
        }
        drop(c);
        let r = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the server ends when the peer goes");
        assert!(r.is_ok(), "the connection task panicked on {case:?}");
    }
}

fn any_u8() -> proptest::num::u8::Any {
    proptest::num::u8::ANY
}

#[tokio::test]
async fn an_empty_answer_is_one_headers_frame_without_content_length() {
    let (mut c, _t) = start(Arc::default(), config(), CancellationToken::new()).await;
    c.send(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &Client::block("GET", "/nothing", &[]),
    )
    .await;
    let f = c.until(HEADERS, 1).await;
    assert_ne!(f.flags & END_STREAM, 0, "the HEADERS frame ends the stream");
    let fields = c.fields(&f.payload);
    assert_eq!(get(&fields, ":status"), Some("404"));
    assert_eq!(get(&fields, "content-length"), None);
}
