//! The HTTP+JSON binding (A2A 1.0 §11) under [`REST_PATH`] (`/a2a/rest`, the
//! url of the card's `HTTP+JSON` interface), on the same [`A2aService`] as the
//! JSON-RPC and gRPC bindings:
//!
//! | call | route (each also under `/{tenant}`) |
//! |---|---|
//! | SendMessage | `POST /message:send` |
//! | SendStreamingMessage | `POST /message:stream` (SSE) |
//! | GetTask | `GET /tasks/{id}` (`?historyLength=`) |
//! | ListTasks | `GET /tasks` (query parameters in camelCase) |
//! | CancelTask | `POST /tasks/{id}:cancel` |
//! | SubscribeToTask | `POST` or `GET /tasks/{id}:subscribe` (SSE) |
//! | CreateTaskPushNotificationConfig | `POST /tasks/{id}/pushNotificationConfigs` |
//! | ListTaskPushNotificationConfigs | `GET /tasks/{id}/pushNotificationConfigs` |
//! | GetTaskPushNotificationConfig | `GET /tasks/{id}/pushNotificationConfigs/{configId}` |
//! | DeleteTaskPushNotificationConfig | `DELETE /tasks/{id}/pushNotificationConfigs/{configId}` |
//! | GetExtendedAgentCard | `GET /extendedAgentCard` |
//!
//! Bodies and answers are ProtoJSON ([`crate::protojson`]) with the media type
//! `application/a2a+json` (requests may also say `application/json`, any
//! `+json` type, or nothing). Errors are a `google.rpc.Status` object,
//! `{"error": {"code", "status", "message", "details": [ErrorInfo]}}`, with the
//! HTTP status of A2A 1.0.1 §5.4 ([`A2aErrorKind::http_status`]). Streams are
//! SSE whose `data:` is a `StreamResponse` (`id:` the event sequence,
//! `Last-Event-ID` resumes, as on JSON-RPC); an error after the stream opened
//! is an `event: error` whose data is the error object.
//!
//! A `/{tenant}` prefix fills the request's `tenant` field, which (as on the
//! other bindings) does not choose the caller's tenant: that comes from
//! authentication.
//!
//! axum cannot route a parameter with a literal suffix in one segment
//! (`/tasks/{id}:cancel`), so `/tasks/{task}` takes the whole segment and the
//! handler splits the `:verb` off itself.

use std::convert::Infallible;

