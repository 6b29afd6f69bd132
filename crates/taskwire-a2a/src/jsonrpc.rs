//! The JSON-RPC 2.0 binding at `POST /a2a` (and `/a2a/`): envelope parsing and
//! batches, version and content-type checks, dispatch to the shared service, and
//! SSE for the streaming methods (`id:` = event sequence, `Last-Event-ID` resumes).
//!
//! The envelope is handled here rather than with jsonrpsee: A2A streams answers to
//! a POST as SSE (which jsonrpsee's server does not do), batches must be answered
//! element by element with the right -32700/-32600 codes, and `params` must reach
//! the ProtoJSON decoder untouched so field paths appear in -32602 messages.

use std::borrow::Cow;
use std::collections::HashMap;
use std::convert::Infallible;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use taskwire_core::Caller;
use taskwire_vocab::a2a::{A2aErrorKind, ERROR_DOMAIN, ERROR_INFO_TYPE};

use crate::error::{A2aError, Result};
use crate::protojson;
use crate::service::{check_version, A2aService, FrameStream, VERSION_HEADER};

/// The JSON-RPC method names (the RPC names of `lf.a2a.v1.A2AService`), shared with
/// taskwire-client.
pub use taskwire_vocab::names::a2a::methods;

/// The `error.data` array: a `google.rpc.ErrorInfo` with the A2A reason.
pub fn error_data(kind: A2aErrorKind) -> Value {
    json!([{
        "@type": ERROR_INFO_TYPE,
        "reason": kind.reason(),
        "domain": ERROR_DOMAIN,
        "metadata": {},
    }])
}

/// A JSON-RPC error response.
pub fn error_response(id: &Value, e: &A2aError) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": e.kind().code(),
            "message": e.message(),
            "data": error_data(e.kind()),
        }
    })
}

/// A JSON-RPC success response.
pub fn result_response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The text of a JSON-RPC success response around a result already encoded as JSON
/// text (the same object as [`result_response`], without a value tree).
fn result_text(id: &Value, result: &str) -> String {
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".to_string());
    let mut out = String::with_capacity(result.len() + id.len() + 32);
    out.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    out.push_str(&id);
    out.push_str(",\"result\":");
    out.push_str(result);
    out.push('}');
    out
}

/// A parsed request envelope.
struct Request {
    id: Value,
    notification: bool,
    method: String,
    params: Value,
}

/// Validates an envelope; on failure returns the id to answer with and the error.
fn parse_envelope(v: Value) -> std::result::Result<Request, (Value, A2aError)> {
    let Value::Object(mut m) = v else {
        return Err((
            Value::Null,
            A2aError::new(
                A2aErrorKind::InvalidRequest,
                "a request must be a JSON object",
            ),
        ));
    };
    let (id, notification) = match m.remove("id") {
        None => (Value::Null, true),
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => (id, false),
        Some(_) => {
            return Err((
                Value::Null,
                A2aError::new(
                    A2aErrorKind::InvalidRequest,
                    "id must be a string, a number or null",
                ),
            ))
        }
    };
    let invalid = |msg: &str| Err((id.clone(), A2aError::new(A2aErrorKind::InvalidRequest, msg)));
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("jsonrpc must be \"2.0\"");
    }
    let method = match m.remove("method") {
        Some(Value::String(s)) => s,
        _ => return invalid("method must be a string"),
    };
    let params = match m.remove("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            return Err((
                id,
                A2aError::new(A2aErrorKind::InvalidParams, "params must be an object"),
            ))
        }
    };
    Ok(Request {
        id,
        notification,
        method,
        params,
    })
}

fn is_streaming(method: &str) -> bool {
    method == methods::SEND_STREAMING_MESSAGE || method == methods::SUBSCRIBE_TO_TASK
}

