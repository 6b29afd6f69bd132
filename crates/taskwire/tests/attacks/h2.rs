//! A hand-rolled HTTP/2 client for the attack tests: a frame writer (the 9-byte
//! frame header of RFC 9113 4.1), an HPACK encoder (integers and literals, no
//! Huffman; RFC 7541 5 and 6) and a frame reader that records what the server
//! sends back: GOAWAY, RST_STREAM, the `:status` of each answer, and how the
//! connection ended. A real client would refuse to send most of what the tests
//! send, which is why it is written here.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// The client connection preface (RFC 9113 3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;

pub(crate) const PROTOCOL_ERROR: u32 = 0x1;
pub(crate) const CANCEL: u32 = 0x8;
pub(crate) const ENHANCE_YOUR_CALM: u32 = 0xb;

pub(crate) const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;

/// The largest frame payload a peer must accept without asking for more.
pub(crate) const MAX_FRAME: usize = 16_384;

/// Appends one frame.
pub(crate) fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len();
    assert!(len < 1 << 24, "frame payload of {len} bytes");
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
}

/// Appends a SETTINGS frame with these parameters.
pub(crate) fn settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    let mut p = Vec::with_capacity(params.len() * 6);
    for (id, v) in params {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&v.to_be_bytes());
    }
    frame(out, SETTINGS, 0, 0, &p);
}

/// The settings a test client sends: no dynamic table for the server's
/// answers (so that the reader can find `:status` without one), no push.
pub(crate) const CLIENT_SETTINGS: &[(u16, u32)] =
    &[(SETTINGS_HEADER_TABLE_SIZE, 0), (SETTINGS_ENABLE_PUSH, 0)];

/// Appends a header block as one HEADERS frame, or a HEADERS frame and as
/// many CONTINUATION frames as it takes; `end_stream` sets END_STREAM.
pub(crate) fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool) {
    let es = if end_stream { END_STREAM } else { 0 };
    let mut chunks = block.chunks(MAX_FRAME).peekable();
    let first = chunks.next().unwrap_or(&[]);
    let eh = if chunks.peek().is_none() {
        END_HEADERS
    } else {
        0
    };
    frame(out, HEADERS, es | eh, stream, first);
    while let Some(c) = chunks.next() {
        let eh = if chunks.peek().is_none() {
            END_HEADERS
        } else {
            0
        };
        frame(out, CONTINUATION, eh, stream, c);
    }
}

pub(crate) fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    frame(out, RST_STREAM, 0, stream, &code.to_be_bytes());
}

pub(crate) fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    frame(out, WINDOW_UPDATE, 0, stream, &increment.to_be_bytes());
}

pub(crate) fn ping(out: &mut Vec<u8>, payload: u64) {
    frame(out, PING, 0, 0, &payload.to_be_bytes());
}

pub(crate) fn data(out: &mut Vec<u8>, stream: u32, payload: &[u8], end_stream: bool) {
    frame(
        out,
        DATA,
        if end_stream { END_STREAM } else { 0 },
        stream,
        payload,
    );
}

/// HPACK integer with an N-bit prefix (RFC 7541 5.1); `flags` are the bits
/// above the prefix in the first octet.
pub(crate) fn hpack_int(out: &mut Vec<u8>, prefix_bits: u8, flags: u8, mut v: usize) {
    let max = (1usize << prefix_bits) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128 + 128) as u8);
        v /= 128;
    }
    out.push(v as u8);
}

/// HPACK string literal, not Huffman-coded (RFC 7541 5.2).
pub(crate) fn hpack_str(out: &mut Vec<u8>, s: &[u8]) {
    hpack_int(out, 7, 0, s.len());
    out.extend_from_slice(s);
}

/// Indexed header field (RFC 7541 6.1): one octet for an index below 127.
pub(crate) fn indexed(out: &mut Vec<u8>, index: usize) {
    hpack_int(out, 7, 0x80, index);
}