use axum::body::Body;
use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::{RawPathParams, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{json, Map, Value};
use taskwire_core::Caller;
use taskwire_vocab::a2a::A2aErrorKind;
#[cfg(test)]
use taskwire_vocab::a2a::ERROR_INFO_TYPE;
use taskwire_wire::a2a::errors::RestErrorBody;

use crate::error::A2aError;
use crate::http::{
    content_type_ok, last_event_id, negotiate, requested_version, rest_base, unstated_is_0_3,
    Requested,
};
use crate::service::{A2aService, FrameStream};
use crate::{pb, protojson};

/// The media type of the binding's bodies.
pub const MEDIA_TYPE: &str = "application/a2a+json";

pub use crate::http::REST_PATH;

const SEND: &str = concat!(rest_base!(), "/message:send");
const STREAM: &str = concat!(rest_base!(), "/message:stream");
const TASKS: &str = concat!(rest_base!(), "/tasks");
const TASK: &str = concat!(rest_base!(), "/tasks/{task}");
const CONFIGS: &str = concat!(rest_base!(), "/tasks/{task}/pushNotificationConfigs");
const CONFIG: &str = concat!(
    rest_base!(),
    "/tasks/{task}/pushNotificationConfigs/{config}"
);
const CARD: &str = concat!(rest_base!(), "/extendedAgentCard");
const T_SEND: &str = concat!(rest_base!(), "/{tenant}/message:send");
const T_STREAM: &str = concat!(rest_base!(), "/{tenant}/message:stream");
const T_TASKS: &str = concat!(rest_base!(), "/{tenant}/tasks");
const T_TASK: &str = concat!(rest_base!(), "/{tenant}/tasks/{task}");
const T_CONFIGS: &str = concat!(
    rest_base!(),
    "/{tenant}/tasks/{task}/pushNotificationConfigs"
);
const T_CONFIG: &str = concat!(
    rest_base!(),
    "/{tenant}/tasks/{task}/pushNotificationConfigs/{config}"
);
const T_CARD: &str = concat!(rest_base!(), "/{tenant}/extendedAgentCard");

/// Every route pattern of the binding (axum's syntax), for a server's route
/// table and metric labels.
pub const ROUTE_PATTERNS: [&str; 14] = [
    SEND, STREAM, TASKS, TASK, CONFIGS, CONFIG, CARD, T_SEND, T_STREAM, T_TASKS, T_TASK, T_CONFIGS,
    T_CONFIG, T_CARD,
];

/// The binding's routes (state: the shared service). Handlers read
/// `Extension<Caller>` and their bodies within `A2aConfig::max_body_bytes`.
pub(crate) fn routes() -> Router<A2aService> {
    let mut r = Router::new();
    for (send, stream, tasks, task, configs, config, card) in [
        (SEND, STREAM, TASKS, TASK, CONFIGS, CONFIG, CARD),
        (
            T_SEND, T_STREAM, T_TASKS, T_TASK, T_CONFIGS, T_CONFIG, T_CARD,
        ),
    ] {
        r = r
            .route(send, post(message_send))
            .route(stream, post(message_stream))
            .route(tasks, get(list_tasks))
            .route(task, get(task_get).post(task_post))
            .route(configs, get(push_list).post(push_create))
            .route(config, get(push_get).delete(push_delete))
            .route(card, get(extended_card));
    }
    r
}

/// An error answered in the binding's shape.
#[derive(Debug)]
struct RestError {
    status: StatusCode,
    error: A2aError,
}

impl From<A2aError> for RestError {
    fn from(error: A2aError) -> Self {
        let status = StatusCode::from_u16(error.kind().http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Self { status, error }
    }
}

/// The error object (a `google.rpc.Status` in JSON) for an error answered with
/// HTTP `status`.
pub fn error_body(status: StatusCode, e: &A2aError) -> Value {
    json!(RestErrorBody::new(status.as_u16(), e.kind(), e.message()))
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        let mut res = body_response(
            self.status,
            error_body(self.status, &self.error).to_string(),
        );
        if self.error.kind().retryable() {
            res.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(taskwire_wire::a2a::errors::RETRY_AFTER_SECS),
            );
        }
        res
    }
}

type Reply = Result<Response, RestError>;

fn body_response(status: StatusCode, text: String) -> Response {
    let mut res = Response::new(Body::from(text));
    *res.status_mut() = status;
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
    res
}

fn ok<T: Serialize>(msg: &T) -> Reply {
    Ok(body_response(StatusCode::OK, protojson::to_string(msg)?))
}

fn answer(r: Reply) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

/// The path parameters of a route: the tenant prefix, the task segment (with
/// its `:verb` for `/tasks/{task}`) and the push config id.
#[derive(Debug, Default)]
struct PathArgs {
    tenant: Option<String>,
    task: String,
    config: String,
    /// The requested version (set by [`check`]).
    version: Requested,
}

impl PathArgs {
    fn of(p: Result<RawPathParams, RawPathParamsRejection>) -> Result<Self, RestError> {
        let params = match p {
            Ok(p) => p,
            Err(RawPathParamsRejection::MissingPathParams(_)) => return Ok(Self::default()),
            Err(_) => {
                return Err(A2aError::new(
                    A2aErrorKind::InvalidRequest,
                    "a path parameter is not valid UTF-8",
                )
                .into())
            }
        };
        let mut out = Self::default();
        for (k, v) in &params {
            match k {
                "tenant" => out.tenant = Some(v.to_string()),
                "task" => out.task = v.to_string(),
                "config" => out.config = v.to_string(),
                _ => {}
            }
        }
        Ok(out)
    }

    /// The tenant for a request message: the path's, else the body's.
    fn tenant(&self, body: String) -> String {
        self.tenant.clone().unwrap_or(body)
    }
}

/// A2A 0.3's HTTP+JSON paths all begin with `/v1` (`/v1/message:send`,
/// `/v1/tasks/{id}`); below this binding's url that is the tenant segment.
const V0_3_PREFIX: &str = "v1";

