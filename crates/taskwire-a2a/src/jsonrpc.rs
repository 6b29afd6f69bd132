//! The JSON-RPC 2.0 binding at `POST /a2a` (and `/a2a/`): envelope parsing and
//! batches, version and content-type checks, dispatch to the shared service, and
//! SSE for the streaming methods (`id:` = event sequence, `Last-Event-ID` resumes).
//!
//! The envelope is read by the wire layer's JSON-RPC module
//! ([`taskwire_wire::jsonrpc`], one pass, `params` left as raw text for the
//! ProtoJSON decoder so field paths appear in -32602 messages), with A2A's rules:
//! a request may carry a null id, and there are no responses from the client.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use taskwire_core::Caller;
use taskwire_vocab::a2a::A2aErrorKind;
#[cfg(test)]
use taskwire_vocab::a2a::ERROR_INFO_TYPE;
use taskwire_wire::a2a::errors::{ErrorInfoJson, RetryInfoJson};
use taskwire_wire::jsonrpc::{
    self, result_text, Body, ErrorObject, Incoming, Invalid, Message, Rules,
};

use crate::error::{A2aError, Result};
use crate::http::{
    content_type_ok, last_event_id, negotiate, requested_version, unstated_is_0_3, Requested,
};
use crate::protojson;
use crate::service::{A2aService, FrameStream};

/// The JSON-RPC method names (the RPC names of `lf.a2a.v1.A2AService`), shared with
/// taskwire-client.
pub use taskwire_vocab::names::a2a::methods;
use taskwire_vocab::names::a2a::methods_0_3;

/// The `error.data` array: a `google.rpc.ErrorInfo` with the A2A reason; for a
/// retryable error ([`A2aErrorKind::Unavailable`]), its metadata says a retry
/// with the same messageId is safe, and a `google.rpc.RetryInfo` follows.
pub fn error_data(kind: A2aErrorKind) -> Value {
    match RetryInfoJson::of(kind) {
        Some(retry) => json!([ErrorInfoJson::of(kind), retry]),
        None => json!([ErrorInfoJson::of(kind)]),
    }
}

/// A JSON-RPC error response.
pub fn error_response(id: &Value, e: &A2aError) -> Value {
    jsonrpc::error(
        id,
        &ErrorObject::new(e.kind().code(), e.message()).with_data(error_data(e.kind())),
    )
}

/// A JSON-RPC success response.
pub fn result_response(id: &Value, result: Value) -> Value {
    jsonrpc::result(id, result)
}

/// The envelope rules of A2A: a null id is a request's id; no responses.
const RULES: Rules = Rules::new(true, false);

/// A request that passed the envelope rules.
struct Request<'a> {
    id: Value,
    notification: bool,
    method: Cow<'a, str>,
    params: Params<'a>,
}

/// A request's `params`: the raw text of its object (`None`: absent or null,
/// read as `{}`).
struct Params<'a>(Option<&'a RawValue>);

impl Params<'_> {
    /// The params as a request message (ProtoJSON from the text: pbjson
    /// straight when it applies, else the descriptor-driven decoder).
    fn decode<T: protojson::ProtoMessage>(self) -> Result<T> {
        protojson::from_str(self.0.map_or("{}", RawValue::get))
    }
}

/// The A2A error of an envelope that breaks the rules: Parse error for text
/// that is not JSON, Invalid Params for params that are not an object, Invalid
/// Request otherwise.
fn invalid(why: &Invalid) -> A2aError {
    let kind = match why {
        Invalid::Parse(_) => A2aErrorKind::ParseError,
        Invalid::Params => A2aErrorKind::InvalidParams,
        _ => A2aErrorKind::InvalidRequest,
    };
    A2aError::new(kind, why.to_string())
}

/// Applies A2A's envelope rules to one message; on failure, the id to answer
/// with and the error.
fn request<'a>(m: &Message<'a>) -> std::result::Result<Request<'a>, (Value, A2aError)> {
    match m.classify(RULES) {
        Ok(Incoming::Request { id, method, params }) => Ok(Request {
            id,
            notification: false,
            method,
            params: Params(params),
        }),
        Ok(Incoming::Notification { method, params }) => Ok(Request {
            id: Value::Null,
            notification: true,
            method,
            params: Params(params),
        }),
        // Not produced under RULES (no responses); refused as a request
        // without a method if it were.
        Ok(Incoming::Response { id, .. }) => Err((id, invalid(&Invalid::Method))),
        Err((id, why)) => Err((id, invalid(&why))),
    }
}

