//! Reading a request body within the adapter's own limit (`A2aConfig::max_body_bytes`),
//! without axum's `Bytes` extractor (whose rejections are plain text) and without a
//! per-route `DefaultBodyLimit` layer.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use taskwire_vocab::a2a::A2aErrorKind;
use taskwire_wire::WireError;

use crate::error::A2aError;

/// The whole body, or the error to answer with and its HTTP status: 413 when the
/// body is over `limit` bytes (refused before reading when its length is declared;
/// the rest is read first, see [`taskwire_wire::body`]), 400 when it cannot be
/// read (the connection broke, or a layer in front failed it, e.g. for not making
/// progress). Both are JSON-RPC Invalid Request (-32600).
pub(crate) async fn read(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, (StatusCode, A2aError)> {
    match taskwire_wire::body::read_body(headers, body, limit).await {
        Ok(b) => Ok(b),
        Err(WireError::BodyTooLarge { .. }) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            A2aError::new(
                A2aErrorKind::InvalidRequest,
                format!("the request body exceeds the limit of {limit} bytes"),
            ),
        )),
        Err(e) => {
            tracing::debug!(error = %e, "a2a: request body could not be read");
            Err((
                StatusCode::BAD_REQUEST,
                A2aError::new(
                    A2aErrorKind::InvalidRequest,
                    "the request body could not be read",
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn limits_and_errors_are_told_apart() {
        let ok = read(&HeaderMap::new(), Body::from("abc"), 3)
            .await
            .map_err(|(s, _)| s);
        assert_eq!(ok, Ok(Bytes::from_static(b"abc")));
        // A declared length over the limit.
        let (st, e) = read(&HeaderMap::new(), Body::from("abcd"), 3)
            .await
            .unwrap_err();
        assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(e.kind(), A2aErrorKind::InvalidRequest);
        assert!(e.message().contains("3 bytes"), "{}", e.message());
        // No declared length: found while reading.
        let chunks = futures::stream::iter([
            Ok::<_, std::io::Error>(Bytes::from_static(b"ab")),
            Ok(Bytes::from_static(b"cd")),
        ]);
        let (st, _) = read(&HeaderMap::new(), Body::from_stream(chunks), 3)
            .await
            .unwrap_err();
        assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE);
        // A body that fails.
        let broken = futures::stream::iter([
            Ok(Bytes::from_static(b"ab")),
            Err(std::io::Error::other("stalled")),
        ]);
        let (st, e) = read(&HeaderMap::new(), Body::from_stream(broken), 100)
            .await
            .unwrap_err();
        assert_eq!(st, StatusCode::BAD_REQUEST);
        assert_eq!(e.kind(), A2aErrorKind::InvalidRequest);
        // A limit applied in front (nested inside the body's error) is still a limit.
        let inner = http_body_util::Limited::new(
            Body::from_stream(futures::stream::iter([Ok::<_, std::io::Error>(
                Bytes::from_static(b"abcdef"),
            )])),
            2,
        );
        let (st, _) = read(&HeaderMap::new(), Body::new(inner), 100)
            .await
            .unwrap_err();
        assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE);
    }
}