/// What every call checks first: the requested protocol version. Without
/// one (read as 0.3 by A2A 1.0 §3.6.2), a 0.3 path (`/v1/…`) is
/// VersionNotSupported; with `A2A-Version: 1.0`, `v1` is a tenant like any.
fn check(
    args: &PathArgs,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<Requested, RestError> {
    let v = negotiate(requested_version(headers, query).as_deref())?;
    if v == Requested::Unstated && args.tenant.as_deref() == Some(V0_3_PREFIX) {
        return Err(unstated_is_0_3("a path under /v1").into());
    }
    Ok(v)
}

/// What every route does first: its path arguments, and the request split into
/// head and body once the requested A2A version is checked.
fn accept(
    path: PathResult,
    req: axum::extract::Request,
) -> Result<(PathArgs, axum::http::request::Parts, Body), RestError> {
    let mut args = PathArgs::of(path)?;
    let (parts, body) = req.into_parts();
    args.version = check(&args, &parts.headers, parts.uri.query())?;
    Ok((args, parts, body))
}

/// The request body as ProtoJSON text: a content type that is not JSON is
/// ContentTypeNotSupported (400, before reading), a body over the limit 413,
/// one that cannot be read 400. An empty body is `{}`.
async fn read_body(svc: &A2aService, headers: &HeaderMap, body: Body) -> Result<String, RestError> {
    if !content_type_ok(headers) {
        return Err(A2aError::new(
            A2aErrorKind::ContentTypeNotSupported,
            format!("HTTP+JSON requests must be {MEDIA_TYPE} or application/json"),
        )
        .into());
    }
    let bytes = crate::body::read(headers, body, svc.config().max_body_bytes)
        .await
        .map_err(|(status, error)| RestError { status, error })?;
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|_| A2aError::new(A2aErrorKind::ParseError, "the request body is not UTF-8"))?;
    if text.trim().is_empty() {
        return Ok("{}".into());
    }
    Ok(text)
}

/// The body text as JSON: a parse error, or a body that is not an object, is
/// refused (400).
fn body_value(text: &str) -> Result<Value, RestError> {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(A2aError::new(
            A2aErrorKind::InvalidRequest,
            "the request body must be a JSON object",
        )
        .into()),
        Err(e) => Err(A2aError::new(A2aErrorKind::ParseError, format!("parse error: {e}")).into()),
    }
}

/// A request message from the body text (straight from the text when that gives
/// what the `Value` path gives, as on JSON-RPC).
fn decode<T: protojson::ProtoMessage>(text: &str) -> Result<T, RestError> {
    if text.trim_start().starts_with('{') {
        if let Some(t) = protojson::from_str_without_nulls(text) {
            return Ok(t);
        }
    }
    Ok(protojson::from_value(body_value(text)?)?)
}

/// The type of a query parameter, for turning its text into ProtoJSON.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Int,
    Bool,
    /// A `TaskState`: its name, or a short form (`working`, `input-required`).
    State,
}

/// Query parameters as a ProtoJSON object, for the fields `fields` names
/// (camelCase; the proto's snake_case name is accepted too). Other parameters
/// (`A2A-Version`, …) are ignored; the last of a repeated one wins.
fn query_value(query: Option<&str>, fields: &[(&str, &str, Kind)]) -> Result<Value, RestError> {
    let pairs: Vec<(String, String)> = match query {
        None | Some("") => Vec::new(),
        Some(q) => serde_urlencoded::from_str(q).map_err(|e| {
            A2aError::new(
                A2aErrorKind::InvalidParams,
                format!("invalid query string: {e}"),
            )
        })?,
    };
    let mut out = Map::new();
    for (k, v) in pairs {
        let Some(&(camel, _, kind)) = fields.iter().find(|(c, s, _)| *c == k || *s == k) else {
            continue;
        };
        let bad = |what: &str| -> RestError {
            A2aError::invalid_params(camel, format!("{v:?} is not {what}")).into()
        };
        let val = match kind {
            Kind::Text => Value::String(v.clone()),
            Kind::Int => Value::from(v.trim().parse::<i64>().map_err(|_| bad("an integer"))?),
            Kind::Bool => match v.trim() {
                "true" | "1" => Value::Bool(true),
                "false" | "0" => Value::Bool(false),
                _ => return Err(bad("true or false")),
            },
            Kind::State => Value::String(state_name(&v)),
        };
        out.insert(camel.to_string(), val);
    }
    Ok(Value::Object(out))
}

