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
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
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
    let mut out = Vec::with_capacity(result.len() + 64);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    if serde_json::to_writer(&mut out, id).is_err() {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result.as_bytes());
    out.push(b'}');
    // Only UTF-8 went in: JSON text from serde_json and the `&str` result.
    String::from_utf8(out).unwrap_or_default()
}

/// A parsed request envelope.
struct Request<'a> {
    id: Value,
    notification: bool,
    method: String,
    params: Params<'a>,
}

/// A request's `params`: a parsed object (batches, the general path), or the raw
/// text of one object (a single request read by [`fast_envelope`]).
enum Params<'a> {
    Value(Value),
    Raw(&'a RawValue),
}

impl Params<'_> {
    fn into_value(self) -> Result<Value> {
        match self {
            Params::Value(v) => Ok(v),
            Params::Raw(raw) => {
                serde_json::from_str(raw.get()).map_err(|e| A2aError::invalid_params("params", e))
            }
        }
    }

    /// The message decoded straight from raw text, when that gives what the
    /// `Value` path gives (see [`protojson::from_str_without_nulls`]).
    fn straight<T: DeserializeOwned>(&self) -> Option<T> {
        match self {
            Params::Raw(raw) => protojson::from_str_without_nulls(raw.get()),
            Params::Value(_) => None,
        }
    }

    /// The params as a request message: straight from the text when that gives
    /// what [`protojson::from_value`] gives, else through it.
    fn decode<T: protojson::ProtoMessage>(self) -> Result<T> {
        match self.straight() {
            Some(t) => Ok(t),
            None => protojson::from_value(self.into_value()?),
        }
    }
}

/// The id to answer with and whether the request is a notification (no `id`
/// member); `None` for an id that is not a string, a number or null.
fn request_id(id: Option<Value>) -> Option<(Value, bool)> {
    match id {
        None => Some((Value::Null, true)),
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => Some((id, false)),
        Some(_) => None,
    }
}

/// Validates an envelope; on failure returns the id to answer with and the error.
fn parse_envelope(v: Value) -> std::result::Result<Request<'static>, (Value, A2aError)> {
    let Value::Object(mut m) = v else {
        return Err((
            Value::Null,
            A2aError::new(
                A2aErrorKind::InvalidRequest,
                "a request must be a JSON object",
            ),
        ));
    };
    let Some((id, notification)) = request_id(m.remove("id")) else {
        return Err((
            Value::Null,
            A2aError::new(
                A2aErrorKind::InvalidRequest,
                "id must be a string, a number or null",
            ),
        ));
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
        params: Params::Value(params),
    })
}

/// The envelope of a well-formed single request, read straight from the body
/// without a `Value` tree around `params` (duplicate or escaped keys, an escaped
/// method name or a wrong member type fail here and take the general path).
#[derive(serde::Deserialize)]
struct FastEnvelope<'a> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(borrow)]
    method: &'a str,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

/// A member that is there, null included (`Option<Value>` alone reads null as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(d).map(Some)
}

/// The request [`parse_envelope`] would return for `body`, when `body` is one valid
/// request object; `None` for everything else (batches, errors), which the general
/// path parses and answers.
fn fast_envelope(body: &[u8]) -> Option<Request<'_>> {
    // A derived struct also reads a JSON array as its fields in order; only an
    // object is a request.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let e: FastEnvelope<'_> = serde_json::from_slice(body).ok()?;
    if e.jsonrpc != "2.0" {
        return None;
    }
    let (id, notification) = request_id(e.id)?;
    let params = match e.params {
        None => Params::Value(Value::Object(Default::default())),
        Some(raw) if raw.get() == "null" => Params::Value(Value::Object(Default::default())),
        Some(raw) if raw.get().starts_with('{') => Params::Raw(raw),
        Some(_) => return None,
    };
    Some(Request {
        id,
        notification,
        method: e.method.to_string(),
        params,
    })
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
    method: &str,
    params: Params<'_>,
) -> Result<ResultText> {
    if method == methods::GET_TASK {
        let text = svc.get_task_json(caller, params.decode()?).await?;
        return Ok(ResultText::Shared(text));
    }
    dispatch_encoded(svc, caller, method, params)
        .await
        .map(ResultText::Owned)
}

