//! A2A JSON-RPC: the envelope and batch handling of `POST /a2a`
//! ([`taskwire_a2a::jsonrpc::serve`]) and the ProtoJSON decoders of the params
//! ([`taskwire_a2a::protojson`]).

use std::fmt::Debug;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use taskwire_a2a::{convert, jsonrpc, pb, protojson};

use crate::env::{self, caller, with_env, Env};

/// Largest answer read back from a stream (the rest is not looked at).
const MAX_READ: usize = 256 * 1024;

/// The codes an A2A JSON-RPC error may carry: JSON-RPC's own and A2A's -32001 …
/// -32099 server range. -32603 (internal error) is left out on purpose: nothing a
/// client sends may make the server fail internally.
fn allowed_code(code: i64) -> bool {
    matches!(code, -32700 | -32600 | -32601 | -32602) || (-32099..=-32001).contains(&code)
}

/// Checks one JSON-RPC response object of `POST /a2a`.
fn check_response(v: &Value) {
    let o = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"));
    assert_eq!(o.get("jsonrpc"), Some(&Value::from("2.0")), "{v}");
    assert!(
        matches!(
            o.get("id"),
            Some(Value::String(_) | Value::Number(_) | Value::Null)
        ),
        "bad id: {v}"
    );
    match (o.get("result"), o.get("error")) {
        (Some(_), None) => {}
        (None, Some(e)) => {
            let code = e.get("code").and_then(Value::as_i64);
            assert!(code.is_some_and(allowed_code), "error code: {v}");
            assert!(e.get("message").is_some_and(Value::is_string), "{v}");
        }
        _ => panic!("neither exactly a result nor an error: {v}"),
    }
}

/// Checks a whole answer of `POST /a2a`, returning its JSON when it is JSON.
fn check_answer(env: &Env, resp: axum::response::Response) -> Option<Value> {
    let status = resp.status();
    let media = env::media_type(resp.headers());
    let (body, _) = env.ready_body(resp.into_body(), MAX_READ);
    match status {
        StatusCode::NO_CONTENT => {
            assert!(body.is_empty(), "204 with a body");
            return None;
        }
        StatusCode::OK | StatusCode::UNSUPPORTED_MEDIA_TYPE => {}
        other => panic!("unexpected status {other}"),
    }
    match media.as_deref() {
        Some("application/json") => {
            let v: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                panic!(
                    "answer is not JSON ({e}): {}",
                    String::from_utf8_lossy(&body)
                )
            });
            match &v {
                Value::Array(items) => {
                    assert!(!items.is_empty(), "empty batch answer");
                    items.iter().for_each(check_response);
                }
                one => check_response(one),
            }
            Some(v)
        }
        Some("text/event-stream") => {
            assert_eq!(status, StatusCode::OK);
            for data in env::sse_data(&body) {
                let v: Value = serde_json::from_str(&data)
                    .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {data}"));
                check_response(&v);
                if let Some(r) = v.get("result") {
                    let _: pb::StreamResponse = protojson::from_value(r.clone())
                        .unwrap_or_else(|e| panic!("SSE result is not a StreamResponse: {e:?}"));
                }
            }
            None
        }
        other => panic!("unexpected media type {other:?}"),
    }
}

/// The headers of a bare-body input: what a conforming client sends.
fn default_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert("a2a-version", HeaderValue::from_static("1.0"));
    h
}

/// One input of `a2a_jsonrpc`: `POST /a2a` with the input as the body (or head
/// and body), through [`jsonrpc::serve`]. Asserts that every answer is a
/// well-formed JSON-RPC response (or batch of them, or an SSE stream of them) with
/// no internal error, and that a single request answers exactly as the same
/// request alone in a batch does (the single-request fast path and the general
/// path agree).
pub fn jsonrpc(data: &[u8]) {
    with_env(|env| {
        let data = env.substitute(data).into_owned();
        let (head, body) = env::split(&data);
        let (headers, query) = match head {
            Some(h) => (h.headers, h.query),
            None => (default_headers(), None),
        };
        let caller = caller();
        let single = env.block_on(jsonrpc::serve(
            &env.a2a,
            &caller,
            query.as_deref(),
            &headers,
            Bytes::copy_from_slice(body),
        ));
        env.settle();
        let single = check_answer(env, single);
        // The same request alone in a batch takes the general path.
        let Ok(Value::Object(req)) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        let method = req.get("method").and_then(Value::as_str).unwrap_or("");
        if !req.contains_key("id")
            || method == jsonrpc::methods::SEND_STREAMING_MESSAGE
            || method == jsonrpc::methods::SUBSCRIBE_TO_TASK
        {
            return;
        }
        let Some(single) = single else {
            panic!("a request with an id got no JSON answer");
        };
        let mut batch_body = b"[".to_vec();
        batch_body.extend_from_slice(body);
        batch_body.push(b']');
        let batch = env.block_on(jsonrpc::serve(
            &env.a2a,
            &caller,
            query.as_deref(),
            &headers,
            Bytes::from(batch_body),
        ));
        env.settle();
        let Some(batch) = check_answer(env, batch) else {
            panic!("a batch of one request with an id got no JSON answer");
        };
        let one = match &batch {
            Value::Array(items) if items.len() == 1 => &items[0],
            // A content-type or version refusal answers the whole body at once.
            other => other,
        };
        assert_eq!(
            single.get("id"),
            one.get("id"),
            "single {single} vs batch {one}"
        );
        match (single.get("error"), one.get("error")) {
            (None, None) => {}
            (Some(a), Some(b)) => assert_eq!(a, b, "single and batch errors differ"),
            _ => panic!("single and batch disagree:\n single {single}\n batch {one}"),
        }
    })
}