/// A `TaskState` query value as its enum name: `TASK_STATE_WORKING` stays,
/// `working` and `input-required` get the prefix.
fn state_name(v: &str) -> String {
    let up = v.trim().to_ascii_uppercase().replace('-', "_");
    if up.starts_with("TASK_STATE_") || up.chars().all(|c| c.is_ascii_digit()) {
        up
    } else {
        format!("TASK_STATE_{up}")
    }
}

/// `currentGeneration` is A2A 1.1's long poll (read only with `A2A-Version: 1.1`).
const GET_TASK_QUERY: &[(&str, &str, Kind)] = &[
    ("historyLength", "history_length", Kind::Int),
    ("currentGeneration", "current_generation", Kind::Int),
];
const LIST_TASKS_QUERY: &[(&str, &str, Kind)] = &[
    ("contextId", "context_id", Kind::Text),
    ("status", "status", Kind::State),
    ("pageSize", "page_size", Kind::Int),
    ("pageToken", "page_token", Kind::Text),
    ("historyLength", "history_length", Kind::Int),
    ("statusTimestampAfter", "status_timestamp_after", Kind::Text),
    ("includeArtifacts", "include_artifacts", Kind::Bool),
];
const LIST_CONFIGS_QUERY: &[(&str, &str, Kind)] = &[
    ("pageSize", "page_size", Kind::Int),
    ("pageToken", "page_token", Kind::Text),
];

/// SSE answer of a streaming call: one `StreamResponse` per event; an error
/// ends the stream with an `event: error` carrying the error object.
fn sse(frames: FrameStream) -> Response {
    let events = frames.map(|r| {
        let ev = match r.and_then(|(seq, frame)| Ok((seq, protojson::to_string(&frame)?))) {
            Ok((seq, text)) => {
                let ev = SseEvent::default().data(text);
                if seq > 0 {
                    ev.id(seq.to_string())
                } else {
                    ev
                }
            }
            Err(e) => {
                let status = RestError::from(e);
                SseEvent::default()
                    .event("error")
                    .data(error_body(status.status, &status.error).to_string())
            }
        };
        Ok::<_, Infallible>(ev)
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

type PathResult = Result<RawPathParams, RawPathParamsRejection>;

/// `POST /message:send`.
async fn message_send(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let (args, parts, body) = accept(path, req)?;
            let text = read_body(&svc, &parts.headers, body).await?;
            let mut r = decode::<pb::SendMessageRequest>(&text)?;
            r.tenant = args.tenant(std::mem::take(&mut r.tenant));
            ok(&Box::pin(svc.send_message(&caller, args.version, r)).await?)
        }
        .await,
    )
}

/// `POST /message:stream`.
async fn message_stream(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let (args, parts, body) = accept(path, req)?;
            let text = read_body(&svc, &parts.headers, body).await?;
            let mut r = decode::<pb::SendMessageRequest>(&text)?;
            r.tenant = args.tenant(std::mem::take(&mut r.tenant));
            let frames = Box::pin(svc.send_streaming_message(
                &caller,
                args.version,
                r,
                last_event_id(&parts.headers),
            ))
            .await?;
            Ok(sse(frames))
        }
        .await,
    )
}

/// `GET /tasks`.
async fn list_tasks(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let (args, parts, _) = accept(path, req)?;
            let mut r: pb::ListTasksRequest =
                protojson::from_value(query_value(parts.uri.query(), LIST_TASKS_QUERY)?)?;
            r.tenant = args.tenant(String::new());
            let r = Box::pin(svc.list_tasks(&caller, args.version, r)).await?;
            ok(&taskwire_wire::a2a::protojson::ListTasksResponseJson(&r))
        }
        .await,
    )
}

/// The task id and the `:verb` of a `/tasks/{task}` segment.
fn split_verb(segment: &str) -> (&str, Option<&str>) {
    match segment.rsplit_once(':') {
        Some((id, verb)) => (id, Some(verb)),
        None => (segment, None),
    }
}

fn no_such_call(method: &str, segment: &str) -> RestError {
    A2aError::new(
        A2aErrorKind::MethodNotFound,
        format!("no HTTP+JSON call is {method} /tasks/{segment}"),
    )
    .into()
}

