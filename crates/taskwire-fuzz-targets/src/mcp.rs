//! MCP: the JSON-RPC envelope ([`taskwire_mcp::wire::parse`]) and `POST /mcp`, for
//! both revisions the endpoint serves.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use base64::Engine;
use serde_json::{json, Map, Value};
use taskwire_mcp::wire::{self, code, header, meta, method, Incoming};

use crate::env::{self, with_env};

/// Largest answer read back from a stream.
const MAX_READ: usize = 256 * 1024;

/// The message `wire::parse` read, written back as a client would send it.
fn reserialize(m: &Incoming) -> Value {
    match m {
        Incoming::Request { id, method, params } => {
            wire::request(id, method, Value::Object(params.clone()))
        }
        Incoming::Notification { method, params } => {
            json!({"jsonrpc": wire::JSONRPC, "method": method, "params": params})
        }
        Incoming::Response { id, outcome } => match outcome {
            Ok(r) => wire::result(id, r.clone()),
            Err(e) => wire::error_object(id, e.clone()),
        },
    }
}

/// Asserts what [`wire::parse`] promises about one body.
fn check_parse(body: &[u8]) {
    match wire::parse(body) {
        Ok(m) => {
            let again = serde_json::to_vec(&reserialize(&m)).expect("a Value serialises");
            let back = wire::parse(&again)
                .unwrap_or_else(|(_, e)| panic!("a re-serialised message does not parse: {e:?}"));
            assert_eq!(back, m, "parse → serialize → parse changed the message");
        }
        Err((id, e)) => {
            assert!(
                matches!(id, Value::Null | Value::String(_) | Value::Number(_)),
                "error id {id}"
            );
            assert!(
                e.code == code::PARSE_ERROR || e.code == code::INVALID_REQUEST,
                "envelope error code {}",
                e.code
            );
        }
    }
}

/// A header value for `v`, in `=?base64?…?=` form when it is not visible ASCII.
fn header_value(v: &str) -> Option<HeaderValue> {
    let plain = v.bytes().all(|b| (0x20..0x7f).contains(&b)) && v.trim() == v;
    let text = if plain {
        v.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(v)
        )
    };
    HeaderValue::from_str(&text).ok()
}

/// The headers a conforming client sends with `body`: for revision 2026-07-28 (a
/// `_meta` in the params) the version, method and name headers that mirror the
/// body; otherwise the 2025-11-25 session of the environment.
fn derived_headers(body: &[u8], session: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert(
        "accept",
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    let Ok(Value::Object(msg)) = serde_json::from_slice::<Value>(body) else {
        return h;
    };
    let name = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let empty = Map::new();
    let params = msg
        .get("params")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    match params.get("_meta").and_then(Value::as_object) {
        Some(m) => {
            if let Some(v) = m
                .get(meta::PROTOCOL_VERSION)
                .and_then(Value::as_str)
                .and_then(header_value)
            {
                h.insert(header::PROTOCOL_VERSION, v);
            }
            if let Some(v) = header_value(name) {
                h.insert(header::METHOD, v);
            }
            let target = if name == method::TOOLS_CALL {
                params.get("name")
            } else {
                params.get("taskId")
            };
            if let Some(v) = target.and_then(Value::as_str).and_then(header_value) {
                h.insert(header::NAME, v);
            }
        }
        None if name != method::INITIALIZE => {
            if let Some(v) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
                h.insert(header::SESSION_ID, v);
            }
        }
        None => {}
    }
    h
}

/// Checks one JSON-RPC message the server sent.
fn check_message(v: &Value) {
    assert_eq!(v.get("jsonrpc"), Some(&Value::from("2.0")), "{v}");
    if let Some(e) = v.get("error") {
        let code = e.get("code").and_then(Value::as_i64);
        let message = e.get("message").and_then(Value::as_str).unwrap_or("");
        // Nothing a client sends may make the server fail internally; the one
        // -32603 by design is a blocking call's timeout (docs/mcp.md), which every
        // wait here hits at once (the harness waits zero ms and runs no agent).
        assert!(
            code.is_some_and(
                |c| c != code::INTERNAL_ERROR || message.contains("did not finish within")
            ),
            "error code in {v}"
        );
        assert!(e.get("message").is_some_and(Value::is_string), "{v}");
    }
}

/// One input of `mcp_jsonrpc`: [`wire::parse`] of the body (parse → serialize →
/// parse is stable, errors carry a usable id and an envelope code), then
/// `POST /mcp` with the body and either the input's head or the headers a
/// conforming client would send (see `derived_headers`). Every answer is a JSON
/// JSON-RPC message, an SSE stream of them, or an empty 202, never an internal
/// error or a 5xx.
pub fn jsonrpc(data: &[u8]) {
    with_env(|env| {
        let data = env.substitute(data).into_owned();
        let (head, body) = env::split(&data);
        check_parse(body);
        let headers = match head {
            Some(h) => {
                for v in h.headers.values() {
                    if let Ok(s) = v.to_str() {
                        let d = wire::decode_header_value(s);
                        if !s.starts_with("=?base64?") {
                            assert_eq!(d.as_deref(), Some(s), "a plain header value changed");
                        }
                    }
                }
                h.headers
            }
            None => derived_headers(body, env.mcp_session.as_deref()),
        };
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(taskwire_mcp::MCP_PATH)
            .body(Body::from(body.to_vec()))
            .expect("a request");
        *req.headers_mut() = headers;
        let router = env.mcp.clone();
        let resp = env.call(&router, req);
        let status = resp.status();
        assert!(
            !status.is_server_error() || status == StatusCode::SERVICE_UNAVAILABLE,
            "status {status}"
        );
        let media = env::media_type(resp.headers());
        let (body, _) = env.ready_body(resp.into_body(), MAX_READ);
        match media.as_deref() {
            Some("application/json") => {
                let v: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                    panic!(
                        "answer is not JSON ({e}): {}",
                        String::from_utf8_lossy(&body)
                    )
                });
                check_message(&v);
            }
            Some("text/event-stream") => {
                for d in env::sse_data(&body) {
                    if d.is_empty() {
                        continue;
                    }
                    let v: Value = serde_json::from_str(&d)
                        .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {d}"));
                    check_message(&v);
                }
            }
            None => assert!(
                status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT,
                "status {status} without a body type"
            ),
            Some(other) => panic!("unexpected media type {other} ({status})"),
        }
    })
}
