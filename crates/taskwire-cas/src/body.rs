//! Request bodies, read by the handlers themselves within
//! `CasConfig::max_body_bytes` (no `Json`/`Bytes` extractor, whose rejections are
//! axum's plain text, and no per-route body-limit layer): every refusal is the CAS
//! error body.

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap};
use serde::de::DeserializeOwned;

use crate::error::CasError;

/// The whole body: over `limit` bytes (a declared length is refused before reading;
/// the rest is read first, see [`taskwire_wire::body`]) is
/// [`CasError::BodyTooLarge`]; a body that fails while being read is
/// [`CasError::BodyUnreadable`].
pub(crate) async fn read(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, CasError> {
    match taskwire_wire::body::read_body(headers, body, limit).await {
        Ok(b) => Ok(b),
        Err(taskwire_wire::WireError::BodyTooLarge { .. }) => Err(CasError::BodyTooLarge { limit }),
        Err(e) => {
            tracing::debug!(error = %e, "cas: request body could not be read");
            Err(CasError::BodyUnreadable)
        }
    }
}

/// Refuses a `Content-Type` that is not JSON (`application/json` or a `+json` type,
/// any parameters and case), a missing one included.
pub(crate) fn require_json(headers: &HeaderMap) -> Result<(), CasError> {
    let ct = headers.get(header::CONTENT_TYPE);
    let base = ct
        .and_then(|v| v.to_str().ok())
        .map(|ct| ct.split(';').next().unwrap_or("").trim());
    let json = base.is_some_and(|b| {
        b.eq_ignore_ascii_case("application/json")
            || b.len()
                .checked_sub(5)
                .and_then(|i| b.get(i..))
                .is_some_and(|end| end.eq_ignore_ascii_case("+json"))
    });
    if json {
        return Ok(());
    }
    let found = match (ct, base) {
        (None, _) => "none".to_string(),
        (Some(_), Some(b)) if !b.is_empty() => format!("{b:?}"),
        (Some(_), _) => "an unreadable content type".to_string(),
    };
    Err(CasError::UnsupportedMediaType { found })
}

/// A JSON body: the content type checked first (before reading), then the body read
/// within `limit` and parsed.
pub(crate) async fn json<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<T, CasError> {
    require_json(headers)?;
    let bytes = read(headers, body, limit).await?;
    parse(&bytes)
}

/// Parses a JSON body; the error names the path of a wrong field.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CasError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let v: T = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        // `.` is the whole document, `?` a place serde could not name (a syntax error).
        let field = if path == "." || path == "?" {
            "body".to_string()
        } else {
            format!("body.{path}")
        };
        CasError::invalid(field, e.into_inner().to_string())
    })?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn limits_and_errors_are_told_apart() {
        assert_eq!(
            read(&HeaderMap::new(), Body::from("abc"), 3).await.ok(),
            Some(Bytes::from_static(b"abc"))
        );
        assert!(matches!(
            read(&HeaderMap::new(), Body::from("abcd"), 3).await,
            Err(CasError::BodyTooLarge { limit: 3 })
        ));
        let chunks = futures::stream::iter([
            Ok::<_, std::io::Error>(Bytes::from_static(b"ab")),
            Ok(Bytes::from_static(b"cd")),
        ]);
        assert!(matches!(
            read(&HeaderMap::new(), Body::from_stream(chunks), 3).await,
            Err(CasError::BodyTooLarge { limit: 3 })
        ));
        let broken = futures::stream::iter([
            Ok(Bytes::from_static(b"ab")),
            Err(std::io::Error::other("stalled")),
        ]);
        assert!(matches!(
            read(&HeaderMap::new(), Body::from_stream(broken), 100).await,
            Err(CasError::BodyUnreadable)
        ));
    }

    #[test]
    fn json_content_types() {
        let h = |ct: Option<&str>| {
            let mut h = HeaderMap::new();
            if let Some(ct) = ct {
                h.insert(header::CONTENT_TYPE, ct.parse().unwrap());
            }
            h
        };
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/merge-patch+json",
        ] {
            assert!(require_json(&h(Some(ok))).is_ok(), "{ok}");
        }
        for bad in [
            None,
            Some("text/plain"),
            Some(""),
            Some("application/jsonx"),
        ] {
            assert!(
                matches!(
                    require_json(&h(bad)),
                    Err(CasError::UnsupportedMediaType { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn parse_errors_name_the_field() {
        let e = parse::<crate::wire::DecisionBody>(br#"{"decision": "maybe"}"#).unwrap_err();
        assert!(e.to_string().contains("body.decision"), "{e}");
        let e = parse::<serde_json::Value>(b"{not json").unwrap_err();
        assert!(e.to_string().starts_with("invalid body:"), "{e}");
    }
}