/// `GET /tasks/{id}` (GetTask) and `GET /tasks/{id}:subscribe`.
async fn task_get(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let (args, parts, _) = accept(path, req)?;
            match split_verb(&args.task) {
                (id, None) => {
                    let mut r: pb::GetTaskRequest =
                        protojson::from_value(query_value(parts.uri.query(), GET_TASK_QUERY)?)?;
                    r.id = id.to_string();
                    r.tenant = args.tenant(String::new());
                    let text = svc.get_task_json(&caller, args.version, r).await?;
                    Ok(body_response(StatusCode::OK, text.to_string()))
                }
                (id, Some("subscribe")) => {
                    let r = pb::SubscribeToTaskRequest {
                        tenant: args.tenant(String::new()),
                        id: id.to_string(),
                    };
                    subscribe(&svc, &caller, args.version, r, &parts.headers).await
                }
                _ => Err(no_such_call("GET", &args.task)),
            }
        }
        .await,
    )
}

async fn subscribe(
    svc: &A2aService,
    caller: &Caller,
    v: Requested,
    r: pb::SubscribeToTaskRequest,
    headers: &HeaderMap,
) -> Reply {
    let frames = Box::pin(svc.subscribe_to_task(caller, v, r, last_event_id(headers))).await?;
    Ok(sse(frames))
}

/// `POST /tasks/{id}:cancel` and `POST /tasks/{id}:subscribe`; the body (a
/// CancelTaskRequest or SubscribeToTaskRequest) is optional, the path's id wins.
async fn task_post(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let (args, parts, body) = accept(path, req)?;
            let (id, verb) = split_verb(&args.task);
            if !matches!(verb, Some("cancel" | "subscribe")) {
                return Err(no_such_call("POST", &args.task));
            }
            let text = read_body(&svc, &parts.headers, body).await?;
            if verb == Some("cancel") {
                let mut r: pb::CancelTaskRequest = decode(&text)?;
                r.id = id.to_string();
                r.tenant = args.tenant(std::mem::take(&mut r.tenant));
                ok(&Box::pin(svc.cancel_task(&caller, args.version, r)).await?)
            } else {
                let mut r: pb::SubscribeToTaskRequest = decode(&text)?;
                r.id = id.to_string();
                r.tenant = args.tenant(std::mem::take(&mut r.tenant));
                subscribe(&svc, &caller, args.version, r, &parts.headers).await
            }
        }
        .await,
    )
}

/// `POST /tasks/{id}/pushNotificationConfigs`: the body is the
/// TaskPushNotificationConfig; the path's task id wins.
async fn push_create(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let (args, parts, body) = accept(path, req)?;
            let text = read_body(&svc, &parts.headers, body).await?;
            let mut r: pb::TaskPushNotificationConfig = decode(&text)?;
            r.task_id = args.task.clone();
            r.tenant = args.tenant(std::mem::take(&mut r.tenant));
            ok(&Box::pin(svc.create_push_config(&caller, r)).await?)
        }
        .await,
    )
}

/// `GET /tasks/{id}/pushNotificationConfigs`.
async fn push_list(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let (args, parts, _) = accept(path, req)?;
            let mut r: pb::ListTaskPushNotificationConfigsRequest =
                protojson::from_value(query_value(parts.uri.query(), LIST_CONFIGS_QUERY)?)?;
            r.task_id = args.task.clone();
            r.tenant = args.tenant(String::new());
            ok(&Box::pin(svc.list_push_configs(&caller, r)).await?)
        }
        .await,
    )
}

/// `GET /tasks/{id}/pushNotificationConfigs/{configId}`.
async fn push_get(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let (args, _, _) = accept(path, req)?;
            let r = pb::GetTaskPushNotificationConfigRequest {
                tenant: args.tenant(String::new()),
                task_id: args.task.clone(),
                id: args.config.clone(),
            };
            ok(&Box::pin(svc.get_push_config(&caller, r)).await?)
        }
        .await,
    )
}

/// `DELETE /tasks/{id}/pushNotificationConfigs/{configId}`: `{}`, also when
/// the config is already gone (delete is idempotent).
async fn push_delete(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let (args, _, _) = accept(path, req)?;
            let r = pb::DeleteTaskPushNotificationConfigRequest {
                tenant: args.tenant(String::new()),
                task_id: args.task.clone(),
                id: args.config.clone(),
            };
            Box::pin(svc.delete_push_config(&caller, r)).await?;
            Ok(body_response(StatusCode::OK, "{}".into()))
        }
        .await,
    )
}