/// Literal header field with incremental indexing, new name (6.2.1): the
/// field enters the dynamic table at index 62.
pub(crate) fn literal_indexed(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0x40);
    hpack_str(out, name.as_bytes());
    hpack_str(out, value);
}

/// Literal header field without indexing, new name (6.2.2).
pub(crate) fn literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0x00);
    hpack_str(out, name.as_bytes());
    hpack_str(out, value);
}

/// Literal header field without indexing, name from the static table (6.2.2).
fn literal_named(out: &mut Vec<u8>, name_index: usize, value: &[u8]) {
    hpack_int(out, 4, 0x00, name_index);
    hpack_str(out, value);
}

/// The pseudo-header fields of a request: `:method` (GET or POST, static
/// indices 2 and 3), `:scheme http` (6), `:path` and `:authority`, then the
/// regular fields `extra`.
pub(crate) fn request(method: &str, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    match method {
        "GET" => indexed(&mut b, 2),
        "POST" => indexed(&mut b, 3),
        other => panic!("no static entry for :method {other}"),
    }
    indexed(&mut b, 6);
    literal_named(&mut b, 4, path.as_bytes());
    literal_named(&mut b, 1, b"127.0.0.1");
    for (n, v) in extra {
        literal(&mut b, n, v.as_bytes());
    }
    b
}

/// The GOAWAY a server sent.
#[derive(Clone, Debug)]
pub(crate) struct GoAway {
    pub(crate) last_stream: u32,
    pub(crate) code: u32,
    pub(crate) debug: String,
}

/// How the server's side of a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// A FIN: read returned 0.
    Eof,
    /// A read error (a reset, usually).
    Error(io::ErrorKind),
}

/// What the reader saw on one connection.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    pub(crate) goaway: Option<GoAway>,
    pub(crate) end: Option<End>,
    /// The `:status` of each stream's answer (0: not found by this reader).
    pub(crate) status: BTreeMap<u32, u16>,
    /// Streams the server ended: END_STREAM, or RST_STREAM.
    pub(crate) ended: BTreeSet<u32>,
    pub(crate) resets: usize,
    pub(crate) frames: usize,
}

impl Seen {
    /// GOAWAY received, or the connection ended.
    pub(crate) fn closed(&self) -> bool {
        self.goaway.is_some() || self.end.is_some()
    }

    /// The GOAWAY's error code, if there was one.
    pub(crate) fn goaway_code(&self) -> Option<u32> {
        self.goaway.as_ref().map(|g| g.code)
    }

    /// One line: how the connection was closed.
    pub(crate) fn describe(&self) -> String {
        let g = match &self.goaway {
            Some(g) => format!(
                "GOAWAY {} last {} {:?}",
                code_name(g.code),
                g.last_stream,
                g.debug
            ),
            None => "no GOAWAY".into(),
        };
        let e = match self.end {
            Some(End::Eof) => "EOF".to_string(),
            Some(End::Error(k)) => format!("{k:?}"),
            None => "open".to_string(),
        };
        format!(
            "{g}, {e}, {} frames, {} resets, {} answers",
            self.frames,
            self.resets,
            self.status.len()
        )
    }
}

/// The name of an HTTP/2 error code.
pub(crate) fn code_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("0x{code:x}"), |n| (*n).to_string())
}

/// An HTTP/2 connection: the write half for the test, the read half in a task
/// that records what arrives.
pub(crate) struct Conn {
    w: OwnedWriteHalf,
    seen: Arc<Mutex<Seen>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Conn {
    /// Connects and writes the preface and [`CLIENT_SETTINGS`].
    pub(crate) async fn open(addr: SocketAddr) -> io::Result<Conn> {
        let mut first = PREFACE.to_vec();
        settings(&mut first, CLIENT_SETTINGS);
        Self::open_with(addr, &first).await
    }

    /// Connects and writes `first` in one write (it should start with the
    /// preface).
    pub(crate) async fn open_with(addr: SocketAddr, first: &[u8]) -> io::Result<Conn> {
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        let (r, mut w) = s.into_split();
        w.write_all(first).await?;
        let seen = Arc::new(Mutex::new(Seen::default()));
        let reader = tokio::spawn(read_frames(r, seen.clone()));
        Ok(Conn { w, seen, reader })
    }

    /// Writes bytes (frames).
    pub(crate) async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.w.write_all(bytes).await
    }

