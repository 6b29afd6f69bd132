//! Lean wire clients for the load generator: HTTP/1.1 keep-alive for JSON-RPC and
//! HTTP/2 prior-knowledge for gRPC, writing prebuilt request bytes and reading
//! answers with as little work as the protocols allow.
//!
//! Why not reqwest and tonic: the benchmark pins the server to one core and the
//! load generator to the other, so the generator must cost less per request than
//! the server does, or the server idles between requests and its CPU per request
//! includes the cost of going idle and waking up (and the figure measures the
//! client). reqwest and tonic cost about as much per request as the server; these
//! clients cost a fraction of that. They still check every answer: a JSON-RPC
//! answer must be a result, a gRPC answer must carry a message that decodes as the
//! expected protobuf type with the expected task id.
//!
//! The HTTP/2 client is what a gRPC client library sends on a warm connection:
//! the first request's headers go into the HPACK dynamic table (literal with
//! incremental indexing) and later requests name them by index; flow control is
//! honoured in both directions.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// An HTTP/1.1 keep-alive connection that POSTs JSON bodies to one path.
pub(crate) struct H1 {
    stream: TcpStream,
    head: Vec<u8>,
    buf: Vec<u8>,
}

impl H1 {
    /// Connects to `addr` (`host:port`), for requests to `path`, with
    /// `Authorization: Bearer TOKEN` when a token is given.
    pub(crate) async fn connect(addr: &str, path: &str, token: Option<&str>) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\n{auth}content-type: application/json\r\ncontent-length: "
        )
        .into_bytes();
        Ok(Self {
            stream,
            head,
            buf: Vec::with_capacity(16 * 1024),
        })
    }

    /// Sends `body` and returns the answer's body (status 200 required).
    pub(crate) async fn post(&mut self, body: &[u8]) -> io::Result<Vec<u8>> {
        let mut req = Vec::with_capacity(self.head.len() + 8 + body.len());
        req.extend_from_slice(&self.head);
        req.extend_from_slice(body.len().to_string().as_bytes());
        req.extend_from_slice(b"\r\n\r\n");
        req.extend_from_slice(body);
        self.stream.write_all(&req).await?;
        // The head: up to the blank line.
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            self.fill().await?;
        };
        let head = std::str::from_utf8(&self.buf[..head_end]).map_err(|_| bad("head not UTF-8"))?;
        if !head.starts_with("HTTP/1.1 200") {
            return Err(bad(format!("not a 200: {head}")));
        }
        let len = head
            .split("\r\n")
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())
                    .flatten()
            })
            .ok_or_else(|| bad(format!("no content-length: {head}")))?;
        while self.buf.len() < head_end + len {
            self.fill().await?;
        }
        let body = self.buf[head_end..head_end + len].to_vec();
        self.buf.drain(..head_end + len);
        Ok(body)
    }

    async fn fill(&mut self) -> io::Result<()> {
        fill(&mut self.stream, &mut self.buf).await
    }
}