/// `GET /extendedAgentCard`.
async fn extended_card(
    State(svc): State<A2aService>,
    Extension(caller): Extension<Caller>,
    path: PathResult,
    req: axum::extract::Request,
) -> Response {
    answer(
        async {
            let _ = accept(path, req)?;
            ok(&svc.extended_agent_card(&caller)?)
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store that did not answer is 503 UNAVAILABLE with Retry-After, the
    /// ErrorInfo saying a retry with the same messageId is safe.
    #[test]
    fn an_unavailable_store_is_503_with_retry_after() {
        let e = A2aError::from(taskwire_core::CoreError::Unavailable("dsn".into()));
        let res = RestError::from(e).into_response();
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(res.headers()[header::RETRY_AFTER], "1");
        let internal = RestError::from(A2aError::internal("x")).into_response();
        assert!(internal.headers().get(header::RETRY_AFTER).is_none());
        let body = error_body(
            StatusCode::SERVICE_UNAVAILABLE,
            &A2aError::from(taskwire_core::CoreError::Unavailable("dsn".into())),
        );
        assert_eq!(body["error"]["status"], "UNAVAILABLE");
        assert_eq!(body["error"]["details"][0]["reason"], "UNAVAILABLE");
        assert_eq!(
            body["error"]["details"][0]["metadata"]["retrySafeWith"],
            "messageId"
        );
        assert!(!body.to_string().contains("dsn"));
    }

    #[test]
    fn verbs_split_off_the_last_colon() {
        assert_eq!(split_verb("abc"), ("abc", None));
        assert_eq!(split_verb("abc:cancel"), ("abc", Some("cancel")));
        assert_eq!(split_verb("a:b:subscribe"), ("a:b", Some("subscribe")));
    }

    #[test]
    fn query_parameters_become_protojson() {
        let v = query_value(
            Some("pageSize=5&status=input-required&includeArtifacts=true&context_id=c&A2A-Version=1.0&x=y"),
            LIST_TASKS_QUERY,
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"pageSize": 5, "status": "TASK_STATE_INPUT_REQUIRED", "includeArtifacts": true, "contextId": "c"})
        );
        let r: pb::ListTasksRequest = protojson::from_value(v).unwrap();
        assert_eq!(r.page_size, Some(5));
        assert_eq!(r.status, pb::TaskState::InputRequired as i32);
        assert_eq!(state_name("TASK_STATE_WORKING"), "TASK_STATE_WORKING");
        assert_eq!(state_name("working"), "TASK_STATE_WORKING");
        let e = query_value(Some("pageSize=ten"), LIST_TASKS_QUERY).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert_eq!(e.error.kind(), A2aErrorKind::InvalidParams);
        assert!(
            e.error.message().contains("pageSize"),
            "{}",
            e.error.message()
        );
        let e = query_value(Some("includeArtifacts=yes"), LIST_TASKS_QUERY).unwrap_err();
        assert_eq!(e.error.kind(), A2aErrorKind::InvalidParams);
        assert_eq!(query_value(None, LIST_TASKS_QUERY).unwrap(), json!({}));
    }

    #[test]
    fn error_bodies_are_google_rpc_status() {
        let e = RestError::from(A2aError::task_not_found());
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        let v = error_body(e.status, &e.error);
        assert_eq!(v["error"]["code"], 404);
        assert_eq!(v["error"]["status"], "NOT_FOUND");
        assert_eq!(v["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(v["error"]["details"][0]["@type"], ERROR_INFO_TYPE);
        for (kind, status) in [
            (A2aErrorKind::TaskNotCancelable, 400),
            (A2aErrorKind::ContentTypeNotSupported, 400),
            (A2aErrorKind::InvalidAgentResponse, 500),
            (A2aErrorKind::VersionNotSupported, 400),
            (A2aErrorKind::MethodNotFound, 404),
        ] {
            assert_eq!(
                RestError::from(A2aError::new(kind, "x")).status.as_u16(),
                status,
                "{kind:?}"
            );
        }
    }
}