    /// What the reader saw so far.
    pub(crate) fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn closed(&self) -> bool {
        self.seen().closed()
    }

    /// Waits until `done` holds of what was seen, or `timeout` passes;
    /// returns whether it held.
    pub(crate) async fn wait_for(&self, timeout: Duration, done: impl Fn(&Seen) -> bool) -> bool {
        let until = Instant::now() + timeout;
        loop {
            if done(&self.seen()) {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until the server sent GOAWAY or closed the connection.
    pub(crate) async fn wait_closed(&self, timeout: Duration) -> bool {
        self.wait_for(timeout, Seen::closed).await
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn read_frames(mut r: OwnedReadHalf, seen: Arc<Mutex<Seen>>) {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    // The header block being assembled (HEADERS then CONTINUATION).
    let mut block: Option<(u32, Vec<u8>)> = None;
    loop {
        let n = match r.read(&mut chunk).await {
            Ok(0) => {
                mark_end(&seen, End::Eof);
                return;
            }
            Ok(n) => n,
            Err(e) => {
                mark_end(&seen, End::Error(e.kind()));
                return;
            }
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut at = 0;
        let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
        while buf.len() - at >= 9 {
            let h = &buf[at..at + 9];
            let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
            if buf.len() - at < 9 + len {
                break;
            }
            let (kind, flags) = (h[3], h[4]);
            let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            let p = &buf[at + 9..at + 9 + len];
            s.frames += 1;
            match kind {
                DATA if flags & END_STREAM != 0 => {
                    s.ended.insert(stream);
                }
                HEADERS => {
                    let mut frag = p;
                    if flags & 0x8 != 0 && !frag.is_empty() {
                        // PADDED
                        let pad = usize::from(frag[0]);
                        frag = &frag[1..frag.len().saturating_sub(pad).max(1)];
                    }
                    if flags & 0x20 != 0 && frag.len() >= 5 {
                        // PRIORITY
                        frag = &frag[5..];
                    }
                    if flags & END_STREAM != 0 {
                        s.ended.insert(stream);
                    }
                    if flags & END_HEADERS != 0 {
                        s.status.entry(stream).or_insert_with(|| status_of(frag));
                    } else {
                        block = Some((stream, frag.to_vec()));
                    }
                }
                CONTINUATION => {
                    if let Some((id, mut b)) = block.take() {
                        b.extend_from_slice(p);
                        if flags & END_HEADERS != 0 {
                            s.status.entry(id).or_insert_with(|| status_of(&b));
                        } else {
                            block = Some((id, b));
                        }
                    }
                }
                RST_STREAM => {
                    s.resets += 1;
                    s.ended.insert(stream);
                }
                GOAWAY if p.len() >= 8 => {
                    s.goaway = Some(GoAway {
                        last_stream: u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff,
                        code: u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
                        debug: String::from_utf8_lossy(&p[8..]).into_owned(),
                    });
                }
                _ => {}
            }
            at += 9 + len;
        }
        drop(s);
        buf.drain(..at);
    }
}

fn mark_end(seen: &Mutex<Seen>, end: End) {
    let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
    s.end = Some(end);
}

/// The `:status` of an answer's header block, 0 if this small decoder cannot
/// tell. It needs no dynamic table: the client advertises a table of size 0.
fn status_of(block: &[u8]) -> u16 {
    const STATIC: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
    let mut i = 0;
    while i < block.len() {
        let b = block[i];
        if b & 0x80 != 0 {
            let Some((idx, n)) = read_int(&block[i..], 7) else {
                return 0;
            };
            if (8..=14).contains(&idx) {
                return STATIC[idx - 8];
            }
            i += n;
        } else if b & 0xe0 == 0x20 {
            // Dynamic table size update.
            let Some((_, n)) = read_int(&block[i..], 5) else {
                return 0;
            };
            i += n;
        } else {
            let prefix = if b & 0xc0 == 0x40 { 6 } else { 4 };
            let Some((idx, n)) = read_int(&block[i..], prefix) else {
                return 0;
            };
            i += n;
            if idx == 0 {
                let Some((_, n)) = read_str(&block[i..]) else {
                    return 0;
                };
                i += n;
            }
            let Some((value, n)) = read_str(&block[i..]) else {
                return 0;
            };
            i += n;
            if idx == 8 {
                return std::str::from_utf8(&value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
            }
        }
    }
    0
}

fn read_int(b: &[u8], prefix: u8) -> Option<(usize, usize)> {
    let max = (1usize << prefix) - 1;
    let mut v = usize::from(*b.first()?) & max;
    if v < max {
        return Some((v, 1));
    }
    let mut shift = 0;
    for (i, &o) in b.iter().enumerate().skip(1) {
        v += usize::from(o & 0x7f) << shift;
        if o & 0x80 == 0 {
            return Some((v, i + 1));
        }
        shift += 7;
        if shift > 28 {
            return None;
        }
    }
    None
}

/// A string literal; Huffman-coded ones are decoded only if they hold digits
/// (which is all a `:status` holds).
fn read_str(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let huffman = *b.first()? & 0x80 != 0;
    let (len, n) = read_int(b, 7)?;
    let raw = b.get(n..n + len)?;
    let v = if huffman {
        huffman_digits(raw).unwrap_or_default()
    } else {
        raw.to_vec()
    };
    Some((v, n + len))
}

/// Decodes a Huffman-coded string of digits: '0'–'2' have 5-bit codes
/// 00000–00010, '3'–'9' 6-bit codes 011001–011111 (RFC 7541 Appendix B).
fn huffman_digits(raw: &[u8]) -> Option<Vec<u8>> {
    let bits = raw.len() * 8;
    let bit = |i: usize| (raw[i / 8] >> (7 - i % 8)) & 1;
    let take = |at: usize, n: usize| (at..at + n).fold(0u8, |acc, i| (acc << 1) | bit(i));
    let mut out = Vec::new();
    let mut at = 0;
    while at < bits {
        let left = bits - at;
        if left < 8 && (at..bits).all(|i| bit(i) == 1) {
            break; // EOS padding
        }
        if left >= 5 && take(at, 5) <= 2 {
            out.push(b'0' + take(at, 5));
            at += 5;
        } else if left >= 6 && (0x19..=0x1f).contains(&take(at, 6)) {
            out.push(b'3' + take(at, 6) - 0x19);
            at += 6;
        } else {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip() {
        for v in [0, 1, 30, 31, 62, 63, 127, 128, 1337, 16_000, 1 << 20] {
            for prefix in [4u8, 5, 6, 7] {
                let mut b = Vec::new();
                hpack_int(&mut b, prefix, 0, v);
                assert_eq!(read_int(&b, prefix), Some((v, b.len())), "{v} /{prefix}");
            }
        }
        // RFC 7541 C.1.2: 1337 with a 5-bit prefix.
        let mut b = Vec::new();
        hpack_int(&mut b, 5, 0, 1337);
        assert_eq!(b, [31, 154, 10]);
    }

    #[test]
    fn statuses_are_found() {
        assert_eq!(status_of(&[0x88]), 200);
        assert_eq!(status_of(&[0x20, 0x8d]), 404);
        // `:status 431`, literal with indexing, name index 8, raw and Huffman.
        assert_eq!(status_of(&[0x48, 3, b'4', b'3', b'1']), 431);
        // Huffman: '4' 011010, '3' 011001, '1' 00001, then seven padding 1s.
        let h = [0b0110_1001, 0b1001_0000, 0b1111_1111];
        assert_eq!(huffman_digits(&h).as_deref(), Some(&b"431"[..]));
        assert_eq!(huffman_digits(&h[..2]), None);
        assert_eq!(status_of(&[0x48, 0x83, h[0], h[1], h[2]]), 431);
    }
}