/// Runs one method; the result is its ProtoJSON text.
async fn dispatch(
    svc: &A2aService,
    caller: &Caller,
    method: &str,
    params: Value,
) -> Result<String> {
    use methods::*;
    use protojson::{from_value as dec, to_string as enc};
    match method {
        SEND_MESSAGE => enc(&svc
            .send_message(caller, protojson::send_request_from_value(params)?)
            .await?),
        GET_TASK => Ok(svc.get_task_json(caller, dec(params)?).await?.to_string()),
        LIST_TASKS => enc(&svc.list_tasks(caller, dec(params)?).await?),
        CANCEL_TASK => enc(&svc.cancel_task(caller, dec(params)?).await?),
        CREATE_PUSH_CONFIG => enc(&svc.create_push_config(caller, dec(params)?).await?),
        GET_PUSH_CONFIG => enc(&svc.get_push_config(caller, dec(params)?).await?),
        LIST_PUSH_CONFIGS => enc(&svc.list_push_configs(caller, dec(params)?).await?),
        DELETE_PUSH_CONFIG => {
            svc.delete_push_config(caller, dec(params)?).await?;
            Ok("{}".to_string())
        }
        GET_EXTENDED_AGENT_CARD => {
            let _req: crate::pb::GetExtendedAgentCardRequest = dec(params)?;
            enc(&svc.extended_agent_card(caller)?)
        }
        SEND_STREAMING_MESSAGE | SUBSCRIBE_TO_TASK => Err(A2aError::new(
            A2aErrorKind::InvalidRequest,
            format!("{method} streams its answer and cannot be part of a batch"),
        )),
        other => Err(A2aError::new(
            A2aErrorKind::MethodNotFound,
            format!("method not found: {other}"),
        )),
    }
}

async fn open_stream(
    svc: &A2aService,
    caller: &Caller,
    method: &str,
    params: Value,
    last_event_id: Option<u64>,
) -> Result<FrameStream> {
    if method == methods::SEND_STREAMING_MESSAGE {
        svc.send_streaming_message(
            caller,
            protojson::send_request_from_value(params)?,
            last_event_id,
        )
        .await
    } else {
        svc.subscribe_to_task(caller, protojson::from_value(params)?, last_event_id)
            .await
    }
}

fn sse_response(id: Value, frames: FrameStream) -> Response {
    let events = frames.map(move |r| {
        let ev = match r.and_then(|(seq, frame)| Ok((seq, protojson::to_string(&frame)?))) {
            Ok((seq, v)) => {
                let ev = SseEvent::default().data(result_text(&id, &v));
                if seq > 0 {
                    ev.id(seq.to_string())
                } else {
                    ev
                }
            }
            Err(e) => SseEvent::default().data(error_response(&id, &e).to_string()),
        };
        Ok::<_, Infallible>(ev)
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn json_response(v: Value) -> Response {
    (StatusCode::OK, Json(v)).into_response()
}

fn json_text_response(text: String) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text,
    )
        .into_response()
}

fn content_type_ok(headers: &HeaderMap) -> bool {
    match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(ct) => {
            let base = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            base == "application/json" || base.ends_with("+json") || base.is_empty()
        }
    }
}

/// The requested version: the `A2A-Version` header, else the query parameter (the
/// query string is only decoded when the header is absent).
fn requested_version<'a>(headers: &'a HeaderMap, query: Option<&str>) -> Option<Cow<'a, str>> {
    if let Some(v) = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(Cow::Borrowed(v));
    }
    let query = query?;
    let mut params: HashMap<String, String> = serde_urlencoded::from_str(query).ok()?;
    params.remove(VERSION_HEADER).map(Cow::Owned)
}