/// Reads what the socket has into `buf`; the peer closing is an error.
async fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut chunk = [0u8; 16 * 1024];
    let n = stream.read(&mut chunk).await?;
    if n == 0 {
        return Err(bad("connection closed"));
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;

/// The receive window this client grants (stream and connection); the
/// connection's is topped up when half of it has been used.
const WINDOW: u32 = 1 << 24;

fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// An HPACK string literal without Huffman coding (a 7-bit prefix length).
fn hpack_str(out: &mut Vec<u8>, s: &str) {
    hpack_int(out, 0, 7, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn hpack_int(out: &mut Vec<u8>, first: u8, prefix: u32, v: usize) {
    let max = (1usize << prefix) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    let mut v = v - max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// An HTTP/2 connection carrying gRPC unary calls to one method, one at a time.
pub(crate) struct H2 {
    stream: TcpStream,
    buf: Vec<u8>,
    next_stream: u32,
    /// The header block of the first request (inserting into the dynamic table)
    /// and of every later one (naming the table's entries).
    first_block: Vec<u8>,
    warm_block: Vec<u8>,
    warm: bool,
    /// Bytes this client may still send on the connection (the server's window).
    send_window: i64,
    /// The server's initial stream window (its SETTINGS_INITIAL_WINDOW_SIZE).
    stream_window: i64,
    /// Bytes received since the connection window was last topped up.
    received: u32,
}

impl H2 {
    /// Connects to `addr` (`host:port`) for calls to `path` (`/pkg.Service/Method`),
    /// with `authorization: Bearer TOKEN` when a token is given.
    pub(crate) async fn connect(addr: &str, path: &str, token: Option<&str>) -> io::Result<Self> {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // SETTINGS: ENABLE_PUSH 0, INITIAL_WINDOW_SIZE WINDOW.
        frame_head(&mut out, 12, SETTINGS, 0, 0);
        out.extend_from_slice(&[0, 2, 0, 0, 0, 0]);
        out.extend_from_slice(&[0, 4]);
        out.extend_from_slice(&WINDOW.to_be_bytes());
        frame_head(&mut out, 4, WINDOW_UPDATE, 0, 0);
        out.extend_from_slice(&(WINDOW - 65_535).to_be_bytes());
        stream.write_all(&out).await?;

        // :method POST (static 3), :scheme http (static 6), then with incremental
        // indexing :path (name static 4), :authority (name static 1),
        // content-type (name static 31), te (new name). They land in the dynamic
        // table as te = 62, content-type = 63, :authority = 64, :path = 65.
        let mut first = vec![0x83, 0x86];
        hpack_int(&mut first, 0x40, 6, 4);
        hpack_str(&mut first, path);
        hpack_int(&mut first, 0x40, 6, 1);
        hpack_str(&mut first, addr);
        hpack_int(&mut first, 0x40, 6, 31);
        hpack_str(&mut first, "application/grpc");
        first.push(0x40);
        hpack_str(&mut first, "te");
        hpack_str(&mut first, "trailers");
        let mut warm = vec![0x83, 0x86, 0x80 | 65, 0x80 | 64, 0x80 | 63, 0x80 | 62];
        if let Some(t) = token {
            // authorization (name static 23), indexed too: it lands at 62 and
            // moves the others up by one, as a warm gRPC client's would.
            hpack_int(&mut first, 0x40, 6, 23);
            hpack_str(&mut first, &format!("Bearer {t}"));
            warm = vec![
                0x83,
                0x86,
                0x80 | 66,
                0x80 | 65,
                0x80 | 64,
                0x80 | 63,
                0x80 | 62,
            ];
        }
        Ok(Self {
            stream,
            buf: Vec::with_capacity(16 * 1024),
            next_stream: 1,
            first_block: first,
            warm_block: warm,
            warm: false,
            send_window: 65_535,
            stream_window: 65_535,
            received: 0,
        })
    }

    /// One unary call: sends the encoded protobuf `message` and returns the
    /// answer's message (a successful call: one gRPC message, then trailers).
    pub(crate) async fn call(&mut self, message: &[u8]) -> io::Result<Vec<u8>> {
        let id = self.next_stream;
        self.next_stream += 2;
        let data_len = 5 + message.len();
        while self.send_window < data_len as i64 {
            self.read_frame(id, &mut Vec::new()).await?;
        }
        if self.stream_window < data_len as i64 {
            return Err(bad("the server's stream window is smaller than a request"));
        }
        self.send_window -= data_len as i64;
        let block = if self.warm {
            &self.warm_block
        } else {
            &self.first_block
        };
        self.warm = true;
        let mut out = Vec::with_capacity(18 + block.len() + data_len);
        frame_head(&mut out, block.len(), HEADERS, END_HEADERS, id);
        out.extend_from_slice(block);
        frame_head(&mut out, data_len, DATA, END_STREAM, id);
        out.push(0);
        out.extend_from_slice(&(message.len() as u32).to_be_bytes());
        out.extend_from_slice(message);
        self.stream.write_all(&out).await?;

        let mut body = Vec::new();
        loop {
            if self.read_frame(id, &mut body).await? {
                break;
            }
        }
        if body.len() < 5 || body[0] != 0 {
            return Err(bad(format!(
                "stream {id}: no uncompressed gRPC message in the answer ({} bytes)",
                body.len()
            )));
        }
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        if body.len() != 5 + len {
            return Err(bad(format!(
                "stream {id}: message of {len} bytes in {} bytes",
                body.len()
            )));
        }
        body.drain(..5);
        Ok(body)
    }

    /// Reads one frame; DATA of stream `id` is appended to `body`. True when
    /// stream `id` has ended.
    async fn read_frame(&mut self, id: u32, body: &mut Vec<u8>) -> io::Result<bool> {
        while self.buf.len() < 9 {
            self.fill().await?;
        }
        let len = u32::from_be_bytes([0, self.buf[0], self.buf[1], self.buf[2]]) as usize;
        while self.buf.len() < 9 + len {
            self.fill().await?;
        }
        let (kind, flags) = (self.buf[3], self.buf[4]);
        let sid =
            u32::from_be_bytes([self.buf[5], self.buf[6], self.buf[7], self.buf[8]]) & 0x7fff_ffff;
        let payload = self.buf[9..9 + len].to_vec();
        self.buf.drain(..9 + len);
        let mut ended = false;
        match kind {
            DATA => {
                self.received += len as u32;
                let data = unpad(&payload, flags)?;
                if sid == id {
                    body.extend_from_slice(data);
                    if flags & END_STREAM != 0 {
                        return Err(bad(format!("stream {id} ended without trailers")));
                    }
                }
                if self.received >= WINDOW / 2 {
                    let mut out = Vec::with_capacity(13);
                    frame_head(&mut out, 4, WINDOW_UPDATE, 0, 0);
                    out.extend_from_slice(&self.received.to_be_bytes());
                    self.stream.write_all(&out).await?;
                    self.received = 0;
                }
            }
            HEADERS => {
                if flags & END_HEADERS == 0 {
                    return Err(bad("CONTINUATION frames are not expected"));
                }
                if sid == id && flags & END_STREAM != 0 {
                    ended = true;
                }
            }
            SETTINGS if flags & ACK == 0 => {
                for s in payload.chunks_exact(6) {
                    if u16::from_be_bytes([s[0], s[1]]) == 4 {
                        let v = i64::from(u32::from_be_bytes([s[2], s[3], s[4], s[5]]));
                        self.stream_window = v;
                    }
                }
                let mut out = Vec::with_capacity(9);
                frame_head(&mut out, 0, SETTINGS, ACK, 0);
                self.stream.write_all(&out).await?;
            }
            PING if flags & ACK == 0 => {
                let mut out = Vec::with_capacity(17);
                frame_head(&mut out, payload.len(), PING, ACK, 0);
                out.extend_from_slice(&payload);
                self.stream.write_all(&out).await?;
            }
            WINDOW_UPDATE if sid == 0 && payload.len() == 4 => {
                let inc = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                self.send_window += i64::from(inc & 0x7fff_ffff);
            }
            RST_STREAM if sid == id => return Err(bad(format!("stream {id} was reset"))),
            GOAWAY => return Err(bad("the server sent GOAWAY")),
            _ => {}
        }
        Ok(ended)
    }

    async fn fill(&mut self) -> io::Result<()> {
        fill(&mut self.stream, &mut self.buf).await
    }
}

fn unpad(payload: &[u8], flags: u8) -> io::Result<&[u8]> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let pad = *payload.first().ok_or_else(|| bad("empty padded frame"))? as usize;
    payload
        .get(1..payload.len().saturating_sub(pad))
        .ok_or_else(|| bad("bad padding"))
}