/// Decodes `text` as `T` both ways the JSON-RPC binding does, and checks that the
/// two agree and that the result survives encode → decode unchanged.
fn decode_both<T>(text: &str, value: Option<&Value>) -> Option<T>
where
    T: protojson::ProtoMessage + Serialize + PartialEq + Debug,
{
    let straight: Option<T> = protojson::from_str_without_nulls(text);
    let general = value.map(|v| protojson::from_value::<T>(v.clone()));
    if let Some(t) = &straight {
        match &general {
            Some(Ok(g)) => assert_eq!(t, g, "straight and general decoding differ"),
            Some(Err(e)) => panic!("the straight path accepts what from_value refuses: {e:?}"),
            // Finding F1 (docs/fuzzing.md): a number beyond f64 or a lone
            // surrogate escape in a member the message ignores is skipped by the
            // straight path but makes the text unreadable as a `Value`. Known;
            // anything else is not.
            None if skipped_unread(text) => {}
            None => panic!("the straight path accepts text that is not JSON"),
        }
    }
    let decoded = straight.or_else(|| general.and_then(Result::ok));
    if let Some(t) = &decoded {
        round_trip(t);
    }
    decoded
}

/// The text fails to read as a `Value` only for what serde_json skips unread when
/// it ignores a member: a number too large for an f64, or a `\u` escape of a
/// lone UTF-16 surrogate (finding F1).
fn skipped_unread(text: &str) -> bool {
    serde_json::from_str::<Value>(text).err().is_some_and(|e| {
        let m = e.to_string();
        m.starts_with("number out of range")
            || m.starts_with("lone leading surrogate in hex escape")
            || m.starts_with("unexpected end of hex escape")
    })
}

/// encode → decode gives the message back.
fn round_trip<T>(t: &T)
where
    T: protojson::ProtoMessage + Serialize + PartialEq + Debug,
{
    let text = protojson::to_string(t).unwrap_or_else(|e| panic!("encoding {t:?}: {e:?}"));
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the encoding is not JSON ({e}): {text}"));
    let back: T = protojson::from_value(v)
        .unwrap_or_else(|e| panic!("own encoding does not decode ({e:?}): {text}"));
    assert_eq!(&back, t, "encode → decode changed the message: {text}");
}

/// One input of `a2a_params`: the input as the ProtoJSON params of every A2A
/// request message (and of the messages a client decodes from answers). Asserts
/// that [`protojson::from_str_without_nulls`] (the fast path) gives what
/// [`protojson::from_value`] gives whenever it gives anything, that every decoded
/// message survives encode → decode, and that SendMessage's message converts to a
/// core message and back unchanged.
pub fn params(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let value: Option<Value> = serde_json::from_str(text).ok();
    let value = value.as_ref();
    if let Some(req) = decode_both::<pb::SendMessageRequest>(text, value) {
        if let Some(m) = req.message {
            if let Ok(core) = convert::message_from_pb(m) {
                let again = convert::message_from_pb(convert::message_to_pb(&core, "", ""))
                    .unwrap_or_else(|e| panic!("a converted message does not convert back: {e:?}"));
                assert_eq!(again, core, "core → A2A → core changed the message");
            }
        }
    }
    if let Some(req) = decode_both::<pb::GetTaskRequest>(text, value) {
        let _ = convert::history_length(req.history_length, "params.historyLength");
    }
    if let Some(req) = decode_both::<pb::ListTasksRequest>(text, value) {
        let _ = convert::history_length(req.history_length, "params.historyLength");
    }
    decode_both::<pb::CancelTaskRequest>(text, value);
    decode_both::<pb::SubscribeToTaskRequest>(text, value);
    decode_both::<pb::TaskPushNotificationConfig>(text, value);
    decode_both::<pb::GetTaskPushNotificationConfigRequest>(text, value);
    decode_both::<pb::ListTaskPushNotificationConfigsRequest>(text, value);
    decode_both::<pb::DeleteTaskPushNotificationConfigRequest>(text, value);
    decode_both::<pb::GetExtendedAgentCardRequest>(text, value);
    // What a client decodes from answers.
    decode_both::<pb::StreamResponse>(text, value);
    decode_both::<pb::Task>(text, value);
}
