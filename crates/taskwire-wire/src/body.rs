//! Reading an HTTP request body within a limit, the same at the edge of every
//! adapter (A2A JSON-RPC and REST, MCP, AG-UI, CAS), each turning the error
//! into its protocol's own answer.
//!
//! A body over the limit is refused; a declared length over it is refused
//! before reading. Before the refusal is answered, the rest of the body is
//! read and dropped (at most [`drain_bound`] bytes: twice the limit, and at
//! least [`DRAIN_MIN_BYTES`]; for at most [`DRAIN_MAX_TIME`]): an HTTP/1.1
//! server that answers and closes with the client's bytes unread resets the
//! connection, and a reset can discard the answer before the client reads it,
//! so the client would see a broken connection instead of the refusal. A
//! declared length over that bound is refused at once, and so is one whose
//! request asked `Expect: 100-continue` (reading it would tell the client to
//! send it; unread, the client is told to stop).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::Body;
use http_body_util::BodyExt;

use crate::error::error_chain;
use crate::WireError;

/// The least of [`drain_bound`], whatever the limit.
pub const DRAIN_MIN_BYTES: u64 = 1 << 20;

/// Most bytes of a body refused for `limit` read (and dropped) before the
/// refusal: twice the limit, at least [`DRAIN_MIN_BYTES`].
pub fn drain_bound(limit: usize) -> u64 {
    u64::try_from(limit)
        .unwrap_or(u64::MAX)
        .saturating_mul(2)
        .max(DRAIN_MIN_BYTES)
}

/// Longest time spent reading a refused body before the refusal.
pub const DRAIN_MAX_TIME: Duration = Duration::from_secs(1);

/// The whole body of a request with `headers`: [`WireError::BodyTooLarge`]
/// over `limit` bytes,
/// [`WireError::BodyUnreadable`] when it fails while being read (the
/// connection broke, or a layer in front failed it). A length limit a layer
/// in front applied (`http_body_util::LengthLimitError`) is a
/// [`WireError::BodyTooLarge`] too.
pub async fn read_body<B>(
    headers: &http::HeaderMap,
    mut body: B,
    limit: usize,
) -> Result<Bytes, WireError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let too_large = WireError::BodyTooLarge { limit };
    let declared = body.size_hint().lower();
    if declared > u64::try_from(limit).unwrap_or(u64::MAX) {
        if declared <= drain_bound(limit) && !expects_continue(headers) {
            drain(&mut body, limit).await;
        }
        return Err(too_large);
    }
    // Most bodies are one frame: kept as it is; more are joined.
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut len = 0usize;
    loop {
        match body.frame().await {
            None => break,
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                len = len.saturating_add(data.len());
                if len > limit {
                    drain(&mut body, limit).await;
                    return Err(too_large);
                }
                match (&mut first, &mut joined) {
                    (_, Some(j)) => j.extend_from_slice(&data),
                    (None, None) => first = Some(data),
                    (Some(f), None) => {
                        let mut j = BytesMut::with_capacity(f.len() + data.len());
                        j.extend_from_slice(f);
                        j.extend_from_slice(&data);
                        joined = Some(j);
                    }
                }
            }
            Some(Err(e)) if is_length_limit(&e) => return Err(too_large),
            Some(Err(e)) => return Err(WireError::BodyUnreadable(error_chain(&e))),
        }
    }
    Ok(match (joined, first) {
        (Some(j), _) => j.freeze(),
        (None, Some(f)) => f,
        (None, None) => Bytes::new(),
    })
}

/// Whether the request asked `Expect: 100-continue`: its client sends the
/// body only once the server reads it.
fn expects_continue(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// Reads the rest of a refused body and drops it, within the drain bounds.
async fn drain<B>(body: &mut B, limit: usize)
where
    B: Body<Data = Bytes> + Unpin,
{
    let mut left = drain_bound(limit);
    let read = async {
        while let Some(Ok(frame)) = body.frame().await {
            let n = frame.data_ref().map_or(0, |d| d.len() as u64);
            if n >= left {
                return;
            }
            left -= n;
        }
    };
    let _ = tokio::time::timeout(DRAIN_MAX_TIME, read).await;
}

/// True if the error, or any error it wraps, is a body length limit.
fn is_length_limit(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(e) = cur {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cur = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn none() -> http::HeaderMap {
        http::HeaderMap::new()
    }

    /// A body of `chunks` frames of `size` bytes (no declared length) that
    /// counts the frames read.
    fn chunks(
        chunks: usize,
        size: usize,
        read: Arc<AtomicUsize>,
    ) -> impl Body<Data = Bytes, Error = std::io::Error> + Unpin {
        let frames = (0..chunks).map(move |_| {
            read.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(http_body::Frame::data(Bytes::from(vec![b'x'; size])))
        });
        http_body_util::StreamBody::new(futures::stream::iter(frames))
    }

    #[tokio::test]
    async fn a_body_within_the_limit_is_read_whole() {
        let read = Arc::new(AtomicUsize::new(0));
        let b = read_body(&none(), chunks(3, 10, read.clone()), 30)
            .await
            .expect("read");
        assert_eq!(b.len(), 30);
        let one = read_body(
            &none(),
            http_body_util::Full::new(Bytes::from_static(b"{}")),
            2,
        )
        .await
        .expect("read");
        assert_eq!(&one[..], b"{}");
        let none = read_body(&none(), http_body_util::Empty::<Bytes>::new(), 0)
            .await
            .expect("read");
        assert!(none.is_empty());
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_refused_after_it_is_read() {
        // Streamed past the limit: refused, and the rest was read first.
        let read = Arc::new(AtomicUsize::new(0));
        let e = read_body(&none(), chunks(10, 10, read.clone()), 25).await;
        assert!(
            matches!(e, Err(WireError::BodyTooLarge { limit: 25 })),
            "{e:?}"
        );
        assert_eq!(read.load(Ordering::SeqCst), 10, "the rest was not read");
        // A declared length over the limit: refused, and read when it fits
        // the drain bound.
        let e = read_body(
            &none(),
            http_body_util::Full::new(Bytes::from(vec![0u8; 100])),
            10,
        )
        .await;
        assert!(
            matches!(e, Err(WireError::BodyTooLarge { limit: 10 })),
            "{e:?}"
        );
        // More than the drain bound: no more than the bound is read.
        let read = Arc::new(AtomicUsize::new(0));
        let big = 64 * 1024;
        let bound = drain_bound(10) as usize;
        assert_eq!(bound, DRAIN_MIN_BYTES as usize);
        let count = (bound / big) * 4;
        let e = read_body(&none(), chunks(count, big, read.clone()), 10).await;
        assert!(matches!(e, Err(WireError::BodyTooLarge { .. })), "{e:?}");
        let n = read.load(Ordering::SeqCst);
        assert!(n <= bound / big + 1, "read {n} frames");
        assert_eq!(drain_bound(4 << 20), 8 << 20);
    }

    #[tokio::test]
    async fn a_body_that_fails_is_unreadable() {
        let frames = futures::stream::iter([Err::<http_body::Frame<Bytes>, _>(
            std::io::Error::other("the connection broke"),
        )]);
        let e = read_body(&none(), http_body_util::StreamBody::new(frames), 10).await;
        assert!(
            matches!(&e, Err(WireError::BodyUnreadable(m)) if m.contains("the connection broke")),
            "{e:?}"
        );
    }
}
