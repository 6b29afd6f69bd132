//! CAS: the create and input bodies of the `/cas` routes and the ContentPart
//! parsing of [`taskwire_vocab::cas`].

use axum::body::Body;
use axum::http::{header, HeaderValue, Method, Request};
use serde_json::Value;
use taskwire_vocab::cas::{self as vocab, ContentPart};

use crate::env::{self, with_env};

/// Largest answer read back (an SSE route stays open).
const MAX_READ: usize = 64 * 1024;

/// What `part_to_cas(part_from_cas(p))` must give for an accepted input part `p`:
/// the part itself, with the media type a text part defaults to, and no empty
/// metadata.
fn expected_back(p: &ContentPart) -> ContentPart {
    let mut e = p.clone();
    if e.text.is_some() && e.mime_type.is_none() {
        e.mime_type = Some("text/plain".into());
    }
    if e.metadata.as_ref().is_some_and(|m| m.is_empty()) {
        e.metadata = None;
    }
    e
}

/// Whether a part's metadata uses a key of taskwire's own (`taskwire.*`), which
/// input must never set (docs/fuzzing.md, finding F6).
fn uses_reserved_keys(p: &ContentPart) -> bool {
    p.metadata
        .as_ref()
        .is_some_and(|m| m.keys().any(|k| k.starts_with(vocab::RESERVED_META_PREFIX)))
}

/// The vocabulary checks of one list of parts.
fn check_parts(parts: &[ContentPart]) {
    let Ok(core) = vocab::parts_from_cas(parts) else {
        return;
    };
    assert_eq!(core.len(), parts.len(), "a part was dropped");
    for (p, c) in parts.iter().zip(&core) {
        assert!(
            !uses_reserved_keys(p),
            "a part with a reserved metadata key was accepted: {p:?}"
        );
        let (back, loss) = vocab::part_to_cas(c);
        assert_eq!(
            back,
            expected_back(p),
            "CAS → core → CAS changed the part (loss {loss:?})"
        );
        // Only a file reference without a URL scheme or a size reports a loss.
        let exact = p.text.is_some()
            || (p.file.as_deref().is_some_and(|f| f.contains("://")) && p.size_bytes.is_some());
        assert_eq!(loss.is_none(), exact, "loss {loss:?} for {p:?}");
    }
}

/// The vocabulary side of one body: the body as an input object, as a list of
/// parts, and as one part.
fn vocabulary(body: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    if let Some(m) = v.get("message") {
        if let Ok(parts) = serde_json::from_value::<Vec<ContentPart>>(m.clone()) {
            check_parts(&parts);
        }
    }
    if let Ok(parts) = serde_json::from_value::<Vec<ContentPart>>(v.clone()) {
        check_parts(&parts);
    }
    if let Ok(p) = serde_json::from_value::<ContentPart>(v) {
        if let Ok(core) = vocab::part_from_cas(0, &p) {
            // A ContentPart's JSON form survives JSON → part → JSON.
            let json = serde_json::to_value(&p).expect("a part encodes");
            let again: ContentPart = serde_json::from_value(json).expect("own JSON decodes");
            assert_eq!(again, p, "JSON → part → JSON changed the part");
            let _ = vocab::part_to_cas(&core);
        }
    }
}

/// One input of `cas_input`: the vocabulary checks of the body (an accepted part
/// converts to a core part and back unchanged, except for the losses the
/// vocabulary names), then the request: a bare body is `POST /cas/tasks` as JSON;
/// a head picks the method, path (`$TASK` names a real task, e.g.
/// `@POST /cas/tasks/$TASK/input`) and headers. No answer is a 5xx, and every
/// JSON error is CAS's error body `{"error": {"code", "message"}}`.
pub fn input(data: &[u8]) {
    with_env(|env| {
        let data = env.substitute(data).into_owned();
        let (head, body) = env::split(&data);
        vocabulary(body);
        let (method, path, headers) = match head {
            Some(h) => (
                h.method.unwrap_or(Method::POST),
                h.path.unwrap_or_else(|| taskwire_cas::paths::TASKS.into()),
                h.headers,
            ),
            None => {
                let mut h = axum::http::HeaderMap::new();
                h.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                (Method::POST, taskwire_cas::paths::TASKS.to_string(), h)
            }
        };
        let Ok(mut req) = Request::builder()
            .method(method)
            .uri(path.as_str())
            .body(Body::from(body.to_vec()))
        else {
            return;
        };
        *req.headers_mut() = headers;
        let router = env.cas.clone();
        let resp = env.call(&router, req);
        let status = resp.status();
        assert!(!status.is_server_error(), "status {status}");
        let media = env::media_type(resp.headers());
        let (body, ended) = env.ready_body(resp.into_body(), MAX_READ);
        if media.as_deref() == Some("application/json") && ended {
            let v: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                panic!(
                    "answer is not JSON ({e}): {}",
                    String::from_utf8_lossy(&body)
                )
            });
            if status.is_client_error() {
                let e = v.get("error");
                assert!(
                    e.and_then(|e| e.get("code")).is_some_and(Value::is_string)
                        && e.and_then(|e| e.get("message"))
                            .is_some_and(Value::is_string),
                    "not a CAS error body ({status}): {v}"
                );
            }
        }
    })
}
