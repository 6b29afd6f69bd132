//! A minimal HTTP/1.1 client over one keep-alive TCP connection, and a reader
//! that tells how (and whether) the server ended a connection.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

/// An HTTP/1.1 connection whose answers are read as they come.
pub(crate) struct H1 {
    pub(crate) s: TcpStream,
    buf: Vec<u8>,
}

impl H1 {
    pub(crate) async fn connect(addr: SocketAddr) -> io::Result<H1> {
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        Ok(H1 { s, buf: Vec::new() })
    }

    /// Writes raw bytes.
    pub(crate) async fn send(&mut self, raw: &[u8]) -> io::Result<()> {
        self.s.write_all(raw).await
    }

    /// `GET path`, keep-alive, and its answer.
    pub(crate) async fn get(&mut self, path: &str) -> io::Result<Answer> {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await?;
        self.answer().await
    }

    /// Reads one answer (a body framed by Content-Length or chunked).
    pub(crate) async fn answer(&mut self) -> io::Result<Answer> {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            self.fill().await?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        self.buf.drain(..head_end);
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(format!("no status line: {head:?}")))?;
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_ascii_lowercase())
            })
        };
        let body = if let Some(len) = header("content-length") {
            let len: usize = len.parse().map_err(|_| bad(format!("length {len}")))?;
            while self.buf.len() < len {
                self.fill().await?;
            }
            self.buf.drain(..len).collect()
        } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            let mut body = Vec::new();
            loop {
                let line_end = loop {
                    if let Some(i) = find(&self.buf, b"\r\n") {
                        break i;
                    }
                    self.fill().await?;
                };
                let size_line = String::from_utf8_lossy(&self.buf[..line_end]).into_owned();
                let size =
                    usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
                        .map_err(|_| bad(format!("chunk size {size_line:?}")))?;
                while self.buf.len() < line_end + 2 + size + 2 {
                    self.fill().await?;
                }
                body.extend_from_slice(&self.buf[line_end + 2..line_end + 2 + size]);
                self.buf.drain(..line_end + 2 + size + 2);
                if size == 0 {
                    break body;
                }
            }
        } else {
            Vec::new()
        };
        Ok(Answer { status, body })
    }

    async fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.s.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// How a connection the test reads to its end ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closure {
    /// The server closed it (FIN).
    Eof,
    /// The server reset it (or another read error).
    Reset,
    /// Still open when the test stopped waiting.
    Open,
}

impl Closure {
    pub(crate) fn closed(self) -> bool {
        self != Closure::Open
    }
}

/// What reading a connection to its end found.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Drained {
    pub(crate) closure: Closure,
    /// Bytes read before the end.
    pub(crate) bytes: usize,
    /// The first bytes, if they were an HTTP/1.1 status line: its status.
    pub(crate) status: Option<u16>,
    /// When the end came, after the start of the wait.
    pub(crate) after: Duration,
}

/// Reads (and discards) everything until the server ends the connection or
/// `timeout` passes.
pub(crate) async fn drain<R: AsyncRead + Unpin>(r: &mut R, timeout: Duration) -> Drained {
    let start = Instant::now();
    let until = tokio::time::Instant::now() + timeout;
    let mut chunk = vec![0u8; 64 * 1024];
    let mut bytes = 0;
    let mut first = Vec::new();
    let closure = loop {
        match tokio::time::timeout_at(until, r.read(&mut chunk)).await {
            Err(_) => break Closure::Open,
            Ok(Ok(0)) => break Closure::Eof,
            Ok(Ok(n)) => {
                if first.len() < 16 {
                    first.extend_from_slice(&chunk[..n.min(16)]);
                }
                bytes += n;
            }
            Ok(Err(_)) => break Closure::Reset,
        }
    };
    let status = std::str::from_utf8(&first)
        .ok()
        .filter(|s| s.starts_with("HTTP/1.1 "))
        .and_then(|s| s.get(9..12))
        .and_then(|s| s.parse().ok());
    Drained {
        closure,
        bytes,
        status,
        after: start.elapsed(),
    }
}
