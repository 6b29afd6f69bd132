//! AG-UI: protobuf framing (the server's [`taskwire_agui::proto`] and the client's
//! [`taskwire_client::agui::decode_proto_body`]) and `POST /agui`.

use axum::body::Body;
use axum::http::{header, HeaderValue, Method, Request};
use bytes::Bytes;
use prost::Message as _;
use serde_json::Value;
use taskwire_agui::{proto, sse, verify::Verifier, wire};
use taskwire_client::agui as client;

use crate::env::{self, with_env};

/// Largest answer read back from a run stream.
const MAX_READ: usize = 256 * 1024;

/// `a` and `b` encode to the same bytes.
fn same_encoding(a: &impl prost::Message, b: &impl prost::Message) -> bool {
    a.encode_to_vec() == b.encode_to_vec()
}

/// Frames mode of [`proto`]: the input as a body of length-prefixed frames.
fn frames(data: &[u8]) {
    let server = proto::decode_frames(data);
    let client = client::decode_proto_body(data);
    if let Ok(events) = &server {
        for ev in events {
            // decode → encode → decode → encode gives the same bytes.
            let bytes = ev.encode_to_vec();
            let again = proto::pb::Event::decode(bytes.as_slice())
                .unwrap_or_else(|e| panic!("own encoding does not decode: {e}"));
            assert!(same_encoding(ev, &again), "re-encoding changed the event");
        }
    }
    match (&server, &client) {
        (Ok(s), Ok(c)) => {
            assert_eq!(s.len(), c.len(), "server and client see different frames");
            for (s, c) in s.iter().zip(c) {
                let cp = c.proto.as_ref().expect("a decoded frame keeps its message");
                assert_eq!(
                    s.encode_to_vec(),
                    cp.encode_to_vec(),
                    "server and client decode a frame differently"
                );
                assert_eq!(
                    c.raw.get("type").and_then(Value::as_str),
                    Some(c.kind.as_str()),
                    "the JSON form names another type: {}",
                    c.raw
                );
                assert!(!c.kind.is_empty(), "an event without a type: {}", c.raw);
            }
        }
        (Ok(s), Err(e)) => {
            // The client refuses exactly the frames whose oneof is empty (and frames
            // over its 16 MiB limit, which no input here reaches).
            assert!(
                s.iter().any(|ev| ev.event.is_none()),
                "the client refuses frames the server reads: {e}"
            );
        }
        (Err(e), Ok(_)) => panic!("the client reads frames the server refuses: {e}"),
        (Err(_), Err(_)) => {}
    }
}

/// Event mode of [`proto`]: the input as an event in its JSON (SSE) form.
fn event(data: &[u8]) {
    let Ok(ev) = serde_json::from_slice::<wire::Event>(data) else {
        return;
    };
    let json = serde_json::to_value(&ev).expect("an event encodes as JSON");
    // The JSON form survives JSON → event → JSON.
    let back: wire::Event = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("own JSON does not decode ({e}): {json}"));
    assert_eq!(back, ev, "JSON → event → JSON changed the event");
    // SSE: what the server writes, read back by the client's parser.
    let frame = sse::encode(Some("1.0"), &ev).expect("an event encodes as SSE");
    let events = futures::executor::block_on(taskwire_client::http::parse_sse(Bytes::from(frame)))
        .unwrap_or_else(|e| panic!("the client cannot read the server's SSE frame: {e}"));
    assert_eq!(events.len(), 1, "one frame, one event");
    let read: Value = serde_json::from_str(&events[0].data).expect("SSE data is JSON");
    assert_eq!(
        read, json,
        "the client reads another event from the SSE frame"
    );
    // Protobuf: what the server writes, read back by the client.
    let bytes = proto::encode_frame(&ev);
    let decoded = client::decode_proto_body(&bytes)
        .unwrap_or_else(|e| panic!("the client cannot read the server's frame: {e}"));
    assert_eq!(decoded.len(), 1, "one frame, one event");
    assert_eq!(
        decoded[0].kind,
        ev.type_name(),
        "the protobuf frame names another type"
    );
}