/// `POST /a2a`: one request, a batch, or a streaming request.
pub async fn handle(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !content_type_ok(&headers) {
        let e = A2aError::new(
            A2aErrorKind::ContentTypeNotSupported,
            "JSON-RPC requests must be application/json",
        );
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Json(error_response(&Value::Null, &e)),
        )
            .into_response();
    }
    let parsed: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            let e = A2aError::new(A2aErrorKind::ParseError, format!("parse error: {e}"));
            return json_response(error_response(&Value::Null, &e));
        }
    };
    let version = check_version(requested_version(&headers, query.as_deref()).as_deref());
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<u64>().ok());
    match parsed {
        Value::Array(items) => {
            if items.is_empty() {
                let e = A2aError::new(A2aErrorKind::InvalidRequest, "empty batch");
                return json_response(error_response(&Value::Null, &e));
            }
            let mut out: Vec<String> = Vec::new();
            for item in items {
                match parse_envelope(item) {
                    Err((id, e)) => out.push(error_response(&id, &e).to_string()),
                    Ok(req) => {
                        let r = match &version {
                            Err(e) => Err(A2aError::new(e.kind(), e.message())),
                            Ok(()) => dispatch(&svc, &caller, &req.method, req.params).await,
                        };
                        if !req.notification {
                            out.push(match r {
                                Ok(v) => result_text(&req.id, &v),
                                Err(e) => error_response(&req.id, &e).to_string(),
                            });
                        }
                    }
                }
            }
            if out.is_empty() {
                StatusCode::NO_CONTENT.into_response()
            } else {
                json_text_response(format!("[{}]", out.join(",")))
            }
        }
        single => {
            let req = match parse_envelope(single) {
                Ok(r) => r,
                Err((id, e)) => return json_response(error_response(&id, &e)),
            };
            if let Err(e) = version {
                return json_response(error_response(&req.id, &e));
            }
            if is_streaming(&req.method) {
                return match open_stream(&svc, &caller, &req.method, req.params, last_event_id)
                    .await
                {
                    Ok(frames) => sse_response(req.id, frames),
                    Err(e) => json_response(error_response(&req.id, &e)),
                };
            }
            let r = dispatch(&svc, &caller, &req.method, req.params).await;
            if req.notification {
                return StatusCode::NO_CONTENT.into_response();
            }
            match r {
                Ok(v) => json_text_response(result_text(&req.id, &v)),
                Err(e) => json_response(error_response(&req.id, &e)),
            }
        }
    }
}

/// `GET /.well-known/agent-card.json`.
pub async fn agent_card(State(svc): State<A2aService>) -> Response {
    match protojson::to_value(&svc.agent_card()) {
        Ok(v) => json_response(v),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.message().to_string()).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-zA-Z0-9 ._-]{0,12}".prop_map(Value::String),
            prop_oneof![
                Just("2.0"),
                Just("jsonrpc"),
                Just("method"),
                Just("SendMessage")
            ]
            .prop_map(|s| Value::String(s.into())),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("jsonrpc".to_string()),
                        Just("id".to_string()),
                        Just("method".to_string()),
                        Just("params".to_string()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn envelope_parser_never_panics_and_errors_are_request_errors(v in json_value()) {
            match parse_envelope(v) {
                Ok(r) => prop_assert!(r.params.is_object()),
                Err((id, e)) => {
                    prop_assert!(matches!(
                        e.kind(),
                        A2aErrorKind::InvalidRequest | A2aErrorKind::InvalidParams
                    ));
                    prop_assert!(id.is_null() || id.is_string() || id.is_number());
                }
            }
        }

        #[test]
        fn params_decoding_never_panics(v in json_value()) {
            let _ = protojson::from_value::<crate::pb::SendMessageRequest>(v.clone());
            let _ = protojson::from_value::<crate::pb::ListTasksRequest>(v);
        }

        #[test]
        fn arbitrary_bodies_are_parse_errors_or_values(body in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                let _ = parse_envelope(v);
            }
        }
    }

    #[test]
    fn error_objects_carry_error_info() {
        let e = A2aError::new(A2aErrorKind::TaskNotFound, "task not found");
        let v = error_response(&json!("x"), &e);
        assert_eq!(v["error"]["code"], -32001);
        assert_eq!(v["error"]["data"][0]["@type"], ERROR_INFO_TYPE);
        assert_eq!(v["id"], "x");
    }
}
