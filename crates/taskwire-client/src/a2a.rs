//! A2A 1.0 over JSON-RPC 2.0 (`POST {base}/a2a`, or the JSONRPC url of the
//! agent card), with SSE streams.
//!
//! Every request carries `A2A-Version: 1.0`. Params and results are ProtoJSON
//! of the `lf.a2a.v1` messages ([`pb`], generated from `proto/a2a.proto`); each
//! call returns the typed message together with the JSON it came from
//! ([`Received`]). Errors are [`ClientError::Rpc`] with the JSON-RPC code,
//! message, `error.data` and the `google.rpc.ErrorInfo` reason.
//!
//! Streams ([`A2aStream`]) reconnect after a break with `Last-Event-ID` and
//! exponential backoff with jitter, and fall back to polling `GetTask` when
//! the stream cannot be re-established.

use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::a2a_stream::{FrameStream, RawJson, StreamKind, StreamSource};
use crate::config::{ClientConfig, Exchange, Received};
use crate::error::ClientError;
use crate::http::{self, RawResponse};

pub use crate::a2a_stream::{is_interrupted, is_terminal, A2aEvent, A2aStream, EventOrigin};

/// The `lf.a2a.v1` messages of the wire layer (prost, with ProtoJSON serde, and
/// the gRPC client stubs in `a2a_service_client`).
pub use taskwire_wire::a2a::pb;

/// The protocol version this client speaks (`A2A-Version` header).
pub const A2A_VERSION: &str = "1.0";
/// The version header.
pub const VERSION_HEADER: &str = "A2A-Version";
/// Where the public agent card is.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// The default JSON-RPC path below the base url.
pub const DEFAULT_PATH: &str = "/a2a";
/// The `protocolBinding` of a JSON-RPC interface on the card.
pub const BINDING_JSONRPC: &str = "JSONRPC";
/// The `protocolBinding` of a gRPC interface on the card.
pub const BINDING_GRPC: &str = "GRPC";

/// The JSON-RPC method names (the RPC names of `A2AService`), shared with
/// taskwire-a2a.
pub use taskwire_wire::names::a2a::methods as method;

/// The A2A error codes (JSON-RPC binding) and their `ErrorInfo` reasons, from
/// the wire layer's table of error kinds.
pub mod code {
    use taskwire_wire::a2a::errors::A2aErrorKind as K;

    /// TaskNotFound.
    pub const TASK_NOT_FOUND: i64 = K::TaskNotFound.code();
    /// TaskNotCancelable.
    pub const TASK_NOT_CANCELABLE: i64 = K::TaskNotCancelable.code();
    /// PushNotificationNotSupported.
    pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = K::PushNotificationNotSupported.code();
    /// UnsupportedOperation.
    pub const UNSUPPORTED_OPERATION: i64 = K::UnsupportedOperation.code();
    /// ContentTypeNotSupported.
    pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = K::ContentTypeNotSupported.code();
    /// InvalidAgentResponse.
    pub const INVALID_AGENT_RESPONSE: i64 = K::InvalidAgentResponse.code();
    /// ExtendedAgentCardNotConfigured.
    pub const EXTENDED_AGENT_CARD_NOT_CONFIGURED: i64 = K::ExtendedAgentCardNotConfigured.code();
    /// ExtensionSupportRequired.
    pub const EXTENSION_SUPPORT_REQUIRED: i64 = K::ExtensionSupportRequired.code();
    /// VersionNotSupported.
    pub const VERSION_NOT_SUPPORTED: i64 = K::VersionNotSupported.code();
    /// Parse error.
    pub const PARSE_ERROR: i64 = K::ParseError.code();
    /// Invalid request.
    pub const INVALID_REQUEST: i64 = K::InvalidRequest.code();
    /// Method not found.
    pub const METHOD_NOT_FOUND: i64 = K::MethodNotFound.code();
    /// Invalid params.
    pub const INVALID_PARAMS: i64 = K::InvalidParams.code();
    /// Internal error.
    pub const INTERNAL: i64 = K::Internal.code();

    /// The code of a `google.rpc.ErrorInfo` reason (A2A reasons and the
    /// standard JSON-RPC ones; `INVALID_ARGUMENT` and `INTERNAL`, which some
    /// servers send, are read as Invalid Params and Internal).
    pub fn of_reason(reason: &str) -> Option<i64> {
        match reason {
            "INVALID_ARGUMENT" => Some(INVALID_PARAMS),
            "INTERNAL" => Some(INTERNAL),
            r => K::from_reason(r).map(K::code),
        }
    }
}