/// Every method but GetTask (see [`dispatch`]).
async fn dispatch_encoded(
    svc: &A2aService,
    caller: &Caller,
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
            enc(&Box::pin(svc.send_message(caller, req)).await?)
        }
        LIST_TASKS => enc(&Box::pin(svc.list_tasks(caller, params.decode()?)).await?),
        CANCEL_TASK => enc(&Box::pin(svc.cancel_task(caller, params.decode()?)).await?),
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
    method: &str,
    params: Params<'_>,
    last_event_id: Option<u64>,
) -> Result<FrameStream> {
    if method == methods::SEND_STREAMING_MESSAGE {
        svc.send_streaming_message(
            caller,
            params.decode::<crate::pb::SendMessageRequest>()?,
            last_event_id,
        )
        .await
    } else {
        svc.subscribe_to_task(caller, params.decode()?, last_event_id)
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

pub(crate) fn content_type_ok(headers: &HeaderMap) -> bool {
    match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(ct) => {
            let base = ct.split(';').next().unwrap_or("").trim();
            base.eq_ignore_ascii_case("application/json")
                || base
                    .len()
                    .checked_sub(5)
                    .and_then(|i| base.get(i..))
                    .is_some_and(|end| end.eq_ignore_ascii_case("+json"))
                || base.is_empty()
        }
    }
}

/// The requested version: the `A2A-Version` header, else the query parameter (the
/// query string is only decoded when the header is absent).
pub(crate) fn requested_version<'a>(
    headers: &'a HeaderMap,
    query: Option<&str>,
) -> Option<Cow<'a, str>> {
    if let Some(v) = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(Cow::Borrowed(v));
    }
    let query = query?;
    let mut params: HashMap<String, String> = serde_urlencoded::from_str(query).ok()?;
    params.remove(VERSION_HEADER).map(Cow::Owned)
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
    let body = match crate::body::read(body, svc.config().max_body_bytes).await {
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
    let version = check_version(requested_version(headers, query).as_deref());
    let last_event_id = last_event_id(headers);
    if let Some(req) = fast_envelope(&body) {
        return single(svc, caller, version, req, last_event_id).await;
    }
    let parsed: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            let e = A2aError::new(A2aErrorKind::ParseError, format!("parse error: {e}"));
            return json_response(error_response(&Value::Null, &e));
        }
    };
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
                            Ok(()) => dispatch(svc, caller, &req.method, req.params).await,
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
        one => match parse_envelope(one) {
            Ok(req) => single(svc, caller, version, req, last_event_id).await,
            Err((id, e)) => json_response(error_response(&id, &e)),
        },
    }
}

/// The `Last-Event-ID` header, when it is a sequence number.
pub(crate) fn last_event_id(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
}

/// Answers one request that is not part of a batch.
async fn single(
    svc: &A2aService,
    caller: &Caller,
    version: Result<()>,
    req: Request<'_>,
    last_event_id: Option<u64>,
) -> Response {
    if let Err(e) = version {
        return json_response(error_response(&req.id, &e));
    }
    if is_streaming(&req.method) {
        return match Box::pin(open_stream(
            svc,
            caller,
            &req.method,
            req.params,
            last_event_id,
        ))
        .await
        {
            Ok(frames) => sse_response(req.id, frames),
            Err(e) => json_response(error_response(&req.id, &e)),
        };
    }
    let r = dispatch(svc, caller, &req.method, req.params).await;
    if req.notification {
        return StatusCode::NO_CONTENT.into_response();
    }
    match r {
        Ok(v) => json_text_response(result_text(&req.id, &v)),
        Err(e) => json_response(error_response(&req.id, &e)),
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

    proptest! {
        #[test]
        fn envelope_parser_never_panics_and_errors_are_request_errors(v in json_value()) {
            match parse_envelope(v) {
                Ok(r) => prop_assert!(r.params.into_value().unwrap().is_object()),
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
        fn fast_envelope_agrees_with_the_general_parser(
            v in prop_oneof![json_value(), envelope()],
            pretty in any::<bool>(),
        ) {
            let body = if pretty {
                serde_json::to_vec_pretty(&v).unwrap()
            } else {
                serde_json::to_vec(&v).unwrap()
            };
            if let Some(fast) = fast_envelope(&body) {
                let general = parse_envelope(v);
                prop_assert!(general.is_ok(), "the fast path took a request the general one refuses");
                let general = general.unwrap();
                prop_assert_eq!(fast.id, general.id);
                prop_assert_eq!(fast.notification, general.notification);
                prop_assert_eq!(fast.method, general.method);
                prop_assert_eq!(fast.params.into_value().unwrap(), general.params.into_value().unwrap());
            }
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
        fn arbitrary_bodies_are_parse_errors_or_values(body in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                let _ = parse_envelope(v);
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
    fn fast_envelope_takes_valid_requests_and_leaves_the_rest() {
        let ok =
            fast_envelope(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t"}}"#)
                .unwrap();
        assert_eq!(
            (ok.id, ok.notification, ok.method.as_str()),
            (json!(7), false, "GetTask")
        );
        assert_eq!(ok.params.into_value().unwrap(), json!({"id": "t"}));
        let null_id = fast_envelope(br#"{"jsonrpc":"2.0","id":null,"method":"M"}"#).unwrap();
        assert_eq!((null_id.id, null_id.notification), (Value::Null, false));
        assert_eq!(null_id.params.into_value().unwrap(), json!({}));
        let note = fast_envelope(br#"{"jsonrpc":"2.0","method":"M","params":null}"#).unwrap();
        assert!(note.notification);
        for general in [
            &br#"[{"jsonrpc":"2.0","id":1,"method":"M"}]"#[..],
            br#"{"jsonrpc":"1.0","id":1,"method":"M"}"#,
            br#"{"jsonrpc":"2.0","id":{},"method":"M"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"M","params":[1]}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"M","method":"N"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"M\u0041"}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
            br#"["2.0",1,"M"]"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"M""#,
        ] {
            assert!(
                fast_envelope(general).is_none(),
                "{}",
                String::from_utf8_lossy(general)
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