/// The JSON the client reads from the server's protobuf frame of `event` and the
/// event's own JSON (SSE) form, when they differ; `None` when they agree or the
/// input is not an event. The protobuf form carries only what the server emits
/// (well-formed patches, the message fields it writes, numbers as doubles), so
/// this is checked on events the server wrote (the fixtures-derived seeds, in
/// `tests/corpus.rs`), not on arbitrary mutations.
pub fn proto_and_sse_differ(event: &[u8]) -> Option<(Value, Value)> {
    let ev = serde_json::from_slice::<wire::Event>(event).ok()?;
    let json = serde_json::to_value(&ev).ok()?;
    let decoded = client::decode_proto_body(&proto::encode_frame(&ev)).ok()?;
    let from_proto = decoded.into_iter().next()?.raw;
    (from_proto != json).then_some((from_proto, json))
}

/// One input of `agui_proto`. An input that starts with `{` is an AG-UI event in
/// its JSON form: JSON → event → JSON is stable, the server's SSE frame of it is
/// read back by the client as the same JSON, and its protobuf frame as an event of
/// the same type (see [`proto_and_sse_differ`] for the full comparison).
/// Anything else is a body of length-prefixed protobuf frames, read by the
/// server's `decode_frames` and the client's `decode_proto_body`: they accept the
/// same bodies (the client also refuses a frame with no event), decode each frame
/// to the same message, and re-encoding a decoded frame is stable.
pub fn proto(data: &[u8]) {
    if data.first() == Some(&b'{') {
        event(data);
    } else {
        frames(data);
    }
}

/// One input of `agui_run`: `POST /agui` with the input as the `RunAgentInput`
/// (or head and body; a bare body is sent as JSON, asking for SSE). No answer is a
/// 5xx, and a run stream passes the AG-UI verifier (lifecycle and balance rules),
/// whether it is SSE or protobuf frames.
pub fn run(data: &[u8]) {
    with_env(|env| {
        let data = env.substitute(data).into_owned();
        let (head, body) = env::split(&data);
        let (method, path, headers) = match head {
            Some(h) => (
                h.method.unwrap_or(Method::POST),
                h.path.unwrap_or_else(|| "/agui".into()),
                h.headers,
            ),
            None => {
                let mut h = axum::http::HeaderMap::new();
                h.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                h.insert(header::ACCEPT, HeaderValue::from_static(sse::MEDIA_TYPE));
                (Method::POST, "/agui".to_string(), h)
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
        let router = env.agui.clone();
        let resp = env.call(&router, req);
        let status = resp.status();
        assert!(!status.is_server_error(), "status {status}");
        let media = env::media_type(resp.headers());
        let (body, ended) = env.ready_body(resp.into_body(), MAX_READ);
        let mut verifier = Verifier::new();
        let mut seen = 0;
        match media.as_deref() {
            Some(sse::MEDIA_TYPE) => {
                for d in env::sse_data(&body) {
                    let v: Value = serde_json::from_str(&d)
                        .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {d}"));
                    if let Err(v) = verifier.push_json(&v) {
                        panic!("the run stream breaks a rule: {v:?}");
                    }
                    seen += 1;
                }
            }
            Some(proto::MEDIA_TYPE) => {
                let complete = complete_frames(&body);
                let events = client::decode_proto_body(complete)
                    .unwrap_or_else(|e| panic!("the run's frames do not decode: {e}"));
                for ev in events {
                    if let Err(v) = verifier.push_json(&ev.raw) {
                        panic!("the run stream breaks a rule: {v:?}");
                    }
                    seen += 1;
                }
            }
            _ => return,
        }
        if ended && seen > 0 {
            if let Err(v) = verifier.finish() {
                // A refusal is one RUN_ERROR, which ends the stream cleanly.
                panic!("the run stream ended badly: {v:?}");
            }
        }
    })
}

/// The prefix of `body` made of whole length-prefixed frames.
fn complete_frames(body: &[u8]) -> &[u8] {
    let mut at = 0;
    while body.len() >= at + 4 {
        let len = u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]) as usize;
        if body.len() < at + 4 + len {
            break;
        }
        at += 4 + len;
    }
    &body[..at]
}