/// The agent card's url at the origin (scheme, host and port) of `base_url`,
/// when `base_url` has a path below the origin; `None` otherwise.
pub fn origin_card_url(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let path = url.path().trim_end_matches('/');
    if path.is_empty() {
        return None;
    }
    let origin = url.origin();
    origin
        .is_tuple()
        .then(|| format!("{}{AGENT_CARD_PATH}", origin.ascii_serialization()))
}

/// A user message with one text part and a random `messageId`.
pub fn text_message(text: impl Into<String>) -> pb::Message {
    pb::Message {
        message_id: random_id(),
        role: pb::Role::User as i32,
        parts: vec![pb::Part {
            content: Some(pb::part::Content::Text(text.into())),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A `SendMessageRequest` for a text message; with `return_immediately`, the
/// send does not wait for the task to end.
pub fn text_request(text: impl Into<String>, return_immediately: bool) -> pb::SendMessageRequest {
    let mut req = send_request(text_message(text));
    if return_immediately {
        req.configuration = Some(pb::SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        });
    }
    req
}

/// A `SendMessageRequest` for `message` with default configuration (blocking).
pub fn send_request(message: pb::Message) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(message),
        ..Default::default()
    }
}

/// A 128-bit random id, 32 hex digits.
pub fn random_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // No OS randomness: fall back to time and a counter (still unique).
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b = (t ^ u128::from(http::next_id())).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The text of all text parts of a message, joined with newlines.
pub fn message_text(m: &pb::Message) -> String {
    parts_text(&m.parts)
}

/// The text of all text parts, joined with newlines.
pub fn parts_text(parts: &[pb::Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match &p.content {
            Some(pb::part::Content::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The A2A JSON-RPC client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct A2aClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ClientConfig,
    http: reqwest::Client,
    endpoint: String,
    /// The endpoint parsed once (`None` if it does not parse: each request
    /// then fails with reqwest's own error).
    endpoint_url: Option<reqwest::Url>,
}

impl A2aClient {
    /// A client for `{base}/a2a`.
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        let endpoint = config.url(DEFAULT_PATH);
        Self::with_endpoint(config, endpoint)
    }

    /// A client for the JSON-RPC endpoint `url` (absolute, or a path below the
    /// base url).
    pub fn with_endpoint(config: ClientConfig, url: impl AsRef<str>) -> Result<Self, ClientError> {
        let http = config.http_client()?;
        let endpoint = config.url(url.as_ref());
        let endpoint_url = reqwest::Url::parse(&endpoint).ok();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                http,
                endpoint,
                endpoint_url,
            }),
        })
    }

    /// Fetches the agent card and returns a client for its JSONRPC interface
    /// (`{base}/a2a` if the card lists none), with the card.
    pub async fn discover(
        config: ClientConfig,
    ) -> Result<(Self, Received<pb::AgentCard>), ClientError> {
        let probe = Self::new(config.clone())?;
        let card = probe.agent_card().await?;
        let url = interface_url(&card, BINDING_JSONRPC);
        let client = match url {
            Some(u) => Self::with_endpoint(config, u)?,
            None => probe,
        };
        Ok((client, card))
    }

    /// The JSON-RPC endpoint.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// A POST to the endpoint.
    fn post(&self) -> reqwest::RequestBuilder {
        match &self.inner.endpoint_url {
            Some(u) => self.inner.http.post(u.clone()),
            None => self.inner.http.post(&self.inner.endpoint),
        }
    }

    /// The config.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// `GET /.well-known/agent-card.json` below the base url; when the base
    /// url has a path (an endpoint copied from a card, `http://host/a2a`) and
    /// nothing is there (404), at the origin's `/.well-known/agent-card.json`,
    /// where A2A 1.0 §8.2 puts it.
    pub async fn agent_card(&self) -> Result<Received<pb::AgentCard>, ClientError> {
        let c = &self.inner.config;
        let at_base = c.url(AGENT_CARD_PATH);
        let raw = self.get_card(&at_base).await?;
        let raw = match origin_card_url(&c.base_url) {
            Some(at_origin) if raw.status == 404 && at_origin != at_base => {
                self.get_card(&at_origin).await?
            }
            _ => raw,
        };
        let body = http::json_body(&raw)?;
        c.observe(|| Exchange {
            protocol: "a2a",
            operation: format!("GET {AGENT_CARD_PATH}"),
            request: Value::Null,
            status: Some(raw.status),
            response: body.clone(),
        });
        if !(200..300).contains(&raw.status) {
            return Err(http::http_error(&raw));
        }
        typed(body, "AgentCard")
    }

    async fn get_card(&self, url: &str) -> Result<RawResponse, ClientError> {
        let c = &self.inner.config;
        let resp = self
            .inner
            .http
            .get(url)
            .header(VERSION_HEADER, A2A_VERSION)
            .timeout(c.request_timeout)
            .send()
            .await?;
        RawResponse::read_limited(resp, c.max_message_bytes).await
    }

    /// `SendMessage`: blocking unless `configuration.returnImmediately`.
    pub async fn send_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<Received<pb::SendMessageResponse>, ClientError> {
        self.call(method::SEND_MESSAGE, &req).await
    }

    /// `SendStreamingMessage`: a reconnecting stream of events.
    pub async fn send_streaming_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<A2aStream, ClientError> {
        self.stream(StreamKind::Send(Box::new(req)), None).await
    }

    /// `SubscribeToTask`: the task snapshot, then its updates.
    pub async fn subscribe_to_task(&self, id: &str) -> Result<A2aStream, ClientError> {
        self.stream(StreamKind::Subscribe(id.to_string()), None)
            .await
    }

    /// `SubscribeToTask` resuming after `last_event_id` (`Last-Event-ID`).
    pub async fn resubscribe(
        &self,
        id: &str,
        last_event_id: Option<&str>,
    ) -> Result<A2aStream, ClientError> {
        self.stream(
            StreamKind::Subscribe(id.to_string()),
            last_event_id.map(str::to_string),
        )
        .await
    }

    /// `GetTask`, with `historyLength` when given.
    pub async fn get_task(
        &self,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Received<pb::Task>, ClientError> {
        let req = pb::GetTaskRequest {
            id: id.to_string(),
            history_length,
            ..Default::default()
        };
        self.call(method::GET_TASK, &req).await
    }

    /// `ListTasks`.
    pub async fn list_tasks(
        &self,
        req: pb::ListTasksRequest,
    ) -> Result<Received<pb::ListTasksResponse>, ClientError> {
        self.call(method::LIST_TASKS, &req).await
    }

    /// `CancelTask`.
    pub async fn cancel_task(&self, id: &str) -> Result<Received<pb::Task>, ClientError> {
        let req = pb::CancelTaskRequest {
            id: id.to_string(),
            ..Default::default()
        };
        self.call(method::CANCEL_TASK, &req).await
    }

    /// `CreateTaskPushNotificationConfig`.
    pub async fn create_push_config(
        &self,
        config: pb::TaskPushNotificationConfig,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
        self.call(method::CREATE_PUSH_CONFIG, &config).await
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
        let req = pb::GetTaskPushNotificationConfigRequest {
            task_id: task_id.to_string(),
            id: id.to_string(),
            ..Default::default()
        };
        self.call(method::GET_PUSH_CONFIG, &req).await
    }

    /// `ListTaskPushNotificationConfigs`.
    pub async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Received<pb::ListTaskPushNotificationConfigsResponse>, ClientError> {
        let req = pb::ListTaskPushNotificationConfigsRequest {
            task_id: task_id.to_string(),
            ..Default::default()
        };
        self.call(method::LIST_PUSH_CONFIGS, &req).await
    }

    /// `DeleteTaskPushNotificationConfig`.
    pub async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), ClientError> {
        let req = pb::DeleteTaskPushNotificationConfigRequest {
            task_id: task_id.to_string(),
            id: id.to_string(),
            ..Default::default()
        };
        let params = to_json(&req)?;
        self.call_raw(method::DELETE_PUSH_CONFIG, params).await?;
        Ok(())
    }

    /// `GetExtendedAgentCard`.
    pub async fn extended_agent_card(&self) -> Result<Received<pb::AgentCard>, ClientError> {
        self.call(
            method::GET_EXTENDED_AGENT_CARD,
            &pb::GetExtendedAgentCardRequest::default(),
        )
        .await
    }

    /// Calls any method with raw params and returns the raw `result`
    /// (JSON-RPC errors are [`ClientError::Rpc`]).
    pub async fn call_raw(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = http::next_id();
        let body = http::envelope(id, method, params);
        let raw = self.post_raw(body.to_string(), &[]).await?;
        let mut json = match http::json_body(&raw) {
            Ok(v) => v,
            Err(e) => {
                self.observe(method, &body, &raw, &Value::Null);
                return Err(e);
            }
        };
        self.observe(method, &body, &raw, &json);
        if raw.media_type().as_deref() == Some(http::SSE_MEDIA_TYPE) {
            return Err(ClientError::ContentType {
                expected: http::JSON_MEDIA_TYPE.into(),
                got: raw.media_type(),
            });
        }
        http::check_id(&json, id)?;
        http::rpc_result_take(&mut json, Some(raw.status))
    }

    /// POSTs `body` as is to the endpoint (with the version header, auth and
    /// `content-type: application/json` unless `headers` sets one) and returns
    /// the response untouched: for malformed-request probes.
    pub async fn post_raw(
        &self,
        body: impl Into<Bytes>,
        headers: &[(&str, &str)],
    ) -> Result<RawResponse, ClientError> {
        let c = &self.inner.config;
        let mut rb = self.post().timeout(c.request_timeout);
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
        {
            rb = rb.header(VERSION_HEADER, A2A_VERSION);
        }
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            rb = rb.header(reqwest::header::CONTENT_TYPE, http::JSON_MEDIA_TYPE);
        }
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        let resp = self.inner.config.send(rb.body(body.into())).await?;
        RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await
    }

    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        method: &str,
        req: &Req,
    ) -> Result<Received<Resp>, ClientError> {
        let params = to_json(req)?;
        let result = self.call_raw(method, params).await?;
        typed(result, method)
    }

    fn observe(&self, method: &str, request: &Value, raw: &RawResponse, response: &Value) {
        self.inner.config.observe(|| Exchange {
            protocol: "a2a",
            operation: method.to_string(),
            request: request.clone(),
            status: Some(raw.status),
            response: response.clone(),
        });
    }

    async fn stream(
        &self,
        kind: StreamKind,
        last_event_id: Option<String>,
    ) -> Result<A2aStream, ClientError> {
        let c = &self.inner.config;
        A2aStream::start(
            Arc::new(self.clone()),
            kind,
            last_event_id,
            c.backoff.clone(),
            c.poll_interval,
        )
        .await
    }

    async fn open_stream(
        self,
        kind: StreamKind,
        last_event_id: Option<String>,
    ) -> Result<FrameStream, ClientError> {
        let id = http::next_id();
        let encoded = match &kind {
            StreamKind::Send(req) => (
                method::SEND_STREAMING_MESSAGE,
                taskwire_wire::jsonrpc::request_text(id, method::SEND_STREAMING_MESSAGE, req),
            ),
            StreamKind::Subscribe(task) => (
                method::SUBSCRIBE_TO_TASK,
                taskwire_wire::jsonrpc::request_text(
                    id,
                    method::SUBSCRIBE_TO_TASK,
                    &pb::SubscribeToTaskRequest {
                        id: task.clone(),
                        ..Default::default()
                    },
                ),
            ),
        };
        let (method, body) = match encoded {
            (m, Ok(body)) => (m, body),
            (_, Err(e)) => {
                return Err(ClientError::Decode {
                    what: "request (ProtoJSON)".into(),
                    detail: e.to_string(),
                })
            }
        };
        let c = &self.inner.config;
        let mut rb = self
            .post()
            .header(VERSION_HEADER, A2A_VERSION)
            .header(reqwest::header::ACCEPT, http::SSE_MEDIA_TYPE)
            .header(reqwest::header::CONTENT_TYPE, http::JSON_MEDIA_TYPE);
        if let Some(id) = &last_event_id {
            rb = rb.header("Last-Event-ID", id.as_str());
        }
        // The request timeout bounds the wait for the response head only.
        // The request as JSON, for an observer only.
        let sent = c.observer.is_some().then(|| body.clone());
        let request_json = || {
            sent.as_deref()
                .and_then(|b| serde_json::from_str::<Value>(b).ok())
                .unwrap_or(Value::Null)
        };
        let resp = tokio::time::timeout(c.request_timeout, c.send(rb.body(body)))
            .await
            .map_err(|_| ClientError::Timeout(format!("{method}: no response head")))??;
        let status = resp.status().as_u16();
        let ct = http::content_type(&resp);
        if ct.as_deref() != Some(http::SSE_MEDIA_TYPE) {
            // An error (or a server that answers a stream with one result).
            let raw = RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await?;
            let json = http::json_body(&raw)?;
            self.observe(method, &request_json(), &raw, &json);
            let result = http::rpc_result(&json, Some(status))?;
            let response: pb::StreamResponse = parse(&result, "StreamResponse")?;
            let one: FrameStream =
                futures::stream::iter(vec![Ok((None, response, RawJson::value(result)))]).boxed();
            return Ok(one);
        }
        if !(200..300).contains(&status) {
            let raw = RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await?;
            return Err(http::http_error(&raw));
        }
        let observer = c.observer.clone();
        let op = format!("{method} (event)");
        let events = http::sse_events_limited(
            resp.bytes_stream(),
            c.stream_idle_timeout,
            c.max_message_bytes,
        );
        let frames = events.filter_map(move |item| {
            let frame = match item {
                Err(e) => Some(Err(e)),
                Ok(ev) if ev.data.trim().is_empty() => None,
                Ok(ev) => Some(
                    stream_frame(ev.data, observer.as_ref(), &op)
                        .map(|(response, raw)| (ev.id, response, raw)),
                ),
            };
            futures::future::ready(frame)
        });
        Ok(frames.boxed())
    }
}