fn is_streaming(method: &str) -> bool {
    method == methods::SEND_STREAMING_MESSAGE || method == methods::SUBSCRIBE_TO_TASK
}

/// A method's result as ProtoJSON text: shared with GetTask's encoded cache, or
/// encoded for this answer.
enum ResultText {
    Shared(Arc<str>),
    Owned(String),
}

impl std::ops::Deref for ResultText {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            ResultText::Shared(s) => s,
            ResultText::Owned(s) => s,
        }
    }
}

/// Runs one method; the result is its ProtoJSON text.
async fn dispatch(
    svc: &A2aService,
    caller: &Caller,
    v: Requested,
    method: &str,
    params: Params<'_>,
) -> Result<ResultText> {
    if method == methods::GET_TASK {
        let text = svc.get_task_json(caller, v, params.decode()?).await?;
        return Ok(ResultText::Shared(text));
    }
    dispatch_encoded(svc, caller, v, method, params)
        .await
        .map(ResultText::Owned)
}

/// Every method but GetTask (see [`dispatch`]).
async fn dispatch_encoded(
    svc: &A2aService,
    caller: &Caller,
    v: Requested,
    method: &str,
    params: Params<'_>,
) -> Result<String> {
    use methods::*;
    use protojson::to_string as enc;
    // Every method but GetTask runs boxed: their futures are large, and inline they
    // would make the future of every request (GetTask's too) as large as the
    // largest, copied whole each time it is moved into a box further up.
    match method {
        SEND_MESSAGE => {
            let req = params.decode::<crate::pb::SendMessageRequest>()?;
            enc(&Box::pin(svc.send_message(caller, v, req)).await?)
        }
        LIST_TASKS => {
            let r = Box::pin(svc.list_tasks(caller, v, params.decode()?)).await?;
            enc(&taskwire_wire::a2a::protojson::ListTasksResponseJson(&r))
        }
        CANCEL_TASK => enc(&Box::pin(svc.cancel_task(caller, v, params.decode()?)).await?),
        CREATE_PUSH_CONFIG => {
            enc(&Box::pin(svc.create_push_config(caller, params.decode()?)).await?)
        }
        GET_PUSH_CONFIG => enc(&Box::pin(svc.get_push_config(caller, params.decode()?)).await?),
        LIST_PUSH_CONFIGS => enc(&Box::pin(svc.list_push_configs(caller, params.decode()?)).await?),
        DELETE_PUSH_CONFIG => {
            Box::pin(svc.delete_push_config(caller, params.decode()?)).await?;
            Ok("{}".to_string())
        }
        GET_EXTENDED_AGENT_CARD => {
            let _req: crate::pb::GetExtendedAgentCardRequest = params.decode()?;
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
    v: Requested,
    method: &str,
    params: Params<'_>,
    last_event_id: Option<u64>,
) -> Result<FrameStream> {
    if method == methods::SEND_STREAMING_MESSAGE {
        svc.send_streaming_message(
            caller,
            v,
            params.decode::<crate::pb::SendMessageRequest>()?,
            last_event_id,
        )
        .await
    } else {
        svc.subscribe_to_task(caller, v, params.decode()?, last_event_id)
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
    json_status_response(StatusCode::OK, v)
}

fn json_status_response(status: StatusCode, v: Value) -> Response {
    (status, Json(v)).into_response()
}

fn json_text_response(text: String) -> Response {
    let mut res = Response::new(axum::body::Body::from(text));
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// `POST /a2a`: one request, a batch, or a streaming request. The request is taken
/// whole (no header map copied, no extractor with a plain-text rejection): a
/// content type that is not JSON is ContentTypeNotSupported (415) before the body is
/// read, a body over `max_body_bytes` is Invalid Request with 413 and one that
/// cannot be read Invalid Request with 400 (see `crate::body::read`).
pub async fn handle(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    req: axum::extract::Request,
) -> Response {
    let (parts, body) = req.into_parts();
    if !content_type_ok(&parts.headers) {
        return content_type_refusal();
    }
    let body = match crate::body::read(&parts.headers, body, svc.config().max_body_bytes).await {
        Ok(b) => b,
        Err((status, e)) => return json_status_response(status, error_response(&Value::Null, &e)),
    };
    answer(&svc, &caller, parts.uri.query(), &parts.headers, body).await
}

/// What [`handle`] does once the request is taken apart and its body read: the
/// caller, the query string, the headers and the body. A server that routes
/// `POST /a2a` itself (the `taskwire` binary's direct routes) calls this.
pub async fn serve(
    svc: &A2aService,
    caller: &Caller,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    if !content_type_ok(headers) {
        return content_type_refusal();
    }
    answer(svc, caller, query, headers, body).await
}

/// ContentTypeNotSupported (-32005) with HTTP 415, answered before parsing.
fn content_type_refusal() -> Response {
    let e = A2aError::new(
        A2aErrorKind::ContentTypeNotSupported,
        "JSON-RPC requests must be application/json",
    );
    json_status_response(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        error_response(&Value::Null, &e),
    )
}

/// Answers a request whose content type was accepted.
async fn answer(
    svc: &A2aService,
    caller: &Caller,
    query: Option<&str>,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let version = negotiate(requested_version(headers, query).as_deref());
    let last_event_id = last_event_id(headers);
    match jsonrpc::parse(&body) {
        Err(why) => json_response(error_response(&Value::Null, &invalid(&why))),
        Ok(Body::One(m)) => match request(&m) {
            Ok(req) => single(svc, caller, version, req, last_event_id).await,
            Err((id, e)) => json_response(error_response(&id, &e)),
        },
        Ok(Body::Batch(items)) => {
            if items.is_empty() {
                let e = A2aError::new(A2aErrorKind::InvalidRequest, "empty batch");
                return json_response(error_response(&Value::Null, &e));
            }
            let mut out: Vec<String> = Vec::new();
            for item in items {
                let req = jsonrpc::parse_message(item)
                    .map_err(|why| (Value::Null, invalid(&why)))
                    .and_then(|m| request(&m));
                match req {
                    Err((id, e)) => out.push(error_response(&id, &e).to_string()),
                    Ok(req) => {
                        let r = match served(&version, &req.method) {
                            Err(e) => Err(e),
                            Ok(v) => dispatch(svc, caller, v, &req.method, req.params).await,
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
    }
}

/// Whether a method is served under the requested version: a version
/// taskwire does not speak is refused, and so is a 0.3 method name without
/// a version (A2A 1.0 §3.6.2 reads it as 0.3, not served yet). A 1.0 method
/// name without a version has no 0.3 reading and is served as 1.0.
fn served(version: &Result<Requested>, method: &str) -> Result<Requested> {
    match version {
        Err(e) => Err(A2aError::new(e.kind(), e.message())),
        Ok(Requested::Unstated) if methods_0_3::ALL.contains(&method) => {
            Err(unstated_is_0_3(&format!("the method {method}")))
        }
        Ok(v) => Ok(*v),
    }
}

/// Answers one request that is not part of a batch.
async fn single(
    svc: &A2aService,
    caller: &Caller,
    version: Result<Requested>,
    req: Request<'_>,
    last_event_id: Option<u64>,
) -> Response {
    let v = match served(&version, &req.method) {
        Ok(v) => v,
        Err(e) => return json_response(error_response(&req.id, &e)),
    };
    if is_streaming(&req.method) {
        return match Box::pin(open_stream(
            svc,
            caller,
            v,
            &req.method,
            req.params,
            last_event_id,
        ))
        .await
        {
            Ok(frames) => sse_response(req.id, frames),
            Err(e) => error_reply(&req.id, &e),
        };
    }
    let r = dispatch(svc, caller, v, &req.method, req.params).await;
    if req.notification {
        return StatusCode::NO_CONTENT.into_response();
    }
    match r {
        Ok(v) => json_text_response(result_text(&req.id, &v)),
        Err(e) => error_reply(&req.id, &e),
    }
}

/// The answer to one request that failed: HTTP 200 with the JSON-RPC error,
/// but 403 for [`A2aErrorKind::PermissionDenied`] (A2A: authenticated but not
/// allowed is the HTTP layer's 403; the server's edge adds the
/// `WWW-Authenticate: Bearer error="insufficient_scope"` challenge).
fn error_reply(id: &Value, e: &A2aError) -> Response {
    let status = if e.kind() == A2aErrorKind::PermissionDenied {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::OK
    };
    json_status_response(status, error_response(id, e))
}

/// `GET /.well-known/agent-card.json`, with the caching headers of A2A 1.0
/// §8.6.1: `Cache-Control: max-age=<card_max_age>` and an `ETag` that is a
/// hash of the card's content (the same on every node serving the same card).
/// A request whose `If-None-Match` names that tag is answered 304 Not
/// Modified without a body.
pub async fn agent_card(State(svc): State<A2aService>, headers: HeaderMap) -> Response {
    let text = match protojson::to_value(&svc.agent_card()) {
        Ok(v) => v.to_string(),
        Err(e) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, e.message().to_string()).into_response()
        }
    };
    let etag = crate::card::etag(&text);
    let cache_control = format!("public, max-age={}", svc.config().card_max_age.as_secs());
    let mut res = if crate::card::none_match(&headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        json_text_response(text)
    };
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&cache_control) {
        h.insert(header::CACHE_CONTROL, v);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A store that did not answer: -32603 with a message that says so (not
    /// "internal error"), an ErrorInfo of reason UNAVAILABLE saying a retry
    /// with the same messageId is safe, and a RetryInfo.
    #[test]
    fn an_unavailable_store_says_so_in_the_error_data() {
        let e = A2aError::from(taskwire_core::CoreError::Unavailable("dsn".into()));
        let v = error_response(&json!(7), &e);
        assert_eq!(v["error"]["code"], -32603);
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("did not answer") && !message.contains("dsn"));
        let info = &v["error"]["data"][0];
        assert_eq!(info["reason"], "UNAVAILABLE");
        assert_eq!(info["domain"], "taskwire");
        assert_eq!(info["metadata"]["retryable"], "true");
        assert_eq!(info["metadata"]["retrySafeWith"], "messageId");
        assert_eq!(
            v["error"]["data"][1],
            json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"})
        );
        // Other errors carry the ErrorInfo alone.
        let v = error_response(&json!(7), &A2aError::task_not_found());
        assert_eq!(v["error"]["data"].as_array().unwrap().len(), 1);
    }

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

    /// Objects shaped like the params of SendMessage, GetTask and ListTasks, with
    /// right and wrong member types, both spellings of names, and unknown members.
    fn request_params() -> impl Strategy<Value = Value> {
        let scalar = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            (0u64..u64::MAX).prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            "[a-zA-Z0-9 _:=+/-]{0,10}".prop_map(Value::String),
            prop_oneof![
                Just("ROLE_USER"),
                Just("ROLE_AGENT"),
                Just("TASK_STATE_WORKING"),
                Just("12"),
                Just("2026-11-29T14:04:18Z"),
                Just("aGVsbG8="),
                Just("text/plain"),
            ]
            .prop_map(|s| Value::String(s.into())),
        ];
        let member = prop_oneof![
            scalar.clone(),
            prop::collection::vec(scalar.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", scalar.clone(), 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ];
        let part = prop::collection::btree_map(
            prop_oneof![
                Just("text"),
                Just("raw"),
                Just("url"),
                Just("data"),
                Just("mediaType"),
                Just("media_type"),
                Just("filename"),
                Just("metadata"),
                Just("other"),
            ]
            .prop_map(str::to_string),
            member.clone(),
            0..4,
        )
        .prop_map(|m| Value::Object(m.into_iter().collect()));
        let message = (
            prop::collection::btree_map(
                prop_oneof![
                    Just("messageId"),
                    Just("message_id"),
                    Just("role"),
                    Just("contextId"),
                    Just("taskId"),
                    Just("metadata"),
                    Just("extensions"),
                    Just("referenceTaskIds"),
                ]
                .prop_map(str::to_string),
                member.clone(),
                0..5,
            ),
            prop::option::of(prop::collection::vec(part, 0..3)),
        )
            .prop_map(|(mut m, parts)| {
                if let Some(p) = parts {
                    m.insert("parts".into(), Value::Array(p));
                }
                Value::Object(m.into_iter().collect())
            });
        let configuration = prop::collection::btree_map(
            prop_oneof![
                Just("historyLength"),
                Just("history_length"),
                Just("returnImmediately"),
                Just("acceptedOutputModes"),
                Just("blocking"),
            ]
            .prop_map(str::to_string),
            member.clone(),
            0..3,
        )
        .prop_map(|m| Value::Object(m.into_iter().collect()));
        (
            prop::option::of(message),
            prop::option::of(configuration),
            prop::collection::btree_map(
                prop_oneof![
                    Just("id"),
                    Just("tenant"),
                    Just("historyLength"),
                    Just("history_length"),
                    Just("contextId"),
                    Just("status"),
                    Just("pageSize"),
                    Just("pageToken"),
                    Just("statusTimestampAfter"),
                    Just("includeArtifacts"),
                    Just("metadata"),
                    Just("unknown"),
                ]
                .prop_map(str::to_string),
                member,
                0..4,
            ),
        )
            .prop_map(|(message, configuration, mut rest)| {
                if let Some(m) = message {
                    rest.insert("message".into(), m);
                }
                if let Some(c) = configuration {
                    rest.insert("configuration".into(), c);
                }
                Value::Object(rest.into_iter().collect())
            })
    }

    /// Objects shaped like requests, valid and not.
    fn envelope() -> impl Strategy<Value = Value> {
        (
            prop_oneof![Just(json!("2.0")), Just(json!("1.0")), Just(json!(2))],
            prop::option::of(json_value()),
            prop::option::of(prop_oneof![
                "[A-Za-z]{1,12}".prop_map(Value::String),
                json_value()
            ]),
            prop::option::of(json_value()),
            prop::option::of(json_value()),
        )
            .prop_map(|(jsonrpc, id, method, params, extra)| {
                let mut m = serde_json::Map::new();
                m.insert("jsonrpc".into(), jsonrpc);
                for (k, v) in [
                    ("id", id),
                    ("method", method),
                    ("params", params),
                    ("x", extra),
                ] {
                    if let Some(v) = v {
                        m.insert(k.into(), v);
                    }
                }
                Value::Object(m)
            })
    }

    /// Reads one body through the wire layer's parser and A2A's rules: the id,
    /// whether it is a notification, the method and the params as a value; or
    /// the id answered and the error kind.
    fn read(
        body: &[u8],
    ) -> std::result::Result<(Value, bool, String, Value), (Value, A2aErrorKind)> {
        let m = match jsonrpc::parse(body) {
            Ok(Body::One(m)) => m,
            Ok(Body::Batch(_)) => return Err((Value::Null, A2aErrorKind::InvalidRequest)),
            Err(why) => return Err((Value::Null, invalid(&why).kind())),
        };
        let r = request(&m).map_err(|(id, e)| (id, e.kind()))?;
        let params = match r.params.0 {
            None => json!({}),
            Some(raw) => serde_json::from_str(raw.get()).unwrap(),
        };
        Ok((r.id, r.notification, r.method.into_owned(), params))
    }

    /// The envelope rules of A2A over a parsed value: the model the one-pass
    /// reader must agree with.
    fn model(
        v: &Value,
    ) -> std::result::Result<(Value, bool, String, Value), (Value, A2aErrorKind)> {
        let Value::Object(m) = v else {
            return Err((Value::Null, A2aErrorKind::InvalidRequest));
        };
        let (id, notification) = match m.get("id") {
            None => (Value::Null, true),
            Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => (id.clone(), false),
            Some(_) => return Err((Value::Null, A2aErrorKind::InvalidRequest)),
        };
        if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err((id, A2aErrorKind::InvalidRequest));
        }
        let Some(Value::String(method)) = m.get("method") else {
            return Err((id, A2aErrorKind::InvalidRequest));
        };
        let params = match m.get("params") {
            None | Some(Value::Null) => json!({}),
            Some(p @ Value::Object(_)) => p.clone(),
            Some(_) => return Err((id, A2aErrorKind::InvalidParams)),
        };
        Ok((id, notification, method.clone(), params))
    }

    proptest! {
        #[test]
        fn the_one_pass_reader_agrees_with_the_model_of_the_rules(
            v in prop_oneof![json_value(), envelope()],
            pretty in any::<bool>(),
        ) {
            let body = if pretty {
                serde_json::to_vec_pretty(&v).unwrap()
            } else {
                serde_json::to_vec(&v).unwrap()
            };
            let want = if v.is_array() { Err((Value::Null, A2aErrorKind::InvalidRequest)) } else { model(&v) };
            prop_assert_eq!(read(&body), want);
        }

        /// Reading params straight from their text gives what the `Value` path
        /// gives, whenever it gives anything.
        #[test]
        fn raw_params_decode_as_the_value_path_does(v in request_params()) {
            let text = serde_json::to_string(&v).unwrap();
            if let Some(raw) = protojson::from_str_without_nulls::<crate::pb::SendMessageRequest>(&text) {
                prop_assert_eq!(Ok(raw), protojson::from_value(v.clone()).map_err(|e| e.message().to_string()));
            }
            if let Some(raw) = protojson::from_str_without_nulls::<crate::pb::GetTaskRequest>(&text) {
                prop_assert_eq!(Ok(raw), protojson::from_value(v.clone()).map_err(|e| e.message().to_string()));
            }
            if let Some(raw) = protojson::from_str_without_nulls::<crate::pb::ListTasksRequest>(&text) {
                prop_assert_eq!(Ok(raw), protojson::from_value(v).map_err(|e| e.message().to_string()));
            }
        }

        #[test]
        fn params_decoding_never_panics(v in json_value()) {
            let _ = protojson::from_value::<crate::pb::SendMessageRequest>(v.clone());
            let _ = protojson::from_value::<crate::pb::ListTasksRequest>(v);
        }

        #[test]
        fn arbitrary_bodies_are_parse_errors_or_requests(body in prop::collection::vec(any::<u8>(), 0..64)) {
            match read(&body) {
                Ok((id, _, _, params)) => {
                    prop_assert!(params.is_object());
                    prop_assert!(id.is_null() || id.is_string() || id.is_number());
                }
                Err((_, kind)) => prop_assert!(matches!(
                    kind,
                    A2aErrorKind::ParseError | A2aErrorKind::InvalidRequest | A2aErrorKind::InvalidParams
                )),
            }
        }
    }

    /// The comparison above is not vacuous: the raw path decodes a good share of
    /// the generated params.
    #[test]
    fn generated_params_often_decode_straight_from_text() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = request_params();
        let (mut send, mut get) = (0, 0);
        for _ in 0..1000 {
            let v = strategy.new_tree(&mut runner).unwrap().current();
            let text = serde_json::to_string(&v).unwrap();
            send += usize::from(
                protojson::from_str_without_nulls::<crate::pb::SendMessageRequest>(&text).is_some(),
            );
            get += usize::from(
                protojson::from_str_without_nulls::<crate::pb::GetTaskRequest>(&text).is_some(),
            );
        }
        assert!(send >= 50 && get >= 50, "send {send}, get {get} of 1000");
    }

    #[test]
    fn the_reader_takes_valid_requests_and_refuses_the_rest() {
        let ok = read(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t"}}"#);
        assert_eq!(
            ok,
            Ok((json!(7), false, "GetTask".into(), json!({"id": "t"})))
        );
        let null_id = read(br#"{"jsonrpc":"2.0","id":null,"method":"M"}"#);
        assert_eq!(null_id, Ok((Value::Null, false, "M".into(), json!({}))));
        let note = read(br#"{"jsonrpc":"2.0","method":"M","params":null}"#).unwrap();
        assert!(note.1);
        // A duplicate member: the last one, as a parsed object has it; escapes
        // in names and values are read.
        let dup = read(br#"{"jsonrpc":"2.0","id":1,"method":"M","method":"N"}"#).unwrap();
        assert_eq!(dup.2, "N");
        let esc = read(br#"{"json\u0072pc":"2.0","id":1,"method":"M\u0041"}"#).unwrap();
        assert_eq!(esc.2, "MA");
        for (body, kind) in [
            (
                &br#"{"jsonrpc":"1.0","id":1,"method":"M"}"#[..],
                A2aErrorKind::InvalidRequest,
            ),
            (
                br#"{"jsonrpc":"2.0","id":{},"method":"M"}"#,
                A2aErrorKind::InvalidRequest,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"M","params":[1]}"#,
                A2aErrorKind::InvalidParams,
            ),
            (br#"{"jsonrpc":"2.0","id":1}"#, A2aErrorKind::InvalidRequest),
            (br#""2.0""#, A2aErrorKind::InvalidRequest),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"M""#,
                A2aErrorKind::ParseError,
            ),
        ] {
            assert_eq!(
                read(body).map_err(|(_, k)| k).err(),
                Some(kind),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn json_content_types_are_accepted_in_any_case() {
        let ok = |ct: Option<&str>| {
            let mut h = HeaderMap::new();
            if let Some(ct) = ct {
                h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
            }
            content_type_ok(&h)
        };
        for yes in [
            None,
            Some(""),
            Some("application/json"),
            Some("Application/JSON; charset=utf-8"),
            Some(" application/a2a+json "),
            Some("application/vnd.x+JSON;v=1"),
        ] {
            assert!(ok(yes), "{yes:?}");
        }
        for no in [
            Some("text/plain"),
            Some("json"),
            Some("application/jsonx"),
            Some("application/x-json5"),
        ] {
            assert!(!ok(no), "{no:?}");
        }
    }

    #[test]
    fn result_text_wraps_the_result() {
        assert_eq!(
            result_text(&json!("a\"b"), r#"{"x":1}"#),
            r#"{"jsonrpc":"2.0","id":"a\"b","result":{"x":1}}"#
        );
        assert_eq!(
            result_text(&Value::Null, "{}"),
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#
        );
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