impl StreamSource for A2aClient {
    fn open(
        &self,
        kind: StreamKind,
        last_event_id: Option<String>,
    ) -> BoxFuture<'static, Result<FrameStream, ClientError>> {
        self.clone().open_stream(kind, last_event_id).boxed()
    }

    fn get_task(&self, id: String) -> BoxFuture<'static, Result<(pb::Task, Value), ClientError>> {
        let me = self.clone();
        async move {
            let t = A2aClient::get_task(&me, &id, None).await?;
            Ok((t.value, t.raw))
        }
        .boxed()
    }
}

/// A JSON-RPC response of an A2A stream, read in one pass: its `result` into
/// the typed event, its `error` (rare) as JSON.
#[derive(serde::Deserialize)]
struct StreamEnvelope {
    #[serde(default)]
    result: Option<pb::StreamResponse>,
    #[serde(default)]
    error: Option<Value>,
}

/// Reads the `data` of one SSE event of an A2A stream: a JSON-RPC response
/// whose `result` is a `StreamResponse`, decoded straight from the text in
/// one pass (the JSON tree is built only for an observer, or when the event's
/// `raw` is asked for); its `error` is [`ClientError::Rpc`].
fn stream_frame(
    data: String,
    observer: Option<&crate::config::ExchangeObserver>,
    op: &str,
) -> Result<(pb::StreamResponse, RawJson), ClientError> {
    let decode_err = |e: serde_json::Error, data: &str| {
        ClientError::decode("SSE data (JSON-RPC response)", e, data.as_bytes())
    };
    if let Some(o) = observer {
        let json: Value = serde_json::from_str(&data).map_err(|e| decode_err(e, &data))?;
        o(&Exchange {
            protocol: "a2a",
            operation: op.to_string(),
            request: Value::Null,
            status: None,
            response: json,
        });
    }
    let env: StreamEnvelope = match serde_json::from_str(&data) {
        Ok(env) => env,
        Err(e) => {
            // Not a JSON-RPC response object, or a result that is not a
            // StreamResponse: the shared reader names the first, the decoder
            // the second.
            let json: Value = serde_json::from_str(&data).map_err(|e| decode_err(e, &data))?;
            http::rpc_result(&json, None)?;
            return Err(ClientError::decode("StreamResponse", e, data.as_bytes()));
        }
    };
    if let Some(err) = env.error.filter(|e| !e.is_null()) {
        return match http::rpc_result(&serde_json::json!({ "error": err }), None) {
            Err(e) => Err(e),
            Ok(_) => Err(ClientError::Protocol(
                "malformed JSON-RPC error object".into(),
            )),
        };
    }
    match env.result {
        Some(response) => Ok((response, RawJson::result_of(data))),
        None => Err(ClientError::Protocol(format!(
            "JSON-RPC response without result or error: {}",
            crate::error::snippet(data.as_bytes())
        ))),
    }
}

/// The url of the first interface on the card with this `protocolBinding`.
pub fn interface_url(card: &pb::AgentCard, binding: &str) -> Option<String> {
    card.supported_interfaces
        .iter()
        .find(|i| i.protocol_binding.eq_ignore_ascii_case(binding))
        .map(|i| i.url.clone())
        .filter(|u| !u.is_empty())
}

pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<Value, ClientError> {
    serde_json::to_value(v).map_err(|e| ClientError::Decode {
        what: "request (ProtoJSON)".into(),
        detail: e.to_string(),
    })
}

pub(crate) fn parse<T: DeserializeOwned>(v: &Value, what: &str) -> Result<T, ClientError> {
    T::deserialize(v).map_err(|e| ClientError::decode(what, e, v.to_string().as_bytes()))
}

fn typed<T: DeserializeOwned>(raw: Value, what: &str) -> Result<Received<T>, ClientError> {
    let value = parse(&raw, what)?;
    Ok(Received { value, raw })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_card_url_is_only_for_a_base_with_a_path() {
        assert_eq!(
            origin_card_url("http://127.0.0.1:9000/a2a").as_deref(),
            Some("http://127.0.0.1:9000/.well-known/agent-card.json")
        );
        assert_eq!(
            origin_card_url("https://agents.example.com/team/a2a/").as_deref(),
            Some("https://agents.example.com/.well-known/agent-card.json")
        );
        assert_eq!(origin_card_url("http://127.0.0.1:9000"), None);
        assert_eq!(origin_card_url("http://127.0.0.1:9000/"), None);
        assert_eq!(origin_card_url("not a url"), None);
    }

    #[test]
    fn stream_frames_are_decoded_in_one_pass_and_keep_their_json() {
        let data = r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"x-unknown":1}}}"#;
        let (resp, raw) = stream_frame(data.to_string(), None, "op").expect("frame");
        let ev = crate::a2a_stream::A2aEvent::for_test(resp, raw);
        assert_eq!(ev.state(), Some(pb::TaskState::Working));
        assert_eq!(ev.task_id(), Some("t"));
        // The raw JSON is the result as received, unknown members included.
        assert_eq!(ev.raw()["statusUpdate"]["x-unknown"], 1);
        // An error object is the RPC error.
        let err = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}"#;
        let e = stream_frame(err.to_string(), None, "op").expect_err("rpc error");
        assert_eq!(e.rpc_code(), Some(-32001), "{e}");
        // Neither result nor error, not an object, not JSON, not a StreamResponse.
        for bad in [
            r#"{"jsonrpc":"2.0","id":1}"#,
            "[1]",
            "{nope",
            r#"{"jsonrpc":"2.0","id":1,"result":{"task":5}}"#,
        ] {
            let e = stream_frame(bad.to_string(), None, "op").expect_err(bad);
            assert!(
                matches!(e, ClientError::Protocol(_) | ClientError::Decode { .. }),
                "{bad}: {e:?}"
            );
        }
        // An observer sees the whole response.
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let obs: crate::config::ExchangeObserver = Arc::new(move |ex: &Exchange| {
            s2.lock().unwrap().push(ex.response.clone());
        });
        stream_frame(data.to_string(), Some(&obs), "op").expect("frame");
        assert_eq!(seen.lock().unwrap()[0]["id"], 1);
    }

    #[test]
    fn reasons_map_to_codes() {
        assert_eq!(code::of_reason("TASK_NOT_FOUND"), Some(-32001));
        assert_eq!(code::of_reason("VERSION_NOT_SUPPORTED"), Some(-32009));
        assert_eq!(code::of_reason("nope"), None);
    }

    #[test]
    fn text_message_is_protojson() {
        let m = text_message("hi");
        let v = to_json(&m).expect("json");
        assert_eq!(v["role"], "ROLE_USER");
        assert_eq!(v["parts"][0]["text"], "hi");
        assert_eq!(v["messageId"].as_str().map(str::len), Some(32));
    }

    #[test]
    fn stream_response_parses_and_tolerates_unknown_fields() {
        let v = serde_json::json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-01T00:00:00Z"}, "final": false}});
        let r: pb::StreamResponse = parse(&v, "StreamResponse").expect("parse");
        match r.payload {
            Some(pb::stream_response::Payload::StatusUpdate(s)) => {
                assert_eq!(s.status.map(|s| s.state()), Some(pb::TaskState::Working))
            }
            other => panic!("{other:?}"),
        }
        assert!(parse::<pb::StreamResponse>(&serde_json::json!({"task": 5}), "x").is_err());
    }
}
